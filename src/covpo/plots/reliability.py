"""The figure and tables of the reliability study of chapter 4's reset methods (paper sections 3.2, 3.3, appendix H.4).

- :func:`reliability_figure`: the share of seeds that missed eps against the batch size, one
  panel per method, a line per coverage and inner-loop length, with Wilson intervals; a fourth
  panel with what the settings cost (median responses to eps at the hardest coverage);
- :func:`reliable_settings_table`: the practitioner's summary, the smallest batch of the grid at
  which each method reached eps in every seed, per coverage and inner-loop length.

The numbers are :class:`~covpo.experiments.ppo.reliability.ReliabilityStudy` records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullFormatter, NullLocator

from covpo.experiments.ppo.reliability import ReliabilityStudy
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import COLUMN_WIDTH, method_colour, method_kind
from covpo.rates import wilson_rate
from covpo.table import Table
from covpo.validation import check_instance

#: Line style of each inner-loop multiplier (1, 2, 4 times the chapter's ``K``).
INNER_LINESTYLES = ("-", "--", ":")
#: Colour and marker of each coverage from the smallest of the study up, in greys from light to
#: dark that no method of the book's key takes (the cost panel draws methods in their key colours).
COVERAGE_STYLES = (("0.75", "v"), ("0.55", "s"), ("0.35", "o"), ("0.15", "D"))
#: Colour of each method in the cost panel, the book's key's (:data:`~covpo.plots.style.COLOUR_KEY`).
METHOD_COLORS = {label: method_colour(method_kind(label)) for label in ("PPO-NoClip", "PPO-Lite", "GRPO, resets")}


def _log2_axis(axes, values: np.ndarray) -> None:
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_locator(FixedLocator([float(v) for v in values]))
    axes.xaxis.set_major_formatter(FormatStrFormatter("%d"))
    axes.xaxis.set_minor_locator(NullLocator())
    axes.xaxis.set_minor_formatter(NullFormatter())


def reliability_figure(study: ReliabilityStudy) -> BookFigure:
    """Share of seeds that missed eps against responses per outer iteration, per method, coverage and inner loop.

    Panels: one per method (the share, with its 95% Wilson interval as an error bar; series
    nudged sideways so that the bars do not overlap), and the median responses to eps at the
    largest coverage over the seeds that reached it. A grey band marks the Wilson interval of 0
    failures in the study's seeds (the points at zero carry no bar of their own): a share drawn
    at zero is "none of these seeds failed", which bounds the failure rate by the band's top,
    not by zero.
    """
    study = check_instance("study", study, ReliabilityStudy)
    n_seeds = len(study.seeds)
    zero_high = wilson_rate(0, n_seeds).high
    figure = new_figure(COLUMN_WIDTH, 7.4)
    grid = figure.subplots(2, 2).ravel()
    n_series = len(study.coverages) * len(study.inner_multipliers)
    nudges = 2.0 ** (0.05 * (np.arange(n_series) - (n_series - 1) / 2))
    for i, (axes, label) in enumerate(zip(grid, study.labels)):
        batches = study.batch_responses[i].astype(float)
        series = 0
        for j, coverage in enumerate(study.coverages):
            color, marker = COVERAGE_STYLES[j % len(COVERAGE_STYLES)]
            missed = study.failures(label, coverage)
            for k, steps in enumerate(study.inner_steps[i]):
                rates = [wilson_rate(int(count), n_seeds) for count in missed[:, k]]
                share = np.array([rate.fraction for rate in rates])
                errors = np.array([[r.fraction - r.low for r in rates],
                                   [0.0 if r.successes == 0 else r.high - r.fraction for r in rates]])
                axes.errorbar(batches * nudges[series], share, yerr=errors, color=color, marker=marker,
                              linestyle=INNER_LINESTYLES[k % len(INNER_LINESTYLES)], markersize=4, lw=1.2,
                              elinewidth=0.7, capsize=0, alpha=0.9)
                series += 1
        axes.axhspan(0.0, zero_high, color="0.88", lw=0, zorder=0)
        axes.set_ylim(-0.03, 1.03)
        _log2_axis(axes, batches)
        steps_text = ", ".join(str(int(s)) for s in study.inner_steps[i])
        axes.set_title(f"{label} (K = {steps_text})")
        axes.set_xlabel("N: responses per outer iteration")
        axes.grid(alpha=0.3)
    for axes in grid[0::2]:
        axes.set_ylabel(f"share of {n_seeds} seeds missing $\\varepsilon$")
    cost_axes = grid[3]
    hardest = study.coverages[-1]
    for i, label in enumerate(study.labels):
        medians = study.median_responses_to_eps(label, hardest)
        kind = method_kind(label)
        color = METHOD_COLORS.get(label, method_colour(kind) if kind is not None else "0.3")
        for k in (0, len(study.inner_multipliers) - 1):
            cost_axes.plot(study.batch_responses[i], medians[:, k], color=color, marker="o", markersize=4,
                           linestyle=INNER_LINESTYLES[k % len(INNER_LINESTYLES)],
                           label=f"{label}, {study.inner_multipliers[k]}× K")
    _log2_axis(cost_axes, study.batch_responses[0].astype(float))
    cost_axes.set_yscale("log")
    cost_axes.set_xlabel("N: responses per outer iteration")
    cost_axes.set_ylabel("median responses to $\\varepsilon$")
    cost_axes.set_title(f"Cost at $C_{{\\mathrm{{cov}}}}$ = {hardest:g}")
    cost_axes.grid(alpha=0.3)
    cost_axes.legend(frameon=False, fontsize=9)
    handles = [Line2D([], [], color=COVERAGE_STYLES[j % len(COVERAGE_STYLES)][0],
                      marker=COVERAGE_STYLES[j % len(COVERAGE_STYLES)][1], label=f"$C_{{\\mathrm{{cov}}}}$ = {c:g}")
               for j, c in enumerate(study.coverages)]
    handles += [Line2D([], [], color="0.3", linestyle=INNER_LINESTYLES[k % len(INNER_LINESTYLES)],
                       label=f"{m}× the chapter's K") for k, m in enumerate(study.inner_multipliers)]
    handles.append(Patch(color="0.88", label=f"Wilson interval of 0 of {n_seeds}: up to {zero_high:.0%}"))
    figure.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False, columnspacing=1.2)
    return figure


def reliable_settings_table(study: ReliabilityStudy, caption: str = "") -> Table:
    """Per method, coverage and inner-loop length: the smallest batch of the grid at which every seed reached eps.

    With it, the median responses and gradient steps to eps at that setting; a dash where no
    batch of the grid reached eps in every seed.
    """
    study = check_instance("study", study, ReliabilityStudy)
    rows = []
    for i, label in enumerate(study.labels):
        for j, coverage in enumerate(study.coverages):
            for k, multiplier in enumerate(study.inner_multipliers):
                smallest = study.smallest_reliable_batch(label, coverage, multiplier)
                if smallest is None:
                    rows.append((label, float(coverage), int(study.inner_steps[i, k]), None, None, None))
                    continue
                b = study.batch_multipliers.index(smallest)
                rows.append((
                    label, float(coverage), int(study.inner_steps[i, k]), int(study.batch_responses[i, b]),
                    float(np.median(study.responses[i, j, b, k])), float(np.median(study.steps[i, j, b, k])),
                ))
    return Table(
        ("method", "$C_{\\mathrm{cov}}$", "K (inner steps)", "smallest N reaching ε in every seed",
         "median responses to ε there", "median gradient steps to ε there"),
        tuple(rows),
        caption=caption or f"The smallest batch of the grid that reached ε = {study.eps:g} in all {len(study.seeds)} seeds",
        notes=(f"N: responses per outer iteration, from the grid {', '.join(str(int(n)) for n in study.batch_responses[0])}; "
               "a dash where no batch of the grid reached ε in every seed. Every run has the chapter's outer iterations.",),
    )


@dataclass(frozen=True)
class SeedClaim:
    """One sampled claim of the section page, measured at every seed of the record.

    ``values`` is the measured quantity per seed (``nan`` where it does not apply), ``holds``
    whether the claim held in that seed.
    """

    claim: str
    values: np.ndarray
    holds: np.ndarray

    @property
    def count(self) -> int:
        """Seeds in which the claim held."""
        return int(self.holds.sum())


def _rows(details: dict, key: str, field: str) -> np.ndarray:
    return np.array([np.nan if run[field] is None else float(run[field]) for run in details[key]])


def _loss(values: list) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)


def seed_claims(details: dict) -> tuple[SeedClaim, ...]:
    """The section page's sampled claims (paper appendices G, H.2, H.4) at every seed of a record's ``"details"``.

    ``details`` is what :func:`~covpo.experiments.ppo.reliability.details_over_seeds` returns.

    Each claim is the one its check cell asserts at the page's own seed, read per seed; the
    benefit and scaling claims that the page states over its four seeds are read here seed by seed.
    """
    if not isinstance(details, dict) or not {"concavity", "estimator", "inner_steps", "benefit", "scaling"} <= details.keys():
        raise ValueError("details must be the 'details' of a reliability record")

    def row(key: str, field: str) -> np.ndarray:
        return _rows(details, key, field)

    def flag(key: str, field: str) -> np.ndarray:
        return row(key, field) > 0.5

    claims = [
        SeedClaim("concave in every direction tried up to ρ = 2 (concave radius)", row("concavity", "concave_radius"),
                  row("concavity", "concave_radius") >= 2.0),
        SeedClaim("not concave at ρ = 8 (largest eigenvalue)", row("concavity", "noclip_top_far"),
                  row("concavity", "noclip_top_far") > 0.0),
        SeedClaim("KimiPO strictly convex (smallest eigenvalue over 0.05)", row("concavity", "kimi_bottom"),
                  row("concavity", "kimi_bottom") > 0.05),
        SeedClaim("every inner iterate concave (largest eigenvalue below -0.02)", row("concavity", "inner_top"),
                  row("concavity", "inner_top") < -0.02),
        SeedClaim("inner loops cut the population gap over fivefold (ratio of medians)", row("concavity", "gap_ratio"),
                  row("concavity", "gap_ratio") > 5.0),
        SeedClaim("gap left on the batch below the population gap (median)", row("concavity", "batch_gap"),
                  row("concavity", "batch_gap") < row("concavity", "end_gap")),
        SeedClaim("gap left falls at every N, over threefold from N = 64 to 1024 (ratio)",
                  row("concavity", "batch_gap_ratio"),
                  flag("concavity", "batch_gap_falls") & (row("concavity", "batch_gap_ratio") > 3.0)
                  & flag("concavity", "batch_gap_below_half_start")),
        SeedClaim("no inner iterate strays beyond its starting distance (largest ratio)",
                  row("concavity", "largest_stray"), row("concavity", "largest_stray") <= 1 + 1e-9),
        SeedClaim("unclipped gradient spread grows over fivefold from s = 2 to 6 (ratio)",
                  row("estimator", "noclip_grad_growth"), row("estimator", "noclip_grad_growth") > 5.0),
        SeedClaim("clipped gradient spread below 0.07 and a fifth of the unclipped past the interval (largest)",
                  row("estimator", "lite_grad_max"),
                  (row("estimator", "lite_grad_max") < 0.07) & (row("estimator", "lite_grad_share") < 0.2)),
        SeedClaim("clipping wins on total error from s ≤ 2.5 on (crossover)", row("estimator", "crossover"),
                  row("estimator", "crossover") <= 2.5),
        SeedClaim("clipped objective biased by over 5 standard deviations at s = 6", row("estimator", "bias_in_sd"),
                  row("estimator", "bias_in_sd") > 5.0),
        SeedClaim("PPO-NoClip's objective within 4 standard errors of the truth (largest z)", row("estimator", "noclip_z"),
                  row("estimator", "noclip_z") < 4.0),
        SeedClaim("at the target the unclipped gradient is the less noisy", row("estimator", "noclip_quieter_at_target"),
                  flag("estimator", "noclip_quieter_at_target")),
    ]
    inner = details["inner_steps"]
    reached = np.array([run["reached"] for run in inner["runs"]], dtype=bool)
    loss = _loss([run["coverage_loss"] for run in inner["runs"]])
    short = [k for k, steps in enumerate(inner["inner_steps"]) if steps <= 10]
    long = [k for k, steps in enumerate(inner["inner_steps"]) if steps >= 20]
    claims += [
        SeedClaim("hardest collapse instance: K = 5 and 10 miss ε, losing over a decade (smaller loss)", loss[:, short].min(axis=1),
                  ~reached[:, short].any(axis=1) & (loss[:, short].min(axis=1) > 1.0)),
        SeedClaim("hardest collapse instance: K = 20 and 40 reach ε, losing under 0.1 decade (larger loss)", loss[:, long].max(axis=1),
                  reached[:, long].all(axis=1) & (loss[:, long].max(axis=1) < 0.1)),
    ]
    benefit = details["benefit"]
    clip = np.array(benefit["clip_fraction"])
    kl = np.array(benefit["inner_kl"])
    responses = np.array(benefit["responses_to_eps"])
    final = np.array(benefit["final_suboptimality"])
    won = np.array(benefit["reached"], dtype=bool)
    noclip, half, default = 0, 1, 2
    claims += [
        SeedClaim("the default clip acts on under 1% of samples (share)", clip[default], clip[default] < 0.01),
        SeedClaim("with it, responses to ε equal PPO-NoClip's", responses[default] - responses[noclip],
                  responses[default] == responses[noclip]),
        SeedClaim("with it, inner-loop KL within 2% of PPO-NoClip's (ratio)", kl[default] / kl[noclip],
                  np.abs(np.log(kl[default] / kl[noclip])) < np.log(1.02)),
        SeedClaim("half the width clips more than the default, under 3% (share)", clip[half],
                  (clip[half] > clip[default]) & (clip[half] < 0.03)),
        SeedClaim("half the width ends further from the optimum (final gap)", final[half], final[half] > final[noclip]),
        SeedClaim("half the width reaches ε", won[half].astype(float), won[half]),
        SeedClaim("PPO-NoClip reaches ε (β = 0.25, N = 16, K = 20)", won[noclip].astype(float), won[noclip]),
        SeedClaim("half the width lowers the inner-loop KL (ratio)", kl[half] / kl[noclip], kl[half] < kl[noclip]),
    ]
    scaling = details["scaling"]
    rand, rand_scaled = scaling["rand"], scaling["rand_scaled"]
    coll, coll_scaled = scaling["coll"], scaling["coll_scaled"]
    rand_responses = np.array(rand["responses_to_eps"], dtype=float)
    rand_scaled_responses = np.array(rand_scaled["responses_to_eps"], dtype=float)
    coll_loss, coll_scaled_loss = _loss(coll["coverage_loss"]), _loss(coll_scaled["coverage_loss"])
    coll_scaled_reached = np.array(coll_scaled["reached"], dtype=bool)
    claims += [
        SeedClaim("random: both std-scaled recipes reach ε", np.array(rand_scaled["reached"], dtype=float).min(axis=0),
                  np.array(rand_scaled["reached"], dtype=bool).all(axis=0)),
        SeedClaim("random: the scaled one-step recipe needs under half the responses (ratio)",
                  rand_scaled_responses[0] / rand_responses[0], rand_scaled_responses[0] < 0.5 * rand_responses[0]),
        SeedClaim("collapse: the scaled one-step recipe misses ε, losing more coverage (loss)", coll_scaled_loss[0],
                  ~coll_scaled_reached[0] & (coll_scaled_loss[0] > coll_loss[0])),
        SeedClaim("collapse: scaled GRPO with resets diverges at its rate", np.array(coll_scaled["diverged"][1], dtype=float),
                  np.array(coll_scaled["diverged"][1], dtype=bool)),
        SeedClaim("collapse: at half the rate it reaches ε losing under 0.1 decade, with fewer responses (ratio)",
                  np.array(coll_scaled["responses_to_eps"][2], dtype=float) / np.array(coll["responses_to_eps"][1]),
                  coll_scaled_reached[2] & (coll_scaled_loss[2] < 0.1)
                  & (np.array(coll_scaled["responses_to_eps"][2]) < np.array(coll["responses_to_eps"][1]))),
    ]
    return tuple(claims)


def seed_claims_table(claims: Sequence[SeedClaim], n_seeds: int, caption: str = "") -> Table:
    """One row per claim: the seeds in which it held, and the range of the measured value over the seeds."""
    rows = []
    for claim in claims:
        finite = claim.values[np.isfinite(claim.values)]
        rows.append((claim.claim, f"{claim.count} of {n_seeds}", float(finite.min()) if finite.size else None,
                     float(finite.max()) if finite.size else None))
    return Table(
        ("claim", "seeds where it holds", "measured: lowest", "measured: highest"),
        tuple(rows),
        caption=caption or f"The section's sampled claims over seeds 0-{n_seeds - 1}",
        notes=("The measured value is the quantity in brackets (a flag reads 1 where it holds).",),
    )
