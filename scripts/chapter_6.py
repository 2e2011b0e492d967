"""Regenerate chapter 6's sweeps, at the book's size or large, with their tables and figures.

    python scripts/chapter_6.py                  # the sizes the book runs
    python scripts/chapter_6.py --full           # more instances, settings and seeds
    python scripts/chapter_6.py --full --jobs 8 --out results/

Writes one text file per study (``head_to_head.txt``, ``tuning.txt``, ``noise.txt``,
``sequences.txt``, ``nonlinear.txt``) and their figures as PNG into ``--out`` (default
``_build/full``). The head-to-head, the tuning maps and the noise study go through
:func:`covpo.experiments.parallel.run_tasks`, so any joblib backend runs them with no code change, and the
results are identical bit for bit whichever is used (every run seeds its own generator):

- local processes: ``--jobs N`` (joblib's loky backend);
- a Dask cluster: start a ``distributed.Client`` and wrap the call,
  ``with joblib.parallel_config(backend="dask"): default_head_to_head("full")``;
- a Ray cluster: call ``ray.init()`` and ``ray.util.joblib.register_ray()``, then
  ``with joblib.parallel_config(backend="ray"): default_head_to_head("full")``.

``--backend dask`` or ``--backend ray`` does exactly that here, connecting to the scheduler
given by ``--address`` (Dask) or ``ray.init``'s default (Ray).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import joblib

from covpo.experiments.implications.head_to_head import BOOK_SEEDS, FULL_SEEDS, default_head_to_head, default_suite
from covpo.experiments.implications.paper_units import (
    FIXED_BUDGET_FACTOR,
    HARDNESS_GAPS,
    hardness_head_to_head,
    units_comparison,
)
from covpo.families import COLLAPSE_GAP
from covpo.experiments.implications.noise import noise_study
from covpo.labs.nonlinear import nonlinear_experiment
from covpo.plots.beyond import nonlinear_figure, sequence_figure
from covpo.plots.head_to_head import head_to_head_figure
from covpo.plots.tuning import noise_figure, tuning_heatmaps_figure
from covpo.labs.sequences import sequence_experiment
from covpo.experiments.implications.tuning import book_tuning_instance, clip_width_map, inner_steps_map, tuning_summary_table

FIGURE_DPI = 120
FULL_TUNING = {"betas": (0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0), "n_seeds": 10}
FULL_INNER_STEPS = (1, 2, 4, 8, 16, 32, 64)
FULL_WIDTHS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
FULL_NOISE = {"coverages": (10.0, 40.0, 160.0), "n_seeds": 100}
FULL_SEQUENCE_SEEDS = tuple(range(10))
FULL_NONLINEAR_SEEDS = tuple(range(10))


def parse_arguments() -> argparse.Namespace:
    """The command line: size, output directory, workers and backend."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the large versions: more instances, settings and seeds")
    parser.add_argument("--out", type=Path, default=Path("_build/full"), help="output directory")
    parser.add_argument("--jobs", type=int, default=2, help="joblib workers (loky backend)")
    parser.add_argument("--backend", choices=("loky", "dask", "ray"), default="loky")
    parser.add_argument("--address", default=None, help="Dask scheduler address (default: a local cluster)")
    return parser.parse_args()


def backend_config(arguments: argparse.Namespace) -> dict:
    """Keyword arguments of :func:`joblib.parallel_config` for the chosen backend (connecting to it first)."""
    if arguments.backend == "dask":
        from distributed import Client

        Client(arguments.address)
        return {"backend": "dask"}
    if arguments.backend == "ray":
        import ray
        from ray.util.joblib import register_ray

        ray.init()
        register_ray()
        return {"backend": "ray"}
    return {"backend": "loky", "n_jobs": arguments.jobs}


def head_to_head_study(full: bool, out: Path) -> str:
    """Every algorithm on the suite: tables, summaries and one figure per suite part.

    Ends with the paper's summary claim in its units (gradient steps and generation rounds to
    eps, and responses) on every suite part and on the collapse family at several gaps.
    """
    seeds = FULL_SEEDS if full else BOOK_SEEDS
    size = "full" if full else "book"
    results = default_head_to_head(size, seeds)
    sections = [f"seeds {list(seeds)}"]
    for index, result in enumerate(results):
        sections += [result.label, str(result.table()), result.summary(), ""]
        head_to_head_figure(result, result.label).savefig(out / f"head_to_head_{index}.png", dpi=FIGURE_DPI)
    families = [part.family for part in default_suite(size)]
    hardness = hardness_head_to_head(seeds=seeds)
    units = units_comparison(
        (*results, *hardness),
        (*families, *[f"collapse, fixed {FIXED_BUDGET_FACTOR}x responses"] * len(hardness)),
        (*(COLLAPSE_GAP if family == "collapse" else None for family in families), *HARDNESS_GAPS),
    )
    sections += ["the paper's summary claim in its units", str(units.table())]
    return "\n".join(sections)


def tuning_study(full: bool, out: Path) -> str:
    """The (beta, K) and (beta, clip width) maps on the collapse instance with C_cov = 40."""
    instance = book_tuning_instance()
    if full:
        steps = inner_steps_map(instance, inner_steps=FULL_INNER_STEPS, **FULL_TUNING)
        widths = clip_width_map(instance, widths=FULL_WIDTHS, **FULL_TUNING)
    else:
        steps, widths = inner_steps_map(instance), clip_width_map(instance)
    tuning_heatmaps_figure(steps, widths).savefig(out / "tuning.png", dpi=FIGURE_DPI)
    summary = str(tuning_summary_table((steps, widths)))
    return "\n\n".join((steps.summary(), widths.summary(), summary))


def noise_part(full: bool, out: Path) -> str:
    """Sampled against exact runs over many seeds."""
    study = noise_study(**FULL_NOISE) if full else noise_study()
    noise_figure(study).savefig(out / "noise.png", dpi=FIGURE_DPI)
    return study.summary()


def sequence_study(full: bool, out: Path) -> str:
    """The token-sequence laboratory, for one seed (book) or ten."""
    seeds = FULL_SEQUENCE_SEEDS if full else (0,)
    sections = []
    for seed in seeds:
        experiment = sequence_experiment(seed=seed)
        sequence_figure(experiment).savefig(out / f"sequences_seed_{seed}.png", dpi=FIGURE_DPI)
        sections += [f"seed {seed}", experiment.summary(), ""]
    return "\n".join(sections)


def nonlinear_study(full: bool, out: Path) -> str:
    """The two-layer network against the linear policy."""
    experiment = nonlinear_experiment(seeds=FULL_NONLINEAR_SEEDS) if full else nonlinear_experiment()
    nonlinear_figure(experiment).savefig(out / "nonlinear.png", dpi=FIGURE_DPI)
    return experiment.summary()


STUDIES: dict[str, Callable[[bool, Path], str]] = {
    "head_to_head": head_to_head_study,
    "tuning": tuning_study,
    "noise": noise_part,
    "sequences": sequence_study,
    "nonlinear": nonlinear_study,
}


def main() -> None:
    """Run every study and write its text file and figures."""
    arguments = parse_arguments()
    arguments.out.mkdir(parents=True, exist_ok=True)
    size = "full" if arguments.full else "book"
    with joblib.parallel_config(**backend_config(arguments)):
        for name, study in STUDIES.items():
            start = time.perf_counter()
            text = study(arguments.full, arguments.out)
            header = f"{name}, size {size!r}, {time.perf_counter() - start:.1f} s"
            (arguments.out / f"{name}.txt").write_text(f"{header}\n{text}\n")
            print(header, text, sep="\n", end="\n\n")
    print(f"wrote {len(STUDIES)} studies to {arguments.out}")


if __name__ == "__main__":
    main()
