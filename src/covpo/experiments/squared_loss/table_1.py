"""The paper's Table 1 measured: the cheapest setting of KimiPO and KimiPO-Norm for each accuracy ``eps`` (paper section 4.2).

:func:`table_1` runs the grid and fits the scalings in ``1 / eps``; :func:`table_1_seeds` runs it once per
seed (:class:`SeededTable1`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.fits import fit_line
from covpo.instances import BanditInstance
from covpo.experiments.parallel import run_tasks
from covpo.policies import log_coverage, log_policy
from covpo.experiments.sweeps import Method, run_unless_diverged
from covpo.table import Table
from covpo.validation import (
    check_count,
    check_instance,
    check_instances,
    check_positive,
    check_positive_grid,
    check_seed,
    check_seeds,
)


TABLE_1_METHODS = ("KimiPO", "KimiPO-Norm")
MAX_COVERAGE_LOSS = float(np.log10(2.0))
"""Largest coverage loss (decades, on any prompt) of a run :func:`table_1` admits: a factor of two."""


@dataclass(frozen=True, eq=False)
class Table1:
    """The paper's Table 1 measured: the cheapest setting of each method for each ``eps``.

    For each method and ``eps`` the setting kept is the one reaching ``eps`` with the fewest
    gradient steps (fewest responses on a tie) among all runs whose coverage never fell by
    more than ``log10 2`` below the base model's on any prompt.

    Attributes
    ----------
    eps
        The accuracy targets, decreasing.
    beta, eta, extra_responses, outer_iterations, responses, gradient_steps
        ``(n_methods, n_eps)`` arrays: the kept setting and its costs to ``eps`` (``nan``/``-1``
        where no run reached it).
    batch_size, inner_steps
        ``N`` and ``K``, shared by every run.
    eta_scale
        ``c`` in the inner learning rate ``eta = c / beta^2``.
    reached
        ``(n_methods, n_eps)``, whether any admissible run reached ``eps``.
    runs
        Every run's ``(method, beta, extra responses)``.
    run_steps
        ``(n_runs, n_eps)``: each run's gradient steps to each ``eps`` (``-1``: not reached).
    run_coverage_loss
        ``(n_runs,)``: the largest fall of any prompt's coverage below the base model's, in decades
        (a run is admissible when it is at most ``log10 2``; ``nan`` if it diverged).
    run_final_suboptimality
        ``(n_runs,)``: ``J* - J`` at the end of each run (``nan`` if it diverged).
    """

    eps: np.ndarray
    beta: np.ndarray
    eta: np.ndarray
    extra_responses: np.ndarray
    outer_iterations: np.ndarray
    responses: np.ndarray
    gradient_steps: np.ndarray
    batch_size: int
    inner_steps: int
    eta_scale: float
    reached: np.ndarray
    runs: tuple[tuple[str, float, int], ...]
    run_steps: np.ndarray
    run_coverage_loss: np.ndarray
    run_final_suboptimality: np.ndarray
    methods: tuple[str, ...] = TABLE_1_METHODS

    def final_suboptimality(self, method: str, beta: float, extra: int = 1) -> float:
        """``J* - J`` at the end of the run of ``method`` at ``beta`` with ``extra`` baseline responses."""
        key = (method, float(beta), int(extra))
        if key not in self.runs:
            raise ValueError(f"no run {key}; the runs are {self.runs}")
        return float(self.run_final_suboptimality[self.runs.index(key)])

    def exponent(self, method: str, quantity: str) -> float:
        """Log-log slope of ``quantity`` (an attribute name) against ``1 / eps`` for ``method``."""
        row = self.methods.index(method)
        keep = self.reached[row]
        values = getattr(self, quantity)[row, keep].astype(float)
        return fit_line(np.log10(1.0 / self.eps[keep]), np.log10(values)).slope

    def summary(self) -> str:
        """The table, one block per method, with the fitted exponents in ``1 / eps``."""
        quantities = ("beta", "extra_responses", "outer_iterations", "responses", "gradient_steps")
        lines = [f"N = {self.batch_size}, K = {self.inner_steps}, eta = {self.eta_scale:g} / beta^2"]
        for row, method in enumerate(self.methods):
            lines.append(f"{method}:  eps      beta   extra  outer it.  responses  grad. steps")
            for j, eps in enumerate(self.eps):
                if not self.reached[row, j]:
                    lines.append(f"        {eps:7.4f}   not reached by any admissible setting")
                    continue
                lines.append(
                    f"        {eps:7.4f}  {self.beta[row, j]:5g}  {self.extra_responses[row, j]:5d}  "
                    f"{self.outer_iterations[row, j]:9d}  {self.responses[row, j]:9d}  {self.gradient_steps[row, j]:11d}"
                )
            if self.reached[row].sum() >= 2:
                fitted = ", ".join(f"{q} ~ (1/eps)^{self.exponent(method, q):.2f}" for q in quantities[2:])
                lines.append(f"        fitted: {fitted}")
        return "\n".join(lines)

    def table(self) -> Table:
        """The measured table as a :class:`~covpo.table.Table`: one row per method and ``eps``.

        Columns: the kept ``beta`` and extra responses (``M`` for KimiPO, ``G`` for
        KimiPO-Norm), and the outer iterations, responses and gradient steps to ``eps``; a
        dash where no admissible run reached ``eps``. The notes give ``N``, ``K``, ``eta``,
        the admissibility rule and each method's fitted exponents in ``1 / eps``.
        """
        rows = []
        for row, method in enumerate(self.methods):
            for j, eps in enumerate(self.eps):
                if not self.reached[row, j]:
                    rows.append((method, float(eps), None, None, None, None, None))
                    continue
                rows.append((
                    method, float(eps), float(self.beta[row, j]), int(self.extra_responses[row, j]),
                    int(self.outer_iterations[row, j]), int(self.responses[row, j]), int(self.gradient_steps[row, j]),
                ))
        quantities = (("outer_iterations", "outer iterations"), ("responses", "responses"),
                      ("gradient_steps", "gradient steps"))
        fits = tuple(
            f"{method}: " + ", ".join(f"{label} ~ (1/ε)^{round(self.exponent(method, q), 2) + 0.0:.2f}" for q, label in quantities) + "."
            for row, method in enumerate(self.methods)
            if self.reached[row].sum() >= 2
        )
        return Table(
            ("method", "ε", "β", "extra responses", "outer iterations", "responses", "gradient steps"),
            tuple(rows),
            caption=f"Table 1, measured: the cheapest admissible setting per ε (N = {self.batch_size}, "
                    f"K = {self.inner_steps}, η = {self.eta_scale:g}/β²)",
            notes=(
                "Extra responses: M for KimiPO, G for KimiPO-Norm. Admissible: no prompt's coverage falls "
                "below half the base model's. Costs are counted up to the first ε-optimal iterate; a dash: "
                "no admissible run reached ε.",
                *fits,
            ),
        )

    def runs_table(self, method: str) -> Table:
        """Every run of ``method``: its setting, gradient steps to each ``eps`` and the coverage it lost."""
        if method not in self.methods:
            raise ValueError(f"method must be one of {self.methods}, got {method!r}")
        rows = tuple(
            (float(beta), int(extra), *(int(s) if s >= 0 else None for s in steps),
             None if np.isnan(loss) else float(loss), bool(loss <= MAX_COVERAGE_LOSS))
            for (name, beta, extra), steps, loss in zip(self.runs, self.run_steps, self.run_coverage_loss)
            if name == method
        )
        return Table(
            ("β", "extra responses", *(f"steps to ε = {eps:g}" for eps in self.eps),
             "coverage lost (decades)", "admissible"),
            rows,
            caption=f"Every {method} run: gradient steps to each ε",
            notes=("A dash: the run never reached that ε (or, in the coverage column, diverged). "
                   "Admissible: coverage lost at most $\\log_{10} 2$ decades, a factor of two.",),
        )


def _table_1_run(
    instance: BanditInstance,
    method: str,
    beta: float,
    extra: int,
    settings: tuple[int, int, int, float],
    eps: np.ndarray,
    seed: tuple[int, ...],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """One Table-1 run: iterations, responses and steps to each ``eps``, coverage loss in decades, final ``J* - J``."""
    n_iterations, batch_size, inner_steps, eta_scale = settings
    eta = eta_scale / beta**2
    hyperparameters = {
        "beta": beta, "n_iterations": n_iterations, "batch_size": batch_size, "inner_steps": inner_steps,
        "extra_responses": extra,
    }
    algorithm = "kimipo" if method == "KimiPO" else "kimipo_norm"
    trajectory = run_unless_diverged(
        Method(method, algorithm, hyperparameters, (eta,)), instance, eta, np.random.default_rng(list(seed))
    )
    if trajectory is None:
        missing = np.full(eps.size, -1)
        return missing, missing, missing, float("nan"), float("nan")
    base = log_coverage(instance, log_policy(instance, instance.base_theta))
    loss = trajectory.coverage_loss(base)
    iterations, responses, steps = [], [], []
    for target in eps:
        index = trajectory.first_eps_optimal(float(target))
        iterations.append(-1 if index is None else int(trajectory.reference_resets[index]))
        responses.append(-1 if index is None else int(trajectory.responses_sampled[index]))
        steps.append(-1 if index is None else int(trajectory.gradient_steps[index]))
    final = float(trajectory.suboptimality[-1])
    return np.array(iterations), np.array(responses), np.array(steps), loss, final


def table_1(
    instance: BanditInstance,
    eps: Sequence[float],
    *,
    betas: Sequence[float],
    group_sizes: Sequence[int],
    batch_size: int,
    inner_steps: int,
    eta_scale: float,
    n_iterations: int,
    seed: int,
) -> Table1:
    """Measure the paper's Table 1 (appendix I.2): parameters and costs of KimiPO and KimiPO-Norm against ``eps``.

    KimiPO (``M = 1`` extra response, as in the paper's analysis) runs at every ``beta``;
    KimiPO-Norm at every ``beta`` and every ``G`` of ``group_sizes``. All runs share ``N``,
    ``K`` and ``eta = eta_scale / beta^2`` (the losses' curvature grows like ``beta^2``) and
    last ``n_iterations`` outer iterations; each run reads its costs to every ``eps`` off one
    trajectory. Run ``i`` draws from ``np.random.default_rng([seed, i])``. The runs go
    through :func:`covpo.experiments.parallel.run_tasks`.

    Parameters
    ----------
    instance
        The bandit.
    eps
        Accuracy targets, each ``> 0``.
    betas, group_sizes
        The grids searched.
    batch_size, inner_steps, eta_scale, n_iterations
        ``N``, ``K``, ``c`` in ``eta = c / beta^2``, and ``T``.
    seed
        Base seed.
    """
    instance, eps, betas, group_sizes, settings = _check_table_1_arguments(
        instance, eps, betas, group_sizes, batch_size, inner_steps, eta_scale, n_iterations
    )
    seed = check_seed("seed", seed)
    configs = _table_1_configs(betas, group_sizes)
    tasks = [(instance, m, b, g, settings, eps, (seed, i)) for i, (m, b, g) in enumerate(configs)]
    return _assemble_table_1(configs, run_tasks(_table_1_run, tasks, "Table 1 runs"), eps, settings)


def _check_table_1_arguments(
    instance: BanditInstance,
    eps: Sequence[float],
    betas: Sequence[float],
    group_sizes: Sequence[int],
    batch_size: int,
    inner_steps: int,
    eta_scale: float,
    n_iterations: int,
) -> tuple[BanditInstance, np.ndarray, np.ndarray, np.ndarray, tuple[int, int, int, float]]:
    """The checked arguments shared by :func:`table_1` and :func:`table_1_seeds` (``eps`` sorted decreasing)."""
    instance = check_instance("instance", instance, BanditInstance)
    eps = np.sort(check_positive_grid("eps", eps))[::-1]
    betas = check_positive_grid("betas", betas)
    group_sizes = check_positive_grid("group_sizes", group_sizes, integers=True)
    settings = (
        check_count("n_iterations", n_iterations),
        check_count("batch_size", batch_size),
        check_count("inner_steps", inner_steps),
        check_positive("eta_scale", eta_scale),
    )
    return instance, eps, betas, group_sizes, settings


def _table_1_configs(betas: np.ndarray, group_sizes: np.ndarray) -> list[tuple[str, float, int]]:
    """Every run's ``(method, beta, extra responses)``: KimiPO at each ``beta``, KimiPO-Norm at each ``beta`` and ``G``."""
    configs = [("KimiPO", float(b), 1) for b in betas]
    return configs + [("KimiPO-Norm", float(b), int(g)) for b in betas for g in group_sizes]


def _assemble_table_1(
    configs: list[tuple[str, float, int]],
    results: list[tuple[np.ndarray, np.ndarray, np.ndarray, float, float]],
    eps: np.ndarray,
    settings: tuple[int, int, int, float],
) -> Table1:
    """One seed's :class:`Table1` from its runs' results, keeping each method's cheapest admissible setting per ``eps``."""
    eta_scale = settings[3]
    shape = (len(TABLE_1_METHODS), eps.size)
    table = {name: np.full(shape, -1, dtype=np.int64) for name in ("extra", "iterations", "responses", "steps")}
    beta = np.full(shape, np.nan)
    for (method, b, g), (iterations, responses, steps, loss, _) in zip(configs, results):
        row = TABLE_1_METHODS.index(method)
        for j in range(eps.size):
            if not loss <= MAX_COVERAGE_LOSS or steps[j] < 0:
                continue
            key = (steps[j], responses[j])
            current = (table["steps"][row, j], table["responses"][row, j])
            if current[0] < 0 or key < current:
                beta[row, j] = b
                table["extra"][row, j], table["iterations"][row, j] = g, iterations[j]
                table["responses"][row, j], table["steps"][row, j] = responses[j], steps[j]
    return Table1(
        eps=eps,
        beta=beta,
        eta=eta_scale / beta**2,
        extra_responses=table["extra"],
        outer_iterations=table["iterations"],
        responses=table["responses"],
        gradient_steps=table["steps"],
        batch_size=settings[1],
        inner_steps=settings[2],
        eta_scale=settings[3],
        reached=table["steps"] >= 0,
        runs=tuple(configs),
        run_steps=np.stack([result[2] for result in results]),
        run_coverage_loss=np.array([result[3] for result in results]),
        run_final_suboptimality=np.array([result[4] for result in results]),
    )


@dataclass(frozen=True, eq=False)
class SeededTable1:
    """The measured Table 1 once per seed (paper section 4.2, appendix I.2).

    Attributes
    ----------
    seeds
        The seeds, in order.
    tables
        The :class:`Table1` of each seed, as :func:`table_1` gives it at that seed.
    """

    seeds: tuple[int, ...]
    tables: tuple[Table1, ...]

    def __post_init__(self) -> None:
        seeds = check_seeds("seeds", self.seeds)
        tables = check_instances("tables", self.tables, Table1)
        if len(tables) != len(seeds):
            raise ValueError(f"tables must hold one table per seed: got {len(tables)} for {len(seeds)} seeds")
        object.__setattr__(self, "seeds", seeds)
        object.__setattr__(self, "tables", tables)

    @property
    def eps(self) -> np.ndarray:
        """The accuracy targets, decreasing."""
        return self.tables[0].eps

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods' labels, in the tables' row order."""
        return self.tables[0].methods

    def stacked(self, field: str) -> np.ndarray:
        """``field`` of every seed's table stacked: ``(n_seeds, n_methods, n_eps)`` for the kept settings' arrays."""
        if field not in ("beta", "extra_responses", "outer_iterations", "responses", "gradient_steps", "reached"):
            raise ValueError(f"field must name a (method, eps) array of Table1, got {field!r}")
        return np.stack([getattr(table, field) for table in self.tables])

    def run_coverage_loss(self, method: str, beta: float, extra: int = 1) -> np.ndarray:
        """The coverage lost (decades) by the run of ``method`` at ``beta`` with ``extra`` baseline responses, per seed."""
        key = (method, float(beta), int(extra))
        if key not in self.tables[0].runs:
            raise ValueError(f"no run {key}; the runs are {self.tables[0].runs}")
        index = self.tables[0].runs.index(key)
        return np.array([table.run_coverage_loss[index] for table in self.tables])

    def exponents(self, method: str, quantity: str = "outer_iterations") -> np.ndarray:
        """Each seed's fitted exponent of ``quantity`` in ``1 / eps`` (:meth:`Table1.exponent`)."""
        if method not in self.methods:
            raise ValueError(f"method must be one of {self.methods}, got {method!r}")
        return np.array([table.exponent(method, quantity) for table in self.tables])

    def table(self, caption: str = "") -> Table:
        """One row per seed, method and ``eps``: the kept setting and its costs (:meth:`Table1.table` per seed)."""
        rows = tuple((seed, *row) for seed, table in zip(self.seeds, self.tables) for row in table.table().rows)
        first = self.tables[0].table()
        return Table(
            ("seed", *first.columns),
            rows,
            caption=caption or f"Table 1, measured, per seed (seeds {self.seeds[0]} to {self.seeds[-1]})",
            notes=first.notes[:1],
        )

    def runs_table(self, method: str) -> Table:
        """Every run of ``method`` on every seed: its setting, gradient steps to each ``eps`` and the coverage it lost."""
        per_seed = [table.runs_table(method) for table in self.tables]
        return Table(
            ("seed", *per_seed[0].columns),
            tuple((seed, *row) for seed, table in zip(self.seeds, per_seed) for row in table.rows),
            caption=f"Every {method} run on seeds {self.seeds[0]} to {self.seeds[-1]}: gradient steps to each ε",
            notes=per_seed[0].notes,
        )


def table_1_seeds(
    instance: BanditInstance,
    eps: Sequence[float],
    *,
    betas: Sequence[float],
    group_sizes: Sequence[int],
    batch_size: int,
    inner_steps: int,
    eta_scale: float,
    n_iterations: int,
    seeds: Sequence[int],
) -> SeededTable1:
    """:func:`table_1` once per seed of ``seeds`` (paper section 4.2, appendix I.2), every run through one :func:`~covpo.experiments.parallel.run_tasks` call.

    Seed ``s``'s table is the one ``table_1(..., seed=s)`` gives: its run ``i`` draws from
    ``np.random.default_rng([s, i])``.
    """
    instance, eps, betas, group_sizes, settings = _check_table_1_arguments(
        instance, eps, betas, group_sizes, batch_size, inner_steps, eta_scale, n_iterations
    )
    seeds = check_seeds("seeds", seeds)
    configs = _table_1_configs(betas, group_sizes)
    tasks = [(instance, m, b, g, settings, eps, (seed, i)) for seed in seeds for i, (m, b, g) in enumerate(configs)]
    results = run_tasks(_table_1_run, tasks, "Table 1 runs over seeds")
    n = len(configs)
    return SeededTable1(seeds, tuple(
        _assemble_table_1(configs, results[s * n:(s + 1) * n], eps, settings) for s in range(len(seeds))
    ))
