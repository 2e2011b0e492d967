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
prints to ``--out`` (default ``_build/full/transformer_inner_steps.txt``).

What its runs found, at full size (18 seeds over 3 base models, partial credit), on an idle
2-core AMD EPYC (K = 16 in 118 s, K = 32 in 188 s) and, before this script existed, by the same
calls on one NVIDIA H200 (K = 4, 16 and 32); both machines agree where both ran:

- The exact-target fit closes a median 0.32 of each outer step's distance at K = 4, 0.67 to 0.71
  at K = 16 and 0.88 at K = 32. At K = 32 it keeps pass@256 on hard training prompts (paired
  difference from the base model: median +0.01, sign-test interval [+0.00, +0.01] on both
  machines) while its pass@1 on them rises from the base model's 0.02 to 0.74; on held-out hard
  prompts the interval spans zero ([-0.20, +0.01]), so the runs cannot tell. At K = 16 the GPU
  run kept training pass@256 too ([+0.00, +0.01]); the CPU run could not tell
  ([-0.05, +0.01]) and lost a little on held-out prompts (median -0.04, [-0.28, -0.00]).
- The sampled APMD loss closes a median 0.06 (K = 4), 0.15 (K = 16) and 0.24 to 0.25 (K = 32)
  of each step's distance, and loses pass@256 against the base model at every K (at K = 32 on
  the CPU: training prompts median -0.24, [-0.41, -0.15]).

So on this transformer, an inner loop that solves each step's subproblem (most of the distance
closed) keeps the coverage of the training prompts that the paper's APMD result is about, and
the book's four steps do not come close; the sampled loss (8 answers per prompt and step) does
not get there by K = 32.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import numpy as np

from covpo.labs.transformer.analysis import BASE, METRICS, Comparison, Side, paired_table, summary_table
from covpo.labs.transformer.experiment import Cell, TransformerStudy, plan_study, transformer_study

ARMS = ("fixed, weak β", "fixed, strong β", "APMD", "APMD, exact target")
APMD_ARMS = ("APMD", "APMD, exact target")
COMPARISONS = tuple(Comparison(f"{first} - {second}", Side(first), Side(second)) for first, second in (
    ("APMD", BASE), ("APMD", "fixed, strong β"), ("APMD", "fixed, weak β"),
    ("APMD, exact target", BASE), ("APMD, exact target", "APMD"), ("fixed, weak β", BASE)))


def inner_loop_report(study: TransformerStudy) -> list[str]:
    """Per APMD arm, the median over runs and steps of the fraction of each step's distance its K steps closed."""
    fraction_closed = study.distance_closed()
    return [f"{arm}: median fraction of each outer step's distance to its target closed: "
            f"{np.median(fraction_closed[study.runs('mixed', arm)]):.2f}" for arm in APMD_ARMS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("book", "full"), default="full")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inner-steps", type=int, nargs="+", default=[4, 16, 32])
    parser.add_argument("--out", type=Path, default=Path("_build/full/transformer_inner_steps.txt"))
    arguments = parser.parse_args()
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"JAX devices: {jax.devices()}"]
    print(lines[0])
    cells = tuple(Cell("mixed", arm) for arm in ARMS)
    for inner_steps in arguments.inner_steps:
        start = time.perf_counter()
        plan = plan_study(arguments.size, seed=arguments.seed, cells=cells, sizes={"inner_steps": inner_steps})
        study = transformer_study(arguments.size, plan=plan)
        block = [f"===== K = {inner_steps} inner steps per outer step: {len(study.seeds)} seeds, "
                 f"{study.setup.responses} responses and {study.setup.gradient_steps} gradient steps per run, "
                 f"{time.perf_counter() - start:.0f} s", str(summary_table(study, "partial")),
                 *inner_loop_report(study), str(paired_table(study, COMPARISONS, metrics=METRICS[:2])), ""]
        print("\n".join(block))
        lines += block
    arguments.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {arguments.out}")


if __name__ == "__main__":
    main()
