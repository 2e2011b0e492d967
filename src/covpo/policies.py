"""Softmax-linear policies in log space (paper section 2.2).

A policy is represented by its table of log-probabilities ``log pi(y|x)``, shape
``(n_prompts, n_responses)``. Everything that is computed from a policy (KL, coverage,
reward) takes that table, so the same functions serve softmax-linear iterates and
closed-form targets such as the regularized optimum, which need not lie in the class.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from covpo.instances import BanditInstance
from covpo.validation import check_count, check_finite_array, check_log_distribution, check_shape


def logits(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """Unnormalized logits ``<theta, phi(x, y)>``, shape ``(n_prompts, n_responses)``."""
    theta = check_shape("theta", check_finite_array("theta", theta, ndim=1), (instance.dim,))
    return instance.features @ theta


def log_policy(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """``log pi_theta(y|x) = <theta, phi(x,y)> - log sum_y' exp <theta, phi(x,y')>`` (paper section 2.2)."""
    scores = logits(instance, theta)
    return scores - logsumexp(scores, axis=1, keepdims=True)


def mean_features(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """``phibar(x) = E_{y~pi(.|x)} phi(x, y)`` under the policy ``exp(log_probs)``, shape ``(n_prompts, d)`` (paper section 2.2)."""
    return np.einsum("xy,xyd->xd", np.exp(log_probs), instance.features)


def centered_features(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """``phi(x, y) - phibar(x)``, the softmax-linear score ``grad log pi_theta(y|x)`` of every pair, shape ``(n_prompts, n_responses, d)``."""
    return instance.features - mean_features(instance, log_probs)[:, None, :]


def base_log_policy(instance: BanditInstance) -> np.ndarray:
    """Log-probabilities of the base model ``pi_0 = pi_{theta_0}``."""
    return log_policy(instance, instance.base_theta)


def policy_probs(log_probs: np.ndarray) -> np.ndarray:
    """Probabilities from log-probabilities (underflow to 0 is harmless here, never used for coverage)."""
    return np.exp(log_probs)


def _check_policy(instance: BanditInstance, name: str, log_probs: np.ndarray) -> np.ndarray:
    array = check_log_distribution(name, log_probs)
    return check_shape(name, array, (instance.n_prompts, instance.n_responses))


def kl_per_prompt(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    """``KL(p(.|x) || q(.|x))`` for every prompt, from log-probabilities.

    Terms with ``p = 0`` contribute zero; ``q = 0`` where ``p > 0`` gives ``inf``.
    """
    log_p = np.asarray(log_p, dtype=float)
    log_q = np.asarray(log_q, dtype=float)
    if log_p.shape != log_q.shape:
        raise ValueError(f"log_p and log_q must have the same shape, got {log_p.shape} and {log_q.shape}")
    p = np.exp(log_p)
    with np.errstate(invalid="ignore"):
        terms = np.where(p > 0.0, p * (log_p - log_q), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)


def expected_kl(instance: BanditInstance, log_p: np.ndarray, log_q: np.ndarray) -> float:
    """``E_{x~rho} KL(p(.|x) || q(.|x))``."""
    log_p = _check_policy(instance, "log_p", log_p)
    log_q = _check_policy(instance, "log_q", log_q)
    return float(instance.prompt_probs @ kl_per_prompt(log_p, log_q))


def log_coverage(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """``log pi(Y*(x)|x)`` per prompt, by log-sum-exp over the optimal set (paper section 1.3).

    Exact far below ``1e-300``, where the probability itself would underflow.
    """
    log_probs = _check_policy(instance, "log_probs", log_probs)
    return logsumexp(np.where(instance.optimal_mask, log_probs, -np.inf), axis=1)


def coverage_coefficient(instance: BanditInstance, log_probs: np.ndarray) -> float:
    """``C_cov = E_x [1 / pi(Y*(x)|x)]`` (paper section 1.3); may overflow to ``inf`` after collapse."""
    with np.errstate(over="ignore"):
        return float(instance.prompt_probs @ np.exp(-log_coverage(instance, log_probs)))


def value_per_prompt(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """``V(x) = E_{y~pi(.|x)} r(x, y)``."""
    log_probs = _check_policy(instance, "log_probs", log_probs)
    return np.sum(np.exp(log_probs) * instance.rewards, axis=1)


def expected_reward(instance: BanditInstance, log_probs: np.ndarray) -> float:
    """``J(pi) = E_x E_{y~pi} r(x, y)`` (paper section 1.2)."""
    return float(instance.prompt_probs @ value_per_prompt(instance, log_probs))


def sample_prompts(instance: BanditInstance, rng: np.random.Generator, batch_size: int) -> np.ndarray:
    """Draw ``batch_size`` prompt indices from ``rho``."""
    batch_size = check_count("batch_size", batch_size)
    return rng.choice(instance.n_prompts, size=batch_size, p=instance.prompt_probs)


def sample_responses(log_probs: np.ndarray, prompts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one response per entry of ``prompts`` from ``pi(.|x)`` by inverse CDF, fully vectorized.

    The per-prompt CDFs are offset by the prompt index and searched as one sorted array, so
    the cost is ``O(samples log(prompts * responses))`` with no loop. ``prompts`` may have
    any shape; the result has the same shape.
    """
    prompts = np.asarray(prompts, dtype=np.int64)
    n_prompts, n_responses = log_probs.shape
    cumulative = np.cumsum(np.exp(log_probs - log_probs.max(axis=1, keepdims=True)), axis=1)
    cumulative /= cumulative[:, -1:]
    offsets = np.arange(n_prompts)[:, None]
    positions = np.searchsorted((cumulative + offsets).ravel(), rng.random(prompts.shape) + prompts, side="right")
    return np.clip(positions - prompts * n_responses, 0, n_responses - 1)
