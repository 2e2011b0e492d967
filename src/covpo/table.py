"""A table of results: data a chapter shows as a real table, not as printed text.

Functions that summarise runs return a :class:`Table`. In a notebook it displays as an HTML
table (``_repr_html_``) with its caption, units in the column headers and a note under it
explaining any flag a cell carries; ``str(table)`` is the same table as aligned text, for
scripts and logs.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

#: One cell of a table (text, a number, or None for a missing value).
Cell = str | int | float | None


def format_cell(value: Cell) -> str:
    """A cell as text: integers with thousands separators, floats to three significant digits, None as a dash."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "-"
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return str(value)


@dataclass(frozen=True)
class Table:
    """Rows of results under named columns.

    Parameters
    ----------
    columns
        Column headers, with units where a column has one (``"responses to eps"``).
    rows
        One tuple of cells per row, as many cells as ``columns``; numbers stay numbers.
    caption
        One line above the table saying what it shows.
    notes
        Lines under the table explaining flags and marks used in its cells.
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        widths = {len(row) for row in self.rows}
        if widths - {len(self.columns)}:
            raise ValueError(f"rows must have {len(self.columns)} cells, one per column; got rows of {sorted(widths)}")

    def column(self, name: str) -> list[Cell]:
        """The cells of the column headed ``name``."""
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def _repr_html_(self) -> str:
        def numeric(value: Cell) -> bool:
            return isinstance(value, (int, float)) and not isinstance(value, bool)

        head = "".join(f"<th>{html.escape(column)}</th>" for column in self.columns)
        body = "".join(
            "<tr>" + "".join(
                f'<td style="text-align:{"right" if numeric(value) else "left"}">{html.escape(format_cell(value))}</td>'
                for value in row
            ) + "</tr>"
            for row in self.rows
        )
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        notes = "".join(f'<p class="covpo-table-note"><small>{html.escape(note)}</small></p>' for note in self.notes)
        return (
            f'<div class="covpo-table" style="overflow-x:auto"><table class="table">{caption}'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}</div>"
        )

    def __str__(self) -> str:
        cells = [list(self.columns)] + [[format_cell(value) for value in row] for row in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
        lines.insert(1, "  ".join("-" * width for width in widths))
        return "\n".join(([self.caption] if self.caption else []) + lines + list(self.notes))


def concatenate(tables: Sequence[Table], caption: str = "") -> Table:
    """Tables with the same columns, one after another, as one table."""
    columns = {table.columns for table in tables}
    if len(columns) != 1:
        raise ValueError(f"tables must share their columns to be concatenated, got {sorted(columns)}")
    notes = tuple(dict.fromkeys(note for table in tables for note in table.notes))
    return Table(tables[0].columns, tuple(row for table in tables for row in table.rows), caption, notes)
