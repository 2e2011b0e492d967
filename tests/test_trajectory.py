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
