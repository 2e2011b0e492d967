"""PPO-NoClip: APMD with an importance-weighted inner loop on one reused batch (paper section 3.2, Algorithm 1).

Paper section 3.2, Algorithm 1 and appendix G. Each outer iteration ``t`` resets the
reference to ``pi_t``, draws one batch of ``N`` prompts with one response each from it and
reuses the batch for all ``K`` inner gradient steps, correcting for the drift of ``pi_theta``
away from ``pi_t`` with the importance weight ``w_theta(x, y) = pi_theta(y|x) / pi_t(y|x)``.
The inner steps ascend

    ``L_t(theta) = mean_i [w_i r_i - beta (w_i log w_i - w_i + 1)]``,

an unbiased estimate of ``J(pi_theta) - beta KL(pi_theta || pi_t)``
(``E_{pi_t}[w log w - w + 1] = KL(pi_theta || pi_t)``). The gradient is a batch average of
scores of the policy class (:mod:`covpo.policy_classes`; by default softmax-linear, whose score
is ``grad log pi_theta(y|x) = phi(x, y) - phibar_theta(x)``, paper section 2.2), vectorized over the batch.
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.steps import (
    InnerStepCallback,
    ascent_step,
    check_policy_class,
    check_step_stability,
    feature_scale,
    finite_result,
    inner_step_observer,
)
from covpo.batches import ResponseBatch, check_batch, unchecked_draw_batch
from covpo.instances import BanditInstance
from covpo.objectives import unchecked_kl_to_regularized_optimum
from covpo.policies import check_bandit
from covpo.policy_classes import PolicyClass
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import check_count, check_finite_array, check_flag, check_generator, check_positive, check_shape


def ppo_noclip_objective(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    beta: float,
    *,
    policy: PolicyClass | None = None,
) -> float:
    """PPO-NoClip's ``L_t(theta) = mean_i [w_i r_i - beta (w_i log w_i - w_i + 1)]`` (paper Algorithm 1, cf. Eq. (20)).

    ``w_i = pi_theta(y_i|x_i) / pi_t(y_i|x_i)`` with ``pi_t`` the policy the batch was drawn
    from. Unbiased for ``J(pi_theta) - beta E_x KL(pi_theta || pi_t)``. ``policy`` is the class
    ``theta`` parametrizes; softmax-linear over ``instance``'s features by default.
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    policy = check_policy_class("policy", instance, policy)
    theta = _check_parameters(policy, theta)
    batch = check_batch("batch", batch, instance)
    log_ratio = policy.log_policy(theta)[batch.prompts, batch.responses] - batch.log_sampling
    with np.errstate(over="ignore", invalid="ignore"):
        weights = np.exp(log_ratio)
        objective = float(np.mean(weights * batch.rewards - beta * (weights * log_ratio - weights + 1.0)))
    return finite_result(objective, beta)


def ppo_noclip_gradient(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    beta: float,
    *,
    policy: PolicyClass | None = None,
) -> np.ndarray:
    """``grad L_t(theta) = mean_i w_i (r_i - beta log w_i) grad log pi_theta(y_i|x_i)`` (Algorithm 1).

    The score is that of ``policy``, ``phi(x_i, y_i) - phibar_theta(x_i)`` for the default
    softmax-linear class.
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    policy = check_policy_class("policy", instance, policy)
    with np.errstate(over="ignore", invalid="ignore"):
        gradient = _gradient(policy, _check_parameters(policy, theta), check_batch("batch", batch, instance), beta)
    return finite_result(gradient, beta)


def _check_parameters(policy: PolicyClass, theta: np.ndarray) -> np.ndarray:
    return check_shape("theta", check_finite_array("theta", theta, ndim=1), np.shape(policy.initial_params))


def _gradient(policy: PolicyClass, theta: np.ndarray, batch: ResponseBatch, beta: float) -> np.ndarray:
    """The gradient for validated arguments; all NaN where the importance weights overflow (a diverging run)."""
    log_probs = policy.log_policy(theta)
    log_ratio = log_probs[batch.prompts, batch.responses] - batch.log_sampling
    coefficients = np.exp(log_ratio) * (batch.rewards - beta * log_ratio)
    if not np.all(np.isfinite(coefficients)):
        return np.full(np.shape(theta), np.nan)
    return policy.batch_score_average(theta, batch, coefficients, log_probs)


def ppo_noclip(
    instance: BanditInstance,
    *,
    beta: float,
    eta: float,
    n_iterations: int,
    batch_size: int,
    inner_steps: int,
    rng: np.random.Generator,
    record_each_step: bool = False,
    on_inner_step: InnerStepCallback | None = None,
    policy: PolicyClass | None = None,
) -> Trajectory:
    """PPO-NoClip (paper Algorithm 1, section 3.2): ``T`` resets, each with ``K`` ascent steps on ``L_t``.

    Each outer iteration resets the reference to ``pi_t`` (one reset), draws ``N`` prompts with
    one response each from ``pi_t`` (``N`` responses, one generation round) and takes ``K``
    steps ``theta <- theta + eta grad L_t(theta)`` (:func:`ppo_noclip_gradient`) on that batch.
    All randomness comes from ``rng``, so a seed fixes the run bit for bit.

    Parameters
    ----------
    instance
        The bandit.
    beta
        Strength of the KL penalty toward each reset reference, ``> 0``.
    eta
        Inner learning rate, ``> 0``.
    n_iterations
        ``T``, outer iterations, ``>= 1``.
    batch_size
        ``N``, prompt-response pairs drawn from ``pi_t`` per outer iteration, ``>= 1``.
    inner_steps
        ``K``, full-batch gradient steps on the reused batch, ``>= 1``.
    rng
        The run's only source of randomness.
    record_each_step
        Record the iterate after every gradient step instead of once per outer iteration.
    on_inner_step
        Optional diagnostics callback, called with an
        :class:`~covpo.algorithms.steps.InnerStep` at every inner iterate ``k = 0, ..., K``
        (e.g. a :class:`~covpo.algorithms.ratios.RatioRecorder`).
    policy
        The policy class the iterates live in (:class:`~covpo.policy_classes.PolicyClass`),
        started at its ``initial_params``; ``None`` for softmax-linear over ``instance``'s features.

    Returns
    -------
    Trajectory
        Costs and iterates, with the outer iterates ``thetas`` (``theta_0`` first) and each inner
        loop's accuracy ``inner_kl = E_x KL(pi_{t+1} || pi*_{t+1})``, ``pi*_{t+1}`` the exact target.

    Raises
    ------
    FloatingPointError
        If a step leaves ``theta`` non-finite (``eta`` too large for the importance weights).
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    batch_size = check_count("batch_size", batch_size)
    inner_steps = check_count("inner_steps", inner_steps)
    check_generator("rng", rng)
    record_each_step = check_flag("record_each_step", record_each_step)
    policy = check_policy_class("policy", instance, policy)
    check_step_stability("PPO-NoClip", eta, beta, feature_scale(instance, policy))
    settings = {"beta": beta, "n_iterations": n_iterations, "batch_size": batch_size, "inner_steps": inner_steps,
                "eta": eta}
    recorder = TrajectoryRecorder("PPO-NoClip", instance.optimal_value, settings)
    theta = np.array(policy.initial_params, dtype=float)
    log_probs = policy.log_policy(theta)
    log_base = log_probs
    recorder.record_iterate(instance, log_probs, log_base=log_base)
    thetas, inner_kl = [theta], []
    for t in range(n_iterations):
        log_reference = log_probs  # reset the reference to pi_t
        recorder.count_reset()
        batch = unchecked_draw_batch(instance, log_reference, batch_size, rng)
        recorder.count_responses(batch.size)
        observe = inner_step_observer(on_inner_step, instance, t, batch, log_reference, recorder, policy=policy)
        for k in range(inner_steps):
            observe(k, theta)
            with np.errstate(over="ignore", invalid="ignore"):
                gradient = _gradient(policy, theta, batch, beta)
            theta = ascent_step(theta, eta, gradient, t, k + 1)
            recorder.count_gradient_steps()
            if record_each_step:
                recorder.record_iterate(instance, policy.log_policy(theta), log_base=log_base)
        observe(inner_steps, theta)
        log_probs = policy.log_policy(theta)
        inner_kl.append(unchecked_kl_to_regularized_optimum(instance, log_probs, log_reference, beta))
        if not record_each_step:
            recorder.record_iterate(instance, log_probs, log_base=log_base)
        thetas.append(theta)
    return recorder.finish(thetas=thetas, inner_kl=inner_kl)
