"""The figure and the widget of the head-to-head: every algorithm's cost to eps against the base model's coverage.

Draws :class:`~covpo.experiments.implications.head_to_head.HeadToHead` records (:func:`covpo.experiments.implications.head_to_head.head_to_head`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from covpo.coverage_instances import dialled_coverage_instance
from covpo.experiments.implications.head_to_head import HeadToHead, head_to_head, is_exact, is_test_time
from covpo.experiments.sweeps import Method
from covpo.families import stacked_collapse_instance
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, LINESTYLES, MARKERS, free_series_colours, method_colour, method_kind
from covpo.validation import check_count, check_instance
from covpo.plots.widgets import Explorable, Slider, explorable

MARKER_SIZE = 6
DODGE = 1.05
"""Factor between neighbouring series' x positions in the widget's figure."""
GROUP_SPREAD = 2.0
"""Factor between the x positions of a group's first and last series in :func:`head_to_head_figure`.

The coverages are a factor of four or more apart, so neighbouring clusters never meet."""
LEGEND_RATIOS = (1.0, 1.0, 0.85)
"""Widths of a row's two panels and its legend column in :func:`head_to_head_figure` (the same in every row,
so the panels line up down the figure)."""
ROW_HEIGHT = 1.35
"""Height in inches of one group's row of :func:`head_to_head_figure` (three rows fit the first screen of chapter 6 under its summary)."""

ALGORITHM_GROUPS = (
    "fixed reference or none",
    "reference resets",
    "coverage-governed baselines",
)
"""The three groups of the head-to-head figure, one row of panels each."""

def algorithm_group(method: Method) -> int:
    """Position in :data:`ALGORITHM_GROUPS` of ``method``'s group, from the registry's record.

    Resets: its ``resets``; the coverage-governed baselines (Best-of-N, SFT on filtered samples)
    are the methods that sample from the base model only (``on_policy`` false).
    """
    if method.definition.resets:
        return 1
    if not method.definition.on_policy:
        return 2
    return 0


def method_styles(result: HeadToHead) -> list[dict[str, str]]:
    """Colour, marker and line style per method of ``result``: the book's colour, a marker of its own within its group.

    Each method takes the colour of its kind in the book's key
    (:func:`~covpo.plots.style.method_kind`, :func:`~covpo.plots.style.method_colour`), so a
    group's methods of one family (REINFORCE with and without a penalty; the reset methods
    APMD, NPG and PPO-NoClip) share a colour; within a group every method has a marker of its
    own, and the groups differ by line style and marker set, so that the widget, which draws
    several groups on one panel, still tells every method apart.
    """
    kinds = [method_kind(method.label) for method in result.methods]
    free = iter(free_series_colours(sum(kind is None for kind in kinds)))
    positions = [0] * len(ALGORITHM_GROUPS)
    styles = []
    for method, kind in zip(result.methods, kinds):
        group = algorithm_group(method)
        position = positions[group]
        positions[group] += 1
        styles.append({
            "color": method_colour(kind) if kind is not None else next(free),
            "marker": MARKERS[(position + 4 * group) % len(MARKERS)],
            "linestyle": LINESTYLES[group % len(LINESTYLES)],
        })
    return styles


def _cost_points(result: HeadToHead, row: int, costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per instance: the median cost over seeds and whether every seed reached eps.

    Where some seed did not, the point is the largest cost spent (the budget, a lower bound).
    """
    reached = result.reached[row].all(axis=1)
    spent = costs[row].max(axis=1).astype(float)
    median = np.array([np.median(costs[row, j]) for j in range(result.coverages.size)], dtype=float)
    return np.where(reached, median, spent), reached


def _draw(axes, x: np.ndarray, y: np.ndarray, reached: np.ndarray, style: dict, label: str) -> None:
    color, marker = style["color"], style["marker"]
    positive = y > 0
    axes.plot(x[positive], y[positive], color=color, ls=style["linestyle"], lw=1.2, alpha=0.8)
    hit, miss = reached & positive, ~reached & positive
    axes.plot(x[hit], y[hit], marker=marker, ls="none", color=color, ms=MARKER_SIZE,
              label=label if hit.any() else None)
    axes.plot(x[miss], y[miss], marker=marker, ls="none", mfc="white", mew=1.5, color=color,
              ms=MARKER_SIZE + 2, label=None if hit.any() else label)


def _label(method: Method) -> str:
    return f"{method.label} (test time)" if is_test_time(method) else method.label


def head_to_head_figure(result: HeadToHead, title: str) -> BookFigure:
    """Responses (left) and gradient steps (right) to eps against ``C_cov``, log-log, one row per algorithm group.

    The rows are the groups of :data:`ALGORITHM_GROUPS` (fixed reference or none, resets,
    coverage-governed baselines), each with its legend in a column of its own to its right, so each pair of panels
    compares one group's costs. Every series has its method's colour in the book's key and,
    within its group, a marker of its own (:func:`method_styles`), and the series are spread along ``C_cov`` over a
    factor of :data:`GROUP_SPREAD`, so that equal costs stay visible side by side; every
    column shares its axes across the rows. Filled markers: the median over seeds where every
    seed reached eps; open markers: the budget spent where some seed did not (a lower bound on
    the cost). Left: every algorithm that samples (Best-of-N: responses per test prompt); exact
    algorithms sample nothing and appear on the right only. Right: every trained algorithm
    (exact APMD: outer iterations).
    """
    groups = [g for g in range(len(ALGORITHM_GROUPS))
              if any(algorithm_group(method) == g for method in result.methods)]
    styles = method_styles(result)
    figure = new_figure(COLUMN_WIDTH, 0.45 + ROW_HEIGHT * len(groups))
    rows = figure.subfigures(len(groups), 1, squeeze=False)[:, 0]
    first = None
    x = result.coverages
    for subfigure, group in zip(rows, groups):
        responses_axes, steps_axes, legend_axes = subfigure.subplots(1, 3, width_ratios=LEGEND_RATIOS)
        legend_axes.set_axis_off()
        if first is None:
            first = (responses_axes, steps_axes)
        else:
            responses_axes.sharex(first[0])
            responses_axes.sharey(first[0])
            steps_axes.sharex(first[1])
            steps_axes.sharey(first[1])
        members = [row for row, method in enumerate(result.methods) if algorithm_group(method) == group]
        step = GROUP_SPREAD ** (1 / max(len(members) - 1, 1))
        for position, row in enumerate(members):
            method = result.methods[row]
            style = styles[row]
            shifted = x * step ** (position - (len(members) - 1) / 2)
            if not is_exact(method):
                y, reached = _cost_points(result, row, result.responses_to_eps)
                _draw(responses_axes, shifted, y, reached, style, _label(method))
            if not is_test_time(method):
                y, reached = _cost_points(result, row, result.steps_to_eps)
                _draw(steps_axes, shifted, y, reached, style, _label(method))
        responses_axes.set_ylabel("responses to $\\varepsilon$")
        steps_axes.set_ylabel("gradient steps to $\\varepsilon$")
        for axes in (responses_axes, steps_axes):
            axes.set_xscale("log")
            axes.set_yscale("log")
            axes.set_xticks(x, [f"{value:g}" for value in x])
            axes.minorticks_off()
            axes.grid(alpha=0.3, which="major")
        handles, labels = [], []
        for axes in (responses_axes, steps_axes):
            for handle, label in zip(*axes.get_legend_handles_labels()):
                if label not in labels:
                    handles.append(handle)
                    labels.append(label)
        subfigure.suptitle(ALGORITHM_GROUPS[group], x=0.02, ha="left", fontsize="medium", fontweight="bold")
        legend_axes.legend(handles, labels, loc="center left", ncols=1, frameon=False, borderaxespad=0.0,
                           handletextpad=0.3, labelspacing=0.35, fontsize="small")
    for axes in first:
        axes.set_xlabel("")
    for axes in rows[-1].axes[:2]:
        axes.set_xlabel("$C_{\\mathrm{cov}}$ of $\\pi_0$")
    figure.suptitle(f"{title}: $\\varepsilon$ = {result.eps:g}, {len(result.seeds)} seeds")
    return figure


# --- the widget ------------------------------------------------------------------------------

ALGORITHM_SETS = ("every algorithm", "reset methods (APMD instances)", "fixed reference and baselines")
"""The choices of the widget's algorithm-set slider, by position."""


def algorithm_rows(result: HeadToHead, algorithm_set: int) -> list[int]:
    """Rows of ``result`` in the set at position ``algorithm_set`` of :data:`ALGORITHM_SETS`."""
    if algorithm_set == 0:
        return list(range(len(result.methods)))
    resets = [row for row, method in enumerate(result.methods) if method.definition.resets]
    if algorithm_set == 1:
        return resets
    return [row for row in range(len(result.methods)) if row not in resets]


def head_to_head_explorer_figure(
    results: tuple[HeadToHead, ...], family: int, algorithm_set: int, response_budget: int
) -> BookFigure:
    """Widget figure: one family's responses to eps against ``C_cov``, for an algorithm set and a response budget.

    A thin view of :meth:`~covpo.experiments.implications.head_to_head.HeadToHead.subset` and
    :meth:`~covpo.experiments.implications.head_to_head.HeadToHead.within_budget`: nothing is rerun. Each algorithm
    keeps the colour and marker it has in :func:`head_to_head_figure`, and the series are spread
    a little along ``C_cov`` as there; the legend is on the right.
    """
    if isinstance(results, HeadToHead) or not isinstance(results, Sequence) or not results:
        raise ValueError(f"results must be a non-empty sequence of HeadToHead records, got {results!r}")
    for result in results:
        check_instance("results", result, HeadToHead)
    result = results[min(check_count("family", family, minimum=0), len(results) - 1)]
    algorithm_set = min(check_count("algorithm_set", algorithm_set, minimum=0), len(ALGORITHM_SETS) - 1)
    response_budget = check_count("response_budget", response_budget)
    view = result.subset(algorithm_rows(result, algorithm_set)).within_budget(response_budget)
    styles = method_styles(result)
    figure = new_figure(COLUMN_WIDTH, 4.2, constrained=False)
    figure.subplots_adjust(left=0.1, right=0.6, bottom=0.13, top=0.86)
    cost_axes = figure.subplots()
    sampling = [row for row, method in enumerate(view.methods) if not is_exact(method)]
    for position, row in enumerate(sampling):
        method = view.methods[row]
        index = result.method_index(method.label)
        shifted = view.coverages * DODGE ** (position - (len(sampling) - 1) / 2)
        y, reached = _cost_points(view, row, view.responses_to_eps)
        _draw(cost_axes, shifted, y, reached, styles[index], _label(method))
    cost_axes.set_xscale("log")
    cost_axes.set_yscale("log")
    cost_axes.set_xlabel("$C_{\\mathrm{cov}}$ of $\\pi_0$")
    cost_axes.set_ylabel("responses to $\\varepsilon$")
    cost_axes.grid(alpha=0.3)
    handles, labels = cost_axes.get_legend_handles_labels()
    figure.legend(handles, labels, loc="center left", bbox_to_anchor=(0.62, 0.5), frameon=False,
                  title="open: budget spent,\nnot reached", alignment="left")
    figure.suptitle(
        f"{result.label}\n{ALGORITHM_SETS[algorithm_set]}, budget {int(response_budget):,} responses per run",
        x=0.02, ha="left",
    )
    return figure


def head_to_head_widget(results: tuple[HeadToHead, ...]) -> Explorable:
    """Instance family, algorithm set and response budget in; the cost plot out.

    ``results`` holds one :class:`~covpo.experiments.implications.head_to_head.HeadToHead` per family, e.g.
    :func:`~covpo.experiments.implications.head_to_head.default_head_to_head`. The static stand-in holds 18 frames.
    """
    results = tuple(results)
    largest = max(int(result.responses_to_eps.max()) for result in results)
    budgets = sorted({min(800, largest), min(3200, largest), largest})
    sliders = [
        Slider("family", "family", 0, len(results) - 1, 0, tuple(range(len(results))), integer=True,
               choices=tuple(result.label for result in results)),
        Slider("algorithm_set", "algorithms", 0, len(ALGORITHM_SETS) - 1, 0, tuple(range(len(ALGORITHM_SETS))),
               integer=True, choices=tuple(ALGORITHM_SETS)),
        Slider("response_budget", "response budget", 100, largest, largest, tuple(budgets), integer=True, log=True),
    ]

    def figure_function(family: int, algorithm_set: int, response_budget: int) -> BookFigure:
        return head_to_head_explorer_figure(results, family, algorithm_set, response_budget)

    return explorable(figure_function, sliders, "Head-to-head: every algorithm on one suite")


def small_head_to_head_widget() -> Explorable:
    """:func:`head_to_head_widget` over a small suite that runs in a few seconds.

    Two families of two instances each, four algorithms (exact APMD, PPO-Lite, REINFORCE,
    Best-of-N) and two seeds: one-prompt collapse instances (20 zero-reward responses,
    ``C_cov`` 10 and 40) and random instances (10 prompts, 4 responses, ``d = 3``, ``C_cov`` 5
    and 20, seed 0). For trying the widget without the book-size head-to-head.
    """
    methods = (
        Method("APMD, exact targets", "apmd_exact", {"beta": 1.0, "n_iterations": 30}),
        Method("PPO-Lite", "ppo_lite", {"beta": 1.0, "batch_size": 64, "inner_steps": 5, "n_iterations": 6}, (8.0,)),
        Method("REINFORCE", "reinforce", {"batch_size": 16, "n_iterations": 40}, (8.0,)),
        Method("Best-of-N", "best_of_n", {"delta": 0.04}),
    )
    families = (
        ("small collapse", (10.0, 40.0), lambda c: stacked_collapse_instance(1, 0.2, c, n_zero=20)),
        ("small random", (5.0, 20.0), lambda c: dialled_coverage_instance(np.random.default_rng(0), 10, 4, 3, c)),
    )
    results = tuple(
        head_to_head([build(c) for c in coverages], coverages, methods, eps=0.04, seeds=(0, 1), label=label, progress=False)
        for label, coverages, build in families
    )
    return head_to_head_widget(results)
