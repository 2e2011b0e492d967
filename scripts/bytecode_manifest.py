"""Compile the bytecode of the installed modules a test session imports, and record which they are.

The virtual environment's processes must not compile the modules they import: a test session
starts about thirty Python processes (two workers, a kernel per chapter and its joblib workers,
the build of the book, the unit tests' second pass), and where the environment writes no bytecode
(``PYTHONDONTWRITEBYTECODE``) each would compile every module it imports again. Compiling every
installed module ahead, as ``pip`` or ``uv --compile-bytecode`` do, compiles 9,600 of them, of
which a session imports about 4,100: on a 2-core machine that took 18 s of the test command's
wall time against about 6 here.

``scripts/bytecode_modules.txt`` lists the modules, as paths under the environment's
``site-packages``. Its first line holds the SHA-256 of ``requirements.txt`` it was made with;
``tests/test_environment.py`` fails when the requirements have changed since. A module missing
from the list is only compiled when a process imports it, so a stale list costs time, not a
failure. Run from the repository root::

    python scripts/bytecode_manifest.py            # compile the listed modules, on every core
    python scripts/bytecode_manifest.py --record   # run the README's test command and list what it imports
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import py_compile
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
MANIFEST = REPOSITORY / "scripts" / "bytecode_modules.txt"
REQUIREMENTS = REPOSITORY / "requirements.txt"
HEADER = "# requirements.txt sha256 "
FOLDER_VARIABLE = "COVPO_IMPORTS_FOLDER"
# Put on PYTHONPATH as sitecustomize.py while recording: every Python process of the session
# writes, as it exits, the file of every module it imported.
RECORDER = f"""
import atexit, os, sys


def _write_imported_files():
    folder = os.environ.get("{FOLDER_VARIABLE}")
    if folder:
        files = {{getattr(module, "__file__", None) for module in list(sys.modules.values())}}
        with open(os.path.join(folder, f"{{os.getpid()}}.txt"), "w") as out:
            out.write("\\n".join(sorted(name for name in files if name)))


atexit.register(_write_imported_files)
"""


def requirements_hash() -> str:
    """SHA-256 of ``requirements.txt``, the pins the listed modules belong to."""
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def site_packages() -> Path:
    """The running environment's ``site-packages``."""
    return Path(sysconfig.get_paths()["purelib"])


def listed_modules() -> list[Path]:
    """The manifest's modules that exist in this environment."""
    root = site_packages()
    lines = MANIFEST.read_text().splitlines() if MANIFEST.exists() else []
    return [root / line for line in lines if line and not line.startswith("#") and (root / line).is_file()]


def _compile(paths: list[Path]) -> int:
    compiled = 0
    for path in paths:
        cache = Path(importlib.util.cache_from_source(str(path)))
        if not cache.exists() or cache.stat().st_mtime < path.stat().st_mtime:
            py_compile.compile(str(path), doraise=False, quiet=1)
            compiled += 1
    return compiled


def compile_listed() -> int:
    """Compile the listed modules that have no bytecode yet, on every core (every installed module where there is no list); how many."""
    paths = listed_modules()
    if not paths:
        import compileall

        compileall.compile_dir(str(site_packages()), quiet=1, workers=0)
        return -1
    workers = os.cpu_count() or 1
    chunks = [paths[start::workers * 8] for start in range(workers * 8)]
    with ProcessPoolExecutor(workers) as pool:
        return sum(pool.map(_compile, chunks))


def record() -> int:
    """Run the README's test command with the recorder and write the manifest; the command's exit status."""
    root = site_packages()
    with tempfile.TemporaryDirectory() as scratch:
        recorder, found = Path(scratch) / "recorder", Path(scratch) / "imports"
        recorder.mkdir()
        found.mkdir()
        (recorder / "sitecustomize.py").write_text(RECORDER)
        path = os.pathsep.join(filter(None, [str(recorder), os.environ.get("PYTHONPATH")]))
        environment = {**os.environ, "PYTHONPATH": path, FOLDER_VARIABLE: str(found)}
        status = subprocess.run([sys.executable, "-m", "pytest"], cwd=REPOSITORY, env=environment).returncode
        imported = set()
        for listing in found.glob("*.txt"):
            for name in listing.read_text().splitlines():
                module = Path(name)
                if module.suffix == ".py" and module.is_relative_to(root):
                    imported.add(module.relative_to(root).as_posix())
    MANIFEST.write_text(HEADER + requirements_hash() + "\n" + "\n".join(sorted(imported)) + "\n")
    print(f"{len(imported)} modules listed in {MANIFEST.relative_to(REPOSITORY)} (test command exit status {status})")
    return status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="run the test command and list the modules it imports")
    if parser.parse_args().record:
        sys.exit(record())
    compile_listed()


if __name__ == "__main__":
    main()
