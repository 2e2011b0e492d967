"""Run independent experiment tasks through joblib, with a progress bar.

Every sweep of the book is a list of independent tasks (one run of one method on one instance
at one setting and seed). :func:`run_tasks` hands them to :class:`joblib.Parallel` without
fixing a backend, so the caller chooses where they run with :func:`joblib.parallel_config`::

    # local processes
    with joblib.parallel_config(n_jobs=2):
        table = head_to_head(...)
    # a Dask cluster (with a distributed.Client connected)
    with joblib.parallel_config(backend="dask"):
        table = head_to_head(...)
    # a Ray cluster (after ray.util.joblib.register_ray())
    with joblib.parallel_config(backend="ray"):
        table = head_to_head(...)

Outside any such block the tasks run one after another in the calling process. Each task
carries its own seed, so the results are identical bit for bit whatever the backend and the
number of workers. Arguments are sent to workers as they are, never as memory-mapped files
(``max_nbytes=None``): the instances are small, and computing on a memory map is several
times slower.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from joblib import Parallel, delayed
from tqdm.std import tqdm

from covpo.static_pages import standins_requested
from covpo.validation import check_flag

PROGRESS_DELAY_SECONDS = 1.0


def run_tasks(function: Callable[..., Any], tasks: Sequence[tuple], description: str, progress: bool = True) -> list:
    """Evaluate ``function(*task)`` for every task, in the order given.

    Parameters
    ----------
    function
        A module-level function (workers in other processes must be able to import it).
    tasks
        One tuple of positional arguments per call.
    description
        Label of the progress bar. It is a plain text bar on stderr, also in notebooks. It
        shows only if the work takes over a second, and never in a kernel that executes a
        chapter for the static pages (:func:`~covpo.static_pages.standins_requested`), so
        neither the pages nor the notebooks they offer carry one.
    progress
        ``False`` hides the bar.

    Returns
    -------
    list
        ``[function(*task) for task in tasks]``, computed under the active joblib configuration.
    """
    if not callable(function):
        raise ValueError(f"function must be callable, got {function!r}")
    if isinstance(tasks, (str, bytes)) or not hasattr(tasks, "__iter__"):
        raise ValueError(f"tasks must be a sequence of argument tuples, got {tasks!r}")
    tasks = list(tasks)
    if not all(isinstance(task, tuple) for task in tasks):
        raise ValueError(f"tasks must hold one tuple of positional arguments per call, got {tasks!r}")
    if not isinstance(description, str):
        raise ValueError(f"description must be a string, got {description!r}")
    progress = check_flag("progress", progress)
    results = []
    bar = tqdm(total=len(tasks), desc=description, file=sys.stderr, disable=not progress or standins_requested(), delay=PROGRESS_DELAY_SECONDS)
    with bar:
        for result in Parallel(return_as="generator", max_nbytes=None)(delayed(function)(*task) for task in tasks):
            results.append(result)
            bar.update()
    return results
