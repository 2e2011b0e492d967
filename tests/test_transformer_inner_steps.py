"""Chapter 7's record of longer inner loops: what a block keeps, how the record is checked, and the record the book reads."""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("jax")

from covpo.labs.transformer.analysis import side_values  # noqa: E402
from covpo.labs.transformer.inner_steps import (  # noqa: E402
    APMD_ARMS,
    ARMS,
    COMPARISONS,
    INNER_STEPS_METRICS,
    check_inner_steps_record,
    inner_steps_block,
    inner_steps_closed,
    inner_steps_interval,
    inner_steps_table,
    read_inner_steps_record,
)
from covpo.labs.transformer.paired import sign_test_interval  # noqa: E402
from tests.fuzz_entry_points import synthetic_study  # noqa: E402


@pytest.fixture(scope="module")
def study():
    return synthetic_study(n_seeds=7, names=ARMS)


@pytest.fixture(scope="module")
def record(study):
    return {"runs": [{"profile": "default", "blocks": [inner_steps_block(study, 2.0)]}]}


def test_a_block_keeps_each_comparisons_differences_in_seed_order_and_the_median_fraction_closed(study):
    block = inner_steps_block(study, 2.0)
    assert (block["inner_steps"], block["seeds"]) == (study.setup.inner_steps, 7)
    for comparison in COMPARISONS:
        for metric in INNER_STEPS_METRICS:
            expected = side_values(study, comparison.first, metric) - side_values(study, comparison.second, metric)
            assert block["differences"][comparison.label][metric] == expected.tolist()
    for arm in APMD_ARMS:
        assert block["closed"][arm] == np.median(study.distance_closed()[study.runs("mixed", arm)])


def test_a_study_without_the_arms_has_no_block():
    with pytest.raises(ValueError, match="study must run"):
        inner_steps_block(synthetic_study(), 2.0)


def test_intervals_and_fractions_are_read_from_the_named_run_and_length(record):
    block = record["runs"][0]["blocks"][0]
    label, metric = COMPARISONS[3].label, INNER_STEPS_METRICS[1]
    interval = inner_steps_interval(record, "default", block["inner_steps"], label, metric)
    expected = sign_test_interval(np.asarray(block["differences"][label][metric]))
    assert (interval.median, interval.low, interval.high) == (expected.median, expected.low, expected.high)
    assert inner_steps_closed(record, "default", block["inner_steps"], "APMD") == block["closed"]["APMD"]
    with pytest.raises(ValueError, match="profile"):
        inner_steps_interval(record, "second", block["inner_steps"], label, metric)
    with pytest.raises(ValueError, match="inner_steps"):
        inner_steps_closed(record, "default", block["inner_steps"] + 1, "APMD")


@pytest.mark.parametrize("damage", ["no runs", "missing arm", "short differences", "infinite difference", "zero seeds"])
def test_a_damaged_record_is_refused_naming_what_is_wrong(record, damage):
    damaged = copy.deepcopy(record)
    block = damaged["runs"][0]["blocks"][0]
    label, metric = COMPARISONS[0].label, INNER_STEPS_METRICS[0]
    if damage == "no runs":
        damaged["runs"] = []
    elif damage == "missing arm":
        del block["closed"]["APMD, exact target"]
    elif damage == "short differences":
        block["differences"][label][metric].pop()
    elif damage == "infinite difference":
        block["differences"][label][metric][0] = float("inf")
    else:
        block["seeds"] = 0
    with pytest.raises(ValueError, match="record must be"):
        check_inner_steps_record(damaged)


def test_the_table_has_a_row_per_run_and_length(record):
    twice = {"runs": record["runs"] + [{**record["runs"][0], "profile": "second"}]}
    table = inner_steps_table(twice)
    assert [row[0] for row in table.rows] == ["default", "second"]


@pytest.mark.same_on_every_cpu
def test_the_books_record_has_both_profiles_at_every_length_on_the_full_studys_seeds():
    record = read_inner_steps_record()
    assert [run["profile"] for run in record["runs"]] == ["default", "second"]
    for run in record["runs"]:
        assert run["size"] == "full"
        assert [block["inner_steps"] for block in run["blocks"]] == [4, 16, 32]
        assert {block["seeds"] for block in run["blocks"]} == {18}
    default, second = record["runs"]
    assert not default["environment"] and "NUMBA_CPU_NAME" in second["environment"]
