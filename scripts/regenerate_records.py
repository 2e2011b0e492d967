"""Regenerate the stamped records the chapters read, under both CPU profiles.

    python scripts/regenerate_records.py            # the records whose code changed since
    python scripts/regenerate_records.py --all      # every record

Every stamped record (:func:`covpo.records.stamped_record_files`) names the command that makes
it. For each record to redo, this runs that command twice from the repository root, plainly and
under the second CPU profile (``scripts/cpu_profile.py``), so the record again holds one run per
profile, both made by today's code. ``tests/test_records.py`` fails while any record is stale.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

from covpo.records import REPOSITORY, read_stamped_record, stale_sources, stamped_record_files
from cpu_profile import second_profile


def commands_to_run(every: bool) -> list[str]:
    """The record commands to run: those of stale records, or of every record."""
    commands: dict[str, None] = {}
    for path in stamped_record_files():
        runs = read_stamped_record(path)["runs"]
        if every or len(runs) < 2 or any(stale_sources(run["stamp"]) for run in runs):
            commands[runs[0]["stamp"]["command"]] = None
    return list(commands)


def run_under_both_profiles(command: str) -> None:
    """Run a record's command with this interpreter, plainly and under the second CPU profile."""
    arguments = shlex.split(command)
    if arguments[0] == "python":
        arguments[0] = sys.executable
    for name, environment in (("default", {}), ("second", second_profile())):
        print(f"{command} ({name} profile)", flush=True)
        subprocess.run(arguments, cwd=REPOSITORY, env={**os.environ, **environment}, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="regenerate every record, not only the stale ones")
    commands = commands_to_run(parser.parse_args().all)
    if not commands:
        print("every stamped record matches today's code")
    for command in commands:
        run_under_both_profiles(command)


if __name__ == "__main__":
    main()
