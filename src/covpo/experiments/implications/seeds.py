"""Chapter 6's studies over 20 seeds, read from the stamped record ``seeds_record.json`` (our experiments).

``scripts/implications_seeds.py`` repeats the chapter's sampled studies over the first 20 seeds
of their conventions (seeds 1-20 for the head-to-head suite of
:mod:`covpo.experiments.implications.head_to_head` and the hardness suite of
:mod:`covpo.experiments.implications.paper_units`; seeds 0-19 for the tuning maps of
:mod:`covpo.experiments.implications.tuning` and for the sequence and network laboratories) and
writes one run per CPU profile (:mod:`covpo.records`). This module reads the record into arrays
and tables; the chapter states a verdict only where it holds in every run of the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from covpo.rates import rate_of
from covpo.records import read_stamped_record
from covpo.table import Table
from covpo.validation import check_option, check_text

RECORD_PATH = Path(__file__).with_name("seeds_record.json")
"""The stamped record written by ``python scripts/implications_seeds.py``."""
SUITE_PARTS = ("collapse", "random")
STUDY_SEEDS = 20


def _check_run(run: object) -> dict:
    if not isinstance(run, dict) or not {"stamp", "suite_seeds", "head_to_head", "units", "tuning"} <= run.keys():
        raise ValueError(f"run must be one run of the chapter 6 seeds record, got {type(run).__name__}")
    return run


def seeds_record_runs(path: str | Path = RECORD_PATH) -> list[dict]:
    """The runs of the record (one per CPU profile it was made under)."""
    return [_check_run(run) for run in read_stamped_record(path)["runs"]]


@dataclass(frozen=True, eq=False)
class RecordedSuite:
    """One head-to-head of the record: every outcome ``(methods, instances, seeds)``."""

    methods: tuple[str, ...]
    coverages: np.ndarray
    seeds: tuple[int, ...]
    reached: np.ndarray
    coverage_loss: np.ndarray
    responses_to_eps: np.ndarray
    steps_to_eps: np.ndarray

    def row(self, name: str) -> int:
        """The index of the method labelled ``name``."""
        if name not in self.methods:
            raise ValueError(f"name must be one of {self.methods}, got {name!r}")
        return self.methods.index(name)

    def worst_loss_per_seed(self, name: str) -> np.ndarray:
        """The largest coverage loss (decades) over the instances, per seed."""
        return self.coverage_loss[self.row(name)].max(axis=0)


def recorded_suite(run: dict, part: str) -> RecordedSuite:
    """The head-to-head ``part`` (``"collapse"``, ``"random"``, or a hardness gap such as ``"0.4"``) of a record run."""
    run = _check_run(run)
    part = check_text("part", part)
    data = run["head_to_head"].get(part) or run["hardness"].get(part)
    if data is None:
        raise ValueError(f"part must name a head-to-head of the record, got {part!r}")
    return RecordedSuite(
        methods=tuple(data["methods"]),
        coverages=np.array(data["coverages"]),
        seeds=tuple(data["seeds"]),
        reached=np.array(data["reached"], dtype=bool),
        coverage_loss=np.array(data["coverage_loss"], dtype=float),
        responses_to_eps=np.array(data["responses_to_eps"]),
        steps_to_eps=np.array(data["steps_to_eps"]),
    )


def suite_rate_table(run: dict) -> Table:
    """Per family and method: runs reaching eps over the record's seeds (Wilson interval), and the worst loss per seed."""
    rows = []
    for part in SUITE_PARTS:
        suite = recorded_suite(run, part)
        for name in suite.methods:
            i = suite.row(name)
            losses = suite.worst_loss_per_seed(name)
            rows.append((part, name, rate_of(suite.reached[i].ravel()).text(), float(np.median(losses)),
                         f"{losses.min():.2f}-{losses.max():.2f}"))
    first, last = suite.seeds[0], suite.seeds[-1]
    return Table(
        ("family", "algorithm", "runs reaching ε (Wilson 95%)", "worst loss per seed, median (decades)",
         "range over seeds"),
        tuple(rows),
        caption=f"The head-to-head over seeds {first}-{last}: three instances per family, learning rates chosen over all seeds",
    )


def units_shares(run: dict, family: str, cost: str) -> list[dict]:
    """Per units row of ``family``: its coverage, gap, and each seed's ratio and verdict in ``cost``."""
    cost = check_option("cost", cost, ("steps", "rounds", "responses"))
    family = check_text("family", family)
    rows = [row for row in _check_run(run)["units"] if row["family"] == family]
    if not rows:
        raise ValueError(f"family must name rows of the record's units comparison, got {family!r}")
    return [{"coverage": row["coverage"], "gap": row["gap"], "ratio": np.array(row[cost]["ratio"], dtype=float),
             "verdict": np.array(row[cost]["verdict"])} for row in rows]


def units_share_table(run: dict) -> Table:
    """Per units row: in how many seeds the reset group was cheaper ('yes'), not ('no') or undecided ('open'), per unit."""
    cells = []
    for row in _check_run(run)["units"]:
        counts = []
        for cost in ("steps", "rounds", "responses"):
            verdicts = np.array(row[cost]["verdict"])
            counts.append(" / ".join(str(int(np.sum(verdicts == v))) for v in ("yes", "no", "open")))
        gap = "" if row["gap"] is None else f"{row['gap']:g}"
        cells.append((row["family"], f"{row['coverage']:g}", gap, *counts))
    return Table(
        ("family", "$C_{\\mathrm{cov}}$", "gap", "steps: yes / no / open", "rounds: yes / no / open", "responses: yes / no / open"),
        tuple(cells),
        caption=f"Resets against the fixed reference, seed by seed over {len(run['suite_seeds'])} seeds",
        notes=("yes: the reset group's cheapest method needed less than the fixed group's; no: more; "
               "open: neither group's cheapest method reached ε in that seed.",),
    )


@dataclass(frozen=True, eq=False)
class RecordedTuningMap:
    """One tuning map of the record: per cell and seed, reached eps and lost coverage, ``(rows, betas, seeds)``."""

    rows: np.ndarray
    betas: np.ndarray
    reached: np.ndarray
    lost: np.ndarray


def recorded_tuning_map(run: dict, name: str) -> RecordedTuningMap:
    """The map ``"inner_steps"`` or ``"widths"`` of a record run."""
    name = check_option("name", name, ("inner_steps", "widths"))
    data = _check_run(run)["tuning"][name]
    return RecordedTuningMap(np.array(data["rows"]), np.array(data["betas"]),
                             np.array(data["reached"], dtype=bool), np.array(data["lost"], dtype=bool))


def recorded_sequences(run: dict) -> tuple[np.ndarray, np.ndarray]:
    """The sequence laboratory's ratio runs per seed: largest ``|log w|`` and lowest log10 coverage, ``(seeds, methods, lengths)``."""
    runs = _check_run(run)["sequences"]
    return (np.array([seed["largest_ratio"] for seed in runs]),
            np.array([seed["min_log10_coverage"] for seed in runs]))


def recorded_network(run: dict) -> dict[str, object]:
    """The network laboratory per start: outcome arrays ``(families, methods, policies, seeds)`` and the axes' names."""
    runs = _check_run(run)["nonlinear"]
    arrays = {key: np.stack([np.array(seed[key]) for seed in runs], axis=-1)
              for key in ("min_log10_coverage", "final_suboptimality", "steps_to_eps", "reached", "max_inner_kl")}
    arrays["reached"] = arrays["reached"].astype(bool)
    return {**arrays, "methods": tuple(runs[0]["methods"]), "families": tuple(runs[0]["families"]),
            "policies": tuple(runs[0]["policies"]), "base_log10_coverage": np.array(runs[0]["base_log10_coverage"])}
