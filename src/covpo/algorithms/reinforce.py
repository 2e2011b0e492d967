"""REINFORCE, with an optional KL penalty toward the fixed base model (paper section 2.1).

Both variants ascend ``J_beta(pi_theta; pi_0) = J(pi_theta) - beta E_x KL(pi_theta || pi_0)``
(plain ``J`` when ``beta = 0``) with a constant learning rate:

- :func:`exact_reinforce` uses the population gradient of :mod:`covpo.objectives`;
- :func:`reinforce` estimates it from a batch of ``(x, y)`` drawn from ``pi_theta``
  (:func:`sampled_gradient`), ``mean_i A_i (phi(x_i, y_i) - phibar(x_i))`` with ``A_i`` the
  (KL-shaped) reward minus a leave-one-out (:func:`covpo.policies.leave_one_out_baseline`) or
  batch-mean baseline (:func:`reinforce_advantages`).

Both run on any policy class of :mod:`covpo.policy_classes` (``policy``; softmax-linear over
the instance's features by default, with the score ``phi - phibar``); the instance supplies the
rewards, the prompt distribution, the optimal set and the sampling.

Every recorded iterate is evaluated exactly (reward, log coverage, KL to the base model), so
runs compare on equal terms with the other algorithms. The reduced, compiled engine for the
coverage-collapse instance lives in :mod:`covpo.experiments.collapse`.
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.outer_loop import InnerStepCallback, Subproblem, inner_step_observer
from covpo.algorithms.steps import ascent_step, check_step_stability, feature_scale, finite_result
from covpo.batches import ResponseBatch
from covpo.instances import BanditInstance
from covpo.objectives import regularized_gradient, regularized_objective, reward_gradient
from covpo.policies import (
    check_bandit,
    expected_reward,
    leave_one_out_baseline,
    unchecked_sample_prompts,
    unchecked_sample_responses,
)
from covpo.policy_classes import PolicyClass, policy_class
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import (
    check_count,
    check_generator,
    check_index_array,
    check_nonnegative,
    check_option,
    check_positive,
    check_shape,
    check_theta,
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


def _check_start(policy: PolicyClass, theta: np.ndarray | None) -> np.ndarray:
    """The starting parameters: ``theta`` checked, or the policy class's ``initial_params``."""
    if theta is None:
        return np.array(policy.initial_params, dtype=float)
    return check_theta("theta", theta, np.shape(policy.initial_params)).copy()


def _objective(instance: BanditInstance, policy: PolicyClass, log_base: np.ndarray, beta: float):
    """``theta -> J_beta(pi_theta; pi_0)`` (plain ``J`` for ``beta = 0``), the population objective both variants ascend."""
    if beta == 0.0:
        return lambda theta: expected_reward(instance, policy.log_policy(theta))
    return lambda theta: regularized_objective(instance, policy.log_policy(theta), log_base, beta)


def check_exact_reinforce(*, eta: float, n_iterations: int, beta: float, record_every: int) -> dict[str, object]:
    """The hyperparameters of :func:`exact_reinforce` checked by its rules, as the trajectory stores them (its validator)."""
    return {
        "eta": check_positive("eta", eta),
        "beta": _check_beta(beta),
        "n_iterations": check_count("n_iterations", n_iterations),
        "record_every": check_count("record_every", record_every),
    }


def exact_reinforce(
    instance: BanditInstance,
    *,
    eta: float,
    n_iterations: int,
    beta: float = 0.0,
    record_every: int = 1,
    theta: np.ndarray | None = None,
    policy: PolicyClass | None = None,
    on_inner_step: InnerStepCallback | None = None,
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
    on_inner_step
        Optional diagnostics callback, called with an
        :class:`~covpo.algorithms.outer_loop.InnerStep` before and after every step (one
        iteration of one step; its subproblem is ``J_beta(.; pi_0)`` and its population gradient).

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
    settings = check_exact_reinforce(eta=eta, n_iterations=n_iterations, beta=beta, record_every=record_every)
    eta, n_iterations, beta, record_every = (settings[name] for name in ("eta", "n_iterations", "beta", "record_every"))
    policy = policy_class("policy", instance, policy)
    theta = _check_start(policy, theta)
    if beta > 0.0:
        check_step_stability("exact REINFORCE", eta, beta, feature_scale(instance, policy))
    log_base = policy.log_policy(policy.initial_params)
    recorder = TrajectoryRecorder("exact REINFORCE", instance.optimal_value, settings)
    recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)

    def gradient(at: np.ndarray) -> np.ndarray:
        if beta == 0.0:
            return reward_gradient(instance, at, policy=policy)
        return regularized_gradient(instance, at, log_base, beta, policy=policy)

    def subproblem() -> Subproblem:
        return Subproblem(_objective(instance, policy, log_base, beta), gradient, eta)

    for step in range(1, n_iterations + 1):
        observe = inner_step_observer(
            on_inner_step, instance, step - 1, recorder, subproblem, policy=policy,
            log_reference=log_base if beta > 0.0 else None,
        )
        observe(0, theta)
        theta = ascent_step(theta, eta, gradient(theta), step - 1, 1)
        recorder.count_gradient_steps()
        observe(1, theta)
        if step % record_every == 0 or step == n_iterations:
            recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)
    return recorder.finish()


def _check_batch_arguments(
    instance: BanditInstance, theta: np.ndarray, prompts: np.ndarray, responses: np.ndarray, beta: float,
    baseline: str, policy: PolicyClass | None,
) -> tuple[BanditInstance, PolicyClass, np.ndarray, np.ndarray, np.ndarray, float, str]:
    instance = check_bandit("instance", instance)
    prompts = check_index_array("prompts", prompts, instance.n_prompts)
    if prompts.size == 0:
        raise ValueError("prompts must hold at least one prompt, got an empty array")
    responses = check_shape("responses", check_index_array("responses", responses, instance.n_responses), prompts.shape)
    check_baseline(baseline, prompts.size)
    beta = _check_beta(beta)
    policy = policy_class("policy", instance, policy)
    if theta is None:
        raise ValueError("theta must be a parameter vector, got None")
    theta = check_theta("theta", theta, np.shape(policy.initial_params))
    return instance, policy, theta, prompts, responses, beta, baseline


def reinforce_advantages(
    instance: BanditInstance,
    theta: np.ndarray,
    prompts: np.ndarray,
    responses: np.ndarray,
    beta: float = 0.0,
    baseline: str = "leave_one_out",
    *,
    policy: PolicyClass | None = None,
) -> np.ndarray:
    """The advantages ``A_i`` of REINFORCE's estimate: the shaped reward minus its baseline (after paper section 2.1).

    The shaped reward is ``r - beta log(pi_theta / pi_0)`` (just ``r`` when ``beta = 0``); the
    baseline is the mean of the *other* samples (``"leave_one_out"``, unbiased,
    :func:`covpo.policies.leave_one_out_baseline`) or of the whole batch (``"batch_mean"``, biased
    by a factor ``1 - 1/B``). ``pi_0`` is ``policy`` at its ``initial_params``.
    """
    instance, policy, theta, prompts, responses, beta, baseline = _check_batch_arguments(
        instance, theta, prompts, responses, beta, baseline, policy
    )
    log_base = policy.log_policy(policy.initial_params)
    with np.errstate(over="ignore", invalid="ignore"):
        advantages = _advantages(instance, policy.log_policy(theta), prompts, responses, beta, baseline, log_base)
    return finite_result(advantages, beta)


def _advantages(
    instance: BanditInstance,
    log_probs: np.ndarray,
    prompts: np.ndarray,
    responses: np.ndarray,
    beta: float,
    baseline: str,
    log_base: np.ndarray,
) -> np.ndarray:
    """:func:`reinforce_advantages` for validated arguments, the tables ``log pi_theta`` and ``log pi_0`` given."""
    shaped = instance.rewards[prompts, responses]
    if beta != 0.0:
        with np.errstate(over="ignore", invalid="ignore"):
            shaped = shaped - beta * (log_probs - log_base)[prompts, responses]
    if baseline == "leave_one_out":
        return shaped - leave_one_out_baseline(shaped)
    return shaped - shaped.sum() / prompts.size


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

    ``A_i`` are :func:`reinforce_advantages`; the score is that of ``policy``
    (:meth:`~covpo.policy_classes.PolicyClass.batch_score_average`), ``phi(x_i, y_i) - phibar(x_i)``
    for the default softmax-linear class; ``pi_0`` is ``policy`` at its ``initial_params``.
    """
    instance, policy, theta, prompts, responses, beta, baseline = _check_batch_arguments(
        instance, theta, prompts, responses, beta, baseline, policy
    )
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
    advantages = _advantages(instance, log_probs, prompts, responses, beta, baseline, log_base)
    batch = ResponseBatch.unchecked(
        prompts=prompts,
        responses=responses,
        rewards=instance.rewards[prompts, responses],
        log_sampling=log_probs[prompts, responses],
    )
    return policy.batch_score_average(theta, batch, advantages, log_probs)


def check_reinforce(
    *, eta: float, n_iterations: int, batch_size: int, beta: float, baseline: str, record_every: int
) -> dict[str, object]:
    """The hyperparameters of :func:`reinforce` checked by its rules, as the trajectory stores them (its validator)."""
    batch_size = check_count("batch_size", batch_size)
    return {
        "eta": check_positive("eta", eta),
        "beta": _check_beta(beta),
        "n_iterations": check_count("n_iterations", n_iterations),
        "batch_size": batch_size,
        "baseline": check_baseline(baseline, batch_size),
        "record_every": check_count("record_every", record_every),
    }


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
    on_inner_step: InnerStepCallback | None = None,
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
    on_inner_step
        Optional diagnostics callback, called with an
        :class:`~covpo.algorithms.outer_loop.InnerStep` before and after every step; its
        subproblem is the score surrogate ``mean_i A_i log pi_theta(y_i|x_i)`` of the step's
        batch, whose gradient at the step's start is :func:`sampled_gradient`.

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
    settings = check_reinforce(
        eta=eta, n_iterations=n_iterations, batch_size=batch_size, beta=beta, baseline=baseline,
        record_every=record_every,
    )
    eta, n_iterations, batch_size, beta, baseline, record_every = (
        settings[name] for name in ("eta", "n_iterations", "batch_size", "beta", "baseline", "record_every")
    )
    check_generator("rng", rng)
    policy = policy_class("policy", instance, policy)
    theta = _check_start(policy, theta)
    if beta > 0.0:
        check_step_stability("sampled REINFORCE", eta, beta, feature_scale(instance, policy))
    log_base = policy.log_policy(policy.initial_params)
    recorder = TrajectoryRecorder("sampled REINFORCE", instance.optimal_value, settings)
    recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)
    for step in range(1, n_iterations + 1):
        log_probs = policy.log_policy(theta)
        prompts = unchecked_sample_prompts(instance, rng, batch_size)
        responses = unchecked_sample_responses(log_probs, prompts, rng)
        recorder.count_responses(batch_size)

        def subproblem(start: np.ndarray = theta, prompts: np.ndarray = prompts, responses: np.ndarray = responses):
            advantages = reinforce_advantages(instance, start, prompts, responses, beta, baseline, policy=policy)
            return Subproblem(
                lambda at: float(np.mean(advantages * policy.log_policy(at)[prompts, responses])),
                lambda at: sampled_gradient(instance, at, prompts, responses, beta, baseline, policy=policy),
                eta,
            )

        observe = inner_step_observer(
            on_inner_step, instance, step - 1, recorder, subproblem, policy=policy,
            batch=ResponseBatch.unchecked(prompts, responses, instance.rewards[prompts, responses],
                                          log_probs[prompts, responses]),
            log_sampling=log_probs, log_reference=log_base if beta > 0.0 else None,
        )
        observe(0, theta)
        gradient = _sampled_gradient(instance, policy, theta, prompts, responses, beta, baseline, log_base)
        theta = ascent_step(theta, eta, gradient, step - 1, 1)
        recorder.count_gradient_steps()
        observe(1, theta)
        if step % record_every == 0 or step == n_iterations:
            recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)
    return recorder.finish()
