"""The figure type every plotting function returns, and how it becomes a PNG.

A :class:`BookFigure` is a plain matplotlib figure that also knows how to show itself in a
notebook (``_repr_mimebundle_``), so a cell that ends with a figure displays it once, whether
or not the inline backend has been activated (IPython asks for the mime bundle before any
formatter the backend registers), and without touching pyplot's global state. It is drawn in
the book's style (:mod:`covpo.plots.style`) and shown at its design width in CSS pixels from a
PNG of twice that resolution.

:func:`figure_png` renders the same pixels as matplotlib's own ``savefig``, for less: it
draws on a :class:`BookCanvas`, whose renderers share one mathtext parser (matplotlib keeps a
parser, and so a parse cache, per renderer, so every figure would parse its ``$10^{k}$`` tick
labels afresh); it builds no ticks outside the view (:func:`~covpo.plots.style.locate_ticks_in_view`);
and it writes an opaque figure as an RGB PNG (the same pixels as RGBA, a tenth smaller and
quicker to encode).
"""

from __future__ import annotations

import base64
import io

from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.mathtext import MathTextParser
from PIL import Image

from covpo.plots.style import (
    COLUMN_WIDTH,
    SAVE_DPI,
    apply_book_style,
    display_size,
    locate_ticks_in_view,
    tidy_log_axes,
)

apply_book_style()

#: The mathtext parser (and parse cache) every :class:`BookCanvas` renderer uses.
SHARED_MATHTEXT_PARSER = MathTextParser("path")


class BookCanvas(FigureCanvasAgg):
    """Agg canvas whose renderers share :data:`SHARED_MATHTEXT_PARSER` (same glyphs, parsed once)."""

    def get_renderer(self) -> RendererAgg:
        renderer = super().get_renderer()
        renderer.mathtext_parser = SHARED_MATHTEXT_PARSER
        return renderer


def figure_png(figure: Figure, dpi: int = SAVE_DPI) -> bytes:
    """``figure`` as PNG bytes, its log axes tidied first (see the module docstring).

    The figure is drawn on a :class:`BookCanvas`, ticks outside its view left unbuilt, and
    written as RGB where every pixel is opaque (every book figure), as RGBA otherwise.
    """
    tidy_log_axes(figure)
    locate_ticks_in_view(figure)
    canvas = BookCanvas(figure)
    raw = io.BytesIO()
    figure.savefig(raw, format="rgba", dpi=dpi)
    size = (int(canvas.renderer.width), int(canvas.renderer.height))
    image = Image.frombuffer("RGBA", size, raw.getvalue(), "raw", "RGBA", 0, 1)
    if image.getchannel("A").getextrema() == (255, 255):
        image = image.convert("RGB")
    png = io.BytesIO()
    image.save(png, format="png", dpi=(dpi, dpi))
    return png.getvalue()


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
