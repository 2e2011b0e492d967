"""Softmax-linear policies in log space (paper sections 1.3 and 2.2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_softmax

from covpo import tabular_instance
from covpo.policies import (
    base_log_policy,
    coverage_coefficient,
    expected_kl,
    expected_reward,
    kl_per_prompt,
    log_coverage,
    log_policy,
    sample_prompts,
    sample_responses,
)
from tests.strategies import instances_with_theta


@settings(max_examples=50, deadline=None)
@given(instances_with_theta())
def test_log_policy_is_normalized_softmax_of_linear_scores(pair):
    instance, theta = pair
    expected = log_softmax(instance.features @ theta, axis=1)
    np.testing.assert_allclose(log_policy(instance, theta), expected, atol=1e-12)
    np.testing.assert_allclose(np.exp(log_policy(instance, theta)).sum(axis=1), 1.0)


@settings(max_examples=50, deadline=None)
@given(instances_with_theta())
def test_kl_is_nonnegative_and_zero_only_at_equality(pair):
    instance, theta = pair
    base = base_log_policy(instance)
    policy = log_policy(instance, theta + instance.base_theta)
    assert expected_kl(instance, policy, base) >= 0.0
    assert expected_kl(instance, base, base) == 0.0
    if not np.allclose(np.exp(policy), np.exp(base), atol=1e-6):
        assert expected_kl(instance, policy, base) > 0.0


def test_kl_matches_definition_and_handles_zero_probabilities():
    with np.errstate(divide="ignore"):
        p = np.log(np.array([[0.5, 0.5, 0.0]]))
    q = np.log(np.array([[0.25, 0.25, 0.5]]))
    assert kl_per_prompt(p, q)[0] == pytest.approx(np.log(2.0))
    assert kl_per_prompt(q, p)[0] == np.inf


def test_log_coverage_is_exact_below_1e300():
    """An optimal response with logit 800 below the rest has coverage e^-800 (about 1e-348)."""
    rewards = np.array([[1.0, 0.0, 0.0]])
    instance = tabular_instance(rewards, np.full((1, 3), 1 / 3))
    theta = np.array([0.0, 800.0, 800.0])
    coverage = log_coverage(instance, log_policy(instance, theta))
    assert coverage[0] == pytest.approx(-800.0 - np.log(2.0), rel=1e-12)
    assert np.exp(coverage[0]) == 0.0
    assert coverage_coefficient(instance, log_policy(instance, theta)) == np.inf


def test_coverage_sums_over_every_optimal_response():
    rewards = np.array([[1.0, 1.0, 0.0, 0.5]])
    probs = np.array([[0.1, 0.2, 0.3, 0.4]])
    instance = tabular_instance(rewards, probs)
    assert np.exp(log_coverage(instance, base_log_policy(instance)))[0] == pytest.approx(0.3)
    assert coverage_coefficient(instance, base_log_policy(instance)) == pytest.approx(1 / 0.3)
    assert expected_reward(instance, base_log_policy(instance)) == pytest.approx(0.1 + 0.2 + 0.2)
    assert instance.optimal_value == 1.0


def test_sampling_matches_the_policy():
    probs = np.array([[0.7, 0.2, 0.1], [0.05, 0.05, 0.9]])
    rng = np.random.default_rng(11)
    prompts = np.repeat([0, 1], 200_000)
    draws = sample_responses(np.log(probs), prompts, rng)
    for x in (0, 1):
        frequencies = np.bincount(draws[prompts == x], minlength=3) / 200_000
        np.testing.assert_allclose(frequencies, probs[x], atol=4 * np.sqrt(0.25 / 200_000))


@given(st.integers(0, 2**32 - 1))
def test_sampling_is_reproducible_from_the_seed(seed):
    log_probs = np.log(np.array([[0.3, 0.3, 0.4]]))
    prompts = np.zeros(50, dtype=int)
    first = sample_responses(log_probs, prompts, np.random.default_rng(seed))
    second = sample_responses(log_probs, prompts, np.random.default_rng(seed))
    np.testing.assert_array_equal(first, second)
    assert first.min() >= 0 and first.max() <= 2


def test_sample_prompts_follows_rho():
    instance = tabular_instance(np.eye(3), np.full((3, 3), 1 / 3), prompt_probs=np.array([0.6, 0.3, 0.1]))
    prompts = sample_prompts(instance, np.random.default_rng(0), 100_000)
    np.testing.assert_allclose(np.bincount(prompts) / 100_000, [0.6, 0.3, 0.1], atol=0.01)
