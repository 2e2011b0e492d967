"""Rebel-OnPolicy: APMD regressing log-ratio differences onto reward differences (paper section 4.3, Algorithm 5).

Each outer iteration ``t`` resets the reference to ``pi_t``, draws ``N`` prompts with a pair of
responses ``(y_i, y'_i)`` each from ``pi_t``, and takes ``K`` full-batch gradient-*descent*
steps from ``theta_t`` on the pairwise squared loss

    ``L_hat(theta) = mean_i (beta [u_theta(y_i) - u_theta(y'_i)] - (r(x_i, y_i) - r(x_i, y'_i)))^2``,
    ``u_theta = log(pi_theta / pi_t)``

(:func:`covpo.algorithms.squared_loss.rebel_loss`, gradient
:func:`covpo.algorithms.squared_loss.rebel_gradient`). The normalizer ``b_t(x)`` cancels in
the difference, so no baseline is needed and the loss is unbiased.
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.squared_loss import unchecked_rebel_gradient
from covpo.algorithms.steps import (
    InnerStepCallback,
    ascent_step,
    check_step_stability,
    feature_scale,
    inner_step_observer,
)
from covpo.batches import unchecked_draw_batch
from covpo.instances import BanditInstance
from covpo.objectives import unchecked_regularized_optimum
from covpo.policies import check_bandit, log_policy, unchecked_expected_kl, unchecked_log_policy
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import check_count, check_flag, check_generator, check_positive


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
    """Rebel-OnPolicy (paper Algorithm 5, section 4.3): ``T`` resets, each ``K`` descent steps on the pairwise loss.

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
        :class:`~covpo.algorithms.steps.InnerStep` on the pairs (both responses of each), e.g.
        a :class:`~covpo.algorithms.ratios.RatioRecorder`.

    Returns
    -------
    Trajectory
        With ``thetas`` (``theta_0, ..., theta_T``) and ``inner_kl``
        (``E_x KL(pi_{t+1} || pi*_{t+1})`` per outer iteration).
    """
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    n_iterations = check_count("n_iterations", n_iterations)
    batch_size = check_count("batch_size", batch_size)
    inner_steps = check_count("inner_steps", inner_steps)
    check_generator("rng", rng)
    record_each_step = check_flag("record_each_step", record_each_step)
    check_step_stability("Rebel-OnPolicy", eta, beta, feature_scale(instance), loss="rebel")
    settings = {
        "beta": beta,
        "n_iterations": n_iterations,
        "batch_size": batch_size,
        "inner_steps": inner_steps,
        "eta": eta,
    }
    recorder = TrajectoryRecorder("Rebel-OnPolicy", instance.optimal_value, settings)
    theta = np.array(instance.base_theta, dtype=float)
    log_probs = log_policy(instance, theta)
    recorder.record_iterate(instance, log_probs)
    thetas, inner_kl = [theta], []
    for t in range(n_iterations):
        log_reference = log_probs  # reset the reference to pi_t
        recorder.count_reset()
        log_target = unchecked_regularized_optimum(instance, log_reference, beta)
        batch = unchecked_draw_batch(instance, log_reference, batch_size, rng, group_size=2)
        recorder.count_responses(batch.size)  # a pair of responses per prompt
        observe = inner_step_observer(on_inner_step, instance, t, batch, log_reference, recorder)
        for k in range(inner_steps):
            observe(k, theta)
            with np.errstate(over="ignore", invalid="ignore"):
                gradient = unchecked_rebel_gradient(instance, theta, batch, beta)
            theta = ascent_step(theta, -eta, gradient, t, k + 1)  # descent on the loss
            recorder.count_gradient_steps()
            if record_each_step:
                recorder.record_iterate(instance, unchecked_log_policy(instance, theta))
        observe(inner_steps, theta)
        log_probs = unchecked_log_policy(instance, theta)
        inner_kl.append(unchecked_expected_kl(instance, log_probs, log_target))
        if not record_each_step:
            recorder.record_iterate(instance, log_probs)
        thetas.append(theta)
    return recorder.finish(thetas=thetas, inner_kl=inner_kl)
