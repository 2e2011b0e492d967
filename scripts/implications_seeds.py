"""Chapter 6's sampled studies over 20 seeds: the stamped record the chapter reads.

    python scripts/implications_seeds.py

The chapter runs its studies at the book's size (the head-to-head and the hardness suite on
seeds 1 and 2, three seeds per tuning cell, one seed of the sequence laboratory's sampled runs,
three starts of the network); this script repeats each of them over the first 20 seeds of its
convention (seeds 1-20 for the head-to-head suite, whose seeds start at 1; seeds 0-19
elsewhere) and adds one run to ``src/covpo/experiments/implications/seeds_record.json`` per
CPU profile (:func:`covpo.records.write_stamped_run`). Run it plainly and under the second
profile, ``env $(python scripts/cpu_profile.py) python scripts/implications_seeds.py``. Every
run goes through :func:`covpo.experiments.parallel.run_tasks` on two local processes, with a
progress bar.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import joblib
import numpy as np

from covpo.experiments.implications.head_to_head import HeadToHead, default_head_to_head, default_suite
from covpo.experiments.implications.paper_units import (
    FIXED_BUDGET_FACTOR,
    HARDNESS_GAPS,
    hardness_head_to_head,
    units_comparison,
)
from covpo.experiments.implications.tuning import TuningMap, book_tuning_instance, clip_width_map, inner_steps_map
from covpo.experiments.parallel import run_tasks
from covpo.families import COLLAPSE_GAP
from covpo.labs.nonlinear import nonlinear_experiment
from covpo.labs.sequences import sequence_experiment
from covpo.records import stamp, write_stamped_run

N_SEEDS = 20
SUITE_SEEDS = tuple(range(1, N_SEEDS + 1))
"""The head-to-head suite's convention: its seeds start at 1 (the book's are 1 and 2)."""
LAB_SEEDS = tuple(range(N_SEEDS))
RECORD = Path(__file__).resolve().parents[1] / "src/covpo/experiments/implications/seeds_record.json"
COMMAND = "python scripts/implications_seeds.py"
MODULES = (
    "covpo.algorithms",
    "covpo.experiments.implications.head_to_head",
    "covpo.experiments.implications.paper_units",
    "covpo.experiments.implications.tuning",
    "covpo.experiments.sweeps",
    "covpo.experiments.parallel",
    "covpo.labs.sequences",
    "covpo.labs.nonlinear",
    "covpo.coverage_instances",
    "covpo.families",
    "covpo.instances",
    "covpo.policies",
    "covpo.policy_classes",
    "covpo.objectives",
    "covpo.batches",
    "covpo.trajectory",
)
OUTCOMES = ("reached", "coverage_loss", "responses_to_eps", "steps_to_eps", "rounds_to_eps", "diverged")


def head_to_head_record(result: HeadToHead) -> dict:
    """Every outcome array of a head-to-head, ``(methods, instances, seeds)``, as lists."""
    return {
        "methods": list(result.names),
        "coverages": result.coverages.tolist(),
        "seeds": list(result.seeds),
        "eta": np.where(np.isnan(result.eta), -1.0, result.eta).tolist(),
        **{name: np.nan_to_num(getattr(result, name), nan=-1.0).tolist() for name in OUTCOMES},
    }


def one_seed(result: HeadToHead, s: int) -> HeadToHead:
    """The head-to-head restricted to its ``s``-th seed (learning rates stay those chosen over all seeds)."""
    return dataclasses.replace(
        result, seeds=(result.seeds[s],),
        **{name: getattr(result, name)[:, :, s:s + 1] for name in (*OUTCOMES, "min_log10_coverage", "final_suboptimality")},
    )


def units_record(results: tuple[HeadToHead, ...], families: tuple[str, ...], gaps: tuple) -> list[dict]:
    """Per row of the units comparison: each seed's ratio and verdict in every unit."""
    per_seed = [
        units_comparison(tuple(one_seed(result, s) for result in results), families, gaps).rows
        for s in range(len(results[0].seeds))
    ]
    rows = []
    for r, row in enumerate(per_seed[0]):
        rows.append({
            "family": row.family, "coverage": float(row.coverage), "gap": row.gap,
            **{cost: {"ratio": [float(seed_rows[r].ratio(cost)) for seed_rows in per_seed],
                      "verdict": [seed_rows[r].verdict(cost) for seed_rows in per_seed]}
               for cost in ("steps", "rounds", "responses")},
        })
    return rows


def tuning_record(tuning_map: TuningMap) -> dict:
    """Per cell and seed of a tuning map: reached eps, lost coverage (fell below half the base)."""
    lost = ~(np.nan_to_num(tuning_map.coverage_loss, nan=np.inf) <= np.log10(2.0))
    return {
        "rows": tuning_map.rows.tolist(),
        "betas": tuning_map.betas.tolist(),
        "reached": (tuning_map.responses_to_eps >= 0).tolist(),
        "lost": lost.tolist(),
    }


def sequence_seed(seed: int) -> dict:
    """The sequence laboratory's ratio runs at one seed: largest ratios and lowest coverage per method and length."""
    experiment = sequence_experiment(seed=seed)
    return {
        "largest_ratio": experiment.max_abs_log_sequence_ratio.max(axis=2).tolist(),
        "min_log10_coverage": experiment.ratio_min_log10_coverage.tolist(),
    }


def nonlinear_seed(seed: int) -> dict:
    """The network laboratory from one start: its outcome arrays ``(families, methods, policies)``."""
    experiment = nonlinear_experiment(seeds=(seed,))
    return {
        "min_log10_coverage": experiment.min_log10_coverage[..., 0].tolist(),
        "final_suboptimality": experiment.final_suboptimality[..., 0].tolist(),
        "steps_to_eps": experiment.steps_to_eps[..., 0].tolist(),
        "reached": experiment.reached[..., 0].tolist(),
        "max_inner_kl": np.nan_to_num(experiment.max_inner_kl[..., 0], nan=-1.0).tolist(),
        "methods": list(experiment.methods),
        "families": list(experiment.families),
        "policies": list(experiment.policies),
        "base_log10_coverage": experiment.base_log10_coverage.tolist(),
    }


def main() -> None:
    """Run every study over its 20 seeds and add the run to the record."""
    start = time.perf_counter()
    with joblib.parallel_config(n_jobs=2):
        suite = default_head_to_head("book", SUITE_SEEDS)
        hardness = hardness_head_to_head(seeds=SUITE_SEEDS)
        families = (*(part.family for part in default_suite("book")),
                    *[f"collapse, fixed {FIXED_BUDGET_FACTOR}× responses"] * len(hardness))
        gaps = (*(COLLAPSE_GAP if part.family == "collapse" else None for part in default_suite("book")), *HARDNESS_GAPS)
        units = units_record((*suite, *hardness), families, gaps)
        instance = book_tuning_instance()
        steps_map = inner_steps_map(instance, n_seeds=N_SEEDS)
        width_map = clip_width_map(instance, n_seeds=N_SEEDS)
        sequences = run_tasks(sequence_seed, [(seed,) for seed in LAB_SEEDS], "sequence laboratory")
        network = run_tasks(nonlinear_seed, [(seed,) for seed in LAB_SEEDS], "network laboratory")
    seconds = time.perf_counter() - start
    run = {
        "stamp": stamp(COMMAND, MODULES, ["scripts/implications_seeds.py"], seconds),
        "suite_seeds": list(SUITE_SEEDS),
        "lab_seeds": list(LAB_SEEDS),
        "head_to_head": {part.family: head_to_head_record(result) for part, result in zip(default_suite("book"), suite)},
        "hardness": {str(gap): head_to_head_record(result) for gap, result in zip(HARDNESS_GAPS, hardness)},
        "units": units,
        "tuning": {"inner_steps": tuning_record(steps_map), "widths": tuning_record(width_map)},
        "sequences": sequences,
        "nonlinear": network,
    }
    write_stamped_run(RECORD, run)
    print(f"wrote {RECORD} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
