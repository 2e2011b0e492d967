"""Small helpers shared by the unit tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from covpo import BanditInstance, random_softmax_linear_instance

FINITE_DIFFERENCE_STEP = 1e-6


def finite_difference(
    function: Callable[[np.ndarray], float | np.ndarray], theta: np.ndarray, step: float = FINITE_DIFFERENCE_STEP
) -> np.ndarray:
    """Central differences of a scalar or vector function, one column per coordinate of ``theta``.

    For a scalar function this is its gradient, shape ``theta.shape``; for a vector function,
    its Jacobian with the derivative along the last axis.
    """
    columns = []
    for i in range(theta.size):
        shift = np.zeros_like(theta)
        shift[i] = step
        columns.append((np.asarray(function(theta + shift)) - np.asarray(function(theta - shift))) / (2 * step))
    return np.stack(columns, axis=-1)


def small_instance(seed: int = 3) -> BanditInstance:
    """A fixed random realizable instance: 3 prompts, 5 responses, 4 features, rewards in [0, 1]."""
    return random_softmax_linear_instance(np.random.default_rng(seed), 3, 5, 4)


def nonlinear_instance() -> BanditInstance:
    """Two prompts, four responses, three features; the rewards are not linear in the features."""
    rng = np.random.default_rng(11)
    return BanditInstance(
        prompt_probs=np.array([0.4, 0.6]),
        features=rng.standard_normal((2, 4, 3)),
        rewards=rng.random((2, 4)),
        base_theta=rng.standard_normal(3),
    )
