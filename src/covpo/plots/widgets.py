"""Widgets that work with a kernel and without one.

A widget is a figure function (keyword arguments in, matplotlib figure out) plus a list
of :class:`Slider` specifications. :func:`explorable` turns the pair into one notebook
output, rendered for the front end that will show it:

* with a kernel (JupyterLab, Binder, Thebe): ``application/vnd.jupyter.widget-view+json``,
  live ipywidgets sliders redrawing the figure for any slider value;
* on the static site: ``text/html``, a stand-in where the figure has been precomputed over a
  grid of slider values and range inputs (or, for a categorical control, a select) switch
  between the frames. A control with a single precomputed value is shown as a fixed setting,
  not as a control.

The stand-in is made only where it will be shown: when the environment variable
:data:`~covpo.static_pages.STANDINS_VARIABLE` is ``1``, which the book's build sets for the
kernels that execute its chapters (``book/_ext/widget_standins.py``). Such a kernel makes no live widget, which no static
page could show (its figure would be drawn for nothing); a live front end shows the live widget
and never the stand-in, so a chapter run in JupyterLab or Binder skips the stand-ins' frames
(some widgets train a model per frame). Either way no control on the page is frozen.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ipywidgets
import numpy as np
from IPython.display import display
from matplotlib.figure import Figure

from covpo.experiments.parallel import run_tasks
from covpo.plots.base import figure_png
from covpo.plots.style import DISPLAY_PX_PER_INCH, display_size
from covpo.static_pages import standins_requested
from covpo.validation import check_finite_array, check_positive

FRAME_DPI = DISPLAY_PX_PER_INCH
MAX_FRAMES = 64


@dataclass(frozen=True)
class Slider:
    """One control of a widget.

    Parameters
    ----------
    name
        The keyword argument of the figure function it sets.
    label
        What the reader sees next to the control.
    minimum, maximum, default
        Range and starting value of the live control.
    static_values
        The positions precomputed for the static stand-in (include the default).
    step
        Increment of the live control (for ``log`` sliders, of the base-10 exponent).
    log
        Use a logarithmic live slider.
    integer
        The value is an integer.
    choices
        Names of the static values, for a categorical control (a family, a set of
        algorithms): the live control is then a row of buttons and the stand-in a select,
        both listing these names.
    """

    name: str
    label: str
    minimum: float
    maximum: float
    default: float
    static_values: Sequence[float]
    step: float | None = None
    log: bool = False
    integer: bool = False
    choices: Sequence[str] | None = None

    def __post_init__(self) -> None:
        for field in ("name", "label"):
            if not isinstance(getattr(self, field), str) or not getattr(self, field):
                raise ValueError(f"{field} of a slider must be a non-empty string, got {getattr(self, field)!r}")
        for field in ("minimum", "maximum", "default"):
            check_finite_array(f"{field} of slider {self.name!r}", getattr(self, field), ndim=0)
        if isinstance(self.static_values, (str, bytes)):
            raise ValueError(f"static_values of slider {self.name!r} must be numbers, got {self.static_values!r}")
        check_finite_array(f"static_values of slider {self.name!r}", self.static_values, ndim=1)
        if self.step is not None:
            check_positive(f"step of slider {self.name!r}", self.step)
        if self.log and self.minimum <= 0:
            raise ValueError(f"minimum of log slider {self.name!r} must be > 0, got {self.minimum!r}")
        if not self.minimum <= self.default <= self.maximum:
            raise ValueError(
                f"default of slider {self.name!r} must lie in [{self.minimum}, {self.maximum}], got {self.default!r}"
            )
        outside = [v for v in self.static_values if not self.minimum <= v <= self.maximum]
        if outside or not self.static_values:
            raise ValueError(f"static_values of slider {self.name!r} must be non-empty and in range, got {outside!r}")
        if self.choices is not None and len(self.choices) != len(self.static_values):
            raise ValueError(f"choices of slider {self.name!r} must name each of its {len(self.static_values)} static values")

    def value_label(self, position: int) -> str:
        """What the stand-in shows for the ``position``-th static value."""
        return self.choices[position] if self.choices is not None else format_value(self.static_values[position])

    def live_control(self) -> ipywidgets.Widget:
        """The ipywidgets control for a running kernel."""
        if self.choices is not None:
            return ipywidgets.ToggleButtons(
                options=list(zip(self.choices, (self.coerce(v) for v in self.static_values))),
                value=self.coerce(self.static_values[self.default_index]), description=self.label,
                style={"description_width": "initial"},
            )
        common = dict(description=self.label, continuous_update=False, style={"description_width": "initial"})
        if self.integer and not self.log:
            step = int(self.step or 1)
            return ipywidgets.IntSlider(
                value=int(self.default), min=int(self.minimum), max=int(self.maximum), step=step, **common
            )
        if self.log:
            return ipywidgets.FloatLogSlider(
                value=self.default,
                base=10,
                min=float(np.log10(self.minimum)),
                max=float(np.log10(self.maximum)),
                step=self.step or 0.05,
                **common,
            )
        step = self.step or (self.maximum - self.minimum) / 100
        return ipywidgets.FloatSlider(
            value=self.default, min=self.minimum, max=self.maximum, step=step, readout_format=".3g", **common
        )

    def coerce(self, value: float) -> float | int:
        """The value the figure function receives (rounded for integer sliders)."""
        return int(round(value)) if self.integer else float(value)

    @property
    def default_index(self) -> int:
        """Position of the static value closest to the default."""
        return int(np.argmin(np.abs(np.asarray(self.static_values, dtype=float) - self.default)))


def figure_to_data_uri(figure: Figure, dpi: int = FRAME_DPI) -> str:
    """Encode a figure, in the book's style, as a PNG data URI."""
    return "data:image/png;base64," + base64.b64encode(figure_png(figure, dpi=dpi)).decode("ascii")


@dataclass(frozen=True)
class Frames:
    """A stand-in's precomputed frames (PNG data URIs, row-major over the sliders) and their display width in CSS pixels."""

    images: list[str]
    width: int


def _check_widget(figure_function: object, sliders: object) -> tuple[Slider, ...]:
    """``sliders`` as a tuple of :class:`Slider` with distinct names for a callable ``figure_function``, else raise."""
    if not callable(figure_function):
        raise ValueError(f"figure_function must be callable, got {figure_function!r}")
    if isinstance(sliders, (str, bytes, Slider)) or not hasattr(sliders, "__iter__"):
        raise ValueError(f"sliders must be a sequence of Slider, got {sliders!r}")
    checked = tuple(sliders)
    if not checked or not all(isinstance(slider, Slider) for slider in checked):
        raise ValueError(f"sliders must be a non-empty sequence of Slider, got {sliders!r}")
    names = [slider.name for slider in checked]
    if len(set(names)) != len(names):
        raise ValueError(f"sliders must have distinct names, got {names}")
    return checked


def _frame_grids(sliders: Sequence[Slider]) -> list[list[float | int]]:
    """Each slider's static values as its figure function receives them; raise if the grid exceeds :data:`MAX_FRAMES`."""
    grids = [[slider.coerce(v) for v in slider.static_values] for slider in sliders]
    count = int(np.prod([len(grid) for grid in grids]))
    if count > MAX_FRAMES:
        raise ValueError(f"sliders ask for {count} static frames; keep it at most {MAX_FRAMES}")
    return grids


def render_frame(figure_function: Callable[..., Figure], values: dict[str, float | int]) -> tuple[str, int]:
    """One frame of a stand-in: the figure at ``values`` as a PNG data URI, and its display width in CSS pixels."""
    figure = figure_function(**values)
    return figure_to_data_uri(figure), display_size(figure)["width"]


def precompute_frames(figure_function: Callable[..., Figure], sliders: Sequence[Slider]) -> Frames:
    """Render the figure at every combination of the sliders' static values (row-major).

    The frames are independent tasks of :func:`~covpo.experiments.parallel.run_tasks`, so a
    chapter that runs its sweeps on several processes (``joblib.parallel_config(n_jobs=2)``)
    renders its widgets' frames on them too; the images are the same bytes either way.
    """
    sliders = _check_widget(figure_function, sliders)
    grids = _frame_grids(sliders)
    tasks = [
        (figure_function, {s.name: v for s, v in zip(sliders, combination)}) for combination in itertools.product(*grids)
    ]
    rendered = run_tasks(render_frame, tasks, "widget frames", progress=False)
    return Frames([image for image, _ in rendered], max(width for _, width in rendered))


_STANDIN_SCRIPT = """
(function () {
  var root = document.getElementById("%(uid)s");
  var data = JSON.parse(root.querySelector("script.covpo-frames").textContent);
  var inputs = root.querySelectorAll(".covpo-range");
  var image = root.querySelector("img.covpo-frame");
  function update() {
    var index = 0;
    inputs.forEach(function (input, axis) {
      var position = parseInt(input.value, 10);
      index = index * data.shape[axis] + position;
      root.querySelector("output[data-axis='" + axis + "']").textContent = data.labels[axis][position];
    });
    image.src = data.frames[index];
    image.setAttribute("data-frame", index);
  }
  inputs.forEach(function (input) {
    input.addEventListener("input", update);
    input.addEventListener("change", update);
  });
  update();
})();
"""


def format_value(value: float) -> str:
    """Short label of a slider value."""
    return f"{value:.3g}"


def _standin_control(slider: Slider, axis: int) -> str:
    """One control of the stand-in: a range input, a select for a categorical choice, or a fixed setting."""
    label = html.escape(slider.label)
    current = html.escape(slider.value_label(slider.default_index))
    readout = f'<output data-axis="{axis}">{current}</output>'
    if len(slider.static_values) == 1:
        return (
            f'<span class="covpo-fixed" style="margin-right:1.5em">{label}: {current} (fixed here)'
            f'<input class="covpo-range" type="hidden" value="0"><output data-axis="{axis}" hidden>{current}</output></span>'
        )
    if slider.choices is not None:
        options = "".join(
            f'<option value="{position}"{" selected" if position == slider.default_index else ""}>'
            f"{html.escape(name)}</option>"
            for position, name in enumerate(slider.choices)
        )
        return (
            f'<label style="margin-right:1.5em">{label} <select class="covpo-range" aria-label="{label}">{options}</select>'
            f'<output data-axis="{axis}" hidden>{current}</output></label>'
        )
    return (
        f'<label style="margin-right:1.5em">{label} '
        f'<input class="covpo-range" type="range" min="0" max="{len(slider.static_values) - 1}" step="1" '
        f'value="{slider.default_index}" aria-label="{label}"> {readout}</label>'
    )


def _counted(count: int, noun: str) -> str:
    return f"the {noun}" if count == 1 else f"the {count} {noun}s"


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def static_note(sliders: Sequence[Slider]) -> str:
    """The note under a stand-in: what its controls are, and what a live kernel adds to them.

    The stand-in shows a numeric control as a slider over its precomputed values and a
    categorical one as a dropdown; the live widget makes every numeric control a continuous
    slider and shows the categorical ones as buttons with the same choices.
    """
    moving = [slider for slider in sliders if len(slider.static_values) > 1]
    kinds = [
        _counted(count, noun)
        for count, noun in (
            (sum(slider.choices is None for slider in moving), "slider"),
            (sum(slider.choices is not None for slider in moving), "dropdown"),
        )
        if count
    ]
    if not kinds:
        note = "Static preview: the figure at the settings shown."
    else:
        verb = "switches" if len(moving) == 1 else "switch"
        note = f"Static preview: {_listed(kinds)} {verb} between figures precomputed for the values offered here."
    numeric = [slider.label for slider in sliders if slider.choices is None]
    if numeric:
        return note + f" Run the chapter in Binder or a local Jupyter kernel to set {_listed(numeric)} to any value in range."
    return note + " Run the chapter in Binder or a local Jupyter kernel to redraw it live."


def static_standin_html(frames: Frames, sliders: Sequence[Slider], title: str) -> str:
    """HTML for the kernel-free stand-in: controls that switch precomputed frames, and the note under them.

    The title is the image's text alternative and the stand-in's ``data-title``, from which the
    book's pages caption it.
    """
    uid = "covpo-" + uuid.uuid4().hex[:12]
    shape = [len(s.static_values) for s in sliders]
    labels = [[s.value_label(position) for position in range(len(s.static_values))] for s in sliders]
    payload = json.dumps({"shape": shape, "labels": labels, "frames": frames.images})
    controls = "".join(_standin_control(s, axis) for axis, s in enumerate(sliders))
    first = int(np.ravel_multi_index([s.default_index for s in sliders], shape))
    return (
        f'<div class="covpo-standin" id="{uid}" data-title="{html.escape(title)}">'
        f'<div class="covpo-controls">{controls}</div>'
        f'<img class="covpo-frame" alt="{html.escape(title)}" src="{frames.images[first]}" data-frame="{first}" '
        f'width="{frames.width}" style="max-width:100%;height:auto">'
        f'<p class="covpo-note"><em>{html.escape(static_note(sliders))}</em></p>'
        f'<script type="application/json" class="covpo-frames">{payload}</script>'
        f"<script>{_STANDIN_SCRIPT % {'uid': uid}}</script>"
        "</div>"
    )


def live_widget(figure_function: Callable[..., Figure], sliders: Sequence[Slider]) -> ipywidgets.Widget:
    """Live ipywidgets controls that redraw the figure on every change."""
    controls = {s.name: s.live_control() for s in sliders}

    def show(**values: float) -> None:
        display(figure_function(**{s.name: s.coerce(values[s.name]) for s in sliders}))

    output = ipywidgets.interactive_output(show, controls)
    return ipywidgets.VBox([ipywidgets.HBox(list(controls.values()), layout={"flex_flow": "row wrap"}), output])


class Explorable:
    """One notebook output with a live widget and, where requested, its static stand-in (see module docstring)."""

    def __init__(self, figure_function: Callable[..., Figure], sliders: Sequence[Slider], title: str) -> None:
        if not isinstance(title, str):
            raise ValueError(f"title must be a string, got {title!r}")
        self.figure_function = figure_function
        self.sliders = _check_widget(figure_function, sliders)
        _frame_grids(self.sliders)
        self.title = title
        if standins_requested():
            self.widget = None
            self.standin = static_standin_html(precompute_frames(figure_function, self.sliders), self.sliders, title)
        else:
            self.widget = live_widget(figure_function, self.sliders)
            self.standin = None

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict:
        if self.widget is None:
            bundle = {"text/html": self.standin}
        else:
            bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle["text/plain"] = f"{self.title} (interactive widget)"
        return bundle


def explorable(figure_function: Callable[..., Figure], sliders: Sequence[Slider], title: str) -> Explorable:
    """Wrap a figure function and its sliders as a widget, with a static stand-in where :func:`~covpo.static_pages.standins_requested`."""
    return Explorable(figure_function, sliders, title)
