"""CI runs the README's test command, and that command's one build of the book is the second-profile build."""

from __future__ import annotations

import re
from pathlib import Path

import tests.book_build as book_build
from tests.conftest import REPOSITORY


def bash_blocks(path: Path) -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", path.read_text(), flags=re.S)


def test_ci_runs_exactly_the_readme_test_command():
    test_command = next(block for block in bash_blocks(REPOSITORY / "README.md") if "pytest" in block)
    commands = [line for line in (REPOSITORY / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert commands == [test_command], ".ci/run must run the README's test command and nothing else"


def test_the_session_build_executes_every_chapter_under_the_second_profile(monkeypatch, tmp_path):
    launched = {}

    class Recorded:
        def __init__(self, command, **options):
            launched.update(command=command, env=options["env"])

        def wait(self, timeout=None):
            return 0

        def poll(self):
            return 0

    profile = book_build.second_profile()
    monkeypatch.setattr(book_build, "second_profile", lambda: profile)
    for name, path in (("OUTPUT", ""), ("LOG", "build.log"), ("RECORD", "build.json"), ("LOCK", "build.lock"),
                       ("HTML", "html")):
        monkeypatch.setattr(book_build, name, tmp_path / path)
    monkeypatch.setattr(book_build, "recorded_build", lambda: None)
    monkeypatch.setattr(book_build.subprocess, "Popen", Recorded)
    session = book_build.SessionBuild()
    session.start("one session")
    built = session.result()
    assert built.rebuilt and built.returncode == 0
    command = launched["command"]
    assert command[1:3] == ["build", str(REPOSITORY)]
    assert {"-W", "-n", "--keep-going", "--all"} <= set(command), "the build must use the README's flags and --all"
    assert command[command.index("--path-output") + 1] == str(tmp_path)
    assert profile["NUMBA_CPU_NAME"] == "generic"
    assert all(launched["env"].get(name) == value for name, value in profile.items())


def test_a_reused_build_must_match_the_sources_and_the_profile(monkeypatch, tmp_path):
    html = tmp_path / "html"
    html.mkdir()
    (html / ".buildinfo").write_text("")
    monkeypatch.setattr(book_build, "HTML", html)
    monkeypatch.setattr(book_build, "RECORD", tmp_path / "build.json")
    assert book_build.recorded_build() is None, "a build without a record is not reused"
    import json

    stamp = (html / ".buildinfo").stat().st_mtime
    record = {"buildinfo_mtime": stamp, "returncode": 0, "failure": "", "profile": {"NUMBA_CPU_NAME": "host"}}
    (tmp_path / "build.json").write_text(json.dumps(record))
    assert book_build.recorded_build() is None, "a build under another profile is not reused"


def test_one_process_of_a_session_builds_and_the_others_read_its_record(monkeypatch, tmp_path):
    started = []

    class Recorded:
        def __init__(self, command, **options):
            started.append(command)

        def wait(self, timeout=None):
            return 0

        def poll(self):
            return 0

    for name, path in (("OUTPUT", ""), ("LOG", "build.log"), ("RECORD", "build.json"), ("LOCK", "build.lock"),
                       ("HTML", "html")):
        monkeypatch.setattr(book_build, name, tmp_path / path)
    monkeypatch.setattr(book_build, "second_profile", lambda: {})
    monkeypatch.setattr(book_build, "recorded_build", lambda: None)
    monkeypatch.setattr(book_build.subprocess, "Popen", Recorded)
    builder, reader = book_build.SessionBuild(), book_build.SessionBuild()
    with (tmp_path / "build.lock").open("w") as held:
        book_build.fcntl.flock(held, book_build.fcntl.LOCK_EX)
        reader.start("shared session")
    assert not started, "a process that finds the lock taken must not build"
    builder.start("shared session")
    builder.finish(interrupted=False)
    assert len(started) == 1
    assert reader.result().returncode == 0 and reader.result().rebuilt
    stale = book_build.SessionBuild()
    stale._session = "another session"
    stale._waiter = None
    assert stale.result().returncode != 0, "a record of another session is not this session's build"
