"""Chapter 7's route and group-size comparisons at the full study's seeds, recorded per rounding.

    python scripts/transformer_route.py --record src/covpo/labs/transformer/route_record.json --profile-name default
    env $(python scripts/cpu_profile.py) python scripts/transformer_route.py --record ... --profile-name second
    taskset -c 0 python scripts/transformer_route.py --record ... --profile-name "default, one core"

The book's study runs its seeds; at that size, which of the route comparisons (each arm's loss
on the hard-only or decoupled task minus its loss on the mixed one) and the group-size
comparisons exclude zero changes with the CPU's rounding. This script runs the cells those
comparisons need (``covpo.labs.transformer.route.route_cells``: the weak fixed reference and both
APMD arms on every task, the weak arm at groups of 32 and 128) on the full study's 18 seeds over
3 base models, at the rates the book fixes, and prints the paired table. With ``--record`` it
adds the differences seed by seed, under ``--profile-name``, to a JSON record
(``covpo.labs.transformer.route``); a run of the same name is replaced. The rounding depends on
the CPU profile (``scripts/cpu_profile.py``) and on how many cores XLA computes on, so the book's
record holds four runs made on an idle 2-core AMD EPYC: both profiles, on both cores and pinned
to one with ``taskset``. Each took about 2 minutes on two cores, 3 on one. Chapter 7 reads the
record the package keeps (``src/covpo/labs/transformer/route_record.json``).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import jax

from cpu_profile import profile_environment

from covpo.labs.transformer.analysis import paired_table
from covpo.labs.transformer.experiment import transformer_study
from covpo.labs.transformer.records import write_run
from covpo.labs.transformer.route import ROUTE_COMPARISONS, ROUTE_METRICS, check_route_record, route_cells, route_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("book", "full"), default="full")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", type=Path,
                        help="also write the differences to this JSON file (replacing its run of the same profile name)")
    parser.add_argument("--profile-name", default="default",
                        help="the name the record gives the rounding the script runs under")
    arguments = parser.parse_args()
    print(f"JAX devices: {jax.devices()}; cores this process may use: {len(os.sched_getaffinity(0))}")
    start = time.perf_counter()
    study = transformer_study(arguments.size, seed=arguments.seed, cells=route_cells())
    seconds = time.perf_counter() - start
    print(f"{len(study.seeds)} seeds, {seconds:.0f} s")
    print(paired_table(study, ROUTE_COMPARISONS, metrics=ROUTE_METRICS))
    if arguments.record:
        run = route_run(study, arguments.profile_name, seconds)
        run.update(environment=profile_environment(), cores=len(os.sched_getaffinity(0)), size=arguments.size,
                   seed=arguments.seed, machine=f"{platform.machine()}, {os.cpu_count()} CPUs",
                   devices=[str(device) for device in jax.devices()])
        write_run(arguments.record, run, check_route_record)
        print(f"wrote {arguments.record} (its {arguments.profile_name!r} run)")


if __name__ == "__main__":
    main()
