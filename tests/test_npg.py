"""Natural policy gradient for softmax-linear policies (paper appendix M)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covpo.algorithms.mirror_descent import apmd_exact, exact_mirror_descent
from covpo.algorithms.npg import (
    fisher_information,
    npg,
    npg_direction,
    npg_step,
    sampled_npg_direction,
)
from covpo.instances import BanditInstance
from covpo.objectives import regularized_optimum, reward_gradient
from covpo.policies import expected_kl, log_policy
from covpo.experiments.population import (
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
    run = npg(instance, beta=beta, n_iterations=12)
    exact = exact_mirror_descent(instance, beta=beta, n_iterations=12)
    np.testing.assert_allclose(run.reward, exact.reward, atol=1e-10)
    np.testing.assert_allclose(run.log_coverage, exact.log_coverage, atol=1e-8)
    assert run.inner_kl.max() < 1e-12
    assert run.total_gradient_steps == 12 and run.total_responses == 0
    assert list(run.reference_resets) == list(range(13)) and run.total_generation_rounds == 0
    target_run = apmd_exact(instance, beta=beta, n_iterations=12)
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
    run = npg(instance, beta=1.0, n_iterations=3)
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


@pytest.mark.same_on_every_cpu
def test_sampled_npg_runs_count_responses_and_reproduce_bit_for_bit():
    instance = small_instance()
    first = npg(instance, beta=1.0, n_iterations=5, batch_size=64, group_size=3, rng=np.random.default_rng(2))
    second = npg(instance, beta=1.0, n_iterations=5, batch_size=64, group_size=3, rng=np.random.default_rng(2))
    np.testing.assert_array_equal(first.thetas, second.thetas)
    assert first.total_responses == 64 * 3 * 5
    assert first.total_gradient_steps == 5
    assert first.total_generation_rounds == 5
    assert first.algorithm == "NPG (sampled)"
    large = npg(instance, beta=1.0, n_iterations=5, batch_size=20_000, group_size=4, rng=np.random.default_rng(0))
    assert large.inner_kl.max() < 1e-3
    assert large.suboptimality[-1] < large.suboptimality[0]


def test_sampled_npg_settles_near_exact_npg():
    instance = small_instance()
    exact = npg(instance, beta=0.5, n_iterations=2)
    assert exact.algorithm == "NPG (exact)"
    sampled = npg(instance, beta=0.5, n_iterations=2, batch_size=32, group_size=2, rng=np.random.default_rng(0))
    assert sampled.settings["batch_size"] == 32
    assert expected_kl(instance, log_policy(instance, sampled.thetas[-1]), log_policy(instance, exact.thetas[-1])) < 1.0


# ---------------------------------------------------------------------------------------
# Mutation checks: each outer iteration is one reset and one step of the tested direction


@pytest.mark.parametrize("instance", [small_instance(), nonlinear_instance()], ids=["linear", "nonlinear"])
def test_exact_npg_iterations_are_npg_steps(instance):
    beta = 0.7
    run = npg(instance, beta=beta, n_iterations=3)
    theta = np.array(instance.base_theta, dtype=float)
    for t in range(3):
        np.testing.assert_array_equal(run.thetas[t], theta)
        target = regularized_optimum(instance, log_policy(instance, theta), beta)
        theta = npg_step(instance, theta, beta)
        assert run.inner_kl[t] == expected_kl(instance, log_policy(instance, theta), target)
    np.testing.assert_array_equal(run.thetas[-1], theta)
    halved = npg_step(instance, run.thetas[-2], 2 * beta)
    assert np.max(np.abs(run.thetas[-1] - halved)) > 1e-6


def test_sampled_npg_iterations_are_steps_of_the_sampled_direction():
    instance = nonlinear_instance()
    beta = 0.7
    run = npg(instance, beta=beta, n_iterations=2, batch_size=16, group_size=3, rng=np.random.default_rng(5))
    rng = np.random.default_rng(5)
    theta = np.array(instance.base_theta, dtype=float)
    for _ in range(2):
        theta = theta + sampled_npg_direction(instance, theta, rng, batch_size=16, group_size=3) / beta
    np.testing.assert_array_equal(run.thetas[-1], theta)


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
        (lambda: npg(small_instance(), beta=1.0, n_iterations=2, batch_size=0, rng=np.random.default_rng(0)),
         "batch_size"),
        (lambda: npg(small_instance(), beta=1.0, n_iterations=2, batch_size=8, group_size=1,
                     rng=np.random.default_rng(0)), "group_size"),
        (lambda: npg(small_instance(), beta=1.0, n_iterations=2, batch_size=8), "rng"),
        (lambda: npg(small_instance(), beta=1.0, n_iterations=0), "n_iterations"),
        (lambda: npg(small_instance(), beta=0.0, n_iterations=2), "beta"),
    ],
)
def test_bad_arguments_raise_value_errors_that_name_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()
