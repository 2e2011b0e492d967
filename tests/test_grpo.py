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
    grpo_objective,
    k3_estimate,
)
from covpo.algorithms.ratios import RatioRecorder
from covpo.batches import ResponseBatch, batch_terms, draw_batch
from covpo.instances import BanditInstance
from covpo.objectives import regularized_optimum
from covpo.policies import base_log_policy, expected_kl, kl_per_prompt, log_policy, sample_responses
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
    # group_advantages takes no group_size: its error names the argument the caller passed.
    with pytest.raises(ValueError, match=r"rewards .*G >= 2"):
        group_advantages(np.ones((3, 1)))
    with pytest.raises(ValueError, match="group_size"):
        grpo(
            small_instance(), beta=0.1, eta=0.1, n_iterations=1, batch_size=4, group_size=1, inner_steps=2,
            rng=np.random.default_rng(0),
        )


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
        ({"n_iterations": 0}, "n_iterations"),
        ({"std_eps": 0.0}, "std_eps"),
        ({"rng": None}, "rng"),
    ],
)
@pytest.mark.parametrize("reference", ["fixed", "reset"])
def test_grpo_validates_its_arguments(keywords, name, reference):
    arguments = {
        "beta": 0.1, "eta": 0.1, "n_iterations": 1, "batch_size": 4, "group_size": 4, "inner_steps": 2,
        "rng": np.random.default_rng(0), "reference": reference, **keywords,
    }
    with pytest.raises(ValueError, match=name):
        grpo(small_instance(), **arguments)


def test_reference_and_beta_are_validated():
    instance = small_instance()
    common = {
        "eta": 0.1, "n_iterations": 1, "batch_size": 4, "group_size": 4, "inner_steps": 1,
        "rng": np.random.default_rng(0),
    }
    with pytest.raises(ValueError, match="reference"):
        grpo(instance, beta=0.1, reference="sometimes", **common)
    with pytest.raises(ValueError, match="beta"):
        grpo(instance, beta=0.0, reference="reset", **common)
    with pytest.raises(ValueError, match="beta"):
        grpo(instance, beta=-0.1, reference="fixed", **common)
    assert grpo(instance, beta=0.0, reference="fixed", **common).settings["beta"] == 0.0


# ---------------------------------------------------------------------------------------
# Whole runs


def test_costs_of_fixed_and_reset_runs():
    instance = small_instance()
    common = {"beta": 0.1, "eta": 0.5, "n_iterations": 4, "batch_size": 5, "group_size": 4, "inner_steps": 3}
    ratios = RatioRecorder()
    fixed = grpo(instance, rng=np.random.default_rng(0), on_inner_step=ratios, **common)
    assert list(fixed.responses_sampled) == [0, 20, 40, 60, 80]
    assert list(fixed.gradient_steps) == [0, 3, 6, 9, 12]
    assert list(fixed.generation_rounds) == [0, 1, 2, 3, 4]
    assert np.all(fixed.reference_resets == 0)
    assert fixed.inner_kl is None and ratios.finish().n_rows == 4 * 4
    assert fixed.thetas.shape == (5, instance.dim)
    reset = grpo(instance, rng=np.random.default_rng(0), reference="reset", **common)
    assert list(reset.reference_resets) == [0, 1, 2, 3, 4]
    assert list(reset.responses_sampled) == [0, 20, 40, 60, 80]
    assert list(reset.generation_rounds) == [0, 1, 2, 3, 4]
    assert reset.inner_kl.shape == (4,)
    stepwise = grpo(instance, rng=np.random.default_rng(0), record_each_step=True, **common)
    assert stepwise.n_records == 1 + 4 * 3
    np.testing.assert_array_equal(stepwise.thetas, fixed.thetas)


def test_the_reset_variant_is_apmd_with_the_reference_reset_to_the_sampling_policy():
    instance = small_instance()
    beta = 0.5
    ratios = RatioRecorder()
    run = grpo(
        instance, beta=beta, eta=0.5, n_iterations=3, batch_size=8, group_size=4, inner_steps=2,
        rng=np.random.default_rng(4), reference="reset", on_inner_step=ratios,
    )
    record = ratios.finish()
    first = record.inner_step == 0
    np.testing.assert_array_equal(record.log_ratio_max[first], 0.0)
    np.testing.assert_array_equal(record.log_ratio_min[first], 0.0)
    assert record.log_ratio_max[~first].max() > 0.0
    for t in range(3):
        target = regularized_optimum(instance, log_policy(instance, run.thetas[t]), beta)
        assert run.inner_kl[t] == expected_kl(instance, log_policy(instance, run.thetas[t + 1]), target)


@pytest.mark.same_on_every_cpu
@pytest.mark.parametrize("reference", ["fixed", "reset"])
def test_a_seed_fixes_the_run_bit_for_bit(reference):
    instance = small_instance()
    common = {
        "beta": 0.2, "eta": 0.8, "n_iterations": 5, "batch_size": 8, "group_size": 4, "inner_steps": 3,
        "reference": reference, "kl": "exact",
    }
    runs, records = [], []
    for _ in range(2):
        ratios = RatioRecorder()
        runs.append(grpo(instance, rng=np.random.default_rng(21), on_inner_step=ratios, **common))
        records.append(ratios.finish())
    np.testing.assert_array_equal(runs[0].thetas, runs[1].thetas)
    np.testing.assert_array_equal(runs[0].reward, runs[1].reward)
    np.testing.assert_array_equal(records[0].clip_fraction, records[1].clip_fraction)
    quiet = grpo(instance, rng=np.random.default_rng(21), **common)
    np.testing.assert_array_equal(quiet.thetas, runs[0].thetas)


def test_strong_fixed_regularization_is_stuck_where_resets_converge():
    instance = small_instance()
    common = {"beta": 2.0, "eta": 0.5, "n_iterations": 60, "batch_size": 64, "group_size": 4, "inner_steps": 10,
              "kl": "exact"}
    fixed = grpo(instance, rng=np.random.default_rng(0), reference="fixed", **common)
    reset = grpo(instance, rng=np.random.default_rng(0), reference="reset", **common)
    assert reset.suboptimality[-1] < 0.5 * fixed.suboptimality[-1]
    assert fixed.suboptimality[-1] > 0.5 * fixed.suboptimality[0]


def test_a_diverging_run_fails_with_a_clear_error():
    instance = small_instance()
    with pytest.raises(FloatingPointError, match="eta"):
        grpo(
            instance, beta=1.0, eta=1e6, n_iterations=20, batch_size=8, group_size=4, inner_steps=4,
            rng=np.random.default_rng(0),
        )


# ---------------------------------------------------------------------------------------
# Mutation checks: the run takes its steps with the tested gradient, KL term included


def hand_run(instance, seed, *, reference, beta, eta=2.0, n_iterations=2, inner_steps=3, kl="k3"):
    """GRPO written out by hand: each batch from pi_t, K steps of ``grpo_gradient`` on it."""
    rng = np.random.default_rng(seed)
    theta = np.array(instance.base_theta, dtype=float)
    log_reference = base_log_policy(instance)
    for _ in range(n_iterations):
        log_old = log_policy(instance, theta)
        if reference == "reset":
            log_reference = log_old
        batch = draw_batch(instance, log_old, 6, rng, 4)
        advantages = group_advantages(batch.rewards)
        for _ in range(inner_steps):
            theta = theta + eta * grpo_gradient(instance, theta, batch, advantages, log_reference, beta, kl=kl)
    return theta


@pytest.mark.parametrize("kl", ["exact", "k3"])
@pytest.mark.parametrize("reference", ["fixed", "reset"])
@pytest.mark.parametrize("n_iterations", [1, 2])
def test_outer_iterations_are_k_steps_of_the_tested_gradient(n_iterations, reference, kl):
    instance = small_instance(1)
    beta = 0.7
    run = grpo(
        instance, beta=beta, eta=2.0, n_iterations=n_iterations, batch_size=6, group_size=4, inner_steps=3,
        rng=np.random.default_rng(3), reference=reference, kl=kl,
    )
    options = {"reference": reference, "n_iterations": n_iterations, "kl": kl}
    np.testing.assert_array_equal(run.thetas[-1], hand_run(instance, 3, beta=beta, **options))
    half_kl = hand_run(instance, 3, beta=beta / 2, **options)
    assert np.max(np.abs(run.thetas[-1] - half_kl)) > 1e-6
    if n_iterations == 2:
        other = "fixed" if reference == "reset" else "reset"
        wrong_reference = hand_run(instance, 3, beta=beta, **{**options, "reference": other})
        assert np.max(np.abs(run.thetas[-1] - wrong_reference)) > 1e-6


@pytest.mark.parametrize(
    "change, message",
    [
        ({"clip_epsilon": 1.0}, "clip_epsilon"),
        ({"clip_epsilon": 0.0}, "clip_epsilon"),
        ({"clip_epsilon": "0.2"}, "clip_epsilon"),
        ({"clip_epsilon": None}, "clip_epsilon"),
        ({"clip_epsilon_high": -0.1}, "clip_epsilon_high"),
        ({"kl": "sampled"}, "kl"),
        ({"reference": "moving"}, "reference"),
        ({"reference": None}, "reference"),
        ({"std_eps": 0.0}, "std_eps"),
        ({"group_size": 1}, "group_size"),
        ({"rng": 0}, "rng"),
    ],
)
def test_grpo_options_are_checked_under_their_names(change, message):
    arguments = {"beta": 0.1, "eta": 0.1, "n_iterations": 1, "batch_size": 4, "group_size": 2, "inner_steps": 1,
                 "rng": np.random.default_rng(0), **change}
    with pytest.raises(ValueError, match=rf"\b{message}\b"):
        grpo(small_instance(), **arguments)


def test_a_strong_kl_step_warns_like_every_other_algorithm_then_diverges_as_documented():
    from covpo.algorithms.steps import UnstableStepWarning

    with pytest.warns(UnstableStepWarning, match="GRPO"), pytest.raises(FloatingPointError, match="eta"):
        grpo(small_instance(), beta=1e8, eta=1.0, n_iterations=3, batch_size=8, group_size=4, inner_steps=4,
             rng=np.random.default_rng(0))


@pytest.mark.parametrize("group_size", [2, 3])
def test_reset_grpo_batch_objective_has_the_expectation_the_chapter_states(group_size):
    # With the reference reset to the sampling policy pi_t and a clip that does not act, the
    # batch objective's expectation over groups drawn from pi_t is
    # (G - 1)/G (J(pi) - V_t) - beta (chi2(pi_t || pi) - KL(pi_t || pi)) (chapter 4, exact
    # enumeration of every group of one prompt).
    import itertools

    from covpo.instances import tabular_instance

    rewards = np.array([[1.0, 0.4, 0.0]])
    instance = tabular_instance(rewards, np.array([[0.2, 0.5, 0.3]]))
    log_old = base_log_policy(instance)
    theta = instance.base_theta + np.array([0.3, -0.2, 0.1])
    log_pi = log_policy(instance, theta)
    beta = 0.6
    expected = 0.0
    for group in itertools.product(range(3), repeat=group_size):
        responses = np.array([group])
        prompts = np.zeros_like(responses)
        batch = ResponseBatch(prompts, responses, rewards[0, responses], log_old[0, responses])
        advantages = group_advantages(batch.rewards)
        value = grpo_objective(instance, theta, batch, advantages, log_old, beta, clip_epsilon=0.999,
                               clip_epsilon_high=1e6, kl="k3")
        expected += np.exp(log_old[0, list(group)].sum()) * value
    pi, pi_t = np.exp(log_pi[0]), np.exp(log_old[0])
    chi2 = np.sum(pi_t**2 / pi) - 1.0
    kl_reverse = np.sum(pi_t * (log_old[0] - log_pi[0]))
    formula = (group_size - 1) / group_size * (pi @ rewards[0] - pi_t @ rewards[0]) - beta * (chi2 - kl_reverse)
    assert expected == pytest.approx(formula, rel=1e-12)
