"""Benchmark of ``covpo.diagnose``: reading and diagnosing a long TRL completion log.

Run as ``python benchmarks/bench_diagnose.py``. It writes 1,000 TRL completions files of 512
rows each (64 prompts of a pool of 4,096, G = 8 completions each, two reward columns, the
columns of ``GRPOTrainer``'s log) into a temporary folder, then times, best of three, reading
them with :func:`covpo.diagnose.read_log` and diagnosing them with :func:`covpo.diagnose.diagnose`
(the report's figures are not drawn), against the 10 s target, and reading the same files with
pandas alone (``pandas.read_parquet`` per file and one ``concat``), printing the ratio. It
asserts nothing. With ``COVPO_BENCHMARK_TINY=1`` it writes 20 files of 64 rows and times each once.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from covpo.diagnose import diagnose, read_log, write_trl_step

TINY = os.environ.get("COVPO_BENCHMARK_TINY") == "1"
STEPS, PROMPTS_PER_STEP, GROUP, POOL = (20, 8, 8, 64) if TINY else (1000, 64, 8, 4096)
REPEATS = 1 if TINY else 3
TARGET_SECONDS = 10.0


def write_log(directory: Path, rng: np.random.Generator) -> list[Path]:
    """A simulated run's TRL files: each prompt's solve rate drifts, a fifth of the hard ones fall to zero."""
    base = rng.beta(0.6, 1.2, POOL)
    lost = rng.random(POOL) < 0.2
    files = []
    for step in range(1, STEPS + 1):
        chosen = rng.choice(POOL, PROMPTS_PER_STEP, replace=False)
        progress = step / STEPS
        rate = np.where(lost[chosen] & (progress > 0.5), 0.0, np.minimum(1.0, base[chosen] * (1 + 0.5 * progress)))
        solved = rng.random((PROMPTS_PER_STEP, GROUP)) < rate[:, None]
        prompts = [f"Question {p}: what is {p} times {p % 97}? Think step by step." for p in chosen for _ in range(GROUP)]
        completions = [f"The answer is {(p * (p % 97)) if s else p + 1}. Let me explain: ..." * 2
                       for p, row in zip(chosen, solved) for s in row]
        correct = solved.ravel().astype(float)
        files.append(write_trl_step(directory, step, prompts, completions,
                                    {"correct": correct, "tidy": np.full(correct.size, 0.2)}))
    return files


def best_time(function) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder) / "completions"
        files = write_log(directory, np.random.default_rng(0))
        rows = STEPS * PROMPTS_PER_STEP * GROUP

        def ours() -> None:
            diagnose(read_log(directory, reward="correct"))

        seconds = best_time(ours)
        print(f"{'task':<44}{'rows':>10}{'seconds':>10}{'target':>9}{'ratio':>8}")
        print(f"{'read_log + diagnose':<44}{rows:>10,}{seconds:>10.2f}{TARGET_SECONDS:>9.0f}{seconds / TARGET_SECONDS:>8.2f}")
        try:
            import pandas
        except ImportError:
            print("pandas is not installed: no comparison with reading by pandas alone")
            return

        def pandas_alone() -> None:
            pandas.concat([pandas.read_parquet(file) for file in files], ignore_index=True)

        reference = best_time(pandas_alone)
        print(f"{'pandas.read_parquet per file + concat':<44}{rows:>10,}{reference:>10.2f}{'':>9}{'':>8}")
        print(f"ratio of read_log + diagnose to pandas reading alone: {seconds / reference:.2f}")


if __name__ == "__main__":
    main()
