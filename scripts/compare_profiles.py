"""Execute chapters under the default and the second CPU profile and list the glued numbers that moved.

Every number the prose quotes is glued (myst-nb ``glue``), so the glued values of an executed
chapter are exactly what its text states. This script executes each chosen chapter in a fresh
kernel twice, once as the machine is and once under :func:`cpu_profile.second_profile`, and
prints a Markdown table of every glued value that differs between the two, with the relative
change. A chapter whose hidden assertion fails under a profile is reported with the error::

    python scripts/compare_profiles.py book/implications.md book/ppo.md
    python scripts/compare_profiles.py --all --extra OPENBLAS_CORETYPE=Haswell

``--extra NAME=value`` adds variables to the second profile (for instance an OpenBLAS kernel of
an older CPU, to mimic a machine without AVX-512 more closely).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from cpu_profile import second_profile

REPOSITORY = Path(__file__).resolve().parent.parent
EXECUTE = r"""
import json, sys
import jupytext, nbclient
notebook = jupytext.read(sys.argv[1])
error = None
try:
    nbclient.NotebookClient(notebook, timeout=1800, kernel_name="python3", resources={"metadata": {"path": sys.argv[3]}}).execute()
except Exception as exc:
    error = f"{type(exc).__name__}: {str(exc)[-1500:]}"
glued = {}
for cell in notebook.cells:
    for output in cell.get("outputs", []):
        record = output.get("metadata", {}).get("scrapbook")
        if record:
            data = output.get("data", {})
            text = next((value for key, value in data.items() if key.endswith("text/plain")), None)
            glued[record["name"]] = text
json.dump({"glued": glued, "error": error}, open(sys.argv[2], "w"))
"""


def execute(chapter: Path, environment: dict[str, str]) -> dict:
    """Execute ``chapter`` in a fresh kernel under ``environment``; its glued values and any error."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "result.json"
        subprocess.run(
            [sys.executable, "-c", EXECUTE, str(chapter), str(target), str(chapter.parent)],
            env={**os.environ, **environment}, check=True,
        )
        return json.loads(target.read_text())


def as_number(text: str | None) -> float | None:
    """The glued value as a float when it reads as one."""
    try:
        return float(str(text).strip("'\""))
    except (TypeError, ValueError):
        return None


def changed_rows(default: dict[str, str], other: dict[str, str]) -> list[str]:
    """Markdown rows for every glued value that differs between the two runs."""
    rows = []
    for name in sorted(set(default) | set(other)):
        first, second = default.get(name), other.get(name)
        if first == second:
            continue
        a, b = as_number(first), as_number(second)
        change = f"{(b - a) / abs(a):+.1%}" if a not in (None, 0.0) and b is not None else ""
        rows.append(f"| `{name}` | {first} | {second} | {change} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true", help="every chapter under book/ with code")
    parser.add_argument("--extra", action="append", default=[], help="NAME=value added to the second profile")
    arguments = parser.parse_args()
    chapters = sorted((REPOSITORY / "book").glob("*.md")) if arguments.all else arguments.chapters
    profile = {**second_profile(), **dict(item.split("=", 1) for item in arguments.extra)}
    print("second profile:", " ".join(f"{key}={value}" for key, value in profile.items()), file=sys.stderr)
    for chapter in chapters:
        default, other = execute(chapter, {}), execute(chapter, profile)
        print(f"\n## {chapter.name}: {len(default['glued'])} glued values\n")
        for label, run in (("default profile", default), ("second profile", other)):
            if run["error"]:
                print(f"**fails under the {label}**: {run['error']}\n")
        rows = changed_rows(default["glued"], other["glued"])
        if rows:
            print("| glued value | default | second profile | change |\n| --- | --- | --- | --- |")
            print("\n".join(rows))
        else:
            print("No glued value moved.")


if __name__ == "__main__":
    main()
