"""A table of results: data a chapter shows as a real table, not as printed text.

Functions that summarise runs return a :class:`Table`. In a notebook it displays as an HTML
table (``_repr_html_``) with its caption, units in the column headers and a note under it
explaining any flag a cell carries; ``str(table)`` is the same table as aligned text, for
scripts and logs. Math in a header, the caption, a note or a text cell is written between
dollar signs, ``"$C_{\\mathrm{cov}}$"``, and the HTML marks it as inline math, which the book's
pages and Jupyter typeset (:func:`html_with_math`); the text form keeps the dollar signs.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from covpo.validation import check_instance

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


#: The pattern of inline math in a table's text, ``$...$`` with no dollar sign inside.
INLINE_MATH = re.compile(r"\$([^$]+)\$")


def html_with_math(text: str) -> str:
    """``text`` escaped for HTML, each ``$...$`` in it as an inline-math span (``\\(...\\)``).

    The span is the one Sphinx writes for inline math, so MathJax on the book's pages
    typesets it, as Jupyter does.
    """
    pieces = INLINE_MATH.split(text)
    return "".join(
        html.escape(piece) if index % 2 == 0 else f'<span class="math notranslate nohighlight">\\({html.escape(piece)}\\)</span>'
        for index, piece in enumerate(pieces)
    )


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
        object.__setattr__(self, "columns", _strings("columns", self.columns))
        if isinstance(self.rows, (str, bytes)) or not isinstance(self.rows, Sequence):
            raise ValueError(f"rows must be a sequence of rows, got {self.rows!r}")
        for index, row in enumerate(self.rows):
            if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
                raise ValueError(f"rows[{index}] must be a sequence of cells, got {row!r}")
        object.__setattr__(self, "rows", tuple(tuple(row) for row in self.rows))
        if not isinstance(self.caption, str):
            raise ValueError(f"caption must be a string, got {self.caption!r}")
        object.__setattr__(self, "notes", _strings("notes", self.notes))
        widths = {len(row) for row in self.rows}
        if widths - {len(self.columns)}:
            raise ValueError(f"rows must have {len(self.columns)} cells, one per column; got rows of {sorted(widths)}")

    def column(self, name: str) -> list[Cell]:
        """The cells of the column headed ``name``."""
        if name not in self.columns:
            raise ValueError(f"name must be one of the columns {self.columns}, got {name!r}")
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def _repr_html_(self) -> str:
        def numeric(value: Cell) -> bool:
            return isinstance(value, (int, float)) and not isinstance(value, bool)

        head = "".join(f"<th>{html_with_math(column)}</th>" for column in self.columns)
        body = "".join(
            "<tr>" + "".join(
                f'<td style="text-align:{"right" if numeric(value) else "left"}">{html_with_math(format_cell(value))}</td>'
                for value in row
            ) + "</tr>"
            for row in self.rows
        )
        caption = f"<caption>{html_with_math(self.caption)}</caption>" if self.caption else ""
        notes = "".join(f'<p class="covpo-table-note"><small>{html_with_math(note)}</small></p>' for note in self.notes)
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
    if isinstance(tables, (str, bytes)) or not isinstance(tables, Sequence) or not tables:
        raise ValueError(f"tables must be a non-empty sequence of Table, got {tables!r}")
    for index, table in enumerate(tables):
        check_instance(f"tables[{index}]", table, Table)
    if not isinstance(caption, str):
        raise ValueError(f"caption must be a string, got {caption!r}")
    columns = {table.columns for table in tables}
    if len(columns) != 1:
        raise ValueError(f"tables must share their columns to be concatenated, got {sorted(columns)}")
    notes = tuple(dict.fromkeys(note for table in tables for note in table.notes))
    return Table(tables[0].columns, tuple(row for table in tables for row in table.rows), caption, notes)


def _strings(name: str, value: object) -> tuple[str, ...]:
    """``value`` as a tuple of strings, or raise naming ``name`` (a lone string is not a sequence of strings here)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{name} must be a sequence of strings, got {value!r}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ValueError(f"{name}[{index}] must be a string, got {item!r}")
    return tuple(value)
