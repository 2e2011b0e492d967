"""Natural policy gradient for softmax-linear policies (paper appendix M)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covpo.instances import BanditInstance
from covpo.algorithms.mirror_descent import apmd, exact_mirror_descent, exact_target_inner_loop
from covpo.algorithms.npg import (
    fisher_information,
    npg,
    npg_direction,
    npg_inner_loop,
    npg_step,
    sampled_npg_direction,
    sampled_npg_inner_loop,
)
from covpo.objectives import reward_gradient
from covpo.policies import expected_kl, log_policy
from covpo.algorithms.squared_loss import (
    kimi_population_gradient,
    kimi_population_hessian,
    mean_baseline_moments,
    rebel_population_minimizer,
)
from tests.helpers import nonlinear_instance, small_instance
from tests.strategies import instances_with_theta


def same_policy(instance: BanditInstance, theta_a: np.ndarray, theta_b: np.ndarray, tol: float = 1e-9) -> None:
    np.testing.assert_allclose(log_policy(instance, theta_a), log_policy(instance, theta_b), atol=tol)


@settings(max_examples=40, deadline=None)
@given(instances_with_theta())
def test_npg_direction_solves_the_fisher_normal_equations(pair):
    instance, theta = pair
    direction = npg_direction(instance, theta)
    fisher = fisher_information(instance, theta)
    gradient = reward_gradient(instance, theta)
    np.testing.assert_allclose(fisher @ direction, gradient, atol=1e-9 * max(1.0, np.abs(gradient).max()))


@settings(max_examples=40, deadline=None)
@given(instances_with_theta(), st.floats(0.05, 5.0))
def test_npg_with_step_one_over_beta_is_exact_mirror_descent_under_linear_rewards(pair, beta):
    instance, theta = pair
    target = theta + instance.reward_theta / beta
    same_policy(instance, npg_step(instance, theta, beta), target, tol=1e-7 * max(1.0, 1.0 / beta))


def test_npg_direction_recovers_theta_star_when_the_fisher_is_nonsingular():
    instance = small_instance()
    theta = instance.base_theta
    assert np.linalg.eigvalsh(fisher_information(instance, theta)).min() > 1e-3
    np.testing.assert_allclose(npg_direction(instance, theta), instance.reward_theta, atol=1e-10)
    shifted = instance.rewards + np.arange(instance.n_prompts)[:, None] * 7.0
    np.testing.assert_allclose(npg_direction(instance, theta, shifted), instance.reward_theta, atol=1e-10)


@pytest.mark.parametrize("beta", [0.2, 1.0, 5.0])
def test_exact_npg_runs_match_exact_mirror_descent_iterate_by_iterate(beta):
    instance = small_instance()
    run = npg(instance, beta, 12)
    exact = exact_mirror_descent(instance, beta, 12)
    np.testing.assert_allclose(run.trajectory.reward, exact.reward, atol=1e-10)
    np.testing.assert_allclose(run.trajectory.log_coverage, exact.log_coverage, atol=1e-8)
    assert run.inner_kl.max() < 1e-12
    assert run.trajectory.total_gradient_steps == 12 and run.trajectory.total_responses == 0
    target_run = apmd(instance, beta, 12, exact_target_inner_loop)
    for theta_npg, theta_target in zip(run.thetas, target_run.thetas):
        same_policy(instance, theta_npg, theta_target)


@pytest.mark.parametrize("instance", [small_instance(), nonlinear_instance()], ids=["linear", "nonlinear"])
@pytest.mark.parametrize("beta", [0.3, 2.0])
def test_npg_step_is_rebels_population_minimizer_for_any_reward(instance, beta):
    theta = instance.base_theta + 0.4
    same_policy(instance, rebel_population_minimizer(instance, theta, beta), npg_step(instance, theta, beta))


@pytest.mark.parametrize("instance", [small_instance(), nonlinear_instance()], ids=["linear", "nonlinear"])
@pytest.mark.parametrize("beta", [0.3, 2.0])
def test_npg_step_is_one_newton_step_on_kimipos_population_loss_from_the_reference(instance, beta):
    theta = instance.base_theta - 0.3
    log_reference = log_policy(instance, theta)
    value = mean_baseline_moments(instance, log_reference).mean
    gradient = kimi_population_gradient(instance, theta, log_reference, beta, value)
    hessian = kimi_population_hessian(instance, theta, log_reference, beta, value)
    newton = theta - np.linalg.pinv(hessian, hermitian=True) @ gradient
    same_policy(instance, newton, npg_step(instance, theta, beta))


def test_npg_on_a_nonlinear_reward_is_not_exact_mirror_descent():
    instance = nonlinear_instance()
    run = npg(instance, 1.0, 3)
    assert run.inner_kl.min() > 1e-6


def test_sampled_npg_direction_converges_to_the_exact_one():
    instance = small_instance()
    theta = instance.base_theta
    errors = []
    for batch_size in (200, 20_000):
        estimates = [
            sampled_npg_direction(instance, theta, np.random.default_rng(seed), batch_size=batch_size, group_size=4)
            for seed in range(4)
        ]
        errors.append(np.mean([np.linalg.norm(e - instance.reward_theta) for e in estimates]))
    assert errors[1] < 0.3 * errors[0]
    assert errors[1] < 0.1 * np.linalg.norm(instance.reward_theta)


def test_sampled_npg_runs_count_responses_and_reproduce_bit_for_bit():
    instance = small_instance()
    first = npg(instance, 1.0, 5, batch_size=64, group_size=3, rng=np.random.default_rng(2))
    second = npg(instance, 1.0, 5, batch_size=64, group_size=3, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(first.thetas, second.thetas)
    assert first.trajectory.total_responses == 64 * 3 * 5
    assert first.trajectory.total_gradient_steps == 5
    assert first.trajectory.algorithm == "NPG (sampled)"
    large = npg(instance, 1.0, 5, batch_size=20_000, group_size=4, rng=np.random.default_rng(0))
    assert large.inner_kl.max() < 1e-3
    assert large.trajectory.suboptimality[-1] < large.trajectory.suboptimality[0]


def test_npg_inner_loops_plug_into_apmd():
    instance = small_instance()
    exact = apmd(instance, 0.5, 2, npg_inner_loop)
    assert exact.trajectory.settings["inner_loop"] == "npg_inner_loop"
    sampled = apmd(instance, 0.5, 2, sampled_npg_inner_loop(32, 2), rng=np.random.default_rng(0))
    assert sampled.trajectory.settings["batch_size"] == 32
    assert expected_kl(instance, log_policy(instance, sampled.thetas[-1]), log_policy(instance, exact.thetas[-1])) < 1.0


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: npg_step(small_instance(), np.zeros(4), 0.0), "beta"),
        (lambda: npg_direction(small_instance(), np.zeros(4), np.zeros((3, 4))), "advantages"),
        (
            lambda: sampled_npg_direction(
                small_instance(), np.zeros(4), np.random.default_rng(0), batch_size=4, group_size=1
            ),
            "group_size",
        ),
        (lambda: sampled_npg_inner_loop(0), "batch_size"),
        (lambda: npg(small_instance(), 1.0, 2, batch_size=8), "rng"),
        (lambda: npg(small_instance(), 1.0, 0), "n_iterations"),
    ],
)
def test_bad_arguments_raise_value_errors_that_name_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()
