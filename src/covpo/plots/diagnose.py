"""Chapter 8's figures and widget: the log detector's flags beside the exact coverage losses (paper section 5).

The widget moves the detector's threshold ``alpha`` and its number of step windows over the
chapter's logs (chapter 7's runs of seed 0, a fixed reference and resets, written as TRL logs from
the exact traces stored in :data:`~covpo.labs.transformer.diagnose_validation.DIAGNOSE_RECORD` and
read back, as the record's runs were);
each frame is :func:`~covpo.labs.transformer.logs.detection` at those settings.
"""

from __future__ import annotations

import tempfile
from functools import lru_cache

import numpy as np

from covpo.labs.transformer.diagnose_validation import DIAGNOSE_RECORD, read_validation
from covpo.diagnose import CompletionLog, read_log
from covpo.labs.transformer.logs import Detection, ExactTrace, detection, write_trl_logs
from covpo.plots.base import BookFigure, new_figure
from covpo.plots.style import PALETTE
from covpo.plots.widgets import Explorable, Slider, explorable
from covpo.records import read_stamped_record
from covpo.validation import check_count, check_instances, check_probability

#: The widget's group size and draw seed (the chapter's).
GROUP_SIZE, DRAW_SEED = 8, 0


def detection_figure(traces: tuple[ExactTrace, ...], detections: tuple[Detection, ...]) -> BookFigure:
    """Per run, each training prompt's solve rate by step, the exact losses (from the step the loss dates) and the detector's flags."""
    traces = check_instances("traces", traces, ExactTrace)
    detections = check_instances("detections", detections, Detection)
    if len(traces) != len(detections) or len(traces) > 2:
        raise ValueError(f"detections must be one per trace, at most two, got {len(detections)} for {len(traces)}")
    figure = new_figure(height=3.6)
    panels = np.atleast_1d(figure.subplots(1, len(traces), sharey=True))
    for axes, trace, found in zip(panels, traces, detections):
        n_prompts, n_steps = found.solve_rate.shape
        image = axes.imshow(np.ma.masked_invalid(found.solve_rate), aspect="auto", interpolation="nearest",
                            cmap="viridis", vmin=0, vmax=1, extent=(-0.5, n_steps - 0.5, n_prompts - 0.5, -0.5))
        lost = np.flatnonzero(found.truth.lost)
        axes.plot(found.truth.since_step[lost], lost, "|", color="white", markersize=9, markeredgewidth=2,
                  label="lost (exact) since")
        flagged = np.flatnonzero(found.flagged)
        axes.plot(found.flagged_step[flagged], flagged, "x", color=PALETTE[1], markersize=6, markeredgewidth=2,
                  label="flagged at")
        axes.set_facecolor("#dddddd")
        axes.set_title(f"{trace.arm}\n{int(found.true_flags.sum())} of {found.truth.count} lost prompts flagged, "
                       f"{int(found.false_flags.sum())} false flags", fontsize=9)
        axes.set_xlabel("outer step")
    panels[0].set_ylabel("training prompt (hard below the line)")
    for axes, trace in zip(panels, traces):
        boundary = np.flatnonzero(trace.hard)
        if boundary.size:
            axes.axhline(boundary.min() - 0.5, color="white", linewidth=0.8)
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=9, facecolor="#dddddd")
    figure.colorbar(image, ax=list(panels), label="solve rate (grey: no visit)")
    return figure


def _written_and_read(trace: ExactTrace) -> CompletionLog:
    """``trace``'s TRL logs written to a temporary folder and read back, as the record's runs were."""
    with tempfile.TemporaryDirectory() as folder:
        write_trl_logs(trace, folder, group_size=GROUP_SIZE, seed=DRAW_SEED)
        return read_log(folder, progress=False)


@lru_cache(maxsize=1)
def chapter_runs() -> tuple[tuple[ExactTrace, ...], tuple[CompletionLog, ...]]:
    """The widget's runs: seed 0 of each arm of the record (its default profile), and their logs written and read back."""
    _, traces = read_validation(read_stamped_record(DIAGNOSE_RECORD), "default")
    chosen = tuple(trace for trace in traces if trace.seed == 0)
    return chosen, tuple(_written_and_read(trace) for trace in chosen)


def detector_explorer_figure(alpha: float, windows: int) -> BookFigure:
    """Widget figure: :func:`detection_figure` of the chapter's runs with the detector at ``alpha`` and ``windows``."""
    alpha = check_probability("alpha", alpha)
    windows = check_count("windows", windows, minimum=2)
    traces, logs = chapter_runs()
    return detection_figure(traces, tuple(detection(trace, log, windows=windows, alpha=alpha)
                                          for trace, log in zip(traces, logs)))


def detector_widget() -> Explorable:
    """The detection threshold ``alpha`` and the number of step windows in; the flags beside the exact losses out."""
    sliders = [
        Slider("alpha", "threshold α", 1e-4, 0.2, 0.01, (0.001, 0.01, 0.1), log=True),
        Slider("windows", "step windows", 2, 12, 5, (3, 5, 8), integer=True),
    ]
    return explorable(detector_explorer_figure, sliders, "The detector's flags against exact coverage")
