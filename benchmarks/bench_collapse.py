"""Benchmark of the exact coverage-collapse engine, REINFORCE and APMD (paper sections 2.1 and 3.1).

Run as ``python benchmarks/bench_collapse.py``; with ``COVPO_BENCHMARK_TINY=1`` every part runs at a
tiny size (a check that the script still runs, its times meaningless). It prints, in one run:

(a) the straightforward full-vector numpy loop against the reduced compiled engine on an
    instance with 10,000 zero-reward responses, same steps, and their speed ratio
    (target: at least 50x);
(b) the wall time of 10 million exact gradient steps once compiled (target: under 2 s), with
    the first call's compile-or-cache-load time reported separately;
(c) the wall time of the chapter's sweeps (target: under 20 s for all of them);
(d) the same engine with reference resets (exact APMD): 10 million steps, and the wall time
    of the APMD chapter's sweeps, the beta escape map (target: under 8 s on 2 cores) and the
    data of Figures 1, 2a and 3.

It reports ratios and times; it asserts nothing.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np
from scipy.special import logsumexp

from covpo.experiments.collapse import (
    APMD_KNOB_GAPS,
    DEFAULT_APMD_BETA,
    DEFAULT_ETA,
    DEFAULT_INNER_STEPS,
    ESCAPE_MAP_BETAS,
    ESCAPE_MAP_GAPS,
    ETA_GRID,
    FIGURE_GAP,
    INNER_STEPS_GRID,
    REGULARIZED_GAPS,
    UNREGULARIZED_GAPS,
    apmd_steps_along_knob,
    beta_escape_map,
    beta_sweep,
    collapse_instance,
    engine,
    exact_apmd_run,
    exact_collapse_run,
    figure_1_data,
    figure_2a_data,
    figure_3_data,
    inner_steps_sweep,
    steps_to_eps_sweep,
)

TINY = os.environ.get("COVPO_BENCHMARK_TINY") == "1"
FULL_VECTOR_ZEROS = 100 if TINY else 10_000
FULL_VECTOR_STEPS = 200 if TINY else 20_000
ENGINE_REPEATS = 1 if TINY else 3
LONG_RUN_STEPS = 10_000 if TINY else 10_000_000
CHAPTER_BETA_SWEEP_GAP = 0.03
CHAPTER_BETAS = np.geomspace(1e-3, 1.0, 3 if TINY else 19)
CHAPTER_BETA_SWEEP_STEPS = 10_000 if TINY else 3_000_000
#: The sweeps' grids: the chapter's, or their first entries at the tiny size.
SWEEP_ENTRIES = 2 if TINY else None


def full_vector_reinforce(rewards: np.ndarray, base_logits: np.ndarray, eta: float, n_steps: int) -> np.ndarray:
    """Exact tabular REINFORCE with one logit per response: ``theta += eta pi (r - V)``."""
    theta = base_logits.copy()
    for _ in range(n_steps):
        probs = np.exp(theta - logsumexp(theta))
        theta += eta * probs * (rewards - probs @ rewards)
    return theta


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def main() -> None:
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}")

    instance = collapse_instance(0.12, n_zero=FULL_VECTOR_ZEROS)
    _, compile_seconds = timed(exact_collapse_run, instance, n_iterations=10)
    cache_hits = sum(engine._advance_exact_runs.stats.cache_hits.values())

    print(f"\n(a) full-vector numpy loop vs reduced engine, {FULL_VECTOR_ZEROS:,} zero-reward responses, "
          f"{FULL_VECTOR_STEPS:,} steps")
    rewards = np.concatenate([instance.rewards[:2], np.zeros(FULL_VECTOR_ZEROS)])
    base_logits = np.concatenate([instance.base_logits[:2], np.full(FULL_VECTOR_ZEROS, instance.base_logits[2])])
    theta, numpy_seconds = timed(full_vector_reinforce, rewards, base_logits, DEFAULT_ETA, FULL_VECTOR_STEPS)
    run, engine_seconds = min(
        (timed(exact_collapse_run, instance, n_iterations=FULL_VECTOR_STEPS, n_records=20) for _ in range(ENGINE_REPEATS)),
        key=lambda result: result[1],
    )
    difference = np.max(np.abs(run.final_logits - theta[[0, 1, 2]]))
    print(f"    numpy loop      {numpy_seconds:9.4f} s")
    print(f"    engine          {engine_seconds:9.4f} s   (best of {ENGINE_REPEATS}; largest logit difference "
          f"{difference:.1e})")
    print(f"    speed ratio     {numpy_seconds / engine_seconds:9.0f}x   (target >= 50x)")

    print(f"\n(b) {LONG_RUN_STEPS:,} exact gradient steps")
    print(f"    first call (compile, or load from numba's cache: {'cache' if cache_hits else 'compiled'}) "
          f"{compile_seconds:7.3f} s")
    long_run, long_seconds = timed(
        exact_collapse_run, collapse_instance(0.05), n_iterations=LONG_RUN_STEPS, progress=False
    )
    print(f"    wall time       {long_seconds:9.3f} s   ({1e9 * long_seconds / LONG_RUN_STEPS:.0f} ns/step, "
          f"target < 2 s); min log10 coverage {long_run.trajectory.min_log10_coverage:.2f}")

    print("\n(c) the chapter's sweeps")
    unregularized_gaps, regularized_gaps = UNREGULARIZED_GAPS[:SWEEP_ENTRIES], REGULARIZED_GAPS[:SWEEP_ENTRIES]
    unregularized, unregularized_seconds = timed(steps_to_eps_sweep, unregularized_gaps, progress=False)
    regularized, regularized_seconds = timed(steps_to_eps_sweep, regularized_gaps, regularized=True, progress=False)
    betas, beta_seconds = timed(
        beta_sweep,
        collapse_instance(CHAPTER_BETA_SWEEP_GAP),
        CHAPTER_BETAS,
        max_steps=CHAPTER_BETA_SWEEP_STEPS,
        progress=False,
    )
    total_steps = (
        unregularized.steps_to_eps.sum() + regularized.steps_to_eps.sum() + betas.steps_to_eps.sum()
    )
    total_seconds = unregularized_seconds + regularized_seconds + beta_seconds
    print(f"    unregularized sweep, {unregularized_gaps.size} gaps   {unregularized_seconds:7.3f} s")
    print(f"    regularized sweep, {regularized_gaps.size} gaps      {regularized_seconds:7.3f} s")
    print(f"    beta sweep, {CHAPTER_BETAS.size} betas            {beta_seconds:7.3f} s")
    print(f"    all three                     {total_seconds:7.3f} s   ({total_steps:,} gradient steps, target < 20 s)")

    print(f"\n(d) exact APMD (beta = {DEFAULT_APMD_BETA}, {DEFAULT_INNER_STEPS} gradient steps per reset)")
    apmd_run, apmd_seconds = timed(
        exact_apmd_run,
        collapse_instance(0.05),
        beta=DEFAULT_APMD_BETA,
        inner_steps=DEFAULT_INNER_STEPS,
        gradient_steps=LONG_RUN_STEPS,
        progress=False,
    )
    print(f"    {LONG_RUN_STEPS:,} steps  {apmd_seconds:9.3f} s   ({1e9 * apmd_seconds / LONG_RUN_STEPS:.0f} ns/step; "
          f"{apmd_run.trajectory.reference_resets[-1]:,} resets)")
    knob, knob_seconds = timed(apmd_steps_along_knob, APMD_KNOB_GAPS[:SWEEP_ENTRIES], progress=False)
    print(f"    knob sweep, {knob.gaps.size} gaps          {knob_seconds:7.3f} s   "
          f"({knob.steps_to_eps.sum():,} gradient steps)")
    counts, counts_seconds = timed(
        inner_steps_sweep,
        collapse_instance(FIGURE_GAP),
        INNER_STEPS_GRID[:SWEEP_ENTRIES],
        ETA_GRID[:SWEEP_ENTRIES],
        progress=False,
    )
    print(f"    inner-step sweep, {counts.steps_to_eps.size} runs    {counts_seconds:7.3f} s   "
          f"({counts.steps_to_eps.sum():,} gradient steps)")
    escape, escape_seconds = timed(beta_escape_map, ESCAPE_MAP_GAPS[:SWEEP_ENTRIES], ESCAPE_MAP_BETAS[:SWEEP_ENTRIES], progress=False)
    print(f"    beta escape map, {escape.outcome.size} runs    {escape_seconds:7.3f} s   "
          f"({escape.steps_to_eps.sum():,} gradient steps, target < 8 s on 2 cores)")
    for name, function in (("Figure 1", figure_1_data), ("Figure 2a", figure_2a_data), ("Figure 3", figure_3_data)):
        _, seconds = timed(function)
        print(f"    {name + ' data':<30}{seconds:7.3f} s")


if __name__ == "__main__":
    main()
