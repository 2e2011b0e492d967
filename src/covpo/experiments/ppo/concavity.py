"""The local concavity of PPO-NoClip's population objective (paper Eq. 24) against KimiPO's global convexity (appendix J.1).

:func:`regularized_hessian`, :func:`landscape` and :func:`inner_loop_curvature` measure the
curvature around the reference and along the inner loop, with the objective-gap identity of
appendix G.1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.instances import BanditInstance
from covpo.objectives import regularized_objective, regularized_optimum
from covpo.policies import base_log_policy, kl_per_prompt, log_policy, mean_features
from covpo import run
from covpo.algorithms.ppo_noclip import ppo_noclip_gradient, ppo_noclip_objective
from covpo.algorithms.steps import finite_result
from covpo.experiments.population import kimi_population_hessian
from covpo.table import Table
from covpo.validation import check_count, check_finite_array, check_instance, check_positive, check_seed, check_theta
from covpo.experiments.ppo.checks import _check_log_reference


def regularized_hessian(instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """Hessian of ``theta -> J_beta(pi_theta; pi_ref)`` for softmax-linear policies (paper appendix G.1, cf. Eq. 24).

    Per prompt, with ``s = phi - phibar_theta`` and ``h = r - beta log(pi_theta / pi_ref)``,
    the gradient is ``Cov_theta(phi, h)`` and the Hessian
    ``E_theta[s s^T (h - E_theta h)] - beta Cov_theta(phi)``, averaged over prompts. At the
    target ``pi_ref exp(r / beta) / Z`` the first term vanishes (``h`` is constant per prompt),
    so the objective is concave there; away from it the third-moment term can make it
    indefinite: the concavity is local (our derivation of the paper's statement).
    """
    instance = check_instance("instance", instance, BanditInstance)
    theta = check_theta("theta", theta, (instance.dim,))
    log_reference = _check_log_reference(instance, log_reference)
    beta = check_positive("beta", beta)
    log_probs = log_policy(instance, theta)
    probs = np.exp(log_probs)
    centered = instance.features - mean_features(instance, log_probs)[:, None, :]
    advantage = instance.rewards - beta * (log_probs - log_reference)
    advantage = advantage - np.sum(probs * advantage, axis=1, keepdims=True)
    weights = instance.prompt_probs[:, None] * probs
    return finite_result(np.einsum("xy,xyd,xye->de", weights * (advantage - beta), centered, centered), beta)


def _kimi_hessian(instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """Hessian of KimiPO's population loss with its mean baseline ``V_t(x)`` (paper appendix J.1)."""
    baseline = np.sum(np.exp(log_reference) * instance.rewards, axis=1)
    return kimi_population_hessian(instance, theta, log_reference, beta, baseline)


@dataclass(frozen=True, eq=False)
class Landscape:
    """PPO-NoClip's population objective around its target, against KimiPO's loss (paper Eq. 24, appendices G.1, J.1).

    The reference is the base model and the target ``theta_* = theta_0 + theta_star / beta``
    (a realizable instance); points ``theta_* + rho u`` for unit directions ``u``.

    Attributes
    ----------
    radii
        ``rho``, ``(n_radii,)``.
    noclip_top
        Largest Hessian eigenvalue of ``J_beta(pi_theta; pi_0)`` over the directions, per radius
        (negative: concave there in every direction tried).
    kimi_bottom
        Smallest Hessian eigenvalue of KimiPO's population loss over the directions, per radius
        (positive: convex).
    gap
        ``J_beta(pi_*; pi_0) - J_beta(pi_theta; pi_0)``, largest over the directions, per radius.
    beta_kl
        ``beta E_x KL(pi_theta || pi_*)`` at the same point (the identity of appendix G.1 makes it equal to ``gap``).
    target_norm
        ``||theta_* - theta_0|| = ||theta_star|| / beta``, the distance from the reference to the target.
    beta, n_directions
        The settings.
    """

    radii: np.ndarray
    noclip_top: np.ndarray
    kimi_bottom: np.ndarray
    gap: np.ndarray
    beta_kl: np.ndarray
    target_norm: float
    beta: float
    n_directions: int

    @property
    def concave_radius(self) -> float:
        """The largest radius of the grid up to which every direction tried is concave (``nan`` if none is)."""
        concave = self.noclip_top < 0.0
        if not concave[0]:
            return float("nan")
        last = np.flatnonzero(~concave)
        return float(self.radii[-1] if last.size == 0 else self.radii[last[0] - 1])

    def table(self) -> Table:
        """Per radius: the NoClip objective's largest and KimiPO loss's smallest Hessian eigenvalue, and the gap both ways."""
        rows = tuple(
            (float(r), float(r / self.target_norm), float(top), float(bottom), float(gap), float(kl))
            for r, top, bottom, gap, kl in zip(self.radii, self.noclip_top, self.kimi_bottom, self.gap, self.beta_kl)
        )
        return Table(
            ("ρ", "$\\rho / \\lVert\\theta_\\star - \\theta_0\\rVert$", "NoClip: largest eigenvalue", "KimiPO: smallest eigenvalue",
             r"$J_\beta(\pi_\star) - J_\beta(\pi_\theta)$", r"$\beta\,\mathrm{KL}(\pi_\theta \Vert \pi_\star)$"),
            rows,
            caption=f"Curvature at $\\theta^\\star + \\rho u$, over {self.n_directions} directions $u$, β = {self.beta:g}",
            notes=("NoClip: the Hessian of $J_\\beta(\\pi_\\theta; \\pi_0)$, largest eigenvalue over all directions tried (negative means "
                   "concave there). KimiPO: the Hessian of its population loss with the mean baseline, smallest "
                   "eigenvalue (positive means convex). Gap and KL: the largest over the directions.",),
        )


def landscape(instance: BanditInstance, beta: float, radii: Sequence[float], *, n_directions: int, seed: int) -> Landscape:
    """:class:`Landscape` at ``theta_* + rho u`` for ``n_directions`` random unit ``u`` (``np.random.default_rng(seed)``)."""
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    radii = check_finite_array("radii", radii, ndim=1)
    if radii.size == 0 or np.any(radii < 0.0):
        raise ValueError(f"radii must hold at least one value, each >= 0, got {radii!r}")
    n_directions = check_count("n_directions", n_directions)
    seed = check_seed("seed", seed)
    if instance.reward_theta is None:
        raise ValueError("instance.reward_theta is None: the target parameter needs a realizable instance")
    directions = np.random.default_rng(seed).standard_normal((n_directions, instance.dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    log_reference = base_log_policy(instance)
    target = instance.base_theta + instance.reward_theta / beta
    log_target = regularized_optimum(instance, log_reference, beta)
    best = regularized_objective(instance, log_target, log_reference, beta)
    columns: dict[str, list[float]] = {"top": [], "bottom": [], "gap": [], "kl": []}
    for radius in radii:
        tops, bottoms, gaps, kls = [], [], [], []
        for u in directions:
            theta = target + radius * u
            log_probs = log_policy(instance, theta)
            tops.append(np.linalg.eigvalsh(regularized_hessian(instance, theta, log_reference, beta)).max())
            bottoms.append(np.linalg.eigvalsh(_kimi_hessian(instance, theta, log_reference, beta)).min())
            gaps.append(best - regularized_objective(instance, log_probs, log_reference, beta))
            kls.append(beta * float(instance.prompt_probs @ kl_per_prompt(log_probs, log_target)))
        columns["top"].append(max(tops))
        columns["bottom"].append(min(bottoms))
        columns["gap"].append(max(gaps))
        columns["kl"].append(max(kls))
    return Landscape(
        radii=radii,
        noclip_top=np.array(columns["top"]),
        kimi_bottom=np.array(columns["bottom"]),
        gap=np.array(columns["gap"]),
        beta_kl=np.array(columns["kl"]),
        target_norm=float(np.linalg.norm(instance.reward_theta) / beta),
        beta=beta,
        n_directions=n_directions,
    )


@dataclass(frozen=True, eq=False)
class InnerLoopCurvature:
    """PPO-NoClip's inner iterates against the curvature of their population objective (paper Eq. 24, appendix G.1).

    Attributes
    ----------
    top_eigenvalue
        Largest Hessian eigenvalue of ``J_beta(pi_theta; pi_t)`` at every inner iterate
        ``theta_{t,k}``, ``(n_iterations, K + 1)``.
    gap
        ``J_beta(pi*_{t+1}; pi_t) - J_beta(pi_theta; pi_t)`` at every inner iterate, same shape.
    beta_kl
        ``beta E_x KL(pi_theta || pi*_{t+1})`` at every inner iterate, same shape.
    batch_gap
        The empirical objective's gap on the reused batch, ``L_t(theta_hat) - L_t(theta_{t,K})``
        with ``theta_hat`` the batch maximizer, ``(n_iterations,)``.
    beta
        The run's strength.
    """

    top_eigenvalue: np.ndarray
    gap: np.ndarray
    beta_kl: np.ndarray
    batch_gap: np.ndarray
    beta: float


def inner_loop_curvature(
    instance: BanditInstance, *, beta: float, eta: float, n_iterations: int, batch_size: int, inner_steps: int, seed: int
) -> InnerLoopCurvature:
    """Run PPO-NoClip (Algorithm 1) and measure the curvature and objective gaps at its inner iterates.

    The batch maximizer of each inner loop is found by continuing gradient ascent on the same
    batch (``20 K`` more steps) from the iterate handed back.
    """
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    inner_steps = check_count("inner_steps", inner_steps)
    seed = check_seed("seed", seed)
    top = np.zeros((n_iterations, inner_steps + 1))
    gap, beta_kl = np.zeros_like(top), np.zeros_like(top)
    batch_gap = np.zeros(n_iterations)

    def observe(step) -> None:
        t, k = step.iteration, step.inner_step
        log_reference = step.log_sampling
        log_probs = log_policy(instance, step.theta)
        log_target = regularized_optimum(instance, log_reference, beta)
        top[t, k] = np.linalg.eigvalsh(regularized_hessian(instance, step.theta, log_reference, beta)).max()
        gap[t, k] = regularized_objective(instance, log_target, log_reference, beta) - regularized_objective(
            instance, log_probs, log_reference, beta
        )
        beta_kl[t, k] = beta * float(instance.prompt_probs @ kl_per_prompt(log_probs, log_target))
        if k == inner_steps:
            theta = step.theta
            for _ in range(20 * inner_steps):
                theta = theta + eta * ppo_noclip_gradient(instance, theta, step.batch, beta)
            batch_gap[t] = ppo_noclip_objective(instance, theta, step.batch, beta) - ppo_noclip_objective(
                instance, step.theta, step.batch, beta
            )

    run(
        "ppo_noclip", instance, rng=np.random.default_rng(seed), beta=beta, eta=eta, n_iterations=n_iterations,
        batch_size=batch_size, inner_steps=inner_steps, on_inner_step=observe,
    )
    return InnerLoopCurvature(top_eigenvalue=top, gap=gap, beta_kl=beta_kl, batch_gap=batch_gap, beta=beta)
