"""The reliability study of chapter 4's reset methods (covpo.experiments.ppo.reliability) and its figure."""

from __future__ import annotations

import joblib
import numpy as np
import pytest

from covpo.experiments.ppo.reliability import (
    RELIABILITY_SEEDS,
    ReliabilityStudy,
    paired_loss_difference,
    read_reliability_record,
    reliability_methods,
    reliability_study,
    scaled_method,
    sign_test_interval,
)
from covpo.experiments.sweeps import collapse_family_methods, cost_sweep
from covpo.families import COLLAPSE_COVERAGES, collapse_family
from covpo.plots.reliability import reliability_figure, reliable_settings_table


def short_methods(n_iterations: int = 3):
    """The chapter's reset methods with a few outer iterations, for quick studies."""
    return tuple(method.with_hyperparameters(n_iterations=n_iterations) for method in reliability_methods())


@pytest.fixture(scope="module")
def small_study() -> ReliabilityStudy:
    return reliability_study(short_methods(), coverages=(20.0, 160.0), batch_multipliers=(1, 2),
                             inner_multipliers=(1, 2), seeds=(0, 1, 2), progress=False)


def test_the_reset_methods_are_the_chapters_three() -> None:
    labels = [method.label for method in reliability_methods()]
    assert labels == ["PPO-NoClip", "PPO-Lite", "GRPO, resets"]
    assert all(method in collapse_family_methods() for method in reliability_methods())


def test_a_scaled_method_multiplies_batch_and_inner_loop_and_keeps_the_outer_iterations() -> None:
    for method in reliability_methods():
        scaled = scaled_method(method, 4, 2)
        assert scaled.label == method.label and scaled.etas == method.etas
        assert scaled.n_iterations == method.n_iterations
        assert scaled.responses_per_iteration == 4 * method.responses_per_iteration
        assert scaled.steps_per_iteration == 2 * method.steps_per_iteration
        assert scaled.response_budget == 4 * method.response_budget


def test_a_cell_at_the_chapters_settings_is_the_chapters_cell_bit_for_bit() -> None:
    sweep = cost_sweep(collapse_family(COLLAPSE_COVERAGES), COLLAPSE_COVERAGES, reliability_methods(), eps=0.04, seed=1)
    study = reliability_study(coverages=(40.0, 160.0), batch_multipliers=(1,), inner_multipliers=(1,), seeds=(1,),
                              progress=False)
    columns = [COLLAPSE_COVERAGES.index(40.0), COLLAPSE_COVERAGES.index(160.0)]
    cell = (slice(None), slice(None), 0, 0, 0)
    np.testing.assert_array_equal(study.reached[cell], sweep.reached[:, columns])
    np.testing.assert_array_equal(study.responses[cell], sweep.responses_to_eps[:, columns])
    np.testing.assert_array_equal(study.steps[cell], sweep.steps_to_eps[:, columns])
    np.testing.assert_array_equal(study.coverage_loss[cell], sweep.coverage_loss[:, columns])


@pytest.mark.same_on_every_cpu
def test_the_study_is_the_same_bit_for_bit_on_two_processes_and_one(small_study: ReliabilityStudy) -> None:
    with joblib.parallel_config(n_jobs=2):
        again = reliability_study(short_methods(), coverages=(20.0, 160.0), batch_multipliers=(1, 2),
                                  inner_multipliers=(1, 2), seeds=(0, 1, 2), progress=False)
    for name in ("reached", "diverged", "responses", "steps"):
        np.testing.assert_array_equal(getattr(again, name), getattr(small_study, name))
    np.testing.assert_array_equal(again.coverage_loss, small_study.coverage_loss)


def test_costs_follow_the_budget_rule(small_study: ReliabilityStudy) -> None:
    # Fixed outer iterations: a run that misses eps spends T N responses and T K steps.
    for i in range(len(small_study.labels)):
        budget = small_study.n_iterations[i] * small_study.batch_responses[i][:, None]
        missed = ~small_study.reached[i]
        spent = np.broadcast_to(budget[None, :, :, None], missed.shape)
        np.testing.assert_array_equal(small_study.responses[i][missed], spent[missed])
        assert np.all(small_study.responses[i] <= spent)
    np.testing.assert_array_equal(small_study.batch_responses[:, 1], 2 * small_study.batch_responses[:, 0])


@pytest.mark.same_on_every_cpu
def test_the_record_form_reads_back_and_a_selection_cuts_the_arrays(small_study: ReliabilityStudy) -> None:
    back = ReliabilityStudy.from_record(small_study.to_record())
    for name in ("reached", "diverged", "responses", "steps", "batch_responses", "inner_steps"):
        np.testing.assert_array_equal(getattr(back, name), getattr(small_study, name))
    np.testing.assert_array_equal(back.coverage_loss, small_study.coverage_loss)
    part = small_study.select(labels=("PPO-Lite",), coverages=(160.0,), batch_multipliers=(2,), n_seeds=2)
    np.testing.assert_array_equal(part.reached[0, 0, 0], small_study.reached[1, 1, 1, :, :2])
    assert part.seeds == (0, 1) and part.batch_responses.tolist() == [[512]]


def test_rates_and_the_smallest_reliable_batch_agree_with_the_counts(small_study: ReliabilityStudy) -> None:
    for label in small_study.labels:
        for coverage in small_study.coverages:
            failures = small_study.failures(label, coverage)
            for k, multiplier in enumerate(small_study.inner_multipliers):
                smallest = small_study.smallest_reliable_batch(label, coverage, multiplier)
                zero = [m for b, m in enumerate(small_study.batch_multipliers) if failures[b, k] == 0]
                assert smallest == (zero[0] if zero else None)
                rate = small_study.failure_rate(label, coverage, small_study.batch_multipliers[0], multiplier)
                assert rate.successes == failures[0, k] and rate.trials == 3


def test_zero_of_twenty_leaves_a_wilson_upper_bound_near_sixteen_percent() -> None:
    from covpo.rates import wilson_rate

    assert 0.15 < wilson_rate(0, RELIABILITY_SEEDS).high < 0.17


def test_the_sign_test_interval_brackets_the_median() -> None:
    paired = sign_test_interval(np.arange(-3.0, 17.0))
    assert paired.low <= paired.median <= paired.high and paired.level >= 0.95
    assert paired.verdict == 1 and sign_test_interval(np.arange(-10.0, 10.0)).verdict == 0
    with pytest.raises(ValueError, match="differences"):
        sign_test_interval(np.ones(5))


def test_the_paired_difference_pairs_by_seed(small_study: ReliabilityStudy) -> None:
    paired = paired_loss_difference(small_study, "PPO-NoClip", 1, longer=2, shorter=1)
    expected = (small_study.coverage_loss[0, :, 0, 1] - small_study.coverage_loss[0, :, 0, 0]).ravel()
    np.testing.assert_allclose(np.sort(paired.differences), np.sort(expected[np.isfinite(expected)]))


@pytest.mark.parametrize("arguments", [
    {"coverages": (30.0,)}, {"coverages": ()}, {"batch_multipliers": (2, 1)}, {"inner_multipliers": (0,)},
    {"seeds": (-1,)}, {"eps": 0.0}, {"progress": 1},
])
def test_bad_settings_raise_naming_the_argument(arguments: dict) -> None:
    name = next(iter(arguments))
    with pytest.raises(ValueError, match=name):
        reliability_study(short_methods(), **arguments)


def test_the_figure_and_the_table_show_every_method(small_study: ReliabilityStudy) -> None:
    figure = reliability_figure(small_study)
    titles = [axes.get_title() for axes in figure.axes]
    assert sum(any(label in title for label in small_study.labels) for title in titles) == 3
    table = reliable_settings_table(small_study)
    assert len(table.rows) == 3 * 2 * 2


def test_the_books_record_holds_both_profiles_over_the_first_twenty_seeds() -> None:
    runs = read_reliability_record()
    assert set(runs) <= {"default", "second"} and runs
    for _stamp, study in runs.values():
        assert study.seeds == tuple(range(RELIABILITY_SEEDS))
        assert study.labels == ("PPO-NoClip", "PPO-Lite", "GRPO, resets")


def test_the_seed_claims_read_every_seed_of_the_records_details() -> None:
    from covpo.experiments.ppo.reliability import RECORD_PATH
    from covpo.plots.reliability import seed_claims, seed_claims_table
    from covpo.records import read_stamped_record

    for run in read_stamped_record(RECORD_PATH)["runs"]:
        details = run["details"]
        claims = seed_claims(details)
        assert all(claim.values.shape == claim.holds.shape == (len(details["seeds"]),) for claim in claims)
        assert all(claim.holds.dtype == bool for claim in claims)
        radius = [seed["concave_radius"] for seed in details["concavity"]]
        assert claims[0].count == sum(value >= 2.0 for value in radius)
        assert len(seed_claims_table(claims, len(details["seeds"])).rows) == len(claims)
    with pytest.raises(ValueError, match="details"):
        seed_claims({"concavity": []})
