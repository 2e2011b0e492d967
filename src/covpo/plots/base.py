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
        self.savefig(buffer, format="png", dpi=DISPLAY_DPI)
        return buffer.getvalue()


def new_figure(width: float, height: float, constrained: bool = True) -> BookFigure:
    """A figure of the given size in inches, laid out by matplotlib's constrained layout.

    Widgets that redraw on every slider move pass ``constrained=False`` and place their axes
    with ``subplots_adjust``: the layout solver is most of the cost of a redraw.
    """
    return BookFigure(figsize=(width, height), layout="constrained" if constrained else None)
