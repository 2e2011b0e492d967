"""CI runs the README's test command, and that command's one build of the book renders nbval's second-profile executions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
from jupyter_cache import get_cache

import tests.book_build as book_build
from tests.chapter_executions import write_record
from tests.conftest import REPOSITORY


def bash_blocks(path: Path) -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", path.read_text(), flags=re.S)


def test_ci_runs_exactly_the_readme_test_command():
    test_command = next(block for block in bash_blocks(REPOSITORY / "README.md") if "pytest" in block)
    commands = [line for line in (REPOSITORY / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert commands == [test_command], ".ci/run must run the README's test command and nothing else"


class RecordedBuild:
    """Stands in for ``subprocess.Popen``: records the command and environment of each build started."""

    launched: list[dict] = []

    def __init__(self, command, **options):
        RecordedBuild.launched.append({"command": command, "env": options["env"]})

    def wait(self, timeout=None):
        return 0

    def poll(self):
        return 0


def isolated_build(monkeypatch, tmp_path, profile: dict[str, str]) -> None:
    """Point the session build at ``tmp_path`` with the second profile ``profile`` and a recorded ``Popen``."""
    RecordedBuild.launched = []
    monkeypatch.setattr(book_build, "second_profile", lambda: profile)
    for name, path in (("OUTPUT", ""), ("LOG", "build.log"), ("RECORD", "build.json"), ("LOCK", "build.lock"),
                       ("HTML", "html"), ("EXECUTIONS", "executions")):
        monkeypatch.setattr(book_build, name, tmp_path / path)
    monkeypatch.setattr(book_build, "executions_folder", lambda session: tmp_path / "executions" / session)
    monkeypatch.setattr(book_build, "recorded_build", lambda: None)
    monkeypatch.setattr(book_build.subprocess, "Popen", RecordedBuild)


def leave_execution(tmp_path, session: str, chapter: str, status: str = "passed") -> nbformat.NotebookNode:
    """What nbval leaves for the build once a chapter's cells have run (tests/chapter_executions.py)."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1", execution_count=1, outputs=[
        nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)])])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    record = {"status": status, "reason": "Cell 0 failed in the call phase" if status != "passed" else "",
              "source": str(REPOSITORY / "book" / f"{chapter}.md")}
    if status == "passed":
        record |= {"notebook": nbformat.writes(notebook), "seconds": 1.5}
    write_record(tmp_path / "executions" / session, chapter, record)
    return notebook


def test_the_session_build_renders_nbvals_executions_under_the_second_profile(monkeypatch, tmp_path):
    profile = book_build.second_profile()
    isolated_build(monkeypatch, tmp_path, profile)
    session = book_build.SessionBuild()
    executed = leave_execution(tmp_path, "one session", "setting")
    session.start("one session", ["setting"])
    built = session.result()
    assert built.rebuilt and built.returncode == 0
    [launched] = RecordedBuild.launched
    command = launched["command"]
    assert command[1:3] == ["build", str(REPOSITORY)]
    assert {"-W", "-n", "--keep-going", "--all"} <= set(command), "the build must use the README's flags and --all"
    assert command[command.index("--path-output") + 1] == str(tmp_path)
    assert profile["NUMBA_CPU_NAME"] == "generic"
    assert all(launched["env"].get(name) == value for name, value in profile.items())
    cache = get_cache(launched["env"][book_build.EXECUTIONS_VARIABLE])
    assert cache.merge_match_into_notebook(executed)[1].cells[0].outputs[0].data["text/plain"] == "2"


def test_a_chapter_that_failed_under_nbval_is_not_built_again(monkeypatch, tmp_path):
    isolated_build(monkeypatch, tmp_path, {})
    session = book_build.SessionBuild()
    leave_execution(tmp_path, "one session", "setting")
    leave_execution(tmp_path, "one session", "collapse", status="failed")
    session.start("one session", ["setting", "collapse", "ppo"])
    built = session.result()
    assert not RecordedBuild.launched, "a chapter that failed must not be executed a second time by the build"
    assert built.returncode != 0 and "collapse (Cell 0 failed in the call phase)" in built.failure


def test_a_session_that_stops_early_ends_the_wait_for_its_chapters(monkeypatch, tmp_path):
    isolated_build(monkeypatch, tmp_path, {})
    session = book_build.SessionBuild()
    session.start("one session", ["setting"])
    session.finish(interrupted=True)
    assert not RecordedBuild.launched
    assert "stopped before every chapter had run" in json.loads((tmp_path / "build.json").read_text())["failure"]


def test_a_reused_build_must_match_the_sources_and_the_profile(monkeypatch, tmp_path):
    html = tmp_path / "html"
    html.mkdir()
    (html / ".buildinfo").write_text("")
    monkeypatch.setattr(book_build, "HTML", html)
    monkeypatch.setattr(book_build, "RECORD", tmp_path / "build.json")
    assert book_build.recorded_build() is None, "a build without a record is not reused"

    stamp = (html / ".buildinfo").stat().st_mtime
    record = {"buildinfo_mtime": stamp, "returncode": 0, "failure": "", "profile": {"NUMBA_CPU_NAME": "host"}}
    (tmp_path / "build.json").write_text(json.dumps(record))
    assert book_build.recorded_build() is None, "a build under another profile is not reused"


def test_one_process_of_a_session_builds_and_the_others_read_its_record(monkeypatch, tmp_path):
    isolated_build(monkeypatch, tmp_path, {})
    builder, reader = book_build.SessionBuild(), book_build.SessionBuild()
    leave_execution(tmp_path, "shared session", "setting")
    with (tmp_path / "build.lock").open("w") as held:
        book_build.fcntl.flock(held, book_build.fcntl.LOCK_EX)
        reader.start("shared session", ["setting"])
    assert not RecordedBuild.launched, "a process that finds the lock taken must not build"
    builder.start("shared session", ["setting"])
    builder.finish(interrupted=False)
    assert len(RecordedBuild.launched) == 1
    assert reader.result().returncode == 0 and reader.result().rebuilt
    stale = book_build.SessionBuild()
    stale._session = "another session"
    stale._waiter = None
    assert stale.result().returncode != 0, "a record of another session is not this session's build"


def test_a_chapter_that_never_finishes_is_named_after_the_hang_guard(monkeypatch, tmp_path):
    isolated_build(monkeypatch, tmp_path, {})
    monkeypatch.setattr(book_build, "EXECUTIONS_TIMEOUT_S", 1)
    session = book_build.SessionBuild()
    leave_execution(tmp_path, "one session", "setting")
    session.start("one session", ["setting", "ppo"])
    built = session.result()
    assert not RecordedBuild.launched and "no execution of ['ppo']" in built.failure
