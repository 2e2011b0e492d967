"""Binder builds the environment the book is built with.

Binder reads ``runtime.txt`` for the Python version and installs ``requirements.txt``. The
book's build and tests install the same file, so as long as every direct dependency is pinned
with ``==`` and the pins resolve on Binder's Python, the live notebooks run what the built
book ran. The last test compares a resolution of ``requirements.txt`` on that Python with the
pins. Where the tests themselves run on that Python, in the environment the README's commands
install from ``requirements.txt`` (uv installs it, ``scripts/make_environment.sh``), that
environment is a resolution: it holds each pin unless the pin resolved to something else (or the
environment has changed since), and ``pip check`` confirms that what it holds is consistent, so
pip on Binder has a consistent set that keeps every pin.
Elsewhere the test asks pip, in a fresh virtual environment made with that Python, for a dry
run of the install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import REPOSITORY

RUNTIME = REPOSITORY / "runtime.txt"
REQUIREMENTS = REPOSITORY / "requirements.txt"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)$")
OFFLINE_SIGNS = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "No route to host",
)


def canonical(name: str) -> str:
    """A package name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines() -> list[str]:
    lines = [line.split(" #")[0].strip() for line in REQUIREMENTS.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def pins() -> dict[str, str]:
    return {canonical(m["name"]): m["version"] for line in requirement_lines() if (m := PIN.match(line))}


def runtime_python() -> str:
    """The ``X.Y`` that runtime.txt names."""
    match = re.fullmatch(r"python-(\d+\.\d+)", RUNTIME.read_text().strip())
    assert match, f"runtime.txt must read python-X.Y, not {RUNTIME.read_text()!r}"
    return match.group(1)


def test_runtime_names_python_3_11():
    assert runtime_python() == "3.11"


def test_every_requirement_is_pinned_or_the_package_itself():
    lines = requirement_lines()
    assert "-e ." in lines, "requirements.txt must install the covpo package (-e .)"
    loose = [line for line in lines if line != "-e ." and not PIN.match(line)]
    assert not loose, f"requirements not pinned with ==: {loose}"
    names = [canonical(PIN.match(line)["name"]) for line in lines if PIN.match(line)]
    assert len(names) == len(set(names)), "a package is pinned twice"


def find_runtime_python(version: str) -> str | None:
    """An interpreter of exactly that ``X.Y`` on PATH, or None."""
    for name in (f"python{version}", "python3", "python"):
        path = shutil.which(name)
        if path is None:
            continue
        probe = subprocess.run(
            [path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return path
    return None


def installed_from_requirements() -> dict[str, str] | None:
    """What the running environment holds, if it runs the Python runtime.txt names and holds covpo from this repository; else None."""
    if "%d.%d" % sys.version_info[:2] != runtime_python():
        return None
    try:
        origin = json.loads(metadata.distribution("covpo").read_text("direct_url.json") or "{}")
    except metadata.PackageNotFoundError:
        return None
    if origin.get("url") != REPOSITORY.as_uri():
        return None
    return {canonical(dist.metadata["Name"]): dist.version for dist in metadata.distributions()}


def dry_run_resolution(tmp_path: Path) -> dict[str, str]:
    """What pip would install from requirements.txt into a fresh environment of the runtime Python."""
    version = runtime_python()
    python = find_runtime_python(version)
    if python is None:
        pytest.skip(f"Python {version}, which runtime.txt names, is not on this machine")
    environment = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(environment)], check=True, timeout=120)
    report = tmp_path / "report.json"
    # Installing the covpo package itself (-e .) needs its build backend: pip fetches it
    # into an isolated build environment, and the dry run installs nothing.
    result = subprocess.run(
        [
            str(environment / "bin" / "python"), "-m", "pip", "install", "--dry-run", "--quiet",
            "--disable-pip-version-check", "--no-input", "--report", str(report), "-r", str(REQUIREMENTS),
        ],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0 and any(sign in result.stderr for sign in OFFLINE_SIGNS) and os.environ.get("CI") != "true":
        pytest.skip(f"the package index cannot be reached: {result.stderr.strip().splitlines()[-1]}")
    assert result.returncode == 0, f"pip cannot resolve requirements.txt on Python {version}:\n{result.stderr[-4000:]}"
    return {
        canonical(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }


def test_pins_resolve_to_themselves_on_the_runtime_python(tmp_path: Path):
    resolved = installed_from_requirements()
    if resolved is None:
        resolved = dry_run_resolution(tmp_path)
    else:
        check = subprocess.run([sys.executable, "-m", "pip", "check", "--disable-pip-version-check"],
                               capture_output=True, text=True, timeout=120)
        assert check.returncode == 0, f"the installed requirements are inconsistent:\n{check.stdout}{check.stderr}"
    wrong = {name: (pin, resolved.get(name)) for name, pin in pins().items() if resolved.get(name) != pin}
    assert not wrong, f"pins that resolve to another version (pin, resolved): {wrong}"
    assert "covpo" in resolved, "the resolution does not hold the covpo package"
