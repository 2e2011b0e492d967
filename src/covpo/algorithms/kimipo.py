"""KimiPO and KimiPO-Norm: APMD regressing log-ratios onto rewards minus a baseline (paper section 4.2, Algorithms 3 and 4).

The exact mirror-descent target of outer iteration ``t`` satisfies, for every prompt and response,

    ``beta log(pi*_{t+1} / pi_t)(y|x) = r(x, y) - b_t(x)``,
    ``b_t(x) = beta log E_{y~pi_t} exp(r(x, y) / beta)``   (the normalizer),

so the inner loop can *regress* the log-ratio onto shifted rewards, with a baseline ``bhat(x)``
standing in for the unknown ``b_t(x)``. Each outer iteration ``t`` resets the reference to
``pi_t``, draws ``N`` prompts with one regression response and ``M`` baseline responses each
from ``pi_t`` (:func:`draw_baseline_batch`), and takes ``K`` full-batch gradient-*descent* steps
from ``theta_t`` on the squared loss

    ``L_hat(theta) = mean_i (r_i - bhat(x_i) - beta log(pi_theta / pi_t)(y_i|x_i))^2``

(:func:`kimi_loss`, gradient :func:`kimi_gradient`). The two algorithms differ in the baseline only:

- **KimiPO** (Algorithm 3, ``baseline="mean"``): the mean reward of the ``M`` extra responses
  (:func:`mean_baseline`; ``M = 1`` in the paper's analysis, ``2 N T`` responses in all). Its
  expectation ``V_t(x) = E_{pi_t} r`` is not ``b_t(x)``; the gap is about ``Var_t(r) / (2 beta)``.
- **KimiPO-Norm** (Algorithm 4, ``baseline="normalizer"``): the plug-in normalizer
  ``beta log mean_j exp(r(x, y'_j) / beta)`` over the ``M`` extra responses (the paper's ``G``,
  :func:`normalizer_baseline`; ``N (M + 1) T`` responses in all); its bias shrinks as ``M`` grows.

The registry runs KimiPO-Norm as ``"kimipo_norm"``, this function with the baseline fixed. The
population analysis of both losses (their curvature, their baselines' moments and biases)
lives in :mod:`covpo.experiments.population`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

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
from covpo.policies import check_bandit, check_policy, unchecked_log_policy
from covpo.trajectory import Trajectory
from covpo.validation import check_count, check_finite_array, check_generator, check_option, check_shape, check_theta

BASELINES = ("mean", "normalizer")
"""KimiPO's mean baseline (Algorithm 3) and KimiPO-Norm's plug-in normalizer (Algorithm 4)."""
LABELS = {"mean": "KimiPO", "normalizer": "KimiPO-Norm"}


def mean_baseline(rewards: np.ndarray) -> np.ndarray:
    """KimiPO's baseline (Algorithm 3): the mean of the extra responses' rewards, over the last axis."""
    rewards = check_finite_array("rewards", rewards)
    if rewards.ndim == 0 or rewards.shape[-1] == 0:
        raise ValueError(f"rewards must have at least one extra response on the last axis, got shape {rewards.shape}")
    return rewards.mean(axis=-1)


def normalizer_baseline(rewards: np.ndarray, beta: float) -> np.ndarray:
    """KimiPO-Norm's baseline (Algorithm 4): ``beta log mean_j exp(r_j / beta)`` over the last axis.

    The plug-in estimate of the normalizer ``b_t(x)`` from ``G`` extra responses, by
    log-sum-exp. With ``G = 1`` it is the single reward, i.e. KimiPO's baseline.
    """
    beta = check_squared_loss_beta(beta)
    rewards = check_finite_array("rewards", rewards)
    if rewards.ndim == 0 or rewards.shape[-1] == 0:
        raise ValueError(f"rewards must have at least one extra response on the last axis, got shape {rewards.shape}")
    return beta * (logsumexp(rewards / beta, axis=-1) - np.log(rewards.shape[-1]))


@dataclass(frozen=True, eq=False)
class BaselineBatch:
    """One outer iteration's batch for KimiPO or KimiPO-Norm (Algorithms 3 and 4).

    Attributes
    ----------
    regression
        ``N`` prompt-response pairs from ``pi_t`` whose log-ratios are regressed, shape ``(N,)``.
    extra_rewards
        Rewards of the ``M`` (or ``G``) extra responses per prompt, drawn from ``pi_t`` for the
        baseline only, shape ``(N, M)``.
    baseline
        ``bhat(x_i)`` computed from ``extra_rewards``, shape ``(N,)``.
    """

    regression: ResponseBatch
    extra_rewards: np.ndarray
    baseline: np.ndarray

    @property
    def size(self) -> int:
        """The number of responses drawn for the batch, ``N (M + 1)``, the baseline's included."""
        return int(self.regression.size + self.extra_rewards.size)


def draw_baseline_batch(
    instance: BanditInstance,
    log_reference: np.ndarray,
    batch_size: int,
    extra_responses: int,
    rng: np.random.Generator,
    *,
    baseline: str = "mean",
    beta: float | None = None,
) -> BaselineBatch:
    """Draw ``N`` prompts, each with one regression response and ``M`` baseline responses from ``pi_t``.

    All ``N (M + 1)`` responses come from one vectorized call
    (:func:`covpo.batches.draw_batch` with a group of ``M + 1``); the first of each group is the
    regression response. ``baseline="mean"`` gives KimiPO's :func:`mean_baseline`,
    ``"normalizer"`` KimiPO-Norm's :func:`normalizer_baseline` (which needs ``beta``).
    """
    log_reference = check_policy("log_reference", check_bandit("instance", instance), log_reference)
    batch_size = check_count("batch_size", batch_size)
    extra_responses = check_count("extra_responses", extra_responses)
    check_generator("rng", rng)
    baseline = check_option("baseline", baseline, BASELINES)
    if baseline == "normalizer":
        if beta is None:
            raise ValueError("beta is None: the normalizer baseline needs the regularization strength")
        beta = check_squared_loss_beta(beta)
    return unchecked_draw_baseline_batch(instance, log_reference, batch_size, extra_responses, rng, baseline, beta)


def unchecked_draw_baseline_batch(
    instance: BanditInstance,
    log_reference: np.ndarray,
    batch_size: int,
    extra_responses: int,
    rng: np.random.Generator,
    baseline: str,
    beta: float | None,
) -> BaselineBatch:
    """:func:`draw_baseline_batch` for arguments the caller has already validated (the runs' outer loop)."""
    group = unchecked_draw_batch(instance, log_reference, batch_size, rng, group_size=extra_responses + 1)
    regression = ResponseBatch.unchecked(
        prompts=group.prompts[:, 0],
        responses=group.responses[:, 0],
        rewards=group.rewards[:, 0],
        log_sampling=group.log_sampling[:, 0],
    )
    extra = group.rewards[:, 1:]
    values = mean_baseline(extra) if baseline == "mean" else normalizer_baseline(extra, beta)
    return BaselineBatch(regression=regression, extra_rewards=extra, baseline=values)


def _check_batch_baseline(batch: ResponseBatch, baseline: np.ndarray) -> np.ndarray:
    if not isinstance(batch, ResponseBatch):
        raise ValueError(f"batch must be a ResponseBatch, got {type(batch).__name__}")
    baseline = check_finite_array("baseline", baseline)
    return check_shape("baseline", baseline, batch.rewards.shape)


def kimi_loss(
    instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch, baseline: np.ndarray, beta: float
) -> float:
    """The empirical Kimi-style loss ``mean_i (r_i - bhat_i - beta log(pi_theta / pi_t)(y_i|x_i))^2`` (Algorithms 3, 4).

    ``batch`` is drawn from ``pi_t`` (its ``log_sampling`` is ``log pi_t``); ``baseline`` holds
    ``bhat(x_i)`` for each pair, e.g. ``BaselineBatch.baseline``.
    """
    instance = check_bandit("instance", instance)
    beta = check_squared_loss_beta(beta)
    baseline = _check_batch_baseline(check_batch("batch", batch, instance), baseline)
    theta = check_theta("theta", theta, (instance.dim,))
    log_ratio = BatchTerms(instance, batch, unchecked_log_policy(instance, theta)).log_ratio
    with np.errstate(over="ignore", invalid="ignore"):
        return finite_result(float(np.mean((batch.rewards - baseline - beta * log_ratio) ** 2)), beta)


def kimi_gradient(
    instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch, baseline: np.ndarray, beta: float
) -> np.ndarray:
    """``grad L_hat = -2 beta mean_i e_i (phi(x_i, y_i) - phibar_theta(x_i))`` of :func:`kimi_loss`."""
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", theta, (instance.dim,))
    beta = check_squared_loss_beta(beta)
    baseline = _check_batch_baseline(check_batch("batch", batch, instance), baseline)
    with np.errstate(over="ignore", invalid="ignore"):
        return finite_result(unchecked_kimi_gradient(instance, theta, batch, baseline, beta), beta)


def unchecked_kimi_gradient(
    instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch, baseline: np.ndarray, beta: float
) -> np.ndarray:
    """:func:`kimi_gradient` for validated arguments, non-finite where the run diverges (the runs' inner loop)."""
    terms = BatchTerms(instance, batch, unchecked_log_policy(instance, theta))
    residual = batch.rewards - baseline - beta * terms.log_ratio
    return -2.0 * beta * terms.score_average(residual)


def check_kimipo(
    *, beta: float, eta: float, n_iterations: int, batch_size: int, inner_steps: int, extra_responses: int,
    baseline: str,
) -> dict[str, object]:
    """The hyperparameters of :func:`kimipo` checked by its rules, as the trajectory stores them (its validator).

    ``beta`` must also stay below the squared loss's :data:`~covpo.algorithms.steps.MAX_BETA`.
    """
    return {
        **check_sampled_apmd(
            beta=beta, eta=eta, n_iterations=n_iterations, batch_size=batch_size, inner_steps=inner_steps
        ),
        "beta": check_squared_loss_beta(beta),
        "baseline": check_option("baseline", baseline, BASELINES),
        "extra_responses": check_count("extra_responses", extra_responses),
    }


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
    baseline: str = "mean",
    record_each_step: bool = False,
    on_inner_step: InnerStepCallback | None = None,
) -> Trajectory:
    """KimiPO (paper section 4.2, Algorithm 3) and KimiPO-Norm (paper section 4.2, Algorithm 4): ``T`` resets, ``K`` descent steps each.

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
        ``M``, baseline responses per prompt (``1`` in the paper's analysis of KimiPO; the
        paper's ``G`` for KimiPO-Norm), ``>= 1``.
    baseline
        ``"mean"`` (KimiPO, :func:`mean_baseline`) or ``"normalizer"`` (KimiPO-Norm,
        :func:`normalizer_baseline`).
    record_each_step
        Record every gradient step's iterate instead of one record per outer iteration.
    on_inner_step
        Optional diagnostics callback, called at every inner iterate ``k = 0, ..., K`` with an
        :class:`~covpo.algorithms.outer_loop.InnerStep` on the regression batch, e.g. a
        :class:`~covpo.algorithms.ratios.RatioRecorder`.

    Returns
    -------
    Trajectory
        Labelled ``"KimiPO"`` or ``"KimiPO-Norm"``, with ``thetas`` (``theta_0, ..., theta_T``) and
        ``inner_kl`` (``E_x KL(pi_{t+1} || pi*_{t+1})`` per outer iteration).
    """
    instance = check_bandit("instance", instance)
    settings = check_kimipo(
        beta=beta, eta=eta, n_iterations=n_iterations, batch_size=batch_size, inner_steps=inner_steps,
        extra_responses=extra_responses, baseline=baseline,
    )
    beta, eta, n_iterations, batch_size, inner_steps, extra_responses, baseline = (
        settings[name]
        for name in ("beta", "eta", "n_iterations", "batch_size", "inner_steps", "extra_responses", "baseline")
    )
    check_generator("rng", rng)
    label = LABELS[baseline]
    check_step_stability(label, eta, beta, feature_scale(instance), loss="kimi")
    loop = OuterLoop(label, instance, settings, beta=beta, record_each_step=record_each_step,
                     on_inner_step=on_inner_step)
    theta = loop.theta
    for t in range(n_iterations):
        log_reference = loop.reset()  # pi_ref <- pi_t
        batch = unchecked_draw_baseline_batch(instance, log_reference, batch_size, extra_responses, rng, baseline, beta)
        loop.count_responses(batch.size)  # N regression responses and N M baseline responses

        def subproblem(batch: BaselineBatch = batch) -> Subproblem:
            return Subproblem(
                lambda at: kimi_loss(instance, at, batch.regression, batch.baseline, beta),
                lambda at: kimi_gradient(instance, at, batch.regression, batch.baseline, beta),
                eta,
                descent=True,
            )

        observe = loop.observer(
            t, subproblem, batch=batch.regression, log_sampling=log_reference, log_reference=log_reference
        )
        for k in range(inner_steps):
            observe(k, theta)
            with np.errstate(over="ignore", invalid="ignore"):
                gradient = unchecked_kimi_gradient(instance, theta, batch.regression, batch.baseline, beta)
            theta = loop.step(theta, -eta, gradient, t, k)  # descent on the loss
        observe(inner_steps, theta)
        loop.end_iteration(theta, log_reference)
    return loop.finish()
