"""The 2 x 2 anchor design of chapter 6 (covpo.experiments.implications.anchor)."""

from __future__ import annotations

import numpy as np
import pytest

from covpo.algorithms.ppo_noclip import ppo_noclip_gradient
from covpo.batches import draw_batch
from covpo.experiments.implications.anchor import (
    ANCHORS,
    BATCHES,
    AnchorStudy,
    _anchor_gradient,
    anchor_run,
    anchor_study,
    paired_interval,
)
from covpo.families import collapse_family
from covpo.policies import base_log_policy, log_policy
from covpo.policy_classes import SoftmaxLinear


@pytest.fixture(scope="module")
def instance():
    return collapse_family((10.0,))[0]


def test_reset_anchor_on_a_reused_batch_is_ppo_noclips_gradient(instance):
    rng = np.random.default_rng(3)
    policy = SoftmaxLinear(instance)
    theta_t = policy.initial_params + 0.1 * rng.standard_normal(np.shape(policy.initial_params))
    log_t = log_policy(instance, theta_t)
    batch = draw_batch(instance, log_t, 64, rng)
    theta = theta_t + 0.05 * rng.standard_normal(np.shape(theta_t))
    ours = _anchor_gradient(policy, theta, batch, log_t, 0.7)
    np.testing.assert_allclose(ours, ppo_noclip_gradient(instance, theta, batch, 0.7), rtol=1e-10, atol=1e-14)


def test_the_fixed_anchor_penalizes_the_log_ratio_to_the_base_model(instance):
    rng = np.random.default_rng(4)
    policy = SoftmaxLinear(instance)
    theta = policy.initial_params + 0.2 * rng.standard_normal(np.shape(policy.initial_params))
    log_theta = log_policy(instance, theta)
    batch = draw_batch(instance, log_theta, 32, rng)  # a fresh batch: every weight is 1
    log_base = base_log_policy(instance)
    beta = 0.3
    coefficients = batch.rewards - beta * (log_theta - log_base)[batch.prompts, batch.responses]
    expected = policy.batch_score_average(theta, batch, coefficients, log_theta)
    np.testing.assert_allclose(_anchor_gradient(policy, theta, batch, log_base, beta), expected, rtol=1e-12)


def test_paired_interval_is_the_student_t_interval():
    from scipy.stats import t

    values = np.array([0.3, -0.1, 0.4, 0.2, 0.0])
    mean, low, high = paired_interval(values, level=0.9)
    half = t.ppf(0.95, 4) * values.std(ddof=1) / np.sqrt(5)
    assert mean == pytest.approx(values.mean())
    assert (low, high) == pytest.approx((values.mean() - half, values.mean() + half))
    with pytest.raises(ValueError, match="differences"):
        paired_interval(np.array([1.0]))
    with pytest.raises(ValueError, match="differences"):
        paired_interval(np.array([1.0, np.nan]))


def test_anchor_run_checks_its_arguments(instance):
    settings = {"beta": 1.0, "eta": 1.0, "n_iterations": 1, "batch_size": 6, "inner_steps": 4, "seed": 0}
    with pytest.raises(ValueError, match="batch_size"):
        anchor_run(instance, "reset", "fresh", **settings)
    with pytest.raises(ValueError, match="anchor"):
        anchor_run(instance, "moving", "fresh", **{**settings, "batch_size": 8})


def test_a_run_is_fixed_by_its_seed_and_the_study_pairs_cells_by_seed(instance):
    settings = {"beta": 1.0, "eta": 4.0, "n_iterations": 3, "batch_size": 16, "inner_steps": 4, "seed": 5}
    first = anchor_run(instance, "reset", "reused", **settings)
    assert first == anchor_run(instance, "reset", "reused", **settings)
    assert first.depth <= 0.0 and first.final_gap >= 0.0
    study = anchor_study(coverage=10.0, seeds=(0, 1, 2), n_iterations=2, batch_size=8, inner_steps=2, progress=False)
    assert study.coverage_loss.shape == (len(ANCHORS), len(BATCHES), 3)
    assert np.all(study.coverage_loss >= 0.0)
    mean, low, high = study.effect("final_gap", "anchor", "reused")
    expected = study.cell("final_gap", "reset", "reused") - study.cell("final_gap", "fixed", "reused")
    assert mean == pytest.approx(expected.mean()) and low <= mean <= high
    assert study.verdict("final_gap", "anchor", "reused") in ("lower", "higher", "cannot tell")
    assert len(study.table().rows) == 4 and len(study.effect_table().rows) == 12


def test_the_study_refuses_measures_of_the_wrong_shape():
    with pytest.raises(ValueError, match="coverage_loss"):
        AnchorStudy(40.0, (0, 1), (0.05, 1.0), 8.0, 2, 8, 2, 0.04,
                    np.zeros((2, 2, 3)), np.zeros((2, 2, 2)), np.zeros((2, 2, 2)))
