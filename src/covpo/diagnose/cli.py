"""``covpo-diagnose PATH``: is my run collapsing? (paper sections 1.3 and 5, read from a trainer's logs).

Reads a TRL ``completions/`` folder or a verl rollout directory (the format is detected), shows a
progress bar while reading, prints the verdict of :func:`covpo.diagnose.report.verdict` and,
with ``--out``, writes the self-contained HTML report. Run it as ``covpo-diagnose PATH`` or
``python -m covpo.diagnose.cli PATH``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from covpo.diagnose.measures import diagnose
from covpo.diagnose.readers import read_log
from covpo.diagnose.report import verdict, write_report
from covpo.diagnose.success import DEFAULT_THRESHOLD


def parser() -> argparse.ArgumentParser:
    """The command's arguments."""
    commands = argparse.ArgumentParser(
        prog="covpo-diagnose",
        description="Read a TRL or verl completion log and measure which prompts lost coverage.",
    )
    commands.add_argument("path", help="a TRL output or completions directory, a verl rollout directory, or one log file")
    commands.add_argument("--out", help="write the HTML report here")
    commands.add_argument("--reward", help="the reward column that decides success (default: the only one; verl: score)")
    commands.add_argument("--reward-weights", help="weights of a weighted sum over the reward columns, comma-separated "
                          "in the log's column order (TRL's reward_weights)")
    commands.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                          help=f"a completion succeeds when its reward is at least this (default {DEFAULT_THRESHOLD:g})")
    commands.add_argument("--windows", type=int, default=5, help="step windows; the first is the early window (default 5)")
    commands.add_argument("--zero-visits", type=int, default=3,
                          help="trailing visits without a success that count as a loss (default 3)")
    commands.add_argument("--alpha", type=float, default=0.01,
                          help="flag a loss when its zeros have a chance probability below this (default 0.01)")
    commands.add_argument("--early-rate", choices=("point", "wilson_lower"), default="point",
                          help="the early rate the chance probability assumes: the rate itself or its Wilson lower end")
    commands.add_argument("--eval-steps", help="comma-separated steps whose files hold evaluation rows (TRL)")
    commands.add_argument("--no-progress", action="store_true", help="no progress bar")
    return commands


def _numbers(text: str | None, kind: type, name: str) -> list | None:
    if text is None:
        return None
    try:
        return [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"{name} must be comma-separated numbers, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command on ``argv`` (the process's arguments by default); 0 on success, 2 on a bad log or argument."""
    arguments = parser().parse_args(argv)
    try:
        log = read_log(
            arguments.path, reward=arguments.reward,
            reward_weights=_numbers(arguments.reward_weights, float, "--reward-weights"),
            threshold=arguments.threshold, eval_steps=_numbers(arguments.eval_steps, int, "--eval-steps"),
            progress=not arguments.no_progress,
        )
        # A log of fewer steps than windows gets one window per step.
        windows = min(arguments.windows, int(np.unique(log.steps).size))
        diagnosis = diagnose(log, windows=windows, zero_visits=arguments.zero_visits, alpha=arguments.alpha,
                             early_rate=arguments.early_rate)
    except ValueError as error:
        print(f"covpo-diagnose: {error}", file=sys.stderr)
        return 2
    print(verdict(diagnosis))
    for note in log.notes:
        print(f"Note: {note}")
    if arguments.out:
        print(f"Report: {write_report(diagnosis, arguments.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
