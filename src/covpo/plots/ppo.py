"""Figures and the widget of chapter 4, PPO and GRPO with reference resets (paper sections 3.2, 3.3; appendices G, H).

Each figure draws one record of :mod:`covpo.experiments.ppo` or :mod:`covpo.experiments.sweeps`: the importance weights per outer
iteration (:func:`ratio_spread_figure`) and against ``beta`` (:func:`ratio_bounds_figure`), the
clip activity grid (:func:`clip_activity_figure`), the spread of the batch estimates
(:func:`estimator_spread_figure`), the costs against coverage (:func:`cost_sweep_figure`, over seeds
:func:`cost_sweeps_figure`) and
the recipes under one budget (:func:`recipes_figure`); then the widget.

Every figure is the content column's width (:data:`~covpo.plots.style.COLUMN_WIDTH`) with at
most two panels side by side; more panels stack in rows, and legends sit under the panels or in
a free cell. The numbers behind each figure are the records' ``table`` methods
(:mod:`covpo.table`), shown in the page next to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import (
    FixedLocator,
    FormatStrFormatter,
    MaxNLocator,
    NullFormatter,
)

from covpo.instances import BanditInstance
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, label_styles, method_kind, method_style, series_style
from covpo.policies import base_log_policy, log_coverage
from covpo import run
from covpo.algorithms.ppo_lite import clip_width_thresholds
from covpo.algorithms.ratios import RatioRecorder
from covpo.experiments.ppo import (
    ClipActivity,
    EstimatorSpread,
    RatioBoundsTable,
    RatioSpread,
)
from covpo.experiments.sweeps import CostSweep, RecipeComparison, SeededCostSweep
from covpo.families import stacked_collapse_instance
from covpo.trajectory import LOG10_E
from covpo.plots.widgets import Explorable, Slider, explorable
from covpo.validation import check_count, check_positive

#: Colour, marker and line style of chapter 4's five methods, the book's key's
#: (:data:`~covpo.plots.style.COLOUR_KEY`).
METHOD_STYLES = {
    label: tuple(method_style(method_kind(label)).values())
    for label in ("PPO-NoClip", "PPO-Lite", "GRPO, resets", "GRPO, fixed ref., no KL", "REINFORCE")
}
NOCLIP_COLOR, LITE_COLOR = METHOD_STYLES["PPO-NoClip"][0], METHOD_STYLES["PPO-Lite"][0]
#: The weights on the reused batch and the widget's clipped share, in greys that no method of
#: the key takes.
BATCH_COLOR, CLIP_COLOR = "0.45", "0.7"


def _interval_lines(axes, low: float, high: float, label: str = "$[e^{-R/\\beta}, e^{R/\\beta}]$") -> None:
    axes.axhline(high, color="k", ls="--", lw=1, label=label)
    axes.axhline(low, color="k", ls="--", lw=1)


def _legend_below(figure: BookFigure, handles: list, ncols: int) -> None:
    """One legend for the whole figure, under its panels."""
    figure.legend(handles=handles, loc="outside lower center", ncols=ncols, frameon=False,
                  columnspacing=1.2, handlelength=2.2)


def _panel_grid(figure: BookFigure, n_panels: int, **kwargs) -> tuple[list, object | None]:
    """``n_panels`` axes, two per row; an odd count leaves one free cell, returned (hidden) for a legend."""
    n_rows = -(-n_panels // 2)
    n_columns = 1 if n_panels == 1 else 2
    grid = np.atleast_1d(figure.subplots(n_rows, n_columns, squeeze=False, **kwargs)).ravel()
    spare = None
    if grid.size > n_panels:
        spare = grid[n_panels]
        spare.set_axis_off()
    return list(grid[:n_panels]), spare


def ratio_spread_figure(spreads: Sequence[RatioSpread], title: str) -> BookFigure:
    """Importance weights of PPO-NoClip per outer iteration, one panel per ``beta`` (two per row).

    The bands are the 1-99% and 10-90% ranges of ``pi_{t+1} / pi_t`` under ``rho x pi_t`` (the
    weights of a fresh batch at the end of the inner loop), the line is the median; dotted
    lines are the extremes over every inner iterate and every response, crosses the extremes
    on the reused batch; dashed lines the interval ``[exp(-R/beta), exp(R/beta)]``. The legend
    takes the free cell of an odd number of panels, or sits under the figure.
    """
    n_rows = -(-len(spreads) // 2)
    figure = new_figure(COLUMN_WIDTH, 0.6 + 2.7 * n_rows)
    panels, spare = _panel_grid(figure, len(spreads))
    for axes, spread in zip(panels, spreads):
        t = np.arange(1, spread.n_iterations + 1)
        q = np.exp(spread.log_ratio_quantiles)
        axes.fill_between(t, q[:, 0], q[:, -1], color=NOCLIP_COLOR, alpha=0.2, lw=0, label="1-99% of the weights")
        axes.fill_between(t, q[:, 1], q[:, -2], color=NOCLIP_COLOR, alpha=0.4, lw=0, label="10-90%")
        axes.plot(t, q[:, q.shape[1] // 2], color=NOCLIP_COLOR, lw=1.2, label="median")
        axes.plot(t, np.exp(spread.log_ratio_max), color="k", ls=":", lw=1.2, label="extremes over all $(x, y)$")
        axes.plot(t, np.exp(spread.log_ratio_min), color="k", ls=":", lw=1.2)
        axes.plot(t, np.exp(spread.batch_log_ratio_max), "x", color=BATCH_COLOR, label="extremes on the batch")
        axes.plot(t, np.exp(spread.batch_log_ratio_min), "x", color=BATCH_COLOR)
        _interval_lines(axes, *spread.interval, label="interval $[e^{-R/\\beta}, e^{R/\\beta}]$")
        axes.set_yscale("log")
        low, high = spread.interval
        _plain_log_ticks(axes.yaxis, np.round([low, np.sqrt(low), 1.0, np.sqrt(high), high], 2))
        axes.set_xlabel("outer iteration $t$")
        axes.set_title(f"$\\beta$ = {spread.beta:g}")
        axes.grid(alpha=0.3)
    for axes in panels[::2]:
        axes.set_ylabel("weight $\\pi_\\theta / \\pi_t$")
    handles, labels = panels[0].get_legend_handles_labels()
    if spare is not None:
        spare.legend(handles, labels, loc="center", frameon=False)
    else:
        _legend_below(figure, handles, ncols=3)
    figure.suptitle(title)
    return figure


def ratio_bounds_figure(tables: Mapping[str, RatioBoundsTable]) -> BookFigure:
    """PPO-NoClip's ratio extremes against ``beta`` next to ``[exp(-R/beta), exp(R/beta)]``, one panel per instance (two per row)."""
    n_rows = -(-len(tables) // 2)
    figure = new_figure(COLUMN_WIDTH, 0.9 + 3.0 * n_rows)
    panels, _ = _panel_grid(figure, len(tables), sharey=True)
    for axes, (name, table) in zip(panels, tables.items()):
        axes.fill_between(table.betas, table.interval_low, table.interval_high, color="0.85",
                          label="interval $[e^{-R/\\beta}, e^{R/\\beta}]$")
        axes.plot(table.betas, table.ratio_max, "o-", color=NOCLIP_COLOR,
                  label="max and min over all $(x, y)$ and inner iterates")
        axes.plot(table.betas, table.ratio_min, "o-", color=NOCLIP_COLOR)
        axes.plot(table.betas, table.batch_ratio_max, "x--", color=BATCH_COLOR, label="max and min on the reused batches")
        axes.plot(table.betas, table.batch_ratio_min, "x--", color=BATCH_COLOR)
        axes.set_xscale("log")
        axes.set_yscale("log")
        _plain_log_ticks(axes.xaxis, table.betas)
        axes.set_xlabel("regularization $\\beta$")
        axes.grid(alpha=0.3)
        axes.set_title(f"{name}\nK = {table.inner_steps}, N = {table.batch_size}, $\\eta\\beta$ = {table.eta_beta:g}")
    panels[0].set_ylabel("weight $\\pi_\\theta / \\pi_t$")
    _legend_below(figure, panels[0].get_legend_handles_labels()[0], ncols=2)
    return figure


def _plain_log_ticks(axis, values: Sequence[float]) -> None:
    """Ticks of a log axis at ``values``, labelled as plain numbers, without minor labels."""
    axis.set_major_locator(FixedLocator(list(values)))
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(NullFormatter())


def clip_activity_figure(grid: ClipActivity) -> BookFigure:
    """PPO-Lite's clip fraction (left) and final suboptimality (right) against ``beta``, one line per interval.

    The intervals are the default one scaled by each width and PPO's fixed interval, applied
    through its pessimistic minimum; the legend under the panels names them. The numbers are :meth:`~covpo.experiments.ppo.clipping.ClipActivity.table`.
    """
    figure = new_figure(COLUMN_WIDTH, 3.9)
    clip_axes, cost_axes = figure.subplots(1, 2)
    labels = [label + (" (default)" if label == "width 1" else "") for label in grid.column_labels]
    labels[-1] = f"{labels[-1]}, pessimistic min"
    for j, label in enumerate(labels):
        style = series_style(j)
        clip_axes.plot(grid.betas, grid.clip_fraction[:, j], label=label, **style)
        cost_axes.plot(grid.betas, grid.final_suboptimality[:, j], label=label, **style)
    clip_axes.set_ylabel("share of the batch clipped")
    clip_axes.set_ylim(bottom=-0.01)
    cost_axes.set_ylabel(f"$J^\\star - J$ after $T = {grid.horizon:g}\\beta$ resets")
    for axes in (clip_axes, cost_axes):
        axes.set_xscale("log")
        _plain_log_ticks(axes.xaxis, grid.betas)
        axes.set_xlabel("regularization $\\beta$")
        axes.grid(alpha=0.3)
    _legend_below(figure, clip_axes.get_legend_handles_labels()[0], ncols=3)
    return figure


def estimator_spread_figure(spread: EstimatorSpread) -> BookFigure:
    """The batch estimates of PPO-NoClip and PPO-Lite at candidates ``pi_s``, across batches.

    Left: the objective estimates (mean and one standard deviation across batches) next to the
    regularized objective they target. Right: the spread of the gradient estimates around their
    own mean (solid) and their root-mean-square error against the true regularized gradient
    (dotted). The vertical dotted line is the target ``s = 1 / beta``, the edge of PPO-Lite's
    default interval.
    """
    figure = new_figure(COLUMN_WIDTH, 4.6)
    objective_axes, gradient_axes = figure.subplots(1, 2)
    s = spread.scales
    objective_axes.plot(s, spread.true_objective, color="k", ls="--", lw=1.2, zorder=3,
                        label="$J_\\beta(\\pi_s; \\pi_0)$, the true value")
    for mean, std, color, label in (
        (spread.noclip_mean, spread.noclip_std, NOCLIP_COLOR, "PPO-NoClip"),
        (spread.lite_mean, spread.lite_std, LITE_COLOR, "PPO-Lite"),
    ):
        objective_axes.plot(s, mean, color=color, marker="o", ms=3, label=label + ", mean $\\pm$ sd")
        objective_axes.fill_between(s, mean - std, mean + std, color=color, alpha=0.25, lw=0)
    objective_axes.set_ylabel("objective estimate at $\\pi_s$")
    for values, color, style, label in (
        (spread.noclip_gradient_std, NOCLIP_COLOR, "o-", "PPO-NoClip: spread"),
        (spread.noclip_gradient_rmse, NOCLIP_COLOR, "o:", "PPO-NoClip: error"),
        (spread.lite_gradient_std, LITE_COLOR, "s-", "PPO-Lite: spread"),
        (spread.lite_gradient_rmse, LITE_COLOR, "s:", "PPO-Lite: error"),
    ):
        gradient_axes.plot(s, values, style, color=color, ms=4, label=label)
    gradient_axes.set_yscale("log")
    gradient_axes.set_ylabel("gradient estimate, RMS across batches")
    for axes in (objective_axes, gradient_axes):
        axes.axvline(1.0 / spread.beta, color="0.4", ls=":", lw=1)
        axes.set_xlabel("candidate $s$ ($\\pi_s \\propto \\pi_0\\, e^{s r}$)")
        axes.grid(alpha=0.3)
        axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=1 if axes is objective_axes else 2,
                    frameon=False, columnspacing=1.0)
    low, high = spread.thresholds
    figure.suptitle(
        f"{spread.n_batches} batches of N = {spread.batch_size} from $\\pi_0$, $\\beta$ = {spread.beta:g}; "
        f"PPO-Lite clips to [{low:.3g}, {high:.3g}]"
    )
    return figure


def _budget_markers(axes, x: np.ndarray, y: np.ndarray, reached: np.ndarray, style: dict, label: str) -> None:
    """Filled markers joined by a line where a run reached eps; open markers, unjoined, at the budget elsewhere."""
    if np.any(reached):
        axes.plot(x[reached], y[reached], label=label, **style)
    if np.any(~reached):
        unreached = {**style, "linestyle": "none", "markerfacecolor": "none", "markersize": 8}
        axes.plot(x[~reached], y[~reached], **unreached)


def _method_styles(names: Sequence[str]) -> list[dict]:
    """Colour, marker and line style of each method: the book's key's for a method it names; the others
    take colours no method of the key uses (:func:`~covpo.plots.style.free_series_colours`)."""
    return label_styles(list(names))


def cost_sweep_figure(sweep: CostSweep, title: str) -> BookFigure:
    """Responses and gradient steps to eps-optimality against ``C_cov``, and the coverage lost on the way.

    Two panels a row: responses (top left), gradient steps (top right), the worst prompt's
    coverage loss in decades (bottom left, with ``log10 2``, half the base coverage, dashed)
    and the legend (bottom right). Filled markers are runs that reached eps; open markers sit
    at the budget a run spent without reaching it (a lower bound on its cost).
    """
    figure = new_figure(COLUMN_WIDTH, 6.2)
    (responses_axes, steps_axes), (loss_axes, legend_axes) = figure.subplots(2, 2)
    c = sweep.coverages
    handles = []
    styles = _method_styles([method.label for method in sweep.methods])
    for i, (method, style) in enumerate(zip(sweep.methods, styles)):
        reached = sweep.reached[i]
        _budget_markers(responses_axes, c, sweep.responses_to_eps[i].astype(float), reached, style, method.label)
        _budget_markers(steps_axes, c, sweep.steps_to_eps[i].astype(float), reached, style, method.label)
        loss_axes.plot(c, sweep.coverage_loss[i], **style)
        handles.append(Line2D([], [], label=method.label, **style))
    loss_axes.axhline(np.log10(2.0), color="k", ls="--", lw=1)
    if not sweep.reached.all():
        handles.append(Line2D([], [], color="0.3", marker="o", ls="none", mfc="none", markersize=8,
                              label="open: not $\\varepsilon$-optimal,\nplotted at the budget"))
    _dress_cost_axes((responses_axes, steps_axes, loss_axes, legend_axes), c, sweep.coverage_loss, handles)
    figure.suptitle(f"{title} ($\\varepsilon$ = {sweep.eps:g})")
    return figure


def _dress_cost_axes(axes_grid: tuple, coverages: np.ndarray, coverage_loss: np.ndarray, handles: list) -> None:
    """Labels, scales and legend shared by :func:`cost_sweep_figure` and :func:`cost_sweeps_figure`.

    ``axes_grid`` is (responses, gradient steps, coverage loss, legend); the dashed half-coverage
    line's legend entry is appended to ``handles``.
    """
    responses_axes, steps_axes, loss_axes, legend_axes = axes_grid
    handles.append(Line2D([], [], color="k", ls="--", lw=1, label="half the base coverage\n($\\log_{10} 2$ decades)"))
    responses_axes.set_ylabel("responses to $\\varepsilon$")
    steps_axes.set_ylabel("gradient steps to $\\varepsilon$")
    loss_axes.set_ylabel("worst coverage loss (decades)")
    loss_axes.set_yscale("symlog", linthresh=0.1)
    finite = coverage_loss[np.isfinite(coverage_loss)]
    loss_axes.set_ylim(0.0, max(1.0, 1.5 * finite.max()) if finite.size else 1.0)
    for axes in (responses_axes, steps_axes, loss_axes):
        axes.set_xscale("log")
        _plain_log_ticks(axes.xaxis, coverages)
        axes.set_xlabel("$C_{\\mathrm{cov}}$ of $\\pi_0$")
        axes.grid(alpha=0.3)
    for axes in (responses_axes, steps_axes):
        axes.set_yscale("log")
    legend_axes.set_axis_off()
    legend_axes.legend(handles=handles, loc="center", frameon=False)


#: Decades between neighbouring seeds' markers at one coverage (``_seed_offsets``).
SEED_DODGE = 0.008
#: Decades between neighbouring methods' groups of markers at one coverage, so that methods
#: with the same costs stay apart (:func:`cost_sweeps_figure`).
METHOD_DODGE = 0.05


def _seed_offsets(n_seeds: int) -> np.ndarray:
    """Multiplicative offsets on a log axis that spread one coverage's seeds side by side (:data:`SEED_DODGE` apart)."""
    return 10.0 ** (SEED_DODGE * (np.arange(n_seeds) - (n_seeds - 1) / 2))


def _median_reached(values: np.ndarray, reached: np.ndarray) -> np.ndarray:
    """Per coverage, the median over seeds of ``values``, ``nan`` where the median seed did not reach eps.

    A run that missed eps has no cost to eps (it spent its budget, a lower bound), so it counts
    as infinitely costly: the median is a cost only where more than half the seeds reached eps.
    """
    median = np.median(np.where(reached, values, np.inf), axis=0)
    return np.where(np.isfinite(median), median, np.nan)


def _failure_strips(figure: BookFigure, n_methods: int) -> tuple[tuple, tuple]:
    """The 2-by-2 panel grid with, above the two cost panels, a strip each for the runs that missed eps."""
    grid = figure.add_gridspec(3, 2, height_ratios=(0.06 * (n_methods + 1), 1.0, 1.0))
    responses_axes, steps_axes = figure.add_subplot(grid[1, 0]), figure.add_subplot(grid[1, 1])
    strips = (figure.add_subplot(grid[0, 0], sharex=responses_axes), figure.add_subplot(grid[0, 1], sharex=steps_axes))
    for strip in strips:
        strip.set_ylim(n_methods - 0.4, -0.6)
        strip.set_yticks([])
        strip.tick_params(axis="x", which="both", labelbottom=False)
        strip.spines["left"].set_visible(False)
        strip.set_title("did not reach $\\varepsilon$ (no cost to show)", fontsize=8, loc="left", pad=2)
    loss_axes, legend_axes = figure.add_subplot(grid[2, 0]), figure.add_subplot(grid[2, 1])
    return (responses_axes, steps_axes, loss_axes, legend_axes), strips


def cost_sweeps_figure(sweeps: SeededCostSweep, title: str) -> BookFigure:
    """:func:`cost_sweep_figure` over seeds: every seed's run as a small marker, the seeds' median as a line.

    Per method and coverage, each seed's run is a small filled marker, the seeds side by side
    and the methods :data:`METHOD_DODGE` decades apart; the line joins the medians over the
    seeds, and the lines drawn first are the widest, so that methods with the same costs show
    both. A run that spent its budget without reaching eps has no cost to eps: in the responses
    and gradient-steps panels it is an open marker in a strip above the panel, one row per
    method, never a point on the cost axis, and the median line stops where more than half the
    seeds missed. The coverage loss (bottom left) shows every run, open where it missed eps.
    The legend takes the bottom right cell.
    """
    n_methods = len(sweeps.methods)
    reached = sweeps.reached
    missed = not reached.all()
    figure = new_figure(COLUMN_WIDTH, 6.2 + (0.25 + 0.12 * n_methods if missed else 0.0))
    if missed:
        (responses_axes, steps_axes, loss_axes, legend_axes), strips = _failure_strips(figure, n_methods)
    else:
        (responses_axes, steps_axes), (loss_axes, legend_axes) = figure.subplots(2, 2)
        strips = (None, None)
    c = sweeps.coverages
    offsets = _seed_offsets(len(sweeps.seeds))
    styles = _method_styles([method.label for method in sweeps.methods])
    method_offsets = 10.0 ** (METHOD_DODGE * (np.arange(n_methods) - (n_methods - 1) / 2))
    handles = []
    for i, (method, style) in enumerate(zip(sweeps.methods, styles)):
        color, marker = style["color"], style["marker"]
        width = 1.0 + 0.4 * (n_methods - 1 - i)
        for axes, strip, values, costs in (
            (responses_axes, strips[0], sweeps.responses_to_eps[:, i].astype(float), True),
            (steps_axes, strips[1], sweeps.steps_to_eps[:, i].astype(float), True),
            (loss_axes, None, sweeps.coverage_loss[:, i], False),
        ):
            median = _median_reached(values, reached[:, i]) if costs else np.nanmedian(values, axis=0)
            axes.plot(c * method_offsets[i], median, color=color, linestyle=style["linestyle"], lw=width)
            for s, offset in enumerate(offsets):
                x = c * offset * method_offsets[i]
                hit = reached[s, i]
                axes.plot(x[hit], values[s][hit], linestyle="none", marker=marker, color=color, markersize=3.5,
                          alpha=0.8)
                where, height = (strip, np.full(x.size, float(i))) if costs else (axes, values[s])
                if where is not None:
                    where.plot(x[~hit], height[~hit], linestyle="none", marker=marker, color=color, markersize=4.5,
                               markerfacecolor="none", alpha=0.8)
        handles.append(Line2D([], [], label=method.label, lw=width, **style))
    loss_axes.axhline(np.log10(2.0), color="k", ls="--", lw=1)
    handles.append(Line2D([], [], color="0.3", ls="-", lw=1.2, label=f"median of {len(sweeps.seeds)} seeds"))
    if missed:
        handles.append(Line2D([], [], color="0.3", marker="o", ls="none", mfc="none", markersize=5,
                              label="open: did not reach $\\varepsilon$\n(top strips; bottom left: its loss)"))
    _dress_cost_axes((responses_axes, steps_axes, loss_axes, legend_axes), c, sweeps.coverage_loss, handles)
    figure.suptitle(f"{title} ($\\varepsilon$ = {sweeps.eps:g}, seeds {sweeps.seeds[0]}-{sweeps.seeds[-1]})")
    return figure


def recipes_figure(comparison: RecipeComparison, instance: BanditInstance, title: str) -> BookFigure:
    """Suboptimality and the worst prompt's log10 coverage against responses sampled, first seed; legend under the panels."""
    figure = new_figure(COLUMN_WIDTH, 4.6)
    gap_axes, coverage_axes = figure.subplots(1, 2)
    base = float(log_coverage(instance, base_log_policy(instance)).min()) * LOG10_E
    handles = []
    for style, name, trajectory in zip(_method_styles(comparison.names), comparison.names, comparison.trajectories):
        if trajectory is None:
            handles.append(Line2D([], [], label=f"{name} (diverged)", **style))
            continue
        x = trajectory.responses_sampled
        every = max(1, x.size // 6)
        gap_axes.plot(x, np.maximum(trajectory.suboptimality, 1e-4), markevery=every, **style)
        coverage_axes.plot(x, trajectory.log10_coverage.min(axis=1), markevery=every, **style)
        handles.append(Line2D([], [], label=name, **style))
    gap_axes.axhline(comparison.eps, color="k", ls="--", lw=1)
    gap_axes.set_yscale("log")
    gap_axes.set_ylabel("$J^\\star - J(\\pi)$")
    coverage_axes.axhline(base, color="k", ls=":", lw=1)
    coverage_axes.set_ylabel("$\\log_{10}$ coverage, worst prompt")
    handles += [
        Line2D([], [], color="k", ls="--", lw=1, label="$\\varepsilon$ (left)"),
        Line2D([], [], color="k", ls=":", lw=1, label="base model's coverage (right)"),
    ]
    for axes in (gap_axes, coverage_axes):
        axes.set_xlabel("responses sampled")
        axes.xaxis.set_major_locator(MaxNLocator(4))
        axes.grid(alpha=0.3)
    _legend_below(figure, handles, ncols=2)
    figure.suptitle(f"{title} (seed {comparison.seeds[0]}, {comparison.response_budget:,} responses each)")
    return figure


# --- the widget ------------------------------------------------------------------------------

WIDGET_PROMPTS, WIDGET_N_ZERO, WIDGET_COVERAGE, WIDGET_GAP = 2, 30, 40.0, 0.2
WIDGET_ITERATIONS, WIDGET_ETA_BETA, WIDGET_SEED = 20, 8.0, 0
WIDGET_EPS = 0.04


def _panel_title(axes, text: str) -> None:
    """A panel title placed at a fixed position (cheaper to draw than ``set_title``)."""
    axes.text(0.5, 1.03, text, transform=axes.transAxes, ha="center", va="bottom")


@lru_cache(maxsize=1)
def widget_instance() -> BanditInstance:
    """The widget's small stacked collapse instance: 2 prompts, 30 zero-reward responses each, ``C_cov = 40``."""
    return stacked_collapse_instance(WIDGET_PROMPTS, WIDGET_GAP, WIDGET_COVERAGE, n_zero=WIDGET_N_ZERO)


def ppo_explorer_figure(beta: float, width: float, inner_steps: int, batch_size: int) -> BookFigure:
    """Widget figure: one PPO-Lite run on :func:`widget_instance`; reward, coverage, weights and clipping (two panels a row).

    ``T = 20`` resets at learning rate ``eta = 8 / beta`` and thresholds
    :func:`~covpo.algorithms.ppo_lite.clip_width_thresholds` ``(beta, R, width)``, seed 0. A step
    that leaves the parameters non-finite is caught and reported in the figure.
    """
    beta = check_positive("beta", beta)
    width = check_positive("width", width)
    inner_steps = check_count("inner_steps", inner_steps)
    batch_size = check_count("batch_size", batch_size)
    instance = widget_instance()
    thresholds = clip_width_thresholds(beta, float(instance.rewards.max()), width)
    figure = new_figure(COLUMN_WIDTH, 5.8, constrained=False)
    figure.subplots_adjust(left=0.09, right=0.98, bottom=0.09, top=0.8, wspace=0.3, hspace=0.65)
    (reward_axes, coverage_axes), (ratio_axes, clip_axes) = figure.subplots(2, 2)
    recorder = RatioRecorder()
    try:
        trajectory = run(
            "ppo_lite", instance, rng=np.random.default_rng(WIDGET_SEED), beta=beta, eta=WIDGET_ETA_BETA / beta,
            n_iterations=WIDGET_ITERATIONS, batch_size=batch_size, inner_steps=inner_steps, thresholds=thresholds,
            on_inner_step=recorder,
        )
    except FloatingPointError as error:
        for axes in (reward_axes, coverage_axes, ratio_axes, clip_axes):
            axes.set_axis_off()
        figure.text(0.5, 0.5, f"the run diverged: {error}", ha="center", va="center", wrap=True)
        figure.suptitle(f"beta {beta:.3g}, width {width:.3g}, K {inner_steps}, N {batch_size}")
        return figure
    ratios = recorder.finish()
    x = trajectory.responses_sampled
    reward_axes.plot(x, trajectory.reward, color=LITE_COLOR)
    reward_axes.axhline(trajectory.optimal_value - WIDGET_EPS, color="0.4", ls="--", lw=1)
    reward_axes.set_ylim(0.0, 1.02)
    _panel_title(reward_axes, "expected reward\n(dashed: $J^\\star - \\varepsilon$)")
    coverage_axes.plot(x, trajectory.log10_coverage.min(axis=1), color=LITE_COLOR)
    coverage_axes.axhline(np.log10(1.0 / WIDGET_COVERAGE), color="0.4", ls=":", lw=1)
    _panel_title(coverage_axes, "$\\log_{10}$ coverage, worst prompt\n(dotted: the base model's)")
    for axes in (reward_axes, coverage_axes):
        axes.set_xlabel("responses sampled")
    iterations = np.arange(WIDGET_ITERATIONS)
    rows = [ratios.iteration == t for t in iterations]
    taking = ratios.inner_step < inner_steps
    ratio_axes.vlines(iterations - 0.15, [ratios.log_ratio_min[r].min() * LOG10_E for r in rows],
                      [ratios.log_ratio_max[r].max() * LOG10_E for r in rows], color="k", lw=2)
    ratio_axes.vlines(iterations + 0.15, [ratios.batch_log_ratio_min[r].min() * LOG10_E for r in rows],
                      [ratios.batch_log_ratio_max[r].max() * LOG10_E for r in rows], color=BATCH_COLOR, lw=2)
    for value in np.log10(thresholds):
        ratio_axes.axhline(value, color=LITE_COLOR, ls="--", lw=1)
    reach = max(np.abs(np.log10(thresholds)).max(), np.abs(ratios.log_ratio_min).max() * LOG10_E,
                ratios.log_ratio_max.max() * LOG10_E)
    ratio_axes.set_ylim(-min(3.0, 1.15 * reach), min(3.0, 1.15 * reach))
    _panel_title(ratio_axes, "$\\log_{10}$ weights: all (black), batch (grey),\nclip thresholds (blue, dashed)")
    clip_axes.bar(iterations, [ratios.clip_fraction[r & taking].mean() for r in rows], color=CLIP_COLOR, width=0.8)
    clip_axes.set_ylim(0.0, 1.0)
    _panel_title(clip_axes, f"share of the batch clipped\n(mean {ratios.mean_clip_fraction:.3f})")
    for axes in (ratio_axes, clip_axes):
        axes.set_xlabel("outer iteration")
    for axes in (reward_axes, coverage_axes, ratio_axes, clip_axes):
        axes.xaxis.set_major_locator(MaxNLocator(4))
        axes.yaxis.set_major_locator(MaxNLocator(5))
        axes.grid(alpha=0.3)
    first = trajectory.responses_to_eps(WIDGET_EPS)
    outcome = f"$\\varepsilon$-optimal after {first:,} responses" if first is not None else "not $\\varepsilon$-optimal"
    figure.suptitle(
        f"PPO-Lite, $\\beta$ {beta:.3g}, $\\eta$ {WIDGET_ETA_BETA / beta:.3g}, K {inner_steps}, N {batch_size}, "
        f"clip [{thresholds[0]:.3g}, {thresholds[1]:.3g}]\n{outcome}; lowest coverage "
        f"$10^{{{trajectory.min_log10_coverage:.2f}}}$",
        fontsize=10,
    )
    return figure


def ppo_widget() -> Explorable:
    """``beta``, the clipping interval's width, inner steps and batch size in; reward, coverage, weights and clipping out.

    The static stand-in holds 24 frames: four ``beta`` by three widths by two inner step
    counts, at the default batch size.
    """
    sliders = [
        Slider("beta", "β", 0.05, 8.0, 1.0, (0.25, 0.5, 1.0, 4.0), log=True),
        Slider("width", "clip width (1 = default)", 0.05, 20.0, 1.0, (0.25, 1.0, 4.0), log=True),
        Slider("inner_steps", "inner steps K", 1, 40, 10, (2, 10), integer=True),
        Slider("batch_size", "batch size N", 8, 512, 128, (128,), integer=True, step=8),
    ]
    return explorable(ppo_explorer_figure, sliders, "PPO-Lite with resets on a small collapse instance")
