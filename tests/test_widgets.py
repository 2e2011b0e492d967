"""Widgets: live controls, static stand-ins, and no exception at any slider value."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from covpo.plots.collapse import collapse_widget
from covpo.plots.head_to_head import small_head_to_head_widget
from covpo.plots.mirror_descent import apmd_widget
from covpo.plots.ppo import ppo_widget
from covpo.plots.setting import best_of_n_widget
from covpo.plots.squared_loss import squared_loss_widget
from covpo.widgets import Slider, explorable

WIDGET_FACTORIES = [best_of_n_widget, collapse_widget, apmd_widget, ppo_widget, squared_loss_widget, small_head_to_head_widget]


@pytest.mark.parametrize("factory", WIDGET_FACTORIES)
def test_widget_bundle_has_live_view_and_static_standin(factory):
    bundle = factory()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    standin = bundle["text/html"]
    frames = json_frames(standin)
    assert len(frames) == len(set(frames)), "every precomputed frame must differ"
    assert standin.count('type="range"') + standin.count("<select") >= 1, "the stand-in has no control to move"
    assert len(standin) < 5_000_000


def json_frames(standin: str) -> list[str]:
    import json

    payload = re.search(r'<script type="application/json" class="covpo-frames">(.*?)</script>', standin).group(1)
    data = json.loads(payload)
    assert len(data["frames"]) == int(np.prod(data["shape"]))
    return data["frames"]


@pytest.mark.parametrize("factory", WIDGET_FACTORIES)
def test_widget_never_raises_at_slider_extremes(factory):
    widget = factory()
    extremes = [
        sorted({slider.minimum, slider.default, slider.maximum}) for slider in widget.sliders
    ]
    for values in itertools.product(*extremes):
        arguments = {s.name: s.coerce(v) for s, v in zip(widget.sliders, values)}
        widget.figure_function(**arguments)


def test_slider_rejects_defaults_out_of_range():
    with pytest.raises(ValueError, match="default"):
        Slider("n", "N", 1, 10, 20, (1, 5))
    with pytest.raises(ValueError, match="static_values"):
        Slider("n", "N", 1, 10, 5, (1, 50))


def test_too_many_static_frames_is_an_error():
    sliders = [Slider(f"a{i}", "a", 0, 1, 0.5, tuple(np.linspace(0, 1, 5))) for i in range(3)]
    with pytest.raises(ValueError, match="static frames"):
        explorable(lambda **kwargs: None, sliders, "too many")


def test_categorical_control_is_a_select_and_fixed_settings_are_not_controls():
    sliders = [
        Slider("family", "family", 0, 1, 0, (0, 1), integer=True, choices=("collapse", "random")),
        Slider("eta", "learning rate", 0.1, 10.0, 1.0, (1.0,)),
    ]
    widget = explorable(lambda family, eta: _tiny_figure(family), sliders, "choices")
    standin = widget._repr_mimebundle_()["text/html"]
    assert '<option value="0" selected>collapse</option><option value="1">random</option>' in standin
    assert 'type="range"' not in standin and "learning rate: 1 (fixed here)" in standin
    assert widget.sliders[0].live_control().options == (("collapse", 0), ("random", 1))
    with pytest.raises(ValueError, match="choices"):
        Slider("family", "family", 0, 1, 0, (0, 1), choices=("only one",))


def _tiny_figure(value: int):
    from covpo.plots.base import new_figure

    figure = new_figure(2.0, 1.0)
    figure.subplots().plot([0, 1], [0, value])
    return figure
