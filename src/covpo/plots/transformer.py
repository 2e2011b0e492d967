"""Figures and the widget of chapter 7 (a small transformer post-trained with GRPO and resets).

Every function draws a :class:`~covpo.labs.transformer.experiment.TransformerStudy`: pass@k curves
on the hard held-out prompts, base model against trained models (:func:`transformer_passk_figure`),
the training curves and exact coverage over training (:func:`transformer_training_figure`), and
a widget over the stored runs (:func:`transformer_widget`).
"""

from __future__ import annotations

import numpy as np

from covpo.labs.transformer import REWARDS, TransformerStudy
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, PALETTE
from covpo.plots.widgets import Explorable, Slider, explorable
from covpo.table import Table


def _band(axes, x, curves, color, label, ls="-") -> None:
    """Median over seeds as a line, the range over seeds as a band."""
    axes.plot(x, np.median(curves, axis=0), color=color, ls=ls, label=label)
    if len(curves) > 1:
        axes.fill_between(x, curves.min(axis=0), curves.max(axis=0), color=color, alpha=0.15, lw=0)


def _passk_panel(axes, study: TransformerStudy, reward: str, methods) -> None:
    base, runs = study.pass_curves()
    axes.plot(study.ks, base, color="k", lw=2, label="base model")
    for m in methods:
        chosen = study.runs(m, reward)
        if len(chosen):
            _band(axes, study.ks, runs[chosen], PALETTE[m % len(PALETTE)], study.methods[m])
    axes.set_xscale("log", base=2)
    axes.set_xlabel("k (attempts per prompt)")
    axes.set_ylabel("pass@k, hard held-out prompts")
    axes.set_ylim(-0.02, 1.02)
    axes.set_title(f"{reward} reward", loc="left")
    axes.grid(alpha=0.3)


def transformer_passk_figure(study: TransformerStudy) -> BookFigure:
    """pass@k (unbiased estimator) on the hard held-out prompts: base model against every method, one panel per reward."""
    figure = new_figure(COLUMN_WIDTH, 3.6)
    panels = figure.subplots(1, 2, sharey=True)
    for axes, reward in zip(panels, REWARDS):
        _passk_panel(axes, study, reward, range(len(study.methods)))
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False)
    return figure


def _smooth(values: np.ndarray, window: int = 5) -> np.ndarray:
    kernel = np.ones(window) / window
    padded = np.pad(values, ((0, 0), (window - 1, 0)), mode="edge")
    return np.stack([np.convolve(row, kernel, mode="valid") for row in padded])


def transformer_training_figure(study: TransformerStudy, reward: str = "partial") -> BookFigure:
    """Over training, for one reward: batch pass@1, KL to the base model, and exact coverage of easy and hard held-out prompts."""
    figure = new_figure(COLUMN_WIDTH, 5.6)
    (pass_axes, kl_axes), (easy_axes, hard_axes) = figure.subplots(2, 2, sharex=True)
    steps = np.arange(study.n_steps)
    for m in range(len(study.methods)):
        chosen = study.runs(m, reward)
        if not len(chosen):
            continue
        color = PALETTE[m % len(PALETTE)]
        _band(pass_axes, steps, _smooth(study.pass1[chosen]), color, study.methods[m])
        _band(kl_axes, steps, study.kl[chosen], color, study.methods[m])
        _band(easy_axes, steps, study.log10_coverage("easy")[chosen], color, study.methods[m])
        _band(hard_axes, steps, study.log10_coverage("hard")[chosen], color, study.methods[m])
    for axes, prompts in ((easy_axes, "easy"), (hard_axes, "hard")):
        base = np.median(study.base_log_coverage[study._mask(prompts)]) / np.log(10)
        axes.axhline(base, color="k", ls=":", lw=1.5, label="base model")
        axes.set_ylabel(f"median $\\log_{{10}}\\pi_t(y^\\star|x)$\n{prompts} held-out prompts")
        axes.set_xlabel("outer step")
    pass_axes.set_ylabel("pass@1 on the batch\n(5-step average)")
    kl_axes.set_ylabel("KL to the base model\n(nats, per answer)")
    for axes in (pass_axes, kl_axes, easy_axes, hard_axes):
        axes.grid(alpha=0.3)
    pass_axes.set_title(f"{reward} reward", loc="left")
    handles, labels = hard_axes.get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False)
    return figure


def transformer_summary_table(study: TransformerStudy) -> Table:
    """Per method and reward: pass@1 and pass@256 on the hard held-out prompts (median and range over seeds), hard prompts lost, KL."""
    base, runs = study.pass_curves()
    last = len(study.ks) - 1
    hard_log10 = study.log_coverage[:, -1][:, study.hard] / np.log(10)
    base_hard = study.base_log_coverage[study.hard] / np.log(10)
    rows = [("base model", "-", f"{base[0]:.2f}", f"{base[last]:.2f}", 0, 0.0)]
    for kind, reward in enumerate(REWARDS):
        for m, name in enumerate(study.methods):
            chosen = study.runs(m, reward)
            if not len(chosen):
                continue
            p1, pk = runs[chosen, 0], runs[chosen, last]
            lost = (hard_log10[chosen] < base_hard - 1).sum(axis=1)
            rows.append((name, reward, f"{np.median(p1):.2f} [{p1.min():.2f}, {p1.max():.2f}]",
                         f"{np.median(pk):.2f} [{pk.min():.2f}, {pk.max():.2f}]",
                         f"{np.median(lost):g} [{lost.min()}, {lost.max()}]", round(float(np.median(study.kl[chosen, -1])), 2)))
    return Table(("method", "reward", "pass@1", f"pass@{study.ks[last]}", "hard prompts lost", "KL to base"),
                 tuple(rows), caption=f"Hard held-out prompts ({int(study.hard.sum())}) after "
                 f"{study.responses_per_run} responses per run: median [min, max] over {len(set(study.run_seed))} seeds",
                 notes=("pass@k: unbiased estimator from the samples drawn after training",
                        "hard prompts lost: prompts whose exact coverage ended more than a decade below the base model's",
                        "KL to base: estimate at the last step, nats per answer, median over seeds"))


def transformer_explorer_figure(study: TransformerStudy, reward: int = 0, method: int = 0) -> BookFigure:
    """One method under one reward: its seeds' pass@k against the base model (left) and hard-prompt coverage over training (right)."""
    reward_name = REWARDS[int(np.clip(reward, 0, len(REWARDS) - 1))]
    method = int(np.clip(method, 0, len(study.methods) - 1))
    figure = new_figure(COLUMN_WIDTH, 3.4)
    pass_axes, coverage_axes = figure.subplots(1, 2)
    chosen = study.runs(method, reward_name)
    base, runs = study.pass_curves()
    pass_axes.plot(study.ks, base, color="k", lw=2, label="base model")
    coverage = study.log10_coverage("hard")
    for i, r in enumerate(chosen):
        color = PALETTE[i % len(PALETTE)]
        pass_axes.plot(study.ks, runs[r], color=color, label=f"seed {study.run_seed[r]}")
        coverage_axes.plot(np.arange(study.n_steps), coverage[r], color=color)
    if not len(chosen):
        coverage_axes.text(0.5, 0.5, "not run at this size", ha="center", va="center", transform=coverage_axes.transAxes)
    coverage_axes.axhline(np.median(study.base_log_coverage[study.hard]) / np.log(10), color="k", ls=":", lw=1.5)
    pass_axes.set_xscale("log", base=2)
    pass_axes.set_ylim(-0.02, 1.02)
    pass_axes.set_xlabel("k")
    pass_axes.set_ylabel("pass@k, hard held-out prompts")
    pass_axes.set_title(f"{study.methods[method]}, {reward_name}", loc="left", fontsize=9)
    pass_axes.legend(loc="lower right")
    coverage_axes.set_xlabel("outer step")
    coverage_axes.set_ylabel("median $\\log_{10}$ coverage,\nhard held-out prompts")
    for axes in (pass_axes, coverage_axes):
        axes.grid(alpha=0.3)
    return figure


def transformer_widget(study: TransformerStudy) -> Explorable:
    """Reward and method in; that method's seeds (pass@k and coverage over training) out, with a static stand-in."""
    sliders = [
        Slider("reward", "reward", 0, len(REWARDS) - 1, 0, tuple(range(len(REWARDS))), integer=True,
               choices=tuple(REWARDS)),
        Slider("method", "method", 0, len(study.methods) - 1, 0, tuple(range(len(study.methods))), integer=True,
               choices=tuple(study.methods)),
    ]

    def figure_function(reward: int, method: int) -> BookFigure:
        return transformer_explorer_figure(study, reward, method)

    return explorable(figure_function, sliders, "A transformer post-trained: pass@k and coverage per seed")
