"""The one build of the book that a test session makes, under the second CPU profile.

The browser tests check the built site, and the test command must also show that every chapter
builds under the second CPU profile (``scripts/cpu_profile.py``). Both needs are met by one
build: ``jupyter-book build . -W -n --keep-going --all`` under that profile, into
``_build/second-profile/``. It executes no chapter itself: nbval has run every chapter in the
build's kernels (``tests/chapter_executions.py``), and once the last chapter is done the build
renders those executions (``book/_ext/executed_chapters.py``). A chapter that failed under nbval
is not built again: the build is recorded as failed, naming it. The tests that need the site
wait for the build.

A build is reused instead when it is newer than every source of the book and was made by an
earlier test session (its outcome is recorded next to it, so a failed build stays failed).

The test command runs in two worker processes (pytest-xdist), and each collects the tests, so
each asks for the build: a lock file decides which one makes it, and the others wait for the
record it writes when the build ends, marked with the session's id (the worker that builds
waits for the build at the end of its tests too, so the others always find the record).
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn

from tests.chapter_executions import EXECUTIONS, chapter_record, executions_folder

REPOSITORY = Path(__file__).resolve().parent.parent
OUTPUT = REPOSITORY / "_build" / "second-profile"
HTML = OUTPUT / "_build" / "html"
EXECUTED = OUTPUT / "_build" / "jupyter_execute"
LOG = OUTPUT / "build.log"
RECORD = OUTPUT / "build.json"
LOCK = OUTPUT / "build.lock"
# The README's build flags; --all starts from a fresh environment, so every page is read again
# and every warning is seen (an incremental build stays silent about pages that did not change).
BUILD_FLAGS = ("-W", "-n", "--keep-going", "--all")
# Hang guards only. The build renders executions and executes nothing: about a minute of one
# core. The chapters the build waits for take about three minutes of the session's two workers
# on an idle 2-core machine.
TIMEOUT_S = 1800
EXECUTIONS_TIMEOUT_S = 3600


def book_extension(name: str):
    """One of the book's Sphinx extensions (``book/_ext/<name>.py``), imported as a module."""
    spec = importlib.util.spec_from_file_location(name, REPOSITORY / "book" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXECUTIONS_VARIABLE = book_extension("executed_chapters").EXECUTIONS_VARIABLE
EXECUTED_BY_THE_BUILD = re.compile(r"^(\S+): Executing notebook", flags=re.M)


@dataclass(frozen=True)
class BuiltSite:
    """The HTML build the tests look at: whether this session made it, and how the build ended."""

    html: Path
    executed: Path
    rebuilt: bool
    returncode: int
    failure: str = ""
    handed: tuple[str, ...] = ()
    executed_by_the_build: tuple[str, ...] = ()


def second_profile() -> dict[str, str]:
    """The environment variables of the second CPU profile, as ``scripts/cpu_profile.py`` prints them."""
    printed = subprocess.run(
        [sys.executable, str(REPOSITORY / "scripts" / "cpu_profile.py")], capture_output=True, text=True, check=True
    ).stdout
    return dict(line.split("=", 1) for line in printed.split())


def book_sources() -> list[Path]:
    """Every file whose change can change the built site."""
    files = [REPOSITORY / name for name in ("_config.yml", "_toc.yml", "references.bib")]
    for root in (REPOSITORY / "book", REPOSITORY / "src" / "covpo"):
        files += [
            path
            for path in root.rglob("*")
            if path.is_file()
            and "__pycache__" not in path.parts
            and not any(part.startswith(".") for part in path.relative_to(REPOSITORY).parts)
        ]
    return [path for path in files if path.exists()]


def recorded_build() -> dict | None:
    """The record of an earlier session's build if that build is newer than every source, else None."""
    stamp = HTML / ".buildinfo"
    if not stamp.exists() or not RECORD.exists():
        return None
    record = json.loads(RECORD.read_text())
    if record.get("buildinfo_mtime") != stamp.stat().st_mtime or record.get("profile") != second_profile():
        return None
    if stamp.stat().st_mtime < max(path.stat().st_mtime for path in book_sources()):
        return None
    return record


def jupyter_book() -> str | None:
    beside_python = Path(sys.executable).with_name("jupyter-book")
    return str(beside_python) if beside_python.exists() else shutil.which("jupyter-book")


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
FAILED_CELL = re.compile(r"An error occurred while executing the following cell:\n-+\n(?P<cell>.*?)\n-+\n", flags=re.S)
ERROR_LINE = re.compile(r"^[\w.]*(?:Error|Exception)(?::.*)?$", flags=re.M)


def describe_build_failure(log: str) -> str:
    """What broke a failed build, in a few lines: the chapter and the cell that raised, or the warnings.

    A chapter whose cell raises stops the build (``raise_on_error``); the log then names the
    chapter (``ExecutionError: <path>``) and nbclient's error shows the cell's source and its
    traceback. Any other failure is a warning turned into an error by ``-W``.
    """
    log = ANSI_ESCAPE.sub("", log)
    chapter = re.search(r"ExecutionError: (\S+)", log)
    cell = FAILED_CELL.search(log)
    if chapter and cell:
        where = Path(chapter.group(1))
        where = where.relative_to(REPOSITORY) if where.is_relative_to(REPOSITORY) else where
        error = ERROR_LINE.search(log, cell.end())
        return f"{where} failed to execute.\nThe cell that raised:\n{cell.group('cell')}\n\n{error.group(0) if error else ''}"
    # Kernels log their own "WARNING" lines (e.g. about TCP transport); those stop nothing.
    warnings = [
        line for line in log.splitlines()
        if ("WARNING" in line or "ERROR" in line) and not line.startswith(("[IPKernelApp]", "[ipykernel"))
    ]
    if warnings:
        return "the build stopped on these warnings (errors under -W):\n" + "\n".join(warnings[:20])
    return f"the build failed; the end of its log ({LOG}):\n{log[-3000:]}"


class SessionBuild:
    """The build of this test session: made by one process of the session (in the background), awaited by the tests that need it."""

    def __init__(self) -> None:
        self._session = ""
        self._lock = None
        self._process: subprocess.Popen | None = None
        self._waiter: threading.Thread | None = None
        self._stop = threading.Event()
        self._result: BuiltSite | None = None

    def start(self, session: str, chapters: list[str]) -> None:
        """Start the build once ``chapters`` are executed, unless a fresh one exists or a process of ``session`` started it.

        The build is made in the background: a thread of this process waits until nbval has
        left a record of every chapter in :func:`~tests.chapter_executions.executions_folder`,
        then starts ``jupyter-book`` on those executions.
        """
        if self._session:
            return
        self._session = session
        if (record := recorded_build()) is not None:
            self._result = BuiltSite(HTML, EXECUTED, False, record["returncode"], record["failure"])
            return
        OUTPUT.mkdir(parents=True, exist_ok=True)
        lock = LOCK.open("w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            return
        self._lock = lock
        for earlier in EXECUTIONS.glob("*"):
            if earlier.name != session:
                shutil.rmtree(earlier, ignore_errors=True)
        self._waiter = threading.Thread(target=self._build_when_executed, args=(chapters,), daemon=True)
        self._waiter.start()

    def _build_when_executed(self, chapters: list[str]) -> None:
        folder = executions_folder(self._session)
        records = self._await_executions(folder, chapters)
        if records is None:
            self._record(1, "the session stopped before every chapter had run, so the book was not built", {})
            return
        unfinished = {chapter: record for chapter, record in records.items() if record["status"] != "passed"}
        if unfinished:
            named = "; ".join(f"{chapter} ({record['reason']})" for chapter, record in unfinished.items())
            self._record(1, f"not built: these chapters did not pass under nbval, whose tests say why: {named}", {})
            return
        if missing := [chapter for chapter in chapters if chapter not in records]:
            self._record(1, f"not built: no execution of {missing} came within {EXECUTIONS_TIMEOUT_S} s (a hang?)", {})
            return
        executable = jupyter_book()
        if executable is None:
            self._record(127, "jupyter-book is not installed, so the book cannot be built", {})
            return
        cache = get_cache(str(folder / "cache"))
        for record in records.values():
            bundle = CacheBundleIn(nbformat.reads(record["notebook"], as_version=4), record["source"],
                                   data={"execution_seconds": record["seconds"]})
            cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
        profile = second_profile()
        with LOG.open("w") as log:
            self._process = subprocess.Popen(
                [executable, "build", str(REPOSITORY), *BUILD_FLAGS, "--path-output", str(OUTPUT)],
                cwd=REPOSITORY, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, **profile, EXECUTIONS_VARIABLE: str(folder / "cache")},
            )
            try:
                returncode = self._process.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                returncode = self._process.wait()
        text = LOG.read_text(errors="replace")
        failure = describe_build_failure(text) if returncode else ""
        self._record(returncode, failure, profile, handed=chapters,
                     executed_by_the_build=[Path(path).stem for path in EXECUTED_BY_THE_BUILD.findall(text)])

    def _await_executions(self, folder: Path, chapters: list[str]) -> dict[str, dict] | None:
        """Every chapter's record, once all are written or one did not pass; ``None`` if the session stopped first.

        After :data:`EXECUTIONS_TIMEOUT_S` (a hang guard), the records written by then.
        """
        records: dict[str, dict] = {}
        waited = 0.0
        while waited < EXECUTIONS_TIMEOUT_S:
            for chapter in chapters:
                if chapter not in records and (record := chapter_record(folder, chapter)) is not None:
                    records[chapter] = record
            if len(records) == len(chapters) or any(r["status"] != "passed" for r in records.values()):
                return records
            if self._stop.wait(0.5):
                return None
            waited += 0.5
        return records

    def _record(self, returncode: int, failure: str, profile: dict[str, str], **fields: object) -> None:
        """Write the build's outcome for this session, then let the session's other processes read it."""
        stamp = HTML / ".buildinfo"
        RECORD.write_text(json.dumps({
            "buildinfo_mtime": stamp.stat().st_mtime if stamp.exists() else None,
            "returncode": returncode,
            "failure": failure,
            "profile": profile,
            "session": self._session,
            **fields,
        }))
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()

    def result(self) -> BuiltSite:
        """The build, waiting for it to finish (started at collection, :func:`tests.conftest.pytest_collection_finish`)."""
        self.start(self._session or uuid.uuid4().hex, [])
        if self._result is not None:
            return self._result
        if self._waiter is not None:
            self._waiter.join()
        else:
            with LOCK.open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
        record = json.loads(RECORD.read_text()) if RECORD.exists() else {}
        if record.get("session") != self._session:
            self._result = BuiltSite(HTML, EXECUTED, False, 1, "the process that built the book stopped before the build ended")
        else:
            self._result = BuiltSite(HTML, EXECUTED, True, record["returncode"], record["failure"],
                                     tuple(record.get("handed", ())), tuple(record.get("executed_by_the_build", ())))
        return self._result

    def finish(self, interrupted: bool) -> None:
        """At the end of this process's tests: wait for a build it started (other processes may need it), or end it if interrupted."""
        if self._waiter is None:
            return
        if interrupted:
            self._stop.set()
            if self._process is not None and self._process.poll() is None:
                self._process.kill()
        self._waiter.join()


SESSION_BUILD = SessionBuild()
