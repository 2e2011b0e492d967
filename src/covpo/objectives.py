"""Objectives, their exact gradients, and the closed-form regularized optimum (paper Eqs. (5) and (13), section 3.1, appendix B)."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from covpo.instances import BanditInstance
from covpo.policies import expected_kl, expected_reward, kl_per_prompt
from covpo.policy_classes import PolicyClass, SoftmaxLinear
from covpo.validation import check_log_distribution, check_positive, check_shape


def regularized_objective(
    instance: BanditInstance, log_probs: np.ndarray, log_ref: np.ndarray, beta: float
) -> float:
    """``J_beta(pi; pi_ref) = J(pi) - beta E_x KL(pi(.|x) || pi_ref(.|x))`` (paper Eqs. (5) and (13))."""
    beta = check_positive("beta", beta)
    return expected_reward(instance, log_probs) - beta * expected_kl(instance, log_probs, log_ref)


def _policy_class(instance: BanditInstance, policy: PolicyClass | None) -> PolicyClass:
    """``policy``, or the paper's softmax-linear class over ``instance``'s features when ``None``."""
    return SoftmaxLinear(instance) if policy is None else policy


def reward_gradient(instance: BanditInstance, theta: np.ndarray, *, policy: PolicyClass | None = None) -> np.ndarray:
    """``grad J(pi_theta) = E_x E_{y~pi}[(r - V(x)) grad log pi_theta(y|x)]`` (standard; paper section 2.2's class).

    ``policy`` is the policy class ``theta`` parametrizes (:mod:`covpo.policy_classes`);
    softmax-linear over ``instance``'s features by default, whose score is ``phi - phibar(x)``.
    """
    policy = _policy_class(instance, policy)
    return policy.population_score_sum(theta, instance.rewards, policy.log_policy(theta))


def kl_gradient(
    instance: BanditInstance, theta: np.ndarray, log_ref: np.ndarray, *, policy: PolicyClass | None = None
) -> np.ndarray:
    """``grad_theta E_x KL(pi_theta || pi_ref) = E_x E_{y~pi}[(log pi/pi_ref - KL_x) grad log pi_theta]``.

    ``policy`` as in :func:`reward_gradient`.
    """
    policy = _policy_class(instance, policy)
    log_probs = policy.log_policy(theta)
    log_ref = check_shape("log_ref", check_log_distribution("log_ref", log_ref), log_probs.shape)
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

    ``policy`` as in :func:`reward_gradient`.
    """
    beta = check_positive("beta", beta)
    policy = _policy_class(instance, policy)
    log_probs = policy.log_policy(theta)
    log_ref = check_shape("log_ref", check_log_distribution("log_ref", log_ref), log_probs.shape)
    return policy.population_score_sum(theta, instance.rewards - beta * (log_probs - log_ref), log_probs)


def regularized_optimum(instance: BanditInstance, log_ref: np.ndarray, beta: float) -> np.ndarray:
    """Log-probabilities of ``pi_beta = pi_ref exp(r / beta) / Z`` (paper section 3.1's target, reference ``pi_ref``), exactly normalized."""
    beta = check_positive("beta", beta)
    log_ref = check_log_distribution("log_ref", log_ref)
    check_shape("log_ref", log_ref, instance.rewards.shape)
    unnormalized = log_ref + instance.rewards / beta
    return unnormalized - logsumexp(unnormalized, axis=1, keepdims=True)


def regularized_gap(
    instance: BanditInstance, log_probs: np.ndarray, log_ref: np.ndarray, beta: float
) -> float:
    """``beta E_x KL(pi || pi_beta)``, which equals ``J_beta(pi_beta) - J_beta(pi)`` (a standard identity; our reconstruction)."""
    target = regularized_optimum(instance, log_ref, beta)
    return beta * float(instance.prompt_probs @ kl_per_prompt(log_probs, target))
