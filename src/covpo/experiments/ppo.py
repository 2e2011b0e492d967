"""The measurements of chapter 4: PPO-NoClip, PPO-Lite and GRPO-style runs side by side (paper section 3).

Paper sections 3.2 and 3.3, appendices G and H. The algorithms live in
:mod:`covpo.algorithms.ppo_noclip`, :mod:`covpo.algorithms.ppo_lite`, :mod:`covpo.algorithms.grpo` and
:mod:`covpo.algorithms.reinforce`; this module runs them at settings the chapter prints and returns
frozen records for the figures of :mod:`covpo.plots.ppo`:

- :func:`ratio_spread` and :func:`ratio_bounds_by_beta`: the importance weights of PPO-NoClip
  per outer iteration, and their extremes against ``[exp(-R/beta), exp(R/beta)]``;
- :func:`~covpo.algorithms.ppo_lite.clip_width_thresholds` and :func:`clip_activity_grid`: how often PPO-Lite clips as
  ``beta`` and the clipping interval vary, whether the target itself is ever clipped, and
  what clipping costs the optimization;
- :func:`estimator_spread`: the spread, across independent batches, of the importance-weighted
  objective and gradient with and without clipping, at a fixed batch size;
- :func:`practice_recipes`: the common practice recipe as :class:`~covpo.experiments.sweeps.Method`
  records, for :func:`~covpo.experiments.sweeps.compare_recipes` beside the methods of the cost
  sweeps (:func:`~covpo.experiments.sweeps.random_family_methods`,
  :func:`~covpo.experiments.sweeps.collapse_family_methods`) on the families of :mod:`covpo.families`;
- :func:`reverse_kl_optimum`, the policy that the k3 penalty's gradient points to;
- :func:`regularized_hessian`, :func:`landscape` and :func:`inner_loop_curvature`: the local
  concavity of PPO-NoClip's population objective (paper Eq. 24) against KimiPO's global
  convexity (appendix J.1), and the objective-gap identity of appendix G.1 along the inner loop;
- :func:`ppo_min_thresholds`: PPO's fixed interval ``[1 - eps, 1 + eps]`` applied through its
  pessimistic minimum, as PPO-Lite thresholds;
- :func:`clipping_benefit`: PPO-NoClip against PPO-Lite with the same sampled penalty, in
  training runs where the clip acts.

Every instance, constant, budget and seed here is ours; the paper's are not reproduced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from covpo.instances import BanditInstance
from covpo.objectives import (
    regularized_gradient,
    regularized_objective,
    regularized_optimum,
)
from covpo.policies import base_log_policy, kl_per_prompt, log_policy, mean_features
from covpo import run
from covpo.algorithms.ppo_lite import check_clip_thresholds, clip_width_thresholds, default_clip_thresholds
from covpo.algorithms.ppo_noclip import ppo_noclip_gradient, ppo_noclip_objective
from covpo.algorithms.ratios import RatioRecord, RatioRecorder
from covpo.algorithms.steps import finite_result
from covpo.algorithms.squared_loss import kimi_population_hessian
from covpo.batches import draw_batch
from covpo.experiments.sweeps import Method
from covpo.table import Table
from covpo.trajectory import Trajectory
from covpo.validation import (
    MAX_COUNT,
    check_count,
    check_finite_array,
    check_index_array,
    check_instance,
    check_log_distribution,
    check_option,
    check_positive,
    check_positive_grid,
    check_seed,
    check_shape,
)


def _check_interval(name: str, value: object) -> tuple[float, float]:
    """``value`` as a clipping interval ``(c_lo, c_hi)`` with ``0 < c_lo < 1 < c_hi`` (paper section 3.3), named ``name``."""
    try:
        return check_clip_thresholds(value)
    except ValueError as error:
        raise ValueError(str(error).replace("thresholds", name, 1)) from None


def _check_sequence(name: str, values: object, cls: type) -> tuple:
    """``values`` as a tuple of ``cls`` records (possibly empty), else raise naming ``name``."""
    if isinstance(values, (str, bytes, cls)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a sequence of {cls.__name__}, got {values!r}")
    return tuple(check_instance(name, value, cls) for value in values)


def _check_mapping(name: str, values: object, cls: type) -> Mapping:
    """``values`` if it maps names to ``cls`` records, else raise naming ``name``."""
    if not isinstance(values, Mapping):
        raise ValueError(f"{name} must be a mapping of names to {cls.__name__}, got {values!r}")
    for value in values.values():
        check_instance(name, value, cls)
    return values


def _check_log_reference(instance: BanditInstance, log_reference: object) -> np.ndarray:
    """``log_reference`` as a normalized ``(n_prompts, n_responses)`` table of log-probabilities."""
    log_reference = check_log_distribution("log_reference", log_reference)
    return check_shape("log_reference", log_reference, instance.rewards.shape)

# ---------------------------------------------------------------------------------------
# Importance weights of PPO-NoClip


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
    instance: BanditInstance,
    trajectory: Trajectory,
    ratios: RatioRecord,
    levels: Sequence[float] = (0.01, 0.1, 0.5, 0.9, 0.99),
) -> RatioSpread:
    """Quantiles and extremes of the importance weights of an APMD run, per outer iteration (paper appendix G).

    ``trajectory`` is a ``"ppo_noclip"`` or ``"ppo_lite"`` run (:func:`covpo.run`) and ``ratios`` the
    record of the :class:`~covpo.algorithms.ratios.RatioRecorder` it was given as ``on_inner_step``;
    its ``thetas`` give ``pi_t`` and ``pi_{t+1}`` and ``ratios`` the extremes over the inner
    iterates. Quantiles are weighted by ``rho(x) pi_t(y|x)``.
    """
    instance = check_instance("instance", instance, BanditInstance)
    trajectory = check_instance("trajectory", trajectory, Trajectory)
    ratios = check_instance("ratios", ratios, RatioRecord)
    levels = check_finite_array("levels", levels, ndim=1)
    if levels.size == 0 or np.any((levels < 0.0) | (levels > 1.0)):
        raise ValueError(f"levels must be non-empty and lie in [0, 1], got {levels!r}")
    if trajectory.thetas is None:
        raise ValueError("trajectory must hold its outer iterates thetas, got a trajectory without them")
    if trajectory.thetas.ndim != 2 or trajectory.thetas.shape[1] != instance.dim:
        raise ValueError(
            f"trajectory must be a run on instance (parameters of dimension {instance.dim}), "
            f"got thetas of shape {trajectory.thetas.shape}"
        )
    if "beta" not in trajectory.settings:
        raise ValueError(f"trajectory must be a ppo_noclip or ppo_lite run with a beta, got settings {trajectory.settings!r}")
    beta = float(trajectory.settings["beta"])
    support = instance.prompt_probs > 0.0
    rows = []
    for before, after in zip(trajectory.thetas[:-1], trajectory.thetas[1:]):
        log_old = log_policy(instance, before)
        values = (log_policy(instance, after) - log_old)[support].ravel()
        weights = (instance.prompt_probs[:, None] * np.exp(log_old))[support].ravel()
        rows.append(np.quantile(values, levels, weights=weights, method="inverted_cdf"))
    n_iterations = trajectory.thetas.shape[0] - 1

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
    spreads = _check_sequence("spreads", spreads, RatioSpread)
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
    iterations = np.ceil(horizon * beta)
    if not iterations <= MAX_COUNT:
        raise ValueError(f"horizon = {horizon!r} at beta = {beta!r} needs more than 2**53 outer iterations")
    return max(2, int(iterations))


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
    instance = check_instance("instance", instance, BanditInstance)
    betas = check_positive_grid("betas", betas)
    eta_beta = check_positive("eta_beta", eta_beta)
    inner_steps = check_count("inner_steps", inner_steps)
    batch_size = check_count("batch_size", batch_size)
    horizon = check_positive("horizon", horizon)
    seed = check_seed("seed", seed)
    columns: dict[str, list] = {key: [] for key in ("T", "rmin", "rmax", "bmin", "bmax", "sub", "cov")}
    for beta in betas:
        n_iterations = _iterations_for(beta, horizon)
        recorder = RatioRecorder()
        trajectory = run(
            "ppo_noclip",
            instance,
            rng=np.random.default_rng(seed),
            beta=float(beta),
            eta=eta_beta / beta,
            n_iterations=n_iterations,
            batch_size=batch_size,
            inner_steps=inner_steps,
            on_inner_step=recorder,
        )
        ratios = recorder.finish()
        low, high = ratios.ratio_bounds
        batch_low, batch_high = ratios.batch_ratio_bounds
        for key, value in zip(
            columns,
            (n_iterations, low, high, batch_low, batch_high, trajectory.suboptimality[-1],
             trajectory.min_log10_coverage),
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
    tables = _check_mapping("tables", tables, RatioBoundsTable)
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


def target_log_ratio_extent(instance: BanditInstance, thetas: np.ndarray, beta: float) -> float:
    """``max_t max_{x,y} |log pi*_{t+1}(y|x) / pi_t(y|x)|`` over the references ``pi_t = pi_{thetas[t]}``, in units of ``R / beta``.

    The target ratio is ``exp(r / beta) / Z_t(x)`` with ``Z_t(x)`` in ``[1, exp(R / beta)]``, so
    the result is at most 1: the default interval never clips the target (paper section 3.3).
    References are every row of ``thetas`` but the last; with all rewards 0 the result is 0.
    """
    instance = check_instance("instance", instance, BanditInstance)
    thetas = check_finite_array("thetas", thetas, ndim=2)
    if thetas.shape[1] != instance.dim:
        raise ValueError(f"thetas must have shape (n, {instance.dim}), got shape {thetas.shape}")
    beta = check_positive("beta", beta)
    max_reward = float(instance.rewards.max())
    if max_reward <= 0.0:
        return 0.0
    support = instance.prompt_probs > 0.0
    extent = 0.0
    for theta in thetas[:-1]:
        log_reference = log_policy(instance, theta)
        log_ratio = (regularized_optimum(instance, log_reference, beta) - log_reference)[support]
        extent = max(extent, float(np.abs(log_ratio).max()))
    return extent / (max_reward / beta)


PPO_INTERVAL = (0.8, 1.2)
"""PPO's ratio interval ``[1 - eps, 1 + eps]`` at its usual ``eps = 0.2`` (also TRL's default ``epsilon``)."""


def ppo_min_thresholds(interval: tuple[float, float] = PPO_INTERVAL) -> tuple[float, float]:
    """PPO-Lite thresholds that reproduce PPO's pessimistic minimum for a non-negative advantage.

    PPO maximizes ``min(w A, clip(w, 1 - eps, 1 + eps) A)``. PPO-Lite's advantage is the reward
    itself, ``A = r >= 0``, where the minimum is ``min(w, 1 + eps) r``: only the upper end ever
    acts, and a weight below ``1 - eps`` keeps its gradient. As PPO-Lite thresholds that is
    ``(c_lo, 1 + eps)`` with ``c_lo`` the smallest positive float, which no weight reaches.
    """
    low, high = _check_interval("interval", interval)
    return float(np.finfo(float).tiny), high


CLIP_ACTIVITY_GRIDS = ("clip_fraction", "final_suboptimality", "min_log10_coverage", "mean_inner_kl", "target_extent")
"""The grids of a :class:`ClipActivity` record that its ``summary`` and ``table`` show."""


@dataclass(frozen=True, eq=False)
class ClipActivity:
    """PPO-Lite over a grid of ``beta`` and clipping intervals (paper section 3.3, Algorithm 2).

    Attributes
    ----------
    betas, widths
        The grid: ``(n_betas,)`` strengths and ``(n_widths,)`` log-space widths of the interval
        (:func:`~covpo.algorithms.ppo_lite.clip_width_thresholds`; 1 is the default interval).
    fixed_interval
        PPO's ``beta``-independent interval ``(1 - eps, 1 + eps)``, run as one more column with
        PPO's pessimistic minimum (:func:`ppo_min_thresholds`).
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
        return [f"width {w:g}" for w in self.widths] + [f"PPO [{low:g}, {high:g}]"]

    def summary(self, values: str = "clip_fraction", digits: int = 3) -> str:
        """A table of one grid (``"clip_fraction"``, ``"final_suboptimality"``, ...), one row per ``beta``."""
        grid = getattr(self, check_option("values", values, CLIP_ACTIVITY_GRIDS))
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
        grid = getattr(self, check_option("values", values, CLIP_ACTIVITY_GRIDS))
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
    fixed_interval: tuple[float, float] = PPO_INTERVAL,
    eta_beta: float,
    inner_steps: int,
    batch_size: int,
    horizon: float,
    seed: int,
) -> ClipActivity:
    """Run PPO-Lite at every ``beta`` with every interval width and with PPO's ``fixed_interval``.

    The width columns clip ``w r`` to the interval two-sidedly, as Algorithm 2 does; the last
    column applies ``fixed_interval = (1 - eps, 1 + eps)`` as PPO does, through the pessimistic
    minimum ``min(w r, clip(w, 1 - eps, 1 + eps) r)`` (:func:`ppo_min_thresholds`). Each run takes ``ceil(horizon beta)`` outer iterations with ``eta = eta_beta / beta``, the
    exact KL penalty, and ``np.random.default_rng(seed)``, so the runs of one row differ only
    in their thresholds.
    """
    instance = check_instance("instance", instance, BanditInstance)
    betas = check_positive_grid("betas", betas)
    widths = check_positive_grid("widths", widths)
    fixed_interval = _check_interval("fixed_interval", fixed_interval)
    eta_beta = check_positive("eta_beta", eta_beta)
    inner_steps = check_count("inner_steps", inner_steps)
    batch_size = check_count("batch_size", batch_size)
    horizon = check_positive("horizon", horizon)
    seed = check_seed("seed", seed)
    max_reward = float(instance.rewards.max())
    shape = (betas.size, widths.size + 1)
    grids = {key: np.zeros(shape) for key in ("clip", "sub", "cov", "kl", "extent")}
    for i, beta in enumerate(betas):
        intervals = [clip_width_thresholds(beta, max_reward, w) for w in widths] + [ppo_min_thresholds(fixed_interval)]
        for j, thresholds in enumerate(intervals):
            recorder = RatioRecorder()
            trajectory = run(
                "ppo_lite",
                instance,
                rng=np.random.default_rng(seed),
                beta=float(beta),
                eta=eta_beta / beta,
                n_iterations=_iterations_for(beta, horizon),
                batch_size=batch_size,
                inner_steps=inner_steps,
                thresholds=thresholds,
                on_inner_step=recorder,
            )
            grids["clip"][i, j] = recorder.finish().mean_clip_fraction
            grids["sub"][i, j] = trajectory.suboptimality[-1]
            grids["cov"][i, j] = trajectory.min_log10_coverage
            grids["kl"][i, j] = float(trajectory.inner_kl.mean())
            grids["extent"][i, j] = target_log_ratio_extent(instance, trajectory.thetas, beta)
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
        eta_beta=eta_beta,
        inner_steps=inner_steps,
        batch_size=batch_size,
        horizon=horizon,
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
    PPO-NoClip's ``L_t`` and its gradient (:func:`covpo.algorithms.ppo_noclip.ppo_noclip_objective`,
    :func:`covpo.algorithms.ppo_noclip.ppo_noclip_gradient`), PPO-Lite's clipped objective with the exact KL
    and its gradient (:func:`covpo.algorithms.ppo_lite.ppo_lite_objective`,
    :func:`covpo.algorithms.ppo_lite.ppo_lite_gradient`),
    and the clipped share, under the keys ``noclip``, ``noclip_gradient``, ``lite``,
    ``lite_gradient`` and ``clipped``.
    """
    instance = check_instance("instance", instance, BanditInstance)
    theta = check_shape("theta", check_finite_array("theta", theta, ndim=1), (instance.dim,))
    log_reference = _check_log_reference(instance, log_reference)
    prompts = check_index_array("prompts", prompts, instance.n_prompts)
    if prompts.ndim != 2 or prompts.size == 0:
        raise ValueError(f"prompts must have shape (M, N) with M, N >= 1, got shape {prompts.shape}")
    responses = check_shape("responses", check_index_array("responses", responses, instance.n_responses), prompts.shape)
    beta = check_positive("beta", beta)
    low, high = check_clip_thresholds(thresholds)
    n_batches, batch_size = prompts.shape
    log_probs = log_policy(instance, theta)
    probs = np.exp(log_probs)
    phibar = mean_features(instance, log_probs)
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
            np.einsum("mxy,xyd->md", table, instance.features) - np.einsum("mx,xd->md", table.sum(axis=2), phibar)
        ) / batch_size

    counts = np.bincount(prompt_cells.ravel(), minlength=n_batches * n_prompts).reshape(n_batches, n_prompts)
    estimates = {
        "noclip": np.mean(w * rewards - beta * (w * log_w - w + 1.0), axis=1),
        "noclip_gradient": score_average(w * (rewards - beta * log_w)),
        "lite": np.mean(np.clip(w, low, high) * rewards, axis=1) - beta * kl[prompts].mean(axis=1),
        "lite_gradient": score_average(np.where(clipped, 0.0, w * rewards)) - beta * counts @ kl_gradients / batch_size,
        "clipped": clipped.mean(axis=1),
    }
    for values in estimates.values():
        finite_result(values, beta)
    return estimates


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
    ``reward_theta``). ``thresholds`` default to :func:`~covpo.algorithms.ppo_lite.default_clip_thresholds` for
    ``beta``. One stack of ``n_batches`` batches from ``np.random.default_rng(seed)`` serves
    every candidate and both estimators (common random numbers).
    """
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    scales = check_finite_array("scales", scales, ndim=1)
    if scales.size == 0 or np.any(scales < 0.0):
        raise ValueError(f"scales must hold at least one value, each >= 0, got {scales!r}")
    if instance.reward_theta is None:
        raise ValueError("instance.reward_theta is None: the candidates move along theta_star")
    if thresholds is None:
        low, high = default_clip_thresholds(beta, float(instance.rewards.max()))
        if not 0.0 < low < 1.0 < high < np.inf:
            raise ValueError(
                f"beta = {beta!r} leaves no default clipping interval [exp(-R/beta), exp(R/beta)] = [{low!r}, {high!r}] "
                "in floating point; pass thresholds"
            )
    thresholds = check_clip_thresholds((low, high) if thresholds is None else thresholds)
    batch_size = check_count("batch_size", batch_size)
    n_batches = check_count("n_batches", n_batches, minimum=2)
    seed = check_seed("seed", seed)
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
# The settings of chapter 4


def practice_recipes(eta: float = 16.0) -> tuple[Method, ...]:
    """The common practice recipe in three variants (our practice notes, not the paper): GRPO-style with the reference fixed at ``pi_0``.

    ``N = 32`` prompts with ``G = 8`` responses, clip ``epsilon = 0.2``, learning rate ``eta``:
    one inner step without KL, one inner step with the k3 penalty toward ``pi_0`` at
    ``beta = 0.05``, and four inner steps without KL. Their ``n_iterations`` is a placeholder
    that :func:`~covpo.experiments.sweeps.compare_at_budget` replaces.
    """
    eta = check_positive("eta", eta)
    common = {"batch_size": 32, "group_size": 8, "clip_epsilon": 0.2, "n_iterations": 1}
    return (
        Method("practice: K = 1, no KL", "grpo_fixed", {"beta": 0.0, "inner_steps": 1, **common}, (eta,)),
        Method("practice: K = 1, k3 KL to base", "grpo_fixed", {"beta": 0.05, "inner_steps": 1, "kl": "k3", **common}, (eta,)),
        Method("practice: K = 4, no KL", "grpo_fixed", {"beta": 0.0, "inner_steps": 4, **common}, (eta,)),
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
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    log_reference = _check_log_reference(instance, log_reference)
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



# ---------------------------------------------------------------------------------------
# The landscape of PPO-NoClip's population objective (paper Eq. 24, appendices G.1 and J.1)


def regularized_hessian(instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """Hessian of ``theta -> J_beta(pi_theta; pi_ref)`` for softmax-linear policies (paper appendix G.1, cf. Eq. 24).

    Per prompt, with ``s = phi - phibar_theta`` and ``h = r - beta log(pi_theta / pi_ref)``,
    the gradient is ``Cov_theta(phi, h)`` and the Hessian
    ``E_theta[s s^T (h - E_theta h)] - beta Cov_theta(phi)``, averaged over prompts. At the
    target ``pi_ref exp(r / beta) / Z`` the first term vanishes (``h`` is constant per prompt),
    so the objective is concave there; away from it the third-moment term can make it
    indefinite: the concavity is local (our derivation of the paper's statement).
    """
    instance = check_instance("instance", instance, BanditInstance)
    theta = check_shape("theta", check_finite_array("theta", theta, ndim=1), (instance.dim,))
    log_reference = _check_log_reference(instance, log_reference)
    beta = check_positive("beta", beta)
    log_probs = log_policy(instance, theta)
    probs = np.exp(log_probs)
    centered = instance.features - mean_features(instance, log_probs)[:, None, :]
    advantage = instance.rewards - beta * (log_probs - log_reference)
    advantage = advantage - np.sum(probs * advantage, axis=1, keepdims=True)
    weights = instance.prompt_probs[:, None] * probs
    return finite_result(np.einsum("xy,xyd,xye->de", weights * (advantage - beta), centered, centered), beta)


def _kimi_hessian(instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """Hessian of KimiPO's population loss with its mean baseline ``V_t(x)`` (paper appendix J.1)."""
    baseline = np.sum(np.exp(log_reference) * instance.rewards, axis=1)
    return kimi_population_hessian(instance, theta, log_reference, beta, baseline)


@dataclass(frozen=True, eq=False)
class Landscape:
    """PPO-NoClip's population objective around its target, against KimiPO's loss (paper Eq. 24, appendices G.1, J.1).

    The reference is the base model and the target ``theta_* = theta_0 + theta_star / beta``
    (a realizable instance); points ``theta_* + rho u`` for unit directions ``u``.

    Attributes
    ----------
    radii
        ``rho``, ``(n_radii,)``.
    noclip_top
        Largest Hessian eigenvalue of ``J_beta(pi_theta; pi_0)`` over the directions, per radius
        (negative: concave there in every direction tried).
    kimi_bottom
        Smallest Hessian eigenvalue of KimiPO's population loss over the directions, per radius
        (positive: convex).
    gap
        ``J_beta(pi_*; pi_0) - J_beta(pi_theta; pi_0)``, largest over the directions, per radius.
    beta_kl
        ``beta E_x KL(pi_theta || pi_*)`` at the same point (the identity of appendix G.1 makes it equal to ``gap``).
    target_norm
        ``||theta_* - theta_0|| = ||theta_star|| / beta``, the distance from the reference to the target.
    beta, n_directions
        The settings.
    """

    radii: np.ndarray
    noclip_top: np.ndarray
    kimi_bottom: np.ndarray
    gap: np.ndarray
    beta_kl: np.ndarray
    target_norm: float
    beta: float
    n_directions: int

    @property
    def concave_radius(self) -> float:
        """The largest radius of the grid up to which every direction tried is concave (``nan`` if none is)."""
        concave = self.noclip_top < 0.0
        if not concave[0]:
            return float("nan")
        last = np.flatnonzero(~concave)
        return float(self.radii[-1] if last.size == 0 else self.radii[last[0] - 1])

    def table(self) -> Table:
        """Per radius: the NoClip objective's largest and KimiPO loss's smallest Hessian eigenvalue, and the gap both ways."""
        rows = tuple(
            (float(r), float(r / self.target_norm), float(top), float(bottom), float(gap), float(kl))
            for r, top, bottom, gap, kl in zip(self.radii, self.noclip_top, self.kimi_bottom, self.gap, self.beta_kl)
        )
        return Table(
            ("ρ", "ρ / ‖θ_* − θ_0‖", "NoClip: largest eigenvalue", "KimiPO: smallest eigenvalue",
             "J_β(π_*) − J_β(π_θ)", "β KL(π_θ ‖ π_*)"),
            rows,
            caption=f"Curvature at θ_* + ρu, over {self.n_directions} directions u, β = {self.beta:g}",
            notes=("NoClip: the Hessian of J_β(π_θ; π_0), largest eigenvalue over all directions tried (negative means "
                   "concave there). KimiPO: the Hessian of its population loss with the mean baseline, smallest "
                   "eigenvalue (positive means convex). Gap and KL: the largest over the directions.",),
        )


def landscape(instance: BanditInstance, beta: float, radii: Sequence[float], *, n_directions: int, seed: int) -> Landscape:
    """:class:`Landscape` at ``theta_* + rho u`` for ``n_directions`` random unit ``u`` (``np.random.default_rng(seed)``)."""
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    radii = check_finite_array("radii", radii, ndim=1)
    if radii.size == 0 or np.any(radii < 0.0):
        raise ValueError(f"radii must hold at least one value, each >= 0, got {radii!r}")
    n_directions = check_count("n_directions", n_directions)
    seed = check_seed("seed", seed)
    if instance.reward_theta is None:
        raise ValueError("instance.reward_theta is None: the target parameter needs a realizable instance")
    directions = np.random.default_rng(seed).standard_normal((n_directions, instance.dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    log_reference = base_log_policy(instance)
    target = instance.base_theta + instance.reward_theta / beta
    log_target = regularized_optimum(instance, log_reference, beta)
    best = regularized_objective(instance, log_target, log_reference, beta)
    columns: dict[str, list[float]] = {"top": [], "bottom": [], "gap": [], "kl": []}
    for radius in radii:
        tops, bottoms, gaps, kls = [], [], [], []
        for u in directions:
            theta = target + radius * u
            log_probs = log_policy(instance, theta)
            tops.append(np.linalg.eigvalsh(regularized_hessian(instance, theta, log_reference, beta)).max())
            bottoms.append(np.linalg.eigvalsh(_kimi_hessian(instance, theta, log_reference, beta)).min())
            gaps.append(best - regularized_objective(instance, log_probs, log_reference, beta))
            kls.append(beta * float(instance.prompt_probs @ kl_per_prompt(log_probs, log_target)))
        columns["top"].append(max(tops))
        columns["bottom"].append(min(bottoms))
        columns["gap"].append(max(gaps))
        columns["kl"].append(max(kls))
    return Landscape(
        radii=radii,
        noclip_top=np.array(columns["top"]),
        kimi_bottom=np.array(columns["bottom"]),
        gap=np.array(columns["gap"]),
        beta_kl=np.array(columns["kl"]),
        target_norm=float(np.linalg.norm(instance.reward_theta) / beta),
        beta=beta,
        n_directions=n_directions,
    )


@dataclass(frozen=True, eq=False)
class InnerLoopCurvature:
    """PPO-NoClip's inner iterates against the curvature of their population objective (paper Eq. 24, appendix G.1).

    Attributes
    ----------
    top_eigenvalue
        Largest Hessian eigenvalue of ``J_beta(pi_theta; pi_t)`` at every inner iterate
        ``theta_{t,k}``, ``(n_iterations, K + 1)``.
    gap
        ``J_beta(pi*_{t+1}; pi_t) - J_beta(pi_theta; pi_t)`` at every inner iterate, same shape.
    beta_kl
        ``beta E_x KL(pi_theta || pi*_{t+1})`` at every inner iterate, same shape.
    batch_gap
        The empirical objective's gap on the reused batch, ``L_t(theta_hat) - L_t(theta_{t,K})``
        with ``theta_hat`` the batch maximizer, ``(n_iterations,)``.
    beta
        The run's strength.
    """

    top_eigenvalue: np.ndarray
    gap: np.ndarray
    beta_kl: np.ndarray
    batch_gap: np.ndarray
    beta: float


def inner_loop_curvature(
    instance: BanditInstance, *, beta: float, eta: float, n_iterations: int, batch_size: int, inner_steps: int, seed: int
) -> InnerLoopCurvature:
    """Run PPO-NoClip (Algorithm 1) and measure the curvature and objective gaps at its inner iterates.

    The batch maximizer of each inner loop is found by continuing gradient ascent on the same
    batch (``20 K`` more steps) from the iterate handed back.
    """
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    inner_steps = check_count("inner_steps", inner_steps)
    seed = check_seed("seed", seed)
    top = np.zeros((n_iterations, inner_steps + 1))
    gap, beta_kl = np.zeros_like(top), np.zeros_like(top)
    batch_gap = np.zeros(n_iterations)

    def observe(step) -> None:
        t, k = step.iteration, step.inner_step
        log_reference = step.log_sampling
        log_probs = log_policy(instance, step.theta)
        log_target = regularized_optimum(instance, log_reference, beta)
        top[t, k] = np.linalg.eigvalsh(regularized_hessian(instance, step.theta, log_reference, beta)).max()
        gap[t, k] = regularized_objective(instance, log_target, log_reference, beta) - regularized_objective(
            instance, log_probs, log_reference, beta
        )
        beta_kl[t, k] = beta * float(instance.prompt_probs @ kl_per_prompt(log_probs, log_target))
        if k == inner_steps:
            theta = step.theta
            for _ in range(20 * inner_steps):
                theta = theta + eta * ppo_noclip_gradient(instance, theta, step.batch, beta)
            batch_gap[t] = ppo_noclip_objective(instance, theta, step.batch, beta) - ppo_noclip_objective(
                instance, step.theta, step.batch, beta
            )

    run(
        "ppo_noclip", instance, rng=np.random.default_rng(seed), beta=beta, eta=eta, n_iterations=n_iterations,
        batch_size=batch_size, inner_steps=inner_steps, on_inner_step=observe,
    )
    return InnerLoopCurvature(top_eigenvalue=top, gap=gap, beta_kl=beta_kl, batch_gap=batch_gap, beta=beta)


# ---------------------------------------------------------------------------------------
# Training runs where PPO-Lite's clip acts (paper section 3.3)


@dataclass(frozen=True, eq=False)
class ClippingBenefit:
    """PPO-NoClip against PPO-Lite with the same sampled penalty, in runs where the clip acts (paper section 3.3).

    Rows are methods: PPO-NoClip, then PPO-Lite with ``kl="sampled"`` and the interval
    :func:`~covpo.algorithms.ppo_lite.clip_width_thresholds` at each width; so the rows differ only in the clip.

    Attributes
    ----------
    labels
        One per row.
    widths
        The interval widths of the PPO-Lite rows.
    clip_fraction
        Mean share of the batch clipped at the iterates where gradients are taken, ``(n_methods, n_seeds)``.
    reached, responses_to_eps
        Whether each run became eps-optimal, and the responses at the first eps-optimal record
        (the whole budget where not reached).
    final_suboptimality
        ``J* - J`` at the end.
    inner_kl
        Mean over outer iterations of ``E_x KL(pi_{t+1} || pi*_{t+1})``: how accurately one batch
        of ``N`` solves its subproblem.
    beta, eta, batch_size, inner_steps, n_iterations, eps, seeds
        The settings.
    """

    labels: tuple[str, ...]
    widths: np.ndarray
    clip_fraction: np.ndarray
    reached: np.ndarray
    responses_to_eps: np.ndarray
    final_suboptimality: np.ndarray
    inner_kl: np.ndarray
    beta: float
    eta: float
    batch_size: int
    inner_steps: int
    n_iterations: int
    eps: float
    seeds: tuple[int, ...]

    def table(self, caption: str = "") -> Table:
        """Per method, over the seeds: share clipped, runs that reached eps, median responses, inner accuracy, final gap."""
        rows = tuple(
            (label, float(self.clip_fraction[i].mean()), f"{int(self.reached[i].sum())} of {len(self.seeds)}",
             int(np.median(self.responses_to_eps[i])), float(np.median(self.inner_kl[i])),
             float(np.median(self.final_suboptimality[i])))
            for i, label in enumerate(self.labels)
        )
        return Table(
            ("method", "share clipped", "reached ε", "responses to ε (median)", "inner-loop KL to target (median)",
             "J* − J at the end (median)"),
            rows,
            caption=caption or f"β = {self.beta:g}, N = {self.batch_size}, K = {self.inner_steps}, η = {self.eta:g}",
            notes=("Responses to ε: the whole budget where a run did not reach ε. Inner-loop KL: the mean over the run "
                   "of E_x KL(π_{t+1} ‖ π*_{t+1}), then the median over seeds.",),
        )


def clipping_benefit(
    instance: BanditInstance,
    beta: float,
    widths: Sequence[float],
    *,
    eta: float,
    batch_size: int,
    inner_steps: int,
    n_iterations: int,
    eps: float,
    seeds: Sequence[int],
) -> ClippingBenefit:
    """Run PPO-NoClip and PPO-Lite (sampled penalty, interval of each width) from every seed.

    Every run uses ``np.random.default_rng(seed)``, so the first batch of a seed is shared by all
    rows, and the same ``beta``, ``eta``, ``N``, ``K`` and ``T``.
    """
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    widths = check_positive_grid("widths", widths)
    eta = check_positive("eta", eta)
    batch_size = check_count("batch_size", batch_size)
    inner_steps = check_count("inner_steps", inner_steps)
    n_iterations = check_count("n_iterations", n_iterations)
    eps = check_positive("eps", eps)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"seeds must be a non-empty sequence of integers >= 0, got {seeds!r}")
    seeds = tuple(check_seed("seeds", seed) for seed in seeds)
    max_reward = float(instance.rewards.max())
    common = {"beta": beta, "eta": eta, "n_iterations": n_iterations, "batch_size": batch_size,
              "inner_steps": inner_steps}
    variants = [("PPO-NoClip", "ppo_noclip", {})] + [
        (f"PPO-Lite, width {w:g}", "ppo_lite", {"kl": "sampled", "thresholds": clip_width_thresholds(beta, max_reward, w)})
        for w in widths
    ]
    shape = (len(variants), len(seeds))
    clip, responses = np.zeros(shape), np.zeros(shape, dtype=np.int64)
    reached = np.zeros(shape, dtype=bool)
    final, inner_kl = np.zeros(shape), np.zeros(shape)
    for i, (_, algorithm, extra) in enumerate(variants):
        for j, seed in enumerate(seeds):
            recorder = RatioRecorder()
            trajectory = run(algorithm, instance, rng=np.random.default_rng(seed), on_inner_step=recorder, **common, **extra)
            clip[i, j] = recorder.finish().mean_clip_fraction
            hit = trajectory.responses_to_eps(eps)
            reached[i, j] = hit is not None
            responses[i, j] = trajectory.total_responses if hit is None else hit
            final[i, j] = trajectory.suboptimality[-1]
            inner_kl[i, j] = float(np.mean(trajectory.inner_kl))
    return ClippingBenefit(
        labels=tuple(label for label, _, _ in variants),
        widths=widths,
        clip_fraction=clip,
        reached=reached,
        responses_to_eps=responses,
        final_suboptimality=final,
        inner_kl=inner_kl,
        beta=beta,
        eta=eta,
        batch_size=batch_size,
        inner_steps=inner_steps,
        n_iterations=n_iterations,
        eps=eps,
        seeds=seeds,
    )
