"""Stamped records: results a chapter reads from a file that a script made outside the build.

A chapter that cannot afford a study within its build time reads the study's results from a
JSON file in the package, written by one command under ``scripts/``. So that a reader can trust
such a file, it carries a stamp (:func:`stamp`): the command that regenerates it, the git commit
it was made at, a hash of the source code that made it (:func:`code_hash`), the CPU profile it
ran under, the machine and the time, and its wall time. :func:`stale_sources` compares a stamp
with today's code; ``tests/test_records.py`` fails on every stamped record whose code changed
since, naming the command that regenerates it.

A record file is ``{"stamp": {...}, "runs": [run, ...]}``, one run per CPU profile (each run
stamped too), so that a verdict read from it can be required to hold under both profiles.
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import importlib
import json
import os
import platform
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from covpo.validation import check_text

PROFILE_VARIABLES = ("NUMBA_CPU_NAME", "NPY_DISABLE_CPU_FEATURES", "XLA_FLAGS")
"""The environment variables that set the second CPU profile (``scripts/cpu_profile.py``)."""

REPOSITORY = Path(__file__).resolve().parents[2]
"""The checkout the package is installed from, in an editable install; code paths are relative to it."""


def _module_files(module_name: str) -> list[Path]:
    """The source files of a module, or of every module of a package, sorted."""
    module = importlib.import_module(module_name)
    path = Path(module.__file__)
    if path.name == "__init__.py":
        return sorted(path.parent.rglob("*.py"))
    return [path]


def code_files(modules: Sequence[str], scripts: Sequence[str] = ()) -> list[Path]:
    """The source files a record depends on: the named modules (packages whole) and scripts.

    Parameters
    ----------
    modules
        Dotted module or package names, e.g. ``"covpo.experiments.ppo"``.
    scripts
        Paths of scripts relative to the repository, e.g. ``"scripts/ppo_seeds.py"``.
    """
    if isinstance(modules, str) or not modules:
        raise ValueError(f"modules must be a non-empty sequence of module names, got {modules!r}")
    if isinstance(scripts, str):
        raise ValueError(f"scripts must be a sequence of paths, got {scripts!r}")
    files: set[Path] = set()
    for name in modules:
        try:
            files.update(_module_files(check_text("modules", name)))
        except ImportError:
            raise ValueError(f"modules names {name!r}, which does not import") from None
    for script in scripts:
        path = REPOSITORY / check_text("scripts", script)
        if not path.is_file():
            raise ValueError(f"scripts names {script!r}, which is not a file of the repository")
        files.add(path)
    return sorted(files)


def _without_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with every string statement (module, class, function and attribute docstrings) removed."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [
                statement for statement in body
                if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                        and isinstance(statement.value.value, str))
            ]
            node.body = kept or [ast.Pass()]
    return tree


def code_text(path: Path) -> bytes:
    """What of a source file can change a result: its syntax tree without docstrings, comments or layout."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError:
        return path.read_bytes()
    return ast.dump(_without_docstrings(tree)).encode()


def code_hash(modules: Sequence[str], scripts: Sequence[str] = ()) -> str:
    """SHA-256 over the code of the files of :func:`code_files`, each with its path relative to the repository.

    A file counts by its syntax tree less its docstrings (:func:`code_text`), so editing a comment,
    a docstring or the layout leaves the hash, and the record, as they were; any change to what
    the code computes changes the hash.
    """
    digest = hashlib.sha256()
    for path in code_files(modules, scripts):
        digest.update(path.relative_to(REPOSITORY).as_posix().encode())
        digest.update(b"\0")
        digest.update(code_text(path))
        digest.update(b"\0")
    return digest.hexdigest()


def _git(*arguments: str) -> str | None:
    try:
        done = subprocess.run(("git", *arguments), cwd=REPOSITORY, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def cpu_description() -> str:
    """The CPU's model name (from ``/proc/cpuinfo`` where there is one) and its core count."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores"


def profile_name() -> str:
    """``"second"`` when the second CPU profile's variables are set, else ``"default"``."""
    return "second" if any(name in os.environ for name in PROFILE_VARIABLES[:2]) else "default"


def stamp(command: str, modules: Sequence[str], scripts: Sequence[str], seconds: float) -> dict:
    """The stamp of a record made now by ``command``.

    Parameters
    ----------
    command
        The command that regenerates the record, run from the repository root.
    modules, scripts
        The code the record depends on (:func:`code_files`).
    seconds
        The wall time the run took.

    Returns
    -------
    dict
        ``command``, ``commit`` (``"unknown"`` outside a git checkout), ``uncommitted`` (whether
        the checkout had changes), ``code_hash``, ``modules``, ``scripts``, ``profile`` and its
        ``environment``, ``cpu``, ``machine``, ``time`` (UTC, ISO 8601) and ``seconds``.
    """
    check_text("command", command)
    if not isinstance(seconds, (int, float)) or not seconds >= 0:
        raise ValueError(f"seconds must be a non-negative number, got {seconds!r}")
    return {
        "command": command,
        "commit": _git("rev-parse", "HEAD") or "unknown",
        "uncommitted": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "code_hash": code_hash(modules, scripts),
        "modules": list(modules),
        "scripts": list(scripts),
        "profile": profile_name(),
        "environment": {name: os.environ[name] for name in PROFILE_VARIABLES if name in os.environ},
        "cpu": cpu_description(),
        "machine": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(float(seconds), 1),
    }


def stale_sources(record_stamp: dict) -> str | None:
    """``None`` when the code a stamp names still hashes as it did, else a sentence naming the command to rerun."""
    if not isinstance(record_stamp, dict) or not {"command", "code_hash", "modules", "scripts"} <= record_stamp.keys():
        raise ValueError(f"record_stamp must be a stamp made by covpo.records.stamp, got {record_stamp!r}")
    if code_hash(record_stamp["modules"], record_stamp["scripts"]) == record_stamp["code_hash"]:
        return None
    return f"the code behind this record changed since it was made; regenerate it with `{record_stamp['command']}`"


def read_stamped_record(path: str | Path, check: Callable[[dict], dict] | None = None) -> dict:
    """The stamped record in the JSON file ``path``, optionally passed through ``check``.

    Raises ``ValueError`` naming the file when it is missing, not JSON, or not a stamped record
    (a ``"runs"`` list whose every run has a ``"stamp"``).
    """
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise ValueError(f"path must name a JSON file of a stamped record, got {path!r}")
    try:
        record = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"path must hold JSON, got {path!r} ({error})") from None
    runs = record.get("runs") if isinstance(record, dict) else None
    if not isinstance(runs, list) or not runs or not all(isinstance(run, dict) and "stamp" in run for run in runs):
        raise ValueError(f"{path}: not a stamped record (a 'runs' list, each run with a 'stamp')")
    return check(record) if check is not None else record


def write_stamped_run(path: str | Path, run: dict, compact: bool = False) -> None:
    """Add a stamped ``run`` to the record in ``path`` (created if missing), replacing the run of the same profile.

    Runs of other profiles made from other code are dropped, so a record never mixes code versions.
    ``compact`` writes one run per line instead of one value per line (for records of long series).
    """
    if not isinstance(path, (str, Path)) or Path(path).suffix != ".json":
        raise ValueError(f"path must be the path of a .json file, got {path!r}")
    if not isinstance(run, dict) or not isinstance(run.get("stamp"), dict):
        raise ValueError("run must be a mapping with a 'stamp' made by covpo.records.stamp")
    path = Path(path)
    runs = read_stamped_record(path)["runs"] if path.exists() else []
    kept = [
        other for other in runs
        if other["stamp"]["profile"] != run["stamp"]["profile"]
        and other["stamp"]["code_hash"] == run["stamp"]["code_hash"]
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    if compact:
        lines = ",\n".join(json.dumps(kept_run, separators=(",", ":")) for kept_run in kept + [run])
        path.write_text('{"runs": [\n' + lines + "\n]}\n")
    else:
        path.write_text(json.dumps({"runs": kept + [run]}, indent=1) + "\n")


def stamped_record_files(root: str | Path | None = None) -> list[Path]:
    """Every stamped record under ``root`` (default: the package), by the file name ``*_record.json``."""
    folder = Path(root) if root is not None else Path(__file__).resolve().parent
    found = []
    for path in sorted(folder.rglob("*_record.json")):
        try:
            read_stamped_record(path)
        except ValueError:
            continue
        found.append(path)
    return found
