"""The figure and the widget of the head-to-head: every algorithm's cost to eps against the base model's coverage.

Draws :class:`~covpo.head_to_head.HeadToHead` records (:func:`covpo.head_to_head.head_to_head`).
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps

from covpo.coverage_instances import dialled_coverage_instance
from covpo.head_to_head import RESET_ALGORITHMS, Entry, HeadToHead, head_to_head
from covpo.plots.base import BookFigure, new_figure
from covpo.ppo_experiments import stacked_collapse_instance
from covpo.widgets import Explorable, Slider, explorable

MARKERS = ("o", "s", "D", "v", "^", "<", ">", "p", "h", "*", "X", "P", "d", "8")


def _style(index: int) -> tuple[tuple[float, ...], str]:
    """Colour and marker of the ``index``-th algorithm."""
    return colormaps["tab20"](index % 20), MARKERS[index % len(MARKERS)]


def _cost_points(result: HeadToHead, row: int, costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per instance: the median cost over seeds and whether every seed reached eps.

    Where some seed did not, the point is the largest cost spent (the budget, a lower bound).
    """
    reached = result.reached[row].all(axis=1)
    spent = costs[row].max(axis=1).astype(float)
    median = np.array([np.median(costs[row, j]) for j in range(result.coverages.size)], dtype=float)
    return np.where(reached, median, spent), reached


def _draw(axes, x: np.ndarray, y: np.ndarray, reached: np.ndarray, style: tuple, label: str) -> None:
    color, marker = style
    positive = y > 0
    axes.plot(x[positive], y[positive], color=color, lw=1, alpha=0.6)
    hit, miss = reached & positive, ~reached & positive
    axes.plot(x[hit], y[hit], marker=marker, ls="none", color=color, ms=6, label=label)
    axes.plot(x[miss], y[miss], marker=marker, ls="none", mfc="none", color=color, ms=9,
              label=None if hit.any() else label)


def head_to_head_figure(result: HeadToHead, title: str) -> BookFigure:
    """Responses (left) and gradient steps (right) to eps against ``C_cov``, every algorithm, log-log.

    Filled markers: the median over seeds where every seed reached eps; open markers: the
    budget spent where some seed did not (a lower bound on the cost). Left: every algorithm
    that samples (Best-of-N: responses per test prompt); exact algorithms sample nothing and
    appear on the right only. Right: every trained algorithm (exact APMD: outer iterations).
    """
    figure = new_figure(13.0, 4.6)
    responses_axes, steps_axes = figure.subplots(1, 2)
    x = result.coverages
    for row, entry in enumerate(result.entries):
        style = _style(row)
        label = f"{entry.name} (test time)" if entry.is_test_time else entry.name
        if not entry.is_exact:
            y, reached = _cost_points(result, row, result.responses_to_eps)
            _draw(responses_axes, x, y, reached, style, label)
        if not entry.is_test_time:
            y, reached = _cost_points(result, row, result.steps_to_eps)
            _draw(steps_axes, x, y, reached, style, label)
    responses_axes.set_ylabel("responses sampled to $\\varepsilon$")
    steps_axes.set_ylabel("gradient steps to $\\varepsilon$ (exact APMD: iterations)")
    for axes in (responses_axes, steps_axes):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("coverage coefficient $C_{\\mathrm{cov}}$ of $\\pi_0$")
        axes.grid(alpha=0.3, which="both")
    handles, labels = [], []
    for axes in (responses_axes, steps_axes):
        for handle, label in zip(*axes.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    figure.legend(handles, labels, loc="outside right center", fontsize=7)
    figure.suptitle(
        f"{title} ($\\varepsilon$ = {result.eps:g}, {len(result.seeds)} seeds; open: not $\\varepsilon$-optimal in budget)"
    )
    return figure


# --- the widget ------------------------------------------------------------------------------

ALGORITHM_SETS = ("every algorithm", "reset methods (APMD instances)", "fixed reference and baselines")
"""The choices of the widget's algorithm-set slider, by position."""


def algorithm_rows(result: HeadToHead, algorithm_set: int) -> list[int]:
    """Rows of ``result`` in the set at position ``algorithm_set`` of :data:`ALGORITHM_SETS`."""
    if algorithm_set == 0:
        return list(range(len(result.entries)))
    resets = [row for row, entry in enumerate(result.entries) if entry.algorithm in RESET_ALGORITHMS]
    if algorithm_set == 1:
        return resets
    return [row for row in range(len(result.entries)) if row not in resets]


def head_to_head_explorer_figure(
    results: tuple[HeadToHead, ...], family: int, algorithm_set: int, response_budget: int
) -> BookFigure:
    """Widget figure: one family's costs against ``C_cov`` and its table, for an algorithm set and a response budget.

    A thin view of :meth:`~covpo.head_to_head.HeadToHead.subset` and
    :meth:`~covpo.head_to_head.HeadToHead.within_budget`: nothing is rerun.
    """
    result = results[min(max(int(family), 0), len(results) - 1)]
    algorithm_set = min(max(int(algorithm_set), 0), len(ALGORITHM_SETS) - 1)
    view = result.subset(algorithm_rows(result, algorithm_set)).within_budget(int(response_budget))
    figure = new_figure(13.0, 4.4, constrained=False)
    figure.subplots_adjust(left=0.05, right=0.99, bottom=0.13, top=0.88, wspace=0.05)
    cost_axes, table_axes = figure.subplots(1, 2, gridspec_kw={"width_ratios": (1.0, 1.45)})
    for row, entry in enumerate(view.entries):
        if entry.is_exact:
            continue
        index = result.entry_index(entry.name)
        y, reached = _cost_points(view, row, view.responses_to_eps)
        _draw(cost_axes, view.coverages, y, reached, _style(index), entry.name)
    cost_axes.set_xscale("log")
    cost_axes.set_yscale("log")
    cost_axes.set_xlabel("$C_{\\mathrm{cov}}$ of $\\pi_0$", fontsize=8)
    cost_axes.set_ylabel("responses to $\\varepsilon$ (open: budget spent, not reached)", fontsize=8)
    cost_axes.tick_params(labelsize=7)
    cost_axes.grid(alpha=0.3)
    cost_axes.legend(fontsize=5.5, loc="upper left")
    table_axes.set_axis_off()
    table = "\n".join(view.table().splitlines()[:-1])
    table_axes.text(0.0, 1.0, table, family="monospace", fontsize=6.5, va="top", ha="left",
                    transform=table_axes.transAxes)
    figure.suptitle(
        f"{result.label}: {ALGORITHM_SETS[algorithm_set]}, budget {int(response_budget):,} responses per run",
        fontsize=9,
    )
    return figure


def head_to_head_widget(results: tuple[HeadToHead, ...]) -> Explorable:
    """Instance family, algorithm set and response budget in; the cost plot and the table out.

    ``results`` holds one :class:`~covpo.head_to_head.HeadToHead` per family, e.g.
    :func:`~covpo.head_to_head.default_head_to_head`. The static stand-in holds 18 frames.
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
    entries = (
        Entry("APMD, exact targets", "apmd_exact", 1.0, n_iterations=30),
        Entry("PPO-Lite", "ppo_lite", 1.0, 64, 5, 6, (8.0,)),
        Entry("REINFORCE", "reinforce", 0.0, 16, 1, 40, (8.0,)),
        Entry("Best-of-N", "best_of_n"),
    )
    families = (
        ("small collapse", (10.0, 40.0), lambda c: stacked_collapse_instance(1, 0.2, c, n_zero=20)),
        ("small random", (5.0, 20.0), lambda c: dialled_coverage_instance(np.random.default_rng(0), 10, 4, 3, c)),
    )
    results = tuple(
        head_to_head([build(c) for c in coverages], coverages, entries, eps=0.04, seeds=(0, 1), label=label, progress=False)
        for label, coverages, build in families
    )
    return head_to_head_widget(results)
