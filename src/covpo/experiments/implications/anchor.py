"""The reference as an anchor, apart from importance weighting and batch reuse (paper section 5; our experiment).

The paper's section 5 reads its theory as saying that the reference's role in *anchoring*
optimization (each inner loop improves locally around a reference that is then reset) is
distinct from its use in importance weighting or batch reuse. This module isolates the two in
a 2 x 2 design on one collapse instance:

- **anchor**: the KL penalty's reference is either fixed at the base model ``pi_0`` (at the
  weakest strength :data:`FIXED_BETA` whose optimum is within eps/2 of ``J*``, the strength a
  fixed reference needs to reach eps) or reset to ``pi_t`` at every outer iteration (at
  :data:`RESET_BETA`, chapter 4's);
- **batch**: each outer iteration spends ``N`` responses either as one batch drawn from ``pi_t``
  and reused for all ``K`` inner steps with importance weights ``pi_theta / pi_t`` (PPO-NoClip's
  inner loop, paper Algorithm 1), or as ``K`` fresh on-policy batches of ``N / K``, one per inner
  step, drawn from the current iterate (no importance weight, no reuse).

Every cell ascends ``J(pi_theta) - beta KL(pi_theta || pi_ref)`` with the same learning rate,
inner steps and responses, by the estimate ``mean_i w_i (r_i - beta log(pi_theta / pi_ref)(y_i))
grad log pi_theta(y_i|x_i)`` (``w_i = 1`` on a fresh batch), built here from the public pieces of
the algorithms (:func:`covpo.batches.unchecked_draw_batch` and the policy class's
``batch_score_average``): the cell with a reset anchor and a reused batch is PPO-NoClip, the cell
with a fixed anchor and fresh batches is sampled REINFORCE with a KL penalty to ``pi_0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from covpo.batches import ResponseBatch, unchecked_draw_batch
from covpo.experiments.parallel import run_tasks
from covpo.families import collapse_family
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, expected_reward, log_coverage
from covpo.policy_classes import SoftmaxLinear
from covpo.table import Table
from covpo.trajectory import LOG10_E
from covpo.validation import (
    check_count,
    check_finite_array,
    check_flag,
    check_instance,
    check_option,
    check_positive,
    check_probability,
    check_seeds,
)

ANCHORS = ("fixed", "reset")
"""The levels of the anchor factor; the reference stays ``pi_0``, or is reset to ``pi_t`` every outer iteration."""
BATCHES = ("fresh", "reused")
"""The levels of the batch factor; a fresh on-policy batch per inner step, or one batch reused with importance weights."""
FIXED_BETA = 0.05
"""KL strength toward ``pi_0`` for the fixed anchor, whose optimum is eps/2-optimal on the collapse family (chapter 6's head-to-head)."""
RESET_BETA = 1.0
"""KL strength toward ``pi_t`` for the reset anchor (chapter 4's PPO-NoClip on the collapse family)."""
BOOK_COVERAGE = 40.0
BOOK_ETA, BOOK_INNER_STEPS, BOOK_BATCH_SIZE, BOOK_ITERATIONS = 8.0, 32, 256, 25
BOOK_SEEDS = tuple(range(10))
LEVEL = 0.95


def _anchor_gradient(
    policy: SoftmaxLinear, theta: np.ndarray, batch: ResponseBatch, log_reference: np.ndarray, beta: float,
    log_probs: np.ndarray | None = None,
) -> np.ndarray:
    """``mean_i w_i (r_i - beta log(pi_theta / pi_ref)(y_i)) grad log pi_theta(y_i|x_i)`` (paper Algorithm 1's estimate, any reference).

    ``w_i = pi_theta(y_i|x_i) / pi_b(y_i|x_i)`` with ``pi_b`` the policy the batch was drawn from
    (``batch.log_sampling``): unbiased for the gradient of ``J(pi_theta) - beta KL(pi_theta ||
    pi_ref)``. With ``pi_ref = pi_b`` it is PPO-NoClip's gradient; on a batch drawn from
    ``pi_theta`` itself every ``w_i`` is 1. ``log_probs`` is ``log pi_theta`` where the loop has
    it already. Arguments are the loop's own, so nothing is checked.
    """
    if log_probs is None:
        log_probs = policy.log_policy(theta)
    chosen = log_probs[batch.prompts, batch.responses]
    log_weight = chosen - batch.log_sampling
    log_penalty = chosen - log_reference[batch.prompts, batch.responses]
    coefficients = np.exp(log_weight) * (batch.rewards - beta * log_penalty)
    return policy.batch_score_average(theta, batch, coefficients, log_probs)


@dataclass(frozen=True)
class AnchorRun:
    """One run of one cell: its lowest coverage, reward and the point where it closed half its gap.

    ``depth`` is ``min_{k, x} log10 c_k(x) / c_0(x)`` over every inner iterate (``<= 0``);
    ``half_depth`` the same up to the first iterate that closed half of ``J* - J(pi_0)``
    (``nan`` if none did); ``final_gap`` is ``J* - J`` at the end.
    """

    depth: float
    half_depth: float
    final_gap: float


def anchor_run(
    instance: BanditInstance,
    anchor: str,
    batch: str,
    *,
    beta: float,
    eta: float,
    n_iterations: int,
    batch_size: int,
    inner_steps: int,
    seed: int,
) -> AnchorRun:
    """One cell of the 2 x 2 design (paper section 5; see the module docstring) from ``np.random.default_rng(seed)``.

    Parameters
    ----------
    instance
        The bandit (softmax-linear over its features, started at ``theta_0``).
    anchor
        ``"fixed"`` (reference ``pi_0``) or ``"reset"`` (reference ``pi_t``, reset every outer iteration).
    batch
        ``"reused"`` (one batch of ``batch_size`` from ``pi_t`` per outer iteration, importance
        weighted) or ``"fresh"`` (``batch_size / inner_steps`` fresh responses per inner step).
    beta, eta
        KL strength and learning rate, ``> 0``.
    n_iterations, batch_size, inner_steps
        ``T``, ``N`` and ``K``; ``N`` must be a multiple of ``K``.
    seed
        The run's seed (the same seed in every cell: common random numbers).
    """
    instance = check_instance("instance", instance, BanditInstance)
    anchor = check_option("anchor", anchor, ANCHORS)
    batch = check_option("batch", batch, BATCHES)
    beta, eta = check_positive("beta", beta), check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    batch_size, inner_steps = check_count("batch_size", batch_size), check_count("inner_steps", inner_steps)
    if batch_size % inner_steps:
        raise ValueError(f"batch_size must be a multiple of inner_steps ({inner_steps}), got {batch_size}")
    seed = check_count("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    policy = SoftmaxLinear(instance)
    theta = np.array(policy.initial_params, dtype=float)
    log_base = base_log_policy(instance)
    base_coverage = log_coverage(instance, log_base)
    support = instance.prompt_probs > 0.0
    start_gap = instance.optimal_value - expected_reward(instance, log_base)
    depth, half_depth = 0.0, np.nan
    log_probs = policy.log_policy(theta)
    for _ in range(n_iterations):
        log_current = log_probs
        log_reference = log_base if anchor == "fixed" else log_current
        if batch == "reused":
            reused = unchecked_draw_batch(instance, log_current, batch_size, rng)
        for _ in range(inner_steps):
            if batch == "reused":
                step_batch = reused
            else:
                step_batch = unchecked_draw_batch(instance, log_probs, batch_size // inner_steps, rng)
            with np.errstate(over="raise", invalid="raise"):
                theta = theta + eta * _anchor_gradient(policy, theta, step_batch, log_reference, beta, log_probs)
            log_probs = policy.log_policy(theta)
            fall = float(np.min((log_coverage(instance, log_probs) - base_coverage)[support])) * LOG10_E
            depth = min(depth, fall)
            if np.isnan(half_depth) and instance.optimal_value - expected_reward(instance, log_probs) <= start_gap / 2:
                half_depth = depth
    final_gap = instance.optimal_value - expected_reward(instance, log_probs)
    return AnchorRun(depth, half_depth, float(final_gap))


def paired_interval(differences: np.ndarray, level: float = LEVEL) -> tuple[float, float, float]:
    """Mean of paired differences with its Student-t interval at ``level``: ``(mean, low, high)``.

    ``differences`` is one-dimensional with at least two finite entries.
    """
    kept = check_finite_array("differences", differences, ndim=1)
    if kept.size < 2:
        raise ValueError(f"differences must hold at least two values, got {kept.size}")
    level = check_probability("level", level)
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    mean = float(kept.mean())
    half = float(student_t.ppf(0.5 + level / 2, kept.size - 1) * kept.std(ddof=1) / np.sqrt(kept.size))
    return mean, mean - half, mean + half


MEASURES = ("coverage_loss", "half_loss", "final_gap")
"""What is measured per run; decades of coverage lost over the run, lost by the time half the reward gap closed, and ``J* - J`` at the end."""


@dataclass(frozen=True, eq=False)
class AnchorStudy:
    """The 2 x 2 design over seeds (paper section 5): every measure ``(anchor, batch, seed)``.

    ``coverage_loss`` and ``half_loss`` are ``-depth`` and ``-half_depth`` of :class:`AnchorRun`
    (decades, ``>= 0``); ``final_gap`` is ``J* - J`` at the end; ``betas`` the KL strength of
    each anchor.
    """

    coverage: float
    seeds: tuple[int, ...]
    betas: tuple[float, float]
    eta: float
    n_iterations: int
    batch_size: int
    inner_steps: int
    eps: float
    coverage_loss: np.ndarray
    half_loss: np.ndarray
    final_gap: np.ndarray

    def __post_init__(self) -> None:
        shape = (len(ANCHORS), len(BATCHES), len(self.seeds))
        for name in MEASURES:
            values = np.asarray(getattr(self, name), dtype=float)
            if values.shape != shape:
                raise ValueError(f"{name} must have shape {shape}, got {values.shape}")

    @property
    def response_budget(self) -> int:
        """Responses every run spends, ``T N``."""
        return self.n_iterations * self.batch_size

    def cell(self, measure: str, anchor: str, batch: str) -> np.ndarray:
        """A measure's values over the seeds in one cell."""
        measure = check_option("measure", measure, MEASURES)
        return getattr(self, measure)[ANCHORS.index(check_option("anchor", anchor, ANCHORS)),
                                      BATCHES.index(check_option("batch", batch, BATCHES))]

    def effect(self, measure: str, factor: str, level: str) -> tuple[float, float, float]:
        """A factor's paired effect at one level of the other factor: ``(mean, low, high)`` over seeds (``nan`` with under two pairs).

        ``factor = "anchor"``: reset minus fixed with the batch at ``level``; ``factor =
        "batch"``: reused minus fresh with the anchor at ``level``.
        """
        factor = check_option("factor", factor, ("anchor", "batch"))
        if factor == "anchor":
            level = check_option("level", level, BATCHES)
            differences = self.cell(measure, "reset", level) - self.cell(measure, "fixed", level)
        else:
            level = check_option("level", level, ANCHORS)
            differences = self.cell(measure, level, "reused") - self.cell(measure, level, "fresh")
        kept = differences[~np.isnan(differences)]  # a seed that never closed half its gap has no half_loss
        return paired_interval(kept) if kept.size >= 2 else (np.nan, np.nan, np.nan)

    def verdict(self, measure: str, factor: str, level: str) -> str:
        """``"lower"`` or ``"higher"`` where the paired interval excludes zero, else ``"cannot tell"`` (also with under two pairs)."""
        _, low, high = self.effect(measure, factor, level)
        return "lower" if high < 0 else "higher" if low > 0 else "cannot tell"

    def table(self) -> Table:
        """Per cell: median and worst coverage loss, median loss at half the reward gap, median final gap, runs reaching eps."""
        rows = []
        for anchor in ANCHORS:
            for batch in BATCHES:
                loss, half, gap = (self.cell(m, anchor, batch) for m in MEASURES)
                rows.append((
                    f"{anchor} anchor (β = {self.betas[ANCHORS.index(anchor)]:g})", batch,
                    float(np.median(loss)), float(np.max(loss)),
                    float(np.nanmedian(half)) if np.any(~np.isnan(half)) else None,
                    float(np.median(gap)), f"{int(np.sum(gap <= self.eps))} of {len(self.seeds)}",
                ))
        return Table(
            ("anchor", "batch", "coverage lost, median (decades)", "worst", "lost by half the gap, median",
             "final $J^\\star - J$, median", "runs ending ε-optimal"),
            tuple(rows),
            caption=f"The 2 × 2 anchor design, {len(self.seeds)} seeds per cell",
        )

    def effect_table(self) -> Table:
        """Each factor's paired effect (mean over seeds and its t interval) on each measure, at each level of the other."""
        rows = []
        labels = {"coverage_loss": "coverage lost", "half_loss": "lost by half the gap", "final_gap": "final $J^\\star - J$"}
        for factor, levels, text in (("anchor", BATCHES, "reset − fixed, {} batch"),
                                     ("batch", ANCHORS, "reused − fresh, {} anchor")):
            for level in levels:
                for measure in MEASURES:
                    mean, low, high = self.effect(measure, factor, level)
                    rows.append((text.format(level), labels[measure], mean, f"[{low:.2f}, {high:.2f}]",
                                 self.verdict(measure, factor, level)))
        return Table(
            ("effect", "measure", "mean difference", f"{LEVEL:.0%} interval", "verdict"),
            tuple(rows),
            caption="Paired by seed: each factor's effect with the other held fixed",
            notes=("Intervals are Student-t intervals of the mean paired difference; "
                   "'cannot tell' where the interval includes zero.",),
        )


def _cell_task(instance: BanditInstance, anchor: str, batch: str, beta: float, eta: float,
               n_iterations: int, batch_size: int, inner_steps: int, seed: int) -> AnchorRun:
    return anchor_run(instance, anchor, batch, beta=beta, eta=eta, n_iterations=n_iterations,
                      batch_size=batch_size, inner_steps=inner_steps, seed=seed)


def anchor_study(
    *,
    coverage: float = BOOK_COVERAGE,
    seeds: Sequence[int] = BOOK_SEEDS,
    eta: float = BOOK_ETA,
    n_iterations: int = BOOK_ITERATIONS,
    batch_size: int = BOOK_BATCH_SIZE,
    inner_steps: int = BOOK_INNER_STEPS,
    eps: float = 0.04,
    progress: bool = True,
) -> AnchorStudy:
    """The 2 x 2 anchor design on the collapse family at ``C_cov = coverage`` (paper section 5; our experiment).

    Every (anchor, batch, seed) run is one task of :func:`covpo.experiments.parallel.run_tasks`.
    The fixed anchor runs at :data:`FIXED_BETA`, the reset anchor at :data:`RESET_BETA`; both at
    the same ``eta``, ``K``, ``N`` and ``T``.
    """
    coverage = check_positive("coverage", coverage)
    seeds = check_seeds("seeds", seeds)
    if len(seeds) < 2:
        raise ValueError(f"seeds must hold at least two seeds (the effects are paired intervals), got {seeds!r}")
    eps = check_positive("eps", eps)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    batch_size, inner_steps = check_count("batch_size", batch_size), check_count("inner_steps", inner_steps)
    if batch_size % inner_steps:
        raise ValueError(f"batch_size must be a multiple of inner_steps ({inner_steps}), got {batch_size}")
    progress = check_flag("progress", progress)
    instance = collapse_family((coverage,))[0]
    betas = (FIXED_BETA, RESET_BETA)
    tasks = [
        (instance, anchor, batch, betas[a], eta, n_iterations, batch_size, inner_steps, seed)
        for a, anchor in enumerate(ANCHORS) for batch in BATCHES for seed in seeds
    ]
    runs = run_tasks(_cell_task, tasks, "anchor design", progress=progress)
    shape = (len(ANCHORS), len(BATCHES), len(seeds))
    depth = np.array([run.depth for run in runs]).reshape(shape)
    half = np.array([run.half_depth for run in runs]).reshape(shape)
    gap = np.array([run.final_gap for run in runs]).reshape(shape)
    return AnchorStudy(
        coverage=coverage, seeds=seeds, betas=betas, eta=float(eta), n_iterations=int(n_iterations),
        batch_size=int(batch_size), inner_steps=int(inner_steps), eps=eps,
        coverage_loss=check_finite_array("coverage_loss", -depth), half_loss=-half, final_gap=gap,
    )
