"""Figures of chapter 6 for the questions the paper leaves open: token sequences and a nonlinear policy.

:func:`sequence_figure` draws a :class:`~covpo.sequences.SequenceExperiment` and
:func:`nonlinear_figure` a :class:`~covpo.nonlinear.NonlinearExperiment`.
"""

from __future__ import annotations

import numpy as np

from covpo.nonlinear import NonlinearExperiment
from covpo.plots.base import BookFigure, new_figure
from covpo.sequences import SequenceExperiment


def sequence_figure(experiment: SequenceExperiment) -> BookFigure:
    """Coverage of exact REINFORCE and APMD on sequences, and how far the sampled methods' ratios move with ``L``."""
    figure = new_figure(11.5, 3.8)
    coverage_axes, ratio_axes = figure.subplots(1, 2)
    for runs, name, style in ((experiment.reinforce, "REINFORCE", "-"), (experiment.apmd, "APMD", "--")):
        for prefix, run, color in zip(experiment.shared_prefixes, runs, ("C3", "C0")):
            coverage_axes.plot(np.maximum(run.gradient_steps, 1), run.log10_coverage.min(axis=1), ls=style, color=color,
                               label=f"exact {name}, shared prefix {prefix}")
    coverage_axes.set_xscale("log")
    coverage_axes.set_xlabel("gradient steps")
    coverage_axes.set_ylabel("$\\log_{10}$ coverage (optimal sequence)")
    coverage_axes.set_title(f"V = {experiment.vocab_size}, L = {experiment.length}, gap {experiment.gap:g}", fontsize=9)
    coverage_axes.legend(fontsize=7)
    for i, name in enumerate(experiment.ratio_names):
        largest = experiment.max_abs_log_sequence_ratio[i].max(axis=1)
        ratio_axes.plot(experiment.ratio_lengths, largest, "o-", color=f"C{i + 1}", label=name)
    ratio_axes.axhline(1.0 / experiment.beta, color="k", ls="--", lw=1, label="target's bound $R/\\beta$")
    ratio_axes.set_xlabel("sequence length $L$")
    ratio_axes.set_ylabel("largest $|\\log w|$ of a sequence over the run")
    ratio_axes.set_title("sampled reset methods: sequence-level ratio", fontsize=9)
    ratio_axes.legend(fontsize=7)
    for axes in (coverage_axes, ratio_axes):
        axes.grid(alpha=0.3)
    return figure


def nonlinear_figure(experiment: NonlinearExperiment) -> BookFigure:
    """Worst coverage (over seeds and prompts) per method, linear against network policy, one panel per family."""
    figure = new_figure(12.0, 4.2)
    panels = figure.subplots(1, len(experiment.families), sharey=True)
    positions = np.arange(len(experiment.methods))
    for f, (axes, family) in enumerate(zip(panels, experiment.families)):
        for p, (policy, color) in enumerate(zip(experiment.policies, ("C0", "C1"))):
            worst = np.nanmin(experiment.min_log10_coverage[f, :, p], axis=1)
            axes.bar(positions + (p - 0.5) * 0.4, worst, width=0.4, color=color, label=f"{policy} policy")
        axes.axhline(experiment.base_log10_coverage[f], color="k", ls=":", lw=1, label="base model")
        axes.set_xticks(positions, [m.replace(", ", ",\n") for m in experiment.methods], fontsize=6, rotation=30)
        axes.set_title(f"{family} instance, $C_{{\\mathrm{{cov}}}}$ = {experiment.coverages[f]:g}", fontsize=9)
        axes.grid(alpha=0.3, axis="y")
    panels[0].set_ylabel("worst $\\log_{10}$ coverage over seeds and prompts")
    panels[0].legend(fontsize=7, loc="lower left")
    return figure
