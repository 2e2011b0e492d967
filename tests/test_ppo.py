"""Dialled-coverage instances, PPO-NoClip and PPO-Lite (paper sections 3.2 and 3.3, Algorithms 1 and 2)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covpo.coverage_instances import (
    coverage_shift,
    dial_coverage,
    dialled_coverage_instance,
    log_coverage_coefficient,
)
from covpo.instances import BanditInstance
from covpo.algorithms.mirror_descent import apmd
from covpo.objectives import regularized_objective, regularized_optimum
from covpo.policies import (
    base_log_policy,
    coverage_coefficient,
    log_coverage,
    log_policy,
)
from covpo.algorithms.ppo import (
    RatioRecorder,
    ResponseBatch,
    check_clip_thresholds,
    default_clip_thresholds,
    draw_batch,
    ppo_lite,
    ppo_lite_clip_mask,
    ppo_lite_gradient,
    ppo_lite_inner_loop,
    ppo_lite_objective,
    ppo_noclip,
    ppo_noclip_gradient,
    ppo_noclip_inner_loop,
    ppo_noclip_objective,
)
from tests.helpers import finite_difference, small_instance
from tests.strategies import softmax_linear_instances


def batch_and_theta(instance: BanditInstance, seed: int, size: int = 40, scale: float = 0.3):
    rng = np.random.default_rng(seed)
    log_reference = base_log_policy(instance)
    batch = draw_batch(instance, log_reference, size, rng)
    theta = instance.base_theta + scale * rng.standard_normal(instance.dim)
    return batch, theta, log_reference


# ---------------------------------------------------------------------------------------
# Dialled-coverage instances


@pytest.mark.parametrize("target", [1.5, 4.0, 30.0, 1e4])
@pytest.mark.parametrize("statistic", ["mean", "max"])
def test_dialled_instance_hits_the_target_coverage(target, statistic):
    instance = dialled_coverage_instance(np.random.default_rng(0), 20, 6, 4, target, statistic=statistic)
    inverse = np.exp(-log_coverage(instance, base_log_policy(instance)))
    achieved = inverse.max() if statistic == "max" else instance.prompt_probs @ inverse
    assert achieved == pytest.approx(target, rel=1e-9)
    assert np.exp(log_coverage_coefficient(instance, instance.base_theta, statistic)) == pytest.approx(target, rel=1e-9)


def test_dialled_instance_keeps_a_linear_reward_and_changes_only_the_base_model():
    low = dialled_coverage_instance(np.random.default_rng(5), 30, 8, 6, 3.0)
    high = dialled_coverage_instance(np.random.default_rng(5), 30, 8, 6, 300.0)
    residual = low.rewards - low.features @ low.reward_theta
    np.testing.assert_allclose(residual - residual[:, :1], 0.0, atol=1e-12)
    assert low.rewards.min() >= 0.0 and low.rewards.max() == pytest.approx(1.0)
    np.testing.assert_array_equal(low.features, high.features)
    np.testing.assert_array_equal(low.rewards, high.rewards)
    np.testing.assert_array_equal(low.reward_theta, high.reward_theta)
    assert coverage_coefficient(low, base_log_policy(low)) < coverage_coefficient(high, base_log_policy(high))
    # the two base models differ by a multiple of theta_star only
    difference = high.base_theta - low.base_theta
    np.testing.assert_allclose(
        difference,
        (difference @ low.reward_theta) / (low.reward_theta @ low.reward_theta) * low.reward_theta,
        atol=1e-10,
    )


def test_coverage_shift_tilts_against_the_reward_for_lower_coverage():
    instance = small_instance()
    current = coverage_coefficient(instance, base_log_policy(instance))
    assert coverage_shift(instance, current * 2) > 0.0 > coverage_shift(instance, 1.0 + (current - 1.0) / 2)
    assert coverage_shift(instance, current) == pytest.approx(0.0, abs=1e-9)


def test_dialling_rejects_unreachable_or_unrealizable_targets():
    instance = small_instance()
    with pytest.raises(ValueError, match="target_coverage"):
        dial_coverage(instance, 1.0)
    with pytest.raises(ValueError, match="target_coverage"):
        dial_coverage(instance, -3.0)
    with pytest.raises(ValueError, match="statistic"):
        dial_coverage(instance, 3.0, statistic="median")
    with pytest.raises(ValueError, match="reward_theta"):
        dial_coverage(dataclasses.replace(instance, reward_theta=None), 3.0)


# ---------------------------------------------------------------------------------------
# PPO-NoClip: objective and gradient (Algorithm 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("beta", [0.1, 1.0, 5.0])
def test_noclip_gradient_matches_finite_differences(seed, beta):
    instance = small_instance(seed)
    batch, theta, _ = batch_and_theta(instance, seed)
    numeric = finite_difference(lambda t: ppo_noclip_objective(instance, t, batch, beta), theta)
    np.testing.assert_allclose(ppo_noclip_gradient(instance, theta, batch, beta), numeric, atol=1e-7)


def single_sample_batch(instance: BanditInstance, log_reference: np.ndarray, x: int, y: int) -> ResponseBatch:
    return ResponseBatch(
        prompts=np.array([x]),
        responses=np.array([y]),
        rewards=instance.rewards[[x], [y]],
        log_sampling=log_reference[[x], [y]],
    )


@pytest.mark.parametrize("beta", [0.2, 2.0])
def test_noclip_objective_is_unbiased_for_the_regularized_objective(beta):
    # E_{x~rho, y~pi_t} of the one-sample objective, by enumeration, is J(pi_theta) - beta KL(pi_theta || pi_t)
    instance = small_instance()
    _, theta, log_reference = batch_and_theta(instance, 4)
    expectation = sum(
        instance.prompt_probs[x]
        * np.exp(log_reference[x, y])
        * ppo_noclip_objective(instance, theta, single_sample_batch(instance, log_reference, x, y), beta)
        for x in range(instance.n_prompts)
        for y in range(instance.n_responses)
    )
    exact = regularized_objective(instance, log_policy(instance, theta), log_reference, beta)
    assert expectation == pytest.approx(exact, abs=1e-12)


# ---------------------------------------------------------------------------------------
# PPO-Lite: objective and gradient (Algorithm 2)


@pytest.mark.parametrize("seed", [0, 1])
def test_clipped_objective_equals_noclip_where_nothing_is_clipped(seed):
    instance = small_instance(seed)
    batch, theta, log_reference = batch_and_theta(instance, seed, scale=0.2)
    beta, thresholds = 0.7, (1e-3, 1e3)
    terms_ratio = log_policy(instance, theta)[batch.prompts, batch.responses] - batch.log_sampling
    assert not ppo_lite_clip_mask(terms_ratio, thresholds).any()
    lite = {"thresholds": thresholds, "kl": "sampled"}
    assert ppo_lite_objective(instance, theta, batch, log_reference, beta, **lite) == pytest.approx(
        ppo_noclip_objective(instance, theta, batch, beta), abs=1e-13
    )
    np.testing.assert_allclose(
        ppo_lite_gradient(instance, theta, batch, log_reference, beta, **lite),
        ppo_noclip_gradient(instance, theta, batch, beta),
        atol=1e-13,
    )


@pytest.mark.parametrize("kl", ["exact", "sampled"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lite_gradient_matches_finite_differences_with_active_clipping(kl, seed):
    instance = small_instance(seed)
    batch, theta, log_reference = batch_and_theta(instance, seed, scale=0.5)
    thresholds = (0.8, 1.25)
    log_ratio = log_policy(instance, theta)[batch.prompts, batch.responses] - batch.log_sampling
    clipped = ppo_lite_clip_mask(log_ratio, thresholds)
    assert clipped.any() and not clipped.all()
    # stay away from the kinks, where the objective is not differentiable
    assert np.min(np.abs(log_ratio[:, None] - np.log(thresholds))) > 1e-4
    numeric = finite_difference(
        lambda t: ppo_lite_objective(instance, t, batch, log_reference, 0.5, thresholds=thresholds, kl=kl), theta
    )
    analytic = ppo_lite_gradient(instance, theta, batch, log_reference, 0.5, thresholds=thresholds, kl=kl)
    np.testing.assert_allclose(analytic, numeric, atol=1e-7)


def test_lite_exact_kl_is_the_population_penalty_per_sampled_prompt():
    instance = small_instance()
    batch, theta, log_reference = batch_and_theta(instance, 2)
    # with zero rewards only the KL term is left
    zero = dataclasses.replace(instance, rewards=np.zeros_like(instance.rewards), reward_theta=None)
    zero_batch = dataclasses.replace(batch, rewards=np.zeros(batch.size))
    counts = np.bincount(batch.prompts, minlength=instance.n_prompts) / batch.size
    expected = counts @ np.sum(
        np.exp(log_policy(instance, theta)) * (log_policy(instance, theta) - log_reference), axis=1
    )
    value = ppo_lite_objective(zero, theta, zero_batch, log_reference, 1.0, thresholds=(0.5, 2.0))
    assert value == pytest.approx(-expected, abs=1e-13)


@settings(max_examples=40, deadline=None)
@given(softmax_linear_instances(), st.floats(0.05, 20.0), st.floats(0.0, 3.0), st.integers(0, 2**32 - 1))
def test_default_thresholds_never_clip_the_target(instance, beta, scale, seed):
    # any reference pi_t and any rewards in [0, R]: the target ratio exp(r / beta) / Z_t stays unclipped
    rng = np.random.default_rng(seed)
    R = 1.0 + 9.0 * rng.random()
    rewards = R * rng.random(instance.rewards.shape)
    rewards[:, 0] = R
    arbitrary = dataclasses.replace(instance, rewards=rewards, reward_theta=None, optimal_mask=None)
    log_reference = log_policy(arbitrary, scale * rng.standard_normal(instance.dim))
    target_ratio = regularized_optimum(arbitrary, log_reference, beta) - log_reference
    thresholds = default_clip_thresholds(beta, R)
    assert not ppo_lite_clip_mask(target_ratio, thresholds).any()


def test_default_thresholds_are_the_narrowest_interval():
    # two responses, rewards 0 and R; as pi_t concentrates on either one, the target ratio of the
    # other tends to a threshold
    R, beta = 1.0, 0.5
    low, high = default_clip_thresholds(beta, R)
    for log_odds, index, bound in ((30.0, 0, low), (-30.0, 1, high)):
        instance = BanditInstance(
            prompt_probs=np.ones(1),
            features=np.array([[[1.0], [0.0]]]),
            rewards=np.array([[R, 0.0]]),
            base_theta=np.array([log_odds]),
        )
        log_reference = base_log_policy(instance)
        ratio = np.exp(regularized_optimum(instance, log_reference, beta) - log_reference)[0, 1 - index]
        assert ratio == pytest.approx(bound, rel=1e-9)


@pytest.mark.parametrize(
    "thresholds", [(0.0, 2.0), (1.0, 2.0), (0.5, 1.0), (0.5, 0.9), (-1.0, 2.0), (0.5, np.inf), (0.5,)]
)
def test_bad_thresholds_are_rejected(thresholds):
    with pytest.raises(ValueError, match="thresholds"):
        check_clip_thresholds(thresholds)
    with pytest.raises(ValueError, match="thresholds"):
        ppo_lite_inner_loop(8, 2, 0.1, thresholds=thresholds)


def test_lite_rejects_negative_rewards():
    instance = small_instance()
    shifted = dataclasses.replace(instance, rewards=instance.rewards - 0.5)
    with pytest.raises(ValueError, match="rewards"):
        ppo_lite(shifted, 1.0, 1, batch_size=4, inner_steps=1, eta=0.1, rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    ("keywords", "name"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"inner_steps": 0}, "inner_steps"),
        ({"eta": 0.0}, "eta"),
        ({"eta": -1.0}, "eta"),
        ({"batch_size": 2.5}, "batch_size"),
    ],
)
def test_inner_loops_validate_their_arguments(keywords, name):
    arguments = {"batch_size": 8, "inner_steps": 2, "eta": 0.1, **keywords}
    with pytest.raises(ValueError, match=name):
        ppo_noclip_inner_loop(**arguments)
    with pytest.raises(ValueError, match=name):
        ppo_lite_inner_loop(**arguments)


@pytest.mark.parametrize("beta", [0.0, -1.0])
def test_runs_reject_nonpositive_beta(beta):
    instance = small_instance()
    common = {"batch_size": 4, "inner_steps": 1, "eta": 0.1, "rng": np.random.default_rng(0)}
    with pytest.raises(ValueError, match="beta"):
        ppo_noclip(instance, beta, 1, **common)
    with pytest.raises(ValueError, match="beta"):
        ppo_lite(instance, beta, 1, **common)
    with pytest.raises(ValueError, match="kl"):
        ppo_lite_inner_loop(4, 1, 0.1, kl="k3")


# ---------------------------------------------------------------------------------------
# Whole runs: costs, diagnostics, reproducibility, convergence


def test_costs_and_ratio_rows_are_counted_once():
    instance = small_instance()
    run = ppo_noclip(instance, 1.0, 4, batch_size=16, inner_steps=3, eta=0.5, rng=np.random.default_rng(0))
    trajectory, ratios = run.trajectory, run.ratios
    assert list(trajectory.gradient_steps) == [0, 3, 6, 9, 12]
    assert list(trajectory.responses_sampled) == [0, 16, 32, 48, 64]
    assert list(trajectory.reference_resets) == [0, 1, 2, 3, 4]
    assert ratios.n_rows == 4 * (3 + 1)
    assert list(ratios.inner_step[:4]) == [0, 1, 2, 3] and list(ratios.iteration[::4]) == [0, 1, 2, 3]
    assert list(ratios.gradient_steps[:8]) == [0, 1, 2, 3, 3, 4, 5, 6]
    # every outer iteration starts at its reference: ratios exactly 1
    start = ratios.inner_step == 0
    np.testing.assert_array_equal(ratios.log_ratio_min[start], 0.0)
    np.testing.assert_array_equal(ratios.log_ratio_max[start], 0.0)
    assert np.all(ratios.clip_fraction == 0.0)
    assert trajectory.settings["batch_size"] == 16 and "ratios" not in trajectory.settings
    stepwise = ppo_noclip(
        instance, 1.0, 4, batch_size=16, inner_steps=3, eta=0.5, rng=np.random.default_rng(0), record_each_step=True
    )
    assert stepwise.trajectory.n_records == 1 + 4 * 3
    np.testing.assert_array_equal(stepwise.thetas, run.thetas)


def test_the_inner_loops_plug_into_apmd_with_a_ratio_recorder():
    instance = small_instance()
    recorder = RatioRecorder()
    result = apmd(instance, 2.0, 3, ppo_lite_inner_loop(32, 5, 0.3, ratios=recorder), rng=np.random.default_rng(1))
    assert recorder.finish().n_rows == 3 * 6
    assert result.trajectory.settings["inner_loop"] == "ppo_lite_steps"
    assert result.trajectory.total_responses == 3 * 32


@pytest.mark.parametrize("algorithm", [ppo_noclip, ppo_lite])
def test_a_seed_fixes_the_run_bit_for_bit(algorithm):
    instance = small_instance()
    runs = [
        algorithm(instance, 0.5, 5, batch_size=32, inner_steps=4, eta=0.8, rng=np.random.default_rng(11))
        for _ in range(2)
    ]
    np.testing.assert_array_equal(runs[0].thetas, runs[1].thetas)
    np.testing.assert_array_equal(runs[0].trajectory.reward, runs[1].trajectory.reward)
    np.testing.assert_array_equal(runs[0].ratios.log_ratio_max, runs[1].ratios.log_ratio_max)
    other = algorithm(instance, 0.5, 5, batch_size=32, inner_steps=4, eta=0.8, rng=np.random.default_rng(12))
    assert not np.array_equal(runs[0].thetas, other.thetas)


def test_noclip_with_a_large_batch_approaches_exact_mirror_descent():
    instance = small_instance()
    beta = 1.0
    run = ppo_noclip(instance, beta, 3, batch_size=20_000, inner_steps=200, eta=2.0, rng=np.random.default_rng(0))
    assert np.all(run.inner_kl < 1e-3)
    exact = instance.base_theta + np.arange(4)[:, None] * instance.reward_theta / beta
    np.testing.assert_allclose(run.thetas, exact, atol=0.1)
    # a small batch is visibly less accurate: the error is statistical
    small = ppo_noclip(instance, beta, 3, batch_size=20, inner_steps=200, eta=2.0, rng=np.random.default_rng(0))
    assert small.inner_kl.mean() > 10 * run.inner_kl.mean()


def test_ratios_stay_within_constant_bounds_under_strong_regularization():
    instance = small_instance()
    R = instance.rewards.max()
    for beta in (4.0, 16.0):
        run = ppo_noclip(
            instance, beta, 10, batch_size=64, inner_steps=30, eta=1.0 / beta, rng=np.random.default_rng(0)
        )
        low, high = run.ratios.ratio_bounds
        assert np.exp(-2 * R / beta) <= low <= 1.0 <= high <= np.exp(2 * R / beta)
        batch_low, batch_high = run.ratios.batch_ratio_bounds
        assert low <= batch_low <= 1.0 <= batch_high <= high


def test_lite_clip_activity_is_recorded():
    instance = small_instance()
    tight = ppo_lite(
        instance, 0.2, 3, batch_size=64, inner_steps=10, eta=2.0, rng=np.random.default_rng(0), thresholds=(0.95, 1.05)
    )
    assert tight.ratios.mean_clip_fraction > 0.1
    assert tight.trajectory.settings["thresholds"] == (0.95, 1.05)
    loose = ppo_lite(instance, 4.0, 3, batch_size=64, inner_steps=10, eta=0.25, rng=np.random.default_rng(0))
    assert loose.ratios.mean_clip_fraction == 0.0
    assert loose.trajectory.settings["thresholds"] == pytest.approx(
        default_clip_thresholds(4.0, instance.rewards.max())
    )


def test_ppo_runs_reach_near_optimal_reward_on_a_dialled_instance():
    instance = dialled_coverage_instance(np.random.default_rng(0), 50, 8, 6, 20.0)
    for algorithm in (ppo_noclip, ppo_lite):
        run = algorithm(instance, 1.0, 30, batch_size=256, inner_steps=10, eta=3.0, rng=np.random.default_rng(2))
        assert run.trajectory.suboptimality[0] > 0.3
        assert run.trajectory.suboptimality[-1] < 0.05
        assert run.trajectory.min_log10_coverage >= np.log10(0.5) + log_coverage(
            instance, base_log_policy(instance)
        ).min() / np.log(10)
