"""Tests for the token-sequence laboratory: enumeration, exact gradients, algorithms and the experiment."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from covpo.algorithms.reinforce import sampled_gradient
from covpo.batches import ResponseBatch
from covpo.labs.sequences import (
    SequenceInstance,
    TokenPolicy,
    autoregressive_logits,
    bandit_view,
    base_sequence_log_policy,
    batch_token_log_probs,
    draw_sequence_batch,
    enumerate_sequences,
    expected_kl,
    expected_reward,
    level_offsets,
    log_coverage,
    ppo_surrogate,
    prefix_indices,
    regularized_gradient,
    regularized_objective,
    reward_gradient,
    run_on_sequences,
    sample_sequences,
    sampled_sequence_ppo,
    sequence_collapse_instance,
    sequence_experiment,
    sequence_index,
    sequence_log_policy,
    surrogate_parts,
    token_log_probs,
    token_score_sum,
)
from covpo.policies import base_log_policy
from tests.helpers import finite_difference

LOG10_BASE_COVERAGE = np.log10(0.1)


SMALL_PPO = {"beta": 0.5, "eta": 1.0, "inner_steps": 1, "n_iterations": 1, "batch_size": 2,
             "rng": np.random.default_rng(0)}


@pytest.fixture
def tiny():
    """Three tokens, length three, two prompts, random sequences: 27 sequences and 13 prefixes."""
    return sequence_collapse_instance(0.2, vocab_size=3, length=3, shared_prefix=1, n_prompts=2, rng=5)


@pytest.fixture
def theta(tiny):
    return tiny.base_theta + 0.7 * np.random.default_rng(2).normal(size=tiny.base_theta.shape)


def flat(function, shape):
    return lambda vector: function(vector.reshape(shape))


# ---------------------------------------------------------------------------------------
# Enumeration and shapes


def test_enumeration_shapes_and_prefix_numbering():
    tokens = enumerate_sequences(3, 4)
    assert tokens.shape == (81, 4)
    np.testing.assert_array_equal(sequence_index(tokens, 3), np.arange(81))
    assert list(level_offsets(3, 4)) == [0, 1, 4, 13, 40]
    prefixes = prefix_indices(3, 4)
    assert prefixes.shape == (81, 4)
    assert np.all(prefixes[:, 0] == 0)
    for depth in range(1, 4):
        # sequences share a prefix index at depth t exactly when they share their first t tokens
        _, first_tokens = np.unique(tokens[:, :depth], axis=0, return_inverse=True)
        _, first_prefix = np.unique(prefixes[:, depth], return_inverse=True)
        np.testing.assert_array_equal(first_tokens.ravel(), first_prefix.ravel())


def test_policy_shapes(tiny, theta):
    assert tiny.n_sequences == 27 and tiny.n_prefixes == 13
    assert token_log_probs(tiny, theta).shape == (2, 27, 3)
    assert sequence_log_policy(tiny, theta).shape == (2, 27)
    assert reward_gradient(tiny, theta).shape == theta.shape


def test_sequence_log_probabilities_are_normalized_and_sum_token_terms(tiny, theta):
    log_probs = sequence_log_policy(tiny, theta)
    np.testing.assert_allclose(logsumexp(log_probs, axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(log_probs, token_log_probs(tiny, theta).sum(axis=-1))
    # each token factor is a conditional: summing the last token's probabilities out gives the prefix
    np.testing.assert_allclose(
        logsumexp(log_probs.reshape(2, 9, 3), axis=2), token_log_probs(tiny, theta)[:, ::3, :2].sum(axis=-1), atol=1e-12
    )


def test_log_space_survives_coverage_far_below_double_precision():
    instance = sequence_collapse_instance(0.2, vocab_size=2, length=3)
    theta = instance.base_theta.copy()
    theta[0, 0, 0] -= 800.0  # the optimal sequence starts with token 0: coverage about e^-800
    coverage = log_coverage(instance, sequence_log_policy(instance, theta))
    assert np.isfinite(coverage).all() and coverage[0] < -700


# ---------------------------------------------------------------------------------------
# The collapse instance


@pytest.mark.parametrize("shared_prefix", [0, 1, 2])
def test_collapse_instance_sets_the_base_probabilities_exactly(shared_prefix):
    instance = sequence_collapse_instance(0.3, 3, 3, shared_prefix=shared_prefix, n_prompts=3, rng=1)
    log_base = base_sequence_log_policy(instance)
    optimal = instance.rewards == 1.0
    distractor = np.isclose(instance.rewards, 0.7)
    np.testing.assert_allclose(np.exp(log_base[optimal]), 0.1)
    np.testing.assert_allclose(np.exp(log_base[distractor]), 0.2)
    np.testing.assert_allclose(np.exp(log_coverage(instance, log_base)), 0.1)
    for prompt in range(3):
        pair = instance.tokens[[np.flatnonzero(optimal[prompt])[0], np.flatnonzero(distractor[prompt])[0]]]
        agree = pair[0] == pair[1]
        assert agree[:shared_prefix].all() and not agree[shared_prefix]


def test_autoregressive_logits_reproduce_any_full_support_distribution():
    log_q = np.log(np.random.default_rng(4).dirichlet(np.ones(16), size=2))
    theta = autoregressive_logits(2, 4, log_q)
    instance = SequenceInstance(2, 4, np.array([0.5, 0.5]), np.zeros((2, 16)), theta)
    np.testing.assert_allclose(base_sequence_log_policy(instance), log_q, atol=1e-12)


def test_deterministic_and_seeded_instances_are_reproducible():
    first = sequence_collapse_instance(0.2, rng=9, n_prompts=2)
    second = sequence_collapse_instance(0.2, rng=9, n_prompts=2)
    np.testing.assert_array_equal(first.rewards, second.rewards)
    np.testing.assert_array_equal(first.base_theta, second.base_theta)
    assert sequence_collapse_instance(0.2).rewards[0, 0] == 1.0  # the default optimal sequence is (0, ..., 0)


# ---------------------------------------------------------------------------------------
# Exact gradients


def test_reward_gradient_matches_finite_differences(tiny, theta):
    numeric = finite_difference(
        flat(lambda t: expected_reward(tiny, sequence_log_policy(tiny, t)), theta.shape), theta.ravel()
    )
    np.testing.assert_allclose(reward_gradient(tiny, theta).ravel(), numeric, atol=1e-8)


def test_regularized_gradient_matches_finite_differences(tiny, theta):
    log_reference = base_sequence_log_policy(tiny)
    numeric = finite_difference(
        flat(lambda t: regularized_objective(tiny, t, log_reference, 0.3), theta.shape), theta.ravel()
    )
    np.testing.assert_allclose(regularized_gradient(tiny, theta, log_reference, 0.3).ravel(), numeric, atol=1e-8)


def test_reward_gradient_vanishes_for_a_constant_reward(tiny, theta):
    constant = SequenceInstance(3, 3, tiny.prompt_probs, np.full((2, 27), 0.4), tiny.base_theta)
    np.testing.assert_allclose(reward_gradient(constant, theta), 0.0, atol=1e-15)
    # and the KL term vanishes at its own reference
    log_probs = sequence_log_policy(constant, theta)
    np.testing.assert_allclose(regularized_gradient(constant, theta, log_probs, 2.0), 0.0, atol=1e-15)


def test_sequence_coefficients_equal_the_same_coefficient_on_every_token(tiny, theta):
    coefficients = np.random.default_rng(0).normal(size=(2, 27))
    per_token = np.repeat(coefficients[:, :, None], 3, axis=2)
    np.testing.assert_allclose(token_score_sum(tiny, theta, coefficients), token_score_sum(tiny, theta, per_token))


def test_apmd_step_reaches_the_mirror_descent_target(tiny):
    """The target pi_0 exp(r / beta) / Z is in the class; enough exact steps reach it (paper section 3.1)."""
    beta = 0.5
    log_base = base_sequence_log_policy(tiny)
    target = log_base + tiny.rewards / beta
    target -= logsumexp(target, axis=1, keepdims=True)
    run = run_on_sequences("apmd", tiny, beta=beta, eta=20.0, inner_steps=400, n_iterations=1)
    reward_at_target = expected_reward(tiny, target)
    assert run.reward[-1] == pytest.approx(reward_at_target, abs=1e-6)


# ---------------------------------------------------------------------------------------
# The package's view: bandit over sequences and the token policy class


def test_bandit_view_carries_the_sequence_problem(tiny):
    view = bandit_view(tiny)
    assert (view.n_prompts, view.n_responses) == (2, 27)
    np.testing.assert_array_equal(view.rewards, tiny.rewards)
    np.testing.assert_array_equal(view.optimal_mask, tiny.optimal_mask)
    np.testing.assert_array_equal(view.prompt_probs, tiny.prompt_probs)
    assert view.optimal_value == tiny.optimal_value
    # its own softmax-linear base model is the sequence base model
    np.testing.assert_allclose(base_log_policy(view), base_sequence_log_policy(tiny), atol=1e-14)
    assert tiny.rewards.flags.writeable  # the view copies, so the lab's arrays are not frozen


def test_token_policy_implements_the_protocol_with_the_lab_gradients(tiny, theta):
    policy = TokenPolicy(tiny)
    np.testing.assert_array_equal(policy.initial_params, tiny.base_theta.ravel())
    log_probs = policy.log_policy(theta.ravel())
    np.testing.assert_array_equal(log_probs, sequence_log_policy(tiny, theta))
    np.testing.assert_array_equal(
        policy.population_score_sum(theta.ravel(), tiny.rewards, log_probs), reward_gradient(tiny, theta).ravel()
    )
    log_reference = base_sequence_log_policy(tiny)
    shaped = tiny.rewards - 0.3 * (log_probs - log_reference)
    np.testing.assert_array_equal(
        policy.population_score_sum(theta.ravel(), shaped, log_probs),
        regularized_gradient(tiny, theta, log_reference, 0.3).ravel(),
    )
    batch = draw_sequence_batch(tiny, theta, 5, 3, np.random.default_rng(0))
    coefficients = np.random.default_rng(1).normal(size=batch.sequences.shape)
    rewards = tiny.rewards[batch.prompts, batch.sequences]
    batch_view = ResponseBatch(batch.prompts, batch.sequences, rewards, log_probs[batch.prompts, batch.sequences])
    expected = token_score_sum(tiny, theta, _table(tiny, batch.prompts, batch.sequences, coefficients)) / 15
    np.testing.assert_allclose(
        policy.batch_score_average(theta.ravel(), batch_view, coefficients, log_probs), expected.ravel(), atol=1e-15
    )


@pytest.mark.parametrize("beta", [0.0, 0.3])
def test_exact_reinforce_on_sequences_is_the_hand_loop_on_token_logits(tiny, beta):
    """The package's exact REINFORCE steps along the lab's exact gradient; a halved KL term would differ."""
    run = run_on_sequences("reinforce_exact", tiny, eta=1.0, n_iterations=6, beta=beta)
    log_base = base_sequence_log_policy(tiny)

    def hand_loop(kl_scale):
        theta = tiny.base_theta.copy()
        for _ in range(6):
            if beta == 0.0:
                theta = theta + 1.0 * reward_gradient(tiny, theta)
            else:
                theta = theta + 1.0 * regularized_gradient(tiny, theta, log_base, kl_scale * beta)
        return expected_reward(tiny, sequence_log_policy(tiny, theta))

    assert run.reward[-1] == hand_loop(1.0)
    if beta > 0.0:
        assert run.reward[-1] != hand_loop(0.5)


def test_apmd_on_sequences_is_the_hand_loop_with_resets(tiny):
    """Each reset moves the reference to pi_t; a halved KL term would differ."""
    run = run_on_sequences("apmd", tiny, beta=0.5, eta=2.0, n_iterations=3, inner_steps=4)

    def hand_loop(kl_scale):
        theta = tiny.base_theta.copy()
        for _ in range(3):
            log_reference = sequence_log_policy(tiny, theta)
            for _ in range(4):
                theta = theta + 2.0 * regularized_gradient(tiny, theta, log_reference, kl_scale * 0.5)
        return theta

    np.testing.assert_array_equal(run.thetas[-1], hand_loop(1.0).ravel())
    assert not np.array_equal(run.thetas[-1], hand_loop(0.5).ravel())


# ---------------------------------------------------------------------------------------
# Sampled estimators


@pytest.mark.parametrize("ratio", ["sequence", "token"])
@pytest.mark.parametrize("clip_epsilon", [None, 0.2])
def test_surrogate_gradient_matches_finite_differences(tiny, theta, ratio, clip_epsilon):
    batch = draw_sequence_batch(tiny, tiny.base_theta, 5, 3, np.random.default_rng(0))
    numeric = finite_difference(
        flat(lambda t: ppo_surrogate(tiny, t, batch, 0.5, ratio, clip_epsilon), theta.shape), theta.ravel()
    )
    analytic = surrogate_parts(tiny, theta, batch, 0.5, ratio, clip_epsilon).gradient
    np.testing.assert_allclose(analytic.ravel(), numeric, atol=1e-7)


def test_surrogate_at_the_reference_is_the_reinforce_estimate(tiny):
    """At theta = theta_t every ratio is 1, so both flavours give mean_i A_i grad log pi(y_i|x_i)."""
    batch = draw_sequence_batch(tiny, tiny.base_theta, 6, 4, np.random.default_rng(3))
    expected = token_score_sum(
        tiny, tiny.base_theta, _table(tiny, batch.prompts, batch.sequences, batch.advantages / batch.size)
    )
    for ratio in ("sequence", "token"):
        parts = surrogate_parts(tiny, tiny.base_theta, batch, 0.5, ratio, 0.2)
        np.testing.assert_allclose(parts.gradient, expected, atol=1e-14)
        assert parts.clip_fraction == 0.0
        np.testing.assert_allclose(parts.log_token_ratio, 0.0)


def _table(instance, prompts, sequences, values):
    table = np.zeros((instance.n_prompts, instance.n_sequences))
    np.add.at(table, (prompts.ravel(), sequences.ravel()), values.ravel())
    return table


def test_sampled_reinforce_gradient_is_unbiased_on_average(tiny):
    rng = np.random.default_rng(0)
    log_probs = base_sequence_log_policy(tiny)
    view, policy = bandit_view(tiny), TokenPolicy(tiny)

    def estimate():
        prompts, sequences = sample_sequences(tiny, log_probs, rng, 32)
        return sampled_gradient(view, policy.initial_params, prompts.ravel(), sequences.ravel(), policy=policy)

    estimates = [estimate() for _ in range(400)]
    exact = reward_gradient(tiny, tiny.base_theta).ravel()
    standard_error = np.std(estimates, axis=0) / np.sqrt(len(estimates))
    assert np.all(np.abs(np.mean(estimates, axis=0) - exact) <= 5 * standard_error + 1e-12)


def test_sampled_sequences_follow_the_policy(tiny, theta):
    log_probs = sequence_log_policy(tiny, theta)
    prompts, sequences = sample_sequences(tiny, log_probs, np.random.default_rng(1), 20000)
    counts = np.zeros_like(log_probs)
    np.add.at(counts, (prompts.ravel(), sequences.ravel()), 1.0)
    expected = np.bincount(prompts.ravel(), minlength=2)[:, None] * np.exp(log_probs)
    assert np.all(np.abs(counts - expected) <= 5 * np.sqrt(expected) + 1)


# ---------------------------------------------------------------------------------------
# Algorithms: costs, outcomes, reproducibility


def test_cost_accounting_matches_the_shared_trajectory_conventions(tiny):
    reinforce = run_on_sequences("reinforce_exact", tiny, eta=1.0, n_iterations=20, record_every=5)
    assert list(reinforce.gradient_steps) == [0, 5, 10, 15, 20] and reinforce.total_responses == 0
    apmd = run_on_sequences("apmd", tiny, beta=0.5, eta=1.0, inner_steps=3, n_iterations=4)
    assert apmd.total_gradient_steps == 12 and apmd.reference_resets[-1] == 4 and apmd.n_records == 5
    sampled = run_on_sequences(
        "reinforce", tiny, rng=np.random.default_rng(0), eta=1.0, n_iterations=7, batch_size=4
    )
    assert sampled.total_responses == 28 and sampled.total_gradient_steps == 7
    ppo = sampled_sequence_ppo(
        tiny, beta=0.5, eta=1.0, inner_steps=3, n_iterations=4, batch_size=5, rng=np.random.default_rng(0), group_size=2
    )
    assert ppo.trajectory.total_responses == 40 and ppo.trajectory.total_gradient_steps == 12
    assert ppo.trajectory.reference_resets[-1] == 4 and ppo.ratios.max_abs_log_token_ratio.shape == (4,)


def test_collapse_without_resets_and_coverage_kept_with_resets():
    """The known outcome on V = 4, L = 4, gap 0.1, separated at the first token."""
    instance = sequence_collapse_instance(0.1, 4, 4, shared_prefix=0)
    reinforce = run_on_sequences("reinforce_exact", instance, eta=4.0, n_iterations=3000, record_every=10)
    assert reinforce.min_log10_coverage < -3.0
    assert reinforce.steps_to_eps(0.05) is None
    assert reinforce.reward[-1] > 0.85  # reward rises while coverage collapses
    apmd = run_on_sequences(
        "apmd", instance, beta=0.5, eta=4.0, inner_steps=8, n_iterations=20, record_each_step=True
    )
    assert apmd.min_log10_coverage >= LOG10_BASE_COVERAGE - 1e-9
    assert apmd.steps_to_eps(0.05) is not None and apmd.steps_to_eps(0.05) <= 160


def test_a_shared_prefix_up_to_the_last_token_prevents_the_collapse():
    instance = sequence_collapse_instance(0.1, 4, 4, shared_prefix=3)
    reinforce = run_on_sequences("reinforce_exact", instance, eta=4.0, n_iterations=200)
    assert reinforce.min_log10_coverage >= LOG10_BASE_COVERAGE - 1e-9
    assert reinforce.steps_to_eps(0.05) is not None


@pytest.mark.parametrize("ratio, clip_epsilon", [("sequence", None), ("token", 0.2)])
def test_sampled_runs_are_reproducible_from_a_seed(tiny, ratio, clip_epsilon):
    def run(seed):
        return sampled_sequence_ppo(
            tiny, beta=0.5, eta=2.0, inner_steps=3, n_iterations=5, batch_size=4, rng=np.random.default_rng(seed),
            ratio=ratio, clip_epsilon=clip_epsilon,
        )

    first, second, other = run(11), run(11), run(12)
    np.testing.assert_array_equal(first.trajectory.reward, second.trajectory.reward)
    np.testing.assert_array_equal(first.ratios.max_abs_log_sequence_ratio, second.ratios.max_abs_log_sequence_ratio)
    assert not np.array_equal(first.trajectory.reward, other.trajectory.reward)
    reinforce = [
        run_on_sequences("reinforce", tiny, rng=np.random.default_rng(3), eta=1.0, n_iterations=5, batch_size=4).reward
        for _ in range(2)
    ]
    np.testing.assert_array_equal(*reinforce)


def test_sequence_experiment_runs_small_and_summarizes():
    experiment = sequence_experiment(
        gap=0.2, vocab_size=3, length=3, reinforce_steps=50, apmd_iterations=3, ratio_lengths=(2, 3)
    )
    assert experiment.max_abs_log_sequence_ratio.shape == (3, 2, 3)
    assert experiment.ratio_steps_to_eps.shape == (3, 2)
    assert len(experiment.sampled) == 4 and len(experiment.reinforce) == 2
    assert list(experiment.shared_prefixes) == [0, 2]
    text = experiment.summary()
    assert "token ratio, clip 0.2" in text and "APMD" in text and "exact REINFORCE" in text
    table = experiment.table()
    assert len(table.rows) == 2 * 2 + 4 and table.column("shared prefix (tokens)")[:4] == [0, 0, 2, 2]
    ratios = experiment.ratio_table()
    assert len(ratios.rows) == 3 * 2 and ratios.column("$H$") == [2, 3] * 3
    assert ratios.rows[0][2] == experiment.max_abs_log_sequence_ratio[0, 0].max()
    assert "token ratio, clip 0.2" in str(ratios)


# ---------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda i, t: run_on_sequences("reinforce_exact", i, eta=0.0, n_iterations=1), "eta"),
        (lambda i, t: run_on_sequences("reinforce_exact", i, eta=1.0, n_iterations=1, beta=-1.0), "beta"),
        (lambda i, t: run_on_sequences("apmd", i, beta=0.0, eta=1.0, inner_steps=1, n_iterations=1), "beta"),
        (lambda i, t: regularized_gradient(i, t, base_sequence_log_policy(i), float("nan")), "beta"),
        (lambda i, t: reward_gradient(i, np.where(t == t.max(), np.nan, t)), "theta"),
        (lambda i, t: reward_gradient(i, t[:, :-1]), "theta"),
        (lambda i, t: expected_kl(i, base_sequence_log_policy(i)[:, :-1], base_sequence_log_policy(i)), "log_p"),
        (lambda i, t: sampled_sequence_ppo(i, **SMALL_PPO, ratio="prefix"), "ratio"),
        (lambda i, t: sampled_sequence_ppo(i, **SMALL_PPO, clip_epsilon=1.5), "clip_epsilon"),
        (lambda i, t: sampled_sequence_ppo(i, **SMALL_PPO, group_size=1), "group_size"),
        (lambda i, t: sampled_sequence_ppo(i, **{**SMALL_PPO, "rng": 0}), "rng"),
        (lambda i, t: sampled_sequence_ppo(None, **SMALL_PPO), "instance"),
        (lambda i, t: sampled_sequence_ppo(bandit_view(i), **SMALL_PPO), "instance"),
        (lambda i, t: sequence_log_policy("instance", t), "instance"),
        (lambda i, t: base_sequence_log_policy(None), "instance"),
        (lambda i, t: bandit_view(None), "instance"),
        (lambda i, t: run_on_sequences("apmd", None, beta=1.0, eta=1.0, inner_steps=1, n_iterations=1), "instance"),
        (lambda i, t: sample_sequences(i, base_sequence_log_policy(i), 0, 2), "rng"),
        (lambda i, t: sample_sequences(i, np.exp(base_sequence_log_policy(i)), np.random.default_rng(0), 2), "log_probs"),
        (lambda i, t: draw_sequence_batch(i, t, 2, 2, None), "rng"),
        (lambda i, t: batch_token_log_probs(i, t, np.array([0, 5]), np.array([0, 1])), "prompts"),
        (lambda i, t: batch_token_log_probs(i, t, np.array([0, 0]), np.array([0, -1])), "sequences"),
        (lambda i, t: surrogate_parts(i, t, "batch", 0.5), "batch"),
        (lambda i, t: regularized_objective(i, t, np.zeros((1, 3)), 0.5), "log_reference"),
        (lambda i, t: sequence_index(np.array([0, 7]), 4), "tokens"),
        (lambda i, t: sequence_index(np.array([0, 1]), 1.5), "vocab_size"),
        (lambda i, t: run_on_sequences("reinforce", i, rng="seed", eta=1.0, n_iterations=1, batch_size=4), "rng"),
        (
            lambda i, t: run_on_sequences(
                "reinforce", i, rng=np.random.default_rng(0), eta=1.0, n_iterations=1, batch_size=1
            ),
            "batch_size",
        ),
        (lambda i, t: token_score_sum(i, t, np.ones((2, 5))), "coefficients"),
        (lambda i, t: TokenPolicy(i).log_policy(t.ravel()[:-1]), "params"),
    ],
)
def test_bad_input_raises_naming_the_argument(tiny, theta, call, name):
    with pytest.raises(ValueError, match=name):
        call(tiny, theta)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"gap": 0.0}, "gap"),
        ({"gap": 0.2, "shared_prefix": 4}, "shared_prefix"),
        ({"gap": 0.2, "vocab_size": 1}, "vocab_size"),
        ({"gap": 0.2, "optimal_prob": 0.5, "distractor_prob": 0.6}, "optimal_prob"),
        ({"gap": 0.2, "n_prompts": 0}, "n_prompts"),
    ],
)
def test_bad_instance_arguments_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        sequence_collapse_instance(**kwargs)


def test_instance_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="base_theta"):
        SequenceInstance(2, 2, np.array([1.0]), np.zeros((1, 4)), np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="rewards"):
        SequenceInstance(2, 2, np.array([1.0]), np.zeros((1, 5)), np.zeros((1, 3, 2)))


@pytest.mark.parametrize("rng", ["x", -1, 1.5, True])
def test_sequence_instance_rejects_a_bad_seed_naming_rng(rng):
    with pytest.raises(ValueError, match="rng"):
        sequence_collapse_instance(0.1, rng=rng)
