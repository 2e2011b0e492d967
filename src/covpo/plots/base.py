"""The figure type every plotting function returns.

A :class:`BookFigure` is a plain matplotlib figure that also knows how to show itself in a
notebook (``_repr_png_``), so a cell that ends with a figure displays it once, whether or
not the inline backend has been activated, and without touching pyplot's global state.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure

DISPLAY_DPI = 100


class BookFigure(Figure):
    """A matplotlib figure with a PNG representation for notebooks."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=DISPLAY_DPI, bbox_inches="tight")
        return buffer.getvalue()


def new_figure(width: float, height: float) -> BookFigure:
    """A constrained-layout figure of the given size in inches."""
    return BookFigure(figsize=(width, height), layout="constrained")
