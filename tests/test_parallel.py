"""The task runner returns results in order and identically under every joblib configuration."""

import joblib
import numpy as np

from covpo.experiments.parallel import run_tasks


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
