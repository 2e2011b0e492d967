"""Widgets that work with a kernel and without one.

A widget is a figure function (keyword arguments in, matplotlib figure out) plus a list
of :class:`Slider` specifications. :func:`explorable` turns the pair into one notebook
output that carries two renderings:

* ``application/vnd.jupyter.widget-view+json``: live ipywidgets sliders, shown by
  JupyterLab, Binder and Thebe, redrawing the figure for any slider value;
* ``text/html``: a stand-in for readers of the static site, where the figure has been
  precomputed over a grid of slider values and range inputs switch between the frames.

The book's HTML build is configured to prefer the ``text/html`` rendering, so no frozen
control ever reaches a static page.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ipywidgets
import numpy as np
from IPython.display import display
from matplotlib.figure import Figure

STATIC_NOTE = (
    "Static preview: the figure was precomputed for the slider positions shown. "
    "Open this page in Binder or run it in a local Jupyter kernel for the live widget "
    "with continuous controls."
)
FRAME_DPI = 72
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

    def __post_init__(self) -> None:
        if not self.minimum <= self.default <= self.maximum:
            raise ValueError(
                f"default of slider {self.name!r} must lie in [{self.minimum}, {self.maximum}], got {self.default!r}"
            )
        outside = [v for v in self.static_values if not self.minimum <= v <= self.maximum]
        if outside or not self.static_values:
            raise ValueError(f"static_values of slider {self.name!r} must be non-empty and in range, got {outside!r}")

    def live_control(self) -> ipywidgets.Widget:
        """The ipywidgets control for a running kernel."""
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
    """Encode a figure as a PNG data URI."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def precompute_frames(figure_function: Callable[..., Figure], sliders: Sequence[Slider]) -> list[str]:
    """Render the figure at every combination of the sliders' static values (row-major)."""
    grids = [[slider.coerce(v) for v in slider.static_values] for slider in sliders]
    count = int(np.prod([len(grid) for grid in grids]))
    if count > MAX_FRAMES:
        raise ValueError(f"sliders ask for {count} static frames; keep it at most {MAX_FRAMES}")
    return [
        figure_to_data_uri(figure_function(**{s.name: v for s, v in zip(sliders, combination)}))
        for combination in itertools.product(*grids)
    ]


_STANDIN_SCRIPT = """
(function () {
  var root = document.getElementById("%(uid)s");
  var data = JSON.parse(root.querySelector("script.covpo-frames").textContent);
  var inputs = root.querySelectorAll("input.covpo-range");
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
  inputs.forEach(function (input) { input.addEventListener("input", update); });
  update();
})();
"""


def format_value(value: float) -> str:
    """Short label of a slider value."""
    return f"{value:.3g}"


def static_standin_html(frames: Sequence[str], sliders: Sequence[Slider], title: str) -> str:
    """HTML for the kernel-free stand-in: range inputs that switch precomputed frames."""
    uid = "covpo-" + uuid.uuid4().hex[:12]
    shape = [len(s.static_values) for s in sliders]
    labels = [[format_value(v) for v in s.static_values] for s in sliders]
    payload = json.dumps({"shape": shape, "labels": labels, "frames": list(frames)})
    controls = "".join(
        f'<label style="margin-right:1.5em">{html.escape(s.label)} '
        f'<input class="covpo-range" type="range" min="0" max="{len(s.static_values) - 1}" step="1" '
        f'value="{s.default_index}" aria-label="{html.escape(s.label)}"> '
        f'<output data-axis="{axis}">{labels[axis][s.default_index]}</output></label>'
        if len(s.static_values) > 1
        else f'<span style="margin-right:1.5em">{html.escape(s.label)} = {labels[axis][0]} '
        f'<output data-axis="{axis}" hidden>{labels[axis][0]}</output>'
        f'<input class="covpo-range" type="hidden" value="0"> (live widget only)</span>'
        for axis, s in enumerate(sliders)
    )
    first = int(np.ravel_multi_index([s.default_index for s in sliders], shape))
    return (
        f'<div class="covpo-standin" id="{uid}">'
        f'<p><strong>{html.escape(title)}</strong></p>'
        f'<div class="covpo-controls">{controls}</div>'
        f'<img class="covpo-frame" alt="{html.escape(title)}" src="{frames[first]}" data-frame="{first}" '
        f'style="max-width:100%">'
        f'<p class="covpo-note"><em>{html.escape(STATIC_NOTE)}</em></p>'
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
    """One notebook output with a live widget and its static stand-in (see module docstring)."""

    def __init__(self, figure_function: Callable[..., Figure], sliders: Sequence[Slider], title: str) -> None:
        self.figure_function = figure_function
        self.sliders = tuple(sliders)
        self.title = title
        self.widget = live_widget(figure_function, self.sliders)
        self.standin = static_standin_html(precompute_frames(figure_function, self.sliders), self.sliders, title)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict:
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle["text/html"] = self.standin
        bundle["text/plain"] = f"{self.title} (interactive widget)"
        return bundle


def explorable(figure_function: Callable[..., Figure], sliders: Sequence[Slider], title: str) -> Explorable:
    """Wrap a figure function and its sliders as a widget with a static stand-in."""
    return Explorable(figure_function, sliders, title)
