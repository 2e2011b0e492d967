"""The sweeps chapter 2 reports: steps to eps along the hardness knob, beta and learning rate (our sweeps, after paper appendix C.1).

Measured on this family (our instance and constants, not the paper's): once the zero block
has drained, its mass decays like ``1 / t`` (``t = eta * steps``) and keeps pushing the
distractor ahead of the optimal response, so coverage decays like ``w / t`` with
``dw / d log t = k * gap * w**2``, ``k`` between 1.03 and 1.34 on the gap-0.1 run
(:func:`~covpo.experiments.collapse.phases.slide_profile`). Coverage keeps falling until
``log t`` has grown by about ``1 / (k * gap * w_0)``, and only then can the optimal response
overtake the distractor: steps to ``eps = gap / 2`` grow like ``exp(c / gap)`` at a fixed base
coverage, hence a fixed Best-of-N cost (:func:`steps_to_eps_sweep`). The default ``eta = 4``
lies five times beyond the smoothness range ``eta <= 2 / L = 0.8``; inside that range the
growth is steeper and the collapse deeper
(:func:`~covpo.experiments.collapse.step_sizes.learning_rate_grid`), so sweeps at ``eta = 4``
understate the collapse. Rates of 16 to 64 empty the zero block within a few steps and skip the
collapse on this family (:func:`~covpo.experiments.collapse.step_sizes.first_steps`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.fits import fit_line
from covpo.validation import (
    check_count,
    check_finite_array,
    check_flag,
    check_positive,
    check_probability,
    check_probability_grid,
)

from .engine import DEFAULT_ETA, DEFAULT_MAX_STEPS, StepIncrements, _run_exact, exact_reinforce_many
from covpo.collapse_instance import (
    CollapseInstance,
    DEFAULT_DISTRACTOR_PROB,
    DEFAULT_EPS_FRACTION,
    DEFAULT_MARGIN,
    DEFAULT_N_ZERO,
    DEFAULT_OPTIMAL_PROB,
    _check_beta,
    _check_instance,
    _state_summary,
    collapse_instance,
    regularized_optimum_suboptimality,
    strongest_eps_optimal_beta,
)

DEFAULT_DELTA = 0.01

UNREGULARIZED_GAPS = 1.0 / np.linspace(5.5, 10.0, 10)
"""Distractor gaps of the unregularized sweep, ``1/gap`` evenly spaced from 5.5 to 10."""

REGULARIZED_GAPS = 1.0 / np.linspace(12.5, 50.0, 9)
"""Distractor gaps of the sweep regularized toward the base model, ``1/gap`` from 12.5 to 50."""


def _best_of_n_samples(coverage: float, delta: float) -> int:
    """Smallest ``N`` with ``(1 - c)^N <= delta``: Best-of-N from ``pi_0`` (paper section 1.3)."""
    return int(np.ceil(np.log(delta) / np.log1p(-coverage)))


@dataclass(frozen=True)
class ExponentialFit:
    """Least-squares fit ``log10(steps) = intercept + slope / gap`` over the runs that reached eps.

    Attributes
    ----------
    slope
        Decades of gradient steps per unit of ``1 / gap``.
    intercept
        ``log10`` steps extrapolated to ``1 / gap = 0``.
    r_squared
        Coefficient of determination of the fit.
    max_abs_residual
        Largest deviation from the line, in decades.
    n_points
        Number of runs the fit used.
    """

    slope: float
    intercept: float
    r_squared: float
    max_abs_residual: float
    n_points: int

    @property
    def rate(self) -> float:
        """The slope in natural-log units, ``c`` in ``steps ~ C exp(c / gap)``."""
        return self.slope * np.log(10.0)


def fit_exponential(inverse_gaps: np.ndarray, steps: np.ndarray) -> ExponentialFit:
    """Fit ``log10 steps`` as a straight line in ``1 / gap`` by least squares."""
    x = check_finite_array("inverse_gaps", inverse_gaps, ndim=1)
    steps = check_finite_array("steps", steps, ndim=1)
    if x.size < 2 or x.size != steps.size:
        raise ValueError(
            f"inverse_gaps and steps must hold at least two values each, of equal length, got {x.size} and {steps.size}"
        )
    if np.any(x <= 0):
        raise ValueError(f"inverse_gaps must all be > 0 (one over a reward gap), found {x.min()!r}")
    if np.any(steps < 1):
        raise ValueError(f"steps must all be >= 1 to take logarithms, found {steps.min()!r}")
    line = fit_line(x, np.log10(steps))
    return ExponentialFit(line.slope, line.intercept, line.r_squared, line.max_abs_residual, line.n_points)


@dataclass(frozen=True)
class StepsToEpsSweep:
    """Steps to eps-optimality along the hardness knob ``1 / gap`` (paper section 2.1).

    Attributes
    ----------
    gaps, eps
        The distractor gaps and the eps of each run (``eps = eps_fraction * gap``).
    betas
        The fixed-reference KL strength of each run, ``nan`` when unregularized.
    reached_eps
        Whether each run reached eps-optimality within ``max_steps``.
    steps_to_eps
        Gradient steps to eps; where not reached, the budget (a lower bound).
    min_log10_coverage
        Lowest base-10 log coverage over every step of each run.
    base_coverage
        Coverage ``c_0`` of the base model at each knob value (constant by design).
    best_of_n_samples
        Best-of-N responses from the base model that find the optimal response with
        probability ``1 - delta`` (constant by design).
    fit
        Exponential fit over the runs that reached eps, or ``None`` if fewer than two did.
    eta, max_steps, delta
        The learning rate, the budget and the failure probability used.
    increments
        The per-step changes of reward and objective over every step of each run
        (:class:`~covpo.experiments.collapse.engine.StepIncrements`).
    """

    gaps: np.ndarray
    eps: np.ndarray
    betas: np.ndarray
    reached_eps: np.ndarray
    steps_to_eps: np.ndarray
    min_log10_coverage: np.ndarray
    base_coverage: np.ndarray
    best_of_n_samples: np.ndarray
    fit: ExponentialFit | None
    eta: float
    max_steps: int
    delta: float
    increments: StepIncrements | None = None


def steps_to_eps_sweep(
    gaps: Sequence[float] | np.ndarray = UNREGULARIZED_GAPS,
    eta: float = DEFAULT_ETA,
    eps_fraction: float = DEFAULT_EPS_FRACTION,
    max_steps: int = DEFAULT_MAX_STEPS,
    regularized: bool = False,
    margin: float = DEFAULT_MARGIN,
    optimal_prob: float = DEFAULT_OPTIMAL_PROB,
    distractor_prob: float = DEFAULT_DISTRACTOR_PROB,
    n_zero: int = DEFAULT_N_ZERO,
    delta: float = DEFAULT_DELTA,
    progress: bool | None = None,
) -> StepsToEpsSweep:
    """Exact REINFORCE's steps to eps-optimality as the distractor gap shrinks (paper section 2.1).

    Every knob value keeps the same base model coverage; ``eps = eps_fraction * gap`` sits
    below the gap, so the optimal response must overtake the distractor. With
    ``regularized=True`` each run adds the KL penalty toward the base model at the strength
    :func:`~covpo.collapse_instance.strongest_eps_optimal_beta` picks for its eps. All runs
    advance in one compiled call.

    Parameters
    ----------
    gaps
        Distractor gaps, each in ``(0, 1)``.
    eta
        Learning rate shared by all runs.
    eps_fraction
        ``eps / gap``, in ``(0, 1)``.
    max_steps
        Budget per run; runs that do not reach eps are censored there.
    regularized, margin
        Whether to regularize toward the base model, and the margin of the beta rule.
    optimal_prob, distractor_prob, n_zero
        The instance family (:func:`~covpo.collapse_instance.collapse_instance`).
    delta
        Failure probability for the Best-of-N comparison.
    progress
        Show a progress bar; by default only when the sweep is long.
    """
    gaps = check_probability_grid("gaps", gaps)
    eta = check_positive("eta", eta)
    eps_fraction = check_probability("eps_fraction", eps_fraction)
    delta = check_probability("delta", delta)
    max_steps = check_count("max_steps", max_steps)
    margin = check_probability("margin", margin)
    regularized = check_flag("regularized", regularized)
    instances = [collapse_instance(gap, optimal_prob, distractor_prob, n_zero) for gap in gaps]
    eps = eps_fraction * gaps
    if regularized:
        betas = np.array([strongest_eps_optimal_beta(instance, e, margin) for instance, e in zip(instances, eps)])
    else:
        betas = np.full(gaps.size, np.nan)
    summary = exact_reinforce_many(
        instances,
        eta=eta,
        n_iterations=max_steps,
        beta=[None if np.isnan(beta) else float(beta) for beta in betas],
        eps=eps.tolist(),
        progress=progress,
    )
    reached = summary.reached_eps
    fit = fit_exponential(1.0 / gaps[reached], summary.steps[reached]) if np.count_nonzero(reached) >= 2 else None
    base_coverage = np.array([instance.base_coverage for instance in instances])
    return StepsToEpsSweep(
        gaps=gaps,
        eps=eps,
        betas=betas,
        reached_eps=reached,
        steps_to_eps=summary.steps,
        min_log10_coverage=summary.min_log10_coverage,
        base_coverage=base_coverage,
        best_of_n_samples=np.array([_best_of_n_samples(c, delta) for c in base_coverage]),
        fit=fit,
        eta=eta,
        max_steps=max_steps,
        delta=delta,
        increments=summary.increments,
    )


@dataclass(frozen=True)
class BetaSweep:
    """Fixed-reference KL regularization toward the base model, one run per ``beta`` (paper section 2.1).

    Attributes
    ----------
    betas
        The strengths swept.
    optimum_suboptimality
        ``J* - J(pi_beta)`` of the regularized optimum ``pi_0 exp(r / beta) / Z``.
    optimum_eps_optimal
        Whether that optimum is eps-optimal at all.
    reached_eps, steps_to_eps
        Whether exact REINFORCE at that beta reached eps within the budget, and its steps
        (the budget where it did not).
    min_log10_coverage
        Lowest base-10 log coverage over every step of the run.
    collapsed
        Whether coverage fell below ``base_coverage / collapse_factor`` at some step.
    eps, eta, max_steps, base_coverage, collapse_factor
        The settings of the sweep.
    """

    betas: np.ndarray
    optimum_suboptimality: np.ndarray
    optimum_eps_optimal: np.ndarray
    reached_eps: np.ndarray
    steps_to_eps: np.ndarray
    min_log10_coverage: np.ndarray
    collapsed: np.ndarray
    eps: float
    eta: float
    max_steps: int
    base_coverage: float
    collapse_factor: float

    @property
    def escapes(self) -> np.ndarray:
        """The betas that reach eps within the budget without collapsing coverage."""
        return self.reached_eps & ~self.collapsed


def beta_sweep(
    instance: CollapseInstance,
    betas: Sequence[float] | np.ndarray,
    eta: float = DEFAULT_ETA,
    max_steps: int = 3_000_000,
    eps: float | None = None,
    collapse_factor: float = 10.0,
    progress: bool | None = None,
) -> BetaSweep:
    """For each ``beta``: is ``pi_beta`` eps-optimal, how low does coverage go, how many steps to eps.

    The paper's claim to test: every fixed-reference strength either lets coverage collapse
    or has an optimum that is not eps-optimal (paper section 2.1). ``eps`` defaults to half the gap.
    """
    instance = _check_instance(instance)
    betas = check_finite_array("betas", betas, ndim=1)
    if betas.size == 0:
        raise ValueError("betas must hold at least one beta")
    for beta in betas:
        check_positive("betas", beta)
    eta = check_positive("eta", eta)
    max_steps = check_count("max_steps", max_steps)
    eps = DEFAULT_EPS_FRACTION * instance.gap if eps is None else check_positive("eps", eps)
    collapse_factor = check_positive("collapse_factor", collapse_factor)
    if collapse_factor <= 1.0:
        raise ValueError(f"collapse_factor must be > 1, got {collapse_factor!r}")
    suboptimality = np.array([regularized_optimum_suboptimality(instance, beta) for beta in betas])
    summary = exact_reinforce_many(
        [instance] * betas.size,
        eta=eta,
        n_iterations=max_steps,
        beta=betas.tolist(),
        eps=eps,
        progress=progress,
    )
    threshold = np.log10(instance.base_coverage / collapse_factor)
    return BetaSweep(
        betas=betas,
        optimum_suboptimality=suboptimality,
        optimum_eps_optimal=suboptimality <= eps,
        reached_eps=summary.reached_eps,
        steps_to_eps=summary.steps,
        min_log10_coverage=summary.min_log10_coverage,
        collapsed=summary.min_log10_coverage < threshold,
        eps=eps,
        eta=eta,
        max_steps=max_steps,
        base_coverage=instance.base_coverage,
        collapse_factor=collapse_factor,
    )


ESCAPE_MAP_GAPS = np.array([0.12, 0.1, 0.08, 0.065, 0.05, 0.04, 0.03])
"""Distractor gaps of :func:`beta_escape_map`, from the easy end of chapter 2's knob to where no beta escapes."""

ESCAPE_MAP_BETAS = np.geomspace(1e-3, 1.0, 19)
"""Fixed-reference strengths of :func:`beta_escape_map`, six per decade from ``1e-3`` to 1."""

ESCAPE_OUTCOMES = ("collapsed", "optimum not eps-optimal", "escaped", "budget exhausted")
"""The outcomes :func:`beta_escape_map` tells apart, in the order it checks them."""


@dataclass(frozen=True)
class BetaEscapeMap:
    """The outcome of fixed-reference REINFORCE for every ``(gap, beta)`` (paper section 2.1).

    Arrays are ``(n_gaps, n_betas)``.

    Attributes
    ----------
    gaps, betas
        The grid.
    outcome
        One of :data:`ESCAPE_OUTCOMES` per run: ``"collapsed"`` when coverage fell below
        ``base_coverage / collapse_factor`` at some step; else ``"optimum not eps-optimal"``
        when ``pi_beta = pi_0 exp(r / beta) / Z`` is not eps-optimal, so no run at that
        strength can reach eps; else ``"escaped"`` when the run reached eps within the budget;
        else ``"budget exhausted"``.
    optimum_suboptimality
        ``J* - J(pi_beta)`` of the regularized optimum.
    reached_eps, steps_to_eps
        Whether each run reached eps within the budget, and its steps (the budget where not).
    min_log10_coverage
        Lowest base-10 log coverage over every step of each run.
    eps
        The eps of each gap, ``eps_fraction * gap``.
    eta, max_steps, base_coverage, collapse_factor
        The settings of the map.
    """

    gaps: np.ndarray
    betas: np.ndarray
    outcome: np.ndarray
    optimum_suboptimality: np.ndarray
    reached_eps: np.ndarray
    steps_to_eps: np.ndarray
    min_log10_coverage: np.ndarray
    eps: np.ndarray
    eta: float
    max_steps: int
    base_coverage: float
    collapse_factor: float

    @property
    def outcome_codes(self) -> np.ndarray:
        """The outcome as an index into :data:`ESCAPE_OUTCOMES`, for colour maps."""
        return np.vectorize(ESCAPE_OUTCOMES.index, otypes=[np.int64])(self.outcome)

    @property
    def escape_window(self) -> list[tuple[float, float] | None]:
        """Per gap, the smallest and largest beta that escaped, or ``None`` where none did."""
        escaped = self.outcome == "escaped"
        return [
            (float(self.betas[row].min()), float(self.betas[row].max())) if row.any() else None
            for row in escaped
        ]


def beta_escape_map(
    gaps: Sequence[float] | np.ndarray = ESCAPE_MAP_GAPS,
    betas: Sequence[float] | np.ndarray = ESCAPE_MAP_BETAS,
    eta: float = DEFAULT_ETA,
    eps_fraction: float = DEFAULT_EPS_FRACTION,
    max_steps: int = 1_000_000,
    collapse_factor: float = 10.0,
    optimal_prob: float = DEFAULT_OPTIMAL_PROB,
    distractor_prob: float = DEFAULT_DISTRACTOR_PROB,
    n_zero: int = DEFAULT_N_ZERO,
    progress: bool | None = None,
) -> BetaEscapeMap:
    """Which fixed-reference strengths escape collapse, gap by gap (paper section 2.1, chapter 2).

    :func:`beta_sweep` over a grid of gaps: exact REINFORCE with a KL penalty toward the base
    model at each ``beta``, until ``eps = eps_fraction * gap`` or ``max_steps``. The paper's
    claim is that every fixed strength either lets coverage collapse or has an optimum that
    is not eps-optimal; on this family the window of strengths that escapes both narrows as
    the gap shrinks and closes near ``gap = 0.03``. All runs advance in one compiled call.

    Parameters
    ----------
    gaps
        Distractor gaps, each in ``(0, 1)``.
    betas
        KL strengths toward the base model, each ``> 0``.
    eta
        Learning rate shared by all runs.
    eps_fraction
        ``eps / gap``, in ``(0, 1)``.
    max_steps
        Budget per run. On the default grid every run that escapes needs under 2,200 steps,
        and the map is the same at budgets from ``3e5`` to ``3e6``.
    collapse_factor
        A run collapses when its coverage falls below ``base_coverage / collapse_factor``; ``> 1``.
    optimal_prob, distractor_prob, n_zero
        The instance family (:func:`~covpo.collapse_instance.collapse_instance`).
    progress
        Show a progress bar; by default only when the map is long to compute.
    """
    gaps = check_probability_grid("gaps", gaps)
    betas = check_finite_array("betas", betas, ndim=1)
    if betas.size == 0:
        raise ValueError("betas must hold at least one beta")
    for beta in betas:
        check_positive("betas", beta)
    eta = check_positive("eta", eta)
    eps_fraction = check_probability("eps_fraction", eps_fraction)
    max_steps = check_count("max_steps", max_steps)
    collapse_factor = check_positive("collapse_factor", collapse_factor)
    if collapse_factor <= 1.0:
        raise ValueError(f"collapse_factor must be > 1, got {collapse_factor!r}")
    instances = [collapse_instance(gap, optimal_prob, distractor_prob, n_zero) for gap in gaps]
    eps = eps_fraction * gaps
    shape = (gaps.size, betas.size)
    suboptimality = np.array([[regularized_optimum_suboptimality(i, beta) for beta in betas] for i in instances])
    summary = exact_reinforce_many(
        [instance for instance in instances for _ in betas],
        eta=eta,
        n_iterations=max_steps,
        beta=np.tile(betas, gaps.size).tolist(),
        eps=np.repeat(eps, betas.size).tolist(),
        progress=progress,
    )
    reached = summary.reached_eps.reshape(shape)
    min_log10_coverage = summary.min_log10_coverage.reshape(shape)
    collapsed = min_log10_coverage < np.log10(optimal_prob / collapse_factor)
    outcome = np.select(
        [collapsed, suboptimality > eps[:, None], reached],
        ESCAPE_OUTCOMES[:3],
        default=ESCAPE_OUTCOMES[3],
    )
    return BetaEscapeMap(
        gaps=gaps,
        betas=betas,
        outcome=outcome,
        optimum_suboptimality=suboptimality,
        reached_eps=reached,
        steps_to_eps=summary.steps.reshape(shape),
        min_log10_coverage=min_log10_coverage,
        eps=eps,
        eta=eta,
        max_steps=max_steps,
        base_coverage=optimal_prob,
        collapse_factor=collapse_factor,
    )


@dataclass(frozen=True)
class LearningRateSweep:
    """Short runs at several learning rates, to pick the one that improves reward fastest.

    Attributes
    ----------
    etas
        The learning rates.
    reward, objective
        ``J`` and the ascended objective ``J_beta(.; pi_0)`` at every step, ``(n_etas, n_steps + 1)``.
    monotone
        Whether the ascended objective never decreased (to ``1e-12``) during the run.
    best_eta
        The monotone learning rate with the highest final reward (ties go to the one listed first).
    beta
        The KL strength used (``None``: unregularized).
    """

    etas: np.ndarray
    reward: np.ndarray
    objective: np.ndarray
    monotone: np.ndarray
    best_eta: float | None
    beta: float | None


def learning_rate_sweep(
    instance: CollapseInstance,
    etas: Sequence[float] | np.ndarray,
    n_steps: int,
    beta: float | None = None,
) -> LearningRateSweep:
    """The learning-rate sweep of paper appendix C.1: reward after ``n_steps`` exact steps per ``eta``.

    Call it once unregularized and once with a strong ``beta``; a learning rate that makes
    the strongly regularized ascent non-monotone is past the stable range.
    """
    instance = _check_instance(instance)
    etas = check_finite_array("etas", etas, ndim=1)
    if etas.size == 0:
        raise ValueError("etas must hold at least one learning rate")
    n_steps = check_count("n_steps", n_steps)
    beta = _check_beta(beta)
    runs = _run_exact(
        [instance] * etas.size,
        np.array([check_positive("etas", eta) for eta in etas]),
        np.full(etas.size, 0.0 if beta is None else beta),
        np.full(etas.size, -1.0),
        n_steps,
        np.arange(n_steps + 1, dtype=np.int64),
        progress=False,
    )
    summary = _state_summary(instance, runs.record_logits)
    objective = summary["reward"] - (0.0 if beta is None else beta) * summary["kl_to_base"]
    monotone = np.all(np.diff(objective, axis=1) >= -1e-12, axis=1)
    final = np.where(monotone, summary["reward"][:, -1], -np.inf)
    best_eta = float(etas[np.argmax(final)]) if monotone.any() else None
    return LearningRateSweep(etas, summary["reward"], objective, monotone, best_eta, beta)


