"""Tuning beta, inner steps and clipping together (covpo.experiments.implications.tuning) and its figure."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import joblib
import numpy as np
import pytest

from covpo.algorithms.mirror_descent import mirror_descent_bound
from covpo.objectives import regularized_optimum
from covpo.policies import base_log_policy, expected_reward
from covpo.experiments.implications.tuning import (
    ACCURACY_PRODUCT,
    FIXED_INTERVAL,
    TuningMap,
    book_tuning_instance,
    clip_width_map,
    inner_steps_map,
    mirror_descent_time_to_eps,
    tuning_prescriptions,
    tuning_run,
)
from covpo.experiments.sweeps import Method
from covpo.families import stacked_collapse_instance

SMALL = {"batch_size": 64, "n_iterations": 4, "n_seeds": 2, "progress": False}


@lru_cache(maxsize=1)
def book_instance():
    return book_tuning_instance()


@lru_cache(maxsize=1)
def small_collapse():
    return stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)


def suboptimality_at_time(instance, time: float) -> float:
    log_probs = regularized_optimum(instance, base_log_policy(instance), 1.0 / time)
    return instance.optimal_value - expected_reward(instance, log_probs)


def test_a_diverged_run_is_reported_and_a_misconfigured_one_propagates(monkeypatch):
    instance = small_collapse()
    arguments = (instance, "ppo_lite", 1.0, 2, 0.5, 16, 3, 4.0, 0.04, (0, 1))
    responses, final, loss, diverged = tuning_run(*arguments)
    assert not diverged and np.isfinite(final) and loss >= 0.0
    with pytest.raises(ValueError, match="batch_size"):
        tuning_run(instance, "ppo_noclip", 1.0, 2, None, 0, 3, 4.0, 0.04, (0, 1))

    def diverge(method, instance, eta, rng):
        raise FloatingPointError("theta is not finite")

    monkeypatch.setattr(Method, "run", diverge)
    responses, final, loss, diverged = tuning_run(*arguments)
    assert diverged and responses == -1 and np.isnan(final) and np.isnan(loss)


def test_mirror_descent_time_is_the_first_eps_optimal_time():
    instance = small_collapse()
    time = mirror_descent_time_to_eps(instance, 0.04)
    assert suboptimality_at_time(instance, time) == pytest.approx(0.04, abs=1e-9)
    assert suboptimality_at_time(instance, 0.99 * time) > 0.04


def test_mirror_descent_time_is_zero_when_the_base_model_is_eps_optimal():
    instance = small_collapse()
    base_gap = instance.optimal_value - expected_reward(instance, base_log_policy(instance))
    assert mirror_descent_time_to_eps(instance, base_gap + 0.01) == 0.0


def test_prescriptions_follow_their_definitions():
    instance = small_collapse()
    betas = np.array([0.5, 1.0, 2.0])
    prescriptions = tuning_prescriptions(instance, betas, n_iterations=20, eta_beta=4.0, eps=0.04)
    assert prescriptions.beta_horizon == pytest.approx(20 / mirror_descent_time_to_eps(instance, 0.04))
    assert mirror_descent_bound(instance, prescriptions.beta_horizon_bound, 20.0) == pytest.approx(0.04)
    assert prescriptions.beta_horizon_bound < prescriptions.beta_horizon
    assert prescriptions.accuracy_inner_steps == ACCURACY_PRODUCT / 4.0
    # base coverage 1/10 equals chapter 3's, so the coverage-aware rule coincides with eta beta K = 16
    assert prescriptions.coverage_aware_inner_steps == pytest.approx(prescriptions.accuracy_inner_steps)
    np.testing.assert_allclose(prescriptions.fixed_interval_widths, betas * np.log(FIXED_INTERVAL[1]))
    assert "beta <=" in prescriptions.summary()


def test_one_inner_step_loses_coverage_and_many_keep_it():
    grid = inner_steps_map(book_instance(), betas=(1.0,), inner_steps=(1, 40), n_seeds=2, progress=False)
    assert grid.lost_fraction[0, 0] == 1.0 and grid.reached_fraction[0, 0] == 0.0
    assert np.all(grid.coverage_loss[0, 0] > 0.5)
    assert grid.lost_fraction[1, 0] == 0.0 and grid.reached_fraction[1, 0] == 1.0
    assert grid.best_cell() == (1, 0)


def test_map_shapes_and_derived_grids():
    grid = inner_steps_map(small_collapse(), betas=(0.5, 2.0), inner_steps=(1, 4, 8), **SMALL)
    assert isinstance(grid, TuningMap) and grid.row_name == "K" and grid.inner_steps is None
    for array in (grid.responses_to_eps, grid.final_suboptimality, grid.coverage_loss, grid.diverged):
        assert array.shape == (3, 2, 2)
    for derived in (grid.reached_fraction, grid.median_responses_to_eps, grid.lost_fraction, grid.worst_coverage_loss):
        assert derived.shape == (3, 2)
    assert grid.response_budget == 256
    assert np.all(grid.coverage_loss >= 0.0)
    reached = grid.responses_to_eps >= 0
    assert np.all(grid.responses_to_eps[reached] <= grid.response_budget)
    assert len(grid.summary().splitlines()) == 3 + 3 + 1 + 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        grid.eps = 1.0


def test_width_one_is_the_default_interval():
    common = {"betas": (0.5, 1.0), **SMALL}
    widths = clip_width_map(small_collapse(), widths=(1.0,), inner_steps=5, **common)
    lite = inner_steps_map(small_collapse(), inner_steps=(5,), algorithm="ppo_lite", **common)
    assert widths.row_name == "width" and widths.inner_steps == 5
    np.testing.assert_array_equal(widths.responses_to_eps, lite.responses_to_eps)
    np.testing.assert_array_equal(widths.final_suboptimality, lite.final_suboptimality)


def test_results_do_not_depend_on_the_backend():
    kwargs = {"betas": (0.5, 1.0), "inner_steps": (2, 6), **SMALL}
    serial = inner_steps_map(small_collapse(), **kwargs)
    with joblib.parallel_config(backend="threading", n_jobs=2):
        threaded = inner_steps_map(small_collapse(), **kwargs)
    for name in ("responses_to_eps", "final_suboptimality", "coverage_loss", "diverged"):
        np.testing.assert_array_equal(getattr(serial, name), getattr(threaded, name))


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"betas": (0.0, 1.0)}, "betas"),
        ({"betas": (np.nan,)}, "betas"),
        ({"inner_steps": (0,)}, "inner_steps"),
        ({"inner_steps": (1.5,)}, "inner_steps"),
        ({"algorithm": "grpo"}, "algorithm"),
        ({"eta_beta": -1.0}, "eta_beta"),
        ({"eps": np.nan}, "eps"),
        ({"n_seeds": 0}, "n_seeds"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_inner_steps_map_rejects_bad_input(arguments, name):
    with pytest.raises(ValueError, match=name):
        inner_steps_map(small_collapse(), **{**SMALL, **arguments})


@pytest.mark.parametrize(
    ("arguments", "name"), [({"widths": (-1.0,)}, "widths"), ({"inner_steps": 0}, "inner_steps")]
)
def test_clip_width_map_rejects_bad_input(arguments, name):
    with pytest.raises(ValueError, match=name):
        clip_width_map(small_collapse(), **{**SMALL, **arguments})


def test_prescriptions_reject_bad_input():
    with pytest.raises(ValueError, match="eps"):
        mirror_descent_time_to_eps(small_collapse(), 0.0)
    with pytest.raises(ValueError, match="n_iterations"):
        tuning_prescriptions(small_collapse(), (1.0,), n_iterations=0, eta_beta=1.0, eps=0.1)


def test_grid_position_is_log_linear_and_extrapolates():
    from covpo.plots.tuning import grid_position

    grid = [0.25, 0.5, 1.0, 2.0]
    np.testing.assert_allclose(grid_position([0.25, np.sqrt(0.5), 2.0, 4.0, 0.125], grid), [0, 1.5, 3, 4, -1])


def test_figures_draw():
    from covpo.experiments.implications.noise import noise_methods, noise_study
    from covpo.plots.tuning import noise_figure, tuning_heatmaps_figure
    from covpo.experiments.implications.tuning import tuning_summary_table

    grid = inner_steps_map(small_collapse(), betas=(0.5, 1.0), inner_steps=(2, 8), **SMALL)
    widths = clip_width_map(small_collapse(), betas=(0.5, 1.0), widths=(0.5, 1.0), inner_steps=4, **SMALL)
    figure = tuning_heatmaps_figure(grid, widths)
    assert len(figure.axes) == 3 and figure.get_figwidth() <= 7.0 and figure.get_figheight() <= 9.0
    table = tuning_summary_table((grid, widths))
    assert len(table.columns) == 3 and table.columns[1].startswith("PPO-NoClip")
    good = grid.reached_fraction > 0.5
    assert table.rows[0][1] == int(good.sum())
    assert table.rows[1][1] == int((good & (grid.lost_fraction > 0)).sum())
    assert table.column(table.columns[2])[5] == widths.prescriptions.beta_horizon
    assert str(grid.summary_table()).count("\n") >= 10
    study = noise_study((10.0,), noise_methods()[:2], response_budget=512, n_seeds=2, progress=False)
    assert len(noise_figure(study).axes) == 2


def _bad_tuning_calls():
    from covpo.collapse_instance import collapse_instance
    from covpo.experiments.implications.tuning import tuning_summary_table

    instance = stacked_collapse_instance(1, 0.2, 10.0, n_zero=5)
    cell = {"algorithm": "ppo_lite", "beta": 1.0, "inner_steps": 1, "width": 1.0, "batch_size": 4, "n_iterations": 2,
            "eta_beta": 1.0, "eps": 0.1, "seed": (0,)}
    return [
        (lambda: mirror_descent_time_to_eps(None, 0.1), "instance"),
        (lambda: tuning_prescriptions(collapse_instance(0.1), [1.0], n_iterations=2, eta_beta=1.0, eps=0.1), "instance"),
        (lambda: tuning_summary_table([None]), "maps"),
        (lambda: tuning_run("x", **cell), "instance"),
        (lambda: tuning_run(instance, **{**cell, "width": 0.0}), "width"),
        (lambda: tuning_run(instance, **{**cell, "seed": "x"}), "seed"),
        (lambda: tuning_run(instance, **{**cell, "beta": None}), "beta"),
        (lambda: tuning_run(instance, **{**cell, "algorithm": "grpo"}), "algorithm"),
        (lambda: inner_steps_map(None, progress=False), "instance"),
        (lambda: clip_width_map(instance, seed=-1, progress=False), "seed"),
    ]


@pytest.mark.parametrize("index", range(10))
def test_bad_input_raises_naming_the_argument(index):
    call, name = _bad_tuning_calls()[index]
    with pytest.raises(ValueError, match=name):
        call()
