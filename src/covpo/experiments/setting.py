"""Chapter 1's study of Best-of-N: its success against ``n`` at several coverages, exactly and by sampling (paper section 1.3).

:func:`coverage_instance` builds a one-prompt bandit whose base model has a given coverage;
:func:`best_of_n_curves` sets the exact success ``1 - (1 - c)^n``
(:func:`covpo.algorithms.best_of_n.best_of_n_success`) beside Monte Carlo frequencies
(:func:`covpo.algorithms.best_of_n.sampled_best_of_n`) in a :class:`BestOfNCurves` record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo.algorithms.best_of_n import best_of_n_success, sampled_best_of_n
from covpo.instances import BanditInstance, tabular_instance
from covpo.policies import base_log_policy
from covpo.validation import check_count, check_generator, check_positive_grid, check_probability


@dataclass(frozen=True)
class BestOfNCurves:
    """Exact and Monte Carlo Best-of-N success on one-prompt instances of given coverage.

    Attributes
    ----------
    coverages
        The coverages ``c``, shape ``(n_coverages,)``.
    ns
        The sample sizes ``n``, shape ``(n_ns,)``.
    exact
        ``1 - (1 - c)^n``, shape ``(n_coverages, n_ns)``.
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
    """Best-of-N success against ``n`` for several coverages, exactly and by sampling responses (paper section 1.3).

    Parameters
    ----------
    coverages
        Base coverages ``c``, each strictly between 0 and 1, at least one.
    ns
        Sample sizes ``n``, integers ``>= 1``, at least one.
    trials
        Monte Carlo repetitions per point, ``>= 1``.
    rng
        The numpy ``Generator`` the sampled points draw from.
    """
    coverages = check_positive_grid("coverages", coverages)
    coverages = np.array([check_probability("coverages", coverage) for coverage in coverages])
    ns = check_positive_grid("ns", ns, integers=True)
    trials = check_count("trials", trials)
    rng = check_generator("rng", rng)
    exact = best_of_n_success(np.log(coverages)[:, None], ns[None, :])
    sampled = np.empty_like(exact)
    for i, coverage in enumerate(coverages):
        instance = coverage_instance(float(coverage))
        log_probs = base_log_policy(instance)
        for j, n in enumerate(ns):
            sampled[i, j] = sampled_best_of_n(instance, log_probs, int(n), trials, rng)[0]
    return BestOfNCurves(coverages=coverages, ns=ns, exact=exact, sampled=sampled, trials=trials)
