"""Every benchmark script still runs: each is run at its tiny size, so none can rot unnoticed.

A benchmark reads ``COVPO_BENCHMARK_TINY``; set to ``1``, every part of it runs at a size that
takes seconds (its times are then meaningless, and nothing here reads them). A script that does
not read the variable fails here without being run, since at its full size it would take minutes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPOSITORY

TINY_VARIABLE = "COVPO_BENCHMARK_TINY"
BENCHMARKS = sorted((REPOSITORY / "benchmarks").glob("bench_*.py"))
#: A hang guard only: at the tiny size each script takes seconds.
TIMEOUT_SECONDS = 600


def test_there_are_benchmarks():
    assert BENCHMARKS


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda path: path.name)
def test_the_benchmark_runs_at_its_tiny_size(script):
    assert TINY_VARIABLE in script.read_text(), f"{script.name} has no tiny size: read {TINY_VARIABLE}"
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=REPOSITORY,
        env={**os.environ, TINY_VARIABLE: "1"},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip(), f"{script.name} printed nothing"
    assert "FAILED" not in result.stdout, result.stdout[-3000:]
