"""Chapter 5's sampled studies at twenty seeds, written to the stamped record the chapter reads.

    python scripts/squared_loss_seeds.py
    env $(python scripts/cpu_profile.py) python scripts/squared_loss_seeds.py

Runs, on seeds 0 to 19 (``covpo.experiments.squared_loss.seeds``,
``covpo.experiments.squared_loss.eps_scaling``):

- the Kimi-style failure rates against the batch size ``N`` on the collapse family at
  ``C_cov`` 20, 40, 80 and 160 (``K = 40``), and against ``N`` and the inner steps ``K`` at
  ``C_cov = 40``;
- the chapter's batch-size study (three methods, ``N`` 256 and 1024, ``C_cov = 40``);
- the chapter's cost sweeps on both families;
- the chapter's Table 1 on the random instance with ``C_cov = 10``, one table per seed;
- Rebel-OnPolicy's costs against ``eps`` at our reading of appendix L.1's ``beta(eps)``.

Each run of the script replaces the record's run of its CPU profile
(``src/covpo/experiments/squared_loss/seeds_record.json``); run it under both profiles. It takes
about 4 minutes on two idle cores.
"""

from __future__ import annotations

import time

import joblib
import numpy as np

from covpo.experiments.squared_loss import batch_size_study, squared_loss_methods, table_1
from covpo.experiments.squared_loss.eps_scaling import rebel_eps_scaling
from covpo.experiments.squared_loss.seeds import (
    SEEDS_RECORD,
    failure_rate_study,
    failure_rates_entry,
    seeded_cost_sweeps,
    sweeps_entry,
)
from covpo.families import COLLAPSE_COVERAGES, RANDOM_COVERAGES, collapse_family, random_family
from covpo.records import stamp, write_stamped_run

SEEDS = tuple(range(20))
FAILURE_COVERAGES = (20.0, 40.0, 80.0, 160.0)
FAILURE_BATCH_SIZES = (128, 256, 512, 1024, 2048)
INNER_STEPS_BATCH_SIZES = (256, 512, 1024)
INNER_STEPS = (10, 20, 40, 80)
REBEL_EPS = (0.1, 0.03, 0.01, 0.003, 0.001)
MODULES = [
    "covpo.algorithms", "covpo.batches", "covpo.families", "covpo.instances", "covpo.policies",
    "covpo.objectives", "covpo.coverage_instances", "covpo.trajectory",
    "covpo.experiments.sweeps", "covpo.experiments.parallel", "covpo.experiments.population",
    "covpo.experiments.squared_loss",
]
SCRIPT = "scripts/squared_loss_seeds.py"


def table_1_entry(instance, seeds) -> dict:
    """Per seed, what the chapter's Table 1 claims rest on."""
    rows = []
    for seed in seeds:
        table = table_1(
            instance, (0.05, 0.02, 0.01, 0.005), betas=(0.0625, 0.125, 0.25, 0.5, 1.0), group_sizes=(2, 8, 32),
            batch_size=64, inner_steps=10, eta_scale=2.0, n_iterations=120, seed=seed,
        )
        kimi_fast = next(i for i, run in enumerate(table.runs) if run[:2] == ("KimiPO", 0.0625))
        norm_32 = table.runs.index(("KimiPO-Norm", 0.0625, 32))
        rows.append({
            "seed": seed, "reached": bool(table.reached.all()),
            "outer_iterations": table.outer_iterations.tolist(),
            "gradient_steps": table.gradient_steps.tolist(),
            "kimi_beta": table.beta[0].tolist(),
            "kimi_fast_loss": float(table.run_coverage_loss[kimi_fast]),
            "norm_32_loss": float(table.run_coverage_loss[norm_32]),
            "exponents": [table.exponent(name, "outer_iterations") for name in ("KimiPO", "KimiPO-Norm")],
        })
    return {"seeds": list(seeds), "rows": rows}


def main() -> None:
    start = time.perf_counter()
    collapse = collapse_family(COLLAPSE_COVERAGES)
    random_instances = random_family(RANDOM_COVERAGES)
    kimi_methods = squared_loss_methods("collapse")[:2]
    by_coverage = [collapse[COLLAPSE_COVERAGES.index(c)] for c in FAILURE_COVERAGES]
    failure = failure_rate_study(by_coverage, FAILURE_COVERAGES, kimi_methods, FAILURE_BATCH_SIZES,
                                 eps=0.04, seeds=SEEDS)
    print(failure.table())
    steps = failure_rate_study([collapse[2]], [40.0], kimi_methods, INNER_STEPS_BATCH_SIZES,
                               inner_steps=INNER_STEPS, eps=0.04, seeds=SEEDS)
    print(steps.table())
    study = batch_size_study(collapse[2], squared_loss_methods("collapse")[:3], (256, 1024), eps=0.04, seeds=SEEDS)
    print(study.table())
    sweeps = {
        "random": sweeps_entry(seeded_cost_sweeps(random_instances, RANDOM_COVERAGES,
                                                  squared_loss_methods("random"), eps=0.05, seeds=SEEDS)),
        "collapse": sweeps_entry(seeded_cost_sweeps(collapse, COLLAPSE_COVERAGES,
                                                    squared_loss_methods("collapse"), eps=0.04, seeds=SEEDS)),
    }
    table_1_seeds = table_1_entry(random_instances[1], SEEDS)
    rebel = rebel_eps_scaling(collapse[2], REBEL_EPS, seeds=SEEDS)
    print(rebel.table())
    seconds = time.perf_counter() - start
    run = {
        "stamp": stamp(f"python {SCRIPT}", MODULES, [SCRIPT], seconds),
        "failure_rates": failure_rates_entry(failure),
        "inner_steps": failure_rates_entry(steps),
        "batch_study": {
            "names": list(study.names), "batch_sizes": study.batch_sizes.tolist(), "seeds": list(study.seeds),
            "coverage_loss": np.asarray(study.coverage_loss, dtype=float).tolist(),
            "reached": study.reached.tolist(),
        },
        "sweeps": sweeps,
        "table_1": table_1_seeds,
        "rebel_eps": {
            "eps": rebel.eps.tolist(), "betas": rebel.betas.tolist(), "seeds": list(rebel.seeds),
            "responses": rebel.responses.tolist(), "gradient_steps": rebel.gradient_steps.tolist(),
            "coverage_loss": rebel.coverage_loss.tolist(), "exact_iterations": rebel.exact_iterations.tolist(),
            "batch_size": rebel.batch_size, "inner_steps": rebel.inner_steps,
        },
    }
    write_stamped_run(SEEDS_RECORD, run)
    print(f"wrote {SEEDS_RECORD} ({run['stamp']['profile']} profile) in {seconds:.0f} s")


if __name__ == "__main__":
    with joblib.parallel_config(n_jobs=-1):
        main()
