"""Objectives, their exact gradients, and the closed-form regularized optimum (paper Eqs. (5) and (13), section 3.1, appendix B)."""

from __future__ import annotations

import numpy as np

from covpo.instances import BanditInstance
from covpo.policies import (
    check_bandit,
    check_policy,
    logsumexp_rows,
    unchecked_expected_kl,
    unchecked_expected_reward,
    unchecked_kl_per_prompt,
)
from covpo.policy_classes import PolicyClass, policy_class
from covpo.validation import check_finite_array, check_log_distribution, check_positive, check_shape, check_theta

def regularized_objective(
    instance: BanditInstance, log_probs: np.ndarray, log_ref: np.ndarray, beta: float
) -> float:
    """``J_beta(pi; pi_ref) = J(pi) - beta E_x KL(pi(.|x) || pi_ref(.|x))`` (paper Eqs. (5) and (13))."""
    instance = check_bandit("instance", instance)
    log_probs = check_policy("log_probs", instance, log_probs)
    log_ref = check_policy("log_ref", instance, log_ref)
    beta = check_positive("beta", beta)
    return unchecked_expected_reward(instance, log_probs) - beta * unchecked_expected_kl(instance, log_probs, log_ref)


def _check_reference(log_ref: object, shape: tuple[int, ...]) -> np.ndarray:
    """A reference table with full support (the KL to a reference with zeros is infinite for a softmax policy)."""
    log_ref = check_shape("log_ref", check_log_distribution("log_ref", log_ref), shape)
    return check_finite_array("log_ref", log_ref)


def reward_gradient(instance: BanditInstance, theta: np.ndarray, *, policy: PolicyClass | None = None) -> np.ndarray:
    """``grad J(pi_theta) = E_x E_{y~pi}[(r - V(x)) grad log pi_theta(y|x)]`` (standard; paper section 2.2's class).

    ``policy`` is the policy class ``theta`` parametrizes (:mod:`covpo.policy_classes`);
    softmax-linear over ``instance``'s features by default, whose score is ``phi - phibar(x)``.
    """
    policy = policy_class("policy", check_bandit("instance", instance), policy)
    theta = check_theta("theta", theta, np.shape(policy.initial_params))
    return policy.population_score_sum(theta, instance.rewards, policy.log_policy(theta))


def kl_gradient(
    instance: BanditInstance, theta: np.ndarray, log_ref: np.ndarray, *, policy: PolicyClass | None = None
) -> np.ndarray:
    """``grad_theta E_x KL(pi_theta || pi_ref) = E_x E_{y~pi}[(log pi/pi_ref - KL_x) grad log pi_theta]``.

    ``policy`` as in :func:`reward_gradient`; ``pi_ref`` needs full support.
    """
    policy = policy_class("policy", check_bandit("instance", instance), policy)
    theta = check_theta("theta", theta, np.shape(policy.initial_params))
    log_probs = policy.log_policy(theta)
    log_ref = _check_reference(log_ref, log_probs.shape)
    return policy.population_score_sum(theta, log_probs - log_ref, log_probs)


def regularized_gradient(
    instance: BanditInstance,
    theta: np.ndarray,
    log_ref: np.ndarray,
    beta: float,
    *,
    policy: PolicyClass | None = None,
) -> np.ndarray:
    """``grad J_beta(pi_theta; pi_ref)`` (paper Eq. (13)): the score-weighted advantage ``r - beta log(pi/pi_ref)``.

    ``policy`` as in :func:`reward_gradient`; ``pi_ref`` needs full support.
    """
    beta = check_positive("beta", beta)
    policy = policy_class("policy", check_bandit("instance", instance), policy)
    theta = check_theta("theta", theta, np.shape(policy.initial_params))
    log_probs = policy.log_policy(theta)
    log_ref = _check_reference(log_ref, log_probs.shape)
    with np.errstate(over="ignore"):
        advantage = instance.rewards - beta * (log_probs - log_ref)
    if not np.all(np.isfinite(advantage)):
        raise ValueError(f"beta={beta!r} is too large: the advantage r - beta log(pi / pi_ref) overflows")
    return policy.population_score_sum(theta, advantage, log_probs)


def regularized_optimum(instance: BanditInstance, log_ref: np.ndarray, beta: float) -> np.ndarray:
    """Log-probabilities of ``pi_beta = pi_ref exp(r / beta) / Z`` (paper section 3.1's target, reference ``pi_ref``), exactly normalized."""
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    return unchecked_regularized_optimum(instance, check_policy("log_ref", instance, log_ref), beta)


def unchecked_regularized_optimum(instance: BanditInstance, log_ref: np.ndarray, beta: float) -> np.ndarray:
    """:func:`regularized_optimum` for arguments the caller has already validated (the algorithms' loops)."""
    unnormalized = log_ref + instance.rewards / beta
    return unnormalized - logsumexp_rows(unnormalized, keepdims=True)


def unchecked_kl_to_regularized_optimum(
    instance: BanditInstance, log_probs: np.ndarray, log_ref: np.ndarray, beta: float
) -> float:
    """``E_x KL(pi || pi_beta)`` with ``pi_beta`` the :func:`regularized_optimum` of ``log_ref``, for validated arguments.

    How far an inner loop ended from the target it approximates (paper section 3.1); the
    algorithms record it after every outer iteration.
    """
    return unchecked_expected_kl(instance, log_probs, unchecked_regularized_optimum(instance, log_ref, beta))


def regularized_gap(
    instance: BanditInstance, log_probs: np.ndarray, log_ref: np.ndarray, beta: float
) -> float:
    """``beta E_x KL(pi || pi_beta)``, which equals ``J_beta(pi_beta) - J_beta(pi)`` (a standard identity; our reconstruction)."""
    instance = check_bandit("instance", instance)
    log_probs = check_policy("log_probs", instance, log_probs)
    target = regularized_optimum(instance, log_ref, beta)
    return beta * float(instance.prompt_probs @ unchecked_kl_per_prompt(log_probs, target))
