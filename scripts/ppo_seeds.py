"""Chapter 4's sampled results over twenty seeds: the stamped record the chapter reads.

    python scripts/ppo_seeds.py

Runs :func:`covpo.experiments.ppo.seeds.seed_study` over seeds 0 to 19 at the chapter's settings
(the two cost sweeps, the importance weights and their bounds, the clip activity grid, the
practice recipes, the long k3 runs and REINFORCE's coverage-loss timing), on every core, and
writes the result, stamped with the commit, the code hash, the CPU profile and the machine, to
``src/covpo/experiments/ppo/seeds_record.json`` (one run per CPU profile; run it once plainly and
once under ``env $(python scripts/cpu_profile.py)``). About two minutes on two idle cores.
"""

from __future__ import annotations

import os
import time

import joblib

from covpo.experiments.ppo.seeds import (
    RECORD_COMMAND,
    RECORD_MODULES,
    RECORD_SCRIPT,
    RECORD_SEEDS,
    SEEDS_RECORD,
    seed_study,
)
from covpo.records import stamp, write_stamped_run


def main() -> None:
    start = time.perf_counter()
    with joblib.parallel_config(n_jobs=os.cpu_count() or 1):
        results = seed_study(RECORD_SEEDS)
    seconds = time.perf_counter() - start
    write_stamped_run(SEEDS_RECORD, {"stamp": stamp(RECORD_COMMAND, RECORD_MODULES, [RECORD_SCRIPT], seconds), **results})
    print(f"wrote {SEEDS_RECORD} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
