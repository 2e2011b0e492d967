"""Widgets: live controls, static stand-ins, and no exception at any slider value."""

from __future__ import annotations

import re

import joblib
import numpy as np
import pytest
import yaml

from covpo.plots.collapse import collapse_widget
from covpo.plots.diagnose import detector_widget
from covpo.plots.head_to_head import small_head_to_head_widget
from covpo.plots.mirror_descent import apmd_widget
from covpo.plots.ppo import ppo_widget
from covpo.plots.setting import best_of_n_widget
from covpo.plots.squared_loss import squared_loss_widget
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from covpo.plots import widgets
from covpo.static_pages import STANDINS_VARIABLE
from covpo.plots.widgets import MAX_FRAMES, Frames, Slider, explorable, precompute_frames, static_standin_html
from tests.conftest import REPOSITORY

WIDGET_FACTORIES = [best_of_n_widget, collapse_widget, apmd_widget, ppo_widget, squared_loss_widget, small_head_to_head_widget,
                    detector_widget]


class CountedFrames:
    """Stands in for the frame renderer while a book widget is built: records the grid, renders nothing.

    Rendering every frame of every book widget is what the chapters (and the browser tests of
    their pages) do; here the frame machinery is checked once on a small figure, and each book
    widget only for its grid, its bundle and its live callback.
    """

    def __init__(self) -> None:
        self.grids: list[list[list]] = []

    def __call__(self, figure_function, sliders):
        grids = [[slider.coerce(v) for v in slider.static_values] for slider in sliders]
        count = int(np.prod([len(grid) for grid in grids]))
        if count > MAX_FRAMES:
            raise ValueError(f"sliders ask for {count} static frames; keep it at most {MAX_FRAMES}")
        self.grids.append(grids)
        return Frames([f"data:image/png;base64,frame{index}" for index in range(count)], 600)


def build_without_frames(factory, monkeypatch) -> tuple[object, CountedFrames, list]:
    """The factory's widget, stand-in requested, with :class:`CountedFrames` rendering and every live redraw recorded."""
    counted, shown = CountedFrames(), []
    monkeypatch.setenv(STANDINS_VARIABLE, "1")
    monkeypatch.setattr(widgets, "precompute_frames", counted)
    monkeypatch.setattr(widgets, "display", shown.append)
    return factory(), counted, shown


@pytest.mark.same_on_every_cpu
@pytest.mark.parametrize("factory", WIDGET_FACTORIES)
def test_a_static_build_gets_the_standin_and_no_live_view(factory, monkeypatch):
    widget, counted, shown = build_without_frames(factory, monkeypatch)
    bundle = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    assert shown == [], "a live figure was drawn where no live widget is shown"
    standin = bundle["text/html"]
    assert len(counted.grids) == 1
    assert len(json_frames(standin)) == int(np.prod([len(grid) for grid in counted.grids[0]]))
    assert standin.count('type="range"') + standin.count("<select") >= 1, "the stand-in has no control to move"
    # Every slider's static values are distinct, so every precomputed frame is a different setting.
    for slider, grid in zip(widget.sliders, counted.grids[0]):
        assert len(set(grid)) == len(grid), f"slider {slider.name} repeats a static value"


@pytest.mark.same_on_every_cpu
@pytest.mark.parametrize("factory", WIDGET_FACTORIES)
def test_a_live_kernel_gets_the_live_view_and_no_standin(factory, monkeypatch):
    counted = CountedFrames()
    monkeypatch.delenv(STANDINS_VARIABLE, raising=False)
    monkeypatch.setattr(widgets, "precompute_frames", counted)
    monkeypatch.setattr(widgets, "display", lambda figure: None)
    bundle = factory()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "text/html" not in bundle
    assert bundle["text/plain"].endswith("(interactive widget)")
    assert counted.grids == [], "the stand-in's frames were rendered where no stand-in is shown"


def test_the_books_build_asks_for_standins(monkeypatch):
    # Sphinx loads the book's local extension before any chapter executes; its kernels inherit
    # the variable it sets.
    import importlib.util

    # Set through monkeypatch first, so that what the extension writes into os.environ is undone
    # after the test (a variable that was absent would otherwise stay set for every later test of
    # this process, and for the programs they start).
    monkeypatch.setenv(STANDINS_VARIABLE, "0")
    spec = importlib.util.spec_from_file_location("widget_standins", REPOSITORY / "book" / "_ext" / "widget_standins.py")
    extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extension)
    extension.setup(None)
    assert widgets.standins_requested()
    assert "widget_standins" in yaml.safe_load((REPOSITORY / "_config.yml").read_text())["sphinx"]["local_extensions"]


@pytest.mark.parametrize("factory", WIDGET_FACTORIES)
def test_live_widget_redraws_when_a_control_moves(factory, monkeypatch):
    shown = []
    monkeypatch.delenv(STANDINS_VARIABLE, raising=False)
    monkeypatch.setattr(widgets, "display", shown.append)
    widget = factory()
    assert len(shown) == 1 and isinstance(shown[0], Figure), "the live widget draws its figure when shown"
    controls = widget.widget.children[0].children
    movable = [(c, s) for c, s in zip(controls, widget.sliders) if len(s.static_values) > 1]
    control, slider = movable[0]
    if slider.choices is not None:
        control.value = next(value for _, value in control.options if value != control.value)
    else:
        control.value = slider.coerce(slider.static_values[0] if control.value != slider.coerce(slider.static_values[0]) else slider.static_values[-1])
    assert len(shown) == 2 and isinstance(shown[1], Figure), f"moving {slider.name} did not redraw the figure"


@pytest.mark.same_on_every_cpu
def test_standin_frames_follow_the_controls_row_major():
    def figure_of(a: float, b: int) -> Figure:
        figure = _tiny_figure(0)
        figure.axes[0].set_title(f"{a:g} {b}")
        return figure

    sliders = [
        Slider("a", "a", 0.0, 1.0, 0.5, (0.0, 0.5, 1.0)),
        Slider("b", "b", 1, 3, 3, (1, 3), integer=True),
    ]
    frames = precompute_frames(figure_of, sliders)
    assert len(frames.images) == 6 and len(set(frames.images)) == 6, "every precomputed frame must differ"
    assert frames.images[3] == widgets.figure_to_data_uri(figure_of(0.5, 3)), "frames are not row-major over the sliders"
    standin = static_standin_html(frames, sliders, "grid")
    assert json_frames(standin) == frames.images
    assert 'data-frame="3"' in standin, "the stand-in does not open on the default setting"


def _titled_figure(a: float, b: int) -> Figure:
    figure = _tiny_figure(0)
    figure.axes[0].set_title(f"{a:g} {b}")
    return figure


@pytest.mark.same_on_every_cpu
def test_standin_frames_are_the_same_rendered_on_two_processes():
    # A chapter that runs its sweeps on two processes renders its widgets' frames there too.
    sliders = [Slider("a", "a", 0.0, 1.0, 0.5, (0.0, 0.5, 1.0)), Slider("b", "b", 1, 3, 3, (1, 3), integer=True)]
    with joblib.parallel_config(n_jobs=2):
        parallel = precompute_frames(_titled_figure, sliders)
    assert parallel == precompute_frames(_titled_figure, sliders)


def json_frames(standin: str) -> list[str]:
    import json

    payload = re.search(r'<script type="application/json" class="covpo-frames">(.*?)</script>', standin).group(1)
    data = json.loads(payload)
    assert len(data["frames"]) == int(np.prod(data["shape"]))
    return data["frames"]


@pytest.mark.parametrize("factory", WIDGET_FACTORIES)
def test_widget_never_raises_at_slider_extremes(factory, monkeypatch):
    widget, _, _ = build_without_frames(factory, monkeypatch)
    defaults = {s.name: s.coerce(s.default) for s in widget.sliders}
    # Every slider alone at its minimum and maximum, then all at once at each end.
    settings = [{**defaults, s.name: s.coerce(end)} for s in widget.sliders for end in (s.minimum, s.maximum)]
    settings += [{s.name: s.coerce(getattr(s, end)) for s in widget.sliders} for end in ("minimum", "maximum")]
    for arguments in settings:
        widget.figure_function(**arguments)
        plt.close("all")


def test_slider_rejects_defaults_out_of_range():
    with pytest.raises(ValueError, match="default"):
        Slider("n", "N", 1, 10, 20, (1, 5))
    with pytest.raises(ValueError, match="static_values"):
        Slider("n", "N", 1, 10, 5, (1, 50))


def test_too_many_static_frames_is_an_error():
    sliders = [Slider(f"a{i}", "a", 0, 1, 0.5, tuple(np.linspace(0, 1, 5))) for i in range(3)]
    with pytest.raises(ValueError, match="static frames"):
        explorable(lambda **kwargs: None, sliders, "too many")


@pytest.mark.same_on_every_cpu
def test_categorical_control_is_a_select_and_fixed_settings_are_not_controls(monkeypatch):
    sliders = [
        Slider("family", "family", 0, 1, 0, (0, 1), integer=True, choices=("collapse", "random")),
        Slider("eta", "learning rate", 0.1, 10.0, 1.0, (1.0,)),
    ]
    monkeypatch.setenv(STANDINS_VARIABLE, "1")
    widget = explorable(lambda family, eta: _tiny_figure(family), sliders, "choices")
    standin = widget._repr_mimebundle_()["text/html"]
    assert '<option value="0" selected>collapse</option><option value="1">random</option>' in standin
    assert 'type="range"' not in standin and "learning rate: 1 (fixed here)" in standin
    assert widget.sliders[0].live_control().options == (("collapse", 0), ("random", 1))
    with pytest.raises(ValueError, match="choices"):
        Slider("family", "family", 0, 1, 0, (0, 1), choices=("only one",))


def test_the_note_under_a_standin_names_its_controls():
    family = Slider("family", "family", 0, 1, 0, (0, 1), integer=True, choices=("collapse", "random"))
    seeds = Slider("seeds", "seeds", 0, 1, 0, (0, 1), integer=True, choices=("one", "all"))
    beta = Slider("beta", "beta", 0.1, 4.0, 1.0, (0.5, 1.0))
    eta = Slider("eta", "learning rate", 0.1, 10.0, 1.0, (1.0,))
    # dropdowns only: the live widget offers the same choices, as buttons, and nothing continuous
    assert widgets.static_note([family, seeds]) == (
        "Static preview: the 2 dropdowns switch between figures precomputed for the values offered here. "
        "Run the chapter in Binder or a local Jupyter kernel to redraw it live."
    )
    # a slider, a dropdown and a fixed setting: the numeric ones become continuous when live
    assert widgets.static_note([beta, family, eta]) == (
        "Static preview: the slider and the dropdown switch between figures precomputed for the values "
        "offered here. Run the chapter in Binder or a local Jupyter kernel to set beta and learning rate "
        "to any value in range."
    )
    assert widgets.static_note([family]).startswith("Static preview: the dropdown switches between")
    assert "continuous" not in static_standin_html(Frames(["data:,", "data:,"], 10), [family], "title")


def _tiny_figure(value: int):
    from covpo.plots.base import new_figure

    figure = new_figure(2.0, 1.0)
    figure.subplots().plot([0, 1], [0, value])
    return figure


@pytest.mark.parametrize(
    "module, function, arguments, name",
    [
        ("collapse", "collapse_explorer_figure", {"gap": 0.15, "beta": 0.0, "eta": 4.0, "budget": 0}, "budget"),
        ("collapse", "collapse_explorer_figure", {"gap": 0.15, "beta": -1.0, "eta": 4.0, "budget": 10}, "beta"),
        ("mirror_descent", "apmd_explorer_figure", {"beta": 0.5, "inner_steps": 8, "eta": 4.0, "budget": 0}, "budget"),
        ("mirror_descent", "apmd_explorer_figure", {"beta": 0.5, "inner_steps": 0, "eta": 4.0, "budget": 10}, "inner_steps"),
        ("ppo", "ppo_explorer_figure", {"beta": 1.0, "width": 0.0, "inner_steps": 2, "batch_size": 8}, "width"),
        ("ppo", "ppo_explorer_figure", {"beta": 1.0, "width": 1.0, "inner_steps": 2, "batch_size": None}, "batch_size"),
        ("squared_loss", "squared_loss_explorer_figure", {"beta": 0.5, "group_size": 0, "batch_size": 16}, "group_size"),
        ("squared_loss", "squared_loss_explorer_figure", {"beta": float("nan"), "group_size": 8, "batch_size": 16}, "beta"),
        ("head_to_head", "head_to_head_explorer_figure",
         {"results": (None,), "family": 0, "algorithm_set": 0, "response_budget": 100}, "results"),
    ],
)
def test_widget_figure_names_its_own_slider(module, function, arguments, name):
    import importlib

    figure_function = getattr(importlib.import_module(f"covpo.plots.{module}"), function)
    with pytest.raises(ValueError, match=f"^{name} "):
        figure_function(**arguments)


@pytest.mark.parametrize(
    "arguments, name",
    [
        ({"name": None}, "name"),
        ({"minimum": float("nan")}, "minimum"),
        ({"static_values": "x"}, "static_values"),
        ({"step": -1.0}, "step"),
        ({"minimum": 0.0, "log": True}, "minimum"),
    ],
)
def test_slider_rejects_bad_fields_naming_them(arguments, name):
    valid = {"name": "x", "label": "x", "minimum": 0.1, "maximum": 1.0, "default": 0.5, "static_values": (0.5,)}
    with pytest.raises(ValueError, match=name):
        Slider(**{**valid, **arguments})


def test_explorable_rejects_bad_sliders_and_functions():
    slider = Slider("x", "x", 0.0, 1.0, 0.5, (0.5,))
    with pytest.raises(ValueError, match="sliders"):
        explorable(lambda x: None, [None], "title")
    with pytest.raises(ValueError, match="figure_function"):
        explorable(None, [slider], "title")
