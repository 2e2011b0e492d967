"""The measurements of chapter 4 (covpo.experiments.ppo): weights, clipping, estimates, and its sweeps and recipes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covpo.objectives import regularized_objective, regularized_optimum
from covpo.policies import (
    base_log_policy,
    expected_reward,
    log_policy,
)
from covpo import run
from covpo.algorithms.ppo_lite import (
    MAX_LOG_THRESHOLD,
    clip_width_thresholds,
    default_clip_thresholds,
    ppo_lite_gradient,
    ppo_lite_objective,
)
from covpo.algorithms.ppo_noclip import ppo_noclip_gradient, ppo_noclip_objective
from covpo.algorithms.ratios import RatioRecorder
from covpo.batches import ResponseBatch, draw_batch
from covpo.experiments.ppo import (
    PPO_INTERVAL,
    batch_estimates,
    clip_activity_grid,
    clipping_benefit,
    inner_loop_curvature,
    landscape,
    ppo_min_thresholds,
    regularized_hessian,
    estimator_spread,
    practice_recipes,
    ratio_bounds_by_beta,
    ratio_bounds_table,
    ratio_spread,
    ratio_spread_table,
    reverse_kl_optimum,
    target_log_ratio_extent,
)
from covpo.experiments.sweeps import (
    Method,
    collapse_family_methods,
    compare_at_budget,
    compare_recipes,
    cost_sweep,
    fit_coverage_power,
    methods_table,
    random_family_methods,
)
from covpo.families import random_family, stacked_collapse_instance
from covpo.table import Table
from tests.helpers import finite_difference, small_instance
from tests.strategies import softmax_linear_instances

# ---------------------------------------------------------------------------------------
# Importance weights


def test_ratio_spread_matches_the_run_and_orders_its_quantiles():
    instance = small_instance()
    recorder = RatioRecorder()
    trajectory = run("ppo_noclip", instance, rng=np.random.default_rng(0), beta=1.0, eta=1.0, n_iterations=4,
                     batch_size=32, inner_steps=5, on_inner_step=recorder)
    ratios = recorder.finish()
    spread = ratio_spread(instance, trajectory, ratios)
    assert spread.n_iterations == 4 and spread.log_ratio_quantiles.shape == (4, 5)
    assert np.all(np.diff(spread.log_ratio_quantiles, axis=1) >= 0.0)
    # the quantiles of the final weights lie within the extremes over all inner iterates
    assert np.all(spread.log_ratio_quantiles[:, 0] >= spread.log_ratio_min - 1e-12)
    assert np.all(spread.log_ratio_quantiles[:, -1] <= spread.log_ratio_max + 1e-12)
    assert spread.log_ratio_max.max() == pytest.approx(np.log(ratios.ratio_bounds[1]))
    assert spread.interval == default_clip_thresholds(1.0, instance.rewards.max())
    with pytest.raises(ValueError, match="levels"):
        ratio_spread(instance, trajectory, ratios, levels=(0.5, 1.5))


def test_ratio_bounds_table_runs_equal_mirror_descent_time():
    table = ratio_bounds_by_beta(small_instance(), (0.5, 2.0), eta_beta=1.0, inner_steps=3, batch_size=16, horizon=4, seed=0)
    assert list(table.n_iterations) == [2, 8]
    np.testing.assert_allclose(table.interval_high, np.exp(small_instance().rewards.max() / np.array([0.5, 2.0])))
    assert np.all(table.ratio_min <= table.batch_ratio_min) and np.all(table.batch_ratio_max <= table.ratio_max)
    assert np.all(table.extent > 0.0)


# ---------------------------------------------------------------------------------------
# Clipping


def test_width_one_is_the_default_interval_and_huge_widths_stay_finite():
    assert clip_width_thresholds(0.7, 1.3, 1.0) == pytest.approx(default_clip_thresholds(0.7, 1.3))
    low, high = clip_width_thresholds(1e-3, 1.0, 50.0)
    assert np.isfinite(high) and low > 0.0 and np.log(high) == pytest.approx(MAX_LOG_THRESHOLD)
    with pytest.raises(ValueError, match="width"):
        clip_width_thresholds(1.0, 1.0, 0.0)


@settings(max_examples=25, deadline=None)
@given(softmax_linear_instances(), st.floats(0.05, 5.0), st.integers(0, 2**31 - 1))
def test_targets_never_leave_the_default_interval(instance, beta, seed):
    thetas = instance.base_theta + np.random.default_rng(seed).standard_normal((3, instance.dim))
    assert target_log_ratio_extent(instance, thetas, beta) <= 1.0 + 1e-12


def test_clip_grid_default_interval_never_clips_here_and_the_fixed_column_is_last():
    instance = small_instance()
    grid = clip_activity_grid(instance, (0.5, 2.0), (0.1, 1.0), eta_beta=1.0, inner_steps=3, batch_size=32, horizon=3, seed=0)
    assert grid.clip_fraction.shape == (2, 3)
    assert grid.column_labels[-1] == "PPO [0.8, 1.2]"
    assert np.all(grid.target_extent <= 1.0)
    assert np.all(grid.clip_fraction[:, 0] >= grid.clip_fraction[:, 1])


# ---------------------------------------------------------------------------------------
# Estimates across batches


@pytest.mark.parametrize("instance", [stacked_collapse_instance(3, 0.2, 20, n_zero=10), small_instance()])
def test_batch_estimates_equal_the_algorithms_own_objectives_and_gradients(instance):
    log_reference = base_log_policy(instance)
    batch = draw_batch(instance, log_reference, 4 * 9, np.random.default_rng(0))
    prompts, responses = batch.prompts.reshape(4, 9), batch.responses.reshape(4, 9)
    theta = instance.base_theta + 2.5 * instance.reward_theta
    thresholds = (0.5, 2.0)
    estimates = batch_estimates(instance, theta, log_reference, prompts, responses, 0.7, thresholds)
    for m in range(4):
        one = ResponseBatch(prompts[m], responses[m], instance.rewards[prompts[m], responses[m]], log_reference[prompts[m], responses[m]])
        assert estimates["noclip"][m] == pytest.approx(ppo_noclip_objective(instance, theta, one, 0.7))
        np.testing.assert_allclose(estimates["noclip_gradient"][m], ppo_noclip_gradient(instance, theta, one, 0.7), atol=1e-12)
        lite = ppo_lite_objective(instance, theta, one, log_reference, 0.7, thresholds=thresholds)
        assert estimates["lite"][m] == pytest.approx(lite)
        lite_gradient = ppo_lite_gradient(instance, theta, one, log_reference, 0.7, thresholds=thresholds)
        np.testing.assert_allclose(estimates["lite_gradient"][m], lite_gradient, atol=1e-12)


def test_estimator_spread_is_unbiased_without_clipping_and_equal_at_the_reference():
    instance = small_instance()
    spread = estimator_spread(instance, 1.0, (0.0, 0.5, 3.0), batch_size=32, n_batches=300, seed=1)
    # at the reference every weight is 1: the two estimates have the same spread
    assert spread.noclip_std[0] == pytest.approx(spread.lite_std[0])
    assert spread.clip_fraction[0] == 0.0
    se = spread.noclip_std / np.sqrt(spread.n_batches)
    assert np.all(np.abs(spread.noclip_mean - spread.true_objective) < 4 * se)
    log_reference = base_log_policy(instance)
    truth = regularized_objective(instance, log_policy(instance, instance.base_theta + 3.0 * instance.reward_theta), log_reference, 1.0)
    assert spread.true_objective[-1] == pytest.approx(truth)
    assert np.all(spread.noclip_gradient_rmse >= spread.noclip_gradient_std - 1e-12)


# ---------------------------------------------------------------------------------------
# Sweeps


def test_methods_are_validated_and_count_their_budget():
    with pytest.raises(ValueError, match="algorithm"):
        Method("x", "ppo", {"beta": 1.0}, (1.0,))
    with pytest.raises(ValueError, match="beta"):
        Method("x", "ppo_noclip", {"beta": 0.0, "batch_size": 8, "inner_steps": 1, "n_iterations": 1}, (1.0,)).run(
            small_instance(), 1.0, np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="inner_steps"):
        Method("x", "reinforce", {"batch_size": 8, "inner_steps": 2, "n_iterations": 1}, (1.0,))
    with pytest.raises(ValueError, match="etas"):
        Method("x", "grpo_fixed", {"beta": 0.0, "batch_size": 8, "group_size": 4, "inner_steps": 1, "n_iterations": 1}, ())
    method = Method("x", "grpo_fixed", {"beta": 0.0, "batch_size": 8, "group_size": 4, "inner_steps": 2, "n_iterations": 5}, (1.0,))
    assert (method.responses_per_iteration, method.response_budget, method.step_budget) == (32, 160, 10)


def test_chapter_4_methods_keep_their_budgets():
    budgets = [(m.response_budget, m.step_budget) for m in random_family_methods()]
    assert budgets == [(10_240, 400), (10_240, 400), (10_240, 400), (15_360, 60), (9_600, 300)]
    budgets = [(m.response_budget, m.step_budget) for m in collapse_family_methods()]
    assert budgets == [(6_400, 1_000), (6_400, 1_000), (10_240, 800), (32_000, 125), (32_000, 1_000)]
    assert [m.hyperparameters["inner_steps"] for m in practice_recipes()] == [1, 1, 4]


@pytest.mark.parametrize("algorithm", ["ppo_noclip", "ppo_lite", "grpo_reset", "grpo_fixed", "reinforce"])
def test_every_algorithm_runs_with_its_costs_counted(algorithm):
    hyperparameters = {"batch_size": 8, "n_iterations": 3}
    if algorithm != "reinforce":
        hyperparameters.update(beta=0.0 if algorithm == "grpo_fixed" else 1.0, inner_steps=2)
    if algorithm.startswith("grpo"):
        hyperparameters["group_size"] = 4
    method = Method("x", algorithm, hyperparameters, (0.5,))
    trajectory = method.run(small_instance(), 0.5, np.random.default_rng(0))
    assert trajectory.total_responses == method.response_budget
    assert trajectory.total_gradient_steps == method.step_budget


def test_cost_sweep_keeps_the_best_learning_rate_and_counts_divergence_as_failure():
    instances = random_family((4.0,), seed=2)
    # KL to the fixed base model through the k3 loss: eta = 1e6 diverges, 1e-3 is too slow
    method = Method(
        "G", "grpo_fixed", {"beta": 1.0, "batch_size": 8, "group_size": 4, "inner_steps": 4, "n_iterations": 20},
        (1e-3, 2.0, 1e6),
    )
    sweep = cost_sweep(instances, (4.0,), [method], eps=0.1, seed=0)
    assert sweep.eta[0, 0] == 2.0 and sweep.reached[0, 0]
    grid = sweep.grid_responses[0]
    assert np.isinf(grid[0, 0]) and np.isinf(grid[0, 2]) and grid[0, 1] == sweep.responses_to_eps[0, 0]
    with pytest.raises(FloatingPointError):
        method.run(instances[0], 1e6, np.random.default_rng([0, 0]))
    again = cost_sweep(instances, (4.0,), [method], eps=0.1, seed=0)
    np.testing.assert_array_equal(again.responses_to_eps, sweep.responses_to_eps)
    # an unreachable target leaves the budget as a lower bound
    hopeless = cost_sweep(instances, (4.0,), [dataclasses.replace(method, etas=(1e-3,))], eps=1e-9, seed=0)
    assert not hopeless.reached[0, 0] and hopeless.responses_to_eps[0, 0] == method.response_budget
    assert hopeless.steps_to_eps[0, 0] == method.step_budget
    assert hopeless.fit("G") is None
    with pytest.raises(ValueError, match="no method labelled"):
        hopeless.fit("PPO")
    with pytest.raises(ValueError, match="one coverage per instance"):
        cost_sweep(instances, (4.0, 5.0), [method], eps=0.1, seed=0)


def test_summaries_name_every_row():
    instance = small_instance()
    methods = (
        Method("A", "ppo_noclip", {"beta": 1.0, "batch_size": 16, "inner_steps": 2, "n_iterations": 3}, (0.5,)),
        Method("B", "grpo_fixed", {"beta": 0.0, "batch_size": 4, "group_size": 4, "inner_steps": 1, "n_iterations": 3}, (0.5,)),
    )
    sweep = cost_sweep([instance], (5.0,), methods, eps=0.5, seed=0)
    text = sweep.summary()
    assert text.count("\n") == 3 * len(methods) - 1 and "A (eta 0.5)" in text and "fewer than two" in text
    table = methods_table(methods)
    assert table.column("budget (responses)") == [48, 48] and table.column("G (responses per prompt)")[1] == 4
    grid = clip_activity_grid(instance, (1.0,), (1.0,), eta_beta=1.0, inner_steps=2, batch_size=8, horizon=2, seed=0)
    assert "beta 1" in grid.summary() and "PPO [0.8, 1.2]" in grid.summary("final_suboptimality")
    spread = estimator_spread(instance, 1.0, (0.0, 1.0), batch_size=8, n_batches=4, seed=0)
    assert spread.summary().count("\n") == 2
    comparison = compare_recipes(instance, methods, 64, eps=0.5, seeds=(0,))
    assert comparison.summary().startswith("A")


def test_tables_keep_numbers_as_numbers_one_row_per_record():
    instance = small_instance()
    methods = (
        Method("A", "ppo_noclip", {"beta": 1.0, "batch_size": 16, "inner_steps": 2, "n_iterations": 3}, (0.5,)),
        Method(
            "B", "grpo_fixed", {"beta": 0.0, "batch_size": 4, "group_size": 4, "inner_steps": 1, "n_iterations": 3},
            (0.5, 1.0),
        ),
    )
    sweep = cost_sweep([instance, instance], (5.0, 6.0), methods, eps=0.5, seed=0)
    table = sweep.table()
    assert isinstance(table, Table) and len(table.rows) == 2 * len(methods)
    assert table.column("method") == ["A", "A", "B", "B"] and table.column("responses")[0] == int(sweep.responses_to_eps[0, 0])
    assert all(isinstance(value, bool) for value in table.column("ε reached"))
    fits = sweep.fit_table()
    assert fits.column("method") == ["A", "B"] and len(fits.columns) == 6
    settings = methods_table(methods, caption="settings")
    assert settings.column("budget (responses)") == [48, 48] and settings.column("learning rates")[1] == "0.5, 1"
    assert settings.column("G (responses per prompt)") == [1, 4]
    grid = clip_activity_grid(instance, (1.0, 2.0), (1.0,), eta_beta=1.0, inner_steps=2, batch_size=8, horizon=2, seed=0)
    clipped = grid.table("clip_fraction")
    assert clipped.columns[2:] == tuple(grid.column_labels) and clipped.rows[1][:2] == (2.0, 4)
    assert clipped.rows[0][2] == pytest.approx(grid.clip_fraction[0, 0])
    spread = estimator_spread(instance, 1.0, (0.0, 1.0), batch_size=8, n_batches=4, seed=0)
    assert [row[0] for row in spread.table().rows] == [0.0, 1.0]
    comparison = compare_recipes(instance, methods, 64, eps=0.5, seeds=(0, 1))
    recipes = comparison.table()
    assert recipes.column("method") == ["A", "B"] and "(of 2)" in recipes.columns[1]
    recorder = RatioRecorder()
    trajectory = run("ppo_noclip", instance, rng=np.random.default_rng(0), beta=1.0, eta=1.0, n_iterations=3,
                     batch_size=16, inner_steps=2, on_inner_step=recorder)
    weights = ratio_spread_table([ratio_spread(instance, trajectory, recorder.finish())])
    assert weights.rows[0][:2] == (1.0, 3) and weights.rows[0][2] <= weights.rows[0][4]
    bounds = ratio_bounds_by_beta(instance, (0.5, 2.0), eta_beta=1.0, inner_steps=2, batch_size=8, horizon=2, seed=0)
    both = ratio_bounds_table({"one": bounds, "two": bounds})
    assert both.column("instance") == ["one", "one", "two", "two"]
    assert both.column("extent") == pytest.approx(list(bounds.extent) * 2)
    for record in (table, fits, settings, clipped, recipes, weights, both):
        assert "<table" in record._repr_html_() and str(record)


def test_power_fit_recovers_a_power_law():
    coverages = np.array([2.0, 5.0, 20.0, 80.0])
    fit = fit_coverage_power(coverages, 30.0 * coverages**0.7)
    assert fit.exponent == pytest.approx(0.7) and fit.intercept == pytest.approx(np.log10(30.0))
    assert fit.r_squared == pytest.approx(1.0) and fit.n_points == 4
    with pytest.raises(ValueError, match="two"):
        fit_coverage_power(coverages[:1], coverages[:1])


def test_recipes_share_one_response_budget_and_report_divergence():
    instance = small_instance()
    recipes = practice_recipes(eta=2.0)
    runs = compare_at_budget(instance, recipes, 1000, seed=0)
    assert all(run.total_responses == (1000 // 256) * 256 for run in runs)
    exploding = dataclasses.replace(recipes[1].with_hyperparameters(beta=1.0, inner_steps=4), label="huge", etas=(1e6,))
    comparison = compare_recipes(instance, (recipes[0], exploding), 1000, eps=0.05, seeds=(0, 1))
    assert comparison.diverged[1].all() and not comparison.diverged[0].any()
    assert comparison.trajectories[1] is None and np.all(np.isnan(comparison.coverage_loss[1]))
    with pytest.raises(ValueError, match="smaller than one batch"):
        compare_at_budget(instance, recipes, 100, seed=0)


# ---------------------------------------------------------------------------------------
# The reverse-KL optimum


@settings(max_examples=25, deadline=None)
@given(softmax_linear_instances(), st.floats(0.02, 3.0))
def test_reverse_kl_optimum_is_stationary_and_normalized(instance, beta):
    log_reference = base_log_policy(instance)
    log_optimum = reverse_kl_optimum(instance, log_reference, beta)
    probs = np.exp(log_optimum)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-10)
    # stationarity: r + beta pi_ref / pi is the same for every response of a prompt
    multiplier = instance.rewards + beta * np.exp(log_reference - log_optimum)
    np.testing.assert_allclose(multiplier, multiplier[:, :1].repeat(instance.n_responses, axis=1), rtol=1e-7, atol=1e-9)


def test_reverse_kl_optimum_is_worse_than_the_forward_one_at_weak_beta():
    instance = random_family((50.0,))[0]
    log_reference = base_log_policy(instance)
    forward = expected_reward(instance, regularized_optimum(instance, log_reference, 0.05))
    reverse = expected_reward(instance, reverse_kl_optimum(instance, log_reference, 0.05))
    assert reverse < forward < instance.optimal_value


def _bad_ppo_experiment_calls():
    from covpo.collapse_instance import collapse_instance
    from covpo.experiments import ppo as experiments

    instance = small_instance()
    reference = base_log_policy(instance)
    prompts, responses = np.zeros((2, 3), dtype=int), np.ones((2, 3), dtype=int)
    grid = {"eta_beta": 1.0, "inner_steps": 1, "batch_size": 4, "horizon": 1.0, "seed": 0}
    return [
        (lambda: experiments.ratio_bounds_by_beta(None, [1.0], **grid), "instance"),
        (lambda: experiments.ratio_bounds_by_beta(collapse_instance(0.1), [1.0], **grid), "instance"),
        (lambda: experiments.ratio_bounds_by_beta(instance, [], **grid), "betas"),
        (lambda: experiments.ratio_bounds_by_beta(instance, [1.0], **{**grid, "seed": -1}), "seed"),
        (lambda: experiments.clip_activity_grid(instance, [1.0], [1.0], **{**grid, "eta_beta": 0.0}), "eta_beta"),
        (lambda: experiments.clip_activity_grid(instance, [1.0], [1.0], **{**grid, "horizon": -1.0}), "horizon"),
        (lambda: experiments.clip_activity_grid(instance, [1.0], [1.0], fixed_interval=(2.0, 1.0), **grid), "fixed_interval"),
        (lambda: experiments.clip_activity_grid(instance, [1.0], [0.0], **grid), "widths"),
        (lambda: experiments.target_log_ratio_extent("x", np.zeros((2, instance.dim)), 1.0), "instance"),
        (lambda: experiments.target_log_ratio_extent(instance, None, 1.0), "thetas"),
        (lambda: experiments.batch_estimates(instance, instance.base_theta, reference, prompts + 5, responses, 1.0, (0.5, 2.0)), "prompts"),
        (lambda: experiments.batch_estimates(instance, instance.base_theta, reference, prompts, responses[:, :2], 1.0, (0.5, 2.0)), "responses"),
        (lambda: experiments.batch_estimates(instance, instance.base_theta, reference, prompts, responses, float("nan"), (0.5, 2.0)), "beta"),
        (lambda: experiments.batch_estimates(instance, instance.base_theta, np.exp(reference), prompts, responses, 1.0, (0.5, 2.0)), "log_reference"),
        (lambda: experiments.estimator_spread(instance, 1e308, [0.0], batch_size=4, n_batches=2, seed=0), "beta"),
        (lambda: experiments.estimator_spread(instance, 1.0, [0.0], batch_size=4, n_batches=2, seed="x"), "seed"),
        (lambda: experiments.reverse_kl_optimum(instance, reference[:2], 1.0), "log_reference"),
        (lambda: experiments.ratio_spread_table([None]), "spreads"),
        (lambda: experiments.ratio_bounds_table({"a": None}), "tables"),
        (lambda: experiments.regularized_hessian(instance, instance.base_theta[:2], reference, 1.0), "theta"),
        (lambda: experiments.regularized_hessian(instance, instance.base_theta, reference, 0.0), "beta"),
        (lambda: experiments.landscape(instance, 1.0, [-1.0], n_directions=2, seed=0), "radii"),
        (lambda: experiments.landscape(instance, 1.0, [1.0], n_directions=0, seed=0), "n_directions"),
        (lambda: experiments.ppo_min_thresholds((1.2, 0.8)), "interval"),
        (lambda: experiments.clipping_benefit(instance, 1.0, [1.0], eta=1.0, batch_size=4, inner_steps=1,
                                              n_iterations=1, eps=0.1, seeds=()), "seeds"),
        (lambda: experiments.clipping_benefit(instance, 1.0, [0.0], eta=1.0, batch_size=4, inner_steps=1,
                                              n_iterations=1, eps=0.1, seeds=(0,)), "widths"),
        (lambda: experiments.inner_loop_curvature(instance, beta=1.0, eta=1.0, n_iterations=0, batch_size=4,
                                                  inner_steps=1, seed=0), "n_iterations"),
    ]


@pytest.mark.parametrize("index", range(27))
def test_experiment_bad_input_raises_naming_the_argument(index):
    call, name = _bad_ppo_experiment_calls()[index]
    with pytest.raises(ValueError, match=name):
        call()


def test_ratio_spread_rejects_a_trajectory_of_another_instance():
    from covpo.experiments.ppo import ratio_spread

    recorder = RatioRecorder()
    trajectory = run(
        "ppo_noclip", small_instance(), rng=np.random.default_rng(0), beta=1.0, eta=1.0, n_iterations=2,
        batch_size=8, inner_steps=2, on_inner_step=recorder,
    )
    other = stacked_collapse_instance(1, 0.2, 10.0, n_zero=5)
    with pytest.raises(ValueError, match="trajectory"):
        ratio_spread(other, trajectory, recorder.finish())
    with pytest.raises(ValueError, match="ratios"):
        ratio_spread(small_instance(), trajectory, None)


# ---------------------------------------------------------------------------------------
# The landscape of PPO-NoClip's objective, PPO's fixed interval, and clipping in training


def test_regularized_hessian_is_the_derivative_of_the_regularized_gradient():
    from covpo.objectives import regularized_gradient

    instance = small_instance()
    reference = log_policy(instance, instance.base_theta + 0.2)
    theta = instance.base_theta + np.random.default_rng(1).standard_normal(instance.dim)
    for beta in (0.3, 2.0):
        numeric = finite_difference(lambda t: regularized_gradient(instance, t, reference, beta), theta)
        np.testing.assert_allclose(regularized_hessian(instance, theta, reference, beta), numeric, atol=1e-7)


def test_regularized_hessian_at_the_target_is_minus_beta_times_a_covariance():
    instance = small_instance()
    reference = base_log_policy(instance)
    beta = 0.7
    target = instance.base_theta + instance.reward_theta / beta
    hessian = regularized_hessian(instance, target, reference, beta)
    assert np.linalg.eigvalsh(hessian).max() < 0.0
    np.testing.assert_allclose(hessian, hessian.T, atol=1e-14)


def test_landscape_gap_equals_beta_kl_and_concavity_holds_at_the_target():
    instance = small_instance()
    result = landscape(instance, 1.0, [0.0, 0.5, 20.0], n_directions=3, seed=0)
    np.testing.assert_allclose(result.gap, result.beta_kl, atol=1e-12)
    assert result.noclip_top[0] < 0.0 and np.all(result.kimi_bottom > 0.0)
    assert result.concave_radius >= 0.0 and result.table().column("ρ") == [0.0, 0.5, 20.0]


def test_inner_loop_curvature_shapes_and_gap_identity():
    instance = small_instance()
    curvature = inner_loop_curvature(instance, beta=1.0, eta=1.0, n_iterations=2, batch_size=16, inner_steps=3, seed=0)
    assert curvature.top_eigenvalue.shape == (2, 4) and curvature.batch_gap.shape == (2,)
    np.testing.assert_allclose(curvature.gap, curvature.beta_kl, atol=1e-12)
    assert np.all(curvature.batch_gap >= -1e-12)


def test_ppo_min_thresholds_reproduce_ppos_minimum_for_nonnegative_rewards():
    low, high = ppo_min_thresholds(PPO_INTERVAL)
    assert high == 1.2 and 0.0 < low < 1e-300
    weights = np.array([0.1, 0.79, 0.8, 1.0, 1.2, 1.21, 5.0])
    rewards = np.array([0.3, 1.0, 0.0, 0.5, 1.0, 0.2, 0.7])
    ppo = np.minimum(weights * rewards, np.clip(weights, 0.8, 1.2) * rewards)
    np.testing.assert_array_equal(np.clip(weights, low, high) * rewards, ppo)


def test_clipping_benefit_rows_differ_only_in_the_clip():
    instance = small_instance()
    result = clipping_benefit(instance, 1.0, (1.0, 100.0), eta=1.0, batch_size=8, inner_steps=2, n_iterations=3,
                              eps=0.5, seeds=(0, 1))
    assert result.labels == ("PPO-NoClip", "PPO-Lite, width 1", "PPO-Lite, width 100")
    assert result.clip_fraction.shape == (3, 2) and np.all(result.clip_fraction[0] == 0.0)
    # An interval that never clips leaves PPO-Lite with the sampled penalty exactly PPO-NoClip.
    np.testing.assert_allclose(result.inner_kl[2], result.inner_kl[0], rtol=1e-10)
    assert result.table().column("method")[0] == "PPO-NoClip"
