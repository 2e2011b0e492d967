"""The sweep machinery every chapter shares: a method, its runs, their costs to eps-optimality.

- :class:`Method`: one registered algorithm (:data:`covpo.ALGORITHMS`) with a label, its
  hyperparameters and a grid of learning rates; :meth:`Method.run` runs it through
  :func:`covpo.run`;
- :func:`run_unless_diverged`: the one place where a run whose parameters leave the
  floating-point range (``FloatingPointError``) is read as *diverged*; every other error
  propagates;
- :func:`summarize_run` and :func:`cost_sweep`: responses and gradient steps to eps-optimality
  against the base model's coverage, each method at the best learning rate of its grid, with
  power-law fits (:func:`fit_coverage_power`);
- :func:`cost_sweeps` and :class:`SeededCostSweep`: the same sweep over several seeds, with
  the rate at which each method reaches eps (a Wilson interval, :mod:`covpo.rates`) and fits of
  its cost over the seeds;
- :func:`compare_at_budget` and :func:`compare_recipes`: several methods on one instance under
  one response budget, over several seeds;
- :func:`methods_table`: the settings of a list of methods;
- :func:`random_family_methods` and :func:`collapse_family_methods`: the five methods of chapter 4's
  cost sweeps on the two instance families of :mod:`covpo.families`, which chapters 5 and 6
  compare against.

Every run of a sweep seeds its own generator, so results do not depend on the joblib backend
that :func:`covpo.experiments.parallel.run_tasks` uses.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

import covpo
from covpo.algorithms import ALGORITHMS, Algorithm, IterationCosts
from covpo.experiments.parallel import run_tasks
from covpo.fits import fit_line
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, expected_reward, log_coverage
from covpo.rates import Rate, rate_of
from covpo.table import Table
from covpo.trajectory import Trajectory
from covpo.validation import (
    check_count,
    check_finite_array,
    check_instance,
    check_instances,
    check_positive,
    check_positive_grid,
    check_seeds,
)

SWEEP_ARGUMENTS = ("instance", "eta", "rng")
"""Arguments a sweep supplies to every run, so a :class:`Method`'s hyperparameters never hold them."""


# ---------------------------------------------------------------------------------------
# A method and its runs


@dataclass(frozen=True)
class Method:
    """One registered algorithm, the hyperparameters a sweep runs it at, and its learning rates.

    Attributes
    ----------
    label
        The name in tables and figures.
    algorithm
        A key of :data:`covpo.ALGORITHMS`.
    hyperparameters
        Keyword arguments of the algorithm's function, spelled with the paper's symbols
        (``beta``, ``n_iterations``, ``batch_size``, ``inner_steps``, ``group_size``, ...):
        everything but the learning rate ``eta`` and the generator ``rng``, which each run supplies.
    etas
        The learning rates a sweep tries (it keeps the best); non-empty for an algorithm that
        takes a learning rate, empty for one that does not (exact APMD, NPG, Best-of-N).

    Raises
    ------
    ValueError
        At construction, for a setting the algorithm would reject (an unknown KL estimator, a
        clip width outside ``(0, 1)``, a group of one, ``delta`` outside ``(0, 1)``, a missing
        hyperparameter, ...), checked at every learning rate by the algorithm's own validator
        (:meth:`covpo.algorithms.Algorithm.check`), so that a configuration error is never
        mistaken for a run that diverged.
    """

    label: str
    algorithm: str
    hyperparameters: Mapping[str, object]
    etas: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise ValueError(f"label must be a non-empty string, got {self.label!r}")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {tuple(ALGORITHMS)}, got {self.algorithm!r}")
        if not isinstance(self.hyperparameters, Mapping):
            raise ValueError(f"hyperparameters must be a mapping of names to values, got {self.hyperparameters!r}")
        accepted = set(inspect.signature(self.definition.function).parameters)
        allowed = accepted - set(SWEEP_ARGUMENTS) - set(self.definition.fixed)
        for name in self.hyperparameters:
            if name not in allowed:
                raise ValueError(
                    f"hyperparameters must be arguments of {self.algorithm!r} other than {SWEEP_ARGUMENTS} and "
                    f"{tuple(self.definition.fixed)}; got {name!r} (allowed: {sorted(allowed)})"
                )
        object.__setattr__(self, "hyperparameters", dict(self.hyperparameters))
        if isinstance(self.etas, (str, bytes)) or not isinstance(self.etas, Sequence):
            raise ValueError(f"etas must be a tuple of learning rates, got {self.etas!r}")
        etas = tuple(check_positive("etas", eta) for eta in self.etas)
        if "eta" in accepted:
            if not etas:
                raise ValueError(
                    f"etas must be a non-empty tuple of finite learning rates > 0 for {self.algorithm!r}, got {self.etas!r}"
                )
        elif etas:
            raise ValueError(f"etas must be empty: {self.algorithm!r} takes no learning rate, got {self.etas!r}")
        object.__setattr__(self, "etas", etas)
        for eta in self.learning_rates:
            self.definition.check({**self.hyperparameters, **({} if eta is None else {"eta": eta})})

    @property
    def definition(self) -> Algorithm:
        """The registry's record of :attr:`algorithm`: its function, label and costs per iteration."""
        return ALGORITHMS[self.algorithm]

    @property
    def learning_rates(self) -> tuple[float | None, ...]:
        """The grid a sweep runs, :attr:`etas`, or ``(None,)`` for an algorithm without a learning rate."""
        return self.etas or (None,)

    @property
    def n_iterations(self) -> int:
        """Outer iterations (steps for REINFORCE), or 1 for an algorithm without them (Best-of-N)."""
        return int(self.hyperparameters.get("n_iterations", 1))

    def iteration_costs(self, instance: BanditInstance | None = None) -> IterationCosts:
        """What one outer iteration spends, from the registry's record (``instance`` only where the costs depend on it)."""
        return self.definition.iteration_costs(self.hyperparameters, instance)

    @property
    def responses_per_iteration(self) -> int:
        """Responses one outer iteration samples (the registry's count, e.g. ``N G`` for GRPO, ``2 N`` for Rebel)."""
        return self.iteration_costs().responses

    @property
    def steps_per_iteration(self) -> int:
        """Gradient steps one outer iteration takes (the registry's count, e.g. ``K``; one per exact solve)."""
        return self.iteration_costs().gradient_steps

    @property
    def rounds_per_iteration(self) -> int:
        """Rounds of batch generation one outer iteration takes (the registry's count)."""
        return self.iteration_costs().generation_rounds

    @property
    def response_budget(self) -> int:
        """Responses the whole budget samples."""
        return self.n_iterations * self.responses_per_iteration

    @property
    def step_budget(self) -> int:
        """Gradient steps the whole budget takes."""
        return self.n_iterations * self.steps_per_iteration

    @property
    def round_budget(self) -> int:
        """Rounds of batch generation the whole budget takes."""
        return self.n_iterations * self.rounds_per_iteration

    def with_hyperparameters(self, **changes: object) -> Method:
        """The same method with some hyperparameters changed or added."""
        return dataclasses.replace(self, hyperparameters={**self.hyperparameters, **changes})

    def with_response_budget(self, response_budget: int) -> Method:
        """The method with ``n_iterations`` set so that it samples at most ``response_budget`` responses.

        A method that draws no responses from its generator (an exact method, Best-of-N) is
        returned unchanged.
        """
        response_budget = check_count("response_budget", response_budget)
        if not self.definition.samples:
            return self
        n_iterations = response_budget // self.responses_per_iteration
        if n_iterations < 1:
            raise ValueError(
                f"response_budget {response_budget} is smaller than one batch of {self.label!r} "
                f"({self.responses_per_iteration} responses)"
            )
        return self.with_hyperparameters(n_iterations=n_iterations)

    def run(self, instance: BanditInstance, eta: float | None, rng: np.random.Generator | None) -> Trajectory:
        """Run the method on ``instance`` at learning rate ``eta`` for its whole budget, through :func:`covpo.run`.

        ``eta`` is ``None`` for an algorithm without a learning rate; ``rng`` is passed only to
        algorithms that sample. A step that leaves the parameters non-finite raises ``FloatingPointError``.
        """
        check_instance("instance", instance, BanditInstance)
        if self.etas and eta is None:
            raise ValueError(f"eta must be a learning rate for {self.algorithm!r}, got None")
        if not self.etas and eta is not None:
            raise ValueError(f"eta must be None: {self.algorithm!r} takes no learning rate, got {eta!r}")
        learning_rate = {} if eta is None else {"eta": eta}
        sampling_rng = rng if self.definition.samples else None
        return covpo.run(self.algorithm, instance, rng=sampling_rng, **self.hyperparameters, **learning_rate)


def run_unless_diverged(
    method: Method, instance: BanditInstance, eta: float | None, rng: np.random.Generator | None
) -> Trajectory | None:
    """:meth:`Method.run`, or ``None`` if the run diverged (a step left the parameters non-finite).

    Only ``FloatingPointError`` reads as divergence; a ``ValueError`` (bad settings) propagates.
    """
    check_instance("method", method, Method)
    try:
        return method.run(instance, eta, rng)
    except FloatingPointError:
        return None


def check_methods(name: str, methods: object) -> tuple[Method, ...]:
    """Return ``methods`` as a non-empty tuple of :class:`Method` records with distinct labels, else raise naming ``name``.

    The labels name the rows of every table and the curves of every figure, so two methods
    with one label would be indistinguishable in the results.
    """
    methods = check_instances(name, methods, Method)
    labels = [method.label for method in methods]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{name} must have distinct labels, got {labels}")
    return methods


def _check_seed(name: str, seed: object) -> int:
    return check_count(name, seed, minimum=0)


def methods_table(methods: Sequence[Method], caption: str = "") -> Table:
    """One row per method: ``beta``, ``N``, ``G``, ``K``, the learning-rate grid and the response budget.

    ``G`` is the responses drawn per prompt (the group for GRPO, the extra baseline responses
    plus one for KimiPO, two for Rebel-OnPolicy); ``beta`` is 0 and ``K`` is 1 for a method
    without them; ``N`` and ``G`` are blank for a method that samples no batch (Best-of-N, exact NPG).
    """
    rows = []
    for method in check_methods("methods", methods):
        h = method.hyperparameters
        batch_size = None if h.get("batch_size") is None else int(h["batch_size"])
        rows.append((
            method.label, float(h.get("beta", 0.0)), batch_size,
            None if batch_size is None else method.responses_per_iteration // batch_size,
            int(h.get("inner_steps", 1)), ", ".join(f"{eta:g}" for eta in method.etas), method.response_budget,
        ))
    return Table(
        ("method", "β", "N (prompts)", "G (responses per prompt)", "K (inner steps)", "learning rates",
         "budget (responses)"),
        tuple(rows),
        caption=caption,
        notes=("Several learning rates: the sweep keeps, at each coverage, the one that reaches ε with the "
               "fewest responses.",),
    )


# ---------------------------------------------------------------------------------------
# Costs to eps-optimality against coverage


@dataclass(frozen=True)
class CoverageFit:
    """Least-squares fit ``log10 cost = intercept + exponent log10 C_cov`` over the runs that reached eps."""

    exponent: float
    intercept: float
    r_squared: float
    n_points: int


def fit_coverage_power(coverages: np.ndarray, costs: np.ndarray) -> CoverageFit:
    """Fit ``cost`` as a power of ``C_cov`` by least squares on the log-log scale (at least two points, all ``>= 1``)."""
    x = check_finite_array("coverages", coverages, ndim=1)
    y = check_finite_array("costs", costs, ndim=1)
    if x.size < 2 or x.size != y.size:
        raise ValueError(
            f"coverages and costs must hold at least two values each, of equal length (one cost per C_cov), "
            f"got {x.size} and {y.size}"
        )
    if np.any(x <= 0.0) or np.any(y < 1.0):
        raise ValueError("coverages must be > 0 and costs >= 1 to take logarithms")
    line = fit_line(np.log10(x), np.log10(y))
    return CoverageFit(line.slope, line.intercept, line.r_squared, line.n_points)


@dataclass(frozen=True, eq=False)
class CostSweep:
    """Responses and gradient steps to eps-optimality against ``C_cov``, one row per method.

    Attributes
    ----------
    coverages
        ``C_cov`` of each instance's base model, ``(n_coverages,)``.
    methods
        The :class:`Method` records, ``(n_methods,)``.
    eps
        The accuracy target.
    eta
        The learning rate kept for each method and instance (the best of its grid), ``(n_methods, n_coverages)``.
    reached
        Whether that run became eps-optimal within its budget.
    responses_to_eps, steps_to_eps
        Its costs at the first eps-optimal record; where not reached, the budget (a lower bound).
    min_log10_coverage
        The lowest base-10 log coverage over the run's records and prompts.
    coverage_loss
        The largest fall of any prompt's coverage below its base value, in decades (``>= 0``).
    final_suboptimality
        ``J* - J`` at the end of the budget.
    grid_responses
        Responses to eps of every learning rate tried, ``inf`` where not reached or diverged,
        one ``(n_coverages, n_etas)`` array per method.
    base_suboptimality
        ``J* - J(pi_0)`` of each instance.
    best_runs
        The :class:`RunSummary` of the kept run of each method and instance (``None`` where every
        learning rate diverged), ``best_runs[method][instance]``; empty for a sweep built without them.
    """

    coverages: np.ndarray
    methods: tuple[Method, ...]
    eps: float
    eta: np.ndarray
    reached: np.ndarray
    responses_to_eps: np.ndarray
    steps_to_eps: np.ndarray
    min_log10_coverage: np.ndarray
    coverage_loss: np.ndarray
    final_suboptimality: np.ndarray
    grid_responses: tuple[np.ndarray, ...]
    base_suboptimality: np.ndarray
    best_runs: tuple[tuple[RunSummary | None, ...], ...] = ()

    def method_index(self, label: str) -> int:
        """Row of the method labelled ``label``."""
        labels = [method.label for method in self.methods]
        if label not in labels:
            raise ValueError(f"no method labelled {label!r}; the sweep has {labels}")
        return labels.index(label)

    def fit(self, label: str, cost: str = "responses") -> CoverageFit | None:
        """Power-law fit of ``"responses"`` or ``"steps"`` to eps in ``C_cov`` for one method; ``None`` if it reached eps fewer than twice."""
        if cost not in ("responses", "steps"):
            raise ValueError(f"cost must be 'responses' or 'steps', got {cost!r}")
        row = self.method_index(label)
        values = (self.responses_to_eps if cost == "responses" else self.steps_to_eps)[row]
        keep = self.reached[row] & (values >= 1)
        if keep.sum() < 2:
            return None
        return fit_coverage_power(self.coverages[keep], values[keep].astype(float))

    def summary(self) -> str:
        """Per method: learning rates kept, costs to eps, how many runs reached it, coverage lost, fits."""
        lines = []
        for i, method in enumerate(self.methods):
            fits = [(cost, self.fit(method.label, cost)) for cost in ("responses", "steps")]
            fitted = ", ".join(f"{cost} ~ C^{fit.exponent:.2f} (R^2 {fit.r_squared:.2f})" for cost, fit in fits if fit)
            lines += [
                (
                    f"{method.label} (eta {', '.join(f'{e:g}' for e in self.eta[i])}): "
                    f"{fitted or 'no fit (eps reached at fewer than two coverages)'}"
                ),
                (
                    f"    eps reached {int(self.reached[i].sum())}/{self.coverages.size}; "
                    f"responses {[int(v) for v in self.responses_to_eps[i]]}"
                ),
                (
                    f"    steps {[int(v) for v in self.steps_to_eps[i]]}; "
                    f"worst coverage loss (decades) {np.round(self.coverage_loss[i], 2).tolist()}"
                ),
            ]
        return "\n".join(lines)

    def table(self, caption: str = "") -> Table:
        """One row per method and coverage: learning rate kept, whether eps was reached, costs, coverage lost."""
        rows = tuple(
            (
                method.label, float(c), float(self.eta[i, j]) if self.eta[i, j] > 0 else None, bool(self.reached[i, j]),
                int(self.responses_to_eps[i, j]), int(self.steps_to_eps[i, j]),
                float(self.coverage_loss[i, j]) if np.isfinite(self.coverage_loss[i, j]) else None,
            )
            for i, method in enumerate(self.methods)
            for j, c in enumerate(self.coverages)
        )
        return Table(
            ("method", r"$C_{\mathrm{cov}}$", "learning rate", "ε reached", "responses", "gradient steps",
             "worst coverage loss (decades)"),
            rows,
            caption=caption or f"Costs to ε = {self.eps:g} against the base model's coverage",
            notes=("Where ε was not reached, responses and gradient steps are the budget spent (a lower bound). "
                   "A dash: every learning rate of the grid diverged.",),
        )

    def fit_table(self, caption: str = "") -> Table:
        """One row per method: the power-law fits of responses and of gradient steps to eps in ``C_cov``."""
        rows = []
        for i, method in enumerate(self.methods):
            responses, steps = self.fit(method.label, "responses"), self.fit(method.label, "steps")
            rows.append((
                method.label,
                float(responses.exponent) if responses else None, float(responses.r_squared) if responses else None,
                float(steps.exponent) if steps else None, float(steps.r_squared) if steps else None,
                int(self.reached[i].sum()),
            ))
        return Table(
            ("method", "exponent: responses", "R²: responses", "exponent: steps", "R²: steps", "coverages reaching ε"),
            tuple(rows),
            caption=caption or r"Costs to ε fitted as a power of $C_{\mathrm{cov}}$",
            notes=("Least squares of $\\log_{10}$ cost on $\\log_{10} C_{\\mathrm{cov}}$ over the coverages where ε was reached; "
                   "a dash where that happened fewer than twice.",),
        )


@dataclass(frozen=True)
class RunSummary:
    """What a sweep keeps of one run (small, so parallel workers return it cheaply).

    ``responses_to_eps`` and ``steps_to_eps`` are ``None`` where the run never became eps-optimal.
    ``responses_record`` and ``reward_record`` are the responses sampled and the expected reward
    ``J`` at every record of the run (empty where the summary was made without them), from which
    the responses to any other reward target follow (:meth:`responses_to_reward`).
    """

    responses_to_eps: int | None
    steps_to_eps: int | None
    total_responses: int
    total_steps: int
    final_suboptimality: float
    min_log10_coverage: float
    coverage_loss: float
    responses_record: tuple[int, ...] = ()
    reward_record: tuple[float, ...] = ()

    @property
    def key(self) -> tuple:
        """The order of preference of runs; those reaching eps first, by responses then steps, the others by final suboptimality."""
        if self.responses_to_eps is not None:
            return (0, self.responses_to_eps, self.steps_to_eps)
        return (1, self.final_suboptimality, 0)

    def responses_to_reward(self, target: float) -> int | None:
        """Responses sampled at the first record whose expected reward is at least ``target``; ``None`` if none is."""
        if not self.reward_record:
            raise ValueError("responses_to_reward needs a summary made with its reward record (summarize_run)")
        hits = np.flatnonzero(np.asarray(self.reward_record) >= float(target))
        return int(self.responses_record[hits[0]]) if hits.size else None


def summarize_run(
    method: Method, instance: BanditInstance, eta: float | None, seed: tuple[int, ...], eps: float
) -> RunSummary | None:
    """Run ``method`` at ``eta`` with ``np.random.default_rng(list(seed))`` and summarize it; ``None`` if it diverged."""
    eps = check_positive("eps", eps)
    if isinstance(seed, (str, bytes)) or not isinstance(seed, Sequence) or not seed:
        raise ValueError(f"seed must be a non-empty tuple of integers >= 0, got {seed!r}")
    seed = tuple(_check_seed("seed", value) for value in seed)
    trajectory = run_unless_diverged(method, instance, eta, np.random.default_rng(list(seed)))
    if trajectory is None:
        return None
    log_base = log_coverage(instance, base_log_policy(instance))
    return RunSummary(
        responses_to_eps=trajectory.responses_to_eps(eps),
        steps_to_eps=trajectory.steps_to_eps(eps),
        total_responses=trajectory.total_responses,
        total_steps=trajectory.total_gradient_steps,
        final_suboptimality=float(trajectory.suboptimality[-1]),
        min_log10_coverage=trajectory.min_log10_coverage,
        coverage_loss=trajectory.coverage_loss(log_base),
        responses_record=tuple(int(value) for value in trajectory.responses_sampled),
        reward_record=tuple(float(value) for value in trajectory.reward),
    )


def _check_sweep_arguments(
    instances: Sequence[BanditInstance], coverages: Sequence[float], methods: Sequence[Method], eps: float
) -> tuple[tuple[BanditInstance, ...], np.ndarray, tuple[Method, ...], float]:
    """The checked arguments shared by :func:`cost_sweep` and :func:`cost_sweeps`."""
    coverages = check_positive_grid("coverages", coverages)
    if np.any(coverages < 1.0):
        raise ValueError(f"coverages must be >= 1 (C_cov = E_x 1/c_0(x)), got {coverages!r}")
    eps = check_positive("eps", eps)
    methods = check_methods("methods", methods)
    instances = check_instances("instances", instances, BanditInstance)
    if len(instances) != coverages.size:
        raise ValueError(f"one coverage per instance: got {len(instances)} instances and {coverages.size} coverages")
    return instances, coverages, methods, eps


def _sweep_coordinates(methods: Sequence[Method], n_instances: int) -> list[tuple[int, int, int]]:
    """``(method, instance, learning rate)`` of every run of one seed's sweep, in the order they are run."""
    return [
        (i, j, k) for j in range(n_instances) for i, method in enumerate(methods) for k in range(len(method.learning_rates))
    ]


def _assemble_sweep(
    instances: Sequence[BanditInstance],
    coverages: np.ndarray,
    methods: tuple[Method, ...],
    eps: float,
    outcomes: Mapping[tuple[int, int, int], RunSummary | None],
) -> CostSweep:
    """One seed's :class:`CostSweep` from the summaries of its runs, keeping each method's best learning rate."""
    shape = (len(methods), coverages.size)
    eta = np.zeros(shape)
    reached = np.zeros(shape, dtype=bool)
    responses = np.zeros(shape, dtype=np.int64)
    steps = np.zeros(shape, dtype=np.int64)
    lowest = np.full(shape, np.nan)
    loss = np.full(shape, np.nan)
    final = np.full(shape, np.nan)
    grids = [np.full((coverages.size, len(method.learning_rates)), np.inf) for method in methods]
    kept: list[list[RunSummary | None]] = [[None] * coverages.size for _ in methods]
    for i, method in enumerate(methods):
        for j in range(coverages.size):
            best, best_k = None, None
            for k in range(len(method.learning_rates)):
                outcome = outcomes[(i, j, k)]
                if outcome is None:
                    continue
                if outcome.responses_to_eps is not None:
                    grids[i][j, k] = outcome.responses_to_eps
                if best is None or outcome.key < best.key:
                    best, best_k = outcome, k
            if best is None:
                responses[i, j], steps[i, j] = method.response_budget, method.step_budget
                continue
            kept[i][j] = best
            eta[i, j] = method.learning_rates[best_k] or 0.0
            reached[i, j] = best.responses_to_eps is not None
            responses[i, j] = best.responses_to_eps if reached[i, j] else best.total_responses
            steps[i, j] = best.steps_to_eps if reached[i, j] else best.total_steps
            lowest[i, j], loss[i, j], final[i, j] = best.min_log10_coverage, best.coverage_loss, best.final_suboptimality
    base = [instance.optimal_value - expected_reward(instance, base_log_policy(instance)) for instance in instances]
    return CostSweep(
        coverages=coverages,
        methods=methods,
        eps=eps,
        eta=eta,
        reached=reached,
        responses_to_eps=responses,
        steps_to_eps=steps,
        min_log10_coverage=lowest,
        coverage_loss=loss,
        final_suboptimality=final,
        grid_responses=tuple(grids),
        base_suboptimality=np.array(base),
        best_runs=tuple(tuple(row) for row in kept),
    )


def cost_sweep(
    instances: Sequence[BanditInstance],
    coverages: Sequence[float],
    methods: Sequence[Method],
    *,
    eps: float,
    seed: int,
) -> CostSweep:
    """Run every method on every instance and record its costs to eps-optimality.

    Each method tries every learning rate of its grid and keeps the one that reaches eps with
    the fewest responses (fewest steps on a tie; if none reaches it, the lowest final
    suboptimality). A learning rate whose run diverges counts as not reaching eps. Every run
    on instance ``i`` draws from ``np.random.default_rng([seed, i])``, whatever the method and
    learning rate. The runs go through :func:`covpo.experiments.parallel.run_tasks`, so the results do not
    depend on the joblib backend.
    """
    instances, coverages, methods, eps = _check_sweep_arguments(instances, coverages, methods, eps)
    seed = _check_seed("seed", seed)
    coordinates = _sweep_coordinates(methods, len(instances))
    tasks = [(methods[i], instances[j], methods[i].learning_rates[k], (seed, j), eps) for i, j, k in coordinates]
    outcomes = dict(zip(coordinates, run_tasks(summarize_run, tasks, "cost sweep")))
    return _assemble_sweep(instances, coverages, methods, eps, outcomes)


@dataclass(frozen=True, eq=False)
class SeededCostSweep:
    """The same :func:`cost_sweep` once per seed: how often each method reaches eps, and at what cost.

    Attributes
    ----------
    seeds
        The seeds, one sweep each (runs on instance ``j`` draw from ``np.random.default_rng([seed, j])``).
    sweeps
        The per-seed :class:`CostSweep` records, in the order of :attr:`seeds`.

    The stacked arrays (:attr:`reached`, :attr:`responses_to_eps`, :attr:`steps_to_eps`,
    :attr:`coverage_loss`, :attr:`eta`) have shape ``(n_seeds, n_methods, n_coverages)``.
    """

    seeds: tuple[int, ...]
    sweeps: tuple[CostSweep, ...]

    def __post_init__(self) -> None:
        seeds = check_seeds("seeds", self.seeds)
        sweeps = check_instances("sweeps", self.sweeps, CostSweep)
        if len(seeds) != len(sweeps):
            raise ValueError(f"sweeps must hold one sweep per seed: got {len(sweeps)} for {len(seeds)} seeds")
        labels = {tuple(method.label for method in sweep.methods) for sweep in sweeps}
        if len(labels) != 1 or len({tuple(sweep.coverages) for sweep in sweeps}) != 1:
            raise ValueError("sweeps must share their methods and coverages")
        object.__setattr__(self, "seeds", seeds)
        object.__setattr__(self, "sweeps", sweeps)

    @property
    def coverages(self) -> np.ndarray:
        """``C_cov`` of each instance, ``(n_coverages,)``."""
        return self.sweeps[0].coverages

    @property
    def methods(self) -> tuple[Method, ...]:
        """The methods, ``(n_methods,)``."""
        return self.sweeps[0].methods

    @property
    def eps(self) -> float:
        """The accuracy target."""
        return self.sweeps[0].eps

    def _stack(self, name: str) -> np.ndarray:
        return np.stack([getattr(sweep, name) for sweep in self.sweeps])

    @property
    def reached(self) -> np.ndarray:
        """Whether each seed's run (at its best learning rate) reached eps, ``(n_seeds, n_methods, n_coverages)``."""
        return self._stack("reached")

    @property
    def responses_to_eps(self) -> np.ndarray:
        """Responses to eps (the budget spent where not reached), ``(n_seeds, n_methods, n_coverages)``."""
        return self._stack("responses_to_eps")

    @property
    def steps_to_eps(self) -> np.ndarray:
        """Gradient steps to eps (the budget spent where not reached), ``(n_seeds, n_methods, n_coverages)``."""
        return self._stack("steps_to_eps")

    @property
    def coverage_loss(self) -> np.ndarray:
        """The worst prompt's coverage loss in decades, ``(n_seeds, n_methods, n_coverages)``."""
        return self._stack("coverage_loss")

    @property
    def eta(self) -> np.ndarray:
        """The learning rate kept, ``(n_seeds, n_methods, n_coverages)``."""
        return self._stack("eta")

    def rows(self, labels: Sequence[str]) -> list[int]:
        """The method rows of ``labels``."""
        if isinstance(labels, str):
            raise ValueError(f"labels must be a sequence of method labels, got {labels!r}")
        return [self.sweeps[0].method_index(label) for label in labels]

    def reach_rate(self, labels: Sequence[str], level: float = 0.95) -> Rate:
        """Cells (seed, method, coverage) of the methods ``labels`` that reached eps, with their Wilson interval."""
        return rate_of(self.reached[:, self.rows(labels)], level)

    def exponents(self, label: str, cost: str = "responses") -> np.ndarray:
        """Each seed's fitted exponent of ``cost`` in ``C_cov`` (:meth:`CostSweep.fit`), ``nan`` where it has no fit."""
        fits = [sweep.fit(label, cost) for sweep in self.sweeps]
        return np.array([np.nan if fit is None else fit.exponent for fit in fits])

    def median_fit(self, label: str, cost: str = "responses") -> CoverageFit | None:
        """The power-law fit of the seeds' median cost at each coverage where most seeds reached eps.

        A coverage enters where more than half the seeds' runs reached eps (so that the median
        is a cost to eps, not a budget); ``None`` where fewer than two coverages do.
        """
        if cost not in ("responses", "steps"):
            raise ValueError(f"cost must be 'responses' or 'steps', got {cost!r}")
        row = self.sweeps[0].method_index(label)
        values = (self.responses_to_eps if cost == "responses" else self.steps_to_eps)[:, row].astype(float)
        keep = self.reached[:, row].sum(axis=0) * 2 > len(self.seeds)
        if keep.sum() < 2:
            return None
        return fit_coverage_power(self.coverages[keep], np.median(values[:, keep], axis=0))

    def table(self, caption: str = "") -> Table:
        """One row per seed, method and coverage: learning rate kept, whether eps was reached, costs, coverage lost."""
        rows = tuple(
            (seed, *row)
            for seed, sweep in zip(self.seeds, self.sweeps)
            for row in sweep.table().rows
        )
        first = self.sweeps[0].table()
        return Table(
            ("seed", *first.columns),
            rows,
            caption=caption or f"Costs to ε = {self.eps:g} against the base model's coverage, per seed",
            notes=first.notes,
        )

    def rate_table(self, caption: str = "") -> Table:
        """One row per method: cells reaching eps with their Wilson interval, where it failed, the coverage lost."""
        rows = []
        reached, loss = self.reached, self.coverage_loss
        for i, method in enumerate(self.methods):
            rate = rate_of(reached[:, i])
            failed = ~reached[:, i]
            failing_coverages = sorted({float(c) for c in self.coverages[failed.any(axis=0)]})
            rows.append((
                method.label, f"{rate.successes} of {rate.trials}", 100 * rate.low, 100 * rate.high,
                ", ".join(f"{c:g}" for c in failing_coverages) or None,
                float(np.nanmax(loss[:, i][failed])) if failed.any() and np.isfinite(loss[:, i][failed]).any() else None,
                float(np.nanmax(loss[:, i][~failed])) if (~failed).any() else None,
            ))
        return Table(
            ("method", "cells reaching ε", "Wilson 95% low (%)", "Wilson 95% high (%)", "$C_{\\mathrm{cov}}$ of the failures",
             "worst loss, failing cells (decades)", "worst loss, cells reaching ε (decades)"),
            tuple(rows),
            caption=caption or f"How often each method reaches ε = {self.eps:g}, over seeds {self.seeds[0]}-{self.seeds[-1]}",
            notes=("A cell is one seed at one coverage.",),
        )

    def fit_table(self, caption: str = "") -> Table:
        """One row per method: the fit of the seeds' median responses, and the range of the per-seed exponents."""
        rows = []
        for method in self.methods:
            fit = self.median_fit(method.label)
            exponents = self.exponents(method.label)
            fitted = exponents[np.isfinite(exponents)]
            rows.append((
                method.label,
                float(fit.exponent) if fit else None, float(fit.r_squared) if fit else None,
                float(fitted.min()) if fitted.size else None, float(fitted.max()) if fitted.size else None,
                int(fitted.size),
            ))
        return Table(
            ("method", "exponent of the medians", "R² of the medians", "lowest per-seed exponent",
             "highest per-seed exponent", "seeds with a fit"),
            tuple(rows),
            caption=caption or r"Responses to ε fitted as a power of $C_{\mathrm{cov}}$, over seeds",
            notes=("Medians over the seeds at each coverage where more than half of them reached ε; "
                   "per-seed fits over the coverages where that seed reached ε (at least two).",),
        )

    def to_record(self) -> dict:
        """The per-seed outcomes as JSON-ready lists (for a stamped record, :mod:`covpo.records`)."""
        return {
            "seeds": list(self.seeds),
            "methods": [method.label for method in self.methods],
            "coverages": self.coverages.tolist(),
            "eps": self.eps,
            "reached": self.reached.tolist(),
            "responses_to_eps": self.responses_to_eps.tolist(),
            "coverage_loss": np.where(np.isfinite(self.coverage_loss), self.coverage_loss, -1.0).tolist(),
        }


def cost_sweeps(
    instances: Sequence[BanditInstance],
    coverages: Sequence[float],
    methods: Sequence[Method],
    *,
    eps: float,
    seeds: Sequence[int],
) -> SeededCostSweep:
    """:func:`cost_sweep` once per seed of ``seeds``, every run of every seed through one call of
    :func:`~covpo.experiments.parallel.run_tasks` (each seed's sweep is the one :func:`cost_sweep` gives)."""
    instances, coverages, methods, eps = _check_sweep_arguments(instances, coverages, methods, eps)
    seeds = check_seeds("seeds", seeds)
    coordinates = _sweep_coordinates(methods, len(instances))
    tasks = [
        (methods[i], instances[j], methods[i].learning_rates[k], (seed, j), eps) for seed in seeds for i, j, k in coordinates
    ]
    every = run_tasks(summarize_run, tasks, "cost sweeps")
    per_seed = len(coordinates)
    sweeps = tuple(
        _assemble_sweep(instances, coverages, methods, eps, dict(zip(coordinates, every[s * per_seed : (s + 1) * per_seed])))
        for s in range(len(seeds))
    )
    return SeededCostSweep(seeds=seeds, sweeps=sweeps)


# ---------------------------------------------------------------------------------------
# Several methods under one response budget


def compare_at_budget(
    instance: BanditInstance, methods: Sequence[Method], response_budget: int, *, seed: int
) -> tuple[Trajectory | None, ...]:
    """Run each method at the first learning rate of its grid for ``response_budget`` responses.

    Each method gets the outer iterations (REINFORCE: steps) of
    :meth:`Method.with_response_budget`, so all of them sample the same number of responses
    (up to one batch), from ``np.random.default_rng(seed)``. A run that diverges is returned as ``None``.
    """
    check_instance("instance", instance, BanditInstance)
    response_budget = check_count("response_budget", response_budget)
    seed = _check_seed("seed", seed)
    tasks = [(method, instance, response_budget, seed) for method in check_methods("methods", methods)]
    return tuple(run_tasks(budget_run, tasks, "budget runs", progress=False))


def budget_run(method: Method, instance: BanditInstance, response_budget: int, seed: int) -> Trajectory | None:
    """One run of :func:`compare_at_budget`: ``method`` at its first learning rate for ``response_budget`` responses.

    ``seed`` is an integer ``>= 0`` (``None`` would draw fresh entropy and lose reproducibility).
    """
    method = check_instance("method", method, Method)
    check_instance("instance", instance, BanditInstance)
    seed = _check_seed("seed", seed)
    return run_unless_diverged(
        method.with_response_budget(response_budget), instance, method.learning_rates[0], np.random.default_rng(seed)
    )


@dataclass(frozen=True, eq=False)
class RecipeComparison:
    """Several methods under one response budget on one instance, over several seeds.

    Attributes
    ----------
    names
        The methods' labels, ``(n_methods,)``.
    response_budget, eps, seeds
        The shared budget, the accuracy target, and the seeds (one run per method and seed).
    reached
        Whether each run became eps-optimal within the budget, ``(n_methods, n_seeds)``.
    responses_to_eps
        Responses at the first eps-optimal record; the responses spent where not reached.
    coverage_loss
        Largest fall of any prompt's coverage below its base value, in decades (``nan`` if diverged).
    final_suboptimality
        ``J* - J`` at the end (``nan`` if diverged).
    diverged
        Whether the run stopped on a non-finite step.
    trajectories
        The runs of the first seed, for plotting (``None`` where diverged).
    """

    names: tuple[str, ...]
    response_budget: int
    eps: float
    seeds: tuple[int, ...]
    reached: np.ndarray
    responses_to_eps: np.ndarray
    coverage_loss: np.ndarray
    final_suboptimality: np.ndarray
    diverged: np.ndarray
    trajectories: tuple[Trajectory | None, ...]

    def summary(self) -> str:
        """One line per method: seeds that reached eps, their median cost, median final gap, worst coverage loss."""
        lines = []
        for i, name in enumerate(self.names):
            reached = self.reached[i]
            cost = f", median {int(np.median(self.responses_to_eps[i][reached])):,} to eps" if reached.any() else ""
            lines.append(
                f"{name:32}: eps in {reached.sum()}/{reached.size}{cost}; median J* - J "
                f"{np.nanmedian(self.final_suboptimality[i]):.3f}; worst coverage loss {np.nanmax(self.coverage_loss[i]):.2f}"
                if not self.diverged[i].all()
                else f"{name:32}: diverged in every seed"
            )
        return "\n".join(lines)

    def table(self, caption: str = "") -> Table:
        """One row per method: seeds that reached eps, median cost to eps, median final gap, worst coverage loss."""
        rows = []
        for i, name in enumerate(self.names):
            reached = self.reached[i]
            if self.diverged[i].all():
                rows.append((name, 0, None, None, None))
                continue
            rows.append((
                name, int(reached.sum()),
                float(np.median(self.responses_to_eps[i][reached])) if reached.any() else None,
                float(np.nanmedian(self.final_suboptimality[i])), float(np.nanmax(self.coverage_loss[i])),
            ))
        return Table(
            ("method", f"seeds reaching ε (of {len(self.seeds)})", "median responses to ε",
             "median final $J^\\star - J$", "worst coverage loss (decades)"),
            tuple(rows),
            caption=caption or f"{self.response_budget:,} responses per run, ε = {self.eps:g}",
            notes=("Median responses over the seeds that reached ε; a dash where none did "
                   "(or, in every column, where every seed diverged).",),
        )


def compare_recipes(
    instance: BanditInstance,
    methods: Sequence[Method],
    response_budget: int,
    *,
    eps: float,
    seeds: Sequence[int],
) -> RecipeComparison:
    """:func:`compare_at_budget` once per seed, summarized per method and seed (all runs through :func:`~covpo.experiments.parallel.run_tasks`)."""
    check_instance("instance", instance, BanditInstance)
    eps = check_positive("eps", eps)
    methods = check_methods("methods", methods)
    response_budget = check_count("response_budget", response_budget)
    seeds = check_seeds("seeds", seeds)
    log_base = log_coverage(instance, base_log_policy(instance))
    shape = (len(methods), len(seeds))
    reached = np.zeros(shape, dtype=bool)
    diverged = np.zeros(shape, dtype=bool)
    responses = np.zeros(shape, dtype=np.int64)
    loss = np.full(shape, np.nan)
    final = np.full(shape, np.nan)
    tasks = [(method, instance, response_budget, seed) for seed in seeds for method in methods]
    every_run = run_tasks(budget_run, tasks, "budget runs")
    first = tuple(every_run[: len(methods)])
    for j in range(len(seeds)):
        for i, trajectory in enumerate(every_run[j * len(methods) : (j + 1) * len(methods)]):
            if trajectory is None:
                diverged[i, j] = True
                continue
            hit = trajectory.responses_to_eps(eps)
            reached[i, j] = hit is not None
            responses[i, j] = hit if hit is not None else trajectory.total_responses
            loss[i, j] = trajectory.coverage_loss(log_base)
            final[i, j] = trajectory.suboptimality[-1]
    return RecipeComparison(
        names=tuple(method.label for method in methods),
        response_budget=int(response_budget),
        eps=eps,
        seeds=seeds,
        reached=reached,
        responses_to_eps=responses,
        coverage_loss=loss,
        final_suboptimality=final,
        diverged=diverged,
        trajectories=first,
    )


# ---------------------------------------------------------------------------------------
# The methods of the two instance families


def random_family_methods() -> tuple[Method, ...]:
    """The five methods of chapter 4's cost sweep on the random family, with our budgets and grids.

    The three reset methods run at one learning rate each; the two fixed-reference baselines
    pick the best of a grid, per instance.
    """
    ppo = {"beta": 1.0, "batch_size": 256, "inner_steps": 10, "n_iterations": 40}
    grpo = {"batch_size": 32, "group_size": 8}
    grid = (4.0, 16.0, 64.0)
    return (
        Method("PPO-NoClip", "ppo_noclip", ppo, (2.0,)),
        Method("PPO-Lite", "ppo_lite", ppo, (2.0,)),
        Method("GRPO, resets", "grpo_reset", {**grpo, "beta": 0.5, "inner_steps": 10, "n_iterations": 40}, (4.0,)),
        Method("GRPO, fixed ref., no KL", "grpo_fixed", {**grpo, "beta": 0.0, "inner_steps": 1, "n_iterations": 60}, grid),
        Method("REINFORCE", "reinforce", {"batch_size": 32, "n_iterations": 300, "record_every": 5}, grid),
    )


def collapse_family_methods() -> tuple[Method, ...]:
    """The same five methods for the stacked collapse family.

    The tabular reset methods take more inner steps at a larger learning rate (a rare optimal
    response's logit moves in proportion to its probability); the baselines get a budget of
    32,000 responses, several times what the reset methods need, and a wider grid.
    """
    ppo = {"beta": 1.0, "batch_size": 256, "inner_steps": 40, "n_iterations": 25}
    grpo = {"batch_size": 32, "group_size": 8}
    grid = (8.0, 64.0, 512.0)
    return (
        Method("PPO-NoClip", "ppo_noclip", ppo, (8.0,)),
        Method("PPO-Lite", "ppo_lite", ppo, (8.0,)),
        Method("GRPO, resets", "grpo_reset", {**grpo, "beta": 0.5, "inner_steps": 20, "n_iterations": 40}, (8.0,)),
        Method("GRPO, fixed ref., no KL", "grpo_fixed", {**grpo, "beta": 0.0, "inner_steps": 1, "n_iterations": 125}, grid),
        Method("REINFORCE", "reinforce", {"batch_size": 32, "n_iterations": 1000, "record_every": 10}, grid),
    )
