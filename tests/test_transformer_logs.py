"""Tests of chapter 7's runs written as TRL logs and of the detector's accuracy against exact coverage.

The writer is checked by reading its files back with :func:`covpo.diagnose.read_log`,
:func:`~covpo.labs.transformer.logs.exact_losses` on hand-made coverage series, and
:func:`~covpo.labs.transformer.logs.detector_accuracy` on a small trace whose losses are known.
"""

from __future__ import annotations

import numpy as np
import pytest

from covpo.diagnose import read_log
from covpo.labs.transformer.diagnose_validation import DIAGNOSE_RECORD, read_validation, record_profiles
from covpo.labs.transformer.logs import (
    REWARD_COLUMN, ExactTrace, RunAccuracy, detector_accuracy, draw_completions, exact_losses, write_trl_logs,
)
from covpo.records import read_stamped_record


def make_trace(coverage: np.ndarray, near: float = 0.3, seed: int = 0, arm: str = "hand-made") -> ExactTrace:
    """A trace on 4 symbols, strings of 2, with the coverage series ``coverage`` ``[T + 1, P]`` and a fixed near-miss probability."""
    coverage = np.asarray(coverage, dtype=float)
    n_prompts = coverage.shape[1]
    prompts = np.stack([np.arange(n_prompts) % 4, (np.arange(n_prompts) // 4) % 4], axis=1)
    correct = prompts[:, ::-1].copy()
    near_miss = correct.copy()
    near_miss[:, -1] = (near_miss[:, -1] + 1) % 4
    near_probability = np.minimum(near, 1 - coverage)
    return ExactTrace(arm=arm, seed=seed, prompts=prompts, correct=correct, near=near_miss,
                      hard=np.zeros(n_prompts, bool), log_coverage=np.log(coverage),
                      log_near=np.log(np.maximum(near_probability, 1e-12)), near_reward=0.9, n_symbols=4)


@pytest.mark.same_on_every_cpu
def test_the_written_logs_round_trip_through_the_reader(tmp_path):
    trace = make_trace(np.full((5, 3), 0.4))
    files = write_trl_logs(trace, tmp_path, group_size=6, seed=3)
    assert [path.name for path in files] == [f"completions_{step:05d}.parquet" for step in range(4)]
    log = read_log(tmp_path, progress=False)
    drawn = draw_completions(trace, group_size=6, seed=3)
    assert log.format == "trl" and log.rows == 4 * 3 * 6
    assert sorted(log.prompts) == ["aa", "ba", "ca"]
    assert np.array_equal(np.sort(log.success), np.sort(drawn.outcome == 0))
    assert set(np.unique(log.rewards[REWARD_COLUMN])) <= {0.0, 0.9, 1.0}
    completions = np.asarray(log.completions.to_pylist(), dtype=object)
    # every success is the correct answer, every 0.9 the near miss, and every 0 another string of the task
    answers = {"aa": ("aa", "ab"), "ba": ("ab", "ac"), "ca": ("ac", "ad")}
    for prompt, completion, reward in zip(log.prompts[log.prompt_index], completions, log.rewards[REWARD_COLUMN]):
        correct, near = answers[prompt]
        assert (completion == correct) == (reward == 1.0) and (completion == near) == (reward == 0.9)
        assert len(completion) == 2 and set(completion) <= set("abcd")


@pytest.mark.same_on_every_cpu
def test_draws_follow_the_exact_policy():
    trace = make_trace(np.tile([[0.0 + 1e-12, 0.5, 1.0 - 1e-12]], (3, 1)), near=0.5)
    drawn = draw_completions(trace, group_size=2000, seed=0)
    for prompt, expected in enumerate((0.0, 0.5, 1.0)):
        rate = np.mean(drawn.outcome[drawn.prompt == prompt] == 0)
        assert abs(rate - expected) < 0.03
    near_rate = np.mean(drawn.outcome[drawn.prompt == 0] == 1)
    assert abs(near_rate - 0.5) < 0.03
    # the other answers avoid the correct answer and the near miss, and cover the remaining 14 strings
    other = drawn.completion_text[(drawn.prompt == 0) & (drawn.outcome == 2)]
    assert len(set(other)) == 14 and not {"aa", "ab"} & set(other)


@pytest.mark.same_on_every_cpu
def test_exact_losses_by_the_books_definition():
    base = 0.4
    coverage = np.array([
        [base, base, base, base],
        [base, 0.1, 0.1, base],
        [base, 0.1, 0.3, base],
        [base, 0.1, 0.1, 0.2],   # exactly half is not below half
        [base, 0.1, 0.1, 0.2],
        [0.01, 0.01, 0.01, 0.01],  # the returned model's row is not a logged step
    ])
    losses = exact_losses(make_trace(coverage))
    assert np.array_equal(losses.lost, [False, True, True, False])
    assert np.array_equal(losses.since_step, [-1, 1, 3, -1])
    assert losses.count == 2


@pytest.mark.same_on_every_cpu
def test_detector_accuracy_on_a_known_loss():
    steps = 30
    coverage = np.full((steps + 1, 3), 0.5)
    coverage[15:, 0] = 1e-9        # lost from step 15
    coverage[:, 2] = 0.05          # steady and rarely solved: never lost
    traces = (make_trace(coverage, seed=0), make_trace(coverage, seed=1))
    accuracy = detector_accuracy(traces, group_size=8, seed=0)
    assert accuracy.arms() == ("hand-made",)
    for run in accuracy.runs:
        assert isinstance(run, RunAccuracy)
        assert run.lost == run.lost_solved_early == 1
        assert run.true_flags == 1 and run.false_flags == run.flagged - 1
        assert all(0 <= delay <= 6 for delay in run.delays)
        assert run.ks == (32, 128) and all(np.isfinite(run.pass_error))
        assert RunAccuracy.from_json(run.to_json()) == run
    assert accuracy.recall("hand-made").successes == 2
    table = accuracy.table()
    assert table.column("arm") == ["hand-made"] and table.column("runs") == [2]


def test_a_trace_round_trips_through_json_and_refuses_bad_input():
    trace = make_trace(np.full((4, 2), 0.25))
    again = ExactTrace.from_json(trace.to_json())
    assert np.allclose(again.log_coverage, trace.log_coverage, rtol=1e-6)
    assert np.array_equal(again.prompts, trace.prompts)
    with pytest.raises(ValueError, match="log_coverage"):
        make_trace(np.full((1, 2), 0.25))
    with pytest.raises(ValueError, match="group_size"):
        draw_completions(trace, group_size=0, seed=0)
    with pytest.raises(ValueError, match="traces"):
        detector_accuracy([])


@pytest.mark.skipif(not DIAGNOSE_RECORD.exists(), reason="the validation record is written by scripts/diagnose_validation.py")
def test_the_record_reads_back():
    record = read_stamped_record(DIAGNOSE_RECORD)
    for profile in record_profiles(record):
        accuracy, traces = read_validation(record, profile)
        assert accuracy.runs and traces
        assert {trace.arm for trace in traces} == set(accuracy.arms())
