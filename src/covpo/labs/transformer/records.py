"""Records of script runs that chapter 7 reads, JSON files ``{"runs": [run, ...]}`` with one run per rounding, each named by its ``"profile"``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path


def _check_callable(check: object) -> None:
    if not callable(check):
        raise ValueError(f"check must be a function that checks a record, got {check!r}")


def read_record(path: str | Path, check: Callable[[object], dict]) -> dict:
    """The record in the JSON file ``path``, passed through ``check`` (which raises ``ValueError`` naming what is wrong)."""
    _check_callable(check)
    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        raise ValueError(f"path must name a JSON file of the record, got {path!r}")
    try:
        record = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"path must hold JSON, got {path!r} ({error})") from None
    return check(record)


def write_run(path: str | Path, run: dict, check: Callable[[object], dict]) -> None:
    """Add ``run`` to the record in ``path`` (created if missing), replacing the record's run of the same profile."""
    _check_callable(check)
    if not isinstance(path, (str, Path)) or Path(path).suffix != ".json":
        raise ValueError(f"path must be the path of a .json file, got {path!r}")
    if not isinstance(run, dict) or not isinstance(run.get("profile"), str):
        raise ValueError(f"run must be a mapping with a string 'profile', got {run!r}")
    path = Path(path)
    runs = read_record(path, check)["runs"] if path.exists() else []
    runs = [kept for kept in runs if kept["profile"] != run["profile"]] + [run]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(check({"runs": runs}), indent=1) + "\n")
