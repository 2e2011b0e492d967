"""Chapter 5's measurements: baselines, curvature, Table 1 and the batch-size study."""

from __future__ import annotations

import dataclasses

import joblib
import numpy as np
import pytest

from covpo.coverage_instances import dialled_coverage_instance
from covpo.instances import BanditInstance
from covpo.experiments.sweeps import Method
from covpo.families import stacked_collapse_instance
from covpo.experiments.squared_loss import (
    MAX_COVERAGE_LOSS,
    baseline_bias_sweep,
    batch_size_study,
    curvature_scan,
    curvature_table,
    loss_slice,
    mse_path,
    rebel_objective_check,
    squared_loss_methods,
    table_1,
    two_response_instance,
)
from covpo import run
from covpo.table import Table

KIMIPO = Method(
    "KimiPO", "kimipo", {"beta": 0.5, "batch_size": 16, "inner_steps": 5, "n_iterations": 4, "extra_responses": 1}, (4.0,)
)


def small_random() -> BanditInstance:
    return dialled_coverage_instance(np.random.default_rng(0), 6, 3, 2, 5.0)


def test_two_response_instance_checks_its_probability():
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="optimal_prob"):
            two_response_instance(bad)
    instance = two_response_instance(0.2)
    np.testing.assert_allclose(np.exp(instance.base_theta), [0.2, 0.8])


def test_mean_baseline_is_convex_where_the_normalizer_is_not():
    instance = two_response_instance(0.05)
    scan = curvature_scan(instance, instance.base_theta, 0.1, 16, radius=3.0, n_points=40, rng=np.random.default_rng(1))
    assert np.all(scan.min_eigenvalue[0] > -1e-14)
    assert np.all(scan.min_eigenvalue[3] > -1e-14)
    # tabular over two responses: adding one constant to both logits is a flat direction
    assert np.all(np.abs(scan.min_eigenvalue[[0, 3]]) < 1e-14)
    assert scan.at_reference[1] < 0.0 and scan.at_reference[2] < 0.0
    shares = scan.negative_share()
    assert shares[0] == 0.0 and shares[3] == 0.0 and shares[1] > 0.0


def test_exact_and_pairwise_losses_vanish_only_at_the_target():
    instance = small_random()
    line = loss_slice(instance, instance.base_theta, 0.5, 4, np.array([0.0, 0.5, 1.0, 1.5]))
    at_target = line.losses[:, 2]
    assert at_target[2] < 1e-25 and at_target[3] < 1e-25
    assert np.all(line.losses[2:, [0, 1, 3]] > 1e-6)
    assert at_target[0] > 1e-6


def test_loss_slice_needs_a_linear_reward():
    instance = small_random()
    nonlinear = BanditInstance(instance.prompt_probs, instance.features, instance.rewards, instance.base_theta)
    with pytest.raises(ValueError, match="reward_theta"):
        loss_slice(nonlinear, nonlinear.base_theta, 0.5, 4, [0.0, 1.0])


def test_bias_sweep_agrees_at_one_extra_response_and_shrinks():
    instance = small_random()
    sweep = baseline_bias_sweep(instance, instance.base_theta, betas=(0.5, 1.0, 2.0), group_sizes=(1, 4, 16), group_beta=0.5)
    np.testing.assert_allclose(sweep.normalizer_bias[0], sweep.mean_bias[0], rtol=1e-12)
    for values in (sweep.mean_bias, sweep.normalizer_bias, sweep.mean_step_error, sweep.normalizer_step_error):
        assert np.all(np.diff(values) < 0)
    assert sweep.slope("mean_bias") < -0.9


def test_bias_sweep_rejects_bad_grids():
    instance = small_random()
    with pytest.raises(ValueError, match="betas"):
        baseline_bias_sweep(instance, instance.base_theta, betas=(0.0, 1.0), group_sizes=(1,), group_beta=0.5)
    with pytest.raises(ValueError, match="group_sizes"):
        baseline_bias_sweep(instance, instance.base_theta, betas=(1.0,), group_sizes=(1.5,), group_beta=0.5)
    with pytest.raises(ValueError, match="group_beta"):
        baseline_bias_sweep(instance, instance.base_theta, betas=(1.0,), group_sizes=(1,), group_beta=-1.0)


def test_table_1_keeps_the_cheapest_admissible_run():
    instance = small_random()
    table = table_1(instance, (0.1, 0.05), betas=(0.25, 1.0), group_sizes=(2, 4), batch_size=16, inner_steps=5,
                    eta_scale=1.0, n_iterations=30, seed=0)
    assert table.eps.tolist() == [0.1, 0.05]
    assert len(table.runs) == 2 + 4
    for row, method in enumerate(table.methods):
        for j in range(table.eps.size):
            candidates = [
                table.run_steps[i, j] for i, run in enumerate(table.runs)
                if run[0] == method and table.run_steps[i, j] >= 0 and table.run_coverage_loss[i] <= MAX_COVERAGE_LOSS
            ]
            assert table.reached[row, j] == bool(candidates)
            if candidates:
                assert table.gradient_steps[row, j] == min(candidates)
                assert table.gradient_steps[row, j] == table.outer_iterations[row, j] * table.inner_steps


def test_table_1_as_tables_keeps_numbers_and_marks_unreached_targets():
    instance = small_random()
    table = table_1(instance, (0.1, 0.05, 1e-6), betas=(0.25, 1.0), group_sizes=(2, 4), batch_size=16,
                    inner_steps=5, eta_scale=1.0, n_iterations=30, seed=0)
    shown = table.table()
    assert isinstance(shown, Table) and len(shown.rows) == len(table.methods) * table.eps.size
    assert shown.column("method") == ["KimiPO"] * 3 + ["KimiPO-Norm"] * 3
    assert shown.column("ε") == [0.1, 0.05, 1e-6] * 2
    steps = shown.column("gradient steps")
    for row in range(len(table.methods)):
        for j in range(table.eps.size):
            cell = steps[row * table.eps.size + j]
            if table.reached[row, j]:
                assert isinstance(cell, int) and cell == table.gradient_steps[row, j]
            else:
                assert cell is None
    assert shown.rows[2][2:] == (None,) * 5  # eps = 1e-6 is out of reach in 30 iterations
    runs = table.runs_table("KimiPO")
    assert len(runs.rows) == 2 and runs.column("β") == [0.25, 1.0]
    assert runs.columns[2:5] == ("steps to ε = 0.1", "steps to ε = 0.05", "steps to ε = 1e-06")
    assert runs.column("admissible") == [bool(loss <= MAX_COVERAGE_LOSS) for loss in table.run_coverage_loss[:2]]
    with pytest.raises(ValueError, match="method"):
        table.runs_table("Rebel-OnPolicy")
    for shown_table in (shown, runs):
        assert "<table" in shown_table._repr_html_() and str(shown_table)


def test_chapter_records_display_as_tables():
    instance = small_random()
    sweep = baseline_bias_sweep(instance, instance.base_theta, betas=(0.5, 1.0), group_sizes=(1, 4), group_beta=0.5)
    mean, group = sweep.table("mean"), sweep.table("normalizer")
    assert mean.column("β") == [0.5, 1.0] and group.column("G (extra responses)") == [1, 4]
    assert mean.rows[0][1] == pytest.approx(sweep.mean_bias[0]) and "slopes" in mean.notes[0]
    with pytest.raises(ValueError, match="baseline"):
        sweep.table("median")
    two = two_response_instance(0.05)
    scan = curvature_scan(two, two.base_theta, 0.1, 16, radius=3.0, n_points=10, rng=np.random.default_rng(1))
    curvature = curvature_table({"a": scan, "b": scan})
    assert curvature.column("instance") == ["a"] * 4 + ["b"] * 4
    assert curvature.column("negative at (% of points)")[:4] == pytest.approx(100 * scan.negative_share())
    line = loss_slice(instance, instance.base_theta, 0.5, 4, np.array([0.0, 0.5, 1.0, 1.5]))
    minimizers = line.table().column("minimizer s")
    assert minimizers == pytest.approx(line.argmin()) and minimizers[2] == 1.0
    study_instance = stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)
    methods = (KIMIPO,)
    study = batch_size_study(study_instance, methods, (16, 32), eps=0.05, seeds=(0, 1))
    batch = study.table()
    assert batch.column("N (prompts)") == [16, 32] and "(of 2)" in batch.columns[2]
    assert batch.column("worst coverage loss (decades)") == pytest.approx(study.coverage_loss[0].max(axis=1))
    for shown in (mean, group, curvature, line.table(), batch):
        assert "<table" in shown._repr_html_() and str(shown)


def test_table_1_rejects_bad_targets():
    instance = small_random()
    with pytest.raises(ValueError, match="eps"):
        table_1(instance, (0.0,), betas=(1.0,), group_sizes=(2,), batch_size=8, inner_steps=2, eta_scale=1.0,
                n_iterations=2, seed=0)


def test_a_misconfigured_method_propagates_out_of_the_batch_size_study():
    instance = stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)
    with pytest.raises(ValueError, match="beta"):
        batch_size_study(instance, (KIMIPO.with_hyperparameters(beta=0.0),), (16,), eps=0.05, seeds=(0,))


def test_batch_size_study_is_reproducible_under_threads():
    instance = stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)
    methods = (KIMIPO,)
    serial = batch_size_study(instance, methods, (16, 32), eps=0.05, seeds=(0, 1))
    with joblib.parallel_config(backend="threading", n_jobs=2):
        threaded = batch_size_study(instance, methods, (16, 32), eps=0.05, seeds=(0, 1))
    assert serial.coverage_loss.shape == (1, 2, 2)
    np.testing.assert_array_equal(serial.coverage_loss, threaded.coverage_loss)
    np.testing.assert_array_equal(serial.reached, threaded.reached)
    with pytest.raises(ValueError, match="methods"):
        batch_size_study(instance, (), (16,), eps=0.05, seeds=(0,))


def test_squared_loss_settings_count_every_response():
    random_methods = squared_loss_methods("random")
    kimi, norm, rebel = random_methods[:3]
    assert kimi.responses_per_iteration == 2 * kimi.hyperparameters["batch_size"]
    assert norm.responses_per_iteration == 9 * norm.hyperparameters["batch_size"]
    assert rebel.responses_per_iteration == 2 * rebel.hyperparameters["batch_size"]
    with pytest.raises(ValueError, match="family"):
        squared_loss_methods("tabular")
    # KimiPO draws one extra response per prompt unless told otherwise; Rebel draws none
    default = Method("KimiPO", "kimipo", {"beta": 0.5, "batch_size": 16, "inner_steps": 5, "n_iterations": 4}, (4.0,))
    assert default.responses_per_iteration == 2 * 16
    with pytest.raises(ValueError, match="extra_responses"):
        Method("Rebel", "rebel_onpolicy", {"beta": 0.5, "batch_size": 16, "inner_steps": 5, "n_iterations": 4,
                                          "extra_responses": 2}, (4.0,))
    with pytest.raises(ValueError, match="extra_responses"):
        KIMIPO.with_hyperparameters(extra_responses=0).run(small_random(), 4.0, np.random.default_rng(0))


def _bad_squared_loss_calls():
    from covpo.collapse_instance import collapse_instance
    from covpo.experiments import squared_loss as experiments
    from covpo.policies import base_log_policy

    instance = stacked_collapse_instance(1, 0.2, 10.0, n_zero=5)
    reference = base_log_policy(instance)
    theta = instance.base_theta
    return [
        (lambda: experiments.baseline_bias_sweep(None, theta, [1.0], [2], 1.0), "instance"),
        (lambda: experiments.baseline_bias_sweep(collapse_instance(0.1), theta, [1.0], [2], 1.0), "instance"),
        (lambda: experiments.population_baselines("x", reference, 1.0, 2), "instance"),
        (lambda: experiments.population_baselines(instance, np.exp(reference), 1.0, 2), "log_reference"),
        (lambda: experiments.population_baselines(instance, reference, 1.0, float("nan")), "group_size"),
        (lambda: experiments.curvature_scan(instance, theta, 1.0, 2, radius=0.1, n_points=2, rng=0), "rng"),
        (lambda: experiments.loss_slice(3, theta, 1.0, 2, [0.0]), "instance"),
        (lambda: experiments.curvature_table({"a": None}), "scans"),
        (lambda: experiments.two_response_instance(1.0), "optimal_prob"),
        (lambda: experiments.squared_loss_methods(None), "family"),
        (lambda: experiments.table_1(
            instance, [0.5], betas=[1.0], group_sizes=[2], batch_size=4, inner_steps=1, eta_scale=1.0,
            n_iterations=2, seed=None), "seed"),
        (lambda: experiments.batch_size_study(instance, [None], [4], eps=0.5, seeds=[0]), "methods"),
        (lambda: experiments.batch_size_study(
            instance, experiments.squared_loss_methods("random")[:1], [4], eps=0.5, seeds=[1.5]), "seeds"),
    ]


@pytest.mark.parametrize("index", range(13))
def test_bad_input_raises_naming_the_argument(index):
    call, name = _bad_squared_loss_calls()[index]
    with pytest.raises(ValueError, match=name):
        call()


REBEL = Method("Rebel-OnPolicy", "rebel_onpolicy", {"beta": 0.5, "batch_size": 16, "inner_steps": 5, "n_iterations": 4}, (4.0,))
KIMIPO_NORM = Method(
    "KimiPO-Norm", "kimipo_norm",
    {"beta": 0.5, "batch_size": 16, "inner_steps": 5, "n_iterations": 4, "extra_responses": 4}, (4.0,),
)


def test_the_batch_size_study_measures_every_squared_loss_run_in_the_mse_criterions_terms():
    instance = stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)
    study = batch_size_study(instance, (KIMIPO, KIMIPO_NORM, REBEL), (16, 32), eps=0.05, seeds=(0, 1))
    assert len(study.paths) == 12
    for i in range(3):
        for j in range(2):
            for k in range(2):
                path = study.path(i, j, k)
                assert path.algorithm == study.names[i] and path.mse.shape == (4,)
                # the fall recomputed from the steps is the study's coverage loss
                assert path.coverage_fall.max() == pytest.approx(study.coverage_loss[i, j, k], abs=1e-12)
                # our lemma: no step falls further than its bound
                assert np.all(-path.coverage_change <= path.coverage_bound + 1e-12)
                assert np.all(path.centered_mse <= path.mse + 1e-15) and np.all(path.inner_kl >= 0)
                if path.algorithm == "Rebel-OnPolicy":
                    np.testing.assert_allclose(path.objective_gap, 2 * path.centered_mse, rtol=1e-10)
    shown = study.mse_table()
    assert shown.column("N (prompts)") == [16, 32, 16, 32, 16, 32]
    assert shown.column("largest fall (decades)") == pytest.approx(np.nanmax(study.coverage_loss, axis=2).ravel(), abs=1e-12)
    assert "<table" in shown._repr_html_()


def test_rebels_objective_on_fresh_batches_estimates_twice_the_centered_mse():
    instance = stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)
    study = batch_size_study(instance, (REBEL,), (16,), eps=0.05, seeds=(0,))
    check = rebel_objective_check(instance, study.path(0, 0, 0), batch_size=64, n_batches=400,
                                  rng=np.random.default_rng(0))
    assert check.objectives.shape == (4, 400)
    assert np.all(np.abs(check.ratio - 1) < 5 * check.standard_error)
    again = rebel_objective_check(instance, study.path(0, 0, 0), batch_size=64, n_batches=400,
                                  rng=np.random.default_rng(0))
    np.testing.assert_array_equal(check.objectives, again.objectives)


def test_mse_path_rejects_runs_it_cannot_measure():
    instance = stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)
    trajectory = run("ppo_noclip", instance, rng=np.random.default_rng(0), beta=1.0, eta=0.5, n_iterations=2,
                     batch_size=8, inner_steps=2)
    with pytest.raises(ValueError, match="trajectory"):
        mse_path(instance, trajectory)
    rebel = run("rebel_onpolicy", instance, rng=np.random.default_rng(0), beta=0.5, eta=1.0, n_iterations=2,
                batch_size=8, inner_steps=2)
    with pytest.raises(ValueError, match="thetas"):
        mse_path(instance, dataclasses.replace(rebel, thetas=None))
    path = mse_path(instance, rebel)
    with pytest.raises(ValueError, match="n_batches"):
        rebel_objective_check(instance, path, batch_size=8, n_batches=1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        rebel_objective_check(instance, path, batch_size=8, n_batches=4, rng=0)


# ---------------------------------------------------------------------------------------
# Over seeds: Table 1 per seed, the seeded sweeps, the failure-rate study, the eps scaling
# ---------------------------------------------------------------------------------------

def test_table_1_seeds_gives_each_seed_the_table_that_table_1_gives_it():
    from covpo.experiments.squared_loss import SeededTable1, table_1_seeds

    instance = small_random()
    settings = dict(betas=(0.25, 1.0), group_sizes=(2,), batch_size=8, inner_steps=3, eta_scale=1.0, n_iterations=12)
    seeded = table_1_seeds(instance, (0.1, 0.05), seeds=(0, 2), **settings)
    assert seeded.seeds == (0, 2) and seeded.eps.tolist() == [0.1, 0.05]
    for seed, table in zip(seeded.seeds, seeded.tables):
        alone = table_1(instance, (0.1, 0.05), seed=seed, **settings)
        for field in ("outer_iterations", "responses", "gradient_steps", "run_steps", "extra_responses"):
            np.testing.assert_array_equal(getattr(table, field), getattr(alone, field))
        np.testing.assert_array_equal(table.run_coverage_loss, alone.run_coverage_loss)
    assert seeded.stacked("outer_iterations").shape == (2, 2, 2)
    np.testing.assert_array_equal(seeded.run_coverage_loss("KimiPO-Norm", 1.0, 2),
                                  [t.run_coverage_loss[t.runs.index(("KimiPO-Norm", 1.0, 2))] for t in seeded.tables])
    assert len(seeded.table().rows) == 2 * 2 * 2 and seeded.table().columns[0] == "seed"
    assert [row[0] for row in seeded.runs_table("KimiPO").rows] == [0, 0, 2, 2]
    with pytest.raises(ValueError, match="seeds"):
        table_1_seeds(instance, (0.1,), seeds=(), **settings)
    with pytest.raises(ValueError, match="batch_size"):
        table_1_seeds(instance, (0.1,), seeds=(0,), **{**settings, "batch_size": 0})
    with pytest.raises(ValueError, match="field"):
        seeded.stacked("runs")
    with pytest.raises(ValueError, match="no run"):
        seeded.run_coverage_loss("KimiPO", 0.5)
    with pytest.raises(ValueError, match="method"):
        seeded.exponents("PPO")
    with pytest.raises(ValueError, match="tables"):
        SeededTable1((0, 1), seeded.tables[:1])


def test_seeded_cost_sweeps_repeat_the_sweep_of_each_seed():
    from covpo.experiments.squared_loss.seeds import seeded_cost_sweeps, sweeps_entry
    from covpo.experiments.sweeps import cost_sweep

    instances = [stacked_collapse_instance(2, 0.2, c, n_zero=10) for c in (5.0, 10.0)]
    seeded = seeded_cost_sweeps(instances, (5.0, 10.0), (KIMIPO,), eps=0.05, seeds=(1, 3))
    for seed, sweep in zip(seeded.seeds, seeded.sweeps):
        alone = cost_sweep(instances, (5.0, 10.0), (KIMIPO,), eps=0.05, seed=seed)
        np.testing.assert_array_equal(sweep.responses_to_eps, alone.responses_to_eps)
        np.testing.assert_array_equal(sweep.coverage_loss, alone.coverage_loss)
    assert seeded.stacked("reached").shape == (2, 1, 2)
    losses = seeded.stacked("coverage_loss")[:, 0]
    rate = seeded.loss_rate(0, [0, 1], 0.0)
    assert (rate.successes, rate.trials) == (int(np.sum(losses > 0.0)), 4)
    entry = sweeps_entry(seeded)
    assert entry["seeds"] == [1, 3] and np.array(entry["responses"]).shape == (2, 1, 2)
    assert len(seeded.table().rows) == 4
    with pytest.raises(ValueError, match="seeds"):
        seeded_cost_sweeps(instances, (5.0, 10.0), (KIMIPO,), eps=0.05, seeds=(-1,))
    with pytest.raises(ValueError, match="sweeps"):
        sweeps_entry(seeded.sweeps[0])


def test_failure_rate_study_cell_is_the_run_its_seed_names():
    from covpo.experiments.squared_loss.seeds import failure_rate_study, failure_rates_entry, failure_rates_from_entry
    from covpo.experiments.sweeps import summarize_run

    instance = stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)
    study = failure_rate_study([instance], (10.0,), (KIMIPO,), (8, 16), inner_steps=(2, 5), eps=0.05, seeds=(0, 4))
    assert study.coverage_loss.shape == (1, 1, 2, 2, 2)
    # cell (c, i, j, k, s) is the run of the method at N_j and K_k drawing from [seed_s, i, N_j, K_k, c]
    method = KIMIPO.with_hyperparameters(batch_size=16, inner_steps=2)
    summary = summarize_run(method, instance, KIMIPO.learning_rates[0], (4, 0, 16, 2, 0), 0.05)
    assert study.coverage_loss[0, 0, 1, 0, 1] == summary.coverage_loss
    assert study.reached[0, 0, 1, 0, 1] == (summary.responses_to_eps is not None)
    rate = study.rate(0, 0, 1, 0)
    assert (rate.successes, rate.trials) == (int(study.failed[0, 0, 1, 0].sum()), 2)
    back = failure_rates_from_entry(failure_rates_entry(study))
    np.testing.assert_array_equal(back.coverage_loss, study.coverage_loss)
    np.testing.assert_array_equal(back.reached, study.reached)
    assert back.seeds == study.seeds and back.names == study.names
    assert len(study.table().rows) == 4
    with pytest.raises(ValueError, match="coverages"):
        failure_rate_study([instance], (10.0, 20.0), (KIMIPO,), (8,), eps=0.05, seeds=(0,))
    with pytest.raises(ValueError, match="batch_sizes"):
        failure_rate_study([instance], (10.0,), (KIMIPO,), (0,), eps=0.05, seeds=(0,))
    with pytest.raises(ValueError, match="inner_steps"):
        failure_rate_study([instance], (10.0,), (KIMIPO, dataclasses.replace(
            KIMIPO.with_hyperparameters(inner_steps=3), label="KimiPO, K = 3")), (8,), eps=0.05, seeds=(0,))
    with pytest.raises(ValueError, match="entry"):
        failure_rates_from_entry({"coverages": []})


def test_smallest_safe_batch_is_where_no_larger_batch_fails():
    from covpo.experiments.squared_loss.seeds import FailureRates

    def rates(losses: list[list[float]]) -> FailureRates:
        loss = np.array(losses, dtype=float)[None, None, :, None, :]  # (1, 1, n_batches, 1, n_seeds)
        return FailureRates(np.array([10.0]), ("KimiPO",), np.array([8, 16, 32, 64])[:loss.shape[2]],
                            np.array([5]), tuple(range(loss.shape[-1])), loss, np.ones(loss.shape, dtype=bool))

    broken, kept = 1.0, 0.0
    assert rates([[broken, kept], [kept, kept], [broken, kept], [kept, kept]]).smallest_safe_batch(0, 0) == 64
    assert rates([[broken, kept], [kept, kept], [kept, kept], [kept, kept]]).smallest_safe_batch(0, 0) == 16
    assert rates([[kept, kept], [kept, kept]]).smallest_safe_batch(0, 0) == 8
    assert rates([[kept, kept], [kept, broken]]).smallest_safe_batch(0, 0) is None


def test_l1_beta_balances_the_exponential_factor_against_eps():
    from covpo.experiments.squared_loss.eps_scaling import bound_slope, l1_beta

    for eps in (0.1, 0.01, 0.001):
        assert l1_beta(eps) == pytest.approx(1.0 / np.log(1.0 / eps))
        assert np.exp(1.0 / l1_beta(eps)) == pytest.approx(1.0 / eps)
        assert l1_beta(eps, reward_range=2.0) == pytest.approx(2.0 * l1_beta(eps))
    assert l1_beta(0.001) < l1_beta(0.01) < l1_beta(0.1)
    # two points: the slope of x - log x against x = log(1/eps), below one
    x = np.log([10.0, 1000.0])
    assert bound_slope((0.1, 0.001)) == pytest.approx(((x[1] - np.log(x[1])) - (x[0] - np.log(x[0]))) / (x[1] - x[0]))
    assert 0.0 < bound_slope((0.1, 0.01, 0.001)) < 1.0
    for bad in (0.0, 1.0, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match="eps"):
            l1_beta(bad)
    with pytest.raises(ValueError, match="reward_range"):
        l1_beta(0.1, reward_range=0.0)
    with pytest.raises(ValueError, match="eps_grid"):
        bound_slope((0.1, 2.0))


def test_rebel_eps_scaling_runs_each_eps_at_its_l1_beta():
    from covpo.experiments.squared_loss.eps_scaling import l1_beta, rebel_eps_scaling
    from covpo.experiments.sweeps import Method, summarize_run

    instance = stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)
    scaling = rebel_eps_scaling(instance, (0.2, 0.1), seeds=(0, 1), batch_size=16, inner_steps=5, n_iterations=8)
    np.testing.assert_allclose(scaling.betas, [l1_beta(0.2), l1_beta(0.1)])
    assert scaling.responses.shape == scaling.coverage_loss.shape == (2, 2)
    beta = float(scaling.betas[1])
    method = Method("Rebel-OnPolicy", "rebel_onpolicy",
                    {"beta": beta, "batch_size": 16, "inner_steps": 5, "n_iterations": 8}, (2.0 / beta**2,))
    summary = summarize_run(method, instance, 2.0 / beta**2, (1, 1), 0.1)
    assert scaling.coverage_loss[1, 1] == summary.coverage_loss
    expected = np.nan if summary.responses_to_eps is None else summary.responses_to_eps
    np.testing.assert_array_equal(scaling.responses[1, 1], expected)
    np.testing.assert_array_equal(scaling.reached, np.isfinite(scaling.responses))
    assert len(scaling.table().rows) == 2
    for name, value in (("batch_size", 0), ("inner_steps", 0), ("eta_scale", -1.0), ("n_iterations", 0),
                        ("reward_range", 0.0)):
        with pytest.raises(ValueError, match=name):
            rebel_eps_scaling(instance, (0.1,), seeds=(0,), **{name: value})
    with pytest.raises(ValueError, match="eps_grid"):
        rebel_eps_scaling(instance, (1.5,), seeds=(0,))
    with pytest.raises(ValueError, match="seeds"):
        rebel_eps_scaling(instance, (0.1,), seeds=())
