"""Exact policy mirror descent and APMD with exact targets or exact gradient steps (paper section 3.1, appendices B.3, B.4.1, C.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covpo import BanditInstance, random_softmax_linear_instance, tabular_instance
from covpo import run
from covpo.algorithms.mirror_descent import (
    apmd,
    apmd_exact,
    exact_mirror_descent,
    exact_target_theta,
    mirror_descent_bound,
    mirror_descent_policy,
)
from covpo.experiments.mirror_descent import mirror_descent_rate
from covpo.objectives import regularized_gradient, regularized_optimum
from covpo.policies import (
    base_log_policy,
    expected_kl,
    expected_reward,
    log_policy,
)
from tests.strategies import softmax_linear_instances

betas = st.floats(0.05, 5.0)

instances = softmax_linear_instances()


def small_instance(seed: int = 0):
    """A fixed random realizable instance: 3 prompts, 5 responses, 4 features."""
    return random_softmax_linear_instance(np.random.default_rng(seed), 3, 5, 4, base_scale=1.0)


def nonlinear_instance():
    """One prompt, three responses, two features; the rewards are not linear in the features."""
    return BanditInstance(
        prompt_probs=np.ones(1),
        features=np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]),
        rewards=np.array([[1.0, 0.0, 0.2]]),
        base_theta=np.zeros(2),
        reward_theta=np.array([1.0, 0.0]),
    )


@settings(max_examples=40, deadline=None)
@given(instances, betas, st.integers(1, 30))
def test_exact_mirror_descent_never_lowers_coverage(instance, beta, n_iterations):
    coverage = exact_mirror_descent(instance, beta=beta, n_iterations=n_iterations).log_coverage
    assert np.all(np.diff(coverage, axis=0) >= -1e-12)


@settings(max_examples=30, deadline=None)
@given(instances, betas, st.integers(1, 20))
def test_closed_form_equals_iterated_update(instance, beta, n_iterations):
    log_probs = base_log_policy(instance)
    for t in range(1, n_iterations + 1):
        log_probs = regularized_optimum(instance, log_probs, beta)
        np.testing.assert_allclose(mirror_descent_policy(instance, beta, t), log_probs, atol=1e-9)
    trajectory = exact_mirror_descent(instance, beta=beta, n_iterations=n_iterations)
    assert trajectory.reward[-1] == pytest.approx(expected_reward(instance, log_probs), abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(instances, betas, st.integers(1, 50))
def test_unrolled_iterate_is_the_fixed_reference_optimum_at_beta_over_t(instance, beta, t):
    fixed_reference = regularized_optimum(instance, base_log_policy(instance), beta / t)
    np.testing.assert_allclose(mirror_descent_policy(instance, beta, t), fixed_reference, atol=1e-9)


def test_closed_form_at_zero_is_the_base_model():
    instance = small_instance()
    np.testing.assert_allclose(mirror_descent_policy(instance, 0.5, 0), base_log_policy(instance), atol=1e-14)


@settings(max_examples=40, deadline=None)
@given(instances, betas, st.integers(1, 100))
def test_suboptimality_bound_holds(instance, beta, t):
    suboptimality = instance.optimal_value - expected_reward(instance, mirror_descent_policy(instance, beta, t))
    assert suboptimality <= mirror_descent_bound(instance, beta, t) + 1e-12


def test_bound_is_beta_times_log_inverse_base_coverage_over_t():
    rewards = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]])
    instance = tabular_instance(rewards, np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]]))
    expected = 2.0 * 0.5 * (np.log(10.0) + np.log(4.0)) / np.array([1.0, 4.0])
    np.testing.assert_allclose(mirror_descent_bound(instance, 2.0, np.array([1, 4])), expected, rtol=1e-12)
    assert mirror_descent_bound(instance, 2.0, 4) == pytest.approx(expected[1], rel=1e-12)


def test_bound_stays_finite_when_base_coverage_underflows():
    instance = BanditInstance(
        prompt_probs=np.ones(1),
        features=np.eye(3)[None],
        rewards=np.array([[1.0, 0.0, 0.0]]),
        base_theta=np.array([-800.0, 0.0, 0.0]),
    )
    assert mirror_descent_bound(instance, 1.0, 1) == pytest.approx(800.0 + np.log(2.0), rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(instances, betas, st.integers(1, 10))
def test_apmd_with_exact_targets_is_exact_mirror_descent(instance, beta, n_iterations):
    result = apmd_exact(instance, beta=beta, n_iterations=n_iterations)
    exact = exact_mirror_descent(instance, beta=beta, n_iterations=n_iterations)
    np.testing.assert_allclose(result.reward, exact.reward, atol=1e-9)
    np.testing.assert_allclose(result.log_coverage, exact.log_coverage, atol=1e-8)
    np.testing.assert_allclose(result.kl_to_base, exact.kl_to_base, atol=1e-8)
    np.testing.assert_array_equal(result.reference_resets, exact.reference_resets)
    assert np.all(result.inner_kl < 1e-9)


@settings(max_examples=25, deadline=None)
@given(instances, betas, st.integers(1, 10))
def test_exact_apmd_moves_theta_by_theta_star_over_beta(instance, beta, n_iterations):
    result = apmd_exact(instance, beta=beta, n_iterations=n_iterations)
    t = np.arange(n_iterations + 1)[:, None]
    np.testing.assert_allclose(result.thetas, instance.base_theta + t * instance.reward_theta / beta, atol=1e-12)
    np.testing.assert_allclose(
        log_policy(instance, result.thetas[-1]), mirror_descent_policy(instance, beta, n_iterations), atol=1e-8
    )


def test_exact_mirror_descent_handles_nonlinear_rewards_but_exact_targets_refuse():
    instance = nonlinear_instance()
    trajectory = exact_mirror_descent(instance, beta=0.5, n_iterations=5)
    assert trajectory.suboptimality[-1] < trajectory.suboptimality[0]
    with pytest.raises(ValueError, match="reward_theta"):
        apmd_exact(instance, beta=0.5, n_iterations=5)
    with pytest.raises(ValueError, match="reward_theta"):
        exact_target_theta(instance, instance.base_theta, 0.5)


def test_exact_targets_need_a_reward_theta():
    realizable = small_instance()
    unknown = BanditInstance(
        prompt_probs=realizable.prompt_probs,
        features=realizable.features,
        rewards=realizable.rewards,
        base_theta=realizable.base_theta,
    )
    with pytest.raises(ValueError, match="reward_theta"):
        apmd_exact(unknown, beta=1.0, n_iterations=1)


def test_many_small_gradient_steps_approach_exact_mirror_descent():
    instance = small_instance()
    exact = exact_mirror_descent(instance, beta=1.0, n_iterations=3)
    accurate = apmd(instance, beta=1.0, eta=1.0, n_iterations=3, inner_steps=1000)
    rough = apmd(instance, beta=1.0, eta=1.0, n_iterations=3, inner_steps=2)
    assert accurate.inner_kl.max() < 1e-8
    np.testing.assert_allclose(accurate.reward, exact.reward, atol=1e-5)
    np.testing.assert_allclose(accurate.log_coverage, exact.log_coverage, atol=1e-4)
    assert rough.inner_kl.min() > 100 * accurate.inner_kl.max()
    assert rough.inner_kl.min() > 1e-4


def test_inner_kl_is_the_kl_to_each_target():
    instance = small_instance(3)
    result = apmd(instance, beta=0.7, eta=0.5, n_iterations=3, inner_steps=4)
    for t in range(3):
        target = regularized_optimum(instance, log_policy(instance, result.thetas[t]), 0.7)
        assert result.inner_kl[t] == pytest.approx(
            expected_kl(instance, log_policy(instance, result.thetas[t + 1]), target), rel=1e-12
        )


def test_trajectory_counts_resets_and_gradient_steps_per_outer_iteration():
    instance = small_instance()
    trajectory = apmd(instance, beta=1.0, eta=0.5, n_iterations=4, inner_steps=3)
    np.testing.assert_array_equal(trajectory.gradient_steps, [0, 3, 6, 9, 12])
    np.testing.assert_array_equal(trajectory.reference_resets, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(trajectory.responses_sampled, 0)
    np.testing.assert_array_equal(trajectory.generation_rounds, 0)
    assert trajectory.thetas.shape == (5, instance.dim) and trajectory.inner_kl.shape == (4,)
    assert trajectory.settings == {"beta": 1.0, "eta": 0.5, "n_iterations": 4, "inner_steps": 3}


def test_trajectory_records_every_gradient_step_when_asked():
    instance = small_instance()
    trajectory = apmd(instance, beta=1.0, eta=0.5, n_iterations=4, inner_steps=3, record_each_step=True)
    per_outer = apmd(instance, beta=1.0, eta=0.5, n_iterations=4, inner_steps=3)
    np.testing.assert_array_equal(trajectory.gradient_steps, np.arange(13))
    np.testing.assert_array_equal(trajectory.reference_resets, [0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4])
    np.testing.assert_allclose(trajectory.reward[::3], per_outer.reward, atol=1e-15)
    np.testing.assert_allclose(trajectory.log_coverage[::3], per_outer.log_coverage, atol=1e-15)
    np.testing.assert_array_equal(trajectory.thetas, per_outer.thetas)
    np.testing.assert_array_equal(trajectory.inner_kl, per_outer.inner_kl)


def test_exact_runs_record_once_per_outer_iteration_even_when_recording_steps():
    # an exact solve counts as one step, as an NPG step does
    instance = small_instance()
    trajectory = apmd_exact(instance, beta=1.0, n_iterations=3, record_each_step=True)
    np.testing.assert_array_equal(trajectory.gradient_steps, [0, 1, 2, 3])
    np.testing.assert_array_equal(trajectory.reference_resets, [0, 1, 2, 3])
    assert trajectory.algorithm == "APMD (exact targets)"
    assert trajectory.settings == {"beta": 1.0, "n_iterations": 3}
    exact = exact_mirror_descent(instance, beta=1.0, n_iterations=3)
    np.testing.assert_array_equal(exact.gradient_steps, [0, 1, 2, 3])
    np.testing.assert_array_equal(exact.responses_sampled, 0)
    np.testing.assert_array_equal(exact.reference_resets, [0, 1, 2, 3])
    assert exact.algorithm == "exact mirror descent"


def test_one_apmd_reset_is_k_steps_of_the_tested_gradient():
    instance = small_instance(2)
    beta, eta, inner_steps = 0.6, 0.8, 3
    run_once = apmd(instance, beta=beta, eta=eta, n_iterations=1, inner_steps=inner_steps)

    def by_hand(kl_scale):
        theta = instance.base_theta.copy()
        log_reference = log_policy(instance, theta)
        for _ in range(inner_steps):
            theta = theta + eta * regularized_gradient(instance, theta, log_reference, kl_scale * beta)
        return theta

    np.testing.assert_array_equal(run_once.thetas[1], by_hand(1.0))
    assert not np.allclose(run_once.thetas[1], by_hand(0.5), atol=1e-9)
    halved = apmd(instance, beta=beta / 2, eta=eta, n_iterations=1, inner_steps=inner_steps)
    assert not np.allclose(run_once.thetas[1], halved.thetas[1], atol=1e-9)


def test_the_registry_runs_both_apmds():
    instance = small_instance()
    exact = run("apmd_exact", instance, beta=0.5, n_iterations=4)
    np.testing.assert_array_equal(exact.thetas, apmd_exact(instance, beta=0.5, n_iterations=4).thetas)
    stepped = run("apmd", instance, beta=0.5, eta=0.5, n_iterations=2, inner_steps=3)
    direct = apmd(instance, beta=0.5, eta=0.5, n_iterations=2, inner_steps=3)
    np.testing.assert_array_equal(stepped.thetas, direct.thetas)


@pytest.mark.parametrize("beta", [0.0, -1.0, np.inf])
def test_nonpositive_beta_is_rejected(beta):
    instance = small_instance()
    with pytest.raises(ValueError, match="beta"):
        exact_mirror_descent(instance, beta=beta, n_iterations=3)
    with pytest.raises(ValueError, match="beta"):
        apmd_exact(instance, beta=beta, n_iterations=3)
    with pytest.raises(ValueError, match="beta"):
        apmd(instance, beta=beta, eta=0.5, n_iterations=3, inner_steps=2)
    with pytest.raises(ValueError, match="beta"):
        mirror_descent_policy(instance, beta, 3)
    with pytest.raises(ValueError, match="beta"):
        mirror_descent_bound(instance, beta, 3)


@pytest.mark.parametrize("n_iterations", [0, -2, 1.5])
def test_bad_iteration_counts_are_rejected(n_iterations):
    instance = small_instance()
    with pytest.raises(ValueError, match="n_iterations"):
        exact_mirror_descent(instance, beta=1.0, n_iterations=n_iterations)
    with pytest.raises(ValueError, match="n_iterations"):
        apmd_exact(instance, beta=1.0, n_iterations=n_iterations)
    with pytest.raises(ValueError, match="n_iterations"):
        apmd(instance, beta=1.0, eta=0.5, n_iterations=n_iterations, inner_steps=2)


def test_bad_inner_step_settings_and_times_are_rejected():
    instance = small_instance()
    for inner_steps in (0, -1):
        with pytest.raises(ValueError, match="inner_steps"):
            apmd(instance, beta=1.0, eta=0.1, n_iterations=2, inner_steps=inner_steps)
    for eta in (0.0, -0.1):
        with pytest.raises(ValueError, match="eta"):
            apmd(instance, beta=1.0, eta=eta, n_iterations=2, inner_steps=5)
    with pytest.raises(ValueError, match="t must"):
        mirror_descent_policy(instance, 1.0, -1)
    with pytest.raises(ValueError, match="t must"):
        mirror_descent_bound(instance, 1.0, np.array([1, 0]))


def test_mirror_descent_rate_stays_under_its_bound_and_needs_resets_in_proportion_to_beta():
    instances = [small_instance(seed) for seed in range(2)]
    betas = np.array([0.25, 0.5, 1.0])
    rate = mirror_descent_rate(instances, betas, 40, eps=0.05)
    assert rate.suboptimality.shape == rate.bound.shape == (2, 3, 41)
    assert np.all(np.isinf(rate.bound[:, :, 0]))
    assert np.all(rate.suboptimality[:, :, 1:] <= rate.bound[:, :, 1:] + 1e-12)
    np.testing.assert_allclose(rate.bound[0, 1, 4], mirror_descent_bound(instances[0], 0.5, 4), rtol=1e-12)
    for i, instance in enumerate(instances):
        # pi_t depends on t / beta only: doubling beta and t gives the same policy.
        np.testing.assert_allclose(rate.suboptimality[i, 1, ::2][:11], rate.suboptimality[i, 0, :11], atol=1e-12)
        for j, beta in enumerate(betas):
            first = rate.resets_to_eps[i, j]
            assert rate.suboptimality[i, j, first] <= 0.05 < rate.suboptimality[i, j, first - 1]
            assert rate.log_inverse_base_coverage[i] == pytest.approx(
                mirror_descent_bound(instance, beta, 1) / beta, rel=1e-12
            )
    assert np.all(np.diff(rate.resets_to_eps, axis=1) > 0)
    assert mirror_descent_rate(instances[:1], [1.0], 1, eps=1e-9).resets_to_eps[0, 0] == -1


def test_mirror_descent_rate_rejects_bad_arguments():
    instance = small_instance()
    with pytest.raises(ValueError, match="instances"):
        mirror_descent_rate([], [1.0], 5, 0.1)
    with pytest.raises(ValueError, match="betas"):
        mirror_descent_rate([instance], [1.0, 0.0], 5, 0.1)
    with pytest.raises(ValueError, match="betas"):
        mirror_descent_rate([instance], [], 5, 0.1)
    with pytest.raises(ValueError, match="n_iterations"):
        mirror_descent_rate([instance], [1.0], 0, 0.1)
    with pytest.raises(ValueError, match="eps"):
        mirror_descent_rate([instance], [1.0], 5, 0.0)


# --- the general-comparator guarantee (paper appendix F.1) -------------------------------------


def _general_comparator_terms(instance, masses, beta, eta, inner_steps, n_iterations):
    """Every term of the comparator bound from the general APMD on the full vector."""
    bandit = instance.to_bandit()
    trajectory = apmd(bandit, beta=beta, eta=eta, n_iterations=n_iterations, inner_steps=inner_steps)
    policies = [log_policy(bandit, theta) for theta in trajectory.thetas]
    base = policies[0]
    table = np.concatenate([masses[:2], np.full(instance.n_zero, masses[2] / instance.n_zero)])[None, :]
    support = table > 0
    log_table = np.log(np.where(support, table, 1.0))
    kl = float(np.sum(np.where(support, table * (log_table - base), 0.0)))
    weighted = [
        float(np.sum(table * (regularized_optimum(bandit, policies[t], beta) - policies[t + 1])))
        for t in range(n_iterations)
    ]
    rewards = np.array([expected_reward(bandit, p) for p in policies])
    t = np.arange(1, n_iterations + 1)
    value = float(np.sum(table * bandit.rewards))
    return {
        "gap": value - np.cumsum(rewards[1:]) / t,
        "main": beta * kl / t,
        "comparator_error": beta * np.cumsum(weighted) / t,
        "inner_error": beta * np.cumsum(trajectory.inner_kl) / t,
    }


@pytest.mark.parametrize(("beta", "eta", "inner_steps"), [(0.5, 4.0, 8), (0.5, 2.0, 2), (1.0, 1.0, 3)])
def test_comparator_guarantee_matches_the_general_apmd_and_its_bound_holds(beta, eta, inner_steps):
    from covpo.experiments.collapse import collapse_instance
    from covpo.experiments.mirror_descent import comparator_guarantee

    instance = collapse_instance(0.05, n_zero=6)
    comparators = {"optimum": [1.0, 0.0, 0.0], "distractor": [0.0, 1.0, 0.0], "mixed": [0.2, 0.5, 0.3]}
    measured = comparator_guarantee(instance, comparators, beta, eta, inner_steps, 12)
    for index, masses in enumerate(comparators.values()):
        general = _general_comparator_terms(instance, np.array(masses), beta, eta, inner_steps, 12)
        np.testing.assert_allclose(measured.average_gap[index], general["gap"], atol=1e-9)
        np.testing.assert_allclose(measured.main_term[index], general["main"], atol=1e-9)
        np.testing.assert_allclose(measured.comparator_error[index], general["comparator_error"], atol=1e-9)
        np.testing.assert_allclose(measured.inner_error, general["inner_error"], atol=1e-9)
    # The inequality of paper appendix F.1 as we derive it holds at every T.
    assert np.all(measured.average_gap <= measured.bound + 1e-12)
    np.testing.assert_allclose(measured.comparator_coverage[:2], [10.0, 5.0])


@pytest.mark.parametrize(
    ("comparators", "name"),
    [({}, "comparators"), ({"x": [0.5, 0.6, 0.0]}, "comparators"), ({"x": [1.0, 0.0]}, "comparators")],
)
def test_comparator_guarantee_rejects_bad_comparators(comparators, name):
    from covpo.experiments.collapse import collapse_instance
    from covpo.experiments.mirror_descent import comparator_guarantee

    with pytest.raises(ValueError, match=name):
        comparator_guarantee(collapse_instance(0.1), comparators, 0.5, 4.0, 8, 3)
