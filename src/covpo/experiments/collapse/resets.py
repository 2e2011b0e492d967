"""Reference resets on the collapse family: exact-gradient APMD in the compiled engine (paper section 3.1).

APMD with the inner loop of ``inner_steps`` exact gradient steps: gradient ascent on
``J_beta(pi_theta; pi_ref)`` at one constant learning rate, with the reference ``pi_ref``
reset to the current policy every ``inner_steps`` steps; the first reference is the base
model. It is :func:`covpo.algorithms.mirror_descent.apmd` with ``inner_steps`` and ``eta`` on the
reduced state, and the same compiled engine as REINFORCE (:mod:`covpo.experiments.collapse.engine`),
so both are costed in gradient steps on equal terms: the horizontal axis of every APMD figure
counts gradient steps, not resets.

Constants, measured on this family (our instance and constants, not the paper's). The
default ``beta = 0.5`` is ten to fifty times the strongest eps-optimal fixed-reference
strength along the chapter's knob, and ``eta * beta = 2`` at the chapter's ``eta = 4``. Two
conditions shape the choice:

- stability: where the optimal response and the distractor hold equal mass, one gradient
  step multiplies the error along ``u`` in the inner problem by about ``1 - eta * beta / 2``
  (measured by :func:`~covpo.experiments.collapse.inner_factor.inner_error_factors`), so at
  ``eta * beta = 4`` the inner loop flips the error's sign without shrinking it and APMD spends
  most of its resets near equal masses; ``eta * beta = 2`` removes that error in one step;
- accuracy: an inner loop of ``K`` steps must actually solve its subproblem, which on this
  family takes about ``eta * beta * K >= 16``; with fewer steps APMD drifts toward REINFORCE
  (``K = 1`` *is* REINFORCE: the KL gradient vanishes at the reference) and coverage
  collapses again (:func:`covpo.experiments.collapse.reset_sweeps.inner_steps_sweep`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from covpo.validation import MAX_COUNT, check_count, check_nonnegative, check_positive

from .engine import (
    DEFAULT_ETA,
    DEFAULT_MAX_STEPS,
    DEFAULT_N_RECORDS,
    CollapseRun,
    ExactRunsSummary,
    _as_record_steps,
    _assemble_run,
    _check_instances,
    _per_run,
    _run_exact,
    _settings,
    _summarize,
)
from covpo.collapse_instance import (
    CollapseInstance,
    _check_eps,
    _check_instance,
    regularized_optimum_suboptimality,
)

APMD_NAME = "exact APMD"
DEFAULT_APMD_BETA = 0.5
DEFAULT_INNER_STEPS = 8


def exact_apmd_run(
    instance: CollapseInstance,
    *,
    beta: float = DEFAULT_APMD_BETA,
    inner_steps: int = DEFAULT_INNER_STEPS,
    eta: float = DEFAULT_ETA,
    gradient_steps: int = DEFAULT_MAX_STEPS,
    eps: float | None = None,
    n_records: int = DEFAULT_N_RECORDS,
    record_steps: Sequence[int] | None = None,
    progress: bool | None = None,
) -> CollapseRun:
    """Exact-gradient APMD on the reduced state, from the base model (paper section 3.1 and Figure 2a).

    Outer iteration ``t`` resets the reference to ``pi_t`` (the base model for ``t = 0``) and
    takes ``inner_steps`` steps ``theta <- theta + eta grad J_beta(pi_theta; pi_t)``, as
    ``covpo.run("apmd", ...)`` does. The budget is counted in gradient steps, the horizontal axis
    of paper Figure 2a, so that it compares with REINFORCE's at equal steps: the run stops at the
    first step with ``J* - J <= eps`` when ``eps`` is given, else after ``gradient_steps`` steps,
    which need not be a multiple of ``inner_steps``. The record at step ``s`` has counted
    ``ceil(s / inner_steps)`` resets, as :func:`covpo.algorithms.mirror_descent.apmd` counts them;
    its KL is to the base model.

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`.
    beta
        Strength of the KL penalty toward the current reference, ``> 0``.
    inner_steps
        Exact gradient steps per reset, ``>= 1``.
    eta
        Learning rate, ``> 0``.
    gradient_steps
        Budget of gradient steps, all outer iterations together.
    eps
        Stop at eps-optimality; ``None`` runs the whole budget.
    n_records
        Number of log-spaced steps to record (ignored when ``record_steps`` is given).
    record_steps
        Explicit steps to record instead, each in ``[0, gradient_steps]``.
    progress
        Show a progress bar on stderr; by default only for long runs.
    """
    instance = _check_instance(instance)
    beta = check_positive("beta", beta)
    inner_steps = check_count("inner_steps", inner_steps)
    eta = check_positive("eta", eta)
    gradient_steps = check_count("gradient_steps", gradient_steps)
    eps = _check_eps(eps)
    steps = _as_record_steps(record_steps, gradient_steps, n_records)
    runs = _run_exact(
        [instance],
        np.array([eta]),
        np.array([beta]),
        np.array([-1.0 if eps is None else eps]),
        gradient_steps,
        steps,
        progress,
        inner_steps=np.array([inner_steps]),
    )
    settings = {**_settings(instance, eta, beta, eps, gradient_steps=gradient_steps), "inner_steps": inner_steps}
    return _assemble_run(instance, runs, 0, settings, eps, algorithm=APMD_NAME, inner_steps=inner_steps)


def exact_apmd_many(
    instances: Sequence[CollapseInstance],
    *,
    eta: float | Sequence[float],
    gradient_steps: int,
    beta: float | Sequence[float] = DEFAULT_APMD_BETA,
    inner_steps: int | Sequence[int] = DEFAULT_INNER_STEPS,
    eps: float | None | Sequence[float | None] = None,
    progress: bool | None = None,
) -> ExactRunsSummary:
    """Advance many exact APMD runs in one compiled call, each until eps-optimality or ``gradient_steps`` steps.

    The runs of :func:`exact_apmd_run` without records, with the arguments of
    :func:`~covpo.experiments.collapse.engine.exact_reinforce_many`: ``eta``, ``beta``, ``inner_steps``
    and ``eps`` are scalars (shared) or one value per instance, so a knob sweep passes one
    instance per knob value and an inner-step sweep one period per run (paper section 3.1, appendix C.1).
    """
    instances = _check_instances(instances)
    gradient_steps = check_count("gradient_steps", gradient_steps)
    n_runs = len(instances)
    runs = _run_exact(
        instances,
        np.array([check_positive("eta", value) for value in _per_run("eta", eta, n_runs)]),
        np.array([check_positive("beta", value) for value in _per_run("beta", beta, n_runs)]),
        np.array([-1.0 if e is None else check_nonnegative("eps", e) for e in _per_run("eps", eps, n_runs)]),
        gradient_steps,
        np.zeros(0, dtype=np.int64),
        progress,
        inner_steps=np.array([check_count("inner_steps", k) for k in _per_run("inner_steps", inner_steps, n_runs)]),
    )
    return _summarize(instances, runs)


def mirror_descent_resets_to_eps(instance: CollapseInstance, beta: float, eps: float) -> int:
    """Resets exact mirror descent needs for eps-optimality: the smallest ``T >= 1`` with ``J* - J(pi_T) <= eps``.

    Exact mirror descent unrolls to ``pi_T = pi_0 exp(T r / beta) / Z``, the fixed-reference
    optimum at strength ``beta / T`` (paper section 3.1, appendix B.3), so ``T`` is the first integer with
    ``regularized_optimum_suboptimality(instance, beta / T) <= eps``; it grows like ``beta / gap``.
    APMD's inner loops only approximate each step: with the default constants it takes two
    to three times as many resets on this family.
    """
    instance = _check_instance(instance)
    beta = check_positive("beta", beta)
    eps = check_positive("eps", eps)

    def reached(resets: int) -> bool:
        return regularized_optimum_suboptimality(instance, beta / resets) <= eps

    high = 1
    while not reached(high):
        high *= 2
        if high > MAX_COUNT:
            raise ValueError(
                f"beta = {beta!r} is too strong for eps = {eps!r}: exact mirror descent needs over 2**53 resets"
            )
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reached(middle) else (middle, high)
    return high
