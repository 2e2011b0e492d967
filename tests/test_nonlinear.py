"""Tests for the two-layer network policy and the package's algorithms run through it (covpo.labs.nonlinear)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.special import logsumexp

import covpo
from covpo.algorithms.mirror_descent import mirror_descent_policy
from covpo.algorithms.ppo_noclip import ppo_noclip_gradient, ppo_noclip_objective
from covpo.algorithms.ratios import RatioRecorder
from covpo.algorithms.reinforce import sampled_gradient
from covpo.batches import draw_batch
from covpo.families import stacked_collapse_instance
from covpo.instances import tabular_instance
from covpo.labs.nonlinear import (
    COLLAPSE_SETTINGS,
    METHODS,
    POLICIES,
    RANDOM_SETTINGS,
    NetworkPolicy,
    TwoLayerNetwork,
    base_fit_kl,
    batch_sensitivity,
    feature_matrix,
    forward,
    initial_parameters,
    logit_backprop,
    network_for,
    nonlinear_experiment,
)
from covpo.objectives import regularized_gradient, regularized_objective, reward_gradient
from covpo.policies import base_log_policy, expected_kl, expected_reward, log_policy
from tests.helpers import finite_difference, nonlinear_instance, small_instance


def tiny_tabular():
    """One-hot features (the sparse path): two prompts, three responses."""
    return tabular_instance(
        np.array([[1.0, 0.6, 0.0], [0.0, 1.0, 0.3]]), np.array([[0.1, 0.5, 0.4], [0.3, 0.2, 0.5]])
    )


INSTANCES = {"dense": nonlinear_instance, "one-hot": tiny_tabular}


def random_params(network: TwoLayerNetwork, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=network.n_params)


def network_log_policy(instance, network: TwoLayerNetwork, params: np.ndarray) -> np.ndarray:
    return forward(instance, network, params).log_probs


def zero_hidden_params(instance, network: TwoLayerNetwork, theta: np.ndarray) -> np.ndarray:
    """``W = 0, b = 0, v = 0``: the hidden layer is exactly 0 and stays 0 under gradient ascent."""
    h, d = network.width, network.dim
    return network.pack(np.zeros((h, d)), np.zeros(h), np.zeros(h), theta)


# ---------------------------------------------------------------------------------------
# Parameters and the policy


@pytest.mark.parametrize("skip", [True, False])
def test_pack_unpack_round_trip(skip):
    network = TwoLayerNetwork(dim=3, width=4, skip=skip)
    rng = np.random.default_rng(0)
    weights, bias, output = rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=4)
    theta = rng.normal(size=3) if skip else None
    params = network.pack(weights, bias, output, theta)
    assert params.shape == (network.n_params,) == (4 * 3 + 8 + (3 if skip else 0),)
    parts = network.unpack(params)
    np.testing.assert_array_equal(parts.hidden_weights, weights)
    np.testing.assert_array_equal(parts.hidden_bias, bias)
    np.testing.assert_array_equal(parts.output_weights, output)
    if skip:
        np.testing.assert_array_equal(parts.skip_weights, theta)
    else:
        assert parts.skip_weights is None
    np.testing.assert_array_equal(network.pack(*dataclasses.astuple(parts)), params)


@pytest.mark.parametrize("kind", INSTANCES)
def test_log_probabilities_are_normalized_even_for_huge_logits(kind):
    instance = INSTANCES[kind]()
    network = network_for(instance, width=5)
    for scale in (1.0, 300.0):
        log_probs = network_log_policy(instance, network, scale * random_params(network))
        assert log_probs.shape == (instance.n_prompts, instance.n_responses)
        assert np.all(np.isfinite(log_probs)) and np.all(log_probs <= 0.0)
        np.testing.assert_allclose(logsumexp(log_probs, axis=1), 0.0, atol=1e-12)


def test_sparse_and_dense_feature_paths():
    assert isinstance(feature_matrix(nonlinear_instance()), np.ndarray)
    one_hot = tiny_tabular()
    assert not isinstance(feature_matrix(one_hot), np.ndarray)
    assert isinstance(feature_matrix(small_instance()), np.ndarray)
    np.testing.assert_array_equal(feature_matrix(one_hot).toarray(), one_hot.features.reshape(6, 6))


@pytest.mark.parametrize("kind", INSTANCES)
def test_zero_output_weights_give_the_linear_skip_policy(kind):
    instance = INSTANCES[kind]()
    network = network_for(instance, width=4)
    rng = np.random.default_rng(1)
    theta = rng.normal(size=instance.dim)
    params = network.pack(rng.normal(size=(4, instance.dim)), rng.normal(size=4), np.zeros(4), theta)
    np.testing.assert_allclose(network_log_policy(instance, network, params), log_policy(instance, theta), atol=1e-12)
    gradient = network.unpack(reward_gradient(instance, params, policy=NetworkPolicy(instance, network, params)))
    np.testing.assert_allclose(gradient.skip_weights, reward_gradient(instance, theta), atol=1e-12)
    np.testing.assert_array_equal(gradient.hidden_weights, 0.0)
    np.testing.assert_array_equal(gradient.hidden_bias, 0.0)
    assert np.any(gradient.output_weights != 0.0)


def test_initialization_is_close_to_the_base_model_and_seeded():
    instance = small_instance()
    network = network_for(instance, width=16)
    params = initial_parameters(instance, network, np.random.default_rng(5), output_scale=0.01)
    np.testing.assert_array_equal(params, initial_parameters(instance, network, np.random.default_rng(5)))
    parts = network.unpack(params)
    np.testing.assert_array_equal(parts.skip_weights, instance.base_theta)
    np.testing.assert_array_equal(parts.hidden_bias, 0.0)
    assert np.all(parts.output_weights != 0.0)
    assert 0.0 < base_fit_kl(instance, network, params) < 0.5 * 0.01**2
    larger = initial_parameters(instance, network, np.random.default_rng(5), output_scale=0.1)
    assert base_fit_kl(instance, network, larger) > base_fit_kl(instance, network, params)


def test_network_without_skip_term_is_fitted_to_the_base_model():
    instance = small_instance()
    network = network_for(instance, width=8, skip=False)
    params = initial_parameters(instance, network, np.random.default_rng(0))
    unfitted = network.pack(np.zeros((8, instance.dim)), np.zeros(8), np.zeros(8))
    assert base_fit_kl(instance, network, params) < 1e-3 < base_fit_kl(instance, network, unfitted)


# ---------------------------------------------------------------------------------------
# Exact gradients against finite differences


@pytest.mark.parametrize("kind", INSTANCES)
@pytest.mark.parametrize("skip", [True, False])
def test_reward_gradient_matches_finite_differences(kind, skip):
    instance = INSTANCES[kind]()
    network = network_for(instance, width=3, skip=skip)
    params = random_params(network)
    numeric = finite_difference(lambda p: expected_reward(instance, network_log_policy(instance, network, p)), params)
    analytic = reward_gradient(instance, params, policy=NetworkPolicy(instance, network, params))
    np.testing.assert_allclose(analytic, numeric, atol=1e-8)


@pytest.mark.parametrize("kind", INSTANCES)
@pytest.mark.parametrize("skip", [True, False])
def test_regularized_gradient_matches_finite_differences(kind, skip):
    instance = INSTANCES[kind]()
    network = network_for(instance, width=3, skip=skip)
    params = random_params(network, seed=2)
    log_reference = log_policy(instance, np.random.default_rng(3).normal(size=instance.dim))
    beta = 0.7

    def objective(p: np.ndarray) -> float:
        return regularized_objective(instance, network_log_policy(instance, network, p), log_reference, beta)

    analytic = regularized_gradient(instance, params, log_reference, beta, policy=NetworkPolicy(instance, network, params))
    np.testing.assert_allclose(analytic, finite_difference(objective, params), atol=1e-8)


@pytest.mark.parametrize("kind", INSTANCES)
def test_ppo_noclip_gradient_matches_finite_differences(kind):
    instance = INSTANCES[kind]()
    network = network_for(instance, width=3)
    params = random_params(network, seed=4)
    batch = draw_batch(instance, log_policy(instance, instance.base_theta), 9, np.random.default_rng(6))
    policy = NetworkPolicy(instance, network, params)
    numeric = finite_difference(lambda p: ppo_noclip_objective(instance, p, batch, 0.4, policy=policy), params)
    np.testing.assert_allclose(ppo_noclip_gradient(instance, params, batch, 0.4, policy=policy), numeric, atol=1e-8)


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_sampled_gradient_is_the_gradient_of_the_score_surrogate(beta):
    instance = nonlinear_instance()
    network = network_for(instance, width=3)
    params = random_params(network, seed=7)
    policy = NetworkPolicy(instance, network, random_params(network, seed=1))  # pi_0: the policy's start
    rng = np.random.default_rng(8)
    prompts = rng.integers(0, instance.n_prompts, size=6)
    responses = rng.integers(0, instance.n_responses, size=6)
    log_probs = network_log_policy(instance, network, params)
    log_base = network_log_policy(instance, network, policy.initial_params)
    shaped = instance.rewards[prompts, responses] - beta * (log_probs - log_base)[prompts, responses]
    advantages = shaped - (shaped.sum() - shaped) / (shaped.size - 1)

    def surrogate(p: np.ndarray) -> float:
        return float(np.mean(advantages * network_log_policy(instance, network, p)[prompts, responses]))

    analytic = sampled_gradient(instance, params, prompts, responses, beta, policy=policy)
    np.testing.assert_allclose(analytic, finite_difference(surrogate, params), atol=1e-8)


@pytest.mark.parametrize("kind", INSTANCES)
def test_logit_backprop_is_the_vector_jacobian_product(kind):
    instance = INSTANCES[kind]()
    network = network_for(instance, width=3)
    params = random_params(network, seed=5)
    sensitivity = np.random.default_rng(6).normal(size=(instance.n_prompts, instance.n_responses))
    sensitivity -= sensitivity.mean(axis=1, keepdims=True)  # then sum S log pi = sum S f

    def contracted(p: np.ndarray) -> float:
        return float(np.sum(sensitivity * network_log_policy(instance, network, p)))

    analytic = logit_backprop(instance, network, params, sensitivity)
    np.testing.assert_allclose(analytic, finite_difference(contracted, params), atol=1e-8)
    with pytest.raises(ValueError, match="logit_sensitivity"):
        logit_backprop(instance, network, params, sensitivity[:, :-1])


def test_batch_sensitivity_sums_to_zero_per_prompt():
    instance = nonlinear_instance()
    log_probs = log_policy(instance, instance.base_theta)
    sensitivity = batch_sensitivity(instance, log_probs, np.array([0, 0, 1]), np.array([2, 2, 3]), np.ones(3))
    np.testing.assert_allclose(sensitivity.sum(axis=1), 0.0, atol=1e-15)
    assert sensitivity[0, 2] == pytest.approx(2.0 / 3.0 * (1.0 - np.exp(log_probs[0, 2])))


# ---------------------------------------------------------------------------------------
# Algorithms: exact equivalence with the linear ones when the hidden layer is zero


def test_network_policy_caches_only_the_last_forward_pass():
    instance = nonlinear_instance()
    network = network_for(instance, width=3)
    first, second = random_params(network, seed=1), random_params(network, seed=2)
    policy = NetworkPolicy(instance, network, first)
    for params in (first, second, first):
        np.testing.assert_array_equal(policy.log_policy(params), network_log_policy(instance, network, params))
    moved = first.copy()
    policy.log_policy(moved)
    moved[0] += 1.0  # changed in place: the cached pass must not be reused
    np.testing.assert_array_equal(policy.log_policy(moved), network_log_policy(instance, network, moved))
    np.testing.assert_array_equal(policy.initial_params, first)


# ---------------------------------------------------------------------------------------
# Algorithms through covpo.run: exact equivalence with the linear policy when the hidden layer is zero


def zero_hidden_policy(instance, width: int = 4) -> NetworkPolicy:
    network = network_for(instance, width=width)
    return NetworkPolicy(instance, network, zero_hidden_params(instance, network, instance.base_theta))


def test_zero_hidden_layer_exact_reinforce_is_linear_reinforce():
    instance = small_instance()
    policy = zero_hidden_policy(instance)
    ours = covpo.run("reinforce_exact", instance, policy=policy, eta=2.0, n_iterations=30, beta=0.1, record_every=10)
    theirs = covpo.run("reinforce_exact", instance, eta=2.0, n_iterations=30, beta=0.1, record_every=10)
    np.testing.assert_allclose(ours.reward, theirs.reward, atol=1e-12)
    np.testing.assert_allclose(ours.log_coverage, theirs.log_coverage, atol=1e-10)
    np.testing.assert_allclose(ours.kl_to_base, theirs.kl_to_base, atol=1e-10)
    np.testing.assert_array_equal(ours.gradient_steps, theirs.gradient_steps)
    np.testing.assert_array_equal(ours.responses_sampled, 0)


def test_zero_hidden_layer_exact_apmd_is_linear_apmd_with_the_same_costs():
    instance = small_instance()
    policy = zero_hidden_policy(instance)
    ours = covpo.run("apmd", instance, policy=policy, beta=0.5, eta=1.0, n_iterations=4, inner_steps=3)
    theirs = covpo.run("apmd", instance, beta=0.5, eta=1.0, n_iterations=4, inner_steps=3)
    np.testing.assert_allclose(ours.reward, theirs.reward, atol=1e-12)
    np.testing.assert_allclose(ours.inner_kl, theirs.inner_kl, atol=1e-12)
    for field in ("gradient_steps", "responses_sampled", "reference_resets"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field))
    assert ours.thetas.shape == (5, policy.network.n_params)


def test_zero_hidden_layer_sampled_runs_match_the_linear_ones_seed_for_seed():
    instance = small_instance()
    policy = zero_hidden_policy(instance)
    for beta in (0.0, 0.3):
        settings = {"eta": 1.0, "n_iterations": 20, "batch_size": 8, "beta": beta}
        ours = covpo.run("reinforce", instance, rng=np.random.default_rng(3), policy=policy, **settings)
        theirs = covpo.run("reinforce", instance, rng=np.random.default_rng(3), **settings)
        np.testing.assert_allclose(ours.reward, theirs.reward, atol=1e-12)
        np.testing.assert_array_equal(ours.responses_sampled, theirs.responses_sampled)
    settings = {"beta": 1.0, "eta": 0.5, "n_iterations": 3, "batch_size": 16, "inner_steps": 4}
    ours = covpo.run("ppo_noclip", instance, rng=np.random.default_rng(4), policy=policy, **settings)
    theirs = covpo.run("ppo_noclip", instance, rng=np.random.default_rng(4), **settings)
    np.testing.assert_allclose(ours.reward, theirs.reward, atol=1e-12)
    np.testing.assert_allclose(ours.inner_kl, theirs.inner_kl, atol=1e-12)
    for field in ("gradient_steps", "responses_sampled", "reference_resets", "generation_rounds"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field))
    assert ours.thetas.shape == (4, policy.network.n_params)


# ---------------------------------------------------------------------------------------
# Known outcomes, reproducibility, bad input


def test_accurate_network_apmd_follows_exact_mirror_descent():
    instance = tabular_instance(np.array([[1.0, 0.5, 0.0]]), np.array([[0.1, 0.6, 0.3]]))
    network = network_for(instance, width=3)
    params = initial_parameters(instance, network, np.random.default_rng(0), output_scale=1e-3)
    beta = 1.0
    policy = NetworkPolicy(instance, network, params)
    result = covpo.run("apmd", instance, policy=policy, beta=beta, eta=1.0, n_iterations=3, inner_steps=400)
    assert result.inner_kl.max() < 1e-6
    for t in range(4):
        log_probs = network_log_policy(instance, network, result.thetas[t])
        assert expected_kl(instance, log_probs, mirror_descent_policy(instance, beta, t)) < 1e-5
    assert np.all(np.diff(result.log_coverage[:, 0]) > 0.0)


def test_network_reinforce_collapses_while_accurate_network_apmd_keeps_coverage():
    instance = stacked_collapse_instance(2, 0.2, 40.0, n_zero=20)
    network = network_for(instance, width=8)
    policy = NetworkPolicy(instance, network, initial_parameters(instance, network, np.random.default_rng(0)))
    base = np.log10(1.0 / 40.0)
    reinforce = covpo.run("reinforce_exact", instance, policy=policy, eta=16.0, n_iterations=400, record_every=20)
    assert reinforce.min_log10_coverage < base - 3.0
    assert reinforce.suboptimality[-1] > 0.15
    resets = covpo.run("apmd", instance, policy=policy, beta=1.0, eta=8.0, n_iterations=10, inner_steps=40)
    assert resets.inner_kl.max() < 0.01
    assert resets.min_log10_coverage > base - np.log10(2.0)
    assert resets.suboptimality[-1] < 0.05


def test_apmd_records_every_inner_step_when_asked():
    instance = small_instance()
    network = network_for(instance, width=4)
    policy = NetworkPolicy(instance, network, initial_parameters(instance, network, np.random.default_rng(0)))
    result = covpo.run(
        "apmd", instance, policy=policy, beta=1.0, eta=0.5, n_iterations=3, inner_steps=2, record_each_step=True
    )
    np.testing.assert_array_equal(result.gradient_steps, np.arange(7))
    np.testing.assert_array_equal(result.reference_resets, [0, 1, 1, 2, 2, 3, 3])


def test_exact_reinforce_through_the_network_improves_reward():
    instance = small_instance()
    network = network_for(instance, width=6)
    policy = NetworkPolicy(instance, network, initial_parameters(instance, network, np.random.default_rng(1)))
    trajectory = covpo.run("reinforce_exact", instance, policy=policy, eta=0.5, n_iterations=40, record_every=10)
    assert list(trajectory.gradient_steps) == [0, 10, 20, 30, 40]
    assert np.all(np.diff(trajectory.reward) > 0.0)


def test_sampled_runs_are_reproducible_with_a_seed():
    instance = small_instance()
    network = network_for(instance, width=4)
    policy = NetworkPolicy(instance, network, initial_parameters(instance, network, np.random.default_rng(2)))

    def reinforce(seed: int):
        return covpo.run(
            "reinforce", instance, rng=np.random.default_rng(seed), policy=policy, eta=1.0, n_iterations=15,
            batch_size=8,
        )

    def ppo(seed: int):
        return covpo.run(
            "ppo_noclip", instance, rng=np.random.default_rng(seed), policy=policy, beta=1.0, eta=0.5,
            n_iterations=3, batch_size=8, inner_steps=3,
        )

    for run in (reinforce, ppo):
        first, again, other = run(9), run(9), run(10)
        np.testing.assert_array_equal(first.reward, again.reward)
        np.testing.assert_array_equal(first.log_coverage, again.log_coverage)
        assert not np.array_equal(first.reward, other.reward)


def test_ratio_diagnostics_see_the_network_policy():
    instance = small_instance()
    network = network_for(instance, width=4)
    params = initial_parameters(instance, network, np.random.default_rng(0))
    ratios = RatioRecorder()
    common = {"beta": 1.0, "eta": 1.0, "n_iterations": 2, "batch_size": 8, "inner_steps": 3}
    run = covpo.run(
        "ppo_noclip", instance, rng=np.random.default_rng(0), policy=NetworkPolicy(instance, network, params),
        on_inner_step=ratios, **common,
    )
    record = ratios.finish()
    assert record.n_rows == 2 * (3 + 1)
    start = record.inner_step == 0
    np.testing.assert_allclose(record.log_ratio_max[start], 0.0, atol=1e-12)
    last = forward(instance, network, run.thetas[-1]).log_probs - forward(instance, network, run.thetas[-2]).log_probs
    assert record.log_ratio_max[-1] == pytest.approx(last[instance.prompt_probs > 0.0].max(), abs=1e-12)


def test_bad_input_raises_value_error_naming_the_argument():
    instance = small_instance()
    network = network_for(instance, width=4)
    params = initial_parameters(instance, network, np.random.default_rng(0))
    policy = NetworkPolicy(instance, network, params)
    reference = base_log_policy(instance)
    cases = {
        "width": lambda: TwoLayerNetwork(dim=instance.dim, width=0),
        "beta": lambda: regularized_gradient(instance, params, reference, 0.0, policy=policy),
        "eta": lambda: covpo.run("reinforce_exact", instance, policy=policy, eta=-1.0, n_iterations=2),
        "theta": lambda: reward_gradient(instance, params[:-1], policy=policy),
        "log_ref": lambda: regularized_gradient(instance, params, reference + 1.0, 1.0, policy=policy),
        "network.dim": lambda: NetworkPolicy(instance, TwoLayerNetwork(dim=instance.dim + 1), params),
        "rng": lambda: covpo.run("reinforce", instance, rng=0, policy=policy, eta=1.0, n_iterations=2, batch_size=4),
        "inner_steps": lambda: covpo.run(
            "apmd", instance, policy=policy, beta=1.0, eta=1.0, n_iterations=2, inner_steps=0
        ),
    }
    for name, call in cases.items():
        with pytest.raises(ValueError, match=name):
            call()
    with pytest.raises(ValueError, match="params"):
        NetworkPolicy(instance, network, np.full(network.n_params, np.nan))
    with pytest.raises(ValueError, match="params"):
        policy.log_policy(np.full(network.n_params, np.nan))
    with pytest.raises(ValueError, match="beta"):
        covpo.run("ppo_noclip", instance, rng=np.random.default_rng(0), policy=policy, beta=-1.0, eta=1.0,
                  n_iterations=2, batch_size=4, inner_steps=2)


# ---------------------------------------------------------------------------------------
# The experiment, at tiny budgets


def test_nonlinear_experiment_shapes_and_summary():
    def tiny(settings):
        return dataclasses.replace(
            settings, reinforce_steps=4, apmd_steps=40, sampled_steps=4, ppo_iterations=2, ppo_batch=16, record_every=2
        )

    def run():
        return nonlinear_experiment(
            seeds=(0, 1), collapse_settings=tiny(COLLAPSE_SETTINGS), random_settings=tiny(RANDOM_SETTINGS)
        )

    result, again = run(), run()
    for name in ("min_log10_coverage", "final_suboptimality", "max_inner_kl", "init_kl"):
        np.testing.assert_array_equal(getattr(result, name), getattr(again, name))
    shape = (2, len(METHODS), len(POLICIES), 2)
    for name in ("min_log10_coverage", "reached", "steps_to_eps", "responses_to_eps", "final_suboptimality"):
        assert getattr(result, name).shape == shape
    assert result.init_kl.shape == (2, 2) and np.all(result.init_kl < 1e-4)
    exact = METHODS.index("exact REINFORCE")
    assert result.trajectories[0][exact][0][0] is result.trajectories[0][exact][0][1]
    assert np.all(np.isnan(result.max_inner_kl[:, exact])) and np.all(np.isfinite(result.max_inner_kl[:, 1]))
    assert result.base_log10_coverage[0] == pytest.approx(np.log10(1 / 40))
    assert result.trajectory("random", "PPO-NoClip", "network", 1).total_responses == 2 * 16
    text = result.summary()
    assert all(method in text for method in METHODS) and "collapse instance" in text
    table = result.table()
    assert len(table.rows) == 2 * len(METHODS) * len(POLICIES)
    assert set(table.column("method")) == set(METHODS) and set(table.column("policy")) == set(POLICIES)
    assert all(0 <= count <= 2 for count in table.column("seeds reaching ε (of 2)"))


def _bad_nonlinear_calls():
    from covpo.collapse_instance import collapse_instance
    from covpo.labs import nonlinear

    instance = small_instance()
    network = nonlinear.network_for(instance, width=4)
    params = nonlinear.initial_parameters(instance, network, np.random.default_rng(0))
    log_probs = base_log_policy(instance)
    prompts, responses = np.array([0, 1]), np.array([0, 1])
    return [
        (lambda: nonlinear.network_for(None), "instance"),
        (lambda: nonlinear.network_for(collapse_instance(0.1)), "instance"),
        (lambda: nonlinear.forward("x", network, params), "instance"),
        (lambda: nonlinear.initial_parameters(instance, network, 0), "rng"),
        (lambda: nonlinear.base_fit_kl(None, network, params), "instance"),
        (lambda: nonlinear.population_sensitivity(instance, np.exp(log_probs), np.zeros_like(log_probs)), "log_probs"),
        (lambda: nonlinear.population_sensitivity(instance, log_probs, np.zeros(3)), "advantage"),
        (lambda: nonlinear.batch_sensitivity(instance, log_probs, prompts + 5, responses, np.ones(2)), "prompts"),
        (lambda: nonlinear.batch_sensitivity(instance, log_probs, prompts, responses - 1, np.ones(2)), "responses"),
        (lambda: nonlinear.batch_sensitivity(instance, log_probs, prompts, responses, np.ones(3)), "coefficients"),
        (lambda: nonlinear.logit_backprop(instance, network, params, np.zeros_like(log_probs), hidden=np.zeros(2)), "hidden"),
        (lambda: nonlinear.nonlinear_experiment(seeds=None), "seeds"),
        (lambda: nonlinear.nonlinear_experiment(collapse_settings=None), "collapse_settings"),
    ]


@pytest.mark.parametrize("index", range(13))
def test_lab_bad_input_raises_naming_the_argument(index):
    call, name = _bad_nonlinear_calls()[index]
    with pytest.raises(ValueError, match=name):
        call()
