"""Figures of the tuning maps and the noise study (:mod:`covpo.experiments.implications.tuning`, :mod:`covpo.experiments.implications.noise`).

:func:`tuning_heatmaps_figure` draws the ``(beta, K)`` and ``(beta, width)`` maps with the
prescriptions of :func:`covpo.experiments.implications.tuning.tuning_prescriptions` on them; :func:`noise_figure` draws
the depth of coverage loss per method over seeds next to the exact-gradient counterparts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.patches import Rectangle
from matplotlib.patheffects import withStroke

from covpo.experiments.implications.noise import NoiseStudy
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, PALETTE
from covpo.experiments.implications.tuning import ACCURACY_PRODUCT, FIXED_INTERVAL, TuningMap

FAILED_COLOR = "0.88"
LOST_COLOR = PALETTE[1]
REACHED_COLOR = PALETTE[2]
RULE_COLOR = PALETTE[4]
FIXED_COLOR = PALETTE[5]


def grid_position(values: np.ndarray | float, grid: Sequence[float]) -> np.ndarray:
    """Positions of ``values`` on a heat map whose cells sit at ``0, 1, ...`` for a log-spaced ``grid``.

    Linear in ``log value`` between neighbouring grid points and extrapolated beyond the ends
    with the end segments' slopes, so a prescription off the grid lands off the map.
    """
    log_grid = np.log(np.asarray(grid, dtype=float))
    log_values = np.log(np.asarray(values, dtype=float))
    index = np.arange(log_grid.size, dtype=float)
    if log_grid.size == 1:
        return np.zeros_like(log_values)
    positions = np.interp(log_values, log_grid, index)
    below = (log_values - log_grid[0]) / (log_grid[1] - log_grid[0])
    above = index[-1] + (log_values - log_grid[-1]) / (log_grid[-1] - log_grid[-2])
    return np.where(log_values < log_grid[0], below, np.where(log_values > log_grid[-1], above, positions))


def _on_map(position: float, size: int) -> bool:
    return -0.5 <= position <= size - 0.5


def _cost_label(cost: float) -> str:
    if not np.isfinite(cost):
        return "-"
    return f"{cost / 1000:.1f}k" if cost >= 1000 else f"{int(cost)}"


def _text_color(cmap, fraction: float) -> str:
    """Black or white, whichever reads better on the colour ``cmap`` gives ``fraction`` (relative luminance)."""
    red, green, blue = cmap(float(np.clip(fraction, 0.0, 1.0)))[:3]
    return "black" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.45 else "white"


def _draw_map(axes, tuning_map: TuningMap, vmin: float, vmax: float):
    costs = np.log10(tuning_map.median_responses_to_eps)
    cmap = colormaps["viridis_r"].with_extremes(bad=FAILED_COLOR)
    image = axes.imshow(np.ma.masked_invalid(costs), origin="lower", cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    lost = np.rint(tuning_map.lost_fraction * tuning_map.n_seeds).astype(int)
    for (i, j), cost in np.ndenumerate(tuning_map.median_responses_to_eps):
        color = _text_color(cmap, (costs[i, j] - vmin) / (vmax - vmin)) if np.isfinite(cost) else "black"
        label = _cost_label(cost) + (f"\nlost {lost[i, j]}/{tuning_map.n_seeds}" if lost[i, j] else "")
        axes.text(j, i, label, ha="center", va="center", fontsize=8, color=color, linespacing=1.1)
        if lost[i, j]:
            axes.add_patch(Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, fill=False, ec=LOST_COLOR, lw=2.0))
    axes.set_xticks(range(tuning_map.betas.size), [f"{b:g}" for b in tuning_map.betas])
    axes.set_yticks(range(tuning_map.rows.size), [f"{v:g}" for v in tuning_map.rows])
    axes.set_xlabel(f"regularization $\\beta$ (learning rate $\\eta = {tuning_map.eta_beta:g} / \\beta$)")
    return image


#: How far into a map, as a fraction of its height (``along="x"``) or width (``"y"``), an edge mark reaches.
EDGE_MARK_DEPTH = 0.05


def _edge_mark(axes, along: str, position: float, style: str, color: str, label: str) -> None:
    """A prescription marked on the map's edge, between the cells it falls between, short of the cell labels.

    ``along="x"``: a tick down from the map's top edge at column position ``position``; ``"y"``: a
    tick in from the map's right edge at row position ``position``. The tick stays inside the
    axes (a white outline keeps it legible on any cell colour).
    """
    transform = axes.get_xaxis_transform() if along == "x" else axes.get_yaxis_transform()
    where, span = [position, position], [1.0 - EDGE_MARK_DEPTH, 1.0]
    xs, ys = (where, span) if along == "x" else (span, where)
    axes.plot(xs, ys, transform=transform, color=color, ls=style, lw=2.5, label=label, solid_capstyle="butt",
              path_effects=[withStroke(linewidth=4.5, foreground="white")])


def _horizon_marks(axes, tuning_map: TuningMap) -> None:
    prescriptions = tuning_map.prescriptions
    for beta, style, label in (
        (prescriptions.beta_horizon, "-", "exact mirror descent reaches $\\varepsilon$ in $T$ resets"),
        (prescriptions.beta_horizon_bound, ":", "rate bound certifies $\\varepsilon$ in $T$ resets"),
    ):
        position = float(grid_position(beta, tuning_map.betas))
        if _on_map(position, tuning_map.betas.size):
            _edge_mark(axes, "x", position, style, "k", f"{label}: $\\beta \\leq$ {beta:.2g}")


def _row_mark(axes, tuning_map: TuningMap, value: float, style: str, color: str, label: str) -> None:
    position = float(grid_position(value, tuning_map.rows))
    if _on_map(position, tuning_map.rows.size):
        _edge_mark(axes, "y", position, style, color, label)


def tuning_heatmaps_figure(inner_steps_map: TuningMap, width_map: TuningMap) -> BookFigure:
    """The two tuning maps, one per row, coloured by the median responses to eps (log scale).

    Each cell shows the median responses to eps (``-``: at most half the seeds reached eps
    within the budget; such cells are grey), in black or white, whichever reads on its colour.
    Framed cells: some seed fell below half the base coverage (or diverged), with the count
    under the cost. The prescriptions are short ticks, beside the cells they fall
    between, on the maps' edges (``_edge_mark``): on the top edge of each map, the strongest
    ``beta`` whose horizon fits the budget (exact mirror descent, solid; the rate bound, dotted);
    on the right edge of the top map, chapter 3's rule ``eta beta K = 16`` (solid) and its
    coverage-aware version (dotted); on the right edge of the bottom map, width 1 (the target is
    never clipped); on the bottom map, small dots at the right edge of each column
    where PPO's fixed interval :data:`~covpo.experiments.implications.tuning.FIXED_INTERVAL`
    sits. One legend under both maps; the colour bar, shared, to their right.
    """
    figure = new_figure(COLUMN_WIDTH, 7.4)
    inner_axes, width_axes = figure.subplots(2, 1)
    finite = np.concatenate([m.median_responses_to_eps[np.isfinite(m.median_responses_to_eps)].ravel()
                             for m in (inner_steps_map, width_map)])
    vmin, vmax = (np.log10(finite.min()), np.log10(finite.max())) if finite.size else (2.0, 4.0)
    vmax = max(vmax, vmin + 0.1)
    for axes, tuning_map in ((inner_axes, inner_steps_map), (width_axes, width_map)):
        image = _draw_map(axes, tuning_map, vmin, vmax)
        _horizon_marks(axes, tuning_map)
    prescriptions = inner_steps_map.prescriptions
    _row_mark(inner_axes, inner_steps_map, prescriptions.accuracy_inner_steps, "-", RULE_COLOR,
              f"$\\eta\\beta K = {ACCURACY_PRODUCT:g}$ (chapter 3):\nK = {prescriptions.accuracy_inner_steps:.2g}")
    _row_mark(inner_axes, inner_steps_map, prescriptions.coverage_aware_inner_steps, ":", RULE_COLOR,
              f"coverage-aware rule:\nK = {prescriptions.coverage_aware_inner_steps:.2g}")
    _row_mark(width_axes, width_map, 1.0, "-", RULE_COLOR, "width 1: the target\nis never clipped")
    fixed = grid_position(width_map.prescriptions.fixed_interval_widths, width_map.rows)
    shown = (fixed >= -0.5) & (fixed <= width_map.rows.size - 0.5)
    if shown.any():
        width_axes.plot(np.flatnonzero(shown) + 0.38, fixed[shown], "o", color=FIXED_COLOR, ms=5,
                        mec="black", mew=0.6, label=f"fixed interval {list(FIXED_INTERVAL)}")
    inner_axes.set_ylabel("inner steps K")
    width_axes.set_ylabel("clip width\n(log-space factor on $R/\\beta$)")
    inner_axes.set_title(inner_steps_map.title("the inner steps K"), loc="left", pad=6)
    width_axes.set_title(width_map.title("the clip interval"), loc="left", pad=6)
    handles, labels = [], []
    for axes in (inner_axes, width_axes):
        axes.set_xlim(-0.5, axes.get_xlim()[1])
        for handle, label in zip(*axes.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    figure.legend(handles, [label.replace("\n", " ") for label in labels], loc="outside lower center", ncols=2,
                  frameon=False, fontsize="small", handlelength=1.6, columnspacing=1.2)
    colorbar = figure.colorbar(image, ax=[inner_axes, width_axes], location="right", shrink=0.7, aspect=25)
    colorbar.set_label("$\\log_{10}$ median responses to $\\varepsilon$")
    figure.suptitle(
        f"{inner_steps_map.response_budget:,} responses per run (N = {inner_steps_map.batch_size}, "
        f"T = {inner_steps_map.n_iterations}), $\\varepsilon$ = {inner_steps_map.eps:g}, "
        f"{inner_steps_map.n_seeds} seeds per cell"
    )
    return figure


def noise_figure(study: NoiseStudy) -> BookFigure:
    """Depth of the coverage loss per method over seeds (top) and the share collapsed and reaching eps (bottom).

    Top: one dot per seed with a box of its quartiles, per method and coverage; black
    diamonds are the exact-gradient counterparts; the dashed line is the collapse threshold.
    """
    figure = new_figure(COLUMN_WIDTH, 6.4)
    depth_axes, share_axes = figure.subplots(2, 1, sharex=True)
    n_methods, n_coverages = study.depth.shape[:2]
    group_width = 0.8 / n_coverages
    for j, coverage in enumerate(study.coverages):
        centers = np.arange(n_methods) + (j - (n_coverages - 1) / 2) * group_width
        color = f"C{j}"
        for i, center in enumerate(centers):
            values = np.sort(study.depth[i, j][~np.isnan(study.depth[i, j])])
            spread = np.linspace(-0.3, 0.3, values.size) * group_width if values.size > 1 else np.zeros(values.size)
            depth_axes.plot(center + spread, values, "o", color=color, ms=4, alpha=0.6,
                            label=f"$C_{{\\mathrm{{cov}}}}$ = {coverage:g}, one dot per seed" if i == 0 else None)
            if values.size:
                depth_axes.boxplot(values, positions=[center], widths=0.7 * group_width, showfliers=False,
                                   manage_ticks=False, medianprops={"color": "k"})
        depth_axes.plot(centers, study.exact_depth[:, j], "D", color="k", ms=7,
                        label="exact-gradient counterpart" if j == 0 else None)
        share_axes.bar(np.arange(n_methods) - 0.2 + j * 0.4 / n_coverages, study.collapsed_fraction[:, j],
                       width=0.4 / n_coverages, color=LOST_COLOR, alpha=0.4 + 0.6 * (j + 1) / n_coverages,
                       label=f"collapsed, $C_{{\\mathrm{{cov}}}}$ = {coverage:g}")
        share_axes.bar(np.arange(n_methods) + 0.2 + j * 0.4 / n_coverages, study.reached_fraction[:, j],
                       width=0.4 / n_coverages, color=REACHED_COLOR, alpha=0.4 + 0.6 * (j + 1) / n_coverages,
                       label=f"reached $\\varepsilon$, $C_{{\\mathrm{{cov}}}}$ = {coverage:g}")
    depth_axes.axhline(-study.collapse_decades, color="k", ls="--", lw=1, label="collapse threshold")
    depth_axes.set_ylabel("depth (decades):\nmin $\\log_{10} c_t(x) / c_0(x)$")
    share_axes.set_ylabel(f"share of {study.n_seeds} seeds")
    share_axes.set_ylim(0.0, 1.05)
    share_axes.set_xticks(range(n_methods), [name.replace(", ", ",\n") for name in study.names])
    for axes in (depth_axes, share_axes):
        axes.grid(alpha=0.3, axis="y")
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    depth_axes.set_title(
        f"Sampling noise on the collapse family: {study.response_budget:,} responses per run, "
        f"{study.n_seeds} seeds", loc="left"
    )
    return figure
