"""Figures and the widget of chapter 5, squared-loss methods (paper section 4; appendices I to M).

Each figure draws one record of :mod:`covpo.experiments.squared_loss`: the baselines' bias and
the step error it causes (:func:`baseline_bias_figure`), the curvature of the population
losses (:func:`curvature_figure`), the paper's Table 1 measured (:func:`table_1_figure`) and
the batch-size study (:func:`batch_size_figure`), the MSE criterion on that study's runs
(:func:`mse_criterion_figure`), the Kimi-style failure rates over seeds against ``N``
(:func:`failure_rate_figure`) and Rebel-OnPolicy's costs against ``eps`` (:func:`rebel_eps_figure`);
then the widget.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FormatStrFormatter, FuncFormatter, MaxNLocator, NullFormatter, NullLocator

from covpo.instances import BanditInstance
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import free_series_colours, key_entry, method_colour, method_kind, series_style
from covpo.plots.ppo import widget_instance
from covpo.policies import log_policy
from covpo.trajectory import Trajectory
from covpo import run
from covpo.algorithms.steps import check_squared_loss_beta
from covpo.experiments.population import normalizer
from covpo.experiments.squared_loss import (
    BaselineBiasSweep,
    BatchSizeStudy,
    CurvatureScan,
    LOSSES,
    LossSlice,
    MAX_COVERAGE_LOSS,
    RebelObjectiveCheck,
    SeededTable1,
    Table1,
    loss_slice,
    population_baselines,
)
from covpo.experiments.squared_loss.eps_scaling import RebelEpsScaling
from covpo.experiments.squared_loss.seeds import FailureRates
from covpo.plots.widgets import Explorable, Slider, explorable
from covpo.validation import check_count

# The methods' colours and markers are the book's key's (:data:`covpo.plots.style.COLOUR_KEY`), so
# that a method looks the same in every figure.
METHOD_COLORS = {name: method_colour(method_kind(name)) for name in ("KimiPO", "KimiPO-Norm", "Rebel-OnPolicy")}
METHOD_MARKERS = {name: key_entry(method_kind(name)).marker for name in METHOD_COLORS}
#: Colour and line style of each loss, the methods' own (the exact normalizer's loss in grey, a target).
LOSS_STYLES = dict(zip(LOSSES, ((METHOD_COLORS["KimiPO"], "-"), (METHOD_COLORS["KimiPO-Norm"], "--"), ("0.3", ":"),
                                (METHOD_COLORS["Rebel-OnPolicy"], "-."))))
#: Short names of :data:`covpo.experiments.squared_loss.curvature.LOSSES` for tick labels.
LOSS_LABELS = dict(zip(LOSSES, ("KimiPO\n(mean)", "KimiPO-\nNorm", "exact\n$b_t$", "Rebel")))
#: Legend names of :data:`covpo.experiments.squared_loss.curvature.LOSSES`.
LOSS_NAMES = dict(zip(LOSSES, ("KimiPO: mean baseline", "KimiPO-Norm: $\\mathbb{E}\\,\\hat b$ with $G$ extra",
                               "exact normalizer $b_t$", "Rebel-OnPolicy: pairwise")))
STEP_ERROR_COLOR = "0.3"


def _method_colour(name: str, index: int) -> str:
    """The key's colour of the method ``name``; for a method the key lacks, the ``index``-th colour no method takes."""
    kind = method_kind(name)
    return method_colour(kind) if kind is not None else free_series_colours(index + 1)[index]



def _grid_ticks(axis, values) -> None:
    """Ticks of a log axis at the grid's ``values``, labelled as plain numbers (``0.25``, ``8``, ``64``)."""
    axis.set_major_locator(FixedLocator([float(v) for v in values]))
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_locator(NullLocator())


def _plain_125_ticks(axis, values: np.ndarray) -> None:
    """Ticks of a log axis at 1, 2 and 5 times the powers of ten spanning ``values``, labelled as plain numbers."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    if values.size == 0:
        return
    low, high = np.floor(np.log10(values.min())), np.ceil(np.log10(values.max()))
    ticks = [m * 10.0**k for k in np.arange(low, high + 1) for m in (1.0, 2.0, 5.0)]
    ticks = [t for t in ticks if values.min() / 1.5 <= t <= values.max() * 1.5]
    if len(ticks) >= 2:
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,g}"))
        axis.set_minor_formatter(NullFormatter())


def baseline_bias_figure(sweep: BaselineBiasSweep) -> BookFigure:
    """Bias of each baseline and the KL error of one exactly solved step, against ``beta`` and ``G``.

    Left: KimiPO's mean baseline against ``beta``; right: KimiPO-Norm's normalizer baseline
    against ``G`` at ``group_beta``. Circles: the exact bias; dashed: its first-order
    approximation; squares: the step error. Each panel's legend sits under it.
    """
    figure = new_figure(7.0, 4.0)
    mean_axes, group_axes = figure.subplots(1, 2)
    mean_axes.plot(sweep.betas, sweep.mean_bias, "o-", color=METHOD_COLORS["KimiPO"], label="bias $b_t - V_t$ (exact)")
    mean_axes.plot(sweep.betas, sweep.mean_bias_approximation, "k--", lw=1, label="$\\mathrm{Var}_t(r) / 2\\beta$")
    mean_axes.plot(sweep.betas, sweep.mean_step_error, "s-", color=STEP_ERROR_COLOR,
                   label="step error $\\mathrm{KL}(\\pi_{\\min} \\Vert \\pi^\\star_{t+1})$")
    mean_axes.set_xlabel("$\\beta$")
    mean_axes.set_title("KimiPO: mean baseline")
    group_axes.plot(sweep.group_sizes, sweep.normalizer_bias, "o-", color=METHOD_COLORS["KimiPO-Norm"],
                    label="bias $b_t - \\mathbb{E}\\,\\hat b$ (exact)")
    group_axes.plot(sweep.group_sizes, sweep.normalizer_bias_approximation, "k--", lw=1, label="first order in $1/G$")
    group_axes.plot(sweep.group_sizes, sweep.normalizer_step_error, "s-", color=STEP_ERROR_COLOR, label="step error")
    group_axes.set_xlabel("extra responses $G$")
    group_axes.set_title(f"KimiPO-Norm: normalizer, $\\beta$ = {sweep.group_beta:g}")
    for axes, grid in ((mean_axes, sweep.betas), (group_axes, sweep.group_sizes)):
        axes.set_xscale("log")
        axes.set_yscale("log")
        _grid_ticks(axes.xaxis, grid)
        axes.grid(alpha=0.3)
        axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    return figure


def curvature_figure(scans: dict[str, CurvatureScan], slice_: LossSlice, slice_title: str) -> BookFigure:
    """Smallest Hessian eigenvalues over a ball, per loss and instance (top), and the losses along one line (bottom).

    One top panel per scan (at most two): a column of dots per loss, one dot per point of the
    ball, and a black bar at ``theta_t`` itself. The bottom panel spans the figure: every
    population loss along ``theta_t + s (theta* - theta_t)``, dotted grey at the target ``s = 1``.
    """
    if not 1 <= len(scans) <= 2:
        raise ValueError(f"curvature_figure draws one or two scans, got {len(scans)}")
    figure = new_figure(7.0, 6.6)
    top = ["scan0", "scan1"] if len(scans) == 2 else ["scan0", "scan0"]
    panels = figure.subplot_mosaic([top, ["line", "line"]], height_ratios=(1.15, 1.0))
    for k, (title, scan) in enumerate(scans.items()):
        axes = panels[f"scan{k}"]
        for i, name in enumerate(scan.names):
            color, _ = LOSS_STYLES[name]
            values = scan.min_eigenvalue[i]
            jitter = np.linspace(-0.25, 0.25, values.size)
            axes.plot(i + jitter, values, ".", ms=3, color=color, alpha=0.6)
            axes.plot(i, scan.at_reference[i], "k_", ms=16, mew=2)
        axes.axhline(0.0, color="k", lw=0.8)
        axes.set_xticks(range(len(scan.names)), [LOSS_LABELS.get(n, n) for n in scan.names])
        if k == 0:
            axes.set_ylabel("smallest Hessian eigenvalue")
        axes.set_title(f"{title}\nball of radius {scan.radius:g}; bar: at $\\theta_t$")
        axes.grid(alpha=0.3)
    line_axes = panels["line"]
    for i, name in enumerate(slice_.names):
        color, style = LOSS_STYLES[name]
        line_axes.plot(slice_.steps, slice_.losses[i], ls=style, color=color, label=LOSS_NAMES.get(name, name))
    line_axes.axvline(1.0, color="0.5", lw=1, ls=":")
    line_axes.set_xlabel("$s$ in $\\theta_t + s\\,(\\theta^\\star_{t+1} - \\theta_t)$ (1: the target)")
    line_axes.set_ylabel("population loss")
    line_axes.set_title(slice_title)
    line_axes.legend(loc="upper left", frameon=False)
    line_axes.grid(alpha=0.3)
    return figure


def table_1_figure(table: Table1) -> BookFigure:
    """Outer iterations, gradient steps and responses to ``eps`` of the kept settings, against ``1 / eps``.

    Two panels a row: outer iterations (top left), gradient steps (top right), responses
    sampled (bottom left) and the legend (bottom right).
    """
    figure = new_figure(7.0, 5.6)
    (outer_axes, steps_axes), (responses_axes, legend_axes) = figure.subplots(2, 2)
    quantities = ((outer_axes, "outer_iterations", "outer iterations"), (steps_axes, "gradient_steps", "gradient steps"),
                  (responses_axes, "responses", "responses sampled"))
    for axes, attribute, label in quantities:
        for row, method in enumerate(table.methods):
            keep = table.reached[row]
            values = getattr(table, attribute)[row, keep]
            axes.plot(1.0 / table.eps[keep], values, "-", marker=METHOD_MARKERS.get(method, "o"),
                      color=_method_colour(method, row), label=method)
        axes.set_xscale("log")
        axes.set_yscale("log")
        _grid_ticks(axes.xaxis, 1.0 / table.eps)
        _plain_125_ticks(axes.yaxis, getattr(table, attribute)[table.reached])
        axes.set_xlabel("$1 / \\varepsilon$")
        axes.set_ylabel(f"{label} to $\\varepsilon$")
        axes.grid(alpha=0.3)
    legend_axes.set_axis_off()
    legend_axes.legend(*outer_axes.get_legend_handles_labels(), loc="center", frameon=False,
                       title=f"cheapest admissible setting\nper $\\varepsilon$ (N = {table.batch_size}, K = {table.inner_steps})")
    return figure


def table_1_seeds_figure(tables: SeededTable1) -> BookFigure:
    """:func:`table_1_figure` over seeds: each seed's kept setting as a small marker, the seeds' median as a line.

    Panels as in :func:`table_1_figure`; a seed whose methods reached no admissible setting at an
    ``eps`` has no marker there, and the median is over the seeds that did.
    """
    figure = new_figure(7.0, 5.6)
    (outer_axes, steps_axes), (responses_axes, legend_axes) = figure.subplots(2, 2)
    x = 1.0 / tables.eps
    n_seeds, n_methods = len(tables.seeds), len(tables.methods)
    reached = tables.stacked("reached")
    for axes, attribute, label in ((outer_axes, "outer_iterations", "outer iterations"),
                                   (steps_axes, "gradient_steps", "gradient steps"),
                                   (responses_axes, "responses", "responses sampled")):
        values = np.where(reached, tables.stacked(attribute), np.nan).astype(float)
        for row, method in enumerate(tables.methods):
            color, marker = _method_colour(method, row), METHOD_MARKERS.get(method, "o")
            for s in range(n_seeds):
                offset = 10.0 ** (0.012 * (s - (n_seeds - 1) / 2) + 0.03 * (row - (n_methods - 1) / 2))
                axes.plot(x * offset, values[s, row], marker, color=color, ms=4, alpha=0.6, ls="none")
            axes.plot(x, np.nanmedian(values[:, row], axis=0), "-", marker=marker, color=color, ms=7,
                      label=f"{method}: median")
        axes.set_xscale("log")
        axes.set_yscale("log")
        _grid_ticks(axes.xaxis, x)
        _plain_125_ticks(axes.yaxis, values[np.isfinite(values)])
        axes.set_xlabel("$1 / \\varepsilon$")
        axes.set_ylabel(f"{label} to $\\varepsilon$")
        axes.grid(alpha=0.3)
    handles, labels = outer_axes.get_legend_handles_labels()
    handles.append(Line2D([], [], marker="o", color="0.4", ms=4, alpha=0.6, ls="none"))
    labels.append("one seed (side by side)")
    legend_axes.set_axis_off()
    legend_axes.legend(handles, labels, loc="center", frameon=False,
                       title=f"cheapest admissible setting per $\\varepsilon$\n(N = {tables.tables[0].batch_size}, "
                             f"K = {tables.tables[0].inner_steps}; seeds {tables.seeds[0]} to {tables.seeds[-1]})")
    return figure


def batch_size_figure(study: BatchSizeStudy, title: str) -> BookFigure:
    """Coverage lost by each run against the batch size ``N``, one column of dots per method and ``N``.

    Filled markers: runs that became eps-optimal; open markers: runs that did not. The dashed
    line is a factor of two (``log10 2`` decades). The legend sits under the axes.
    """
    figure = new_figure(7.0, 3.8)
    axes = figure.subplots()
    width = 0.8 / len(study.names)
    for i, name in enumerate(study.names):
        color, marker = _method_colour(name, i), METHOD_MARKERS.get(name, "o")
        for j in range(study.batch_sizes.size):
            losses = study.coverage_loss[i, j]
            x = j + (i - (len(study.names) - 1) / 2) * width
            reached = study.reached[i, j]
            axes.plot(np.full(reached.sum(), x), losses[reached], marker, ms=7, color=color, ls="none",
                      label=name if j == 0 else None)
            axes.plot(np.full((~reached).sum(), x), losses[~reached], marker, mfc="none", ms=10, mew=1.5,
                      color=color, ls="none")
    axes.axhline(MAX_COVERAGE_LOSS, color="k", ls="--", lw=1, label="a factor of two")
    axes.plot([], [], "o", mfc="none", ms=10, mew=1.5, color="0.3", ls="none", label="open: not $\\varepsilon$-optimal")
    axes.set_xticks(range(study.batch_sizes.size), [f"N = {n}" for n in study.batch_sizes])
    axes.set_ylabel("worst coverage loss (decades)")
    axes.set_title(title)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=3, frameon=False)
    axes.grid(alpha=0.3)
    return figure


def failure_rate_figure(rates: FailureRates) -> BookFigure:
    """The share of seeds whose run lost more than a factor of two, against ``N``, one panel per Kimi-style method.

    One line per ``C_cov`` (at the first ``K`` of the grid), with the Wilson 95% interval of each
    rate as a band; the batch axis is logarithmic.
    """
    figure = new_figure(7.0, 3.4)
    panels = figure.subplots(1, len(rates.names), sharey=True, squeeze=False)[0]
    for i, (axes, name) in enumerate(zip(panels, rates.names)):
        for c, coverage in enumerate(rates.coverages):
            cells = [rates.rate(c, i, j) for j in range(rates.batch_sizes.size)]
            color = series_style(c)["color"]
            axes.plot(rates.batch_sizes, [r.fraction for r in cells], "o-", color=color,
                      label=f"$C_{{\\mathrm{{cov}}}}$ = {coverage:g}")
            axes.fill_between(rates.batch_sizes, [r.low for r in cells], [r.high for r in cells], color=color,
                              alpha=0.12, lw=0)
        axes.set_xscale("log", base=2)
        axes.xaxis.set_major_locator(FixedLocator(rates.batch_sizes))
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_xlabel("batch size N (prompts)")
        axes.set_title(name)
        axes.grid(alpha=0.3)
    panels[0].set_ylabel(f"runs losing > 2× (of {len(rates.seeds)})")
    panels[0].yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0%}"))
    panels[-1].legend(loc="upper right", frameon=False)
    return figure


def rebel_eps_figure(scaling: RebelEpsScaling, bound_slope: float) -> BookFigure:
    """Rebel-OnPolicy's responses to reach ``eps`` at ``beta(eps)``, one dot per seed, against ``1 / eps``.

    The median per ``eps`` is joined; dashed: the bound's scaling ``1 / (eps log(1 / eps))`` through
    the median at the largest ``eps``, with its fitted slope ``bound_slope`` in the legend.
    """
    figure = new_figure(7.0, 3.6)
    axes = figure.subplots()
    x = 1.0 / scaling.eps
    for i, inverse in enumerate(x):
        reached = scaling.reached[i]
        axes.plot(np.full(reached.sum(), inverse), scaling.responses[i][reached], "o", color=METHOD_COLORS["Rebel-OnPolicy"], alpha=0.35,
                  ms=5, label="one seed" if i == 0 else None)
    median = np.nanmedian(scaling.responses, axis=1)
    axes.plot(x, median, "s-", color=METHOD_COLORS["Rebel-OnPolicy"], ms=7, label="median over seeds")
    shape = 1.0 / (scaling.eps * np.log(1.0 / scaling.eps))
    axes.plot(x, median[0] * shape / shape[0], "k--", lw=1,
              label=f"bound's scaling (slope {bound_slope:.2f})")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("1/ε")
    axes.set_ylabel("responses to reach ε")
    axes.set_title("Rebel-OnPolicy at β(ε) = 1/log(1/ε)")
    axes.legend(loc="upper left", frameon=False)
    axes.grid(alpha=0.3, which="both")
    return figure


def mse_criterion_figure(study: BatchSizeStudy, check: RebelObjectiveCheck) -> BookFigure:
    """The MSE criterion of the paper's section 4.1 on the batch-size study's runs, in three panels.

    Top left: each step's APMD accuracy ``2 beta^2 E_x KL(pi_{t+1} || pi*_{t+1})`` against its MSE
    (one dot per step of every run; dotted: equality). Top right: each run's accumulated bound on
    the fall of coverage (worst prompt) against the fall measured, both in decades; open markers
    are runs that did not become eps-optimal (dashed: a factor of two; dotted: equality).
    Bottom left: Rebel-OnPolicy's empirical objective on fresh batches against ``2 E_x Var_{pi_t}(delta)``,
    one point per step (mean with two standard errors; dotted: equality). Bottom right: the legend.
    """
    figure = new_figure(7.0, 6.4)
    panels = figure.subplot_mosaic([["left", "middle"], ["right", "legend"]])
    left, middle, right, legend = (panels[name] for name in ("left", "middle", "right", "legend"))
    for i, name in enumerate(study.names):
        color, marker = _method_colour(name, i), METHOD_MARKERS.get(name, "o")
        for j in range(study.batch_sizes.size):
            for k in range(len(study.seeds)):
                path = study.path(i, j, k)
                if path is None:
                    continue
                left.plot(path.mse, 2.0 * path.beta**2 * path.inner_kl, marker, ms=3, alpha=0.5, color=color,
                          ls="none", label=name if j == k == 0 else None)
                fill = color if study.reached[i, j, k] else "none"
                middle.plot(path.accumulated_bound.max(), max(path.coverage_fall.max(), 1e-3), marker, ms=7,
                            color=color, mfc=fill, ls="none", label=name if j == k == 0 else None)
    low, high = left.get_xlim()
    left.plot([low, high], [low, high], ":", color="0.4", lw=1)
    left.set(xscale="log", yscale="log", xlabel="step MSE", ylabel="$2\\beta^2$ KL to the target",
             title="One step: the MSE and APMD's KL")
    middle.axhline(MAX_COVERAGE_LOSS, color="k", ls="--", lw=1)
    middle.plot([0.3, 100], [0.3, 100], ":", color="0.4", lw=1)
    middle.set(xscale="log", yscale="log", ylim=(5e-4, 100), xlabel="bound on the fall (decades)",
               ylabel="fall measured (decades)", title="One run: the bound and the fall")
    target = 2.0 * check.centered_mse
    mean = check.objectives.mean(axis=1)
    error = 2.0 * check.objectives.std(axis=1, ddof=1) / np.sqrt(check.objectives.shape[1])
    right.errorbar(target, mean, yerr=error, fmt=METHOD_MARKERS["Rebel-OnPolicy"], ms=4,
                   color=METHOD_COLORS["Rebel-OnPolicy"])
    low, high = target.min() / 2, target.max() * 2
    right.plot([low, high], [low, high], ":", color="0.4", lw=1)
    right.set(xscale="log", yscale="log", xlabel="$2\\,\\mathbb{E}_x \\mathrm{Var}_{\\pi_t}(\\delta)$",
              ylabel=f"objective on fresh batches (N = {check.batch_size})", title="Rebel: objective and MSE")
    for axes in (left, middle, right):
        axes.grid(alpha=0.3)
    legend.axis("off")
    handles, labels = middle.get_legend_handles_labels()
    legend.legend(handles, labels, loc="center", frameon=False,
                  title="filled: reached ε\nopen: did not")
    return figure


# --- the widget ------------------------------------------------------------------------------

WIDGET_ITERATIONS, WIDGET_INNER_STEPS, WIDGET_ETA_SCALE, WIDGET_SEED = 15, 10, 1.0, 0
WIDGET_EPS = 0.04
WIDGET_SLICE = np.linspace(-0.5, 2.0, 26)
SLICE_FLOOR = 1e-6


@lru_cache(maxsize=64)
def _widget_statics(beta: float, group_size: int) -> tuple[np.ndarray, np.ndarray, LossSlice]:
    """The widget's run-independent panels at one ``(beta, G)``: both baselines' bias and the loss slice."""
    instance: BanditInstance = widget_instance()
    log_reference = log_policy(instance, instance.base_theta)
    baselines = population_baselines(instance, log_reference, beta, group_size)
    exact = normalizer(instance, log_reference, beta)
    bias = np.array([np.abs(baselines[LOSSES[0]] - exact).mean(), np.abs(baselines[LOSSES[1]] - exact).mean()])
    return bias, exact, loss_slice(instance, instance.base_theta, beta, group_size, WIDGET_SLICE)


@lru_cache(maxsize=128)
def _widget_run(
    algorithm: str, beta: float, batch_size: int, extra: tuple[tuple[str, int], ...]
) -> Trajectory | None:
    """One widget run of paper Algorithm 3, 4 or 5, ``extra`` holding its further hyperparameters; ``None`` if it diverged.

    Cached: KimiPO's and Rebel-OnPolicy's runs do not depend on ``G``, so frames that differ in ``G`` share them.
    """
    common = {
        "beta": beta,
        "eta": WIDGET_ETA_SCALE / beta**2,
        "n_iterations": WIDGET_ITERATIONS,
        "batch_size": batch_size,
        "inner_steps": WIDGET_INNER_STEPS,
    }
    try:
        return run(algorithm, widget_instance(), rng=np.random.default_rng(WIDGET_SEED), **common, **dict(extra))
    except FloatingPointError:
        return None


def squared_loss_explorer_figure(beta: float, group_size: int, batch_size: int) -> BookFigure:
    """Widget figure: baselines' bias, the population losses along a line, and three runs' reward and coverage.

    On the small collapse instance of chapter 4's widget (2 prompts, 30 zero-reward responses,
    ``C_cov = 40``): KimiPO (``M = 1``), KimiPO-Norm (``G`` extra responses) and Rebel-OnPolicy,
    each for 15 resets of ``K = 10`` steps at ``eta = 1 / beta^2`` with ``N`` prompts per batch,
    seed 0. Two panels a row: the bias and the loss slice on top, reward and worst-prompt
    coverage below, one legend under them; the title gives the setting and each run's outcome.
    A run that diverges is reported in the title instead of raising.
    """
    beta = check_squared_loss_beta(beta)
    group_size = check_count("group_size", group_size)
    batch_size = check_count("batch_size", batch_size)
    instance = widget_instance()
    figure = new_figure(7.0, 6.2, constrained=False)
    figure.subplots_adjust(left=0.1, right=0.98, bottom=0.17, top=0.84, wspace=0.32, hspace=0.55)
    (bias_axes, slice_axes), (reward_axes, coverage_axes) = figure.subplots(2, 2)
    bias, _, slice_ = _widget_statics(float(beta), int(group_size))
    bias_axes.bar([0, 1], bias, color=[METHOD_COLORS["KimiPO"], METHOD_COLORS["KimiPO-Norm"]])
    bias_axes.set_xticks([0, 1], ["mean", f"normalizer, G = {group_size}"])
    bias_axes.set_title("baseline's bias $|\\mathbb{E}\\,\\hat b - b_t|$")
    for i, name in enumerate(slice_.names):
        color, style = LOSS_STYLES[name]
        slice_axes.plot(slice_.steps, np.log10(np.maximum(slice_.losses[i], SLICE_FLOOR)), ls=style, color=color)
    slice_axes.axvline(1.0, color="0.5", lw=1, ls=":")
    slice_axes.set_title("$\\log_{10}$ population loss")
    slice_axes.set_xlabel("$s$ (0: $\\theta_t$, 1: the target)")
    runs = (
        ("KimiPO", "kimipo", ()),
        ("KimiPO-Norm", "kimipo_norm", (("extra_responses", int(group_size)),)),
        ("Rebel-OnPolicy", "rebel_onpolicy", ()),
    )
    outcomes = []
    line_styles = dict(zip(METHOD_COLORS, (LOSS_STYLES[LOSSES[0]][1], LOSS_STYLES[LOSSES[1]][1], LOSS_STYLES[LOSSES[3]][1])))
    for name, algorithm, extra in runs:
        color = METHOD_COLORS[name]
        trajectory = _widget_run(algorithm, float(beta), int(batch_size), extra)
        if trajectory is None:
            outcomes.append(f"{name} diverged")
            continue
        x = trajectory.responses_sampled
        reward_axes.plot(x, trajectory.reward, color=color, ls=line_styles[name])
        coverage_axes.plot(x, trajectory.log10_coverage.min(axis=1), color=color, ls=line_styles[name])
        first = trajectory.responses_to_eps(WIDGET_EPS)
        outcomes.append(f"{name}: " + (f"ε at {first:,}" if first is not None else "not ε-optimal"))
    reward_axes.axhline(instance.optimal_value - WIDGET_EPS, color="0.3", ls="--", lw=1)
    reward_axes.set_ylim(0.0, 1.02)
    reward_axes.set_title("expected reward")
    coverage_axes.axhline(np.log10(1.0 / 40.0), color="0.5", ls=":", lw=1)
    coverage_axes.set_title("$\\log_{10}$ coverage, worst prompt")
    for axes in (reward_axes, coverage_axes):
        axes.set_xlabel("responses sampled")
    for axes in (bias_axes, slice_axes, reward_axes, coverage_axes):
        axes.xaxis.set_major_locator(MaxNLocator(4))
        axes.grid(alpha=0.3)
    handles = [Line2D([], [], color=METHOD_COLORS[name], ls=line_styles[name], label=name) for name in METHOD_COLORS]
    handles += [
        Line2D([], [], color=LOSS_STYLES[LOSSES[2]][0], ls=":", label="exact normalizer (loss only)"),
        Line2D([], [], color="0.3", ls="--", lw=1, label="$J^\\star - \\varepsilon$"),
        Line2D([], [], color="0.5", ls=":", lw=1, label="target $s = 1$; base coverage"),
    ]
    figure.legend(handles=handles, loc="lower center", ncols=3, frameon=False)
    figure.suptitle(
        f"β {beta:.3g}, G {group_size}, N {batch_size}, K {WIDGET_INNER_STEPS}, η {WIDGET_ETA_SCALE / beta**2:.3g}\n"
        + "; ".join(outcomes),
        fontsize=10,
    )
    return figure


def squared_loss_widget() -> Explorable:
    """``beta``, ``G`` and the batch size in; bias, loss slice, reward and coverage out.

    The static stand-in holds 27 frames: three ``beta`` by three ``G`` by three batch sizes.
    """
    sliders = [
        Slider("beta", "β", 0.1, 4.0, 0.5, (0.25, 0.5, 1.0), log=True),
        Slider("group_size", "extra responses G", 1, 64, 8, (1, 8, 64), integer=True, log=True),
        Slider("batch_size", "batch size N", 16, 512, 128, (32, 128, 512), integer=True, step=16),
    ]
    return explorable(squared_loss_explorer_figure, sliders, "KimiPO, KimiPO-Norm and Rebel-OnPolicy on a small collapse instance")
