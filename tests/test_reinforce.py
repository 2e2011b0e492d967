"""Tests for exact and sampled REINFORCE on general softmax-linear instances (paper section 2.1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from covpo.experiments.collapse import collapse_instance, exact_collapse_run
from covpo.instances import random_softmax_linear_instance, tabular_instance
from covpo.objectives import (
    regularized_gradient,
    regularized_objective,
    reward_gradient,
)
from covpo.policies import base_log_policy, expected_reward, log_policy
from covpo.algorithms.reinforce import exact_reinforce, sampled_gradient, sampled_reinforce
from tests.helpers import finite_difference


@pytest.fixture
def small_instance():
    return random_softmax_linear_instance(np.random.default_rng(7), n_prompts=2, n_responses=3, dim=4)


@pytest.mark.parametrize("beta", [None, 0.3])
def test_population_gradient_matches_finite_differences(small_instance, beta):
    instance = small_instance
    theta = instance.base_theta + np.random.default_rng(1).normal(size=instance.dim)
    log_base = base_log_policy(instance)
    if beta is None:
        analytic = reward_gradient(instance, theta)
        numeric = finite_difference(lambda t: expected_reward(instance, log_policy(instance, t)), theta)
    else:
        analytic = regularized_gradient(instance, theta, log_base, beta)
        numeric = finite_difference(
            lambda t: regularized_objective(instance, log_policy(instance, t), log_base, beta), theta
        )
    np.testing.assert_allclose(analytic, numeric, atol=1e-8)


def test_exact_reinforce_takes_the_population_step(small_instance):
    trajectory = exact_reinforce(small_instance, eta=0.5, n_steps=1)
    theta_one = small_instance.base_theta + 0.5 * reward_gradient(small_instance, small_instance.base_theta)
    assert trajectory.reward[1] == pytest.approx(expected_reward(small_instance, log_policy(small_instance, theta_one)))
    assert list(trajectory.gradient_steps) == [0, 1]
    assert trajectory.total_responses == 0


def test_exact_reinforce_improves_reward_and_records_every_kth_step(small_instance):
    trajectory = exact_reinforce(small_instance, eta=1.0, n_steps=50, record_every=10)
    assert list(trajectory.gradient_steps) == [0, 10, 20, 30, 40, 50]
    assert np.all(np.diff(trajectory.reward) > 0)


@pytest.mark.parametrize("beta", [None, 0.05])
def test_exact_reinforce_on_the_full_instance_agrees_with_the_reduced_engine(beta):
    instance = collapse_instance(0.2, n_zero=5)
    n_steps = 60
    general = exact_reinforce(instance.to_bandit(), eta=2.0, n_steps=n_steps, beta=beta)
    reduced = exact_collapse_run(
        instance, eta=2.0, max_steps=n_steps, beta=beta, record_steps=np.arange(n_steps + 1)
    ).trajectory
    np.testing.assert_array_equal(general.gradient_steps, reduced.gradient_steps)
    np.testing.assert_allclose(general.reward, reduced.reward, atol=1e-10)
    np.testing.assert_allclose(general.log_coverage, reduced.log_coverage, atol=1e-10)
    np.testing.assert_allclose(general.kl_to_base, reduced.kl_to_base, atol=1e-10)


def all_batches_of_two(instance, theta):
    """Every batch of two ``(x, y)`` pairs from ``rho x pi_theta`` with its probability."""
    probs = instance.prompt_probs[:, None] * np.exp(log_policy(instance, theta))
    pairs = list(itertools.product(range(instance.n_prompts), range(instance.n_responses)))
    for first, second in itertools.product(pairs, pairs):
        weight = probs[first] * probs[second]
        yield weight, np.array([first[0], second[0]]), np.array([first[1], second[1]])


@pytest.mark.parametrize("beta", [None, 0.2])
def test_leave_one_out_estimate_is_unbiased_exactly(small_instance, beta):
    theta = small_instance.base_theta + 0.3
    expected = sum(
        weight * sampled_gradient(small_instance, theta, prompts, responses, beta, "leave_one_out")
        for weight, prompts, responses in all_batches_of_two(small_instance, theta)
    )
    if beta is None:
        target = reward_gradient(small_instance, theta)
    else:
        target = regularized_gradient(small_instance, theta, base_log_policy(small_instance), beta)
    np.testing.assert_allclose(expected, target, atol=1e-12)


def test_batch_mean_estimate_is_shrunk_by_one_minus_one_over_batch(small_instance):
    theta = small_instance.base_theta
    expected = sum(
        weight * sampled_gradient(small_instance, theta, prompts, responses, None, "batch_mean")
        for weight, prompts, responses in all_batches_of_two(small_instance, theta)
    )
    np.testing.assert_allclose(expected, 0.5 * reward_gradient(small_instance, theta), atol=1e-12)


def test_sampled_reinforce_counts_costs_and_is_reproducible(small_instance):
    first = sampled_reinforce(small_instance, 0.5, 20, 4, np.random.default_rng(3), record_every=5)
    second = sampled_reinforce(small_instance, 0.5, 20, 4, np.random.default_rng(3), record_every=5)
    np.testing.assert_array_equal(first.reward, second.reward)
    assert list(first.gradient_steps) == [0, 5, 10, 15, 20]
    assert list(first.responses_sampled) == [0, 20, 40, 60, 80]


def test_sampled_reinforce_learns_on_average():
    instance = tabular_instance(np.array([[1.0, 0.0, 0.0]]), np.array([[0.2, 0.4, 0.4]]))
    finals = [
        sampled_reinforce(instance, 1.0, 30, 8, np.random.default_rng(seed), record_every=30).reward[-1]
        for seed in range(10)
    ]
    assert np.mean(finals) > 0.5


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"eta": 0.0}, "eta"),
        ({"eta": -1.0}, "eta"),
        ({"eta": float("nan")}, "eta"),
        ({"beta": 0.0}, "beta"),
        ({"beta": -0.1}, "beta"),
        ({"n_steps": 0}, "n_steps"),
        ({"record_every": 0}, "record_every"),
    ],
)
def test_exact_reinforce_rejects_bad_arguments(small_instance, arguments, name):
    settings = {"eta": 0.1, "n_steps": 2, **arguments}
    with pytest.raises(ValueError, match=name):
        exact_reinforce(small_instance, **settings)


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"eta": 0.0}, "eta"),
        ({"beta": 0.0}, "beta"),
        ({"n_steps": 0}, "n_steps"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 1}, "batch_size"),
        ({"baseline": "median"}, "baseline"),
    ],
)
def test_sampled_reinforce_rejects_bad_arguments(small_instance, arguments, name):
    settings = {"eta": 0.1, "n_steps": 2, "batch_size": 4, "rng": np.random.default_rng(0), **arguments}
    with pytest.raises(ValueError, match=name):
        sampled_reinforce(small_instance, **settings)
