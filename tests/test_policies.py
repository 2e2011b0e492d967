"""Softmax-linear policies in log space (paper sections 1.3 and 2.2)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_softmax, logsumexp

from covpo import run, tabular_instance
from covpo.batches import BatchTerms, ResponseBatch
from covpo.families import collapse_family
from covpo.instances import BanditInstance
from covpo.policies import (
    base_log_policy,
    coverage_coefficient,
    expected_kl,
    expected_reward,
    feature_sums,
    kl_per_prompt,
    log_coverage,
    log_policy,
    log_softmax_rows,
    logsumexp_rows,
    mean_features,
    policy_probs,
    prompt_feature_sums,
    sample_prompts,
    sample_responses,
    unchecked_sample_prompts,
    value_per_prompt,
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


# --- bad input is rejected under the caller's argument names (issue 18) ---------------------

TWO_PROMPTS = tabular_instance(np.array([[1.0, 0.0], [0.0, 1.0]]), np.full((2, 2), 0.5))


def test_sample_responses_rejects_prompts_out_of_range():
    with pytest.raises(ValueError, match=r"prompts must hold indices in \[0, 2\)"):
        sample_responses(base_log_policy(TWO_PROMPTS), [0, 5, -1], np.random.default_rng(0))
    with pytest.raises(ValueError, match="prompts must hold integer indices"):
        sample_responses(base_log_policy(TWO_PROMPTS), [0.5], np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng must be a numpy Generator"):
        sample_responses(base_log_policy(TWO_PROMPTS), [0, 1], 0)
    with pytest.raises(ValueError, match="log_probs"):
        sample_responses(np.array([[np.nan, 0.0]]), [0], np.random.default_rng(0))


def test_sample_prompts_rejects_a_bad_instance_or_rng():
    with pytest.raises(ValueError, match="instance must be a BanditInstance, got NoneType"):
        sample_prompts(None, np.random.default_rng(0), 3)
    with pytest.raises(ValueError, match="rng must be a numpy Generator"):
        sample_prompts(TWO_PROMPTS, 0, 3)
    with pytest.raises(ValueError, match="batch_size"):
        sample_prompts(TWO_PROMPTS, np.random.default_rng(0), np.nan)


@pytest.mark.parametrize(
    "bad", [np.array([[np.nan, 0.0], [0.0, -np.inf]]), np.array([[0.5, 0.5], [0.5, 0.5]]), np.array([[1.0, 0.0]] * 2)]
)
def test_kl_rejects_nan_and_probabilities_passed_as_log_probabilities(bad):
    good = np.log(np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="log_p must"):
        kl_per_prompt(bad, good)
    with pytest.raises(ValueError, match="log_q must"):
        kl_per_prompt(good, bad)
    with pytest.raises(ValueError, match="log_q must"):
        expected_kl(TWO_PROMPTS, good, bad)


def test_policy_probs_and_table_functions_reject_nan():
    bad = np.array([[np.nan, 0.0], [0.0, np.log(1.0)]])
    with pytest.raises(ValueError, match="log_probs must hold log-probabilities"):
        policy_probs(bad)
    for function in (log_coverage, value_per_prompt, expected_reward, coverage_coefficient, mean_features):
        with pytest.raises(ValueError, match="log_probs"):
            function(TWO_PROMPTS, bad)


@pytest.mark.parametrize("bad", [None, "instance", 3.0])
def test_policy_functions_reject_something_that_is_not_an_instance(bad):
    with pytest.raises(ValueError, match="instance must be a BanditInstance"):
        base_log_policy(bad)
    with pytest.raises(ValueError, match="instance must be a BanditInstance"):
        log_policy(bad, np.zeros(4))
    with pytest.raises(ValueError, match="instance must be a BanditInstance"):
        log_coverage(bad, np.log(np.full((2, 2), 0.5)))


def test_log_coverage_is_finite_at_coverages_of_1e_minus_320_and_1e_minus_400():
    instance = tabular_instance(np.array([[1.0, 0.0]]), np.array([[0.5, 0.5]]))
    for log10_coverage in (-320.0, -400.0):
        log_c = log10_coverage * np.log(10.0)
        table = np.array([[log_c, np.log1p(-np.exp(log_c))]])
        assert log_coverage(instance, table)[0] == pytest.approx(log_c, rel=1e-12)
        assert expected_kl(instance, table, base_log_policy(instance)) == pytest.approx(np.log(2.0), rel=1e-9)


def test_batches_and_policy_classes_validate_under_the_callers_names():
    from covpo.batches import ResponseBatch, batch_terms, draw_batch, prompt_kl
    from covpo.policy_classes import SoftmaxLinear

    log_base = base_log_policy(TWO_PROMPTS)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="group_size"):
        draw_batch(TWO_PROMPTS, log_base, 4, rng, group_size=0)
    with pytest.raises(ValueError, match="log_probs must"):
        draw_batch(TWO_PROMPTS, np.full((2, 2), 0.5), 4, rng)
    with pytest.raises(ValueError, match="prompts must hold indices"):
        prompt_kl(TWO_PROMPTS, log_base, log_base, [0, 5])
    with pytest.raises(ValueError, match="log_reference must"):
        prompt_kl(TWO_PROMPTS, log_base, np.array([[0.0, -np.inf]] * 2), [0, 1])
    with pytest.raises(ValueError, match="log_sampling must be finite"):
        ResponseBatch(np.array([0]), np.array([1]), np.array([1.0]), np.array([np.nan]))
    with pytest.raises(ValueError, match="responses must have the shape of prompts"):
        ResponseBatch(np.array([0]), np.array([1, 0]), np.array([1.0]), np.array([-1.0]))
    outside = ResponseBatch(np.array([0]), np.array([7]), np.array([1.0]), np.array([-1.0]))
    with pytest.raises(ValueError, match=r"batch\.responses must hold indices in \[0, 2\)"):
        batch_terms(TWO_PROMPTS, TWO_PROMPTS.base_theta, outside)
    policy = SoftmaxLinear(TWO_PROMPTS)
    with pytest.raises(ValueError, match="params must have shape"):
        policy.log_policy(np.zeros(3))
    with pytest.raises(ValueError, match="instance must be a BanditInstance"):
        SoftmaxLinear(None)


def dense_copy(instance: BanditInstance) -> BanditInstance:
    """The same instance with its one-hot layout hidden, so every product runs densely."""
    copy = dataclasses.replace(instance)
    copy.__dict__["one_hot_columns"] = None
    return copy


def test_one_hot_layout_is_found_only_for_tabular_features():
    rng = np.random.default_rng(0)
    tabular = tabular_instance(rng.random((3, 5)), np.full((3, 5), 0.2))
    assert tabular.one_hot_columns is not None
    assert sorted(tabular.one_hot_columns.ravel()) == list(range(15))
    shared = dataclasses.replace(tabular, features=np.ones((3, 5, 1)), base_theta=np.zeros(1), reward_theta=None)
    assert shared.one_hot_columns is None
    scaled = dataclasses.replace(tabular, features=2.0 * tabular.features)
    assert scaled.one_hot_columns is None


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 5), st.integers(1, 7), st.floats(0.0, 800.0), st.integers(0, 2**32 - 1))
def test_log_softmax_rows_equals_scipys_bit_for_bit(n_rows, n_columns, scale, seed):
    logits = scale * np.random.default_rng(seed).standard_normal((n_rows, n_columns))
    assert np.array_equal(log_softmax_rows(logits), log_softmax(logits, axis=-1))
    assert np.array_equal(log_softmax_rows(logits[None]), log_softmax(logits[None], axis=-1))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 7), st.floats(0.0, 800.0), st.integers(0, 2**32 - 1),
       st.floats(0.0, 0.6), st.booleans())
def test_logsumexp_rows_equals_scipys_bit_for_bit(n_rows, n_columns, scale, seed, masked, ties):
    rng = np.random.default_rng(seed)
    values = scale * rng.standard_normal((n_rows, n_columns))
    if ties:
        values = np.round(values)
    # masked entries, as the coverage's optimal sets make them; some rows may be masked whole
    values[rng.random(values.shape) < masked] = -np.inf
    for table in (values, values[None]):
        assert np.array_equal(logsumexp_rows(table), logsumexp(table, axis=-1))
        assert np.array_equal(logsumexp_rows(table, keepdims=True), logsumexp(table, axis=-1, keepdims=True))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 12), st.integers(1, 300), st.integers(0, 2**32 - 1))
def test_prompts_are_drawn_as_generator_choice_draws_them(n_prompts, batch_size, seed):
    weights = np.random.default_rng(seed).random(n_prompts) + 1e-3
    instance = tabular_instance(np.zeros((n_prompts, 2)), np.full((n_prompts, 2), 0.5), prompt_probs=weights / weights.sum())
    ours, numpys = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    drawn = unchecked_sample_prompts(instance, ours, batch_size)
    assert np.array_equal(drawn, numpys.choice(n_prompts, size=batch_size, p=instance.prompt_probs))
    assert drawn.dtype == np.int64
    assert ours.random() == numpys.random()


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_tabular_products_equal_the_dense_ones_bit_for_bit(n_prompts, n_responses, seed):
    rng = np.random.default_rng(seed)
    instance = tabular_instance(rng.random((n_prompts, n_responses)), rng.dirichlet(np.ones(n_responses), n_prompts))
    dense = dense_copy(instance)
    theta = 30.0 * rng.standard_normal(instance.dim)
    table = rng.standard_normal((n_prompts, n_responses))
    assert np.array_equal(log_policy(instance, theta), log_policy(dense, theta))
    log_probs = log_policy(instance, theta)
    assert np.array_equal(mean_features(instance, log_probs), mean_features(dense, log_probs))
    assert np.array_equal(feature_sums(instance, table), feature_sums(dense, table))
    assert np.array_equal(prompt_feature_sums(instance, table), prompt_feature_sums(dense, table))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_tabular_score_average_equals_the_dense_one_to_rounding(n_prompts, n_responses, batch_size, seed):
    rng = np.random.default_rng(seed)
    instance = tabular_instance(rng.random((n_prompts, n_responses)), rng.dirichlet(np.ones(n_responses), n_prompts))
    log_probs = log_policy(instance, 5.0 * rng.standard_normal(instance.dim))
    prompts = rng.integers(0, n_prompts, batch_size)
    batch = ResponseBatch(
        prompts=prompts, responses=rng.integers(0, n_responses, batch_size), rewards=np.zeros(batch_size),
        log_sampling=np.zeros(batch_size),
    )
    coefficients = rng.standard_normal(batch_size)
    sparse = BatchTerms(instance, batch, log_probs).score_average(coefficients)
    dense = BatchTerms(dense_copy(instance), batch, log_probs).score_average(coefficients)
    scale = np.abs(coefficients).mean()
    assert np.allclose(sparse, dense, rtol=1e-12, atol=1e-14 * scale)


@pytest.mark.parametrize("algorithm", ["reinforce", "ppo_lite", "grpo_reset", "kimipo"])
def test_runs_on_tabular_features_follow_the_dense_runs(algorithm):
    # The tabular score average sums in another order than the dense product, so the runs
    # agree to rounding, not bit for bit; over these short runs the gap stays near 1e-13.
    instance = collapse_family()[0]
    settings_of = {
        "reinforce": {"eta": 8.0, "n_iterations": 60, "batch_size": 16},
        "ppo_lite": {"beta": 0.5, "eta": 8.0, "n_iterations": 6, "batch_size": 16, "inner_steps": 10},
        "grpo_reset": {"beta": 0.5, "eta": 8.0, "n_iterations": 6, "batch_size": 8, "group_size": 4, "inner_steps": 10},
        "kimipo": {"beta": 1.0, "eta": 2.0, "n_iterations": 3, "batch_size": 32, "inner_steps": 10, "extra_responses": 1},
    }[algorithm]
    runs = [run(algorithm, which, rng=np.random.default_rng(1), **settings_of) for which in (instance, dense_copy(instance))]
    for field in ("reward", "log_coverage", "kl_to_base"):
        assert np.allclose(getattr(runs[0], field), getattr(runs[1], field), rtol=1e-9, atol=1e-12), field