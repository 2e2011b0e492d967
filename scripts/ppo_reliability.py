"""Chapter 4's reset methods over 20 seeds: how often they reach eps on the collapse family, by batch size and inner steps.

    python scripts/ppo_reliability.py
    env $(python scripts/cpu_profile.py) python scripts/ppo_reliability.py   # the second CPU profile

Runs :func:`covpo.experiments.ppo.reliability.reliability_study` (PPO-NoClip, PPO-Lite and GRPO
with resets at C_cov 20, 40, 80 and 160, batches of 1, 2, 4 and 8 times the chapter's, inner loops
of 1, 2 and 4 times its length, seeds 0-19) and
:func:`~covpo.experiments.ppo.reliability.details_over_seeds` (the section page's other sampled
measurements at seeds 0-19) on two local processes, and writes them, stamped, as this CPU
profile's run of ``src/covpo/experiments/ppo/reliability_record.json``, which ``book/ppo_details.md``
reads. Run it under both profiles. About 6 minutes on 2 idle cores per profile.
"""

from __future__ import annotations

import time

import joblib

from covpo.experiments.ppo.reliability import (
    RECORD_COMMAND,
    RECORD_MODULES,
    RECORD_PATH,
    RECORD_SCRIPTS,
    RELIABILITY_SEEDS,
    details_over_seeds,
    reliability_study,
)
from covpo.records import stamp, write_stamped_run


def main() -> None:
    start = time.perf_counter()
    seeds = tuple(range(RELIABILITY_SEEDS))
    with joblib.parallel_config(n_jobs=2):
        study = reliability_study(seeds=seeds)
        details = details_over_seeds(seeds)
    seconds = time.perf_counter() - start
    run = {
        "stamp": stamp(RECORD_COMMAND, RECORD_MODULES, RECORD_SCRIPTS, seconds),
        "study": study.to_record(),
        "details": details,
    }
    write_stamped_run(RECORD_PATH, run)
    print(f"wrote the {run['stamp']['profile']!r} run of {RECORD_PATH} in {seconds:.0f} s")


if __name__ == "__main__":
    main()
