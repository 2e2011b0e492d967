"""Sampling noise and coverage collapse over seeds (covpo.experiments.implications.noise)."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import joblib
import numpy as np
import pytest

import covpo
from covpo.algorithms.grpo import group_advantages, grpo_gradient
from covpo.algorithms.mirror_descent import exact_mirror_descent
from covpo.experiments.implications.noise import (
    SQUARED_LOSS_STEP_SCALE,
    DEPTH_TOLERANCE,
    NoiseStudy,
    coverage_depth,
    exact_counterpart,
    noise_methods,
    noise_study,
)
from covpo.experiments.population import kimi_population_gradient, mean_baseline_moments, rebel_population_gradient
from covpo.objectives import reward_gradient
from covpo.policies import base_log_policy, log_coverage
from covpo.batches import draw_batch
from covpo.experiments.sweeps import Method
from covpo.families import collapse_family
from covpo.trajectory import LOG10_E
from covpo.algorithms.reinforce import exact_reinforce

from .helpers import small_instance

REINFORCE, GRPO_FIXED, GRPO_RESET, PPO_LITE = noise_methods()


@lru_cache(maxsize=1)
def book_study() -> NoiseStudy:
    return noise_study((40.0,), (REINFORCE, GRPO_RESET), response_budget=6400, n_seeds=3, progress=False)


def test_the_budget_is_spent_in_whole_batches():
    assert REINFORCE.with_response_budget(6400).n_iterations == 200
    assert GRPO_FIXED.with_response_budget(6400).n_iterations == 25
    assert PPO_LITE.with_response_budget(6500).n_iterations == 25
    with pytest.raises(ValueError, match="response_budget"):
        PPO_LITE.with_response_budget(100)


def test_depth_is_zero_for_exact_mirror_descent_and_the_coverage_fall_for_reinforce():
    instance = collapse_family((40.0,))[0]
    assert coverage_depth(instance, exact_mirror_descent(instance, beta=1.0, n_iterations=10)) == 0.0
    trajectory = exact_reinforce(instance, eta=64.0, n_iterations=200)
    expected = (trajectory.log_coverage - log_coverage(instance, base_log_policy(instance))).min() * LOG10_E
    assert coverage_depth(instance, trajectory) == pytest.approx(expected)
    assert coverage_depth(instance, trajectory) < -1.0


def test_one_step_grpo_without_kl_is_reinforce_at_a_scaled_rate_in_expectation():
    instance = small_instance()
    rng = np.random.default_rng(0)
    log_base = base_log_policy(instance)
    group_size, n_batches = 4, 4000
    gradients = []
    for _ in range(n_batches):
        batch = draw_batch(instance, log_base, 8, rng, group_size)
        advantages = group_advantages(batch.rewards)
        gradients.append(grpo_gradient(instance, instance.base_theta, batch, advantages, log_base, 0.0))
    gradients = np.array(gradients)
    expected = (1.0 - 1.0 / group_size) * reward_gradient(instance, instance.base_theta)
    error = gradients.mean(axis=0) - expected
    standard_error = gradients.std(axis=0, ddof=1) / np.sqrt(n_batches)
    assert np.all(np.abs(error) < 4.0 * standard_error + 1e-12)


def test_exact_counterparts():
    instance = collapse_family((10.0,))[0]
    fixed = GRPO_FIXED.with_response_budget(2560)
    scaled = exact_reinforce(instance, eta=64.0 * (1 - 1 / 8), n_iterations=10)
    np.testing.assert_array_equal(exact_counterpart(fixed, instance).reward, scaled.reward)
    reset = exact_counterpart(GRPO_RESET.with_response_budget(512), instance)
    assert reset.total_gradient_steps == 2 * 20 and reset.reference_resets[-1] == 2
    with_kl = GRPO_FIXED.with_hyperparameters(beta=0.05, n_iterations=2)
    assert exact_counterpart(with_kl, instance) is None
    npg = Method("NPG", "npg", {"beta": 1.0, "batch_size": 8, "group_size": 2, "n_iterations": 2})
    assert exact_counterpart(npg, instance) is None
    reinforce_kl = REINFORCE.with_hyperparameters(beta=0.05, n_iterations=10)
    expected = exact_reinforce(instance, eta=64.0, n_iterations=10, beta=0.05)
    np.testing.assert_array_equal(exact_counterpart(reinforce_kl, instance).reward, expected.reward)


def test_noise_deepens_reinforce_collapse_and_resets_keep_coverage():
    study = book_study()
    assert study.collapsed_fraction[0, 0] == 1.0 and study.exact_collapsed[0, 0]
    assert study.deeper_than_exact_fraction[0, 0] == 1.0
    assert study.collapsed_fraction[1, 0] == 0.0 and not study.exact_collapsed[1, 0]
    assert study.reached_fraction[1, 0] == 1.0 and study.reached_fraction[0, 0] == 0.0
    assert np.all(study.depth[1] >= study.exact_depth[1, 0, None] - DEPTH_TOLERANCE)


def test_study_shapes_and_summary():
    study = book_study()
    assert study.names == ("REINFORCE", "GRPO, resets")
    for array in (study.depth, study.responses_to_eps, study.final_suboptimality, study.diverged):
        assert array.shape == (2, 1, 3)
    for derived in (study.collapsed_fraction, study.reached_fraction, study.median_responses_to_eps,
                    study.exact_depth, study.exact_steps_to_eps):
        assert derived.shape == (2, 1)
    assert study.depth_quantiles((0.5,)).shape == (2, 1, 1)
    assert np.all(study.depth <= 0.0)
    assert [m.n_iterations for m in study.methods] == [200, 25]
    assert "REINFORCE" in study.summary() and "C_cov = 40" in study.summary()
    table = study.table()
    assert table.column("method") == ["REINFORCE", "GRPO, resets"] and table.column(r"$C_{\mathrm{cov}}$") == [40.0, 40.0]
    assert table.column("collapsed (% of seeds)") == [100 * f for f in study.collapsed_fraction[:, 0]]
    assert "REINFORCE" in str(table)
    with pytest.raises(dataclasses.FrozenInstanceError):
        study.eps = 1.0


def test_results_do_not_depend_on_the_backend():
    kwargs = {"response_budget": 512, "n_seeds": 2, "progress": False}
    methods = (REINFORCE, GRPO_FIXED)
    serial = noise_study((10.0, 20.0), methods, **kwargs)
    with joblib.parallel_config(backend="threading", n_jobs=2):
        threaded = noise_study((10.0, 20.0), methods, **kwargs)
    for name in ("depth", "responses_to_eps", "final_suboptimality", "exact_depth"):
        np.testing.assert_array_equal(getattr(serial, name), getattr(threaded, name))


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"coverages": (-1.0,)}, "coverages"),
        ({"coverages": ()}, "coverages"),
        ({"n_seeds": 0}, "n_seeds"),
        ({"eps": np.nan}, "eps"),
        ({"collapse_decades": 0.0}, "collapse_decades"),
        ({"response_budget": 10}, "response_budget"),
        ({"methods": ()}, "methods"),
    ],
)
def test_noise_study_rejects_bad_input(arguments, name):
    with pytest.raises(ValueError, match=name):
        noise_study(**{"coverages": (10.0,), "n_seeds": 1, "progress": False, **arguments})


def test_a_misconfigured_method_propagates_instead_of_reading_as_diverged():
    # the Method refuses the setting when it is built, before any run could read it as diverged
    with pytest.raises(ValueError, match="beta"):
        broken = GRPO_RESET.with_hyperparameters(beta=0.0)
        noise_study((10.0,), (broken,), response_budget=512, n_seeds=1, progress=False)


def test_depth_quantiles_reject_bad_levels():
    with pytest.raises(ValueError, match="levels"):
        book_study().depth_quantiles((1.5,))


def _bad_noise_calls():
    from covpo.collapse_instance import collapse_instance
    from covpo.experiments.implications import noise

    instance = small_instance()
    method = Method("R", "reinforce", {"batch_size": 4, "n_iterations": 2}, (1.0,))
    trajectory = exact_reinforce(instance, eta=1.0, n_iterations=2)
    return [
        (lambda: noise.coverage_depth(None, trajectory), "instance"),
        (lambda: noise.coverage_depth(collapse_instance(0.1), trajectory), "instance"),
        (lambda: noise.coverage_depth(instance, "x"), "trajectory"),
        (lambda: noise.coverage_depth(collapse_family((10.0,))[0], trajectory), "trajectory"),
        (lambda: noise.exact_counterpart(None, instance), "method"),
        (lambda: noise.sampled_noise_run(method, instance, 0.1, (-1,)), "seed"),
        (lambda: noise.sampled_noise_run(method, "x", 0.1, (0,)), "instance"),
        (lambda: noise.exact_noise_run(method, instance, float("nan")), "eps"),
        (lambda: noise.noise_study((10.0,), [None], progress=False), "methods"),
        (lambda: noise.noise_study((10.0,), [method], response_budget="x", progress=False), "response_budget"),
    ]


@pytest.mark.parametrize("index", range(10))
def test_bad_input_raises_naming_the_argument(index):
    call, name = _bad_noise_calls()[index]
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize(("algorithm", "scale"), [("kimipo", 2.0), ("kimipo_norm", 2.0), ("rebel_onpolicy", 4.0)])
def test_a_squared_loss_method_s_counterpart_is_apmd_at_its_scaled_step(algorithm, scale):
    # the squared-loss step at theta_t is c beta eta grad J: KimiPO's 2 beta, Rebel's 4 beta
    instance = collapse_family((10.0,))[0]
    beta, eta = 0.7, 0.25  # 2 beta != 1, so the scaled step differs from eta
    method = Method("squared", algorithm, {"beta": beta, "batch_size": 8, "inner_steps": 3, "n_iterations": 2}, (eta,))
    expected = covpo.run("apmd", instance, beta=beta, eta=scale * beta * eta, n_iterations=2, inner_steps=3)
    np.testing.assert_array_equal(exact_counterpart(method, instance).reward, expected.reward)


def test_the_squared_loss_step_scales_are_the_losses_gradients_at_the_reference():
    instance = small_instance()
    log_base, beta = base_log_policy(instance), 0.7
    gradient_j = reward_gradient(instance, instance.base_theta)
    value = mean_baseline_moments(instance, log_base).mean
    kimi = kimi_population_gradient(instance, instance.base_theta, log_base, beta, value)
    rebel = rebel_population_gradient(instance, instance.base_theta, log_base, beta)
    np.testing.assert_allclose(kimi, -SQUARED_LOSS_STEP_SCALE["kimipo"] * beta * gradient_j, atol=1e-12)
    np.testing.assert_allclose(rebel, -SQUARED_LOSS_STEP_SCALE["rebel_onpolicy"] * beta * gradient_j, atol=1e-12)


def test_grpo_scaled_by_its_groups_spread_has_no_exact_counterpart():
    instance = collapse_family((10.0,))[0]
    assert exact_counterpart(GRPO_FIXED.with_hyperparameters(scale_by_std=True, n_iterations=2), instance) is None
    assert exact_counterpart(GRPO_RESET.with_hyperparameters(scale_by_std=True, n_iterations=2), instance) is None
