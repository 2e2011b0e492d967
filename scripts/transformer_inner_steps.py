"""Chapter 7's question at longer inner loops: does APMD keep pass@256 when each outer step is solved more accurately?

    python scripts/transformer_inner_steps.py                      # K = 4, 16, 32 at full size
    python scripts/transformer_inner_steps.py --inner-steps 16 --size book

APMD's guarantee (the paper's section 3) holds when every outer step solves its KL-regularized
subproblem accurately. The book runs K = 4 optimizer steps per outer step, and measures how much
of each step's distance to its target ``pi_t exp(r / beta) / Z`` those steps close. This script
asks what a longer inner loop changes: for each K it runs the mixed task's fixed-reference arms
(weak and strong ``beta``) and both APMD arms (the sampled loss, and the fit to the exact
target) on the same seeds and base models, at the rates the book fixes, and prints per K

- the summary table (costs, exact pass@1 and pass@256 of hard prompts, KL to the base model);
- the median fraction of each outer step's distance that the K steps close, per APMD arm;
- paired differences of pass@256 on hard training and held-out prompts (median over seeds, its
  sign-test interval and the verdict), for APMD against the base model and the fixed-reference
  arms.

Only the inner loop changes: the responses per run are the same at every K, the gradient steps
grow with it. The same command runs on a GPU unchanged when JAX sees one. It writes what it
prints to ``--out`` (default ``_build/full/transformer_inner_steps.txt``) and, with ``--record``,
the measurements themselves as JSON (``covpo.labs.transformer.inner_steps``): per K, every APMD
arm's median fraction closed and every comparison's differences seed by seed, with the CPU profile
it ran under. Chapter 7 reads the record the package keeps (``src/covpo/labs/transformer/inner_steps_record.json``,
written by this script under the default and the second CPU profile) and checks its sentences on
longer inner loops against it.

What its runs found, at full size (18 seeds over 3 base models, partial credit), is the record
chapter 7 tabulates, written on an idle 2-core AMD EPYC under both CPU profiles; an earlier run of
the same calls on one NVIDIA H200 agreed with it at K = 4 and K = 32; at K = 16 the GPU run's
exact-target fit kept training pass@256 where the CPU's interval could not tell. In short: an
inner loop that closes most of each outer step's distance (the exact-target fit at K = 32) keeps
the coverage of the training prompts that the paper's APMD result is about; the book's four steps
do not come close, and the sampled loss does not get there by K = 32.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import jax

from cpu_profile import profile_environment

from covpo.labs.transformer.analysis import METRICS, paired_table, summary_table
from covpo.labs.transformer.experiment import Cell, plan_study, transformer_study
from covpo.labs.transformer.inner_steps import (APMD_ARMS, ARMS, COMPARISONS, check_inner_steps_record,
                                                inner_steps_block)
from covpo.labs.transformer.records import write_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("book", "full"), default="full")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inner-steps", type=int, nargs="+", default=[4, 16, 32])
    parser.add_argument("--out", type=Path, default=Path("_build/full/transformer_inner_steps.txt"))
    parser.add_argument("--record", type=Path,
                        help="also write the measurements to this JSON file (replacing its run of the same profile name)")
    parser.add_argument("--profile-name", default="default",
                        help="the name the record gives the CPU profile the script runs under")
    arguments = parser.parse_args()
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"JAX devices: {jax.devices()}"]
    blocks = []
    print(lines[0])
    cells = tuple(Cell("mixed", arm) for arm in ARMS)
    for inner_steps in arguments.inner_steps:
        start = time.perf_counter()
        plan = plan_study(arguments.size, seed=arguments.seed, cells=cells, sizes={"inner_steps": inner_steps})
        study = transformer_study(arguments.size, plan=plan)
        seconds = time.perf_counter() - start
        blocks.append(inner_steps_block(study, seconds))
        block = [f"===== K = {inner_steps} inner steps per outer step: {len(study.seeds)} seeds, "
                 f"{study.setup.responses} responses and {study.setup.gradient_steps} gradient steps per run, "
                 f"{seconds:.0f} s", str(summary_table(study, "partial")),
                 *(f"{arm}: median fraction of each outer step's distance to its target closed: "
                   f"{blocks[-1]['closed'][arm]:.2f}" for arm in APMD_ARMS),
                 str(paired_table(study, COMPARISONS, metrics=METRICS[:2])), ""]
        print("\n".join(block))
        lines += block
    arguments.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {arguments.out}")
    if arguments.record:
        run = {"profile": arguments.profile_name, "environment": profile_environment(), "size": arguments.size,
               "seed": arguments.seed, "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
               "devices": [str(device) for device in jax.devices()], "blocks": blocks}
        write_run(arguments.record, run, check_inner_steps_record)
        print(f"wrote {arguments.record} (its {arguments.profile_name!r} run)")


if __name__ == "__main__":
    main()
