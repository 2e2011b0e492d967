"""The compiled engine: exact gradient ascent on the reduced collapse state (paper section 2.1, appendix C).

Each member of a class receives the per-member gradient ``pi(y) (r(y) - V)`` (paper appendix B.2,
tabular case), plus the KL term when the ascent is regularized, so three logits carry the
whole state exactly. The hot loop is compiled with numba, advances many runs in parallel and
works in log space, so coverage far below ``1e-300`` keeps an exact logarithm. Every run
keeps the lowest coverage it ever visits and stops at the first eps-optimal step, so the
recorded minimum and steps to eps are exact however sparse the records. The same loop keeps
the smallest per-step change of the reward and of the objective it ascends over *every* step
(:class:`StepIncrements`), so a claim that the reward rises at every step is checked at every
step, not only at the recorded ones.

The KL term pulls toward a reference given by its class log masses. REINFORCE keeps the
base model as the reference; the same loop resets it to the current policy every
``inner_steps`` steps for APMD (:mod:`covpo.experiments.collapse.resets`), so both methods share one
engine and one cost accounting.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit, prange
from tqdm.std import tqdm

from covpo.static_pages import standins_requested
from covpo.trajectory import LOG10_E, Trajectory, trajectory_from_arrays
from covpo.validation import check_count, check_flag, check_index_array, check_instances, check_nonnegative, check_positive

from covpo.collapse_instance import (
    CollapseInstance,
    _check_beta,
    _check_eps,
    _check_instance,
    _state_summary,
    class_log_probs,
    plane_coordinates,
)

DEFAULT_ETA = 4.0
DEFAULT_MAX_STEPS = 30_000_000
DEFAULT_N_RECORDS = 200

CHUNK_STEPS = 1_000_000
PROGRESS_MIN_STEPS = 50_000_000
PROGRESS_DELAY_SECONDS = 1.0


@njit(cache=True, parallel=True)
def _advance_exact_runs(
    logits,
    steps,
    stop_steps,
    reached,
    lowest_log_coverage,
    lowest_steps,
    lowest_logits,
    record_steps,
    record_logits,
    reference_log_probs,
    log_multiplicities,
    rewards,
    etas,
    betas,
    inner_steps,
    eps,
    low_increments,
    increment_counts,
):
    """Advance every run from ``steps`` to ``stop_steps`` (or to eps-optimality), in place.

    At each visited state: keep it if its step is in ``record_steps``, track the lowest log
    coverage, stop if ``J* - J <= eps`` (``eps < 0`` never stops); at a positive step that is a
    multiple of ``inner_steps`` (``0``: never) reset the reference ``reference_log_probs`` (class
    log masses, the base model's at step 0) to the current policy; then take the step
    ``theta_c += eta * pi_member_c * (r_c - V - beta (log(pi/pi_ref)_c - KL))``.

    Between consecutive visited states it also updates, in place, the per-step changes of
    :class:`StepIncrements`: ``low_increments[run]`` holds the smallest reward change over all
    steps, over the steps up to the lowest coverage so far, over the steps since then (pending),
    and the smallest change of ``J_beta(pi; pi_ref)`` over steps that keep one reference;
    ``increment_counts[run]`` the steps whose reward fell (all, up to the lowest coverage,
    pending), the steps whose objective fell, the step of the smallest reward change, the
    sign of the last change of the log coverage, and the turns of that sign (up to the lowest
    coverage, pending). The first state of a call is either the base model or the last state of
    the previous call, so it contributes no change.
    """
    n_records = record_steps.shape[0]
    for run in prange(logits.shape[0]):
        step = steps[run]
        stop = stop_steps[run]
        if reached[run] or step > stop:
            continue
        theta0, theta1, theta2 = logits[run, 0], logits[run, 1], logits[run, 2]
        lm0, lm1, lm2 = log_multiplicities[run, 0], log_multiplicities[run, 1], log_multiplicities[run, 2]
        inv0, inv1, inv2 = np.exp(-lm0), np.exp(-lm1), np.exp(-lm2)
        r0, r1, r2 = rewards[run, 0], rewards[run, 1], rewards[run, 2]
        b0, b1, b2 = reference_log_probs[run, 0], reference_log_probs[run, 1], reference_log_probs[run, 2]
        eta, beta, tolerance = etas[run], betas[run], eps[run]
        period = inner_steps[run]
        until_reset = 0
        if period > 0:
            until_reset = period if step == 0 else (period - step % period) % period
        lowest = lowest_log_coverage[run]
        lowest_step = lowest_steps[run]
        low0, low1, low2 = lowest_logits[run, 0], lowest_logits[run, 1], lowest_logits[run, 2]
        next_record = np.searchsorted(record_steps, step)
        min_rise, min_rise_to_lowest, pending_rise, min_objective_rise = (
            low_increments[run, 0], low_increments[run, 1], low_increments[run, 2], low_increments[run, 3]
        )
        falls, falls_to_lowest, pending_falls = increment_counts[run, 0], increment_counts[run, 1], increment_counts[run, 2]
        objective_falls, min_rise_step = increment_counts[run, 3], increment_counts[run, 4]
        direction, turns_to_lowest, pending_turns = increment_counts[run, 5], increment_counts[run, 6], increment_counts[run, 7]
        have_previous = False
        previous_value, previous_objective, previous_log_coverage = 0.0, 0.0, 0.0
        d0, d1, d2, kl = 0.0, 0.0, 0.0, 0.0
        while True:
            w0, w1, w2 = theta0 + lm0, theta1 + lm1, theta2 + lm2
            top = max(w0, max(w1, w2))
            e0, e1, e2 = np.exp(w0 - top), np.exp(w1 - top), np.exp(w2 - top)
            total = e0 + e1 + e2
            log_total = top + np.log(total)
            p0, p1, p2 = e0 / total, e1 / total, e2 / total
            log_coverage = w0 - log_total
            value = p0 * r0 + p1 * r1 + p2 * r2
            objective = value
            if beta > 0.0:
                d0 = log_coverage - b0
                d1 = w1 - log_total - b1
                d2 = w2 - log_total - b2
                kl = p0 * d0 + p1 * d1 + p2 * d2
                objective = value - beta * kl
            if have_previous:
                rise = value - previous_value
                if rise < min_rise:
                    min_rise, min_rise_step = rise, step
                pending_rise = min(pending_rise, rise)
                if rise < 0.0:
                    falls += 1
                    pending_falls += 1
                objective_rise = objective - previous_objective
                min_objective_rise = min(min_objective_rise, objective_rise)
                if objective_rise < 0.0:
                    objective_falls += 1
                coverage_change = log_coverage - previous_log_coverage
                sign = 1 if coverage_change > 0.0 else (-1 if coverage_change < 0.0 else 0)
                if sign != 0:
                    if direction != 0 and sign != direction:
                        pending_turns += 1
                    direction = sign
            have_previous = True
            previous_value, previous_objective, previous_log_coverage = value, objective, log_coverage
            if next_record < n_records and record_steps[next_record] == step:
                record_logits[run, next_record, 0] = theta0
                record_logits[run, next_record, 1] = theta1
                record_logits[run, next_record, 2] = theta2
                next_record += 1
            if log_coverage < lowest:
                lowest, lowest_step = log_coverage, step
                low0, low1, low2 = theta0, theta1, theta2
                min_rise_to_lowest = min(min_rise_to_lowest, pending_rise)
                falls_to_lowest += pending_falls
                turns_to_lowest += pending_turns
                pending_rise, pending_falls, pending_turns = np.inf, 0, 0
            if p1 * (r0 - r1) + p2 * (r0 - r2) <= tolerance:
                reached[run] = True
                break
            if step >= stop:
                break
            if period > 0:
                if until_reset == 0:
                    b0, b1, b2 = log_coverage, w1 - log_total, w2 - log_total
                    d0, d1, d2, kl = 0.0, 0.0, 0.0, 0.0
                    previous_objective = value
                    until_reset = period
                until_reset -= 1
            g0, g1, g2 = p0 * (r0 - value), p1 * (r1 - value), p2 * (r2 - value)
            if beta > 0.0:
                g0 -= beta * p0 * (d0 - kl)
                g1 -= beta * p1 * (d1 - kl)
                g2 -= beta * p2 * (d2 - kl)
            theta0 += eta * g0 * inv0
            theta1 += eta * g1 * inv1
            theta2 += eta * g2 * inv2
            step += 1
        logits[run, 0], logits[run, 1], logits[run, 2] = theta0, theta1, theta2
        steps[run] = step
        lowest_log_coverage[run] = lowest
        lowest_steps[run] = lowest_step
        lowest_logits[run, 0], lowest_logits[run, 1], lowest_logits[run, 2] = low0, low1, low2
        reference_log_probs[run, 0], reference_log_probs[run, 1], reference_log_probs[run, 2] = b0, b1, b2
        low_increments[run, 0], low_increments[run, 1] = min_rise, min_rise_to_lowest
        low_increments[run, 2], low_increments[run, 3] = pending_rise, min_objective_rise
        increment_counts[run, 0], increment_counts[run, 1], increment_counts[run, 2] = falls, falls_to_lowest, pending_falls
        increment_counts[run, 3], increment_counts[run, 4] = objective_falls, min_rise_step
        increment_counts[run, 5], increment_counts[run, 6], increment_counts[run, 7] = direction, turns_to_lowest, pending_turns


@dataclass(frozen=True)
class StepIncrements:
    """Per-step changes over *every* step of exact runs, kept by the compiled loop (paper section 2.1).

    A claim that the reward rises "at every step" is about all the steps of a run, of which
    the records keep a few hundred; these are exact over all of them. Each field is an array
    with one entry per run (a scalar for a single run). Where a run took no step in the span a
    field covers (a run that starts eps-optimal, or whose coverage is lowest at the base model),
    its smallest change is reported as ``0.0`` and its count as ``0``: no rise is claimed there.

    Attributes
    ----------
    min_reward_increment
        Smallest change ``J(pi_{s+1}) - J(pi_s)`` over every step the run took.
    min_reward_increment_step
        The step ``s + 1`` at which it occurred.
    reward_falls
        How many steps lowered the reward.
    min_reward_increment_to_lowest, reward_falls_to_lowest
        The same over the steps up to the step of lowest coverage (the collapse phase).
    min_objective_increment, objective_falls
        The same for the objective the run ascends, ``J_beta(pi; pi_ref)`` with the reference in
        force during the step (``J`` itself without a penalty); a step across a reference reset
        changes the objective and is left out.
    coverage_turns_to_lowest
        How often the log coverage changed direction (rise to fall or back) over the steps up to
        the lowest coverage: ``1`` means it rose, then fell at every step down to its lowest.
    """

    min_reward_increment: np.ndarray | float
    min_reward_increment_step: np.ndarray | int
    reward_falls: np.ndarray | int
    min_reward_increment_to_lowest: np.ndarray | float
    reward_falls_to_lowest: np.ndarray | int
    min_objective_increment: np.ndarray | float
    objective_falls: np.ndarray | int
    coverage_turns_to_lowest: np.ndarray | int

    def run(self, index: int) -> StepIncrements:
        """The increments of one run of the batch, as scalars."""
        index = int(index)
        return StepIncrements(
            float(self.min_reward_increment[index]),
            int(self.min_reward_increment_step[index]),
            int(self.reward_falls[index]),
            float(self.min_reward_increment_to_lowest[index]),
            int(self.reward_falls_to_lowest[index]),
            float(self.min_objective_increment[index]),
            int(self.objective_falls[index]),
            int(self.coverage_turns_to_lowest[index]),
        )


def _increments(low_increments: np.ndarray, increment_counts: np.ndarray) -> StepIncrements:
    """The engine's running arrays as :class:`StepIncrements` (internal); an empty span's ``inf`` becomes ``0.0``."""
    lows = np.where(np.isinf(low_increments), 0.0, low_increments)
    return StepIncrements(
        min_reward_increment=lows[:, 0],
        min_reward_increment_step=increment_counts[:, 4].copy(),
        reward_falls=increment_counts[:, 0].copy(),
        min_reward_increment_to_lowest=lows[:, 1],
        reward_falls_to_lowest=increment_counts[:, 1].copy(),
        min_objective_increment=lows[:, 3],
        objective_falls=increment_counts[:, 3].copy(),
        coverage_turns_to_lowest=increment_counts[:, 6].copy(),
    )


@dataclass(frozen=True)
class _ExactRuns:
    """Raw output of the engine for a batch of runs (internal)."""

    final_logits: np.ndarray
    final_steps: np.ndarray
    reached: np.ndarray
    lowest_log_coverage: np.ndarray
    lowest_steps: np.ndarray
    lowest_logits: np.ndarray
    record_steps: np.ndarray
    record_logits: np.ndarray
    increments: StepIncrements


def _progress_bar(total: int, progress: bool | None, description: str) -> tqdm:
    """A stderr bar; automatic mode shows it only for large budgets that also take over a second.

    No mode shows it in a kernel that executes a chapter for the static pages
    (:func:`~covpo.static_pages.standins_requested`).
    """
    show = (total >= PROGRESS_MIN_STEPS if progress is None else check_flag("progress", progress)) and not standins_requested()
    delay = PROGRESS_DELAY_SECONDS if progress is None else 0.0
    return tqdm(
        total=total, file=sys.stderr, disable=not show, delay=delay, unit="step", unit_scale=True, desc=description
    )


def _run_exact(
    instances: Sequence[CollapseInstance],
    etas: np.ndarray,
    betas: np.ndarray,
    eps: np.ndarray,
    max_steps: int,
    record_steps: np.ndarray,
    progress: bool | None,
    inner_steps: np.ndarray | None = None,
) -> _ExactRuns:
    """Drive the compiled engine in chunks (a progress bar updates between chunks).

    ``inner_steps`` holds each run's reference-reset period (``0``, the default for every run:
    the reference stays at the base model).
    """
    n_runs = len(instances)
    logits = np.array([instance.base_logits for instance in instances], dtype=float)
    periods = np.zeros(n_runs, dtype=np.int64) if inner_steps is None else np.ascontiguousarray(inner_steps, np.int64)
    parameters = {
        "log_multiplicities": np.array([instance.log_multiplicities for instance in instances]),
        "rewards": np.array([instance.rewards for instance in instances]),
        "etas": np.ascontiguousarray(etas, dtype=float),
        "betas": np.ascontiguousarray(betas, dtype=float),
        "inner_steps": periods,
        "eps": np.ascontiguousarray(eps, dtype=float),
    }
    reference_log_probs = np.array([instance.base_class_log_probs for instance in instances])
    steps = np.zeros(n_runs, dtype=np.int64)
    reached = np.zeros(n_runs, dtype=bool)
    lowest_log_coverage = np.full(n_runs, np.inf)
    lowest_steps = np.zeros(n_runs, dtype=np.int64)
    lowest_logits = logits.copy()
    record_steps = np.ascontiguousarray(record_steps, dtype=np.int64)
    record_logits = np.full((n_runs, record_steps.size, 3), np.nan)
    low_increments = np.full((n_runs, 4), np.inf)
    increment_counts = np.zeros((n_runs, 8), dtype=np.int64)
    description = "exact APMD" if np.any(periods > 0) else "exact REINFORCE"
    with _progress_bar(n_runs * max_steps, progress, description) as bar:
        while True:
            before, reached_before = steps.copy(), reached.copy()
            stop_steps = np.minimum(steps + CHUNK_STEPS, max_steps)
            _advance_exact_runs(
                logits,
                steps,
                stop_steps,
                reached,
                lowest_log_coverage,
                lowest_steps,
                lowest_logits,
                record_steps,
                record_logits,
                reference_log_probs,
                **parameters,
                low_increments=low_increments,
                increment_counts=increment_counts,
            )
            skipped = np.where(reached & ~reached_before, max_steps - steps, 0)
            bar.update(int((steps - before).sum() + skipped.sum()))
            if not np.any(~reached & (steps < max_steps)):
                break
    return _ExactRuns(
        logits,
        steps,
        reached,
        lowest_log_coverage,
        lowest_steps,
        lowest_logits,
        record_steps,
        record_logits,
        _increments(low_increments, increment_counts),
    )


def _log_spaced_steps(max_steps: int, n_records: int) -> np.ndarray:
    """Step 0 and ``n_records`` log-spaced steps up to ``max_steps``."""
    spaced = np.round(np.geomspace(1, max_steps, n_records)).astype(np.int64)
    return np.unique(np.concatenate([[0], spaced, [max_steps]]))


def _as_record_steps(record_steps: Sequence[int] | None, max_steps: int, n_records: int) -> np.ndarray:
    if record_steps is None:
        return _log_spaced_steps(max_steps, check_count("n_records", n_records))
    steps = np.unique(check_index_array("record_steps", record_steps, max_steps + 1))
    if steps.ndim != 1 or steps.size == 0:
        raise ValueError(
            f"record_steps must be a non-empty list of steps in [0, {max_steps}] (the budget), got {record_steps!r}"
        )
    return steps


# ---------------------------------------------------------------------------------------------
# Single runs


@dataclass(frozen=True)
class CollapseRun:
    """One exact-gradient run (REINFORCE or APMD) on a :class:`~covpo.collapse_instance.CollapseInstance`.

    It keeps the exact reduced state of every record next to the shared trajectory record.

    Attributes
    ----------
    instance
        The instance the run started from (at its base model).
    trajectory
        The shared cost-and-quality record (:class:`~covpo.trajectory.Trajectory`). Its records are the log-spaced
        steps, the step of lowest coverage over *all* steps, and the last step, which is the
        first eps-optimal step when the run reached eps-optimality.
    logits
        Per-member logits ``(theta_opt, theta_dis, theta_zero)`` at every record, ``(n_records, 3)``.
    eps
        The eps the run was to stop at, or ``None`` when it was to run its whole budget.
    reached_eps
        Whether the run reached ``J* - J <= eps``.
    increments
        The per-step changes of reward and objective over every step of the run
        (:class:`StepIncrements`, scalars).
    """

    instance: CollapseInstance
    trajectory: Trajectory
    logits: np.ndarray
    eps: float | None
    reached_eps: bool
    increments: StepIncrements | None = None

    @property
    def steps_to_eps(self) -> int | None:
        """Gradient steps to the first eps-optimal iterate, ``None`` if not reached."""
        return self.trajectory.total_gradient_steps if self.reached_eps else None

    @property
    def class_log_probs(self) -> np.ndarray:
        """Log mass on (optimal, distractor, zero block) at every record, ``(n_records, 3)``."""
        return class_log_probs(self.instance, self.logits)

    @property
    def plane(self) -> np.ndarray:
        """Exact ``(u, v)`` coordinates of every record relative to the base model, ``(n_records, 2)``."""
        return plane_coordinates(self.instance, self.logits)

    @property
    def final_logits(self) -> np.ndarray:
        """Per-member logits at the last step."""
        return self.logits[-1]


def _assemble_run(
    instance: CollapseInstance,
    runs: _ExactRuns,
    index: int,
    settings: dict,
    eps: float | None,
    algorithm: str = "exact REINFORCE",
    inner_steps: int = 0,
) -> CollapseRun:
    """Merge the log-spaced records, the lowest-coverage state and the final state of one run.

    With a reset period ``inner_steps > 0`` the record at step ``s`` has counted
    ``ceil(s / inner_steps)`` reference resets, the convention of :func:`covpo.algorithms.mirror_descent.apmd`.
    """
    final_step = int(runs.final_steps[index])
    kept = runs.record_steps <= final_step
    by_step = dict(zip(runs.record_steps[kept].tolist(), runs.record_logits[index, kept]))
    by_step[int(runs.lowest_steps[index])] = runs.lowest_logits[index]
    by_step[final_step] = runs.final_logits[index]
    steps = np.array(sorted(by_step), dtype=np.int64)
    logits = np.array([by_step[step] for step in steps])
    summary = _state_summary(instance, logits)
    trajectory = trajectory_from_arrays(
        algorithm,
        instance.optimal_value,
        gradient_steps=steps,
        reward=summary["reward"],
        log_coverage=summary["log_coverage"],
        kl_to_base=summary["kl_to_base"],
        reference_resets=-(-steps // inner_steps) if inner_steps > 0 else None,
        settings=settings,
    )
    return CollapseRun(instance, trajectory, logits, eps, bool(runs.reached[index]), runs.increments.run(index))


def _settings(instance: CollapseInstance, eta: float, beta: float | None, eps: float | None, **budget: int) -> dict:
    return {
        "gap": instance.gap,
        "beta": beta,
        "eta": eta,
        "eps": eps,
        **budget,
        "optimal_prob": instance.optimal_prob,
        "distractor_prob": instance.distractor_prob,
        "n_zero": instance.n_zero,
    }


def exact_collapse_run(
    instance: CollapseInstance,
    *,
    eta: float = DEFAULT_ETA,
    n_iterations: int = DEFAULT_MAX_STEPS,
    beta: float | None = None,
    eps: float | None = None,
    n_records: int = DEFAULT_N_RECORDS,
    record_steps: Sequence[int] | None = None,
    progress: bool | None = None,
) -> CollapseRun:
    """Exact REINFORCE on the reduced state, from the base model (paper section 2.1).

    Gradient ascent ``theta <- theta + eta grad J_beta(pi_theta; pi_0)`` on the per-member
    logits, ``beta = None`` meaning plain ``J``. Stops at the first step with
    ``J* - J <= eps`` when ``eps`` is given, else after ``n_iterations`` steps. The arguments are
    spelled as for ``covpo.run("reinforce_exact", ...)``, whose iterations are its steps.

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`.
    eta
        Learning rate, ``> 0``.
    n_iterations
        Budget of gradient steps.
    beta
        Strength of the KL penalty toward the fixed base model, ``> 0``, or ``None``.
    eps
        Stop at eps-optimality; ``None`` runs the whole budget.
    n_records
        Number of log-spaced steps to record (ignored when ``record_steps`` is given).
    record_steps
        Explicit steps to record instead, each in ``[0, n_iterations]``.
    progress
        Show a progress bar on stderr; by default only for long runs.
    """
    instance = _check_instance(instance)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    beta = _check_beta(beta)
    eps = _check_eps(eps)
    steps = _as_record_steps(record_steps, n_iterations, n_records)
    runs = _run_exact(
        [instance],
        np.array([eta]),
        np.array([0.0 if beta is None else beta]),
        np.array([-1.0 if eps is None else eps]),
        n_iterations,
        steps,
        progress,
    )
    return _assemble_run(instance, runs, 0, _settings(instance, eta, beta, eps, n_iterations=n_iterations), eps)


def run_exact_reinforce(
    instance: CollapseInstance,
    *,
    eta: float = DEFAULT_ETA,
    n_iterations: int = DEFAULT_MAX_STEPS,
    beta: float | None = None,
    eps: float | None = None,
    n_records: int = DEFAULT_N_RECORDS,
    progress: bool | None = None,
) -> Trajectory:
    """The :class:`~covpo.trajectory.Trajectory` of :func:`exact_collapse_run` (paper section 2.1).

    Its ``min_log10_coverage`` is the minimum over every step, and ``steps_to_eps(eps)`` is
    exact, because the lowest-coverage step and the first eps-optimal step are recorded.
    """
    return exact_collapse_run(
        instance, eta=eta, n_iterations=n_iterations, beta=beta, eps=eps, n_records=n_records, progress=progress
    ).trajectory


@dataclass(frozen=True)
class ExactRunsSummary:
    """Per-run outcomes of :func:`exact_reinforce_many` (or of APMD runs advanced together), one entry per run.

    Attributes
    ----------
    reached_eps
        Whether the run reached eps-optimality within the budget.
    steps
        Gradient steps taken: the steps to eps where reached, else the budget (a lower bound).
    min_log10_coverage
        Lowest base-10 log coverage over every step of the run.
    min_coverage_step
        The step at which it occurred.
    final_reward, final_log10_coverage
        Reward and base-10 log coverage at the last step.
    final_logits
        Per-member logits at the last step, ``(n_runs, 3)``.
    increments
        The per-step changes over every step of each run (:class:`StepIncrements`, arrays).
    """

    reached_eps: np.ndarray
    steps: np.ndarray
    min_log10_coverage: np.ndarray
    min_coverage_step: np.ndarray
    final_reward: np.ndarray
    final_log10_coverage: np.ndarray
    final_logits: np.ndarray
    increments: StepIncrements | None = None


def exact_reinforce_many(
    instances: Sequence[CollapseInstance],
    *,
    eta: float | Sequence[float],
    n_iterations: int,
    beta: float | None | Sequence[float | None] = None,
    eps: float | None | Sequence[float | None] = None,
    progress: bool | None = None,
) -> ExactRunsSummary:
    """Advance many exact runs in one compiled call, each until eps-optimality or ``n_iterations`` steps.

    ``eta``, ``beta`` and ``eps`` are scalars (shared) or one value per instance; a knob sweep
    passes one instance per knob value, a beta sweep one beta per run.
    """
    instances = _check_instances(instances)
    n_iterations = check_count("n_iterations", n_iterations)
    n_runs = len(instances)
    runs = _run_exact(
        instances,
        np.array([check_positive("eta", value) for value in _per_run("eta", eta, n_runs)]),
        np.array([0.0 if value is None else check_positive("beta", value) for value in _per_run("beta", beta, n_runs)]),
        np.array([-1.0 if e is None else check_nonnegative("eps", e) for e in _per_run("eps", eps, n_runs)]),
        n_iterations,
        np.zeros(0, dtype=np.int64),
        progress,
    )
    return _summarize(instances, runs)


def _check_instances(instances: Sequence[CollapseInstance]) -> list[CollapseInstance]:
    return list(check_instances("instances", instances, CollapseInstance))


def _per_run(name: str, values: object, n_runs: int) -> list:
    """``values`` as one entry per run: a scalar is shared, a sequence must have ``n_runs`` entries."""
    listed = list(values) if isinstance(values, Sequence | np.ndarray) else [values] * n_runs
    if len(listed) != n_runs:
        raise ValueError(f"{name} must be a scalar or have one value per instance ({n_runs}), got {len(listed)}")
    return listed


def _summarize(instances: Sequence[CollapseInstance], runs: _ExactRuns) -> ExactRunsSummary:
    """The per-run outcomes of a batch the engine advanced without records."""
    final = [_state_summary(instance, runs.final_logits[i]) for i, instance in enumerate(instances)]
    return ExactRunsSummary(
        reached_eps=runs.reached.copy(),
        steps=runs.final_steps.copy(),
        min_log10_coverage=runs.lowest_log_coverage * LOG10_E,
        min_coverage_step=runs.lowest_steps.copy(),
        final_reward=np.array([float(summary["reward"]) for summary in final]),
        final_log10_coverage=np.array([float(summary["log_coverage"]) for summary in final]) * LOG10_E,
        final_logits=runs.final_logits.copy(),
        increments=runs.increments,
    )


