"""Benchmark of the README's test command on a busy machine: its verdict and time beside N busy processes.

Run from the repository root, in the environment the README sets up::

    python benchmarks/bench_loaded_tests.py --busy 0 1 3
    python benchmarks/bench_loaded_tests.py --busy 3 --clone

For each count of busy processes it starts that many CPU-bound loops (plain Python ``while
True``), each in a session of its own, so that Linux's per-session scheduling gives each the
weight of a separate program (a browser, an editor, another build), and runs the test command
beside them with ``CI=true`` (so a missing browser fails instead of skipping). It prints, per
count, the wall time, the pytest summary line and the ratio of the wall time to the first
count's. The verdict must be the same at every count: load may make the suite slower, never
make it fail.

By default the command is the test command's last step, ``python -m pytest`` with the Python
that runs this script, in this checkout (with its ``_build`` removed first, so that nothing is
reused). With ``--clone`` the whole test command, as the README gives it, runs in a fresh clone
of ``HEAD`` in a temporary folder, as CI runs it: the first count makes the clone's virtual
environment and installs into it; later counts find it made, so the install only confirms it
(a few seconds instead of about half a minute).
``--tests`` passes other arguments to pytest instead of the whole suite (``--tests
tests/test_table.py`` for a quick try of this script). With ``COVPO_BENCHMARK_TINY=1`` and no
``--tests``, it runs one quick test, without xdist, beside 1 busy process, and
leaves ``_build`` in place (a check that the script still runs). It asserts nothing. Each run's
whole output is kept in ``--logs`` (default ``covpo-loaded-tests`` in the system's temporary
folder, where no run removes it), one ``busy-<count>.log`` per count, and the tests that failed
are printed under the run's line.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
BUSY_LOOP = "while True:\n    pass"
TINY = os.environ.get("COVPO_BENCHMARK_TINY") == "1"
TINY_TESTS = ["-p", "no:cacheprovider", "-o", "addopts=", "tests/test_table.py::test_cells_are_formatted_by_type"]
SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|error).*?)\s*=*$", flags=re.M)


def readme_test_command() -> str:
    """The README's test command: its bash block that runs pytest."""
    blocks = re.findall(r"```bash\n(.*?)\n```", (REPOSITORY / "README.md").read_text(), flags=re.S)
    return next(block for block in blocks if "pytest" in block)


@contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """``count`` CPU-bound loops, each in a session (and so a scheduling group) of its own, for the duration."""
    loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP], start_new_session=True) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


FAILED = re.compile(r"^(?:FAILED|ERROR) .*$", flags=re.M)


def run_test_command(checkout: Path, command: list[str] | str, busy: int, fresh: bool,
                     log: Path) -> tuple[float, int, str, list[str]]:
    """Run ``command`` in ``checkout`` beside ``busy`` busy processes, its output kept in ``log``.

    Returns the wall seconds, the exit status, pytest's summary line and pytest's lines for the
    tests that failed. With ``fresh``, ``checkout``'s ``_build`` is removed first, so that no
    build is reused.
    """
    if fresh:
        shutil.rmtree(checkout / "_build", ignore_errors=True)
    with busy_processes(busy):
        start = time.perf_counter()
        result = subprocess.run(command, cwd=checkout, shell=isinstance(command, str), capture_output=True, text=True,
                                env={**os.environ, "CI": "true"})
        seconds = time.perf_counter() - start
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(result.stdout + result.stderr)
    found = SUMMARY.findall(result.stdout)
    return seconds, result.returncode, found[-1] if found else result.stdout[-300:], FAILED.findall(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, nargs="+", default=[1] if TINY else [0, 1, 3],
                        help="counts of busy processes, one run each")
    parser.add_argument("--clone", action="store_true", help="run the whole README test command in a fresh clone of HEAD")
    parser.add_argument("--tests", nargs="+", help="pytest arguments instead of the whole suite")
    parser.add_argument("--logs", type=Path, default=Path(tempfile.gettempdir()) / "covpo-loaded-tests",
                        help="folder for each run's whole output")
    arguments = parser.parse_args()
    tiny = TINY and not arguments.tests
    if tiny:
        arguments.tests = TINY_TESTS
    if any(count < 0 for count in arguments.busy):
        parser.error("--busy counts must be non-negative")

    with tempfile.TemporaryDirectory() as folder:
        if arguments.clone:
            checkout = Path(folder) / "clone"
            subprocess.run(["git", "clone", "--quiet", str(REPOSITORY), str(checkout)], check=True)
            command: list[str] | str = readme_test_command()
            if arguments.tests:
                command += " " + " ".join(arguments.tests)
        else:
            checkout = REPOSITORY
            command = [sys.executable, "-m", "pytest", *(arguments.tests or [])]
        print(f"{os.cpu_count()} CPUs; {'fresh clone, the whole README test command' if arguments.clone else 'this checkout, pytest'}")
        first = None
        for busy in arguments.busy:
            log = arguments.logs.resolve() / f"busy-{busy}.log"
            seconds, status, summary, failed = run_test_command(checkout, command, busy, fresh=not tiny, log=log)
            first = first or seconds
            print(f"busy {busy}: {seconds:7.1f} s (ratio {seconds / first:4.2f})  exit {status}  {summary}", flush=True)
            for line in failed:
                print(f"    {line}", flush=True)


if __name__ == "__main__":
    main()
