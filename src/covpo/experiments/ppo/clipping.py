"""How often PPO-Lite clips and what clipping costs or buys (paper section 3.3, Algorithm 2).

:func:`clip_activity_grid` sweeps ``beta`` and the clipping interval (whether the target itself
is ever clipped, and what clipping costs the optimization); :func:`ppo_min_thresholds` is PPO's
fixed interval ``[1 - eps, 1 + eps]`` as PPO-Lite thresholds; :func:`clipping_benefit` runs
PPO-NoClip against PPO-Lite with the same sampled penalty where the clip acts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.instances import BanditInstance
from covpo import run
from covpo.algorithms.ppo_lite import clip_width_thresholds
from covpo.algorithms.ratios import RatioRecorder
from covpo.table import Table
from covpo.validation import check_count, check_instance, check_option, check_positive, check_positive_grid, check_seed
from covpo.experiments.ppo.checks import _check_interval
from covpo.experiments.ppo.ratios import _iterations_for, target_log_ratio_extent


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
        :func:`~covpo.experiments.ppo.ratios.target_log_ratio_extent` over each run's references, same shape (at most 1).
    n_iterations
        Outer iterations at each ``beta``, ``ceil(horizon beta)``.
    eta_beta, inner_steps, batch_size, horizon
        The settings, as for :class:`~covpo.experiments.ppo.ratios.RatioBoundsTable`.
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
             "$J^\\star - J$ at the end (median)"),
            rows,
            caption=caption or f"β = {self.beta:g}, N = {self.batch_size}, K = {self.inner_steps}, η = {self.eta:g}",
            notes=("Responses to ε: the whole budget where a run did not reach ε. Inner-loop KL: the mean over the run "
                   "of $\\mathbb{E}_x \\mathrm{KL}(\\pi_{t+1} \\Vert \\pi^\\star_{t+1})$, then the median over seeds.",),
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
