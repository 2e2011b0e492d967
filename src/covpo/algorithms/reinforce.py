"""REINFORCE, with an optional KL penalty toward the fixed base model (paper section 2.1).

Both variants ascend ``J_beta(pi_theta; pi_0) = J(pi_theta) - beta E_x KL(pi_theta || pi_0)``
(plain ``J`` when ``beta = 0``) with a constant learning rate:

- :func:`exact_reinforce` uses the population gradient of :mod:`covpo.objectives`;
- :func:`reinforce` estimates it from a batch of ``(x, y)`` drawn from ``pi_theta``
  (:func:`sampled_gradient`), ``mean_i A_i (phi(x_i, y_i) - phibar(x_i))`` with ``A_i`` the
  (KL-shaped) reward minus a leave-one-out (:func:`leave_one_out_baseline`) or batch-mean baseline.

Both run on any policy class of :mod:`covpo.policy_classes` (``policy``; softmax-linear over
the instance's features by default, with the score ``phi - phibar``); the instance supplies the
rewards, the prompt distribution, the optimal set and the sampling.

Every recorded iterate is evaluated exactly (reward, log coverage, KL to the base model), so
runs compare on equal terms with the other algorithms. The reduced, compiled engine for the
coverage-collapse instance lives in :mod:`covpo.experiments.collapse`.
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.steps import ascent_step, check_policy_class, check_step_stability, feature_scale, finite_result
from covpo.batches import ResponseBatch
from covpo.instances import BanditInstance
from covpo.objectives import regularized_gradient, reward_gradient
from covpo.policies import check_bandit, unchecked_sample_prompts, unchecked_sample_responses
from covpo.policy_classes import PolicyClass
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import (
    check_count,
    check_finite_array,
    check_generator,
    check_index_array,
    check_nonnegative,
    check_option,
    check_positive,
    check_shape,
)

BASELINES = ("leave_one_out", "batch_mean")


def _check_beta(beta: float) -> float:
    if beta is None:
        raise ValueError("beta must be a finite number >= 0 (0 for no KL penalty), got None")
    return check_nonnegative("beta", beta)


def check_baseline(baseline: str, batch_size: int) -> str:
    """Return ``baseline`` if it is a known baseline usable with batches of ``batch_size``."""
    baseline = check_option("baseline", baseline, BASELINES)
    if baseline == "leave_one_out" and batch_size < 2:
        raise ValueError(f"batch_size must be >= 2 for a leave-one-out baseline, got {batch_size!r}")
    return baseline


def leave_one_out_baseline(values: np.ndarray) -> np.ndarray:
    """The mean of the *other* entries along the last axis, ``(sum_k v_k - v_i) / (n - 1)`` (after paper section 2.1).

    Subtracted from a sample's reward it leaves the policy-gradient estimate unbiased, because
    it does not depend on that sample. The last axis is the batch (REINFORCE) or the group of
    responses to one prompt (NPG, the sequence laboratory); it needs at least two entries.
    """
    values = check_finite_array("values", values)
    if values.ndim == 0:
        raise ValueError(f"values must have a last axis to average over, got {values!r}")
    count = values.shape[-1]
    if count < 2:
        raise ValueError(f"values must have at least 2 entries on the last axis for a leave-one-out mean, got {count}")
    return (values.sum(axis=-1, keepdims=True) - values) / (count - 1)


def _check_theta(policy: PolicyClass, theta: np.ndarray | None) -> np.ndarray:
    if theta is None:
        return np.array(policy.initial_params, dtype=float)
    return check_shape("theta", check_finite_array("theta", theta, ndim=1), policy.initial_params.shape).copy()


def exact_reinforce(
    instance: BanditInstance,
    *,
    eta: float,
    n_iterations: int,
    beta: float = 0.0,
    record_every: int = 1,
    theta: np.ndarray | None = None,
    policy: PolicyClass | None = None,
) -> Trajectory:
    """Exact REINFORCE: ``theta <- theta + eta grad J_beta(pi_theta; pi_0)`` (paper section 2.1).

    Parameters
    ----------
    instance
        Any :class:`~covpo.instances.BanditInstance`: rewards, prompts, optimal set and sampling.
    eta
        Learning rate, ``> 0``.
    n_iterations
        Number of gradient steps, ``>= 1``.
    beta
        KL strength toward the base model ``pi_0``, ``>= 0``; ``0`` ascends plain ``J``
        (:func:`covpo.objectives.reward_gradient`).
    record_every
        Record every ``record_every``-th iterate (the first and last are always recorded).
    theta
        Starting parameters; the base model's ``theta_0`` by default.
    policy
        The policy class ``theta`` parametrizes (:class:`~covpo.policy_classes.PolicyClass`);
        ``None`` for softmax-linear over ``instance``'s features. Its ``initial_params`` are the
        base model ``pi_0`` of the KL penalty and of the recorded ``kl_to_base``.

    Returns
    -------
    Trajectory
        Costs count one gradient step per update and no sampled responses.

    Raises
    ------
    FloatingPointError
        If a step leaves ``theta`` non-finite (``eta`` too large).
    """
    instance = check_bandit("instance", instance)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    beta = _check_beta(beta)
    record_every = check_count("record_every", record_every)
    policy = check_policy_class("policy", instance, policy)
    theta = _check_theta(policy, theta)
    if beta > 0.0:
        check_step_stability("exact REINFORCE", eta, beta, feature_scale(instance, policy))
    log_base = policy.log_policy(policy.initial_params)
    recorder = TrajectoryRecorder(
        "exact REINFORCE", instance.optimal_value, {"eta": eta, "beta": beta, "n_iterations": n_iterations}
    )
    recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)
    for step in range(1, n_iterations + 1):
        if beta == 0.0:
            gradient = reward_gradient(instance, theta, policy=policy)
        else:
            gradient = regularized_gradient(instance, theta, log_base, beta, policy=policy)
        theta = ascent_step(theta, eta, gradient, step - 1, 1)
        recorder.count_gradient_steps()
        if step % record_every == 0 or step == n_iterations:
            recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)
    return recorder.finish()


def sampled_gradient(
    instance: BanditInstance,
    theta: np.ndarray,
    prompts: np.ndarray,
    responses: np.ndarray,
    beta: float = 0.0,
    baseline: str = "leave_one_out",
    *,
    policy: PolicyClass | None = None,
) -> np.ndarray:
    """The REINFORCE estimate ``mean_i A_i grad log pi_theta(y_i|x_i)`` of ``grad J_beta`` (sampled, after paper section 2.1).

    ``A_i`` is the shaped reward ``r - beta log(pi_theta / pi_0)`` (just ``r`` when
    ``beta = 0``) minus a baseline: the mean of the *other* samples (``"leave_one_out"``,
    unbiased, :func:`leave_one_out_baseline`) or of the whole batch (``"batch_mean"``, biased by
    a factor ``1 - 1/B``). The score is that of ``policy``
    (:meth:`~covpo.policy_classes.PolicyClass.batch_score_average`), ``phi(x_i, y_i) - phibar(x_i)``
    for the default softmax-linear class; ``pi_0`` is ``policy`` at its ``initial_params``.
    """
    instance = check_bandit("instance", instance)
    prompts = check_index_array("prompts", prompts, instance.n_prompts)
    if prompts.size == 0:
        raise ValueError("prompts must hold at least one prompt, got an empty array")
    responses = check_shape("responses", check_index_array("responses", responses, instance.n_responses), prompts.shape)
    batch_size = prompts.size
    check_baseline(baseline, batch_size)
    beta = _check_beta(beta)
    policy = check_policy_class("policy", instance, policy)
    if theta is None:
        raise ValueError("theta must be a parameter vector, got None")
    theta = _check_theta(policy, theta)
    log_base = policy.log_policy(policy.initial_params)
    if beta != 0.0:
        with np.errstate(over="ignore", invalid="ignore"):
            finite_result(beta * (policy.log_policy(theta) - log_base)[prompts, responses], beta)
    return _sampled_gradient(instance, policy, theta, prompts, responses, beta, baseline, log_base)


def _sampled_gradient(
    instance: BanditInstance,
    policy: PolicyClass,
    theta: np.ndarray,
    prompts: np.ndarray,
    responses: np.ndarray,
    beta: float,
    baseline: str,
    log_base: np.ndarray,
) -> np.ndarray:
    """:func:`sampled_gradient` for validated arguments and the base table ``log_base``: what the run's loop calls."""
    log_probs = policy.log_policy(theta)
    rewards = instance.rewards[prompts, responses]
    shaped = rewards
    if beta != 0.0:
        with np.errstate(over="ignore", invalid="ignore"):
            shaped = shaped - beta * (log_probs - log_base)[prompts, responses]
    batch_size = prompts.size
    if baseline == "leave_one_out":
        advantages = shaped - leave_one_out_baseline(shaped)
    else:
        advantages = shaped - shaped.sum() / batch_size
    batch = ResponseBatch.unchecked(
        prompts=prompts, responses=responses, rewards=rewards, log_sampling=log_probs[prompts, responses]
    )
    return policy.batch_score_average(theta, batch, advantages, log_probs)


def reinforce(
    instance: BanditInstance,
    *,
    eta: float,
    n_iterations: int,
    batch_size: int,
    rng: np.random.Generator,
    beta: float = 0.0,
    baseline: str = "leave_one_out",
    record_every: int = 1,
    theta: np.ndarray | None = None,
    policy: PolicyClass | None = None,
) -> Trajectory:
    """Sampled REINFORCE: each step draws ``batch_size`` pairs ``x ~ rho, y ~ pi_theta(.|x)`` (paper section 2.1).

    The update is ``theta <- theta + eta g`` with ``g`` from :func:`sampled_gradient`; with
    ``beta > 0`` it is REINFORCE on ``J - beta KL(pi_theta || pi_0)``, the fixed-reference method.

    Parameters
    ----------
    instance
        Any :class:`~covpo.instances.BanditInstance`: rewards, prompts, optimal set and sampling.
    eta
        Learning rate, ``> 0``.
    n_iterations
        Number of gradient steps, ``>= 1``; each draws a fresh batch.
    batch_size
        Prompt-response pairs per step (``>= 2`` with the leave-one-out baseline).
    rng
        The generator every prompt and response is drawn from.
    beta
        KL strength toward the base model, ``>= 0``; ``0`` for none.
    baseline
        ``"leave_one_out"`` or ``"batch_mean"``.
    record_every
        Record every ``record_every``-th iterate (the first and last are always recorded).
    theta
        Starting parameters; the base model's ``theta_0`` by default.
    policy
        The policy class ``theta`` parametrizes, as in :func:`exact_reinforce`.

    Returns
    -------
    Trajectory
        Costs count one gradient step and one generation round of ``batch_size`` responses per update.

    Raises
    ------
    FloatingPointError
        If a step leaves ``theta`` non-finite (``eta`` too large).
    """
    instance = check_bandit("instance", instance)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    batch_size = check_count("batch_size", batch_size)
    beta = _check_beta(beta)
    record_every = check_count("record_every", record_every)
    baseline = check_baseline(baseline, batch_size)
    check_generator("rng", rng)
    policy = check_policy_class("policy", instance, policy)
    theta = _check_theta(policy, theta)
    if beta > 0.0:
        check_step_stability("sampled REINFORCE", eta, beta, feature_scale(instance, policy))
    log_base = policy.log_policy(policy.initial_params)
    recorder = TrajectoryRecorder(
        "sampled REINFORCE",
        instance.optimal_value,
        {"eta": eta, "beta": beta, "n_iterations": n_iterations, "batch_size": batch_size, "baseline": baseline},
    )
    recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)
    for step in range(1, n_iterations + 1):
        prompts = unchecked_sample_prompts(instance, rng, batch_size)
        responses = unchecked_sample_responses(policy.log_policy(theta), prompts, rng)
        recorder.count_responses(batch_size)
        gradient = _sampled_gradient(instance, policy, theta, prompts, responses, beta, baseline, log_base)
        theta = ascent_step(theta, eta, gradient, step - 1, 1)
        recorder.count_gradient_steps()
        if step % record_every == 0 or step == n_iterations:
            recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)
    return recorder.finish()
