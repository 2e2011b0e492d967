"""The phases of one exact REINFORCE run measured: the slide's law and how long the recovery takes (paper section 2.1).

Chapter 2's proof sketch (our heuristic for our family, not the paper's proof) says that once
the zero block has drained, its residual mass ``z`` decays like ``1 / t`` in the learning-rate
time ``t = eta * steps`` and keeps the distractor ahead, and that ``w = t * a`` (``a`` the
coverage) obeys ``dw / d log t = k * gap * w**2`` with ``k`` close to one.
:func:`slide_profile` measures both on a densely recorded run; :func:`recovery_profile`
measures when the lowest coverage comes and how the climb back is spread over the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.collapse_instance import CollapseInstance, _check_instance
from covpo.validation import check_count, check_finite_array, check_positive

from .engine import DEFAULT_ETA, DEFAULT_MAX_STEPS, CollapseRun, exact_collapse_run

DENSE_RECORDS = 6000
"""Log-spaced records of the dense run; near the end of a run their spacing is under 0.3 % of its steps."""


def _dense_run(instance: CollapseInstance, eta: float, n_iterations: int, n_records: int) -> CollapseRun:
    """Exact REINFORCE to ``eps = gap / 2`` with ``n_records`` log-spaced records."""
    instance = _check_instance(instance)
    run = exact_collapse_run(
        instance,
        eta=check_positive("eta", eta),
        n_iterations=check_count("n_iterations", n_iterations),
        eps=instance.gap / 2,
        n_records=check_count("n_records", n_records, minimum=100),
    )
    if not run.reached_eps:
        raise ValueError(
            f"the run at eta={eta!r} did not reach eps = gap / 2 within n_iterations={n_iterations}; raise n_iterations "
            "(or lower eta)"
        )
    return run


@dataclass(frozen=True)
class SlideProfile:
    """The slide phase of one run, record by record (chapter 2's proof sketch).

    Attributes
    ----------
    steps
        Recorded gradient steps from ``start_step`` to the step of lowest coverage.
    learning_time
        ``t = eta * steps``.
    zero_time_product
        ``(1 - gap) * z * t``: constant when the residual zero mass decays like ``1 / t``.
    w
        ``t * a``, the coverage ``a`` times the learning time.
    law_ratio
        ``(dw / d log t) / (gap * w**2)`` by central differences: the measured ``k``.
    """

    steps: np.ndarray
    learning_time: np.ndarray
    zero_time_product: np.ndarray
    w: np.ndarray
    law_ratio: np.ndarray


def slide_profile(
    instance: CollapseInstance,
    *,
    eta: float = DEFAULT_ETA,
    start_step: int = 1000,
    n_iterations: int = DEFAULT_MAX_STEPS,
    n_records: int = DENSE_RECORDS,
    run: CollapseRun | None = None,
) -> SlideProfile:
    """Measure the slide's law on exact REINFORCE from ``start_step`` to the step of lowest coverage.

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`.
    eta
        Learning rate.
    start_step
        First step counted as the slide (the zero block must have drained by then).
    n_iterations
        Budget of the run to ``eps = gap / 2``.
    n_records
        Log-spaced records of the run (ignored when ``run`` is given).
    run
        A densely recorded run of :func:`~covpo.experiments.collapse.engine.exact_collapse_run` on ``instance`` to reuse.
    """
    start_step = check_count("start_step", start_step)
    if run is None:
        run = _dense_run(instance, eta, n_iterations, n_records)
    elif not isinstance(run, CollapseRun) or run.instance != _check_instance(instance):
        raise ValueError("run must be a CollapseRun of the same instance")
    trajectory = run.trajectory
    lowest = int(np.argmin(trajectory.log_coverage[:, 0]))
    keep = (trajectory.gradient_steps >= start_step) & (np.arange(trajectory.gradient_steps.size) <= lowest)
    if np.count_nonzero(keep) < 3:
        raise ValueError(f"fewer than three records between start_step={start_step} and the lowest coverage")
    steps = trajectory.gradient_steps[keep]
    masses = np.exp(run.class_log_probs[keep])
    eta_used = float(trajectory.settings["eta"])
    time = eta_used * steps.astype(float)
    gap = run.instance.gap
    w = time * masses[:, 0]
    slope = np.gradient(w, np.log(time))
    return SlideProfile(
        steps=steps,
        learning_time=time,
        zero_time_product=(1.0 - gap) * masses[:, 2] * time,
        w=w,
        law_ratio=slope / (gap * w**2),
    )


@dataclass(frozen=True)
class RecoveryProfile:
    """When the lowest coverage comes in a run, and how the climb back is spread over it.

    Attributes
    ----------
    steps_to_eps
        Gradient steps to the first eps-optimal iterate.
    lowest_step, min_log10_coverage
        The step of lowest coverage and that coverage (base 10).
    rise_decades
        Decades above the lowest coverage that :attr:`rise_steps` refer to.
    rise_steps
        For each entry of ``rise_decades``, the first recorded step after the lowest point at
        which coverage is that many decades above it (a record, so at most the record spacing late).
    final_log10_coverage
        Coverage at the first eps-optimal step.
    """

    steps_to_eps: int
    lowest_step: int
    min_log10_coverage: float
    rise_decades: np.ndarray
    rise_steps: np.ndarray
    final_log10_coverage: float

    @property
    def lowest_share(self) -> float:
        """Fraction of the run's steps before the lowest coverage."""
        return self.lowest_step / self.steps_to_eps

    @property
    def recovery_share(self) -> float:
        """Fraction of the run's steps from the lowest coverage to eps-optimality."""
        return 1.0 - self.lowest_share

    @property
    def rise_shares(self) -> np.ndarray:
        """Fraction of the run's steps left when coverage is ``rise_decades`` above its lowest."""
        return (self.steps_to_eps - self.rise_steps) / self.steps_to_eps


def recovery_profile(
    instance: CollapseInstance,
    *,
    eta: float = DEFAULT_ETA,
    rise_decades: Sequence[float] | np.ndarray = (0.5, 1.0, 2.0),
    n_iterations: int = DEFAULT_MAX_STEPS,
    n_records: int = DENSE_RECORDS,
    run: CollapseRun | None = None,
) -> RecoveryProfile:
    """Measure the recovery of exact REINFORCE to ``eps = gap / 2``: its share of the run and its pace.

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`.
    eta
        Learning rate.
    rise_decades
        Rises above the lowest coverage to time, each ``> 0``; each must be reached before eps.
    n_iterations
        Budget of the run.
    n_records
        Log-spaced records of the run (ignored when ``run`` is given).
    run
        A densely recorded run of :func:`~covpo.experiments.collapse.engine.exact_collapse_run` on ``instance`` that reached eps, to reuse.
    """
    rise_decades = check_finite_array("rise_decades", rise_decades, ndim=1)
    if rise_decades.size == 0 or np.any(rise_decades <= 0):
        raise ValueError(f"rise_decades must hold positive numbers of decades, got {rise_decades!r}")
    if run is None:
        run = _dense_run(instance, eta, n_iterations, n_records)
    elif not isinstance(run, CollapseRun) or run.instance != _check_instance(instance) or not run.reached_eps:
        raise ValueError("run must be a CollapseRun of the same instance that reached eps")
    trajectory = run.trajectory
    coverage = trajectory.log10_coverage[:, 0]
    steps = trajectory.gradient_steps
    lowest = int(np.argmin(coverage))
    rise_steps = []
    for decades in rise_decades:
        above = np.flatnonzero((coverage >= coverage[lowest] + decades) & (np.arange(steps.size) > lowest))
        if above.size == 0:
            raise ValueError(f"coverage never rises {decades} decades above its lowest before eps")
        rise_steps.append(int(steps[above[0]]))
    return RecoveryProfile(
        steps_to_eps=int(run.steps_to_eps),
        lowest_step=int(steps[lowest]),
        min_log10_coverage=float(coverage[lowest]),
        rise_decades=rise_decades,
        rise_steps=np.array(rise_steps, dtype=np.int64),
        final_log10_coverage=float(coverage[-1]),
    )


def dense_collapse_run(
    instance: CollapseInstance,
    *,
    eta: float = DEFAULT_ETA,
    n_iterations: int = DEFAULT_MAX_STEPS,
    n_records: int = DENSE_RECORDS,
) -> CollapseRun:
    """Exact REINFORCE to ``eps = gap / 2`` with dense log-spaced records (paper section 2.1).

    The run :func:`slide_profile` and :func:`recovery_profile` measure; raises a ``ValueError``
    when it does not reach eps within ``n_iterations``.
    """
    return _dense_run(instance, eta, n_iterations, n_records)
