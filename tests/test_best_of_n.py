"""Best-of-N success probability, exact and sampled, and the Best-of-N run (paper section 1.3)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from covpo import run
from covpo.algorithms.best_of_n import (
    best_of_n,
    best_of_n_samples_bound,
    best_of_n_samples_needed,
    best_of_n_size,
    best_of_n_success,
    log_best_of_n_success,
    sampled_best_of_n,
)
from covpo.experiments.setting import best_of_n_curves, coverage_instance
from covpo.policies import base_log_policy


@given(st.floats(1e-6, 0.999), st.integers(1, 10_000))
def test_exact_success_matches_direct_formula(coverage, n):
    assert best_of_n_success(np.log(coverage), n) == pytest.approx(1 - (1 - coverage) ** n, rel=1e-9, abs=1e-15)


def test_log_success_stays_exact_below_1e300():
    assert log_best_of_n_success(-900.0, 1000) == pytest.approx(-900.0 + np.log(1000.0), rel=1e-14)
    assert best_of_n_success(0.0, 1) == 1.0


@given(st.floats(1e-5, 0.99), st.floats(1e-4, 0.5))
def test_samples_needed_is_minimal_and_below_the_bound(coverage, delta):
    needed = best_of_n_samples_needed(np.log(coverage), delta)
    assert (1 - coverage) ** needed <= delta * (1 + 1e-9)
    if needed > 1:
        assert (1 - coverage) ** (needed - 1) > delta * (1 - 1e-9)
    assert needed <= np.ceil(best_of_n_samples_bound(np.log(coverage), delta))


def test_sampled_best_of_n_is_unbiased():
    instance = coverage_instance(0.1)
    rate = sampled_best_of_n(instance, base_log_policy(instance), 5, 40_000, np.random.default_rng(1))[0]
    exact = 1 - 0.9**5
    assert rate == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 40_000))


@pytest.mark.same_on_every_cpu
def test_curves_are_reproducible_bit_for_bit():
    arguments = (np.array([0.05, 0.2]), np.array([1, 10]), 500)
    first = best_of_n_curves(*arguments, rng=np.random.default_rng(9))
    second = best_of_n_curves(*arguments, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(first.sampled, second.sampled)


def test_best_of_n_run_reports_the_exact_best_of_n_policy_at_its_size():
    instance = coverage_instance(0.1)
    trajectory = best_of_n(instance, delta=0.05)
    size = best_of_n_size(instance, 0.05)
    assert size == best_of_n_samples_needed(np.log(0.1), 0.05)
    np.testing.assert_array_equal(trajectory.responses_sampled, [0, size])
    np.testing.assert_array_equal(trajectory.gradient_steps, 0)
    assert trajectory.log_coverage[-1, 0] == pytest.approx(log_best_of_n_success(np.log(0.1), size), rel=1e-12)
    np.testing.assert_array_equal(run("best_of_n", instance, delta=0.05).reward, trajectory.reward)
    with pytest.raises(ValueError, match="delta"):
        best_of_n(instance, delta=0.0)


def test_nan_or_probabilities_where_log_probabilities_are_expected_are_refused():
    instance = coverage_instance(0.3)
    log_probs = base_log_policy(instance).copy()
    log_probs[0, 0] = np.nan
    with pytest.raises(ValueError, match="log_probs"):
        sampled_best_of_n(instance, log_probs, 3, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="log_probs"):
        sampled_best_of_n(instance, np.exp(base_log_policy(instance)), 3, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        sampled_best_of_n(instance, base_log_policy(instance), 3, 10, 0)
    for bad in ([0.3, 0.7], np.nan, "0.5", None):
        with pytest.raises(ValueError, match="log_coverage"):
            log_best_of_n_success(bad, 3)
    for bad in (np.inf, np.nan, "3", 0, 2.5):
        with pytest.raises(ValueError, match=r"\bn\b"):
            best_of_n_success(np.log(0.5), bad)
    for delta in (0.0, 1.0, np.nan, "0.1"):
        with pytest.raises(ValueError, match="delta"):
            best_of_n_samples_needed(np.log(0.5), delta)
    assert np.isfinite(log_best_of_n_success(-1e4, 3))  # tiny coverages stay exact


@pytest.mark.parametrize("log_coverage", [0.0, -1e-17, -1e-300])
def test_a_coverage_that_rounds_to_one_needs_one_draw_without_a_warning(log_coverage):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert best_of_n_samples_needed(log_coverage, 0.1) == 1.0
        assert best_of_n_samples_needed(np.array([log_coverage, np.log(0.5)]), 0.1).tolist() == [1.0, 4.0]


def test_exact_success_rises_with_the_sample_size_and_with_coverage():
    # moved from chapter 1's check: a property of the closed form 1 - (1 - c)^N, not a measurement
    coverages = np.array([0.01, 0.05, 0.2])
    sizes = np.array([1, 3, 10, 30, 100, 300])
    success = best_of_n_success(np.log(coverages)[:, None], sizes[None, :])
    assert np.all(np.diff(success, axis=1) > 0)
    assert np.all(np.diff(success, axis=0) > 0)
