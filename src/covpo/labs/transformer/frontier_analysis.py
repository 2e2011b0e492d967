"""Reading chapter 7's frontier record: arms compared at matched reward or matched KL, paired by seed.

The record (:mod:`covpo.labs.transformer.frontier`) keeps every run's path. Two arms that moved
different distances are compared where they have moved as far: each seed's path is read at the
first point where its reward (exact pass@1 over the panel's prompts) reaches a level, or its KL
divergence to the base model does, interpolating linearly between the two kept points that
bracket it (:func:`value_at_level`); the two arms' values of a coverage measure at that point
are differenced seed by seed, over the seeds where both reach the level, and the median
difference gets its sign-test interval (:func:`matched_comparison`). A verdict read from the
record holds only if it is the same under every CPU profile the record keeps
(:func:`matched_verdict`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from covpo.records import read_stamped_record
from covpo.table import Table
from covpo.validation import check_finite_array, check_option, check_positive, check_text

from .analysis import LOSSES, reference_text
from .frontier import (BINARY_ARMS, BLOCKS, FRONTIER_RECORD, LONG_ARMS, ONSET_DROP, OPTIMIZER_STEPS, PANELS, PASS_KS,
                       SPLIT_ARMS)
from .methods import ARM_NAMES, default_arms
from .paired import PairedInterval, sign_test_interval
from .experiment import TASKS
from .task import REWARDS

COVERAGE_MEASURES = (*(f"pass@{k}" for k in PASS_KS[1:]), "log10_coverage", "near")
"""The measures of a panel a comparison can difference."""
MOVEMENTS = ("pass1", "kl")
"""What a comparison matches, reward (exact pass@1 over the panel's prompts) or KL divergence to the base model."""
MIN_SEEDS = 6
"""The fewest paired seeds that give a 95% sign-test interval."""


def _check_frontier_record(record: dict) -> dict:
    """``record`` if every run holds every block of :data:`~covpo.labs.transformer.frontier.BLOCKS` with paths, else raise."""
    runs = record.get("runs") if isinstance(record, dict) else None
    if not isinstance(runs, list) or not runs:
        raise ValueError(f"record must be a frontier record (a non-empty 'runs' list), got {record!r:.80}")
    for r, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("stamp"), dict) or "profile" not in run["stamp"]:
            raise ValueError(f"record runs[{r}] must be a run with a stamp naming its CPU profile")
        blocks = run.get("blocks")
        if not isinstance(blocks, dict) or set(blocks) != set(BLOCKS):
            raise ValueError(f"record runs[{r}] must hold the blocks {tuple(BLOCKS)}")
        for name, block in blocks.items():
            if not isinstance(block, dict) or not isinstance(block.get("paths"), list) or not block["paths"]:
                raise ValueError(f"record runs[{r}] block {name!r} must hold a non-empty list of paths")
    return record


def _check_arms(name: str, arms: object) -> tuple[str, ...]:
    """``arms`` as a tuple if it is a non-empty sequence of arm names (or ``"mirror descent"``), else raise naming ``name``."""
    if isinstance(arms, str) or not isinstance(arms, (tuple, list)) or not arms:
        raise ValueError(f"{name} must be a non-empty tuple of arm names, got {arms!r}")
    for arm in arms:
        check_option(name, arm, ARM_NAMES + ("mirror descent",))
    return tuple(arms)


def _check_levels(levels: object) -> np.ndarray:
    """``levels`` as a non-empty one-dimensional array of finite numbers, else raise."""
    levels = check_finite_array("levels", levels, ndim=1)
    if not levels.size:
        raise ValueError("levels must hold at least one level")
    return levels


def read_frontier_record(path: str | Path = FRONTIER_RECORD) -> dict:
    """The stamped frontier record in ``path`` (by default the book's), checked; a damaged one is refused naming the file."""

    def check(record: dict) -> dict:
        try:
            return _check_frontier_record(record)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None

    return read_stamped_record(path, check)


def profiles(record: dict) -> tuple[str, ...]:
    """The CPU profiles of the record's runs, in order (the record checked first)."""
    _check_frontier_record(record)
    return tuple(run["stamp"]["profile"] for run in record["runs"])


def block_paths(record: dict, profile: str, block: str, arm: str, reward: str = "partial",
                task: str = "mixed") -> list[dict]:
    """The paths of ``arm`` on ``task`` under ``reward`` in ``block`` of the run of ``profile``, in seed order (empty if not run)."""
    names = profiles(record)
    run = record["runs"][names.index(check_option("profile", profile, names))]
    check_option("block", block, tuple(BLOCKS))
    check_option("arm", arm, ARM_NAMES + ("mirror descent",))
    check_option("reward", reward, REWARDS)
    check_option("task", task, TASKS)
    entry = run["blocks"][block]
    pool = entry["paths"] + entry.get("mirror_descent", [])
    chosen = [path for path in pool
              if path["arm"] == arm and path["reward"] == reward and path.get("task", "mixed") == task]
    return sorted(chosen, key=lambda path: path["seed"])


@dataclass(frozen=True)
class ArmPaths:
    """One side of a comparison that need not share the other's block or task: an arm's paths in ``block`` on ``task``.

    The group-size comparisons pair a block's arm with the same arm in the long block (groups of
    8); the route comparisons pair an arm on the mixed task with itself on the decoupled task.
    Paths pair by seed, which fixes the base model, the prompts and the random stream.
    """

    block: str
    arm: str
    task: str = "mixed"

    def __post_init__(self) -> None:
        check_option("block", self.block, tuple(BLOCKS))
        check_option("arm", self.arm, ARM_NAMES + ("mirror descent",))
        check_option("task", self.task, TASKS)

    @property
    def label(self) -> str:
        """The arm's name with what sets this side apart, its group size or its task."""
        block = BLOCKS[self.block]
        if "slot_size" in block:
            return f"{self.arm}, G = {block['cells'][0].group_size}"
        return f"{self.arm}, {self.task} task" if "task" in block else self.arm


def _series(path: dict, name: str, panel: str) -> np.ndarray:
    return np.asarray(path["kl"] if name == "kl" else path[panel][name], dtype=float)


def value_at_level(path: dict, movement: str, measure: str, level: float, panel: str = "training") -> float | None:
    """``measure`` of ``panel`` where ``path``'s ``movement`` first reaches ``level`` (linear between kept points), or ``None``."""
    check_option("movement", movement, MOVEMENTS)
    check_option("measure", measure, COVERAGE_MEASURES + ("pass1",))
    check_option("panel", panel, PANELS)
    if not isinstance(path, dict) or "kl" not in path or not all(isinstance(path.get(name), dict) for name in PANELS):
        raise ValueError(f"path must be a path of the frontier record (with 'kl' and the panels {PANELS})")
    if not isinstance(level, (int, float)) or not math.isfinite(level):
        raise ValueError(f"level must be a finite number, got {level!r}")
    x, y = _series(path, movement, "training" if movement == "kl" else panel), _series(path, measure, panel)
    reached = np.flatnonzero(x >= level)
    if not len(reached):
        return None
    i = int(reached[0])
    if i == 0:
        return float(y[0])
    share = (level - x[i - 1]) / (x[i] - x[i - 1])
    return float(y[i - 1] + share * (y[i] - y[i - 1]))


@dataclass(frozen=True)
class MatchedComparison:
    """``first`` minus ``second`` in ``measure`` at ``movement = level``, over the ``seeds`` where both reach it.

    ``interval`` is ``None`` where fewer than :data:`MIN_SEEDS` seeds pair.
    """

    first: str
    second: str
    movement: str
    level: float
    measure: str
    panel: str
    seeds: tuple[int, ...]
    interval: PairedInterval | None

    @property
    def verdict(self) -> int:
        """``+1`` or ``-1`` where the interval excludes zero, else ``0`` (the study cannot tell)."""
        return 0 if self.interval is None else self.interval.verdict

    @property
    def summary(self) -> str:
        """``median [low, high]``, or the seed count where there are too few for an interval."""
        if self.interval is None:
            return f"{len(self.seeds)} seeds reach it"
        return self.interval.summary


def _side(name: str, side: object, block: str) -> ArmPaths:
    """``side`` as a :class:`ArmPaths`: an arm name means that arm in ``block`` on the mixed task."""
    if isinstance(side, ArmPaths):
        return side
    return ArmPaths(block, check_text(name, side))


def matched_comparison(record: dict, profile: str, first: str | ArmPaths, second: str | ArmPaths, level: float, *,
                       movement: str = "pass1", measure: str = "pass@256", panel: str = "training",
                       block: str = "long", reward: str = "partial") -> MatchedComparison:
    """``first`` minus ``second`` (arm names in ``block``, ``"mirror descent"``, or :class:`ArmPaths`) at matched ``movement``, paired by seed."""
    sides = _side("first", first, block), _side("second", second, block)
    values = []
    for side in sides:
        paths = {path["seed"]: value_at_level(path, movement, measure, level, panel)
                 for path in block_paths(record, profile, side.block, side.arm, reward, side.task)}
        if not paths:
            raise ValueError(f"arm {side.arm!r} has no runs on the {side.task} task in block {side.block!r} "
                             f"under reward {reward!r}")
        values.append(paths)
    seeds = tuple(sorted(s for s in values[0] if values[1].get(s) is not None and values[0][s] is not None))
    differences = np.array([values[0][s] - values[1][s] for s in seeds])
    interval = sign_test_interval(differences) if len(seeds) >= MIN_SEEDS else None
    labels = tuple(side if isinstance(side, str) else side.label for side in (first, second))
    return MatchedComparison(*labels, movement, float(level), measure, panel, seeds, interval)


def matched_verdict(record: dict, first: str, second: str, level: float, **options: str) -> int:
    """The verdict of :func:`matched_comparison` if every profile of ``record`` gives the same one, else 0."""
    return _agreed(_comparisons(record, first, second, level, options))


def _agreed(comparisons: list[MatchedComparison]) -> int:
    """The verdict the comparisons (one per profile) share, else 0."""
    verdicts = {comparison.verdict for comparison in comparisons}
    return verdicts.pop() if len(verdicts) == 1 else 0


def median_frontier(record: dict, profile: str, arm: str, levels, *, movement: str = "pass1",
                    measure: str = "pass@256", panel: str = "training", block: str = "long",
                    reward: str = "partial") -> np.ndarray:
    """``[len(levels), 4]``: per level, the median, lower and upper quartiles of ``measure`` over the seeds that reach it, and their count.

    Levels that fewer than half the seeds reach get NaN statistics.
    """
    levels = _check_levels(levels)
    paths = block_paths(record, profile, block, arm, reward)
    rows = []
    for level in levels:
        values = [v for v in (value_at_level(p, movement, measure, float(level), panel) for p in paths) if v is not None]
        if not values or 2 * len(values) < len(paths):
            rows.append((np.nan, np.nan, np.nan, len(values)))
        else:
            low, mid, high = np.percentile(values, [25, 50, 75])
            rows.append((mid, low, high, len(values)))
    return np.array(rows, dtype=float)


def collapse_onset(record: dict, profile: str, arm: str, *, panel: str = "training", block: str = "long",
                   reward: str = "partial") -> tuple[int, int, float | None]:
    """``(seeds that lost, seeds, median first loss step)``: the optimizer step at which exact pass@256 of the hard prompts first fell more than :data:`~covpo.labs.transformer.frontier.ONSET_DROP` below the base model's.

    The median is over the seeds that lost (``None`` if none did). For ``"mirror descent"`` the
    step counts exact resets.
    """
    check_option("panel", panel, PANELS)
    paths = block_paths(record, profile, block, arm, reward)
    steps = [path[panel]["first_loss_step"] for path in paths]
    lost = [step for step in steps if step is not None]
    return len(lost), len(steps), (float(np.median(lost)) if lost else None)


def inner_accuracy(record: dict, profile: str, arm: str, block: str, tolerance: float = math.log(2)) -> dict:
    """The inner loops of an APMD arm in ``block``: median fraction closed, median final accumulated KL, seeds within ``tolerance``.

    The accumulated inner KL ``sum_t delta_t`` is what the paper's APMD guarantee asks to stay
    small (section 3); the tolerance is ours (``log 2``, the factor of two of the book's "keeps
    coverage"), because the paper's constant is not restated here.
    """
    tolerance = check_positive("tolerance", tolerance)
    paths = block_paths(record, profile, block, arm)
    if not paths or "inner" not in paths[0]:
        raise ValueError(f"arm {arm!r} has no inner-loop measurements in block {block!r}")
    closed = np.median([path["inner"]["closed"] for path in paths])
    total = np.array([path["inner"]["total"] for path in paths])
    return {"closed": float(closed), "accumulated": float(np.median(total)),
            "within": int((total <= tolerance).sum()), "seeds": len(paths)}


def frontier_arms_table() -> Table:
    """Every arm of the frontier study: its loss, ``beta``, reference and optimizer state, and learning rate."""
    names = tuple(dict.fromkeys(LONG_ARMS + SPLIT_ARMS + BINARY_ARMS))
    rows = []
    for method in default_arms(OPTIMIZER_STEPS, names):
        loss = LOSSES[method.family] + (", exact reward" if method.exact_reward else "")
        rows.append((method.name, loss, f"{method.beta:g}", reference_text(method), f"{method.learning_rate:g}"))
    return Table(("arm", "loss", "$\\beta$", "reference", "learning rate"), tuple(rows),
                 caption="The frontier study's arms: one loop, one learning rate, the same optimizer steps per run",
                 notes=(f"{OPTIMIZER_STEPS} Adam steps per run in every block",))


VERDICT_WORDS = {1: "first higher", -1: "second higher", 0: "cannot tell"}
"""The words of a verdict that holds under every profile of a record."""


def _comparisons(record: dict, first: str, second: str, level: float, options: dict) -> list[MatchedComparison]:
    return [matched_comparison(record, profile, first, second, level, **options) for profile in profiles(record)]


def comparison_cell(record: dict, first: str, second: str, level: float, **options: str) -> str:
    """A table cell: the first profile's ``median [interval]`` and the verdict that holds under every profile.

    Where fewer than :data:`MIN_SEEDS` seeds reach the level under some profile, the cell says
    how many do.
    """
    comparisons = _comparisons(record, first, second, level, options)
    if any(comparison.interval is None for comparison in comparisons):
        return f"{min(len(comparison.seeds) for comparison in comparisons)} seeds reach it"
    return f"{comparisons[0].summary}, {VERDICT_WORDS[_agreed(comparisons)]}"


def comparison_text(record: dict, first: str, second: str, level: float, **options: str) -> str:
    """The comparison in words for the prose: the median and interval under every profile, e.g. ``+0.12 [+0.03, +0.20] (second profile +0.10 [+0.01, +0.22])``."""
    comparisons = _comparisons(record, first, second, level, options)
    texts = [comparison.summary for comparison in comparisons]
    others = "; ".join(f"{profile} profile {text}" for profile, text in zip(profiles(record)[1:], texts[1:]))
    return texts[0] + (f" ({others})" if others else "")


def frontier_table(record: dict, pairs: tuple[tuple[str | ArmPaths, str | ArmPaths], ...], levels: tuple[float, ...], *,
                   movement: str = "pass1", measure: str = "pass@256", panel: str = "training",
                   block: str = "long", reward: str = "partial") -> Table:
    """Each pair ``(first, second)`` at each level: :func:`comparison_cell`, one column per level."""
    if isinstance(pairs, str) or not isinstance(pairs, (tuple, list)) or not pairs or not all(
            isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in pairs):
        raise ValueError(f"pairs must be a non-empty tuple of (first, second) arm names, got {pairs!r:.80}")
    levels = _check_levels(levels)
    options = dict(movement=movement, measure=measure, panel=panel, block=block, reward=reward)
    rows = tuple((" $-$ ".join(side if isinstance(side, str) else side.label for side in (first, second)),
                  *(comparison_cell(record, first, second, level, **options) for level in levels))
                 for first, second in pairs)
    matched = "pass@1" if movement == "pass1" else "KL"
    reward_text = "partial credit" if reward == "partial" else "binary reward"
    return Table(("arms", *(f"{matched} = {level:g}" for level in levels)), rows,
                 caption=f"{measure} of hard {panel} prompts, first arm minus second, at matched "
                         f"{'pass@1' if movement == 'pass1' else 'KL to the base model'} ({reward_text})",
                 notes=(f"median [sign-test interval] under the {profiles(record)[0]} CPU profile, paired by seed over the "
                        "seeds where both arms reach the level; the verdict holds under every profile the record keeps, "
                        "else 'cannot tell'; $+0.00$ is above zero by less than 0.005",))


def ended_below(record: dict, profile: str, arm: str, *, panel: str = "training", block: str = "long",
                reward: str = "partial") -> tuple[int, int]:
    """``(seeds, of)``: the seeds whose pass@256 of hard prompts ended more than :data:`~covpo.labs.transformer.frontier.ONSET_DROP` below the base model's."""
    check_option("panel", panel, PANELS)
    paths = block_paths(record, profile, block, arm, reward)
    below = [path[panel]["pass@256"][-1] < path[panel]["pass@256"][0] - ONSET_DROP for path in paths]
    return sum(below), len(below)


def onset_table(record: dict, arms: tuple[str, ...], *, block: str = "long", reward: str = "partial") -> Table:
    """Per arm and profile: in how many seeds pass@256 of hard training prompts fell below the base model's, from which step, and where it ended."""
    arms = _check_arms("arms", arms)
    rows = []
    for arm in arms:
        cells = []
        for profile in profiles(record):
            lost, seeds, step = collapse_onset(record, profile, arm, block=block, reward=reward)
            cells.append(f"{lost} of {seeds}" + (f", step {step:g}" if step is not None else ""))
            cells.append("{} of {}".format(*ended_below(record, profile, arm, block=block, reward=reward)))
        rows.append((arm, *cells))
    columns = tuple(f"{profile}: {what}" for profile in profiles(record) for what in ("fell, from step", "ended below"))
    return Table(("arm", *columns), tuple(rows),
                 caption=f"Seeds whose pass@256 of hard training prompts fell more than {ONSET_DROP:g} below the base "
                         "model's (median optimizer step at which it first did), and seeds in which it ended there",
                 notes=("mirror descent: steps count exact resets",))


SPLIT_BLOCKS = ("long", "48x16", "24x32")
"""The blocks that split the same optimizer steps into outer and inner steps differently (groups of 8, the mixed task)."""


def _check_blocks(blocks: object) -> tuple[str, ...]:
    """``blocks`` as a tuple if it is a non-empty sequence of block names, else raise naming ``blocks``."""
    if isinstance(blocks, str) or not isinstance(blocks, (tuple, list)) or not blocks:
        raise ValueError(f"blocks must be a non-empty tuple of block names, got {blocks!r}")
    for block in blocks:
        check_option("blocks", block, tuple(BLOCKS))
    return tuple(blocks)


def inner_table(record: dict, arms: tuple[str, ...], blocks: tuple[str, ...] = SPLIT_BLOCKS) -> Table:
    """Per block, arm and profile: the inner loops' median fraction closed and accumulated KL, and where the run ended."""
    arms = _check_arms("arms", arms)
    blocks = _check_blocks(blocks)
    rows = []
    for profile in profiles(record):
        for block in blocks:
            for arm in arms:
                paths = block_paths(record, profile, block, arm)
                if not paths:
                    continue
                inner = inner_accuracy(record, profile, arm, block)
                ends = [np.median([path["training"][name][-1] for path in paths]) for name in ("pass1", "pass@256")]
                rows.append((profile, block, arm, f"{inner['closed']:.2f}", f"{inner['accumulated']:.3f}",
                             f"{ends[0]:.2f}", f"{ends[1]:.2f}"))
    return Table(("CPU profile", "outer x inner steps", "arm", "fraction closed", "accumulated inner KL",
                  "pass@1 at the end", "pass@256 at the end"), tuple(rows),
                 caption="The inner loops at a fixed 768 optimizer steps: medians over seeds, training prompts",
                 notes=("fraction closed: median over outer steps of "
                        "$1 - \\mathrm{KL}(\\pi_{t+1} \\Vert \\pi^\\star_{t+1}) / \\mathrm{KL}(\\pi_t \\Vert \\pi^\\star_{t+1})$; "
                        "accumulated inner KL: $\\sum_t \\mathrm{KL}(\\pi_{t+1} \\Vert \\pi^\\star_{t+1})$",))


def condition_counts(record: dict, profile: str, arm: str, block: str) -> dict:
    """The KL form of the inner-loop condition summed over an APMD arm's seeds in ``block`` (:func:`~covpo.labs.transformer.frontier.inner_condition`).

    Returns the counts over every seed's hard training prompts (``hard``, ``met``,
    ``kept_half``, ``met_and_lost``, ``violations``), the seeds, and the median over seeds of
    each seed's median accumulated loss against the targets (``error``).
    """
    paths = block_paths(record, profile, block, arm)
    if not paths or "condition" not in paths[0].get("inner", {}):
        raise ValueError(f"arm {arm!r} has no inner-loop condition in block {block!r}")
    conditions = [path["inner"]["condition"] for path in paths]
    counts = {name: sum(condition[name] for condition in conditions)
              for name in ("hard", "met", "kept_half", "met_and_lost", "violations")}
    return {**counts, "seeds": len(paths), "error": float(np.median([condition["error"] for condition in conditions]))}


def condition_table(record: dict, arms: tuple[str, ...], blocks: tuple[str, ...] = SPLIT_BLOCKS) -> Table:
    """Per block, arm and profile: hard training prompts that meet the KL form of the condition, and that keep half their coverage."""
    arms = _check_arms("arms", arms)
    blocks = _check_blocks(blocks)
    rows = []
    for block in blocks:
        for arm in arms:
            cells = []
            for profile in profiles(record):
                if not block_paths(record, profile, block, arm):
                    break
                counts = condition_counts(record, profile, arm, block)
                cells += [f"{counts['met']} of {counts['hard']}", f"{counts['kept_half']} of {counts['hard']}",
                          f"{counts['error']:.2f}"]
            if cells:
                rows.append((block, arm, *cells))
    columns = tuple(f"{profile}: {what}" for profile in profiles(record)
                    for what in ("condition met", "kept half", "median loss to targets"))
    return Table(("outer x inner steps", "arm", *columns), tuple(rows),
                 caption="The inner-loop condition in its KL form on every seed's hard training prompts, "
                         "against what their coverage did",
                 notes=("condition met: $\\sum_t -\\log(1 - \\sqrt{2\\delta_t / c^\\star_{t+1}}) \\le \\log 2$ over "
                        "the run (our reconstruction); kept half: coverage never below half the base model's; "
                        "loss to targets: $\\sum_t \\log(c^\\star_{t+1} / c_{t+1})$ in nats, median over prompts, "
                        "then over seeds",))
