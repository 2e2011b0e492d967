"""Chapter 6's 20-seed record (covpo.experiments.implications.seeds) and the script that writes it."""

from __future__ import annotations

import numpy as np
import pytest

from covpo.experiments.implications import seeds
from covpo.table import Table


@pytest.fixture(scope="module")
def run():
    return seeds.seeds_record_runs()[0]


def test_the_record_holds_the_first_20_seeds_of_each_convention(run):
    for other in seeds.seeds_record_runs():
        assert other["suite_seeds"] == list(range(1, seeds.STUDY_SEEDS + 1))
        assert other["lab_seeds"] == list(range(seeds.STUDY_SEEDS))
    suite = seeds.recorded_suite(run, "collapse")
    assert suite.seeds == tuple(range(1, 21))
    assert suite.reached.shape == (len(suite.methods), 3, 20)
    ratio, coverage = seeds.recorded_sequences(run)
    assert ratio.shape == coverage.shape and ratio.shape[0] == 20
    network = seeds.recorded_network(run)
    assert network["min_log10_coverage"].shape[-1] == 20


def test_the_readers_give_tables_and_refuse_unknown_parts(run):
    assert isinstance(seeds.suite_rate_table(run), Table)
    assert isinstance(seeds.units_share_table(run), Table)
    rows = seeds.units_shares(run, "random", "rounds")
    assert all(row["verdict"].shape == (20,) for row in rows)
    tuning = seeds.recorded_tuning_map(run, "inner_steps")
    assert tuning.reached.shape == tuning.lost.shape == (tuning.rows.size, tuning.betas.size, 20)
    with pytest.raises(ValueError, match="part"):
        seeds.recorded_suite(run, "no such part")
    with pytest.raises(ValueError, match="family"):
        seeds.units_shares(run, "no such family", "steps")
    with pytest.raises(ValueError, match="run"):
        seeds.recorded_sequences({"stamp": {}})


def test_worst_loss_per_seed_is_the_largest_over_instances(run):
    suite = seeds.recorded_suite(run, "random")
    name = suite.methods[0]
    np.testing.assert_array_equal(suite.worst_loss_per_seed(name), suite.coverage_loss[0].max(axis=0))
