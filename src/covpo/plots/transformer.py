"""Figures and the widget of chapter 7 (a small transformer post-trained with GRPO, resets and APMD).

Every function draws a :class:`~covpo.labs.transformer.experiment.TransformerStudy`. The figures
show medians over seeds as lines (each arm keeps its colour and marker in every figure), and the
seeds themselves where a spread matters, as dots:

- :func:`transformer_passk_figure`: exact pass@k against k, with the sampled estimate, on the
  hard training and held-out prompts;
- :func:`transformer_training_figure`: pass@256, the KL divergence to the base model and the
  inner loops' accuracy over training;
- :func:`transformer_route_figure`: what each task does to pass@256, seed by seed;
- :func:`transformer_widget`: any cell of the study, seed by seed.
"""

from __future__ import annotations

import numpy as np

from covpo.labs.transformer import ARM_NAMES, TransformerStudy
from covpo.labs.transformer.methods import STRONG_ARM, WEAK_ARM
from covpo.labs.transformer.analysis import BASE, Side, side_values
from covpo.labs.transformer.experiment import ROUTE_ARMS
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, series_style
from covpo.plots.widgets import Explorable, Slider, explorable

KEY_ARMS = (WEAK_ARM, STRONG_ARM, "APMD", "APMD, exact target")
"""The arms the figures draw (every arm is in the tables and the widget)."""
PROMPTS = (("training", "hard training prompts"), ("held-out", "hard held-out prompts"))


STYLE_INDEX = {WEAK_ARM: 0, STRONG_ARM: 1, "APMD": 2, "APMD, exact target": 4}
"""Style positions of the drawn arms, with four distinct colours and markers, none of them faint."""


def arm_style(arm: str) -> dict[str, str]:
    """The colour, marker and line style of ``arm`` in every figure of the chapter (the key arms' never collide)."""
    return series_style(STYLE_INDEX.get(arm, ARM_NAMES.index(arm) + len(STYLE_INDEX)))


def _ks(study: TransformerStudy) -> np.ndarray:
    return 2 ** np.arange(int(np.log2(study.n_samples)) + 1)


def transformer_passk_figure(study: TransformerStudy) -> BookFigure:
    """Exact pass@k (lines) and the unbiased estimate from samples (open markers), mixed task, median over seeds."""
    figure = new_figure(COLUMN_WIDTH, 3.4)
    panels = figure.subplots(1, 2, sharey=True)
    ks = _ks(study)
    sampled = {int(r): i for i, r in enumerate(study.sampled_runs)}
    for axes, (prompts, title) in zip(panels, PROMPTS):
        estimates = study.sampled_pass_curve(ks, prompts)
        base_runs = study.runs("mixed", WEAK_ARM)
        axes.plot(ks, np.median(study.exact_pass_curve(base_runs, ks, prompts, step=0), axis=0), color="k", lw=2,
                  label=BASE)
        base_rows = [sampled[-1 - s] for s in study.seeds]
        axes.plot(ks, np.median(estimates[base_rows], axis=0), "o", color="k", mfc="none", ms=5)
        for arm in KEY_ARMS:
            runs = study.runs("mixed", arm)
            style = arm_style(arm)
            axes.plot(ks, np.median(study.exact_pass_curve(runs, ks, prompts), axis=0), color=style["color"],
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


TASK_LABELS = (("mixed", "mixed"), ("hard-only", "hard only"), ("decoupled", "decoupled"))


def transformer_route_figure(study: TransformerStudy) -> BookFigure:
    """pass@256 of the returned model minus the base model's, per task and arm: one dot per seed, a bar at the median."""
    figure = new_figure(COLUMN_WIDTH, 3.4)
    panels = figure.subplots(1, 2, sharey=True)
    width = 0.8 / len(ROUTE_ARMS)
    for axes, (prompts, title) in zip(panels, PROMPTS):
        metric = f"pass@256, {title}"
        for i, arm in enumerate(ROUTE_ARMS):
            style = arm_style(arm)
            for t, (task, _) in enumerate(TASK_LABELS):
                values = side_values(study, Side(arm, task), metric)
                if values is None:
                    continue
                loss = values - side_values(study, Side(BASE, task), metric)
                x = t + (i - (len(ROUTE_ARMS) - 1) / 2) * width
                axes.plot(np.full(len(loss), x), loss, style["marker"], color=style["color"], mfc="none", ms=5,
                          label=arm if t == 0 else None)
                axes.plot([x - width / 3, x + width / 3], [np.median(loss)] * 2, color=style["color"], lw=2.5)
        axes.axhline(0, color="k", lw=1)
        axes.set_xticks(range(len(TASK_LABELS)), [label for _, label in TASK_LABELS])
        axes.set_title(title, loc="left")
        axes.grid(alpha=0.3, axis="y")
    panels[0].set_ylabel("pass@256 minus the base model's")
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False)
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

