"""The two instance families the sweeps of chapters 4 to 6 run on, each with the base model's coverage as its dial.

- :func:`random_family`: random realizable softmax-linear instances of shape
  :data:`RANDOM_SHAPE`, one per ``C_cov`` of :data:`RANDOM_COVERAGES`, differing only in how
  far the base model is tilted away from the reward;
- :func:`collapse_family`: :func:`stacked_collapse_instance`, several tabular copies of the
  coverage-collapse bandit (our instance of paper section 2.1), one per ``C_cov`` of
  :data:`COLLAPSE_COVERAGES`.

Every instance, constant and seed here is ours; the paper's are not reproduced.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from covpo.collapse_instance import collapse_instance
from covpo.coverage_instances import dialled_coverage_instance
from covpo.instances import BanditInstance, check_feature_memory, tabular_instance
from covpo.validation import check_count, check_finite_array, check_positive, check_probability

RANDOM_COVERAGES = (5.0, 10.0, 20.0, 50.0, 100.0)
"""``C_cov`` of the random dialled instances of chapter 4."""
COLLAPSE_COVERAGES = (10.0, 20.0, 40.0, 80.0, 160.0)
"""``C_cov`` of the stacked collapse instances of chapter 4."""
RANDOM_SHAPE = (50, 8, 6)
"""Prompts, responses per prompt and feature dimension of the random dialled instances."""
COLLAPSE_PROMPTS, COLLAPSE_GAP, COLLAPSE_N_ZERO = 4, 0.2, 100
"""Prompts, distractor gap and zero-reward block size of the stacked collapse instances."""
DISTRACTOR_RATIO = 2.0
"""Default base probability of the distractor over that of the optimal response."""


def stacked_collapse_instance(
    n_prompts: int,
    gap: float,
    coverage: float,
    *,
    distractor_ratio: float = DISTRACTOR_RATIO,
    n_zero: int = 100,
) -> BanditInstance:
    """``n_prompts`` tabular copies of the coverage-collapse bandit (our instance of paper section 2.1), one per prompt.

    Every prompt has an optimal response (reward 1), a distractor (reward ``1 - gap``) and
    ``n_zero`` zero-reward responses; the base model gives the optimal response probability
    ``1 / coverage`` and the distractor ``distractor_ratio`` times as much. Prompts are
    uniform and each has its own one-hot features (``d = n_prompts (n_zero + 2)``), so
    ``C_cov = coverage`` exactly and the reward is linear (realizable).

    Parameters
    ----------
    n_prompts
        Number of prompts, ``>= 1``.
    gap
        The distractor's reward gap, in ``(0, 1)``.
    coverage
        The coverage coefficient ``C_cov = 1 / c_0``; ``(1 + distractor_ratio) / coverage`` must be below 1.
    distractor_ratio
        Base probability of the distractor over that of the optimal response (collapse needs it above 1).
    n_zero
        Size of each prompt's zero-reward block.
    """
    n_prompts = check_count("n_prompts", n_prompts)
    gap = check_probability("gap", gap)
    coverage = check_positive("coverage", coverage)
    distractor_ratio = check_positive("distractor_ratio", distractor_ratio)
    n_zero = check_count("n_zero", n_zero)
    if (1.0 + distractor_ratio) / coverage >= 1.0:
        raise ValueError(
            "coverage must exceed 1 + distractor_ratio to leave base mass for the zero-reward block, "
            f"got coverage={coverage!r} and distractor_ratio={distractor_ratio!r}"
        )
    n_responses = n_zero + 2
    check_feature_memory(
        n_prompts,
        n_responses,
        n_prompts * n_responses,
        f"n_prompts={n_prompts} and n_zero={n_zero} (one-hot features)",
        "use fewer prompts or a smaller n_zero, or the reduced three-class collapse_instance",
    )
    optimal_prob = 1.0 / coverage
    one = collapse_instance(
        gap, optimal_prob=optimal_prob, distractor_prob=distractor_ratio * optimal_prob, n_zero=n_zero
    ).to_bandit()
    rewards = np.repeat(one.rewards, n_prompts, axis=0)
    base_probs = np.repeat(np.exp(one.base_theta)[None, :], n_prompts, axis=0)
    return tabular_instance(rewards, base_probs)


def random_family(coverages: Sequence[float] = RANDOM_COVERAGES, seed: int = 0) -> list[BanditInstance]:
    """Random realizable softmax-linear instances of shape :data:`RANDOM_SHAPE`, one per ``C_cov``.

    :func:`~covpo.coverage_instances.dialled_coverage_instance` with a fresh
    ``np.random.default_rng(seed)`` for each, so all share features, rewards and the random
    part of the base model, and differ only in how far the base model is tilted away from the reward.
    Every coverage must exceed 1; ``seed`` is a non-negative integer.
    """
    targets = _check_coverages(coverages, 1.0)
    seed = check_count("seed", seed, minimum=0)
    return [dialled_coverage_instance(np.random.default_rng(seed), *RANDOM_SHAPE, float(c)) for c in targets]


def collapse_family(coverages: Sequence[float] = COLLAPSE_COVERAGES) -> list[BanditInstance]:
    """Stacked collapse instances (:func:`stacked_collapse_instance`), one per ``C_cov``; every coverage must exceed 3.

    The optimal response and the distractor (twice as likely) take ``3 / C_cov`` of the base mass.
    """
    targets = _check_coverages(coverages, 1.0 + DISTRACTOR_RATIO)
    return [
        stacked_collapse_instance(COLLAPSE_PROMPTS, COLLAPSE_GAP, float(c), n_zero=COLLAPSE_N_ZERO) for c in targets
    ]


def _check_coverages(coverages: Sequence[float], lower: float) -> np.ndarray:
    """A non-empty one-dimensional grid of finite coverages, each above ``lower``."""
    targets = check_finite_array("coverages", coverages, ndim=1)
    if targets.size == 0:
        raise ValueError("coverages must hold at least one value, got an empty sequence")
    if np.any(targets <= lower):
        raise ValueError(f"coverages must all exceed {lower:g}, got {targets[targets <= lower][0]!r}")
    return targets
