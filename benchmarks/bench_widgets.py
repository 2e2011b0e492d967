"""Benchmark of widget updates: one slider move at default settings, computed and drawn.

Run as ``python benchmarks/bench_widgets.py``. For every widget of the book it times what a
live update does: the figure function at the sliders' defaults plus rendering the figure to
PNG, as the notebook front end receives it. It prints the best of several repetitions next
to the 200 ms target, and the time to precompute the widget's static stand-in. It asserts
nothing. With ``COVPO_BENCHMARK_TINY=1`` only the first widget is timed, updating once and making
no stand-in (a check that the script still runs; the book's tests build every widget).
"""

from __future__ import annotations

import os
import time

from covpo.plots.collapse import collapse_widget
from covpo.plots.diagnose import detector_widget
from covpo.plots.head_to_head import small_head_to_head_widget
from covpo.plots.mirror_descent import apmd_widget
from covpo.plots.ppo import ppo_widget
from covpo.plots.setting import best_of_n_widget
from covpo.plots.squared_loss import squared_loss_widget
from covpo.static_pages import STANDINS_VARIABLE

TINY = os.environ.get("COVPO_BENCHMARK_TINY") == "1"
WIDGET_FACTORIES = (best_of_n_widget, collapse_widget, apmd_widget, ppo_widget, squared_loss_widget,
                    small_head_to_head_widget, detector_widget)[:1 if TINY else None]
REPEATS = 1 if TINY else 5
TARGET_MS = 200.0


def main() -> None:
    # The stand-ins are timed as the book's build makes them (widgets make them only when asked).
    os.environ[STANDINS_VARIABLE] = "0" if TINY else "1"
    print(f"{'widget':<28}{'update (ms)':>12}{'target':>9}{'ratio':>8}{'static frames':>15}{'stand-in (s)':>14}")
    for factory in WIDGET_FACTORIES:
        start = time.perf_counter()
        widget = factory()
        standin_seconds = time.perf_counter() - start
        defaults = {slider.name: slider.coerce(slider.default) for slider in widget.sliders}
        best = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            widget.figure_function(**defaults)._repr_mimebundle_()
            best = min(best, time.perf_counter() - start)
        frames = 0 if widget.standin is None else widget.standin.count("data:image/png") - 1
        print(
            f"{factory.__name__:<28}{1e3 * best:>12.0f}{TARGET_MS:>9.0f}{1e3 * best / TARGET_MS:>8.2f}"
            f"{frames:>15}{standin_seconds:>14.2f}"
        )


if __name__ == "__main__":
    main()
