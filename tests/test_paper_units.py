"""The paper's summary claim in its units: group costs, verdicts, the hardness suite's settings."""

import numpy as np
import pytest

from covpo.experiments.implications.head_to_head import FAMILY_RESPONSE_BUDGET, head_to_head
from covpo.experiments.implications.paper_units import (
    EPS_PER_GAP,
    FIXED_BUDGET_FACTOR,
    HARDNESS_FIXED_METHODS,
    HARDNESS_RESET_METHODS,
    group_best,
    hardness_methods,
    hardness_parts,
    method_group,
    units_comparison,
)
from covpo.experiments.sweeps import Method
from covpo.families import stacked_collapse_instance
from covpo.table import Table

EPS = 0.04


def methods() -> tuple[Method, ...]:
    ppo = {"beta": 1.0, "batch_size": 64, "inner_steps": 5, "n_iterations": 6}
    return (
        Method("PPO-Lite", "ppo_lite", ppo, (8.0,)),
        Method("PPO-NoClip", "ppo_noclip", ppo, (8.0,)),
        Method("REINFORCE", "reinforce", {"batch_size": 16, "n_iterations": 40}, (8.0,)),
        Method("APMD, exact targets", "apmd_exact", {"beta": 1.0, "n_iterations": 20}),
        Method("Best-of-N", "best_of_n", {"delta": EPS}),
    )


@pytest.fixture(scope="module")
def result():
    instance = stacked_collapse_instance(1, 0.2, 20.0, n_zero=10)
    return head_to_head([instance], [20.0], methods(), eps=EPS, seeds=(0, 1, 2), progress=False)


def test_groups_hold_trained_sampling_methods_only():
    groups = [method_group(method) for method in methods()]
    assert groups == ["resets", "resets", "fixed", None, None]


def test_group_best_is_the_smallest_reached_median_over_seeds(result):
    for group, rows in (("resets", (0, 1)), ("fixed", (2,))):
        for cost in ("responses", "steps", "rounds"):
            best = group_best(result, 0, group, cost)
            medians, reached = [], []
            for row in rows:
                costs, hits = result.costs(cost)[row, 0], result.reached[row, 0]
                order = sorted(range(3), key=lambda s: (costs[s], not hits[s]))
                medians.append(float(np.median(costs)))
                reached.append(bool(hits[order[1]]))  # three seeds: the middle one
            candidates = [m for m, r in zip(medians, reached) if r] or medians
            assert best.value == pytest.approx(min(candidates))
            assert best.reached == any(reached)
            assert best.method in [result.names[row] for row in rows]


def test_group_best_validates(result):
    with pytest.raises(ValueError, match="group"):
        group_best(result, 0, "none", "steps")
    with pytest.raises(ValueError, match="cost"):
        group_best(result, 0, "fixed", "seconds")
    with pytest.raises(ValueError, match="instance"):
        group_best(result, 1, "fixed", "steps")
    only_exact = result.subset([3])
    with pytest.raises(ValueError, match="group"):
        group_best(only_exact, 0, "fixed", "steps")


def test_units_rows_ratios_and_table(result):
    comparison = units_comparison((result,), ("collapse",), (0.2,))
    (row,) = comparison.rows
    for cost in ("responses", "steps", "rounds"):
        ratio = row.ratio(cost)
        verdict = row.verdict(cost)
        if not row.resets[cost].reached:
            assert np.isnan(ratio) and verdict == "open"
            continue
        assert ratio == pytest.approx(row.fixed[cost].value / row.resets[cost].value)
        assert verdict in ("yes", "no", "open")
        if row.fixed[cost].reached:
            assert verdict == ("yes" if ratio > 1 else "no")
    table = comparison.table()
    assert isinstance(table, Table) and len(table.rows) == 1
    assert table.column("fewer rounds with resets") == [row.verdict("rounds")]
    assert comparison.select("collapse", 0.2) == comparison.rows and comparison.select("random") == ()


def test_units_comparison_validates(result):
    with pytest.raises(ValueError, match="results"):
        units_comparison((), (), ())
    with pytest.raises(ValueError, match="families"):
        units_comparison((result,), ("a", "b"), (None,))
    other = head_to_head([stacked_collapse_instance(1, 0.2, 20.0, n_zero=10)], [20.0], methods()[:3], eps=EPS,
                         seeds=(5,), progress=False)
    with pytest.raises(ValueError, match="seeds"):
        units_comparison((result, other), ("a", "b"), (None, None))


def test_hardness_suite_settings():
    parts = hardness_parts((0.4, 0.1), 40.0)
    for (instance, eps), gap in zip(parts, (0.4, 0.1)):
        assert eps == pytest.approx(EPS_PER_GAP * gap)
        # one prompt of four stuck at the distractor costs gap / 4 > eps
        assert gap / 4 > eps
        assert instance.n_prompts == 4
    fixed = [m for m in hardness_methods() if m.label in HARDNESS_FIXED_METHODS]
    resets = [m for m in hardness_methods() if m.label in HARDNESS_RESET_METHODS]
    budget = FAMILY_RESPONSE_BUDGET["collapse"]
    for method in fixed:
        assert method.etas == HARDNESS_FIXED_METHODS[method.label]
        assert budget * (FIXED_BUDGET_FACTOR - 1) < method.response_budget <= FIXED_BUDGET_FACTOR * budget
        # one step per batch of 32: FIXED_BUDGET_FACTOR times the 400 steps of the head-to-head
        assert method.step_budget == FIXED_BUDGET_FACTOR * budget // 32
    for method in resets:
        assert method.response_budget <= budget
    with pytest.raises(ValueError, match="gaps"):
        hardness_parts((1.5,))
    with pytest.raises(ValueError, match="gaps"):
        hardness_parts(())
    with pytest.raises(ValueError, match="fixed_budget_factor"):
        hardness_methods(0)
