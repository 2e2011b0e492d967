"""Chapter 7's frontier study: every arm run long, measured along its whole path, kept as a stamped record.

The paper predicts that a fixed reference loses coverage as training goes on and that resets
keep it (sections 2 and 3). Arms that move different distances cannot be compared at their end
points, so this study keeps, for every run and along its training path, the exact quantities a
comparison at matched reward or at matched KL to the base model needs (:func:`run_paths`), and
:mod:`covpo.labs.transformer.frontier_analysis` pairs the paths by seed.

**Blocks** (:data:`BLOCKS`), all on the mixed task, all at the same number of optimizer steps
per run (:data:`OPTIMIZER_STEPS`) and the shared learning rate:

- ``"long"``: 192 outer steps of 4 inner steps, every arm of :data:`LONG_ARMS` under partial
  credit and :data:`BINARY_ARMS` under the binary reward;
- ``"48x16"`` and ``"24x32"``: the same optimizer steps split into fewer outer steps of more
  inner steps (:data:`SPLIT_ARMS`), to isolate the inner loop's length from the run's length;
- ``"G32"`` and ``"G64"``: the long block's 192 x 4 with groups of 32 and 64 answers per prompt
  (:data:`GROUP_ARMS`) and every training prompt in every batch, so every prompt gets the same
  number of updates at every group size (the batch grows with the group; the long block's groups
  of 8 are the third size);
- ``"route"``: the long block's 192 x 4 on the mixed and the decoupled task
  (:data:`ROUTE_ARMS`) from the same base models, pre-trained on the mixture that serves both
  (:data:`ROUTE_TASK`), so the two tasks differ only in what the reward pays for.

**Seeds.** :data:`FRONTIER_SIZES` pre-trains 8 base models and runs one seed on each, so
seeds are independent and a sign test over seeds respects the clustering by base model.

**Paths.** Every run keeps, at every outer step (thinned to at most :data:`MAX_POINTS`
points), exact pass@1 over all prompts, exact pass@k (``k`` in :data:`PASS_KS`) and mean
``log10`` coverage of the correct answer on the hard prompts, the mean probability of the
near miss on the hard prompts (training and held-out panels), the KL divergence to the base
model, and, for the APMD arms, each outer step's inner accuracy
``delta_t = E_x KL(pi_{t+1} || pi*_{t+1})``, its running sum and the fraction of each step's
distance to its target closed (its median over the steps whose target is not already reached), and
the KL form of the inner-loop condition on each hard training prompt (:func:`inner_condition`). It also keeps
the first optimizer step at which exact pass@256 of the hard prompts falls more than
:data:`ONSET_DROP` below the base model's. Exact mirror
descent from each seed's base model (:func:`mirror_descent_paths`) is the reference path of a
perfect inner loop.

``scripts/transformer_study.py`` runs :func:`frontier_study_run` under both CPU profiles and
writes :data:`FRONTIER_RECORD` with :mod:`covpo.records` stamps.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import numpy as np

from covpo.validation import check_count, check_finite_array, check_flag, check_instance, check_positive

from .experiment import SIZES, Cell, TransformerStudy, plan_study, transformer_study
from .methods import (APMD_ARM, CARRIED_ARM, EXACT_ARM, EXACT_CARRIED_ARM, PRORL_ARM, STRONG_ARM, STRONG_BETA,
                      WEAK_ARM)
from .passk import exact_pass_at_k
from .task import ReversalTask

OPTIMIZER_STEPS = 768
"""Optimizer steps of every run of the frontier study (our budget)."""
LONG_ARMS = (WEAK_ARM, STRONG_ARM, "β = 0", PRORL_ARM, APMD_ARM, EXACT_ARM, CARRIED_ARM, EXACT_CARRIED_ARM)
"""The arms of the long block under partial credit."""
BINARY_ARMS = (WEAK_ARM, STRONG_ARM, APMD_ARM, EXACT_ARM)
"""The arms of the long block under the binary reward."""
SPLIT_ARMS = (WEAK_ARM, STRONG_ARM, APMD_ARM, EXACT_ARM, EXACT_CARRIED_ARM)
"""The arms of the blocks with longer inner loops."""
GROUP_ARMS = (WEAK_ARM, CARRIED_ARM)
"""The arms of the group-size blocks, the sampled arms that learn in 192 x 4 (the exact target draws no answers)."""
ROUTE_ARMS = (WEAK_ARM, CARRIED_ARM)
"""The arms run on both tasks of the route block."""
ROUTE_TASK = ReversalTask(shared_mixture=True)
"""The route block's task family, one pre-training mixture for the mixed and the decoupled task (ours)."""
BLOCKS = {
    "long": {"n_steps": 192, "inner_steps": 4,
             "cells": tuple(Cell("mixed", arm) for arm in LONG_ARMS)
             + tuple(Cell("mixed", arm, reward="binary") for arm in BINARY_ARMS)},
    "48x16": {"n_steps": 48, "inner_steps": 16, "cells": tuple(Cell("mixed", arm) for arm in SPLIT_ARMS)},
    "24x32": {"n_steps": 24, "inner_steps": 32, "cells": tuple(Cell("mixed", arm) for arm in SPLIT_ARMS)},
    **{f"G{group}": {"n_steps": 192, "inner_steps": 4, "slot_size": group,
                     "cells": tuple(Cell("mixed", arm, group) for arm in GROUP_ARMS)} for group in (32, 64)},
    "route": {"n_steps": 192, "inner_steps": 4, "task": ROUTE_TASK,
              "cells": tuple(Cell(task, arm) for task in ("mixed", "decoupled") for arm in ROUTE_ARMS)},
}
"""The study's blocks (module docstring), each with its outer steps, inner steps per outer step and cells, and where
they differ from the long block's, the answers per slot (``slot_size``, one group per prompt) and the
task family (``task``)."""
FRONTIER_SIZES = {"base_models": 8, "seeds_per_base": 1, "chunk": 8}
"""Entries replacing the full size's (:data:`~covpo.labs.transformer.experiment.SIZES`): 8 base models, one seed each."""
PASS_KS = (1, 16, 64, 256)
"""The ``k`` of the exact pass@k each path keeps."""
MAX_POINTS = 33
"""At most this many points of each path are kept (every outer step when a run has fewer)."""
MIN_DISTANCE = 1e-4
"""Outer steps whose target lies closer than this many nats are left out of the fraction closed.

What is left to close there is within the single-precision rounding of the KL divergences.
"""
ONSET_DROP = 0.05
"""How far below the base model's pass@256 of the hard prompts a path must fall to count as losing coverage (ours)."""
ROUNDING = 1e-3
"""How far past 0 a single-precision log-probability or KL divergence of the loop may round (far above what it does)."""
KL_ROUNDING = 2e-7
"""The single-precision error allowed a step's KL divergence to its target when the per-step bound is checked.

The loop sums 512 answers' terms in single precision; the most negative divergence it returned
in our runs was about -4e-8, so errors of this size are rounding, not fit.
"""
PANELS = ("training", "held-out")
"""The two sets of prompts each path is measured on."""
FRONTIER_RECORD = Path(str(files(__package__) / "frontier_record.json"))
"""The record chapter 7 reads, written by ``scripts/transformer_study.py`` under both CPU profiles."""
RECORD_MODULES = ("covpo.labs.transformer.model", "covpo.labs.transformer.task", "covpo.labs.transformer.sampling",
                  "covpo.labs.transformer.exact", "covpo.labs.transformer.training", "covpo.labs.transformer.methods",
                  "covpo.labs.transformer.experiment", "covpo.labs.transformer.passk",
                  "covpo.labs.transformer.frontier")
"""The code the record's numbers come from (its stamp hashes these and the script)."""


def kept_steps(n_steps: int) -> np.ndarray:
    """The outer-step rows ``0..n_steps`` a path keeps: all when there are few, else :data:`MAX_POINTS` evenly spaced, the ends included."""
    n_steps = check_count("n_steps", n_steps)
    if n_steps + 1 <= MAX_POINTS:
        return np.arange(n_steps + 1)
    return np.unique(np.round(np.linspace(0, n_steps, MAX_POINTS)).astype(int))


def _rounded(values: np.ndarray) -> list:
    """``values`` as a list of floats to 4 significant digits (a path's precision; keeps the record small)."""
    return [float(f"{value:.4g}") for value in np.asarray(values, dtype=float).ravel()]


def _panel_series(log_coverage: np.ndarray, log_near: np.ndarray, hard: np.ndarray) -> dict:
    """The series of one panel from per-step, per-prompt log-probabilities ``[T + 1, prompts]`` and the hard mask."""
    coverage = np.minimum(log_coverage, 0.0)
    series = {"pass1": np.exp(coverage).mean(1),
              "log10_coverage": coverage[:, hard].mean(1) / math.log(10),
              "near": np.exp(np.minimum(log_near[:, hard], 0.0)).mean(1)}
    passk = exact_pass_at_k(coverage[:, hard], PASS_KS).mean(1)
    for i, k in enumerate(PASS_KS):
        series[f"pass@{k}"] = passk[:, i]
    return series


def first_loss_step(log_coverage: np.ndarray, hard: np.ndarray, inner_steps: int) -> int | None:
    """The first optimizer step at which exact pass@256 of the hard prompts is more than :data:`ONSET_DROP` below the base model's.

    ``log_coverage [T + 1, prompts]``; row ``t`` is the model after ``t * inner_steps``
    optimizer steps. ``None`` if it never is.
    """
    log_coverage = np.asarray(log_coverage, dtype=float)
    hard = np.asarray(hard)
    inner_steps = check_count("inner_steps", inner_steps)
    if log_coverage.ndim != 2 or hard.shape != log_coverage.shape[1:] or hard.dtype != bool or not hard.any():
        raise ValueError(f"log_coverage must be [steps, prompts] and hard a boolean mask of its prompts with at least "
                         f"one hard prompt, got shapes {log_coverage.shape} and {hard.shape}")
    passk = exact_pass_at_k(np.minimum(log_coverage[:, hard], 0.0), [PASS_KS[-1]])[..., 0].mean(1)
    below = passk < passk[0] - ONSET_DROP
    return int(np.argmax(below)) * inner_steps if below.any() else None


def inner_condition(log_coverage: np.ndarray, prompt_accuracy: np.ndarray, target_log_coverage: np.ndarray,
                    hard: np.ndarray) -> dict:
    """The KL form of the inner-loop condition on each hard prompt, against what the run's coverage did.

    Our reconstruction (chapter 7 derives it): write ``c_t`` for ``pi_t(y*|x)``, ``c*_{t+1}`` for the
    target's coverage and ``delta_t = KL(pi_{t+1} || pi*_{t+1})`` on one prompt. The step loses
    ``e_t = log c*_{t+1} - log c_{t+1}`` against its target, and a step of exact mirror descent
    never lowers coverage, so ``log c_T >= log c_0 - sum_t e_t``. The data-processing inequality
    and ``kl(p, q) >= (q - p)^2 / (2 q)`` for ``p <= q`` bound each loss by the step's KL:
    ``e_t <= b_t = -log(1 - sqrt(2 delta_t / c*_{t+1}))`` (infinite once the root reaches 1). So
    ``sum_t b_t <= log 2`` (the condition, met) guarantees that the prompt keeps at least half
    of its base coverage at every step: the tolerance on the KL scales with the coverage.

    Parameters
    ----------
    log_coverage
        ``log pi_t(y*|x)``, ``[T + 1, prompts]``.
    prompt_accuracy, target_log_coverage
        ``delta_t`` and ``log c*_{t+1}``, ``[T, prompts]``
        (:class:`~covpo.labs.transformer.training.RunRecord`).
    hard
        Boolean mask of the hard prompts (at least one).

    Returns
    -------
    dict
        Counts over the hard prompts: ``hard``, ``met`` (the condition holds over the whole run),
        ``kept_half`` (coverage never below half the base model's), ``met_and_lost`` (met but
        not kept: the guarantee would be wrong; always 0), ``violations`` (steps where ``e_t``
        exceeds by more than 1e-4 the bound ``b_t`` computed with ``delta_t +``
        :data:`KL_ROUNDING`: the per-step bound would be wrong; always 0); and the
        medians over hard prompts of ``sum_t e_t`` (``error``) and of ``sum_t b_t`` (``budget``,
        ``None`` where infinite).
    """
    checked = {}
    for name, values, sign in (("log_coverage", log_coverage, -1), ("prompt_accuracy", prompt_accuracy, 1),
                               ("target_log_coverage", target_log_coverage, -1)):
        values = check_finite_array(name, values, ndim=2)
        if (sign * values < -ROUNDING).any():
            raise ValueError(f"{name} must be {'at most' if sign < 0 else 'at least'} 0 (log-probabilities and KL "
                             f"divergences), beyond single-precision rounding")
        checked[name] = np.minimum(values, 0.0) if sign < 0 else np.maximum(values, 0.0)
    log_coverage, prompt_accuracy, target_log_coverage = checked.values()
    hard = np.asarray(hard)
    steps, prompts = log_coverage.shape
    if (prompt_accuracy.shape != (steps - 1, prompts) or target_log_coverage.shape != prompt_accuracy.shape
            or hard.shape != (prompts,) or hard.dtype != bool or not hard.any()):
        raise ValueError(f"log_coverage must be [T + 1, P], prompt_accuracy and target_log_coverage [T, P] and hard a "
                         f"boolean mask of P with a hard prompt, got shapes {log_coverage.shape}, "
                         f"{prompt_accuracy.shape}, {target_log_coverage.shape} and {hard.shape}")
    coverage, accuracy, target = log_coverage[:, hard], prompt_accuracy[:, hard], target_log_coverage[:, hard]
    error = target - coverage[1:]
    budget_steps, rounded_steps = (_step_bound(accuracy + extra, target) for extra in (0.0, KL_ROUNDING))
    budget = budget_steps.sum(0)
    met = budget <= math.log(2)
    kept = coverage.min(0) >= coverage[0] - math.log(2)
    budget_median = float(np.median(budget))
    return {"hard": int(hard.sum()), "met": int(met.sum()), "kept_half": int(kept.sum()),
            "met_and_lost": int((met & ~kept).sum()), "violations": int((error > rounded_steps + 1e-4).sum()),
            "error": float(f"{np.median(error.sum(0)):.4g}"),
            "budget": float(f"{budget_median:.4g}") if math.isfinite(budget_median) else None}


def _step_bound(accuracy: np.ndarray, log_target: np.ndarray) -> np.ndarray:
    """``b_t = -log(1 - sqrt(2 delta_t / c*_{t+1}))``, infinite where the root reaches 1 (:func:`inner_condition`)."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        root = np.sqrt(2 * accuracy * np.exp(-log_target))
        return np.where(root < 1, -np.log1p(-np.minimum(root, 1.0)), np.inf)


def run_paths(study: TransformerStudy, run: int) -> dict:
    """The path of run ``run`` of ``study`` as JSON-ready data (module docstring)."""
    check_instance("study", study, TransformerStudy)
    run = check_count("run", run, 0)
    if run >= len(study.run_cell):
        raise ValueError(f"run must be below the study's {len(study.run_cell)} runs, got {run}")
    cell, K = study.cells[study.run_cell[run]], study.setup.inner_steps
    rows = kept_steps(study.setup.n_steps)
    panels = {}
    for panel, (coverage, near, hard) in zip(PANELS, (
            (study.log_coverage[run], study.log_near[run], study.train_hard[run]),
            (study.held_log_coverage[run], study.held_log_near[run], study.held_hard[run]))):
        panels[panel] = {name: _rounded(values[rows]) for name, values in
                         _panel_series(coverage, near, hard).items()}
        panels[panel]["first_loss_step"] = first_loss_step(coverage, hard, K)
    path = {"arm": cell.arm, "reward": cell.reward, "task": cell.task, "group_size": cell.group_size,
            "seed": int(study.run_seed[run]), "optimizer_steps": (rows * K).tolist(),
            "kl": _rounded(study.kl[run][rows]), **panels}
    if study.methods[cell.arm].exact:
        accuracy, distance = study.accuracy[run], study.step_distance()[run]
        moving = distance > MIN_DISTANCE
        closed = 1 - accuracy[moving] / distance[moving]
        inner_rows = rows[rows < len(accuracy)]
        path["inner"] = {"accuracy": _rounded(accuracy[inner_rows]),
                         "accuracy_sum": _rounded(np.cumsum(accuracy)[inner_rows]),
                         "total": float(f"{accuracy.sum():.5g}"), "closed": float(f"{np.median(closed):.5g}"),
                         "condition": inner_condition(study.log_coverage[run], study.prompt_accuracy[run],
                                                      study.target_log_coverage[run], study.train_hard[run])}
    return path


def mirror_descent_paths(study: TransformerStudy, beta: float = STRONG_BETA) -> list[dict]:
    """Exact mirror descent at ``beta`` from each seed's base model, on the prompts of ``study``'s mixed-task runs.

    ``pi_t(y|x)`` is proportional to ``pi_0(y|x) exp(t r(x, y) / beta)`` (paper section 3); only
    the correct answer and the near miss are rewarded, so the path needs only their base
    probabilities. One path per seed and reward, in the same form as :func:`run_paths`, at
    every outer step of the study (an outer step of exact mirror descent is one exact reset).
    """
    check_instance("study", study, TransformerStudy)
    beta = check_positive("beta", beta)
    steps = np.arange(study.setup.n_steps + 1)
    rows = kept_steps(study.setup.n_steps)
    paths = []
    for reward in sorted({cell.reward for cell in study.cells}, key=("partial", "binary").index):
        for seed in study.seeds:
            run = next(r for r in range(len(study.run_cell)) if study.run_seed[r] == seed
                       and study.cells[study.run_cell[r]].reward == reward)
            near_reward = study.near_reward[run]
            panels, kl = {}, None
            for panel, (coverage, near, hard) in zip(PANELS, (
                    (study.log_coverage[run, 0], study.log_near[run, 0], study.train_hard[run]),
                    (study.held_log_coverage[run, 0], study.held_log_near[run, 0], study.held_hard[run]))):
                scale = steps[:, None] / beta
                with np.errstate(divide="ignore"):
                    rest = np.log(-np.expm1(np.minimum(np.logaddexp(coverage, near), 0.0)))
                log_z = np.logaddexp.reduce(np.stack(np.broadcast_arrays(
                    coverage + scale, near + scale * near_reward, rest + 0 * scale)), axis=0)
                log_c, log_n = coverage + scale - log_z, near + scale * near_reward - log_z
                panels[panel] = {name: _rounded(values[rows]) for name, values in
                                 _panel_series(log_c, log_n, hard).items()}
                panels[panel]["first_loss_step"] = first_loss_step(log_c, hard, 1)
                if panel == "training":
                    kl = (np.exp(log_c) * scale + np.exp(log_n) * scale * near_reward).mean(1) - log_z.mean(1)
            paths.append({"arm": "mirror descent", "reward": reward, "seed": int(seed),
                          "outer_steps": rows.tolist(), "kl": _rounded(kl[rows]), **panels})
    return paths


def frontier_study_run(progress: bool = True, seed: int = 0) -> dict:
    """Run every block of :data:`BLOCKS` on the seeds of :data:`FRONTIER_SIZES`; the unstamped run of a record.

    Returns ``{"blocks": {name: {"n_steps", "inner_steps", "seconds", "paths", "mirror_descent"}}}``
    (``mirror_descent`` in the long block only). The base models of a task family are pre-trained
    once and shared by every block that runs it.
    """
    progress = check_flag("progress", progress)
    blocks, plans = {}, {}
    for name, block in BLOCKS.items():
        start = time.perf_counter()
        task = block.get("task", ReversalTask())
        sizes = {**FRONTIER_SIZES, "n_steps": block["n_steps"], "inner_steps": block["inner_steps"],
                 "slot_size": block.get("slot_size", SIZES["full"]["slot_size"])}
        if task not in plans:
            plans[task] = plan_study("full", seed=seed, cells=block["cells"], sizes=sizes, task=task)
        plan = plans[task]
        setup = replace(plan.setup, n_steps=block["n_steps"], inner_steps=block["inner_steps"],
                        slot_size=sizes["slot_size"])
        plan = replace(plan, setup=setup, cells=block["cells"], sizes={**plan.sizes, **sizes})
        study = transformer_study("full", seed=seed, plan=plan, progress=progress)
        entry = {"n_steps": block["n_steps"], "inner_steps": block["inner_steps"],
                 "paths": [run_paths(study, run) for run in range(len(study.run_cell))]}
        if name == "long":
            entry["mirror_descent"] = mirror_descent_paths(study)
        entry["seconds"] = round(time.perf_counter() - start, 1)
        blocks[name] = entry
    return {"blocks": blocks}
