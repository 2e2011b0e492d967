"""The contract's settings table covers the registry: every entry, two settings that tell its parameters apart, every branch.

``tests/contract_settings.py`` holds the table; these tests fail when a registry entry has no
settings or only one, when a setting cannot tell two hyperparameters apart (a value near 1, two
values equal, reciprocal or squared), when an option value the validators accept is never run,
when an algorithm with a clip has no setting where it engages on both sides, and when an entry
has no independent reference (``tests/contract_references.py``).
"""

from __future__ import annotations

import pytest

from covpo import ALGORITHMS
from tests.contract_references import REFERENCES
from tests.contract_settings import (
    CLIP_ENGAGES,
    SETTINGS,
    case_id,
    cases,
    degeneracies,
    missing_branches,
    option_values,
)
from tests.registry_contract import contract_instance, observed

pytestmark = pytest.mark.same_on_every_cpu


def test_every_registered_algorithm_has_two_settings_and_a_reference():
    assert set(SETTINGS) == set(ALGORITHMS)
    assert [name for name, settings in SETTINGS.items() if len(settings) < 2] == []
    assert set(REFERENCES) == set(ALGORITHMS)


@pytest.mark.parametrize("case", cases(), ids=case_id)
def test_every_setting_tells_its_hyperparameters_apart(case):
    name, index = case
    assert degeneracies(ALGORITHMS[name], SETTINGS[name][index]) == []


@pytest.mark.parametrize("name", ALGORITHMS)
def test_every_option_branch_runs(name):
    assert missing_branches(ALGORITHMS[name]) == []


def test_degenerate_settings_are_found():
    grpo = ALGORITHMS["grpo_fixed"]
    found = degeneracies(grpo, {"beta": 0.5, "eta": 2.0, "n_iterations": 4, "batch_size": 16, "group_size": 5,
                                "inner_steps": 1, "clip_epsilon_high": 0.2})
    assert "beta = 0.5 is the reciprocal of eta = 2" in found
    assert "eta = 2 is the square root of n_iterations = 4" in found
    assert "inner_steps = 1 is near 1" in found
    assert "clip_epsilon = 0.2 is equal to clip_epsilon_high = 0.2" in found
    assert "clip_epsilon = 0.2 is the reciprocal of group_size = 5" in found


def test_options_are_derived_from_the_validators_and_a_missing_branch_is_named():
    reinforce, grpo = ALGORITHMS["reinforce"], ALGORITHMS["grpo_reset"]
    assert set(option_values(reinforce)["baseline"]) == {"leave_one_out", "batch_mean"}
    only_first = SETTINGS["reinforce"][:1]
    assert missing_branches(reinforce, only_first) == ["baseline='batch_mean'"]
    assert set(missing_branches(grpo, SETTINGS["grpo_reset"][:1])) == {
        "clip_epsilon_high='given'", "kl='exact'", "scale_by_std=True",
    }


def test_every_clip_engages_on_both_sides_at_a_declared_setting():
    instance = contract_instance()
    clipped = set()
    for name, index in cases():
        _, by_iteration = observed(ALGORITHMS[name], SETTINGS[name][index], instance)
        if any(step.clip_mask is not None for steps in by_iteration.values() for step in steps):
            clipped.add(name)
    declared = {name for (name, _), sides in CLIP_ENGAGES.items() if sides == {"high", "low"}}
    assert clipped == declared
    assert all(index < len(SETTINGS[name]) for name, index in CLIP_ENGAGES)
