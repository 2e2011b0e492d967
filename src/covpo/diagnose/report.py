"""The diagnosis in words and figures: a short verdict and a self-contained HTML report (paper sections 1.3 and 5).

The verdict says how many prompts lost coverage, since which step, and how the mean reward moved
meanwhile, then points to the book's chapters for what to change, saying only what the book
measured on its own instances. The report is one HTML file with the verdict, the reader's notes,
the figures (PNG in the book's style, embedded as base64) and the tables.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

import numpy as np
from matplotlib.ticker import FuncFormatter

from covpo.diagnose.measures import GROUPS, Diagnosis
from covpo.plots.base import BookFigure, figure_png, new_figure
from covpo.plots.style import MARKERS, PALETTE, apply_book_style
from covpo.validation import check_count, check_instance

apply_book_style()

#: What the book measured, one entry per change it bears on (the change, then the chapters and their finding).
BOOK_POINTERS = (
    ("Reset the reference",
     "chapter 3 (mirror_descent) and chapter 4 (ppo): on the book's instances, regularizing to the latest policy "
     "(APMD; PPO-NoClip, PPO-Lite and GRPO-style training with resets) kept coverage that a KL penalty to the fixed "
     "base model lost, when each inner problem was solved accurately."),
    ("Penalty strength",
     "chapter 2 (collapse) and chapter 6 (implications): a penalty to the fixed base model avoided the collapse only "
     "inside a narrow window of strengths on the book's collapse family, and with resets the strength acts as a step "
     "size that the number of outer iterations caps."),
    ("Batch size",
     "chapter 4 (ppo) measures, over twenty seeds, how often each reset method failed against the batch size and "
     "the inner steps, and from which batch on it reached the target on every seed; chapters 5 (squared_loss) and 6 "
     "(implications) size batches for the rare good answers."),
)


def _window_of_step(diagnosis: Diagnosis, step: int) -> int:
    edges = diagnosis.signature.window_steps
    return int(np.searchsorted(edges[:, 1], step))


def verdict(diagnosis: Diagnosis) -> str:
    """The short verdict (plain text, a few lines) on one diagnosis."""
    diagnosis = check_instance("diagnosis", diagnosis, Diagnosis)
    loss, sig, log = diagnosis.loss, diagnosis.signature, diagnosis.log
    edges = sig.window_steps
    lines = [
        f"{log.rows:,} completions of {log.prompts.size:,} prompts over {diagnosis.steps.size:,} logged steps "
        f"({log.format}; success: {log.rule.describe()}; G = {diagnosis.visits.group_size}).",
    ]
    if loss.events:
        first = int(loss.since_step.min())
        w = _window_of_step(diagnosis, first)
        lines.append(
            f"Coverage lost: {loss.events} of the {loss.evaluable} prompts solved in the early window (steps "
            f"{edges[0, 0]}-{edges[0, 1]}) with enough later visits to judge have had no success since step "
            f"{first} at the earliest (median {int(np.median(loss.since_step))}); "
            f"{loss.covered_early - loss.evaluable} more had too few later visits."
        )
        lines.append(
            f"Meanwhile the mean reward moved from {sig.mean_reward[w]:.3g} (steps {edges[w, 0]}-{edges[w, 1]}) "
            f"to {sig.mean_reward[-1]:.3g} (steps {edges[-1, 0]}-{edges[-1, 1]})."
        )
    else:
        lines.append(
            f"No coverage lost: none of the {loss.evaluable} prompts solved early with enough later visits to judge "
            f"ended in {loss.settings['zero_visits']} or more visits without a success unlikely by chance "
            f"(below {loss.settings['alpha']:g}); {loss.covered_early - loss.evaluable} had too few later visits."
        )
    if sig.paired_prompts:
        lines.append(
            f"Hard prompts (early rate below 0.25, {sig.hard_prompts}): solve rate changed by {sig.hard_change:+.3f} "
            f"(95% interval {sig.hard_change_low:+.3f} to {sig.hard_change_high:+.3f}, {sig.paired_prompts} prompts) while "
            f"the mean reward changed by {sig.reward_change:+.3f}: the reward-up, coverage-down signature is "
            f"{'present' if sig.present else 'not shown'}."
        )
    elif sig.hard_prompts == 0:
        lines.append("No prompt was hard in the early window (rate above 0 and below 0.25): the signature has no "
                     "prompts to follow.")
    else:
        lines.append(f"The {sig.hard_prompts} hard prompts are not visited in both the second and the last window: the "
                     "signature cannot be measured per prompt; see the first-visit bins in the report.")
    if loss.events or sig.present:
        lines.append("What the book measured (on its own small instances, not on your model):")
        lines += [f"  - {title}: {text}" for title, text in BOOK_POINTERS]
    return "\n".join(lines)


def heatmap_figure(diagnosis: Diagnosis, max_prompts: int = 40, max_columns: int = 60) -> BookFigure:
    """Solve rates, prompts by step windows: the prompts that lost coverage first, then the hard ones, then the most visited."""
    diagnosis = check_instance("diagnosis", diagnosis, Diagnosis)
    max_prompts, max_columns = check_count("max_prompts", max_prompts), check_count("max_columns", max_columns)
    table, loss = diagnosis.visits, diagnosis.loss
    counts = np.bincount(table.prompt, minlength=table.prompts.size)
    hard = np.flatnonzero(diagnosis.groups.label == "hard")
    order = list(dict.fromkeys([*loss.prompt[np.argsort(loss.since_step)].tolist(),
                                *hard[np.argsort(-counts[hard])].tolist(), *np.argsort(-counts).tolist()]))
    shown = np.array(order[:max_prompts])
    edges = np.unique(np.linspace(diagnosis.steps.min(), diagnosis.steps.max() + 1, max_columns + 1).astype(int))
    column = np.searchsorted(edges, table.step, side="right") - 1
    row_of = np.full(table.prompts.size, -1)
    row_of[shown] = np.arange(shown.size)
    inside = row_of[table.prompt] >= 0
    cells = (row_of[table.prompt][inside], column[inside])
    trials = np.zeros((shown.size, edges.size - 1))
    successes = np.zeros_like(trials)
    np.add.at(trials, cells, table.trials[inside])
    np.add.at(successes, cells, table.successes[inside])
    with np.errstate(invalid="ignore"):
        rate = np.where(trials > 0, successes / np.maximum(trials, 1), np.nan)
    figure = new_figure(height=min(6.0, 1.4 + 0.11 * shown.size))
    axes = figure.add_subplot()
    image = axes.imshow(np.ma.masked_invalid(rate), aspect="auto", interpolation="nearest", cmap="viridis",
                        vmin=0, vmax=1, extent=(edges[0], edges[-1], shown.size, 0))
    axes.set_facecolor("#dddddd")
    axes.set_xlabel("training step")
    axes.set_ylabel(f"prompt ({shown.size} of {table.prompts.size})")
    axes.set_yticks([])
    lost = np.isin(shown, loss.prompt)
    for row in np.flatnonzero(lost):
        axes.plot(edges[0], row + 0.5, marker=">", color=PALETTE[1], clip_on=False, markersize=4)
    figure.colorbar(image, ax=axes, label="solve rate (grey: not visited)")
    return figure


def signature_figure(diagnosis: Diagnosis) -> BookFigure:
    """Mean reward per step (left) and, per window, each early-difficulty group's solve rate (right; hard drawn heavier)."""
    diagnosis = check_instance("diagnosis", diagnosis, Diagnosis)
    sig = diagnosis.signature
    figure = new_figure(height=2.8)
    left, right = figure.subplots(1, 2)
    left.plot(diagnosis.steps, diagnosis.mean_reward, color=PALETTE[0], linewidth=1.0)
    middle = sig.window_steps.mean(axis=1)
    left.plot(middle, sig.mean_reward, "o", color=PALETTE[1], label="window mean")
    left.set_xlabel("training step")
    left.set_ylabel("mean reward")
    left.legend(frameon=False)
    counts = {group: int(np.sum(diagnosis.groups.label == group)) for group in GROUPS}
    for index, group in enumerate(GROUPS):
        if counts[group]:
            right.plot(middle, sig.group_rates[group], marker=MARKERS[index], color=PALETTE[index],
                       label=f"{group} ({counts[group]})", linewidth=2.4 if group == "hard" else 1.2)
    right.set_xlim(left.get_xlim())
    right.set_xlabel("training step (window middle)")
    right.set_ylabel("solve rate by early group")
    right.set_ylim(0, 1)
    right.legend(frameon=False, fontsize=9)
    return figure


def pass_at_k_figure(diagnosis: Diagnosis) -> BookFigure:
    """Mean pass@k in the first and last windows; beyond ``G`` (dashed) from the beta-binomial fit."""
    diagnosis = check_instance("diagnosis", diagnosis, Diagnosis)
    curves = diagnosis.pass_at_k
    figure = new_figure(height=2.8)
    axes = figure.add_subplot()
    measured = ~curves.fitted
    reach = np.flatnonzero(measured).max()
    for values, label, colour in ((curves.first, "first window", PALETTE[0]), (curves.last, "last window", PALETTE[1])):
        axes.plot(curves.ks[measured], values[measured], marker="o", color=colour, label=label)
        axes.plot(curves.ks[reach:], values[reach:], linestyle="--", color=colour)
    axes.axvline(curves.group_size, color="#888888", linewidth=0.8)
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}"))
    axes.set_xlabel(f"k (dashed beyond G = {curves.group_size}: beta-binomial fit)")
    axes.set_ylabel("mean pass@k")
    axes.set_ylim(0, 1)
    axes.legend(frameon=False)
    return figure


def _png(figure: BookFigure) -> str:
    return base64.b64encode(figure_png(figure)).decode("ascii")


def report_html(diagnosis: Diagnosis, title: str = "Is my run collapsing?") -> str:
    """A self-contained HTML report: the verdict, the reader's notes, three figures and the tables."""
    diagnosis = check_instance("diagnosis", diagnosis, Diagnosis)
    if not isinstance(title, str):
        raise ValueError(f"title must be a string, got {title!r}")
    figures = (
        (heatmap_figure(diagnosis), "Solve rate of each shown prompt over training (orange marks: coverage lost)."),
        (signature_figure(diagnosis), "Mean reward per step (left) and, by window, the solve rate of the prompts of each "
                                      "early-difficulty group (right)."),
        (pass_at_k_figure(diagnosis), "Mean pass@k in the first and last windows; dashed beyond G, from a beta-binomial fit."),
    )
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:760px;margin:2em auto;}pre{white-space:pre-wrap;}"
        "img{width:700px;}table{border-collapse:collapse;}td,th{padding:2px 8px;border-bottom:1px solid #ddd;}</style>",
        f"</head><body><h1>{html.escape(title)}</h1>",
        f"<p>Log: <code>{html.escape(diagnosis.log.source or '(arrays)')}</code></p>",
        f"<h2>Verdict</h2><pre>{html.escape(verdict(diagnosis))}</pre>",
    ]
    if diagnosis.log.notes:
        parts.append("<h2>What the reader did</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in diagnosis.log.notes) + "</ul>")
    parts.append("<h2>Figures</h2>")
    for figure, caption in figures:
        parts.append(f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{_png(figure)}'>"
                     f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    parts.append("<h2>Tables</h2>")
    for table in (diagnosis.loss.table(diagnosis.log.prompts), diagnosis.bins, diagnosis.visit_table):
        parts.append(table._repr_html_())
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(diagnosis: Diagnosis, out: str | Path) -> Path:
    """Write :func:`report_html` of ``diagnosis`` to ``out`` and return its path."""
    if isinstance(out, bool) or not isinstance(out, (str, Path)) or not str(out):
        raise ValueError(f"out must be a file path, got {out!r}")
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(report_html(diagnosis), encoding="utf-8")
    return target
