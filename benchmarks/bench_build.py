"""Benchmark of the book build: a cold build with execution, and each chapter's execution time.

Run as ``python benchmarks/bench_build.py`` from the repository root, in the environment the
README sets up. It builds the whole book into a fresh temporary folder (so nothing is cached),
prints the wall time of the build against the 6-minute budget, and the execution time of
every chapter as myst-nb reports it. It asserts nothing. With ``COVPO_BENCHMARK_TINY=1`` it builds
only the two reference pages without code (:data:`TINY_TOC`), a check that the script still runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
BUILD_BUDGET_SECONDS = 360.0
TINY = os.environ.get("COVPO_BENCHMARK_TINY") == "1"
#: The table of contents of the tiny build: two pages that execute nothing and link nowhere.
TINY_TOC = "format: jb-book\nroot: book/notation\nchapters:\n  - file: book/execution\n"
EXECUTED = re.compile(r"(?P<chapter>\S+\.md): Executed notebook in (?P<seconds>[0-9.]+) seconds")


def main() -> None:
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    with tempfile.TemporaryDirectory() as output:
        command = [str(jupyter_book), "build", str(REPOSITORY), "--path-output", output]
        command += ["-W", "-n", "--keep-going", "--all"]
        if TINY:
            toc = Path(output) / "_toc.yml"
            toc.write_text(TINY_TOC)
            command += ["--toc", str(toc)]
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    status = "ok" if result.returncode == 0 else f"FAILED (exit {result.returncode})"
    print(f"cold build with execution: {seconds:7.1f} s  (budget {BUILD_BUDGET_SECONDS:.0f} s, "
          f"ratio {seconds / BUILD_BUDGET_SECONDS:.2f})  {status}")
    executed = [(Path(m["chapter"]).relative_to(REPOSITORY), float(m["seconds"])) for m in EXECUTED.finditer(result.stdout)]
    for chapter, chapter_seconds in executed:
        print(f"    {str(chapter):<28}{chapter_seconds:7.1f} s")
    print(f"    {'all chapters':<28}{sum(s for _, s in executed):7.1f} s")


if __name__ == "__main__":
    main()
