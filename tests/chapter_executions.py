"""Each chapter is executed once per test session, by nbval, and the session's build of the book reuses that execution.

In a session that builds the book (``tests/book_build.py``), the kernels in which nbval runs
the chapters are the build's kernels: they start under the second CPU profile
(``scripts/cpu_profile.py``) and with every widget's static stand-in requested
(:data:`covpo.static_pages.STANDINS_VARIABLE`), exactly as the build would start them. While
nbval runs a chapter's cells, :class:`ChapterExecutions` keeps each cell's outputs; when the
chapter's last cell has passed, it writes the executed notebook to the session's folder of
executions (:func:`executions_folder`), and when a cell fails, a record that the chapter failed.
The build waits for a record of every chapter of the session, puts the executed notebooks in a
jupyter-cache, and builds from that cache (``book/_ext/executed_chapters.py``), so it executes
nothing itself.

No process waits on another one at a lower priority: the chapters run first, on both worker
processes, the build reads them as soon as the last one is done, and the tests of the built
site run last.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import IPyNbCell, IPyNbFile

from covpo.static_pages import STANDINS_VARIABLE

REPOSITORY = Path(__file__).resolve().parent.parent
EXECUTIONS = REPOSITORY / "_build" / "second-profile" / "executions"


def executions_folder(session: str) -> Path:
    """The folder where a session's chapters leave their executions: one ``<chapter>.json`` each."""
    return EXECUTIONS / session


def chapter_record(folder: Path, chapter: str) -> dict | None:
    """The record a session left for ``chapter`` (its file name without ``.ipynb``), or ``None`` while there is none."""
    path = folder / f"{chapter}.json"
    return json.loads(path.read_text()) if path.exists() else None


def write_record(folder: Path, chapter: str, record: dict) -> None:
    """Write a chapter's record in one step, so that the build never reads half of one."""
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{chapter}.{os.getpid()}"
    partial.write_text(json.dumps(record))
    os.replace(partial, folder / f"{chapter}.json")


def executed_notebook(notebook: nbformat.NotebookNode, outputs: dict[int, list]) -> nbformat.NotebookNode:
    """A copy of ``notebook`` whose ``n``-th code cell holds ``outputs[n]``, numbered as a kernel numbers them."""
    executed = nbformat.from_dict(json.loads(json.dumps(notebook)))
    code_cells = [cell for cell in executed.cells if cell.cell_type == "code"]
    for count, cell in enumerate(code_cells, start=1):
        cell.execution_count = count
        cell.outputs = []
        for output in outputs[count - 1]:
            output = nbformat.from_dict(dict(output))
            if output.output_type == "execute_result":
                output.execution_count = count
            cell.outputs.append(output)
    return executed


class ChapterExecutions:
    """Start nbval's kernels as the build's, keep what they print, and leave each chapter's execution for the build.

    A plugin rather than hooks of ``tests/conftest.py``: the chapters' notebooks live under
    ``_build/nbval/``, outside the tests' folder, where that file's own hooks do not reach.
    Inactive until :meth:`activate` (a session that builds the book).
    """

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.kernel_environment: dict[str, str] = {}
        self._last_cell: dict[IPyNbFile, str] = {}
        self._outputs: dict[IPyNbFile, dict[int, list]] = {}
        self._seconds: dict[IPyNbFile, float] = {}

    def activate(self, folder: Path, profile: dict[str, str], items: list[pytest.Item]) -> list[str]:
        """Record into ``folder``, start kernels under ``profile``; returns the chapters the build must wait for.

        A chapter of which only some cells were selected cannot give the build a whole
        execution: it is recorded at once as incomplete.
        """
        self.folder = folder
        self.kernel_environment = {**profile, STANDINS_VARIABLE: "1"}
        cells: dict[IPyNbFile, list[IPyNbCell]] = {}
        for item in items:
            if isinstance(item, IPyNbCell):
                cells.setdefault(item.parent, []).append(item)
        for chapter, selected in cells.items():
            self._last_cell[chapter] = selected[-1].nodeid
            if [cell.cell_num for cell in selected] != list(range(len(code_cells(chapter)))):
                self._finish(chapter, "incomplete", "only some of its cells were selected")
        return [chapter.path.stem for chapter in cells]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        starts_a_kernel = isinstance(item, IPyNbCell) and getattr(item.parent, "kernel", None) is None
        if self.folder is None or not starts_a_kernel:
            return (yield)
        with pytest.MonkeyPatch.context() as patch:
            for name, value in self.kernel_environment.items():
                patch.setenv(name, value)
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Iterator[pytest.TestReport]:
        report = yield
        chapter = item.parent if isinstance(item, IPyNbCell) else None
        if self.folder is None or chapter not in self._last_cell or chapter_record(self.folder, chapter.path.stem):
            return report
        if report.failed:
            self._finish(chapter, "failed", f"{item.name} failed in the {report.when} phase")
        elif report.skipped:
            self._finish(chapter, "incomplete", f"{item.name} was skipped")
        elif call.when == "call":
            self._outputs.setdefault(chapter, {})[item.cell_num] = item.test_outputs or []
            self._seconds[chapter] = self._seconds.get(chapter, 0.0) + call.duration
            if item.nodeid == self._last_cell[chapter]:
                notebook = executed_notebook(chapter.nb, self._outputs[chapter])
                self._finish(chapter, "passed", "", notebook=nbformat.writes(notebook), seconds=self._seconds[chapter])
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A chapter this process began but did not finish (the session stopped early) is recorded as incomplete."""
        if self.folder is None:
            return
        for chapter in self._outputs:
            if chapter_record(self.folder, chapter.path.stem) is None:
                self._finish(chapter, "incomplete", "the session stopped before its last cell")

    def _finish(self, chapter: IPyNbFile, status: str, reason: str, **fields: object) -> None:
        record = {"status": status, "reason": reason, "source": chapter_source(chapter.path.stem), "time": time.time()}
        write_record(self.folder, chapter.path.stem, {**record, **fields})


def code_cells(chapter: IPyNbFile) -> list[nbformat.NotebookNode]:
    notebook = getattr(chapter, "nb", None) or nbformat.read(chapter.path, as_version=4)
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def chapter_source(chapter: str) -> str:
    """The MyST-markdown file a converted chapter came from (``setting`` -> ``<repository>/book/setting.md``)."""
    return str(REPOSITORY / "book" / f"{chapter}.md")
