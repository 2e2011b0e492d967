"""Paired comparisons over seeds: the sign-test interval for the median paired difference.

Two arms run on the same seeds (same base model, prompts and random stream within a seed) give
one difference per seed. Without assuming a distribution, the order statistics of ``n``
differences bracket their median: ``[d_(k), d_(n+1-k)]`` covers it with probability
``1 - 2 P(Bin(n, 1/2) <= k - 1)``, the interval that inverts the sign test. With 6 seeds the
widest such interval, from the smallest to the largest difference, has level ``1 - 2/64``
(about 97%); with 16, ``[d_(4), d_(13)]`` has about 98%. A claim that one arm beats another is
made only where this interval excludes zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from math import comb

import numpy as np

from covpo.validation import check_finite_array, check_probability


@dataclass(frozen=True)
class PairedInterval:
    """Median paired difference ``a - b`` over seeds and its sign-test interval ``[low, high]`` at ``level``."""

    differences: np.ndarray
    median: float
    low: float
    high: float
    level: float

    @property
    def summary(self) -> str:
        """``median [low, high]`` to two decimals with their signs, kept where a value rounds to zero (``-0.00`` is below zero)."""
        return f"{self.median:+.2f} [{self.low:+.2f}, {self.high:+.2f}]"

    @property
    def verdict(self) -> int:
        """``+1`` if the interval lies above zero, ``-1`` if below, ``0`` if it contains zero (the study cannot tell)."""
        return 1 if self.low > 0 else -1 if self.high < 0 else 0


def sign_test_interval(differences, level: float = 0.95) -> PairedInterval:
    """The narrowest order-statistic interval for the median of ``differences`` with coverage at least ``level``.

    Raises ``ValueError`` when there are too few differences for any interval to reach ``level``
    (fewer than 6 at 95%).
    """
    values = np.sort(check_finite_array("differences", differences, ndim=1))
    level = check_probability("level", level)
    n = len(values)
    # P(Bin(n, 1/2) <= k - 1) for k = 1 .. n // 2, counted exactly: subsets of at most k - 1 of n items over 2**n
    coverage = [1 - 2 * subsets / 2**n for subsets in accumulate(comb(n, i) for i in range(n // 2))]
    enough = [k for k, value in zip(range(1, n // 2 + 1), coverage) if value >= level]
    if not enough:
        raise ValueError(f"differences must have enough values for a {level:.0%} interval, got {n}")
    k = max(enough)
    return PairedInterval(values, float(np.median(values)), float(values[k - 1]), float(values[n - k]),
                          float(coverage[k - 1]))
