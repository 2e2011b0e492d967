"""Rates over seeds: how often a sampled result holds, with a binomial interval.

The book reports a sampled result over the first ``S`` seeds as a count ("52 of 60 cells") and,
where two rates are compared, with the Wilson score interval of the proportion
(:func:`wilson_rate`), which keeps its coverage near the nominal level for the small counts and
the proportions near 0 or 1 that seed studies produce, where the normal approximation fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from covpo.validation import check_count, check_probability


@dataclass(frozen=True)
class Rate:
    """``successes`` of ``trials``, with the Wilson interval ``[low, high]`` at ``level``."""

    successes: int
    trials: int
    low: float
    high: float
    level: float

    @property
    def fraction(self) -> float:
        """``successes / trials``."""
        return self.successes / self.trials

    def text(self) -> str:
        """E.g. ``"52 of 60 (95% interval 76-93%)"``."""
        return (
            f"{self.successes} of {self.trials} "
            f"({self.level:.0%} interval {100 * self.low:.0f}-{100 * self.high:.0f}%)"
        )


def wilson_rate(successes: int, trials: int, level: float = 0.95) -> Rate:
    """The rate ``successes / trials`` with its Wilson score interval.

    Parameters
    ----------
    successes
        How many trials had the outcome (``0 <= successes <= trials``).
    trials
        How many trials there were (at least one).
    level
        The interval's confidence level, in (0, 1).

    Returns
    -------
    Rate
    """
    trials = check_count("trials", trials)
    successes = check_count("successes", successes, minimum=0)
    if successes > trials:
        raise ValueError(f"successes must be at most trials ({trials}), got {successes}")
    level = check_probability("level", level)
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    interval = binomtest(successes, trials).proportion_ci(confidence_level=level, method="wilson")
    return Rate(successes, trials, float(interval.low), float(interval.high), level)


def rate_of(outcomes: object, level: float = 0.95) -> Rate:
    """The rate of ``True`` among a boolean array of outcomes (every entry one trial)."""
    array = np.asarray(outcomes)
    if array.dtype != bool or array.size == 0:
        raise ValueError(f"outcomes must be a non-empty boolean array, got {outcomes!r}")
    return wilson_rate(int(array.sum()), int(array.size), level)
