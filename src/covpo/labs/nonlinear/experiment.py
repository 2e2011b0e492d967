"""The experiment: the linear policy against the two-layer network on the two chapter-4 families.

Every method of :data:`METHODS` runs through :func:`covpo.run` with the softmax-linear policy
and with :class:`~covpo.labs.nonlinear.policy.NetworkPolicy`, at the same settings
(:class:`ExperimentSettings`), on one instance of each family of :mod:`covpo.families`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import covpo
from covpo.families import collapse_family, random_family
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, log_coverage
from covpo.policy_classes import PolicyClass, SoftmaxLinear
from covpo.table import Table
from covpo.trajectory import LOG10_E, Trajectory
from covpo.validation import (
    check_count,
    check_instance,
    check_nonnegative,
    check_positive,
    check_seeds,
)

from .network import DEFAULT_WIDTH, base_fit_kl, initial_parameters, network_for
from .policy import NetworkPolicy




FAMILIES = ("collapse", "random")
"""The instance families of :func:`nonlinear_experiment`, from :mod:`covpo.families`."""
METHODS = (
    "exact REINFORCE",
    "exact APMD, few inner steps",
    "exact APMD, many inner steps",
    "sampled REINFORCE",
    "PPO-NoClip",
    "PPO-NoClip, smaller η",
)
"""The methods of :func:`nonlinear_experiment`, each run with both policies (see :class:`ExperimentSettings`)."""
POLICIES = ("linear", "network")
"""Softmax-linear over the features, and :class:`~covpo.labs.nonlinear.network.TwoLayerNetwork` with skip term."""
EXACT_METHODS = frozenset(METHODS[:3])
"""Methods that use no randomness; their linear runs are the same for every seed."""


@dataclass(frozen=True)
class ExperimentSettings:
    """The hyperparameters of one family in :func:`nonlinear_experiment` (ours, shared by both policies).

    Attributes
    ----------
    reinforce_eta, reinforce_steps
        Exact REINFORCE (no KL): learning rate and gradient steps.
    beta
        Strength of every reset method.
    apmd_eta, apmd_steps, few_inner_steps, many_inner_steps
        Exact APMD: learning rate, gradient-step budget, and the two inner step counts ``K``
        (``T = apmd_steps // K`` outer iterations, so both spend the same steps).
    sampled_eta, sampled_steps, sampled_batch
        Sampled REINFORCE (leave-one-out baseline): learning rate, steps, batch size.
    ppo_iterations, ppo_batch, ppo_inner_steps, ppo_eta
        PPO-NoClip at strength ``beta``: ``T``, ``N``, ``K`` and learning rate.
    smaller_eta_factor
        "PPO-NoClip, smaller η" runs at ``smaller_eta_factor * ppo_eta``, otherwise the same.
    record_every
        REINFORCE (exact and sampled) records every ``record_every``-th step.
    """

    reinforce_eta: float
    reinforce_steps: int
    beta: float
    apmd_eta: float
    apmd_steps: int
    few_inner_steps: int
    many_inner_steps: int
    sampled_eta: float
    sampled_steps: int
    sampled_batch: int
    ppo_iterations: int
    ppo_batch: int
    ppo_inner_steps: int
    ppo_eta: float
    smaller_eta_factor: float = 0.25
    record_every: int = 10

    def __post_init__(self) -> None:
        for name in ("reinforce_eta", "beta", "apmd_eta", "sampled_eta", "ppo_eta", "smaller_eta_factor"):
            check_positive(name, getattr(self, name))
        for name in ("reinforce_steps", "few_inner_steps", "many_inner_steps", "sampled_steps", "ppo_iterations",
                     "ppo_batch", "ppo_inner_steps", "record_every"):
            check_count(name, getattr(self, name))
        check_count("sampled_batch", self.sampled_batch, minimum=2)
        check_count("apmd_steps", self.apmd_steps, minimum=max(self.few_inner_steps, self.many_inner_steps))

    def describe(self) -> str:
        """One line with every setting, for the chapter's text."""
        return (
            f"REINFORCE eta {self.reinforce_eta:g} x {self.reinforce_steps} steps; APMD beta {self.beta:g}, "
            f"eta {self.apmd_eta:g}, K {self.few_inner_steps} or {self.many_inner_steps}, {self.apmd_steps} steps; "
            f"sampled REINFORCE eta {self.sampled_eta:g}, N {self.sampled_batch}, {self.sampled_steps} steps; "
            f"PPO-NoClip N {self.ppo_batch}, K {self.ppo_inner_steps}, T {self.ppo_iterations}, "
            f"eta {self.ppo_eta:g} (smaller: x{self.smaller_eta_factor:g})"
        )


COLLAPSE_SETTINGS = ExperimentSettings(
    reinforce_eta=16.0,
    reinforce_steps=1000,
    beta=1.0,
    apmd_eta=8.0,
    apmd_steps=600,
    few_inner_steps=10,
    many_inner_steps=40,
    sampled_eta=16.0,
    sampled_steps=500,
    sampled_batch=32,
    ppo_iterations=25,
    ppo_batch=256,
    ppo_inner_steps=40,
    ppo_eta=8.0,
)
"""Settings on the stacked collapse instance (the PPO-NoClip ones are chapter 4's)."""
RANDOM_SETTINGS = ExperimentSettings(
    reinforce_eta=16.0,
    reinforce_steps=300,
    beta=1.0,
    apmd_eta=8.0,
    apmd_steps=600,
    few_inner_steps=10,
    many_inner_steps=40,
    sampled_eta=16.0,
    sampled_steps=300,
    sampled_batch=32,
    ppo_iterations=40,
    ppo_batch=256,
    ppo_inner_steps=10,
    ppo_eta=2.0,
    record_every=5,
)
"""Settings on the random dialled-coverage instance (the PPO-NoClip ones are chapter 4's)."""


def _run(method: str, instance: BanditInstance, policy: PolicyClass, s: ExperimentSettings, seed: int) -> Trajectory:
    """One method of :data:`METHODS` with ``policy``, starting at its ``initial_params``, through :func:`covpo.run`."""
    if method == "exact REINFORCE":
        return covpo.run(
            "reinforce_exact", instance, policy=policy, eta=s.reinforce_eta, n_iterations=s.reinforce_steps,
            record_every=s.record_every,
        )
    if method.startswith("exact APMD"):
        steps = s.few_inner_steps if method.endswith("few inner steps") else s.many_inner_steps
        return covpo.run(
            "apmd", instance, policy=policy, beta=s.beta, eta=s.apmd_eta, n_iterations=s.apmd_steps // steps,
            inner_steps=steps,
        )
    rng = np.random.default_rng(seed)
    if method == "sampled REINFORCE":
        return covpo.run(
            "reinforce", instance, rng=rng, policy=policy, eta=s.sampled_eta, n_iterations=s.sampled_steps,
            batch_size=s.sampled_batch, record_every=s.record_every,
        )
    eta = s.ppo_eta * (s.smaller_eta_factor if method.endswith("smaller η") else 1.0)
    return covpo.run(
        "ppo_noclip", instance, rng=rng, policy=policy, beta=s.beta, eta=eta, n_iterations=s.ppo_iterations,
        batch_size=s.ppo_batch, inner_steps=s.ppo_inner_steps,
    )


def _or_diverged(run: Callable[[], Trajectory]) -> Trajectory | None:
    try:
        return run()
    except FloatingPointError:
        return None


@dataclass(frozen=True, eq=False)
class NonlinearExperiment:
    """Linear and network policies under the same methods and settings, on two instance families.

    Arrays are indexed ``[family, method, policy, seed]`` in the order of ``families``,
    ``methods``, ``policies`` and ``seeds``. A run that diverged (a non-finite
    step) has ``nan`` coverage and suboptimality, ``reached`` false and costs ``-1``.

    Attributes
    ----------
    families, methods, policies, seeds
        The labels of the four axes. The seed sets the network's initialization and every
        sampled run; the linear policy's exact runs do not depend on it.
    coverages
        ``C_cov`` of each family's instance.
    base_log10_coverage
        The lowest base-10 log coverage of the base model over prompts, per family.
    init_kl
        ``E_x KL(pi_0 || pi_net)`` of the network's starting parameters, ``[family, seed]``.
    eps
        The accuracy target of ``reached`` and the ``*_to_eps`` arrays.
    min_log10_coverage
        Lowest base-10 log coverage over all records and prompts of each run.
    reached
        Whether the run became eps-optimal.
    steps_to_eps, responses_to_eps
        Costs at the first eps-optimal record; ``-1`` where eps was not reached.
    final_suboptimality
        ``J* - J`` of the last iterate.
    max_inner_kl
        For the reset methods, the worst inner-loop accuracy ``max_t E_x KL(pi_{t+1} || pi*_{t+1})``
        (the quantity APMD's guarantee needs small, paper section 3.1); ``nan`` for REINFORCE.
    diverged
        Whether the run stopped on a non-finite step.
    trajectories
        The runs, ``trajectories[family][method][policy][seed]`` (``None`` where diverged).
    settings
        The :class:`ExperimentSettings` of each family.
    width
        The network's hidden width.
    """

    families: tuple[str, ...]
    methods: tuple[str, ...]
    policies: tuple[str, ...]
    seeds: tuple[int, ...]
    coverages: np.ndarray
    base_log10_coverage: np.ndarray
    init_kl: np.ndarray
    eps: float
    min_log10_coverage: np.ndarray
    reached: np.ndarray
    steps_to_eps: np.ndarray
    responses_to_eps: np.ndarray
    final_suboptimality: np.ndarray
    max_inner_kl: np.ndarray
    diverged: np.ndarray
    trajectories: tuple
    settings: tuple[ExperimentSettings, ...]
    width: int

    def trajectory(self, family: str, method: str, policy: str, seed_index: int = 0) -> Trajectory | None:
        """The run of ``method`` with ``policy`` on ``family`` for the ``seed_index``-th seed, by label."""
        f, m, p = self.families.index(family), self.methods.index(method), self.policies.index(policy)
        return self.trajectories[f][m][p][seed_index]

    def _line(self, f: int, m: int, p: int) -> str:
        reached = self.reached[f, m, p]
        cost = "eps never reached"
        if reached.any():
            steps = int(np.median(self.steps_to_eps[f, m, p][reached]))
            responses = int(np.median(self.responses_to_eps[f, m, p][reached]))
            cost = f"median {steps:5d} steps, {responses:6,d} responses to eps"
        inner = self.max_inner_kl[f, m, p]
        accuracy = f"; worst inner KL {np.nanmax(inner):.1e}" if np.any(np.isfinite(inner)) else ""
        if self.diverged[f, m, p].all():
            return f"  {self.methods[m]:29} {self.policies[p]:7}: diverged for every seed"
        return (
            f"  {self.methods[m]:29} {self.policies[p]:7}: worst log10 coverage "
            f"{np.nanmin(self.min_log10_coverage[f, m, p]):7.2f}; eps {int(reached.sum())}/{reached.size} seeds, "
            f"{cost}; median final J* - J {np.nanmedian(self.final_suboptimality[f, m, p]):.3f}{accuracy}"
        )

    def table(self) -> Table:
        """One row per instance, method and policy, summarized over the seeds.

        ``str(table)`` gives it as aligned text.
        """
        rows = []
        for f, family in enumerate(self.families):
            for m, method in enumerate(self.methods):
                for p, policy in enumerate(self.policies):
                    reached = self.reached[f, m, p]
                    diverged = bool(self.diverged[f, m, p].all())
                    steps = float(np.median(self.steps_to_eps[f, m, p][reached])) if reached.any() else None
                    inner = self.max_inner_kl[f, m, p]
                    rows.append((
                        family,
                        method,
                        policy,
                        None if diverged else float(np.nanmin(self.min_log10_coverage[f, m, p])),
                        int(reached.sum()),
                        steps,
                        None if diverged else float(np.nanmedian(self.final_suboptimality[f, m, p])),
                        float(np.nanmax(inner)) if np.any(np.isfinite(inner)) else None,
                    ))
        bases = ", ".join(f"{family} {base:.2f}" for family, base in zip(self.families, self.base_log10_coverage))
        return Table(
            ("instance", "method", "policy", r"worst $\log_{10}$ coverage", f"seeds reaching ε (of {len(self.seeds)})",
             "median steps to ε", r"median final $J^\star - J$", "worst inner KL"),
            tuple(rows),
            caption=(
                f"Linear policy against a network of width {self.width}, ε = {self.eps:g}, "
                f"seeds {', '.join(str(seed) for seed in self.seeds)}"
            ),
            notes=(
                f"Worst $\\log_{{10}}$ coverage: the lowest over seeds, prompts and the run; the base model's is {bases}. "
                "Median steps over the seeds that reached ε. Worst inner KL: the largest KL from an inner "
                "loop's end to its target (APMD and PPO only). '-': none, or every seed diverged.",
            ),
        )

    def summary(self) -> str:
        """One block per family, one line per method and policy, summarized over the seeds."""
        lines = []
        for f, family in enumerate(self.families):
            header = (
                f"{family} instance: C_cov {self.coverages[f]:g}, base model's lowest log10 coverage "
                f"{self.base_log10_coverage[f]:.2f}; network width {self.width}, KL(pi_0 || pi_net) at start "
                f"<= {self.init_kl[f].max():.1e}; eps {self.eps:g}; seeds {list(self.seeds)}"
            )
            lines += [header, f"  settings: {self.settings[f].describe()}"]
            lines += [self._line(f, m, p) for m in range(len(self.methods)) for p in range(len(self.policies))]
        return "\n".join(lines)


def _family_instance(family: str, coverage: float) -> BanditInstance:
    return collapse_family((coverage,))[0] if family == "collapse" else random_family((coverage,))[0]


def _family_runs(
    instance: BanditInstance, settings: ExperimentSettings, width: int, seeds: tuple[int, ...]
) -> tuple[tuple, list[float]]:
    """``runs[method][policy][seed]`` on one instance (``None`` where diverged), and the network's starting KL per seed."""
    network = network_for(instance, width)
    starts = [initial_parameters(instance, network, np.random.default_rng(seed)) for seed in seeds]
    linear = SoftmaxLinear(instance)
    networks = [NetworkPolicy(instance, network, params) for params in starts]
    runs = []
    for method in METHODS:

        def one(policy: PolicyClass, seed: int, method: str = method) -> Trajectory | None:
            return _or_diverged(lambda: _run(method, instance, policy, settings, seed))

        if method in EXACT_METHODS:
            linear_runs = (one(linear, seeds[0]),) * len(seeds)
        else:
            linear_runs = tuple(one(linear, seed) for seed in seeds)
        runs.append((linear_runs, tuple(one(policy, seed) for policy, seed in zip(networks, seeds))))
    return tuple(runs), [base_fit_kl(instance, network, params) for params in starts]


def _measure(runs: list[Trajectory | None], eps: float) -> dict[str, np.ndarray]:
    """Per run: coverage floor, reached, costs to eps, final gap, worst inner KL, diverged.

    ``nan`` and ``-1`` stand in where a run diverged.
    """

    def cost(value: int | None) -> int:
        return -1 if value is None else value

    rows = [
        (np.nan, False, -1, -1, np.nan, np.nan, True)
        if run is None
        else (
            run.min_log10_coverage,
            run.first_eps_optimal(eps) is not None,
            cost(run.steps_to_eps(eps)),
            cost(run.responses_to_eps(eps)),
            float(run.suboptimality[-1]),
            np.nan if run.inner_kl is None else float(np.max(run.inner_kl)),
            False,
        )
        for run in runs
    ]
    names = (
        "min_log10_coverage", "reached", "steps_to_eps", "responses_to_eps", "final_suboptimality", "max_inner_kl",
        "diverged",
    )
    dtypes = (float, bool, np.int64, np.int64, float, float, bool)
    return {name: np.array(column, dtype=dtype) for name, column, dtype in zip(names, zip(*rows), dtypes)}


def nonlinear_experiment(
    *,
    collapse_coverage: float = 40.0,
    random_coverage: float = 20.0,
    width: int = DEFAULT_WIDTH,
    eps: float = 0.05,
    seeds: tuple[int, ...] = (0, 1, 2),
    collapse_settings: ExperimentSettings = COLLAPSE_SETTINGS,
    random_settings: ExperimentSettings = RANDOM_SETTINGS,
) -> NonlinearExperiment:
    """Every method of :data:`METHODS` with the linear and the network policy, on one instance per family.

    The collapse instance is :func:`covpo.families.collapse_family` at ``collapse_coverage``
    (4 prompts x 102 responses, one-hot features, ``d = 408``), the random one
    :func:`covpo.families.random_family` at ``random_coverage`` (50 x 8, ``d = 6``). For
    each seed the network (:class:`~covpo.labs.nonlinear.network.TwoLayerNetwork` of width ``width`` with skip
    term) starts from :func:`~covpo.labs.nonlinear.network.initial_parameters` with
    ``np.random.default_rng(seed)``, and every sampled run of either policy draws from a fresh
    ``np.random.default_rng(seed)``. Both policies run at the same settings, so the comparison
    isolates the parametrization.
    """
    collapse_coverage = check_positive("collapse_coverage", collapse_coverage)
    random_coverage = check_positive("random_coverage", random_coverage)
    width = check_count("width", width)
    eps = check_nonnegative("eps", eps)
    seeds = check_seeds("seeds", seeds)
    settings = (
        check_instance("collapse_settings", collapse_settings, ExperimentSettings),
        check_instance("random_settings", random_settings, ExperimentSettings),
    )
    coverages = np.array([collapse_coverage, random_coverage])
    all_runs, init_kl, base_coverage = [], [], []
    for family, coverage, family_settings in zip(FAMILIES, coverages, settings):
        instance = _family_instance(family, float(coverage))
        runs, kls = _family_runs(instance, family_settings, width, seeds)
        all_runs.append(runs)
        init_kl.append(kls)
        base_coverage.append(float(log_coverage(instance, base_log_policy(instance)).min()) * LOG10_E)
    flat = [run for family in all_runs for method in family for policy in method for run in policy]
    shape = (len(FAMILIES), len(METHODS), len(POLICIES), len(seeds))
    measured = {name: column.reshape(shape) for name, column in _measure(flat, eps).items()}
    return NonlinearExperiment(
        families=FAMILIES,
        methods=METHODS,
        policies=POLICIES,
        seeds=seeds,
        coverages=coverages,
        base_log10_coverage=np.array(base_coverage),
        init_kl=np.array(init_kl),
        eps=eps,
        trajectories=tuple(all_runs),
        settings=settings,
        width=width,
        **measured,
    )
