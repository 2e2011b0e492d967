"""One colour per kind of method or object in every figure of the book (issue 56).

The book's key (:data:`covpo.plots.style.COLOUR_KEY`) gives each kind of thing the figures
draw (the base model, REINFORCE, a weak or a strong fixed penalty, APMD and the reset methods,
the squared-loss methods, the answer classes of chapter 2, target lines) one colour. These tests
draw the package's figures and widgets that draw methods, on the small good calls of
``tests/fuzz_entry_points.py`` (and the made-up sweeps of ``tests/test_plots_captions.py``), and
check that every artist whose label names a kind of the key is drawn in the key's colour, that
a labelled series that is no method never takes the colour of a method the same figure draws,
that no two kinds share a colour unless the key groups them, and that no figure still calls
chapter 2's near miss a "distractor". Colours and labels are structure: no rounding changes
the verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from matplotlib.collections import Collection
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text

from covpo.plots.style import COLOUR_KEY, KEY_COLOUR_NAMES, METHOD_COLOURS, colour_key_markdown, method_colour, method_kind
from tests.conftest import REPOSITORY

pytestmark = pytest.mark.same_on_every_cpu


def good(name: str) -> object:
    """The result of the good call of the entry point ``name`` of ``tests/fuzz_entry_points.py``."""
    from tests.fuzz_entry_points import ENTRY_POINTS

    point = next(point for point in ENTRY_POINTS if point.name == name)
    return point.function(**point.arguments())


def _hex(colour) -> str | None:
    """``colour`` as ``#rrggbb``, ``None`` for no colour (``"none"``, a fully transparent one)."""
    if colour is None or (isinstance(colour, str) and colour.lower() == "none"):
        return None
    array = np.asarray(colour, dtype=object if isinstance(colour, str) else float)
    if not isinstance(colour, str) and array.size == 4 and float(array.ravel()[3]) == 0.0:
        return None
    return to_hex(colour if isinstance(colour, str) else tuple(array.ravel()[:3])).lower()


def artist_colour(artist) -> str | None:
    """The colour an artist shows its series in: a line's (its markers' where it has no line), a fill's."""
    if isinstance(artist, Line2D):
        if artist.get_linestyle() in ("None", "none", "") and _hex(artist.get_markeredgecolor()) is not None:
            face = _hex(artist.get_markerfacecolor())
            return face if face not in (None, "#ffffff") else _hex(artist.get_markeredgecolor())
        return _hex(artist.get_color())
    if isinstance(artist, Collection):
        faces = artist.get_facecolors()
        colours = faces if len(faces) else artist.get_edgecolors()
        return _hex(tuple(colours[0])) if len(colours) else None
    if isinstance(artist, Patch):
        return _hex(artist.get_facecolor())
    return None


def labelled_artists(figure) -> Iterator[tuple[str, object]]:
    """Every labelled line, collection and patch of ``figure``, and every legend entry with its handle."""
    for axes in figure.get_axes():
        for artist in [*axes.get_lines(), *axes.collections, *axes.patches]:
            label = artist.get_label()
            if label and not label.startswith("_"):
                yield label, artist
        legend = axes.get_legend()
        if legend is not None:
            yield from zip((text.get_text() for text in legend.get_texts()), legend.legend_handles)
    for subfigure in [figure, *figure.subfigs]:
        for legend in subfigure.legends:
            yield from zip((text.get_text() for text in legend.get_texts()), legend.legend_handles)


def figure_texts(figure) -> list[str]:
    """Every piece of text ``figure`` shows: titles, labels, ticks, legends, annotations."""
    figure.canvas.draw()
    return [text.get_text() for text in figure.findobj(Text)]


def key_violations(figure) -> list[str]:
    """Labelled series drawn in another colour than the key gives their kind, and other series in a method's colour."""
    found, method_colours, others = [], set(), []
    for label, artist in labelled_artists(figure):
        colour = artist_colour(artist)
        if colour is None:
            continue
        kind = method_kind(label)
        if kind is None:
            others.append((label, colour))
            continue
        expected = method_colour(kind).lower()
        if colour != expected:
            found.append(f"{label!r} is drawn {colour}, the key's {kind!r} is {expected}")
        if expected in {c.lower() for c in METHOD_COLOURS}:
            method_colours.add(expected)
    found += [f"{label!r}, no method, is drawn in a method's colour {colour}"
              for label, colour in others if colour in method_colours]
    return found


def _cost_sweeps():
    from covpo.plots.ppo import cost_sweeps_figure
    from tests.test_plots_captions import fake_sweeps

    return cost_sweeps_figure(fake_sweeps(missed=True), "test")


def _collapse_run():
    from covpo.plots.collapse import collapse_run_figure

    return collapse_run_figure(good("experiments.collapse.exact_collapse_run"), "test")


def _figure_1a():
    from covpo.plots.collapse import figure_1a_simplex

    return figure_1a_simplex(good("experiments.collapse.figure_1a_data"))


def _landscape():
    from covpo.plots.collapse import figure_2bc_landscape

    return figure_2bc_landscape(good("experiments.collapse.figure_2bc_data"))


def _seed_sweep():
    from covpo.plots.collapse import seed_sweep_figure

    return seed_sweep_figure(good("experiments.collapse.sampled_reinforce_over_seeds"),
                             good("experiments.collapse.exact_collapse_run"), "test")


def _steps_along_knob():
    from covpo.plots.collapse import steps_along_knob_figure

    sweep = good("experiments.collapse.steps_to_eps_sweep")
    return steps_along_knob_figure(sweep, sweep)


def _figure_1():
    from covpo.plots.mirror_descent import figure_1

    return figure_1(good("experiments.collapse.figure_1_data"))


def _figure_3():
    from covpo.plots.mirror_descent import figure_3

    return figure_3(good("experiments.collapse.figure_3_data"))


def _baseline_bias():
    from covpo.plots.squared_loss import baseline_bias_figure

    return baseline_bias_figure(good("experiments.squared_loss.baselines.baseline_bias_sweep"))


def _sequences():
    from covpo.plots.beyond import sequence_figure

    return sequence_figure(good("labs.sequences.sequence_experiment"))


def _collapse_widget():
    from covpo.plots.collapse import collapse_explorer_figure

    return collapse_explorer_figure(gap=0.3, beta=0.0, eta=4.0, budget=1_000)


def _apmd_widget():
    from covpo.plots.mirror_descent import apmd_explorer_figure

    return apmd_explorer_figure(beta=0.5, inner_steps=8, eta=4.0, budget=3_000)


def _ppo_widget():
    from covpo.plots.ppo import ppo_explorer_figure

    return ppo_explorer_figure(beta=1.0, width=1.0, inner_steps=2, batch_size=16)


def _squared_loss_widget():
    from covpo.plots.squared_loss import squared_loss_explorer_figure

    return squared_loss_explorer_figure(beta=1.0, group_size=8, batch_size=32)


def _best_of_n_widget():
    from covpo.plots.setting import best_of_n_explorer_figure

    return best_of_n_explorer_figure(coverage=0.05, n=20, delta=0.05)


#: The figures and widgets that draw methods or the answer classes, each on a small good call.
FIGURES: dict[str, Callable[[], object]] = {
    "ppo.cost_sweeps_figure": _cost_sweeps,
    "ppo.ppo_explorer_figure": _ppo_widget,
    "beyond.sequence_figure": _sequences,
    "collapse.collapse_run_figure": _collapse_run,
    "collapse.figure_1a_simplex": _figure_1a,
    "collapse.figure_2bc_landscape": _landscape,
    "collapse.seed_sweep_figure": _seed_sweep,
    "collapse.steps_along_knob_figure": _steps_along_knob,
    "collapse.collapse_explorer_figure": _collapse_widget,
    "mirror_descent.figure_1": _figure_1,
    "mirror_descent.figure_3": _figure_3,
    "mirror_descent.apmd_explorer_figure": _apmd_widget,
    "squared_loss.baseline_bias_figure": _baseline_bias,
    "squared_loss.squared_loss_explorer_figure": _squared_loss_widget,
    "setting.best_of_n_explorer_figure": _best_of_n_widget,
}


@pytest.mark.parametrize("name", FIGURES)
def test_every_method_is_drawn_in_the_key_colour_and_no_distractor_is_left(name):
    figure = FIGURES[name]()
    assert not key_violations(figure), name
    assert not [text for text in figure_texts(figure) if "distractor" in text.lower()], name


def test_the_arms_of_the_transformer_chapter_take_their_kinds_colours():
    from covpo.labs.transformer import ARM_NAMES
    from covpo.plots.transformer import KEY_ARMS, MIRROR_DESCENT_STYLE, arm_style

    for arm in ARM_NAMES:
        kind = method_kind(arm)
        colour = arm_style(arm)["color"]
        if kind is not None:
            assert colour == method_colour(kind), arm
        else:
            assert colour not in METHOD_COLOURS, arm
    drawn = [arm_style(arm) for arm in KEY_ARMS]
    assert len({(style["color"], style["marker"], style["linestyle"]) for style in drawn}) == len(drawn)
    assert MIRROR_DESCENT_STYLE["color"] == method_colour("APMD")


def test_no_two_kinds_share_a_colour_unless_the_key_groups_them():
    by_colour: dict[str, set[str]] = {}
    for entry in COLOUR_KEY:
        by_colour.setdefault(entry.colour.lower(), set()).add(entry.family)
    assert all(len(families) == 1 for families in by_colour.values()), by_colour
    families: dict[str, set[tuple[str, str]]] = {}
    for entry in COLOUR_KEY:
        families.setdefault(entry.family, set()).add((entry.marker, entry.linestyle))
    # within a family, the kinds differ by marker or line style
    assert sum(len(styles) for styles in families.values()) == len(COLOUR_KEY)
    assert all(entry.colour in KEY_COLOUR_NAMES.values() for entry in COLOUR_KEY)


def test_the_key_names_the_methods_of_the_figures():
    assert method_kind("PPO-NoClip") == "PPO-NoClip"
    assert method_kind("KimiPO-Norm") == "KimiPO-Norm" and method_kind("KimiPO") == "KimiPO"
    assert method_kind("GRPO, fixed ref., no KL") == "GRPO, fixed reference"
    assert method_kind("GRPO, resets") == "GRPO with resets"
    assert method_kind("REINFORCE, KL to $\\pi_0$") == "REINFORCE"
    assert method_kind("base coverage") is None and method_kind("seed 3") is None
    with pytest.raises(ValueError, match="kind"):
        method_colour("no such kind")


def test_the_check_catches_a_method_in_another_colour():
    from covpo.plots.base import new_figure

    figure = new_figure(4.0, 3.0)
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], color=method_colour("PPO-Lite"), label="APMD, beta = 1")
    axes.plot([0, 1], [1, 0], color=method_colour("APMD"), label="seed 0")
    assert len(key_violations(figure)) == 2


def test_the_notation_page_shows_the_key():
    page = (REPOSITORY / "book" / "notation.md").read_text()
    assert colour_key_markdown() in page


def test_the_pass_at_k_lines_measure_the_prompts_the_markers_were_sampled_on():
    from types import SimpleNamespace

    from covpo.labs.transformer import TransformerStudy
    from covpo.plots.transformer import sampled_prompt_pass_curve

    generator = np.random.default_rng(0)
    runs, steps, prompts = 3, 4, 10
    study = SimpleNamespace(
        log_coverage=np.log(generator.uniform(1e-3, 1.0, (runs, steps, prompts))),
        held_log_coverage=np.log(generator.uniform(1e-3, 1.0, (runs, steps, prompts))),
        train_hard=np.tile(np.arange(prompts) % 2 == 0, (runs, 1)),
        held_hard=np.tile(np.arange(prompts) < 3, (runs, 1)),
        # three held-out rows (all real), then the first two hard training prompts
        sampled_held=np.tile(np.arange(5) < 3, (runs, 1)), sampled_valid=np.ones((runs, 5), dtype=bool),
    )
    study._mask = lambda which: TransformerStudy._mask(study, which)
    ks, chosen = np.array([1, 4, 64]), np.arange(runs)
    # held out: every hard prompt was sampled, so the line is the exact curve of the chapter
    assert np.allclose(sampled_prompt_pass_curve(study, chosen, ks, "held-out"),
                       TransformerStudy.exact_pass_curve(study, chosen, ks, "held-out"))
    # training: only the first two of the five hard prompts were sampled
    exact = 1.0 - (1.0 - np.exp(study.log_coverage[:, -1, [0, 2]]))[..., None] ** ks
    assert np.allclose(sampled_prompt_pass_curve(study, chosen, ks, "training"), exact.mean(axis=1))
    assert not np.allclose(sampled_prompt_pass_curve(study, chosen, ks, "training"),
                           TransformerStudy.exact_pass_curve(study, chosen, ks, "training"))
