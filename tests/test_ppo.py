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
from covpo.objectives import regularized_objective, regularized_optimum
from covpo.policies import (
    base_log_policy,
    coverage_coefficient,
    log_coverage,
    log_policy,
)
from covpo.algorithms.ppo_lite import (
    check_clip_thresholds,
    default_clip_thresholds,
    ppo_lite,
    ppo_lite_clip_mask,
    ppo_lite_gradient,
    ppo_lite_objective,
)
from covpo.algorithms.ppo_noclip import ppo_noclip, ppo_noclip_gradient, ppo_noclip_objective
from covpo.algorithms.ratios import RatioRecorder
from covpo.algorithms.outer_loop import InnerStep
from covpo.batches import ResponseBatch, draw_batch
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


def run_noclip(instance: BanditInstance, beta: float, n_iterations: int, seed: int = 0, **keywords):
    return ppo_noclip(instance, beta=beta, n_iterations=n_iterations, rng=np.random.default_rng(seed), **keywords)


def run_lite(instance: BanditInstance, beta: float, n_iterations: int, seed: int = 0, **keywords):
    return ppo_lite(instance, beta=beta, n_iterations=n_iterations, rng=np.random.default_rng(seed), **keywords)


@pytest.mark.parametrize(
    "thresholds", [(0.0, 2.0), (1.0, 2.0), (0.5, 1.0), (0.5, 0.9), (-1.0, 2.0), (0.5, np.inf), (0.5,)]
)
def test_bad_thresholds_are_rejected(thresholds):
    with pytest.raises(ValueError, match="thresholds"):
        check_clip_thresholds(thresholds)
    with pytest.raises(ValueError, match="thresholds"):
        run_lite(small_instance(), 1.0, 1, batch_size=8, inner_steps=2, eta=0.1, thresholds=thresholds)


def test_lite_rejects_negative_rewards():
    instance = small_instance()
    shifted = dataclasses.replace(instance, rewards=instance.rewards - 0.5)
    with pytest.raises(ValueError, match="rewards"):
        run_lite(shifted, 1.0, 1, batch_size=4, inner_steps=1, eta=0.1)


@pytest.mark.parametrize(
    ("keywords", "name"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"inner_steps": 0}, "inner_steps"),
        ({"eta": 0.0}, "eta"),
        ({"eta": -1.0}, "eta"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"n_iterations": 0}, "n_iterations"),
        ({"rng": 0}, "rng"),
    ],
)
def test_runs_validate_their_arguments(keywords, name):
    arguments = {"beta": 1.0, "n_iterations": 1, "batch_size": 8, "inner_steps": 2, "eta": 0.1,
                 "rng": np.random.default_rng(0), **keywords}
    with pytest.raises(ValueError, match=name):
        ppo_noclip(small_instance(), **arguments)
    with pytest.raises(ValueError, match=name):
        ppo_lite(small_instance(), **arguments)


@pytest.mark.parametrize("beta", [0.0, -1.0])
def test_runs_reject_nonpositive_beta(beta):
    instance = small_instance()
    common = {"batch_size": 4, "inner_steps": 1, "eta": 0.1}
    with pytest.raises(ValueError, match="beta"):
        run_noclip(instance, beta, 1, **common)
    with pytest.raises(ValueError, match="beta"):
        run_lite(instance, beta, 1, **common)
    with pytest.raises(ValueError, match="kl"):
        run_lite(instance, 1.0, 1, kl="k3", **common)


# ---------------------------------------------------------------------------------------
# Whole runs: costs, diagnostics, reproducibility, convergence


def test_costs_and_ratio_rows_are_counted_once():
    instance = small_instance()
    recorder = RatioRecorder()
    trajectory = run_noclip(instance, 1.0, 4, batch_size=16, inner_steps=3, eta=0.5, on_inner_step=recorder)
    ratios = recorder.finish()
    assert trajectory.algorithm == "PPO-NoClip"
    assert list(trajectory.gradient_steps) == [0, 3, 6, 9, 12]
    assert list(trajectory.responses_sampled) == [0, 16, 32, 48, 64]
    assert list(trajectory.reference_resets) == [0, 1, 2, 3, 4]
    assert list(trajectory.generation_rounds) == [0, 1, 2, 3, 4]
    assert trajectory.thetas.shape == (5, instance.dim) and trajectory.inner_kl.shape == (4,)
    np.testing.assert_array_equal(trajectory.thetas[0], instance.base_theta)
    assert ratios.n_rows == 4 * (3 + 1)
    assert list(ratios.inner_step[:4]) == [0, 1, 2, 3] and list(ratios.iteration[::4]) == [0, 1, 2, 3]
    assert list(ratios.gradient_steps[:8]) == [0, 1, 2, 3, 3, 4, 5, 6]
    # every outer iteration starts at its reference: ratios exactly 1
    start = ratios.inner_step == 0
    np.testing.assert_array_equal(ratios.log_ratio_min[start], 0.0)
    np.testing.assert_array_equal(ratios.log_ratio_max[start], 0.0)
    assert np.all(ratios.clip_fraction == 0.0)
    assert trajectory.settings["batch_size"] == 16 and "on_inner_step" not in trajectory.settings
    stepwise = run_noclip(instance, 1.0, 4, batch_size=16, inner_steps=3, eta=0.5, record_each_step=True)
    assert stepwise.n_records == 1 + 4 * 3
    np.testing.assert_array_equal(stepwise.thetas, trajectory.thetas)
    np.testing.assert_array_equal(stepwise.inner_kl, trajectory.inner_kl)


def test_the_callback_sees_every_inner_iterate_and_changes_nothing():
    instance = small_instance()
    seen: list[InnerStep] = []
    recorder = RatioRecorder()

    def callback(step: InnerStep) -> None:
        seen.append(step)
        recorder(step)

    trajectory = run_lite(instance, 2.0, 3, seed=1, batch_size=32, inner_steps=5, eta=0.3, on_inner_step=callback)
    assert recorder.finish().n_rows == len(seen) == 3 * 6
    assert [(step.iteration, step.inner_step) for step in seen[:7]] == [(0, k) for k in range(6)] + [(1, 0)]
    np.testing.assert_array_equal(seen[5].theta, trajectory.thetas[1])
    np.testing.assert_array_equal(seen[6].log_sampling, log_policy(instance, trajectory.thetas[1]))
    assert trajectory.algorithm == "PPO-Lite" and trajectory.settings["kl"] == "exact"
    assert trajectory.total_responses == 3 * 32
    without = run_lite(instance, 2.0, 3, seed=1, batch_size=32, inner_steps=5, eta=0.3)
    np.testing.assert_array_equal(without.thetas, trajectory.thetas)


@pytest.mark.same_on_every_cpu
@pytest.mark.parametrize("algorithm", [ppo_noclip, ppo_lite])
def test_a_seed_fixes_the_run_bit_for_bit(algorithm):
    instance = small_instance()

    def run(seed: int):
        recorder = RatioRecorder()
        trajectory = algorithm(
            instance, beta=0.5, eta=0.8, n_iterations=5, batch_size=32, inner_steps=4,
            rng=np.random.default_rng(seed), on_inner_step=recorder,
        )
        return trajectory, recorder.finish()

    (first, first_ratios), (again, again_ratios) = run(11), run(11)
    np.testing.assert_array_equal(first.thetas, again.thetas)
    np.testing.assert_array_equal(first.reward, again.reward)
    np.testing.assert_array_equal(first_ratios.log_ratio_max, again_ratios.log_ratio_max)
    other, _ = run(12)
    assert not np.array_equal(first.thetas, other.thetas)


def test_noclip_with_a_large_batch_approaches_exact_mirror_descent():
    instance = small_instance()
    beta = 1.0
    trajectory = run_noclip(instance, beta, 3, batch_size=20_000, inner_steps=200, eta=2.0)
    assert np.all(trajectory.inner_kl < 1e-3)
    exact = instance.base_theta + np.arange(4)[:, None] * instance.reward_theta / beta
    np.testing.assert_allclose(trajectory.thetas, exact, atol=0.1)
    # a small batch is visibly less accurate: the error is statistical
    small = run_noclip(instance, beta, 3, batch_size=20, inner_steps=200, eta=2.0)
    assert small.inner_kl.mean() > 10 * trajectory.inner_kl.mean()


def test_ratios_stay_within_constant_bounds_under_strong_regularization():
    instance = small_instance()
    R = instance.rewards.max()
    for beta in (4.0, 16.0):
        recorder = RatioRecorder()
        run_noclip(instance, beta, 10, batch_size=64, inner_steps=30, eta=1.0 / beta, on_inner_step=recorder)
        ratios = recorder.finish()
        low, high = ratios.ratio_bounds
        assert np.exp(-2 * R / beta) <= low <= 1.0 <= high <= np.exp(2 * R / beta)
        batch_low, batch_high = ratios.batch_ratio_bounds
        assert low <= batch_low <= 1.0 <= batch_high <= high


def test_lite_clip_activity_is_recorded():
    instance = small_instance()
    recorder = RatioRecorder()
    tight = run_lite(
        instance, 0.2, 3, batch_size=64, inner_steps=10, eta=2.0, thresholds=(0.95, 1.05), on_inner_step=recorder
    )
    assert recorder.finish().mean_clip_fraction > 0.1
    assert tight.settings["thresholds"] == (0.95, 1.05)
    recorder = RatioRecorder()
    loose = run_lite(instance, 4.0, 3, batch_size=64, inner_steps=10, eta=0.25, on_inner_step=recorder)
    assert recorder.finish().mean_clip_fraction == 0.0
    assert loose.settings["thresholds"] == pytest.approx(default_clip_thresholds(4.0, instance.rewards.max()))


def test_ppo_runs_reach_near_optimal_reward_on_a_dialled_instance():
    instance = dialled_coverage_instance(np.random.default_rng(0), 50, 8, 6, 20.0)
    for run in (run_noclip, run_lite):
        trajectory = run(instance, 1.0, 30, seed=2, batch_size=256, inner_steps=10, eta=3.0)
        assert trajectory.suboptimality[0] > 0.3
        assert trajectory.suboptimality[-1] < 0.05
        assert trajectory.min_log10_coverage >= np.log10(0.5) + log_coverage(
            instance, base_log_policy(instance)
        ).min() / np.log(10)


# ---------------------------------------------------------------------------------------
# Mutation tests: one outer iteration is K steps along the public gradient, KL term included


def first_batch(instance: BanditInstance, batch_size: int, seed: int) -> tuple[ResponseBatch, np.ndarray]:
    """The batch the first outer iteration of a run seeded ``seed`` draws, and its reference ``log pi_0``."""
    log_reference = log_policy(instance, np.array(instance.base_theta, dtype=float))
    return draw_batch(instance, log_reference, batch_size, np.random.default_rng(seed)), log_reference


def k_steps(instance: BanditInstance, eta: float, inner_steps: int, gradient) -> np.ndarray:
    theta = np.array(instance.base_theta, dtype=float)
    for _ in range(inner_steps):
        theta = theta + eta * gradient(theta)
    return theta


def test_noclip_outer_iteration_is_k_steps_of_its_gradient_with_the_full_kl_term():
    instance, beta, eta, inner_steps, batch_size, seed = small_instance(), 0.5, 0.8, 3, 24, 5
    trajectory = run_noclip(instance, beta, 1, seed=seed, batch_size=batch_size, inner_steps=inner_steps, eta=eta)
    batch, _ = first_batch(instance, batch_size, seed)
    by_hand = k_steps(instance, eta, inner_steps, lambda theta: ppo_noclip_gradient(instance, theta, batch, beta))
    np.testing.assert_array_equal(trajectory.thetas[1], by_hand)
    # halving the KL term of L_t is halving beta in its gradient
    halved = k_steps(instance, eta, inner_steps, lambda theta: ppo_noclip_gradient(instance, theta, batch, beta / 2))
    assert not np.allclose(trajectory.thetas[1], halved, rtol=0.0, atol=1e-9)


@pytest.mark.parametrize("kl", ["exact", "sampled"])
def test_lite_outer_iteration_is_k_steps_of_its_gradient_with_the_full_kl_term(kl):
    instance, beta, eta, inner_steps, batch_size, seed = small_instance(), 0.5, 0.8, 3, 24, 5
    thresholds = default_clip_thresholds(beta, instance.rewards.max())
    trajectory = run_lite(instance, beta, 1, seed=seed, batch_size=batch_size, inner_steps=inner_steps, eta=eta, kl=kl)
    batch, log_reference = first_batch(instance, batch_size, seed)

    def gradient(scale: float):
        return lambda theta: ppo_lite_gradient(
            instance, theta, batch, log_reference, scale * beta, thresholds=thresholds, kl=kl
        )

    np.testing.assert_array_equal(trajectory.thetas[1], k_steps(instance, eta, inner_steps, gradient(1.0)))
    # the same clip, the KL penalty at half strength
    halved = k_steps(instance, eta, inner_steps, gradient(0.5))
    assert not np.allclose(trajectory.thetas[1], halved, rtol=0.0, atol=1e-9)


def test_a_tiny_beta_gets_valid_default_thresholds_not_an_error_about_thresholds_never_passed():
    # R / beta = 1e8 would give (0.0, inf); the exponent is capped so the interval stays valid
    from covpo.algorithms.ppo_lite import MAX_LOG_THRESHOLD, default_clip_thresholds

    low, high = default_clip_thresholds(1e-8, 1.0)
    assert 0.0 < low < 1.0 < high < np.inf
    assert np.isclose(np.log(high), MAX_LOG_THRESHOLD)
    assert default_clip_thresholds(0.5, 1.0) == (float(np.exp(-2.0)), float(np.exp(2.0)))  # unchanged where valid
    run = ppo_lite(small_instance(), beta=1e-8, eta=0.5, n_iterations=2, batch_size=8, inner_steps=2,
                   rng=np.random.default_rng(0))
    assert np.all(np.isfinite(run.reward))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"kl": "k3"}, "kl"),
        ({"thresholds": (0.5, 0.9)}, "thresholds"),
        ({"thresholds": "wide"}, "thresholds"),
        ({"thresholds": (0.5, 2.0, 3.0)}, "thresholds"),
        ({"thresholds": (0.0, np.inf)}, "thresholds"),
        ({"rng": 0}, "rng"),
        ({"policy": "softmax"}, "policy"),
    ],
)
def test_ppo_options_are_checked_under_their_names(change, message):
    arguments = {"beta": 1.0, "eta": 0.5, "n_iterations": 1, "batch_size": 4, "inner_steps": 1,
                 "rng": np.random.default_rng(0), **change}
    function = ppo_noclip if "policy" in change else ppo_lite
    with pytest.raises(ValueError, match=rf"\b{message}\b"):
        function(small_instance(), **arguments)


def test_an_all_zero_reward_needs_explicit_thresholds():
    instance = small_instance()
    flat = dataclasses.replace(instance, rewards=np.zeros_like(instance.rewards), optimal_mask=None, reward_theta=None)
    with pytest.raises(ValueError, match="thresholds must be given"):
        ppo_lite(flat, beta=1.0, eta=0.5, n_iterations=1, batch_size=4, inner_steps=1, rng=np.random.default_rng(0))
    ppo_lite(flat, beta=1.0, eta=0.5, n_iterations=1, batch_size=4, inner_steps=1, rng=np.random.default_rng(0),
             thresholds=(0.5, 2.0))


def test_a_beta_too_large_for_any_clip_interval_is_named_with_its_range():
    from covpo.algorithms.ppo_lite import default_clip_thresholds

    with pytest.raises(ValueError, match=r"beta = 1e\+300 is too large.*beta <= 1e\+12"):
        default_clip_thresholds(1e300, 1.0)
    with pytest.raises(ValueError, match=r"\bbeta\b"):
        ppo_lite(small_instance(), beta=1e300, eta=0.5, n_iterations=1, batch_size=4, inner_steps=1,
                 rng=np.random.default_rng(0))
