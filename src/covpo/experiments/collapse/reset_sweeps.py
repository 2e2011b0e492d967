"""Sweeps of exact-gradient APMD on the collapse family (paper section 3.1, appendix C).

- :func:`inner_steps_sweep`: where coverage preservation breaks as the inner loop gets too
  short or the step too large;
- :func:`apmd_steps_along_knob`: steps to eps along the hardness knob of chapter 2, which
  grow like a small power of ``1 / gap`` instead of exponentially, at constant coverage;
- :func:`inner_accuracy_sweep`: how accurately each inner loop solves its subproblem
  (:func:`inner_kl_per_reset`) next to how much coverage the run keeps.

Every sweep advances its runs together in one compiled call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from covpo.fits import fit_line
from covpo.validation import (
    check_count,
    check_finite_array,
    check_positive,
    check_positive_grid,
    check_probability,
    check_probability_grid,
)

from .engine import DEFAULT_ETA, DEFAULT_MAX_STEPS, CollapseRun
from covpo.collapse_instance import (
    CollapseInstance,
    DEFAULT_DISTRACTOR_PROB,
    DEFAULT_EPS_FRACTION,
    DEFAULT_N_ZERO,
    DEFAULT_OPTIMAL_PROB,
    _check_instance,
    class_log_probs,
    collapse_instance,
)
from .resets import (
    DEFAULT_APMD_BETA,
    DEFAULT_INNER_STEPS,
    exact_apmd_many,
    exact_apmd_run,
    mirror_descent_resets_to_eps,
)
from .sweeps import REGULARIZED_GAPS, UNREGULARIZED_GAPS

APMD_KNOB_GAPS = np.concatenate([UNREGULARIZED_GAPS, REGULARIZED_GAPS, [1.0 / 100.0, 1.0 / 200.0]])
"""Gaps of the APMD knob sweep, the two chapter-2 sweeps' gaps followed by ``1/gap = 100, 200``."""

INNER_STEPS_GRID = (1, 2, 4, 8, 16, 32, 64)
"""Inner step counts of :func:`inner_steps_sweep`."""

ETA_GRID = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
"""Learning rates of :func:`inner_steps_sweep`."""

ACCURACY_ETAS = (2.0, 4.0)
"""Learning rates of :func:`inner_accuracy_sweep`."""

DEFAULT_COVERAGE_FRACTION = 0.5


@dataclass(frozen=True)
class InnerStepsSweep:
    """APMD over a grid of inner step counts and learning rates on one instance (paper section 3.1).

    Arrays are ``(n_etas, n_inner_steps)``.

    Attributes
    ----------
    inner_steps, etas
        The grid.
    reached_eps
        Whether each run reached eps-optimality within ``max_steps``.
    steps_to_eps
        Gradient steps to eps; where not reached, the budget (a lower bound).
    min_log10_coverage
        Lowest base-10 log coverage over every step of each run.
    min_coverage_ratio
        That lowest coverage divided by the base coverage.
    preserved
        Whether coverage stayed at or above ``coverage_fraction`` times the base coverage.
    beta, eps, max_steps, coverage_fraction, base_coverage
        The settings of the sweep.
    """

    inner_steps: np.ndarray
    etas: np.ndarray
    reached_eps: np.ndarray
    steps_to_eps: np.ndarray
    min_log10_coverage: np.ndarray
    min_coverage_ratio: np.ndarray
    preserved: np.ndarray
    beta: float
    eps: float
    max_steps: int
    coverage_fraction: float
    base_coverage: float


def inner_steps_sweep(
    instance: CollapseInstance,
    inner_steps: Sequence[int] | np.ndarray = INNER_STEPS_GRID,
    etas: Sequence[float] | np.ndarray = ETA_GRID,
    beta: float = DEFAULT_APMD_BETA,
    eps: float | None = None,
    max_steps: int = 1_000_000,
    coverage_fraction: float = DEFAULT_COVERAGE_FRACTION,
    progress: bool | None = None,
) -> InnerStepsSweep:
    """Where APMD stops preserving coverage: too few inner steps or too large a step (paper section 3.1, appendix C.1).

    One exact APMD run per ``(eta, inner_steps)``, each until eps-optimality or ``max_steps``.
    The APMD guarantee of paper section 3.1 needs every inner loop to solve its subproblem accurately;
    ``inner_steps = 1`` is REINFORCE itself, because the KL gradient vanishes at the
    reference, and short inner loops collapse coverage as REINFORCE does. ``eps`` defaults
    to half the gap.

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`.
    inner_steps
        Gradient steps per reset to sweep, each ``>= 1``.
    etas
        Learning rates to sweep, each ``> 0``.
    beta
        The APMD regularization strength, ``> 0``.
    eps
        Accuracy target, ``> 0``; ``None`` means half the gap.
    max_steps
        Budget of gradient steps per run.
    coverage_fraction
        A run preserves coverage when its lowest coverage is at least this fraction of the
        base coverage (``1/2`` in the paper's guarantee), in ``(0, 1)``.
    progress
        Show a progress bar; by default only when the sweep is long.
    """
    instance = _check_instance(instance)
    inner_steps = check_positive_grid("inner_steps", inner_steps, integers=True)
    etas = check_positive_grid("etas", etas)
    beta = check_positive("beta", beta)
    eps = DEFAULT_EPS_FRACTION * instance.gap if eps is None else check_positive("eps", eps)
    max_steps = check_count("max_steps", max_steps)
    coverage_fraction = check_probability("coverage_fraction", coverage_fraction)
    grid_etas, grid_steps = np.meshgrid(etas, inner_steps, indexing="ij")
    summary = exact_apmd_many(
        [instance] * grid_etas.size,
        eta=grid_etas.ravel().tolist(),
        gradient_steps=max_steps,
        beta=beta,
        inner_steps=grid_steps.ravel().tolist(),
        eps=eps,
        progress=progress,
    )
    shape = grid_etas.shape
    ratio = 10.0 ** (summary.min_log10_coverage.reshape(shape) - np.log10(instance.base_coverage))
    return InnerStepsSweep(
        inner_steps=inner_steps,
        etas=etas,
        reached_eps=summary.reached_eps.reshape(shape),
        steps_to_eps=summary.steps.reshape(shape),
        min_log10_coverage=summary.min_log10_coverage.reshape(shape),
        min_coverage_ratio=ratio,
        preserved=ratio >= coverage_fraction,
        beta=beta,
        eps=eps,
        max_steps=max_steps,
        coverage_fraction=coverage_fraction,
        base_coverage=instance.base_coverage,
    )


@dataclass(frozen=True)
class PowerFit:
    """Least-squares fit ``log10(steps) = intercept + exponent * log10(1 / gap)``.

    Attributes
    ----------
    exponent
        The power of ``1 / gap``.
    intercept
        ``log10`` steps extrapolated to ``1 / gap = 1``.
    r_squared
        Coefficient of determination of the fit.
    n_points
        Number of runs the fit used.
    """

    exponent: float
    intercept: float
    r_squared: float
    n_points: int


def fit_power(inverse_gaps: np.ndarray, steps: np.ndarray) -> PowerFit:
    """Fit ``log10 steps`` as a straight line in ``log10(1 / gap)`` by least squares."""
    x = check_finite_array("inverse_gaps", inverse_gaps, ndim=1)
    steps = check_finite_array("steps", steps, ndim=1)
    if x.size < 2 or x.size != steps.size:
        raise ValueError(
            f"inverse_gaps and steps must hold at least two values each, of equal length, got {x.size} and {steps.size}"
        )
    if np.any(x <= 0) or np.any(steps < 1):
        raise ValueError("inverse_gaps must be > 0 and steps >= 1 to take logarithms")
    line = fit_line(np.log10(x), np.log10(steps))
    return PowerFit(line.slope, line.intercept, line.r_squared, line.n_points)


@dataclass(frozen=True)
class APMDKnobSweep:
    """Exact APMD's steps to eps along the hardness knob ``1 / gap`` (paper sections 2.1 and 3.1).

    Attributes
    ----------
    gaps, eps
        The distractor gaps and the eps of each run (``eps = eps_fraction * gap``).
    reached_eps
        Whether each run reached eps-optimality within ``max_steps``.
    steps_to_eps
        Gradient steps to eps; where not reached, the budget (a lower bound).
    resets_to_eps
        Reference resets those steps took, ``ceil(steps / inner_steps)``.
    mirror_descent_resets
        Resets exact mirror descent at the same ``beta`` needs
        (:func:`~covpo.experiments.collapse.resets.mirror_descent_resets_to_eps`), for comparison.
    min_log10_coverage
        Lowest base-10 log coverage over every step of each run.
    min_coverage_ratio
        That lowest coverage divided by the base coverage.
    base_coverage
        Coverage ``c_0`` of the base model at each knob value (constant by design).
    fit
        Power-law fit of steps to eps in ``1 / gap`` over the runs that reached eps, or
        ``None`` if fewer than two did.
    beta, inner_steps, eta, max_steps
        The APMD settings.
    """

    gaps: np.ndarray
    eps: np.ndarray
    reached_eps: np.ndarray
    steps_to_eps: np.ndarray
    resets_to_eps: np.ndarray
    mirror_descent_resets: np.ndarray
    min_log10_coverage: np.ndarray
    min_coverage_ratio: np.ndarray
    base_coverage: np.ndarray
    fit: PowerFit | None
    beta: float
    inner_steps: int
    eta: float
    max_steps: int


def apmd_steps_along_knob(
    gaps: Sequence[float] | np.ndarray = APMD_KNOB_GAPS,
    beta: float = DEFAULT_APMD_BETA,
    inner_steps: int = DEFAULT_INNER_STEPS,
    eta: float = DEFAULT_ETA,
    eps_fraction: float = DEFAULT_EPS_FRACTION,
    max_steps: int = DEFAULT_MAX_STEPS,
    optimal_prob: float = DEFAULT_OPTIMAL_PROB,
    distractor_prob: float = DEFAULT_DISTRACTOR_PROB,
    n_zero: int = DEFAULT_N_ZERO,
    progress: bool | None = None,
) -> APMDKnobSweep:
    """Exact APMD's steps to eps as the distractor gap shrinks, the knob of chapter 2 (paper sections 2.1 and 3.1).

    The same instances, eps and learning rate as
    :func:`~covpo.experiments.collapse.sweeps.steps_to_eps_sweep`, so the two sweeps compare directly:
    REINFORCE's steps grow like ``exp(c / gap)``, APMD's like a small power of ``1 / gap``,
    following exact mirror descent's ``beta / gap`` resets (paper section 3.1, Eq. (18)), and its coverage
    does not fall below the base coverage's level. All runs advance in one compiled call.

    Parameters
    ----------
    gaps
        Distractor gaps, each in ``(0, 1)``.
    beta, inner_steps, eta
        APMD's regularization strength, gradient steps per reset and learning rate.
    eps_fraction
        ``eps / gap``, in ``(0, 1)``.
    max_steps
        Budget per run; runs that do not reach eps are censored there.
    optimal_prob, distractor_prob, n_zero
        The instance family (:func:`~covpo.collapse_instance.collapse_instance`).
    progress
        Show a progress bar; by default only when the sweep is long.
    """
    gaps = check_probability_grid("gaps", gaps)
    beta = check_positive("beta", beta)
    inner_steps = check_count("inner_steps", inner_steps)
    eta = check_positive("eta", eta)
    eps_fraction = check_probability("eps_fraction", eps_fraction)
    max_steps = check_count("max_steps", max_steps)
    instances = [collapse_instance(gap, optimal_prob, distractor_prob, n_zero) for gap in gaps]
    eps = eps_fraction * gaps
    summary = exact_apmd_many(
        instances,
        eta=eta,
        gradient_steps=max_steps,
        beta=beta,
        inner_steps=inner_steps,
        eps=eps.tolist(),
        progress=progress,
    )
    reached = summary.reached_eps
    fit = fit_power(1.0 / gaps[reached], summary.steps[reached]) if np.count_nonzero(reached) >= 2 else None
    base_coverage = np.array([instance.base_coverage for instance in instances])
    return APMDKnobSweep(
        gaps=gaps,
        eps=eps,
        reached_eps=reached,
        steps_to_eps=summary.steps,
        resets_to_eps=-(-summary.steps // inner_steps),
        mirror_descent_resets=np.array(
            [mirror_descent_resets_to_eps(instance, beta, e) for instance, e in zip(instances, eps)]
        ),
        min_log10_coverage=summary.min_log10_coverage,
        min_coverage_ratio=10.0 ** (summary.min_log10_coverage - np.log10(base_coverage)),
        base_coverage=base_coverage,
        fit=fit,
        beta=beta,
        inner_steps=inner_steps,
        eta=eta,
        max_steps=max_steps,
    )


def inner_kl_per_reset(run: CollapseRun, beta: float, inner_steps: int) -> np.ndarray:
    """``KL(pi_{t+1} || pi*_{t+1})`` of every complete outer iteration of an APMD run (paper section 3.1).

    ``pi*_{t+1} proportional to pi_t exp(r / beta)`` is the exact mirror-descent step from the
    reference ``pi_t``; the value is the accuracy with which the inner loop solved subproblem
    ``t``, the quantity :func:`covpo.algorithms.mirror_descent.apmd` keeps in ``Trajectory.inner_kl``. The zero-reward
    responses share one logit in the policy and in the target, so the KL over the three
    classes equals the KL over all responses. ``run`` must hold a record at every reset,
    ``inner_steps`` steps apart, from step 0 on (``record_steps`` at multiples of ``inner_steps``).
    """
    if not isinstance(run, CollapseRun):
        raise ValueError(f"run must be a CollapseRun, got {type(run).__name__} {run!r}")
    beta = check_positive("beta", beta)
    inner_steps = check_count("inner_steps", inner_steps)
    steps = run.trajectory.gradient_steps
    at_resets = steps % inner_steps == 0
    expected = np.arange(0, steps[at_resets][-1] + 1, inner_steps)
    if not np.array_equal(steps[at_resets], expected):
        raise ValueError(f"run must be recorded at every multiple of inner_steps={inner_steps} from step 0")
    log_masses = class_log_probs(run.instance, run.logits[at_resets])
    log_target = log_masses[:-1] + run.instance.rewards / beta
    log_target -= logsumexp(log_target, axis=1, keepdims=True)
    following = log_masses[1:]
    return np.maximum(np.sum(np.exp(following) * (following - log_target), axis=1), 0.0)


@dataclass(frozen=True)
class InnerAccuracySweep:
    """Inner-loop accuracy and coverage of APMD over inner step counts and learning rates (paper section 3.1).

    Arrays are ``(n_etas, n_inner_steps)``; every run takes ``max_steps // inner_steps`` complete
    outer iterations from the base model, without stopping at eps.

    Attributes
    ----------
    inner_steps, etas
        The grid.
    max_inner_kl, median_inner_kl
        The worst and the median ``KL(pi_{t+1} || pi*_{t+1})`` over the run's outer iterations.
    min_coverage_ratio
        The lowest coverage over every step, divided by the base coverage.
    preserved
        Whether that ratio stayed at or above ``coverage_fraction``.
    final_suboptimality
        ``J* - J`` at the end of the run.
    beta, max_steps, coverage_fraction, base_coverage
        The settings of the sweep.
    """

    inner_steps: np.ndarray
    etas: np.ndarray
    max_inner_kl: np.ndarray
    median_inner_kl: np.ndarray
    min_coverage_ratio: np.ndarray
    preserved: np.ndarray
    final_suboptimality: np.ndarray
    beta: float
    max_steps: int
    coverage_fraction: float
    base_coverage: float


def inner_accuracy_sweep(
    instance: CollapseInstance,
    inner_steps: Sequence[int] | np.ndarray = INNER_STEPS_GRID,
    etas: Sequence[float] | np.ndarray = ACCURACY_ETAS,
    beta: float = DEFAULT_APMD_BETA,
    max_steps: int = 512,
    coverage_fraction: float = DEFAULT_COVERAGE_FRACTION,
) -> InnerAccuracySweep:
    """How accurately APMD's inner loops solve their subproblems, next to the coverage each run keeps.

    The measured counterpart of APMD's guarantee (paper section 3.1, proved in appendix D): if every inner loop is
    accurate enough, in ``KL(pi_{t+1} || pi*_{t+1})``, coverage degrades from the base model's by at most an
    amount the accumulated inner KL controls; the threshold measured here, half the base coverage, is our
    choice. One exact APMD run per ``(eta, inner_steps)``, recorded at every reset
    (:func:`inner_kl_per_reset`).

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`.
    inner_steps
        Gradient steps per reset, each in ``[1, max_steps]``.
    etas
        Learning rates, each ``> 0``.
    beta
        The APMD regularization strength, ``> 0``.
    max_steps
        Budget of gradient steps per run; a run stops at the last complete outer iteration.
    coverage_fraction
        The fraction of the base coverage a run must keep to count as preserving it, in ``(0, 1)``.
    """
    instance = _check_instance(instance)
    inner_steps = check_positive_grid("inner_steps", inner_steps, integers=True)
    etas = check_positive_grid("etas", etas)
    beta = check_positive("beta", beta)
    max_steps = check_count("max_steps", max_steps)
    coverage_fraction = check_probability("coverage_fraction", coverage_fraction)
    if np.any(inner_steps > max_steps):
        raise ValueError(f"inner_steps must not exceed max_steps={max_steps}, got {inner_steps.tolist()}")
    shape = (etas.size, inner_steps.size)
    max_kl, median_kl, lowest, final = (np.empty(shape) for _ in range(4))
    for i, eta in enumerate(etas):
        for j, steps in enumerate(inner_steps):
            budget = (max_steps // steps) * steps
            run = exact_apmd_run(
                instance,
                beta=beta,
                inner_steps=int(steps),
                eta=float(eta),
                gradient_steps=budget,
                record_steps=np.arange(0, budget + 1, steps),
                progress=False,
            )
            kl = inner_kl_per_reset(run, beta, int(steps))
            max_kl[i, j], median_kl[i, j] = kl.max(), np.median(kl)
            lowest[i, j] = run.trajectory.min_log10_coverage
            final[i, j] = run.trajectory.suboptimality[-1]
    ratio = 10.0 ** (lowest - np.log10(instance.base_coverage))
    return InnerAccuracySweep(
        inner_steps=inner_steps,
        etas=etas,
        max_inner_kl=max_kl,
        median_inner_kl=median_kl,
        min_coverage_ratio=ratio,
        preserved=ratio >= coverage_fraction,
        final_suboptimality=final,
        beta=beta,
        max_steps=max_steps,
        coverage_fraction=coverage_fraction,
        base_coverage=instance.base_coverage,
    )
