"""The shared trajectory record and its cost accounting."""

from __future__ import annotations

import numpy as np
import pytest

from covpo import TrajectoryRecorder
from covpo.trajectory import trajectory_from_arrays


def test_recorder_counts_costs_in_one_place():
    recorder = TrajectoryRecorder("demo", optimal_value=1.0, settings={"beta": 0.5})
    recorder.record(0.2, np.log([0.1, 0.2]), 0.0)
    recorder.count_responses(64)
    recorder.count_gradient_steps(4)
    recorder.count_reset()
    recorder.record(0.6, np.log([0.3, 0.2]), 0.4)
    recorder.count_responses(64)
    recorder.count_gradient_steps(4)
    recorder.count_reset()
    recorder.record(0.95, np.log([0.9, 0.8]), 1.2)
    trajectory = recorder.finish()
    np.testing.assert_array_equal(trajectory.gradient_steps, [0, 4, 8])
    np.testing.assert_array_equal(trajectory.responses_sampled, [0, 64, 128])
    np.testing.assert_array_equal(trajectory.reference_resets, [0, 1, 2])
    assert trajectory.log_coverage.shape == (3, 2)
    assert trajectory.steps_to_eps(0.1) == 8
    assert trajectory.responses_to_eps(0.5) == 64
    assert trajectory.steps_to_eps(0.01) is None
    assert trajectory.min_log10_coverage == pytest.approx(-1.0)
    assert trajectory.settings == {"beta": 0.5}


def test_recorder_rejects_negative_counts_and_empty_runs():
    recorder = TrajectoryRecorder("demo", optimal_value=1.0)
    with pytest.raises(ValueError, match="count"):
        recorder.count_responses(-1)
    with pytest.raises(ValueError, match="at least one record"):
        recorder.finish()


def test_from_arrays_checks_shapes():
    trajectory = trajectory_from_arrays("exact", 1.0, np.arange(3), np.array([0.1, 0.5, 0.9]), np.log([0.5, 0.2, 0.9]), np.zeros(3))
    assert trajectory.log_coverage.shape == (3, 1)
    assert trajectory.total_responses == 0
    with pytest.raises(ValueError, match="reward must have shape"):
        trajectory_from_arrays("exact", 1.0, np.arange(3), np.array([0.1, 0.5]), np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="reward must be finite"):
        trajectory_from_arrays("exact", 1.0, np.arange(2), np.array([0.1, np.nan]), np.zeros(2), np.zeros(2))


def test_recorder_rejects_bad_records_naming_the_argument():
    recorder = TrajectoryRecorder("demo", optimal_value=1.0)
    with pytest.raises(ValueError, match="reward must be finite"):
        recorder.record(np.nan, np.log([0.5]), 0.0)
    with pytest.raises(ValueError, match="log_coverage must hold log coverages"):
        recorder.record(0.5, [np.nan], 0.0)
    with pytest.raises(ValueError, match="kl_to_base must hold KL divergences"):
        recorder.record(0.5, np.log([0.5]), -1.0)
    recorder.record(0.5, np.log([0.5, 0.5]), 0.0)
    with pytest.raises(ValueError, match="log_coverage must have one value per prompt"):
        recorder.record(0.5, np.log([0.5]), 0.0)
    with pytest.raises(ValueError, match="optimal_value must be finite"):
        TrajectoryRecorder("demo", optimal_value=np.nan)
    with pytest.raises(ValueError, match="algorithm must be a str"):
        TrajectoryRecorder(None, optimal_value=1.0)
    with pytest.raises(ValueError, match="settings must be a dict"):
        TrajectoryRecorder("demo", optimal_value=1.0, settings=[1])


def test_record_policy_names_its_own_arguments():
    from covpo import tabular_instance
    from covpo.policies import base_log_policy

    instance = tabular_instance(np.array([[1.0, 0.0]]), np.array([[0.5, 0.5]]))
    recorder = TrajectoryRecorder("demo", optimal_value=1.0)
    with pytest.raises(ValueError, match="log_probs must"):
        recorder.record_policy(instance, np.array([[0.5, 0.5]]))
    with pytest.raises(ValueError, match="log_base must"):
        recorder.record_policy(instance, base_log_policy(instance), np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="instance must be a BanditInstance"):
        recorder.record_policy("instance", base_log_policy(instance))


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("gradient_steps", np.array([0.0, np.nan, 2.0]), "gradient_steps must hold non-negative integer counts"),
        ("gradient_steps", np.array([0, -1, 2]), "gradient_steps must hold non-negative integer counts"),
        ("responses_sampled", np.array([0, 1]), "responses_sampled must have shape"),
        ("kl_to_base", np.array([0.0, np.nan, 0.0]), "kl_to_base must be finite"),
        ("log_coverage", np.array([0.0, np.nan, 0.0]), "log_coverage must hold log coverages"),
        ("log_coverage", np.array([0.0, 0.5, 0.0]), "log_coverage must hold log coverages"),
        ("optimal_value", np.inf, "optimal_value must be finite"),
        ("algorithm", 3, "algorithm must be a str"),
    ],
)
def test_from_arrays_rejects_bad_arrays(name, value, message):
    arguments = dict(
        algorithm="exact",
        optimal_value=1.0,
        gradient_steps=np.arange(3),
        reward=np.array([0.1, 0.5, 0.9]),
        log_coverage=np.log([0.5, 0.2, 0.9]),
        kl_to_base=np.zeros(3),
    )
    arguments[name] = value
    with pytest.raises(ValueError, match=message):
        trajectory_from_arrays(**arguments)


def test_log_coverage_far_below_1e_minus_300_is_kept_finite():
    coverage = np.array([-320.0, -400.0]) * np.log(10.0)
    trajectory = trajectory_from_arrays("exact", 1.0, np.arange(2), np.array([0.1, 0.2]), coverage, np.zeros(2))
    assert trajectory.min_log10_coverage == pytest.approx(-400.0)
    assert trajectory.coverage_loss(np.log([0.5])) == pytest.approx(400.0 + np.log10(0.5))
    with pytest.raises(ValueError, match="log_base_coverage must hold log coverages"):
        trajectory.coverage_loss(np.array([np.nan]))
