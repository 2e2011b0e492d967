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

from covpo.algorithms.outer_loop import InnerStepCallback, OuterLoop, Subproblem
from covpo.algorithms.steps import check_sampled_apmd, check_step_stability, feature_scale, finite_result
from covpo.batches import ResponseBatch, check_batch, unchecked_draw_batch
from covpo.instances import BanditInstance
from covpo.policies import check_bandit
from covpo.policy_classes import PolicyClass, policy_class
from covpo.trajectory import Trajectory
from covpo.validation import check_generator, check_positive, check_theta


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
    policy = policy_class("policy", instance, policy)
    theta = check_theta("theta", theta, np.shape(policy.initial_params))
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
    policy = policy_class("policy", instance, policy)
    theta = check_theta("theta", theta, np.shape(policy.initial_params))
    with np.errstate(over="ignore", invalid="ignore"):
        gradient = _gradient(policy, theta, check_batch("batch", batch, instance), beta)
    return finite_result(gradient, beta)


def _gradient(policy: PolicyClass, theta: np.ndarray, batch: ResponseBatch, beta: float) -> np.ndarray:
    """The gradient for validated arguments; all NaN where the importance weights overflow (a diverging run)."""
    log_probs = policy.log_policy(theta)
    log_ratio = log_probs[batch.prompts, batch.responses] - batch.log_sampling
    coefficients = np.exp(log_ratio) * (batch.rewards - beta * log_ratio)
    if not np.all(np.isfinite(coefficients)):
        return np.full(np.shape(theta), np.nan)
    return policy.batch_score_average(theta, batch, coefficients, log_probs)


def check_ppo_noclip(*, beta: float, eta: float, n_iterations: int, batch_size: int, inner_steps: int) -> dict[str, object]:
    """The hyperparameters of :func:`ppo_noclip` checked by its rules, as the trajectory stores them (its validator).

    PPO-NoClip has only the hyperparameters of every sampled instance of APMD
    (:func:`~covpo.algorithms.steps.check_sampled_apmd`).
    """
    return check_sampled_apmd(beta=beta, eta=eta, n_iterations=n_iterations, batch_size=batch_size, inner_steps=inner_steps)


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
    """PPO-NoClip (paper section 3.2, Algorithm 1): ``T`` resets, each with ``K`` ascent steps on ``L_t``.

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
        :class:`~covpo.algorithms.outer_loop.InnerStep` at every inner iterate ``k = 0, ..., K``
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
    settings = check_ppo_noclip(
        beta=beta, eta=eta, n_iterations=n_iterations, batch_size=batch_size, inner_steps=inner_steps
    )
    beta, eta, n_iterations, batch_size, inner_steps = (
        settings[name] for name in ("beta", "eta", "n_iterations", "batch_size", "inner_steps")
    )
    check_generator("rng", rng)
    policy = policy_class("policy", instance, policy)
    check_step_stability("PPO-NoClip", eta, beta, feature_scale(instance, policy))
    loop = OuterLoop(
        "PPO-NoClip", instance, settings, policy=policy, beta=beta, record_each_step=record_each_step,
        on_inner_step=on_inner_step,
    )
    theta = loop.theta
    for t in range(n_iterations):
        log_reference = loop.reset()  # pi_ref <- pi_t
        batch = unchecked_draw_batch(instance, log_reference, batch_size, rng)
        loop.count_responses(batch.size)

        def subproblem(batch: ResponseBatch = batch) -> Subproblem:
            return Subproblem(
                lambda at: ppo_noclip_objective(instance, at, batch, beta, policy=policy),
                lambda at: ppo_noclip_gradient(instance, at, batch, beta, policy=policy),
                eta,
            )

        observe = loop.observer(t, subproblem, batch=batch, log_sampling=log_reference, log_reference=log_reference)
        for k in range(inner_steps):
            observe(k, theta)
            with np.errstate(over="ignore", invalid="ignore"):
                gradient = _gradient(policy, theta, batch, beta)
            theta = loop.step(theta, eta, gradient, t, k)
        observe(inner_steps, theta)
        loop.end_iteration(theta, log_reference)
    return loop.finish()
