"""What the instance constructors guarantee by construction (covpo.instances, paper section 2.2).

These properties hold for every seed, so the chapters do not check them beside their claims.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covpo import random_softmax_linear_instance, tabular_instance
from covpo.families import collapse_family, random_family
from covpo.policies import base_log_policy, coverage_coefficient, log_coverage


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(3, 8), st.integers(2, 6))
def test_random_instance_reward_is_linear_in_the_features_and_spans_zero_to_one(seed, n_prompts, n_responses, dim):
    # (with one feature or two responses every score of a prompt can tie, and the reward is then 0)
    instance = random_softmax_linear_instance(np.random.default_rng(seed), n_prompts, n_responses, dim, base_scale=2.0)
    residual = instance.rewards - instance.features @ instance.reward_theta
    np.testing.assert_allclose(residual, residual[:, :1] * np.ones_like(residual), atol=1e-12)
    assert instance.rewards.min() == pytest.approx(0.0, abs=1e-12)
    assert instance.rewards.max() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(np.linalg.norm(instance.features, axis=2), 1.0, rtol=1e-12)


def test_coverage_coefficient_is_the_mean_inverse_coverage_under_rho():
    instance = random_softmax_linear_instance(np.random.default_rng(7), 3, 6, 4, base_scale=2.0)
    base = base_log_policy(instance)
    coverage = np.exp(log_coverage(instance, base))
    assert coverage_coefficient(instance, base) == pytest.approx(instance.prompt_probs @ (1 / coverage), rel=1e-12)


def test_a_tabular_instance_gives_back_its_base_probabilities():
    table = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    rewards = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(np.exp(base_log_policy(tabular_instance(rewards, table))), table, rtol=1e-12)


def test_the_families_features_have_unit_norm():
    for instance in (*collapse_family((40.0,)), *random_family((20.0,))):
        np.testing.assert_allclose(np.sum(instance.features**2, axis=-1), 1.0, rtol=1e-12)
