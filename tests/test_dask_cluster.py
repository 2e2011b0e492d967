"""The sweeps on a real Dask cluster give exactly the serial results.

The README says the sweeps scale out with ``joblib.parallel_config(backend="dask")``. Here a
``distributed.LocalCluster`` with two worker processes on 127.0.0.1 runs a reduced head-to-head
and a reduced tuning map through that backend, and every result must equal the serial run bit
for bit (every run seeds its own generator); the scheduler's task stream shows the work really
ran on the workers. ``scripts/chapter_6.py --backend dask --address ...`` is run against the same
cluster, with its studies cut down to a small one so that it takes seconds, and must write what
the serial computation gives. The cluster is closed whatever happens.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from functools import lru_cache

import joblib
import numpy as np
import pytest

from tests.conftest import REPOSITORY

distributed = pytest.importorskip("distributed", reason="dask.distributed is pinned in requirements.txt; install it")

from covpo.experiments.implications.head_to_head import head_to_head  # noqa: E402
from covpo.experiments.implications.tuning import inner_steps_map  # noqa: E402
from covpo.families import stacked_collapse_instance  # noqa: E402
from tests.test_head_to_head import COVERAGE, EPS, tiny_methods  # noqa: E402

SMALL_TUNING = {"betas": (0.5, 1.0), "inner_steps": (2, 6), "batch_size": 64, "n_iterations": 4, "n_seeds": 2, "progress": False}

# Runs scripts/chapter_6.py's own command line and main(), with its studies replaced by one
# small tuning map (the book-size studies take minutes), and prints the study's text.
SCRIPT_RUNNER = textwrap.dedent(
    """
    import importlib.util, sys
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("chapter_6", sys.argv[1])
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    from covpo.experiments.implications.tuning import inner_steps_map
    from covpo.families import stacked_collapse_instance

    def small_tuning(full, out):
        grid = inner_steps_map(stacked_collapse_instance(2, 0.2, 10.0, n_zero=10), **{settings})
        return grid.summary() + "\\n" + repr(grid.responses_to_eps.tolist()) + repr(grid.final_suboptimality.tolist())

    script.STUDIES = {{"small_tuning": small_tuning}}
    if len(sys.argv) > 2:
        sys.argv = ["chapter_6.py", *sys.argv[3:]]
        script.main()
    else:
        print(small_tuning(False, None))
    """
)


@lru_cache(maxsize=1)
def small_collapse():
    return stacked_collapse_instance(2, 0.2, 10.0, n_zero=10)


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[object, object]]:
    """A local cluster of two single-threaded worker processes and a client connected to it."""
    local = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    try:
        client = distributed.Client(local)
        try:
            yield local, client
        finally:
            client.close()
    finally:
        local.close()


def ran_on_workers(client, run) -> tuple[object, set[str]]:
    """``run()`` under the Dask backend; its result and the workers that ran its tasks."""
    with distributed.get_task_stream(client) as stream, joblib.parallel_config(backend="dask"):
        result = run()
    return result, {task["worker"] for task in stream.data}


def test_head_to_head_on_the_cluster_equals_the_serial_run(cluster):
    _, client = cluster
    instance = stacked_collapse_instance(1, 0.2, COVERAGE, n_zero=20)

    def run():
        return head_to_head([instance], [COVERAGE], tiny_methods(), eps=EPS, seeds=(0, 1), progress=False)

    serial = run()
    on_cluster, workers = ran_on_workers(client, run)
    assert len(workers) == 2, f"the head-to-head ran on {len(workers)} of the 2 workers"
    for field in dataclasses.fields(serial):
        ours, theirs = getattr(serial, field.name), getattr(on_cluster, field.name)
        if isinstance(ours, np.ndarray):
            np.testing.assert_array_equal(ours, theirs, err_msg=f"head-to-head field {field.name} differs on the cluster")
    assert str(serial.table()) == str(on_cluster.table())


def test_tuning_map_on_the_cluster_equals_the_serial_run(cluster):
    _, client = cluster

    def run():
        return inner_steps_map(small_collapse(), **SMALL_TUNING)

    serial = run()
    on_cluster, workers = ran_on_workers(client, run)
    assert workers, "no task of the tuning map ran on the cluster"
    for name in ("responses_to_eps", "final_suboptimality", "coverage_loss", "diverged"):
        np.testing.assert_array_equal(
            getattr(serial, name), getattr(on_cluster, name), err_msg=f"tuning map {name} differs on the cluster"
        )


def test_chapter_6_script_runs_on_the_cluster_by_its_address(cluster, tmp_path):
    local, client = cluster
    runner = tmp_path / "run_chapter_6.py"
    runner.write_text(SCRIPT_RUNNER.format(settings=repr(SMALL_TUNING)))
    script = REPOSITORY / "scripts" / "chapter_6.py"
    before = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)
    out = tmp_path / "out"
    command = [sys.executable, str(runner), str(script), "--",
               "--backend", "dask", "--address", local.scheduler_address, "--out", str(out)]
    result = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"chapter_6.py --backend dask failed:\n{result.stderr[-3000:]}"
    after = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)
    assert after > before, "chapter_6.py --backend dask sent no task to the cluster at --address"
    serial = subprocess.run([sys.executable, str(runner), str(script)], cwd=REPOSITORY, capture_output=True, text=True, timeout=300)
    assert serial.returncode == 0, serial.stderr[-3000:]
    written = (out / "small_tuning.txt").read_text().split("\n", 1)[1]
    assert written.strip() == serial.stdout.strip(), "chapter_6.py on the cluster wrote other results than the serial run"
