"""Run chapter 7's transformer study at full size: the learning-rate protocol, every cell, tables, figures, costs.

    python scripts/transformer_study.py                 # the full study (about 22 times the chapter's runs)
    python scripts/transformer_study.py --size book     # what the chapter runs
    python scripts/transformer_study.py --out results/ --skip-sweep

The full study first measures every arm's learning rate by the chapter's protocol (the fastest
stable rate on a grid, mixed task, partial credit) and prints it next to the rate the book fixes
(``covpo.labs.transformer.methods.LEARNING_RATES``); it then runs every arm on every task under
both rewards, and three arms at larger groups, on 18 seeds over 3 base models, at the rates the
book fixes. The same command runs on a GPU unchanged when JAX sees one (install the CUDA build of
jaxlib); it prints which device JAX uses. It writes ``transformer.txt`` (the tables, the timings
and a cost table over widths and lengths) and the chapter's figures as PNG into ``--out``
(default ``_build/full``; the route figure from this run's seeds, where it ran the route's
cells). Measured once each: 4 minutes on one NVIDIA H200, 12 minutes on an idle 2-core CPU.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax

from covpo.labs.transformer import LEARNING_RATES, cost_table, transformer_study
from covpo.labs.transformer.analysis import METRICS, paired_table, summary_table
from covpo.labs.transformer.experiment import learning_rate_sweep
from covpo.labs.transformer.route import route_cells, route_run
from covpo.plots.base import figure_png
from covpo.plots.transformer import transformer_passk_figure, transformer_route_figure, transformer_training_figure
from covpo.table import Table


def sweep_table(size: str, seed: int) -> Table:
    """The learning-rate protocol measured on the seeds of ``size``, with the rates the book fixes."""
    sweep = learning_rate_sweep(size, seed=seed)
    rows = tuple((arm, *(f"{speed:.3f}{'' if stable else ' (unstable)'}" for speed, stable
                         in zip(sweep.speed[arm], sweep.stable[arm])), f"{sweep.chosen[arm]:g}",
                  f"{LEARNING_RATES[arm]:g}") for arm in sweep.chosen)
    return Table(("arm", *(f"lr {rate:g}" for rate in sweep.rates), "fastest stable", "book uses"), rows,
                 caption="Learning-rate protocol: median mean batch reward over the run (mixed task, partial credit)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("book", "full"), default="full")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("_build/full"))
    parser.add_argument("--skip-sweep", action="store_true", help="do not rerun the learning-rate protocol")
    parser.add_argument("--widths", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument("--lengths", type=int, nargs="+", default=[3, 6, 12])
    arguments = parser.parse_args()
    arguments.out.mkdir(parents=True, exist_ok=True)
    print(f"JAX devices: {jax.devices()}")
    start = time.perf_counter()
    lines = []
    if not arguments.skip_sweep:
        lines += [str(sweep_table(arguments.size, arguments.seed)), ""]
        print("\n".join(lines))
    study_start = time.perf_counter()
    study = transformer_study(arguments.size, seed=arguments.seed)
    study_seconds = time.perf_counter() - study_start
    rewards = sorted({cell.reward for cell in study.cells}, key=("partial", "binary").index)
    for reward in rewards:
        lines += [str(summary_table(study, reward)), "", str(paired_table(study, metrics=METRICS[:4], reward=reward)),
                  ""]
    lines += [f"parameters: {study.n_parameters}; responses per run: {study.setup.responses}; "
              f"gradient steps per run: {study.setup.gradient_steps}; seeds: {len(study.seeds)}",
              *(f"{name}: {value:.3g}" for name, value in study.timings.items()), ""]
    print("\n".join(lines[-(len(study.timings) + 2):]))
    costs = cost_table(arguments.widths, arguments.lengths, sampler=True)
    lines += [str(costs), f"total wall-clock: {time.perf_counter() - start:.0f} s on {jax.devices()[0]}"]
    (arguments.out / "transformer.txt").write_text("\n".join(lines) + "\n")
    print(costs)
    figures = [("transformer_passk.png", transformer_passk_figure(study)),
               ("transformer_training.png", transformer_training_figure(study))]
    if set(route_cells()) <= set(study.cells):
        record = {"runs": [route_run(study, "this run", study_seconds)]}
        figures.append(("transformer_route.png", transformer_route_figure(record)))
    for name, figure in figures:
        (arguments.out / name).write_bytes(figure_png(figure))
    print(f"wrote {arguments.out}")


if __name__ == "__main__":
    main()
