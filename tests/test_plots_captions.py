"""Figures say what their captions and legends say: the colours and line styles they name are drawn, nothing
is drawn outside its axes, no method hides another, and a run that missed eps never reads as cheap.

The figure functions are called with small made-up records (duck-typed where the record would
need runs), so these tests run in seconds.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D

from covpo.plots.style import COLOR_NAMES
from tests.conftest import REPOSITORY

#: Line style words of captions and legends, as matplotlib names the styles.
STYLE_WORDS = {"solid": "-", "dashed": "--", "dotted": ":", "dash-dotted": "-."}
#: Colour words a caption may use: the style's names, its older spelling, and grey.
COLOR_WORDS = {**COLOR_NAMES, "vermillion": COLOR_NAMES["vermilion"]}
#: Colour words that name no colour of the book's palette (a caption saying them misnames one).
FOREIGN_COLOR_WORDS = ("red", "purple", "cyan", "magenta", "brown")


def _line_style(line: Line2D) -> str:
    return {"--": "--", "dashed": "--", ":": ":", "dotted": ":", "-.": "-.", "-": "-", "solid": "-"}.get(
        line.get_linestyle(), line.get_linestyle())


def _rgb(color) -> tuple[float, float, float] | None:
    if color is None or (isinstance(color, str) and color == "none"):
        return None
    array = np.asarray(color, dtype=float) if not isinstance(color, str) else None
    if array is not None and array.size >= 4 and array.ravel()[3] == 0.0:
        return None
    return tuple(round(value, 3) for value in to_rgb(color if isinstance(color, str) else tuple(array.ravel()[:3])))


def _collection_colors(collection) -> set:
    """The fill colours of a collection: its mapped values' colours where it maps values through a colour map."""
    data = collection.get_array()
    faces = collection.to_rgba(np.ma.compressed(data)).reshape(-1, 4) if data is not None else collection.get_facecolors()
    return {_rgb(tuple(color)) for color in faces}


def drawn_colors(axes) -> set[tuple[float, float, float]]:
    """Every colour ``axes`` draws with: lines and their markers, collections, patches, and an image's mapped cells."""
    colors = set()
    for line in axes.get_lines():
        for color in (line.get_color(), line.get_markerfacecolor(), line.get_markeredgecolor()):
            colors.add(_rgb(color))
    for collection in axes.collections:
        colors.update(_collection_colors(collection))
        for color in collection.get_edgecolors():
            colors.add(_rgb(tuple(color)))
    for patch in axes.patches:
        for color in (patch.get_facecolor(), patch.get_edgecolor()):
            colors.add(_rgb(tuple(color)))
    for image in axes.images:
        data = image.get_array()
        colors.update(_rgb(tuple(c)) for c in image.to_rgba(np.ma.compressed(data)).reshape(-1, 4))
        if np.ma.is_masked(data):
            colors.add(_rgb(tuple(image.get_cmap().get_bad())))
    colors.discard(None)
    return colors


def drawn_styles(axes) -> set[str]:
    """The line styles of the lines and line collections ``axes`` draws (markers-only lines excluded)."""
    styles = {_line_style(line) for line in axes.get_lines() if line.get_linestyle() not in ("None", "none", "")}
    for collection in axes.collections:
        if hasattr(collection, "get_linestyle") and collection.get_linewidth().size and collection.get_linewidth().max() > 0:
            for _offset, dashes in collection.get_linestyle():
                styles.add("-" if dashes is None else ("--" if dashes[0] > 2 * dashes[1] / 1.5 else ":"))
    return styles


def named_colors(text: str) -> list[str]:
    """The colour words of :data:`COLOR_WORDS` (and :data:`FOREIGN_COLOR_WORDS`) in ``text``, longest first."""
    found = []
    lower = text.lower()
    for word in sorted([*COLOR_WORDS, *FOREIGN_COLOR_WORDS], key=len, reverse=True):
        if re.search(rf"\b{word}\b", lower):
            found.append(word)
            lower = re.sub(rf"\b{word}\b", " ", lower)
    return found


def check_words_are_drawn(text: str, colors: set, styles: set, where: str) -> None:
    """Each colour and line style ``text`` names is among ``colors`` and ``styles``."""
    for word in named_colors(text):
        assert word in COLOR_WORDS, f"{where}: {word!r} names no colour of the book's palette: {text!r}"
        assert _rgb(COLOR_WORDS[word]) in colors, f"{where}: nothing is drawn {word}: {text!r}"
    for word, style in STYLE_WORDS.items():
        if re.search(rf"\b{word}\b", text.lower()):
            assert style in styles, f"{where}: no {word} line is drawn: {text!r}"


def outside_the_axes(figure) -> list[str]:
    """Lines and markers drawn (not clipped away) outside the box of the axes they belong to."""
    figure.canvas.draw()
    found = []
    for axes in figure.axes:
        box = axes.get_window_extent()
        for line in axes.get_lines():
            if not line.get_visible():
                continue
            xy = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float))
            xy = xy[np.all(np.isfinite(xy), axis=1)]
            outside = (xy[:, 0] < box.x0 - 1) | (xy[:, 0] > box.x1 + 1) | (xy[:, 1] < box.y0 - 1) | (xy[:, 1] > box.y1 + 1)
            if outside.any() and not line.get_clip_on():
                found.append(f"{line.get_label()!r} ({int(outside.sum())} points, unclipped)")
            elif outside.any() and line.get_marker() not in (None, "None", "none", ""):
                found.append(f"{line.get_label()!r} ({int(outside.sum())} markers beyond the limits)")
    return found


def caption(chapter: str, key: str) -> str:
    """The caption of the ``glue:figure`` of ``key`` in ``book/<chapter>.md``."""
    source = (REPOSITORY / "book" / f"{chapter}.md").read_text()
    match = re.search(rf"```{{glue:figure}} {key}\n(?::[^\n]*\n)*\n(.*?)```", source, flags=re.S)
    assert match, f"no glue:figure {key} in {chapter}.md"
    return " ".join(match.group(1).split())


def test_the_checks_catch_a_misnamed_colour_a_missing_style_and_a_mark_outside():
    from covpo.plots.base import new_figure

    figure = new_figure(4.0, 3.0)
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], color=COLOR_NAMES["vermilion"], ls="-")
    axes.plot([0.5, 0.5], [1.0, 1.2], transform=axes.get_xaxis_transform(), clip_on=False, color="k")
    colors, styles = drawn_colors(axes), drawn_styles(axes)
    check_words_are_drawn("the batch (vermilion, solid)", colors, styles, "test")
    for text in ("the batch (red)", "the batch (blue)", "the batch (dashed)"):
        with pytest.raises(AssertionError):
            check_words_are_drawn(text, colors, styles, "test")
    assert len(outside_the_axes(figure)) == 1


# --- chapter 4's cost sweeps (Fig. 4.4 and 4.5) ------------------------------------------------------


def fake_sweeps(missed: bool) -> SimpleNamespace:
    """Five seeds of chapter 4's five methods, PPO-NoClip and PPO-Lite at exactly the same costs; with
    ``missed``, REINFORCE misses eps from the third coverage on after a small budget of steps."""
    labels = ("PPO-NoClip", "PPO-Lite", "GRPO, resets", "GRPO, fixed ref., no KL", "REINFORCE")
    coverages = np.array([10.0, 20.0, 40.0, 80.0, 160.0])
    rng = np.random.default_rng(0)
    responses = 1000.0 * coverages**0.5 * (1.0 + 0.1 * rng.random((5, len(labels), coverages.size)))
    responses[:, 1] = responses[:, 0]
    steps = responses / 10.0
    reached = np.ones(responses.shape, dtype=bool)
    if missed:
        reached[:, 4, 2:] = False
        steps[:, 4], responses[:, 4] = 40.0, 12_800.0
    return SimpleNamespace(
        methods=tuple(SimpleNamespace(label=label) for label in labels), coverages=coverages, seeds=tuple(range(5)),
        reached=reached, responses_to_eps=responses.astype(int), steps_to_eps=steps.astype(int),
        coverage_loss=rng.random(responses.shape), eps=0.04,
    )


def _method_lines(axes, color: str) -> list[Line2D]:
    return [line for line in axes.get_lines() if _rgb(line.get_color()) == _rgb(color)]


def test_methods_with_the_same_costs_both_show():
    from covpo.plots.ppo import METHOD_STYLES, cost_sweeps_figure

    figure = cost_sweeps_figure(fake_sweeps(missed=False), "test")
    steps_axes = figure.axes[1]
    noclip = _method_lines(steps_axes, METHOD_STYLES["PPO-NoClip"][0])
    lite = _method_lines(steps_axes, METHOD_STYLES["PPO-Lite"][0])
    noclip_median, lite_median = (next(line for line in lines if _line_style(line) != "None") for lines in (noclip, lite))
    # the line drawn first is wider, in another style, so the one drawn over it leaves it showing
    assert noclip_median.get_zorder() <= lite_median.get_zorder()
    assert noclip_median.get_linewidth() > lite_median.get_linewidth() + 0.3
    assert _line_style(noclip_median) != _line_style(lite_median)
    # and the two methods' seed markers sit apart
    noclip_x = np.concatenate([line.get_xdata() for line in noclip if line.get_linestyle() == "None"])
    lite_x = np.concatenate([line.get_xdata() for line in lite if line.get_linestyle() == "None"])
    assert not np.intersect1d(np.round(np.log10(noclip_x), 4), np.round(np.log10(lite_x), 4)).size


def test_a_run_that_missed_eps_is_never_drawn_as_a_cost():
    from covpo.plots.ppo import METHOD_STYLES, cost_sweeps_figure

    sweeps = fake_sweeps(missed=True)
    figure = cost_sweeps_figure(sweeps, "test")
    strips = [axes for axes in figure.axes if "did not reach" in axes.get_title(loc="left")]
    assert len(strips) == 2
    cost_axes = [axes for axes in figure.axes if axes.get_ylabel().endswith("to $\\varepsilon$")]
    assert len(cost_axes) == 2
    reinforce = METHOD_STYLES["REINFORCE"][0]
    for axes in cost_axes:
        for line in _method_lines(axes, reinforce):
            x = np.asarray(line.get_xdata(), dtype=float)
            y = np.asarray(line.get_ydata(), dtype=float)
            # nothing of REINFORCE beyond the second coverage, neither a marker nor its median line
            assert not np.any(np.isfinite(y) & (x > 30.0)), axes.get_ylabel()
    for strip in strips:
        shown = sum(len(line.get_xdata()) for line in _method_lines(strip, reinforce))
        assert shown == int((~sweeps.reached[:, 4]).sum())
    assert not outside_the_axes(figure)


@pytest.mark.parametrize("key,missed", [("ppo_fig_sweep_random", False), ("ppo_fig_sweep_collapse", True)])
def test_the_cost_sweep_captions_name_what_is_drawn(key: str, missed: bool):
    from covpo.plots.ppo import cost_sweeps_figure

    figure = cost_sweeps_figure(fake_sweeps(missed), "test")
    colors = set().union(*(drawn_colors(axes) for axes in figure.axes))
    styles = set().union(*(drawn_styles(axes) for axes in figure.axes))
    check_words_are_drawn(caption("ppo", key), colors, styles, key)


# --- chapter 4's widget ---------------------------------------------------------------------------------


def test_the_ppo_widget_panels_name_the_colours_and_styles_they_draw():
    from covpo.plots.ppo import ppo_explorer_figure

    figure = ppo_explorer_figure(beta=1.0, width=1.0, inner_steps=2, batch_size=16)
    for axes in figure.axes:
        for text in axes.texts:
            check_words_are_drawn(text.get_text(), drawn_colors(axes), drawn_styles(axes), text.get_text())
    assert not outside_the_axes(figure)


# --- chapter 6's tuning maps (Fig. 6.4) ------------------------------------------------------------------


def fake_tuning_map(rows: tuple[float, ...], fixed_widths: np.ndarray) -> SimpleNamespace:
    betas = np.array([0.25, 0.5, 1.0, 2.0, 4.0])
    costs = np.geomspace(500.0, 6000.0, len(rows) * betas.size).reshape(len(rows), betas.size)
    costs[0, 0] = np.nan
    lost = np.zeros(costs.shape)
    lost[1, 1] = 1 / 3
    prescriptions = SimpleNamespace(beta_horizon=1.4, beta_horizon_bound=0.7, accuracy_inner_steps=4.0,
                                    coverage_aware_inner_steps=8.0, fixed_interval_widths=fixed_widths)
    return SimpleNamespace(
        median_responses_to_eps=costs, lost_fraction=lost, n_seeds=3, betas=betas, rows=np.array(rows), eta_beta=8.0,
        prescriptions=prescriptions, title=lambda what: f"over {what}", response_budget=6400, batch_size=256,
        n_iterations=25, eps=0.04,
    )


def test_the_tuning_maps_draw_their_caption_inside_their_axes():
    from covpo.plots.tuning import tuning_heatmaps_figure

    steps_map = fake_tuning_map((1.0, 2.0, 5.0, 10.0, 20.0), np.full(5, 1.0))
    width_map = fake_tuning_map((0.25, 0.5, 1.0, 2.0, 4.0), np.array([0.3, 0.6, 1.2, 2.4, 4.0]))
    figure = tuning_heatmaps_figure(steps_map, width_map)
    assert not outside_the_axes(figure)
    maps = figure.axes[:2]
    colors = set().union(*(drawn_colors(axes) for axes in maps))
    styles = set().union(*(drawn_styles(axes) for axes in maps))
    check_words_are_drawn(caption("implications", "fig_impl_tuning"), colors, styles, "fig_impl_tuning")
    # the legend's line styles are those of the marks on the maps
    legend_styles = {_line_style(handle) for handle in figure.legends[0].legend_handles
                     if isinstance(handle, Line2D) and handle.get_linestyle() not in ("None", "none")}
    assert legend_styles <= styles


# --- chapter 2's escape map (Fig. 2.8) -------------------------------------------------------------------


def test_the_escape_map_legend_shows_only_colours_its_cells_use():
    from covpo.experiments.collapse import ESCAPE_OUTCOMES
    from covpo.plots.collapse import beta_escape_map_figure

    outcome = np.array([["escaped", "collapsed", "collapsed"], ["optimum not eps-optimal", "collapsed", "collapsed"]])
    escape_map = SimpleNamespace(
        betas=np.array([0.01, 0.1, 1.0]), gaps=np.array([0.2, 0.1]), outcome=outcome, max_steps=1000,
        outcome_codes=np.vectorize(ESCAPE_OUTCOMES.index)(outcome),
    )
    figure = beta_escape_map_figure(escape_map)
    figure.canvas.draw()
    axes = figure.axes[0]
    cells = set().union(*(_collection_colors(collection) for collection in axes.collections))
    legend = figure.legends[0] if figure.legends else axes.get_legend()
    shown = {_rgb(handle.get_markerfacecolor()) for handle in legend.legend_handles}
    assert shown == cells
    check_words_are_drawn(caption("collapse", "fig_col_escape_map"), cells, set(), "fig_col_escape_map")


def test_patches_count_as_drawn_colours():
    from covpo.plots.base import new_figure

    figure = new_figure(4.0, 3.0)
    axes = figure.add_subplot()
    axes.bar([0, 1], [1, 2], color=COLOR_NAMES["orange"])
    assert _rgb(COLOR_NAMES["orange"]) in drawn_colors(axes)
