"""The log detector's validation study: chapter 7's runs under a fixed reference and under resets, judged against exact coverage.

Chapter 8 reads this study's record (:data:`DIAGNOSE_RECORD`, written by
``scripts/diagnose_validation.py``): :func:`validation_run` pre-trains the chapter-7 base models,
post-trains the mixed task under :data:`VALIDATION_ARMS` (a fixed reference with a weak KL
penalty, and APMD, whose reference is reset to the current policy at every outer step, paper
section 3) for :data:`VALIDATION_SIZES` on every seed, writes every run as TRL logs and measures
the detector against the exact losses (:func:`covpo.labs.transformer.logs.detector_accuracy`).
The record keeps every run's accuracy row and the exact traces of the first
:data:`STORED_TRACES` seeds of each arm, from which the chapter writes and diagnoses logs itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from covpo.validation import check_flag, check_option

from .experiment import Cell, plan_study, transformer_study
from .logs import DetectorAccuracy, ExactTrace, RunAccuracy, detector_accuracy, exact_trace
from .methods import CARRIED_ARM, WEAK_ARM

#: The arms validated, a fixed reference (weak beta) and resets (APMD, Adam's state carried across resets).
VALIDATION_ARMS = (WEAK_ARM, CARRIED_ARM)
#: Entries replacing the book size's (:data:`~covpo.labs.transformer.experiment.SIZES`): 24 seeds of 48 outer steps.
VALIDATION_SIZES = {"n_steps": 48, "base_models": 6, "seeds_per_base": 4}
#: Seeds whose exact traces the record keeps, per arm (the first ones, 0..STORED_TRACES-1).
STORED_TRACES = 6
#: The record chapter 8 reads.
DIAGNOSE_RECORD = Path(__file__).with_name("diagnose_record.json")
#: The code the record's numbers depend on (its stamp hashes them).
RECORD_MODULES = (
    "covpo.diagnose", "covpo.rates", "covpo.labs.transformer.logs", "covpo.labs.transformer.diagnose_validation",
    "covpo.labs.transformer.experiment", "covpo.labs.transformer.model", "covpo.labs.transformer.task",
    "covpo.labs.transformer.sampling", "covpo.labs.transformer.exact", "covpo.labs.transformer.training",
    "covpo.labs.transformer.methods", "covpo.labs.transformer.passk",
)


def _check_sizes(sizes: object) -> dict:
    """``sizes`` as a dict (empty for ``None``), or raise naming ``sizes``; its entries are checked by ``plan_study``."""
    if sizes is None:
        return {}
    if not isinstance(sizes, Mapping):
        raise ValueError(f"sizes must be a mapping of entries of SIZES to counts, got {sizes!r}")
    return dict(sizes)


def validation_traces(*, sizes: dict | None = None, progress: bool = True) -> tuple[ExactTrace, ...]:
    """Every run of the validation study as an exact trace, arm by arm in :data:`VALIDATION_ARMS` order, seeds in order.

    ``sizes`` replaces entries of :data:`VALIDATION_SIZES` (the tests pass smaller ones).
    """
    progress = check_flag("progress", progress)
    cells = tuple(Cell("mixed", arm) for arm in VALIDATION_ARMS)
    plan = plan_study("book", cells=cells, sizes={**VALIDATION_SIZES, **_check_sizes(sizes)})
    study = transformer_study("book", cells=cells, plan=plan, progress=progress)
    return tuple(exact_trace(study, run, plan=plan) for run in range(study.run_cell.size))


def validation_run(*, sizes: dict | None = None, progress: bool = True) -> dict:
    """The record's run: every run's accuracy row, the first seeds' traces and the settings (see the module docstring)."""
    sizes = _check_sizes(sizes)
    # the record's traces as the chapter reads them back (rounded by to_json), so that its live rows match the record's
    traces = tuple(ExactTrace.from_json(trace.to_json()) for trace in validation_traces(sizes=sizes, progress=progress))
    accuracy = detector_accuracy(traces)
    return {
        "sizes": {**VALIDATION_SIZES, **sizes}, "settings": accuracy.settings,
        "runs": [run.to_json() for run in accuracy.runs],
        "traces": [trace.to_json() for trace in traces if trace.seed < STORED_TRACES],
    }


def _check_record(record: object) -> dict:
    """``record`` if it is a stamped record whose runs name their CPU profile, or raise naming ``record``."""
    runs = record.get("runs") if isinstance(record, dict) else None
    if not isinstance(runs, list) or not all(isinstance(run, dict) and "profile" in run.get("stamp", {}) for run in runs):
        raise ValueError(f"record must be a stamped record read by read_stamped_record, got {type(record).__name__}")
    return record


def record_profiles(record: dict) -> tuple[str, ...]:
    """The CPU profiles of ``record``'s runs, in order."""
    _check_record(record)
    return tuple(run["stamp"]["profile"] for run in record["runs"])


def read_validation(record: dict, profile: str = "default") -> tuple[DetectorAccuracy, tuple[ExactTrace, ...]]:
    """``record``'s accuracy over every seed and its stored traces, for one CPU ``profile`` (``"default"`` or ``"second"``).

    ``record`` is :data:`DIAGNOSE_RECORD` read by :func:`covpo.records.read_stamped_record`.
    """
    profile = check_option("profile", profile, record_profiles(record))
    run = record["runs"][record_profiles(record).index(profile)]
    accuracy = DetectorAccuracy(tuple(RunAccuracy.from_json(row) for row in run["runs"]), run["settings"])
    return accuracy, tuple(ExactTrace.from_json(trace) for trace in run["traces"])
