"""Small helpers shared by the unit tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from covpo import BanditInstance, random_softmax_linear_instance

FINITE_DIFFERENCE_STEP = 1e-6


def finite_difference(function: Callable[[np.ndarray], float], theta: np.ndarray, step: float = FINITE_DIFFERENCE_STEP) -> np.ndarray:
    """Central finite-difference gradient of a scalar function of ``theta``."""
    gradient = np.zeros_like(theta)
    for i in range(theta.size):
        shift = np.zeros_like(theta)
        shift[i] = step
        gradient[i] = (function(theta + shift) - function(theta - shift)) / (2 * step)
    return gradient


def small_instance(seed: int = 3) -> BanditInstance:
    """A fixed random realizable instance: 3 prompts, 5 responses, 4 features, rewards in [0, 1]."""
    return random_softmax_linear_instance(np.random.default_rng(seed), 3, 5, 4)
