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
loss from ``theta_t`` (:mod:`covpo.experiments.population`), which is how the paper relates it to
the squared-loss methods.
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.outer_loop import InnerStepCallback, OuterLoop, Subproblem
from covpo.batches import ResponseBatch, check_batch, unchecked_draw_batch
from covpo.instances import BanditInstance
from covpo.objectives import regularized_objective
from covpo.policies import centered_features, check_bandit, leave_one_out_baseline, log_policy
from covpo.trajectory import Trajectory
from covpo.validation import check_count, check_finite_array, check_generator, check_positive, check_shape, check_theta


def fisher_information(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """``F(theta) = E_x E_{y~pi_theta}[(phi - phibar)(phi - phibar)^T]``, shape ``(d, d)`` (standard; paper section 2.2's class)."""
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", theta, (instance.dim,))
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
    theta = check_theta("theta", theta, (instance.dim,))
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
    theta = check_theta("theta", theta, (instance.dim,))
    return theta + npg_direction(instance, theta) / beta


def sampled_npg_direction(
    instance: BanditInstance,
    theta: np.ndarray,
    rng: np.random.Generator,
    *,
    batch_size: int,
    group_size: int = 2,
) -> np.ndarray:
    """The NPG direction estimated from ``N`` prompts with ``G`` responses each drawn from ``pi_theta`` (:func:`batch_npg_direction`).

    Draws ``N G`` responses in one vectorized call; the caller counts them.

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
    theta = check_theta("theta", theta, (instance.dim,))
    check_generator("rng", rng)
    batch_size = check_count("batch_size", batch_size)
    group_size = check_count("group_size", group_size, minimum=2)
    log_probs = log_policy(instance, theta)
    batch = unchecked_draw_batch(instance, log_probs, batch_size, rng, group_size=group_size)
    return _batch_direction(instance, log_probs, batch)


def batch_npg_direction(instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch) -> np.ndarray:
    """The NPG direction estimated from a batch of groups drawn from ``pi_theta`` (paper appendix M).

    Ordinary least squares of the leave-one-out advantage ``A_ij = r_ij - mean_{k != j} r_ik``
    on the scores ``phi(x_i, y_ij) - phibar_theta(x_i)`` (exact scores, as for every gradient in
    the package). The leave-one-out baseline is independent of ``y_ij``, so the estimate is
    consistent for ``w*``. ``batch`` has shape ``(N, G)`` with ``G >= 2``.
    """
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", theta, (instance.dim,))
    batch = check_batch("batch", batch, instance)
    if batch.responses.ndim != 2 or batch.responses.shape[1] < 2:
        raise ValueError(f"batch must hold groups of at least 2 responses, shape (N, G), got {batch.responses.shape}")
    return _batch_direction(instance, log_policy(instance, theta), batch)


def _batch_direction(instance: BanditInstance, log_probs: np.ndarray, batch: ResponseBatch) -> np.ndarray:
    """:func:`batch_npg_direction` for validated arguments, ``log_probs`` the table of the batch's policy."""
    advantages = batch.rewards - leave_one_out_baseline(batch.rewards)
    scores = centered_features(instance, log_probs)[batch.prompts, batch.responses]
    return np.linalg.lstsq(scores.reshape(-1, instance.dim), advantages.ravel(), rcond=None)[0]


def check_npg(*, beta: float, n_iterations: int, batch_size: int | None, group_size: int) -> dict[str, object]:
    """The hyperparameters of :func:`npg` checked by its rules, as the trajectory stores them (its validator).

    ``batch_size=None`` (exact NPG) leaves ``batch_size`` and ``group_size`` out of the settings.
    """
    settings: dict[str, object] = {"beta": check_positive("beta", beta), "n_iterations": check_count("n_iterations", n_iterations)}
    if batch_size is not None:
        settings["batch_size"] = check_count("batch_size", batch_size)
        settings["group_size"] = check_count("group_size", group_size, minimum=2)
    return settings


def npg(
    instance: BanditInstance,
    *,
    beta: float,
    n_iterations: int,
    batch_size: int | None = None,
    group_size: int = 2,
    rng: np.random.Generator | None = None,
    record_each_step: bool = False,
    on_inner_step: InnerStepCallback | None = None,
) -> Trajectory:
    """Natural policy gradient with step size ``1 / beta``, an instance of APMD (paper appendix M).

    Each of the ``T = n_iterations`` outer iterations resets the reference to ``pi_t`` (one
    reset) and takes one natural-gradient step ``theta_{t+1} = theta_t + w / beta`` (one
    gradient step): with the exact direction :func:`npg_step` when ``batch_size`` is ``None``
    (no responses; the regression enumerates them), else with :func:`batch_npg_direction`
    on ``N G`` responses drawn from ``pi_t`` in one generation round.

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
    on_inner_step
        Optional diagnostics callback, called with an
        :class:`~covpo.algorithms.outer_loop.InnerStep` before and after every natural-gradient step.

    Returns
    -------
    Trajectory
        With ``thetas`` and ``inner_kl``, ``E_x KL(pi_{t+1} || pi*_{t+1})`` per outer iteration
        (zero up to rounding for exact NPG under a linear reward).
    """
    instance = check_bandit("instance", instance)
    settings = check_npg(beta=beta, n_iterations=n_iterations, batch_size=batch_size, group_size=group_size)
    beta, n_iterations = settings["beta"], settings["n_iterations"]
    if batch_size is not None or rng is not None:
        check_generator("rng", rng)
    loop = OuterLoop(
        "NPG (exact)" if batch_size is None else "NPG (sampled)", instance, settings, beta=beta,
        record_each_step=record_each_step, on_inner_step=on_inner_step,
    )
    theta = loop.theta
    for t in range(n_iterations):
        log_reference = loop.reset()  # pi_ref <- pi_t
        batch = None
        if batch_size is not None:
            batch = unchecked_draw_batch(instance, log_reference, settings["batch_size"], rng, settings["group_size"])
            loop.count_responses(batch.size)

        def subproblem(batch: ResponseBatch | None = batch, log_reference: np.ndarray = log_reference) -> Subproblem:
            def update(at: np.ndarray) -> np.ndarray:
                if batch is None:
                    return npg_step(instance, at, beta)
                return at + batch_npg_direction(instance, at, batch) / beta

            return Subproblem(
                lambda at: regularized_objective(instance, log_policy(instance, at), log_reference, beta), update=update
            )

        observe = loop.observer(
            t, subproblem, batch=batch, log_sampling=None if batch is None else log_reference, log_reference=log_reference
        )
        observe(0, theta)
        if batch is None:
            theta = npg_step(instance, theta, beta)
        else:
            theta = theta + _batch_direction(instance, log_reference, batch) / beta
        loop.count_step(theta)
        observe(1, theta)
        loop.end_iteration(theta, log_reference)
    return loop.finish()
