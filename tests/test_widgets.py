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
    assert standin.count('type="range"') >= 1
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
