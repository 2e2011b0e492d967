"""The book's one figure style: sized for the content column, legible at display size, colour-blind safe.

Every figure is designed at the width of the page's content column (:data:`COLUMN_WIDTH`
inches, shown at :data:`DISPLAY_PX_PER_INCH` CSS pixels per inch, so 9 pt text reads at
about 12 px), with at most two panels side by side, and saved as PNG at twice that
resolution (:data:`SAVE_DPI`) so that it stays sharp on high-density screens. Colours are the
Okabe-Ito palette, and series beyond the first few also differ by marker
(:func:`series_style`). Log axes keep their labels from colliding (:func:`tidy_log_axes`), and
no axis builds ticks outside its view (:func:`locate_ticks_in_view`), which matplotlib would
build and never draw.
"""

from __future__ import annotations

import math

import matplotlib as mpl
import numpy as np
from cycler import cycler
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import AutoMinorLocator, FixedLocator, FuncFormatter, Locator, NullFormatter, NullLocator

#: Width of the page's content column in inches, the width every figure is designed at.
COLUMN_WIDTH = 7.0
#: CSS pixels per inch of design size at which a figure is shown.
DISPLAY_PX_PER_INCH = 100
#: Resolution of saved PNGs, twice the display resolution, for high-density screens.
SAVE_DPI = 2 * DISPLAY_PX_PER_INCH
#: Okabe and Ito's colour-blind-safe palette, yellow last (it is faint on white).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
#: The name a caption or a legend gives each colour of :data:`PALETTE` (Okabe and Ito's names,
#: "pink" for their reddish purple), and black and grey as matplotlib writes them.
COLOR_NAMES = {
    "blue": PALETTE[0], "vermilion": PALETTE[1], "green": PALETTE[2], "orange": PALETTE[3], "pink": PALETTE[4],
    "light blue": PALETTE[5], "black": PALETTE[6], "yellow": PALETTE[7],
}
#: Markers that tell series apart beyond their colour.
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "<", ">", "p", "h")
#: Line styles for series beyond the palette's length.
LINESTYLES = ("-", "--", "-.", ":")

#: matplotlib settings of the book's style.
BOOK_RC = {
    "figure.figsize": (COLUMN_WIDTH, 3.0),
    "figure.dpi": DISPLAY_PX_PER_INCH,
    "savefig.dpi": SAVE_DPI,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
    "figure.titlesize": 11,
    "axes.prop_cycle": cycler(color=PALETTE),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "lines.markersize": 5,
    "image.cmap": "viridis",
}


def apply_book_style() -> None:
    """Make :data:`BOOK_RC` matplotlib's defaults (done once when the plotting modules are imported)."""
    mpl.rcParams.update(BOOK_RC)


def series_style(index: int) -> dict[str, str]:
    """Colour, marker and line style of the ``index``-th of many series, each distinct up to 96 series."""
    return {
        "color": PALETTE[index % len(PALETTE)],
        "marker": MARKERS[index % len(MARKERS)],
        "linestyle": LINESTYLES[(index // len(PALETTE)) % len(LINESTYLES)],
    }


#: Tick mantissas of a log axis that spans under two decades, the denser set as a fallback.
MANTISSAS = ((1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0, 7.0))


def _ticks_at(mantissas: tuple[float, ...], low: float, high: float) -> list[float]:
    """The numbers ``m * 10**k`` between ``low`` and ``high``, for ``m`` in ``mantissas``."""
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    return [m * 10.0**k for k in decades for m in mantissas if low <= m * 10.0**k <= high]


def _tidy_log_axis(axis: Axis) -> None:
    """Label a log axis by its decades; a short axis gets 1-2-5 (or 1-2-3-5-7) mantissas instead.

    An axis with at least two decades inside is labelled at the decades only (minor labels
    would collide). A shorter one gets ticks at 1, 2 and 5 times each power of ten, or at 1, 2,
    3, 5 and 7 times where that leaves fewer than three, labelled compactly.
    """
    low, high = sorted(axis.get_view_interval())
    if low <= 0:
        return
    decades = [tick for tick in axis.get_majorticklocs() if low <= tick <= high]
    if len(decades) >= 2:
        axis.set_minor_formatter(NullFormatter())
        return
    ticks = _ticks_at(MANTISSAS[0], low, high)
    if len(ticks) < 3:
        ticks = _ticks_at(MANTISSAS[1], low, high)
    if not ticks:
        return
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def tidy_log_axes(figure: Figure) -> None:
    """Label every log-scaled axis of ``figure`` (3-D axes excepted) without colliding tick labels.

    An axis with two or more decades inside is labelled at its decades only; a shorter one at
    1, 2 and 5 (or 1, 2, 3, 5 and 7) times the powers of ten it spans.
    """
    for axes in figure.axes:
        if axes.name != "rectilinear":
            continue
        for axis in (axes.xaxis, axes.yaxis):
            if axis.get_scale() == "log":
                _tidy_log_axis(axis)


#: Relative tolerance with which matplotlib draws a tick just outside the view.
VIEW_TOLERANCE = 1e-10


class InViewLocator(Locator):
    """The locations of ``locator`` that its axis draws: those inside the view.

    matplotlib builds a tick (three lines and two labels) for every location a locator
    returns, also the ones outside the view that it never draws: a log axis's locators reach a
    decade or two beyond each end, a linear one a step. This wrapper hands on only the
    locations inside the view (up to :data:`VIEW_TOLERANCE`, as matplotlib tests them), so the
    same ticks are drawn with about a third fewer built. It asks ``locator`` anew on every
    draw, so tick density still follows the axes' final size.
    """

    def __init__(self, locator: Locator) -> None:
        self.locator = locator

    def set_axis(self, axis: Axis) -> None:
        """Attach this locator and the wrapped one to ``axis``."""
        super().set_axis(axis)
        self.locator.set_axis(axis)

    def __call__(self) -> np.ndarray:
        """The wrapped locator's locations inside the axis's current view."""
        locations = np.asarray(self.locator(), dtype=float)
        transform = self.axis.get_transform()
        low, high = sorted(transform.transform(self.axis.get_view_interval()))
        slack = (high - low) * VIEW_TOLERANCE
        transformed = transform.transform(locations)
        return locations[(low - slack <= transformed) & (transformed <= high + slack)]

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        """The wrapped locator's locations between ``vmin`` and ``vmax``."""
        return self.locator.tick_values(vmin, vmax)

    def nonsingular(self, v0: float, v1: float) -> tuple[float, float]:
        """The wrapped locator's widening of a degenerate range (used by autoscaling)."""
        return self.locator.nonsingular(v0, v1)

    def view_limits(self, vmin: float, vmax: float) -> tuple[float, float]:
        """The wrapped locator's view limits (used by autoscaling)."""
        return self.locator.view_limits(vmin, vmax)


def locate_ticks_in_view(figure: Figure) -> None:
    """Wrap the tick locators of every linear and log axis of ``figure`` in :class:`InViewLocator`.

    An axis with an :class:`~matplotlib.ticker.AutoMinorLocator` is left alone: its minor
    ticks are placed from the major ones, also those outside the view.
    """
    for axes in figure.axes:
        if axes.name != "rectilinear":
            continue
        for axis in (axes.xaxis, axes.yaxis):
            if axis.get_scale() not in ("linear", "log") or isinstance(axis.get_minor_locator(), AutoMinorLocator):
                continue
            for locator, setter in ((axis.get_major_locator(), axis.set_major_locator),
                                    (axis.get_minor_locator(), axis.set_minor_locator)):
                if not isinstance(locator, (NullLocator, InViewLocator)):
                    setter(InViewLocator(locator))


def display_size(figure: Figure) -> dict[str, int]:
    """The width in CSS pixels at which ``figure`` is meant to be shown (its design width).

    Only the width: the page keeps the aspect ratio, also where a narrow screen shrinks it.
    """
    return {"width": round(figure.get_figwidth() * DISPLAY_PX_PER_INCH)}
