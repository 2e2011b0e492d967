"""The publishing workflow builds the book with the README's command and points the buttons at its own repository."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPOSITORY

WORKFLOW = REPOSITORY / ".github" / "workflows" / "publish.yml"
README = REPOSITORY / "README.md"
sys.path.insert(0, str(REPOSITORY / "scripts"))
from set_repository import pages_url, set_repository  # noqa: E402


def readme_command(title: str) -> str:
    """The bash command the README gives under a bold ``**title**``."""
    match = re.search(rf"\*\*{re.escape(title)}\*\*.*?```bash\n(.*?)\n```", README.read_text(), flags=re.S)
    assert match, f"the README has no bash block under **{title}**"
    return match.group(1).strip()


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def step(job: str, name: str) -> dict:
    steps = workflow()["jobs"][job]["steps"]
    found = [s for s in steps if s.get("name") == name]
    assert len(found) == 1, f"the {job} job has no step named {name!r}"
    return found[0]


def test_workflow_builds_with_the_readmes_build_command():
    assert step("build", "Build the book")["run"].strip() == readme_command("Build the book")


def test_workflow_runs_on_every_push_to_main_and_publishes_the_html():
    document = workflow()
    triggers = document[True] if True in document else document["on"]  # YAML 1.1 reads `on:` as true
    assert triggers["push"]["branches"] == ["main"]
    uses = {s.get("uses", "").split("@")[0]: s for job in document["jobs"].values() for s in job["steps"]}
    assert uses["actions/upload-pages-artifact"]["with"]["path"] == "_build/html"
    assert "actions/deploy-pages" in uses
    assert document["permissions"]["pages"] == "write" and document["permissions"]["id-token"] == "write"
    steps = document["jobs"]["build"]["steps"]
    names = [s.get("name") for s in steps]
    assert names.index("Point the book's buttons at this repository") < names.index("Build the book")


def test_the_workflow_fills_the_repository_it_runs_in(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text((REPOSITORY / "_config.yml").read_text())
    command = step("build", "Point the book's buttons at this repository")["run"]
    assert command.startswith("python3 scripts/set_repository.py ")
    arguments = command.removeprefix("python3 scripts/set_repository.py ")
    result = subprocess.run(
        f"{sys.executable} scripts/set_repository.py {arguments} --config {config}", shell=True, cwd=REPOSITORY,
        env={"GITHUB_REPOSITORY": "someone/their-fork", "GITHUB_REF_NAME": "main", "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )
    filled = yaml.safe_load(config.read_text())["repository"]
    assert filled["url"] == "https://github.com/someone/their-fork"
    assert filled["branch"] == "main"
    assert "https://someone.github.io/their-fork/" in result.stdout
    assert config.read_text().count("#") == (REPOSITORY / "_config.yml").read_text().count("#"), "comments were lost"


def test_readme_says_where_the_book_is_published():
    assert "https://<owner>.github.io/<repository>/" in README.read_text()
    assert pages_url("Owner/book") == "https://owner.github.io/book/"
    assert pages_url("owner/owner.github.io") == "https://owner.github.io/"


@pytest.mark.parametrize("repository, branch", [("no-slash", "main"), ("a/b c", "main"), ("a/b", ""), ("a/b", "x y")])
def test_set_repository_rejects_bad_names(repository, branch):
    with pytest.raises(ValueError, match="repository|branch"):
        set_repository((REPOSITORY / "_config.yml").read_text(), repository, branch)
