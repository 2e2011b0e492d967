"""Exact REINFORCE over a grid of learning rates and gaps: the smoothness range and beyond it (paper section 2.1).

A first-order analysis of gradient ascent on a smooth objective licenses step sizes up to
``2 / L`` (the ascent lemma: every step with ``eta < 2 / L`` raises the objective), and the
convergence analyses of softmax policy gradient use ``eta = 1 / L``. For a tabular softmax
policy over finitely many responses with rewards in ``[0, 1]``, ``theta -> J(pi_theta)`` is
``5/2``-smooth (Mei et al., 2020, Lemma 2), which is the setting of chapter 2's collapse family
without a KL penalty; so the range a first-order analysis allows there is ``eta <= 4/5``
(:data:`SOFTMAX_SMOOTHNESS`, :func:`smooth_step_limit`). The bound and its constant are theirs;
the grids, the instances and every measurement here are ours.

:func:`learning_rate_grid` runs every ``(eta, gap)`` pair of a grid in one compiled call and fits
the exponential growth in ``1 / gap`` at each rate; :func:`first_steps` keeps the class masses of
the first few steps, which is where learning rates far above the range decide a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.collapse_instance import (
    DEFAULT_DISTRACTOR_PROB,
    DEFAULT_EPS_FRACTION,
    DEFAULT_N_ZERO,
    DEFAULT_OPTIMAL_PROB,
    CollapseInstance,
    _check_instance,
    class_log_probs,
    collapse_instance,
)
from covpo.fits import LineFit, fit_line
from covpo.validation import check_count, check_finite_array, check_positive, check_probability, check_probability_grid

from .engine import _run_exact, exact_reinforce_many
from .sweeps import ExponentialFit, fit_exponential

SOFTMAX_SMOOTHNESS = 2.5
"""Smoothness constant ``L`` of ``theta -> pi_theta^T r`` for a tabular softmax policy and rewards in ``[0, 1]``.

Mei, Xiao, Szepesvari and Schuurmans (2020), "On the global convergence rates of softmax policy
gradient methods", Lemma 2 (the one-step, bandit case); their convergence theorem for that case
uses ``eta = 1 / L = 2/5``.
"""

SMOOTH_RANGE_ETAS = np.array([0.1, 0.2, 0.4, 0.8])
"""Learning rates inside the smoothness range, from ``1/8`` of the edge ``2 / L`` up to the edge itself."""

LARGE_STEP_ETAS = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0])
"""Learning rates above the smoothness range, up to 320 times its edge."""

STEP_SIZE_GAPS = 1.0 / np.linspace(5.5, 7.5, 9)
"""Gaps of :func:`learning_rate_grid`: ``1 / gap`` from 5.5, where the smallest rates first collapse, to 7.5."""


def smooth_step_limit(smoothness: float = SOFTMAX_SMOOTHNESS) -> float:
    """``2 / L``: the largest step for which the ascent lemma guarantees ascent on an ``L``-smooth objective.

    Raises a ``ValueError`` naming ``smoothness`` unless it is positive.
    """
    return 2.0 / check_positive("smoothness", smoothness)


@dataclass(frozen=True)
class ExponentialFits:
    """One :class:`~covpo.experiments.collapse.sweeps.ExponentialFit` per learning rate.

    A fit is ``None`` where fewer than two runs at that rate reached eps.
    """

    fits: tuple[ExponentialFit | None, ...]

    @property
    def slopes(self) -> np.ndarray:
        """Decades of gradient steps per unit of ``1 / gap``, ``nan`` where there is no fit."""
        return np.array([np.nan if fit is None else fit.slope for fit in self.fits])

    @property
    def r_squared(self) -> np.ndarray:
        """Coefficient of determination of each fit, ``nan`` where there is no fit."""
        return np.array([np.nan if fit is None else fit.r_squared for fit in self.fits])

    @property
    def max_abs_residual(self) -> np.ndarray:
        """Largest deviation of each fit from its line, in decades."""
        return np.array([np.nan if fit is None else fit.max_abs_residual for fit in self.fits])


@dataclass(frozen=True)
class LearningRateGrid:
    """Exact REINFORCE at every ``(eta, gap)`` of a grid, from the base model to ``eps = eps_fraction * gap``.

    Arrays are ``(n_etas, n_gaps)``.

    Attributes
    ----------
    etas, gaps
        The grid.
    reached_eps, steps
        Whether each run reached eps within the budget, and its gradient steps (the budget
        where it did not: a lower bound).
    min_log10_coverage, min_coverage_step
        Lowest base-10 log coverage over every step of each run, and the step it occurred at.
    fits
        The exponential fit in ``1 / gap`` at each learning rate.
    base_coverage, collapse_factor, smoothness, max_steps
        The settings: a run collapsed when its coverage fell below ``base_coverage / collapse_factor``.
    reward_falls, min_reward_increment
        Over every step of each run: how many steps lowered the reward, and the smallest change
        of the reward in one step (:class:`~covpo.experiments.collapse.engine.StepIncrements`).
    """

    etas: np.ndarray
    gaps: np.ndarray
    reached_eps: np.ndarray
    steps: np.ndarray
    min_log10_coverage: np.ndarray
    min_coverage_step: np.ndarray
    fits: ExponentialFits
    base_coverage: float
    collapse_factor: float
    smoothness: float
    max_steps: int
    reward_falls: np.ndarray | None = None
    min_reward_increment: np.ndarray | None = None

    @property
    def step_limit(self) -> float:
        """The edge ``2 / L`` of the smoothness range."""
        return smooth_step_limit(self.smoothness)

    @property
    def in_smooth_range(self) -> np.ndarray:
        """Which learning rates lie inside the smoothness range ``eta <= 2 / L``, ``(n_etas,)``."""
        return self.etas <= self.step_limit

    @property
    def collapsed(self) -> np.ndarray:
        """Whether each run's coverage fell below ``base_coverage / collapse_factor`` at some step."""
        return self.min_log10_coverage < np.log10(self.base_coverage / self.collapse_factor)

    @property
    def collapse_depth(self) -> np.ndarray:
        """Decades of coverage lost at the lowest point of each run, ``log10 c_0 - min log10 coverage``."""
        return np.log10(self.base_coverage) - self.min_log10_coverage

    @property
    def depth_fits(self) -> tuple[LineFit, ...]:
        """Per learning rate, :attr:`collapse_depth` fitted as a straight line in ``1 / gap``.

        A straight line means the lowest coverage falls like ``exp(-c / gap)``; the slope is in
        decades of coverage per unit of ``1 / gap``.
        """
        return tuple(fit_line(1.0 / self.gaps, depth) for depth in self.collapse_depth)


def learning_rate_grid(
    gaps: Sequence[float] | np.ndarray = STEP_SIZE_GAPS,
    etas: Sequence[float] | np.ndarray = np.concatenate([SMOOTH_RANGE_ETAS, LARGE_STEP_ETAS]),
    eps_fraction: float = DEFAULT_EPS_FRACTION,
    max_steps: int = 50_000_000,
    collapse_factor: float = 10.0,
    smoothness: float = SOFTMAX_SMOOTHNESS,
    optimal_prob: float = DEFAULT_OPTIMAL_PROB,
    distractor_prob: float = DEFAULT_DISTRACTOR_PROB,
    n_zero: int = DEFAULT_N_ZERO,
    progress: bool | None = None,
) -> LearningRateGrid:
    """Steps to eps and the lowest coverage of exact REINFORCE for every learning rate and gap (paper section 2.1).

    Unregularized exact REINFORCE, the setting of the smoothness bound; every run advances in
    one compiled call. The exponential fit in ``1 / gap`` at each learning rate uses the runs
    that reached eps.

    Parameters
    ----------
    gaps
        Distractor gaps, each in ``(0, 1)``.
    etas
        Learning rates, each ``> 0``.
    eps_fraction
        ``eps / gap``, in ``(0, 1)``.
    max_steps
        Budget per run. On the default grid every run reaches eps, the slowest (the smallest
        rate at the smallest gap) after about 13 million steps.
    collapse_factor
        A run collapsed when its coverage fell below ``base_coverage / collapse_factor``; ``> 1``.
    smoothness
        The smoothness constant ``L`` that sets the range ``eta <= 2 / L``.
    optimal_prob, distractor_prob, n_zero
        The instance family (:func:`~covpo.collapse_instance.collapse_instance`).
    progress
        Show a progress bar; by default only when the grid is long to compute.
    """
    gaps = check_probability_grid("gaps", gaps)
    etas = check_finite_array("etas", etas, ndim=1)
    if gaps.size < 2 or etas.size == 0:
        raise ValueError(
            f"gaps must hold at least two gaps and etas at least one rate, got {gaps.size} and {etas.size}"
        )
    for eta in etas:
        check_positive("etas", eta)
    eps_fraction = check_probability("eps_fraction", eps_fraction)
    max_steps = check_count("max_steps", max_steps)
    collapse_factor = check_positive("collapse_factor", collapse_factor)
    if collapse_factor <= 1.0:
        raise ValueError(f"collapse_factor must be > 1, got {collapse_factor!r}")
    smoothness = check_positive("smoothness", smoothness)
    instances = [collapse_instance(gap, optimal_prob, distractor_prob, n_zero) for gap in gaps]
    shape = (etas.size, gaps.size)
    summary = exact_reinforce_many(
        instances * etas.size,
        eta=np.repeat(etas, gaps.size).tolist(),
        n_iterations=max_steps,
        eps=np.tile(eps_fraction * gaps, etas.size).tolist(),
        progress=progress,
    )
    reached = summary.reached_eps.reshape(shape)
    steps = summary.steps.reshape(shape)
    fits = tuple(
        fit_exponential(1.0 / gaps[row], steps[k, row]) if np.count_nonzero(row) >= 2 else None
        for k, row in enumerate(reached)
    )
    return LearningRateGrid(
        etas=etas,
        gaps=gaps,
        reached_eps=reached,
        steps=steps,
        min_log10_coverage=summary.min_log10_coverage.reshape(shape),
        min_coverage_step=summary.min_coverage_step.reshape(shape),
        fits=ExponentialFits(fits),
        base_coverage=optimal_prob,
        collapse_factor=collapse_factor,
        smoothness=smoothness,
        max_steps=max_steps,
        reward_falls=summary.increments.reward_falls.reshape(shape),
        min_reward_increment=summary.increments.min_reward_increment.reshape(shape),
    )


@dataclass(frozen=True)
class FirstSteps:
    """Class masses over the first steps of exact REINFORCE at several learning rates.

    Attributes
    ----------
    instance
        The instance, started at its base model.
    etas
        The learning rates, ``(n_etas,)``.
    masses
        Mass on (optimal, distractor, zero block) after ``0, 1, ..., n_steps`` steps, ``(n_etas, n_steps + 1, 3)``.
    """

    instance: CollapseInstance
    etas: np.ndarray
    masses: np.ndarray

    @property
    def slide_drive(self) -> np.ndarray:
        """``(1 - gap) z / (2 gap a)`` at every recorded step, ``(n_etas, n_steps + 1)``.

        The zero block's residual mass ``z`` pays the distractor and the gap pays the optimal
        response (mass ``a``); with nearly all remaining mass on the distractor the distractor
        keeps gaining on the optimal response roughly while this ratio exceeds one (chapter 2's
        proof sketch, our heuristic for our family).
        """
        gap = self.instance.gap
        optimal, zero = self.masses[..., 0], self.masses[..., 2]
        return (1.0 - gap) * zero / (2.0 * gap * optimal)


def first_steps(instance: CollapseInstance, etas: Sequence[float] | np.ndarray, n_steps: int = 3) -> FirstSteps:
    """The class masses after each of the first ``n_steps`` steps of exact REINFORCE, per learning rate.

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`; every run starts at its base model.
    etas
        Learning rates, each ``> 0``.
    n_steps
        Number of steps to record, ``>= 1``.
    """
    instance = _check_instance(instance)
    etas = check_finite_array("etas", etas, ndim=1)
    if etas.size == 0:
        raise ValueError("etas must hold at least one learning rate")
    for eta in etas:
        check_positive("etas", eta)
    n_steps = check_count("n_steps", n_steps)
    runs = _run_exact(
        [instance] * etas.size,
        etas.astype(float),
        np.zeros(etas.size),
        np.full(etas.size, -1.0),
        n_steps,
        np.arange(n_steps + 1, dtype=np.int64),
        progress=False,
    )
    return FirstSteps(instance, etas, np.exp(class_log_probs(instance, runs.record_logits)))
