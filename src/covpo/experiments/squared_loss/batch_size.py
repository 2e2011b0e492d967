"""Costs against coverage on chapter 4's instance families, and what the batch size does to the squared-loss methods (paper section 4).

:func:`squared_loss_methods` gives the three methods at our settings; :func:`batch_size_study`
measures every run it makes with :func:`~covpo.experiments.squared_loss.mse.mse_path`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.instances import BanditInstance
from covpo.experiments.parallel import run_tasks
from covpo.experiments.sweeps import Method, check_methods, collapse_family_methods, random_family_methods
from covpo.table import Table
from covpo.validation import check_instance, check_option, check_positive, check_positive_grid, check_seeds
from covpo.experiments.squared_loss.mse import MSEPath, _batch_size_run
from covpo.experiments.squared_loss.table_1 import MAX_COVERAGE_LOSS


def squared_loss_methods(family: str) -> tuple[Method, ...]:
    """The three squared-loss methods with chapter 5's settings, plus chapter 4's PPO-Lite for reference.

    ``family`` is ``"random"`` or ``"collapse"`` (the families of
    :mod:`covpo.families`). Every method uses ``beta = 0.5`` and ``eta = 2 / beta^2``.
    On the random family: ``N = 256``, ``K = 10``, 40 outer iterations, ``G = 8`` for
    KimiPO-Norm. On the collapse family: ``K = 40``, 25 outer iterations, ``N = 256`` for
    Rebel-OnPolicy and ``N = 1024`` for the two Kimi-style methods, which lose decades of
    coverage at ``N = 256`` there (:func:`batch_size_study`).
    """
    family = check_option("family", family, ("random", "collapse"))
    beta = 0.5
    etas = (2.0 / beta**2,)
    if family == "random":
        common = {"beta": beta, "batch_size": 256, "inner_steps": 10, "n_iterations": 40}
        reference = random_family_methods()[1]
        kimi_batch = 256
    else:
        common = {"beta": beta, "batch_size": 256, "inner_steps": 40, "n_iterations": 25}
        reference = collapse_family_methods()[1]
        kimi_batch = 1024
    return (
        Method("KimiPO", "kimipo", {**common, "batch_size": kimi_batch, "extra_responses": 1}, etas),
        Method("KimiPO-Norm", "kimipo_norm", {**common, "batch_size": kimi_batch, "extra_responses": 8}, etas),
        Method("Rebel-OnPolicy", "rebel_onpolicy", common, etas),
        reference,
    )


@dataclass(frozen=True, eq=False)
class BatchSizeStudy:
    """Coverage loss and success of methods over batch sizes and seeds on one instance.

    Attributes
    ----------
    names
        The methods' names.
    batch_sizes
        The ``N`` tried.
    seeds
        The seeds.
    coverage_loss
        ``(n_methods, n_batch_sizes, n_seeds)``: the largest fall of any prompt's coverage below
        the base model's, in decades (``nan`` where the run diverged).
    reached
        Same shape: whether the run became ``eps``-optimal.
    paths
        Each run's :class:`~covpo.experiments.squared_loss.mse.MSEPath` (``None`` where it diverged or is not a squared-loss run), in the order of the runs:
        method, then batch size, then seed; see :meth:`path`.
    """

    names: tuple[str, ...]
    batch_sizes: np.ndarray
    seeds: tuple[int, ...]
    coverage_loss: np.ndarray
    reached: np.ndarray
    paths: tuple[MSEPath | None, ...] = ()

    def path(self, method: int, batch: int, seed: int) -> MSEPath | None:
        """The :class:`~covpo.experiments.squared_loss.mse.MSEPath` of run ``(method, batch size, seed)`` (indices), ``None`` if it diverged."""
        return self.paths[(method * self.batch_sizes.size + batch) * len(self.seeds) + seed]

    def mse_table(self, caption: str = "") -> Table:
        """Per method and ``N``, over seeds: the largest step MSE, the range of ``2 beta^2 KL / MSE``, the bound and the fall."""
        rows = []
        for i, name in enumerate(self.names):
            for j, batch in enumerate(self.batch_sizes):
                paths = [p for p in (self.path(i, j, k) for k in range(len(self.seeds))) if p is not None]
                if not paths:
                    continue
                ratios = np.concatenate([2.0 * p.beta**2 * p.inner_kl / p.mse for p in paths])
                rows.append((
                    name, int(batch), float(max(p.mse.max() for p in paths)),
                    float(ratios.min()), float(ratios.max()),
                    float(max(p.accumulated_bound.max() for p in paths)),
                    float(max(p.coverage_fall.max() for p in paths)),
                ))
        return Table(
            ("method", "N (prompts)", "largest step MSE",
             r"smallest $2\beta^2\mathrm{KL}/\mathrm{MSE}$", r"largest $2\beta^2\mathrm{KL}/\mathrm{MSE}$",
             "largest bound on the fall (decades)", "largest fall (decades)"),
            tuple(rows),
            caption=caption or f"The MSE criterion over {len(self.seeds)} seeds",
            notes=("Step MSE: $\\mathbb{E}_x \\mathbb{E}_{\\pi_t} (\\beta \\log(\\pi_{t+1}/\\pi^\\star_{t+1}))^2$, "
                   "the largest over steps and seeds.",
                   "Bound: the sum over steps of $\\sqrt{\\mathrm{MSE}_t(x)/c_t(x)}/\\beta$ on the worst prompt, in decades.",
                   "Fall: the largest fall of any prompt's coverage below the base model's."),
        )

    def summary(self) -> str:
        """Per method and ``N``: the runs reaching eps, the runs losing more than a factor of two, the worst loss."""
        lines = []
        for i, name in enumerate(self.names):
            for j, n in enumerate(self.batch_sizes):
                losses = self.coverage_loss[i, j]
                lines.append(
                    f"{name:16} N = {n:5d}: eps reached {int(self.reached[i, j].sum())}/{len(self.seeds)}, "
                    f"coverage lost beyond a factor 2 in {int(np.sum(losses > MAX_COVERAGE_LOSS))}, "
                    f"worst loss {np.nanmax(losses):.2f} decades"
                )
        return "\n".join(lines)

    def table(self, caption: str = "") -> Table:
        """Per method and ``N``: runs reaching eps, runs losing more than a factor of two, the worst loss."""
        n = len(self.seeds)
        rows = tuple(
            (name, int(batch), int(self.reached[i, j].sum()),
             int(np.sum(self.coverage_loss[i, j] > MAX_COVERAGE_LOSS)), float(np.nanmax(self.coverage_loss[i, j])))
            for i, name in enumerate(self.names)
            for j, batch in enumerate(self.batch_sizes)
        )
        return Table(
            ("method", "N (prompts)", f"runs reaching ε (of {n})", f"runs losing > 2× (of {n})",
             "worst coverage loss (decades)"),
            rows,
            caption=caption or f"Coverage lost against the batch size, over {n} seeds",
            notes=("Losing > 2×: some prompt's coverage fell below half the base model's ($\\log_{10} 2$ decades).",),
        )


def batch_size_study(
    instance: BanditInstance,
    methods: Sequence[Method],
    batch_sizes: Sequence[int],
    *,
    eps: float,
    seeds: Sequence[int],
) -> BatchSizeStudy:
    """Run each method at each batch size ``N`` (all else as in its settings) for every seed.

    Run ``(i, j, k)`` draws from ``np.random.default_rng([seed_k, i, j])`` and uses the first
    learning rate of the method's grid; the runs go through :func:`covpo.experiments.parallel.run_tasks`.
    Each squared-loss run is also measured in the MSE criterion's terms (:func:`~covpo.experiments.squared_loss.mse.mse_path`, paper
    section 4.1); other methods' runs get no :class:`~covpo.experiments.squared_loss.mse.MSEPath`.
    """
    instance = check_instance("instance", instance, BanditInstance)
    methods = check_methods("methods", methods)
    batch_sizes = check_positive_grid("batch_sizes", batch_sizes, integers=True)
    eps = check_positive("eps", eps)
    seeds = check_seeds("seeds", seeds)
    coordinates = [
        (i, j, k) for i in range(len(methods)) for j in range(batch_sizes.size) for k in range(len(seeds))
    ]
    tasks = [
        (methods[i].with_hyperparameters(batch_size=int(batch_sizes[j])), instance, methods[i].learning_rates[0],
         (seeds[k], i, j), eps)
        for i, j, k in coordinates
    ]
    results = run_tasks(_batch_size_run, tasks, "batch-size runs")
    summaries = [None if r is None else r[0] for r in results]
    shape = (len(methods), batch_sizes.size, len(seeds))
    return BatchSizeStudy(
        names=tuple(m.label for m in methods),
        batch_sizes=batch_sizes,
        seeds=seeds,
        coverage_loss=np.array([np.nan if r is None else r.coverage_loss for r in summaries]).reshape(shape),
        reached=np.array([r is not None and r.responses_to_eps is not None for r in summaries]).reshape(shape),
        paths=tuple(None if r is None else r[1] for r in results),
    )
