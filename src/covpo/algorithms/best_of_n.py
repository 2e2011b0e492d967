"""Best-of-N sampling from a fixed policy: the coverage-governed baseline (paper section 1.3).

Best-of-N draws ``N`` independent responses from ``pi(.|x)`` and keeps the best. It misses
every optimal response with probability ``(1 - c(x))^N``, where ``c(x) = pi(Y*(x)|x)`` is
the coverage, so its cost is governed by coverage alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo.instances import BanditInstance, tabular_instance
from covpo.policies import base_log_policy, sample_responses
from covpo.validation import check_count, check_probability


def _check_log_coverage(log_coverage: np.ndarray | float) -> np.ndarray:
    values = np.asarray(log_coverage, dtype=float)
    if np.any(np.isnan(values)) or np.any(values > 0.0):
        raise ValueError(f"log_coverage must hold log-probabilities <= 0, got {log_coverage!r}")
    return values


def log_best_of_n_success(log_coverage: np.ndarray | float, n: np.ndarray | int) -> np.ndarray:
    """Log of the exact Best-of-N success probability ``1 - (1 - c)^N``, from ``log c``.

    With ``m = -N log(1 - c)`` the success probability is ``-expm1(-m)``. ``log m`` is formed
    in log space (``log N + log c`` plus a correction when ``c`` is tiny), so the result stays
    exact for coverages far below ``1e-300``, where it equals ``log N + log c``. Broadcasts.
    """
    log_c = _check_log_coverage(log_coverage)
    counts = np.asarray(n, dtype=float)
    if np.any(counts < 1) or np.any(counts != np.round(counts)):
        raise ValueError(f"n must hold integers >= 1, got {n!r}")
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
    """Smallest ``N`` with ``(1 - c)^N <= delta``: ``ceil(log(1/delta) / -log(1 - c))``.

    It never exceeds the bound ``log(1/delta) / c`` of paper section 1.3.
    """
    delta = check_probability("delta", delta)
    log_c = _check_log_coverage(log_coverage)
    per_sample = -np.log1p(-np.exp(log_c))
    with np.errstate(divide="ignore"):
        needed = np.ceil(np.log(1.0 / delta) / per_sample)
    return np.where(log_c == 0.0, 1.0, needed)


def best_of_n_samples_bound(log_coverage: np.ndarray | float, delta: float) -> np.ndarray:
    """The sufficient sample size ``log(1/delta) / c`` from ``(1 - c)^N <= exp(-N c)``."""
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
    n = check_count("n", n)
    trials = check_count("trials", trials)
    prompts = np.broadcast_to(np.arange(instance.n_prompts)[:, None, None], (instance.n_prompts, trials, n))
    responses = sample_responses(log_probs, prompts, rng)
    hit = instance.optimal_mask[prompts, responses].any(axis=2)
    return hit.mean(axis=1)


@dataclass(frozen=True)
class BestOfNCurves:
    """Exact and Monte Carlo Best-of-N success on one-prompt instances of given coverage.

    Attributes
    ----------
    coverages
        The coverages ``c``, shape ``(n_coverages,)``.
    ns
        The sample sizes ``N``, shape ``(n_ns,)``.
    exact
        ``1 - (1 - c)^N``, shape ``(n_coverages, n_ns)``.
    sampled
        Success frequencies over ``trials`` repetitions, same shape.
    trials
        Monte Carlo repetitions per point.
    """

    coverages: np.ndarray
    ns: np.ndarray
    exact: np.ndarray
    sampled: np.ndarray
    trials: int

    @property
    def standard_error(self) -> np.ndarray:
        """Binomial standard error of each sampled point under the exact success probability."""
        return np.sqrt(self.exact * (1.0 - self.exact) / self.trials)


def coverage_instance(coverage: float, n_responses: int = 10) -> BanditInstance:
    """One prompt with one optimal response of base probability ``coverage`` and equal-mass others."""
    coverage = check_probability("coverage", coverage)
    n_responses = check_count("n_responses", n_responses, minimum=2)
    rewards = np.zeros((1, n_responses))
    rewards[0, 0] = 1.0
    probs = np.full((1, n_responses), (1.0 - coverage) / (n_responses - 1))
    probs[0, 0] = coverage
    return tabular_instance(rewards, probs)


def best_of_n_curves(
    coverages: np.ndarray, ns: np.ndarray, trials: int, rng: np.random.Generator
) -> BestOfNCurves:
    """Best-of-N success against ``N`` for several coverages, exactly and by sampling responses."""
    coverages = np.asarray(coverages, dtype=float)
    ns = np.asarray(ns, dtype=np.int64)
    exact = best_of_n_success(np.log(coverages)[:, None], ns[None, :])
    sampled = np.empty_like(exact)
    for i, coverage in enumerate(coverages):
        instance = coverage_instance(float(coverage))
        log_probs = base_log_policy(instance)
        for j, n in enumerate(ns):
            sampled[i, j] = sampled_best_of_n(instance, log_probs, int(n), trials, rng)[0]
    return BestOfNCurves(coverages=coverages, ns=ns, exact=exact, sampled=sampled, trials=trials)
