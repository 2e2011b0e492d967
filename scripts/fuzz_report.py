"""Fuzz every public entry point with one bad argument at a time and tabulate what happens.

The entry points and their good calls are those of ``tests/fuzz_entry_points.py`` (the
functions of the package a user calls: every algorithm of Huang et al. (2026) through
``covpo.run`` and its module, the instance constructors, the policy, objective and batch
functions, Best-of-N, the experiments and laboratories at tiny sizes and the widget figures).
For each entry point, each fuzzed argument and each bad value of the argument's kind, the call
runs in a forked child process with a timeout and is classified as one of:

``named``
    a ``ValueError`` whose message contains the argument's name (the promise);
``unnamed``
    a ``ValueError`` whose message does not name the argument;
``other``
    any other exception (``TypeError`` included; broken down by type), or a child that died;
``non-finite``
    a result holding NaN or infinity (arrays, floats, fields of a trajectory or dataclass);
``accepted``
    a finite result for input that is clearly bad;
``extreme``
    a finite result, or a ``FloatingPointError`` (the documented end of a diverging run), for a
    value that is extreme but not clearly bad;
``hang``
    no answer within the timeout.

Clearly bad means every bad value but one: NaN, infinity, a string, ``None``, a bool, a complex
number or a fraction or a non-positive number for a count or a seed, a negative number for a
non-negative quantity, zero for a positive one, a number outside (0, 1) for a probability, an
instance of the wrong class, an integer where a generator is expected, an unknown option,
anything but ``True`` or ``False`` for a flag, a number for a label, empty arrays, arrays of the
wrong shape or with a NaN, infinite or complex entry, distributions that do not sum to one,
probabilities where log-probabilities are expected, indices out of range, a mask that is not
boolean, clip thresholds that are reversed, empty lists of seeds, methods or instances (or ones
with a bad entry, or methods sharing a label). The one exception is ``1e308`` for a positive or
non-negative real number (a learning rate, a KL strength, a coverage), which is valid if
extreme. Entry points whose good call is a whole study (``heavy``) get only clearly bad values.

Run from the repository root::

    python scripts/fuzz_report.py [--timeout SECONDS] [--workers N] [--details]

It prints the table as Markdown, the breakdown of other exceptions, the entry points covered
and, with ``--details``, every call outside the ``named`` class.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
import warnings
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# Building the cases runs the compiled engines in this process, which then forks one child per
# call; numba's OpenMP threading layer (GNU OpenMP) refuses to run after a fork, its work-queue
# layer does not. The layer decides only how runs are spread over threads, not their results.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from tests.fuzz_entry_points import (  # noqa: E402
    ENTRY_POINTS, BadValue, EntryPoint, cases, is_finite_result, names_argument,
)

#: The outcome classes, in the order of the table.
OUTCOMES = {
    "named": "`ValueError` naming the argument (the promise)",
    "unnamed": "`ValueError` without the argument's name",
    "other": "another exception",
    "non-finite": "a result containing NaN or inf",
    "accepted": "clearly bad input accepted without complaint",
    "extreme": "extreme-but-valid value: finite result or `FloatingPointError`",
    "hang": "hangs",
}

CASES = cases()


def classify(point: EntryPoint, argument: str, bad: BadValue) -> tuple[str, str]:
    """Make the call with ``argument`` replaced by ``bad``; return its outcome class and a detail."""
    arguments = point.arguments()
    arguments[argument] = bad.value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = point.function(**arguments)
        except ValueError as error:
            outcome = "named" if names_argument(str(error), argument) else "unnamed"
            return outcome, f"{type(error).__name__}: {error}"
        except FloatingPointError as error:
            return ("other" if bad.clearly_bad else "extreme"), f"FloatingPointError: {error}"
        except Exception as error:  # noqa: BLE001 - every other exception is what this report counts
            return "other", f"{type(error).__name__}: {error}"
        finally:
            plt.close("all")
    if not is_finite_result(result, point.infinite_ok, point.nan_ok):
        return "non-finite", f"returned {type(result).__name__} with NaN or inf"
    return ("accepted" if bad.clearly_bad else "extreme"), f"returned {type(result).__name__}"


def child(index: int, connection: Connection) -> None:
    """Classify case ``index`` and send the outcome back."""
    point, argument, bad = CASES[index]
    connection.send(classify(point, argument, bad))
    connection.close()


def run_all(timeout: float, workers: int) -> list[tuple[str, str]]:
    """Classify every case, ``workers`` forked children at a time, each killed after ``timeout`` seconds."""
    context = multiprocessing.get_context("fork")
    outcomes: list[tuple[str, str] | None] = [None] * len(CASES)
    pending = list(range(len(CASES)))[::-1]
    running: dict[int, tuple[multiprocessing.Process, Connection, float]] = {}
    while pending or running:
        while pending and len(running) < workers:
            index = pending.pop()
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(target=child, args=(index, sender))
            process.start()
            sender.close()
            running[index] = (process, receiver, time.monotonic())
        for index, (process, receiver, started) in list(running.items()):
            if receiver.poll():
                try:
                    outcomes[index] = receiver.recv()
                except EOFError:
                    outcomes[index] = ("other", f"child died with exit code {process.exitcode}")
            elif not process.is_alive():
                process.join()
                outcomes[index] = ("other", f"child died with exit code {process.exitcode}")
            elif time.monotonic() - started > timeout:
                process.kill()
                outcomes[index] = ("hang", f"no answer within {timeout:g} s")
            else:
                continue
            process.join()
            receiver.close()
            del running[index]
        time.sleep(0.002)
    return [outcome for outcome in outcomes if outcome is not None]


def exception_type(detail: str) -> str:
    """The exception's type name at the start of an outcome detail."""
    return detail.split(":", 1)[0]


def markdown(outcomes: list[tuple[str, str]], details: bool) -> str:
    """The report: outcomes, other exceptions by type, entry points covered, optionally each call outside the promise."""
    counts = Counter(outcome for outcome, _ in outcomes)
    lines = [f"{len(CASES)} calls to {len(ENTRY_POINTS)} public entry points, one argument made bad at a time.", "",
             "| outcome | calls |", "| --- | --- |"]
    lines += [f"| {text} | {counts.get(key, 0):,} |" for key, text in OUTCOMES.items()]
    others = Counter(exception_type(detail) for outcome, detail in outcomes if outcome == "other")
    if others:
        shown = ", ".join(f"{count} `{name}`" for name, count in others.most_common())
        lines += ["", f"Other exceptions by type: {shown}"]
    lines += ["", "Outcomes by bad-value kind (calls outside the promise only):", "",
              "| bad value | " + " | ".join(key for key in OUTCOMES if key != "named") + " |",
              "| --- |" + " --- |" * (len(OUTCOMES) - 1)]
    labels = sorted({bad.label for _, _, bad in CASES})
    for label in labels:
        row = Counter(outcome for (_, _, bad), (outcome, _) in zip(CASES, outcomes, strict=True) if bad.label == label)
        if sum(row.values()) > row.get("named", 0):
            cells = " | ".join(str(row.get(key, 0)) for key in OUTCOMES if key != "named")
            lines.append(f"| {label} | {cells} |")
    covered = ", ".join(f"`{point.name}`" for point in ENTRY_POINTS)
    lines += ["", f"Entry points covered ({len(ENTRY_POINTS)}): {covered}"]
    if details:
        lines += ["", "| entry point | argument | bad value | outcome | detail |", "| --- | --- | --- | --- | --- |"]
        for (point, argument, bad), (outcome, detail) in zip(CASES, outcomes, strict=True):
            if outcome != "named":
                shown = detail.replace("|", "/").replace("\n", " ")[:160]
                lines.append(f"| `{point.name}` | `{argument}` | {bad.label} | {outcome} | {shown} |")
    return "\n".join(lines)


def main() -> None:
    """Parse the options, run every case and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds before a call counts as a hang")
    parser.add_argument("--workers", type=int, default=2, help="calls run at the same time")
    parser.add_argument("--details", action="store_true", help="list every call outside the promise")
    options = parser.parse_args()
    print(markdown(run_all(options.timeout, options.workers), options.details))


if __name__ == "__main__":
    main()
