"""The importance weights of PPO-NoClip per outer iteration, and their extremes against ``[exp(-R/beta), exp(R/beta)]`` (paper section 3.2, appendix G).

:func:`ratio_spread` records the weights of one run, :func:`ratio_bounds_by_beta` their
extremes against ``beta``, and :func:`target_log_ratio_extent` how far the exact targets move
the policy in log-ratio, for the chapter's figures and tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from covpo.instances import BanditInstance
from covpo.objectives import regularized_optimum
from covpo.policies import log_policy
from covpo import run
from covpo.algorithms.ppo_lite import default_clip_thresholds
from covpo.algorithms.ratios import RatioRecord, RatioRecorder
from covpo.table import Table
from covpo.trajectory import Trajectory
from covpo.validation import (
    MAX_COUNT,
    check_count,
    check_finite_array,
    check_instance,
    check_positive,
    check_positive_grid,
    check_seed,
)
from covpo.experiments.ppo.checks import _check_mapping, _check_sequence


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
        caption="Importance weights $\\pi_{t+1} / \\pi_t$ of each run",
        notes=("Lowest and highest weight: over every inner iterate and every (x, y). Quantiles: of the "
               "weights a fresh batch from $\\pi_t$ would carry, weighted by $\\rho \\times \\pi_t$, over the iterations. "
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
