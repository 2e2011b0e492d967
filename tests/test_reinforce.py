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
from covpo.algorithms.reinforce import exact_reinforce, leave_one_out_baseline, reinforce, sampled_gradient
from covpo.policies import sample_prompts, sample_responses
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
    trajectory = exact_reinforce(small_instance, eta=0.5, n_iterations=1)
    theta_one = small_instance.base_theta + 0.5 * reward_gradient(small_instance, small_instance.base_theta)
    assert trajectory.reward[1] == pytest.approx(expected_reward(small_instance, log_policy(small_instance, theta_one)))
    assert list(trajectory.gradient_steps) == [0, 1]
    assert trajectory.total_responses == 0


def test_exact_reinforce_improves_reward_and_records_every_kth_step(small_instance):
    trajectory = exact_reinforce(small_instance, eta=1.0, n_iterations=50, record_every=10)
    assert list(trajectory.gradient_steps) == [0, 10, 20, 30, 40, 50]
    assert np.all(np.diff(trajectory.reward) > 0)


@pytest.mark.parametrize("beta", [None, 0.05])
def test_exact_reinforce_on_the_full_instance_agrees_with_the_reduced_engine(beta):
    instance = collapse_instance(0.2, n_zero=5)
    n_steps = 60
    general = exact_reinforce(instance.to_bandit(), eta=2.0, n_iterations=n_steps, beta=0.0 if beta is None else beta)
    reduced = exact_collapse_run(
        instance,
        eta=2.0,
        n_iterations=n_steps,
        beta=beta,
        record_steps=np.arange(n_steps + 1),
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
        weight * sampled_gradient(small_instance, theta, prompts, responses, beta or 0.0, "leave_one_out")
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
        weight * sampled_gradient(small_instance, theta, prompts, responses, 0.0, "batch_mean")
        for weight, prompts, responses in all_batches_of_two(small_instance, theta)
    )
    np.testing.assert_allclose(expected, 0.5 * reward_gradient(small_instance, theta), atol=1e-12)


def test_sampled_reinforce_counts_costs_and_is_reproducible(small_instance):
    settings = {"eta": 0.5, "n_iterations": 20, "batch_size": 4, "record_every": 5}
    first = reinforce(small_instance, rng=np.random.default_rng(3), **settings)
    second = reinforce(small_instance, rng=np.random.default_rng(3), **settings)
    np.testing.assert_array_equal(first.reward, second.reward)
    assert list(first.gradient_steps) == [0, 5, 10, 15, 20]
    assert list(first.responses_sampled) == [0, 20, 40, 60, 80]
    assert list(first.generation_rounds) == [0, 5, 10, 15, 20]


def test_sampled_reinforce_learns_on_average():
    instance = tabular_instance(np.array([[1.0, 0.0, 0.0]]), np.array([[0.2, 0.4, 0.4]]))
    finals = [
        reinforce(
            instance, eta=1.0, n_iterations=30, batch_size=8, rng=np.random.default_rng(seed), record_every=30
        ).reward[-1]
        for seed in range(10)
    ]
    assert np.mean(finals) > 0.5


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"eta": 0.0}, "eta"),
        ({"eta": -1.0}, "eta"),
        ({"eta": float("nan")}, "eta"),
        ({"beta": -0.1}, "beta"),
        ({"beta": None}, "beta"),
        ({"n_iterations": 0}, "n_iterations"),
        ({"record_every": 0}, "record_every"),
    ],
)
def test_exact_reinforce_rejects_bad_arguments(small_instance, arguments, name):
    settings = {"eta": 0.1, "n_iterations": 2, **arguments}
    with pytest.raises(ValueError, match=name):
        exact_reinforce(small_instance, **settings)


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"eta": 0.0}, "eta"),
        ({"beta": -0.1}, "beta"),
        ({"n_iterations": 0}, "n_iterations"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 1}, "batch_size"),
        ({"baseline": "median"}, "baseline"),
        ({"rng": 0}, "rng"),
    ],
)
def test_sampled_reinforce_rejects_bad_arguments(small_instance, arguments, name):
    settings = {"eta": 0.1, "n_iterations": 2, "batch_size": 4, "rng": np.random.default_rng(0), **arguments}
    with pytest.raises(ValueError, match=name):
        reinforce(small_instance, **settings)


def test_beta_zero_is_plain_reinforce_bit_for_bit(small_instance):
    theta = small_instance.base_theta + 0.4
    prompts, responses = np.array([0, 1, 1, 0]), np.array([2, 0, 1, 2])
    np.testing.assert_array_equal(
        sampled_gradient(small_instance, theta, prompts, responses, 0.0),
        sampled_gradient(small_instance, theta, prompts, responses),
    )
    first = exact_reinforce(small_instance, eta=0.5, n_iterations=3)
    theta_one = small_instance.base_theta + 0.5 * reward_gradient(small_instance, small_instance.base_theta)
    assert first.reward[1] == expected_reward(small_instance, log_policy(small_instance, theta_one))


def test_leave_one_out_baseline_is_the_mean_of_the_others():
    values = np.array([[1.0, 2.0, 6.0], [0.0, 0.0, 3.0]])
    np.testing.assert_allclose(leave_one_out_baseline(values), [[4.0, 3.5, 1.5], [1.5, 1.5, 0.0]])
    with pytest.raises(ValueError, match="values"):
        leave_one_out_baseline(np.ones(1))


def one_step_by_hand(instance, theta, eta, batch_size, seed, beta, advantages_of):
    """One sampled REINFORCE step from ``theta``, written out with the draws of ``reinforce`` and ``A = advantages_of(shaped)``."""
    rng = np.random.default_rng(seed)
    log_probs = log_policy(instance, theta)
    prompts = sample_prompts(instance, rng, batch_size)
    responses = sample_responses(log_probs, prompts, rng)
    shaped = instance.rewards[prompts, responses] - beta * (log_probs - base_log_policy(instance))[prompts, responses]
    mean_features = np.einsum("xy,xyd->xd", np.exp(log_probs), instance.features)
    scores = instance.features[prompts, responses] - mean_features[prompts]
    return theta + eta * advantages_of(shaped) @ scores / batch_size, prompts, responses


def test_sampled_reinforce_step_uses_the_tested_gradient_with_its_kl_and_baseline_terms():
    instance = random_softmax_linear_instance(np.random.default_rng(11), 3, 4, 3, base_scale=2.0)
    eta, batch_size, seed, beta = 0.7, 6, 5, 0.4
    start = instance.base_theta + np.random.default_rng(1).normal(size=instance.dim)

    def one_step(beta):
        rng = np.random.default_rng(seed)
        return reinforce(
            instance, eta=eta, n_iterations=1, batch_size=batch_size, rng=rng, beta=beta, theta=start
        ).reward[-1]

    def reward_at(theta):
        return expected_reward(instance, log_policy(instance, theta))

    by_hand, prompts, responses = one_step_by_hand(
        instance, start, eta, batch_size, seed, beta, lambda shaped: shaped - leave_one_out_baseline(shaped)
    )
    tested = start + eta * sampled_gradient(instance, start, prompts, responses, beta)
    np.testing.assert_allclose(by_hand, tested, atol=1e-12)
    assert one_step(beta) == reward_at(tested)
    assert abs(one_step(beta / 2) - reward_at(tested)) > 1e-9
    no_baseline, _, _ = one_step_by_hand(instance, start, eta, batch_size, seed, beta, lambda shaped: shaped)
    assert abs(reward_at(no_baseline) - reward_at(tested)) > 1e-9
