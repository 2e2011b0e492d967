"""Hypothesis strategies for random bandit instances and parameters."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from covpo import BanditInstance, random_softmax_linear_instance


@st.composite
def softmax_linear_instances(draw: st.DrawFn, max_prompts: int = 4, max_responses: int = 6, max_dim: int = 5) -> BanditInstance:
    """A random realizable softmax-linear instance, built from a drawn seed."""
    seed = draw(st.integers(0, 2**32 - 1))
    n_prompts = draw(st.integers(1, max_prompts))
    n_responses = draw(st.integers(2, max_responses))
    dim = draw(st.integers(1, max_dim))
    base_scale = draw(st.floats(0.1, 4.0))
    return random_softmax_linear_instance(np.random.default_rng(seed), n_prompts, n_responses, dim, base_scale=base_scale)


@st.composite
def instances_with_theta(draw: st.DrawFn) -> tuple[BanditInstance, np.ndarray]:
    """An instance together with a parameter vector of matching dimension."""
    instance = draw(softmax_linear_instances())
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.floats(0.0, 3.0))
    theta = scale * np.random.default_rng(seed).standard_normal(instance.dim)
    return instance, theta
