"""Softmax-linear policies in log space (paper section 2.2).

A policy is represented by its table of log-probabilities ``log pi(y|x)``, shape
``(n_prompts, n_responses)``. Everything that is computed from a policy (KL, coverage,
reward) takes that table, so the same functions serve softmax-linear iterates and
closed-form targets such as the regularized optimum, which need not lie in the class.
"""

from __future__ import annotations

import numpy as np

from covpo.instances import BanditInstance
from covpo.validation import (
    check_count,
    check_finite_array,
    check_generator,
    check_index_array,
    check_instance,
    check_log_distribution,
    check_shape,
    check_theta,
)


def check_bandit(name: str, instance: object) -> BanditInstance:
    """Return ``instance`` if it is a :class:`~covpo.instances.BanditInstance`, else raise naming ``name``."""
    return check_instance(name, instance, BanditInstance)


def check_policy(name: str, instance: BanditInstance, log_probs: object) -> np.ndarray:
    """``log_probs`` as a normalized log-probability table of ``instance``'s shape, or raise naming ``name``."""
    array = check_log_distribution(name, log_probs)
    return check_shape(name, array, (instance.n_prompts, instance.n_responses))


def logits(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """Unnormalized logits ``<theta, phi(x, y)>``, shape ``(n_prompts, n_responses)``."""
    instance = check_bandit("instance", instance)
    return feature_products(instance, check_theta("theta", theta, (instance.dim,)))


def feature_products(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """``<theta, phi(x, y)>`` for every pair, shape ``(n_prompts, n_responses)``, for a validated ``theta``.

    On tabular features (:attr:`~covpo.instances.BanditInstance.one_hot_columns`) this reads
    ``theta`` at each pair's coordinate instead of forming the dense product; the values are the same.
    """
    columns = instance.one_hot_columns
    return instance.features @ theta if columns is None else theta[columns]


def feature_sums(instance: BanditInstance, table: np.ndarray) -> np.ndarray:
    """``sum_{x, y} table(x, y) phi(x, y)``, shape ``(d,)``, for a table of the rewards' shape.

    On tabular features each coordinate receives the one entry of ``table`` whose feature it is
    (the dense sum only adds zeros to it).
    """
    columns = instance.one_hot_columns
    if columns is None:
        return np.einsum("xy,xyd->d", table, instance.features)
    sums = np.zeros(instance.dim, dtype=np.result_type(table, float))
    sums[columns] = table
    return sums


def prompt_feature_sums(instance: BanditInstance, table: np.ndarray) -> np.ndarray:
    """``sum_y table(x, y) phi(x, y)`` for every prompt, shape ``(n_prompts, d)`` (tabular features as in :func:`feature_sums`)."""
    columns = instance.one_hot_columns
    if columns is None:
        return np.einsum("xy,xyd->xd", table, instance.features)
    sums = np.zeros((instance.n_prompts, instance.dim), dtype=np.result_type(table, float))
    np.put_along_axis(sums, columns, table, axis=1)
    return sums


def log_softmax_rows(logits: np.ndarray) -> np.ndarray:
    """``scipy.special.log_softmax(logits, axis=-1)`` for rows that each hold a finite entry.

    The same operations in the same order as scipy's (shift by the row maximum, exponentiate,
    sum, take the log), so the result is the same to the last bit
    (``tests/test_policies.py`` checks it), without scipy's per-call array-API dispatch: on the
    book's small tables that dispatch took most of a sampled step's time.
    """
    row_max = logits.max(axis=-1, keepdims=True)
    row_max[~np.isfinite(row_max)] = 0.0
    shifted = logits - row_max
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def logsumexp_rows(values: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """``scipy.special.logsumexp(values, axis=-1, keepdims=keepdims)`` for real arrays.

    The same operations in the same order as scipy's (the row maximum and the number of
    entries equal to it split out, ``log1p`` of the rest, and the direct ``log(sum(exp))``
    wherever that result is not finite), so the result is the same to the last bit
    (``tests/test_policies.py`` checks it), without scipy's per-call array-API dispatch,
    which on the book's small tables costs more than the arithmetic.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        row_max = np.max(values, axis=-1, keepdims=True)
        is_max = values == row_max
        count = np.sum(is_max.astype(values.dtype), axis=-1, keepdims=True, dtype=values.dtype)
        rest = np.sum(np.exp(np.where(is_max, -np.inf, values) - row_max), axis=-1, keepdims=True)
        rest = np.where(rest == 0, rest, rest / count)
        result = np.log1p(rest) + np.log(count) + row_max
        finite = np.isfinite(result)
        if not finite.all():
            result = np.where(finite, result, np.log(np.sum(np.exp(values), axis=-1, keepdims=True)))
    return result if keepdims else result[..., 0]


def leave_one_out_baseline(values: np.ndarray) -> np.ndarray:
    """The mean of the *other* entries along the last axis, ``(sum_k v_k - v_i) / (n - 1)`` (after paper section 2.1).

    Subtracted from a sample's reward it leaves the policy-gradient estimate unbiased, because
    it does not depend on that sample. The last axis is the batch (REINFORCE) or the group of
    responses to one prompt (NPG, the sequence laboratory); it needs at least two entries.
    """
    values = check_finite_array("values", values)
    if values.ndim == 0:
        raise ValueError(f"values must have a last axis to average over, got {values!r}")
    count = values.shape[-1]
    if count < 2:
        raise ValueError(f"values must have at least 2 entries on the last axis for a leave-one-out mean, got {count}")
    return (values.sum(axis=-1, keepdims=True) - values) / (count - 1)


def unchecked_log_policy(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """:func:`log_policy` for arguments the caller has already validated under its own names."""
    return log_softmax_rows(feature_products(instance, theta))


def log_policy(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """``log pi_theta(y|x) = <theta, phi(x,y)> - log sum_y' exp <theta, phi(x,y')>`` (paper section 2.2)."""
    instance = check_bandit("instance", instance)
    return unchecked_log_policy(instance, check_theta("theta", theta, (instance.dim,)))


def unchecked_mean_features(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """:func:`mean_features` for arguments the caller has already validated under its own names."""
    return prompt_feature_sums(instance, np.exp(log_probs))


def mean_features(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """``phibar(x) = E_{y~pi(.|x)} phi(x, y)`` under the policy ``exp(log_probs)``, shape ``(n_prompts, d)`` (paper section 2.2)."""
    instance = check_bandit("instance", instance)
    return unchecked_mean_features(instance, check_policy("log_probs", instance, log_probs))


def centered_features(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """``phi(x, y) - phibar(x)``, the softmax-linear score ``grad log pi_theta(y|x)`` of every pair, shape ``(n_prompts, n_responses, d)``."""
    return instance.features - mean_features(instance, log_probs)[:, None, :]


def base_log_policy(instance: BanditInstance) -> np.ndarray:
    """Log-probabilities of the base model ``pi_0 = pi_{theta_0}``."""
    instance = check_bandit("instance", instance)
    return unchecked_log_policy(instance, instance.base_theta)


def policy_probs(log_probs: np.ndarray) -> np.ndarray:
    """Probabilities from log-probabilities (underflow to 0 is harmless here, never used for coverage)."""
    return np.exp(check_log_distribution("log_probs", log_probs))


def unchecked_kl_per_prompt(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    """:func:`kl_per_prompt` for tables the caller has already validated under its own names."""
    p = np.exp(log_p)
    with np.errstate(invalid="ignore"):
        terms = np.where(p > 0.0, p * (log_p - log_q), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)


def kl_per_prompt(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    """``KL(p(.|x) || q(.|x))`` for every prompt, from log-probabilities.

    Terms with ``p = 0`` contribute zero; ``q = 0`` where ``p > 0`` gives ``inf``. Both tables
    must be normalized log-probabilities (a table of probabilities is rejected).
    """
    log_p = check_log_distribution("log_p", log_p)
    log_q = check_log_distribution("log_q", log_q)
    if log_p.shape != log_q.shape:
        raise ValueError(f"log_p and log_q must have the same shape, got {log_p.shape} and {log_q.shape}")
    return unchecked_kl_per_prompt(log_p, log_q)


def unchecked_expected_kl(instance: BanditInstance, log_p: np.ndarray, log_q: np.ndarray) -> float:
    """:func:`expected_kl` for arguments the caller has already validated under its own names."""
    return float(instance.prompt_probs @ unchecked_kl_per_prompt(log_p, log_q))


def expected_kl(instance: BanditInstance, log_p: np.ndarray, log_q: np.ndarray) -> float:
    """``E_{x~rho} KL(p(.|x) || q(.|x))``."""
    instance = check_bandit("instance", instance)
    log_p = check_policy("log_p", instance, log_p)
    log_q = check_policy("log_q", instance, log_q)
    return unchecked_expected_kl(instance, log_p, log_q)


def unchecked_log_coverage(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """:func:`log_coverage` for arguments the caller has already validated under its own names."""
    return logsumexp_rows(np.where(instance.optimal_mask, log_probs, -np.inf))


def log_coverage(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """``log pi(Y*(x)|x)`` per prompt, by log-sum-exp over the optimal set (paper section 1.3).

    Exact far below ``1e-300``, where the probability itself would underflow.
    """
    instance = check_bandit("instance", instance)
    return unchecked_log_coverage(instance, check_policy("log_probs", instance, log_probs))


def coverage_coefficient(instance: BanditInstance, log_probs: np.ndarray) -> float:
    """The coverage coefficient ``C_cov = E_x [1 / pi(Y*(x)|x)]`` of the policy ``exp(log_probs)``.

    The paper measures a base model by its response coverage of the optimal responses (its
    section 1.3); this average over prompts of the inverse coverage is our reconstruction of the
    coefficient (``max_x 1 / pi(Y*(x)|x)`` is the worst-case variant). May overflow to ``inf``
    after a collapse.
    """
    instance = check_bandit("instance", instance)
    with np.errstate(over="ignore"):
        return float(instance.prompt_probs @ np.exp(-log_coverage(instance, log_probs)))


def value_per_prompt(instance: BanditInstance, log_probs: np.ndarray) -> np.ndarray:
    """``V(x) = E_{y~pi(.|x)} r(x, y)``."""
    instance = check_bandit("instance", instance)
    log_probs = check_policy("log_probs", instance, log_probs)
    return np.sum(np.exp(log_probs) * instance.rewards, axis=1)


def unchecked_expected_reward(instance: BanditInstance, log_probs: np.ndarray) -> float:
    """:func:`expected_reward` for arguments the caller has already validated under its own names."""
    return float(instance.prompt_probs @ np.sum(np.exp(log_probs) * instance.rewards, axis=1))


def expected_reward(instance: BanditInstance, log_probs: np.ndarray) -> float:
    """``J(pi) = E_x E_{y~pi} r(x, y)`` (paper section 1.2)."""
    instance = check_bandit("instance", instance)
    return float(instance.prompt_probs @ value_per_prompt(instance, log_probs))


def sample_prompts(instance: BanditInstance, rng: np.random.Generator, batch_size: int) -> np.ndarray:
    """Draw ``batch_size`` prompt indices from ``rho``."""
    instance = check_bandit("instance", instance)
    rng = check_generator("rng", rng)
    batch_size = check_count("batch_size", batch_size)
    return unchecked_sample_prompts(instance, rng, batch_size)


def unchecked_sample_prompts(instance: BanditInstance, rng: np.random.Generator, batch_size: int) -> np.ndarray:
    """:func:`sample_prompts` for arguments the caller has already validated (the algorithms' loops).

    The prompts ``rng.choice(n_prompts, batch_size, p=prompt_probs)`` would draw, from the same
    uniforms (``tests/test_policies.py`` checks it), looked up in the instance's
    :attr:`~covpo.instances.BanditInstance.prompt_cdf`.
    """
    return np.searchsorted(instance.prompt_cdf, rng.random(batch_size), side="right")


def sample_responses(log_probs: np.ndarray, prompts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one response per entry of ``prompts`` from ``pi(.|x)`` by inverse CDF, fully vectorized.

    The per-prompt CDFs are offset by the prompt index and searched as one sorted array, so
    the cost is ``O(samples log(prompts * responses))`` with no loop. ``prompts`` may have
    any shape, each entry a row index of ``log_probs``; the result has the same shape.
    """
    log_probs = check_log_distribution("log_probs", log_probs)
    if log_probs.ndim != 2:
        raise ValueError(f"log_probs must be a table of shape (n_prompts, n_responses), got shape {log_probs.shape}")
    prompts = check_index_array("prompts", prompts, log_probs.shape[0])
    rng = check_generator("rng", rng)
    return unchecked_sample_responses(log_probs, prompts, rng)


def unchecked_sample_responses(log_probs: np.ndarray, prompts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`sample_responses` for arguments the caller has already validated (the algorithms' loops)."""
    n_prompts, n_responses = log_probs.shape
    cumulative = np.cumsum(np.exp(log_probs - log_probs.max(axis=1, keepdims=True)), axis=1)
    cumulative /= cumulative[:, -1:]
    offsets = np.arange(n_prompts)[:, None]
    positions = np.searchsorted((cumulative + offsets).ravel(), rng.random(prompts.shape) + prompts, side="right")
    return np.clip(positions - prompts * n_responses, 0, n_responses - 1)
