"""The figures of chapter 1 (covpo.plots.setting): column width, panel layout, legends in view."""

from __future__ import annotations

import numpy as np
import pytest

from covpo import random_softmax_linear_instance
from covpo.experiments.setting import best_of_n_curves
from covpo.plots.setting import best_of_n_explorer_figure, best_of_n_figure, policy_figure
from covpo.plots.style import COLUMN_WIDTH
from covpo.policies import base_log_policy


def small_instance():
    return random_softmax_linear_instance(np.random.default_rng(7), n_prompts=3, n_responses=6, dim=4)


def figures():
    curves = best_of_n_curves(np.array([0.05, 0.2]), np.array([1, 10]), trials=50, rng=np.random.default_rng(0))
    instance = small_instance()
    yield best_of_n_figure(curves)
    yield policy_figure(instance, base_log_policy(instance), "base model")
    yield best_of_n_explorer_figure(0.001, 500, 0.05)
    yield best_of_n_explorer_figure(0.5, 5, 0.05)


@pytest.mark.parametrize("index", range(4))
def test_figures_fit_the_column_and_keep_their_legend_in_view(index):
    figure = list(figures())[index]
    assert figure.get_figwidth() <= COLUMN_WIDTH
    figure.draw_without_rendering()
    legends = [legend for axes in figure.axes if (legend := axes.get_legend())] + list(figure.legends)
    for legend in legends:
        box = legend.get_window_extent()
        assert box.x0 >= 0 and box.x1 <= figure.bbox.width + 1, "legend cut off at the figure's edge"


def test_policy_figure_shows_every_prompt_in_one_panel_with_optimal_bars_marked():
    instance = small_instance()
    figure = policy_figure(instance, base_log_policy(instance), "base model")
    (axes,) = figure.axes
    assert len(axes.patches) == instance.n_prompts * instance.n_responses
    heights = np.array([bar.get_height() for bar in axes.patches]).reshape(instance.n_prompts, -1)
    assert np.allclose(heights, np.exp(base_log_policy(instance)))
    labels = [text.get_text() for text in axes.texts]
    assert [label.splitlines()[0] for label in labels] == [f"prompt {x}" for x in range(instance.n_prompts)]


@pytest.mark.parametrize(
    "arguments, name",
    [
        ({"coverages": None}, "coverages"),
        ({"coverages": [1.5]}, "coverages"),
        ({"coverages": []}, "coverages"),
        ({"ns": [1.5]}, "ns"),
        ({"ns": []}, "ns"),
        ({"trials": float("nan")}, "trials"),
        ({"rng": 0}, "rng"),
    ],
)
def test_best_of_n_curves_rejects_bad_input_naming_the_argument(arguments, name):
    valid = {"coverages": [0.1], "ns": [1, 2], "trials": 3, "rng": np.random.default_rng(0)}
    with pytest.raises(ValueError, match=name):
        best_of_n_curves(**{**valid, **arguments})


@pytest.mark.parametrize("arguments, name", [({"coverage": 0.0}, "coverage"), ({"n": 0}, "n"), ({"delta": 1.0}, "delta")])
def test_best_of_n_widget_figure_names_its_own_slider(arguments, name):
    with pytest.raises(ValueError, match=f"^{name} "):
        best_of_n_explorer_figure(**{"coverage": 0.05, "n": 20, "delta": 0.05, **arguments})
