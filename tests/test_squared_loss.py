"""KimiPO, KimiPO-Norm and Rebel-OnPolicy (paper section 4, Algorithms 3 to 5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covpo.algorithms.kimipo import (
    BaselineBatch,
    draw_baseline_batch,
    kimi_gradient,
    kimi_loss,
    kimipo,
    mean_baseline,
    normalizer_baseline,
)
from covpo.algorithms.npg import fisher_information
from covpo.algorithms.ratios import RatioRecorder
from covpo.algorithms.rebel import rebel_gradient, rebel_loss, rebel_onpolicy
from covpo.batches import draw_batch
from covpo.experiments.population import (
    kimi_population_gradient,
    kimi_population_hessian,
    kimi_population_loss,
    kimi_population_minimizer,
    mean_baseline_bias,
    mean_baseline_bias_approximation,
    mean_baseline_moments,
    minimizer_check,
    mse_coverage_bound,
    normalizer,
    normalizer_baseline_bias,
    normalizer_baseline_bias_approximation,
    normalizer_baseline_moments,
    rebel_population_gradient,
    rebel_population_hessian,
    rebel_population_loss,
    reference_fisher,
    regression_mse,
)
from covpo.instances import BanditInstance, random_softmax_linear_instance
from covpo.objectives import regularized_optimum
from covpo.policies import expected_kl, log_coverage, log_policy, sample_responses
from tests.helpers import finite_difference, nonlinear_instance, small_instance
from tests.strategies import instances_with_theta


def reference_and_theta(instance: BanditInstance, seed: int, scale: float = 0.5):
    rng = np.random.default_rng(seed)
    reference_theta = instance.base_theta + scale * rng.standard_normal(instance.dim)
    theta = reference_theta + scale * rng.standard_normal(instance.dim)
    return reference_theta, log_policy(instance, reference_theta), theta


# ---------------------------------------------------------------------------------------
# Gradients and Hessians against finite differences


@pytest.mark.parametrize("kind", ["mean", "normalizer"])
@pytest.mark.parametrize("seed", [0, 1])
def test_empirical_kimi_gradient_matches_finite_differences(kind, seed):
    instance = small_instance()
    _reference_theta, log_reference, theta = reference_and_theta(instance, seed)
    batch = draw_baseline_batch(instance, log_reference, 30, 3, np.random.default_rng(seed), baseline=kind, beta=0.7)
    numeric = finite_difference(lambda t: kimi_loss(instance, t, batch.regression, batch.baseline, 0.7), theta)
    analytic = kimi_gradient(instance, theta, batch.regression, batch.baseline, 0.7)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("seed", [0, 1])
def test_empirical_rebel_gradient_matches_finite_differences_and_the_loss_is_quadratic(seed):
    instance = small_instance()
    _, log_reference, theta = reference_and_theta(instance, seed)
    batch = draw_batch(instance, log_reference, 25, np.random.default_rng(seed), group_size=2)
    beta = 0.8
    numeric = finite_difference(lambda t: rebel_loss(instance, t, batch, beta), theta)
    np.testing.assert_allclose(rebel_gradient(instance, theta, batch, beta), numeric, rtol=1e-6, atol=1e-8)
    gaps = (
        instance.features[batch.prompts[:, 0], batch.responses[:, 0]]
        - instance.features[batch.prompts[:, 1], batch.responses[:, 1]]
    )
    expected = 2 * beta**2 * gaps.T @ gaps / gaps.shape[0]
    for point in (theta, theta + 3.0, -theta):
        hessian = finite_difference(lambda t: rebel_gradient(instance, t, batch, beta), point)
        np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("instance", [small_instance(), nonlinear_instance()], ids=["linear", "nonlinear"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_population_kimi_gradient_and_hessian_match_finite_differences(instance, seed):
    _, log_reference, theta = reference_and_theta(instance, seed)
    beta = 0.6
    baseline = np.random.default_rng(seed).random(instance.n_prompts)
    numeric = finite_difference(lambda t: kimi_population_loss(instance, t, log_reference, beta, baseline), theta)
    gradient = kimi_population_gradient(instance, theta, log_reference, beta, baseline)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-8)
    numeric_hessian = finite_difference(
        lambda t: kimi_population_gradient(instance, t, log_reference, beta, baseline), theta
    )
    hessian = kimi_population_hessian(instance, theta, log_reference, beta, baseline)
    np.testing.assert_allclose(hessian, numeric_hessian, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(hessian, hessian.T, atol=1e-12)


@pytest.mark.parametrize("instance", [small_instance(), nonlinear_instance()], ids=["linear", "nonlinear"])
def test_population_rebel_gradient_matches_and_its_hessian_is_constant_psd_and_the_reference_fisher(instance):
    _, log_reference, theta = reference_and_theta(instance, 4)
    beta = 0.9
    numeric = finite_difference(lambda t: rebel_population_loss(instance, t, log_reference, beta), theta)
    np.testing.assert_allclose(
        rebel_population_gradient(instance, theta, log_reference, beta), numeric, rtol=1e-6, atol=1e-8
    )
    hessian = rebel_population_hessian(instance, log_reference, beta)
    np.testing.assert_allclose(hessian, 4 * beta**2 * reference_fisher(instance, log_reference), atol=1e-14)
    assert np.linalg.eigvalsh(hessian).min() >= -1e-12
    for point in (theta, theta + 5.0, 3.0 * theta):
        numeric_hessian = finite_difference(
            lambda t: rebel_population_gradient(instance, t, log_reference, beta), point
        )
        np.testing.assert_allclose(numeric_hessian, hessian, rtol=1e-5, atol=1e-7)


def test_rebel_population_loss_is_twice_the_variance_over_enumerated_pairs():
    instance = nonlinear_instance()
    _, log_reference, theta = reference_and_theta(instance, 7)
    beta = 0.4
    u = log_policy(instance, theta) - log_reference
    probs = np.exp(log_reference)
    residual = beta * (u[:, :, None] - u[:, None, :]) - (instance.rewards[:, :, None] - instance.rewards[:, None, :])
    pairs = np.einsum("x,xy,xz,xyz->", instance.prompt_probs, probs, probs, residual**2)
    assert rebel_population_loss(instance, theta, log_reference, beta) == pytest.approx(pairs, rel=1e-12)


# ---------------------------------------------------------------------------------------
# The target is the minimizer with the true normalizer


@pytest.mark.parametrize("beta", [0.1, 0.5, 2.0, 10.0])
@pytest.mark.parametrize("seed", [0, 5])
def test_population_losses_vanish_at_the_target_with_the_true_normalizer(beta, seed):
    instance = random_softmax_linear_instance(np.random.default_rng(seed), 4, 6, 3)
    reference_theta = instance.base_theta + np.random.default_rng(seed + 1).standard_normal(instance.dim)
    check = minimizer_check(instance, reference_theta, beta)
    np.testing.assert_allclose(check.target_theta, reference_theta + instance.reward_theta / beta)
    assert check.kimi_loss_normalizer < 1e-20
    assert check.kimi_gradient_norm_normalizer < 1e-12
    assert check.rebel_loss < 1e-20
    assert check.rebel_gradient_norm < 1e-12
    log_reference = log_policy(instance, reference_theta)
    gap = normalizer(instance, log_reference, beta) - mean_baseline_moments(instance, log_reference).mean
    assert check.kimi_loss_mean == pytest.approx(instance.prompt_probs @ gap**2, rel=1e-9)
    assert check.kimi_loss_mean > 0.0
    assert check.kimi_gradient_norm_mean > 1e3 * check.kimi_gradient_norm_normalizer


def test_minimizer_check_refuses_a_nonlinear_reward():
    instance = nonlinear_instance()
    with pytest.raises(ValueError, match="reward_theta"):
        minimizer_check(instance, instance.base_theta, 1.0)


def test_empirical_losses_vanish_at_the_target_for_every_batch():
    """Under a linear reward, Rebel's loss and the exact-normalizer Kimi loss are zero sample by sample."""
    instance = small_instance()
    reference_theta, log_reference, _ = reference_and_theta(instance, 9)
    beta = 0.3
    target = reference_theta + instance.reward_theta / beta
    pairs = draw_batch(instance, log_reference, 50, np.random.default_rng(0), group_size=2)
    assert rebel_loss(instance, target, pairs, beta) < 1e-24
    single = draw_batch(instance, log_reference, 50, np.random.default_rng(1))
    exact = normalizer(instance, log_reference, beta)[single.prompts]
    assert kimi_loss(instance, target, single, exact, beta) < 1e-24


def minimizer_kl(instance: BanditInstance, beta: float, baseline: np.ndarray) -> float:
    """``E_x KL(pi || pi*_{t+1})`` at the population minimizer from the base model: one step's bias error."""
    log_reference = log_policy(instance, instance.base_theta)
    theta = kimi_population_minimizer(instance, instance.base_theta, beta, baseline)
    return expected_kl(instance, log_policy(instance, theta), regularized_optimum(instance, log_reference, beta))


def test_population_minimizer_is_the_target_with_the_true_normalizer():
    instance = small_instance()
    log_reference = log_policy(instance, instance.base_theta)
    for beta in (0.2, 1.0):
        assert minimizer_kl(instance, beta, normalizer(instance, log_reference, beta)) < 1e-12


def test_mean_baseline_step_error_decays_like_beta_to_the_minus_six():
    """The mean baseline shrinks the step by about ``Var(r) / (2 beta^2)``, so one step's KL error is ``O(beta^-6)``."""
    instance = small_instance()
    value = mean_baseline_moments(instance, log_policy(instance, instance.base_theta)).mean
    errors = [minimizer_kl(instance, beta, value) for beta in (0.4, 0.8, 1.6, 4.0, 8.0)]
    assert np.all(np.diff(errors) < 0.0)
    assert np.log2(errors[3] / errors[4]) == pytest.approx(6.0, abs=0.3)


def test_normalizer_baseline_step_error_decays_like_group_size_to_the_minus_two():
    """At fixed beta the normalizer baseline's bias is ``O(1 / G)``, so one step's KL error is ``O(G^-2)``."""
    instance = small_instance()
    log_reference = log_policy(instance, instance.base_theta)
    beta = 0.5
    errors = [
        minimizer_kl(instance, beta, normalizer_baseline_moments(instance, log_reference, beta, g).mean)
        for g in (1, 4, 16, 32)
    ]
    assert np.all(np.diff(errors) < 0.0)
    assert np.log2(errors[2] / errors[3]) == pytest.approx(2.0, abs=0.2)


# ---------------------------------------------------------------------------------------
# Curvature


@settings(max_examples=40, deadline=None)
@given(instances_with_theta(), st.floats(0.05, 5.0), st.integers(0, 2**32 - 1))
def test_kimipo_population_loss_with_the_mean_baseline_is_convex(pair, beta, seed):
    instance, theta = pair
    reference_theta = np.random.default_rng(seed).standard_normal(instance.dim) * 2.0
    log_reference = log_policy(instance, reference_theta)
    value = mean_baseline_moments(instance, log_reference).mean
    hessian = kimi_population_hessian(instance, theta, log_reference, beta, value)
    scale = max(1.0, np.abs(hessian).max())
    assert np.linalg.eigvalsh(hessian).min() >= -1e-10 * scale


def two_response_instance(reference_logit: float) -> BanditInstance:
    """One prompt, responses with features 0 and 1 and rewards 0 and 1: ``pi(y=1) = sigmoid(theta)``."""
    return BanditInstance(
        prompt_probs=np.ones(1),
        features=np.array([[[0.0], [1.0]]]),
        rewards=np.array([[0.0, 1.0]]),
        base_theta=np.array([reference_logit]),
        reward_theta=np.array([1.0]),
    )


def test_kimipo_norm_population_loss_has_negative_curvature_but_is_convex_at_the_target():
    """With pi_t(best) = 0.05 and beta = 0.1, the G = 16 normalizer baseline exceeds V_t by 0.37 > beta (1 + KL) = 0.15.

    At theta = 0 (pi_theta uniform) the Hessian
    ``2 beta^2 E_t (phi - 1/2)^2 + 2 beta (V_t - E bhat + beta KL(pi_t || pi_theta)) / 4`` is negative.
    """
    instance = two_response_instance(np.log(0.05 / 0.95))
    log_reference = log_policy(instance, instance.base_theta)
    beta = 0.1
    moments = normalizer_baseline_moments(instance, log_reference, beta, 16)
    assert moments.exact
    theta = np.zeros(1)
    hessian = kimi_population_hessian(instance, theta, log_reference, beta, moments.mean)
    assert hessian[0, 0] < 0.0

    def loss(t):
        return kimi_population_loss(instance, np.atleast_1d(t), log_reference, beta, moments.mean)

    assert loss(0.0) > 0.5 * (loss(-0.3) + loss(0.3))  # concave along a segment, not just a sign of a formula
    value = mean_baseline_moments(instance, log_reference).mean
    assert kimi_population_hessian(instance, theta, log_reference, beta, value)[0, 0] > 0.0
    target = instance.base_theta + instance.reward_theta / beta
    exact = normalizer(instance, log_reference, beta)
    assert kimi_population_hessian(instance, target, log_reference, beta, exact)[0, 0] > 0.0


# ---------------------------------------------------------------------------------------
# Baseline bias


def test_mean_baseline_bias_is_the_cumulant_generating_function_and_about_variance_over_two_beta():
    instance = small_instance()
    log_reference = log_policy(instance, instance.base_theta)
    betas = np.array([1.0, 4.0, 16.0, 64.0])
    bias = np.array([mean_baseline_bias(instance, log_reference, beta) for beta in betas])
    approximation = np.array([mean_baseline_bias_approximation(instance, log_reference, beta) for beta in betas])
    assert np.all(bias <= 0.0)
    relative = np.abs(bias / approximation - 1.0).max(axis=1)
    assert np.all(np.diff(relative) < 0.0)
    assert relative[-1] < 0.01
    assert np.all(relative * betas < 1.0)  # error O(1 / beta) relative to the leading term


def test_mean_baseline_bias_matches_monte_carlo():
    """``b_t - V_t`` against a Monte Carlo estimate of both expectations, within four standard errors."""
    instance = small_instance()
    log_reference = log_policy(instance, instance.base_theta)
    beta = 0.5
    rng = np.random.default_rng(0)
    draws = 200_000
    prompts = np.repeat(np.arange(instance.n_prompts)[:, None], draws, axis=1)
    rewards = instance.rewards[prompts, sample_responses(log_reference, prompts, rng)]
    value = rewards.mean(axis=1)
    z = np.exp(rewards / beta)
    log_partition = np.log(z.mean(axis=1))
    estimate = value - beta * log_partition
    # delta method for beta log mean(z); the two means are correlated, so combine per draw
    contributions = rewards - beta * z / z.mean(axis=1, keepdims=True)
    error = contributions.std(axis=1, ddof=1) / np.sqrt(draws)
    exact = mean_baseline_bias(instance, log_reference, beta)
    assert np.all(np.abs(estimate - exact) < 4 * error + 1e-12)


@pytest.mark.parametrize("group_size", [1, 3, 8])
def test_normalizer_baseline_moments_exact_agree_with_monte_carlo(group_size):
    instance = small_instance()
    log_reference = log_policy(instance, instance.base_theta)
    beta = 0.3
    exact = normalizer_baseline_moments(instance, log_reference, beta, group_size)
    assert exact.exact and np.all(exact.standard_error == 0.0)
    sampled = normalizer_baseline_moments(
        instance, log_reference, beta, group_size, rng=np.random.default_rng(1), n_samples=40_000, max_outcomes=1
    )
    assert not sampled.exact and np.all(sampled.standard_error > 0.0)
    assert np.all(np.abs(sampled.mean - exact.mean) < 4 * sampled.standard_error)
    np.testing.assert_allclose(sampled.variance, exact.variance, rtol=0.05)


def test_normalizer_baseline_bias_shrinks_with_group_size_and_starts_at_the_mean_baseline():
    instance = small_instance()
    log_reference = log_policy(instance, instance.base_theta)
    beta = 0.3
    sizes = [1, 2, 4, 8, 16, 32]
    biases = np.array([normalizer_baseline_bias(instance, log_reference, beta, g)[0] for g in sizes])
    np.testing.assert_allclose(biases[0], mean_baseline_bias(instance, log_reference, beta), atol=1e-12)
    assert np.all(biases <= 1e-15)
    assert np.all(np.diff(np.abs(biases), axis=0) < 0.0)
    approximation = normalizer_baseline_bias_approximation(instance, log_reference, beta, 32)
    np.testing.assert_allclose(biases[-1], approximation, rtol=0.15)


def test_normalizer_moments_need_a_generator_when_enumeration_is_too_large():
    instance = small_instance()
    log_reference = log_policy(instance, instance.base_theta)
    with pytest.raises(ValueError, match="rng"):
        normalizer_baseline_moments(instance, log_reference, 0.5, 64, max_outcomes=10)


def test_the_two_baselines_agree_for_one_extra_response_and_the_normalizer_approaches_b_t():
    rewards = np.random.default_rng(0).random((5, 1))
    np.testing.assert_allclose(normalizer_baseline(rewards, 0.2), mean_baseline(rewards))
    np.testing.assert_allclose(normalizer_baseline(np.zeros((2, 3)), 0.01), 0.0, atol=1e-15)
    many = np.random.default_rng(1).random((1, 7))
    assert normalizer_baseline(many, 1e-4)[0] == pytest.approx(many.max() - 1e-4 * np.log(7), abs=1e-9)


# ---------------------------------------------------------------------------------------
# Batches, inner loops and whole runs


def test_baseline_batch_draws_one_regression_and_m_extra_responses_per_prompt():
    instance = small_instance()
    log_reference = log_policy(instance, instance.base_theta)
    batch = draw_baseline_batch(instance, log_reference, 40, 3, np.random.default_rng(0))
    assert isinstance(batch, BaselineBatch)
    assert batch.regression.rewards.shape == (40,) and batch.extra_rewards.shape == (40, 3)
    assert batch.size == 160
    np.testing.assert_allclose(batch.baseline, batch.extra_rewards.mean(axis=1))
    norm = draw_baseline_batch(
        instance, log_reference, 40, 3, np.random.default_rng(0), baseline="normalizer", beta=0.5
    )
    np.testing.assert_array_equal(norm.extra_rewards, batch.extra_rewards)
    np.testing.assert_allclose(norm.baseline, normalizer_baseline(batch.extra_rewards, 0.5))
    with pytest.raises(ValueError, match="beta"):
        draw_baseline_batch(instance, log_reference, 4, 2, np.random.default_rng(0), baseline="normalizer")
    with pytest.raises(ValueError, match="baseline"):
        draw_baseline_batch(instance, log_reference, 4, 2, np.random.default_rng(0), baseline="median")


COMMON = {"beta": 1.0, "n_iterations": 4, "batch_size": 10, "inner_steps": 3, "eta": 0.3}


@pytest.mark.parametrize(
    "make, per_prompt",
    [
        (lambda inst, rng, rec: kimipo(inst, **COMMON, rng=rng, on_inner_step=rec), 2),
        (lambda inst, rng, rec: kimipo(inst, **COMMON, rng=rng, extra_responses=4, on_inner_step=rec), 5),
        (lambda inst, rng, rec: kimipo_norm(inst, **COMMON, extra_responses=6, rng=rng, on_inner_step=rec), 7),
        (lambda inst, rng, rec: rebel_onpolicy(inst, **COMMON, rng=rng, on_inner_step=rec), 2),
    ],
    ids=["kimipo", "kimipo-m4", "kimipo-norm-m6", "rebel"],
)
def test_runs_count_every_response_step_and_reset(make, per_prompt):
    ratios = RatioRecorder()
    trajectory = make(small_instance(), np.random.default_rng(0), ratios)
    assert trajectory.total_responses == per_prompt * 10 * 4
    assert trajectory.total_gradient_steps == 3 * 4
    assert trajectory.reference_resets[-1] == 4
    np.testing.assert_array_equal(trajectory.responses_sampled, per_prompt * 10 * np.arange(5))
    np.testing.assert_array_equal(trajectory.generation_rounds, np.arange(5))
    assert trajectory.thetas.shape == (5, 4) and trajectory.inner_kl.shape == (4,)
    assert ratios.finish().n_rows == 4 * (3 + 1)


def test_settings_name_the_baseline_and_its_extra_responses():
    instance = small_instance()
    trajectory = kimipo_norm(
        instance,
        beta=0.5,
        eta=0.1,
        n_iterations=2,
        batch_size=8,
        inner_steps=2,
        extra_responses=5,
        rng=np.random.default_rng(0),
    )
    settings_ = trajectory.settings
    assert settings_["baseline"] == "normalizer" and settings_["extra_responses"] == 5
    assert settings_["batch_size"] == 8 and settings_["beta"] == 0.5
    assert trajectory.algorithm == "KimiPO-Norm"
    mean = kimipo(
        instance, beta=0.5, eta=0.1, n_iterations=1, batch_size=8, inner_steps=2, rng=np.random.default_rng(0)
    )
    assert mean.settings["baseline"] == "mean" and mean.algorithm == "KimiPO"


@pytest.mark.same_on_every_cpu
@pytest.mark.parametrize("algorithm", ["kimipo", "kimipo_norm", "rebel_onpolicy"])
def test_a_seed_fixes_a_run_bit_for_bit(algorithm):
    instance = small_instance()

    def run(seed):
        kwargs = {
            "beta": 0.8,
            "eta": 0.5,
            "n_iterations": 3,
            "batch_size": 16,
            "inner_steps": 4,
            "rng": np.random.default_rng(seed),
            "record_each_step": True,
        }
        if algorithm == "kimipo":
            return kimipo(instance, **kwargs)
        if algorithm == "kimipo_norm":
            return kimipo_norm(instance, extra_responses=3, **kwargs)
        return rebel_onpolicy(instance, **kwargs)

    first, second, other = run(7), run(7), run(8)
    np.testing.assert_array_equal(first.thetas, second.thetas)
    np.testing.assert_array_equal(first.reward, second.reward)
    np.testing.assert_array_equal(first.log_coverage, second.log_coverage)
    np.testing.assert_array_equal(first.inner_kl, second.inner_kl)
    assert first.n_records == 1 + 3 * 4
    assert not np.array_equal(first.thetas, other.thetas)


def test_large_batch_inner_loops_approach_the_exact_target():
    """One reset with N = 4096: Rebel reaches the target exactly; M = 64 comes close; the mean baseline less so."""
    instance = small_instance()
    beta = 1.0
    eta = 1.0 / (4 * beta**2 * np.linalg.eigvalsh(fisher_information(instance, instance.base_theta)).max())
    common = {"beta": beta, "eta": eta, "n_iterations": 1, "batch_size": 4096, "inner_steps": 300}
    rebel = rebel_onpolicy(instance, **common, rng=np.random.default_rng(0)).inner_kl[0]
    norm = kimipo_norm(instance, **common, extra_responses=64, rng=np.random.default_rng(0)).inner_kl[0]
    mean = kimipo(instance, **common, rng=np.random.default_rng(0)).inner_kl[0]
    assert rebel < 1e-12
    assert norm < 1e-5
    assert mean > 10 * norm


def test_squared_loss_runs_improve_reward_and_keep_coverage():
    instance = small_instance()
    common = {"beta": 1.0, "eta": 1.0, "n_iterations": 15, "batch_size": 512, "inner_steps": 30}
    for algorithm in (kimipo, rebel_onpolicy):
        trajectory = algorithm(instance, **common, rng=np.random.default_rng(1))
        assert trajectory.suboptimality[-1] < 0.5 * trajectory.suboptimality[0]
        assert np.all(trajectory.log_coverage[-1] > trajectory.log_coverage[0] + np.log(0.5))
    norm = kimipo_norm(instance, **common, extra_responses=8, rng=np.random.default_rng(1))
    assert norm.suboptimality[-1] < 0.5 * norm.suboptimality[0]


# ---------------------------------------------------------------------------------------
# Mutation checks: the runs descend on the tested gradients, KL and baseline terms unscaled


def _descend(instance, eta, inner_steps, gradient):
    """``theta_1`` by hand: ``K`` descent steps ``theta <- theta - eta gradient(theta)`` from ``theta_0``."""
    theta = np.array(instance.base_theta, dtype=float)
    for _ in range(inner_steps):
        theta = theta - eta * gradient(theta)
    return theta


def _scaled(gradient, beta, beta_scale):
    """``gradient`` with its regularization term ``beta log(pi_theta / pi_t)`` scaled by ``beta_scale``.

    Both public gradients are ``beta`` times a function of the residual, in which ``beta``
    multiplies the log-ratio; evaluating at ``beta_scale beta`` and rescaling by ``1 / beta_scale``
    changes only that term.
    """
    return lambda theta: gradient(theta, beta_scale * beta) / beta_scale


MUTATION = {"beta": 0.7, "eta": 0.4, "n_iterations": 1, "batch_size": 12, "inner_steps": 3}


def _check_kimi_run(instance, theta_run, batch):
    """One outer iteration of a Kimi-style run is ``K`` descent steps on ``kimi_gradient`` with the batch's baseline."""
    beta, eta, k = MUTATION["beta"], MUTATION["eta"], MUTATION["inner_steps"]

    def gradient(baseline):
        return lambda theta, b: kimi_gradient(instance, theta, batch.regression, baseline, b)

    exact = _descend(instance, eta, k, lambda theta: gradient(batch.baseline)(theta, beta))
    np.testing.assert_array_equal(theta_run, exact)
    halved_kl = _descend(instance, eta, k, _scaled(gradient(batch.baseline), beta, 0.5))
    assert not np.allclose(theta_run, halved_kl, rtol=1e-6, atol=1e-9)
    halved_baseline = _descend(instance, eta, k, lambda theta: gradient(0.5 * batch.baseline)(theta, beta))
    assert not np.allclose(theta_run, halved_baseline, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(_descend(instance, eta, k, _scaled(gradient(batch.baseline), beta, 1.0)), exact)


@pytest.mark.parametrize("extra_responses", [1, 3])
def test_kimipo_descends_on_kimi_gradient_with_the_mean_baseline(extra_responses):
    instance = small_instance()
    rng = np.random.default_rng(3)
    theta_run = kimipo(instance, **MUTATION, extra_responses=extra_responses, rng=rng).thetas[1]
    log_reference = log_policy(instance, instance.base_theta)
    batch = draw_baseline_batch(instance, log_reference, 12, extra_responses, np.random.default_rng(3))
    np.testing.assert_array_equal(batch.baseline, mean_baseline(batch.extra_rewards))
    _check_kimi_run(instance, theta_run, batch)


def test_kimipo_norm_descends_on_kimi_gradient_with_the_normalizer_baseline():
    instance = small_instance()
    beta = MUTATION["beta"]
    theta_run = kimipo_norm(instance, **MUTATION, extra_responses=4, rng=np.random.default_rng(5)).thetas[1]
    log_reference = log_policy(instance, instance.base_theta)
    batch = draw_baseline_batch(
        instance, log_reference, 12, 4, np.random.default_rng(5), baseline="normalizer", beta=beta
    )
    np.testing.assert_array_equal(batch.baseline, normalizer_baseline(batch.extra_rewards, beta))
    _check_kimi_run(instance, theta_run, batch)
    mean_batch = draw_baseline_batch(instance, log_reference, 12, 4, np.random.default_rng(5))
    with pytest.raises(AssertionError):
        _check_kimi_run(instance, theta_run, mean_batch)


def test_rebel_onpolicy_descends_on_rebel_gradient():
    instance = small_instance()
    beta, eta, k = MUTATION["beta"], MUTATION["eta"], MUTATION["inner_steps"]
    theta_run = rebel_onpolicy(instance, **MUTATION, rng=np.random.default_rng(9)).thetas[1]
    log_reference = log_policy(instance, instance.base_theta)
    batch = draw_batch(instance, log_reference, 12, np.random.default_rng(9), group_size=2)

    def gradient(theta, b):
        return rebel_gradient(instance, theta, batch, b)

    np.testing.assert_array_equal(theta_run, _descend(instance, eta, k, lambda theta: gradient(theta, beta)))
    halved_kl = _descend(instance, eta, k, _scaled(gradient, beta, 0.5))
    assert not np.allclose(theta_run, halved_kl, rtol=1e-6, atol=1e-9)


BAD = {"beta": 1.0, "eta": 0.1, "n_iterations": 1, "batch_size": 4, "inner_steps": 1, "rng": np.random.default_rng(0)}


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: kimipo(small_instance(), **{**BAD, "batch_size": 0}), "batch_size"),
        (lambda: kimipo(small_instance(), **{**BAD, "inner_steps": 0}), "inner_steps"),
        (lambda: kimipo(small_instance(), **{**BAD, "eta": -0.1}), "eta"),
        (lambda: kimipo(small_instance(), **BAD, extra_responses=0), "extra_responses"),
        (lambda: kimipo_norm(small_instance(), **BAD, extra_responses=0), "extra_responses"),
        (lambda: kimipo_norm(small_instance(), **{**BAD, "n_iterations": 0}, extra_responses=2), "n_iterations"),
        (lambda: rebel_onpolicy(small_instance(), **{**BAD, "eta": 0.0}), "eta"),
        (lambda: rebel_onpolicy(small_instance(), **{**BAD, "beta": 0.0}), "beta"),
        (lambda: rebel_onpolicy(small_instance(), **{**BAD, "rng": 0}), "rng"),
        (lambda: normalizer(small_instance(), log_policy(small_instance(), small_instance().base_theta), 0.0), "beta"),
        (
            lambda: kimi_population_loss(
                small_instance(), np.zeros(4), log_policy(small_instance(), np.zeros(4)), 1.0, np.zeros(2)
            ),
            "baseline",
        ),
        (
            lambda: rebel_loss(
                small_instance(),
                np.zeros(4),
                draw_batch(small_instance(), log_policy(small_instance(), np.zeros(4)), 3, np.random.default_rng(0)),
                1.0,
            ),
            "batch",
        ),
        (lambda: kimipo(small_instance(), **{**BAD, "rng": None}), "rng"),
        (lambda: mean_baseline_moments(small_instance(), np.zeros((3, 5)), 1), "log_reference"),
    ],
)
def test_bad_arguments_raise_value_errors_that_name_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ---------------------------------------------------------------------------------------
# The mean-squared-error criterion (paper section 4.1, appendices E and L)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regression_mse_is_the_exact_normalizer_loss_and_rebels_loss_is_twice_its_centered_part(seed):
    instance = random_softmax_linear_instance(np.random.default_rng(seed), 4, 6, 3)
    reference_theta, log_reference, theta = reference_and_theta(instance, seed)
    beta = 0.7
    log_probs = log_policy(instance, theta)
    mse = regression_mse(instance, log_reference, log_probs, beta)
    centered = regression_mse(instance, log_reference, log_probs, beta, centered=True)
    exact = kimi_population_loss(instance, theta, log_reference, beta, normalizer(instance, log_reference, beta))
    assert instance.prompt_probs @ mse == pytest.approx(exact, rel=1e-10)
    assert 2 * instance.prompt_probs @ centered == pytest.approx(
        rebel_population_loss(instance, theta, log_reference, beta), rel=1e-10
    )
    assert np.all(centered <= mse + 1e-15)
    target = regularized_optimum(instance, log_reference, beta)
    assert np.all(regression_mse(instance, log_reference, target, beta) < 1e-25)


@given(instances_with_theta(), st.floats(0.1, 5.0), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_coverage_never_falls_further_than_the_mse_bound(pair, beta, seed):
    instance, theta = pair
    log_reference = log_policy(instance, theta)
    rng = np.random.default_rng(seed)
    target = regularized_optimum(instance, log_reference, beta)
    noisy = target + rng.normal(scale=rng.uniform(0.01, 2.0), size=target.shape)
    log_next = noisy - np.logaddexp.reduce(noisy, axis=1, keepdims=True)
    bound = mse_coverage_bound(instance, log_reference, log_next, beta)
    fall = log_coverage(instance, log_reference) - log_coverage(instance, log_next)
    assert np.all(fall <= bound + 1e-9 * (1 + bound))


def test_mse_criterion_functions_reject_bad_arguments():
    instance = small_instance()
    log_reference = log_policy(instance, instance.base_theta)
    with pytest.raises(ValueError, match="beta"):
        regression_mse(instance, log_reference, log_reference, 0.0)
    with pytest.raises(ValueError, match="log_probs"):
        regression_mse(instance, log_reference, np.zeros((5, 7)), 1.0)
    with pytest.raises(ValueError, match="log_reference"):
        mse_coverage_bound(instance, np.zeros((5, 7)), log_reference, 1.0)


def kimipo_norm(instance: BanditInstance, **hyperparameters: object):
    """KimiPO-Norm as the registry runs it: :func:`kimipo` with the normalizer baseline."""
    return kimipo(instance, baseline="normalizer", **hyperparameters)
