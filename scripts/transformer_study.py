"""Chapter 7's frontier study: every record the chapter reads, under both CPU profiles, in one command.

    python scripts/transformer_study.py                 # both profiles, writes the record
    python scripts/transformer_study.py --one-profile   # this process's profile only
    python scripts/transformer_study.py --sweep         # also the learning-rate protocol's sweep

Runs :func:`covpo.labs.transformer.frontier.frontier_study_run` (8 base models, one seed each;
the long block, 192 outer steps of 4 inner steps, under partial credit and the binary reward,
and the same 768 optimizer steps split 48 x 16 and 24 x 32) plainly and under the second CPU
profile (``scripts/cpu_profile.py``), at once, each in its own process, and writes
``src/covpo/labs/transformer/frontier_record.json``: one run per profile, each stamped with the
command, the commit, a hash of the code that made it, the CPU profile, the machine, the time and
the wall time (:mod:`covpo.records`). ``--sweep`` also measures every arm's fastest stable
learning rate on the grid and prints it beside the shared rate the study uses. The same command
runs on a GPU unchanged when JAX sees one (install the CUDA build of jaxlib).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax

from cpu_profile import second_profile

from covpo.labs.transformer.experiment import learning_rate_sweep
from covpo.labs.transformer.frontier import FRONTIER_RECORD, RECORD_MODULES, frontier_study_run
from covpo.labs.transformer.methods import SHARED_LEARNING_RATE
from covpo.records import REPOSITORY, profile_name, read_stamped_record, stamp, write_stamped_run
from covpo.table import Table

RECORD_COMMAND = "python scripts/transformer_study.py --one-profile"
"""The command that writes one profile's run of the record (``regenerate_records.py`` runs it under both)."""
RECORD_SCRIPT = "scripts/transformer_study.py"


def sweep_table() -> Table:
    """The learning-rate protocol measured on the full size's seeds, beside the shared rate."""
    sweep = learning_rate_sweep("full")
    rows = tuple((arm, *(f"{speed:.3f}{'' if stable else ' (unstable)'}" for speed, stable
                         in zip(sweep.speed[arm], sweep.stable[arm])), f"{sweep.chosen[arm]:g}")
                 for arm in sweep.chosen)
    return Table(("arm", *(f"lr {rate:g}" for rate in sweep.rates), "fastest stable"), rows,
                 caption=f"Learning-rate protocol (the study uses {SHARED_LEARNING_RATE:g} for every arm): "
                         "median mean batch reward over the run, mixed task, partial credit")


def one_profile(path: Path, progress: bool) -> None:
    """Run the study under this process's profile and write its stamped run to the record in ``path``."""
    print(f"JAX devices: {jax.devices()}; CPU profile: {profile_name()}", flush=True)
    start = time.perf_counter()
    run = frontier_study_run(progress=progress)
    seconds = time.perf_counter() - start
    write_stamped_run(path, {"stamp": stamp(RECORD_COMMAND, RECORD_MODULES, [RECORD_SCRIPT], seconds), **run},
                      compact=True)
    blocks = ", ".join(f"{name} {block['seconds']:.0f} s" for name, block in run["blocks"].items())
    print(f"wrote the {profile_name()} run ({seconds:.0f} s: {blocks})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one-profile", action="store_true", help="run under this process's CPU profile only")
    parser.add_argument("--sweep", action="store_true", help="also run the learning-rate protocol's sweep")
    parser.add_argument("--record", type=Path, default=FRONTIER_RECORD, help=argparse.SUPPRESS)
    parser.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.sweep:
        print(sweep_table(), flush=True)
    if arguments.one_profile:
        one_profile(arguments.record, progress=not arguments.quiet)
        return
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / f"{name}_record.json" for name in ("default", "second")]
        # the two profiles run at once, each in its own process (each keeps about one core busy);
        # the default profile's process shows its progress
        processes = [subprocess.Popen([sys.executable, __file__, "--one-profile", "--record", str(path),
                                       *(["--quiet"] if quiet else [])],
                                      cwd=REPOSITORY, env={**os.environ, **environment})
                     for path, environment, quiet in zip(paths, ({}, second_profile()), (False, True))]
        if any(process.wait() for process in processes):
            raise SystemExit("a profile's run failed; the record is unchanged")
        for path in paths:
            write_stamped_run(FRONTIER_RECORD, read_stamped_record(path)["runs"][0], compact=True)
    print(f"wrote {FRONTIER_RECORD.name}, both profiles: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
