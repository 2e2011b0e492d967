"""Figures and the widget of chapter 5, squared-loss methods (paper section 4; appendices I to M).

Each figure draws one record of :mod:`covpo.squared_loss_experiments`: the baselines' bias and
the step error it causes (:func:`baseline_bias_figure`), the curvature of the population
losses (:func:`curvature_figure`), the paper's Table 1 measured (:func:`table_1_figure`) and
the batch-size study (:func:`batch_size_figure`); then the widget.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.ticker import MaxNLocator

from covpo.instances import BanditInstance
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.ppo import widget_instance
from covpo.policies import log_policy
from covpo.squared_loss import kimipo, kimipo_norm, normalizer, rebel_onpolicy
from covpo.squared_loss_experiments import (
    LOSSES,
    MAX_COVERAGE_LOSS,
    BaselineBiasSweep,
    BatchSizeStudy,
    CurvatureScan,
    LossSlice,
    Table1,
    loss_slice,
    population_baselines,
)
from covpo.widgets import Explorable, Slider, explorable

LOSS_STYLES = dict(zip(LOSSES, (("C1", "-"), ("C4", "--"), ("k", ":"), ("C2", "-."))))
METHOD_COLORS = {"KimiPO": "C1", "KimiPO-Norm": "C4", "Rebel-OnPolicy": "C2"}


def baseline_bias_figure(sweep: BaselineBiasSweep) -> BookFigure:
    """Bias of each baseline and the KL error of one exactly solved step, against ``beta`` and ``G``."""
    figure = new_figure(11.0, 3.8)
    mean_axes, group_axes = figure.subplots(1, 2)
    mean_axes.plot(sweep.betas, sweep.mean_bias, "o-", color="C1", label="$|V_t - b_t|$ (exact)")
    mean_axes.plot(sweep.betas, sweep.mean_bias_approximation, "k--", lw=1, label="$\\mathrm{Var}_t(r) / 2\\beta$")
    mean_axes.plot(sweep.betas, sweep.mean_step_error, "s-", color="C3", label="step error KL$(\\pi_{\\min} \\Vert \\pi^\\star_{t+1})$")
    mean_axes.set_xlabel("$\\beta$")
    mean_axes.set_title("KimiPO: mean baseline", fontsize=10)
    group_axes.plot(sweep.group_sizes, sweep.normalizer_bias, "o-", color="C4", label="$|\\mathbb{E}\\,\\hat b - b_t|$ (exact)")
    group_axes.plot(sweep.group_sizes, sweep.normalizer_bias_approximation, "k--", lw=1, label="first order in $1/G$")
    group_axes.plot(sweep.group_sizes, sweep.normalizer_step_error, "s-", color="C3", label="step error")
    group_axes.set_xlabel("extra responses $G$")
    group_axes.set_title(f"KimiPO-Norm: normalizer baseline, $\\beta$ = {sweep.group_beta:g}", fontsize=10)
    for axes in (mean_axes, group_axes):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7)
    return figure


def curvature_figure(scans: dict[str, CurvatureScan], slice_: LossSlice, slice_title: str) -> BookFigure:
    """Smallest Hessian eigenvalues over a ball, per loss and instance, and the losses along one line."""
    figure = new_figure(12.0, 3.9)
    scan_axes = figure.subplots(1, len(scans) + 1)
    for axes, (title, scan) in zip(scan_axes, scans.items()):
        for i, name in enumerate(scan.names):
            color, _ = LOSS_STYLES[name]
            values = scan.min_eigenvalue[i]
            jitter = np.linspace(-0.25, 0.25, values.size)
            axes.plot(i + jitter, values, ".", ms=2, color=color, alpha=0.6)
            axes.plot(i, scan.at_reference[i], "k_", ms=14, mew=2)
        axes.axhline(0.0, color="k", lw=0.8)
        axes.set_xticks(range(len(scan.names)), [n.replace(" (", "\n(") for n in scan.names], fontsize=6)
        axes.set_ylabel("smallest Hessian eigenvalue", fontsize=8)
        axes.set_title(f"{title}\n(ball of radius {scan.radius:g}; bar: at $\\theta_t$)", fontsize=8)
        axes.grid(alpha=0.3)
    line_axes = scan_axes[-1]
    for i, name in enumerate(slice_.names):
        color, style = LOSS_STYLES[name]
        line_axes.plot(slice_.steps, slice_.losses[i], ls=style, color=color, label=name)
    line_axes.axvline(1.0, color="0.5", lw=1, ls=":")
    line_axes.set_xlabel("$s$ in $\\theta_t + s\\,(\\theta^\\star_{t+1} - \\theta_t)$ (1: the target)", fontsize=8)
    line_axes.set_ylabel("population loss", fontsize=8)
    line_axes.set_title(slice_title, fontsize=8)
    line_axes.legend(fontsize=6)
    line_axes.grid(alpha=0.3)
    return figure


def table_1_figure(table: Table1) -> BookFigure:
    """Outer iterations, responses and gradient steps to ``eps`` of the kept settings, against ``1 / eps``."""
    figure = new_figure(12.0, 3.6)
    panels = figure.subplots(1, 3)
    quantities = (("outer_iterations", "outer iterations"), ("responses", "responses sampled"),
                  ("gradient_steps", "gradient steps"))
    for axes, (attribute, label) in zip(panels, quantities):
        for row, method in enumerate(table.methods):
            keep = table.reached[row]
            values = getattr(table, attribute)[row, keep]
            axes.plot(1.0 / table.eps[keep], values, "o-", color=METHOD_COLORS[method], label=method)
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("$1 / \\varepsilon$")
        axes.set_ylabel(f"{label} to $\\varepsilon$")
        axes.grid(alpha=0.3)
    panels[0].legend(fontsize=8)
    figure.suptitle(f"Cheapest admissible setting per $\\varepsilon$ (N = {table.batch_size}, K = {table.inner_steps})",
                    fontsize=10)
    return figure


def batch_size_figure(study: BatchSizeStudy, title: str) -> BookFigure:
    """Coverage lost by each run against the batch size ``N``, one column of dots per method and ``N``."""
    figure = new_figure(7.5, 3.6)
    axes = figure.subplots()
    width = 0.8 / len(study.names)
    for i, name in enumerate(study.names):
        for j in range(study.batch_sizes.size):
            losses = study.coverage_loss[i, j]
            x = j + (i - (len(study.names) - 1) / 2) * width
            reached = study.reached[i, j]
            axes.plot(np.full(reached.sum(), x), losses[reached], "o", color=METHOD_COLORS.get(name, f"C{i}"),
                      label=name if j == 0 else None)
            axes.plot(np.full((~reached).sum(), x), losses[~reached], "o", mfc="none",
                      color=METHOD_COLORS.get(name, f"C{i}"))
    axes.axhline(MAX_COVERAGE_LOSS, color="k", ls="--", lw=1, label="a factor of two")
    axes.set_xticks(range(study.batch_sizes.size), [f"N = {n}" for n in study.batch_sizes])
    axes.set_ylabel("worst coverage loss (decades)")
    axes.set_title(f"{title}; hollow: not $\\varepsilon$-optimal", fontsize=9)
    axes.legend(fontsize=7)
    axes.grid(alpha=0.3)
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


def squared_loss_explorer_figure(beta: float, group_size: int, batch_size: int) -> BookFigure:
    """Widget figure: baselines' bias, the population losses along a line, and three runs' reward and coverage.

    On the small collapse instance of chapter 4's widget (2 prompts, 30 zero-reward responses,
    ``C_cov = 40``): KimiPO (``M = 1``), KimiPO-Norm (``G`` extra responses) and Rebel-OnPolicy,
    each for 15 resets of ``K = 10`` steps at ``eta = 1 / beta^2`` with ``N`` prompts per batch,
    seed 0. A run that diverges is reported in the figure instead of raising.
    """
    instance = widget_instance()
    figure = new_figure(12.5, 3.3, constrained=False)
    figure.subplots_adjust(left=0.05, right=0.99, bottom=0.16, top=0.8, wspace=0.34)
    bias_axes, slice_axes, reward_axes, coverage_axes = figure.subplots(1, 4)
    bias, _, slice_ = _widget_statics(float(beta), int(group_size))
    bias_axes.bar([0, 1], bias, color=[METHOD_COLORS["KimiPO"], METHOD_COLORS["KimiPO-Norm"]])
    bias_axes.set_xticks([0, 1], ["mean", f"normalizer, G={group_size}"], fontsize=7)
    bias_axes.text(0.5, 1.03, "|E baseline - b_t|, mean over prompts", transform=bias_axes.transAxes,
                   ha="center", va="bottom", fontsize=8)
    for i, name in enumerate(slice_.names):
        color, style = LOSS_STYLES[name]
        slice_axes.plot(slice_.steps, np.log10(np.maximum(slice_.losses[i], SLICE_FLOOR)), ls=style, color=color, label=name)
    slice_axes.axvline(1.0, color="0.5", lw=1, ls=":")
    slice_axes.legend(fontsize=5, loc="upper right")
    slice_axes.text(0.5, 1.03, "log10 population loss from theta_t through the target (s = 1)",
                    transform=slice_axes.transAxes, ha="center", va="bottom", fontsize=7)
    common = {"batch_size": int(batch_size), "inner_steps": WIDGET_INNER_STEPS, "eta": WIDGET_ETA_SCALE / beta**2}
    runs = (
        ("KimiPO", lambda rng: kimipo(instance, beta, WIDGET_ITERATIONS, rng=rng, **common)),
        ("KimiPO-Norm", lambda rng: kimipo_norm(instance, beta, WIDGET_ITERATIONS, group_size=int(group_size), rng=rng, **common)),
        ("Rebel-OnPolicy", lambda rng: rebel_onpolicy(instance, beta, WIDGET_ITERATIONS, rng=rng, **common)),
    )
    outcomes = []
    for name, run in runs:
        color = METHOD_COLORS[name]
        try:
            trajectory = run(np.random.default_rng(WIDGET_SEED)).trajectory
        except FloatingPointError:
            outcomes.append(f"{name} diverged")
            continue
        x = trajectory.responses_sampled
        reward_axes.plot(x, trajectory.reward, color=color, label=name)
        coverage_axes.plot(x, trajectory.log10_coverage.min(axis=1), color=color, label=name)
        first = trajectory.responses_to_eps(WIDGET_EPS)
        outcomes.append(f"{name}: " + (f"eps at {first:,}" if first is not None else "not eps-optimal"))
    reward_axes.axhline(instance.optimal_value - WIDGET_EPS, color="C3", ls="--", lw=1)
    reward_axes.set_ylim(0.0, 1.02)
    reward_axes.text(0.5, 1.03, "expected reward (dashed: J* - eps)", transform=reward_axes.transAxes,
                     ha="center", va="bottom", fontsize=8)
    coverage_axes.axhline(np.log10(1.0 / 40.0), color="0.5", ls=":", lw=1)
    coverage_axes.text(0.5, 1.03, "log10 coverage, worst prompt (dotted: base)", transform=coverage_axes.transAxes,
                       ha="center", va="bottom", fontsize=8)
    coverage_axes.legend(fontsize=6, loc="lower left")
    for axes in (reward_axes, coverage_axes):
        axes.set_xlabel("responses sampled", fontsize=8)
    for axes in (bias_axes, slice_axes, reward_axes, coverage_axes):
        axes.xaxis.set_major_locator(MaxNLocator(4))
        axes.tick_params(labelsize=7)
        axes.grid(alpha=0.3)
    figure.suptitle(
        f"beta {beta:.3g}, G {group_size}, N {batch_size}, K {WIDGET_INNER_STEPS}, eta {WIDGET_ETA_SCALE / beta**2:.3g}: "
        + "; ".join(outcomes),
        fontsize=8,
    )
    return figure


def squared_loss_widget() -> Explorable:
    """``beta``, ``G`` and the batch size in; bias, loss slice, reward and coverage out.

    The static stand-in holds 27 frames: three ``beta`` by three ``G`` by three batch sizes.
    """
    sliders = [
        Slider("beta", "beta", 0.1, 4.0, 0.5, (0.25, 0.5, 1.0), log=True),
        Slider("group_size", "extra responses G", 1, 64, 8, (1, 8, 64), integer=True, log=True),
        Slider("batch_size", "batch size N", 16, 512, 128, (32, 128, 512), integer=True, step=16),
    ]
    return explorable(squared_loss_explorer_figure, sliders, "KimiPO, KimiPO-Norm and Rebel-OnPolicy on a small collapse instance")
