"""Tuning ``beta``, the inner steps and the clipping interval together (paper sections 3.1 to 3.3).

Paper sections 3.2 and 3.3 say that the regularization ``beta``, the clipping thresholds, the
number of inner steps ``K`` and the batch size must be chosen together. This module measures
it with two maps over a grid of ``beta``, at a fixed response budget (``T`` outer iterations of
``N`` responses) and with the learning rate tied to the regularization, ``eta = eta_beta / beta``
(the scaling of chapter 4: the curvature of each subproblem is proportional to ``beta``):

- :func:`inner_steps_map`: PPO-NoClip (or PPO-Lite) with resets over ``(beta, K)``;
- :func:`clip_width_map`: PPO-Lite over ``(beta, width)``, the interval
  :func:`~covpo.algorithms.ppo_lite.clip_width_thresholds` (width 1 is the default
  ``[exp(-R/beta), exp(R/beta)]``, the narrowest that never clips the target).

Each cell records, per seed, the responses to eps-optimality, the final suboptimality and the
worst coverage loss. :func:`tuning_prescriptions` computes what the theory and the earlier
chapters prescribe, to draw on the maps: the strongest ``beta`` whose mirror-descent horizon
fits the budget (exact, and from the rate bound), the inner step count of chapter 3's rule
``eta beta K >= 16``, a coverage-aware version of it, and where PPO's fixed interval sits.

Every run is one task of :func:`covpo.experiments.parallel.run_tasks`; the run of seed ``s`` draws from
``np.random.default_rng([seed, s])`` in every cell (common random numbers across the grid), so
the maps are identical bit for bit under any joblib backend and number of workers. The
instance, grids, budgets and constants are ours; the paper's are not reproduced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from covpo.collapse_instance import DEFAULT_OPTIMAL_PROB
from covpo.instances import BanditInstance
from covpo.algorithms import ALGORITHMS
from covpo.algorithms.mirror_descent import mirror_descent_bound
from covpo.objectives import regularized_optimum
from covpo.experiments.parallel import run_tasks
from covpo.policies import base_log_policy, expected_reward, log_coverage
from covpo.algorithms.ppo_lite import clip_width_thresholds
from covpo.experiments.sweeps import Method, run_unless_diverged
from covpo.families import collapse_family
from covpo.table import Table
from covpo.validation import (
    check_count,
    check_instance,
    check_option,
    check_positive,
    check_positive_grid,
    check_seed,
    check_seeds,
    check_text,
)

TUNING_ALGORITHMS = ("ppo_noclip", "ppo_lite")
"""The inner loops :func:`inner_steps_map` can run."""
BOOK_COVERAGE = 40.0
"""``C_cov`` of the collapse-family instance the book's maps use."""
BOOK_BETAS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0)
BOOK_INNER_STEPS = (1, 2, 4, 8, 16, 32)
BOOK_WIDTHS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0)
BOOK_BATCH_SIZE, BOOK_ITERATIONS, BOOK_ETA_BETA, BOOK_EPS = 256, 25, 8.0, 0.04
BOOK_WIDTH_INNER_STEPS, BOOK_SEEDS = 10, 3
ACCURACY_PRODUCT = 16.0
"""Chapter 3's measured rule; exact-gradient APMD kept coverage exactly where ``eta beta K >= 16``."""
CHAPTER3_COVERAGE = DEFAULT_OPTIMAL_PROB
"""Base coverage of the single-prompt instance on which that rule was measured."""
FIXED_INTERVAL = (0.8, 1.2)
"""PPO's ``beta``-independent interval ``[1 - eps, 1 + eps]`` at ``eps = 0.2`` (chapter 4), placed on the width map by
:attr:`TuningPrescriptions.fixed_interval_widths`. Applied through PPO's pessimistic minimum to PPO-Lite's non-negative
reward, only its upper end ``1 + eps`` ever clips, so its place on the map is set by that end alone."""
HALF_COVERAGE_DECADES = float(np.log10(2.0))
"""A coverage loss beyond this many decades leaves some prompt below half its base coverage (the book's threshold, our choice)."""
MAX_MIRROR_DESCENT_TIME = 1e12


# ---------------------------------------------------------------------------------------
# Prescriptions


def mirror_descent_time_to_eps(instance: BanditInstance, eps: float) -> float:
    """The smallest ``s = T / beta`` at which exact mirror descent is eps-optimal (paper section 3.1, appendix B.3).

    Exact mirror descent unrolls to ``pi_T proportional to pi_0 exp(T r / beta)``, a function of
    ``s = T / beta`` whose reward rises with ``s``; the root of ``J* - J(pi_s) = eps`` is found
    by :func:`scipy.optimize.brentq` in ``log s`` after doubling a bracket. Returns 0 if the
    base model is already eps-optimal.
    """
    instance = check_instance("instance", instance, BanditInstance)
    eps = check_positive("eps", eps)
    log_base = base_log_policy(instance)

    def excess(log_time: float) -> float:
        log_probs = regularized_optimum(instance, log_base, float(np.exp(-log_time)))
        return instance.optimal_value - expected_reward(instance, log_probs) - eps

    if instance.optimal_value - expected_reward(instance, log_base) <= eps:
        return 0.0
    low, high = -10.0, 1.0
    while excess(high) > 0.0:
        if high > np.log(MAX_MIRROR_DESCENT_TIME):
            raise ValueError(f"eps = {eps!r} is not reached by mirror descent within s = {MAX_MIRROR_DESCENT_TIME:g}")
        low, high = high, 2.0 * high
    while excess(low) <= 0.0:
        low -= 10.0
    return float(np.exp(brentq(excess, low, high, xtol=1e-12)))


@dataclass(frozen=True, eq=False)
class TuningPrescriptions:
    """What theory and the earlier chapters prescribe for a map, in its own coordinates.

    Attributes
    ----------
    eps, n_iterations, eta_beta
        The accuracy target, the outer iterations ``T`` the budget allows, and ``eta beta``.
    mirror_descent_time
        ``s* = T / beta`` exact mirror descent needs to be eps-optimal (:func:`mirror_descent_time_to_eps`).
    beta_horizon
        ``T / s*``: the strongest ``beta`` whose exact mirror descent reaches eps in ``T`` resets.
    beta_horizon_bound
        The strongest ``beta`` the rate bound certifies, ``beta E_x log(1/c_0) / T <= eps``
        (:func:`~covpo.algorithms.mirror_descent.mirror_descent_bound`); a sufficient condition, far below ``beta_horizon``.
    accuracy_inner_steps
        ``K`` with ``eta beta K = 16``, chapter 3's boundary; with ``eta = eta_beta / beta`` it does not depend on ``beta``.
    coverage_aware_inner_steps
        ``K`` with ``eta beta c_0 K = 16 c_3``, ``c_0`` the instance's lowest base coverage and
        ``c_3 = 0.1`` that of chapter 3's instance: near a tabular target a gradient step shrinks
        the error of a response's logit by ``1 - eta beta pi(y)``, so the rare optimal response
        needs ``1 / c_0`` times more steps (our linearization, calibrated on chapter 3).
    betas, fixed_interval_widths
        The map's ``beta`` grid and the width at which the upper end of :func:`~covpo.algorithms.ppo_lite.clip_width_thresholds`
        equals that of PPO's interval ``[0.8, 1.2]`` at each ``beta`` (``beta log 1.2 / R``; under PPO's pessimistic
        minimum with a reward ``r >= 0`` the lower end never acts).
    """

    eps: float
    n_iterations: int
    eta_beta: float
    mirror_descent_time: float
    beta_horizon: float
    beta_horizon_bound: float
    accuracy_inner_steps: float
    coverage_aware_inner_steps: float
    betas: np.ndarray
    fixed_interval_widths: np.ndarray

    def summary(self) -> str:
        """Three lines: the horizon, the inner-step rules, and the fixed interval on the width axis."""
        widths = ", ".join(f"{w:.3g}" for w in self.fixed_interval_widths)
        return "\n".join(
            [
                (
                    f"horizon: exact mirror descent needs T/beta >= {self.mirror_descent_time:.2f}, so with T = "
                    f"{self.n_iterations} beta <= {self.beta_horizon:.3g} (the rate bound certifies beta <= "
                    f"{self.beta_horizon_bound:.3g})"
                ),
                (
                    f"inner steps: eta beta K >= {ACCURACY_PRODUCT:g} gives K >= {self.accuracy_inner_steps:.3g}; "
                    f"the coverage-aware rule gives K >= {self.coverage_aware_inner_steps:.3g}"
                ),
                f"the fixed interval {FIXED_INTERVAL} is width {widths} at beta {', '.join(f'{b:g}' for b in self.betas)}",
            ]
        )


def tuning_prescriptions(
    instance: BanditInstance, betas: Sequence[float], *, n_iterations: int, eta_beta: float, eps: float
) -> TuningPrescriptions:
    """The prescriptions of :class:`TuningPrescriptions` for ``instance`` at ``T = n_iterations``, ``eta = eta_beta / beta``.

    The horizon comes from paper section 3.1 and appendix B.3 (``pi_T`` depends on ``T / beta`` only; its rate
    ``beta E_x log(1/c_0) / T``); the inner-step rules from chapter 3's measurement; the interval
    widths from paper section 3.3.
    """
    instance = check_instance("instance", instance, BanditInstance)
    betas = check_positive_grid("betas", betas)
    n_iterations = check_count("n_iterations", n_iterations)
    eta_beta = check_positive("eta_beta", eta_beta)
    eps = check_positive("eps", eps)
    reward_range = float(instance.rewards.max() - instance.rewards.min())
    if eps >= reward_range:
        raise ValueError(f"eps must be below the instance's reward range {reward_range!r}, got {eps!r}")
    time = mirror_descent_time_to_eps(instance, eps)
    divergence_rate = mirror_descent_bound(instance, 1.0, 1.0)
    lowest_coverage = float(np.exp(log_coverage(instance, base_log_policy(instance)).min()))
    max_reward = float(instance.rewards.max())
    return TuningPrescriptions(
        eps=eps,
        n_iterations=n_iterations,
        eta_beta=eta_beta,
        mirror_descent_time=time,
        beta_horizon=n_iterations / time if time > 0.0 else np.inf,
        beta_horizon_bound=n_iterations * eps / divergence_rate if divergence_rate > 0.0 else np.inf,
        accuracy_inner_steps=ACCURACY_PRODUCT / eta_beta,
        coverage_aware_inner_steps=ACCURACY_PRODUCT * CHAPTER3_COVERAGE / (eta_beta * lowest_coverage),
        betas=betas,
        fixed_interval_widths=betas * np.log(FIXED_INTERVAL[1]) / max_reward,
    )


# ---------------------------------------------------------------------------------------
# The maps


@dataclass(frozen=True, eq=False)
class TuningMap:
    """Runs over a grid of ``beta`` (columns) and one other setting (rows), several seeds per cell.

    Attributes
    ----------
    algorithm
        ``"ppo_noclip"`` or ``"ppo_lite"``.
    row_name
        ``"K"`` (inner steps) or ``"width"`` (clipping interval, :func:`~covpo.algorithms.ppo_lite.clip_width_thresholds`).
    rows, betas
        The grid, ``(n_rows,)`` and ``(n_betas,)``.
    responses_to_eps
        Responses sampled at the first eps-optimal record, ``-1`` where not reached or diverged,
        ``(n_rows, n_betas, n_seeds)``.
    final_suboptimality
        ``J* - J`` after the whole budget (``nan`` where diverged), same shape.
    coverage_loss
        Largest fall of any prompt's coverage below its base value over the run, in decades,
        ``>= 0`` (``nan`` where diverged), same shape.
    diverged
        Whether a step left the parameters non-finite, same shape.
    eps, batch_size, n_iterations, eta_beta
        The accuracy target and the budget ``T N``; the learning rate is ``eta_beta / beta``.
    inner_steps
        The fixed ``K`` of a width map; ``None`` for an inner-steps map.
    seed
        Seed ``s`` of every cell draws from ``np.random.default_rng([seed, s])``.
    prescriptions
        :func:`tuning_prescriptions` for the same settings.
    """

    algorithm: str
    row_name: str
    rows: np.ndarray
    betas: np.ndarray
    responses_to_eps: np.ndarray
    final_suboptimality: np.ndarray
    coverage_loss: np.ndarray
    diverged: np.ndarray
    eps: float
    batch_size: int
    n_iterations: int
    eta_beta: float
    inner_steps: int | None
    seed: int
    prescriptions: TuningPrescriptions

    @property
    def n_seeds(self) -> int:
        """Runs per cell."""
        return int(self.responses_to_eps.shape[2])

    @property
    def response_budget(self) -> int:
        """Responses every run may sample, ``T N``."""
        return self.n_iterations * self.batch_size

    @property
    def reached_fraction(self) -> np.ndarray:
        """Share of seeds that reached eps, ``(n_rows, n_betas)``."""
        return (self.responses_to_eps >= 0).mean(axis=2)

    @property
    def median_responses_to_eps(self) -> np.ndarray:
        """Median over seeds of the responses to eps, counting a seed that missed it as ``inf``."""
        costs = np.where(self.responses_to_eps >= 0, self.responses_to_eps, np.inf).astype(float)
        return np.median(costs, axis=2)

    @property
    def worst_coverage_loss(self) -> np.ndarray:
        """Largest coverage loss (decades) over the seeds that did not diverge; ``nan`` if all diverged."""
        return _nan_reduce(np.nanmax, self.coverage_loss)

    @property
    def median_final_suboptimality(self) -> np.ndarray:
        """Median ``J* - J`` at the end over the seeds that did not diverge; ``nan`` if all diverged."""
        return _nan_reduce(np.nanmedian, self.final_suboptimality)

    @property
    def lost_fraction(self) -> np.ndarray:
        """Share of seeds that fell below half the base coverage on some prompt, or diverged, ``(n_rows, n_betas)``."""
        lost = ~(np.nan_to_num(self.coverage_loss, nan=np.inf) <= HALF_COVERAGE_DECADES)
        return lost.mean(axis=2)

    @property
    def failed(self) -> np.ndarray:
        """Cells where at most half the seeds reached eps (the median cost is infinite)."""
        return ~np.isfinite(self.median_responses_to_eps)

    @property
    def row_labels(self) -> list[str]:
        """``"K = 5"`` or ``"width 0.5"`` per row."""
        return [f"K = {v:g}" if self.row_name == "K" else f"width {v:g}" for v in self.rows]

    def best_cell(self) -> tuple[int, int] | None:
        """``(row, column)`` of the cheapest cell in which no seed lost coverage, or ``None`` if there is none."""
        costs = np.where(self.lost_fraction > 0.0, np.inf, self.median_responses_to_eps)
        if not np.isfinite(costs).any():
            return None
        return tuple(int(i) for i in np.unravel_index(np.argmin(costs), costs.shape))

    def table(self, values: str = "median_responses_to_eps", digits: int = 2) -> str:
        """One grid (``"median_responses_to_eps"``, ``"worst_coverage_loss"``, ...) as a table, one row per setting."""
        grid = getattr(self, values)
        header = f"{self.row_name:>8} " + " ".join(f"{f'beta {b:g}':>11}" for b in self.betas)
        rows = [
            f"{float(label):8g} " + " ".join(f"{value:11,.{digits}f}" for value in row)
            for label, row in zip(self.rows, grid)
        ]
        return "\n".join([values, header, *rows])

    def outcome_table(self) -> str:
        """Per cell: median responses to eps (``-`` if not reached), seeds that reached eps, seeds that lost coverage."""
        header = f"{self.row_name:>8} " + " ".join(f"{f'beta {b:g}':>15}" for b in self.betas)
        lines = [header]
        reached = (self.responses_to_eps >= 0).sum(axis=2)
        lost = np.rint(self.lost_fraction * self.n_seeds).astype(int)
        for i, label in enumerate(self.rows):
            cells = []
            for j in range(self.betas.size):
                cost = self.median_responses_to_eps[i, j]
                shown = f"{int(cost):,}" if np.isfinite(cost) else "-"
                cells.append(f"{shown:>5} {reached[i, j]}/{self.n_seeds} {lost[i, j]}/{self.n_seeds}")
            lines.append(f"{float(label):8g} " + " ".join(f"{cell:>15}" for cell in cells))
        return "\n".join(lines)

    def summary(self) -> str:
        """The settings, the outcome table, the cheapest cell that keeps coverage, and the prescriptions."""
        fixed = f", K = {self.inner_steps}" if self.inner_steps is not None else ""
        best = self.best_cell()
        best_line = (
            f"cheapest cell where no seed lost coverage: {self.row_name} {self.rows[best[0]]:g}, "
            f"beta {self.betas[best[1]]:g}, median {int(self.median_responses_to_eps[best]):,} responses"
            if best is not None
            else "no cell reaches eps in most seeds without some seed losing coverage"
        )
        return "\n".join(
            [
                (
                    f"{self.algorithm}: N = {self.batch_size}, T = {self.n_iterations} "
                    f"({self.response_budget:,} responses){fixed}, eta = {self.eta_beta:g}/beta, eps = {self.eps:g}, "
                    f"{self.n_seeds} seeds per cell"
                ),
                "cells: median responses to eps, seeds that reached eps, seeds that fell below half the base coverage",
                self.outcome_table(),
                best_line,
                self.prescriptions.summary(),
            ]
        )


    def summary_table(self) -> Table:
        """:func:`tuning_summary_table` of this map alone."""
        return tuning_summary_table((self,))

    def title(self, row_name: str | None = None) -> str:
        """The algorithm, its fixed inner step count if any, and the two knobs (``row_name`` names the rows)."""
        fixed = f", $K = {self.inner_steps}$" if self.inner_steps is not None else ""
        rows = self.row_name if row_name is None else check_text("row_name", row_name)
        return f"{ALGORITHMS[self.algorithm].label}{fixed}: $\\beta$ and {rows}"


def tuning_summary_table(maps: Sequence[TuningMap]) -> Table:
    """What the tuning maps show, one column per map: cell counts, the cheapest clean cell, the prescriptions.

    Rows: cells reaching eps in most seeds, and among them cells where some seed lost coverage;
    the cheapest cell where no seed lost coverage (its row value, ``beta`` and median
    responses, ``-`` if there is none); then :class:`TuningPrescriptions` (the horizon, the
    rate bound's ``beta``, the two inner-step rules). ``str(table)`` gives it as aligned text.
    """
    if isinstance(maps, (str, TuningMap)) or not hasattr(maps, "__iter__"):
        raise ValueError(f"maps must be a sequence of TuningMap, got {maps!r}")
    maps = tuple(check_instance("maps", tuning_map, TuningMap) for tuning_map in maps)
    if not maps:
        raise ValueError("maps must hold at least one TuningMap")
    quantities: list[tuple[str, list]] = [
        ("cells reaching ε in most seeds", []),
        ("… of which some seed lost coverage", []),
        ("cheapest cell with no seed losing coverage: K or width", []),
        ("… its β", []),
        ("… its median responses to ε", []),
        ("strongest β that reaches ε in T resets (exact mirror descent)", []),
        ("strongest β the rate bound certifies", []),
        (f"$K$ from $\\eta\\beta K \\ge {ACCURACY_PRODUCT:g}$ (chapter 3)", []),
        ("K from the coverage-aware rule", []),
    ]
    for tuning_map in maps:
        good = tuning_map.reached_fraction > 0.5
        best = tuning_map.best_cell()
        rules = tuning_map.prescriptions
        values = (
            int(good.sum()),
            int((good & (tuning_map.lost_fraction > 0)).sum()),
            None if best is None else float(tuning_map.rows[best[0]]),
            None if best is None else float(tuning_map.betas[best[1]]),
            None if best is None else float(tuning_map.median_responses_to_eps[best]),
            float(rules.beta_horizon),
            float(rules.beta_horizon_bound),
            float(rules.accuracy_inner_steps),
            float(rules.coverage_aware_inner_steps),
        )
        for (_, cells), value in zip(quantities, values):
            cells.append(value)
    first = maps[0]
    return Table(
        ("quantity", *(tuning_map.title() for tuning_map in maps)),
        tuple((name, *cells) for name, cells in quantities),
        caption=(
            f"Tuning maps: {first.response_budget:,} responses per run ($N = {first.batch_size}$, "
            f"$T = {first.n_iterations}$), $\\eta = {first.eta_beta:g}/\\beta$, ε = {first.eps:g}, {first.n_seeds} seeds per cell"
        ),
        notes=(
            "A seed loses coverage when some prompt's coverage falls below half its base value, or the run "
            "diverges. '-': no cell qualifies. The last four rows are the theory's prescriptions for this "
            "instance; the β rows are upper limits, the K rows lower limits.",
        ),
    )

def _nan_reduce(reduce, values: np.ndarray) -> np.ndarray:
    result = np.full(values.shape[:2], np.nan)
    finite = ~np.all(np.isnan(values), axis=2)
    result[finite] = reduce(values[finite], axis=1)
    return result


def _check_algorithm(algorithm: str) -> str:
    return check_option("algorithm", algorithm, TUNING_ALGORITHMS)


def tuning_run(
    instance: BanditInstance,
    algorithm: str,
    beta: float,
    inner_steps: int,
    width: float | None,
    batch_size: int,
    n_iterations: int,
    eta_beta: float,
    eps: float,
    seed: Sequence[int],
) -> tuple[int, float, float, bool]:
    """One cell's run for one seed: ``(responses to eps or -1, final J* - J, coverage loss in decades, diverged)``.

    PPO-NoClip or PPO-Lite (paper sections 3.2 and 3.3) with ``eta = eta_beta / beta``; PPO-Lite clips to
    :func:`~covpo.algorithms.ppo_lite.clip_width_thresholds` ``(beta, R, width)``, the default
    interval when ``width`` is ``None``. Draws from ``np.random.default_rng(list(seed))``. A
    run whose parameters become non-finite is reported as diverged (``-1, nan, nan, True``).
    """
    instance = check_instance("instance", instance, BanditInstance)
    algorithm = _check_algorithm(algorithm)
    beta = check_positive("beta", beta)
    inner_steps = check_count("inner_steps", inner_steps)
    width = None if width is None else check_positive("width", width)
    batch_size = check_count("batch_size", batch_size)
    n_iterations = check_count("n_iterations", n_iterations)
    eta_beta = check_positive("eta_beta", eta_beta)
    eps = check_positive("eps", eps)
    seed = check_seeds("seed", seed)
    hyperparameters = {"beta": beta, "n_iterations": n_iterations, "batch_size": batch_size, "inner_steps": inner_steps}
    if algorithm == "ppo_lite" and width is not None:
        hyperparameters["thresholds"] = clip_width_thresholds(beta, float(instance.rewards.max()), width)
    eta = eta_beta / beta
    method = Method(algorithm, algorithm, hyperparameters, (eta,))
    trajectory = run_unless_diverged(method, instance, eta, np.random.default_rng(list(seed)))
    if trajectory is None:
        return -1, np.nan, np.nan, True
    hit = trajectory.responses_to_eps(eps)
    log_base = log_coverage(instance, base_log_policy(instance))
    loss = trajectory.coverage_loss(log_base)
    return (-1 if hit is None else int(hit)), float(trajectory.suboptimality[-1]), loss, False


def _run_map(
    instance: BanditInstance,
    algorithm: str,
    row_name: str,
    rows: np.ndarray,
    betas: np.ndarray,
    *,
    inner_steps: int | None,
    batch_size: int,
    n_iterations: int,
    eta_beta: float,
    eps: float,
    n_seeds: int,
    seed: int,
    progress: bool,
) -> TuningMap:
    instance = check_instance("instance", instance, BanditInstance)
    batch_size = check_count("batch_size", batch_size)
    n_iterations = check_count("n_iterations", n_iterations)
    eta_beta = check_positive("eta_beta", eta_beta)
    eps = check_positive("eps", eps)
    n_seeds = check_count("n_seeds", n_seeds)
    seed = check_seed("seed", seed)
    prescriptions = tuning_prescriptions(instance, betas, n_iterations=n_iterations, eta_beta=eta_beta, eps=eps)
    cells = [(i, j, s) for i in range(rows.size) for j in range(betas.size) for s in range(n_seeds)]
    tasks = [
        (
            instance,
            algorithm,
            float(betas[j]),
            int(rows[i]) if row_name == "K" else inner_steps,
            float(rows[i]) if row_name == "width" else None,
            batch_size,
            n_iterations,
            eta_beta,
            eps,
            (seed, s),
        )
        for i, j, s in cells
    ]
    results = run_tasks(tuning_run, tasks, f"{algorithm} over (beta, {row_name})", progress)
    shape = (rows.size, betas.size, n_seeds)
    responses, final, loss, diverged = (np.array(column).reshape(shape) for column in zip(*results))
    return TuningMap(
        algorithm=algorithm,
        row_name=row_name,
        rows=rows,
        betas=betas,
        responses_to_eps=responses.astype(np.int64),
        final_suboptimality=final.astype(float),
        coverage_loss=loss.astype(float),
        diverged=diverged.astype(bool),
        eps=eps,
        batch_size=batch_size,
        n_iterations=n_iterations,
        eta_beta=eta_beta,
        inner_steps=inner_steps,
        seed=seed,
        prescriptions=prescriptions,
    )


def inner_steps_map(
    instance: BanditInstance,
    *,
    betas: Sequence[float] = BOOK_BETAS,
    inner_steps: Sequence[int] = BOOK_INNER_STEPS,
    algorithm: str = "ppo_noclip",
    batch_size: int = BOOK_BATCH_SIZE,
    n_iterations: int = BOOK_ITERATIONS,
    eta_beta: float = BOOK_ETA_BETA,
    eps: float = BOOK_EPS,
    n_seeds: int = BOOK_SEEDS,
    seed: int = 0,
    progress: bool = True,
) -> TuningMap:
    """PPO with resets (Algorithm 1, or 2 with the default interval) over ``(K, beta)`` at one response budget.

    Every run takes ``T = n_iterations`` outer iterations of ``N = batch_size`` responses
    (the same budget ``T N`` everywhere), ``K`` inner steps at ``eta = eta_beta / beta``; so
    ``eta beta K = eta_beta K`` and chapter 3's accuracy rule is a line of constant ``K``.

    Parameters
    ----------
    instance
        The bandit, e.g. :func:`book_tuning_instance`.
    betas, inner_steps
        The grid's columns (each ``> 0``) and rows (each an integer ``>= 1``).
    algorithm
        ``"ppo_noclip"`` or ``"ppo_lite"``.
    batch_size, n_iterations, eta_beta, eps
        ``N``, ``T``, ``eta beta`` and the accuracy target.
    n_seeds, seed
        Runs per cell; seed ``s`` draws from ``np.random.default_rng([seed, s])`` in every cell.
    progress
        Show :func:`~covpo.experiments.parallel.run_tasks`' progress bar.
    """
    algorithm = _check_algorithm(algorithm)
    betas = check_positive_grid("betas", betas)
    rows = check_positive_grid("inner_steps", inner_steps, integers=True)
    return _run_map(
        instance, algorithm, "K", rows, betas, inner_steps=None, batch_size=batch_size, n_iterations=n_iterations,
        eta_beta=eta_beta, eps=eps, n_seeds=n_seeds, seed=seed, progress=progress,
    )


def clip_width_map(
    instance: BanditInstance,
    *,
    betas: Sequence[float] = BOOK_BETAS,
    widths: Sequence[float] = BOOK_WIDTHS,
    inner_steps: int = BOOK_WIDTH_INNER_STEPS,
    batch_size: int = BOOK_BATCH_SIZE,
    n_iterations: int = BOOK_ITERATIONS,
    eta_beta: float = BOOK_ETA_BETA,
    eps: float = BOOK_EPS,
    n_seeds: int = BOOK_SEEDS,
    seed: int = 0,
    progress: bool = True,
) -> TuningMap:
    """PPO-Lite (Algorithm 2) over ``(width, beta)`` at one response budget and one ``K``.

    The interval is ``[exp(-width R / beta), exp(width R / beta)]``: width 1 is the default,
    which never clips the target (paper section 3.3); below 1 it clips the target, above 1 it
    is looser. Other settings as for :func:`inner_steps_map`.
    """
    betas = check_positive_grid("betas", betas)
    widths = check_positive_grid("widths", widths)
    inner_steps = check_count("inner_steps", inner_steps)
    return _run_map(
        instance, "ppo_lite", "width", widths, betas, inner_steps=inner_steps, batch_size=batch_size,
        n_iterations=n_iterations, eta_beta=eta_beta, eps=eps, n_seeds=n_seeds, seed=seed, progress=progress,
    )


def book_tuning_instance(coverage: float = BOOK_COVERAGE) -> BanditInstance:
    """The collapse-family instance (:func:`~covpo.families.collapse_family`) with ``C_cov = coverage``."""
    return collapse_family((check_positive("coverage", coverage),))[0]
