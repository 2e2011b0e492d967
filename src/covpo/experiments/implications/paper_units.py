"""The paper's summary claim in its own units: gradient steps and rounds of batch generation to eps.

The paper's summary of its implications (section 1, "Implications of our theory") compares
algorithms that regularize to a periodically updated reference with fixed-reference or
unregularized ones: the former converge with substantially fewer gradient steps and even fewer
rounds of batch generation. This module measures that comparison on the head-to-head's runs
(:mod:`covpo.experiments.implications.head_to_head`), in the paper's two units and in responses:

- :func:`group_best`: per instance, the cheapest method of a group (fixed reference or none;
  resets) that reached eps in every seed, in one unit, or a lower bound when none did;
- :func:`units_comparison`: one :class:`UnitsRow` per instance of one or more head-to-heads,
  the fixed group against the reset group in every unit, with a frozen
  :class:`UnitsComparison` and its :meth:`~UnitsComparison.table`;
- :func:`hardness_parts`, :func:`hardness_methods` and :func:`hardness_head_to_head`: the
  collapse family at several reward gaps, with the fixed-reference methods given several times
  the reset methods' response budget, so that their gradient steps are not capped below what
  the reset methods take.

Only trained methods that sample count: the exact methods sample nothing (so they have no
generation rounds), and Best-of-N and SFT on filtered samples belong to neither group. Every
instance, budget, learning rate and seed is ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.experiments.implications.head_to_head import (
    BOOK_SEEDS,
    COSTS,
    FAMILY_RESPONSE_BUDGET,
    HeadToHead,
    default_methods,
    head_to_head,
)
from covpo.experiments.sweeps import Method
from covpo.families import COLLAPSE_N_ZERO, COLLAPSE_PROMPTS, stacked_collapse_instance
from covpo.table import Table
from covpo.validation import (
    check_count,
    check_instance,
    check_instances,
    check_option,
    check_positive,
    check_probability,
    check_seeds,
    check_text,
)

GROUPS = ("fixed", "resets")
"""The two groups the paper's claim compares, a fixed reference or none, and periodic resets."""
HARDNESS_GAPS = (0.4, 0.2, 0.1)
"""Reward gaps of the collapse family's distractor, from easy to hard (chapter 4's is 0.2)."""
HARDNESS_COVERAGE = 40.0
"""``C_cov`` of the hardness instances (the middle of the head-to-head's collapse family)."""
EPS_PER_GAP = 0.2
"""eps as a fraction of the gap; one prompt of four stuck at the distractor (a loss of gap / 4) is never eps-optimal."""
FIXED_BUDGET_FACTOR = 3
"""How many times the reset methods' response budget the fixed-reference methods get on the hardness
instances: 1,200 steps of ``N = 32`` responses, more than the reset runs there take (at most 960 in
seeds 1 to 5)."""
HARDNESS_FIXED_METHODS = {"REINFORCE": (8.0,), "REINFORCE, KL to base": (8.0,)}
"""The fixed-reference methods of the hardness study, unregularized and with a KL penalty to the base
model, and the learning rate each runs at: the smallest of the head-to-head's grid, the only one at
which the KL version reached eps in a probe at gap 0.4 (64 and 512 collapse sooner)."""
HARDNESS_RESET_METHODS = ("PPO-Lite", "GRPO, resets")
"""The reset methods of the hardness study, at the head-to-head's budget for the collapse family."""


def method_group(method: Method) -> str | None:
    """``"resets"`` or ``"fixed"`` for a trained method that samples, ``None`` for the rest (exact methods, baselines).

    The baselines, Best-of-N and SFT on filtered samples, sample from the base model only (the
    registry's ``on_policy`` is false); their cost is governed by coverage by construction.
    """
    check_instance("method", method, Method)
    if not method.definition.samples or not method.definition.on_policy:
        return None
    return "resets" if method.definition.resets else "fixed"


@dataclass(frozen=True)
class GroupCost:
    """The cheapest method of a group on one instance, in one unit.

    A method's cost is its median over seeds, counting a seed that never reached eps at what it
    spent; the median is *reached* when the seeds it is read from all reached eps. ``value`` is
    the smallest reached median among the group's methods and ``method`` the one that has it.
    When no method's median is reached, ``reached`` is false and ``value`` is the smallest median
    any of them spent, a lower bound on what the group needs at the settings we ran.
    """

    value: float
    reached: bool
    method: str


def group_best(result: HeadToHead, instance: int, group: str, cost: str) -> GroupCost:
    """The cheapest method of ``group`` on instance ``instance`` of ``result`` in unit ``cost`` (see :class:`GroupCost`)."""
    check_instance("result", result, HeadToHead)
    group = check_option("group", group, GROUPS)
    cost = check_option("cost", cost, COSTS)
    if not isinstance(instance, (int, np.integer)) or not 0 <= instance < result.coverages.size:
        raise ValueError(f"instance must be an index below {result.coverages.size}, got {instance!r}")
    rows = [row for row, method in enumerate(result.methods) if method_group(method) == group]
    if not rows:
        raise ValueError(f"group must have a method in the head-to-head; {group!r} has none in {list(result.names)}")
    values = result.costs(cost)
    medians = {row: _median_run(values[row, instance], result.reached[row, instance]) for row in rows}
    reached = [row for row in rows if medians[row][1]]
    best = min(reached or rows, key=lambda row: medians[row][0])
    return GroupCost(medians[best][0], medians[best][1], result.names[best])


def _median_run(costs: np.ndarray, reached: np.ndarray) -> tuple[float, bool]:
    """Median of ``costs`` over seeds and whether the runs it is read from all reached eps."""
    order = sorted(range(costs.size), key=lambda s: (costs[s], not reached[s]))
    middle = [order[(costs.size - 1) // 2], order[costs.size // 2]]
    return float(np.median(costs)), bool(all(reached[s] for s in middle))


@dataclass(frozen=True)
class UnitsRow:
    """One instance: the fixed group's and the reset group's best cost to eps in each unit of :data:`~covpo.experiments.implications.head_to_head.COSTS`."""

    family: str
    coverage: float
    gap: float | None
    eps: float
    fixed: dict[str, GroupCost]
    resets: dict[str, GroupCost]

    def ratio(self, cost: str) -> float:
        """Fixed over reset cost in unit ``cost`` (a lower bound when the fixed group's median did not reach eps; ``nan`` when the reset group's did not)."""
        cost = check_option("cost", cost, COSTS)
        fixed, resets = self.fixed[cost], self.resets[cost]
        if not resets.reached:
            return float("nan")
        return fixed.value / resets.value if resets.value > 0 else float("inf")

    def verdict(self, cost: str) -> str:
        """``"yes"``: resets cost less in unit ``cost``; ``"no"``: they do not; ``"open"``: the fixed group's lower bound does not decide."""
        ratio = self.ratio(cost)
        if np.isnan(ratio):
            return "open"
        if self.fixed[cost].reached:
            return "yes" if ratio > 1.0 else "no"
        return "yes" if ratio > 1.0 else "open"


@dataclass(frozen=True, eq=False)
class UnitsComparison:
    """The paper's summary claim measured instance by instance (:func:`units_comparison`)."""

    rows: tuple[UnitsRow, ...]
    seeds: tuple[int, ...]

    def select(self, family: str, gap: float | None = None) -> tuple[UnitsRow, ...]:
        """The rows of ``family`` (``"collapse"``, ``"random"`` or ``"collapse, gap"``), optionally at one gap."""
        return tuple(row for row in self.rows if row.family == family and (gap is None or row.gap == gap))

    def table(self, caption: str = "") -> Table:
        """One row per instance: each group's best cost in each unit and how many times more the fixed group needs.

        A ``≥`` marks a lower bound: no method of the group reached eps in its median seed, and
        the value is the least any of them spent. ``yes`` / ``no`` / ``open`` say whether resets cost
        less in that unit (``open``: the lower bound does not decide).
        """
        columns = ["family", r"$C_{\mathrm{cov}}$", "gap", "ε"]
        for cost in ("steps", "rounds", "responses"):
            columns += [f"{cost}: fixed", f"{cost}: resets", f"{cost}: fixed / resets", f"fewer {cost} with resets"]
        rows = []
        for row in self.rows:
            cells = [row.family, float(row.coverage), None if row.gap is None else float(row.gap), float(row.eps)]
            for cost in ("steps", "rounds", "responses"):
                fixed, resets = row.fixed[cost], row.resets[cost]
                ratio = row.ratio(cost)
                bound = "" if fixed.reached else "≥ "
                cells += [
                    f"{bound}{fixed.value:,.0f}",
                    f"{resets.value:,.0f}" if resets.reached else f"≥ {resets.value:,.0f}",
                    None if np.isnan(ratio) else f"{bound}{ratio:.2g}",
                    row.verdict(cost),
                ]
            rows.append(tuple(cells))
        return Table(
            tuple(columns),
            tuple(rows),
            caption=caption or f"Fixed reference or none against resets, best of each group, seeds {list(self.seeds)}",
            notes=(
                "Each group's value is the smallest median over seeds among its methods whose median seed reached ε; "
                "'≥': none did, and the value is the least any of them spent (a seed that missed ε counts what it "
                "spent), a lower bound.",
                "Steps are gradient steps, inner steps included; rounds are rounds of batch generation.",
            ),
        )


def units_comparison(results: Sequence[HeadToHead], families: Sequence[str], gaps: Sequence[float | None]) -> UnitsComparison:
    """One :class:`UnitsRow` per instance of every head-to-head in ``results``.

    Parameters
    ----------
    results
        Head-to-heads whose methods include both groups (:func:`method_group`), all on the same seeds.
    families
        A family label per head-to-head, for the rows.
    gaps
        The distractor's reward gap per head-to-head (``None`` for a family without one).
    """
    results = check_instances("results", results, HeadToHead)
    if isinstance(families, (str, bytes)) or not isinstance(families, Sequence) or len(families) != len(results):
        raise ValueError(f"families must hold one family label per head-to-head ({len(results)}), got {families!r}")
    families = tuple(check_text("families", family) for family in families)
    if isinstance(gaps, (str, bytes)) or not isinstance(gaps, Sequence) or len(gaps) != len(results):
        raise ValueError(f"gaps must hold one reward gap (or None) per head-to-head ({len(results)}), got {gaps!r}")
    gaps = tuple(None if gap is None else check_probability("gaps", gap) for gap in gaps)
    seeds = results[0].seeds
    if any(result.seeds != seeds for result in results):
        raise ValueError("results must all be run on the same seeds")
    rows = []
    for result, family, gap in zip(results, families, gaps):
        for j, coverage in enumerate(result.coverages):
            best = {group: {cost: group_best(result, j, group, cost) for cost in COSTS} for group in GROUPS}
            rows.append(UnitsRow(str(family), float(coverage), gap, float(result.eps), best["fixed"], best["resets"]))
    return UnitsComparison(tuple(rows), tuple(seeds))


# ---------------------------------------------------------------------------------------
# The collapse family at several gaps


def hardness_parts(gaps: Sequence[float] = HARDNESS_GAPS, coverage: float = HARDNESS_COVERAGE) -> tuple[tuple, ...]:
    """``(instance, eps)`` per gap: chapter 4's stacked collapse instance at ``C_cov = coverage``, eps a fifth of the gap."""
    coverage = check_positive("coverage", coverage)
    if isinstance(gaps, (str, bytes)) or not isinstance(gaps, Sequence) or not gaps:
        raise ValueError(f"gaps must be a non-empty sequence of reward gaps in (0, 1), got {gaps!r}")
    return tuple(
        (
            stacked_collapse_instance(COLLAPSE_PROMPTS, check_probability("gaps", gap), coverage, n_zero=COLLAPSE_N_ZERO),
            EPS_PER_GAP * float(gap),
        )
        for gap in gaps
    )


def hardness_methods(fixed_budget_factor: int = FIXED_BUDGET_FACTOR) -> tuple[Method, ...]:
    """The hardness study's methods: the head-to-head's collapse-family settings (:func:`~covpo.experiments.implications.head_to_head.default_methods`).

    The fixed-reference methods of :data:`HARDNESS_FIXED_METHODS` run at one learning rate each
    with ``fixed_budget_factor`` times the family's response budget (with ``N = 32`` responses per
    step, sampled REINFORCE's 12,800 responses are only 400 steps, fewer than the reset methods
    take); the reset methods of :data:`HARDNESS_RESET_METHODS` keep the family's budget.
    """
    factor = check_count("fixed_budget_factor", fixed_budget_factor)
    methods = {method.label: method for method in default_methods("collapse")}
    budget = FAMILY_RESPONSE_BUDGET["collapse"]
    fixed = tuple(
        Method(label, methods[label].algorithm, methods[label].hyperparameters, etas).with_response_budget(factor * budget)
        for label, etas in HARDNESS_FIXED_METHODS.items()
    )
    return fixed + tuple(methods[label] for label in HARDNESS_RESET_METHODS)


def hardness_head_to_head(
    gaps: Sequence[float] = HARDNESS_GAPS,
    seeds: Sequence[int] = BOOK_SEEDS,
    fixed_budget_factor: int = FIXED_BUDGET_FACTOR,
    progress: bool = True,
) -> tuple[HeadToHead, ...]:
    """:func:`~covpo.experiments.implications.head_to_head.head_to_head` of :func:`hardness_methods` on each of :func:`hardness_parts`.

    One head-to-head per gap (each has its own eps), at ``C_cov =`` :data:`HARDNESS_COVERAGE`.
    """
    seeds = check_seeds("seeds", seeds)
    methods = hardness_methods(fixed_budget_factor)
    return tuple(
        head_to_head(
            (instance,), (HARDNESS_COVERAGE,), methods, eps=eps, seeds=seeds,
            label=f"stacked collapse, C_cov = {HARDNESS_COVERAGE:g}, gap {gap:g}", progress=progress,
        )
        for gap, (instance, eps) in zip(gaps, hardness_parts(gaps))
    )
