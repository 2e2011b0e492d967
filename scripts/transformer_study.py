"""Run chapter 7's transformer study at full size, with its table, figures and cost table.

    python scripts/transformer_study.py                 # the full study (all methods, both rewards, 8 seeds)
    python scripts/transformer_study.py --size book     # what the chapter runs
    python scripts/transformer_study.py --out results/

The same command runs on a GPU unchanged when JAX sees one (install the CUDA build of jaxlib); it
prints which device JAX uses. Writes ``transformer.txt`` (the summary table, the timings and the
cost table over widths and lengths) and the chapter's figures as PNG into ``--out`` (default
``_build/full``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax

from covpo.labs.transformer import cost_table, transformer_study
from covpo.plots.base import figure_png
from covpo.plots.transformer import transformer_passk_figure, transformer_summary_table, transformer_training_figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("book", "full"), default="full")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("_build/full"))
    parser.add_argument("--widths", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument("--lengths", type=int, nargs="+", default=[3, 6, 12])
    arguments = parser.parse_args()
    arguments.out.mkdir(parents=True, exist_ok=True)
    print(f"JAX devices: {jax.devices()}")
    start = time.perf_counter()
    study = transformer_study(arguments.size, seed=arguments.seed)
    lines = [str(transformer_summary_table(study)), "",
             f"parameters: {study.n_parameters}; responses per run: {study.responses_per_run}",
             *(f"{name}: {value:.3g}" for name, value in study.timings.items()), ""]
    print("\n".join(lines))
    costs = cost_table(arguments.widths, arguments.lengths, sampler=True)
    lines += [str(costs), f"total wall-clock: {time.perf_counter() - start:.0f} s on {jax.devices()[0]}"]
    (arguments.out / "transformer.txt").write_text("\n".join(lines) + "\n")
    print(costs)
    for name, figure in (("transformer_passk.png", transformer_passk_figure(study)),
                         ("transformer_partial.png", transformer_training_figure(study, "partial")),
                         ("transformer_binary.png", transformer_training_figure(study, "binary"))):
        (arguments.out / name).write_bytes(figure_png(figure))
    print(f"wrote {arguments.out}")


if __name__ == "__main__":
    main()
