"""Collect every chapter listed in the book's table of contents as an nbval notebook test.

``tests/_toc.yml`` is a link to the book's ``_toc.yml``, so the table of contents is the one
list of chapters both the build and the tests use. Each MyST-markdown chapter that has code
cells is converted (by myst-nb's reader, as the build reads it) into ``_build/nbval/`` and
handed to nbval, which executes every cell in a fresh kernel; a cell that raises fails its test. A
chapter listed in the table of contents but missing on disk is a failing test too.

Two more things every session shares live here: the book's build under the second CPU profile
(``tests/book_build.py``), which in a session that has the tests of the built site renders the
executions nbval made of the chapters (``tests/chapter_executions.py``: nbval's kernels are
started as the build's, so every chapter executes once per session), and the browser the
Playwright tests drive: the system's Chromium found on PATH, never a browser downloaded by
Playwright (the machines the book is tested on have no network). Every process of a session
runs at the priority it was started with: nothing waits on a process that has been demoted.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
import yaml
from hypothesis import settings
from myst_nb.core.read import read_myst_markdown_notebook
from nbval.plugin import IPyNbFile

from tests.book_build import SESSION_BUILD, second_profile
from tests.chapter_executions import ChapterExecutions, executions_folder

pytest_plugins = ("pytester",)

# Property-based tests draw the same examples in every run, on every machine: a verdict must not
# depend on which examples a run happened to draw (explicit settings of a test override only
# what they name). Nor on how busy the machine is: no example has a deadline.
settings.register_profile("same-examples-everywhere", derandomize=True, database=None, deadline=None)
settings.load_profile("same-examples-everywhere")

REPOSITORY = Path(__file__).resolve().parent.parent
CONVERTED = REPOSITORY / "_build" / "nbval"


def chapter_files(toc_path: Path) -> list[str]:
    """Every ``file:`` entry of a jupyter-book table of contents, in reading order."""
    toc = yaml.safe_load(toc_path.read_text())
    found = [toc["root"]]

    def walk(entries: list[dict]) -> None:
        for entry in entries:
            if "file" in entry:
                found.append(entry["file"])
            for key in ("chapters", "sections", "parts"):
                walk(entry.get(key, []))

    walk([toc])
    return found


def numbered_pages(toc_path: Path) -> list[str]:
    """The numbered chapters and the pages listed under them as their ``sections``, which Sphinx numbers too.

    A chapter's section page (``book/ppo_details``, section 4.11) numbers its figures and tables
    on from its chapter's, so it is held to the numbered chapters' rules, in reading order.
    """
    toc = yaml.safe_load(toc_path.read_text())
    found: list[str] = []

    def walk(entries: list[dict]) -> None:
        for entry in entries:
            found.append(entry["file"])
            walk(entry.get("sections", []))

    for part in toc.get("parts", []):
        if part.get("numbered"):
            walk(part.get("chapters", []))
    return found


def numbered_chapters(toc_path: Path) -> list[str]:
    """The numbered chapters themselves, in reading order (a section page such as ``book/ppo_details`` continues its chapter)."""
    toc = yaml.safe_load(toc_path.read_text())
    return [chapter["file"] for part in toc.get("parts", []) if part.get("numbered") for chapter in part["chapters"]]


def read_chapter(chapter: Path) -> nbformat.NotebookNode:
    """A MyST-markdown chapter as a notebook, read by myst-nb's own reader, as the book's build reads it.

    The same reader makes the same code cells, so the build recognizes nbval's execution of a
    chapter as its own (``tests/chapter_executions.py``).
    """
    return read_myst_markdown_notebook(chapter.read_text(), add_source_map=True, path=str(chapter))


def has_code(notebook: nbformat.NotebookNode) -> bool:
    """Whether a chapter has code cells (and so must run as a notebook)."""
    return any(cell.cell_type == "code" for cell in notebook.cells)


class MissingChapter(pytest.Item):
    """A chapter that the table of contents lists but that does not exist."""

    def runtest(self) -> None:
        raise FileNotFoundError(f"{self.name} is listed in _toc.yml but no such .md file exists")

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


class BookChapters(pytest.File):
    """The table of contents, collected as one nbval notebook per executable chapter."""

    def collect(self) -> Iterator[pytest.Collector | pytest.Item]:
        CONVERTED.mkdir(parents=True, exist_ok=True)
        for entry in chapter_files(self.path):
            source = REPOSITORY / f"{entry}.md"
            if not source.exists():
                yield MissingChapter.from_parent(self, name=entry)
                continue
            notebook = read_chapter(source)
            if not has_code(notebook):
                continue
            target = CONVERTED / f"{Path(entry).name}.ipynb"
            write_atomically(target, nbformat.writes(notebook))
            yield IPyNbFile.from_parent(self, path=target)


def write_atomically(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` unless it already holds it, so that no reader sees a half-written file.

    Both worker processes of a session collect the chapters, and so convert them, at the same
    time: a file written in place can be read by the other worker while it is still empty.
    """
    if target.exists() and target.read_text() == text:
        return
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.write_text(text)
    os.replace(partial, target)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == "_toc.yml":
        return BookChapters.from_parent(parent, path=file_path)
    return None


# Tests that look at the built book: a session that collects any of them builds the book.
NEEDS_THE_BUILD = ("test_browser.py",)
# The unit-test file the first worker free of chapters takes while the other finishes the last
# chapter, which the build waits for (see run_order): the longest of many tests (about 40 s).
WHILE_THE_LAST_CHAPTER_RUNS = "test_transformer.py"
# The unit tests' second pass, under the second CPU profile: the longest unit-test file, so it
# starts early (after the built site's tests, see run_order).
SECOND_PROFILE_PASS = "test_second_profile_units.py"
# The longest of the other unit-test files (in a whole session on an idle 2-core machine: about
# 37, 18, 14, 14, 8, 7, 7, 6, 5 and 5 s), longest first, so that the short files fill in at the
# end and neither worker is left with a long file after the other has finished.
LONGEST_UNIT_FILES = (
    "test_fuzz.py",
    "test_benchmarks.py",
    "test_jupyterlab.py",
    "test_widgets.py",
    "test_dask_cluster.py",
    "test_head_to_head.py",
    "test_transformer_frontier.py",
    "test_algorithm_contract.py",
    "test_ppo_reliability.py",
    "test_chapter_executions.py",
)
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
# The flags the browser runs with: headless, and nothing that reaches for the network by itself
# (component updates, sync, QUIC), so that a closed network cannot hang it.
BROWSER_FLAGS = (
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
)


def session_id(config: pytest.Config) -> str:
    """One id for the whole test run: shared by its worker processes under pytest-xdist."""
    if not hasattr(config, "_covpo_session_id"):
        worker = getattr(config, "workerinput", None)
        config._covpo_session_id = worker["testrunuid"] if worker else uuid.uuid4().hex
    return config._covpo_session_id


def run_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """The order the files run in: chapters first, in the table of contents' reverse order, then one unit-test file, the tests of the built site and the second-profile pass.

    The two workers take whole files in this order (``--no-loadscope-reorder``). The chapters
    are the longest files, and the later ones run the larger studies (chapters 6 and 7 take
    longest), so they start at once, behind only the short reference pages that follow them;
    the session's build waits for the last of them. The first worker free of chapters takes
    :data:`WHILE_THE_LAST_CHAPTER_RUNS`, so that both cores compute until the last chapter is
    done (the site's tests would wait idle for it: 10 s of a core on an idle 2-core machine).
    The other takes the tests of the built site as it finishes its last chapter: they wait while
    the build renders the site, which keeps the core they leave busy, and then crawl it. The
    second-profile pass (the longest unit-test file) comes next. A worker is handed its next file
    while it still has two tests to run, so the site's tests come before the pass: behind the
    pass, which is one test, they would go to the same worker and wait for it. The other
    unit-test files come last, the longest first
    (:data:`LONGEST_UNIT_FILES`), so that short files fill both workers to the end (with the
    site's tests last, one worker crawled the site for half a minute after the other had
    finished).
    """
    chapters = {chapter: position for position, chapter in enumerate(
        dict.fromkeys(item.parent for item in items if isinstance(item.parent, IPyNbFile)))}

    def place(item: pytest.Item) -> tuple[int, int]:
        if item.parent in chapters:
            return 0, -chapters[item.parent]
        if item.path.name == WHILE_THE_LAST_CHAPTER_RUNS:
            return 1, 0
        if item.path.name in NEEDS_THE_BUILD:
            return 2, 0
        if item.path.name == SECOND_PROFILE_PASS:
            return 3, 0
        if item.path.name in LONGEST_UNIT_FILES:
            return 4, LONGEST_UNIT_FILES.index(item.path.name)
        return 4, len(LONGEST_UNIT_FILES)

    return sorted(items, key=place)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    items[:] = run_order(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    if any(item.path.name in NEEDS_THE_BUILD for item in session.items):
        executions = session.config.pluginmanager.get_plugin("covpo-chapter-executions")
        session_folder = executions_folder(session_id(session.config))
        chapters = executions.activate(session_folder, second_profile(), session.items)
        SESSION_BUILD.start(session_id(session.config), chapters)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(ChapterExecutions(), "covpo-chapter-executions")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stopped_early = exitstatus == pytest.ExitCode.INTERRUPTED or bool(session.shouldstop or session.shouldfail)
    SESSION_BUILD.finish(interrupted=stopped_early)


def find_browser() -> str | None:
    """The system's Chromium (or Chrome) on PATH."""
    for name in BROWSER_NAMES:
        if path := shutil.which(name):
            return path
    return None


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """Playwright launches the system's Chromium, headless, with :data:`BROWSER_FLAGS`.

    Without one the browser tests skip with the reason, except under ``CI=true``, where they
    fail (the README's test command installs Debian's ``chromium`` when it runs as root).
    """
    executable = find_browser()
    if executable is None:
        reason = (
            "no Chromium on PATH, so the browser tests cannot run: the README's test command "
            "installs Debian's chromium when it runs as root with apt-get; otherwise install it "
            "(apt-get install chromium)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return {**browser_type_launch_args, "executable_path": executable, "headless": True, "args": list(BROWSER_FLAGS)}
