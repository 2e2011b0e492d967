"""Figures and the widget of chapter 4, PPO and GRPO with reference resets (paper sections 3.2, 3.3; appendices G, H).

Each figure draws one record of :mod:`covpo.ppo_experiments`: the importance weights per outer
iteration (:func:`ratio_spread_figure`) and against ``beta`` (:func:`ratio_bounds_figure`), the
clip activity grid (:func:`clip_activity_figure`), the spread of the batch estimates
(:func:`estimator_spread_figure`), the costs against coverage (:func:`cost_sweep_figure`) and
the recipes under one budget (:func:`recipes_figure`); then the widget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
from matplotlib.ticker import (
    FixedLocator,
    FormatStrFormatter,
    MaxNLocator,
    NullFormatter,
)

from covpo.instances import BanditInstance
from covpo.plots.base import BookFigure, new_figure
from covpo.policies import base_log_policy, log_coverage
from covpo.ppo import ppo_lite
from covpo.ppo_experiments import (
    ClipActivity,
    CostSweep,
    EstimatorSpread,
    RatioBoundsTable,
    RatioSpread,
    RecipeComparison,
    clip_width_thresholds,
    stacked_collapse_instance,
)
from covpo.trajectory import LOG10_E
from covpo.widgets import Explorable, Slider, explorable

METHOD_STYLES = {
    "PPO-NoClip": ("C2", "o", "-"),
    "PPO-Lite": ("C0", "s", "--"),
    "GRPO, resets": ("C4", "D", "-"),
    "GRPO, fixed ref., no KL": ("C1", "v", ":"),
    "REINFORCE": ("C3", "^", ":"),
}
NOCLIP_COLOR, LITE_COLOR = "C2", "C0"


def _style(name: str, index: int) -> tuple[str, str, str]:
    return METHOD_STYLES.get(name, (f"C{index % 10}", "o", "-"))


def _interval_lines(axes, low: float, high: float, label: str = "$[e^{-R/\\beta}, e^{R/\\beta}]$") -> None:
    axes.axhline(high, color="k", ls="--", lw=1, label=label)
    axes.axhline(low, color="k", ls="--", lw=1)


def ratio_spread_figure(spreads: Sequence[RatioSpread], title: str) -> BookFigure:
    """Importance weights of PPO-NoClip per outer iteration, one panel per ``beta``.

    The bands are the 1-99% and 10-90% ranges of ``pi_{t+1} / pi_t`` under ``rho x pi_t`` (the
    weights of a fresh batch at the end of the inner loop), the line is the median; dotted
    lines are the extremes over every inner iterate and every response, crosses the extremes
    on the reused batch; dashed lines the interval ``[exp(-R/beta), exp(R/beta)]``.
    """
    figure = new_figure(4.0 * len(spreads), 3.6)
    panels = np.atleast_1d(figure.subplots(1, len(spreads)))
    for axes, spread in zip(panels, spreads):
        t = np.arange(1, spread.n_iterations + 1)
        q = np.exp(spread.log_ratio_quantiles)
        axes.fill_between(t, q[:, 0], q[:, -1], color="C2", alpha=0.2, lw=0, label="1-99% of weights")
        axes.fill_between(t, q[:, 1], q[:, -2], color="C2", alpha=0.4, lw=0, label="10-90%")
        axes.plot(t, q[:, q.shape[1] // 2], color="C2", lw=1.2, label="median")
        axes.plot(t, np.exp(spread.log_ratio_max), color="k", ls=":", lw=1.2, label="extremes, all $(x, y)$")
        axes.plot(t, np.exp(spread.log_ratio_min), color="k", ls=":", lw=1.2)
        axes.plot(t, np.exp(spread.batch_log_ratio_max), "x", color="C3", ms=4, label="extremes on the batch")
        axes.plot(t, np.exp(spread.batch_log_ratio_min), "x", color="C3", ms=4)
        _interval_lines(axes, *spread.interval)
        axes.set_yscale("log")
        low, high = spread.interval
        _plain_log_ticks(axes.yaxis, np.round([low, np.sqrt(low), 1.0, np.sqrt(high), high], 2))
        axes.set_xlabel("outer iteration t")
        axes.set_title(f"$\\beta$ = {spread.beta:g}", fontsize=10)
        axes.grid(alpha=0.3)
    panels[0].set_ylabel("importance weight $\\pi_\\theta / \\pi_t$")
    panels[0].legend(fontsize=7, loc="lower left")
    figure.suptitle(title)
    return figure


def ratio_bounds_figure(tables: Mapping[str, RatioBoundsTable]) -> BookFigure:
    """PPO-NoClip's ratio extremes against ``beta`` next to ``[exp(-R/beta), exp(R/beta)]``, one panel per instance."""
    figure = new_figure(5.0 * len(tables), 3.6)
    panels = np.atleast_1d(figure.subplots(1, len(tables), sharey=True))
    for axes, (name, table) in zip(panels, tables.items()):
        axes.fill_between(table.betas, table.interval_low, table.interval_high, color="0.85",
                          label="$[e^{-R/\\beta}, e^{R/\\beta}]$")
        axes.plot(table.betas, table.ratio_max, "o-", color="C2", label="max / min over all $(x, y)$ and inner iterates")
        axes.plot(table.betas, table.ratio_min, "o-", color="C2")
        axes.plot(table.betas, table.batch_ratio_max, "x--", color="C3", label="max / min on the reused batches")
        axes.plot(table.betas, table.batch_ratio_min, "x--", color="C3")
        axes.set_xscale("log")
        axes.set_yscale("log")
        _plain_log_ticks(axes.xaxis, table.betas)
        axes.set_xlabel("regularization $\\beta$")
        axes.grid(alpha=0.3)
        axes.set_title(f"{name}: K = {table.inner_steps}, N = {table.batch_size}, $\\eta\\beta$ = {table.eta_beta:g}", fontsize=9)
    panels[0].set_ylabel("importance weight $\\pi_\\theta / \\pi_t$")
    panels[0].legend(fontsize=7, loc="lower right")
    return figure


def _plain_log_ticks(axis, values: Sequence[float]) -> None:
    """Ticks of a log axis at ``values``, labelled as plain numbers, without minor labels."""
    axis.set_major_locator(FixedLocator(list(values)))
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(NullFormatter())


def _heatmap(axes, values: np.ndarray, row_labels: Sequence[str], column_labels: Sequence[str], cmap: str, fmt: str) -> None:
    image = axes.imshow(values, cmap=cmap, aspect="auto")
    axes.set_xticks(range(len(column_labels)), column_labels, fontsize=8, rotation=20)
    axes.set_yticks(range(len(row_labels)), row_labels, fontsize=8)
    top = np.nanmax(values) if np.any(np.isfinite(values)) else 1.0
    for (i, j), value in np.ndenumerate(values):
        axes.text(j, i, format(value, fmt), ha="center", va="center", fontsize=7,
                  color="white" if value > 0.6 * top else "black")
    axes.figure.colorbar(image, ax=axes, shrink=0.8)


def clip_activity_figure(grid: ClipActivity) -> BookFigure:
    """PPO-Lite's clip fraction (left) and final suboptimality (right) over ``beta`` and the interval."""
    figure = new_figure(11.0, 3.6)
    clip_axes, cost_axes = figure.subplots(1, 2)
    rows = [f"$\\beta$ = {beta:g}" for beta in grid.betas]
    _heatmap(clip_axes, grid.clip_fraction, rows, grid.column_labels, "Oranges", ".3f")
    clip_axes.set_title("share of the batch clipped", fontsize=10)
    _heatmap(cost_axes, grid.final_suboptimality, rows, grid.column_labels, "Blues", ".3f")
    cost_axes.set_title(f"$J^\\star - J$ after $T = {grid.horizon:g}\\beta$ resets", fontsize=10)
    figure.suptitle("PPO-Lite: interval width 1 is the default $[e^{-R/\\beta}, e^{R/\\beta}]$; the last column is fixed")
    return figure


def estimator_spread_figure(spread: EstimatorSpread) -> BookFigure:
    """The batch estimates of PPO-NoClip and PPO-Lite at candidates ``pi_s``, across batches.

    Left: the objective estimates (mean and one standard deviation across batches) next to the
    regularized objective they target. Right: the spread of the gradient estimates around their
    own mean and their root-mean-square error against the true regularized gradient.
    """
    figure = new_figure(11.0, 3.8)
    objective_axes, gradient_axes = figure.subplots(1, 2)
    s = spread.scales
    objective_axes.plot(s, spread.true_objective, color="k", lw=1.5, label="$J_\\beta(\\pi_s; \\pi_0)$")
    for mean, std, color, label in (
        (spread.noclip_mean, spread.noclip_std, NOCLIP_COLOR, "PPO-NoClip estimate"),
        (spread.lite_mean, spread.lite_std, LITE_COLOR, "PPO-Lite estimate"),
    ):
        objective_axes.plot(s, mean, color=color, marker="o", ms=3, label=label + " (mean $\\pm$ sd)")
        objective_axes.fill_between(s, mean - std, mean + std, color=color, alpha=0.25, lw=0)
    objective_axes.set_ylabel("objective at $\\pi_s$")
    objective_axes.legend(fontsize=7, loc="lower left")
    for values, color, style, label in (
        (spread.noclip_gradient_std, NOCLIP_COLOR, "o-", "PPO-NoClip: spread"),
        (spread.noclip_gradient_rmse, NOCLIP_COLOR, "o:", "PPO-NoClip: error vs true gradient"),
        (spread.lite_gradient_std, LITE_COLOR, "s-", "PPO-Lite: spread"),
        (spread.lite_gradient_rmse, LITE_COLOR, "s:", "PPO-Lite: error vs true gradient"),
    ):
        gradient_axes.plot(s, values, style, color=color, ms=4, label=label)
    gradient_axes.set_yscale("log")
    gradient_axes.set_ylabel("root mean square, across batches")
    gradient_axes.legend(fontsize=7)
    low, high = spread.thresholds
    for axes in (objective_axes, gradient_axes):
        axes.set_xlabel("candidate $s$:  $\\pi_s \\propto \\pi_0\\, e^{s r}$")
        axes.grid(alpha=0.3)
    figure.suptitle(
        f"{spread.n_batches} batches of N = {spread.batch_size} from $\\pi_0$; $\\beta$ = {spread.beta:g}, "
        f"PPO-Lite clips to [{low:.3g}, {high:.3g}]"
    )
    return figure


def _budget_markers(axes, x: np.ndarray, y: np.ndarray, reached: np.ndarray, color: str, marker: str, line: str, label: str) -> None:
    if np.any(reached):
        axes.plot(x[reached], y[reached], marker=marker, ls=line, color=color, label=label)
    if np.any(~reached):
        axes.plot(x[~reached], y[~reached], marker=marker, ls="none", mfc="none", color=color, ms=9,
                  label=f"{label}: not $\\varepsilon$-optimal in budget")


def cost_sweep_figure(sweep: CostSweep, title: str) -> BookFigure:
    """Responses and gradient steps to eps-optimality against ``C_cov``, and the coverage lost on the way.

    Filled markers are runs that reached eps; hollow markers sit at the budget a run spent
    without reaching it (a lower bound on its cost).
    """
    figure = new_figure(13.0, 4.0)
    responses_axes, steps_axes, loss_axes = figure.subplots(1, 3)
    c = sweep.coverages
    for i, method in enumerate(sweep.methods):
        color, marker, line = _style(method.name, i)
        reached = sweep.reached[i]
        _budget_markers(responses_axes, c, sweep.responses_to_eps[i].astype(float), reached, color, marker, line, method.name)
        _budget_markers(steps_axes, c, sweep.steps_to_eps[i].astype(float), reached, color, marker, line, method.name)
        loss_axes.plot(c, sweep.coverage_loss[i], marker=marker, ls=line, color=color, label=method.name)
    loss_axes.axhline(np.log10(2.0), color="k", ls="--", lw=1, label="half the base coverage")
    responses_axes.set_ylabel("responses sampled to $\\varepsilon$")
    steps_axes.set_ylabel("gradient steps to $\\varepsilon$")
    loss_axes.set_ylabel("worst coverage loss (decades)")
    loss_axes.set_yscale("symlog", linthresh=0.1)
    top = np.nanmax(sweep.coverage_loss) if np.any(np.isfinite(sweep.coverage_loss)) else 1.0
    loss_axes.set_ylim(0.0, max(1.0, 1.5 * top))
    for axes in (responses_axes, steps_axes, loss_axes):
        axes.set_xscale("log")
        axes.set_xlabel("coverage coefficient $C_{\\mathrm{cov}}$ of $\\pi_0$")
        axes.grid(alpha=0.3)
    for axes in (responses_axes, steps_axes):
        axes.set_yscale("log")
    responses_axes.legend(fontsize=6, loc="best")
    figure.suptitle(f"{title} ($\\varepsilon$ = {sweep.eps:g})")
    return figure


def recipes_figure(comparison: RecipeComparison, instance: BanditInstance, title: str) -> BookFigure:
    """Suboptimality and the worst prompt's log10 coverage against responses sampled, first seed."""
    figure = new_figure(11.0, 3.8)
    gap_axes, coverage_axes = figure.subplots(1, 2)
    base = float(log_coverage(instance, base_log_policy(instance)).min()) * LOG10_E
    for i, (name, trajectory) in enumerate(zip(comparison.names, comparison.trajectories)):
        color = f"C{i}"
        if trajectory is None:
            gap_axes.plot([], [], color=color, label=f"{name} (diverged)")
            continue
        x = trajectory.responses_sampled
        gap_axes.plot(x, np.maximum(trajectory.suboptimality, 1e-4), color=color, label=name)
        coverage_axes.plot(x, trajectory.log10_coverage.min(axis=1), color=color, label=name)
    gap_axes.axhline(comparison.eps, color="k", ls="--", lw=1, label="$\\varepsilon$")
    gap_axes.set_yscale("log")
    gap_axes.set_ylabel("$J^\\star - J(\\pi)$")
    gap_axes.legend(fontsize=7)
    coverage_axes.axhline(base, color="0.5", ls=":", lw=1, label="base model")
    coverage_axes.set_ylabel("$\\log_{10}$ coverage, worst prompt")
    coverage_axes.legend(fontsize=7, loc="lower left")
    for axes in (gap_axes, coverage_axes):
        axes.set_xlabel("responses sampled")
        axes.grid(alpha=0.3)
    figure.suptitle(f"{title} (seed {comparison.seeds[0]}, {comparison.response_budget:,} responses each)")
    return figure


# --- the widget ------------------------------------------------------------------------------

WIDGET_PROMPTS, WIDGET_N_ZERO, WIDGET_COVERAGE, WIDGET_GAP = 2, 30, 40.0, 0.2
WIDGET_ITERATIONS, WIDGET_ETA_BETA, WIDGET_SEED = 20, 8.0, 0
WIDGET_EPS = 0.04


def _panel_title(axes, text: str) -> None:
    """A panel title placed at a fixed position (cheaper to draw than ``set_title``)."""
    axes.text(0.5, 1.03, text, transform=axes.transAxes, ha="center", va="bottom", fontsize=8)


@lru_cache(maxsize=1)
def widget_instance() -> BanditInstance:
    """The widget's small stacked collapse instance: 2 prompts, 30 zero-reward responses each, ``C_cov = 40``."""
    return stacked_collapse_instance(WIDGET_PROMPTS, WIDGET_GAP, WIDGET_COVERAGE, n_zero=WIDGET_N_ZERO)


def ppo_explorer_figure(beta: float, width: float, inner_steps: int, batch_size: int) -> BookFigure:
    """Widget figure: one PPO-Lite run on :func:`widget_instance`; reward, coverage, weights and clipping.

    ``T = 20`` resets at learning rate ``eta = 8 / beta`` and thresholds
    :func:`~covpo.ppo_experiments.clip_width_thresholds` ``(beta, R, width)``, seed 0. A step
    that leaves the parameters non-finite is caught and reported in the figure.
    """
    instance = widget_instance()
    thresholds = clip_width_thresholds(beta, float(instance.rewards.max()), width)
    figure = new_figure(12.0, 3.3, constrained=False)
    figure.subplots_adjust(left=0.05, right=0.99, bottom=0.16, top=0.8, wspace=0.32)
    reward_axes, coverage_axes, ratio_axes, clip_axes = figure.subplots(1, 4)
    try:
        run = ppo_lite(
            instance, beta, WIDGET_ITERATIONS, batch_size=batch_size, inner_steps=inner_steps,
            eta=WIDGET_ETA_BETA / beta, rng=np.random.default_rng(WIDGET_SEED), thresholds=thresholds,
        )
    except FloatingPointError as error:
        for axes in (reward_axes, coverage_axes, ratio_axes, clip_axes):
            axes.set_axis_off()
        figure.text(0.5, 0.5, f"the run diverged: {error}", ha="center", va="center", fontsize=9, wrap=True)
        figure.suptitle(f"beta {beta:.3g}, width {width:.3g}, K {inner_steps}, N {batch_size}", fontsize=9)
        return figure
    trajectory, ratios = run.trajectory, run.ratios
    x = trajectory.responses_sampled
    reward_axes.plot(x, trajectory.reward, color="k")
    reward_axes.axhline(trajectory.optimal_value - WIDGET_EPS, color="C3", ls="--", lw=1)
    reward_axes.set_ylim(0.0, 1.02)
    _panel_title(reward_axes, "expected reward (dashed: J* - eps)")
    coverage_axes.plot(x, trajectory.log10_coverage.min(axis=1), color="C2")
    coverage_axes.axhline(np.log10(1.0 / WIDGET_COVERAGE), color="0.5", ls=":", lw=1)
    _panel_title(coverage_axes, "log10 coverage, worst prompt (dotted: base)")
    for axes in (reward_axes, coverage_axes):
        axes.set_xlabel("responses sampled", fontsize=8)
    iterations = np.arange(WIDGET_ITERATIONS)
    rows = [ratios.iteration == t for t in iterations]
    taking = ratios.inner_step < inner_steps
    ratio_axes.vlines(iterations - 0.15, [ratios.log_ratio_min[r].min() * LOG10_E for r in rows],
                      [ratios.log_ratio_max[r].max() * LOG10_E for r in rows], color="k", lw=2)
    ratio_axes.vlines(iterations + 0.15, [ratios.batch_log_ratio_min[r].min() * LOG10_E for r in rows],
                      [ratios.batch_log_ratio_max[r].max() * LOG10_E for r in rows], color="C3", lw=2)
    for value in np.log10(thresholds):
        ratio_axes.axhline(value, color="C0", ls="--", lw=1)
    reach = max(np.abs(np.log10(thresholds)).max(), np.abs(ratios.log_ratio_min).max() * LOG10_E,
                ratios.log_ratio_max.max() * LOG10_E)
    ratio_axes.set_ylim(-min(3.0, 1.15 * reach), min(3.0, 1.15 * reach))
    _panel_title(ratio_axes, "log10 weights: all (black), batch (red), clip (blue)")
    clip_axes.bar(iterations, [ratios.clip_fraction[r & taking].mean() for r in rows], color="C1", width=0.8)
    clip_axes.set_ylim(0.0, 1.0)
    _panel_title(clip_axes, f"share of batch clipped (mean {ratios.mean_clip_fraction:.3f})")
    for axes in (ratio_axes, clip_axes):
        axes.set_xlabel("outer iteration", fontsize=8)
    for axes in (reward_axes, coverage_axes, ratio_axes, clip_axes):
        axes.xaxis.set_major_locator(MaxNLocator(4))
        axes.yaxis.set_major_locator(MaxNLocator(5))
        axes.tick_params(labelsize=7)
        axes.grid(alpha=0.3)
    first = trajectory.responses_to_eps(WIDGET_EPS)
    outcome = f"eps-optimal after {first:,} responses" if first is not None else "not eps-optimal"
    figure.suptitle(
        f"PPO-Lite, beta {beta:.3g}, eta {WIDGET_ETA_BETA / beta:.3g}, K {inner_steps}, N {batch_size}, "
        f"clip [{thresholds[0]:.3g}, {thresholds[1]:.3g}]: {outcome}; lowest coverage "
        f"10^{trajectory.min_log10_coverage:.2f}",
        fontsize=9,
    )
    return figure


def ppo_widget() -> Explorable:
    """``beta``, the clipping interval's width, inner steps and batch size in; reward, coverage, weights and clipping out.

    The static stand-in holds 24 frames: four ``beta`` by three widths by two inner step
    counts, at the default batch size.
    """
    sliders = [
        Slider("beta", "beta", 0.05, 8.0, 1.0, (0.25, 0.5, 1.0, 4.0), log=True),
        Slider("width", "clip width (1 = default)", 0.05, 20.0, 1.0, (0.25, 1.0, 4.0), log=True),
        Slider("inner_steps", "inner steps K", 1, 40, 10, (2, 10), integer=True),
        Slider("batch_size", "batch size N", 8, 512, 128, (128,), integer=True, step=8),
    ]
    return explorable(ppo_explorer_figure, sliders, "PPO-Lite with resets on a small collapse instance")
