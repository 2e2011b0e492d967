"""Exact policy mirror descent and Approximate Policy Mirror Descent (paper section 3.1, appendices B.3, B.4.1, C.1).

Exact mirror descent resets the reference to the current policy and jumps to the
regularized optimum, ``pi_{t+1}(y|x) proportional to pi_t(y|x) exp(r(x, y) / beta)``, which
unrolls to ``pi_T proportional to pi_0 exp(T r / beta)`` (:func:`exact_mirror_descent`,
:func:`mirror_descent_policy`, with the rate :func:`mirror_descent_bound`). APMD is the same
outer loop inside the softmax-linear class, each target solved approximately; two instances
live here, both deterministic:

- :func:`apmd`: ``K`` exact-gradient ascent steps on ``J_beta(.; pi_t)`` per reset (appendix C.1);
- :func:`apmd_exact`: the exact target ``theta_{t+1} = theta_t + theta_star / beta`` of a linear
  reward (appendix B.4.1, :func:`exact_target_theta`).

The sampled instances (PPO-NoClip, PPO-Lite, GRPO, KimiPO, Rebel, NPG) have their own modules
and write the same outer loop out in full.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from covpo.algorithms.steps import ascent_step, check_policy_class, check_step_stability, feature_scale
from covpo.instances import BanditInstance
from covpo.objectives import regularized_gradient, regularized_optimum, unchecked_kl_to_regularized_optimum
from covpo.policies import base_log_policy, check_bandit, check_theta, log_coverage, log_policy
from covpo.policy_classes import PolicyClass
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import check_count, check_finite_array, check_flag, check_positive

REALIZABILITY_TOLERANCE = 1e-9


def mirror_descent_policy(instance: BanditInstance, beta: float, t: int) -> np.ndarray:
    """Closed form of the ``t``-th exact mirror-descent iterate, ``pi_0 exp(t r / beta) / Z``.

    Paper section 3.1 and appendix B.3: ``t`` resets at strength ``beta`` equal one fixed-reference step at
    strength ``beta / t``. Returns the log-probability table; ``t = 0`` gives ``pi_0``.
    Rewards enter relative to each prompt's best, so a ``t / beta`` too large for floating
    point gives the limit: ``pi_0`` restricted to the best responses, renormalized.
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    t = check_count("t", t, minimum=0)
    shortfall = instance.rewards - instance.rewards.max(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        tilt = np.where(shortfall < 0.0, (t / beta) * shortfall, 0.0)
    unnormalized = base_log_policy(instance) + tilt
    return unnormalized - logsumexp(unnormalized, axis=1, keepdims=True)


def exact_mirror_descent(instance: BanditInstance, *, beta: float, n_iterations: int) -> Trajectory:
    """Exact policy mirror descent ``pi_{t+1} proportional to pi_t exp(r / beta)`` (paper appendix B.3).

    Each iteration resets the reference to ``pi_t`` and moves to the exact regularized
    optimum of ``J_beta(.; pi_t)`` on the log-probability table, so the iterate need not lie
    in the softmax-linear class. One record per iterate, ``pi_0`` included; every
    iteration counts one reset and no gradient steps or responses.

    Parameters
    ----------
    instance
        The bandit; any rewards, realizable or not.
    beta
        Regularization strength of every step, ``> 0``.
    n_iterations
        Number of outer iterations ``T``, ``>= 1``.
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    n_iterations = check_count("n_iterations", n_iterations)
    recorder = TrajectoryRecorder(
        "exact mirror descent", instance.optimal_value, {"beta": beta, "n_iterations": n_iterations}
    )
    log_probs = base_log_policy(instance)
    recorder.record_iterate(instance, log_probs)
    for _ in range(n_iterations):
        recorder.count_reset()
        log_probs = regularized_optimum(instance, log_probs, beta)
        recorder.record_iterate(instance, log_probs)
    return recorder.finish()


def mirror_descent_bound(instance: BanditInstance, beta: float, t: float | np.ndarray) -> float | np.ndarray:
    """The exact mirror-descent rate ``J* - J(pi_t) <= beta E_x log(1 / c_0(x)) / t`` (paper section 3.1, cf. Eq. (18); appendix B.3).

    ``log(1 / c_0(x))`` is ``KL(pi* || pi_0)`` for ``pi*`` the base model restricted to the
    optimal set, computed from log coverage so it stays exact however small ``c_0`` is.
    ``t`` may be an array of iteration counts, each ``> 0``.
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    iterations = check_finite_array("t", t)
    if np.any(iterations <= 0.0):
        raise ValueError(f"t must be > 0 everywhere, got {t!r}")
    divergence = -float(instance.prompt_probs @ log_coverage(instance, base_log_policy(instance)))
    bound = beta * divergence / iterations
    return float(bound) if bound.ndim == 0 else bound


def check_realizable(instance: BanditInstance) -> np.ndarray:
    """Return ``theta_star`` if the reward is linear, ``r = <theta_star, phi> + c(x)``; raise ``ValueError`` otherwise.

    The condition of paper appendix B.4.1 under which every mirror-descent target lies in the
    softmax-linear class: ``instance.reward_theta`` must reproduce the rewards up to a per-prompt
    constant (which cancels in the normalization).
    """
    instance = check_bandit("instance", instance)
    if instance.reward_theta is None:
        raise ValueError("reward_theta is None: the exact target is only reachable for linear rewards")
    residual = instance.rewards - instance.features @ instance.reward_theta
    spread = residual.max(axis=1) - residual.min(axis=1)
    if np.any(spread > REALIZABILITY_TOLERANCE * max(1.0, float(np.abs(instance.rewards).max()))):
        raise ValueError(
            "reward_theta does not reproduce the rewards up to a per-prompt constant "
            f"(largest spread {spread.max()!r}); the target is not in the softmax-linear class"
        )
    return instance.reward_theta


def exact_target_theta(instance: BanditInstance, theta: np.ndarray, beta: float) -> np.ndarray:
    """The parameters of the mirror-descent target from ``pi_theta``: ``theta + theta_star / beta`` (paper appendix B.4.1).

    Exact for softmax-linear policies with a linear reward (:func:`check_realizable`, which
    raises ``ValueError`` otherwise): ``pi_{theta + theta_star / beta}`` is proportional to
    ``pi_theta exp(r / beta)``.
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    theta = check_theta("theta", instance, theta)
    return theta + check_realizable(instance) / beta


def apmd(
    instance: BanditInstance,
    *,
    beta: float,
    eta: float,
    n_iterations: int,
    inner_steps: int,
    record_each_step: bool = False,
    policy: PolicyClass | None = None,
) -> Trajectory:
    """APMD with ``K`` exact-gradient ascent steps per reset (paper section 3.1, appendix C.1).

    From ``theta_0``, each outer iteration ``t`` resets the reference to ``pi_t`` (one reset)
    and takes ``K = inner_steps`` steps ``theta <- theta + eta grad J_beta(pi_theta; pi_t)`` from
    ``theta_t`` with the population gradient of paper Eq. (13)
    (:func:`covpo.objectives.regularized_gradient`); no responses are sampled. The variant that
    appendix C.1 compares with REINFORCE (paper Figure 2).

    Parameters
    ----------
    instance
        The bandit.
    beta
        Regularization strength toward each reset reference, ``> 0``.
    eta
        Learning rate of the inner steps, ``> 0``.
    n_iterations
        Number of outer iterations ``T``, ``>= 1``.
    inner_steps
        Gradient steps ``K`` per outer iteration, ``>= 1``.
    record_each_step
        Record every gradient step's iterate instead of one record per outer iteration.
    policy
        The policy class the iterates live in (:class:`~covpo.policy_classes.PolicyClass`),
        started at its ``initial_params``; ``None`` for softmax-linear over ``instance``'s
        features. The targets ``pi*_{t+1}`` are exact tables whatever the class.

    Returns
    -------
    Trajectory
        With ``thetas`` (``theta_0, ..., theta_T``, flat parameters) and ``inner_kl``, the accuracy
        ``E_x KL(pi_{t+1} || pi*_{t+1})`` of each inner loop (its regularized objective gap
        divided by ``beta``, paper section 3.1).

    Raises
    ------
    FloatingPointError
        If a step leaves ``theta`` non-finite (``eta`` too large).
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    inner_steps = check_count("inner_steps", inner_steps)
    policy = check_policy_class("policy", instance, policy)
    record_each_step = check_flag("record_each_step", record_each_step)
    check_step_stability("APMD", eta, beta, feature_scale(instance, policy))
    recorder = TrajectoryRecorder(
        "APMD", instance.optimal_value,
        {"beta": beta, "eta": eta, "n_iterations": n_iterations, "inner_steps": inner_steps},
    )
    theta = np.array(policy.initial_params, dtype=float)
    log_probs = policy.log_policy(theta)
    log_base = log_probs
    recorder.record_iterate(instance, log_probs, log_base=log_base)
    thetas, inner_kl = [theta], []
    for t in range(n_iterations):
        log_reference = log_probs
        recorder.count_reset()
        for k in range(inner_steps):
            gradient = regularized_gradient(instance, theta, log_reference, beta, policy=policy)
            theta = ascent_step(theta, eta, gradient, t, k + 1)
            recorder.count_gradient_steps()
            if record_each_step:
                recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)
        log_probs = policy.log_policy(theta)
        inner_kl.append(unchecked_kl_to_regularized_optimum(instance, log_probs, log_reference, beta))
        if not record_each_step:
            recorder.record_iterate(instance, log_probs, log_base=log_base)
        thetas.append(theta)
    return recorder.finish(thetas=thetas, inner_kl=inner_kl)


def apmd_exact(
    instance: BanditInstance, *, beta: float, n_iterations: int, record_each_step: bool = False
) -> Trajectory:
    """APMD with exact targets, ``theta_{t+1} = theta_t + theta_star / beta`` (paper section 3.1, appendix B.4.1).

    For a linear reward ``r = <theta_star, phi> + c(x)`` every target
    ``pi*_{t+1} proportional to pi_t exp(r / beta)`` is softmax-linear, so each outer iteration
    (one reset) reaches it exactly (:func:`exact_target_theta`): exact mirror descent inside the
    class, at no gradient steps and no responses.

    Parameters
    ----------
    instance
        The bandit; its reward must be linear in its features (``ValueError`` otherwise).
    beta
        Regularization strength toward each reset reference, ``> 0``.
    n_iterations
        Number of outer iterations ``T``, ``>= 1``.
    record_each_step
        Accepted for a uniform interface with :func:`apmd`; with no gradient steps every outer
        iteration is recorded once either way.

    Returns
    -------
    Trajectory
        With ``thetas`` (``theta_0, ..., theta_T``) and ``inner_kl`` (zero up to rounding).
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    n_iterations = check_count("n_iterations", n_iterations)
    theta_star = check_realizable(instance)
    record_each_step = check_flag("record_each_step", record_each_step)
    recorder = TrajectoryRecorder(
        "APMD (exact targets)", instance.optimal_value,
        {"beta": beta, "n_iterations": n_iterations},
    )
    theta = np.array(instance.base_theta, dtype=float)
    log_probs = log_policy(instance, theta)
    recorder.record_iterate(instance, log_probs)
    thetas, inner_kl = [theta], []
    for _ in range(n_iterations):
        log_reference = log_probs
        recorder.count_reset()
        theta = theta + theta_star / beta
        log_probs = log_policy(instance, theta)
        inner_kl.append(unchecked_kl_to_regularized_optimum(instance, log_probs, log_reference, beta))
        recorder.record_iterate(instance, log_probs)
        thetas.append(theta)
    return recorder.finish(thetas=thetas, inner_kl=inner_kl)
