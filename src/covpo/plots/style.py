"""The book's one figure style: sized for the content column, legible at display size, colour-blind safe.

Every figure is designed at the width of the page's content column (:data:`COLUMN_WIDTH`
inches, shown at :data:`DISPLAY_PX_PER_INCH` CSS pixels per inch, so 9 pt text reads at
about 12 px), with at most two panels side by side, and saved as PNG at twice that
resolution (:data:`SAVE_DPI`) so that it stays sharp on high-density screens. Colours are the
Okabe-Ito palette, and series beyond the first few also differ by marker
(:func:`series_style`). Log axes keep their labels from colliding (:func:`tidy_log_axes`), and
no axis builds ticks outside its view (:func:`locate_ticks_in_view`), which matplotlib would
build and never draw.

The book's one colour and name key (:data:`COLOUR_KEY`, issue 56) gives every kind of method
or object the figures draw one colour, and a default marker and line style: green the reset
methods that follow APMD, vermilion REINFORCE and a weak fixed penalty, and so on. Figures ask
:func:`method_colour` or :func:`method_style` for a kind, or :func:`label_styles` for the
series of a legend; series that are no method take :func:`free_series_colours`. The notation
page shows the key as :func:`colour_key_markdown` writes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import matplotlib as mpl
import numpy as np
from cycler import cycler
from matplotlib import colormaps
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


#: Paul Tol's colour-blind-safe "muted" colours the key adds to :data:`PALETTE` for the kinds
#: beyond its eight: wine, indigo, olive, rose and teal, and two greys.
EXTRA_COLOURS = {"wine": "#882255", "indigo": "#332288", "olive": "#999933", "rose": "#CC6677", "teal": "#44AA99",
                 "light grey": "#BBBBBB", "grey": "#666666"}
#: The name of every colour of the key (:data:`COLOR_NAMES` and :data:`EXTRA_COLOURS`).
KEY_COLOUR_NAMES = {**COLOR_NAMES, **EXTRA_COLOURS}


@dataclass(frozen=True)
class KeyEntry:
    """One kind of thing the book draws, in the one colour (and default marker and line style) it has everywhere.

    Attributes
    ----------
    kind
        The key's name of the kind (what :func:`method_colour` takes).
    family
        The group the kind belongs to; the kinds of one family share a colour and differ by
        marker and line style (``"green = the reset methods that follow APMD"``).
    colour
        Its colour, a hex string (:data:`KEY_COLOUR_NAMES` names it).
    marker, linestyle
        Its default marker and line style, distinct within its family.
    names
        The legend labels that denote it: a label names the kind when it is one of these or
        starts with one followed by a comma, a space or a bracket (:func:`method_kind`).
    meaning
        What it is, in the words the notation page shows.
    """

    kind: str
    family: str
    colour: str
    marker: str
    linestyle: str
    names: tuple[str, ...]
    meaning: str

    @property
    def colour_name(self) -> str:
        """The name of :attr:`colour` in :data:`KEY_COLOUR_NAMES`."""
        return next(name for name, colour in KEY_COLOUR_NAMES.items() if colour == self.colour)


#: The book's one colour and name key. Every figure and widget draws each kind of
#: method or object in its colour, so that a reader learns "green = reference resets that follow
#: APMD, vermilion = REINFORCE or a weak fixed penalty" once (the notation page shows the key).
#: The kinds of one family share a colour and differ by marker and line style.
COLOUR_KEY = (
    KeyEntry("base model", "base model and its samples", PALETTE[6], "o", "-", ("base model", "$\\pi_0$"),
             "the base model $\\pi_0$"),
    KeyEntry("Best-of-N", "base model and its samples", PALETTE[6], "*", "--", ("Best-of-N",),
             "Best-of-N: samples of the base model at test time"),
    KeyEntry("filtered SFT", "base model and its samples", PALETTE[6], "P", "-.", ("SFT",),
             "supervised fine-tuning on filtered base samples"),
    KeyEntry("REINFORCE", "no reference or a weak fixed penalty", PALETTE[1], "^", ":",
             ("REINFORCE", "β = 0", "$\\beta$ = 0", "no penalty", "no KL"),
             "REINFORCE, with no reference or a KL penalty to the base model"),
    KeyEntry("weak fixed penalty", "no reference or a weak fixed penalty", PALETTE[1], "o", "-",
             ("weak fixed penalty", "weak penalty", "fixed, weak β", "fixed reference, weak"),
             "a weak KL penalty to a fixed reference (the practice)"),
    KeyEntry("GRPO, fixed reference", "GRPO, fixed reference", PALETTE[5], "v", ":",
             ("GRPO, fixed ref.", "GRPO, fixed reference"),
             "GRPO with a fixed reference and no penalty"),
    KeyEntry("strong fixed penalty", "strong fixed penalty", PALETTE[3], "s", "--",
             ("strong fixed penalty", "strong penalty", "fixed, strong β", "fixed reference, strong"),
             "a strong KL penalty to a fixed reference"),
    KeyEntry("APMD", "reference resets (APMD)", PALETTE[2], "s", "-",
             ("APMD", "exact mirror descent", "mirror descent", "NPG", "resets"),
             "APMD and its exact counterpart (mirror descent), NPG with resets: the reference reset to the last iterate"),
    KeyEntry("PPO-NoClip", "reference resets (APMD)", PALETTE[2], "o", "-", ("PPO-NoClip",),
             "PPO-NoClip: APMD's inner loop on one reused batch"),
    KeyEntry("PPO-Lite", "PPO-Lite", PALETTE[0], "s", "--", ("PPO-Lite",),
             "PPO-Lite: PPO-NoClip with the ratios clipped to the target's interval"),
    KeyEntry("GRPO with resets", "GRPO with resets", PALETTE[4], "D", "-",
             ("GRPO, resets", "GRPO (resets)", "ProRL-style", "TRL sync"),
             "GRPO with its reference reset (every outer iteration, or periodically)"),
    KeyEntry("KimiPO", "KimiPO", EXTRA_COLOURS["wine"], "s", "-", ("KimiPO",),
             "KimiPO: squared loss with the mean-reward baseline"),
    KeyEntry("KimiPO-Norm", "KimiPO-Norm", EXTRA_COLOURS["indigo"], "D", "--", ("KimiPO-Norm",),
             "KimiPO-Norm: squared loss with the estimated normalizer"),
    KeyEntry("Rebel", "Rebel", EXTRA_COLOURS["olive"], "^", "-.", ("Rebel", "Rebel-OnPolicy"),
             "Rebel-OnPolicy: squared loss on pairs of responses"),
    KeyEntry("optimal answer", "optimal answer", EXTRA_COLOURS["teal"], "o", "-", ("optimal",),
             "answer class: the optimal responses (their mass is the coverage)"),
    KeyEntry("near miss", "near miss", EXTRA_COLOURS["rose"], "o", "-", ("near miss",),
             "answer class: the near miss, a wrong response rewarded almost as well"),
    KeyEntry("zero-reward block", "zero-reward block", EXTRA_COLOURS["light grey"], "o", "-",
             ("zero-reward block", "zero block"),
             "answer class: the responses of reward zero"),
    KeyEntry("target line", "reference lines", EXTRA_COLOURS["grey"], "", ":", (),
             "reference lines: $J^\\star - \\varepsilon$, base coverage, targets and bounds (dashed or dotted)"),
)
_KEY_BY_KIND = {entry.kind: entry for entry in COLOUR_KEY}
#: The colours of methods, which no other series of a figure that draws methods takes.
METHOD_COLOURS = frozenset(entry.colour for entry in COLOUR_KEY if entry.family not in (
    "optimal answer", "near miss", "zero-reward block", "reference lines"))


def key_entry(kind: str) -> KeyEntry:
    """The entry of :data:`COLOUR_KEY` for ``kind`` (a ``ValueError`` naming ``kind`` if it has none)."""
    if kind not in _KEY_BY_KIND:
        raise ValueError(f"kind must be one of {sorted(_KEY_BY_KIND)}, got {kind!r}")
    return _KEY_BY_KIND[kind]


def method_colour(kind: str) -> str:
    """The colour of ``kind`` in every figure of the book (:data:`COLOUR_KEY`)."""
    return key_entry(kind).colour


def method_style(kind: str) -> dict[str, str]:
    """The colour, marker and line style of ``kind`` (:data:`COLOUR_KEY`), as keyword arguments of ``plot``."""
    entry = key_entry(kind)
    return {"color": entry.colour, "marker": entry.marker, "linestyle": entry.linestyle}


def method_kind(label: str) -> str | None:
    """The kind of :data:`COLOUR_KEY` a legend label names, ``None`` where it names none.

    A label names a kind when it is one of the kind's names or starts with one followed by a
    comma, a space, a colon or a bracket; the longest matching name wins (``"KimiPO-Norm"``
    before ``"KimiPO"``, ``"GRPO, fixed ref."`` before ``"GRPO"``).
    """
    best, length = None, 0
    for entry in COLOUR_KEY:
        for name in entry.names:
            if len(name) > length and (label == name or (
                    label.startswith(name) and label[len(name)] in ",:( ")):
                best, length = entry.kind, len(name)
    return best


def free_series_colours(n: int, taken: set[str] | frozenset[str] = METHOD_COLOURS) -> list[str]:
    """``n`` colours for series that are not methods (seeds, gaps, ``beta`` values), none in ``taken``.

    The palette's colours not taken come first; beyond them, shades of viridis, which no method
    of the key uses.
    """
    free = [colour for colour in PALETTE[:-1] if colour not in taken]
    if n <= len(free):
        return free[:n]
    return free + [mpl.colors.to_hex(colormaps["viridis"](v)) for v in np.linspace(0.0, 0.9, n - len(free))]


def colour_key_rows() -> list[tuple[str, str, str, str, str]]:
    """The rows of the notation page's key: colour name, hex colour, marker and line style, kind, what it is."""
    rows = []
    for entry in COLOUR_KEY:
        mark = " ".join(part for part in (f"`{entry.marker}`" if entry.marker else "",
                                          f"`{entry.linestyle}`") if part)
        rows.append((entry.colour_name, entry.colour, mark, entry.kind, entry.meaning))
    return rows


def colour_key_markdown() -> str:
    """The key as the markdown table the notation page shows (a swatch, the colour's name, marker and line, kind, meaning)."""
    lines = ["| colour | marker, line | kind | what it is |", "| --- | --- | --- | --- |"]
    for name, colour, mark, kind, meaning in colour_key_rows():
        swatch = f'<span style="color:{colour}">&#9632;</span>'
        lines.append(f"| {swatch} {name} | {mark} | {kind} | {meaning} |")
    return "\n".join(lines) + "\n"


def label_styles(labels: list[str] | tuple[str, ...]) -> list[dict[str, str]]:
    """Colour, marker and line style of each series labelled by ``labels``.

    A label that names a kind of :data:`COLOUR_KEY` (:func:`method_kind`) gets the kind's
    style; the others get colours no method of the key takes (:func:`free_series_colours`),
    with the markers and line styles of :func:`series_style`.
    """
    kinds = [method_kind(label) for label in labels]
    free = free_series_colours(sum(kind is None for kind in kinds))
    styles, others = [], 0
    for kind in kinds:
        if kind is not None:
            styles.append(method_style(kind))
        else:
            styles.append({**series_style(others), "color": free[others]})
            others += 1
    return styles
