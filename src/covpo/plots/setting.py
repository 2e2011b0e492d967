"""Figures and the widget of chapter 1, the setting (paper sections 1.2, 1.3, 2.2)."""

from __future__ import annotations

import numpy as np

from covpo.best_of_n import (
    BestOfNCurves,
    best_of_n_samples_bound,
    best_of_n_samples_needed,
    best_of_n_success,
)
from covpo.instances import BanditInstance
from covpo.plots.base import BookFigure, new_figure
from covpo.policies import log_coverage
from covpo.widgets import Explorable, Slider, explorable

OPTIMAL_COLOR = "#1b9e77"
OTHER_COLOR = "#bbbbbb"


def best_of_n_figure(curves: BestOfNCurves) -> BookFigure:
    """Best-of-N success against ``N``: exact curves and sampled points with two-sigma bars."""
    figure = new_figure(6.4, 3.8)
    axes = figure.add_subplot()
    n_grid = np.unique(np.geomspace(1, curves.ns.max(), 200).astype(int))
    for coverage, sampled, error in zip(curves.coverages, curves.sampled, curves.standard_error):
        line = axes.plot(n_grid, best_of_n_success(np.log(coverage), n_grid), label=f"$c_0 = {coverage:g}$")[0]
        axes.errorbar(curves.ns, sampled, yerr=2 * error, fmt="o", color=line.get_color(), ms=4, capsize=2)
    axes.set_xscale("log")
    axes.set_xlabel("responses drawn from the base model, $N$")
    axes.set_ylabel("P(an optimal response among them)")
    axes.set_title(f"Best-of-N: exact curves, sampled points ({curves.trials} trials each)")
    axes.legend(loc="lower right")
    axes.grid(alpha=0.3)
    return figure


def policy_figure(instance: BanditInstance, log_probs: np.ndarray, title: str) -> BookFigure:
    """Bar chart of ``pi(y|x)`` for each prompt, optimal responses highlighted, coverage in the title."""
    coverage = np.exp(log_coverage(instance, log_probs))
    figure = new_figure(2.4 * instance.n_prompts + 0.6, 2.8)
    axes = figure.subplots(1, instance.n_prompts, sharey=True, squeeze=False)[0]
    responses = np.arange(instance.n_responses)
    for x, ax in enumerate(axes):
        colors = np.where(instance.optimal_mask[x], OPTIMAL_COLOR, OTHER_COLOR)
        ax.bar(responses, np.exp(log_probs[x]), color=colors)
        ax.set_title(f"prompt {x}: coverage {coverage[x]:.3f}", fontsize=9)
        ax.set_xlabel("response $y$")
        ax.set_xticks(responses)
    axes[0].set_ylabel(r"$\pi(y \mid x)$")
    figure.suptitle(title)
    return figure


def best_of_n_explorer_figure(coverage: float, n: int, delta: float) -> BookFigure:
    """Widget figure: success against ``N`` at one coverage, the chosen ``N`` and the target ``1 - delta``."""
    log_c = np.log(coverage)
    needed = int(best_of_n_samples_needed(log_c, delta))
    bound = float(best_of_n_samples_bound(log_c, delta))
    n_max = max(2 * n, 2 * needed, 10)
    n_grid = np.unique(np.geomspace(1, n_max, 300).astype(int))
    success = float(best_of_n_success(log_c, n))
    figure = new_figure(6.4, 3.6)
    axes = figure.add_subplot()
    axes.plot(n_grid, best_of_n_success(log_c, n_grid), color="C0", label=r"$1-(1-c_0)^N$")
    axes.axhline(1 - delta, color="C3", ls="--", lw=1, label=rf"target $1-\delta = {1 - delta:.3g}$")
    axes.axvline(needed, color="C3", ls=":", lw=1, label=f"smallest sufficient N = {needed}")
    axes.axvline(bound, color="C2", ls=":", lw=1, label=rf"bound $\log(1/\delta)/c_0$ = {bound:.0f}")
    axes.plot([n], [success], "o", color="k", label=f"N = {n}: success {success:.3f}")
    axes.set_xscale("log")
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("$N$")
    axes.set_ylabel("success probability")
    axes.set_title(f"coverage $c_0 = {coverage:.3g}$")
    axes.legend(loc="lower right", fontsize=8)
    axes.grid(alpha=0.3)
    return figure


def best_of_n_widget() -> Explorable:
    """Coverage, ``N`` and ``delta`` in; the Best-of-N success curve and sample size out."""
    sliders = [
        Slider("coverage", "coverage c0", 1e-4, 0.9, 0.05, (0.001, 0.01, 0.05, 0.2, 0.5), log=True),
        Slider("n", "N", 1, 2000, 20, (5, 20, 100, 500), integer=True, log=False),
        Slider("delta", "delta", 0.001, 0.5, 0.05, (0.05,), step=0.001),
    ]
    return explorable(best_of_n_explorer_figure, sliders, "Best-of-N from the base model")
