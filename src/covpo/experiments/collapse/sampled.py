"""Stochastic REINFORCE on the collapse instance, exact in distribution on blocks of any size (sampled form of paper section 2.1).

Each step draws a batch of responses from ``pi_theta`` and ascends the (KL-shaped) reward
minus a leave-one-out or batch-mean baseline. Zero-reward members are tracked only once
sampled: with such a baseline the advantages of a batch sum to zero, so members never
sampled keep the base logit. The loop is compiled with numba.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from covpo.algorithms.reinforce import check_baseline
from covpo.trajectory import Trajectory, trajectory_from_arrays
from covpo.validation import check_count, check_nonnegative, check_positive

from .engine import CHUNK_STEPS, _log_spaced_steps, _progress_bar, _settings
from covpo.collapse_instance import (
    CollapseInstance,
    DEFAULT_EPS_FRACTION,
    _check_beta,
    _check_eps,
    _check_instance,
)


@njit(cache=True)
def _sampled_log_weights(theta0, theta1, untouched_weight, touched, n_touched):
    """``(log Z, log of the zero block's weight)`` for the sampled state."""
    zero_top = untouched_weight
    for j in range(n_touched):
        zero_top = max(zero_top, touched[j])
    zero_total = np.exp(untouched_weight - zero_top)
    for j in range(n_touched):
        zero_total += np.exp(touched[j] - zero_top)
    zero_weight = zero_top + np.log(zero_total)
    top = max(theta0, max(theta1, zero_weight))
    total = np.exp(theta0 - top) + np.exp(theta1 - top) + np.exp(zero_weight - top)
    return top + np.log(total), zero_weight


@njit(cache=True)
def _write_sampled_record(
    record, step, theta0, theta1, untouched_weight, n_untouched, touched, n_touched, log_total, rewards, base_log_probs
):
    """``record = (step, J, log coverage, KL to base)`` of the sampled state."""
    log_p0, log_p1 = theta0 - log_total, theta1 - log_total
    p0, p1 = np.exp(log_p0), np.exp(log_p1)
    kl = p0 * (log_p0 - base_log_probs[0]) + p1 * (log_p1 - base_log_probs[1])
    if n_untouched > 0:
        log_member = untouched_weight - np.log(n_untouched) - log_total
        kl += n_untouched * np.exp(log_member) * (log_member - base_log_probs[2])
    for j in range(n_touched):
        log_member = touched[j] - log_total
        kl += np.exp(log_member) * (log_member - base_log_probs[2])
    record[0] = step
    record[1] = p0 * rewards[0] + p1 * rewards[1]
    record[2] = log_p0
    record[3] = max(kl, 0.0)


@njit(cache=True)
def _advance_sampled_run(
    rng,
    logits,
    touched,
    counts,
    record_steps,
    records,
    lowest_record,
    final_record,
    rewards,
    base_log_probs,
    eta,
    beta,
    eps,
    batch_size,
    leave_one_out,
    stop_step,
):
    """Stochastic REINFORCE on the collapse instance, exact in distribution, in place.

    ``logits = (theta_opt, theta_dis, theta_untouched)``; ``touched`` holds the logits of
    zero-block members sampled at least once; ``counts = (step, n_touched, n_untouched,
    reached, next_record)``. Members never sampled keep the base logit: with a leave-one-out
    or batch-mean baseline the advantages of a batch sum to zero, so the score's ``-pi`` term
    cancels and only the sampled responses' logits move. Records are ``(step, J, log coverage,
    KL to base)``: at ``record_steps``, at the lowest coverage so far (``lowest_record``) and
    at the state the call stops in (``final_record``). ``base_log_probs`` are per member.
    """
    r0, r1 = rewards[0], rewards[1]
    n_records = record_steps.shape[0]
    sampled = np.empty(batch_size, dtype=np.int64)
    shaped = np.empty(batch_size)
    touched_probs = np.empty(touched.shape[0])
    theta_untouched = logits[2]
    while True:
        step, n_touched, n_untouched = counts[0], counts[1], counts[2]
        theta0, theta1 = logits[0], logits[1]
        untouched_weight = theta_untouched + np.log(n_untouched) if n_untouched > 0 else -np.inf
        log_total, zero_weight = _sampled_log_weights(theta0, theta1, untouched_weight, touched, n_touched)
        log_p0, log_p1 = theta0 - log_total, theta1 - log_total
        p0, p1 = np.exp(log_p0), np.exp(log_p1)
        if counts[4] < n_records and record_steps[counts[4]] == step:
            _write_sampled_record(
                records[counts[4]], step, theta0, theta1, untouched_weight, n_untouched, touched, n_touched,
                log_total, rewards, base_log_probs,
            )
            counts[4] += 1
        if log_p0 < lowest_record[2]:
            _write_sampled_record(
                lowest_record, step, theta0, theta1, untouched_weight, n_untouched, touched, n_touched,
                log_total, rewards, base_log_probs,
            )
        done = p1 * (r0 - r1) + np.exp(zero_weight - log_total) * r0 <= eps
        if done or step >= stop_step:
            counts[3] = 1 if done else 0
            _write_sampled_record(
                final_record, step, theta0, theta1, untouched_weight, n_untouched, touched, n_touched,
                log_total, rewards, base_log_probs,
            )
            return
        log_member_untouched = theta_untouched - log_total
        p_member_untouched = np.exp(log_member_untouched)
        for j in range(n_touched):
            touched_probs[j] = np.exp(touched[j] - log_total)
        batch_total = 0.0
        for i in range(batch_size):
            draw = rng.random()
            if draw < p0:
                sampled[i] = -2
                shaped[i] = r0 - beta * (log_p0 - base_log_probs[0])
            elif draw < p0 + p1:
                sampled[i] = -1
                shaped[i] = r1 - beta * (log_p1 - base_log_probs[1])
            else:
                remaining = draw - p0 - p1 - n_untouched * p_member_untouched
                if remaining < 0.0 or n_touched == 0:
                    chosen = n_touched
                    touched[chosen] = theta_untouched
                    touched_probs[chosen] = p_member_untouched
                    n_touched += 1
                    n_untouched -= 1
                else:
                    chosen = n_touched - 1
                    for j in range(n_touched):
                        remaining -= touched_probs[j]
                        if remaining < 0.0:
                            chosen = j
                            break
                sampled[i] = chosen
                shaped[i] = -beta * (touched[chosen] - log_total - base_log_probs[2])
            batch_total += shaped[i]
        for i in range(batch_size):
            if leave_one_out:
                advantage = shaped[i] - (batch_total - shaped[i]) / (batch_size - 1)
            else:
                advantage = shaped[i] - batch_total / batch_size
            increment = eta * advantage / batch_size
            if sampled[i] == -2:
                logits[0] += increment
            elif sampled[i] == -1:
                logits[1] += increment
            else:
                touched[sampled[i]] += increment
        counts[0] = step + 1
        counts[1] = n_touched
        counts[2] = n_untouched


def sampled_collapse_run(
    instance: CollapseInstance,
    *,
    eta: float,
    n_iterations: int,
    batch_size: int,
    rng: np.random.Generator,
    beta: float | None = None,
    eps: float | None = None,
    baseline: str = "leave_one_out",
    n_records: int = 100,
    progress: bool | None = None,
) -> Trajectory:
    """Stochastic REINFORCE on the collapse instance, ``batch_size`` responses per step (sampled, after paper section 2.1).

    The reduced engine's ``covpo.run("reinforce", ...)``, spelled the same. Each step draws
    responses from ``pi_theta`` and ascends
    ``mean_i A_i grad log pi(y_i)`` with ``A_i`` the (KL-shaped, when ``beta`` is given) reward
    minus a leave-one-out or batch-mean baseline. Zero-reward members are tracked only once
    sampled, which makes the run exact in distribution on blocks of any size. Reward,
    coverage and KL are the population values of each iterate.

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`.
    eta
        Learning rate, ``> 0``.
    n_iterations
        Budget of gradient steps.
    batch_size
        Responses per step.
    rng
        The generator all responses are drawn from.
    beta
        KL strength toward the base model (reward shaping ``r - beta log(pi/pi_0)``), or ``None``.
    eps
        Stop at the first iterate with ``J* - J <= eps``; ``None`` runs the whole budget.
    baseline
        ``"leave_one_out"`` or ``"batch_mean"``.
    n_records
        Number of log-spaced steps to record; the lowest-coverage step and the last step are
        recorded too, so ``min_log10_coverage`` of the result covers every step.
    progress
        Show a progress bar; by default only for long runs.
    """
    instance = _check_instance(instance)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    batch_size = check_count("batch_size", batch_size)
    beta = _check_beta(beta)
    eps = _check_eps(eps)
    leave_one_out = check_baseline(baseline, batch_size) == "leave_one_out"
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    record_steps = _log_spaced_steps(n_iterations, check_count("n_records", n_records))
    logits = instance.base_logits.copy()
    touched = np.empty(instance.n_zero)
    counts = np.array([0, 0, instance.n_zero, 0, 0], dtype=np.int64)
    records = np.full((record_steps.size, 4), np.nan)
    lowest_record = np.array([0.0, np.nan, np.inf, np.nan])
    final_record = np.full(4, np.nan)
    chunk = max(CHUNK_STEPS // batch_size, 1)
    with _progress_bar(n_iterations * batch_size, progress, "sampled REINFORCE") as bar:
        while True:
            before = int(counts[0])
            _advance_sampled_run(
                rng,
                logits,
                touched,
                counts,
                record_steps,
                records,
                lowest_record,
                final_record,
                instance.rewards,
                instance.base_logits,
                eta,
                0.0 if beta is None else beta,
                -1.0 if eps is None else eps,
                batch_size,
                leave_one_out,
                min(before + chunk, n_iterations),
            )
            bar.update((int(counts[0]) - before) * batch_size)
            if counts[3] or counts[0] >= n_iterations:
                break
    rows = {int(row[0]): row for row in records[: counts[4]]}
    rows.setdefault(int(lowest_record[0]), lowest_record)
    rows[int(final_record[0])] = final_record
    kept = np.array([rows[step] for step in sorted(rows)])
    steps = kept[:, 0].astype(np.int64)
    settings = {
        **_settings(instance, eta, beta, eps, n_iterations=n_iterations), "batch_size": batch_size, "baseline": baseline,
    }
    return trajectory_from_arrays(
        "sampled REINFORCE",
        instance.optimal_value,
        gradient_steps=steps,
        reward=kept[:, 1],
        log_coverage=kept[:, 2],
        kl_to_base=kept[:, 3],
        responses_sampled=steps * batch_size,
        settings=settings,
    )


@dataclass(frozen=True)
class SeedSweep:
    """Stochastic REINFORCE on one instance over several seeds.

    Attributes
    ----------
    trajectories
        One trajectory per seed.
    min_log10_coverage
        Lowest base-10 log coverage over every step, per seed.
    reached_eps
        Whether each seed reached eps-optimality within the budget.
    steps_to_eps, responses_to_eps
        Per seed; the budget where eps was not reached.
    """

    trajectories: tuple[Trajectory, ...]
    min_log10_coverage: np.ndarray
    reached_eps: np.ndarray
    steps_to_eps: np.ndarray
    responses_to_eps: np.ndarray


def sampled_reinforce_over_seeds(
    instance: CollapseInstance,
    *,
    eta: float,
    n_iterations: int,
    batch_size: int,
    n_seeds: int,
    seed: int | np.random.SeedSequence = 0,
    beta: float | None = None,
    eps: float | None = None,
    baseline: str = "leave_one_out",
    n_records: int = 100,
    progress: bool | None = None,
) -> SeedSweep:
    """:func:`sampled_collapse_run` once per seed, each with its own generator spawned from ``seed``.

    Stochastic REINFORCE on our collapse instance (paper section 2.1); ``eps``
    defaults to half the gap. Each run stops at eps-optimality or after ``n_iterations`` steps.
    """
    instance = _check_instance(instance)
    n_seeds = check_count("n_seeds", n_seeds)
    eps = DEFAULT_EPS_FRACTION * instance.gap if eps is None else check_nonnegative("eps", eps)
    if isinstance(seed, np.random.SeedSequence):
        sequence = seed
    else:
        sequence = np.random.SeedSequence(check_count("seed", seed, minimum=0))
    trajectories = tuple(
        sampled_collapse_run(
            instance,
            eta=eta,
            n_iterations=n_iterations,
            batch_size=batch_size,
            rng=np.random.default_rng(child),
            beta=beta,
            eps=eps,
            baseline=baseline,
            n_records=n_records,
            progress=progress,
        )
        for child in sequence.spawn(n_seeds)
    )
    return SeedSweep(
        trajectories=trajectories,
        min_log10_coverage=np.array([t.min_log10_coverage for t in trajectories]),
        reached_eps=np.array([t.suboptimality[-1] <= eps for t in trajectories]),
        steps_to_eps=np.array([t.total_gradient_steps for t in trajectories], dtype=np.int64),
        responses_to_eps=np.array([t.total_responses for t in trajectories], dtype=np.int64),
    )
