"""Chapter 7's route and group-size comparisons at the full study's seeds, as the record ``scripts/transformer_route.py`` writes.

If cross-prompt transfer (the easy prompts' rule is the hard prompts' near miss) were the route
by which post-training loses the hard prompts' correct answers, the hard-only and decoupled
tasks would lose less coverage than the mixed one. The book's study answers that, and whether a
larger group keeps the rare answer at a fixed response budget, on its own seeds; at that size
which intervals exclude zero changes with the CPU's rounding. The script runs the cells these
comparisons need (:func:`route_cells`) on the full study's seeds, once per rounding, and keeps,
for every comparison of :data:`ROUTE_COMPARISONS`, the paired differences seed by seed in
pass@256 of hard training and held-out prompts (:func:`route_run`). A record is
``{"runs": [run, ...]}``, one run per rounding. The package keeps the record the script wrote
for the book (:data:`ROUTE_RECORD`); chapter 7 tabulates it (:func:`route_table`) and checks its
sentences on the route against the sign-test intervals (:func:`route_interval`).
"""

from __future__ import annotations

import math
from importlib.resources import files
from pathlib import Path

import numpy as np

from covpo.table import Table
from covpo.validation import check_instance, check_option, check_positive, check_text

from .analysis import METRICS, chapter_comparisons, paired_differences
from .experiment import GROUP_SIZES, ROUTE_ARMS, TASKS, Cell, TransformerStudy
from .methods import WEAK_ARM
from .paired import PairedInterval, sign_test_interval
from .records import read_record

ROUTE_METRICS = METRICS[:2]
"""The metrics whose paired differences a run keeps, pass@256 on hard training and held-out prompts."""
ROUTE_COMPARISONS = tuple(comparison for comparison in chapter_comparisons()
                          if comparison.minus is not None or comparison.first.group_size != 8)
"""Chapter 7's task comparisons (each arm's loss on the hard-only or decoupled task minus its loss
on the mixed one, seed by seed) and group-size comparisons (the weak arm at larger groups minus
groups of 8)."""
ROUTE_RECORD = Path(str(files(__package__) / "route_record.json"))
"""The record chapter 7 reads, written by the script at full size under four roundings."""


def route_cells() -> tuple[Cell, ...]:
    """The cells :data:`ROUTE_COMPARISONS` need: :data:`~covpo.labs.transformer.experiment.ROUTE_ARMS` on every task, the weak arm at every group size."""
    return (tuple(Cell(task, arm) for task in TASKS for arm in ROUTE_ARMS)
            + tuple(Cell("mixed", WEAK_ARM, group) for group in GROUP_SIZES[1:]))


def route_run(study: TransformerStudy, profile: str, seconds: float) -> dict:
    """The differences of every comparison of :data:`ROUTE_COMPARISONS` in ``study``, as one JSON-ready run of a record.

    ``profile`` names the rounding the study ran under and ``seconds`` is how long it took. The
    run holds both, the number of seeds, and ``differences``: each comparison's label to each
    metric of :data:`ROUTE_METRICS` to the paired differences, in seed order.
    """
    check_instance("study", study, TransformerStudy)
    check_text("profile", profile)
    seconds = check_positive("seconds", seconds)
    differences = {}
    for comparison in ROUTE_COMPARISONS:
        by_metric = {}
        for metric in ROUTE_METRICS:
            difference = paired_differences(study, comparison, metric)
            if difference is None:
                raise ValueError(f"study must run route_cells(), got no runs for {comparison.label!r}")
            by_metric[metric] = difference.tolist()
        differences[comparison.label] = by_metric
    return {"profile": profile, "seconds": round(seconds, 1), "seeds": len(study.seeds), "differences": differences}


def _finite_floats(values: object, count: int) -> bool:
    """Whether ``values`` is a list of ``count`` finite floats."""
    return (isinstance(values, list) and len(values) == count
            and all(isinstance(value, float) and math.isfinite(value) for value in values))


def _run_problem(run: object) -> str | None:
    """What is wrong with ``run`` as a :func:`route_run`, or ``None``."""
    if not isinstance(run, dict) or not isinstance(run.get("profile"), str) or not run["profile"]:
        return "a mapping with a non-empty string 'profile'"
    seeds = run.get("seeds")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        return "with a positive integer 'seeds'"
    differences = run.get("differences")
    for comparison in ROUTE_COMPARISONS:
        by_metric = differences.get(comparison.label) if isinstance(differences, dict) else None
        for metric in ROUTE_METRICS:
            if not _finite_floats(by_metric.get(metric) if isinstance(by_metric, dict) else None, seeds):
                return f"with {seeds} finite differences for {comparison.label!r} in {metric!r}"
    return None


def check_route_record(record: object) -> dict:
    """``record`` if it is a record of :func:`route_run` runs with distinct profiles, else raise ``ValueError`` naming what is wrong."""
    if not isinstance(record, dict) or not isinstance(record.get("runs"), list) or not record["runs"]:
        raise ValueError("record must be a mapping with a non-empty list 'runs'")
    for r, run in enumerate(record["runs"]):
        if (problem := _run_problem(run)) is not None:
            raise ValueError(f"record must have runs[{r}] {problem}")
    profiles = [run["profile"] for run in record["runs"]]
    if len(set(profiles)) != len(profiles):
        raise ValueError(f"record must name each profile once, got {profiles}")
    return record


def read_route_record(path: str | Path = ROUTE_RECORD) -> dict:
    """The record in the JSON file ``path`` (by default the book's, :data:`ROUTE_RECORD`), checked (:func:`check_route_record`)."""
    return read_record(path, check_route_record)


def route_profiles(record: dict) -> tuple[str, ...]:
    """The profiles of ``record``'s runs, in the record's order."""
    return tuple(run["profile"] for run in check_route_record(record)["runs"])


def route_interval(record: dict, profile: str, comparison: str, metric: str) -> PairedInterval:
    """The median paired difference and sign-test interval of ``comparison`` (a label of :data:`ROUTE_COMPARISONS`) in ``metric``, from the run of ``record`` under ``profile``."""
    profiles = route_profiles(record)
    check_option("profile", profile, profiles)
    check_option("comparison", comparison, tuple(c.label for c in ROUTE_COMPARISONS))
    check_option("metric", metric, ROUTE_METRICS)
    run = record["runs"][profiles.index(profile)]
    return sign_test_interval(np.asarray(run["differences"][comparison][metric]))


def route_table(record: dict) -> Table:
    """Every comparison of :data:`ROUTE_COMPARISONS` in both metrics, one column per run of ``record``."""
    profiles = route_profiles(record)
    rows, interval = [], None
    for comparison in ROUTE_COMPARISONS:
        for metric in ROUTE_METRICS:
            cells = []
            for profile in profiles:
                interval = route_interval(record, profile, comparison.label, metric)
                cells.append(interval.summary)
            rows.append((comparison.label, metric.removeprefix("pass@256, "), *cells))
    seeds = sorted({run["seeds"] for run in record["runs"]})
    return Table(("comparison", "pass@256 of", *profiles), tuple(rows),
                 caption="Which route loses coverage, at the full study's seeds: paired differences under every "
                         "rounding of the record",
                 notes=(f"median over {', '.join(map(str, seeds))} seeds [sign-test interval, level "
                        f"{interval.level:.0%}]; $-0.00$ is below zero by less than 0.005",
                        "a task comparison is the arm's loss on that task minus its loss on the mixed task "
                        "(each loss: the arm's metric minus its base model's); partial credit",
                        "columns: the CPU profile the script ran under (default: the machine's own; second: "
                        "vector instructions capped), on every core of a 2-core machine or on one"))
