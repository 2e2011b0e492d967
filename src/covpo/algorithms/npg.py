"""Natural policy gradient for softmax-linear policies (paper appendix M).

NPG preconditions the reward gradient with the Fisher information
``F(theta) = E_x Cov_{y~pi_theta}(phi(x, y))``. For softmax-linear policies the natural
gradient is a regression ("compatible function approximation"): the direction

    ``w* = argmin_w E_x E_{y~pi_theta} (<w, phi(x, y) - phibar_theta(x)> - A(x, y))^2``,
    ``A(x, y) = r(x, y) - V_theta(x)``,

solves the normal equations ``F w* = grad J(pi_theta)``. The NPG step of size ``1 / beta``,
``theta <- theta + w* / beta``, gives ``pi_{t+1} proportional to pi_t exp(<w*, phi> / beta)``:
with a linear reward ``A = <theta_star, phi - phibar>``, so ``w* = theta_star`` (up to the null
space of ``F``, which does not move the policy) and NPG is exact mirror descent. It is also
the minimizer of Rebel-OnPolicy's population loss and one Newton step on KimiPO's population
loss from ``theta_t`` (:mod:`covpo.algorithms.squared_loss`), which is how the paper relates it to the
squared-loss methods.
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.reinforce import leave_one_out_baseline
from covpo.batches import unchecked_draw_batch
from covpo.instances import BanditInstance
from covpo.objectives import unchecked_kl_to_regularized_optimum
from covpo.policies import centered_features, check_bandit, check_theta, log_policy
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import check_count, check_finite_array, check_flag, check_generator, check_positive, check_shape


def fisher_information(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """``F(theta) = E_x E_{y~pi_theta}[(phi - phibar)(phi - phibar)^T]``, shape ``(d, d)`` (standard; paper section 2.2's class)."""
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", instance, theta)
    log_probs = log_policy(instance, theta)
    centered = centered_features(instance, log_probs)
    weights = instance.prompt_probs[:, None] * np.exp(log_probs)
    return np.einsum("xy,xyd,xye->de", weights, centered, centered)


def npg_direction(instance: BanditInstance, theta: np.ndarray, advantages: np.ndarray | None = None) -> np.ndarray:
    """The exact NPG direction ``w*`` by weighted least squares on every response (paper appendix M).

    Minimizes ``E_x E_{y~pi_theta} (<w, phi - phibar_theta> - A)^2`` with weights
    ``rho(x) pi_theta(y|x)``; the minimum-norm solution when ``F`` is singular.

    Parameters
    ----------
    instance
        The bandit.
    theta
        Parameters of ``pi_theta``, where the regression is weighted and centered.
    advantages
        ``A(x, y)``, shape ``(n_prompts, n_responses)``; by default ``r - V_theta(x)``. Any
        per-prompt shift of ``A`` leaves ``w*`` unchanged, because the features are centered.
    """
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", instance, theta)
    log_probs = log_policy(instance, theta)
    probs = np.exp(log_probs)
    if advantages is None:
        advantages = instance.rewards - np.sum(probs * instance.rewards, axis=1, keepdims=True)
    else:
        advantages = check_shape(
            "advantages", check_finite_array("advantages", advantages, ndim=2), instance.rewards.shape
        )
    root = np.sqrt(instance.prompt_probs[:, None] * probs)
    design = (root[:, :, None] * centered_features(instance, log_probs)).reshape(-1, instance.dim)
    target = (root * advantages).ravel()
    return np.linalg.lstsq(design, target, rcond=None)[0]


def npg_step(instance: BanditInstance, theta: np.ndarray, beta: float) -> np.ndarray:
    """``theta + w*(theta) / beta``: one exact NPG step of size ``1 / beta`` (paper appendix M).

    Under a linear reward this is the exact mirror-descent target ``theta + theta_star / beta``
    as a policy.
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    theta = check_theta("theta", instance, theta)
    return theta + npg_direction(instance, theta) / beta


def sampled_npg_direction(
    instance: BanditInstance,
    theta: np.ndarray,
    rng: np.random.Generator,
    *,
    batch_size: int,
    group_size: int = 2,
) -> np.ndarray:
    """The NPG direction estimated from ``N`` prompts with ``G`` responses each from ``pi_theta``.

    Ordinary least squares of the leave-one-out advantage
    ``A_ij = r_ij - mean_{k != j} r_ik`` on the scores ``phi(x_i, y_ij) - phibar_theta(x_i)``
    (exact scores, as for every gradient in the package). The leave-one-out baseline is
    independent of ``y_ij``, so the estimate is consistent for ``w*``. Draws ``N G``
    responses in one vectorized call; the caller counts them.

    Parameters
    ----------
    instance, theta
        The bandit and the sampling policy's parameters.
    rng
        The only randomness.
    batch_size
        ``N``, prompts, ``>= 1``.
    group_size
        ``G``, responses per prompt, ``>= 2``.
    """
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", instance, theta)
    check_generator("rng", rng)
    batch_size = check_count("batch_size", batch_size)
    group_size = check_count("group_size", group_size, minimum=2)
    log_probs = log_policy(instance, theta)
    batch = unchecked_draw_batch(instance, log_probs, batch_size, rng, group_size=group_size)
    advantages = batch.rewards - leave_one_out_baseline(batch.rewards)
    scores = centered_features(instance, log_probs)[batch.prompts, batch.responses]
    return np.linalg.lstsq(scores.reshape(-1, instance.dim), advantages.ravel(), rcond=None)[0]


def npg(
    instance: BanditInstance,
    *,
    beta: float,
    n_iterations: int,
    batch_size: int | None = None,
    group_size: int = 2,
    rng: np.random.Generator | None = None,
    record_each_step: bool = False,
) -> Trajectory:
    """Natural policy gradient with step size ``1 / beta``, an instance of APMD (paper appendix M).

    Each of the ``T = n_iterations`` outer iterations resets the reference to ``pi_t`` (one
    reset) and takes one natural-gradient step ``theta_{t+1} = theta_t + w / beta`` (one
    gradient step): with the exact direction :func:`npg_step` when ``batch_size`` is ``None``
    (no responses; the regression enumerates them), else with :func:`sampled_npg_direction`
    from ``N G`` responses drawn from ``pi_t`` in one generation round.

    There is no learning rate, so no :func:`~covpo.algorithms.steps.check_step_stability`: the
    step ``w / beta`` is preconditioned by the inverse Fisher information, so its size times the
    curvature it follows is 1 by construction.

    Parameters
    ----------
    instance
        The bandit.
    beta
        ``> 0``; the step size is ``1 / beta``.
    n_iterations
        ``T``, outer iterations, ``>= 1``.
    batch_size
        ``N``, prompts per outer iteration, ``>= 1``; ``None`` for exact NPG.
    group_size
        ``G``, responses per prompt for sampled NPG, ``>= 2``.
    rng
        The only randomness of sampled NPG (required there); ignored by exact NPG.
    record_each_step
        Record every gradient step's iterate; with one step per outer iteration this is the
        same record as the default.

    Returns
    -------
    Trajectory
        With ``thetas`` and ``inner_kl``, ``E_x KL(pi_{t+1} || pi*_{t+1})`` per outer iteration
        (zero up to rounding for exact NPG under a linear reward).
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    n_iterations = check_count("n_iterations", n_iterations)
    record_each_step = check_flag("record_each_step", record_each_step)
    settings: dict = {"beta": beta, "n_iterations": n_iterations}
    if batch_size is None and rng is not None:
        check_generator("rng", rng)
    if batch_size is not None:
        settings["batch_size"] = check_count("batch_size", batch_size)
        settings["group_size"] = check_count("group_size", group_size, minimum=2)
        check_generator("rng", rng)
    recorder = TrajectoryRecorder(
        "NPG (exact)" if batch_size is None else "NPG (sampled)", instance.optimal_value, settings
    )
    theta = np.array(instance.base_theta, dtype=float)
    log_probs = log_policy(instance, theta)
    recorder.record_iterate(instance, log_probs)
    thetas, inner_kl = [theta], []
    for _ in range(n_iterations):
        log_reference = log_probs  # reset the reference to pi_t
        recorder.count_reset()
        if batch_size is None:
            theta = npg_step(instance, theta, beta)
        else:
            direction = sampled_npg_direction(instance, theta, rng, batch_size=batch_size, group_size=group_size)
            recorder.count_responses(batch_size * group_size)
            theta = theta + direction / beta
        recorder.count_gradient_steps()
        log_probs = log_policy(instance, theta)
        inner_kl.append(unchecked_kl_to_regularized_optimum(instance, log_probs, log_reference, beta))
        recorder.record_iterate(instance, log_probs)
        thetas.append(theta)
    return recorder.finish(thetas=thetas, inner_kl=inner_kl)
