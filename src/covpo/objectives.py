"""Objectives, their exact gradients, and the closed-form regularized optimum (paper Eqs. (5) and (13), section 3.1, appendix B)."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from covpo.instances import BanditInstance
from covpo.policies import expected_kl, expected_reward, kl_per_prompt, log_policy
from covpo.validation import check_log_distribution, check_positive, check_shape


def regularized_objective(
    instance: BanditInstance, log_probs: np.ndarray, log_ref: np.ndarray, beta: float
) -> float:
    """``J_beta(pi; pi_ref) = J(pi) - beta E_x KL(pi(.|x) || pi_ref(.|x))`` (paper Eqs. (5) and (13))."""
    beta = check_positive("beta", beta)
    return expected_reward(instance, log_probs) - beta * expected_kl(instance, log_probs, log_ref)


def _score_weighted_sum(instance: BanditInstance, log_probs: np.ndarray, advantage: np.ndarray) -> np.ndarray:
    """``E_x E_{y~pi} [A(x,y) (phi(x,y) - phibar(x))]`` for an advantage table ``A``."""
    probs = np.exp(log_probs)
    centered = advantage - np.sum(probs * advantage, axis=1, keepdims=True)
    weights = instance.prompt_probs[:, None] * probs * centered
    return np.einsum("xy,xyd->d", weights, instance.features)


def reward_gradient(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """``grad J(pi_theta) = E_x E_{y~pi}[(r - V(x)) (phi - phibar(x))]`` (standard; paper section 2.2's class)."""
    return _score_weighted_sum(instance, log_policy(instance, theta), instance.rewards)


def kl_gradient(instance: BanditInstance, theta: np.ndarray, log_ref: np.ndarray) -> np.ndarray:
    """``grad_theta E_x KL(pi_theta || pi_ref) = E_x E_{y~pi}[(log pi/pi_ref - KL_x)(phi - phibar)]``."""
    log_probs = log_policy(instance, theta)
    log_ref = check_shape("log_ref", check_log_distribution("log_ref", log_ref), log_probs.shape)
    return _score_weighted_sum(instance, log_probs, log_probs - log_ref)


def regularized_gradient(
    instance: BanditInstance, theta: np.ndarray, log_ref: np.ndarray, beta: float
) -> np.ndarray:
    """``grad J_beta(pi_theta; pi_ref)``: the score-weighted advantage ``r - beta log(pi/pi_ref)``."""
    beta = check_positive("beta", beta)
    log_probs = log_policy(instance, theta)
    log_ref = check_shape("log_ref", check_log_distribution("log_ref", log_ref), log_probs.shape)
    return _score_weighted_sum(instance, log_probs, instance.rewards - beta * (log_probs - log_ref))


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
