"""Collect every chapter listed in the book's table of contents as an nbval notebook test.

``tests/_toc.yml`` is a link to the book's ``_toc.yml``, so the table of contents is the one
list of chapters both the build and the tests use. Each MyST-markdown chapter that has code
cells is converted with jupytext into ``_build/nbval/`` and handed to
nbval, which executes every cell in a fresh kernel; a cell that raises fails its test. A
chapter listed in the table of contents but missing on disk is a failing test too.

Two more things every session shares live here: the book's build under the second CPU profile
(``tests/book_build.py``), started in the background once the tests that need it are
collected (by one of the session's two worker processes; the tests then run at a lower
scheduling priority than the build, the longest task of the session, and nbval's kernels leave
the drawing of figures to it), and the browser the Playwright tests drive: the system's Chromium
found on PATH, never a browser downloaded by Playwright (the machines the book is tested on have
no network).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml
from nbval.plugin import IPyNbFile

from covpo.plots.base import IMAGES_VARIABLE
from tests.book_build import SESSION_BUILD

pytest_plugins = ("pytester",)

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


def has_code(chapter: Path) -> bool:
    """Whether a MyST-markdown chapter has code cells (and so must run as a notebook)."""
    return any(cell.cell_type == "code" for cell in jupytext.read(chapter).cells)


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
            if not has_code(source):
                continue
            target = CONVERTED / f"{Path(entry).name}.ipynb"
            write_atomically(target, nbformat.writes(jupytext.read(source)))
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


# Tests that look at the built book: the build starts in the background once any is collected.
NEEDS_THE_BUILD = ("test_browser.py",)
# How much lower the test processes' scheduling priority is than the build's (a nice increment).
TESTS_YIELD_TO_THE_BUILD = 10
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
    """The order the files run in: chapters first, latest chapter first, the tests of the built site last.

    The two workers take whole files in this order (``--no-loadscope-reorder``). The chapters
    are the longest files, and the later ones run the larger studies (chapters 6 and 7 take
    longest), so they start at once, while the session's build runs, and the short unit-test
    files fill in behind them. The browser tests wait for the build, so they come when the
    rest is done instead of holding a worker idle.
    """
    chapters = {chapter: position for position, chapter in enumerate(
        dict.fromkeys(item.parent for item in items if isinstance(item.parent, IPyNbFile)))}

    def place(item: pytest.Item) -> tuple[int, int]:
        if item.parent in chapters:
            return 0, -chapters[item.parent]
        return (2 if item.path.name in NEEDS_THE_BUILD else 1), 0

    return sorted(items, key=place)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    items[:] = run_order(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    if any(item.path.name in NEEDS_THE_BUILD for item in session.items):
        SESSION_BUILD.start(session_id(session.config))
        # The build is the session's longest task: the tests (and the servers and browsers
        # they start, which inherit this) give way to it.
        os.nice(TESTS_YIELD_TO_THE_BUILD)
        yield_to_the_build("self")
        session.config.pluginmanager.get_plugin("covpo-kernels-defer").active = True


def autogroup_nice(pid: int | str) -> str | None:
    """The nice value of the scheduling group of process ``pid``, where Linux has one, else ``None``."""
    try:
        return Path(f"/proc/{pid}/autogroup").read_text().split()[-1]
    except (OSError, IndexError):
        return None


def set_autogroup_nice(pid: int | str, nice: int | str) -> None:
    """Set the nice value of the scheduling group of process ``pid``; nothing where there is none."""
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
    except OSError:
        pass


def yield_to_the_build(pid: int | str) -> None:
    """Lower the scheduling group of process ``pid`` by :data:`TESTS_YIELD_TO_THE_BUILD`.

    Where Linux groups CPU time by session (``/proc/<pid>/autogroup``, on by default), a
    process's nice value only orders it within its session, and every Jupyter kernel starts a
    session of its own: the kernels nbval starts would take the CPU from the build's kernels
    as equals, and the test processes from the build. Their groups' nice value, raised here,
    makes them yield (the test session's own group is set back when the run ends).
    """
    set_autogroup_nice(pid, TESTS_YIELD_TO_THE_BUILD)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        config._covpo_autogroup_nice = autogroup_nice("self")
    config.pluginmanager.register(KernelsDeferToTheBuild(), "covpo-kernels-defer")


def pytest_unconfigure(config: pytest.Config) -> None:
    if (nice := getattr(config, "_covpo_autogroup_nice", None)) is not None:
        set_autogroup_nice("self", nice)


class KernelsDeferToTheBuild:
    """Every kernel nbval starts gives way to the session's build of the book.

    It starts with :data:`~covpo.plots.base.IMAGES_VARIABLE` at ``0``: the build draws every
    figure of every chapter and the browser tests look at the drawn pages, so nbval's kernels run
    every cell and every hidden assertion without drawing the figures a second time. The
    variable is set only while nbval starts the kernel, which inherits it; the test process
    itself, and the build, servers and browsers it starts, never see it. Once started, the
    kernel's scheduling group is lowered (:func:`yield_to_the_build`).

    A plugin rather than a hook of this file: the chapters' notebooks live under
    ``_build/nbval/``, outside this folder, where this file's own hooks do not reach. Active
    only in a session that builds the book.
    """

    active = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        starts_a_kernel = isinstance(item.parent, IPyNbFile) and getattr(item.parent, "kernel", None) is None
        if not (self.active and starts_a_kernel):
            return (yield)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMAGES_VARIABLE, "0")
            result = yield
        yield_to_the_build(item.parent.kernel.km.provisioner.pid)
        return result


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
