"""Chapter 8's validation record: the log detector against exact coverage on chapter 7's runs, under both CPU profiles.

    python scripts/diagnose_validation.py                 # both profiles, writes the record
    python scripts/diagnose_validation.py --one-profile   # this process's profile only

Runs :func:`covpo.labs.transformer.diagnose_validation.validation_run` (24 seeds of 48 outer
steps, a fixed reference and APMD's resets; every run written as TRL logs and diagnosed) once
plainly and once under the second CPU profile (``scripts/cpu_profile.py``), each in its own
process, and writes ``src/covpo/labs/transformer/diagnose_record.json``: one stamped run per
profile (:mod:`covpo.records`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from cpu_profile import second_profile

from covpo.labs.transformer.diagnose_validation import DIAGNOSE_RECORD, RECORD_MODULES, validation_run
from covpo.records import REPOSITORY, profile_name, stamp, write_stamped_run

RECORD_COMMAND = "python scripts/diagnose_validation.py --one-profile"
"""The command that writes one profile's run of the record."""
RECORD_SCRIPT = "scripts/diagnose_validation.py"


def one_profile() -> None:
    """Run the validation under this process's profile and write its stamped run."""
    start = time.perf_counter()
    run = validation_run()
    seconds = time.perf_counter() - start
    write_stamped_run(DIAGNOSE_RECORD, {"stamp": stamp(RECORD_COMMAND, RECORD_MODULES, [RECORD_SCRIPT], seconds), **run},
                      compact=True)
    print(f"wrote the {profile_name()} run of {DIAGNOSE_RECORD.name} ({seconds:.0f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one-profile", action="store_true", help="run under this process's CPU profile only")
    if parser.parse_args().one_profile:
        one_profile()
        return
    start = time.perf_counter()
    for environment in ({}, second_profile()):
        subprocess.run([sys.executable, __file__, "--one-profile"], cwd=REPOSITORY,
                       env={**os.environ, **environment}, check=True)
    print(f"both profiles: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
