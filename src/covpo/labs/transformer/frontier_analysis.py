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
from covpo.validation import check_option, check_probability, check_text

from .analysis import LOSSES, reference_text
from .frontier import BINARY_ARMS, BLOCKS, FRONTIER_RECORD, LONG_ARMS, OPTIMIZER_STEPS, PANELS, PASS_KS, SPLIT_ARMS
from .methods import default_arms
from .paired import PairedInterval, sign_test_interval

COVERAGE_MEASURES = (*(f"pass@{k}" for k in PASS_KS[1:]), "log10_coverage", "near")
"""The measures of a panel a comparison can difference."""
MOVEMENTS = ("pass1", "kl")
"""What a comparison matches: reward (exact pass@1 over the panel's prompts) or KL divergence to the base model."""
MIN_SEEDS = 6
"""The fewest paired seeds that give a 95% sign-test interval."""


def _check_frontier_record(record: dict) -> dict:
    """``record`` if every run holds every block of :data:`~covpo.labs.transformer.frontier.BLOCKS` with paths, else raise."""
    for r, run in enumerate(record["runs"]):
        blocks = run.get("blocks")
        if not isinstance(blocks, dict) or set(blocks) != set(BLOCKS):
            raise ValueError(f"record runs[{r}] must hold the blocks {tuple(BLOCKS)}")
        for name, block in blocks.items():
            if not isinstance(block.get("paths"), list) or not block["paths"]:
                raise ValueError(f"record runs[{r}] block {name!r} must hold a non-empty list of paths")
    return record


def read_frontier_record(path: str | Path = FRONTIER_RECORD) -> dict:
    """The stamped frontier record in ``path`` (by default the book's), checked."""
    return read_stamped_record(path, _check_frontier_record)


def profiles(record: dict) -> tuple[str, ...]:
    """The CPU profiles of the record's runs, in order."""
    return tuple(run["stamp"]["profile"] for run in record["runs"])


def block_paths(record: dict, profile: str, block: str, arm: str, reward: str = "partial") -> list[dict]:
    """The paths of ``arm`` under ``reward`` in ``block`` of the run of ``profile``, in seed order (empty if not run)."""
    run = record["runs"][profiles(record).index(check_option("profile", profile, profiles(record)))]
    check_option("block", block, tuple(BLOCKS))
    entry = run["blocks"][block]
    pool = entry["paths"] + entry.get("mirror_descent", [])
    chosen = [path for path in pool if path["arm"] == arm and path["reward"] == reward]
    return sorted(chosen, key=lambda path: path["seed"])


def _series(path: dict, name: str, panel: str) -> np.ndarray:
    return np.asarray(path["kl"] if name == "kl" else path[panel][name], dtype=float)


def value_at_level(path: dict, movement: str, measure: str, level: float, panel: str = "training") -> float | None:
    """``measure`` of ``panel`` where ``path``'s ``movement`` first reaches ``level`` (linear between kept points), or ``None``."""
    check_option("movement", movement, MOVEMENTS)
    check_option("measure", measure, COVERAGE_MEASURES + ("pass1",))
    check_option("panel", panel, PANELS)
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


def matched_comparison(record: dict, profile: str, first: str, second: str, level: float, *,
                       movement: str = "pass1", measure: str = "pass@256", panel: str = "training",
                       block: str = "long", reward: str = "partial") -> MatchedComparison:
    """``first`` minus ``second`` (arm names, or ``"mirror descent"``) at matched ``movement``, paired by seed."""
    check_text("first", first)
    check_text("second", second)
    values = []
    for arm in (first, second):
        paths = {path["seed"]: value_at_level(path, movement, measure, level, panel)
                 for path in block_paths(record, profile, block, arm, reward)}
        if not paths:
            raise ValueError(f"arm {arm!r} has no runs in block {block!r} under reward {reward!r}")
        values.append(paths)
    seeds = tuple(sorted(s for s in values[0] if values[1].get(s) is not None and values[0][s] is not None))
    differences = np.array([values[0][s] - values[1][s] for s in seeds])
    interval = sign_test_interval(differences) if len(seeds) >= MIN_SEEDS else None
    return MatchedComparison(first, second, movement, float(level), measure, panel, seeds, interval)


def matched_verdict(record: dict, first: str, second: str, level: float, **options: str) -> int:
    """The verdict of :func:`matched_comparison` if every profile of ``record`` gives the same one, else 0."""
    verdicts = {matched_comparison(record, profile, first, second, level, **options).verdict
                for profile in profiles(record)}
    return verdicts.pop() if len(verdicts) == 1 else 0


def median_frontier(record: dict, profile: str, arm: str, levels, *, movement: str = "pass1",
                    measure: str = "pass@256", panel: str = "training", block: str = "long",
                    reward: str = "partial") -> np.ndarray:
    """``[len(levels), 4]``: per level, the median, lower and upper quartiles of ``measure`` over the seeds that reach it, and their count.

    Levels that fewer than half the seeds reach get NaN statistics.
    """
    paths = block_paths(record, profile, block, arm, reward)
    rows = []
    for level in np.asarray(levels, dtype=float):
        values = [v for v in (value_at_level(p, movement, measure, float(level), panel) for p in paths) if v is not None]
        if 2 * len(values) < len(paths):
            rows.append((np.nan, np.nan, np.nan, len(values)))
        else:
            low, mid, high = np.percentile(values, [25, 50, 75])
            rows.append((mid, low, high, len(values)))
    return np.array(rows, dtype=float)


def collapse_onset(record: dict, profile: str, arm: str, *, panel: str = "training", block: str = "long",
                   reward: str = "partial") -> tuple[int, int, float | None]:
    """``(seeds that lost, seeds, median first loss step)``: the optimizer step at which some hard prompt fell below half its base coverage.

    The median is over the seeds that lost (``None`` if none did). For ``"mirror descent"`` the
    step counts exact resets.
    """
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
    tolerance = check_probability("tolerance", tolerance) if tolerance <= 1 else float(tolerance)
    paths = block_paths(record, profile, block, arm)
    if not paths or "inner" not in paths[0]:
        raise ValueError(f"arm {arm!r} has no inner-loop measurements in block {block!r}")
    closed = np.median([np.median(path["inner"]["closed"]) for path in paths])
    total = np.array([path["inner"]["accuracy_sum"][-1] for path in paths])
    return {"closed": float(closed), "accumulated": float(np.median(total)),
            "within": int((total <= tolerance).sum()), "seeds": len(paths)}


def matched_table(record: dict, rows: tuple[tuple[str, str, float], ...], *, movement: str = "pass1",
                  measure: str = "pass@256", panel: str = "training", block: str = "long",
                  reward: str = "partial") -> Table:
    """For each ``(first, second, level)`` of ``rows``: the paired difference at the matched level under every profile."""
    columns = []
    for profile in profiles(record):
        columns += [f"{profile}: median [interval]", f"{profile}: seeds"]
    body = []
    for first, second, level in rows:
        cells = []
        for profile in profiles(record):
            comparison = matched_comparison(record, profile, first, second, level, movement=movement,
                                            measure=measure, panel=panel, block=block, reward=reward)
            cells += [comparison.summary, str(len(comparison.seeds))]
        body.append((f"{first} $-$ {second}", f"{level:g}", *cells))
    matched = "pass@1" if movement == "pass1" else "KL to the base model"
    return Table(("arms", matched, *columns), tuple(body),
                 caption=f"{measure} of hard {panel} prompts, first arm minus second, at matched {matched}",
                 notes=("paired by seed (one seed per base model) over the seeds where both arms reach the level; "
                        "sign-test interval, level at least 95%",))


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
