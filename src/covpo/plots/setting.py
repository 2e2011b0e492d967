"""Figures and the widget of chapter 1, the setting (paper sections 1.2, 1.3, 2.2)."""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory

from covpo.algorithms.best_of_n import (
    best_of_n_samples_bound,
    best_of_n_samples_needed,
    best_of_n_success,
)
from covpo.experiments.setting import BestOfNCurves
from covpo.instances import BanditInstance
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, PALETTE, method_colour, series_style
from covpo.policies import log_coverage
from covpo.plots.widgets import Explorable, Slider, explorable
from covpo.validation import check_count, check_probability

#: The optimal responses' and the others' colours, the answer classes' of the book's key
#: (:data:`~covpo.plots.style.COLOUR_KEY`): teal and light grey.
OPTIMAL_COLOR = method_colour("optimal answer")
OTHER_COLOR = method_colour("zero-reward block")
#: The widget's smallest sufficient ``n`` and its bound (the figure draws no method in these colours).
NEEDED_COLOR = PALETTE[1]
BOUND_COLOR = PALETTE[2]


def best_of_n_figure(curves: BestOfNCurves) -> BookFigure:
    """Best-of-N success against ``n``: exact curves and sampled points with two-sigma bars."""
    figure = new_figure(COLUMN_WIDTH, 3.4)
    axes = figure.add_subplot()
    n_grid = np.unique(np.geomspace(1, curves.ns.max(), 200).astype(int))
    for index, (coverage, sampled, error) in enumerate(zip(curves.coverages, curves.sampled, curves.standard_error)):
        style = series_style(index)
        axes.plot(n_grid, best_of_n_success(np.log(coverage), n_grid), color=style["color"], label=f"$c_0 = {coverage:g}$")
        axes.errorbar(
            curves.ns, sampled, yerr=2 * error, fmt=style["marker"], color=style["color"], ms=4, capsize=2
        )
    handles, labels = axes.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.3", marker="o", ls="none", ms=4))
    labels.append(f"sampled ({curves.trials} trials)")
    axes.set_xscale("log")
    axes.set_xlabel("responses drawn from the base model, $n$")
    axes.set_ylabel("P(an optimal one among them)")
    axes.legend(handles, labels, loc="lower right")
    axes.grid(alpha=0.3)
    return figure


def policy_figure(instance: BanditInstance, log_probs: np.ndarray, title: str) -> BookFigure:
    """Bar chart of ``pi(y|x)``, one group of bars per prompt, optimal responses highlighted.

    The groups share one axes; above each group, its prompt and the coverage there.
    """
    coverage = np.exp(log_coverage(instance, log_probs))
    figure = new_figure(COLUMN_WIDTH, 3.0)
    axes = figure.add_subplot()
    responses = np.arange(instance.n_responses)
    stride = instance.n_responses + 1
    label_at = blended_transform_factory(axes.transData, axes.transAxes)
    for x in range(instance.n_prompts):
        positions = x * stride + responses
        colors = np.where(instance.optimal_mask[x], OPTIMAL_COLOR, OTHER_COLOR)
        axes.bar(positions, np.exp(log_probs[x]), color=colors)
        axes.text(
            positions.mean(), 1.0, f"prompt {x}\ncoverage {coverage[x]:.3f}",
            transform=label_at, ha="center", va="bottom",
        )
    ticks = (np.arange(instance.n_prompts)[:, None] * stride + responses).ravel()
    axes.set_xticks(ticks, np.tile(responses, instance.n_prompts))
    axes.set_xlim(-0.7, ticks.max() + 0.7)
    axes.set_xlabel("response $y$, grouped by prompt $x$")
    axes.set_ylabel(r"$\pi(y \mid x)$")
    figure.suptitle(title)
    return figure


def best_of_n_explorer_figure(coverage: float, n: int, delta: float) -> BookFigure:
    """Widget figure: success against ``n`` at one coverage, the chosen ``n`` and the target ``1 - delta``."""
    coverage = check_probability("coverage", coverage)
    n = check_count("n", n)
    delta = check_probability("delta", delta)
    log_c = np.log(coverage)
    needed = int(best_of_n_samples_needed(log_c, delta))
    bound = float(best_of_n_samples_bound(log_c, delta))
    n_max = max(2 * n, 2 * needed, 10)
    n_grid = np.unique(np.geomspace(1, n_max, 300).astype(int))
    success = float(best_of_n_success(log_c, n))
    figure = new_figure(COLUMN_WIDTH, 3.2, constrained=False)
    figure.subplots_adjust(left=0.085, right=0.64, bottom=0.15, top=0.9)
    axes = figure.add_subplot()
    axes.plot(n_grid, best_of_n_success(log_c, n_grid), color=method_colour("Best-of-N"), label=r"$1-(1-c_0)^n$")
    axes.axhline(1 - delta, color="0.4", ls="--", lw=1, label=rf"target $1-\delta$ = {1 - delta:.3g}")
    axes.axvline(needed, color=NEEDED_COLOR, ls=":", lw=1.6, label=f"smallest sufficient $n$ = {needed}")
    axes.axvline(bound, color=BOUND_COLOR, ls="-.", lw=1, label=rf"bound $\log(1/\delta)/c_0$ = {bound:.0f}")
    axes.plot([n], [success], "o", color="k", label=f"$n$ = {n}: success {success:.3f}")
    axes.set_xscale("log")
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("$n$")
    axes.set_ylabel("success probability")
    axes.set_title(f"coverage $c_0$ = {coverage:.3g}")
    axes.grid(alpha=0.3)
    figure.legend(loc="center left", bbox_to_anchor=(0.655, 0.5), frameon=False)
    return figure


def best_of_n_widget() -> Explorable:
    """Coverage, ``n`` and ``delta`` in; the Best-of-N success curve and sample size out."""
    sliders = [
        Slider("coverage", "coverage c0", 1e-4, 0.9, 0.05, (0.001, 0.01, 0.05, 0.2, 0.5), log=True),
        Slider("n", "n", 1, 2000, 20, (5, 20, 100, 500), integer=True, log=False),
        Slider("delta", "δ", 0.001, 0.5, 0.05, (0.05,), step=0.001),
    ]
    return explorable(best_of_n_explorer_figure, sliders, "Best-of-N from the base model")
