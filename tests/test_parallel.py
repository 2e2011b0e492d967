"""The task runner returns results in order and identically under every joblib configuration, with a bar only where one is read."""

import time

import joblib
import numpy as np
import pytest

from covpo.experiments.parallel import run_tasks
from covpo.experiments.sweeps import Method, cost_sweep
from covpo.static_pages import STANDINS_VARIABLE
from tests.helpers import small_instance


def _seeded_draw(seed: int, size: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=size)


def test_results_come_back_in_task_order():
    assert run_tasks(pow, [(2, k) for k in range(6)], "powers", progress=False) == [1, 2, 4, 8, 16, 32]


def test_results_do_not_depend_on_the_backend():
    tasks = [(seed, 5) for seed in range(4)]
    serial = run_tasks(_seeded_draw, tasks, "draws", progress=False)
    with joblib.parallel_config(backend="threading", n_jobs=2):
        threaded = run_tasks(_seeded_draw, tasks, "draws", progress=False)
    for a, b in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(a, b)


def test_no_tasks_gives_no_results():
    assert run_tasks(pow, [], "nothing", progress=False) == []


@pytest.mark.same_on_every_cpu
def test_a_sweep_of_methods_is_identical_in_worker_processes():
    # Methods travel to worker processes by pickle; every run seeds its own generator
    methods = (
        Method("A", "ppo_noclip", {"beta": 1.0, "batch_size": 16, "inner_steps": 2, "n_iterations": 3}, (0.5, 1.0)),
        Method("B", "reinforce", {"batch_size": 8, "n_iterations": 6}, (1.0,)),
    )
    instances = [small_instance(), small_instance(4)]
    serial = cost_sweep(instances, (2.0, 3.0), methods, eps=0.5, seed=0)
    with joblib.parallel_config(backend="loky", n_jobs=2):
        processes = cost_sweep(instances, (2.0, 3.0), methods, eps=0.5, seed=0)
    for name in ("eta", "reached", "responses_to_eps", "steps_to_eps", "coverage_loss", "final_suboptimality"):
        np.testing.assert_array_equal(getattr(serial, name), getattr(processes, name))


@pytest.mark.parametrize(
    "arguments, name",
    [
        ((None, [(1,)], "x"), "function"),
        ((abs, None, "x"), "tasks"),
        ((abs, [1, 2], "x"), "tasks"),
        ((abs, [(1,)], None), "description"),
    ],
)
def test_run_tasks_rejects_bad_input_naming_the_argument(arguments, name):
    with pytest.raises(ValueError, match=name):
        run_tasks(*arguments)


def _pause(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.same_on_every_cpu
def test_the_progress_bar_is_silent_in_a_kernel_for_the_static_pages(capsys, monkeypatch):
    # the work outlasts the bar's one-second delay, so a bar that may show does
    tasks = [(0.6,), (0.6,)]
    monkeypatch.delenv(STANDINS_VARIABLE, raising=False)
    run_tasks(_pause, tasks, "pauses")
    assert "pauses" in capsys.readouterr().err
    monkeypatch.setenv(STANDINS_VARIABLE, "1")
    run_tasks(_pause, tasks, "pauses")
    assert capsys.readouterr().err == ""
