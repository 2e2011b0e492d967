"""PPO-NoClip's inner loop against the paper's inner-loop results (appendices B.2 and G.2), on softmax-linear instances.

- :func:`population_ascent`: exact policy gradient ascent on the population objective
  ``F_t(theta) = J_beta(pi_theta; pi_t)`` from the reference, the setting of appendix B.2: its
  gap to the target, its distance to the target parameter, and the local curvature along the
  way, against the convex-analysis rate of appendix B.1 in our reconstruction,
  ``F_t(theta*) - F_t(theta_k) <= ||theta_0 - theta*||^2 / (2 eta k)`` for ``eta <= 1 / L``.
- :func:`inner_loop_by_batch`: Algorithm 1's inner loop on one reused batch, the setting of
  appendix G.2, at several batch sizes: the population gap it leaves and how far its iterates
  stray from the target parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo import run
from covpo.algorithms.mirror_descent import exact_target_theta
from covpo.instances import BanditInstance
from covpo.objectives import regularized_gradient, regularized_objective, regularized_optimum
from covpo.policies import log_policy
from covpo.validation import check_count, check_instance, check_positive, check_positive_grid, check_seed

from covpo.experiments.ppo.concavity import regularized_hessian


@dataclass(frozen=True, eq=False)
class PopulationAscent:
    """Exact gradient ascent on ``F_t = J_beta(.; pi_t)`` from ``theta_t`` (paper appendix B.2).

    Attributes
    ----------
    beta, eta
        The strength and the learning rate.
    gap
        ``F_t(theta*) - F_t(theta_k)`` at ``k = 0, ..., K``; equal to ``beta E_x KL(pi_k || pi*)``.
    distance
        ``||theta_k - theta*||``, ``theta* = theta_t + theta_star / beta`` the target parameter.
    top_eigenvalue
        The largest Hessian eigenvalue of ``F_t`` at each iterate (negative: locally concave).
    smoothness
        The largest ``|eigenvalue|`` of the Hessian over the iterates and the target: the local ``L``.
    rate_bound
        ``distance[0]**2 / (2 eta k)`` for ``k = 1, ..., K`` (our reconstruction of appendix B.1's rate).
    """

    beta: float
    eta: float
    gap: np.ndarray
    distance: np.ndarray
    top_eigenvalue: np.ndarray
    smoothness: float
    rate_bound: np.ndarray


def population_ascent(instance: BanditInstance, *, beta: float, eta: float, n_steps: int) -> PopulationAscent:
    """Run ``n_steps`` steps of ``theta <- theta + eta grad F_t(theta)`` from the base model, its own reference.

    ``instance`` must be realizable, so that the target ``pi_0 exp(r / beta) / Z`` is the
    softmax-linear policy of ``theta_0 + theta_star / beta``.
    """
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    n_steps = check_count("n_steps", n_steps)
    theta = np.array(instance.base_theta, dtype=float)
    log_reference = log_policy(instance, theta)
    target = exact_target_theta(instance, theta, beta)
    best = regularized_objective(instance, regularized_optimum(instance, log_reference, beta), log_reference, beta)
    gaps, distances, tops, scales = [], [], [], []
    for k in range(n_steps + 1):
        eigenvalues = np.linalg.eigvalsh(regularized_hessian(instance, theta, log_reference, beta))
        gaps.append(best - regularized_objective(instance, log_policy(instance, theta), log_reference, beta))
        distances.append(float(np.linalg.norm(theta - target)))
        tops.append(float(eigenvalues.max()))
        scales.append(float(np.abs(eigenvalues).max()))
        if k < n_steps:
            theta = theta + eta * regularized_gradient(instance, theta, log_reference, beta)
    scales.append(float(np.abs(np.linalg.eigvalsh(regularized_hessian(instance, target, log_reference, beta))).max()))
    if not (np.all(np.isfinite(gaps)) and np.all(np.isfinite(distances)) and np.all(np.isfinite(scales))):
        raise FloatingPointError(f"the ascent diverged at eta = {eta!r}, beta = {beta!r}")
    steps = np.arange(1, n_steps + 1)
    return PopulationAscent(
        beta=beta,
        eta=eta,
        gap=np.array(gaps),
        distance=np.array(distances),
        top_eigenvalue=np.array(tops),
        smoothness=max(scales),
        rate_bound=distances[0] ** 2 / (2.0 * eta * steps),
    )


@dataclass(frozen=True, eq=False)
class BatchInnerLoops:
    """Algorithm 1's inner loops on reused batches of several sizes (paper appendix G.2).

    Attributes
    ----------
    batch_sizes
        The ``N`` tried.
    start_gap, end_gap
        The population gap ``F_t(theta*_{t+1}) - F_t(theta)`` at the start and at the end of
        every inner loop, ``(n_batch_sizes, n_iterations)``.
    largest_stray
        Per run, the largest ``||theta_{t,k} - theta*_{t+1}|| / ||theta_t - theta*_{t+1}||`` over
        its inner iterates: above one means an iterate left the ball around the target that
        the loop started on.
    """

    batch_sizes: np.ndarray
    start_gap: np.ndarray
    end_gap: np.ndarray
    largest_stray: np.ndarray


def inner_loop_by_batch(
    instance: BanditInstance,
    batch_sizes: Sequence[int],
    *,
    beta: float,
    eta: float,
    n_iterations: int,
    inner_steps: int,
    seed: int,
) -> BatchInnerLoops:
    """Run PPO-NoClip once per batch size ``N`` (``np.random.default_rng(seed)`` each) and measure every inner loop."""
    instance = check_instance("instance", instance, BanditInstance)
    batch_sizes = check_positive_grid("batch_sizes", batch_sizes, integers=True)
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    inner_steps = check_count("inner_steps", inner_steps)
    seed = check_seed("seed", seed)
    shape = (batch_sizes.size, n_iterations)
    start_gap, end_gap = np.zeros(shape), np.zeros(shape)
    largest_stray = np.zeros(batch_sizes.size)
    for row, batch_size in enumerate(batch_sizes):
        state: dict[str, object] = {}

        def observe(step, row: int = row) -> None:
            log_reference = step.log_sampling
            if step.inner_step == 0:
                state["target"] = exact_target_theta(instance, step.theta, beta)
                state["radius"] = float(np.linalg.norm(step.theta - state["target"]))
                if not state["radius"] > 0.0:
                    raise FloatingPointError(
                        f"iteration {step.iteration}'s target does not differ from its reference in floating point "
                        f"(eta = {eta!r}, beta = {beta!r}): the inner loop's strays are undefined"
                    )
                state["best"] = regularized_objective(
                    instance, regularized_optimum(instance, log_reference, beta), log_reference, beta
                )
            gap = state["best"] - regularized_objective(instance, log_policy(instance, step.theta), log_reference, beta)
            stray = float(np.linalg.norm(step.theta - state["target"])) / state["radius"]
            largest_stray[row] = max(largest_stray[row], stray)
            if step.inner_step == 0:
                start_gap[row, step.iteration] = gap
            if step.inner_step == inner_steps:
                end_gap[row, step.iteration] = gap

        run(
            "ppo_noclip", instance, rng=np.random.default_rng(seed), beta=beta, eta=eta, n_iterations=n_iterations,
            batch_size=int(batch_size), inner_steps=inner_steps, on_inner_step=observe,
        )
    return BatchInnerLoops(batch_sizes=batch_sizes, start_gap=start_gap, end_gap=end_gap, largest_stray=largest_stray)
