"""The measurements of chapter 4: PPO-NoClip, PPO-Lite and GRPO-style runs side by side (paper section 3).

Paper sections 3.2 and 3.3, appendices G and H. The algorithms live in :mod:`covpo.algorithms.ppo`,
:mod:`covpo.algorithms.grpo` and :mod:`covpo.algorithms.reinforce`; this module runs them at settings the chapter
prints and returns frozen records for the figures of :mod:`covpo.plots.ppo`:

- :func:`stacked_collapse_instance`: several prompts, each a tabular copy of the coverage-collapse
  bandit of paper section 2.1 (our instance), with its base coverage as the dial;
- :func:`ratio_spread` and :func:`ratio_bounds_by_beta`: the importance weights of PPO-NoClip
  per outer iteration, and their extremes against ``[exp(-R/beta), exp(R/beta)]``;
- :func:`clip_width_thresholds` and :func:`clip_activity_grid`: how often PPO-Lite clips as
  ``beta`` and the clipping interval vary, whether the target itself is ever clipped, and
  what clipping costs the optimization;
- :func:`estimator_spread`: the spread, across independent batches, of the importance-weighted
  objective and gradient with and without clipping, at a fixed batch size;
- :class:`MethodSettings`, :func:`run_method` and :func:`cost_sweep`: responses and gradient
  steps to eps-optimality against the base model's coverage, each method at the best
  learning rate of a small grid, with power-law fits;
- :func:`compare_at_budget` and :func:`compare_recipes`: several methods on one instance under
  one response budget, over several seeds; :func:`reverse_kl_optimum`, the policy that the
  k3 penalty's gradient points to.

Every instance, constant, budget and seed here is ours; the paper's are not reproduced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from covpo.experiments.collapse import collapse_instance
from covpo.coverage_instances import dialled_coverage_instance
from covpo.fits import fit_line
from covpo.algorithms.grpo import grpo
from covpo.instances import BanditInstance, tabular_instance
from covpo.objectives import (
    regularized_gradient,
    regularized_objective,
    regularized_optimum,
)
from covpo.policies import (
    base_log_policy,
    expected_reward,
    kl_per_prompt,
    log_coverage,
    log_policy,
)
from covpo.experiments.parallel import run_tasks
from covpo.algorithms.ppo import (
    PolicyOptimizationRun,
    check_clip_thresholds,
    default_clip_thresholds,
    draw_batch,
    ppo_lite,
    ppo_noclip,
)
from covpo.algorithms.reinforce import sampled_reinforce
from covpo.algorithms.squared_loss import kimipo, kimipo_norm, rebel_onpolicy
from covpo.table import Table
from covpo.trajectory import Trajectory
from covpo.validation import (
    check_count,
    check_finite_array,
    check_nonnegative,
    check_positive,
)

RESET_ALGORITHMS = ("ppo_noclip", "ppo_lite", "grpo_reset", "kimipo", "kimipo_norm", "rebel_onpolicy")
"""The algorithms that are instances of APMD and so need ``beta > 0``."""
ALGORITHMS = (
    "ppo_noclip",
    "ppo_lite",
    "grpo_reset",
    "grpo_fixed",
    "reinforce",
    "kimipo",
    "kimipo_norm",
    "rebel_onpolicy",
)
"""The algorithms :func:`run_method` knows, by the names :class:`MethodSettings` uses."""
MAX_LOG_THRESHOLD = 700.0
"""Largest ``|log c|`` :func:`clip_width_thresholds` returns, so both thresholds stay finite."""


RANDOM_COVERAGES = (5.0, 10.0, 20.0, 50.0, 100.0)
"""``C_cov`` of the random dialled instances of chapter 4."""
COLLAPSE_COVERAGES = (10.0, 20.0, 40.0, 80.0, 160.0)
"""``C_cov`` of the stacked collapse instances of chapter 4."""
RANDOM_SHAPE = (50, 8, 6)
"""Prompts, responses per prompt and feature dimension of the random dialled instances."""
COLLAPSE_PROMPTS, COLLAPSE_GAP, COLLAPSE_N_ZERO = 4, 0.2, 100
"""Prompts, distractor gap and zero-reward block size of the stacked collapse instances."""


# ---------------------------------------------------------------------------------------
# The two instance families


def stacked_collapse_instance(
    n_prompts: int,
    gap: float,
    coverage: float,
    *,
    distractor_ratio: float = 2.0,
    n_zero: int = 100,
) -> BanditInstance:
    """``n_prompts`` tabular copies of the coverage-collapse bandit (our instance of paper section 2.1), one per prompt.

    Every prompt has an optimal response (reward 1), a distractor (reward ``1 - gap``) and
    ``n_zero`` zero-reward responses; the base model gives the optimal response probability
    ``1 / coverage`` and the distractor ``distractor_ratio`` times as much. Prompts are
    uniform and each has its own one-hot features (``d = n_prompts (n_zero + 2)``), so
    ``C_cov = coverage`` exactly and the reward is linear (realizable).

    Parameters
    ----------
    n_prompts
        Number of prompts, ``>= 1``.
    gap
        The distractor's reward gap, in ``(0, 1)``.
    coverage
        The coverage coefficient ``C_cov = 1 / c_0``; ``(1 + distractor_ratio) / coverage`` must be below 1.
    distractor_ratio
        Base probability of the distractor over that of the optimal response (collapse needs it above 1).
    n_zero
        Size of each prompt's zero-reward block.
    """
    n_prompts = check_count("n_prompts", n_prompts)
    coverage = check_positive("coverage", coverage)
    distractor_ratio = check_positive("distractor_ratio", distractor_ratio)
    optimal_prob = 1.0 / coverage
    one = collapse_instance(
        gap, optimal_prob=optimal_prob, distractor_prob=distractor_ratio * optimal_prob, n_zero=n_zero
    ).to_bandit()
    rewards = np.repeat(one.rewards, n_prompts, axis=0)
    base_probs = np.repeat(np.exp(one.base_theta)[None, :], n_prompts, axis=0)
    return tabular_instance(rewards, base_probs)


def random_family(coverages: Sequence[float] = RANDOM_COVERAGES, seed: int = 0) -> list[BanditInstance]:
    """Random realizable softmax-linear instances of shape :data:`RANDOM_SHAPE`, one per ``C_cov``.

    :func:`~covpo.coverage_instances.dialled_coverage_instance` with a fresh
    ``np.random.default_rng(seed)`` for each, so all share features, rewards and the random
    part of the base model, and differ only in how far the base model is tilted away from the reward.
    """
    return [dialled_coverage_instance(np.random.default_rng(seed), *RANDOM_SHAPE, float(c)) for c in coverages]


def collapse_family(coverages: Sequence[float] = COLLAPSE_COVERAGES) -> list[BanditInstance]:
    """Stacked collapse instances (:func:`stacked_collapse_instance`), one per ``C_cov``."""
    return [
        stacked_collapse_instance(COLLAPSE_PROMPTS, COLLAPSE_GAP, float(c), n_zero=COLLAPSE_N_ZERO) for c in coverages
    ]


# ---------------------------------------------------------------------------------------
# Importance weights of PPO-NoClip


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, levels: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    cumulative /= cumulative[-1]
    positions = np.searchsorted(cumulative, levels, side="left")
    return values[order][np.minimum(positions, values.size - 1)]


@dataclass(frozen=True, eq=False)
class RatioSpread:
    """The importance weights of one run, outer iteration by outer iteration (paper section 3.2).

    Attributes
    ----------
    levels
        The quantile levels, ``(n_levels,)``.
    log_ratio_quantiles
        Quantiles of ``log w = log pi_{t+1}(y|x) / pi_t(y|x)`` for ``x ~ rho``, ``y ~ pi_t``: the
        weights a fresh batch from ``pi_t`` would carry at the end of the inner loop;
        ``(n_iterations, n_levels)``.
    log_ratio_min, log_ratio_max
        Extremes of ``log pi_theta / pi_t`` over every inner iterate of the iteration and every
        response of every prompt, ``(n_iterations,)``.
    batch_log_ratio_min, batch_log_ratio_max
        Extremes over the inner iterates of the weights on the reused batch, ``(n_iterations,)``.
    beta, max_reward
        The run's regularization and the instance's largest reward ``R``.
    """

    levels: np.ndarray
    log_ratio_quantiles: np.ndarray
    log_ratio_min: np.ndarray
    log_ratio_max: np.ndarray
    batch_log_ratio_min: np.ndarray
    batch_log_ratio_max: np.ndarray
    beta: float
    max_reward: float

    @property
    def n_iterations(self) -> int:
        """Number of outer iterations."""
        return int(self.log_ratio_min.shape[0])

    @property
    def interval(self) -> tuple[float, float]:
        """``(exp(-R / beta), exp(R / beta))``, the default clipping interval for this ``beta``."""
        return default_clip_thresholds(self.beta, self.max_reward)

    def summary(self) -> str:
        """One line: the range of every weight, the range of the central quantiles, and the interval."""
        low, high = self.interval
        q = np.exp(self.log_ratio_quantiles)
        share = 100.0 * (self.levels[-1] - self.levels[0])
        return (
            f"beta = {self.beta:g}: all weights in [{np.exp(self.log_ratio_min.min()):.3f}, "
            f"{np.exp(self.log_ratio_max.max()):.2f}], {share:g}% in [{q[:, 0].min():.3f}, {q[:, -1].max():.2f}]; "
            f"interval [{low:.3f}, {high:.2f}]"
        )


def ratio_spread(
    instance: BanditInstance, run: PolicyOptimizationRun, levels: Sequence[float] = (0.01, 0.1, 0.5, 0.9, 0.99)
) -> RatioSpread:
    """Quantiles and extremes of the importance weights of an APMD run, per outer iteration.

    ``run`` is a :func:`~covpo.algorithms.ppo.ppo_noclip` or :func:`~covpo.algorithms.ppo.ppo_lite` run; its
    ``thetas`` give ``pi_t`` and ``pi_{t+1}`` and its ratio record the extremes over the inner
    iterates. Quantiles are weighted by ``rho(x) pi_t(y|x)``.
    """
    levels = check_finite_array("levels", levels, ndim=1)
    if np.any((levels < 0.0) | (levels > 1.0)):
        raise ValueError(f"levels must lie in [0, 1], got {levels!r}")
    beta = float(run.trajectory.settings["beta"])
    support = instance.prompt_probs > 0.0
    rows = []
    for before, after in zip(run.thetas[:-1], run.thetas[1:]):
        log_old = log_policy(instance, before)
        values = (log_policy(instance, after) - log_old)[support].ravel()
        weights = (instance.prompt_probs[:, None] * np.exp(log_old))[support].ravel()
        rows.append(_weighted_quantiles(values, weights, levels))
    ratios = run.ratios
    n_iterations = run.thetas.shape[0] - 1

    def per_iteration(column: np.ndarray, reduce) -> np.ndarray:
        return np.array([reduce(column[ratios.iteration == t]) for t in range(n_iterations)])

    return RatioSpread(
        levels=levels,
        log_ratio_quantiles=np.vstack(rows),
        log_ratio_min=per_iteration(ratios.log_ratio_min, np.min),
        log_ratio_max=per_iteration(ratios.log_ratio_max, np.max),
        batch_log_ratio_min=per_iteration(ratios.batch_log_ratio_min, np.min),
        batch_log_ratio_max=per_iteration(ratios.batch_log_ratio_max, np.max),
        beta=beta,
        max_reward=float(instance.rewards.max()),
    )


def ratio_spread_table(spreads: Sequence[RatioSpread]) -> Table:
    """The weights of several :func:`ratio_spread` records as a table, one row per run.

    Per run: ``beta``, the outer iterations, the lowest and highest weight over every inner
    iterate and every ``(x, y)``, the lowest and highest outer quantile of a fresh batch's
    weights (e.g. 1% and 99%) over the iterations, and the interval ``[exp(-R/beta), exp(R/beta)]``.
    """
    levels = spreads[0].levels if spreads else np.array([0.0, 1.0])
    rows = []
    for spread in spreads:
        low, high = spread.interval
        q = np.exp(spread.log_ratio_quantiles)
        rows.append((
            float(spread.beta), spread.n_iterations,
            float(np.exp(spread.log_ratio_min.min())), float(np.exp(spread.log_ratio_max.max())),
            float(q[:, 0].min()), float(q[:, -1].max()), float(low), float(high),
        ))
    return Table(
        ("β", "outer iterations", "lowest weight", "highest weight",
         f"{100 * levels[0]:g}% quantile, lowest", f"{100 * levels[-1]:g}% quantile, highest",
         "interval: low", "interval: high"),
        tuple(rows),
        caption="Importance weights π_(t+1) / π_t of each run",
        notes=("Lowest and highest weight: over every inner iterate and every (x, y). Quantiles: of the "
               "weights a fresh batch from π_t would carry, weighted by ρ × π_t, over the iterations. "
               "Interval: [exp(−R/β), exp(R/β)].",),
    )


def _iterations_for(beta: float, horizon: float) -> int:
    """Outer iterations that cover ``horizon = T / beta`` units of mirror-descent time (at least 2)."""
    return max(2, int(np.ceil(horizon * beta)))


@dataclass(frozen=True, eq=False)
class RatioBoundsTable:
    """PPO-NoClip's importance-ratio extremes against ``beta`` (paper section 3.2, appendix G).

    Attributes
    ----------
    betas
        The regularization strengths, ``(n_betas,)``.
    n_iterations
        Outer iterations of each run (``T = ceil(horizon beta)``: equal mirror-descent time ``T / beta``).
    ratio_min, ratio_max
        Extremes of ``pi_theta / pi_t`` over every inner iterate and every ``(x, y)``.
    batch_ratio_min, batch_ratio_max
        Extremes of the weights on the reused batches.
    interval_low, interval_high
        ``exp(-R / beta)`` and ``exp(R / beta)``.
    final_suboptimality, min_log10_coverage
        ``J* - J`` of the last iterate, and the lowest base-10 log coverage of the run.
    eta_beta, inner_steps, batch_size, horizon
        The settings: learning rate ``eta = eta_beta / beta``, ``K``, ``N`` and ``T / beta``.
    """

    betas: np.ndarray
    n_iterations: np.ndarray
    ratio_min: np.ndarray
    ratio_max: np.ndarray
    batch_ratio_min: np.ndarray
    batch_ratio_max: np.ndarray
    interval_low: np.ndarray
    interval_high: np.ndarray
    final_suboptimality: np.ndarray
    min_log10_coverage: np.ndarray
    eta_beta: float
    inner_steps: int
    batch_size: int
    horizon: float

    @property
    def extent(self) -> np.ndarray:
        """``max |log ratio|`` of each run as a fraction of ``R / beta`` (1 means the interval's edge)."""
        return np.maximum(np.log(self.ratio_max), -np.log(self.ratio_min)) / np.log(self.interval_high)

    def summary(self) -> str:
        """One line per ``beta``: outer iterations, weight range and extent."""
        return "\n".join(
            f"beta {beta:4g}: T = {t:3}, weights in [{low:.3f}, {high:6.2f}], extent {extent:.2f}"
            for beta, t, low, high, extent in zip(self.betas, self.n_iterations, self.ratio_min, self.ratio_max, self.extent)
        )


def ratio_bounds_by_beta(
    instance: BanditInstance,
    betas: Sequence[float],
    *,
    eta_beta: float,
    inner_steps: int,
    batch_size: int,
    horizon: float,
    seed: int,
) -> RatioBoundsTable:
    """Run PPO-NoClip at each ``beta`` with ``eta = eta_beta / beta`` and record its ratio extremes.

    Each run takes ``T = ceil(horizon beta)`` outer iterations, so every run covers the same
    mirror-descent time ``T / beta`` (paper section 3.1, Eq. (18)), and uses ``np.random.default_rng(seed)``.
    """
    betas = check_finite_array("betas", betas, ndim=1)
    eta_beta = check_positive("eta_beta", eta_beta)
    horizon = check_positive("horizon", horizon)
    columns: dict[str, list] = {key: [] for key in ("T", "rmin", "rmax", "bmin", "bmax", "sub", "cov")}
    for beta in betas:
        n_iterations = _iterations_for(beta, horizon)
        run = ppo_noclip(
            instance,
            float(beta),
            n_iterations,
            batch_size=batch_size,
            inner_steps=inner_steps,
            eta=eta_beta / beta,
            rng=np.random.default_rng(seed),
        )
        low, high = run.ratios.ratio_bounds
        batch_low, batch_high = run.ratios.batch_ratio_bounds
        for key, value in zip(
            columns,
            (n_iterations, low, high, batch_low, batch_high, run.trajectory.suboptimality[-1],
             run.trajectory.min_log10_coverage),
        ):
            columns[key].append(value)
    max_reward = float(instance.rewards.max())
    return RatioBoundsTable(
        betas=betas,
        n_iterations=np.array(columns["T"], dtype=np.int64),
        ratio_min=np.array(columns["rmin"]),
        ratio_max=np.array(columns["rmax"]),
        batch_ratio_min=np.array(columns["bmin"]),
        batch_ratio_max=np.array(columns["bmax"]),
        interval_low=np.exp(-max_reward / betas),
        interval_high=np.exp(max_reward / betas),
        final_suboptimality=np.array(columns["sub"]),
        min_log10_coverage=np.array(columns["cov"]),
        eta_beta=eta_beta,
        inner_steps=int(inner_steps),
        batch_size=int(batch_size),
        horizon=horizon,
    )


# ---------------------------------------------------------------------------------------
# Clipping


def ratio_bounds_table(tables: Mapping[str, RatioBoundsTable]) -> Table:
    """Several :func:`ratio_bounds_by_beta` records as one table, one row per instance and ``beta``."""
    rows = tuple(
        (name, float(beta), int(t), float(low), float(high), float(batch_low), float(batch_high), float(extent))
        for name, table in tables.items()
        for beta, t, low, high, batch_low, batch_high, extent in zip(
            table.betas, table.n_iterations, table.ratio_min, table.ratio_max,
            table.batch_ratio_min, table.batch_ratio_max, table.extent,
        )
    )
    return Table(
        ("instance", "β", "outer iterations", "lowest weight", "highest weight",
         "lowest on batches", "highest on batches", "extent"),
        rows,
        caption="PPO-NoClip's importance weights against β",
        notes=("Weights over every inner iterate and every (x, y), and on the reused batches. "
               "Extent: max |log w| / (R / β); 1 is the edge of [exp(-R/β), exp(R/β)].",),
    )


def clip_width_thresholds(beta: float, max_reward: float, width: float) -> tuple[float, float]:
    """``(exp(-width R / beta), exp(width R / beta))``: the default interval scaled in log space.

    ``width = 1`` is :func:`~covpo.algorithms.ppo.default_clip_thresholds`, the narrowest interval that
    never clips the target; ``width < 1`` clips it, ``width > 1`` is looser. The exponent is
    capped at :data:`MAX_LOG_THRESHOLD` so the thresholds stay finite.
    """
    beta = check_positive("beta", beta)
    max_reward = check_positive("max_reward", max_reward)
    width = check_positive("width", width)
    exponent = min(width * max_reward / beta, MAX_LOG_THRESHOLD)
    return float(np.exp(-exponent)), float(np.exp(exponent))


def target_log_ratio_extent(instance: BanditInstance, thetas: np.ndarray, beta: float) -> float:
    """``max_t max_{x,y} |log pi*_{t+1}(y|x) / pi_t(y|x)|`` over the references ``pi_t = pi_{thetas[t]}``, in units of ``R / beta``.

    The target ratio is ``exp(r / beta) / Z_t(x)`` with ``Z_t(x)`` in ``[1, exp(R / beta)]``, so
    the result is at most 1: the default interval never clips the target (paper section 3.3).
    References are every row of ``thetas`` but the last; with all rewards 0 the result is 0.
    """
    beta = check_positive("beta", beta)
    max_reward = float(instance.rewards.max())
    if max_reward <= 0.0:
        return 0.0
    support = instance.prompt_probs > 0.0
    extent = 0.0
    for theta in np.asarray(thetas, dtype=float)[:-1]:
        log_reference = log_policy(instance, theta)
        log_ratio = (regularized_optimum(instance, log_reference, beta) - log_reference)[support]
        extent = max(extent, float(np.abs(log_ratio).max()))
    return extent / (max_reward / beta)


@dataclass(frozen=True, eq=False)
class ClipActivity:
    """PPO-Lite over a grid of ``beta`` and clipping intervals (paper section 3.3, Algorithm 2).

    Attributes
    ----------
    betas, widths
        The grid: ``(n_betas,)`` strengths and ``(n_widths,)`` log-space widths of the interval
        (:func:`clip_width_thresholds`; 1 is the default interval).
    fixed_interval
        A ``beta``-independent interval ``(c_lo, c_hi)`` run as one more column (PPO's ``[1 - e, 1 + e]`` style).
    clip_fraction
        Mean share of the batch that is clipped at the iterates where gradients are taken,
        ``(n_betas, n_widths + 1)``; the last column is the fixed interval.
    final_suboptimality, min_log10_coverage, mean_inner_kl
        ``J* - J`` at the end, the lowest base-10 log coverage, and the mean accuracy
        ``E_x KL(pi_{t+1} || pi*_{t+1})`` of the inner loops, same shape.
    target_extent
        :func:`target_log_ratio_extent` over each run's references, same shape (at most 1).
    n_iterations
        Outer iterations at each ``beta``, ``ceil(horizon beta)``.
    eta_beta, inner_steps, batch_size, horizon
        The settings, as for :class:`RatioBoundsTable`.
    """

    betas: np.ndarray
    widths: np.ndarray
    fixed_interval: tuple[float, float]
    clip_fraction: np.ndarray
    final_suboptimality: np.ndarray
    min_log10_coverage: np.ndarray
    mean_inner_kl: np.ndarray
    target_extent: np.ndarray
    n_iterations: np.ndarray
    eta_beta: float
    inner_steps: int
    batch_size: int
    horizon: float

    @property
    def column_labels(self) -> list[str]:
        """One label per column of the grids."""
        low, high = self.fixed_interval
        return [f"width {w:g}" for w in self.widths] + [f"[{low:g}, {high:g}]"]

    def summary(self, values: str = "clip_fraction", digits: int = 3) -> str:
        """A table of one grid (``"clip_fraction"``, ``"final_suboptimality"``, ...), one row per ``beta``."""
        grid = getattr(self, values)
        header = f"{values:>20}  " + "  ".join(f"{label:>11}" for label in self.column_labels)
        rows = [
            f"{f'beta {beta:g}':>20}  " + "  ".join(f"{value:11.{digits}f}" for value in row)
            for beta, row in zip(self.betas, grid)
        ]
        return "\n".join([header, *rows])

    def table(self, values: str = "clip_fraction", caption: str = "") -> Table:
        """One grid (``"clip_fraction"``, ``"final_suboptimality"``, ...) as a :class:`~covpo.table.Table`, one row per ``beta``.

        The columns are ``beta``, the outer iterations ``T`` and one column per interval
        (:attr:`column_labels`; width 1 is the default interval, the last the fixed one).
        """
        grid = getattr(self, values)
        rows = tuple(
            (float(beta), int(t), *(float(value) for value in row))
            for beta, t, row in zip(self.betas, self.n_iterations, grid)
        )
        return Table(("β", "outer iterations", *self.column_labels), rows, caption=caption or values.replace("_", " "))


def clip_activity_grid(
    instance: BanditInstance,
    betas: Sequence[float],
    widths: Sequence[float],
    *,
    fixed_interval: tuple[float, float] = (0.8, 1.25),
    eta_beta: float,
    inner_steps: int,
    batch_size: int,
    horizon: float,
    seed: int,
) -> ClipActivity:
    """Run PPO-Lite at every ``beta`` with every interval width and with ``fixed_interval``.

    Each run takes ``ceil(horizon beta)`` outer iterations with ``eta = eta_beta / beta``, the
    exact KL penalty, and ``np.random.default_rng(seed)``, so the runs of one row differ only
    in their thresholds.
    """
    betas = check_finite_array("betas", betas, ndim=1)
    widths = check_finite_array("widths", widths, ndim=1)
    fixed_interval = check_clip_thresholds(fixed_interval)
    max_reward = float(instance.rewards.max())
    shape = (betas.size, widths.size + 1)
    grids = {key: np.zeros(shape) for key in ("clip", "sub", "cov", "kl", "extent")}
    for i, beta in enumerate(betas):
        intervals = [clip_width_thresholds(beta, max_reward, w) for w in widths] + [fixed_interval]
        for j, thresholds in enumerate(intervals):
            run = ppo_lite(
                instance,
                float(beta),
                _iterations_for(beta, horizon),
                batch_size=batch_size,
                inner_steps=inner_steps,
                eta=eta_beta / beta,
                rng=np.random.default_rng(seed),
                thresholds=thresholds,
            )
            grids["clip"][i, j] = run.ratios.mean_clip_fraction
            grids["sub"][i, j] = run.trajectory.suboptimality[-1]
            grids["cov"][i, j] = run.trajectory.min_log10_coverage
            grids["kl"][i, j] = float(run.inner_kl.mean())
            grids["extent"][i, j] = target_log_ratio_extent(instance, run.thetas, beta)
    return ClipActivity(
        betas=betas,
        widths=widths,
        fixed_interval=fixed_interval,
        clip_fraction=grids["clip"],
        final_suboptimality=grids["sub"],
        min_log10_coverage=grids["cov"],
        mean_inner_kl=grids["kl"],
        target_extent=grids["extent"],
        n_iterations=np.array([_iterations_for(beta, horizon) for beta in betas], dtype=np.int64),
        eta_beta=check_positive("eta_beta", eta_beta),
        inner_steps=int(inner_steps),
        batch_size=int(batch_size),
        horizon=float(horizon),
    )


# ---------------------------------------------------------------------------------------
# The spread of the importance-weighted estimates across batches


@dataclass(frozen=True, eq=False)
class EstimatorSpread:
    """PPO-NoClip's and PPO-Lite's batch estimates at candidate policies, over many batches.

    Candidates are ``theta_s = theta_ref + s theta_star``, ``pi_s proportional to pi_ref exp(s r)``:
    the mirror-descent target at strength ``1 / s``, so the largest weight grows like
    ``exp(s R)``. For each ``s`` the same ``n_batches`` batches of ``N`` samples from the
    reference are used by both estimators.

    Attributes
    ----------
    scales
        The ``s`` values, ``(n_scales,)``.
    max_log_ratio
        ``max_{x,y} log pi_s / pi_ref`` over the support.
    true_objective
        ``J_beta(pi_s; pi_ref)``, the population value NoClip estimates without bias.
    noclip_mean, noclip_std, lite_mean, lite_std
        Mean and standard deviation across batches of each estimate of the objective.
    noclip_gradient_std, lite_gradient_std
        Root mean squared deviation of the gradient estimates from their own mean (``sqrt(trace Cov)``).
    noclip_gradient_rmse, lite_gradient_rmse
        Root mean squared distance of the gradient estimates from ``grad J_beta(pi_s; pi_ref)``.
    clip_fraction
        Mean share of samples PPO-Lite clips at ``pi_s``.
    beta, thresholds, batch_size, n_batches
        The settings.
    """

    scales: np.ndarray
    max_log_ratio: np.ndarray
    true_objective: np.ndarray
    noclip_mean: np.ndarray
    noclip_std: np.ndarray
    lite_mean: np.ndarray
    lite_std: np.ndarray
    noclip_gradient_std: np.ndarray
    lite_gradient_std: np.ndarray
    noclip_gradient_rmse: np.ndarray
    lite_gradient_rmse: np.ndarray
    clip_fraction: np.ndarray
    beta: float
    thresholds: tuple[float, float]
    batch_size: int
    n_batches: int

    def summary(self) -> str:
        """A table: per candidate, the largest weight, the objectives' spreads, the gradients' spreads and errors."""
        header = "  s   max w  sd NoClip  sd Lite  grad sd NoClip  grad sd Lite  error NoClip  error Lite"
        rows = [
            f"{row[0]:3.1f} {row[1]:7.2f} {row[2]:10.3f} {row[3]:8.3f} {row[4]:15.3f} {row[5]:13.3f} {row[6]:12.3f} {row[7]:11.3f}"
            for row in zip(
                self.scales, np.exp(self.max_log_ratio), self.noclip_std, self.lite_std, self.noclip_gradient_std,
                self.lite_gradient_std, self.noclip_gradient_rmse, self.lite_gradient_rmse,
            )
        ]
        return "\n".join([header, *rows])

    def table(self) -> Table:
        """Per candidate ``s``: the largest weight, the objectives' spreads, the gradients' spreads and errors."""
        columns = zip(
            self.scales, np.exp(self.max_log_ratio), self.noclip_std, self.lite_std, self.noclip_gradient_std,
            self.lite_gradient_std, self.noclip_gradient_rmse, self.lite_gradient_rmse,
        )
        return Table(
            ("s", "largest weight", "objective sd: NoClip", "objective sd: Lite", "gradient sd: NoClip",
             "gradient sd: Lite", "gradient error: NoClip", "gradient error: Lite"),
            tuple(tuple(float(value) for value in row) for row in columns),
            caption=f"Batch estimates at π_s, across {self.n_batches} batches of N = {self.batch_size}",
            notes=("sd: standard deviation across batches (for a gradient, the root of the trace of its "
                   "covariance). Error: root-mean-square distance from the true gradient of J_β(π_s; π_0).",),
        )


def batch_estimates(
    instance: BanditInstance,
    theta: np.ndarray,
    log_reference: np.ndarray,
    prompts: np.ndarray,
    responses: np.ndarray,
    beta: float,
    thresholds: tuple[float, float],
) -> dict[str, np.ndarray]:
    """Both algorithms' objective and gradient estimates on each row of a stack of batches.

    ``prompts`` and ``responses`` have shape ``(M, N)``, ``M`` batches of ``N`` samples from
    the reference ``pi_ref`` (``log_reference``). Returns per batch, vectorized over batches,
    PPO-NoClip's ``L_t`` and its gradient (:func:`covpo.algorithms.ppo.ppo_noclip_objective`,
    :func:`covpo.algorithms.ppo.ppo_noclip_gradient`), PPO-Lite's clipped objective with the exact KL
    and its gradient (:func:`covpo.algorithms.ppo.ppo_lite_objective`, :func:`covpo.algorithms.ppo.ppo_lite_gradient`),
    and the clipped share, under the keys ``noclip``, ``noclip_gradient``, ``lite``,
    ``lite_gradient`` and ``clipped``.
    """
    low, high = check_clip_thresholds(thresholds)
    n_batches, batch_size = prompts.shape
    log_probs = log_policy(instance, theta)
    probs = np.exp(log_probs)
    mean_features = np.einsum("xy,xyd->xd", probs, instance.features)
    log_w = log_probs[prompts, responses] - log_reference[prompts, responses]
    w = np.exp(log_w)
    rewards = instance.rewards[prompts, responses]
    clipped = (log_w < np.log(low)) | (log_w > np.log(high))
    kl = kl_per_prompt(log_probs, log_reference)
    kl_gradients = np.einsum("xy,xyd->xd", probs * (log_probs - log_reference - kl[:, None]), instance.features)
    n_prompts, n_responses = instance.rewards.shape
    cells = (np.arange(n_batches)[:, None] * n_prompts + prompts) * n_responses + responses
    prompt_cells = np.arange(n_batches)[:, None] * n_prompts + prompts

    def score_average(coefficients: np.ndarray) -> np.ndarray:
        table = np.bincount(cells.ravel(), coefficients.ravel(), n_batches * n_prompts * n_responses)
        table = table.reshape(n_batches, n_prompts, n_responses)
        return (
            np.einsum("mxy,xyd->md", table, instance.features) - np.einsum("mx,xd->md", table.sum(axis=2), mean_features)
        ) / batch_size

    counts = np.bincount(prompt_cells.ravel(), minlength=n_batches * n_prompts).reshape(n_batches, n_prompts)
    return {
        "noclip": np.mean(w * rewards - beta * (w * log_w - w + 1.0), axis=1),
        "noclip_gradient": score_average(w * (rewards - beta * log_w)),
        "lite": np.mean(np.clip(w, low, high) * rewards, axis=1) - beta * kl[prompts].mean(axis=1),
        "lite_gradient": score_average(np.where(clipped, 0.0, w * rewards)) - beta * counts @ kl_gradients / batch_size,
        "clipped": clipped.mean(axis=1),
    }


def estimator_spread(
    instance: BanditInstance,
    beta: float,
    scales: Sequence[float],
    *,
    thresholds: tuple[float, float] | None = None,
    batch_size: int,
    n_batches: int,
    seed: int,
) -> EstimatorSpread:
    """Spread of the importance-weighted estimates, clipped and unclipped, at a fixed batch size.

    The reference is the base model; candidates ``theta_0 + s theta_star`` (the instance needs
    ``reward_theta``). ``thresholds`` default to :func:`~covpo.algorithms.ppo.default_clip_thresholds` for
    ``beta``. One stack of ``n_batches`` batches from ``np.random.default_rng(seed)`` serves
    every candidate and both estimators (common random numbers).
    """
    beta = check_positive("beta", beta)
    scales = check_finite_array("scales", scales, ndim=1)
    if instance.reward_theta is None:
        raise ValueError("instance.reward_theta is None: the candidates move along theta_star")
    if thresholds is None:
        thresholds = default_clip_thresholds(beta, float(instance.rewards.max()))
    thresholds = check_clip_thresholds(thresholds)
    batch_size = check_count("batch_size", batch_size)
    n_batches = check_count("n_batches", n_batches, minimum=2)
    log_reference = base_log_policy(instance)
    batch = draw_batch(instance, log_reference, n_batches * batch_size, np.random.default_rng(seed))
    prompts = batch.prompts.reshape(n_batches, batch_size)
    responses = batch.responses.reshape(n_batches, batch_size)
    support = instance.prompt_probs > 0.0
    keys = ("max", "true", "nm", "ns", "lm", "ls", "ngs", "lgs", "ngr", "lgr", "clip")
    columns: dict[str, list[float]] = {key: [] for key in keys}
    for scale in scales:
        theta = instance.base_theta + scale * instance.reward_theta
        log_probs = log_policy(instance, theta)
        estimates = batch_estimates(instance, theta, log_reference, prompts, responses, beta, thresholds)
        truth = regularized_gradient(instance, theta, log_reference, beta)
        values = (
            float((log_probs - log_reference)[support].max()),
            regularized_objective(instance, log_probs, log_reference, beta),
            float(estimates["noclip"].mean()),
            float(estimates["noclip"].std(ddof=1)),
            float(estimates["lite"].mean()),
            float(estimates["lite"].std(ddof=1)),
            *(
                float(np.sqrt(np.mean(np.sum((g - g.mean(axis=0)) ** 2, axis=1))))
                for g in (estimates["noclip_gradient"], estimates["lite_gradient"])
            ),
            *(
                float(np.sqrt(np.mean(np.sum((g - truth) ** 2, axis=1))))
                for g in (estimates["noclip_gradient"], estimates["lite_gradient"])
            ),
            float(estimates["clipped"].mean()),
        )
        for key, value in zip(keys, values):
            columns[key].append(value)
    arrays = {key: np.array(value) for key, value in columns.items()}
    return EstimatorSpread(
        scales=scales,
        max_log_ratio=arrays["max"],
        true_objective=arrays["true"],
        noclip_mean=arrays["nm"],
        noclip_std=arrays["ns"],
        lite_mean=arrays["lm"],
        lite_std=arrays["ls"],
        noclip_gradient_std=arrays["ngs"],
        lite_gradient_std=arrays["lgs"],
        noclip_gradient_rmse=arrays["ngr"],
        lite_gradient_rmse=arrays["lgr"],
        clip_fraction=arrays["clip"],
        beta=beta,
        thresholds=thresholds,
        batch_size=batch_size,
        n_batches=n_batches,
    )


# ---------------------------------------------------------------------------------------
# Costs to eps-optimality against coverage


@dataclass(frozen=True)
class MethodSettings:
    """One algorithm and the hyperparameters a sweep runs it at.

    Attributes
    ----------
    name
        The label in tables and figures.
    algorithm
        One of :data:`ALGORITHMS`: ``"ppo_noclip"``, ``"ppo_lite"`` (default thresholds, exact
        KL), ``"grpo_reset"`` and ``"grpo_fixed"`` (:func:`covpo.algorithms.grpo.grpo` with the reference
        reset every iteration or fixed at the base model) and ``"reinforce"``
        (:func:`covpo.algorithms.reinforce.sampled_reinforce`, no KL), and the squared-loss methods
        ``"kimipo"``, ``"kimipo_norm"`` and ``"rebel_onpolicy"`` (:mod:`covpo.algorithms.squared_loss`).
    beta
        KL strength (0 for none; ``"grpo_fixed"`` and ``"reinforce"`` only).
    batch_size
        ``N`` prompts per batch.
    inner_steps
        ``K`` gradient steps per batch (1 for REINFORCE).
    n_iterations
        The budget: outer iterations (REINFORCE: steps).
    etas
        The learning rates tried; a sweep keeps the best (one value: no tuning).
    group_size
        ``G`` responses per prompt (GRPO; 1 otherwise).
    clip_epsilon
        GRPO's ratio interval ``[1 - eps, 1 + eps]``.
    kl
        GRPO's KL computation, ``"k3"`` or ``"exact"``.
    extra_responses
        Baseline responses per prompt: ``M`` for KimiPO, ``G`` for KimiPO-Norm (0 otherwise).
    record_every
        REINFORCE records every ``record_every``-th step (its steps to eps are measured at that resolution).
    """

    name: str
    algorithm: str
    beta: float
    batch_size: int
    inner_steps: int
    n_iterations: int
    etas: tuple[float, ...]
    group_size: int = 1
    clip_epsilon: float = 0.2
    kl: str = "k3"
    extra_responses: int = 0
    record_every: int = 1

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        check_nonnegative("beta", self.beta)
        if self.algorithm in RESET_ALGORITHMS and self.beta <= 0.0:
            raise ValueError(f"beta must be > 0 for {self.algorithm} (an instance of APMD), got {self.beta!r}")
        if self.algorithm == "reinforce" and self.beta != 0.0:
            raise ValueError(f"the reinforce baseline runs without KL: beta must be 0, got {self.beta!r}")
        if self.algorithm == "reinforce" and self.inner_steps != 1:
            raise ValueError(f"REINFORCE takes one step per batch: inner_steps must be 1, got {self.inner_steps!r}")
        if not self.etas or any(eta <= 0.0 for eta in self.etas):
            raise ValueError(f"etas must be a non-empty tuple of positive learning rates, got {self.etas!r}")
        check_count("n_iterations", self.n_iterations)
        needs_extra = self.algorithm in ("kimipo", "kimipo_norm")
        if needs_extra != (self.extra_responses > 0):
            raise ValueError(
                f"extra_responses must be >= 1 for KimiPO and KimiPO-Norm and 0 otherwise, got {self.extra_responses!r}"
                f" for {self.algorithm}"
            )

    @property
    def responses_per_iteration(self) -> int:
        """The responses one outer iteration (one REINFORCE step) samples, ``N G``, ``N (M + 1)`` or ``2 N`` (Rebel)."""
        if self.algorithm == "rebel_onpolicy":
            return 2 * self.batch_size
        return self.batch_size * (self.group_size + self.extra_responses)

    @property
    def response_budget(self) -> int:
        """Responses the whole budget samples."""
        return self.n_iterations * self.responses_per_iteration

    @property
    def step_budget(self) -> int:
        """Gradient steps the whole budget takes."""
        return self.n_iterations * self.inner_steps


def run_method(settings: MethodSettings, instance: BanditInstance, eta: float, rng: np.random.Generator) -> Trajectory:
    """Run one method at learning rate ``eta`` for its whole budget; return its trajectory.

    A learning rate too large for the importance weights raises ``FloatingPointError``
    (from :func:`covpo.algorithms.ppo.ascend`).
    """
    common = {"batch_size": settings.batch_size, "inner_steps": settings.inner_steps, "eta": eta, "rng": rng}
    if settings.algorithm == "kimipo":
        return kimipo(instance, settings.beta, settings.n_iterations, extra_responses=settings.extra_responses, **common).trajectory
    if settings.algorithm == "kimipo_norm":
        return kimipo_norm(instance, settings.beta, settings.n_iterations, group_size=settings.extra_responses, **common).trajectory
    if settings.algorithm == "rebel_onpolicy":
        return rebel_onpolicy(instance, settings.beta, settings.n_iterations, **common).trajectory
    if settings.algorithm == "ppo_noclip":
        return ppo_noclip(instance, settings.beta, settings.n_iterations, **common).trajectory
    if settings.algorithm == "ppo_lite":
        return ppo_lite(instance, settings.beta, settings.n_iterations, **common).trajectory
    if settings.algorithm in ("grpo_reset", "grpo_fixed"):
        return grpo(
            instance,
            settings.beta,
            settings.n_iterations,
            group_size=settings.group_size,
            reference="reset" if settings.algorithm == "grpo_reset" else "fixed",
            clip_epsilon=settings.clip_epsilon,
            kl=settings.kl,
            **common,
        ).trajectory
    return sampled_reinforce(
        instance,
        eta,
        settings.n_iterations,
        settings.batch_size,
        rng,
        record_every=settings.record_every,
    )


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
        raise ValueError(f"a fit needs at least two (C_cov, cost) pairs of equal length, got {x.size} and {y.size}")
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
        The :class:`MethodSettings`, ``(n_methods,)``.
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
    """

    coverages: np.ndarray
    methods: tuple[MethodSettings, ...]
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

    def method_index(self, name: str) -> int:
        """Row of the method called ``name``."""
        names = [method.name for method in self.methods]
        if name not in names:
            raise ValueError(f"no method named {name!r}; the sweep has {names}")
        return names.index(name)

    def fit(self, name: str, cost: str = "responses") -> CoverageFit | None:
        """Power-law fit of ``"responses"`` or ``"steps"`` to eps in ``C_cov`` for one method; ``None`` if it reached eps fewer than twice."""
        if cost not in ("responses", "steps"):
            raise ValueError(f"cost must be 'responses' or 'steps', got {cost!r}")
        row = self.method_index(name)
        values = (self.responses_to_eps if cost == "responses" else self.steps_to_eps)[row]
        keep = self.reached[row] & (values >= 1)
        if keep.sum() < 2:
            return None
        return fit_coverage_power(self.coverages[keep], values[keep].astype(float))

    def summary(self) -> str:
        """Per method: learning rates kept, costs to eps, how many runs reached it, coverage lost, fits."""
        lines = []
        for i, method in enumerate(self.methods):
            fits = [(cost, self.fit(method.name, cost)) for cost in ("responses", "steps")]
            fitted = ", ".join(f"{cost} ~ C^{fit.exponent:.2f} (R^2 {fit.r_squared:.2f})" for cost, fit in fits if fit)
            lines += [
                (
                    f"{method.name} (eta {', '.join(f'{e:g}' for e in self.eta[i])}): "
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
                method.name, float(c), float(self.eta[i, j]) if self.eta[i, j] > 0 else None, bool(self.reached[i, j]),
                int(self.responses_to_eps[i, j]), int(self.steps_to_eps[i, j]),
                float(self.coverage_loss[i, j]) if np.isfinite(self.coverage_loss[i, j]) else None,
            )
            for i, method in enumerate(self.methods)
            for j, c in enumerate(self.coverages)
        )
        return Table(
            ("method", "C_cov", "learning rate", "ε reached", "responses", "gradient steps",
             "worst coverage loss (decades)"),
            rows,
            caption=caption or f"Costs to ε = {self.eps:g} against the base model's coverage",
            notes=("Where ε was not reached, responses and gradient steps are the budget spent (a lower bound). "
                   "A dash: every learning rate of the grid diverged.",),
        )

    def fit_table(self, caption: str = "") -> Table:
        """One row per method: the power-law fits of responses and of gradient steps to eps in ``C_cov``."""
        rows = []
        for method in self.methods:
            responses, steps = self.fit(method.name, "responses"), self.fit(method.name, "steps")
            rows.append((
                method.name,
                float(responses.exponent) if responses else None, float(responses.r_squared) if responses else None,
                float(steps.exponent) if steps else None, float(steps.r_squared) if steps else None,
                int(self.reached[self.method_index(method.name)].sum()),
            ))
        return Table(
            ("method", "exponent: responses", "R²: responses", "exponent: steps", "R²: steps", "coverages reaching ε"),
            tuple(rows),
            caption=caption or "Costs to ε fitted as a power of C_cov",
            notes=("Least squares of log10 cost on log10 C_cov over the coverages where ε was reached; "
                   "a dash where that happened fewer than twice.",),
        )


def _run_or_none(settings: MethodSettings, instance: BanditInstance, eta: float, seed: Sequence[int]) -> Trajectory | None:
    try:
        return run_method(settings, instance, eta, np.random.default_rng(list(seed)))
    except FloatingPointError:
        return None


@dataclass(frozen=True)
class RunSummary:
    """What a sweep keeps of one run (small, so parallel workers return it cheaply).

    ``responses_to_eps`` and ``steps_to_eps`` are ``None`` where the run never became eps-optimal.
    """

    responses_to_eps: int | None
    steps_to_eps: int | None
    total_responses: int
    total_steps: int
    final_suboptimality: float
    min_log10_coverage: float
    coverage_loss: float

    @property
    def key(self) -> tuple:
        """The order of preference of runs; those reaching eps first, by responses then steps, the others by final suboptimality."""
        if self.responses_to_eps is not None:
            return (0, self.responses_to_eps, self.steps_to_eps)
        return (1, self.final_suboptimality, 0)


def summarize_run(
    settings: MethodSettings, instance: BanditInstance, eta: float, seed: tuple[int, ...], eps: float
) -> RunSummary | None:
    """Run ``settings`` at ``eta`` with ``np.random.default_rng(list(seed))`` and summarize it; ``None`` if it diverged."""
    trajectory = _run_or_none(settings, instance, eta, seed)
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
    )


def cost_sweep(
    instances: Sequence[BanditInstance],
    coverages: Sequence[float],
    methods: Sequence[MethodSettings],
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
    coverages = check_finite_array("coverages", coverages, ndim=1)
    eps = check_positive("eps", eps)
    methods = tuple(methods)
    if len(instances) != coverages.size:
        raise ValueError(f"one coverage per instance: got {len(instances)} instances and {coverages.size} coverages")
    coordinates = [
        (i, j, k) for j in range(len(instances)) for i, settings in enumerate(methods) for k in range(len(settings.etas))
    ]
    tasks = [(methods[i], instances[j], methods[i].etas[k], (seed, j), eps) for i, j, k in coordinates]
    outcomes = dict(zip(coordinates, run_tasks(summarize_run, tasks, "cost sweep")))
    shape = (len(methods), coverages.size)
    eta = np.zeros(shape)
    reached = np.zeros(shape, dtype=bool)
    responses = np.zeros(shape, dtype=np.int64)
    steps = np.zeros(shape, dtype=np.int64)
    lowest = np.full(shape, np.nan)
    loss = np.full(shape, np.nan)
    final = np.full(shape, np.nan)
    grids = [np.full((coverages.size, len(settings.etas)), np.inf) for settings in methods]
    for i, settings in enumerate(methods):
        for j in range(coverages.size):
            best, best_k = None, None
            for k in range(len(settings.etas)):
                outcome = outcomes[(i, j, k)]
                if outcome is None:
                    continue
                if outcome.responses_to_eps is not None:
                    grids[i][j, k] = outcome.responses_to_eps
                if best is None or outcome.key < best.key:
                    best, best_k = outcome, k
            if best is None:
                responses[i, j], steps[i, j] = settings.response_budget, settings.step_budget
                continue
            eta[i, j] = settings.etas[best_k]
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
    )


# ---------------------------------------------------------------------------------------
# Several methods under one response budget


def compare_at_budget(
    instance: BanditInstance, methods: Sequence[MethodSettings], response_budget: int, *, seed: int
) -> tuple[Trajectory | None, ...]:
    """Run each method at the first learning rate of its grid for ``response_budget`` responses.

    Each method gets ``response_budget // (N G)`` outer iterations (REINFORCE: steps), so all
    of them sample the same number of responses (up to one batch), from
    ``np.random.default_rng(seed)``. A run that diverges is returned as ``None``.
    """
    response_budget = check_count("response_budget", response_budget)
    runs = []
    for settings in methods:
        n_iterations = response_budget // settings.responses_per_iteration
        if n_iterations < 1:
            raise ValueError(
                f"response_budget {response_budget} is smaller than one batch of {settings.name!r} "
                f"({settings.responses_per_iteration} responses)"
            )
        budgeted = dataclasses.replace(settings, n_iterations=n_iterations)
        try:
            runs.append(run_method(budgeted, instance, settings.etas[0], np.random.default_rng(seed)))
        except FloatingPointError:
            runs.append(None)
    return tuple(runs)


@dataclass(frozen=True, eq=False)
class RecipeComparison:
    """Several methods under one response budget on one instance, over several seeds.

    Attributes
    ----------
    names
        The methods' names, ``(n_methods,)``.
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
             "median final J* − J", "worst coverage loss (decades)"),
            tuple(rows),
            caption=caption or f"{self.response_budget:,} responses per run, ε = {self.eps:g}",
            notes=("Median responses over the seeds that reached ε; a dash where none did "
                   "(or, in every column, where every seed diverged).",),
        )


def compare_recipes(
    instance: BanditInstance,
    methods: Sequence[MethodSettings],
    response_budget: int,
    *,
    eps: float,
    seeds: Sequence[int],
) -> RecipeComparison:
    """:func:`compare_at_budget` once per seed, summarized per method and seed."""
    eps = check_positive("eps", eps)
    seeds = tuple(int(seed) for seed in seeds)
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    log_base = log_coverage(instance, base_log_policy(instance))
    shape = (len(methods), len(seeds))
    reached = np.zeros(shape, dtype=bool)
    diverged = np.zeros(shape, dtype=bool)
    responses = np.zeros(shape, dtype=np.int64)
    loss = np.full(shape, np.nan)
    final = np.full(shape, np.nan)
    first: tuple[Trajectory | None, ...] = ()
    for j, seed in enumerate(seeds):
        runs = compare_at_budget(instance, methods, response_budget, seed=seed)
        if j == 0:
            first = runs
        for i, trajectory in enumerate(runs):
            if trajectory is None:
                diverged[i, j] = True
                continue
            hit = trajectory.responses_to_eps(eps)
            reached[i, j] = hit is not None
            responses[i, j] = hit if hit is not None else trajectory.total_responses
            loss[i, j] = trajectory.coverage_loss(log_base)
            final[i, j] = trajectory.suboptimality[-1]
    return RecipeComparison(
        names=tuple(method.name for method in methods),
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
# The settings of chapter 4


def random_family_methods() -> tuple[MethodSettings, ...]:
    """The five methods of chapter 4's cost sweep on the random family, with our budgets and grids.

    The three reset methods run at one learning rate each; the two fixed-reference baselines
    pick the best of a grid, per instance.
    """
    return (
        MethodSettings("PPO-NoClip", "ppo_noclip", 1.0, 256, 10, 40, (2.0,)),
        MethodSettings("PPO-Lite", "ppo_lite", 1.0, 256, 10, 40, (2.0,)),
        MethodSettings("GRPO, resets", "grpo_reset", 0.5, 32, 10, 40, (4.0,), group_size=8),
        MethodSettings("GRPO, fixed ref., no KL", "grpo_fixed", 0.0, 32, 1, 60, (4.0, 16.0, 64.0), group_size=8),
        MethodSettings("REINFORCE", "reinforce", 0.0, 32, 1, 300, (4.0, 16.0, 64.0), record_every=5),
    )


def collapse_family_methods() -> tuple[MethodSettings, ...]:
    """The same five methods for the stacked collapse family.

    The tabular reset methods take more inner steps at a larger learning rate (a rare optimal
    response's logit moves in proportion to its probability); the baselines get a budget of
    32,000 responses, several times what the reset methods need, and a wider grid.
    """
    return (
        MethodSettings("PPO-NoClip", "ppo_noclip", 1.0, 256, 40, 25, (8.0,)),
        MethodSettings("PPO-Lite", "ppo_lite", 1.0, 256, 40, 25, (8.0,)),
        MethodSettings("GRPO, resets", "grpo_reset", 0.5, 32, 20, 40, (8.0,), group_size=8),
        MethodSettings("GRPO, fixed ref., no KL", "grpo_fixed", 0.0, 32, 1, 125, (8.0, 64.0, 512.0), group_size=8),
        MethodSettings("REINFORCE", "reinforce", 0.0, 32, 1, 1000, (8.0, 64.0, 512.0), record_every=10),
    )


def practice_recipes(eta: float = 16.0) -> tuple[MethodSettings, ...]:
    """The common practice recipe in three variants (our practice notes, not the paper): GRPO-style with the reference fixed at ``pi_0``.

    ``N = 32`` prompts with ``G = 8`` responses, clip ``epsilon = 0.2``, learning rate ``eta``:
    one inner step without KL, one inner step with the k3 penalty toward ``pi_0`` at
    ``beta = 0.05``, and four inner steps without KL. Their ``n_iterations`` is a placeholder
    that :func:`compare_at_budget` replaces.
    """
    eta = check_positive("eta", eta)
    common = {"batch_size": 32, "n_iterations": 1, "etas": (eta,), "group_size": 8, "clip_epsilon": 0.2}
    return (
        MethodSettings("practice: K = 1, no KL", "grpo_fixed", 0.0, inner_steps=1, **common),
        MethodSettings("practice: K = 1, k3 KL to base", "grpo_fixed", 0.05, inner_steps=1, kl="k3", **common),
        MethodSettings("practice: K = 4, no KL", "grpo_fixed", 0.0, inner_steps=4, **common),
    )


def reverse_kl_optimum(instance: BanditInstance, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """Log-probabilities of ``argmax_pi J(pi) - beta E_x KL(pi_ref || pi)`` over all policies.

    The k3 penalty, differentiated on a batch drawn from ``pi_theta``, follows the gradient of
    this *reverse* KL (:func:`covpo.algorithms.grpo.grpo_gradient`). Per prompt, stationarity gives
    ``pi(y) = beta pi_ref(y) / (lambda - r(y))`` with ``lambda`` in
    ``(max r, max r + beta]`` set by normalization; ``lambda`` is found by
    :func:`scipy.optimize.brentq` from the exact bracket
    ``[max r + beta c_ref / 2, max r + beta]``, ``c_ref`` the reference's coverage, and the
    result is computed in log space. Unlike the forward-KL optimum ``pi_ref exp(r / beta) / Z``, it
    keeps mass of order ``beta pi_ref(y)`` on every response.
    """
    beta = check_positive("beta", beta)
    log_reference = check_finite_array("log_reference", log_reference, ndim=2)
    rewards = instance.rewards
    result = np.empty_like(log_reference)
    for x in range(instance.n_prompts):
        best = float(rewards[x].max())
        log_coverage_ref = float(logsumexp(log_reference[x][instance.optimal_mask[x]]))
        log_terms = np.log(beta) + log_reference[x]
        distances = best - rewards[x]

        def excess(shift: float, log_terms: np.ndarray = log_terms, distances: np.ndarray = distances) -> float:
            return float(logsumexp(log_terms - np.log(shift + distances)))

        low = 0.5 * beta * np.exp(log_coverage_ref)
        if excess(beta) >= 0.0:  # every response optimal: the optimum is the reference itself
            shift = beta
        else:
            shift = brentq(excess, low, beta, xtol=1e-15 * beta, rtol=4 * np.finfo(float).eps)
        row = log_terms - np.log(shift + distances)
        result[x] = row - logsumexp(row)
    return result


def settings_table(methods: Sequence[MethodSettings]) -> str:
    """One line per method: ``beta``, ``N``, ``G`` (or the extra baseline responses), ``K``, the learning-rate grid and the budget."""
    return "\n".join(
        f"{m.name:24} beta {m.beta:4g}, N {m.batch_size:3}, "
        + (f"extra {m.extra_responses}" if m.extra_responses else f"G {m.group_size}")
        + f", K {m.inner_steps:2}, eta {m.etas}, budget {m.response_budget:,} responses"
        for m in methods
    )


def method_settings_table(methods: Sequence[MethodSettings], caption: str = "") -> Table:
    """:func:`settings_table` as a :class:`~covpo.table.Table`: one row per method.

    ``G`` is the responses drawn per prompt (the group for GRPO, the extra baseline responses
    plus one for KimiPO, two for Rebel-OnPolicy).
    """
    rows = tuple(
        (
            m.name, float(m.beta), m.batch_size, m.responses_per_iteration // m.batch_size, m.inner_steps,
            ", ".join(f"{eta:g}" for eta in m.etas), m.response_budget,
        )
        for m in methods
    )
    return Table(
        ("method", "β", "N (prompts)", "G (responses per prompt)", "K (inner steps)", "learning rates",
         "budget (responses)"),
        rows,
        caption=caption,
        notes=("Several learning rates: the sweep keeps, at each coverage, the one that reaches ε with the "
               "fewest responses.",),
    )
