"""Tests for the learning-rate grid, the first-step probe and the phase measurements (paper section 2.1)."""

from __future__ import annotations

import numpy as np
import pytest

from covpo.experiments.collapse import (
    SOFTMAX_SMOOTHNESS,
    collapse_instance,
    dense_collapse_run,
    exact_collapse_run,
    exact_reinforce_many,
    first_steps,
    learning_rate_grid,
    recovery_profile,
    slide_profile,
    smooth_step_limit,
)

GAPS = 1.0 / np.array([4.0, 4.5, 5.0])


def test_smooth_step_limit_is_two_over_the_smoothness():
    assert smooth_step_limit() == pytest.approx(2.0 / SOFTMAX_SMOOTHNESS)
    assert smooth_step_limit(4.0) == pytest.approx(0.5)


def test_learning_rate_grid_matches_single_runs_and_fits_each_rate():
    etas = np.array([0.4, 4.0, 64.0])
    grid = learning_rate_grid(GAPS, etas, max_steps=200_000)
    assert grid.steps.shape == (3, 3) and np.all(grid.reached_eps)
    for k, eta in enumerate(etas):
        single = exact_reinforce_many(
            [collapse_instance(g) for g in GAPS],
            eta=eta,
            n_iterations=200_000,
            eps=list(GAPS / 2),
        )
        np.testing.assert_array_equal(grid.steps[k], single.steps)
        np.testing.assert_array_equal(grid.min_log10_coverage[k], single.min_log10_coverage)
    np.testing.assert_array_equal(grid.in_smooth_range, [True, False, False])
    assert np.all(np.isfinite(grid.fits.slopes)) and np.all(grid.fits.r_squared <= 1.0)
    np.testing.assert_allclose(grid.collapse_depth, np.log10(0.1) - grid.min_log10_coverage)
    depth_fits = grid.depth_fits
    assert len(depth_fits) == 3 and all(fit.n_points == GAPS.size for fit in depth_fits)
    # inside the range the collapse deepens along the knob
    assert depth_fits[0].slope > 0
    # the smallest rate takes the most steps at every gap
    assert np.all(grid.steps[0] > grid.steps[1])


def test_grid_censors_runs_at_the_budget_and_fits_only_what_reached():
    grid = learning_rate_grid(GAPS, [0.1], max_steps=500)
    assert not grid.reached_eps.all() and np.all(grid.steps[~grid.reached_eps] == 500)
    if np.count_nonzero(grid.reached_eps) < 2:
        assert grid.fits.fits[0] is None and np.isnan(grid.fits.slopes[0])


def test_first_steps_are_the_records_of_an_exact_run():
    instance = collapse_instance(0.1)
    probe = first_steps(instance, [0.8, 64.0], n_steps=4)
    assert probe.masses.shape == (2, 5, 3)
    np.testing.assert_allclose(probe.masses.sum(axis=-1), 1.0)
    for k, eta in enumerate((0.8, 64.0)):
        run = exact_collapse_run(instance, eta=eta, n_iterations=4, record_steps=range(5))
        np.testing.assert_allclose(probe.masses[k], np.exp(run.class_log_probs), rtol=1e-12)
    np.testing.assert_allclose(probe.masses[:, 0], [[0.1, 0.2, 0.7]] * 2)
    # one huge step empties the zero block; a step inside the range barely moves it
    assert probe.masses[1, 1, 2] < 0.01 < 0.6 < probe.masses[0, 1, 2]
    assert probe.slide_drive[1, 1] < 1 < probe.slide_drive[0, 1]


def test_recovery_profile_splits_the_run_at_its_lowest_coverage():
    instance = collapse_instance(1 / 5.5)
    run = dense_collapse_run(instance, eta=4.0, n_records=2000)
    profile = recovery_profile(instance, rise_decades=(0.5, 1.0), run=run)
    assert profile.steps_to_eps == run.steps_to_eps
    assert profile.lowest_share + profile.recovery_share == pytest.approx(1.0)
    assert profile.min_log10_coverage == pytest.approx(run.trajectory.min_log10_coverage)
    assert np.all(np.diff(profile.rise_steps) >= 0) and np.all(profile.rise_steps > profile.lowest_step)
    assert np.all((0 <= profile.rise_shares) & (profile.rise_shares < profile.recovery_share))
    again = recovery_profile(instance, rise_decades=(0.5, 1.0), n_records=2000)
    np.testing.assert_array_equal(again.rise_steps, profile.rise_steps)


def test_slide_profile_measures_the_law_up_to_the_lowest_coverage():
    instance = collapse_instance(1 / 6.5)
    run = dense_collapse_run(instance, eta=4.0, n_records=3000)
    slide = slide_profile(instance, start_step=100, run=run)
    lowest = run.trajectory.gradient_steps[np.argmin(run.trajectory.log_coverage[:, 0])]
    assert slide.steps[0] >= 100 and slide.steps[-1] == lowest
    np.testing.assert_allclose(slide.learning_time, 4.0 * slide.steps)
    assert np.all(slide.w > 0) and np.all(np.isfinite(slide.law_ratio))
    # the residual zero mass decays like 1 / t over the slide
    assert slide.zero_time_product.max() / slide.zero_time_product.min() < 2


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: smooth_step_limit(0.0), "smoothness"),
        (lambda: learning_rate_grid([0.2], [1.0]), "gaps"),
        (lambda: learning_rate_grid(GAPS, [1.0, -1.0]), "etas"),
        (lambda: learning_rate_grid(GAPS, [1.0], collapse_factor=1.0), "collapse_factor"),
        (lambda: learning_rate_grid(GAPS, [1.0], max_steps=0), "max_steps"),
        (lambda: first_steps(collapse_instance(0.1), [], 3), "etas"),
        (lambda: first_steps(collapse_instance(0.1), [1.0], 0), "n_steps"),
        (lambda: first_steps("instance", [1.0], 3), "instance"),
        (lambda: recovery_profile(collapse_instance(0.2), rise_decades=(-1.0,)), "rise_decades"),
        (lambda: recovery_profile(collapse_instance(0.2), n_iterations=10), "n_iterations"),
        (lambda: slide_profile(collapse_instance(0.2), start_step=0), "start_step"),
        (lambda: slide_profile(collapse_instance(0.2), run="run"), "run"),
        (lambda: dense_collapse_run(collapse_instance(0.2), n_records=5), "n_records"),
    ],
)
def test_bad_input_raises_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
