"""Figures and the widget of chapter 3, reference resets (paper section 3.1, appendices B.3, C.1, D, F).

One function per paper figure, named after it (:func:`figure_1`, :func:`figure_2a`,
:func:`figure_3`), each drawing the record of the data function of the same name in
:mod:`covpo.experiments.collapse.paper_figures`; then the chapter's own figures (the knob, the rate, the
inner loop) and the widget.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.colors import Normalize
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from covpo.experiments.collapse import (
    APMDKnobSweep,
    CollapseRun,
    FIGURE_GAP,
    Figure1Data,
    Figure2aData,
    Figure3Data,
    InnerStepsSweep,
    Landscape,
    SimplexPath,
    StepsToEpsSweep,
    collapse_instance,
    exact_apmd_run,
    exact_collapse_run,
    strongest_eps_optimal_beta,
)
from covpo.experiments.collapse.reset_sweeps import InnerAccuracySweep
from covpo.experiments.mirror_descent import MirrorDescentRate
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, MARKERS, PALETTE, method_colour, series_style
from covpo.plots.collapse import SQRT3_HALF, _step_axis, _ternary
from covpo.plots.widgets import Explorable, Slider, explorable
from covpo.validation import check_count, check_positive

#: Colours of the three regimes, the book's key's (:data:`~covpo.plots.style.COLOUR_KEY`).
REGIME_COLORS = {"weak": method_colour("weak fixed penalty"), "strong": method_colour("strong fixed penalty"),
                 "resets": method_colour("APMD")}
#: Colours of the methods, the book's key's.
METHOD_COLORS = {"REINFORCE": method_colour("REINFORCE"), "APMD": method_colour("APMD")}
STACK_MARGIN = (0.45, 0.9)
"""Margin in ``(u, v)`` around its path segment of the patch on which :func:`figure_3` draws each subproblem."""


def _log_steps_axes(axes) -> None:
    axes.set_xscale("log")
    axes.set_xlabel("gradient steps + 1")
    axes.grid(alpha=0.3)


def _legend_cell(axes, handles: list, **options) -> None:
    """Turn ``axes`` (an empty cell of a grid of panels) into a legend for its neighbours."""
    axes.axis("off")
    axes.legend(handles=handles, loc="center", frameon=False, **options)


def _draw_simplex(axes, labels: tuple[str, str, str] = ("zero-reward\nblock", "near miss", "optimal")) -> None:
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, SQRT3_HALF], [0.0, 0.0]])
    axes.plot(corners[:, 0], corners[:, 1], color="0.3", lw=1)
    for (x, y), label in zip(corners[:3], labels):
        axes.annotate(label, (x, y), ha="center", va="top" if y == 0 else "bottom")
    axes.set_aspect("equal")
    axes.set_xlim(-0.1, 1.1)
    axes.set_ylim(-0.2, 1.0)
    axes.axis("off")


def _simplex_path(axes, path: SimplexPath, color: str, label: str, markers: np.ndarray | None = None) -> None:
    x, y = _ternary(path.masses)
    axes.plot(x, y, color=color, lw=1.6, label=label)
    axes.plot(x[:1], y[:1], "o", color=color, ms=5)
    axes.plot(x[-1:], y[-1:], "s", color=color, ms=5)
    if markers is not None:
        axes.plot(x[markers], y[markers], ".", color="k", ms=3.5)


def figure_1(data: Figure1Data) -> BookFigure:
    """Paper Figure 1: weak fixed, strong fixed and reset regularization on one member of the family.

    Top left, the three runs on the simplex of (optimal, near miss, zero block) mass, with dots
    at every reset of the reset run until it is eps-optimal, and the legend beside it; bottom,
    the expected reward (left) and the base-10 log coverage (right), against gradient steps.
    """
    figure = new_figure(COLUMN_WIDTH, 6.2)
    panels = figure.subplot_mosaic([["simplex", "legend"], ["reward", "coverage"]])
    simplex_axes, reward_axes, coverage_axes = panels["simplex"], panels["reward"], panels["coverage"]
    _draw_simplex(simplex_axes)
    runs = (
        ("weak", data.weak, data.weak_path, f"fixed reference, weak $\\beta$ = {data.weak_beta:.3g}"),
        ("strong", data.strong, data.strong_path, f"fixed reference, strong $\\beta$ = {data.strong_beta:.3g}"),
        ("resets", data.resets, data.resets_path, f"resets, $\\beta$ = {data.strong_beta:.3g}, K = {data.inner_steps}"),
    )
    first = data.resets.trajectory.steps_to_eps(data.eps)
    steps = data.resets.trajectory.gradient_steps
    at_resets = np.flatnonzero((steps % data.inner_steps == 0) & (steps <= (first if first is not None else 0)))
    for key, run, path, label in runs:
        color = REGIME_COLORS[key]
        _simplex_path(simplex_axes, path, color, label, at_resets if key == "resets" else None)
        trajectory = run.trajectory
        x = _step_axis(trajectory.gradient_steps)
        reward_axes.plot(x, trajectory.reward, color=color, label=label)
        coverage_axes.plot(x, trajectory.log10_coverage[:, 0], color=color, label=label)
    optimum = data.instance.optimal_value
    reward_axes.axhline(optimum - data.eps, color="k", lw=1, ls="--", label="$J^\\star - \\varepsilon$")
    reward_axes.axhline(
        optimum - data.strong_optimum_suboptimality, color=REGIME_COLORS["strong"], lw=1, ls=":",
        label="fixed reference, strong: its optimum",
    )
    reward_axes.set_ylabel("expected reward $J(\\pi)$")
    coverage_axes.axhline(np.log10(data.instance.base_coverage), color="0.5", lw=1, ls=":", label="base coverage")
    coverage_axes.set_ylabel("$\\log_{10}$ coverage $\\pi(y^\\star)$")
    for axes in (reward_axes, coverage_axes):
        _log_steps_axes(axes)
    simplex_axes.set_title("mass on the simplex")
    handles = reward_axes.get_legend_handles_labels()[0] + coverage_axes.get_lines()[-1:]
    handles += [
        Line2D([], [], color="0.3", marker="o", ls="none", label="start (simplex)"),
        Line2D([], [], color="0.3", marker="s", ls="none", label="end (simplex)"),
        Line2D([], [], color="k", marker=".", ls="none", label="a reset (simplex)"),
    ]
    _legend_cell(panels["legend"], handles)
    figure.suptitle(
        f"gap {data.instance.gap}: three ways to regularize, {data.weak.trajectory.total_gradient_steps:,} steps each"
    )
    return figure


def _mark_eps(axes, steps_to_eps: int | None, color: str) -> None:
    if steps_to_eps is not None:
        axes.axvline(steps_to_eps + 1, color=color, lw=1, ls="--")


def figure_2a(data: Figure2aData) -> BookFigure:
    """Paper Figure 2a: reward and log10 coverage against gradient steps, REINFORCE vs APMD, same budget.

    Dashed vertical lines mark each method's first eps-optimal step; the legend sits under the
    two panels.
    """
    figure = new_figure(COLUMN_WIDTH, 4.1)
    reward_axes, coverage_axes = figure.subplots(1, 2)
    methods = (
        ("REINFORCE", data.reinforce, data.reinforce_steps_to_eps,
         f"REINFORCE, KL to the base model, $\\beta$ = {data.reinforce_beta:.3g}"),
        ("APMD", data.apmd, data.apmd_steps_to_eps,
         f"APMD (resets), $\\beta$ = {data.apmd_beta:.3g}, K = {data.inner_steps}"),
    )
    for name, run, first, label in methods:
        color = METHOD_COLORS[name]
        x = _step_axis(run.trajectory.gradient_steps)
        reward_axes.plot(x, run.trajectory.reward, color=color, lw=2, label=label)
        coverage_axes.plot(x, run.trajectory.log10_coverage[:, 0], color=color, lw=2, label=label)
        for axes in (reward_axes, coverage_axes):
            _mark_eps(axes, first, color)
    reward_axes.axhline(data.instance.optimal_value - data.eps, color="k", lw=1, ls=":")
    base = np.log10(data.instance.base_coverage)
    coverage_axes.axhline(base, color="0.5", lw=1, ls=":")
    coverage_axes.axhline(base - np.log10(2.0), color="0.5", lw=1, ls="-.")
    reward_axes.set_title("expected reward $J(\\pi)$")
    coverage_axes.set_title("coverage, $\\log_{10}\\,\\pi(y^\\star)$")
    for axes in (reward_axes, coverage_axes):
        _log_steps_axes(axes)
    handles = reward_axes.get_legend_handles_labels()[0] + [
        Line2D([], [], color="0.3", lw=1, ls="--", label="first $\\varepsilon$-optimal step"),
        Line2D([], [], color="k", lw=1, ls=":", label="$J^\\star - \\varepsilon$ (left)"),
        Line2D([], [], color="0.5", lw=1, ls=":", label="base coverage (right)"),
        Line2D([], [], color="0.5", lw=1, ls="-.", label="half the base coverage (right)"),
    ]
    order = [0, 2, 3, 1, 4, 5]
    figure.legend(handles=[handles[i] for i in order], loc="outside lower center", ncols=2, frameon=False)
    figure.suptitle(
        f"gap {data.instance.gap}, learning rate {data.eta:g}, "
        f"{data.max_steps:,} gradient steps each"
    )
    return figure


def apmd_knob_figure(apmd: APMDKnobSweep, unregularized: StepsToEpsSweep, regularized: StepsToEpsSweep) -> BookFigure:
    """APMD against REINFORCE along the hardness knob ``1/gap`` of chapter 2.

    Top left: gradient steps to eps on log-log axes, with REINFORCE's exponential fits and
    APMD's power-law fit. Top right: APMD's resets next to exact mirror descent's. Bottom left:
    the lowest coverage of every run relative to the base coverage. Bottom right: the legend.
    """
    figure = new_figure(COLUMN_WIDTH, 6.0)
    panels = figure.subplot_mosaic([["steps", "resets"], ["coverage", "legend"]])
    steps_axes, resets_axes, coverage_axes = panels["steps"], panels["resets"], panels["coverage"]
    reinforce = METHOD_COLORS["REINFORCE"]
    for sweep, label, color, marker, style in ((unregularized, "REINFORCE, no KL", reinforce, "v", "--"),
                                               (regularized, "REINFORCE, KL to $\\pi_0$", reinforce, "o", "-")):
        knob = 1.0 / sweep.gaps
        steps_axes.plot(knob, sweep.steps_to_eps, marker, color=color, ms=4, label=label)
        grid = np.linspace(knob.min(), knob.max(), 60)
        steps_axes.plot(grid, 10.0 ** (sweep.fit.intercept + sweep.fit.slope * grid), color=color, lw=1, ls=style)
        ratio = sweep.min_log10_coverage - np.log10(sweep.base_coverage)
        coverage_axes.plot(knob, ratio, color=color, marker=marker, ls=style, ms=4, label=label)
    apmd_color = METHOD_COLORS["APMD"]
    knob = 1.0 / apmd.gaps
    steps_axes.plot(knob, apmd.steps_to_eps, "s", color=apmd_color, ms=4, label=f"APMD, $\\beta$ = {apmd.beta:g}, K = {apmd.inner_steps}")
    handles = steps_axes.get_legend_handles_labels()[0]
    handles.append(Line2D([], [], color=reinforce, lw=1, label="exponential fits (REINFORCE)"))
    if apmd.fit is not None:
        grid = np.geomspace(knob.min(), knob.max(), 60)
        (fit_line,) = steps_axes.plot(
            grid, 10.0 ** (apmd.fit.intercept + apmd.fit.exponent * np.log10(grid)), color=apmd_color, lw=1,
            label=f"APMD fit $\\propto (1/\\mathrm{{gap}})^{{{apmd.fit.exponent:.2f}}}$",
        )
        handles.append(fit_line)
    steps_axes.set_ylabel("gradient steps to $\\varepsilon$")
    resets_axes.plot(knob, apmd.resets_to_eps, "s", color=apmd_color, ms=4)
    (exact_line,) = resets_axes.plot(
        knob, apmd.mirror_descent_resets, "^", color=apmd_color, ms=6, mfc="none", label="exact mirror descent (resets)"
    )
    resets_axes.set_ylabel("reference resets to $\\varepsilon$")
    coverage_axes.plot(knob, np.log10(apmd.min_coverage_ratio), "s-", color=apmd_color, ms=4)
    half_line = coverage_axes.axhline(np.log10(0.5), color="0.4", ls="--", lw=1, label="half the base coverage")
    coverage_axes.set_ylabel("$\\log_{10}$(lowest / base coverage)")
    for axes in (steps_axes, resets_axes):
        axes.set_xscale("log")
        axes.set_yscale("log")
    for axes in (steps_axes, resets_axes, coverage_axes):
        axes.set_xlabel("hardness knob 1 / gap")
        axes.grid(alpha=0.3, which="both")
    coverage_axes.set_xscale("log")
    _legend_cell(panels["legend"], handles + [exact_line, half_line])
    return figure


def rate_figure(rate: MirrorDescentRate, instance_index: int = 0, floor: float = 1e-7) -> BookFigure:
    """Exact mirror descent's suboptimality against its bound ``beta E log(1/c_0) / T``.

    Top left: suboptimality (solid) and bound (dashed) against outer iterations ``T`` for every
    ``beta`` on one instance. Top right: the same curves against ``T / beta``, where they
    coincide. Bottom left: the resets to eps against ``beta`` for every instance, with a line of
    slope one. Bottom right: the legend of the top panels.
    """
    figure = new_figure(COLUMN_WIDTH, 6.0)
    panels = figure.subplot_mosaic([["t", "scaled"], ["resets", "legend"]])
    t_axes, scaled_axes, resets_axes = panels["t"], panels["scaled"], panels["resets"]
    t = rate.iterations[1:]
    colors = [series_style(index)["color"] for index in range(rate.betas.size)]
    for color, beta, suboptimality, bound in zip(
        colors, rate.betas, rate.suboptimality[instance_index], rate.bound[instance_index]
    ):
        shown = np.where(suboptimality[1:] > floor, suboptimality[1:], np.nan)
        t_axes.plot(t, shown, color=color, label=f"$\\beta$ = {beta:g}")
        t_axes.plot(t, bound[1:], color=color, ls="--", lw=1)
        scaled_axes.plot(t / beta, shown, color=color, lw=3.5 if beta == rate.betas[0] else 1.2)
    handles = t_axes.get_legend_handles_labels()[0] + [
        Line2D([], [], color="0.3", ls="--", lw=1, label="bound $\\beta\\,\\mathbb{E}\\log(1/c_0)/T$"),
        t_axes.axhline(rate.eps, color="0.4", ls=":", lw=1, label="$\\varepsilon$"),
    ]
    t_axes.set_xlabel("outer iterations (resets) $T$")
    scaled_axes.set_xlabel("$T / \\beta$")
    for axes in (t_axes, scaled_axes):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_ylim(bottom=floor)
        axes.set_ylabel("$J^\\star - J(\\pi_T)$")
        axes.grid(alpha=0.3, which="both")
    _legend_cell(panels["legend"], handles, title=f"top panels: instance {instance_index}")
    shades = ("k", "0.35", "0.6")
    for index, resets in enumerate(rate.resets_to_eps):
        reached = resets > 0
        resets_axes.plot(rate.betas[reached], resets[reached], "-", color=shades[index % len(shades)],
                         marker=MARKERS[index % len(MARKERS)], ms=5, label=f"instance {index}")
    reference = rate.resets_to_eps[rate.resets_to_eps > 0].max() * rate.betas / rate.betas.max()
    resets_axes.plot(rate.betas, reference, color="0.4", ls="--", lw=1, label="$T \\propto \\beta$")
    resets_axes.set_xscale("log")
    resets_axes.set_yscale("log")
    resets_axes.set_xticks(rate.betas, [f"{beta:g}" for beta in rate.betas])
    resets_axes.minorticks_off()
    resets_axes.set_xlabel("$\\beta$")
    resets_axes.set_ylabel(f"resets to $\\varepsilon$ = {rate.eps:g}")
    resets_axes.legend(loc="upper left")
    resets_axes.grid(alpha=0.3, which="both")
    return figure


def inner_steps_figure(sweep: InnerStepsSweep, accuracy: InnerAccuracySweep) -> BookFigure:
    """Where coverage preservation breaks, and how it follows the accuracy of the inner loops.

    Top: lowest coverage relative to the base coverage over the ``(eta, K)`` grid, each cell
    labelled with the gradient steps to eps ("-" where the budget ran out), and the line
    ``eta * beta * K = 16``. Bottom: the worst inner-loop KL of each run against the
    coverage it kept, the learning rate as the marker and ``K`` as the colour.
    """
    figure = new_figure(COLUMN_WIDTH, 7.4)
    top, bottom = figure.subfigures(2, 1, height_ratios=[1, 1.05])
    grid_axes, kl_axes = top.subplots(), bottom.subplots()
    ratio = np.log10(np.maximum(sweep.min_coverage_ratio, 1e-300))
    norm = Normalize(vmin=min(-6.0, float(ratio.min())), vmax=0.0)
    image = grid_axes.imshow(ratio, cmap="magma", norm=norm, origin="lower", aspect="auto")
    for i in range(sweep.etas.size):
        for j in range(sweep.inner_steps.size):
            text = f"{sweep.steps_to_eps[i, j]:,}" if sweep.reached_eps[i, j] else "-"
            shade = "k" if ratio[i, j] > 0.6 * norm.vmin else "w"
            grid_axes.text(j, i, text, ha="center", va="center", color=shade)
    # The boundary eta * beta * K = 16, drawn between cells (the grid doubles K from column to column).
    boundary = np.log2(16.0 / (sweep.beta * sweep.etas * sweep.inner_steps[0])) - 0.5
    rows = np.arange(sweep.etas.size)
    grid_axes.plot(np.repeat(boundary, 2), np.column_stack([rows - 0.5, rows + 0.5]).ravel(), color=PALETTE[5], lw=2.5)
    grid_axes.set_xticks(range(sweep.inner_steps.size), [str(k) for k in sweep.inner_steps])
    grid_axes.set_yticks(range(sweep.etas.size), [f"{e:g}" for e in sweep.etas])
    grid_axes.set_xlim(-0.5, sweep.inner_steps.size - 0.5)
    grid_axes.set_xlabel("inner gradient steps per reset K")
    grid_axes.set_ylabel("learning rate $\\eta$")
    grid_axes.set_title(f"$\\beta$ = {sweep.beta:g}; cell: gradient steps to $\\varepsilon$; blue line: $\\eta\\beta K = 16$")
    top.colorbar(image, ax=grid_axes, label="$\\log_{10}$(lowest / base coverage)")
    markers = ("o", "s", "^", "D", "v", "P")
    colors = [PALETTE[j % len(PALETTE)] for j in range(accuracy.inner_steps.size)]
    for i, eta in enumerate(accuracy.etas):
        for j, steps in enumerate(accuracy.inner_steps):
            kl_axes.plot(
                accuracy.max_inner_kl[i, j], np.log10(accuracy.min_coverage_ratio[i, j]), markers[i % len(markers)],
                color=colors[j], ms=7, mec="k", mew=0.5, alpha=0.9,
            )
    for i, eta in enumerate(accuracy.etas):
        kl_axes.plot([], [], markers[i % len(markers)], color="0.7", mec="k", mew=0.5, ms=7, label=f"$\\eta$ = {eta:g}")
    for j, steps in enumerate(accuracy.inner_steps):
        kl_axes.plot([], [], "s", color=colors[j], ms=7, label=f"K = {steps}")
    kl_axes.axhline(np.log10(accuracy.coverage_fraction), color="0.4", ls="--", lw=1, label="half the base coverage")
    kl_axes.set_xscale("log")
    kl_axes.set_xlabel("worst inner-loop error $\\max_t \\mathrm{KL}(\\pi_{t+1} \\Vert \\pi^\\star_{t+1})$")
    kl_axes.set_ylabel("$\\log_{10}$(lowest / base coverage)")
    kl_axes.legend(ncols=3, loc="lower left", handletextpad=0.3, columnspacing=0.9)
    kl_axes.grid(alpha=0.3, which="both")
    kl_axes.set_title(f"{accuracy.max_steps} gradient steps per run")
    return figure


REWARD_NORM = Normalize(vmin=0.0, vmax=1.0)
"""Colour scale of :func:`figure_3`: the expected reward, as in Figure 2b."""


def _reward_map(axes, landscape: Landscape):
    """The expected reward over the plane, filled, with the panel's regularized objective as contour lines."""
    image = axes.contourf(landscape.u, landscape.v, landscape.reward, levels=np.linspace(0.0, 1.0, 11),
                          cmap="viridis", norm=REWARD_NORM)
    return image


def _objective_lines(axes, landscape: Landscape, window: tuple[slice, slice] | None = None, levels: int = 8) -> None:
    rows, columns = window if window is not None else (slice(None), slice(None))
    axes.contour(landscape.u[columns], landscape.v[rows], landscape.objective[rows, columns], levels=levels,
                 colors="white", linewidths=0.7, alpha=0.8)


def _path_on(axes, path: np.ndarray, color: str, lw: float = 2.0) -> None:
    """A run's path over the plane, outlined in black so that it reads on every colour, from a black dot."""
    axes.plot(path[:, 0], path[:, 1], color="black", lw=lw + 1.8, solid_capstyle="round")
    axes.plot(path[:, 0], path[:, 1], color=color, lw=lw, solid_capstyle="round")
    axes.plot(path[:1, 0], path[:1, 1], "o", color="black", mec="white", ms=6)


def _window(landscape: Landscape, path: np.ndarray, margin: tuple[float, float]) -> tuple[slice, slice]:
    low, high = path.min(axis=0) - margin, path.max(axis=0) + margin
    columns = np.flatnonzero((landscape.u >= low[0]) & (landscape.u <= high[0]))
    rows = np.flatnonzero((landscape.v >= low[1]) & (landscape.v <= high[1]))
    if columns.size < 2 or rows.size < 2:
        return slice(None), slice(None)
    return slice(rows[0], rows[-1] + 1), slice(columns[0], columns[-1] + 1)


def _segment(data: Figure3Data, step: int) -> slice:
    """Records of APMD's inner loop that starts at gradient step ``step``."""
    steps = data.apmd.trajectory.gradient_steps
    start = int(np.searchsorted(steps, step))
    stop = int(np.searchsorted(steps, min(step + data.inner_steps, steps[-1])))
    return slice(start, stop + 1)


def figure_3(data: Figure3Data) -> BookFigure:
    """Paper Figure 3 on the plane: the landscape under weak, strong and reset regularization, in the run of Figure 2a.

    Every panel fills the plane ``(u, v)`` with the expected reward (shared colour bar) and
    draws the regularized objective of the panel as white contour lines; each path is
    outlined in black and starts at a black dot. (a) ``J_beta(.; pi_0)`` at REINFORCE's
    strength with REINFORCE's path (the surface of paper Figure 2b); (b) the same at APMD's
    strength, with APMD's first inner loop; (c) the subproblems ``J_beta(.; pi_t)`` APMD
    solves at the selected resets ``t``, each drawn as contour lines around the segment of the
    path that ascends it (``K`` steps from its reference, the labelled dot), on the finer grid of
    the stack.
    """
    figure = new_figure(COLUMN_WIDTH, 6.6)
    top, bottom = figure.subfigures(2, 1, height_ratios=(1.0, 1.05))
    weak_axes, strong_axes = top.subplots(1, 2, sharey=True)
    first = _segment(data, 0)
    for axes, landscape, segment, color, title in (
        (weak_axes, data.weak, slice(None), METHOD_COLORS["REINFORCE"],
         f"(a) fixed reference, weak $\\beta$ = {data.weak_beta:.3g}"),
        (strong_axes, data.strong, first, METHOD_COLORS["APMD"],
         f"(b) fixed reference, strong $\\beta$ = {data.strong_beta:.3g}"),
    ):
        image = _reward_map(axes, landscape)
        _objective_lines(axes, landscape)
        _path_on(axes, landscape.path[segment], color)
        axes.set_title(title, loc="left")
        axes.set_xlabel("u: optimal vs near miss")
    weak_axes.set_ylabel("v: rewarding vs zero")
    stack_axes = bottom.subplots()
    base = data.stack[0]
    _reward_map(stack_axes, base)
    levels = list(zip(data.stack, data.stack_resets, data.stack_steps))
    for index, (landscape, reset, step) in enumerate(levels):
        segment = _segment(data, int(step))
        _objective_lines(stack_axes, landscape, _window(landscape, landscape.path[segment], STACK_MARGIN), levels=5)
        _path_on(stack_axes, landscape.path[segment], METHOD_COLORS["APMD"], lw=1.4)
        if index in (0, len(levels) - 1):
            first = index == 0
            stack_axes.annotate(f"t = {reset}", landscape.reference, xytext=(8 if first else -8, 0),
                                textcoords="offset points", ha="left" if first else "right", va="center",
                                fontsize=8, fontweight="bold", color="white" if first else "black")
    resets = ", ".join(str(reset) for _, reset, _ in levels)
    stack_axes.set_title(f"(c) resets: APMD's subproblems at resets t = {resets} ($\\beta$ = {data.strong_beta:.3g}, "
                         f"K = {data.inner_steps})", loc="left")
    stack_axes.set_xlabel("u: optimal vs near miss")
    stack_axes.set_ylabel("v: rewarding vs zero")
    figure.colorbar(image, ax=stack_axes, label="expected reward $J(\\pi)$", ticks=np.linspace(0.0, 1.0, 6))
    return figure


# --- the widget ------------------------------------------------------------------------------

WIDGET_RECORDS = 90
SUPERSCRIPTS = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


@lru_cache(maxsize=1)
def _widget_reinforce_beta(gap: float) -> float:
    instance = collapse_instance(gap)
    return strongest_eps_optimal_beta(instance, instance.gap / 2)


@lru_cache(maxsize=4)
def _widget_reinforce_runs(eta: float, budget: int) -> tuple[CollapseRun, CollapseRun]:
    """The widget's REINFORCE runs (drawn, and stopped at eps), shared by every frame: no APMD slider moves them."""
    instance = collapse_instance(FIGURE_GAP)
    beta = _widget_reinforce_beta(FIGURE_GAP)
    settings = {"eta": eta, "n_iterations": budget, "beta": beta, "progress": False}
    drawn = exact_collapse_run(instance, **settings, n_records=WIDGET_RECORDS)
    first = exact_collapse_run(instance, **settings, eps=instance.gap / 2, n_records=2)
    return drawn, first


def _power_of_ten(value: float, _position: int) -> str:
    """A log-axis tick label in plain text (``10`` with a superscript), no mathtext to parse."""
    exponent = np.log10(value) if value > 0 else np.nan
    if not np.isfinite(exponent) or abs(exponent - round(exponent)) > 1e-9:
        return ""
    return "10" + str(round(exponent)).translate(SUPERSCRIPTS)


def _widget_curves(axes_pair, run: CollapseRun, color: str, label: str) -> None:
    x = _step_axis(run.trajectory.gradient_steps)
    axes_pair[0].plot(x, run.trajectory.reward, color=color, label=label)
    axes_pair[1].plot(x, run.trajectory.log10_coverage[:, 0], color=color, label=label)


def _first_eps_text(run: CollapseRun) -> str:
    """What a run stopped at eps reports: its first eps-optimal step, or that the budget ran out."""
    return f"ε-optimal at step {run.steps_to_eps:,}" if run.reached_eps else "not ε-optimal"


def apmd_explorer_figure(beta: float, inner_steps: int, eta: float, budget: int) -> BookFigure:
    """Widget figure: REINFORCE and APMD on the gap-0.03 member, same learning rate and step budget.

    REINFORCE keeps the base model as its fixed reference at the strongest eps-optimal strength
    (the protocol of the paper's appendix C); APMD resets its reference every ``inner_steps``
    gradient steps at strength ``beta``. Reward (left) and base-10 log coverage (right)
    against gradient steps. The layout is fixed, so a redraw costs little more than the two
    APMD runs (one to draw, one stopped at eps; the REINFORCE pair is shared by every frame
    with the same learning rate and budget).
    """
    beta = check_positive("beta", beta)
    inner_steps = check_count("inner_steps", inner_steps)
    eta = check_positive("eta", eta)
    budget = check_count("budget", budget)
    instance = collapse_instance(FIGURE_GAP)
    eps = instance.gap / 2
    reinforce_beta = _widget_reinforce_beta(FIGURE_GAP)
    reinforce, reinforce_first = _widget_reinforce_runs(eta, budget)
    settings = {"beta": beta, "inner_steps": inner_steps, "eta": eta, "gradient_steps": budget, "progress": False}
    apmd = exact_apmd_run(instance, **settings, n_records=WIDGET_RECORDS)
    apmd_first = exact_apmd_run(instance, **settings, eps=eps, n_records=2)
    figure = new_figure(COLUMN_WIDTH, 4.4, constrained=False)
    axes_pair = figure.subplots(
        1, 2, gridspec_kw={"left": 0.09, "right": 0.98, "bottom": 0.27, "top": 0.8, "wspace": 0.3}
    )
    _widget_curves(axes_pair, reinforce, METHOD_COLORS["REINFORCE"], f"REINFORCE, KL to base, β = {reinforce_beta:.3g}")
    _widget_curves(axes_pair, apmd, METHOD_COLORS["APMD"], f"APMD, β = {beta:.3g}, K = {inner_steps}")
    axes_pair[0].axhline(instance.optimal_value - eps, color="k", ls=":", lw=1, label="$J^\\star - \\varepsilon$ (left)")
    axes_pair[0].set_ylim(0.0, 1.02)
    axes_pair[0].set_ylabel("expected reward")
    base = np.log10(instance.base_coverage)
    axes_pair[1].axhline(base, color="0.5", ls=":", lw=1, label="base coverage (right)")
    axes_pair[1].axhline(base - np.log10(2.0), color="0.5", ls="-.", lw=1, label="half of it (right)")
    axes_pair[1].set_ylabel("$\\log_{10}$ coverage")
    for axes in axes_pair:
        axes.set_xscale("log")
        axes.xaxis.set_major_formatter(_power_of_ten)
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_xlabel("gradient steps + 1")
        axes.grid(alpha=0.3)
    handles = axes_pair[0].get_lines() + axes_pair[1].get_lines()[2:]
    figure.legend(handles=[handles[i] for i in (0, 2, 1, 3, 4)], loc="lower center", ncols=3, frameon=False,
                  bbox_to_anchor=(0.5, 0.0), columnspacing=1.0, handlelength=1.6)
    figure.suptitle(
        f"gap {instance.gap}, η {eta:.3g}, ηβK = {eta * beta * inner_steps:.3g}\n"
        f"REINFORCE: {_first_eps_text(reinforce_first)}, lowest coverage $10^{{{reinforce.trajectory.min_log10_coverage:.1f}}}$\n"
        f"APMD: {_first_eps_text(apmd_first)}, lowest coverage $10^{{{apmd.trajectory.min_log10_coverage:.1f}}}$",
        fontsize=9, y=0.99,
    )
    return figure


def apmd_widget() -> Explorable:
    """``beta``, inner steps, learning rate and step budget in; REINFORCE vs APMD side by side out.

    The static stand-in holds 24 frames: four ``beta`` by six inner step counts, at the
    learning rate 4 and a budget of 300,000 gradient steps.
    """
    sliders = [
        Slider("beta", "APMD β", 0.02, 2.0, 0.5, (0.1, 0.25, 0.5, 1.0), log=True),
        Slider("inner_steps", "inner steps K", 1, 64, 8, (1, 2, 4, 8, 16, 32), integer=True),
        Slider("eta", "learning rate", 0.25, 16.0, 4.0, (4.0,), log=True),
        Slider("budget", "gradient-step budget", 100, 1_000_000, 300_000, (300_000,), integer=True, step=100),
    ]
    return explorable(apmd_explorer_figure, sliders, "REINFORCE against APMD on the collapse family (gap 0.03)")
