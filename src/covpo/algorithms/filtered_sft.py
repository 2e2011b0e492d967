"""Supervised fine-tuning on reward-filtered base samples: a coverage-governed baseline (paper section 2.2).

Rejection-sampling fine-tuning draws responses from the *base model* ``pi_0`` only, keeps per
prompt the samples of the highest reward seen (:func:`filter_best`), and fits them by maximum
likelihood (:func:`filtered_sft_log_likelihood`, :func:`filtered_sft_gradient`). A prompt's kept
samples are optimal only once an optimal response has been drawn for it, which takes about
``1 / c_0(x)`` draws, so the method is governed by coverage like Best-of-N.
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.outer_loop import InnerStepCallback, Subproblem, inner_step_observer
from covpo.algorithms.steps import ascent_step
from covpo.batches import BatchTerms, ResponseBatch, unchecked_draw_batch
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, check_bandit, log_policy, unchecked_log_policy
from covpo.policy_classes import SoftmaxLinear
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import (
    check_count,
    check_finite_array,
    check_generator,
    check_index_array,
    check_positive,
    check_shape,
    check_theta,
)

REWARD_TOLERANCE = 1e-12


def _check_kept(kept: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    kept = check_shape("kept", check_finite_array("kept", kept, ndim=2), shape)
    if np.any(kept < 0.0) or np.any(kept != np.round(kept)):
        bad = kept[(kept < 0.0) | (kept != np.round(kept))][0]
        raise ValueError(f"kept must hold whole counts >= 0, found {bad!r}")
    return kept


def _check_arguments(instance: BanditInstance, theta: np.ndarray, kept: np.ndarray) -> tuple:
    instance = check_bandit("instance", instance)
    return instance, check_theta("theta", theta, (instance.dim,)), _check_kept(kept, instance.rewards.shape)


def filtered_sft_log_likelihood(instance: BanditInstance, theta: np.ndarray, kept: np.ndarray) -> float:
    """Mean log-likelihood ``sum_{x,y} w(x,y) log pi_theta(y|x)`` of the kept samples, ``w = kept / sum(kept)``.

    ``kept`` counts, per ``(x, y)``, the base-model samples that survived the reward filter;
    the SFT objective of :func:`filtered_sft` (paper section 2.2 policies, maximum likelihood).
    """
    instance, theta, kept = _check_arguments(instance, theta, kept)
    total = float(kept.sum())
    if total == 0.0:
        return 0.0
    return float(np.sum(kept * log_policy(instance, theta)) / total)


def filtered_sft_gradient(instance: BanditInstance, theta: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Gradient of :func:`filtered_sft_log_likelihood`: ``sum_{x,y} w(x,y) (phi(x,y) - phibar_theta(x))`` (paper section 2.2)."""
    instance, theta, kept = _check_arguments(instance, theta, kept)
    return _gradient(instance, theta, kept)


def _gradient(instance: BanditInstance, theta: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The gradient for validated arguments: the kept samples as one batch, each with coefficient 1."""
    total = float(kept.sum())
    if total == 0.0:
        return np.zeros(instance.dim)
    counts = kept.astype(np.int64).ravel()
    cells = np.repeat(np.arange(counts.size), counts)
    prompts, responses = np.divmod(cells, instance.n_responses)
    batch = ResponseBatch.unchecked(prompts, responses, instance.rewards[prompts, responses], np.zeros(cells.size))
    return BatchTerms(instance, batch, unchecked_log_policy(instance, theta)).score_average(np.ones(cells.size))


def filter_best(
    kept: np.ndarray, best_reward: np.ndarray, prompts: np.ndarray, responses: np.ndarray, rewards: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Add a batch to the reward-filtered dataset: per prompt, keep only samples of the highest reward seen.

    Returns the new counts ``kept`` (``(n_prompts, n_responses)``) and the new best reward per
    prompt; a prompt whose best reward rises drops its earlier samples. Rewards within
    ``REWARD_TOLERANCE`` of the best count as tied. Vectorized.
    """
    kept = check_finite_array("kept", kept, ndim=2)
    if np.any(kept < 0.0) or np.any(kept != np.round(kept)):
        bad = kept[(kept < 0.0) | (kept != np.round(kept))][0]
        raise ValueError(f"kept must hold whole counts >= 0, found {bad!r}")
    best_reward = np.asarray(best_reward, dtype=float) if not isinstance(best_reward, (str, bytes)) else None
    if best_reward is None or best_reward.shape != (kept.shape[0],) or np.any(np.isnan(best_reward)) or np.any(best_reward == np.inf):
        raise ValueError(f"best_reward must hold one reward (or -inf) per prompt, shape ({kept.shape[0]},), without NaN")
    prompts = np.ravel(check_index_array("prompts", prompts, kept.shape[0]))
    responses = np.ravel(check_index_array("responses", responses, kept.shape[1]))
    rewards = np.ravel(check_finite_array("rewards", rewards))
    if not prompts.size == responses.size == rewards.size:
        raise ValueError(
            f"prompts, responses and rewards must have one entry per sample, got {prompts.size}, {responses.size} "
            f"and {rewards.size}"
        )
    batch_best = np.full_like(best_reward, -np.inf)
    np.maximum.at(batch_best, prompts, rewards)
    new_best = np.maximum(best_reward, batch_best)
    kept = np.where((new_best > best_reward + REWARD_TOLERANCE)[:, None], 0.0, kept)
    top = rewards >= new_best[prompts] - REWARD_TOLERANCE
    np.add.at(kept, (prompts[top], responses[top]), 1.0)
    return kept, new_best


def check_filtered_sft(
    *, eta: float, n_iterations: int, batch_size: int, group_size: int, inner_steps: int
) -> dict[str, object]:
    """The hyperparameters of :func:`filtered_sft` checked by its rules, as the trajectory stores them (its validator)."""
    return {
        "eta": check_positive("eta", eta),
        "n_iterations": check_count("n_iterations", n_iterations),
        "batch_size": check_count("batch_size", batch_size),
        "group_size": check_count("group_size", group_size),
        "inner_steps": check_count("inner_steps", inner_steps),
    }


def filtered_sft(
    instance: BanditInstance,
    *,
    eta: float,
    n_iterations: int,
    batch_size: int,
    group_size: int,
    inner_steps: int,
    rng: np.random.Generator,
    on_inner_step: InnerStepCallback | None = None,
) -> Trajectory:
    """Supervised fine-tuning on reward-filtered base samples (rejection-sampling fine-tuning, after paper section 2.2).

    Each of the ``n_iterations`` rounds draws ``N = batch_size`` prompts with ``G = group_size``
    responses each from the base model ``pi_0`` (``N G`` responses counted), keeps per prompt
    the samples of the highest reward seen so far (:func:`filter_best`), and takes
    ``K = inner_steps`` gradient-ascent steps of size ``eta`` on their mean log-likelihood
    (:func:`filtered_sft_gradient`), warm started. Fitting suboptimal survivors can lower coverage.

    Parameters
    ----------
    instance
        The bandit.
    eta
        Learning rate, ``> 0``.
    n_iterations
        Rounds, ``>= 1``; each draws a fresh batch from ``pi_0``.
    batch_size
        Prompts per round ``N``, ``>= 1``.
    group_size
        Responses per prompt ``G``, ``>= 1``.
    inner_steps
        Gradient steps ``K`` per round, ``>= 1``.
    rng
        The generator every prompt and response is drawn from.
    on_inner_step
        Optional diagnostics callback, called with an
        :class:`~covpo.algorithms.outer_loop.InnerStep` at every inner iterate ``k = 0, ..., K``;
        its subproblem is the kept samples' mean log-likelihood.

    Raises
    ------
    FloatingPointError
        If a step leaves ``theta`` non-finite.
    """
    instance = check_bandit("instance", instance)
    settings = check_filtered_sft(
        eta=eta, n_iterations=n_iterations, batch_size=batch_size, group_size=group_size, inner_steps=inner_steps
    )
    eta, n_iterations, batch_size, group_size, inner_steps = (
        settings[name] for name in ("eta", "n_iterations", "batch_size", "group_size", "inner_steps")
    )
    check_generator("rng", rng)
    recorder = TrajectoryRecorder("SFT on filtered samples", instance.optimal_value, settings)
    log_base = base_log_policy(instance)
    recorder.record_policy(instance, log_base)
    theta = np.array(instance.base_theta, dtype=float)
    kept = np.zeros(instance.rewards.shape)
    best_reward = np.full(instance.n_prompts, -np.inf)
    policy = SoftmaxLinear(instance)
    for t in range(n_iterations):
        batch = unchecked_draw_batch(instance, log_base, batch_size, rng, group_size=group_size)
        recorder.count_responses(batch.size)
        kept, best_reward = filter_best(kept, best_reward, batch.prompts, batch.responses, batch.rewards)

        def subproblem(kept: np.ndarray = kept) -> Subproblem:
            return Subproblem(
                lambda at: filtered_sft_log_likelihood(instance, at, kept),
                lambda at: filtered_sft_gradient(instance, at, kept),
                eta,
            )

        observe = inner_step_observer(
            on_inner_step, instance, t, recorder, subproblem, policy=policy, batch=batch, log_sampling=log_base
        )
        for k in range(inner_steps):
            observe(k, theta)
            theta = ascent_step(theta, eta, _gradient(instance, theta, kept), t, k + 1)
            recorder.count_gradient_steps()
        observe(inner_steps, theta)
        recorder.record_policy(instance, log_policy(instance, theta))
    return recorder.finish()
