"""The paper's summary claim in its own units (paper section 1), shown one table per unit.

:meth:`covpo.experiments.implications.paper_units.UnitsComparison.table` puts every unit in one
table of sixteen columns, wider than the page's content column. :func:`units_tables` shows the
same cells as one narrow table per unit (gradient steps, rounds of batch generation, responses),
each with the instance in one column, so that every table fits the column and its caption
wraps whole.
"""

from __future__ import annotations

import numpy as np

from covpo.experiments.implications.head_to_head import COSTS
from covpo.experiments.implications.paper_units import UnitsComparison, UnitsRow
from covpo.table import Table
from covpo.validation import check_instance, check_option

#: What each unit of :data:`~covpo.experiments.implications.head_to_head.COSTS` counts, for the captions.
UNIT_NAMES = {"steps": "gradient steps", "rounds": "rounds of batch generation", "responses": "responses"}

#: The notes under every unit's table, how a group's value is read and what a ``≥`` means.
UNIT_NOTES = (
    "Each group's value is the smallest median over seeds among its methods whose median seed reached ε; "
    "'≥': none did, and the value is the least any of them spent (a seed that missed ε counts what it "
    "spent), a lower bound.",
)


def instance_label(row: UnitsRow) -> str:
    """The instance of ``row`` in a few words: its family, ``C_cov`` and, where it has one, its gap."""
    check_instance("row", row, UnitsRow)
    gap = "" if row.gap is None else f", gap {row.gap:g}"
    return f"{row.family}, $C_{{\\mathrm{{cov}}}}$ = {row.coverage:g}{gap}"


def unit_table(units: UnitsComparison, cost: str, caption: str = "") -> Table:
    """One unit of ``units``: per instance, each group's best cost to eps, their ratio and the verdict.

    Parameters
    ----------
    units
        The comparison (:func:`~covpo.experiments.implications.paper_units.units_comparison`).
    cost
        One of :data:`~covpo.experiments.implications.head_to_head.COSTS`.
    caption
        The table's caption; by default it names the unit and the seeds.
    """
    check_instance("units", units, UnitsComparison)
    cost = check_option("cost", cost, COSTS)
    if not isinstance(caption, str):
        raise ValueError(f"caption must be a string, got {caption!r}")
    rows = []
    for row in units.rows:
        fixed, resets = row.fixed[cost], row.resets[cost]
        ratio = row.ratio(cost)
        bound = "" if fixed.reached else "≥ "
        rows.append((
            instance_label(row),
            float(row.eps),
            f"{bound}{fixed.value:,.0f}",
            f"{resets.value:,.0f}" if resets.reached else f"≥ {resets.value:,.0f}",
            None if np.isnan(ratio) else f"{bound}{ratio:.2g}",
            row.verdict(cost),
        ))
    seeds = ", ".join(str(seed) for seed in units.seeds)
    return Table(
        ("instance", "ε", "fixed or none", "resets", "fixed / resets", "fewer with resets"),
        tuple(rows),
        caption=caption or f"{UNIT_NAMES[cost].capitalize()} to ε: the cheapest fixed-reference (or unregularized) "
        f"method against the cheapest reset method (seeds {seeds})",
        notes=UNIT_NOTES,
    )


def units_tables(units: UnitsComparison) -> tuple[Table, ...]:
    """:func:`unit_table` for gradient steps, rounds of batch generation and responses, in that order."""
    check_instance("units", units, UnitsComparison)
    return tuple(unit_table(units, cost) for cost in ("steps", "rounds", "responses"))
