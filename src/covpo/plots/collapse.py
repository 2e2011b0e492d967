"""Figures and the widget of chapter 2, coverage collapse (paper section 2.1, appendix C).

Every figure is at most the content column's width (:data:`~covpo.plots.style.COLUMN_WIDTH`)
with at most two panels side by side; legends that would crowd a panel sit under the figure.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.lines import Line2D

from covpo.experiments.collapse import (
    BetaEscapeMap,
    BetaSweep,
    CollapseRun,
    ESCAPE_OUTCOMES,
    Figure1aData,
    Figure2bcData,
    Landscape,
    LearningRateGrid,
    SeedSweep,
    StepsToEpsSweep,
    collapse_instance,
    exact_collapse_run,
    simplex_path,
)
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, PALETTE, method_colour
from covpo.plots.widgets import Explorable, Slider, explorable
from covpo.validation import check_count, check_nonnegative, check_positive, check_probability

CLASS_NAMES = ("optimal", "near miss", "zero-reward block")
#: Colour of each response class, the answer classes' colours of the book's key
#: (:data:`~covpo.plots.style.COLOUR_KEY`).
CLASS_COLORS = (method_colour("optimal answer"), method_colour("near miss"), method_colour("zero-reward block"))
SQRT3_HALF = np.sqrt(3.0) / 2.0
#: Colour of target and threshold lines (the key's reference lines).
EPS_COLOR = method_colour("target line")
LOWEST_COLOR = "0.4"
#: Colour of every run of REINFORCE (with or without a KL penalty to the base model), the key's.
REINFORCE_COLOR = method_colour("REINFORCE")


def _step_axis(steps: np.ndarray) -> np.ndarray:
    """Steps shifted by one so that step 0 shows on a log axis."""
    return np.asarray(steps, dtype=float) + 1.0


def _legend_below(figure: BookFigure, handles: list, ncols: int) -> None:
    """One legend for the whole figure, under its panels."""
    figure.legend(handles=handles, loc="outside lower center", ncols=ncols, frameon=False,
                  columnspacing=1.2, handlelength=2.0)


def collapse_run_figure(run: CollapseRun, title: str) -> BookFigure:
    """Reward and log10 coverage against gradient steps, with the lowest-coverage and eps-optimal steps marked."""
    trajectory = run.trajectory
    steps = _step_axis(trajectory.gradient_steps)
    lowest = int(np.argmin(trajectory.log10_coverage[:, 0]))
    figure = new_figure(COLUMN_WIDTH, 3.6)
    reward_axes, coverage_axes = figure.subplots(1, 2)
    reward_axes.plot(steps, trajectory.reward, color=REINFORCE_COLOR, label="reward $J(\\pi_t)$")
    reward_axes.axhline(trajectory.optimal_value, color="0.4", lw=1, ls=":", label="$J^\\star$ (left)")
    if run.eps is not None:
        reward_axes.axhline(trajectory.optimal_value - run.eps, color=EPS_COLOR, lw=1, ls="--",
                            label="$J^\\star - \\varepsilon$ (left)")
    reward_axes.set_ylabel("expected reward $J(\\pi_t)$")
    coverage_axes.plot(steps, trajectory.log10_coverage[:, 0], color=REINFORCE_COLOR, label="coverage")
    coverage_axes.axhline(np.log10(run.instance.base_coverage), color="0.4", lw=1, ls=":",
                          label="base coverage (right)")
    coverage_axes.set_ylabel("$\\log_{10}$ coverage $\\pi_t(y^\\star)$")
    for axes in (reward_axes, coverage_axes):
        axes.axvline(steps[lowest], color=LOWEST_COLOR, lw=1, ls="-.", label="lowest coverage")
        if run.reached_eps:
            axes.axvline(steps[-1], color="k", lw=1, ls="--", label="first $\\varepsilon$-optimal step")
        axes.set_xscale("log")
        axes.set_xlabel("gradient steps + 1")
        axes.grid(alpha=0.3)
    handles = reward_axes.get_lines()[1:] + coverage_axes.get_lines()[1:2]
    _legend_below(figure, handles, ncols=3)
    figure.suptitle(title)
    return figure


def _ternary(masses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cartesian coordinates on the simplex: zero block bottom left, near miss bottom right, optimal top."""
    optimal, near_miss = masses[:, 0], masses[:, 1]
    return near_miss + optimal / 2.0, optimal * SQRT3_HALF


def _draw_triangle(axes, labels: tuple[str, str, str]) -> None:
    """The simplex's outline with its corners named, axes hidden."""
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, SQRT3_HALF], [0.0, 0.0]])
    axes.plot(corners[:, 0], corners[:, 1], color="0.3", lw=1)
    for (x, y), label in zip(corners[:3], labels):
        axes.annotate(label, (x, y), ha="center", va="top" if y == 0 else "bottom",
                      xytext=(0, -3 if y == 0 else 3), textcoords="offset points")
    axes.set_aspect("equal")
    axes.set_xlim(-0.12, 1.12)
    axes.set_ylim(-0.2, 1.0)
    axes.axis("off")


def figure_1a_simplex(data: Figure1aData, title: str = "") -> BookFigure:
    """Paper Figure 1a: the weak fixed-reference regime, where the KL penalty pulls back only after the collapse.

    Left: the run on the probability simplex (optimal / near miss / zero block) until it is
    eps-optimal, the diamond where the penalty's pull first matches the reward's. Right: the
    two pulls on ``u`` (optimal against the near miss) against gradient steps, on a log scale,
    with the log10 coverage on the right-hand axis.
    """
    figure = new_figure(COLUMN_WIDTH, 3.9)
    simplex_axes, force_axes = figure.subplots(1, 2, width_ratios=[1.0, 1.2])
    _draw_triangle(simplex_axes, ("zero-reward\nblock", "near miss", "optimal"))
    x, y = _ternary(data.path.masses)
    simplex_axes.plot(x, y, color=REINFORCE_COLOR, lw=1.5)
    simplex_axes.plot(x[:1], y[:1], "o", color="k")
    simplex_axes.plot(x[-1:], y[-1:], "s", color="k")
    steps = _step_axis(data.path.gradient_steps)
    positive = data.reward_pull > 0
    force_axes.plot(steps[positive], data.reward_pull[positive], color=CLASS_COLORS[1], lw=1.8,
                    label="reward: towards the near miss")
    restoring = data.kl_pull > 0
    force_axes.plot(steps[restoring], data.kl_pull[restoring], color=CLASS_COLORS[0], lw=1.8, ls="-.",
                    label=f"KL to $\\pi_0$ ($\\beta$ = {data.beta:.3g}): back")
    force_axes.set_yscale("log")
    force_axes.set_xscale("log")
    force_axes.set_xlabel("gradient steps + 1")
    force_axes.set_ylabel("pull on $u$")
    force_axes.grid(alpha=0.3)
    coverage_axes = force_axes.twinx()
    coverage_axes.plot(steps, data.path.log10_masses[:, 0], color="0.35", lw=1, ls="--", label="$\\log_{10}$ coverage (right)")
    coverage_axes.set_ylabel("$\\log_{10}$ coverage")
    if data.crossing is not None:
        simplex_axes.plot(x[data.crossing], y[data.crossing], "D", color=CLASS_COLORS[0], ms=6)
        force_axes.axvline(steps[data.crossing], color="k", lw=1, ls=":", label="penalty's pull catches up")
    simplex_axes.set_title("circle: base model, square: first $\\varepsilon$-optimal", fontsize=9)
    handles = force_axes.get_lines()[:2] + coverage_axes.get_lines() + force_axes.get_lines()[2:]
    _legend_below(figure, handles, ncols=2)
    if title:
        figure.suptitle(title)
    return figure


def steps_along_knob_figure(unregularized: StepsToEpsSweep, regularized: StepsToEpsSweep) -> BookFigure:
    """Steps to eps-optimality along the hardness knob ``1/gap`` with exponential fits, and the lowest coverage.

    One column per sweep (no KL; KL to the base model at the strongest eps-compatible beta).
    Top: steps to eps, the exponential fit (its rate in the corner) and the Best-of-N sample
    size from the base model. Bottom: the lowest coverage of every run, against the base
    coverage.
    """
    figure = new_figure(COLUMN_WIDTH, 5.8)
    panels = figure.subplots(2, 2, sharex="col")
    sweeps = ((unregularized, "no KL", REINFORCE_COLOR), (regularized, "KL to $\\pi_0$, strongest $\\beta$", REINFORCE_COLOR))
    budget_spent = False
    for column, (sweep, label, color) in enumerate(sweeps):
        steps_axes, coverage_axes = panels[0, column], panels[1, column]
        knob = 1.0 / sweep.gaps
        reached = sweep.reached_eps
        budget_spent |= bool(np.any(~reached))
        steps_axes.plot(knob[reached], sweep.steps_to_eps[reached], "o", color=color)
        steps_axes.plot(knob[~reached], sweep.steps_to_eps[~reached], "^", color=color, mfc="none")
        if sweep.fit is not None:
            grid = np.linspace(knob.min(), knob.max(), 50)
            steps_axes.plot(grid, 10.0 ** (sweep.fit.intercept + sweep.fit.slope * grid), color=color, lw=1)
            steps_axes.text(
                0.97, 0.2, f"fit $10^{{{sweep.fit.slope:.3f}/\\mathrm{{gap}}}}$\n$R^2$ = {sweep.fit.r_squared:.4f}",
                transform=steps_axes.transAxes, ha="right", va="bottom",
            )
        steps_axes.plot(knob, sweep.best_of_n_samples, "k--", lw=1)
        steps_axes.set_yscale("log")
        steps_axes.set_title(f"REINFORCE, {label}")
        coverage_axes.plot(knob, sweep.min_log10_coverage, "o-", color=color)
        coverage_axes.axhline(np.log10(sweep.base_coverage[0]), color="0.4", ls=":", lw=1)
        coverage_axes.set_xlabel("hardness knob 1 / gap")
    panels[0, 0].set_ylabel("gradient steps or samples")
    panels[1, 0].set_ylabel("lowest $\\log_{10}$ coverage")
    for axes in panels.flat:
        axes.grid(alpha=0.3)
    handles = [
        Line2D([], [], marker="o", ls="none", color=REINFORCE_COLOR, label="REINFORCE: steps to $\\varepsilon$"),
        Line2D([], [], color=REINFORCE_COLOR, lw=1, label="REINFORCE: exponential fit"),
        Line2D([], [], color="k", ls="--", lw=1, label=f"Best-of-N samples ($\\delta$ = {unregularized.delta:g})"),
        Line2D([], [], color="0.4", ls=":", lw=1, label="base coverage"),
    ]
    if budget_spent:
        handles.insert(1, Line2D([], [], marker="^", mfc="none", ls="none", color=REINFORCE_COLOR, label="REINFORCE: budget spent"))
    _legend_below(figure, handles, ncols=2)
    return figure


def _shade_smooth_range(axes, limit: float) -> None:
    """Shade the learning rates a first-order analysis allows, ``eta <= 2 / L``, on an axis in ``eta``."""
    axes.axvspan(axes.get_xlim()[0], limit, color="0.9", zorder=0)
    axes.axvline(limit, color="0.4", lw=1, ls=":")


def smooth_range_figure(grid: LearningRateGrid, comparison_eta: float | None = None) -> BookFigure:
    """Steps to eps and lowest coverage along the knob ``1 / gap`` at every learning rate in the smoothness range.

    Left: steps to eps at each rate with ``eta <= 2 / L`` (dots) and its exponential fit (line);
    ``comparison_eta``, a rate of the grid outside the range, is drawn in grey for comparison.
    Right: the lowest coverage of every run, against the base coverage and the collapse threshold.
    """
    figure = new_figure(COLUMN_WIDTH, 3.6)
    steps_axes, coverage_axes = figure.subplots(1, 2, sharex=True)
    knob = 1.0 / grid.gaps
    shown = [k for k in np.flatnonzero(grid.in_smooth_range)]
    if comparison_eta is not None:
        shown += [int(np.flatnonzero(np.isclose(grid.etas, comparison_eta))[0])]
    colors = colormaps["viridis"](np.linspace(0.0, 0.85, int(grid.in_smooth_range.sum())))
    for index, k in enumerate(shown):
        color = colors[index] if grid.in_smooth_range[k] else "0.55"
        label = f"$\\eta$ = {grid.etas[k]:g}" + ("" if grid.in_smooth_range[k] else " (outside)")
        reached = grid.reached_eps[k]
        steps_axes.plot(knob[reached], grid.steps[k, reached], "o", color=color, ms=4, label=label)
        fit = grid.fits.fits[k]
        if fit is not None:
            steps_axes.plot(knob, 10.0 ** (fit.intercept + fit.slope * knob), color=color, lw=1)
        coverage_axes.plot(knob, grid.min_log10_coverage[k], "o-", color=color, ms=4, lw=1)
    coverage_axes.axhline(np.log10(grid.base_coverage), color="0.4", ls=":", lw=1)
    coverage_axes.axhline(np.log10(grid.base_coverage / grid.collapse_factor), color=EPS_COLOR, ls="--", lw=1)
    steps_axes.set_yscale("log")
    steps_axes.set_ylabel("gradient steps to $\\varepsilon$")
    coverage_axes.set_ylabel("lowest $\\log_{10}$ coverage")
    for axes in (steps_axes, coverage_axes):
        axes.set_xlabel("hardness knob 1 / gap")
        axes.grid(alpha=0.3)
    handles = steps_axes.get_lines()[::2] + [
        Line2D([], [], color="0.4", ls=":", lw=1, label="base coverage"),
        Line2D([], [], color=EPS_COLOR, ls="--", lw=1, label="a tenth of it"),
    ]
    _legend_below(figure, handles, ncols=4)
    return figure


def learning_rate_figure(grid: LearningRateGrid, gaps: tuple[float, ...] | None = None) -> BookFigure:
    """Steps to eps and lowest coverage of exact REINFORCE against the learning rate, the smoothness range shaded.

    One line per gap of ``gaps`` (by default the easiest, middle and hardest of the grid); the
    shaded band is ``eta <= 2 / L``. Open markers: runs that spent the budget.
    """
    figure = new_figure(COLUMN_WIDTH, 3.6)
    steps_axes, coverage_axes = figure.subplots(1, 2, sharex=True)
    if gaps is None:
        rows = sorted({0, grid.gaps.size // 2, grid.gaps.size - 1})
    else:
        rows = [int(np.argmin(np.abs(grid.gaps - gap))) for gap in gaps]
    colors = colormaps["viridis"](np.linspace(0.0, 0.85, len(rows)))
    for color, row in zip(colors, rows):
        reached = grid.reached_eps[:, row]
        label = f"1 / gap = {1.0 / grid.gaps[row]:.3g}"
        steps_axes.plot(grid.etas, grid.steps[:, row], "-", color=color, lw=1)
        steps_axes.plot(grid.etas[reached], grid.steps[reached, row], "o", color=color, ms=4, label=label)
        steps_axes.plot(grid.etas[~reached], grid.steps[~reached, row], "^", color=color, mfc="none", ms=5)
        coverage_axes.plot(grid.etas, grid.min_log10_coverage[:, row], "o-", color=color, ms=4, lw=1)
    coverage_axes.axhline(np.log10(grid.base_coverage), color="0.4", ls=":", lw=1)
    coverage_axes.axhline(np.log10(grid.base_coverage / grid.collapse_factor), color=EPS_COLOR, ls="--", lw=1)
    steps_axes.set_yscale("log")
    steps_axes.set_ylabel("gradient steps to $\\varepsilon$")
    coverage_axes.set_ylabel("lowest $\\log_{10}$ coverage")
    for axes in (steps_axes, coverage_axes):
        axes.set_xscale("log")
        axes.set_xlabel("learning rate $\\eta$")
        axes.grid(alpha=0.3)
        _shade_smooth_range(axes, grid.step_limit)
    handles = steps_axes.get_lines()[1::3] + [
        Line2D([], [], color="0.4", ls=":", lw=1, label="base coverage"),
        Line2D([], [], color=EPS_COLOR, ls="--", lw=1, label="a tenth of it"),
    ]
    _legend_below(figure, handles, ncols=3)
    return figure


#: Colour of each outcome of a fixed-reference run, shared by :func:`beta_sweep_figure` and
#: :func:`beta_escape_map_figure` (Okabe-Ito): escapes green, collapses vermilion; outcomes, not methods (the
#: figures draw no method).
ESCAPE_COLORS = {
    "collapsed": PALETTE[1],
    "optimum not eps-optimal": "#999999",
    "escaped": PALETTE[2],
    "budget exhausted": PALETTE[5],
}
ESCAPE_LABELS = {"optimum not eps-optimal": "optimum not $\\varepsilon$-optimal"}


def beta_sweep_figure(sweep: BetaSweep, title: str) -> BookFigure:
    """For each fixed-reference ``beta``: lowest coverage of the run, and suboptimality of the regularized optimum."""
    figure = new_figure(COLUMN_WIDTH, 4.0)
    coverage_axes, bias_axes = figure.subplots(1, 2, sharex=True)
    outcomes = (
        (sweep.escapes, "reached $\\varepsilon$ without collapse", ESCAPE_COLORS["escaped"], "o"),
        (sweep.reached_eps & sweep.collapsed, "reached $\\varepsilon$ after collapse", PALETTE[3], "s"),
        (~sweep.reached_eps & sweep.optimum_eps_optimal, "budget spent, collapsed", ESCAPE_COLORS["collapsed"], "v"),
        (~sweep.reached_eps & ~sweep.optimum_eps_optimal, "optimum not $\\varepsilon$-optimal",
         ESCAPE_COLORS["optimum not eps-optimal"], "x"),
    )
    for mask, label, color, marker in outcomes:
        coverage_axes.plot(sweep.betas[mask], sweep.min_log10_coverage[mask], marker, color=color, label=label, ls="none")
    coverage_axes.axhline(np.log10(sweep.base_coverage), color="0.4", ls=":", lw=1, label="base coverage (left)")
    coverage_axes.axhline(
        np.log10(sweep.base_coverage / sweep.collapse_factor), color=ESCAPE_COLORS["collapsed"], ls="--", lw=1,
        label="collapse threshold (left)",
    )
    coverage_axes.set_ylabel("lowest $\\log_{10}$ coverage")
    bias_axes.plot(sweep.betas, sweep.optimum_suboptimality, "k.-")
    bias_axes.axhline(sweep.eps, color="k", ls="--", lw=1, label="$\\varepsilon$ (right)")
    bias_axes.set_yscale("log")
    bias_axes.set_ylim(bottom=max(1e-16, 0.5 * float(sweep.optimum_suboptimality.min())))
    bias_axes.set_ylabel("$J^\\star - J(\\pi_\\beta)$ of the optimum")
    for axes in (coverage_axes, bias_axes):
        axes.set_xscale("log")
        axes.set_xlabel("$\\beta$ (KL to the base model)")
        axes.grid(alpha=0.3)
    handles = coverage_axes.get_lines() + bias_axes.get_lines()[1:]
    _legend_below(figure, handles, ncols=2)
    figure.suptitle(title)
    return figure


def beta_escape_map_figure(escape_map: BetaEscapeMap) -> BookFigure:
    """Outcome of fixed-reference REINFORCE over the ``(beta, 1/gap)`` grid: the escape window closes.

    The legend lists the outcomes some cell has, so that it shows no colour the map does not use.
    """
    figure = new_figure(COLUMN_WIDTH, 3.6)
    axes = figure.add_subplot()
    colormap = ListedColormap([ESCAPE_COLORS[name] for name in ESCAPE_OUTCOMES])
    log_betas = np.log10(escape_map.betas)
    half_step = (log_betas[1] - log_betas[0]) / 2 if log_betas.size > 1 else 0.5
    beta_edges = 10.0 ** np.concatenate([log_betas - half_step, log_betas[-1:] + half_step])
    rows = np.arange(escape_map.gaps.size + 1) - 0.5
    axes.pcolormesh(
        beta_edges, rows, escape_map.outcome_codes, cmap=colormap, vmin=-0.5, vmax=len(ESCAPE_OUTCOMES) - 0.5,
        edgecolors="white", linewidth=0.5,
    )
    axes.set_xscale("log")
    axes.set_yticks(np.arange(escape_map.gaps.size), [f"{gap:g}" for gap in escape_map.gaps])
    axes.set_ylabel("gap (harder downwards)")
    axes.invert_yaxis()
    axes.set_xlabel("$\\beta$ (KL to the base model)")
    shown = [name for name in ESCAPE_OUTCOMES if np.any(escape_map.outcome == name)]
    handles = [
        Line2D([], [], marker="s", ms=8, ls="none", color=ESCAPE_COLORS[name], label=ESCAPE_LABELS.get(name, name))
        for name in shown
    ]
    _legend_below(figure, handles, ncols=len(shown))
    axes.set_title(f"fixed-reference REINFORCE, $\\varepsilon$ = gap/2, budget {escape_map.max_steps:,} steps")
    return figure


def _surface_axes(
    figure: BookFigure, box: list[float], landscapes: tuple[Landscape, ...], colour: np.ndarray, label: str, cmap: str,
    path_colors: tuple[str, ...], zlabel: str,
) -> None:
    """One 3-D panel in ``box`` (figure fraction): the first landscape's surface coloured by ``colour``, every landscape's run on it."""
    landscape = landscapes[0]
    axes = figure.add_axes(box, projection="3d", computed_zorder=False)
    axes.set_facecolor("none")
    grid_u, grid_v = np.meshgrid(landscape.u, landscape.v)
    norm = Normalize(vmin=float(np.nanmin(colour)), vmax=float(np.nanmax(colour)))
    axes.plot_surface(
        grid_u, grid_v, landscape.objective, facecolors=colormaps[cmap](norm(colour)), rstride=2, cstride=2,
        linewidth=0, antialiased=False, shade=False, zorder=1,
    )
    for order, (run, color) in enumerate(zip(landscapes, path_colors)):
        if run.path is None:
            continue
        axes.plot(*run.path.T, run.path_objective, color="white", lw=3.5, zorder=9 + 3 * order)
        axes.plot(*run.path.T, run.path_objective, color=color, lw=1.8, zorder=10 + 3 * order)
        axes.plot(*run.path[:1].T, run.path_objective[:1], "o", color="k", ms=5, zorder=11 + 3 * order)
        axes.plot(*run.path[-1:].T, run.path_objective[-1:], "s", color=color, mec="k", ms=5, zorder=11 + 3 * order)
    colorbar_axes = figure.add_axes([0.88, box[1] + 0.25 * box[3], 0.025, 0.5 * box[3]])
    figure.colorbar(ScalarMappable(norm=norm, cmap=colormaps[cmap]), cax=colorbar_axes, label=label)
    axes.set_xlabel("u: optimal vs near miss")
    axes.set_ylabel("v: rewarding vs zero")
    axes.set_zlabel(zlabel)
    axes.set_xticks(np.arange(np.ceil(landscape.u.min() / 4) * 4, landscape.u.max() + 1e-9, 4))
    axes.set_yticks(np.arange(np.ceil(landscape.v.min() / 4) * 4, landscape.v.max() + 1e-9, 4))
    axes.view_init(elev=28, azim=-60)
    axes.set_box_aspect(None, zoom=1.0)


#: Path colours of :func:`figure_2bc_landscape`, the key's: REINFORCE vermilion, APMD green.
LANDSCAPE_PATH_COLORS = (method_colour("REINFORCE"), method_colour("APMD"))


def figure_2bc_landscape(data: Figure2bcData) -> BookFigure:
    """Paper Figure 2b,c: the fixed-reference objective over the ``(u, v)`` plane, with both runs (appendix C.1).

    Height is ``J_beta(pi; pi_0)`` at REINFORCE's strength (paper Eq. (5)); colour is the
    expected reward (top, b) and the base-10 log coverage (bottom, c). The lines are
    REINFORCE (vermilion) and APMD (green) until each is eps-optimal, from the base model
    (dot) to the square. The two 3-D panels are stacked, each the column's full width.
    """
    figure = new_figure(COLUMN_WIDTH, 8.8, constrained=False)
    pair = (data.reinforce, data.apmd)
    zlabel = f"$J_\\beta(\\pi; \\pi_0)$, $\\beta$ = {data.beta:.3g}"
    _surface_axes(figure, [-0.03, 0.53, 0.9, 0.47], pair, data.reinforce.reward, "(b) expected reward", "viridis",
                  LANDSCAPE_PATH_COLORS, zlabel)
    _surface_axes(figure, [-0.03, 0.07, 0.9, 0.47], pair, data.reinforce.log10_coverage, "(c) $\\log_{10}$ coverage",
                  "magma", LANDSCAPE_PATH_COLORS, zlabel)
    handles = [
        Line2D([], [], color=LANDSCAPE_PATH_COLORS[0], lw=1.8, label="REINFORCE, KL to $\\pi_0$"),
        Line2D([], [], color=LANDSCAPE_PATH_COLORS[1], lw=1.8, label="APMD (resets)"),
        Line2D([], [], color="k", marker="o", ls="none", label="base model"),
        Line2D([], [], color="0.5", marker="s", mec="k", ls="none", label="first $\\varepsilon$-optimal"),
    ]
    figure.legend(handles=handles, loc="lower center", ncols=4, frameon=False, columnspacing=1.0,
                  bbox_to_anchor=(0.45, 0.0))
    return figure


def seed_sweep_figure(sweep: SeedSweep, exact: CollapseRun, title: str) -> BookFigure:
    """Log10 coverage against steps for each seed of stochastic REINFORCE, with the exact-gradient run."""
    figure = new_figure(COLUMN_WIDTH, 3.6)
    axes = figure.add_subplot()
    for trajectory in sweep.trajectories:
        axes.plot(_step_axis(trajectory.gradient_steps), trajectory.log10_coverage[:, 0], color=REINFORCE_COLOR, lw=0.7,
                  alpha=0.45)
    axes.plot([], [], color=REINFORCE_COLOR, lw=0.7, alpha=0.45,
              label=f"REINFORCE, sampled gradients, {len(sweep.trajectories)} seeds")
    exact_steps = _step_axis(exact.trajectory.gradient_steps)
    axes.plot(exact_steps, exact.trajectory.log10_coverage[:, 0], color=REINFORCE_COLOR, lw=2.6, label="REINFORCE, exact gradient")
    axes.axhline(np.log10(exact.instance.base_coverage), color="0.4", ls=":", lw=1, label="base coverage")
    axes.set_xscale("log")
    axes.set_xlabel("gradient steps + 1")
    axes.set_ylabel("$\\log_{10}$ coverage")
    axes.legend(loc="lower left")
    axes.grid(alpha=0.3)
    axes.set_title(title)
    return figure


def collapse_explorer_figure(gap: float, beta: float, eta: float, budget: int) -> BookFigure:
    """Widget figure: one exact run on the family (``beta = 0`` means no KL).

    Top: reward and log10 coverage against steps. Bottom: the path on the simplex, and the
    mass on each response class against steps. The layout is fixed (no layout solver), so a
    redraw costs little more than the run.
    """
    gap = check_probability("gap", gap)
    beta = check_nonnegative("beta", beta)
    eta = check_positive("eta", eta)
    budget = check_count("budget", budget)
    instance = collapse_instance(gap)
    run = exact_collapse_run(
        instance,
        eta=eta,
        n_iterations=budget,
        beta=beta if beta > 0 else None,
        eps=gap / 2,
        n_records=120,
    )
    trajectory = run.trajectory
    steps = _step_axis(trajectory.gradient_steps)
    figure = new_figure(COLUMN_WIDTH, 5.6, constrained=False)
    grid = figure.add_gridspec(2, 2, left=0.1, right=0.98, bottom=0.09, top=0.86, wspace=0.32, hspace=0.45)
    reward_axes = figure.add_subplot(grid[0, 0])
    coverage_axes = figure.add_subplot(grid[0, 1])
    simplex_axes = figure.add_subplot(grid[1, 0])
    mass_axes = figure.add_subplot(grid[1, 1])
    reward_axes.plot(steps, trajectory.reward, color=REINFORCE_COLOR)
    reward_axes.axhline(1 - gap / 2, color=EPS_COLOR, ls="--", lw=1, label="$J^\\star - \\varepsilon$")
    reward_axes.set_ylim(0.0, 1.02)
    reward_axes.set_ylabel("reward")
    reward_axes.legend(loc="lower right")
    coverage_axes.plot(steps, trajectory.log10_coverage[:, 0], color=REINFORCE_COLOR)
    coverage_axes.axhline(np.log10(instance.base_coverage), color="0.4", ls=":", lw=1, label="base")
    coverage_axes.set_ylabel("$\\log_{10}$ coverage")
    coverage_axes.legend(loc="lower left")
    masses = simplex_path(run).masses
    for index, name in enumerate(("optimal", "near miss", "zero block")):
        mass_axes.plot(steps, masses[:, index], color=CLASS_COLORS[index], label=name)
    mass_axes.set_ylim(-0.02, 1.02)
    mass_axes.set_ylabel("mass")
    mass_axes.legend(loc="best")
    for axes in (reward_axes, coverage_axes, mass_axes):
        axes.set_xscale("log")
        axes.set_xlabel("gradient steps + 1")
        axes.grid(alpha=0.3)
    x, y = _ternary(masses)
    _draw_triangle(simplex_axes, ("zero", "near miss", "optimal"))
    simplex_axes.plot(x, y, color=REINFORCE_COLOR)
    simplex_axes.plot(x[:1], y[:1], "o", color=method_colour("base model"))
    outcome = f"ε-optimal after {run.steps_to_eps:,} steps" if run.reached_eps else f"not ε-optimal in {budget:,} steps"
    figure.suptitle(
        f"gap {gap:.3g}, β {'none' if beta <= 0 else f'{beta:.3g}'}, η {eta:.3g}\n"
        f"lowest coverage $10^{{{trajectory.min_log10_coverage:.1f}}}$; {outcome}",
        fontsize=10,
    )
    return figure


def collapse_widget() -> Explorable:
    """Knob, ``beta``, learning rate and step budget in; reward, log10 coverage and the simplex path out."""
    sliders = [
        Slider("gap", "near-miss gap", 0.05, 0.4, 0.15, (0.3, 0.2, 0.15, 0.12), step=0.005),
        Slider("beta", "β (0 = no KL)", 0.0, 0.2, 0.0, (0.0, 0.01, 0.05), step=0.001),
        Slider("eta", "learning rate", 0.1, 64.0, 4.0, (4.0,), log=True),
        Slider("budget", "step budget", 1_000, 3_000_000, 1_000_000, (1_000_000,), integer=True, step=1_000),
    ]
    return explorable(collapse_explorer_figure, sliders, "Exact REINFORCE on the collapse family")
