"""Stochastic noise and coverage collapse, over many seeds (paper sections 2.1 and 3.2; our experiment).

The paper's lower bound and its constructions use exact gradients; the paper expects the collapse
to persist under stochastic noise but does not prove it there. This module measures what noise
does on the stacked collapse family of chapter 4 (:func:`~covpo.families.collapse_family`): every
method of :func:`noise_methods` runs with the same response budget from many seeds, and each run's
**depth**,
``min_{t, x} log10 c_t(x) / c_0(x)`` over its recorded iterates and prompts (``<= 0``), is set
beside the depth of the method's exact-gradient counterpart (:func:`exact_counterpart`):

- sampled REINFORCE (no reference): exact REINFORCE (:func:`covpo.algorithms.reinforce.exact_reinforce`)
  at the same learning rate and step count, its expectation;
- GRPO with the reference fixed at ``pi_0`` and no KL, one inner step: exact REINFORCE at
  ``eta (1 - 1/G)``, the expectation of a group-centred step at ``w = 1``;
- PPO-Lite and GRPO with resets: exact-gradient APMD (:func:`covpo.algorithms.mirror_descent.apmd`, ``K``
  population-gradient steps per reset) at the same ``beta``, ``K`` and ``eta``. For PPO-Lite with
  the exact penalty and an inactive clip this is the population version of the same inner loop;
  for GRPO it is only the nearest analogue (its k3 penalty follows the reverse KL and its
  centred advantages scale the reward gradient by ``1 - 1/G``).

Every run is one task of :func:`covpo.experiments.parallel.run_tasks`, seeded by
``np.random.default_rng([seed, method, coverage, s])``, so results do not depend on the joblib
backend or the number of workers. The settings are ours; the paper has no such experiment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.algorithms import run
from covpo.experiments.parallel import run_tasks
from covpo.experiments.sweeps import Method, check_methods, run_unless_diverged
from covpo.families import collapse_family
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, log_coverage
from covpo.table import Table
from covpo.trajectory import LOG10_E, Trajectory
from covpo.validation import check_count, check_finite_array, check_instance, check_positive, check_seeds

BOOK_COVERAGES = (40.0,)
BOOK_BUDGET, BOOK_SEEDS, BOOK_EPS = 6400, 24, 0.04
COLLAPSE_DECADES = 1.0
"""A run *collapses* when some prompt's coverage falls more than this many decades below its base value."""
DEPTH_TOLERANCE = 0.01
"""A sampled run is *deeper* than its exact counterpart when its depth is lower by more than this (decades)."""


def noise_methods() -> tuple[Method, ...]:
    """The four methods of the noise study; ``n_iterations`` is a placeholder that the budget replaces.

    Two without a reset reference, at the large learning rate at which chapter 4's baselines
    did best (sampled REINFORCE with ``N = 32``; GRPO-style with ``N = 32`` prompts, ``G = 8``
    responses, one inner step, no KL), and two with resets at chapter 4's settings of the
    collapse family, with ``K = 20`` inner steps.
    """
    return (
        Method("REINFORCE", "reinforce", {"batch_size": 32, "n_iterations": 1}, (64.0,)),
        Method(
            "GRPO, fixed ref., no KL", "grpo_fixed",
            {"beta": 0.0, "batch_size": 32, "group_size": 8, "inner_steps": 1, "n_iterations": 1}, (64.0,),
        ),
        Method(
            "GRPO, resets", "grpo_reset",
            {"beta": 0.5, "batch_size": 32, "group_size": 8, "inner_steps": 20, "n_iterations": 1}, (8.0,),
        ),
        Method("PPO-Lite", "ppo_lite", {"beta": 1.0, "batch_size": 256, "inner_steps": 20, "n_iterations": 1}, (8.0,)),
    )


def coverage_depth(instance: BanditInstance, trajectory: Trajectory) -> float:
    """``min_{t, x} log10 c_t(x) / c_0(x)`` over the recorded iterates and prompts with ``rho(x) > 0`` (``<= 0``)."""
    instance = check_instance("instance", instance, BanditInstance)
    trajectory = check_instance("trajectory", trajectory, Trajectory)
    if trajectory.log_coverage.shape[1] != instance.n_prompts:
        raise ValueError(
            f"trajectory must be a run on instance ({instance.n_prompts} prompts), "
            f"got log coverages of {trajectory.log_coverage.shape[1]} prompts"
        )
    support = instance.prompt_probs > 0.0
    log_base = log_coverage(instance, base_log_policy(instance))
    return float(np.min((trajectory.log_coverage - log_base)[:, support])) * LOG10_E


SQUARED_LOSS_STEP_SCALE = {"kimipo": 2.0, "kimipo_norm": 2.0, "rebel_onpolicy": 4.0}
"""``c`` in ``grad L(theta_t) = -c beta grad J(pi_t)`` for the squared losses of paper section 4.

At the start of an inner loop (``pi_theta = pi_t``) the Kimi-style loss has gradient
``-2 beta E[(r - b) s] = -2 beta grad J`` and the pairwise loss ``-4 beta grad J``, while APMD's
``J_beta(.; pi_t)`` has gradient ``grad J``: a descent step of size ``eta`` on the loss is an APMD
step of size ``c beta eta`` (their curvatures, ``2 beta^2`` and ``4 beta^2`` against ``beta`` times
the Fisher information, scale the same way).
"""


def exact_counterpart(method: Method, instance: BanditInstance) -> Trajectory | None:
    """The exact-gradient run nearest to ``method`` (see the module docstring), or ``None`` if there is none.

    Same number of gradient steps as the sampled method (``n_iterations`` steps for REINFORCE
    and one-step GRPO, ``n_iterations`` resets of ``K`` steps for the reset methods), through
    :func:`covpo.run` (``"reinforce_exact"`` or ``"apmd"``) at the method's first learning rate,
    scaled to the same step: ``1 - 1/G`` for GRPO's centred advantages with one inner step and a
    fixed reference, ``c beta`` (:data:`SQUARED_LOSS_STEP_SCALE`) for the squared-loss methods.
    GRPO with a fixed reference has a counterpart only with one inner step and no KL; GRPO whose
    advantages are scaled by each group's standard deviation has none (the scaling divides every
    group by its own random spread, which no fixed learning rate reproduces); a method without a
    learning rate has none.
    """
    method = check_instance("method", method, Method)
    instance = check_instance("instance", instance, BanditInstance)
    h = method.hyperparameters
    if not method.etas or h.get("scale_by_std", False):
        return None
    eta, n_iterations = method.etas[0], method.n_iterations
    if method.algorithm == "reinforce":
        penalty = {"beta": h["beta"]} if "beta" in h else {}
        return run("reinforce_exact", instance, eta=eta, n_iterations=n_iterations, **penalty)
    if method.algorithm == "grpo_fixed":
        if h["inner_steps"] != 1 or h["beta"] != 0.0:
            return None
        centred_eta = eta * (1.0 - 1.0 / h["group_size"])
        return run("reinforce_exact", instance, eta=centred_eta, n_iterations=n_iterations)
    if not method.definition.resets:
        return None
    scale = SQUARED_LOSS_STEP_SCALE.get(method.algorithm)
    step = eta if scale is None else scale * h["beta"] * eta
    return run("apmd", instance, beta=h["beta"], eta=step, n_iterations=n_iterations, inner_steps=h["inner_steps"])


def sampled_noise_run(
    method: Method, instance: BanditInstance, eps: float, seed: Sequence[int]
) -> tuple[float, int, float, bool]:
    """One seed of one method: ``(depth, responses to eps or -1, final J* - J, diverged)``.

    :func:`~covpo.experiments.sweeps.run_unless_diverged` at the first learning rate of the
    method's grid with ``np.random.default_rng(list(seed))``; a run whose parameters become
    non-finite is reported as ``(nan, -1, nan, True)``.
    """
    method = check_instance("method", method, Method)
    instance = check_instance("instance", instance, BanditInstance)
    eps = check_positive("eps", eps)
    seed = check_seeds("seed", seed)
    trajectory = run_unless_diverged(method, instance, method.learning_rates[0], np.random.default_rng(list(seed)))
    if trajectory is None:
        return np.nan, -1, np.nan, True
    hit = trajectory.responses_to_eps(eps)
    return (
        coverage_depth(instance, trajectory),
        -1 if hit is None else int(hit),
        float(trajectory.suboptimality[-1]),
        False,
    )


def exact_noise_run(method: Method, instance: BanditInstance, eps: float) -> tuple[float, int, float]:
    """The exact counterpart's ``(depth, gradient steps to eps or -1, final J* - J)``; all ``nan``/``-1`` if none."""
    eps = check_positive("eps", eps)
    trajectory = exact_counterpart(method, instance)
    if trajectory is None:
        return np.nan, -1, np.nan
    hit = trajectory.steps_to_eps(eps)
    return coverage_depth(instance, trajectory), -1 if hit is None else int(hit), float(trajectory.suboptimality[-1])


@dataclass(frozen=True, eq=False)
class NoiseStudy:
    """Sampled methods over many seeds next to their exact-gradient counterparts, on the collapse family.

    Attributes
    ----------
    methods
        The budgeted :class:`~covpo.experiments.sweeps.Method` records, ``(n_methods,)``.
    coverages
        ``C_cov`` of each instance, ``(n_coverages,)``.
    response_budget, eps, seed, collapse_decades
        The shared budget, the accuracy target, the base seed and the collapse threshold.
    depth
        ``min_{t, x} log10 c_t(x) / c_0(x)`` per run, ``(n_methods, n_coverages, n_seeds)``
        (``nan`` where diverged).
    responses_to_eps
        Responses at the first eps-optimal record, ``-1`` where not reached, same shape.
    final_suboptimality
        ``J* - J`` at the end of the budget (``nan`` where diverged), same shape.
    diverged
        Whether the run stopped on a non-finite step, same shape.
    exact_depth, exact_steps_to_eps, exact_final_suboptimality
        The exact counterpart's depth, gradient steps to eps (``-1`` if not reached) and final
        suboptimality, ``(n_methods, n_coverages)``; ``nan`` and ``-1`` where there is none.
    """

    methods: tuple[Method, ...]
    coverages: np.ndarray
    response_budget: int
    eps: float
    seed: int
    collapse_decades: float
    depth: np.ndarray
    responses_to_eps: np.ndarray
    final_suboptimality: np.ndarray
    diverged: np.ndarray
    exact_depth: np.ndarray
    exact_steps_to_eps: np.ndarray
    exact_final_suboptimality: np.ndarray

    @property
    def names(self) -> tuple[str, ...]:
        """The methods' labels."""
        return tuple(method.label for method in self.methods)

    @property
    def n_seeds(self) -> int:
        """Runs per method and coverage."""
        return int(self.depth.shape[2])

    @property
    def collapsed(self) -> np.ndarray:
        """Runs whose depth is below ``-collapse_decades`` (diverged runs count as collapsed)."""
        return ~(np.nan_to_num(self.depth, nan=-np.inf) >= -self.collapse_decades)

    @property
    def collapsed_fraction(self) -> np.ndarray:
        """Share of seeds that collapsed, ``(n_methods, n_coverages)``."""
        return self.collapsed.mean(axis=2)

    @property
    def exact_collapsed(self) -> np.ndarray:
        """Whether the exact counterpart collapsed (``False`` where there is none)."""
        return np.nan_to_num(self.exact_depth, nan=0.0) < -self.collapse_decades

    @property
    def reached_fraction(self) -> np.ndarray:
        """Share of seeds that reached eps within the budget."""
        return (self.responses_to_eps >= 0).mean(axis=2)

    @property
    def median_responses_to_eps(self) -> np.ndarray:
        """Median responses to eps over the seeds that reached it (``nan`` where none did)."""
        reached = np.where(self.responses_to_eps >= 0, self.responses_to_eps, np.nan).astype(float)
        result = np.full(reached.shape[:2], np.nan)
        some = ~np.all(np.isnan(reached), axis=2)
        result[some] = np.nanmedian(reached[some], axis=1)
        return result

    @property
    def deeper_than_exact_fraction(self) -> np.ndarray:
        """Share of seeds deeper than the exact counterpart by over :data:`DEPTH_TOLERANCE` (``nan`` where there is none)."""
        limit = self.exact_depth[:, :, None] - DEPTH_TOLERANCE
        deeper = (np.nan_to_num(self.depth, nan=-np.inf) < limit).mean(axis=2)
        return np.where(np.isnan(self.exact_depth), np.nan, deeper)

    def depth_quantiles(self, levels: Sequence[float] = (0.1, 0.5, 0.9)) -> np.ndarray:
        """Quantiles of the depth over the seeds that did not diverge, ``(n_methods, n_coverages, n_levels)``."""
        levels = check_finite_array("levels", levels, ndim=1)
        if np.any((levels < 0.0) | (levels > 1.0)):
            raise ValueError(f"levels must lie in [0, 1], got {levels!r}")
        result = np.full((*self.depth.shape[:2], levels.size), np.nan)
        for index in np.ndindex(*self.depth.shape[:2]):
            values = self.depth[index][~np.isnan(self.depth[index])]
            if values.size:
                result[index] = np.quantile(values, levels)
        return result

    def table(self) -> Table:
        """One row per method and coverage: collapse, depth, eps reached and its cost, the exact counterpart.

        ``str(table)`` gives it as aligned text.
        """
        medians = self.depth_quantiles((0.5,))[:, :, 0]
        rows = []
        for j, coverage in enumerate(self.coverages):
            for i, method in enumerate(self.methods):
                cost = self.median_responses_to_eps[i, j]
                exact = self.exact_depth[i, j]
                middle = float(medians[i, j])
                rows.append((
                    method.label,
                    float(coverage),
                    float(100 * self.collapsed_fraction[i, j]),
                    middle,
                    float(exact) if np.isfinite(exact) else None,
                    float(100 * self.deeper_than_exact_fraction[i, j]) if np.isfinite(exact) else None,
                    float(100 * self.reached_fraction[i, j]),
                    float(cost) if np.isfinite(cost) else None,
                ))
        return Table(
            ("method", r"$C_{\mathrm{cov}}$", "collapsed (% of seeds)", "median depth (decades)", "exact depth (decades)",
             "deeper than exact (% of seeds)",
             "reached ε (% of seeds)", "median responses to ε"),
            tuple(rows),
            caption=(
                f"Sampling noise on the collapse family: {self.response_budget:,} responses per run, "
                f"{self.n_seeds} seeds, ε = {self.eps:g}"
            ),
            notes=(
                f"Depth: the lowest $\\log_{{10}}$ of a prompt's coverage over its base value during the run. A run "
                f"collapses when its depth is below -{self.collapse_decades:g}. Exact: the exact-gradient "
                f"counterpart at the same settings ('-': none); deeper than exact by over "
                f"{DEPTH_TOLERANCE:g} decades. Median responses over the seeds that reached ε.",
            ),
        )

    def summary(self) -> str:
        """Per method and coverage: collapse, depth quantiles, eps reached and its cost, and the exact counterpart."""
        quantiles = self.depth_quantiles()
        lines = [
            (
                f"collapse family, {self.response_budget:,} responses per run, {self.n_seeds} seeds, eps = {self.eps:g}; "
                f"collapsed = coverage more than {self.collapse_decades:g} decade(s) below base; depth in decades"
            )
        ]
        for j, coverage in enumerate(self.coverages):
            lines.append(f"C_cov = {coverage:g}")
            for i, method in enumerate(self.methods):
                cost = self.median_responses_to_eps[i, j]
                cost_text = f", median {int(cost):,} responses" if np.isfinite(cost) else ""
                low, middle, high = quantiles[i, j]
                exact = (
                    f"exact: depth {self.exact_depth[i, j]:.2f}, "
                    + (f"eps at step {self.exact_steps_to_eps[i, j]:,}" if self.exact_steps_to_eps[i, j] >= 0 else "not eps")
                    + f"; {100 * self.deeper_than_exact_fraction[i, j]:.0f}% of seeds deeper"
                    if np.isfinite(self.exact_depth[i, j])
                    else "no exact counterpart"
                )
                lines.append(
                    f"  {method.label:24} collapsed {100 * self.collapsed_fraction[i, j]:3.0f}%, depth median "
                    f"{middle:6.2f} (10-90%: {low:.2f} to {high:.2f}); eps in {100 * self.reached_fraction[i, j]:3.0f}%"
                    f"{cost_text}; {exact}"
                )
        return "\n".join(lines)


def noise_study(
    coverages: Sequence[float] = BOOK_COVERAGES,
    methods: Sequence[Method] | None = None,
    *,
    response_budget: int = BOOK_BUDGET,
    n_seeds: int = BOOK_SEEDS,
    eps: float = BOOK_EPS,
    seed: int = 0,
    collapse_decades: float = COLLAPSE_DECADES,
    progress: bool = True,
) -> NoiseStudy:
    """Run every method on every collapse-family instance from ``n_seeds`` seeds, and each exact counterpart once.

    Parameters
    ----------
    coverages
        ``C_cov`` of the instances (:func:`~covpo.families.collapse_family`), each ``> 0``.
    methods
        :class:`~covpo.experiments.sweeps.Method` records run at the first learning rate of their
        grid; :func:`noise_methods` by default. Each gets the outer iterations the budget allows
        (:meth:`~covpo.experiments.sweeps.Method.with_response_budget`).
    response_budget
        Responses every sampled run may draw.
    n_seeds, seed
        Seed ``s`` of method ``i`` on instance ``j`` draws from ``np.random.default_rng([seed, i, j, s])``.
    eps
        Accuracy target.
    collapse_decades
        The fall below base coverage, in decades, that counts as a collapse.
    progress
        Show :func:`~covpo.experiments.parallel.run_tasks`' progress bar.
    """
    coverages = check_finite_array("coverages", coverages, ndim=1)
    if coverages.size == 0 or np.any(coverages <= 0.0):
        raise ValueError(f"coverages must be a non-empty sequence of numbers > 0, got {coverages!r}")
    methods = noise_methods() if methods is None else check_methods("methods", methods)
    response_budget = check_count("response_budget", response_budget)
    methods = tuple(method.with_response_budget(response_budget) for method in methods)
    n_seeds = check_count("n_seeds", n_seeds)
    eps = check_positive("eps", eps)
    seed = check_count("seed", seed, minimum=0)
    collapse_decades = check_positive("collapse_decades", collapse_decades)
    instances = collapse_family(coverages)
    shape = (len(methods), coverages.size, n_seeds)
    cells = list(np.ndindex(*shape))
    sampled = run_tasks(
        sampled_noise_run,
        [(methods[i], instances[j], eps, (seed, i, j, s)) for i, j, s in cells],
        "noise study: sampled runs",
        progress,
    )
    exact = run_tasks(
        exact_noise_run,
        [(methods[i], instances[j], eps) for i, j in np.ndindex(*shape[:2])],
        "noise study: exact counterparts",
        progress,
    )
    depth, responses, final, diverged = (np.array(column).reshape(shape) for column in zip(*sampled))
    exact_depth, exact_steps, exact_final = (np.array(column).reshape(shape[:2]) for column in zip(*exact))
    return NoiseStudy(
        methods=methods,
        coverages=coverages,
        response_budget=int(response_budget),
        eps=eps,
        seed=seed,
        collapse_decades=collapse_decades,
        depth=depth.astype(float),
        responses_to_eps=responses.astype(np.int64),
        final_suboptimality=final.astype(float),
        diverged=diverged.astype(bool),
        exact_depth=exact_depth.astype(float),
        exact_steps_to_eps=exact_steps.astype(np.int64),
        exact_final_suboptimality=exact_final.astype(float),
    )
