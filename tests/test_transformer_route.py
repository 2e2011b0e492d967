"""Chapter 7's record of the route comparisons: what a run keeps, how the record is checked, and the record the book reads."""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("jax")

from covpo.labs.transformer.analysis import side_values  # noqa: E402
from covpo.labs.transformer.route import (  # noqa: E402
    ROUTE_COMPARISONS,
    ROUTE_METRICS,
    check_route_record,
    read_route_record,
    route_cells,
    route_interval,
    route_profiles,
    route_run,
    route_table,
)
from covpo.labs.transformer.paired import sign_test_interval  # noqa: E402
from covpo.labs.transformer.records import write_run  # noqa: E402
from covpo.plots.transformer import transformer_route_figure  # noqa: E402
from tests.fuzz_entry_points import synthetic_study  # noqa: E402


@pytest.fixture(scope="module")
def study():
    return synthetic_study(n_seeds=7, cells=route_cells())


@pytest.fixture(scope="module")
def record(study):
    return {"runs": [route_run(study, "default", 2.0)]}


def test_a_run_keeps_each_comparisons_differences_in_seed_order(study):
    run = route_run(study, "default", 2.0)
    assert (run["profile"], run["seeds"]) == ("default", 7)
    for comparison in ROUTE_COMPARISONS:
        for metric in ROUTE_METRICS:
            values = [side_values(study, side, metric) for side in (comparison.first, comparison.second,
                                                                    *(comparison.minus or ()))]
            expected = values[0] - values[1] - (values[2] - values[3] if comparison.minus else 0)
            assert run["differences"][comparison.label][metric] == expected.tolist()


def test_the_comparisons_are_the_task_and_group_size_comparisons_of_the_chapter():
    labels = [comparison.label for comparison in ROUTE_COMPARISONS]
    assert len(labels) == 8
    assert sum("loss on" in label for label in labels) == 6 and sum("G = " in label for label in labels) == 2


def test_a_study_without_the_routes_cells_has_no_run():
    with pytest.raises(ValueError, match="study must run route_cells"):
        route_run(synthetic_study(), "default", 2.0)


def test_intervals_are_read_from_the_named_run(record):
    label, metric = ROUTE_COMPARISONS[4].label, ROUTE_METRICS[1]
    interval = route_interval(record, "default", label, metric)
    differences = np.asarray(record["runs"][0]["differences"][label][metric])
    expected = sign_test_interval(differences)
    assert (interval.median, interval.low, interval.high) == (expected.median, expected.low, expected.high)
    with pytest.raises(ValueError, match="profile"):
        route_interval(record, "second", label, metric)
    with pytest.raises(ValueError, match="comparison"):
        route_interval(record, "default", "APMD - base model", metric)


@pytest.mark.parametrize("damage", ["no runs", "missing comparison", "short differences", "infinite difference",
                                    "zero seeds", "same profile twice"])
def test_a_damaged_record_is_refused_naming_what_is_wrong(record, damage):
    damaged = copy.deepcopy(record)
    run = damaged["runs"][0]
    label, metric = ROUTE_COMPARISONS[0].label, ROUTE_METRICS[0]
    if damage == "no runs":
        damaged["runs"] = []
    elif damage == "missing comparison":
        del run["differences"][label]
    elif damage == "short differences":
        run["differences"][label][metric].pop()
    elif damage == "infinite difference":
        run["differences"][label][metric][0] = float("inf")
    elif damage == "zero seeds":
        run["seeds"] = 0
    else:
        damaged["runs"].append(copy.deepcopy(run))
    with pytest.raises(ValueError, match="record must"):
        check_route_record(damaged)


def test_the_table_has_a_column_per_run_and_a_row_per_comparison_and_metric(record):
    twice = {"runs": record["runs"] + [{**record["runs"][0], "profile": "second"}]}
    table = route_table(twice)
    assert table.columns[2:] == ("default", "second")
    assert len(table.rows) == len(ROUTE_COMPARISONS) * len(ROUTE_METRICS)


@pytest.mark.same_on_every_cpu
def test_the_figure_draws_every_seed_and_median_of_every_run_comparison_and_metric(record):
    twice = {"runs": record["runs"] + [{**record["runs"][0], "profile": "second"}]}
    figure = transformer_route_figure(twice)
    panels = figure.axes[:len(ROUTE_METRICS)]
    for axes, metric in zip(panels, ROUTE_METRICS):
        lines = [line for line in axes.get_lines() if line.get_color() != "k"]
        seeds = [line for line in lines if line.get_marker() not in ("None", "")]
        medians = [line.get_xdata()[0] for line in lines if line.get_marker() in ("None", "")]
        drawn = sorted(value for line in seeds for value in line.get_xdata())
        differences = [run["differences"][comparison.label][metric] for run in twice["runs"]
                       for comparison in ROUTE_COMPARISONS]
        assert drawn == sorted(value for values in differences for value in values)
        assert sorted(medians) == sorted(np.median(values) for values in differences)
    assert [text.get_text() for text in figure.legends[0].get_texts()] == ["default", "second"]


def test_the_figure_refuses_a_damaged_record(record):
    with pytest.raises(ValueError, match="record must"):
        transformer_route_figure({"runs": [{**record["runs"][0], "seeds": 0}]})


@pytest.mark.same_on_every_cpu
def test_the_books_record_has_four_roundings_on_the_full_studys_seeds():
    record = read_route_record()
    assert route_profiles(record) == ("default", "second", "default, one core", "second, one core")
    for run in record["runs"]:
        assert (run["size"], run["seeds"]) == ("full", 18)
        assert run["cores"] == (1 if "one core" in run["profile"] else 2)
        assert ("NUMBA_CPU_NAME" in run["environment"]) == run["profile"].startswith("second")


def test_writing_a_run_adds_it_and_replaces_the_run_of_the_same_profile(record, tmp_path):
    path = tmp_path / "record.json"
    run = record["runs"][0]
    write_run(path, run, check_route_record)
    write_run(path, {**run, "profile": "second"}, check_route_record)
    write_run(path, {**run, "seconds": 9.0}, check_route_record)
    written = read_route_record(path)
    assert route_profiles(written) == ("second", "default")
    assert written["runs"][1]["seconds"] == 9.0


def test_a_file_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "record.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="path must hold JSON"):
        read_route_record(path)
