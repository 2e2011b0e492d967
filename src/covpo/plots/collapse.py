"""Figures and the widget of chapter 2, coverage collapse (paper section 2.1, appendix C)."""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize

from covpo.collapse import (
    ESCAPE_OUTCOMES,
    BetaEscapeMap,
    BetaSweep,
    CollapseRun,
    ExactRunsSummary,
    Landscape,
    SeedSweep,
    SimplexPath,
    StepsToEpsSweep,
    collapse_instance,
    exact_collapse_run,
    simplex_path,
)
from covpo.plots.base import BookFigure, new_figure
from covpo.widgets import Explorable, Slider, explorable

CLASS_NAMES = ("optimal", "distractor", "zero-reward block")
CLASS_COLORS = ("#1b9e77", "#d95f02", "#7570b3")
SQRT3_HALF = np.sqrt(3.0) / 2.0


def _step_axis(steps: np.ndarray) -> np.ndarray:
    """Steps shifted by one so that step 0 shows on a log axis."""
    return np.asarray(steps, dtype=float) + 1.0


def collapse_run_figure(run: CollapseRun, title: str) -> BookFigure:
    """Reward and log10 coverage against gradient steps, with the lowest-coverage and eps-optimal steps marked."""
    trajectory = run.trajectory
    steps = _step_axis(trajectory.gradient_steps)
    lowest = int(np.argmin(trajectory.log10_coverage[:, 0]))
    figure = new_figure(9.0, 3.4)
    reward_axes, coverage_axes = figure.subplots(1, 2)
    reward_axes.plot(steps, trajectory.reward, color="k")
    reward_axes.axhline(trajectory.optimal_value, color="0.5", lw=1, ls=":", label="$J^\\star$")
    if run.eps is not None:
        reward_axes.axhline(trajectory.optimal_value - run.eps, color="C3", lw=1, ls="--", label="$J^\\star - \\varepsilon$")
    reward_axes.set_ylabel("expected reward $J(\\pi_t)$")
    coverage_axes.plot(steps, trajectory.log10_coverage[:, 0], color=CLASS_COLORS[0])
    coverage_axes.axhline(np.log10(run.instance.base_coverage), color="0.5", lw=1, ls=":", label="base coverage")
    coverage_axes.set_ylabel("$\\log_{10}$ coverage $\\pi_t(y^\\star)$")
    for axes in (reward_axes, coverage_axes):
        axes.axvline(steps[lowest], color="C0", lw=1, ls="-.", label="lowest coverage")
        if run.reached_eps:
            axes.axvline(steps[-1], color="C3", lw=1, ls="--", label="first $\\varepsilon$-optimal step")
        axes.set_xscale("log")
        axes.set_xlabel("gradient steps + 1")
        axes.grid(alpha=0.3)
    reward_axes.legend(fontsize=8, loc="lower right")
    coverage_axes.legend(fontsize=8, loc="lower left")
    figure.suptitle(title)
    return figure


def _ternary(masses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cartesian coordinates on the simplex: zero block bottom left, distractor bottom right, optimal top."""
    optimal, distractor = masses[:, 0], masses[:, 1]
    return distractor + optimal / 2.0, optimal * SQRT3_HALF


def figure_1a_simplex(paths: dict[str, SimplexPath], title: str = "") -> BookFigure:
    """Paper Figure 1a: runs on the probability simplex (optimal / distractor / zero block), next to log masses.

    The simplex shows where the mass goes; the right panel shows the optimal response's mass
    on a log scale, where the collapse is visible even when it is invisible on the simplex.
    """
    figure = new_figure(10.0, 4.0)
    simplex_axes, mass_axes = figure.subplots(1, 2, width_ratios=[1.0, 1.2])
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, SQRT3_HALF], [0.0, 0.0]])
    simplex_axes.plot(corners[:, 0], corners[:, 1], color="0.3", lw=1)
    for (x, y), label in zip(corners[:3], ("zero-reward\nblock", "distractor", "optimal")):
        simplex_axes.annotate(label, (x, y), ha="center", va="top" if y == 0 else "bottom", fontsize=9)
    for index, (label, path) in enumerate(paths.items()):
        color = f"C{index}"
        x, y = _ternary(path.masses)
        simplex_axes.plot(x, y, color=color, lw=1.5, label=label)
        simplex_axes.plot(x[:1], y[:1], "o", color=color, ms=5)
        simplex_axes.plot(x[-1:], y[-1:], "s", color=color, ms=5)
        mass_axes.plot(_step_axis(path.gradient_steps), path.log10_masses[:, 0], color=color, label=label)
    simplex_axes.set_aspect("equal")
    simplex_axes.set_xlim(-0.08, 1.08)
    simplex_axes.set_ylim(-0.12, 1.0)
    simplex_axes.axis("off")
    simplex_axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.05))
    simplex_axes.set_title("mass on the simplex (circle: start, square: end)", fontsize=9)
    mass_axes.set_xscale("log")
    mass_axes.set_xlabel("gradient steps + 1")
    mass_axes.set_ylabel("$\\log_{10}$ mass on the optimal response")
    mass_axes.grid(alpha=0.3)
    figure.suptitle(title)
    return figure


def steps_along_knob_figure(unregularized: StepsToEpsSweep, regularized: StepsToEpsSweep) -> BookFigure:
    """Steps to eps-optimality along the hardness knob ``1/gap`` with exponential fits, and the lowest coverage.

    One panel per sweep (no KL; KL to the base model at the strongest eps-compatible beta),
    each with the Best-of-N sample size from the base model, and a third panel with the
    lowest coverage of every run.
    """
    figure = new_figure(12.0, 3.8)
    panels = figure.subplots(1, 3)
    sweeps = ((unregularized, "no KL", "C0"), (regularized, "KL to $\\pi_0$, strongest $\\beta$", "C1"))
    for axes, (sweep, label, color) in zip(panels[:2], sweeps):
        knob = 1.0 / sweep.gaps
        reached = sweep.reached_eps
        axes.plot(knob[reached], sweep.steps_to_eps[reached], "o", color=color, label="REINFORCE: steps to $\\varepsilon$")
        axes.plot(knob[~reached], sweep.steps_to_eps[~reached], "^", color=color, mfc="none", label="budget spent")
        if sweep.fit is not None:
            grid = np.linspace(knob.min(), knob.max(), 50)
            axes.plot(
                grid,
                10.0 ** (sweep.fit.intercept + sweep.fit.slope * grid),
                color=color,
                lw=1,
                label=f"fit $10^{{{sweep.fit.slope:.3f}/\\mathrm{{gap}}}}$, $R^2$ = {sweep.fit.r_squared:.4f}",
            )
        axes.plot(knob, sweep.best_of_n_samples, "k--", lw=1, label=f"Best-of-N samples ($\\delta$ = {sweep.delta:g})")
        axes.set_yscale("log")
        axes.set_xlabel("hardness knob 1 / gap")
        axes.set_ylabel("gradient steps or samples")
        axes.set_title(f"REINFORCE, {label}", fontsize=10)
        axes.legend(fontsize=7, loc="upper left")
        panels[2].plot(knob, sweep.min_log10_coverage, "o-", color=color, label=label)
    panels[2].axhline(np.log10(unregularized.base_coverage[0]), color="0.5", ls=":", lw=1, label="base coverage")
    panels[2].set_xlabel("hardness knob 1 / gap")
    panels[2].set_ylabel("lowest $\\log_{10}$ coverage along the run")
    panels[2].legend(fontsize=8)
    for axes in panels:
        axes.grid(alpha=0.3)
    return figure


def learning_rate_figure(etas: np.ndarray, summary: ExactRunsSummary, base_coverage: float, title: str) -> BookFigure:
    """Steps to eps-optimality and lowest coverage of exact REINFORCE against the learning rate."""
    figure = new_figure(10.0, 3.4)
    steps_axes, coverage_axes = figure.subplots(1, 2, sharex=True)
    reached = summary.reached_eps
    steps_axes.plot(etas[reached], summary.steps[reached], "o-", color="C0", label="steps to $\\varepsilon$")
    steps_axes.plot(etas[~reached], summary.steps[~reached], "^", color="C3", mfc="none", label="budget spent")
    steps_axes.set_yscale("log")
    steps_axes.set_ylabel("gradient steps")
    steps_axes.legend(fontsize=8)
    coverage_axes.plot(etas, summary.min_log10_coverage, "o-", color=CLASS_COLORS[0])
    coverage_axes.axhline(np.log10(base_coverage), color="0.5", ls=":", lw=1, label="base coverage")
    coverage_axes.set_ylabel("lowest $\\log_{10}$ coverage")
    coverage_axes.legend(fontsize=8)
    for axes in (steps_axes, coverage_axes):
        axes.set_xscale("log")
        axes.set_xlabel("learning rate $\\eta$")
        axes.grid(alpha=0.3)
    figure.suptitle(title)
    return figure


def beta_sweep_figure(sweep: BetaSweep, title: str) -> BookFigure:
    """For each fixed-reference ``beta``: lowest coverage of the run, and suboptimality of the regularized optimum."""
    figure = new_figure(10.0, 3.6)
    coverage_axes, bias_axes = figure.subplots(1, 2, sharex=True)
    outcomes = (
        (sweep.escapes, "reached $\\varepsilon$ without collapse", "C2", "o"),
        (sweep.reached_eps & sweep.collapsed, "reached $\\varepsilon$ after collapse", "C1", "s"),
        (~sweep.reached_eps & sweep.optimum_eps_optimal, "budget spent, collapsed", "C3", "v"),
        (~sweep.reached_eps & ~sweep.optimum_eps_optimal, "optimum not $\\varepsilon$-optimal", "0.4", "x"),
    )
    for mask, label, color, marker in outcomes:
        coverage_axes.plot(sweep.betas[mask], sweep.min_log10_coverage[mask], marker, color=color, label=label, ls="none")
    coverage_axes.axhline(np.log10(sweep.base_coverage), color="0.5", ls=":", lw=1, label="base coverage")
    coverage_axes.axhline(
        np.log10(sweep.base_coverage / sweep.collapse_factor), color="C3", ls="--", lw=1, label="collapse threshold"
    )
    coverage_axes.set_ylabel("lowest $\\log_{10}$ coverage")
    coverage_axes.legend(fontsize=7, loc="lower right")
    bias_axes.plot(sweep.betas, sweep.optimum_suboptimality, "k.-")
    bias_axes.axhline(sweep.eps, color="C3", ls="--", lw=1, label="$\\varepsilon$")
    bias_axes.set_yscale("log")
    bias_axes.set_ylim(bottom=max(1e-16, 0.5 * float(sweep.optimum_suboptimality.min())))
    bias_axes.set_ylabel("$J^\\star - J(\\pi_\\beta)$ of the regularized optimum")
    bias_axes.legend(fontsize=8)
    for axes in (coverage_axes, bias_axes):
        axes.set_xscale("log")
        axes.set_xlabel("$\\beta$ (KL to the fixed base model)")
        axes.grid(alpha=0.3)
    figure.suptitle(title)
    return figure


ESCAPE_COLORS = {"collapsed": "#d62728", "optimum not eps-optimal": "#999999", "escaped": "#2ca02c", "budget exhausted": "#ff7f0e"}


def beta_escape_map_figure(escape_map: BetaEscapeMap) -> BookFigure:
    """Outcome of fixed-reference REINFORCE over the ``(beta, 1/gap)`` grid: the escape window closes."""
    figure = new_figure(8.0, 3.6)
    axes = figure.add_subplot()
    colormap = ListedColormap([ESCAPE_COLORS[name] for name in ESCAPE_OUTCOMES])
    log_betas = np.log10(escape_map.betas)
    half_step = (log_betas[1] - log_betas[0]) / 2 if log_betas.size > 1 else 0.5
    beta_edges = 10.0 ** np.concatenate([log_betas - half_step, log_betas[-1:] + half_step])
    rows = np.arange(escape_map.gaps.size + 1) - 0.5
    axes.pcolormesh(
        beta_edges, rows, escape_map.outcome_codes, cmap=colormap, vmin=-0.5, vmax=len(ESCAPE_OUTCOMES) - 0.5
    )
    axes.set_xscale("log")
    axes.set_yticks(np.arange(escape_map.gaps.size), [f"{gap:g}" for gap in escape_map.gaps])
    axes.set_ylabel("gap (harder downwards)")
    axes.invert_yaxis()
    axes.set_xlabel("$\\beta$ (KL to the fixed base model)")
    for name in ESCAPE_OUTCOMES:
        axes.plot([], [], "s", color=ESCAPE_COLORS[name], label=name)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes.set_title(f"fixed-reference REINFORCE, eps = gap/2, budget {escape_map.max_steps:,} steps", fontsize=10)
    return figure


def _surface_axes(
    figure: BookFigure, position: int, landscape: Landscape, colour: np.ndarray, label: str, cmap: str
) -> None:
    """One 3-D panel: the objective surface coloured by ``colour``, with the run drawn on it."""
    axes = figure.add_subplot(1, 2, position, projection="3d", computed_zorder=False)
    grid_u, grid_v = np.meshgrid(landscape.u, landscape.v)
    norm = Normalize(vmin=float(np.nanmin(colour)), vmax=float(np.nanmax(colour)))
    axes.plot_surface(
        grid_u, grid_v, landscape.objective, facecolors=colormaps[cmap](norm(colour)), rstride=2, cstride=2,
        linewidth=0, antialiased=False, shade=False, zorder=1,
    )
    if landscape.path is not None:
        axes.plot(*landscape.path.T, landscape.path_objective, color="white", lw=3.5, zorder=9)
        axes.plot(*landscape.path.T, landscape.path_objective, color="k", lw=1.8, zorder=10)
        axes.plot(*landscape.path[:1].T, landscape.path_objective[:1], "o", color="k", ms=5, zorder=11)
    figure.colorbar(ScalarMappable(norm=norm, cmap=colormaps[cmap]), ax=axes, shrink=0.6, pad=0.12, label=label)
    axes.set_xlabel("u: optimal vs distractor")
    axes.set_ylabel("v: rewarding vs zero")
    axes.set_zlabel("objective")
    axes.view_init(elev=28, azim=-60)


def figure_2bc_landscape(landscape: Landscape) -> BookFigure:
    """Paper Figure 2b, c (and 3a): the fixed-reference objective over the ``(u, v)`` plane.

    Height is ``J_beta(pi; pi_0)`` (plain ``J`` without regularization); colour is the expected
    reward (left) and the base-10 log coverage (right); the black line is the run.
    """
    figure = new_figure(13.0, 5.6)
    _surface_axes(figure, 1, landscape, landscape.reward, "expected reward", "viridis")
    _surface_axes(figure, 2, landscape, landscape.log10_coverage, "$\\log_{10}$ coverage", "magma")
    return figure


def seed_sweep_figure(sweep: SeedSweep, exact: CollapseRun, title: str) -> BookFigure:
    """Log10 coverage against steps for each seed of stochastic REINFORCE, with the exact-gradient run."""
    figure = new_figure(6.8, 3.6)
    axes = figure.add_subplot()
    for trajectory in sweep.trajectories:
        axes.plot(_step_axis(trajectory.gradient_steps), trajectory.log10_coverage[:, 0], color="C0", lw=0.7, alpha=0.6)
    axes.plot([], [], color="C0", lw=0.7, label=f"sampled gradients, {len(sweep.trajectories)} seeds")
    exact_steps = _step_axis(exact.trajectory.gradient_steps)
    axes.plot(exact_steps, exact.trajectory.log10_coverage[:, 0], color="k", lw=2, label="exact gradient")
    axes.axhline(np.log10(exact.instance.base_coverage), color="0.5", ls=":", lw=1, label="base coverage")
    axes.set_xscale("log")
    axes.set_xlabel("gradient steps + 1")
    axes.set_ylabel("$\\log_{10}$ coverage")
    axes.legend(fontsize=8, loc="lower left")
    axes.grid(alpha=0.3)
    axes.set_title(title)
    return figure


def collapse_explorer_figure(gap: float, beta: float, eta: float, budget: int) -> BookFigure:
    """Widget figure: one exact run on the family (``beta = 0`` means no KL), curves and simplex path."""
    instance = collapse_instance(gap)
    run = exact_collapse_run(instance, eta=eta, max_steps=budget, beta=beta if beta > 0 else None, eps=gap / 2, n_records=120)
    trajectory = run.trajectory
    steps = _step_axis(trajectory.gradient_steps)
    figure = new_figure(11.0, 3.4, constrained=False)
    figure.subplots_adjust(left=0.06, right=0.99, bottom=0.15, top=0.84, wspace=0.3)
    reward_axes, coverage_axes, simplex_axes = figure.subplots(1, 3, width_ratios=[1, 1, 0.9])
    reward_axes.plot(steps, trajectory.reward, color="k")
    reward_axes.axhline(1 - gap / 2, color="C3", ls="--", lw=1, label="$J^\\star - \\varepsilon$")
    reward_axes.set_ylim(0.0, 1.02)
    reward_axes.set_ylabel("reward")
    reward_axes.legend(fontsize=8, loc="lower right")
    coverage_axes.plot(steps, trajectory.log10_coverage[:, 0], color=CLASS_COLORS[0])
    coverage_axes.axhline(np.log10(instance.base_coverage), color="0.5", ls=":", lw=1)
    coverage_axes.set_ylabel("$\\log_{10}$ coverage")
    for axes in (reward_axes, coverage_axes):
        axes.set_xscale("log")
        axes.set_xlabel("gradient steps + 1")
        axes.grid(alpha=0.3)
    outcome = f"eps-optimal after {run.steps_to_eps:,} steps" if run.reached_eps else f"not eps-optimal in {budget:,} steps"
    coverage_axes.set_title(f"lowest coverage 10^{trajectory.min_log10_coverage:.1f}; {outcome}", fontsize=8)
    x, y = _ternary(simplex_path(run).masses)
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, SQRT3_HALF], [0.0, 0.0]])
    simplex_axes.plot(corners[:, 0], corners[:, 1], color="0.3", lw=1)
    simplex_axes.plot(x, y, color="C0")
    simplex_axes.plot(x[:1], y[:1], "o", color="C0")
    for (cx, cy), label in zip(corners[:3], ("zero", "distractor", "optimal")):
        simplex_axes.annotate(label, (cx, cy), ha="center", va="top" if cy == 0 else "bottom", fontsize=8)
    simplex_axes.set_aspect("equal")
    simplex_axes.set_ylim(-0.15, 1.0)
    simplex_axes.axis("off")
    figure.suptitle(f"gap {gap:.3g}, beta {'none' if beta <= 0 else f'{beta:.3g}'}, eta {eta:.3g}")
    return figure


def collapse_widget() -> Explorable:
    """Knob, ``beta``, learning rate and step budget in; reward, log10 coverage and the simplex path out."""
    sliders = [
        Slider("gap", "distractor gap", 0.05, 0.4, 0.15, (0.3, 0.2, 0.15, 0.12), step=0.005),
        Slider("beta", "beta (0 = no KL)", 0.0, 0.2, 0.0, (0.0, 0.01, 0.05), step=0.001),
        Slider("eta", "learning rate", 0.1, 64.0, 4.0, (4.0,), log=True),
        Slider("budget", "step budget", 1_000, 3_000_000, 1_000_000, (1_000_000,), integer=True, step=1_000),
    ]
    return explorable(collapse_explorer_figure, sliders, "Exact REINFORCE on the collapse family")
