"""The unit tests pass under the second CPU profile too, not only under the machine's own.

The chapters run under the second profile in every session that builds the book
(``tests/chapter_executions.py``), and the unit tests under the default one in the session
itself. A tolerance that holds on one CPU's kernels can fail on another's (a BFGS run that
stops on precision loss at a point that depends on the rounding, for instance), so this test
runs every unit-test file once more, in a pytest process of its own under
``scripts/cpu_profile.py``'s profile. The files left out compute no numbers that a CPU could
round differently: they check files, servers, a browser, the package's imports, Sphinx
extensions, the chapters' sources (their exercises and check cells), that bad input raises (the
fuzz suite), or that the benchmark scripts run at their
tiny size (their times are not read, and every number they compute is a unit test's too); the
profile's own test starts processes under the profile itself. Tests marked
``same_on_every_cpu`` are left out too: each compares one computation with itself (run twice, in
two processes, threads or chunkings, doing the same operations in the same order) or checks
structure, so no rounding can change its verdict.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.book_build import second_profile
from tests.conftest import REPOSITORY

TESTS = Path(__file__).resolve().parent
PROFILE_INDEPENDENT = (
    "test_browser.py",
    "test_jupyterlab.py",
    "test_dask_cluster.py",
    "test_binder.py",
    "test_publish_workflow.py",
    "test_book_build.py",
    "test_book_structure.py",
    "test_chapter_executions.py",
    "test_numref_targets.py",
    "test_page_extensions.py",
    "test_site_reading.py",
    "test_exercises.py",
    "test_check_cells.py",
    "test_environment.py",
    "test_sentence_lengths.py",
    "test_imports.py",
    "test_fuzz.py",
    "test_validation.py",
    "test_cpu_profile.py",
    "test_benchmarks.py",
    Path(__file__).name,
)
# A hang guard only: the pass takes about a minute and a half of one core on an idle machine.
TIMEOUT_S = 1800


def unit_test_files() -> list[str]:
    """Every unit-test file of the suite that computes (the chapters are not among them)."""
    return sorted(str(path.relative_to(REPOSITORY)) for path in TESTS.glob("test_*.py") if path.name not in PROFILE_INDEPENDENT)


def test_unit_tests_pass_under_the_second_cpu_profile():
    # --assert=plain: the pass's verdicts are the default pass's; its failure report names the
    # failing tests (and their messages), and rewriting every test module's assertions again
    # took five seconds of a core
    command = [sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "--disable-plugin-autoload", "-p", "_hypothesis_pytestplugin",
               "-p", "no:cacheprovider", "--assert=plain", "-m", "not same_on_every_cpu", *unit_test_files()]
    environment = {**os.environ, **second_profile()}
    ran = subprocess.run(command, cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=TIMEOUT_S)
    summary = [line for line in ran.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))] + ran.stdout.splitlines()[-1:]
    assert ran.returncode == 0, "under the second CPU profile:\n" + "\n".join(summary) + "\n" + ran.stderr[-2000:]
