"""Chapter 7 at longer inner loops: the record ``scripts/transformer_inner_steps.py`` writes, and what the chapter reads from it.

The paper's APMD guarantee (section 3) asks every outer step to solve its KL-regularized
subproblem accurately. The book's study takes :data:`~covpo.labs.transformer.experiment.SIZES`'
``inner_steps`` optimizer steps per outer step and measures how much of each step's distance to
its target they close (:meth:`~covpo.labs.transformer.experiment.TransformerStudy.distance_closed`).
The script reruns the mixed task's fixed-reference and APMD arms (:data:`ARMS`) at longer inner
loops on the full study's seeds, once per CPU profile, and keeps per inner-loop length ``K`` a
block (:func:`inner_steps_block`): the costs, each APMD arm's median fraction closed, and, for
every comparison of :data:`COMPARISONS`, the paired differences seed by seed in pass@256 of hard
training and held-out prompts. A record is ``{"runs": [run, ...]}``, one run per profile, each
with its blocks. The package keeps the record the script wrote for the book
(:data:`BOOK_RECORD`); chapter 7 tabulates it (:func:`inner_steps_table`) and checks its sentences
on longer inner loops against the sign-test intervals (:func:`inner_steps_interval`).
"""

from __future__ import annotations

import math
from importlib.resources import files
from pathlib import Path

import numpy as np

from covpo.table import Table
from covpo.validation import check_count, check_instance, check_option, check_positive

from .analysis import BASE, METRICS, Comparison, Side, side_values
from .experiment import TransformerStudy
from .methods import STRONG_ARM, WEAK_ARM
from .paired import PairedInterval, sign_test_interval
from .records import read_record

ARMS = (WEAK_ARM, STRONG_ARM, "APMD", "APMD, exact target")
"""The arms the script runs on the mixed task at every inner-loop length."""
APMD_ARMS = ("APMD", "APMD, exact target")
"""The arms whose inner loops target the mirror-descent step, and whose fraction closed a block keeps."""
INNER_STEPS_METRICS = METRICS[:2]
"""The metrics whose paired differences a block keeps, pass@256 on hard training and held-out prompts."""
COMPARISONS = tuple(Comparison(f"{first} - {second}", Side(first), Side(second)) for first, second in (
    ("APMD", BASE), ("APMD", STRONG_ARM), ("APMD", WEAK_ARM),
    ("APMD, exact target", BASE), ("APMD, exact target", "APMD"), (WEAK_ARM, BASE)))
"""The paired comparisons a block keeps (first minus second, seed by seed)."""
BLOCK_COUNTS = ("inner_steps", "seeds", "responses", "gradient_steps")
BOOK_RECORD = Path(str(files(__package__) / "inner_steps_record.json"))
"""The record chapter 7 reads, written by the script at full size under the book's two CPU profiles."""


def inner_steps_block(study: TransformerStudy, seconds: float) -> dict:
    """One inner-loop length's measurements from ``study`` (a run of :data:`ARMS` on the mixed task), as JSON-ready data.

    ``seconds`` is how long the study took. The block holds the inner-loop length, the seeds,
    the responses and gradient steps per run, ``closed`` (each of :data:`APMD_ARMS` to the median
    over its runs and steps of the fraction of each outer step's distance its inner loop closed)
    and ``differences`` (each comparison's label to each metric of :data:`INNER_STEPS_METRICS` to
    the differences, in seed order).
    """
    check_instance("study", study, TransformerStudy)
    seconds = check_positive("seconds", seconds)
    fraction_closed = study.distance_closed()
    differences = {}
    for comparison in COMPARISONS:
        by_metric = {}
        for metric in INNER_STEPS_METRICS:
            first, second = side_values(study, comparison.first, metric), side_values(study, comparison.second, metric)
            if first is None or second is None:
                raise ValueError(f"study must run {ARMS} on the mixed task, got no runs for {comparison.label!r}")
            by_metric[metric] = (first - second).tolist()
        differences[comparison.label] = by_metric
    return {
        "inner_steps": study.setup.inner_steps, "seconds": round(seconds, 1), "seeds": len(study.seeds),
        "responses": study.setup.responses, "gradient_steps": study.setup.gradient_steps,
        "closed": {arm: float(np.median(fraction_closed[study.runs("mixed", arm)])) for arm in APMD_ARMS},
        "differences": differences,
    }


def _finite_floats(values: object, count: int) -> bool:
    """Whether ``values`` is a list of ``count`` finite floats."""
    return (isinstance(values, list) and len(values) == count
            and all(isinstance(value, float) and math.isfinite(value) for value in values))


def _block_problem(block: object) -> str | None:
    """What is wrong with ``block`` as an :func:`inner_steps_block`, or ``None``."""
    if not isinstance(block, dict):
        return "a mapping"
    if any(isinstance(block.get(name), bool) or not isinstance(block.get(name), int) or block[name] < 1
           for name in BLOCK_COUNTS):
        return f"with positive integer counts {BLOCK_COUNTS}"
    closed = block.get("closed")
    if not isinstance(closed, dict) or not _finite_floats([closed.get(arm) for arm in APMD_ARMS], len(APMD_ARMS)):
        return f"with a finite fraction closed for each of {APMD_ARMS}"
    differences = block.get("differences")
    for comparison in COMPARISONS:
        by_metric = differences.get(comparison.label) if isinstance(differences, dict) else None
        for metric in INNER_STEPS_METRICS:
            if not _finite_floats(by_metric.get(metric) if isinstance(by_metric, dict) else None, block["seeds"]):
                return f"with {block['seeds']} finite differences for {comparison.label!r} in {metric!r}"
    return None


def _problem(record: object) -> str | None:
    """What is wrong with ``record`` as a record of :func:`inner_steps_block` runs, or ``None``."""
    if not isinstance(record, dict) or not isinstance(record.get("runs"), list) or not record["runs"]:
        return "a mapping with a non-empty list 'runs'"
    for r, run in enumerate(record["runs"]):
        if not isinstance(run, dict) or not isinstance(run.get("profile"), str):
            return f"runs[{r}] with a string 'profile'"
        if not isinstance(run.get("blocks"), list) or not run["blocks"]:
            return f"runs[{r}] with a non-empty list 'blocks'"
        for b, block in enumerate(run["blocks"]):
            if (problem := _block_problem(block)) is not None:
                return f"runs[{r}]['blocks'][{b}] {problem}"
    return None


def check_inner_steps_record(record: object) -> dict:
    """``record`` if it is a record of :func:`inner_steps_block` runs, else raise ``ValueError`` naming what is wrong."""
    problem = _problem(record)
    if problem is not None:
        raise ValueError(f"record must be {problem}")
    return record


def read_inner_steps_record(path: str | Path = BOOK_RECORD) -> dict:
    """The record in the JSON file ``path`` (by default the book's, :data:`BOOK_RECORD`), checked (:func:`check_inner_steps_record`)."""
    return read_record(path, check_inner_steps_record)


def _block(record: dict, profile: str, inner_steps: int) -> dict:
    profiles = tuple(run["profile"] for run in record["runs"])
    run = record["runs"][profiles.index(check_option("profile", profile, profiles))]
    lengths = tuple(block["inner_steps"] for block in run["blocks"])
    inner_steps = check_count("inner_steps", inner_steps)
    if inner_steps not in lengths:
        raise ValueError(f"inner_steps must be one of the record's {lengths}, got {inner_steps!r}")
    return run["blocks"][lengths.index(inner_steps)]


def inner_steps_interval(record: dict, profile: str, inner_steps: int, comparison: str, metric: str) -> PairedInterval:
    """The median paired difference and sign-test interval of ``comparison`` (a label of :data:`COMPARISONS`) in ``metric``.

    From the run of ``record`` under ``profile`` at ``inner_steps`` inner steps.
    """
    record = check_inner_steps_record(record)
    check_option("comparison", comparison, tuple(c.label for c in COMPARISONS))
    check_option("metric", metric, INNER_STEPS_METRICS)
    return _interval(_block(record, profile, inner_steps), comparison, metric)


def _interval(block: dict, comparison: str, metric: str) -> PairedInterval:
    return sign_test_interval(np.asarray(block["differences"][comparison][metric]))


def inner_steps_closed(record: dict, profile: str, inner_steps: int, arm: str) -> float:
    """The median fraction of each outer step's distance that ``arm``'s inner loop closed, under ``profile`` at ``inner_steps``."""
    record = check_inner_steps_record(record)
    check_option("arm", arm, APMD_ARMS)
    return _block(record, profile, inner_steps)["closed"][arm]


TABLE_COMPARISONS = (("APMD, exact target - base model", METRICS[0]), ("APMD, exact target - base model", METRICS[1]),
                     ("APMD - base model", METRICS[0]), ("APMD - base model", METRICS[1]))


def inner_steps_table(record: dict) -> Table:
    """Every run and inner-loop length of ``record``: costs, the APMD arms' fraction closed, their paired differences from the base model."""
    record = check_inner_steps_record(record)
    rows = []
    for run in record["runs"]:
        for block in run["blocks"]:
            intervals = [_interval(block, label, metric) for label, metric in TABLE_COMPARISONS]
            rows.append((run["profile"], block["inner_steps"], block["gradient_steps"], block["seeds"],
                         f"{block['closed']['APMD, exact target']:.2f}", f"{block['closed']['APMD']:.2f}",
                         *(interval.summary for interval in intervals)))
    level = intervals[0].level
    return Table(("CPU profile", "$K$", "gradient steps per run", "seeds", "closed, exact target", "closed, APMD",
                  "exact target $-$ base, training", "exact target $-$ base, held-out", "APMD $-$ base, training",
                  "APMD $-$ base, held-out"), tuple(rows),
                 caption="Longer inner loops on the mixed task: median fraction of each outer step's distance "
                         "closed, and pass@256 of hard prompts minus the base model's",
                 notes=(f"paired differences over seeds: median [sign-test interval, level {level:.0%}]; "
                        "$-0.00$ is below zero by less than 0.005",
                        "partial credit; the same responses per run at every $K$",
                        "CPU profile: the name the script's run gave the rounding it ran under (default: the "
                        "machine's own; second: vector instructions capped)"))
