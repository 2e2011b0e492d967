"""Chapter 5's sampled studies over seeds: the cost sweeps and the Kimi-style failure rates against the batch size (paper section 4).

:func:`seeded_cost_sweeps` repeats :func:`covpo.experiments.sweeps.cost_sweep` over the first
seeds; :func:`failure_rate_study` counts, over seeds, the runs of a method that lose more than a
factor of two of some prompt's coverage, against the batch size ``N`` and the inner steps ``K``,
on instances of several coverages. ``SEEDS_RECORD`` is the stamped record that
``scripts/squared_loss_seeds.py`` writes with these studies at twenty seeds or more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import numpy as np

from covpo.experiments.parallel import run_tasks
from covpo.experiments.sweeps import CostSweep, Method, check_methods, cost_sweep, summarize_run
from covpo.instances import BanditInstance
from covpo.rates import Rate, wilson_rate
from covpo.records import read_stamped_record
from covpo.table import Table
from covpo.validation import check_instances, check_positive, check_positive_grid, check_seeds
from covpo.experiments.squared_loss.table_1 import MAX_COVERAGE_LOSS

SEEDS_RECORD = Path(str(files(__package__) / "seeds_record.json"))
"""The stamped record of chapter 5's seed studies, written by ``scripts/squared_loss_seeds.py``."""


@dataclass(frozen=True, eq=False)
class SeededSweeps:
    """One :class:`~covpo.experiments.sweeps.CostSweep` per seed, on one family.

    Attributes
    ----------
    seeds
        The seeds, in order.
    sweeps
        The sweep of each seed.
    """

    seeds: tuple[int, ...]
    sweeps: tuple[CostSweep, ...]

    def stacked(self, field: str) -> np.ndarray:
        """``field`` of every sweep stacked, shape ``(n_seeds, n_methods, n_coverages)``."""
        return np.stack([getattr(sweep, field) for sweep in self.sweeps])

    def loss_rate(self, method: int, coverages: Sequence[int], threshold: float) -> Rate:
        """How many (seed, coverage) runs of ``method`` at the coverage indices given lose more than ``threshold`` decades."""
        losses = self.stacked("coverage_loss")[:, method][:, list(coverages)]
        return wilson_rate(int(np.sum(losses > threshold)), int(losses.size))

    def table(self, caption: str = "") -> Table:
        """One row per seed, method and coverage: reached, responses, steps and the coverage loss."""
        rows = tuple(
            (seed, method.label, float(c), bool(sweep.reached[i, j]), int(sweep.responses_to_eps[i, j]),
             int(sweep.steps_to_eps[i, j]), float(sweep.coverage_loss[i, j]))
            for seed, sweep in zip(self.seeds, self.sweeps)
            for i, method in enumerate(sweep.methods)
            for j, c in enumerate(sweep.coverages)
        )
        return Table(
            ("seed", "method", "$C_{\\mathrm{cov}}$", "reached ε", "responses", "gradient steps",
             "coverage loss (decades)"),
            rows,
            caption=caption or f"Costs over seeds {self.seeds[0]} to {self.seeds[-1]}",
            notes=("Where ε was not reached, the costs are the whole budget.",),
        )


def seeded_cost_sweeps(
    instances: Sequence[BanditInstance],
    coverages: Sequence[float],
    methods: Sequence[Method],
    *,
    eps: float,
    seeds: Sequence[int],
) -> SeededSweeps:
    """:func:`~covpo.experiments.sweeps.cost_sweep` once per seed (paper section 4's coverage-preservation claims, measured).

    Seed ``s``'s runs on instance ``i`` draw from ``np.random.default_rng([s, i])``, as a single
    sweep at seed ``s`` does.
    """
    seeds = check_seeds("seeds", seeds)
    return SeededSweeps(seeds, tuple(
        cost_sweep(instances, coverages, methods, eps=eps, seed=seed) for seed in seeds
    ))


@dataclass(frozen=True, eq=False)
class FailureRates:
    """Coverage lost by each method over seeds, against ``C_cov``, the batch size and the inner steps.

    Attributes
    ----------
    coverages, names, batch_sizes, inner_steps, seeds
        The grid: instances' ``C_cov``, methods' labels, ``N`` and ``K`` tried, seeds.
    coverage_loss
        ``(n_coverages, n_methods, n_batch_sizes, n_inner_steps, n_seeds)``: each run's largest fall
        of a prompt's coverage below the base model's, in decades (``inf`` where it diverged).
    reached
        Same shape: whether the run became ``eps``-optimal.
    """

    coverages: np.ndarray
    names: tuple[str, ...]
    batch_sizes: np.ndarray
    inner_steps: np.ndarray
    seeds: tuple[int, ...]
    coverage_loss: np.ndarray
    reached: np.ndarray

    @property
    def failed(self) -> np.ndarray:
        """Whether each run lost more than a factor of two (``MAX_COVERAGE_LOSS`` decades) on some prompt."""
        return self.coverage_loss > MAX_COVERAGE_LOSS

    def rate(self, coverage: int, method: int, batch: int, steps: int = 0) -> Rate:
        """The failure rate over seeds of one cell (indices), with its Wilson interval."""
        failed = self.failed[coverage, method, batch, steps]
        return wilson_rate(int(failed.sum()), int(failed.size))

    def smallest_safe_batch(self, coverage: int, method: int, steps: int = 0) -> int | None:
        """The smallest ``N`` of the grid from which on no run of any larger ``N`` failed, ``None`` if the largest failed."""
        safe = ~self.failed[coverage, method, :, steps].any(axis=-1)
        if not safe[-1]:
            return None
        first = safe.size - int(np.argmin(safe[::-1])) if not safe.all() else 0
        return int(self.batch_sizes[first])

    def table(self, caption: str = "") -> Table:
        """One row per cell: the failure rate with its Wilson interval, the runs reaching eps, the worst loss."""
        n = len(self.seeds)
        rows = []
        for c, coverage in enumerate(self.coverages):
            for i, name in enumerate(self.names):
                for k, steps in enumerate(self.inner_steps):
                    for j, batch in enumerate(self.batch_sizes):
                        rate = self.rate(c, i, j, k)
                        rows.append((float(coverage), name, int(batch), int(steps), rate.successes,
                                     f"{100 * rate.low:.0f}-{100 * rate.high:.0f}%",
                                     int(self.reached[c, i, j, k].sum()),
                                     float(np.max(self.coverage_loss[c, i, j, k]))))
        return Table(
            ("$C_{\\mathrm{cov}}$", "method", "N", "K", f"runs losing > 2× (of {n})", "Wilson 95% interval",
             f"runs reaching ε (of {n})", "worst loss (decades)"),
            tuple(rows),
            caption=caption or f"Failure rates over seeds {self.seeds[0]} to {self.seeds[-1]}",
            notes=("Losing > 2×: some prompt's coverage fell below half the base model's ($\\log_{10} 2$ decades).",),
        )


def failure_rate_study(
    instances: Sequence[BanditInstance],
    coverages: Sequence[float],
    methods: Sequence[Method],
    batch_sizes: Sequence[int],
    *,
    inner_steps: Sequence[int] | None = None,
    eps: float,
    seeds: Sequence[int],
) -> FailureRates:
    """Run each method at each ``C_cov``, ``N`` and ``K`` (all else as in its settings) for every seed (paper section 4).

    The paper's coverage-preservation theorems ask for batches that grow polynomially with the
    base model's coverage; this measures how often a run at a given batch loses more than a
    factor of two of some prompt's coverage. Run ``(c, i, j, k, s)`` draws from
    ``np.random.default_rng([seed_s, i, N_j, K_k, c])`` and uses the method's first learning
    rate; ``inner_steps`` defaults to each method's own ``K`` (then all methods must share it).
    """
    instances = check_instances("instances", instances, BanditInstance)
    coverages = check_positive_grid("coverages", coverages)
    if len(instances) != coverages.size:
        raise ValueError(f"coverages must give one C_cov per instance, got {coverages.size} for {len(instances)}")
    methods = check_methods("methods", methods)
    batch_sizes = check_positive_grid("batch_sizes", batch_sizes, integers=True)
    if inner_steps is None:
        own = {int(m.hyperparameters["inner_steps"]) for m in methods}
        if len(own) != 1:
            raise ValueError(f"inner_steps must be given when the methods' K differ, got {sorted(own)}")
        inner_steps = tuple(own)
    inner_steps = check_positive_grid("inner_steps", inner_steps, integers=True)
    eps = check_positive("eps", eps)
    seeds = check_seeds("seeds", seeds)
    shape = (len(instances), len(methods), batch_sizes.size, inner_steps.size, len(seeds))
    coordinates = list(np.ndindex(*shape))
    tasks = [
        (methods[i].with_hyperparameters(batch_size=int(batch_sizes[j]), inner_steps=int(inner_steps[k])),
         instances[c], methods[i].learning_rates[0],
         (seeds[s], i, int(batch_sizes[j]), int(inner_steps[k]), c), eps)
        for c, i, j, k, s in coordinates
    ]
    summaries = run_tasks(summarize_run, tasks, "failure-rate runs")
    return FailureRates(
        coverages=coverages,
        names=tuple(m.label for m in methods),
        batch_sizes=batch_sizes,
        inner_steps=inner_steps,
        seeds=seeds,
        coverage_loss=np.array([np.inf if r is None else r.coverage_loss for r in summaries]).reshape(shape),
        reached=np.array([r is not None and r.responses_to_eps is not None for r in summaries]).reshape(shape),
    )


def _listed(array: np.ndarray) -> list:
    return np.asarray(array, dtype=float).tolist()


def failure_rates_entry(study: FailureRates) -> dict:
    """``study`` as a JSON-ready mapping (``inf`` for a diverged run), read back by :func:`failure_rates_from_entry`."""
    check_instances("study", [study], FailureRates)
    return {
        "coverages": _listed(study.coverages), "names": list(study.names),
        "batch_sizes": [int(n) for n in study.batch_sizes], "inner_steps": [int(k) for k in study.inner_steps],
        "seeds": list(study.seeds), "coverage_loss": _listed(study.coverage_loss),
        "reached": np.asarray(study.reached).tolist(),
    }


def failure_rates_from_entry(entry: dict) -> FailureRates:
    """The :class:`FailureRates` a record's entry holds (:func:`failure_rates_entry`)."""
    if not isinstance(entry, dict) or not {"coverages", "names", "coverage_loss", "reached"} <= entry.keys():
        raise ValueError(f"entry must be a mapping made by failure_rates_entry, got {entry!r}")
    return FailureRates(
        coverages=np.array(entry["coverages"], dtype=float), names=tuple(entry["names"]),
        batch_sizes=np.array(entry["batch_sizes"]), inner_steps=np.array(entry["inner_steps"]),
        seeds=tuple(entry["seeds"]), coverage_loss=np.array(entry["coverage_loss"], dtype=float),
        reached=np.array(entry["reached"], dtype=bool),
    )


def sweeps_entry(sweeps: SeededSweeps) -> dict:
    """The per-seed results of :func:`seeded_cost_sweeps` as a JSON-ready mapping, ``(n_seeds, n_methods, n_coverages)`` arrays."""
    check_instances("sweeps", [sweeps], SeededSweeps)
    first = sweeps.sweeps[0]
    return {
        "seeds": list(sweeps.seeds), "names": [m.label for m in first.methods],
        "coverages": _listed(first.coverages),
        "reached": sweeps.stacked("reached").tolist(),
        "responses": sweeps.stacked("responses_to_eps").tolist(),
        "steps": sweeps.stacked("steps_to_eps").tolist(),
        "coverage_loss": _listed(sweeps.stacked("coverage_loss")),
        "response_exponents": [[np.nan if (fit := sweep.fit(m.label)) is None else float(fit.exponent)
                                for m in sweep.methods] for sweep in sweeps.sweeps],
    }


def read_seeds_record(path: str | Path | None = None) -> dict:
    """The stamped record of chapter 5's seed studies (default :data:`SEEDS_RECORD`), every run checked for its entries."""
    def check(record: dict) -> dict:
        needed = {"failure_rates", "inner_steps", "batch_study", "sweeps", "table_1", "rebel_eps"}
        for run in record["runs"]:
            if not needed <= run.keys():
                raise ValueError(f"{path or SEEDS_RECORD}: a run lacks {sorted(needed - run.keys())}")
        return record

    return read_stamped_record(SEEDS_RECORD if path is None else path, check)
