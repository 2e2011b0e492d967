"""KimiPO: APMD by regressing log-ratios onto rewards minus a mean baseline (paper section 4.2, Algorithm 3).

Each outer iteration ``t`` resets the reference to ``pi_t``, draws ``N`` prompts with one
regression response and ``M`` baseline responses each from ``pi_t`` (``M = 1`` in the paper's
analysis), sets ``bhat(x_i)`` to the mean reward of the ``M`` baseline responses, and takes
``K`` full-batch gradient-*descent* steps from ``theta_t`` on the squared loss

    ``L_hat(theta) = mean_i (r_i - bhat(x_i) - beta log(pi_theta / pi_t)(y_i|x_i))^2``

(:func:`covpo.algorithms.squared_loss.kimi_loss`, gradient
:func:`covpo.algorithms.squared_loss.kimi_gradient`). The loss and the baselines' analysis
live in :mod:`covpo.algorithms.squared_loss`.
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.squared_loss import unchecked_draw_baseline_batch, unchecked_kimi_gradient
from covpo.algorithms.steps import (
    InnerStepCallback,
    ascent_step,
    check_step_stability,
    feature_scale,
    inner_step_observer,
)
from covpo.instances import BanditInstance
from covpo.objectives import unchecked_regularized_optimum
from covpo.policies import check_bandit, log_policy, unchecked_expected_kl, unchecked_log_policy
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import check_count, check_flag, check_generator, check_positive


def kimipo(
    instance: BanditInstance,
    *,
    beta: float,
    eta: float,
    n_iterations: int,
    batch_size: int,
    inner_steps: int,
    rng: np.random.Generator,
    extra_responses: int = 1,
    record_each_step: bool = False,
    on_inner_step: InnerStepCallback | None = None,
) -> Trajectory:
    """KimiPO (paper Algorithm 3, section 4.2): ``T`` resets, each ``K`` descent steps on the Kimi loss.

    Each outer iteration costs ``N (M + 1)`` responses in one generation round (``2 N`` for the
    paper's ``M = 1``), one reset and ``K`` gradient steps. All randomness comes from ``rng``:
    a seed fixes the run bit for bit.

    Parameters
    ----------
    instance
        The bandit.
    beta
        Regularization strength toward each reset reference, ``> 0``.
    eta
        Learning rate, ``> 0``; the loss's curvature near ``theta_t`` is about ``2 beta^2``
        times the feature covariance, so ``eta`` should shrink like ``1 / beta^2``.
    n_iterations
        ``T``, outer iterations (resets), ``>= 1``.
    batch_size
        ``N``, prompts per outer iteration, ``>= 1``.
    inner_steps
        ``K``, full-batch descent steps on the reused batch, ``>= 1``.
    rng
        The run's only source of randomness.
    extra_responses
        ``M``, baseline responses per prompt averaged into ``bhat`` (``1`` in the paper).
    record_each_step
        Record every gradient step's iterate instead of one record per outer iteration.
    on_inner_step
        Optional diagnostics callback, called at every inner iterate ``k = 0, ..., K`` with an
        :class:`~covpo.algorithms.steps.InnerStep` on the regression batch, e.g. a
        :class:`~covpo.algorithms.ratios.RatioRecorder`.

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
    extra_responses = check_count("extra_responses", extra_responses)
    check_generator("rng", rng)
    record_each_step = check_flag("record_each_step", record_each_step)
    check_step_stability("KimiPO", eta, beta, feature_scale(instance), loss="kimi")
    settings = {
        "beta": beta,
        "n_iterations": n_iterations,
        "batch_size": batch_size,
        "inner_steps": inner_steps,
        "eta": eta,
        "baseline": "mean",
        "extra_responses": extra_responses,
    }
    recorder = TrajectoryRecorder("KimiPO", instance.optimal_value, settings)
    theta = np.array(instance.base_theta, dtype=float)
    log_probs = log_policy(instance, theta)
    recorder.record_iterate(instance, log_probs)
    thetas, inner_kl = [theta], []
    for t in range(n_iterations):
        log_reference = log_probs  # reset the reference to pi_t
        recorder.count_reset()
        log_target = unchecked_regularized_optimum(instance, log_reference, beta)
        batch = unchecked_draw_baseline_batch(instance, log_reference, batch_size, extra_responses, rng, "mean", None)
        recorder.count_responses(batch.size)  # N regression responses and N M baseline responses
        observe = inner_step_observer(on_inner_step, instance, t, batch.regression, log_reference, recorder)
        for k in range(inner_steps):
            observe(k, theta)
            with np.errstate(over="ignore", invalid="ignore"):
                gradient = unchecked_kimi_gradient(instance, theta, batch.regression, batch.baseline, beta)
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
