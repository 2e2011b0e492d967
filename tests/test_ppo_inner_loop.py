"""Chapter 4's inner-loop and coverage-timing measurements (covpo.experiments.ppo.inner_loop and coverage_loss_timing)."""

from __future__ import annotations

import numpy as np
import pytest

from covpo.algorithms.mirror_descent import exact_target_theta
from covpo.experiments.ppo.coverage_loss_timing import coverage_loss_timing
from covpo.experiments.ppo.inner_loop import inner_loop_by_batch, population_ascent
from covpo.experiments.sweeps import Method, cost_sweep
from covpo.families import random_family
from covpo.objectives import regularized_optimum
from covpo.policies import base_log_policy, expected_kl, log_policy
from tests.helpers import nonlinear_instance, small_instance


def test_population_gap_is_beta_times_the_kl_to_the_target_and_falls_within_the_rate():
    instance = small_instance()
    ascent = population_ascent(instance, beta=1.0, eta=0.5, n_steps=6)
    log_reference = base_log_policy(instance)
    target = regularized_optimum(instance, log_reference, 1.0)
    theta = np.array(instance.base_theta, dtype=float)
    assert ascent.gap[0] == pytest.approx(expected_kl(instance, log_reference, target), rel=1e-9)
    assert ascent.distance[0] == pytest.approx(np.linalg.norm(theta - exact_target_theta(instance, theta, 1.0)))
    assert ascent.eta * ascent.smoothness < 1.0
    assert np.all(np.diff(ascent.gap) < 0) and np.all(ascent.gap >= 0)
    assert np.all(ascent.gap[1:] <= ascent.rate_bound)
    assert ascent.rate_bound.shape == (6,) and ascent.top_eigenvalue.shape == (7,)


def test_population_ascent_needs_a_realizable_instance_and_valid_settings():
    with pytest.raises(ValueError):
        population_ascent(nonlinear_instance(), beta=1.0, eta=0.5, n_steps=2)
    for name, arguments in (("beta", {"beta": 0.0}), ("eta", {"eta": -1.0}), ("n_steps", {"n_steps": 0})):
        settings = {"beta": 1.0, "eta": 0.5, "n_steps": 2, **arguments}
        with pytest.raises(ValueError, match=name):
            population_ascent(small_instance(), **settings)


def test_reused_batch_inner_loops_start_at_their_targets_gap_and_close_most_of_it():
    instance = small_instance()
    loops = inner_loop_by_batch(instance, (16, 512), beta=1.0, eta=0.5, n_iterations=3, inner_steps=8, seed=0)
    assert loops.start_gap.shape == loops.end_gap.shape == (2, 3)
    assert np.all(loops.start_gap > 0) and np.all(loops.end_gap >= 0)
    assert np.all(loops.end_gap[1] < loops.start_gap[1])
    assert loops.largest_stray.shape == (2,) and np.all(loops.largest_stray >= 1.0)
    again = inner_loop_by_batch(instance, (16, 512), beta=1.0, eta=0.5, n_iterations=3, inner_steps=8, seed=0)
    np.testing.assert_array_equal(again.end_gap, loops.end_gap)
    for name, arguments in (("batch_sizes", {"batch_sizes": (0,)}), ("inner_steps", {"inner_steps": 0})):
        settings = {"batch_sizes": (16,), "beta": 1.0, "eta": 0.5, "n_iterations": 2, "inner_steps": 2, "seed": 0}
        with pytest.raises(ValueError, match=name):
            inner_loop_by_batch(instance, **{**settings, **arguments})


def test_coverage_loss_timing_reruns_the_sweeps_runs():
    instances = random_family((4.0, 16.0), seed=2)
    method = Method("R", "reinforce", {"batch_size": 16, "n_iterations": 40}, (1.0, 4.0))
    sweep = cost_sweep(instances, (4.0, 16.0), [method], eps=0.1, seed=5)
    timing = coverage_loss_timing(method, instances, sweep.eta[0], eps=0.1, seed=5)
    np.testing.assert_allclose(timing.coverage_loss, sweep.coverage_loss[0], atol=1e-12)
    reached = sweep.reached[0]
    np.testing.assert_array_equal(timing.steps_to_eps[reached], sweep.steps_to_eps[0][reached])
    assert np.all(timing.steps_to_eps[~reached] == -1) and np.all(np.isnan(timing.worst_after_eps[~reached]))
    assert np.all(timing.worst_after_eps[reached] >= 0)
    assert np.all(timing.suboptimality_at_lowest >= 0) and timing.eps == 0.1


def test_coverage_loss_timing_names_bad_arguments():
    instances = random_family((4.0,), seed=2)
    method = Method("R", "reinforce", {"batch_size": 16, "n_iterations": 5}, (1.0,))
    with pytest.raises(ValueError, match="method"):
        coverage_loss_timing("reinforce", instances, (1.0,), eps=0.1, seed=0)
    with pytest.raises(ValueError, match="etas"):
        coverage_loss_timing(method, instances, (1.0, 2.0), eps=0.1, seed=0)
    with pytest.raises(ValueError, match="eps"):
        coverage_loss_timing(method, instances, (1.0,), eps=0.0, seed=0)
