"""The figure type every plotting function returns.

A :class:`BookFigure` is a plain matplotlib figure that also knows how to show itself in a
notebook (``_repr_mimebundle_``), so a cell that ends with a figure displays it once, whether
or not the inline backend has been activated (IPython asks for the mime bundle before any
formatter the backend registers), and without touching pyplot's global state. It is drawn in
the book's style (:mod:`covpo.plots.style`) and shown at its design width in CSS pixels from a
PNG of twice that resolution.
"""

from __future__ import annotations

import base64
import io

from matplotlib.figure import Figure

from covpo.plots.style import COLUMN_WIDTH, SAVE_DPI, apply_book_style, display_size, tidy_log_axes

apply_book_style()


def figure_png(figure: Figure, dpi: int = SAVE_DPI) -> bytes:
    """``figure`` as PNG bytes, its log axes tidied first."""
    tidy_log_axes(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


class BookFigure(Figure):
    """A matplotlib figure with a PNG representation for notebooks, shown at its design size."""

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> tuple[dict, dict]:
        png = base64.b64encode(figure_png(self)).decode("ascii")
        return {"image/png": png}, {"image/png": display_size(self)}


def new_figure(width: float = COLUMN_WIDTH, height: float = 3.0, constrained: bool = True) -> BookFigure:
    """A figure of the given size in inches, laid out by matplotlib's constrained layout.

    Widgets that redraw on every slider move pass ``constrained=False`` and place their axes
    with ``subplots_adjust``: the layout solver is most of the cost of a redraw.
    """
    return BookFigure(figsize=(width, height), layout="constrained" if constrained else None)
