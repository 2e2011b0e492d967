"""Chapter 4's seed record (covpo.experiments.ppo.seeds) and the comparator targets (covpo.experiments.ppo.comparators)."""

from __future__ import annotations

import numpy as np
import pytest

from covpo.experiments.ppo.comparators import comparator_coverage, comparator_targets, restricted_base
from covpo.experiments.ppo.seeds import (
    RECORD_SEEDS,
    SEEDS_RECORD,
    check_seeds_record,
    read_seeds_record,
    seeds_summary,
    seeds_table,
)
from covpo.experiments.sweeps import Method, cost_sweeps
from covpo.families import stacked_collapse_instance
from covpo.policies import expected_reward


def test_restricted_comparators_have_the_coverage_their_base_mass_gives():
    instance = stacked_collapse_instance(2, 0.2, 8.0, n_zero=3)
    optimum = restricted_base(instance, (1.0,))
    both = restricted_base(instance, (1.0, 0.8))
    assert comparator_coverage(instance, optimum) == pytest.approx(8.0)
    assert comparator_coverage(instance, both) == pytest.approx(8.0 / 3)
    assert expected_reward(instance, both) == pytest.approx((1.0 + 2 * 0.8) / 3)
    with pytest.raises(ValueError, match="rewards_kept"):
        restricted_base(instance, (0.5,))


def test_comparator_targets_read_the_kept_runs():
    instance = stacked_collapse_instance(2, 0.2, 8.0, n_zero=3)
    method = Method("PPO-NoClip", "ppo_noclip", {"beta": 1.0, "batch_size": 16, "inner_steps": 4, "n_iterations": 6}, (4.0,))
    sweeps = cost_sweeps([instance], (8.0,), (method,), eps=0.3, seeds=(0, 1))
    targets = comparator_targets(sweeps, [instance], {"optimum": (1.0,), "distractor": (0.8,)}, (0.3,), ("PPO-NoClip",))
    assert targets.responses.shape == (2, 1, 2, 1, 1)
    # the sweep's own eps target against the optimum is the comparator target of the optimum
    np.testing.assert_array_equal(
        np.where(sweeps.reached[:, 0], sweeps.responses_to_eps[:, 0], -1), targets.responses[:, 0, 0, 0]
    )
    assert len(targets.table().rows) == 2


def test_the_book_record_covers_twenty_seeds_in_every_run():
    record = read_seeds_record(SEEDS_RECORD)
    for run in record["runs"]:
        assert tuple(run["seeds"]) == RECORD_SEEDS
        summary = seeds_summary(run)
        assert summary["n_seeds"] == 20 and len(seeds_table(summary).rows) > 10
    with pytest.raises(ValueError, match="record must"):
        check_seeds_record({"runs": [{"stamp": {}, "seeds": [0]}]})
