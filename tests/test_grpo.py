"""GRPO-style training with a fixed or a reset reference (paper appendix H.4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from covpo.algorithms.grpo import (
    check_clip_epsilon,
    group_advantages,
    grpo,
    grpo_clip_mask,
    grpo_gradient,
    grpo_inner_loop,
    grpo_objective,
    k3_estimate,
)
from covpo.instances import BanditInstance
from covpo.algorithms.mirror_descent import apmd
from covpo.policies import base_log_policy, kl_per_prompt, log_policy, sample_responses
from covpo.algorithms.ppo import RatioRecorder, ResponseBatch, batch_terms, draw_batch
from tests.helpers import finite_difference, small_instance


def group_batch(instance: BanditInstance, seed: int, n_prompts: int = 12, group_size: int = 4, scale: float = 0.5):
    rng = np.random.default_rng(seed)
    log_old = log_policy(instance, instance.base_theta + 0.3 * rng.standard_normal(instance.dim))
    batch = draw_batch(instance, log_old, n_prompts, rng, group_size)
    theta = instance.base_theta + scale * rng.standard_normal(instance.dim)
    return batch, theta


# ---------------------------------------------------------------------------------------
# Group advantages and the k3 estimator


@settings(max_examples=50, deadline=None)
@given(arrays(float, st.tuples(st.integers(1, 6), st.integers(2, 8)), elements=st.floats(0.0, 1.0)))
def test_group_advantages_sum_to_zero_per_group(rewards):
    for scale_by_std in (False, True):
        advantages = group_advantages(rewards, scale_by_std=scale_by_std)
        np.testing.assert_allclose(advantages.sum(axis=1), 0.0, atol=1e-9)
    np.testing.assert_allclose(group_advantages(rewards), rewards - rewards.mean(axis=1, keepdims=True), atol=0)


def test_std_scaling_gives_unit_sample_deviation_and_spares_tied_groups():
    rewards = np.array([[0.0, 1.0, 1.0, 0.0], [0.2, 0.2, 0.2, 0.2], [0.0, 0.0, 0.0, 0.9]])
    scaled = group_advantages(rewards, scale_by_std=True, std_eps=1e-12)
    np.testing.assert_allclose(scaled[[0, 2]].std(axis=1, ddof=1), 1.0, rtol=1e-9)
    np.testing.assert_array_equal(scaled[1], 0.0)
    plain = group_advantages(rewards)
    np.testing.assert_allclose(scaled[0], plain[0] / rewards[0].std(ddof=1), rtol=1e-9)


def test_a_group_of_one_is_rejected():
    with pytest.raises(ValueError, match="group_size"):
        group_advantages(np.ones((3, 1)))
    with pytest.raises(ValueError, match="group_size"):
        grpo_inner_loop(4, 1, 2, 0.1)


@settings(max_examples=100, deadline=None)
@given(arrays(float, 20, elements=st.floats(-30.0, 0.0)), arrays(float, 20, elements=st.floats(-30.0, 0.0)))
def test_k3_is_nonnegative_and_zero_only_on_agreement(log_reference, log_theta):
    values = k3_estimate(log_reference, log_theta)
    assert np.all(values >= 0.0)
    np.testing.assert_array_equal(k3_estimate(log_theta, log_theta), 0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_k3_is_unbiased_for_kl_on_policy(seed):
    instance = small_instance(seed)
    rng = np.random.default_rng(seed)
    log_theta = log_policy(instance, instance.base_theta + rng.standard_normal(instance.dim))
    log_reference = base_log_policy(instance)
    prompts = np.repeat(np.arange(instance.n_prompts), 20_000)
    responses = sample_responses(log_theta, prompts, rng)
    samples = k3_estimate(log_reference[prompts, responses], log_theta[prompts, responses])
    exact = kl_per_prompt(log_theta, log_reference).mean()
    standard_error = samples.std(ddof=1) / np.sqrt(samples.size)
    assert abs(samples.mean() - exact) < 4 * standard_error
    assert exact > 10 * standard_error  # the test could tell a biased estimator apart


def test_k3_loss_gradient_is_the_reverse_kl_gradient_on_policy():
    # E_{y ~ pi_theta} of the per-sample k3 gradient equals grad KL(pi_ref || pi_theta), by enumeration
    instance = small_instance()
    rng = np.random.default_rng(5)
    theta = instance.base_theta + rng.standard_normal(instance.dim)
    log_theta = log_policy(instance, theta)
    log_reference = base_log_policy(instance)
    expected = np.zeros(instance.dim)
    for x in range(instance.n_prompts):
        for y in range(instance.n_responses):
            pair = np.array([[y, y]])
            batch = ResponseBatch(np.full((1, 2), x), pair, np.zeros((1, 2)), log_theta[x, pair])
            gradient = grpo_gradient(instance, theta, batch, np.zeros((1, 2)), log_reference, 1.0, kl="k3")
            expected += instance.prompt_probs[x] * np.exp(log_theta[x, y]) * gradient

    def reverse_kl(t):
        return instance.prompt_probs @ kl_per_prompt(log_reference, log_policy(instance, t))

    np.testing.assert_allclose(expected, -finite_difference(reverse_kl, theta), atol=1e-8)


# ---------------------------------------------------------------------------------------
# The clipped surrogate and its gradient


@pytest.mark.parametrize("kl", ["exact", "k3"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("scale_by_std", [False, True])
def test_grpo_gradient_matches_finite_differences(kl, seed, scale_by_std):
    instance = small_instance(seed)
    batch, theta = group_batch(instance, seed)
    advantages = group_advantages(batch.rewards, scale_by_std=scale_by_std)
    log_reference = base_log_policy(instance)
    options = {"clip_epsilon": 0.2, "clip_epsilon_high": 0.28, "kl": kl}
    log_ratio = batch_terms(instance, theta, batch).log_ratio
    clipped = grpo_clip_mask(log_ratio, advantages, check_clip_epsilon(0.2, 0.28))
    assert clipped.any() and not clipped.all()
    assert np.min(np.abs(log_ratio[..., None] - np.log([0.8, 1.28]))) > 1e-4
    numeric = finite_difference(
        lambda t: grpo_objective(instance, t, batch, advantages, log_reference, 0.3, **options), theta
    )
    analytic = grpo_gradient(instance, theta, batch, advantages, log_reference, 0.3, **options)
    np.testing.assert_allclose(analytic, numeric, atol=1e-7)


def test_at_the_sampling_policy_the_gradient_is_the_group_baseline_policy_gradient():
    instance = small_instance()
    rng = np.random.default_rng(0)
    theta = instance.base_theta + 0.5 * rng.standard_normal(instance.dim)
    batch = draw_batch(instance, log_policy(instance, theta), 10, rng, 6)
    advantages = group_advantages(batch.rewards)
    terms = batch_terms(instance, theta, batch)
    np.testing.assert_array_equal(terms.log_ratio, 0.0)
    expected = np.einsum("ng,ngd->d", advantages, terms.scores) / advantages.size
    gradient = grpo_gradient(instance, theta, batch, advantages, base_log_policy(instance), 0.0)
    np.testing.assert_allclose(gradient, expected, atol=1e-14)


def test_clip_mask_follows_the_sign_of_the_advantage():
    log_ratio = np.log(np.array([0.5, 0.5, 1.5, 1.5, 1.0, 1.5]))
    advantages = np.array([1.0, -1.0, 1.0, -1.0, 1.0, 0.0])
    np.testing.assert_array_equal(
        grpo_clip_mask(log_ratio, advantages, (0.8, 1.2)), [False, True, True, False, False, False]
    )


@pytest.mark.parametrize(
    ("keywords", "name"),
    [
        ({"clip_epsilon": 0.0}, "clip_epsilon"),
        ({"clip_epsilon": 1.0}, "clip_epsilon"),
        ({"clip_epsilon_high": -0.1}, "clip_epsilon_high"),
        ({"kl": "k2"}, "kl"),
        ({"batch_size": 0}, "batch_size"),
        ({"inner_steps": 0}, "inner_steps"),
        ({"eta": 0.0}, "eta"),
        ({"group_size": 1}, "group_size"),
    ],
)
def test_grpo_validates_its_arguments(keywords, name):
    arguments = {"batch_size": 4, "group_size": 4, "inner_steps": 2, "eta": 0.1, **keywords}
    with pytest.raises(ValueError, match=name):
        grpo_inner_loop(**arguments)
    with pytest.raises(ValueError, match=name):
        grpo(small_instance(), 0.1, 1, rng=np.random.default_rng(0), **arguments)


def test_reference_and_beta_are_validated():
    instance = small_instance()
    common = {"batch_size": 4, "group_size": 4, "inner_steps": 1, "eta": 0.1, "rng": np.random.default_rng(0)}
    with pytest.raises(ValueError, match="reference"):
        grpo(instance, 0.1, 1, reference="sometimes", **common)
    with pytest.raises(ValueError, match="beta"):
        grpo(instance, 0.0, 1, reference="reset", **common)
    with pytest.raises(ValueError, match="beta"):
        grpo(instance, -0.1, 1, reference="fixed", **common)
    assert grpo(instance, 0.0, 1, reference="fixed", **common).trajectory.settings["beta"] == 0.0


# ---------------------------------------------------------------------------------------
# Whole runs


def test_costs_of_fixed_and_reset_runs():
    instance = small_instance()
    common = {"batch_size": 5, "group_size": 4, "inner_steps": 3, "eta": 0.5}
    fixed = grpo(instance, 0.1, 4, rng=np.random.default_rng(0), **common)
    assert list(fixed.trajectory.responses_sampled) == [0, 20, 40, 60, 80]
    assert list(fixed.trajectory.gradient_steps) == [0, 3, 6, 9, 12]
    assert np.all(fixed.trajectory.reference_resets == 0)
    assert fixed.inner_kl is None and fixed.ratios.n_rows == 4 * 4
    reset = grpo(instance, 0.1, 4, rng=np.random.default_rng(0), reference="reset", **common)
    assert list(reset.trajectory.reference_resets) == [0, 1, 2, 3, 4]
    assert list(reset.trajectory.responses_sampled) == [0, 20, 40, 60, 80]
    assert reset.inner_kl.shape == (4,)
    stepwise = grpo(instance, 0.1, 4, rng=np.random.default_rng(0), record_each_step=True, **common)
    assert stepwise.trajectory.n_records == 1 + 4 * 3
    np.testing.assert_array_equal(stepwise.thetas, fixed.thetas)


def test_the_reset_variant_is_apmd_with_the_grpo_inner_loop():
    instance = small_instance()
    common = {"batch_size": 8, "group_size": 4, "inner_steps": 2, "eta": 0.5}
    run = grpo(instance, 0.5, 3, rng=np.random.default_rng(4), reference="reset", **common)
    recorder = RatioRecorder()
    result = apmd(instance, 0.5, 3, grpo_inner_loop(**common, ratios=recorder), rng=np.random.default_rng(4))
    np.testing.assert_array_equal(run.thetas, result.thetas)
    np.testing.assert_array_equal(run.ratios.log_ratio_max, recorder.finish().log_ratio_max)


@pytest.mark.parametrize("reference", ["fixed", "reset"])
def test_a_seed_fixes_the_run_bit_for_bit(reference):
    instance = small_instance()
    common = {"batch_size": 8, "group_size": 4, "inner_steps": 3, "eta": 0.8, "reference": reference, "kl": "exact"}
    first, second = (grpo(instance, 0.2, 5, rng=np.random.default_rng(21), **common) for _ in range(2))
    np.testing.assert_array_equal(first.thetas, second.thetas)
    np.testing.assert_array_equal(first.trajectory.reward, second.trajectory.reward)
    np.testing.assert_array_equal(first.ratios.clip_fraction, second.ratios.clip_fraction)


def test_strong_fixed_regularization_is_stuck_where_resets_converge():
    instance = small_instance()
    beta = 2.0
    common = {"batch_size": 64, "group_size": 4, "inner_steps": 10, "eta": 0.5, "kl": "exact"}
    fixed = grpo(instance, beta, 60, rng=np.random.default_rng(0), reference="fixed", **common)
    reset = grpo(instance, beta, 60, rng=np.random.default_rng(0), reference="reset", **common)
    assert reset.trajectory.suboptimality[-1] < 0.5 * fixed.trajectory.suboptimality[-1]
    assert fixed.trajectory.suboptimality[-1] > 0.5 * fixed.trajectory.suboptimality[0]


def test_a_diverging_run_fails_with_a_clear_error():
    instance = small_instance()
    with pytest.raises(FloatingPointError, match="eta"):
        grpo(instance, 1.0, 20, batch_size=8, group_size=4, inner_steps=4, eta=1e6, rng=np.random.default_rng(0))
