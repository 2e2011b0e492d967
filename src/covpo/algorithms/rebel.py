"""Rebel-OnPolicy: APMD regressing log-ratio differences onto reward differences (paper section 4.3, Algorithm 5).

Each outer iteration ``t`` resets the reference to ``pi_t``, draws ``N`` prompts with a pair of
responses ``(y_i, y'_i)`` each from ``pi_t``, and takes ``K`` full-batch gradient-*descent*
steps from ``theta_t`` on the pairwise squared loss

    ``L_hat(theta) = mean_i (beta [u_theta(y_i) - u_theta(y'_i)] - (r(x_i, y_i) - r(x_i, y'_i)))^2``,
    ``u_theta = log(pi_theta / pi_t)``

(:func:`rebel_loss`, gradient :func:`rebel_gradient`). The normalizer ``b_t(x)`` cancels in
the difference, so no baseline is needed and the loss is unbiased. For softmax-linear policies
the population loss is a convex quadratic in ``theta``, zero at the target (its analysis is in
:mod:`covpo.experiments.population`).
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.outer_loop import InnerStepCallback, OuterLoop, Subproblem
from covpo.algorithms.steps import (
    check_sampled_apmd,
    check_squared_loss_beta,
    check_step_stability,
    feature_scale,
    finite_result,
)
from covpo.batches import BatchTerms, ResponseBatch, check_batch, unchecked_draw_batch
from covpo.instances import BanditInstance
from covpo.policies import check_bandit, feature_sums, unchecked_log_policy
from covpo.trajectory import Trajectory
from covpo.validation import check_generator, check_theta


def _pair_table(
    instance: BanditInstance, prompts: np.ndarray, responses: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """``sum_{i: (x_i, y_i) = (x, y)} w_i`` for every pair ``(x, y)``, shape ``(n_prompts, n_responses)``."""
    cells = np.ravel(prompts * instance.n_responses + responses)
    size = instance.n_prompts * instance.n_responses
    return np.bincount(cells, weights=np.ravel(weights), minlength=size).reshape(instance.rewards.shape)


def _check_pairs(batch: ResponseBatch) -> ResponseBatch:
    if not isinstance(batch, ResponseBatch):
        raise ValueError(f"batch must be a ResponseBatch, got {type(batch).__name__}")
    if batch.responses.ndim != 2 or batch.responses.shape[1] != 2:
        raise ValueError(f"batch must hold pairs of responses, shape (N, 2), got shape {batch.responses.shape}")
    return batch


def rebel_loss(instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch, beta: float) -> float:
    """Rebel-OnPolicy's empirical loss ``mean_i (beta [u_i - u'_i] - (r_i - r'_i))^2`` (Algorithm 5).

    ``batch`` holds pairs ``(y_i, y'_i)`` from ``pi_t``, shape ``(N, 2)``
    (``draw_batch(..., group_size=2)``); ``u = log(pi_theta / pi_t)``.
    """
    instance = check_bandit("instance", instance)
    beta = check_squared_loss_beta(beta)
    batch = _check_pairs(check_batch("batch", batch, instance))
    theta = check_theta("theta", theta, (instance.dim,))
    log_ratio = BatchTerms(instance, batch, unchecked_log_policy(instance, theta)).log_ratio
    with np.errstate(over="ignore", invalid="ignore"):
        residual = beta * (log_ratio[:, 0] - log_ratio[:, 1]) - (batch.rewards[:, 0] - batch.rewards[:, 1])
        return finite_result(float(np.mean(residual**2)), beta)


def rebel_gradient(instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch, beta: float) -> np.ndarray:
    """``2 beta mean_i res_i (phi(x_i, y_i) - phi(x_i, y'_i))``, the gradient of :func:`rebel_loss`.

    The difference of scores is the difference of features: ``phibar_theta`` cancels, so the
    features are differenced directly.
    """
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", theta, (instance.dim,))
    beta = check_squared_loss_beta(beta)
    batch = _check_pairs(check_batch("batch", batch, instance))
    with np.errstate(over="ignore", invalid="ignore"):
        return finite_result(unchecked_rebel_gradient(instance, theta, batch, beta), beta)


def unchecked_rebel_gradient(instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch, beta: float) -> np.ndarray:
    """:func:`rebel_gradient` for validated arguments, non-finite where the run diverges (the runs' inner loop).

    The feature differences are summed through the pair table (each pair adds ``res_i`` at
    ``(x_i, y_i)`` and ``-res_i`` at ``(x_i, y'_i)``): the batch's features are never gathered.
    """
    log_ratio = BatchTerms(instance, batch, unchecked_log_policy(instance, theta)).log_ratio
    residual = beta * (log_ratio[:, 0] - log_ratio[:, 1]) - (batch.rewards[:, 0] - batch.rewards[:, 1])
    table = _pair_table(instance, batch.prompts, batch.responses, np.stack([residual, -residual], axis=1))
    return 2.0 * beta * feature_sums(instance, table) / residual.size


def check_rebel_onpolicy(*, beta: float, eta: float, n_iterations: int, batch_size: int, inner_steps: int) -> dict[str, object]:
    """The hyperparameters of :func:`rebel_onpolicy` checked by its rules, as the trajectory stores them (its validator).

    Rebel-OnPolicy has only the hyperparameters of every sampled instance of APMD
    (:func:`~covpo.algorithms.steps.check_sampled_apmd`), with ``beta`` below the squared loss's
    :data:`~covpo.algorithms.steps.MAX_BETA`: its pairs need no count of their own.
    """
    return {
        **check_sampled_apmd(
            beta=beta, eta=eta, n_iterations=n_iterations, batch_size=batch_size, inner_steps=inner_steps
        ),
        "beta": check_squared_loss_beta(beta),
    }


def rebel_onpolicy(
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
) -> Trajectory:
    """Rebel-OnPolicy (paper section 4.3, Algorithm 5): ``T`` resets, each ``K`` descent steps on the pairwise loss.

    Each outer iteration costs ``2 N`` responses in one generation round, one reset and ``K``
    gradient steps. All randomness comes from ``rng``: a seed fixes the run bit for bit.

    Parameters
    ----------
    instance
        The bandit.
    beta
        Regularization strength toward each reset reference, ``> 0``.
    eta
        Learning rate, ``> 0``; the empirical Hessian is the constant
        ``2 beta^2 mean_i d_i d_i^T`` with ``d_i = phi(x_i, y_i) - phi(x_i, y'_i)``, so ``eta``
        below ``1 / (beta^2 max_i |d_i|^2)`` always descends.
    n_iterations
        ``T``, outer iterations (resets), ``>= 1``.
    batch_size
        ``N``, prompts per outer iteration, each with a pair of responses, ``>= 1``.
    inner_steps
        ``K``, full-batch descent steps on the reused batch, ``>= 1``.
    rng
        The run's only source of randomness.
    record_each_step
        Record every gradient step's iterate instead of one record per outer iteration.
    on_inner_step
        Optional diagnostics callback, called at every inner iterate ``k = 0, ..., K`` with an
        :class:`~covpo.algorithms.outer_loop.InnerStep` on the pairs (both responses of each), e.g.
        a :class:`~covpo.algorithms.ratios.RatioRecorder`.

    Returns
    -------
    Trajectory
        With ``thetas`` (``theta_0, ..., theta_T``) and ``inner_kl``
        (``E_x KL(pi_{t+1} || pi*_{t+1})`` per outer iteration).
    """
    instance = check_bandit("instance", instance)
    settings = check_rebel_onpolicy(
        beta=beta, eta=eta, n_iterations=n_iterations, batch_size=batch_size, inner_steps=inner_steps
    )
    beta, eta, n_iterations, batch_size, inner_steps = (
        settings[name] for name in ("beta", "eta", "n_iterations", "batch_size", "inner_steps")
    )
    check_generator("rng", rng)
    check_step_stability("Rebel-OnPolicy", eta, beta, feature_scale(instance), loss="rebel")
    loop = OuterLoop("Rebel-OnPolicy", instance, settings, beta=beta, record_each_step=record_each_step,
                     on_inner_step=on_inner_step)
    theta = loop.theta
    for t in range(n_iterations):
        log_reference = loop.reset()  # pi_ref <- pi_t
        batch = unchecked_draw_batch(instance, log_reference, batch_size, rng, group_size=2)
        loop.count_responses(batch.size)  # a pair of responses per prompt

        def subproblem(batch: ResponseBatch = batch) -> Subproblem:
            return Subproblem(
                lambda at: rebel_loss(instance, at, batch, beta),
                lambda at: rebel_gradient(instance, at, batch, beta),
                eta,
                descent=True,
            )

        observe = loop.observer(t, subproblem, batch=batch, log_sampling=log_reference, log_reference=log_reference)
        for k in range(inner_steps):
            observe(k, theta)
            with np.errstate(over="ignore", invalid="ignore"):
                gradient = unchecked_rebel_gradient(instance, theta, batch, beta)
            theta = loop.step(theta, -eta, gradient, t, k)  # descent on the loss
        observe(inner_steps, theta)
        loop.end_iteration(theta, log_reference)
    return loop.finish()
