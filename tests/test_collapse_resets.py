"""Tests for reference resets on the collapse family: the APMD engine, its sweeps and figures (paper sections 2.1 and 3.1, appendix C)."""

from __future__ import annotations

import numpy as np
import pytest

import covpo.experiments.collapse as collapse
from covpo.experiments.collapse import (
    ESCAPE_OUTCOMES,
    apmd_steps_along_knob,
    beta_escape_map,
    collapse_instance,
    exact_apmd_many,
    exact_apmd_run,
    exact_collapse_run,
    exact_reinforce_many,
    figure_1_data,
    figure_1a_data,
    figure_2a_data,
    figure_2bc_data,
    figure_3_data,
    fit_power,
    fixed_reference_rate_sweep,
    inner_steps_sweep,
    landscape_grid,
    mirror_descent_resets_to_eps,
    regularized_optimum_suboptimality,
)
from covpo.experiments.collapse.reset_sweeps import inner_accuracy_sweep, inner_kl_per_reset
from covpo.algorithms.mirror_descent import apmd, exact_mirror_descent
from covpo.objectives import regularized_objective
from covpo.policies import log_policy

# --- the engine against the general APMD ------------------------------------------------------


@pytest.mark.parametrize(
    ("n_zero", "beta", "inner_steps", "eta"),
    [(5, 0.5, 3, 2.0), (12, 0.2, 1, 1.0), (20, 1.0, 4, 4.0), (8, 0.05, 7, 3.0)],
)
def test_apmd_engine_matches_the_general_apmd_step_for_step(n_zero, beta, inner_steps, eta):
    instance = collapse_instance(0.15, n_zero=n_zero)
    n_iterations = 20
    n_steps = n_iterations * inner_steps
    general = apmd(
        instance.to_bandit(), beta=beta, eta=eta, n_iterations=n_iterations, inner_steps=inner_steps, record_each_step=True
    )
    run = exact_apmd_run(
        instance, beta=beta, inner_steps=inner_steps, eta=eta, gradient_steps=n_steps, record_steps=np.arange(n_steps + 1)
    )
    reduced = run.trajectory
    np.testing.assert_array_equal(reduced.gradient_steps, general.gradient_steps)
    np.testing.assert_array_equal(reduced.reference_resets, general.reference_resets)
    np.testing.assert_allclose(reduced.reward, general.reward, atol=1e-10)
    np.testing.assert_allclose(reduced.log_coverage, general.log_coverage, atol=1e-10)
    np.testing.assert_allclose(reduced.kl_to_base, general.kl_to_base, atol=1e-10)
    at_resets = run.logits[::inner_steps]
    np.testing.assert_allclose(at_resets[:, :2], general.thetas[:, :2], atol=1e-10)
    np.testing.assert_allclose(np.repeat(at_resets[:, 2:], n_zero, axis=1), general.thetas[:, 2:], atol=1e-10)
    assert reduced.settings["inner_steps"] == inner_steps and reduced.algorithm == "exact APMD"


def test_one_inner_step_is_reinforce_exactly():
    instance = collapse_instance(0.12)
    reset_every_step = exact_apmd_run(instance, beta=0.5, inner_steps=1, gradient_steps=20_000, eps=0.06)
    reinforce = exact_collapse_run(instance, n_iterations=20_000, eps=0.06)
    np.testing.assert_array_equal(reset_every_step.logits, reinforce.logits)
    assert reset_every_step.steps_to_eps == reinforce.steps_to_eps


@pytest.mark.same_on_every_cpu
def test_apmd_results_do_not_depend_on_the_chunking(monkeypatch):
    instance = collapse_instance(0.05)
    reference = exact_apmd_run(
        instance,
        beta=0.5,
        inner_steps=5,
        gradient_steps=3000,
        record_steps=np.arange(0, 3001, 3),
    )
    monkeypatch.setattr(collapse.engine, "CHUNK_STEPS", 7)
    chunked = exact_apmd_run(instance, beta=0.5, inner_steps=5, gradient_steps=3000, record_steps=np.arange(0, 3001, 3))
    np.testing.assert_array_equal(chunked.logits, reference.logits)
    np.testing.assert_array_equal(chunked.trajectory.reference_resets, reference.trajectory.reference_resets)


def test_apmd_eps_stop_is_the_first_eps_optimal_step_and_many_runs_match_single_runs():
    instances = [collapse_instance(gap) for gap in (0.1, 0.05)]
    every_step = exact_apmd_run(
        instances[1],
        beta=0.5,
        inner_steps=8,
        gradient_steps=400,
        record_steps=np.arange(401),
    ).trajectory
    first = every_step.steps_to_eps(0.025)
    stopped = exact_apmd_run(instances[1], beta=0.5, inner_steps=8, gradient_steps=400, eps=0.025)
    assert stopped.reached_eps and stopped.steps_to_eps == first
    assert stopped.trajectory.reference_resets[-1] == -(-first // 8)
    summary = exact_apmd_many(
        instances,
        eta=[4.0, 4.0],
        gradient_steps=400,
        beta=[0.5, 0.5],
        inner_steps=[4, 8],
        eps=[0.05, 0.025],
    )
    single = exact_apmd_run(instances[0], beta=0.5, inner_steps=4, gradient_steps=400, eps=0.05)
    assert list(summary.steps) == [single.steps_to_eps, first]
    np.testing.assert_array_equal(summary.final_logits[0], single.final_logits)


def test_mirror_descent_resets_to_eps_is_the_first_eps_optimal_iterate():
    instance = collapse_instance(0.05, n_zero=10)
    beta, eps = 0.5, 0.025
    resets = mirror_descent_resets_to_eps(instance, beta, eps)
    suboptimality = exact_mirror_descent(instance.to_bandit(), beta=beta, n_iterations=resets).suboptimality
    assert suboptimality[-1] <= eps < suboptimality[-2]
    assert regularized_optimum_suboptimality(instance, beta / resets) <= eps


def test_apmd_keeps_coverage_where_reinforce_collapses():
    instance = collapse_instance(0.05)
    resets = exact_apmd_run(instance, beta=0.5, inner_steps=8, gradient_steps=100_000, eps=0.025)
    reinforce = exact_collapse_run(instance, n_iterations=100_000, eps=0.025)
    assert resets.reached_eps and resets.steps_to_eps < 200
    assert resets.trajectory.min_log10_coverage >= np.log10(instance.base_coverage) - 1e-12
    assert reinforce.trajectory.min_log10_coverage < np.log10(instance.base_coverage) - 3.0


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: exact_apmd_run(collapse_instance(0.1), beta=0.0, inner_steps=4), "beta"),
        (lambda: exact_apmd_run(collapse_instance(0.1), beta=0.5, inner_steps=0), "inner_steps"),
        (lambda: exact_apmd_run(collapse_instance(0.1), beta=0.5, inner_steps=2.5), "inner_steps"),
        (lambda: exact_apmd_run(collapse_instance(0.1), beta=0.5, inner_steps=4, eta=-1.0), "eta"),
        (lambda: exact_apmd_run(collapse_instance(0.1), beta=0.5, inner_steps=4, eps=-0.1), "eps"),
        (lambda: exact_apmd_run("instance", beta=0.5, inner_steps=4), "instance"),
        (lambda: exact_apmd_many(
            [collapse_instance(0.1)] * 2,
            eta=4.0,
            gradient_steps=10,
            inner_steps=[4],
        ), "inner_steps"),
        (lambda: exact_apmd_many([], eta=4.0, gradient_steps=10), "instances"),
        (lambda: mirror_descent_resets_to_eps(collapse_instance(0.1), 0.5, 0.0), "eps"),
        (lambda: inner_steps_sweep(collapse_instance(0.1), inner_steps=[0]), "inner_steps"),
        (lambda: inner_steps_sweep(collapse_instance(0.1), etas=[]), "etas"),
        (lambda: inner_steps_sweep(collapse_instance(0.1), coverage_fraction=1.0), "coverage_fraction"),
        (lambda: apmd_steps_along_knob([0.1], eps_fraction=0.0), "eps_fraction"),
        (lambda: apmd_steps_along_knob([]), "gaps"),
        (lambda: beta_escape_map([0.1], [0.1, -1.0]), "betas"),
        (lambda: beta_escape_map([0.1], [0.1], collapse_factor=1.0), "collapse_factor"),
        (lambda: beta_escape_map([1.5], [0.1]), "gap"),
        (lambda: landscape_grid(collapse_instance(0.1), 0.5, reference=np.zeros(2)), "reference"),
        (lambda: figure_2a_data(gap=0.1, apmd_beta=0.0), "apmd_beta"),
        (lambda: figure_2a_data(gap=0.1, etas=[64.0]), "etas"),
        (lambda: figure_1_data(gap=0.0), "gap"),
        (lambda: figure_1_data(gap=0.1, weak_beta=-1.0), "weak_beta"),
        (lambda: figure_3_data(n_surfaces=0), "n_surfaces"),
        (lambda: figure_3_data(data="x"), "data"),
        (lambda: figure_3_data(stack_points=(2,)), "stack_points"),
        (lambda: figure_2bc_data(n_points=1), "n_points"),
        (lambda: figure_2bc_data(data=0.5), "data"),
        (lambda: figure_1a_data(data=3), "data"),
        (lambda: figure_2a_data(gap=0.1, rate_sweep_steps=(10,)), "rate_sweep_steps"),
        (lambda: figure_2a_data(gap=0.1, inner_steps_factor=0), "inner_steps_factor"),
        (lambda: fixed_reference_rate_sweep(collapse_instance(0.1), [0.1]), "betas"),
        (lambda: fixed_reference_rate_sweep(collapse_instance(0.1), [0.1, 0.5], n_steps=(5, 0)), "n_steps"),
    ],
)
def test_reset_functions_reject_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- sweeps ------------------------------------------------------------------------------


def test_inner_steps_sweep_finds_where_coverage_preservation_breaks():
    instance = collapse_instance(0.05)
    sweep = inner_steps_sweep(instance, inner_steps=[1, 2, 8], etas=[4.0], max_steps=50_000)
    reinforce = exact_reinforce_many([instance], eta=4.0, n_iterations=50_000, eps=0.025)
    assert sweep.steps_to_eps.shape == (1, 3)
    assert sweep.steps_to_eps[0, 0] == reinforce.steps[0]
    assert sweep.min_log10_coverage[0, 0] == reinforce.min_log10_coverage[0]
    assert list(sweep.preserved[0]) == [False, False, True]
    assert sweep.reached_eps[0, 2] and sweep.steps_to_eps[0, 2] < sweep.steps_to_eps[0, 1]
    np.testing.assert_allclose(sweep.min_coverage_ratio[0, 2], 1.0, atol=1e-12)


def test_apmd_steps_grow_polynomially_along_the_knob_at_constant_coverage():
    gaps = np.array([0.1, 0.05, 0.025, 0.0125])
    sweep = apmd_steps_along_knob(gaps, max_steps=100_000)
    assert np.all(sweep.reached_eps)
    assert np.all(np.diff(sweep.steps_to_eps) > 0)
    assert np.all(sweep.steps_to_eps[1:] < 3 * sweep.steps_to_eps[:-1])
    assert np.all(sweep.min_coverage_ratio >= 0.5)
    assert np.all(sweep.resets_to_eps >= sweep.mirror_descent_resets)
    assert 0.5 < sweep.fit.exponent < 1.5


def test_power_fit_recovers_an_exact_power_law():
    inverse_gaps = np.array([10.0, 20.0, 40.0, 80.0])
    fit = fit_power(inverse_gaps, 3.0 * inverse_gaps**1.25)
    assert fit.exponent == pytest.approx(1.25) and fit.intercept == pytest.approx(np.log10(3.0))
    assert fit.r_squared == pytest.approx(1.0) and fit.n_points == 4
    with pytest.raises(ValueError, match="steps"):
        fit_power(inverse_gaps, np.zeros(4))


def test_beta_escape_map_classifies_every_outcome():
    escape_map = beta_escape_map([0.12, 0.03], [0.002, 0.05, 1.0], max_steps=200_000)
    assert escape_map.outcome.tolist() == [
        ["collapsed", "escaped", "optimum not eps-optimal"],
        ["collapsed", "collapsed", "optimum not eps-optimal"],
    ]
    assert escape_map.optimum_suboptimality[1, 1] > escape_map.eps[1]
    assert escape_map.escape_window == [(0.05, 0.05), None]
    np.testing.assert_array_equal(escape_map.outcome_codes, [[0, 2, 1], [0, 0, 1]])
    short = beta_escape_map([0.12], [0.05], max_steps=5)
    assert short.outcome.tolist() == [["budget exhausted"]] and short.steps_to_eps[0, 0] == 5
    assert ESCAPE_OUTCOMES[3] == "budget exhausted"


# --- landscapes toward a reset reference ---------------------------------------------------


def test_landscape_toward_a_reference_is_the_subproblem_of_apmd():
    instance = collapse_instance(0.2, n_zero=6)
    run = exact_apmd_run(instance, beta=0.5, inner_steps=4, gradient_steps=12, record_steps=np.arange(13))
    reference = run.logits[4]
    surface = landscape_grid(instance, 0.5, run, reference=reference, n_points=5)
    bandit = instance.to_bandit()

    def full(logits: np.ndarray) -> np.ndarray:
        return log_policy(bandit, np.concatenate([logits[:2], np.full(instance.n_zero, logits[2])]))

    expected = [regularized_objective(bandit, full(logits), full(reference), 0.5) for logits in run.logits]
    np.testing.assert_allclose(surface.path_objective, expected, atol=1e-12)
    np.testing.assert_allclose(surface.reference, run.plane[4], atol=1e-12)
    assert surface.path_objective[4] == pytest.approx(run.trajectory.reward[4], abs=1e-14)
    base = landscape_grid(instance, 0.5, run, n_points=5)
    np.testing.assert_allclose(base.reference, [0.0, 0.0])
    np.testing.assert_allclose(
        landscape_grid(instance, 0.5, run, reference=instance.base_logits, n_points=5).objective,
        base.objective,
        atol=1e-12,
    )


# --- the figures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_race():
    """The protocol of paper appendix C.1 on the gap-0.05 member, with a short budget."""
    return figure_2a_data(gap=0.05, max_steps=50_000, n_records=20)


def test_figure_2a_follows_the_protocol_of_appendix_c1(small_race):
    data = small_race
    base = np.log10(data.instance.base_coverage)
    sweep = data.learning_rate_sweep
    np.testing.assert_allclose(sweep.betas, [data.reinforce_beta, data.apmd_beta])
    assert data.eta == sweep.best_eta and sweep.monotone[:, sweep.etas == data.eta].all()
    # The pick is the fastest of the rates rising at both strengths, at each strength.
    candidates = sweep.monotone.all(axis=0)
    if sweep.fastest_in_both:
        for row in sweep.final_reward:
            assert row[sweep.etas == data.eta][0] == row[candidates].max()
    counts = data.inner_steps_sweep
    reached = counts.reached_eps[0]
    assert data.fastest_inner_steps == counts.inner_steps[reached][np.argmin(counts.steps_to_eps[0][reached])]
    assert data.inner_steps == 2 * data.fastest_inner_steps
    assert data.apmd_beta > 10 * data.reinforce_beta
    assert data.apmd_steps_to_eps * 3 < data.reinforce_steps_to_eps
    assert data.apmd_min_log10_coverage >= base - 1e-12 > data.reinforce_min_log10_coverage + 1.5
    for run in (data.reinforce, data.apmd):
        assert run.trajectory.total_gradient_steps == data.max_steps == 50_000
    assert data.apmd.trajectory.reference_resets[-1] == -(-50_000 // data.inner_steps)
    # The runs to eps are the same runs as the whole-budget ones, cut at eps.
    for whole, cut in ((data.reinforce, data.reinforce_to_eps), (data.apmd, data.apmd_to_eps)):
        shared, in_whole, in_cut = np.intersect1d(
            whole.trajectory.gradient_steps, cut.trajectory.gradient_steps, return_indices=True
        )
        assert shared.size >= 5
        np.testing.assert_array_equal(whole.logits[in_whole], cut.logits[in_cut])
    assert data.apmd_to_eps.trajectory.gradient_steps[-1] == data.apmd_steps_to_eps


def test_fixed_reference_rate_sweep_prefers_stable_rates():
    instance = collapse_instance(0.03)
    sweep = fixed_reference_rate_sweep(instance, [0.02, 0.5], etas=[1.0, 4.0, 8.0, 16.0], n_steps=(50, 20))
    # eta = 16 oscillates at the strong strength, so it is no candidate even where it is fastest.
    assert not sweep.monotone[1, -1] and sweep.best_eta == 8.0
    assert sweep.reward[0].shape == (4, 51) and sweep.reward[1].shape == (4, 21)
    assert sweep.final_reward[0, 0] == sweep.reward[0][0, -1]
    # Every rate unstable at one strength: no pick.
    assert fixed_reference_rate_sweep(instance, [0.02, 0.5], etas=[16.0, 32.0], n_steps=(50, 20)).best_eta is None


def test_figure_2bc_surface_is_the_fixed_reference_objective(small_race):
    data = figure_2bc_data(small_race, n_points=7)
    instance = small_race.instance
    for landscape in (data.reinforce, data.apmd):
        np.testing.assert_array_equal(landscape.objective, data.reinforce.objective)
        assert landscape.beta == data.beta == small_race.reinforce_beta
    # Height at one grid point: J - beta KL(pi || pi_0) on the full vector.
    logits = collapse.logits_from_plane(instance, data.reinforce.u[3], data.reinforce.v[2])
    full = np.concatenate([logits[:2], np.full(instance.n_zero, logits[2])])
    theta = full - np.log(np.exp(full).sum())
    reward = np.exp(theta[:2]) @ instance.rewards[:2]
    base = np.concatenate([instance.base_logits[:2], np.full(instance.n_zero, instance.base_logits[2])])
    kl = np.sum(np.exp(theta) * (theta - base))
    assert data.reinforce.objective[2, 3] == pytest.approx(reward - data.beta * kl, abs=1e-12)
    np.testing.assert_allclose(data.reinforce.path, small_race.reinforce_to_eps.plane)
    np.testing.assert_allclose(data.apmd.path, small_race.apmd_to_eps.plane)


def test_figure_1a_pulls_are_the_derivative_of_the_objective_along_u():
    data = figure_1_data(gap=0.05, max_steps=30_000, n_records=30)
    pulls = figure_1a_data(data)
    instance, beta = data.instance, data.weak_beta
    plane = data.weak.plane[: pulls.path.gradient_steps.size]
    for index in (1, 5, len(plane) - 1):
        u, v = plane[index]
        h = 1e-6

        def part(du, regularized):
            landscape = landscape_grid(instance, beta if regularized else None, u=[u + du], v=[v])
            return landscape.objective[0, 0] - (landscape.reward[0, 0] if regularized else 0.0)

        reward_slope = (part(h, False) - part(-h, False)) / (2 * h)
        kl_slope = (part(h, True) - part(-h, True)) / (2 * h)
        assert -reward_slope == pytest.approx(pulls.reward_pull[index], rel=1e-4, abs=1e-9)
        assert kl_slope == pytest.approx(pulls.kl_pull[index], rel=1e-4, abs=1e-9)
    assert pulls.path.gradient_steps[-1] == data.weak.trajectory.steps_to_eps(data.eps)


def test_figure_1_shows_three_regimes():
    data = figure_1_data(gap=0.05, max_steps=30_000, n_records=30)
    base = np.log10(data.instance.base_coverage)
    assert data.weak.trajectory.min_log10_coverage < base - 1.0
    assert data.weak.trajectory.suboptimality[-1] <= data.eps
    strong = data.strong.trajectory.suboptimality[-1]
    assert strong == pytest.approx(data.strong_optimum_suboptimality, abs=1e-9)
    assert data.eps < strong <= data.strong_bias_bound
    assert data.resets.trajectory.min_log10_coverage >= base - 1e-12
    first = data.resets.trajectory.steps_to_eps(data.eps)
    exact = exact_apmd_many(
        [data.instance],
        eta=data.eta,
        gradient_steps=30_000,
        beta=data.strong_beta,
        inner_steps=data.inner_steps,
        eps=data.eps,
    )
    assert first == exact.steps[0]
    assert data.weak.trajectory.steps_to_eps(data.eps) == exact_collapse_run(
        data.instance,
        eta=data.eta,
        n_iterations=30_000,
        beta=data.weak_beta,
        eps=data.eps,
    ).steps_to_eps
    recorded = set(data.resets.trajectory.gradient_steps.tolist())
    assert set(range(0, first + 1, data.inner_steps)) <= recorded
    np.testing.assert_allclose(data.resets_path.masses.sum(axis=1), 1.0, atol=1e-12)


def test_figure_3_stack_is_ascended_surface_by_surface(small_race):
    data = figure_3_data(small_race, n_surfaces=4, n_points=11, stack_points=(9, 13))
    assert len(data.stack) == len(data.stack_resets) == 4
    assert data.stack_resets[0] == 0 and data.weak.beta < data.strong.beta
    assert data.eta == small_race.eta and data.inner_steps == small_race.inner_steps
    np.testing.assert_array_equal(data.strong.u, data.weak.u)
    np.testing.assert_array_equal(data.strong.v, data.weak.v)
    for surface in data.stack[1:]:
        np.testing.assert_array_equal(surface.u, data.stack[0].u)
    # The lowest surface of the stack is panel (b)'s: reference pi_0, same beta.
    np.testing.assert_allclose(data.stack[0].reference, 0.0, atol=1e-12)
    assert data.stack[0].beta == data.strong.beta
    steps = data.apmd.trajectory.gradient_steps
    for surface, step in zip(data.stack, data.stack_steps):
        start = int(np.searchsorted(steps, step))
        stop = int(np.searchsorted(steps, min(step + data.inner_steps, steps[-1])))
        np.testing.assert_allclose(surface.reference, data.apmd.plane[start])
        assert np.all(np.diff(surface.path_objective[start : stop + 1]) >= -1e-12)
    # Panel (a) is Figure 2b's surface.
    np.testing.assert_array_equal(data.weak.objective, figure_2bc_data(small_race, n_points=11).reinforce.objective)


# --- inner-loop accuracy -----------------------------------------------------------------------


@pytest.mark.parametrize(("beta", "inner_steps", "eta"), [(0.5, 3, 2.0), (0.2, 1, 1.0), (1.0, 4, 4.0)])
def test_inner_kl_per_reset_is_the_general_apmds_inner_kl(beta, inner_steps, eta):
    instance = collapse_instance(0.1, n_zero=9)
    n_iterations = 15
    general = apmd(instance.to_bandit(), beta=beta, eta=eta, n_iterations=n_iterations, inner_steps=inner_steps)
    n_steps = n_iterations * inner_steps
    run = exact_apmd_run(
        instance, beta=beta, inner_steps=inner_steps, eta=eta, gradient_steps=n_steps,
        record_steps=np.arange(0, n_steps + 1, inner_steps),
    )
    np.testing.assert_allclose(inner_kl_per_reset(run, beta, inner_steps), general.inner_kl, rtol=1e-7, atol=1e-13)
    with pytest.raises(ValueError, match="inner_steps"):
        inner_kl_per_reset(exact_apmd_run(
            instance,
            beta=beta,
            inner_steps=inner_steps,
            gradient_steps=n_steps,
            n_records=3,
        ), beta, inner_steps)


def test_inner_accuracy_sweep_ties_coverage_to_inner_accuracy():
    sweep = inner_accuracy_sweep(collapse_instance(0.05), inner_steps=[1, 2, 8, 32], etas=[4.0], max_steps=256)
    assert sweep.max_inner_kl.shape == sweep.min_coverage_ratio.shape == (1, 4)
    assert list(sweep.preserved[0]) == [False, False, True, True]
    # more inner steps solve each subproblem more accurately
    assert np.all(np.diff(sweep.max_inner_kl[0]) < 0)
    assert sweep.max_inner_kl[0, ~sweep.preserved[0]].min() > sweep.max_inner_kl[0, sweep.preserved[0]].max()
    np.testing.assert_allclose(sweep.min_coverage_ratio[0, 2:], 1.0, atol=1e-12)
    one_step = exact_reinforce_many([collapse_instance(0.05)], eta=4.0, n_iterations=256)
    assert sweep.min_coverage_ratio[0, 0] == pytest.approx(
        10.0 ** (one_step.min_log10_coverage[0] - np.log10(sweep.base_coverage)), rel=1e-9
    )
    with pytest.raises(ValueError, match="inner_steps"):
        inner_accuracy_sweep(collapse_instance(0.05), inner_steps=[64], max_steps=32)
    with pytest.raises(ValueError, match="etas"):
        inner_accuracy_sweep(collapse_instance(0.05), etas=[0.0])


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: collapse.exact_apmd_many(None, eta=1.0, gradient_steps=16, progress=False), "instances"),
        (lambda: collapse.exact_apmd_many([None], eta=1.0, gradient_steps=16, progress=False), "instances"),
        (lambda: collapse.exact_apmd_run(
            collapse.collapse_instance(0.1, n_zero=20),
            gradient_steps=16,
            record_steps=[-1],
            progress=False,
        ), "record_steps"),
        (lambda: inner_kl_per_reset(None, 0.5, 8), "run"),
        (lambda: collapse.fit_power([1.0], [1.0, 2.0]), "inverse_gaps"),
    ],
)
def test_reset_bad_input_raises_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
