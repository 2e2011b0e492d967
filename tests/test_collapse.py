"""Tests for the coverage-collapse construction and its exact engine (paper section 2.1, appendix C)."""

from __future__ import annotations

import numpy as np
import pytest

import covpo.experiments.collapse as collapse
from covpo.experiments.collapse import (
    UNREGULARIZED_GAPS,
    CollapseInstance,
    beta_sweep,
    class_log_probs,
    collapse_instance,
    exact_collapse_run,
    exact_reinforce_many,
    landscape_grid,
    learning_rate_sweep,
    logits_from_plane,
    plane_coordinates,
    regularized_optimum_suboptimality,
    run_exact_reinforce,
    sampled_collapse_run,
    sampled_reinforce_over_seeds,
    simplex_path,
    steps_to_eps_sweep,
    strongest_eps_optimal_beta,
)
from covpo.objectives import regularized_gradient, regularized_optimum, reward_gradient
from covpo.policies import base_log_policy, expected_reward, log_coverage, log_policy
from covpo.algorithms.reinforce import reinforce

# --- the instance ---------------------------------------------------------------------------


def test_full_instance_matches_the_reduced_description():
    instance = collapse_instance(0.25, optimal_prob=0.1, distractor_prob=0.2, n_zero=7)
    bandit = instance.to_bandit()
    log_base = base_log_policy(bandit)
    assert bandit.n_responses == instance.n_responses == 9
    assert bandit.optimal_value == instance.optimal_value == 1.0
    np.testing.assert_allclose(bandit.rewards[0, :2], [1.0, 0.75])
    np.testing.assert_allclose(np.exp(log_coverage(bandit, log_base)), [0.1])
    np.testing.assert_allclose(np.exp(log_base[0, 2:]).sum(), 0.7)
    np.testing.assert_allclose(class_log_probs(instance, instance.base_logits), instance.base_class_log_probs)


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"gap": 0.0}, "gap"),
        ({"gap": 1.0}, "gap"),
        ({"gap": float("nan")}, "gap"),
        ({"optimal_prob": 0.0}, "optimal_prob"),
        ({"optimal_prob": 1.2}, "optimal_prob"),
        ({"distractor_prob": float("nan")}, "distractor_prob"),
        ({"optimal_prob": 0.5, "distractor_prob": 0.5}, "optimal_prob"),
        ({"n_zero": 0}, "n_zero"),
        ({"n_zero": 2.5}, "n_zero"),
    ],
)
def test_collapse_instance_rejects_bad_arguments(arguments, name):
    with pytest.raises(ValueError, match=name):
        collapse_instance(**{"gap": 0.2, **arguments})


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"eta": 0.0}, "eta"),
        ({"eta": float("nan")}, "eta"),
        ({"beta": 0.0}, "beta"),
        ({"beta": -1.0}, "beta"),
        ({"eps": -0.1}, "eps"),
        ({"n_iterations": 0}, "n_iterations"),
        ({"instance": "not an instance"}, "instance"),
    ],
)
def test_exact_run_rejects_bad_arguments(arguments, name):
    settings = {"instance": collapse_instance(0.2), "eta": 1.0, "n_iterations": 10, **arguments}
    with pytest.raises(ValueError, match=name):
        exact_collapse_run(**settings)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: steps_to_eps_sweep([0.2], eps_fraction=1.0), "eps_fraction"),
        (lambda: steps_to_eps_sweep([0.2], eta=-1.0), "eta"),
        (lambda: steps_to_eps_sweep([1.5]), "gap"),
        (lambda: steps_to_eps_sweep([0.2], delta=0.0), "delta"),
        (lambda: steps_to_eps_sweep([0.2], regularized=True, margin=1.0), "margin"),
        (lambda: beta_sweep(collapse_instance(0.2), [0.1, -0.1]), "betas"),
        (lambda: beta_sweep(collapse_instance(0.2), [0.1], collapse_factor=0.5), "collapse_factor"),
        (lambda: learning_rate_sweep(collapse_instance(0.2), [1.0, 0.0], 10), "etas"),
        (lambda: exact_reinforce_many([collapse_instance(0.2)] * 2, eta=[1.0], n_iterations=10), "eta"),
        (lambda: landscape_grid(collapse_instance(0.2), beta=0.0), "beta"),
        (lambda: sampled_reinforce_over_seeds(
            collapse_instance(0.2),
            eta=1.0,
            n_iterations=10,
            batch_size=4,
            n_seeds=0,
        ), "n_seeds"),
    ],
)
def test_sweeps_reject_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- exactness of the reduction -------------------------------------------------------------


def full_vector_logits(instance: CollapseInstance, eta: float, n_steps: int, beta: float | None) -> np.ndarray:
    """The straightforward loop: every response its own logit, gradients from objectives.py."""
    bandit = instance.to_bandit()
    log_base = base_log_policy(bandit)
    theta = bandit.base_theta.copy()
    history = [theta.copy()]
    for _ in range(n_steps):
        if beta is None:
            theta = theta + eta * reward_gradient(bandit, theta)
        else:
            theta = theta + eta * regularized_gradient(bandit, theta, log_base, beta)
        history.append(theta.copy())
    return np.array(history)


@pytest.mark.parametrize("n_zero", [5, 50])
@pytest.mark.parametrize("beta", [None, 0.05])
def test_reduced_engine_matches_the_full_vector_step_for_step(n_zero, beta):
    instance = collapse_instance(0.15, n_zero=n_zero)
    n_steps = 300
    full = full_vector_logits(instance, eta=2.0, n_steps=n_steps, beta=beta)
    run = exact_collapse_run(instance, eta=2.0, n_iterations=n_steps, beta=beta, record_steps=np.arange(n_steps + 1))
    np.testing.assert_array_equal(run.trajectory.gradient_steps, np.arange(n_steps + 1))
    np.testing.assert_allclose(run.logits[:, 0], full[:, 0], atol=1e-10)
    np.testing.assert_allclose(run.logits[:, 1], full[:, 1], atol=1e-10)
    np.testing.assert_allclose(np.repeat(run.logits[:, 2:], n_zero, axis=1), full[:, 2:], atol=1e-10)


@pytest.mark.parametrize("beta", [None, 0.1])
def test_engine_step_is_the_gradient_of_the_objective(beta):
    instance = collapse_instance(0.3, n_zero=4)
    bandit = instance.to_bandit()
    log_base = base_log_policy(bandit)

    def objective(theta: np.ndarray) -> float:
        log_probs = log_policy(bandit, theta)
        penalty = 0.0 if beta is None else beta * np.sum(np.exp(log_probs) * (log_probs - log_base))
        return expected_reward(bandit, log_probs) - penalty

    theta = bandit.base_theta
    numeric = np.array(
        [(objective(theta + 1e-6 * e) - objective(theta - 1e-6 * e)) / 2e-6 for e in np.eye(bandit.dim)]
    )
    eta = 1e-3
    run = exact_collapse_run(instance, eta=eta, n_iterations=1, beta=beta)
    reduced_step = (run.final_logits - instance.base_logits) / eta
    np.testing.assert_allclose(reduced_step, numeric[:3], atol=1e-8)
    np.testing.assert_allclose(numeric[2:], numeric[2], atol=1e-8)


# --- what the engine records -----------------------------------------------------------------


def test_eps_stop_is_the_first_eps_optimal_step():
    instance = collapse_instance(0.3)
    eps = 0.15
    every_step = exact_collapse_run(instance, eta=1.0, n_iterations=300, record_steps=np.arange(301)).trajectory
    first = every_step.steps_to_eps(eps)
    stopped = exact_collapse_run(instance, eta=1.0, n_iterations=300, eps=eps)
    assert stopped.reached_eps and stopped.steps_to_eps == first
    assert stopped.trajectory.suboptimality[-1] <= eps
    assert every_step.suboptimality[first - 1] > eps


def test_minimum_coverage_is_over_every_step_not_just_records():
    instance = collapse_instance(0.15)
    every_step = exact_collapse_run(instance, n_iterations=3000, record_steps=np.arange(3001)).trajectory
    sparse = run_exact_reinforce(instance, n_iterations=3000, n_records=5)
    assert sparse.min_log10_coverage == pytest.approx(every_step.min_log10_coverage, abs=1e-12)
    assert sparse.n_records < 12


def test_log_coverage_stays_exact_far_below_1e_minus_300():
    trajectory = run_exact_reinforce(collapse_instance(0.05), eta=20_000.0, n_iterations=50)
    assert np.all(np.isfinite(trajectory.log_coverage))
    assert trajectory.min_log10_coverage < -300
    assert trajectory.reward[-1] == pytest.approx(0.95, abs=1e-6)


def test_many_runs_in_one_call_match_single_runs():
    instances = [collapse_instance(gap) for gap in (0.3, 0.2, 0.15)]
    etas, betas, eps_values = [4.0, 2.0, 4.0], [None, 0.05, None], [0.15, 0.1, 0.075]
    summary = exact_reinforce_many(instances, eta=etas, n_iterations=100_000, beta=betas, eps=eps_values)
    for i, (instance, eta, beta, eps) in enumerate(zip(instances, etas, betas, eps_values)):
        single = exact_collapse_run(instance, eta=eta, n_iterations=100_000, beta=beta, eps=eps)
        assert summary.reached_eps[i] == single.reached_eps
        assert summary.steps[i] == single.trajectory.total_gradient_steps
        assert summary.min_log10_coverage[i] == pytest.approx(single.trajectory.min_log10_coverage, abs=1e-12)
        np.testing.assert_allclose(summary.final_logits[i], single.final_logits, atol=0)


@pytest.mark.same_on_every_cpu
def test_results_do_not_depend_on_the_chunking(monkeypatch):
    instance = collapse_instance(0.15)
    reference = exact_collapse_run(instance, n_iterations=5000, eps=0.075)
    monkeypatch.setattr(collapse.engine, "CHUNK_STEPS", 7)
    chunked = exact_collapse_run(instance, n_iterations=5000, eps=0.075)
    np.testing.assert_array_equal(chunked.trajectory.gradient_steps, reference.trajectory.gradient_steps)
    np.testing.assert_array_equal(chunked.logits, reference.logits)


# --- the science -----------------------------------------------------------------------------


def test_reward_rises_at_every_step_while_coverage_collapses():
    instance = collapse_instance(0.12)
    n_steps = 20_000
    run = exact_collapse_run(instance, eta=0.5, n_iterations=n_steps, record_steps=np.arange(n_steps + 1))
    trajectory = run.trajectory
    lowest = int(np.argmin(trajectory.log_coverage[:, 0]))
    assert trajectory.log10_coverage[lowest, 0] < np.log10(instance.base_coverage) - 1.0
    assert np.all(np.diff(trajectory.reward[: lowest + 1]) >= -1e-15)
    assert trajectory.reward[lowest] > trajectory.reward[0] + 0.5


def test_steps_to_eps_grow_geometrically_along_the_knob_at_constant_coverage():
    sweep = steps_to_eps_sweep(UNREGULARIZED_GAPS[:6], max_steps=1_000_000)
    assert np.all(sweep.reached_eps)
    assert np.all(sweep.steps_to_eps[1:] >= 2.5 * sweep.steps_to_eps[:-1])
    assert np.all(np.diff(sweep.min_log10_coverage) < 0)
    assert np.all(sweep.base_coverage == sweep.base_coverage[0])
    assert np.all(sweep.best_of_n_samples == sweep.best_of_n_samples[0])
    assert sweep.fit.r_squared > 0.99 and sweep.fit.slope > 0.8


def test_regularized_sweep_uses_the_strongest_eps_optimal_beta():
    sweep = steps_to_eps_sweep(np.array([0.08, 0.06]), regularized=True, max_steps=100_000)
    for gap, eps, beta in zip(sweep.gaps, sweep.eps, sweep.betas):
        assert regularized_optimum_suboptimality(collapse_instance(gap), beta) == pytest.approx(0.5 * eps)
    assert np.all(sweep.reached_eps)
    assert sweep.steps_to_eps[1] > sweep.steps_to_eps[0]


def test_regularized_optimum_suboptimality_matches_the_closed_form():
    instance = collapse_instance(0.2, n_zero=6)
    bandit = instance.to_bandit()
    for beta in (0.01, 0.1, 1.0):
        target = regularized_optimum(bandit, base_log_policy(bandit), beta)
        assert regularized_optimum_suboptimality(instance, beta) == pytest.approx(
            1.0 - expected_reward(bandit, target), abs=1e-12
        )


def test_strongest_eps_optimal_beta_rejects_a_loose_eps():
    with pytest.raises(ValueError, match="eps"):
        strongest_eps_optimal_beta(collapse_instance(0.2), eps=5.0, margin=0.5)


def test_beta_sweep_classifies_each_strength():
    sweep = beta_sweep(collapse_instance(0.12), np.array([0.002, 0.05, 1.0]), max_steps=50_000)
    assert list(sweep.optimum_eps_optimal) == [True, True, False]
    assert list(sweep.reached_eps) == [True, True, False]
    assert list(sweep.collapsed) == [True, False, False]
    assert list(sweep.escapes) == [False, True, False]


def test_learning_rate_sweep_picks_a_monotone_rate():
    instance = collapse_instance(0.15)
    strong = learning_rate_sweep(instance, np.array([1.0, 4.0, 64.0]), n_steps=30, beta=1.0)
    assert list(strong.monotone) == [True, True, False]
    assert strong.best_eta == 4.0
    assert strong.reward.shape == (3, 31)


# --- views for the figures -------------------------------------------------------------------


def test_plane_coordinates_are_exact_and_invertible():
    instance = collapse_instance(0.2)
    np.testing.assert_allclose(plane_coordinates(instance, instance.base_logits), [0.0, 0.0], atol=1e-14)
    logits = np.array([[0.3, -1.2, 2.0], [5.0, 1.0, -3.0]])
    u, v = plane_coordinates(instance, logits).T
    np.testing.assert_allclose(
        class_log_probs(instance, logits_from_plane(instance, u, v)), class_log_probs(instance, logits), atol=1e-12
    )


def test_landscape_agrees_with_the_run_it_draws():
    instance = collapse_instance(0.15)
    run = exact_collapse_run(instance, n_iterations=5000, beta=0.05)
    landscape = landscape_grid(instance, beta=0.05, run=run, n_points=21)
    expected = run.trajectory.reward - 0.05 * run.trajectory.kl_to_base
    np.testing.assert_allclose(landscape.path_objective, expected, atol=1e-12)
    assert landscape.objective.shape == (21, 21)
    base = landscape_grid(instance, u=[0.0], v=[0.0])
    assert base.reward[0, 0] == pytest.approx(run.trajectory.reward[0])
    assert base.log10_coverage[0, 0] == pytest.approx(np.log10(0.1))


def test_simplex_path_masses_sum_to_one():
    run = exact_collapse_run(collapse_instance(0.15), n_iterations=2000)
    path = simplex_path(run)
    np.testing.assert_allclose(path.masses.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(path.log10_masses[:, 0], run.trajectory.log10_coverage[:, 0])


# --- stochastic REINFORCE ------------------------------------------------------------------


def test_sampled_run_is_reproducible_and_counts_responses():
    instance = collapse_instance(0.2)
    first = sampled_collapse_run(instance, eta=2.0, n_iterations=500, batch_size=8, rng=np.random.default_rng(4))
    second = sampled_collapse_run(instance, eta=2.0, n_iterations=500, batch_size=8, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(first.reward, second.reward)
    np.testing.assert_array_equal(first.responses_sampled, 8 * first.gradient_steps)
    assert first.gradient_steps[-1] == 500
    assert first.settings["batch_size"] == 8


def test_sampled_run_records_its_lowest_coverage_whatever_the_record_count():
    instance = collapse_instance(0.12)
    settings = {"eta": 4.0, "n_iterations": 5000, "batch_size": 16}
    sparse = sampled_collapse_run(instance, **settings, rng=np.random.default_rng(9), n_records=3)
    dense = sampled_collapse_run(instance, **settings, rng=np.random.default_rng(9), n_records=400)
    assert sparse.min_log10_coverage == dense.min_log10_coverage
    assert sparse.min_log10_coverage < np.log10(instance.base_coverage) - 1.0
    assert sparse.gradient_steps[-1] == dense.gradient_steps[-1]


@pytest.mark.parametrize("beta", [None, 0.1])
def test_sampled_engine_has_the_law_of_the_general_sampled_reinforce(beta):
    instance = collapse_instance(0.2, n_zero=5)
    bandit = instance.to_bandit()
    n_seeds, n_steps = 300, 4
    seeds = np.random.SeedSequence(11).spawn(2 * n_seeds)
    engine = [
        sampled_collapse_run(
            instance,
            eta=2.0,
            n_iterations=n_steps,
            batch_size=4,
            rng=np.random.default_rng(seed),
            beta=beta,
        ).reward[-1]
        for seed in seeds[:n_seeds]
    ]
    general = [
        reinforce(
            bandit, eta=2.0, n_iterations=n_steps, batch_size=4, rng=np.random.default_rng(seed),
            beta=0.0 if beta is None else beta, record_every=n_steps,
        ).reward[-1]
        for seed in seeds[n_seeds:]
    ]
    spread = np.sqrt((np.var(engine) + np.var(general)) / n_seeds)
    assert abs(np.mean(engine) - np.mean(general)) < 4 * spread
    assert np.var(engine) == pytest.approx(np.var(general), rel=0.35)


def test_seed_sweep_reports_one_outcome_per_seed():
    settings = {"eta": 4.0, "n_iterations": 2000, "batch_size": 8, "n_seeds": 3, "seed": 5}
    sweep = sampled_reinforce_over_seeds(collapse_instance(0.2), **settings)
    assert len(sweep.trajectories) == 3
    assert sweep.steps_to_eps.shape == (3,)
    np.testing.assert_array_equal(sweep.responses_to_eps, 8 * sweep.steps_to_eps)
    again = sampled_reinforce_over_seeds(collapse_instance(0.2), **settings)
    np.testing.assert_array_equal(sweep.min_log10_coverage, again.min_log10_coverage)


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"eta": 0.0}, "eta"),
        ({"beta": 0.0}, "beta"),
        ({"batch_size": 1}, "batch_size"),
        ({"baseline": "median"}, "baseline"),
        ({"rng": 3}, "rng"),
        ({"eps": -1.0}, "eps"),
    ],
)
def test_sampled_run_rejects_bad_arguments(arguments, name):
    settings = {
        "instance": collapse_instance(0.2),
        "eta": 1.0,
        "n_iterations": 10,
        "batch_size": 4,
        "rng": np.random.default_rng(0),
        **arguments,
    }
    with pytest.raises(ValueError, match=name):
        sampled_collapse_run(**settings)


# --- bad input to the reduced-form helpers (issue 18) ---------------------------------------


def test_plane_and_class_helpers_reject_nan_instead_of_returning_it():
    instance = collapse_instance(0.2)
    with pytest.raises(ValueError, match="u must be finite"):
        logits_from_plane(instance, np.nan, 0.0)
    with pytest.raises(ValueError, match="v must be finite"):
        logits_from_plane(instance, 0.0, np.inf)
    with pytest.raises(ValueError, match="u and v must have broadcastable shapes"):
        logits_from_plane(instance, np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="logits must be finite"):
        class_log_probs(instance, np.array([np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="logits must have a last axis of length 3"):
        plane_coordinates(instance, np.zeros(2))
    with pytest.raises(ValueError, match="instance must be a CollapseInstance, got NoneType"):
        class_log_probs(None, np.zeros(3))


def test_regularized_optimum_suboptimality_stays_finite_at_a_subnormal_beta():
    instance = collapse_instance(0.2)
    assert regularized_optimum_suboptimality(instance, 1e-320) == 0.0
    assert np.isfinite(regularized_optimum_suboptimality(instance, 1e300))


def test_full_vector_of_a_huge_zero_block_is_refused_with_the_memory_it_needs():
    with pytest.raises(ValueError, match=r"n_zero=1000000 .* 7\.3 TiB, above the 2\.0 GiB limit"):
        collapse_instance(0.2, n_zero=10**6).to_bandit()


def _bad_collapse_calls():
    from covpo.experiments.collapse import engine, landscape, paper_figures

    instance = collapse.collapse_instance(0.1, n_zero=20)
    return [
        (lambda: engine.exact_reinforce_many(None, eta=1.0, n_iterations=10, progress=False), "instances"),
        (lambda: engine.exact_reinforce_many(instance, eta=1.0, n_iterations=10, progress=False), "instances"),
        (lambda: engine.exact_collapse_run(
            instance,
            n_iterations=10,
            record_steps="x",
            progress=False,
        ), "record_steps"),
        (lambda: engine.exact_collapse_run(
            instance,
            n_iterations=10,
            record_steps=[20],
            progress=False,
        ), "record_steps"),
        (lambda: landscape.landscape_grid(instance, run="x", n_points=3), "run"),
        (lambda: landscape.landscape_grid(instance, u=[], n_points=3), "u"),
        (lambda: paper_figures.figure_2a_data(rate_sweep_steps=(0, 0)), "rate_sweep_steps"),
        (lambda: paper_figures.figure_2a_data(inner_steps_grid=[0]), "inner_steps_grid"),
        (lambda: paper_figures.figure_2a_data(n_records=None), "n_records"),
        (lambda: paper_figures.figure_1_data(weak_beta=0.1, margin=2.0), "margin"),
        (lambda: collapse.steps_to_eps_sweep(gaps=(0.1,), margin="x", progress=False), "margin"),
        (lambda: collapse.fit_exponential([1.0], [1.0, 2.0]), "inverse_gaps"),
    ]


@pytest.mark.parametrize("index", range(12))
def test_bad_input_raises_naming_the_argument_it_came_from(index):
    call, name = _bad_collapse_calls()[index]
    with pytest.raises(ValueError, match=name):
        call()


# --- per-step increments over every step -----------------------------------------------------


def _dense_increments(run, beta, inner_steps=0):
    """Reward and objective changes recomputed from a run recorded at every step."""
    from covpo.collapse_instance import _state_summary

    masses = np.exp(class_log_probs(run.instance, run.logits))
    reward = _state_summary(run.instance, run.logits)["reward"]
    member_log = class_log_probs(run.instance, run.logits) - run.instance.log_multiplicities
    steps = run.trajectory.gradient_steps
    objective_rises = []
    reference = member_log[0]
    for s in range(1, steps.size):
        if inner_steps and (s - 1) % inner_steps == 0:
            reference = member_log[s - 1]
        kl = lambda k: float(np.sum(masses[k] * (member_log[k] - reference)))
        objective_rises.append((reward[s] - beta * kl(s)) - (reward[s - 1] - beta * kl(s - 1)))
    return np.diff(reward), np.array(objective_rises), member_log[:, 0] + run.instance.log_multiplicities[0]


@pytest.mark.parametrize("beta", [None, 0.05])
def test_increments_are_those_of_every_step(beta, monkeypatch):
    instance = collapse_instance(0.12)
    n_steps = 3000
    monkeypatch.setattr(collapse.engine, "CHUNK_STEPS", 7)
    run = exact_collapse_run(instance, eta=4.0, beta=beta, n_iterations=n_steps, record_steps=np.arange(n_steps + 1))
    rises, objective_rises, log_coverage = _dense_increments(run, 0.0 if beta is None else beta)
    increments = run.increments
    lowest = int(np.argmin(log_coverage))
    np.testing.assert_allclose(increments.min_reward_increment, rises.min(), rtol=1e-6, atol=1e-18)
    assert increments.min_reward_increment_step == int(np.argmin(rises)) + 1
    assert increments.reward_falls == int(np.sum(rises < 0))
    np.testing.assert_allclose(increments.min_reward_increment_to_lowest, rises[:lowest].min(), rtol=1e-6, atol=1e-18)
    np.testing.assert_allclose(increments.min_objective_increment, objective_rises.min(), rtol=1e-6, atol=1e-15)
    directions = np.sign(np.diff(log_coverage[: lowest + 1]))
    directions = directions[directions != 0]
    assert increments.coverage_turns_to_lowest == int(np.sum(directions[1:] != directions[:-1]))


def test_apmd_objective_increments_skip_the_resets():
    instance = collapse_instance(0.03)
    run = collapse.exact_apmd_run(
        instance, beta=0.5, inner_steps=8, eta=4.0, gradient_steps=400, record_steps=np.arange(401)
    )
    _, objective_rises, _ = _dense_increments(run, 0.5, inner_steps=8)
    np.testing.assert_allclose(run.increments.min_objective_increment, objective_rises.min(), rtol=1e-6)
    assert run.increments.objective_falls == int(np.sum(objective_rises < 0)) == 0


def test_many_runs_carry_the_increments_of_single_runs():
    instances = [collapse_instance(gap) for gap in (0.15, 0.12)]
    many = exact_reinforce_many(instances, eta=4.0, n_iterations=4000)
    for k, instance in enumerate(instances):
        single = exact_collapse_run(instance, eta=4.0, n_iterations=4000).increments
        assert many.increments.run(k) == single
