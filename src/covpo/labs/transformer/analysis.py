"""What chapter 7 reads off a study: per-run metrics, paired comparisons over seeds, and its tables.

A metric is one number per run, computed from the exact probabilities of the model the run
returns (:func:`run_metric`); the base model is the pseudo-arm ``"base model"`` (row 0 of every
run's exact series, the same model for every arm of a seed). A comparison (:class:`Comparison`)
pairs two cells seed by seed and summarizes the differences by their median and sign-test
interval (:func:`~covpo.labs.transformer.paired.sign_test_interval`); a difference of
differences (``minus``) compares what two tasks did to the same arm.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from covpo.table import Table
from covpo.validation import check_count, check_instance, check_instances, check_option, check_text

from .experiment import TASKS, TransformerStudy
from .methods import ARM_NAMES, STRONG_ARM, WEAK_ARM
from .paired import PairedInterval, sign_test_interval
from .task import REWARDS
from .training import Method

BASE = "base model"
"""The pseudo-arm of the base model."""
METRICS = ("pass@256, hard training prompts", "pass@256, hard held-out prompts", "pass@1, hard training prompts",
           "pass@1, hard held-out prompts", "hard training prompts lost", "hard held-out prompts lost",
           "KL to base (nats)")
"""Per-run metrics (exact, from the model each run returns)."""


def run_metric(study: TransformerStudy, metric: str, step: int = -1) -> np.ndarray:
    """``metric`` (one of :data:`METRICS`) for every run at ``step`` (default: the returned model; 0: the base model), ``[R]``."""
    check_instance("study", study, TransformerStudy)
    check_option("metric", metric, METRICS)
    steps = study.kl.shape[1]
    if isinstance(step, (bool, np.bool_)) or not isinstance(step, (int, np.integer)) or not -steps <= step < steps:
        raise ValueError(f"step must be an integer in [{-steps}, {steps}), got {step!r}")
    prompts = "training" if "training" in metric else "held-out"
    if metric.startswith("pass@"):
        return study.exact_pass_at(int(metric[5:metric.index(",")]), prompts, step)
    if metric.endswith("lost"):
        return study.hard_lost(prompts, step).astype(float)
    return study.kl[:, step]


@dataclass(frozen=True)
class Side:
    """One side of a comparison: the arm ``arm`` (or :data:`BASE`) of a task, group size and reward."""

    arm: str
    task: str = "mixed"
    group_size: int = 8
    reward: str = "partial"

    def __post_init__(self) -> None:
        check_option("arm", self.arm, ARM_NAMES + (BASE,))
        check_option("task", self.task, TASKS)
        check_count("group_size", self.group_size)
        check_option("reward", self.reward, REWARDS)


@dataclass(frozen=True)
class Comparison:
    """``first - second`` paired by seed, optionally minus ``third - fourth`` (a difference of differences)."""

    label: str
    first: Side
    second: Side
    minus: tuple[Side, Side] | None = None

    def __post_init__(self) -> None:
        check_text("label", self.label)
        check_instance("first", self.first, Side)
        check_instance("second", self.second, Side)
        if self.minus is not None and (not isinstance(self.minus, tuple) or len(self.minus) != 2
                                       or not all(isinstance(side, Side) for side in self.minus)):
            raise ValueError(f"minus must be None or a pair of Side, got {self.minus!r}")


def side_values(study: TransformerStudy, side: Side, metric: str) -> np.ndarray | None:
    """``metric`` of ``side`` on every seed, in seed order (``None`` if the cell was not run)."""
    check_instance("study", study, TransformerStudy)
    check_instance("side", side, Side)
    check_option("metric", metric, METRICS)
    arm = WEAK_ARM if side.arm == BASE else side.arm
    runs = study.runs(side.task, arm, side.group_size, side.reward)
    if side.arm == BASE:
        runs = runs if len(runs) else study.runs(side.task, "APMD", side.group_size, side.reward)
    if not len(runs):
        return None
    return run_metric(study, metric, 0 if side.arm == BASE else -1)[runs]


def compare(study: TransformerStudy, comparison: Comparison, metric: str) -> PairedInterval | None:
    """The paired differences of ``comparison`` in ``metric`` and their sign-test interval (``None`` if a cell was not run)."""
    differences = paired_differences(study, comparison, metric)
    return None if differences is None else sign_test_interval(differences)


def paired_differences(study: TransformerStudy, comparison: Comparison, metric: str) -> np.ndarray | None:
    """The paired differences of ``comparison`` in ``metric``, one per seed in seed order (``None`` if a cell was not run)."""
    check_instance("study", study, TransformerStudy)
    check_instance("comparison", comparison, Comparison)
    check_option("metric", metric, METRICS)
    sides = (comparison.first, comparison.second) + (comparison.minus or ())
    values = [side_values(study, side, metric) for side in sides]
    if any(value is None for value in values):
        return None
    differences = values[0] - values[1]
    if comparison.minus is not None:
        differences = differences - (values[2] - values[3])
    return differences


def chapter_comparisons(reward: str = "partial") -> tuple[Comparison, ...]:
    """The comparisons chapter 7 reports, in the order of its paired table, under ``reward``."""
    check_option("reward", reward, REWARDS)
    weak, strong = Side(WEAK_ARM), Side(STRONG_ARM)
    comparisons = [
        Comparison("APMD - base model", Side("APMD"), Side(BASE)),
        Comparison(f"APMD - {WEAK_ARM}", Side("APMD"), weak),
        Comparison(f"APMD - {STRONG_ARM}", Side("APMD"), strong),
        Comparison(f"{STRONG_ARM} - {WEAK_ARM}", strong, weak),
        Comparison(f"{STRONG_ARM} - base model", strong, Side(BASE)),
        Comparison(f"{WEAK_ARM} - base model", weak, Side(BASE)),
    ]
    comparisons += [Comparison(f"{arm} - {WEAK_ARM}", Side(arm), weak)
                    for arm in ("TRL sync, α = 0.6", "TRL sync, α = 1", "β = 0", "REINFORCE, leave-one-out",
                                "Rebel")]
    comparisons += [
        Comparison("APMD, exact target - APMD", Side("APMD, exact target"), Side("APMD")),
        Comparison("APMD, exact target - base model", Side("APMD, exact target"), Side(BASE)),
    ]
    for task in ("hard-only", "decoupled"):
        for arm in (WEAK_ARM, "APMD", "APMD, exact target"):
            comparisons.append(Comparison(
                f"{arm}: loss on {task} - loss on mixed", Side(arm, task), Side(BASE, task),
                (Side(arm), Side(BASE))))
    comparisons += [Comparison(f"{WEAK_ARM}: G = {group} - G = 8", Side(WEAK_ARM, group_size=group),
                               weak) for group in (32, 128)]
    return tuple(_with_reward(comparison, reward) for comparison in comparisons)


def _with_reward(comparison: Comparison, reward: str) -> Comparison:
    def side(s: Side) -> Side:
        return replace(s, reward=reward)
    minus = None if comparison.minus is None else (side(comparison.minus[0]), side(comparison.minus[1]))
    return Comparison(comparison.label, side(comparison.first), side(comparison.second), minus)


VERDICTS = {1: "first higher", -1: "second higher", 0: "cannot tell"}
"""What a comparison's interval says (:attr:`~covpo.labs.transformer.paired.PairedInterval.verdict`)."""


def paired_table(study: TransformerStudy, comparisons: tuple[Comparison, ...] | None = None,
                 metrics: tuple[str, ...] = METRICS[:3], reward: str = "partial") -> Table:
    """Median paired difference and sign-test interval of every comparison run at this size, in each of ``metrics``.

    ``comparisons`` default to :func:`chapter_comparisons` under ``reward``.
    """
    check_instance("study", study, TransformerStudy)
    check_option("reward", reward, REWARDS)
    comparisons = chapter_comparisons(reward) if comparisons is None else check_instances(
        "comparisons", comparisons, Comparison)
    if isinstance(metrics, str) or not isinstance(metrics, (tuple, list)) or not metrics:
        raise ValueError(f"metrics must be a non-empty sequence of {METRICS}, got {metrics!r}")
    for metric in metrics:
        check_option("metrics", metric, METRICS)
    rows = []
    level = None
    for comparison in comparisons:
        intervals = [compare(study, comparison, metric) for metric in metrics]
        if any(interval is None for interval in intervals):
            continue
        level = intervals[0].level
        rows.append((comparison.label, *(f"{i.summary} {VERDICTS[i.verdict]}" for i in intervals)))
    return Table(("comparison (first - second)", *metrics), tuple(rows),
                 caption=f"Paired differences over {len(study.seeds)} seeds: median [sign-test interval, "
                         f"level {level:.0%}]",
                 notes=(f"mixed task, {reward} reward, groups of 8 unless the row says otherwise; exact pass@k of "
                        "the models the runs return",
                        "a loss on a task is the arm's metric minus the base model's on that task",
                        "\"cannot tell\": the interval contains zero"))


def _range_text(values: np.ndarray, digits: int = 2) -> str:
    return f"{np.median(values):.{digits}f} [{values.min():.{digits}f}, {values.max():.{digits}f}]"


def summary_table(study: TransformerStudy, reward: str = "partial") -> Table:
    """Per cell under ``reward``: its costs and exact pass@1 and pass@256 of hard prompts, median [min, max] over seeds."""
    check_instance("study", study, TransformerStudy)
    check_option("reward", reward, REWARDS)
    metrics = (METRICS[2], METRICS[0], METRICS[1], METRICS[6])
    responses = study.setup.responses
    rows = []
    for task in ("mixed", "hard-only", "decoupled"):
        base = [side_values(study, Side(BASE, task, 8, reward), metric) for metric in metrics]
        if base[0] is not None:
            rows.append((task, BASE, "-", "-", 0, 0, *(_range_text(v) for v in base[:3]), "0"))
        for cell in study.cells:
            if cell.task != task or cell.reward != reward or cell.learning_rate is not None:
                continue
            method = study.methods[cell.arm]
            values = [side_values(study, Side(cell.arm, task, cell.group_size, reward), metric) for metric in metrics]
            rows.append((task, cell.arm, cell.group_size, f"{method.learning_rate:g}",
                         responses if method.draws_responses else 0, study.setup.gradient_steps,
                         *(_range_text(v) for v in values[:3]), _range_text(values[3], 1)))
    return Table(("task", "arm", "G", "learning rate", "responses", "gradient steps", "pass@1, hard training",
                  "pass@256, hard training", "pass@256, hard held-out", "KL to base"), tuple(rows),
                 caption=f"Every cell, {reward} reward: median [min, max] over {len(study.seeds)} seeds",
                 notes=("pass@k: exact, $1 - (1 - p)^k$ from the exact coverage $p$ of the model the run returns, "
                        "averaged over the run's hard prompts",
                        "KL to base: exact $\\mathrm{KL}(\\pi_T \\Vert \\pi_0)$ in nats, averaged over the "
                        "training prompts",
                        "G: answers per prompt; every run draws the same number of answers per step"))


def reference_text(method: Method) -> str:
    """What ``method``'s reference is and how often it is reset, in words (the arms tables' column)."""
    check_instance("method", method, Method)
    if method.family == "apmd":
        state = "optimizer re-initialised" if method.reset_optimizer else "optimizer state carried"
        return f"the sampling policy, reset every outer step ({state})"
    if method.family != "grpo":
        return "the sampling policy, reset every outer step"
    if method.beta == 0:
        return "none"
    if not method.sync_every:
        return "the base model, fixed"
    mix = ("replaced by the policy" if method.sync_alpha == 1
           else f"mixed with the policy ($\\alpha = {method.sync_alpha:g}$)")
    reset = ", optimizer re-initialised" if method.reset_optimizer else ""
    return f"{mix} every {method.sync_every} optimizer steps{reset}"


LOSSES = {"grpo": "GRPO surrogate, k3 penalty", "rebel": "Rebel squared loss",
          "apmd": "APMD, exact $\\mathrm{KL}(\\pi \\Vert \\pi_t)$"}
"""How :func:`arms_table` names each family's loss."""


def arms_table(study: TransformerStudy) -> Table:
    """Every arm the study ran: its loss, beta, reference, learning rate, responses and gradient steps per run."""
    check_instance("study", study, TransformerStudy)
    rows = []
    for name, method in study.methods.items():
        if not any(cell.arm == name for cell in study.cells):
            continue
        loss = LOSSES[method.family]
        if method.family == "grpo" and method.advantage == "loo":
            loss = "leave-one-out advantage, clipped ratio"
        if method.exact_reward:
            loss += ", exact reward"
        rows.append((name, loss, f"{method.beta:g}", reference_text(method), f"{method.learning_rate:g}",
                     study.setup.responses if method.draws_responses else 0, study.setup.gradient_steps))
    return Table(("arm", "loss", "$\\beta$", "reference", "learning rate", "responses per run",
                  "gradient steps per run"),
                 tuple(rows), caption="The arms: one loop, the same batches and the same number of optimizer steps",
                 notes=(f"{study.setup.inner_steps} Adam steps per batch of {study.setup.n_slots * study.setup.slot_size} "
                        "answers; the exact-target arm draws no answers (its reward is exact)",))
