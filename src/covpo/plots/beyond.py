"""Figures of chapter 6 for the questions the paper leaves open: token sequences and a nonlinear policy.

:func:`sequence_figure` draws a :class:`~covpo.labs.sequences.experiment.SequenceExperiment` and
:func:`nonlinear_figure` a :class:`~covpo.labs.nonlinear.experiment.NonlinearExperiment`.
"""

from __future__ import annotations

import numpy as np

from covpo.labs.nonlinear import NonlinearExperiment
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, label_styles, method_colour
from covpo.labs.sequences import SequenceExperiment

#: Bar colours of the linear and the network policy in :func:`nonlinear_figure`: greys, which no
#: method of the book's key takes (:data:`~covpo.plots.style.COLOUR_KEY`).
POLICY_COLOURS = ("0.7", "0.35")


def sequence_figure(experiment: SequenceExperiment) -> BookFigure:
    """Coverage of exact REINFORCE and APMD on sequences (top), and how far the sampled methods' ratios move with ``L`` (bottom)."""
    figure = new_figure(COLUMN_WIDTH, 6.4)
    coverage_axes, ratio_axes = figure.subplots(2, 1)
    for runs, name in ((experiment.reinforce, "REINFORCE"), (experiment.apmd, "APMD")):
        color = method_colour(name)
        for prefix, run, style in zip(experiment.shared_prefixes, runs, ("-", "--")):
            coverage_axes.plot(np.maximum(run.gradient_steps, 1), run.log10_coverage.min(axis=1), ls=style, color=color,
                               label=f"{name} (exact), shared prefix {prefix}")
    coverage_axes.set_xscale("log")
    coverage_axes.set_xlabel("gradient steps")
    coverage_axes.set_ylabel("$\\log_{10}$ coverage\n(optimal sequence)")
    coverage_axes.set_title(f"Exact runs: $V = {experiment.vocab_size}$, $H = {experiment.length}$, gap {experiment.gap:g}",
                            loc="left")
    coverage_axes.legend(loc="lower left")
    for i, (name, style) in enumerate(zip(experiment.ratio_names, label_styles(experiment.ratio_names))):
        largest = experiment.max_abs_log_sequence_ratio[i].max(axis=1)
        ratio_axes.plot(experiment.ratio_lengths, largest, label=name, **style)
    ratio_axes.axhline(1.0 / experiment.beta, color="k", ls="--", lw=1, label="target's bound $R/\\beta$")
    ratio_axes.set_xlabel("sequence length $H$")
    ratio_axes.set_xticks(experiment.ratio_lengths)
    ratio_axes.set_ylabel("largest $|\\log w|$ of a\nsequence over the run")
    ratio_axes.set_title("Sampled reset methods: the sequence-level ratio", loc="left")
    ratio_axes.legend(loc="upper left")
    for axes in (coverage_axes, ratio_axes):
        axes.grid(alpha=0.3)
    return figure


def nonlinear_figure(experiment: NonlinearExperiment) -> BookFigure:
    """Worst coverage (over seeds and prompts) per method, linear against network policy, one panel per family."""
    figure = new_figure(COLUMN_WIDTH, 4.2)
    panels = figure.subplots(1, len(experiment.families), sharey=True, squeeze=False)[0]
    positions = np.arange(len(experiment.methods))
    for f, (axes, family) in enumerate(zip(panels, experiment.families)):
        for p, (policy, color) in enumerate(zip(experiment.policies, POLICY_COLOURS)):
            worst = np.nanmin(experiment.min_log10_coverage[f, :, p], axis=1)
            axes.barh(positions + (p - 0.5) * 0.4, worst, height=0.4, color=color, label=f"{policy} policy")
        axes.axvline(experiment.base_log10_coverage[f], color="k", ls=":", lw=1.5, label="base model")
        axes.set_title(f"{family} instance, $C_{{\\mathrm{{cov}}}}$ = {experiment.coverages[f]:g}")
        axes.set_xlabel("worst $\\log_{10}$ coverage")
        axes.grid(alpha=0.3, axis="x")
    panels[0].set_yticks(positions, list(experiment.methods))
    panels[0].invert_yaxis()
    figure.legend(*panels[0].get_legend_handles_labels(), loc="outside lower center", ncols=3, frameon=False)
    return figure
