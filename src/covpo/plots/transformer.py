"""Figures and the widget of chapter 7 (a small transformer post-trained with GRPO, resets and APMD).

Every function but the frontier figures draws a
:class:`~covpo.labs.transformer.experiment.TransformerStudy`; the frontier figures draw the record of
:mod:`covpo.labs.transformer.frontier`. The figures
show medians over seeds as lines (each arm keeps its colour and marker in every figure), and the
seeds themselves where a spread matters, as dots:

- :func:`transformer_passk_figure`: exact pass@k against k, with the sampled estimate, on the
  hard training and held-out prompts;
- :func:`transformer_training_figure`: pass@256, the KL divergence to the base model and the
  inner loops' accuracy over training;
- :func:`transformer_widget`: any cell of the study, seed by seed;
- :func:`transformer_frontier_figure`: the reward-coverage frontier of every arm, at matched pass@1;
- :func:`transformer_near_miss_figure`: where the hard prompts' probability goes, against pass@1.
"""

from __future__ import annotations

import numpy as np

from covpo.labs.transformer import ARM_NAMES, TransformerStudy, exact_pass_at_k
from covpo.labs.transformer.methods import STRONG_ARM, WEAK_ARM
from covpo.labs.transformer.analysis import BASE
from covpo.labs.transformer.frontier_analysis import median_frontier
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, free_series_colours, method_colour, method_kind, method_style, series_style
from covpo.plots.widgets import Explorable, Slider, explorable

KEY_ARMS = (WEAK_ARM, STRONG_ARM, "APMD", "APMD, exact target")
"""The arms the figures draw (every arm is in the tables and the widget)."""
PROMPTS = (("training", "hard training prompts"), ("held-out", "hard held-out prompts"))


ARM_KINDS = {WEAK_ARM: "weak fixed penalty", STRONG_ARM: "strong fixed penalty", "APMD": "APMD",
             "APMD, exact target": "APMD", "ProRL-style": "GRPO with resets", "β = 0": "REINFORCE"}
"""The kind of the book's key (:data:`~covpo.plots.style.COLOUR_KEY`) each drawn arm is: its colour."""
#: Marker and line style of the arms whose kind another drawn arm shares (exact APMD beside APMD, no penalty
#: beside the weak one); the other arms are drawn solid, so that dashed is exact mirror descent only.
ARM_MARKS = {"APMD, exact target": ("D", "-."), "β = 0": ("^", ":")}


def arm_style(arm: str) -> dict[str, str]:
    """The colour, marker and line style of ``arm`` in every figure of the chapter.

    The arms of :data:`ARM_KINDS` take their kind's colour from the book's key; the others a
    colour no method of the key takes, and a marker and line style of their own.
    """
    kind = ARM_KINDS.get(arm) or method_kind(arm)
    if kind is None:
        index = ARM_NAMES.index(arm)
        return {**series_style(index), "color": free_series_colours(index + 1)[index]}
    style = {**method_style(kind), "linestyle": "-"}
    if arm in ARM_MARKS:
        style["marker"], style["linestyle"] = ARM_MARKS[arm]
    return style


def _ks(study: TransformerStudy) -> np.ndarray:
    return 2 ** np.arange(int(np.log2(study.n_samples)) + 1)


def sampled_prompt_pass_curve(study: TransformerStudy, runs: np.ndarray, ks: np.ndarray, prompts: str,
                              step: int = -1) -> np.ndarray:
    """Exact pass@k of ``runs`` at ``step`` averaged over the hard ``prompts`` their models were sampled on, ``[len(runs), len(ks)]``.

    The sampler draws answers to every hard held-out prompt of a seed but only to its first
    ``n`` hard training prompts (``n`` the training rows of ``study.sampled_held``); this is
    :meth:`~covpo.labs.transformer.experiment.TransformerStudy.exact_pass_curve` over those same prompts,
    so that a line and the markers of :func:`transformer_passk_figure` measure one quantity.
    """
    held = prompts == "held-out"
    coverage, hard = (study.held_log_coverage, study.held_hard) if held else (study.log_coverage, study.train_hard)
    n_sampled = int((study.sampled_valid & (study.sampled_held == held)).sum(axis=1).max())
    rows = []
    for run in runs:
        chosen = np.flatnonzero(hard[run])[:n_sampled]
        rows.append(exact_pass_at_k(np.minimum(coverage[run, step, chosen], 0.0), ks).mean(0))
    return np.stack(rows)


def transformer_passk_figure(study: TransformerStudy) -> BookFigure:
    """Exact pass@k (lines) and the unbiased estimate from samples (open markers), mixed task, median over seeds.

    Both on the same prompts, those the models were sampled on (:func:`sampled_prompt_pass_curve`).
    """
    figure = new_figure(COLUMN_WIDTH, 3.4)
    panels = figure.subplots(1, 2, sharey=True)
    ks = _ks(study)
    sampled = {int(r): i for i, r in enumerate(study.sampled_runs)}
    for axes, (prompts, title) in zip(panels, PROMPTS):
        estimates = study.sampled_pass_curve(ks, prompts)
        base_runs = study.runs("mixed", WEAK_ARM)
        base_curve = sampled_prompt_pass_curve(study, base_runs, ks, prompts, step=0)
        axes.plot(ks, np.median(base_curve, axis=0), color=method_colour("base model"), lw=2, label=BASE)
        base_rows = [sampled[-1 - s] for s in study.seeds]
        axes.plot(ks, np.median(estimates[base_rows], axis=0), "o", color=method_colour("base model"), mfc="none", ms=5)
        for arm in KEY_ARMS:
            runs = study.runs("mixed", arm)
            style = arm_style(arm)
            axes.plot(ks, np.median(sampled_prompt_pass_curve(study, runs, ks, prompts), axis=0), color=style["color"],
                      ls=style["linestyle"], label=arm)
            rows = [sampled[int(r)] for r in runs]
            axes.plot(ks, np.median(estimates[rows], axis=0), style["marker"], color=style["color"], mfc="none",
                      ms=5)
        axes.set_xscale("log", base=2)
        axes.set_xlabel("k (attempts per prompt)")
        axes.set_title(title, loc="left")
        axes.set_ylim(-0.02, 1.02)
        axes.grid(alpha=0.3)
    panels[0].set_ylabel("pass@k")
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False)
    return figure


def transformer_training_figure(study: TransformerStudy) -> BookFigure:
    """Over training, mixed task, median over seeds: exact pass@256 on hard training and held-out prompts, KL to the base model, inner-loop accuracy."""
    figure = new_figure(COLUMN_WIDTH, 5.6)
    (train_axes, held_axes), (kl_axes, accuracy_axes) = figure.subplots(2, 2, sharex=True)
    steps = np.arange(study.setup.n_steps + 1)
    every = max(1, study.setup.n_steps // 6)
    pass_train = np.stack([study.exact_pass_at(256, "training", t) for t in steps], axis=1)
    pass_held = np.stack([study.exact_pass_at(256, "held-out", t) for t in steps], axis=1)
    for arm in KEY_ARMS:
        runs = study.runs("mixed", arm)
        style = dict(arm_style(arm), markevery=every, label=arm)
        train_axes.plot(steps, np.median(pass_train[runs], axis=0), **style)
        held_axes.plot(steps, np.median(pass_held[runs], axis=0), **style)
        kl_axes.plot(steps, np.median(study.kl[runs], axis=0), **style)
        if study.methods[arm].exact:
            accuracy_axes.plot(steps[1:], np.median(study.accuracy[runs], axis=0), **style)
    for axes, title in ((train_axes, "hard training prompts"), (held_axes, "hard held-out prompts")):
        axes.set_title(title, loc="left")
        axes.set_ylim(-0.02, 1.02)
        axes.set_ylabel("exact pass@256")
    kl_axes.set_ylabel("KL to the base model\n(nats, training prompts)")
    accuracy_axes.set_ylabel("inner-loop accuracy\n$\\mathrm{KL}(\\pi_{t+1} \\Vert \\pi^\\star_{t+1})$")
    accuracy_axes.set_yscale("log")
    for axes in (kl_axes, accuracy_axes):
        axes.set_xlabel("outer step")
    for axes in (train_axes, held_axes, kl_axes, accuracy_axes):
        axes.grid(alpha=0.3)
    handles, labels = train_axes.get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False)
    return figure


def _cell_names(study: TransformerStudy) -> list[str]:
    return [f"{cell.task}, {cell.arm}" + (f", G = {cell.group_size}" if cell.group_size != 8 else "")
            for cell in study.cells]


def transformer_explorer_figure(study: TransformerStudy, cell: int = 0) -> BookFigure:
    """One cell of the study: every seed's exact pass@k on hard training and held-out prompts, the base model's dotted."""
    cell = int(np.clip(cell, 0, len(study.cells) - 1))
    chosen = study.cells[cell]
    runs = study.runs(chosen.task, chosen.arm, chosen.group_size, chosen.reward, chosen.learning_rate)
    figure = new_figure(COLUMN_WIDTH, 3.2)
    panels = figure.subplots(1, 2, sharey=True)
    ks = _ks(study)
    for axes, (prompts, title) in zip(panels, PROMPTS):
        trained = study.exact_pass_curve(runs, ks, prompts)
        base = study.exact_pass_curve(runs, ks, prompts, step=0)
        for i, seed in enumerate(study.run_seed[runs]):
            style = series_style(i)
            axes.plot(ks, trained[i], color=style["color"], marker=style["marker"], ms=4, label=f"seed {seed}")
            axes.plot(ks, base[i], color=style["color"], ls=":", lw=1)
        axes.set_xscale("log", base=2)
        axes.set_xlabel("k")
        axes.set_title(title, loc="left", fontsize=9)
        axes.set_ylim(-0.02, 1.02)
        axes.grid(alpha=0.3)
    panels[0].set_ylabel("exact pass@k\n(dotted: base model)")
    panels[1].legend(loc="lower right", fontsize=8, ncols=2)
    figure.suptitle(_cell_names(study)[cell], fontsize=10)
    return figure


def transformer_widget(study: TransformerStudy) -> Explorable:
    """A cell of the study in, its seeds' pass@k out; only the cells that were run are offered."""
    names = _cell_names(study)
    slider = Slider("cell", "cell", 0, len(names) - 1, 0, tuple(range(len(names))), integer=True, choices=tuple(names))

    def figure_function(cell: int) -> BookFigure:
        return transformer_explorer_figure(study, cell)

    return explorable(figure_function, [slider], "A transformer post-trained: every cell of the study, seed by seed")



FRONTIER_ARMS = (WEAK_ARM, STRONG_ARM, "β = 0", "ProRL-style", "APMD", "APMD, exact target")
"""The arms the frontier figure draws, beside exact mirror descent."""
MIRROR_DESCENT_STYLE = {"color": method_colour("APMD"), "linestyle": "--", "marker": ""}
"""Exact mirror descent, the path of a perfect inner loop, in every figure of the frontier record."""


def frontier_arm_style(arm: str) -> dict[str, str]:
    """The style of ``arm`` (or ``"mirror descent"``) in the frontier figures."""
    return dict(MIRROR_DESCENT_STYLE) if arm == "mirror descent" else arm_style(arm)


def transformer_frontier_figure(record: dict, profile: str, levels: np.ndarray, *, measure: str = "pass@256",
                                ylabel: str = "exact pass@256, hard prompts", reward: str = "partial",
                                arms: tuple[str, ...] = FRONTIER_ARMS) -> BookFigure:
    """The reward-coverage frontier: ``measure`` of the hard prompts against exact pass@1, along training.

    One line per arm, the median over seeds at each pass@1 level that at least half the seeds
    reach, with the interquartile range shaded; training and held-out panels. From the long
    block of the frontier record's run under ``profile``.
    """
    figure = new_figure(COLUMN_WIDTH, 3.6)
    panels = figure.subplots(1, 2, sharey=True)
    for axes, (panel, title) in zip(panels, PROMPTS):
        for arm in (*arms, "mirror descent"):
            stats = median_frontier(record, profile, arm, levels, measure=measure, panel=panel, reward=reward)
            style = frontier_arm_style(arm)
            shown = np.isfinite(stats[:, 0])
            axes.plot(levels[shown], stats[shown, 0], color=style["color"], ls=style["linestyle"],
                      marker=style["marker"], markevery=2, label=arm)
            axes.fill_between(levels[shown], stats[shown, 1], stats[shown, 2], color=style["color"], alpha=0.12,
                              lw=0)
        axes.set_title(title, loc="left")
        axes.set_xlabel(f"exact pass@1, all {panel} prompts")
        axes.grid(alpha=0.3)
    panels[0].set_ylabel(ylabel)
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=4, frameon=False)
    return figure


def transformer_near_miss_figure(record: dict, profile: str, levels: np.ndarray,
                                 arms: tuple[str, ...] = FRONTIER_ARMS) -> BookFigure:
    """Where the hard prompts' probability goes: the near miss's and the correct answer's mean probability against pass@1.

    Median over seeds per pass@1 level (training prompts, long block, partial credit).
    """
    figure = new_figure(COLUMN_WIDTH, 3.4)
    panels = figure.subplots(1, 2, sharex=True)
    for axes, (measure, title) in zip(panels, (("near", "near miss"), ("log10_coverage", "correct answer"))):
        for arm in (*arms, "mirror descent"):
            stats = median_frontier(record, profile, arm, levels, measure=measure)
            style = frontier_arm_style(arm)
            shown = np.isfinite(stats[:, 0])
            axes.plot(levels[shown], stats[shown, 0], color=style["color"], ls=style["linestyle"],
                      marker=style["marker"], markevery=2, label=arm)
        axes.set_title(f"hard training prompts: {title}", loc="left")
        axes.set_xlabel("exact pass@1, all training prompts")
        axes.grid(alpha=0.3)
    panels[0].set_ylabel("mean probability")
    panels[1].set_ylabel("mean $\\log_{10}$ probability")
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=4, frameon=False)
    return figure
