"""Rebel-OnPolicy's cost against the accuracy target under our reading of the paper's appendix L.1 parameter choice.

Appendix L.1 of the paper chooses the regularization to balance the number of outer iterations
against the exponential factor of its appendix E.2 bound, with a response count logarithmic in
the problem's other parameters; the formulas themselves are not in the text we have. Our
reconstruction (ours, not the paper's): the factor is ``exp(R / beta)`` for rewards of range
``R``, and balancing it against the outer iterations ``T ~ beta log C_cov / eps`` of mirror
descent sets ``beta(eps) = R / log(1 / eps)``, so that ``exp(R / beta) = 1 / eps`` and
``T ~ R log C_cov / (eps log(1 / eps))``. With the batch ``N`` and inner steps ``K`` fixed,
responses ``2 N T`` and gradient steps ``K T`` then scale like ``1 / (eps log(1 / eps))``.
:func:`rebel_eps_scaling` measures both over seeds and fits their slope in ``1 / eps``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import covpo
from covpo.experiments.parallel import run_tasks
from covpo.experiments.sweeps import Method, summarize_run
from covpo.instances import BanditInstance
from covpo.table import Table
from covpo.validation import check_count, check_instance, check_positive, check_probability_grid, check_seeds


def l1_beta(eps: float, reward_range: float = 1.0) -> float:
    """``beta(eps) = R / log(1 / eps)``: our reconstruction of the paper's appendix L.1 choice of the regularization."""
    eps = float(check_probability_grid("eps", [eps])[0])
    reward_range = check_positive("reward_range", reward_range)
    return reward_range / np.log(1.0 / eps)


def bound_slope(eps_grid: Sequence[float]) -> float:
    """The least-squares slope of ``log(1 / (eps log(1 / eps)))`` against ``log(1 / eps)`` over ``eps_grid`` (the bound's scaling, our reconstruction of appendix L.1)."""
    eps = check_probability_grid("eps_grid", eps_grid)
    x = np.log(1.0 / eps)
    return float(np.polyfit(x, x - np.log(x), 1)[0])


@dataclass(frozen=True, eq=False)
class RebelEpsScaling:
    """Rebel-OnPolicy's costs to reach each ``eps`` at ``beta(eps)`` (:func:`l1_beta`), over seeds.

    Attributes
    ----------
    eps, betas
        The accuracy targets and the regularization each was run at.
    seeds
        The seeds.
    responses, gradient_steps
        ``(n_eps, n_seeds)``: the costs at the first ``eps``-optimal iterate (``nan`` where not reached).
    coverage_loss
        ``(n_eps, n_seeds)``: the largest fall of a prompt's coverage, in decades.
    exact_iterations
        ``(n_eps,)``: the outer iterations exact mirror descent at ``beta(eps)`` needs (``nan`` where not within the budget).
    batch_size, inner_steps
        ``N`` and ``K``, fixed over the grid.
    """

    eps: np.ndarray
    betas: np.ndarray
    seeds: tuple[int, ...]
    responses: np.ndarray
    gradient_steps: np.ndarray
    coverage_loss: np.ndarray
    exact_iterations: np.ndarray
    batch_size: int
    inner_steps: int

    @property
    def reached(self) -> np.ndarray:
        """Whether each run reached its ``eps``, ``(n_eps, n_seeds)``."""
        return np.isfinite(self.responses)

    def seed_slopes(self, cost: str = "responses") -> np.ndarray:
        """Per seed that reached every ``eps``, the least-squares slope of ``log cost`` against ``log(1 / eps)``."""
        values = getattr(self, cost)
        x = np.log(1.0 / self.eps)
        return np.array([np.polyfit(x, np.log(values[:, s]), 1)[0]
                         for s in range(len(self.seeds)) if np.all(np.isfinite(values[:, s]))])

    def exact_slope(self) -> float:
        """The slope of exact mirror descent's outer iterations against ``log(1 / eps)``."""
        return float(np.polyfit(np.log(1.0 / self.eps), np.log(self.exact_iterations), 1)[0])

    def table(self, caption: str = "") -> Table:
        """One row per ``eps``: ``beta``, runs reaching it, the median responses and steps, exact mirror descent's iterations."""
        rows = tuple(
            (float(e), float(b), int(self.reached[i].sum()), float(np.nanmedian(self.responses[i])),
             float(np.nanmedian(self.gradient_steps[i])), float(self.exact_iterations[i]),
             float(np.max(self.coverage_loss[i])))
            for i, (e, b) in enumerate(zip(self.eps, self.betas))
        )
        return Table(
            ("ε", "β(ε)", f"runs reaching ε (of {len(self.seeds)})", "median responses", "median gradient steps",
             "exact mirror descent: outer iterations", "worst coverage loss (decades)"),
            rows,
            caption=caption or "Rebel-OnPolicy's costs against ε at β(ε)",
            notes=(f"β(ε) = R / log(1/ε), R = 1: our reconstruction of appendix L.1's choice; "
                   f"N = {self.batch_size}, K = {self.inner_steps} at every ε.",),
        )


def _exact_iterations(instance: BanditInstance, beta: float, eps: float, n_iterations: int) -> float:
    trajectory = covpo.run("mirror_descent_exact", instance, beta=beta, n_iterations=n_iterations)
    index = trajectory.first_eps_optimal(eps)
    return np.nan if index is None else float(index)


def rebel_eps_scaling(
    instance: BanditInstance,
    eps_grid: Sequence[float],
    *,
    seeds: Sequence[int],
    reward_range: float = 1.0,
    batch_size: int = 256,
    inner_steps: int = 40,
    eta_scale: float = 2.0,
    n_iterations: int = 40,
) -> RebelEpsScaling:
    """Rebel-OnPolicy (paper Algorithm 5) at ``beta = l1_beta(eps)`` for each ``eps``, over seeds (paper appendix L.1).

    Each run uses ``eta = eta_scale / beta^2``, ``N = batch_size``, ``K = inner_steps`` and
    ``n_iterations`` outer iterations; run ``(e, s)`` draws from ``np.random.default_rng([seed_s, e])``.
    """
    instance = check_instance("instance", instance, BanditInstance)
    eps = check_probability_grid("eps_grid", eps_grid)
    seeds = check_seeds("seeds", seeds)
    reward_range = check_positive("reward_range", reward_range)
    batch_size = check_count("batch_size", batch_size)
    inner_steps = check_count("inner_steps", inner_steps)
    eta_scale = check_positive("eta_scale", eta_scale)
    n_iterations = check_count("n_iterations", n_iterations)
    betas = np.array([l1_beta(e, reward_range) for e in eps])
    methods = [
        Method("Rebel-OnPolicy", "rebel_onpolicy",
               {"beta": float(b), "batch_size": batch_size, "inner_steps": inner_steps, "n_iterations": n_iterations},
               (eta_scale / b**2,))
        for b in betas
    ]
    tasks = [(methods[e], instance, methods[e].learning_rates[0], (seed, e), float(eps[e]))
             for e in range(eps.size) for seed in seeds]
    summaries = run_tasks(summarize_run, tasks, "Rebel-OnPolicy eps scaling")
    shape = (eps.size, len(seeds))

    def field(name: str) -> np.ndarray:
        values = [np.nan if r is None or getattr(r, name) is None else float(getattr(r, name)) for r in summaries]
        return np.array(values).reshape(shape)

    return RebelEpsScaling(
        eps=eps,
        betas=betas,
        seeds=seeds,
        responses=field("responses_to_eps"),
        gradient_steps=field("steps_to_eps"),
        coverage_loss=np.array([np.inf if r is None else r.coverage_loss for r in summaries]).reshape(shape),
        exact_iterations=np.array([_exact_iterations(instance, float(b), float(e), n_iterations)
                                   for b, e in zip(betas, eps)]),
        batch_size=batch_size,
        inner_steps=inner_steps,
    )
