"""Best-of-N sampling from a fixed policy: the coverage-governed baseline (paper section 1.3).

Best-of-N draws ``N`` independent responses from ``pi(.|x)`` and keeps the best. It misses
every optimal response with probability ``(1 - c(x))^n``, where ``c(x) = pi(Y*(x)|x)`` is
the coverage, so its cost is governed by coverage alone.

The success formulas (:func:`best_of_n_success` and its relatives) hold for any policy;
:func:`best_of_n` runs Best-of-N from the base model as a test-time procedure, reporting the
exact distribution of the response it returns (:func:`best_of_n_log_policy`) at the ``n`` that
makes every prompt succeed with probability ``1 - delta`` (:func:`best_of_n_size`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from covpo.algorithms.outer_loop import InnerStepCallback, Subproblem, inner_step_observer
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, check_bandit, check_policy, expected_reward, sample_responses
from covpo.policies import log_coverage as policy_log_coverage
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import MAX_COUNT, check_count, check_generator, check_probability, check_real_array


def _numbers(name: str, value: object) -> np.ndarray:
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}")
    array = check_real_array(name, value)
    if array.size == 0:
        raise ValueError(f"{name} must be a non-empty number or array of numbers, got {value!r}")
    return array


def _check_log_coverage(log_coverage: np.ndarray | float) -> np.ndarray:
    """Log coverages: ``<= 0`` (probabilities, not their logs, fail where they are ``> 0``), ``-inf`` allowed, no NaN."""
    values = _numbers("log_coverage", log_coverage)
    if np.any(np.isnan(values)) or np.any(values > 0.0):
        raise ValueError(f"log_coverage must hold log-probabilities <= 0 (logs, not probabilities), got {log_coverage!r}")
    return values


def _check_sizes(n: np.ndarray | int) -> np.ndarray:
    counts = _numbers("n", n)
    whole = np.all(np.isfinite(counts)) and np.all(counts == np.round(counts))
    if not whole or np.any(counts < 1) or np.any(counts > MAX_COUNT):
        raise ValueError(f"n must hold integers >= 1 (finite, at most 2**53), got {n!r}")
    return counts


def log_best_of_n_success(log_coverage: np.ndarray | float, n: np.ndarray | int) -> np.ndarray:
    """Log of the exact Best-of-N success probability ``1 - (1 - c)^N``, from ``log c``.

    With ``m = -n log(1 - c)`` the success probability is ``-expm1(-m)``. ``log m`` is formed
    in log space (``log n + log c`` plus a correction when ``c`` is tiny), so the result stays
    exact for coverages far below ``1e-300``, where it equals ``log n + log c``. Broadcasts.
    """
    log_c = _check_log_coverage(log_coverage)
    counts = _check_sizes(n)
    coverage = np.exp(np.minimum(log_c, np.log1p(-1e-16)))
    with np.errstate(divide="ignore"):
        log_rate = np.where(log_c < -20.0, log_c + coverage / 2.0, np.log(-np.log1p(-coverage)))
    log_m = np.log(counts) + log_rate
    m = np.exp(log_m)
    with np.errstate(divide="ignore", invalid="ignore"):
        correction = np.where(m > 1e-300, np.log(-np.expm1(-m)) - log_m, 0.0)
    return log_m + correction


def best_of_n_success(log_coverage: np.ndarray | float, n: np.ndarray | int) -> np.ndarray:
    """Exact probability ``1 - (1 - c)^N`` that Best-of-N returns an optimal response (paper section 1.3)."""
    return np.exp(log_best_of_n_success(log_coverage, n))


def best_of_n_samples_needed(log_coverage: np.ndarray | float, delta: float) -> np.ndarray:
    """Smallest ``n`` with ``(1 - c)^n <= delta``: ``ceil(log(1/delta) / -log(1 - c))``.

    It never exceeds the bound ``log(1/delta) / c`` of paper section 1.3 rounded up, and it is at least 1:
    a coverage that rounds to 1 (``log c`` within about ``1e-16`` of 0) needs one draw.
    """
    delta = check_probability("delta", delta)
    log_c = _check_log_coverage(log_coverage)
    with np.errstate(divide="ignore"):
        per_sample = -np.log1p(-np.exp(log_c))
        needed = np.ceil(np.log(1.0 / delta) / per_sample)
    return np.maximum(needed, 1.0)


def best_of_n_samples_bound(log_coverage: np.ndarray | float, delta: float) -> np.ndarray:
    """The sufficient sample size ``log(1/delta) / c`` from ``(1 - c)^n <= exp(-n c)``."""
    delta = check_probability("delta", delta)
    log_c = _check_log_coverage(log_coverage)
    with np.errstate(over="ignore"):
        return np.log(1.0 / delta) * np.exp(-log_c)


def sampled_best_of_n(
    instance: BanditInstance,
    log_probs: np.ndarray,
    n: int,
    trials: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Monte Carlo Best-of-N success rate per prompt, by actually drawing responses.

    Each of ``trials`` repetitions draws ``n`` responses per prompt from ``pi`` and
    succeeds if one of them is optimal.

    Returns
    -------
    numpy.ndarray
        Success frequency per prompt, shape ``(n_prompts,)``.
    """
    instance = check_bandit("instance", instance)
    log_probs = check_policy("log_probs", instance, log_probs)
    n = check_count("n", n)
    trials = check_count("trials", trials)
    check_generator("rng", rng)
    prompts = np.broadcast_to(np.arange(instance.n_prompts)[:, None, None], (instance.n_prompts, trials, n))
    responses = sample_responses(log_probs, prompts, rng)
    hit = instance.optimal_mask[prompts, responses].any(axis=2)
    return hit.mean(axis=1)


def best_of_n_log_policy(instance: BanditInstance, log_probs: np.ndarray, n: int) -> np.ndarray:
    """Log-probabilities of the response Best-of-N returns: the best of ``n`` draws from ``pi`` (paper section 1.3).

    Per prompt, with ``F(v)`` the probability that one draw has reward at most ``v`` and ``p(v)``
    that it has reward exactly ``v``, the best of ``n`` draws has reward ``v`` with probability
    ``F(v)^n - (F(v) - p(v))^n = F(v)^n (1 - (1 - p(v) / F(v))^n)``; the second factor is
    :func:`log_best_of_n_success` at ``log(p(v) / F(v))``, exact when ``p(v)`` is
    far below ``1e-300``. Ties go to the first best draw, so that mass is shared by the responses
    of reward ``v`` in proportion to ``pi``.
    """
    instance = check_bandit("instance", instance)
    log_probs = check_policy("log_probs", instance, log_probs)
    n = check_count("n", n)
    result = np.empty_like(log_probs, dtype=float)
    for x in range(instance.n_prompts):
        levels, level_of = np.unique(instance.rewards[x], return_inverse=True)
        log_level_mass = np.array([logsumexp(log_probs[x][level_of == k]) for k in range(levels.size)])
        log_cdf = np.minimum(np.logaddexp.accumulate(log_level_mass), 0.0)
        log_share = np.minimum(log_level_mass - log_cdf, 0.0)
        log_best_mass = n * log_cdf + log_best_of_n_success(log_share, n)
        result[x] = log_best_mass[level_of] + log_probs[x] - log_level_mass[level_of]
    return result - logsumexp(result, axis=1, keepdims=True)


def best_of_n_size(instance: BanditInstance, delta: float) -> int:
    """``n = max_x ceil(log(1/delta) / -log(1 - c_0(x)))``: every prompt succeeds with probability ``1 - delta``.

    :func:`best_of_n_samples_needed` at each prompt's base coverage; one ``n``
    for all prompts, since a test-time procedure does not know which prompt is hard.
    """
    instance = check_bandit("instance", instance)
    delta = check_probability("delta", delta)
    needed = best_of_n_samples_needed(policy_log_coverage(instance, base_log_policy(instance)), delta)
    return int(np.max(needed))


def check_best_of_n(*, delta: float) -> dict[str, object]:
    """The hyperparameters of :func:`best_of_n` checked by its rules (its validator); the trajectory adds ``n``."""
    return {"delta": check_probability("delta", delta)}


def best_of_n(
    instance: BanditInstance, *, delta: float, on_inner_step: InnerStepCallback | None = None
) -> Trajectory:
    """Best-of-N from ``pi_0`` (paper section 1.3) as a two-record trajectory: the base model, then the Best-of-N policy.

    ``n`` is :func:`best_of_n_size`; the second record's reward, log coverage and KL are those of
    :func:`best_of_n_log_policy`, exactly. One iteration: ``n`` responses per test prompt in one
    generation round, no gradient steps. ``on_inner_step``, an optional diagnostics callback,
    sees the base model's table and the returned one as an
    :class:`~covpo.algorithms.outer_loop.InnerStep` (the iterate is the table itself).
    """
    instance = check_bandit("instance", instance)
    settings = check_best_of_n(delta=delta)
    n = settings["n"] = best_of_n_size(instance, settings["delta"])
    log_base = base_log_policy(instance)
    recorder = TrajectoryRecorder("Best-of-N", instance.optimal_value, settings)
    recorder.record_policy(instance, log_base)
    recorder.count_responses(n)

    def subproblem() -> Subproblem:
        return Subproblem(
            lambda table: expected_reward(instance, table), update=lambda table: best_of_n_log_policy(instance, table, n)
        )

    observe = inner_step_observer(on_inner_step, instance, 0, recorder, subproblem, policy=None)
    observe(0, log_base)
    log_probs = best_of_n_log_policy(instance, log_base, n)
    observe(1, log_probs)
    recorder.record_policy(instance, log_probs)
    return recorder.finish()
