"""The lab's token-level PPO: a PPO-NoClip-style reset method on token sequences (after paper section 3.2).

Each outer iteration resets the reference to ``pi_t``, draws groups of sequences once
(:func:`draw_sequence_batch`) and takes ``K`` gradient steps on a surrogate with
sequence-level or per-token importance ratios, optionally clipped per token
(:func:`surrogate_parts`); :func:`sampled_sequence_ppo` runs it and returns the shared
:class:`~covpo.trajectory.Trajectory` with a :class:`SequenceRatioRecord` of how far the
ratios travel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo.policies import leave_one_out_baseline
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import (
    check_count,
    check_flag,
    check_generator,
    check_index_array,
    check_instance,
    check_positive,
    check_probability,
    check_shape,
)

from .instance import SequenceInstance, _check_instance
from .policy import (
    _check_theta,
    _scatter,
    _score_sum,
    base_sequence_log_policy,
    expected_kl,
    expected_reward,
    log_coverage,
    next_token_log_probs,
    sample_sequences,
    sequence_log_policy,
)

RATIO_FLAVOURS = ("sequence", "token")


# ---------------------------------------------------------------------------------------
# A PPO-NoClip-style reset method with sequence-level or per-token ratios (after paper section 3.2)


@dataclass(frozen=True, eq=False)
class SequenceBatch:
    """Groups of sequences drawn once per outer iteration from ``pi_t`` and reused by every inner step.

    Attributes
    ----------
    prompts, sequences
        Indices, shape ``(batch_size, group_size)``.
    advantages
        Sequence reward minus the leave-one-out mean of its group, same shape.
    log_sampling_tokens
        ``log pi_t(y_t | x, y_<t)`` of every token, shape ``(batch_size, group_size, L)``.
    """

    prompts: np.ndarray
    sequences: np.ndarray
    advantages: np.ndarray
    log_sampling_tokens: np.ndarray

    @property
    def size(self) -> int:
        """Number of sequences in the batch."""
        return int(self.sequences.size)


def batch_token_log_probs(
    instance: SequenceInstance, theta: np.ndarray, prompts: np.ndarray, sequences: np.ndarray
) -> np.ndarray:
    """``log pi_theta(y_t | x, y_<t)`` of the sampled sequences only, shape ``sequences.shape + (L,)``."""
    theta = _check_theta(instance, theta)
    prompts = check_index_array("prompts", prompts, instance.n_prompts)
    sequences = check_shape("sequences", check_index_array("sequences", sequences, instance.n_sequences), prompts.shape)
    return _gather_batch(instance, next_token_log_probs(instance, theta), prompts, sequences)


def _gather_batch(
    instance: SequenceInstance, next_token: np.ndarray, prompts: np.ndarray, sequences: np.ndarray
) -> np.ndarray:
    return next_token[np.asarray(prompts)[..., None], instance.prefix_index[sequences], instance.tokens[sequences]]


def draw_sequence_batch(
    instance: SequenceInstance, theta: np.ndarray, batch_size: int, group_size: int, rng: np.random.Generator
) -> SequenceBatch:
    """Draw ``batch_size`` prompts with ``group_size >= 2`` sequences each from ``pi_theta``.

    The advantage of each sequence is its reward minus the mean reward of the other
    sequences of its group (leave-one-out, so the reward term stays unbiased).
    """
    theta = _check_theta(instance, theta)
    rng = check_generator("rng", rng)
    group_size = check_count("group_size", group_size, minimum=2)
    prompts, sequences = sample_sequences(instance, sequence_log_policy(instance, theta), rng, batch_size, group_size)
    rewards = instance.rewards[prompts, sequences]
    return SequenceBatch(
        prompts=prompts,
        sequences=sequences,
        advantages=rewards - leave_one_out_baseline(rewards),
        log_sampling_tokens=batch_token_log_probs(instance, theta, prompts, sequences),
    )


def _check_batch(instance: SequenceInstance, batch: object) -> SequenceBatch:
    """``batch`` if it is a :class:`SequenceBatch` of ``instance``'s prompts and sequences, else raise."""
    batch = check_instance("batch", batch, SequenceBatch)
    prompts, sequences = np.asarray(batch.prompts), np.asarray(batch.sequences)
    if (
        prompts.shape != sequences.shape
        or batch.log_sampling_tokens.shape != (*sequences.shape, instance.length)
        or prompts.min(initial=0) < 0 or prompts.max(initial=0) >= instance.n_prompts
        or sequences.min(initial=0) < 0 or sequences.max(initial=0) >= instance.n_sequences
    ):
        raise ValueError("batch must be drawn from instance (draw_sequence_batch), got a batch of other shapes or indices")
    return batch


def _check_ratio(ratio: str) -> str:
    if ratio not in RATIO_FLAVOURS:
        raise ValueError(f"ratio must be one of {RATIO_FLAVOURS}, got {ratio!r}")
    return ratio


def _check_clip(clip_epsilon: float | None) -> float | None:
    return None if clip_epsilon is None else check_probability("clip_epsilon", clip_epsilon)


@dataclass(frozen=True, eq=False)
class SurrogateParts:
    """The surrogate objective on a batch at ``theta``, its gradient, and the ratios it used.

    Attributes
    ----------
    objective, gradient
        The value and the gradient (shape of ``theta``) of :func:`ppo_surrogate`.
    log_token_ratio
        ``log rho_t = log pi_theta(y_t|x, y_<t) - log pi_t(y_t|x, y_<t)``, shape ``(B, G, L)``.
    clip_fraction
        Fraction of the importance weights (sequences or tokens) whose gradient the clip removes.
    """

    objective: float
    gradient: np.ndarray
    log_token_ratio: np.ndarray
    clip_fraction: float


def surrogate_parts(
    instance: SequenceInstance,
    theta: np.ndarray,
    batch: SequenceBatch,
    beta: float,
    ratio: str = "sequence",
    clip_epsilon: float | None = None,
) -> SurrogateParts:
    """PPO-style surrogate on a reused batch with sequence-level or per-token importance ratios (after paper section 3.2).

    With ``ratio="sequence"`` the weight is the exact sequence ratio
    ``w = prod_t rho_t = pi_theta(y|x) / pi_t(y|x)`` and the surrogate is PPO-NoClip's
    (Algorithm 1) with advantages: ``mean_i [w_i A_i - beta (w_i log w_i - w_i + 1)]``,
    unbiased for ``J(pi_theta) - beta KL(pi_theta || pi_t)`` up to a constant. With
    ``ratio="token"`` each token carries its own ratio ``rho_t`` and the sequence advantage,
    as practical PPO/GRPO implementations do:
    ``mean_i sum_t [rho_{i,t} A_i - beta (rho_{i,t} log rho_{i,t} - rho_{i,t} + 1)]``; the KL
    term then estimates the per-token KL along prefixes drawn from ``pi_t``. With
    ``clip_epsilon = e`` the reward term of each weight ``u`` becomes PPO's
    ``min(u A, clip(u, 1 - e, 1 + e) A)``, whose gradient vanishes where ``A > 0, u > 1 + e``
    or ``A < 0, u < 1 - e``.

    The gradient of each term is ``u (A [unclipped] - beta log u)`` times the score of the
    sequence (sequence ratio) or of the token (token ratio); see :func:`~covpo.labs.sequences.policy.token_score_sum`.
    """
    theta = _check_theta(instance, theta)
    batch = _check_batch(instance, batch)
    beta = check_positive("beta", beta)
    ratio = _check_ratio(ratio)
    clip_epsilon = _check_clip(clip_epsilon)
    next_token = next_token_log_probs(instance, theta)
    log_token_ratio = _gather_batch(instance, next_token, batch.prompts, batch.sequences) - batch.log_sampling_tokens
    log_weight = log_token_ratio.sum(axis=-1, keepdims=True) if ratio == "sequence" else log_token_ratio
    weight = np.exp(log_weight)
    advantage = batch.advantages[..., None]
    reward_term = weight * advantage
    active = np.ones(weight.shape, dtype=bool)
    if clip_epsilon is not None:
        reward_term = np.minimum(reward_term, np.clip(weight, 1.0 - clip_epsilon, 1.0 + clip_epsilon) * advantage)
        active = ~(((advantage > 0) & (weight > 1.0 + clip_epsilon)) | ((advantage < 0) & (weight < 1.0 - clip_epsilon)))
    penalty = weight * log_weight - weight + 1.0
    objective = float(np.sum(reward_term - beta * penalty) / batch.size)
    coefficients = weight * (np.where(active, advantage, 0.0) - beta * log_weight) / batch.size
    per_token = np.broadcast_to(coefficients, log_token_ratio.shape)
    gradient = _score_sum(instance, next_token, _scatter(instance, batch.prompts, batch.sequences, per_token))
    return SurrogateParts(objective, gradient, log_token_ratio, float(1.0 - active.mean()))


def ppo_surrogate(
    instance: SequenceInstance,
    theta: np.ndarray,
    batch: SequenceBatch,
    beta: float,
    ratio: str = "sequence",
    clip_epsilon: float | None = None,
) -> float:
    """The value of the surrogate of :func:`surrogate_parts`."""
    return surrogate_parts(instance, theta, batch, beta, ratio, clip_epsilon).objective


@dataclass(frozen=True, eq=False)
class SequenceRatioRecord:
    """How far the importance ratios travel in each outer iteration, one entry per iteration.

    Attributes
    ----------
    max_abs_log_sequence_ratio
        ``max |log w|`` over the batch and every inner iterate ``k = 0, ..., K``, where
        ``w = prod_t rho_t`` is the sequence ratio ``pi_theta(y|x) / pi_t(y|x)``.
    max_abs_log_token_ratio
        ``max |log rho_t|`` over the batch's tokens and every inner iterate.
    max_abs_log_policy_ratio
        ``max_{x, y} |log pi_{t+1}(y|x) / pi_t(y|x)|`` over all sequences, exact, at the
        iterate handed back.
    clip_fraction
        Mean fraction of clipped weights over the ``K`` gradient evaluations (0 without a clip).
    """

    max_abs_log_sequence_ratio: np.ndarray
    max_abs_log_token_ratio: np.ndarray
    max_abs_log_policy_ratio: np.ndarray
    clip_fraction: np.ndarray


@dataclass(frozen=True, eq=False)
class SequencePPORun:
    """A sampled reset run: the shared trajectory plus its :class:`SequenceRatioRecord`."""

    trajectory: Trajectory
    ratios: SequenceRatioRecord


def _record(
    recorder: TrajectoryRecorder, instance: SequenceInstance, log_probs: np.ndarray, log_base: np.ndarray
) -> None:
    """Keep an iterate's reward, per-prompt log coverage and KL to the base model, all exact."""
    recorder.record(
        expected_reward(instance, log_probs),
        log_coverage(instance, log_probs),
        expected_kl(instance, log_probs, log_base),
    )


def _ratio_name(ratio: str, clip_epsilon: float | None) -> str:
    clip = "no clip" if clip_epsilon is None else f"clip {clip_epsilon:g}"
    return f"sampled PPO ({ratio} ratio, {clip})"


def sampled_sequence_ppo(
    instance: SequenceInstance,
    *,
    beta: float,
    eta: float,
    inner_steps: int,
    n_iterations: int,
    batch_size: int,
    rng: np.random.Generator,
    group_size: int = 4,
    ratio: str = "sequence",
    clip_epsilon: float | None = None,
    record_each_step: bool = False,
) -> SequencePPORun:
    """A PPO-NoClip-style APMD on token sequences: reset, sample once, ``K`` steps on the surrogate (after paper section 3.2).

    Each outer iteration resets the reference to ``pi_t`` (one reset), draws ``batch_size``
    prompts with ``group_size`` sequences each from ``pi_t`` (:func:`draw_sequence_batch`) and
    takes ``inner_steps`` gradient-ascent steps on :func:`surrogate_parts` with that batch.

    Parameters
    ----------
    instance
        A :class:`~covpo.labs.sequences.instance.SequenceInstance`.
    beta, eta
        Regularization strength toward ``pi_t`` and inner learning rate, both ``> 0``.
    inner_steps, n_iterations
        ``K`` gradient steps per reset and ``T`` resets, both ``>= 1``.
    batch_size, group_size
        Prompts per outer iteration and sequences per prompt (``>= 2``).
    rng
        A numpy ``Generator``, the only randomness of the run.
    ratio
        ``"sequence"`` (the exact sequence ratio ``prod_t rho_t``) or ``"token"`` (per-token ratios).
    clip_epsilon
        PPO's clip ``e`` in ``(0, 1)`` applied to each weight, or ``None``.
    record_each_step
        Record every inner iterate in the trajectory, not only the end of each iteration.
    """
    instance = _check_instance(instance)
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    inner_steps = check_count("inner_steps", inner_steps)
    n_iterations = check_count("n_iterations", n_iterations)
    batch_size = check_count("batch_size", batch_size)
    group_size = check_count("group_size", group_size, minimum=2)
    ratio = _check_ratio(ratio)
    clip_epsilon = _check_clip(clip_epsilon)
    rng = check_generator("rng", rng)
    record_each_step = check_flag("record_each_step", record_each_step)
    settings = {
        "beta": beta,
        "eta": eta,
        "inner_steps": inner_steps,
        "n_iterations": n_iterations,
        "batch_size": batch_size,
        "group_size": group_size,
        "ratio": ratio,
        "clip_epsilon": clip_epsilon,
    }
    recorder = TrajectoryRecorder(_ratio_name(ratio, clip_epsilon), instance.optimal_value, settings)
    theta = instance.base_theta.copy()
    log_base = log_probs = base_sequence_log_policy(instance)
    _record(recorder, instance, log_probs, log_base)
    rows = []
    for _ in range(n_iterations):
        recorder.count_reset()
        batch = draw_sequence_batch(instance, theta, batch_size, group_size, rng)
        recorder.count_responses(batch.size)
        log_ratios, clip_fractions = [], []
        for _ in range(inner_steps):
            parts = surrogate_parts(instance, theta, batch, beta, ratio, clip_epsilon)
            theta = theta + eta * parts.gradient
            recorder.count_gradient_steps()
            log_ratios.append(parts.log_token_ratio)
            clip_fractions.append(parts.clip_fraction)
            if record_each_step:
                _record(recorder, instance, sequence_log_policy(instance, theta), log_base)
        log_ratios.append(
            batch_token_log_probs(instance, theta, batch.prompts, batch.sequences) - batch.log_sampling_tokens
        )
        log_reference, log_probs = log_probs, sequence_log_policy(instance, theta)
        stacked = np.stack(log_ratios)
        rows.append(
            (
                float(np.abs(stacked.sum(axis=-1)).max()),
                float(np.abs(stacked).max()),
                float(np.abs(log_probs - log_reference).max()),
                float(np.mean(clip_fractions)),
            )
        )
        if not record_each_step:
            _record(recorder, instance, log_probs, log_base)
    ratios = SequenceRatioRecord(*(np.array(column) for column in zip(*rows)))
    return SequencePPORun(trajectory=recorder.finish(), ratios=ratios)
