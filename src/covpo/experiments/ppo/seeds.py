"""Chapter 4's sampled results over many seeds, for the stamped record the chapter reads (paper sections 3.2, 3.3).

The chapter runs its two cost sweeps over its first few seeds; :func:`seed_study` runs them, and
every other sampled measurement of the chapter, over more seeds than a build can afford, at the
chapter's own settings:

- the random-family and collapse-family cost sweeps (:func:`~covpo.experiments.sweeps.cost_sweeps`);
- PPO-NoClip's importance weights at three strengths (:func:`~covpo.experiments.ppo.ratios.ratio_spread`),
  and their extremes against ``beta`` on both families (:func:`~covpo.experiments.ppo.ratios.ratio_bounds_by_beta`);
- PPO-Lite's clip activity and what clipping costs (:func:`~covpo.experiments.ppo.clipping.clip_activity_grid`);
- the practice recipes under one budget and the long k3 runs
  (:func:`~covpo.experiments.sweeps.compare_recipes`);
- when REINFORCE loses coverage on the random family
  (:func:`~covpo.experiments.ppo.coverage_loss_timing.coverage_loss_timing`).

``scripts/ppo_seeds.py`` writes the result, stamped (:mod:`covpo.records`), to
:data:`SEEDS_RECORD`; :func:`read_seeds_record` reads and checks it. Every instance, constant,
budget and seed is ours.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

import numpy as np

from covpo import run
from covpo.algorithms.ratios import RatioRecorder
from covpo.experiments.parallel import run_tasks
from covpo.experiments.ppo.clipping import clip_activity_grid
from covpo.experiments.ppo.coverage_loss_timing import coverage_loss_timing
from covpo.experiments.ppo.practice import practice_recipes
from covpo.experiments.ppo.ratios import ratio_bounds_by_beta, ratio_spread
from covpo.experiments.sweeps import (
    collapse_family_methods,
    compare_recipes,
    cost_sweeps,
    random_family_methods,
)
from covpo.families import COLLAPSE_COVERAGES, RANDOM_COVERAGES, collapse_family, random_family
from covpo.rates import rate_of
from covpo.records import read_stamped_record
from covpo.table import Table
from covpo.validation import check_instance, check_instances, check_seeds, check_text

SEEDS_RECORD = Path(str(files(__package__) / "seeds_record.json"))
"""The stamped record the chapter reads, written by ``scripts/ppo_seeds.py``."""

RECORD_SEEDS = tuple(range(20))
"""The seeds of the record, the first twenty."""

RECORD_MODULES = (
    "covpo.algorithms",
    "covpo.batches",
    "covpo.collapse_instance",
    "covpo.coverage_instances",
    "covpo.experiments.parallel",
    "covpo.experiments.ppo.checks",
    "covpo.experiments.ppo.clipping",
    "covpo.experiments.ppo.coverage_loss_timing",
    "covpo.experiments.ppo.practice",
    "covpo.experiments.ppo.ratios",
    "covpo.experiments.ppo.seeds",
    "covpo.experiments.sweeps",
    "covpo.families",
    "covpo.fits",
    "covpo.instances",
    "covpo.objectives",
    "covpo.policies",
    "covpo.rates",
    "covpo.trajectory",
    "covpo.validation",
)
"""The code the record's results depend on (its stamp hashes it)."""

RECORD_SCRIPT = "scripts/ppo_seeds.py"
RECORD_COMMAND = "python scripts/ppo_seeds.py"

BETAS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
"""The strengths of the weight and clipping measurements, as the chapter sets them."""
SPREAD_BETAS = (0.25, 1.0, 4.0)
WIDTHS = (0.25, 0.5, 1.0, 2.0)
RECIPE_BUDGET = 8192
LONG_BUDGET_FACTOR = 8


def _spread_and_bounds(seed: int) -> dict:
    """One seed of the weight and clipping measurements, at the chapter's settings (one worker)."""
    random_instances = random_family(RANDOM_COVERAGES)
    collapse_instances = collapse_family(COLLAPSE_COVERAGES)
    hardest = random_instances[-1]
    inside, low_b4, high_b4 = True, np.nan, np.nan
    for beta in SPREAD_BETAS:
        recorder = RatioRecorder()
        trajectory = run(
            "ppo_noclip", hardest, rng=np.random.default_rng(seed), beta=beta, eta=2.0 / beta,
            n_iterations=20, batch_size=256, inner_steps=10, on_inner_step=recorder,
        )
        spread = ratio_spread(hardest, trajectory, recorder.finish())
        bound = spread.max_reward / spread.beta
        inside &= bool(np.all(spread.log_ratio_max < bound) and np.all(spread.log_ratio_min > -bound))
        if beta == 4.0:
            low_b4 = float(np.exp(spread.log_ratio_min.min()))
            high_b4 = float(np.exp(spread.log_ratio_max.max()))
    common = {"batch_size": 256, "horizon": 10, "seed": seed}
    random_table = ratio_bounds_by_beta(hardest, BETAS, eta_beta=2.0, inner_steps=10, **common)
    collapse_table = ratio_bounds_by_beta(collapse_instances[2], BETAS, eta_beta=8.0, inner_steps=40, **common)
    strong = collapse_table.betas >= 1.0
    grid = clip_activity_grid(random_instances[2], BETAS[:5], WIDTHS, eta_beta=2.0, inner_steps=10, **common)
    default = list(grid.widths).index(1.0)
    fixed = grid.clip_fraction[:, -1]
    final = grid.final_suboptimality
    return {
        "seed": seed,
        "spread_inside_interval": inside,
        "spread_b4_low": low_b4,
        "spread_b4_high": high_b4,
        "random_extent_min": float(random_table.extent.min()),
        "random_extent_max": float(random_table.extent.max()),
        "collapse_upper_inside": bool(np.all(collapse_table.ratio_max <= collapse_table.interval_high)),
        "collapse_lower_leaves_strong": bool(
            np.all(collapse_table.ratio_min[strong] < collapse_table.interval_low[strong])
        ),
        "collapse_extent_max": float(collapse_table.extent.max()),
        "bounds_shrink": bool(
            all(np.all(np.diff(t.extent / t.betas) < 0) for t in (random_table, collapse_table))
        ),
        "default_never_clips": bool(np.all(grid.clip_fraction[:, default:-1] == 0.0)),
        "target_extent_max": float(grid.target_extent.max()),
        "fixed_clip_weakest": float(fixed[0]),
        "fixed_clip_strongest": float(fixed[-1]),
        "fixed_clip_falls": bool(np.all(np.diff(fixed) < 0)),
        "quarter_clip_min": float(grid.clip_fraction[:, 0].min()),
        "quarter_clip_max": float(grid.clip_fraction[:, 0].max()),
        "quarter_worse_everywhere": bool(np.all(final[:, 0] > final[:, default])),
        "fixed_gap_ratio": float(final[0, -1] / final[0, default]),
        "fixed_kl_ratio": float(grid.mean_inner_kl[0, -1] / grid.mean_inner_kl[0, default]),
    }


def _reinforce_timing(seed: int, etas: Sequence[float]) -> dict:
    """When REINFORCE loses coverage in one seed of the random-family sweep, rerun at that seed's learning rates."""
    method = next(m for m in random_family_methods() if m.label == "REINFORCE")
    timing = coverage_loss_timing(method, random_family(RANDOM_COVERAGES), etas, eps=0.05, seed=seed)
    lossy = timing.coverage_loss > np.log10(2)
    return {
        "seed": seed,
        "lossy_coverages": int(lossy.sum()),
        "steps_to_eps_max": int(timing.steps_to_eps.max()),
        "always_reaches": bool(np.all(timing.steps_to_eps >= 0)),
        "lowest_after_eps": int(np.sum(timing.steps_at_lowest[lossy] > timing.steps_to_eps[lossy])),
        "worst_after_eps": float(np.max(timing.worst_after_eps)),
    }


def _recipes(comparison) -> dict:
    return {
        "names": list(comparison.names),
        "reached": comparison.reached.tolist(),
        "responses_to_eps": comparison.responses_to_eps.tolist(),
        "coverage_loss": np.nan_to_num(comparison.coverage_loss, nan=-1.0).tolist(),
        "final_suboptimality": np.nan_to_num(comparison.final_suboptimality, nan=-1.0).tolist(),
        "diverged": comparison.diverged.tolist(),
    }


def seed_study(seeds: Sequence[int] = RECORD_SEEDS) -> dict:
    """Every sampled measurement of chapter 4 over ``seeds``, as one JSON-ready run of the record (without its stamp).

    Parameters
    ----------
    seeds
        The seeds, integers ``>= 0`` (the record uses :data:`RECORD_SEEDS`).

    Returns
    -------
    dict
        ``seeds``; ``random_sweep`` and ``collapse_sweep``
        (:meth:`~covpo.experiments.sweeps.SeededCostSweep.to_record`); ``weights`` (one entry per
        seed of the weight and clipping measurements); ``reinforce_timing`` (one per seed);
        ``recipes_random``, ``recipes_collapse`` and ``long_k3`` (per method and seed).
    """
    seeds = check_seeds("seeds", seeds)
    random_instances = random_family(RANDOM_COVERAGES)
    collapse_instances = collapse_family(COLLAPSE_COVERAGES)
    random_sweeps = cost_sweeps(random_instances, RANDOM_COVERAGES, random_family_methods(), eps=0.05, seeds=seeds)
    collapse_sweeps = cost_sweeps(
        collapse_instances, COLLAPSE_COVERAGES, collapse_family_methods(), eps=0.04, seeds=seeds
    )
    weights = run_tasks(_spread_and_bounds, [(seed,) for seed in seeds], "weights and clipping")
    row = random_sweeps.rows(["REINFORCE"])[0]
    timing = run_tasks(
        _reinforce_timing,
        [(seed, sweep.eta[row].tolist()) for seed, sweep in zip(seeds, random_sweeps.sweeps)],
        "REINFORCE timing",
    )
    recipes_random = compare_recipes(
        random_instances[-1], practice_recipes() + random_family_methods()[1:3], RECIPE_BUDGET, eps=0.05, seeds=seeds
    )
    recipes_collapse = compare_recipes(
        collapse_instances[2], practice_recipes() + collapse_family_methods()[1:3], RECIPE_BUDGET, eps=0.04, seeds=seeds
    )
    k3_recipe = practice_recipes()[1]
    exact_recipe = dataclasses.replace(k3_recipe.with_hyperparameters(kl="exact"), label="practice: K = 1, exact KL to base")
    long_k3 = compare_recipes(
        random_instances[-1], (k3_recipe, exact_recipe), LONG_BUDGET_FACTOR * RECIPE_BUDGET, eps=0.05, seeds=seeds
    )
    return {
        "seeds": list(seeds),
        "random_sweep": random_sweeps.to_record(),
        "collapse_sweep": collapse_sweeps.to_record(),
        "weights": weights,
        "reinforce_timing": timing,
        "recipes_random": _recipes(recipes_random),
        "recipes_collapse": _recipes(recipes_collapse),
        "long_k3": _recipes(long_k3),
    }


def check_seeds_record(record: dict) -> dict:
    """``record`` if every run holds the parts :func:`seed_study` writes over :data:`RECORD_SEEDS`, else raise ``ValueError``.

    Parameters
    ----------
    record
        A stamped record as :func:`covpo.records.read_stamped_record` reads it: a dict whose
        ``"runs"`` is a non-empty list of dicts.

    Returns
    -------
    dict
        ``record`` itself.

    Raises
    ------
    ValueError
        Naming ``record`` when it is not such a dict, when a run lacks a part of :func:`seed_study`,
        or when a run covers other seeds than :data:`RECORD_SEEDS`.
    """
    check_instance("record", record, dict)
    runs = record.get("runs")
    if not isinstance(runs, list):
        raise ValueError(f"record must hold a list of runs under 'runs', got {type(runs).__name__}")
    parts = ("random_sweep", "collapse_sweep", "weights", "reinforce_timing", "recipes_random", "recipes_collapse",
             "long_k3")
    for run_ in check_instances("record", runs, dict):
        missing = [part for part in ("seeds", *parts) if part not in run_]
        if missing:
            raise ValueError(f"record must hold {missing} in every run; regenerate it with `{RECORD_COMMAND}`")
        if not isinstance(run_["seeds"], (list, tuple)) or tuple(run_["seeds"]) != RECORD_SEEDS:
            raise ValueError(f"record must cover seeds {RECORD_SEEDS}, got {run_['seeds']!r}")
    return record


def read_seeds_record(path: str | Path = SEEDS_RECORD) -> dict:
    """The stamped record in ``path`` (by default the book's, :data:`SEEDS_RECORD`), checked (:func:`check_seeds_record`)."""
    return read_stamped_record(path, check_seeds_record)


RESET_LABELS = ("PPO-NoClip", "PPO-Lite", "GRPO, resets")
BASELINE_LABELS = ("GRPO, fixed ref., no KL", "REINFORCE")


def _sweep_rates(sweep: dict) -> dict:
    """Rates and ranges of one family's sweep in a run of the record."""
    labels = sweep["methods"]
    reached = np.array(sweep["reached"], dtype=bool)
    loss = np.array(sweep["coverage_loss"])
    resets = [labels.index(name) for name in RESET_LABELS]
    baselines = [labels.index(name) for name in BASELINE_LABELS]
    coverages = np.broadcast_to(np.array(sweep["coverages"]), reached[:, resets].shape)
    reset_reached = reached[:, resets]
    failing = coverages[~reset_reached]
    return {
        "resets": rate_of(reset_reached),
        "baselines": rate_of(reached[:, baselines]),
        **{name: rate_of(reached[:, labels.index(name)]) for name in (*RESET_LABELS, *BASELINE_LABELS)},
        "resets_fail_from": float(failing.min()) if failing.size else float("inf"),
        "resets_failures": int(failing.size),
        "resets_failures_from_40": int(np.sum(failing >= 40.0)),
        "resets_loss_reached": float(loss[:, resets][reset_reached].max()),
        "resets_keep_half": rate_of(loss[:, resets] < np.log10(2)),
        "clean_seeds": int(reset_reached.all(axis=(1, 2)).sum()),
    }


def _recipe_rates(recipes: dict) -> dict:
    """Per method of a recipe comparison in a run of the record: the seeds reaching eps and the median cost."""
    reached = np.array(recipes["reached"], dtype=bool)
    responses = np.array(recipes["responses_to_eps"])
    return {
        name: {
            "reached": rate_of(reached[i]),
            "median_responses": float(np.median(responses[i][reached[i]])) if reached[i].any() else float("inf"),
            "worst_loss": float(np.max(recipes["coverage_loss"][i])),
            "final": np.array(recipes["final_suboptimality"][i]),
        }
        for i, name in enumerate(recipes["names"])
    }


def seeds_summary(run_: dict) -> dict:
    """What the chapter reports from one run of the record: rates with Wilson intervals, and ranges over seeds.

    Returns a dict of ``random`` and ``collapse`` (the reach rates, losses and fits of one sweep), ``weights`` (the range
    over seeds of every number, and the count of seeds in which every verdict holds),
    ``recipes_random``, ``recipes_collapse`` and ``long_k3`` (per method), and REINFORCE's timing:
    ``timing_late`` (the cells losing over a factor of two whose lowest coverage comes after the first
    eps-optimal record), ``timing_always_reaches`` (seeds reaching eps at every coverage) and
    ``timing_worst_after_eps``.
    """
    if not isinstance(run_, dict) or "weights" not in run_:
        raise ValueError("run_ must be one run of the record read by read_seeds_record")
    weights = run_["weights"]
    numbers = {key: (min(w[key] for w in weights), max(w[key] for w in weights))
               for key, value in weights[0].items() if isinstance(value, float)}
    verdicts = {key: sum(bool(w[key]) for w in weights) for key, value in weights[0].items() if isinstance(value, bool)}
    timing = run_["reinforce_timing"]
    return {
        "n_seeds": len(run_["seeds"]),
        "random": _sweep_rates(run_["random_sweep"]),
        "collapse": _sweep_rates(run_["collapse_sweep"]),
        "weight_ranges": numbers,
        "weight_verdicts": verdicts,
        "recipes_random": _recipe_rates(run_["recipes_random"]),
        "recipes_collapse": _recipe_rates(run_["recipes_collapse"]),
        "long_k3": _recipe_rates(run_["long_k3"]),
        "timing_late": rate_of(np.array([True] * sum(t["lowest_after_eps"] for t in timing)
                                        + [False] * sum(t["lossy_coverages"] - t["lowest_after_eps"] for t in timing))),
        "timing_always_reaches": sum(t["always_reaches"] for t in timing),
        "timing_worst_after_eps": max(t["worst_after_eps"] for t in timing),
    }


MEASUREMENTS = (
    ("spread_b4_low", "lowest weight at $\\beta = 4$ (random, $C_{\\mathrm{cov}} = 100$)"),
    ("spread_b4_high", "highest weight at β = 4"),
    ("random_extent_min", "smallest extent against β (random)"),
    ("random_extent_max", "largest extent against β (random)"),
    ("collapse_extent_max", "largest extent against $\\beta$ (collapse, $C_{\\mathrm{cov}} = 40$)"),
    ("target_extent_max", "the targets' largest extent (clip grid)"),
    ("fixed_clip_weakest", "share clipped by PPO's interval at β = 0.25"),
    ("fixed_clip_strongest", "share clipped by PPO's interval at β = 4"),
    ("quarter_clip_min", "share clipped at a quarter of the width, lowest β"),
    ("quarter_clip_max", "share clipped at a quarter of the width, highest"),
    ("fixed_gap_ratio", "PPO's interval at β = 0.25: final gap over the default's"),
    ("fixed_kl_ratio", "PPO's interval at β = 0.25: inner KL over the default's"),
)
VERDICTS = (
    ("spread_inside_interval", "every weight inside the default interval, three strengths"),
    ("collapse_upper_inside", "collapse: upper extremes inside the interval"),
    ("collapse_lower_leaves_strong", "collapse: lower extremes below it at every β ≥ 1"),
    ("bounds_shrink", "the bounds shrink at every step of β, both families"),
    ("default_never_clips", "the default interval (and the wider one) never clips"),
    ("fixed_clip_falls", "PPO's interval clips less at every stronger β"),
    ("quarter_worse_everywhere", "a quarter of the width ends further from the optimum at every β"),
)


def seeds_table(summary: dict, caption: str = "") -> Table:
    """The weight and clipping measurements of one run of the record (:func:`seeds_summary`): ranges and counts over seeds.

    Parameters
    ----------
    summary
        What :func:`seeds_summary` returns for one run of the record.
    caption
        The table's caption; empty for the default, which names the number of seeds.

    Returns
    -------
    Table
        One row per measurement (its lowest and highest value over the seeds) and per verdict
        (the seeds in which it holds).
    """
    if not isinstance(summary, dict) or not {"n_seeds", "weight_ranges", "weight_verdicts"} <= summary.keys():
        raise ValueError("summary must be made by seeds_summary")
    caption = check_text("caption", caption, allow_empty=True)
    n = summary["n_seeds"]
    rows = [(label, float(summary["weight_ranges"][key][0]), float(summary["weight_ranges"][key][1]), None)
            for key, label in MEASUREMENTS]
    rows += [(label, None, None, f"{summary['weight_verdicts'][key]} of {n}") for key, label in VERDICTS]
    return Table(
        ("measurement", "lowest over the seeds", "highest over the seeds", "seeds in which it holds"),
        tuple(rows),
        caption=caption or f"The weight and clipping measurements over {n} seeds",
        notes=("Extent: the largest |log w| as a fraction of the interval's half-width R/β.",),
    )
