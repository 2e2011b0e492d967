"""PPO-Lite: APMD with a clipped importance-weighted reward and a KL penalty (paper section 3.3, Algorithm 2).

Paper section 3.3, Algorithm 2 and appendix H. The outer loop is PPO-NoClip's
(:mod:`covpo.algorithms.ppo_noclip`): reset the reference to ``pi_t``, draw one batch of ``N``
prompts with one response each from it and take ``K`` gradient steps on that batch. The inner
objective clips the importance-weighted reward and keeps the KL penalty,

    ``mean_i clip(w_i, c_lo, c_hi) r_i - beta KL-term``,

with ``w_i = pi_theta(y_i|x_i) / pi_t(y_i|x_i)`` and the KL term computed exactly per sampled
prompt by default (responses are enumerable here) or by PPO-NoClip's sampled estimate. The
default thresholds ``(exp(-R / beta), exp(R / beta))`` are the narrowest that never clip the
target ``pi*_{t+1}`` (their exponent capped at :data:`MAX_LOG_THRESHOLD`, so they stay finite and
valid however small ``beta`` is).
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.outer_loop import InnerStepCallback, OuterLoop, Subproblem
from covpo.algorithms.steps import check_sampled_apmd, check_step_stability, feature_scale, finite_result
from covpo.batches import (
    BatchTerms,
    ResponseBatch,
    check_batch,
    unchecked_batch_terms,
    unchecked_draw_batch,
    unchecked_prompt_kl,
)
from covpo.instances import BanditInstance
from covpo.policies import check_bandit, check_policy
from covpo.trajectory import Trajectory
from covpo.validation import check_finite_array, check_generator, check_option, check_positive, check_real_array, check_theta

KL_ESTIMATES = ("exact", "sampled")
"""The KL computations of :func:`ppo_lite_objective`: exact per sampled prompt, or PPO-NoClip's sampled estimate."""


MIN_LOG_THRESHOLD = 1e-12
"""Smallest ``|log c|`` those functions accept, so that ``c_lo < 1 < c_hi``; a larger ``beta`` is refused, naming it."""

MAX_LOG_THRESHOLD = 700.0
"""Largest ``|log c|`` :func:`default_clip_thresholds` and :func:`clip_width_thresholds` return, so both thresholds stay finite."""


def default_clip_thresholds(beta: float, max_reward: float) -> tuple[float, float]:
    """``(exp(-R / beta), exp(R / beta))``: the narrowest interval that never clips the target (paper section 3.3).

    The target ratio is ``pi*_{t+1} / pi_t = exp(r / beta) / Z_t(x)`` with
    ``Z_t(x) = E_{pi_t} exp(r / beta)`` in ``[1, exp(R / beta)]`` for rewards in ``[0, R]``, so
    it lies in this interval. Stronger regularization (larger ``beta``) means tighter clipping.
    The exponent ``R / beta`` is capped at :data:`MAX_LOG_THRESHOLD`, so the thresholds stay finite
    and valid however small ``beta`` is (unchanged wherever they were valid); a ``beta`` so large that
    ``R / beta < MIN_LOG_THRESHOLD`` raises ``ValueError`` naming ``beta`` and its valid range.
    """
    return clip_width_thresholds(beta, max_reward, 1.0)


def clip_width_thresholds(beta: float, max_reward: float, width: float) -> tuple[float, float]:
    """``(exp(-width R / beta), exp(width R / beta))``: the default interval scaled in log space.

    ``width = 1`` is :func:`default_clip_thresholds`, the narrowest interval that
    never clips the target; ``width < 1`` clips it, ``width > 1`` is looser. The exponent is
    capped at :data:`MAX_LOG_THRESHOLD` so the thresholds stay finite; an exponent below
    :data:`MIN_LOG_THRESHOLD` (``beta`` so large that both thresholds round to 1) raises ``ValueError`` naming ``beta``.
    """
    beta = check_positive("beta", beta)
    max_reward = check_positive("max_reward", max_reward)
    width = check_positive("width", width)
    with np.errstate(over="ignore", under="ignore"):
        exponent = min(width * max_reward / beta, MAX_LOG_THRESHOLD)
    if exponent < MIN_LOG_THRESHOLD:
        raise ValueError(
            f"beta = {beta!r} is too large for clip thresholds: both would round to 1; the interval needs "
            f"beta <= {width * max_reward / MIN_LOG_THRESHOLD:.3g} here (or explicit thresholds)"
        )
    return float(np.exp(-exponent)), float(np.exp(exponent))


def check_clip_thresholds(thresholds: tuple[float, float]) -> tuple[float, float]:
    """``(c_lo, c_hi)`` if ``0 < c_lo < 1 < c_hi`` (both finite), else ``ValueError`` (paper section 3.3)."""
    pair = check_real_array("thresholds", thresholds)
    if pair.shape != (2,):
        raise ValueError(f"thresholds must be a pair (c_lo, c_hi), got {thresholds!r}")
    low, high = float(pair[0]), float(pair[1])
    if not (0.0 < low < 1.0 < high < np.inf):
        raise ValueError(f"thresholds must satisfy 0 < c_lo < 1 < c_hi < inf, got {thresholds!r}")
    return low, high


def _check_thresholds(instance: BanditInstance, beta: float, thresholds: tuple[float, float] | None) -> tuple[float, float]:
    """``thresholds`` checked, or the default interval for ``instance``'s largest reward; rewards must be ``>= 0``."""
    if instance.rewards.min() < 0.0:
        raise ValueError(
            f"instance.rewards must be >= 0 for the clipped objective clip(w) r, found {instance.rewards.min()!r}"
        )
    if thresholds is not None:
        return check_clip_thresholds(thresholds)
    max_reward = float(instance.rewards.max())
    if max_reward == 0.0:
        raise ValueError(
            "thresholds must be given when every reward of instance is 0: the default interval "
            "(exp(-R / beta), exp(R / beta)) is empty at R = 0"
        )
    return default_clip_thresholds(beta, max_reward)


def ppo_lite_clip_mask(log_ratio: np.ndarray, thresholds: tuple[float, float]) -> np.ndarray:
    """Which samples PPO-Lite clips (Algorithm 2): ``w_i < c_lo`` or ``w_i > c_hi``, not a ratio on a threshold."""
    log_ratio = check_finite_array("log_ratio", log_ratio)
    return _unchecked_clip_mask(log_ratio, check_clip_thresholds(thresholds))


def _unchecked_clip_mask(log_ratio: np.ndarray, thresholds: tuple[float, float]) -> np.ndarray:
    low, high = thresholds
    return (log_ratio < np.log(low)) | (log_ratio > np.log(high))


def _ppo_lite_parts(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    log_reference: np.ndarray,
    beta: float,
    thresholds: tuple[float, float] | None,
    kl: str,
) -> tuple[float, np.ndarray, BatchTerms]:
    low, high = thresholds
    terms = unchecked_batch_terms(instance, theta, batch)
    weights = np.exp(terms.log_ratio)
    clipped = _unchecked_clip_mask(terms.log_ratio, thresholds)
    objective = float(np.mean(np.clip(weights, low, high) * batch.rewards))
    gradient = terms.score_average(np.where(clipped, 0.0, weights * batch.rewards))
    if kl == "exact":
        penalty, penalty_gradient = unchecked_prompt_kl(instance, terms.log_probs, log_reference, batch.prompts)
    else:
        penalty = float(np.mean(weights * terms.log_ratio - weights + 1.0))
        penalty_gradient = terms.score_average(weights * terms.log_ratio)
    return objective - beta * penalty, gradient - beta * penalty_gradient, terms


def _check_parts(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    log_reference: np.ndarray,
    beta: float,
    thresholds: tuple[float, float] | None,
    kl: str,
) -> tuple[BanditInstance, np.ndarray, ResponseBatch, np.ndarray, float, tuple[float, float], str]:
    instance = check_bandit("instance", instance)
    beta = check_positive("beta", beta)
    return (
        instance,
        check_theta("theta", theta, (instance.dim,)),
        check_batch("batch", batch, instance),
        check_policy("log_reference", instance, log_reference),
        beta,
        _check_thresholds(instance, beta, thresholds),
        check_option("kl", kl, KL_ESTIMATES),
    )


def ppo_lite_objective(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    log_reference: np.ndarray,
    beta: float,
    *,
    thresholds: tuple[float, float] | None = None,
    kl: str = "exact",
) -> float:
    """PPO-Lite's ``mean_i clip(w_i, c_lo, c_hi) r_i - beta KL-term`` (paper section 3.3, Algorithm 2).

    Parameters
    ----------
    instance
        The bandit; rewards must be ``>= 0`` (the paper's setting ``r in [0, R]``).
    theta
        Parameters of ``pi_theta``.
    batch
        Drawn from the reference ``pi_t`` (the sampling policy is the reference in APMD).
    log_reference
        The table ``log pi_t(y|x)``, for the exact KL.
    beta
        Regularization strength, ``> 0``.
    thresholds
        ``(c_lo, c_hi)`` with ``0 < c_lo < 1 < c_hi``; by default
        :func:`default_clip_thresholds` with ``R`` the instance's largest reward.
    kl
        ``"exact"``: ``mean_i KL(pi_theta(.|x_i) || pi_t(.|x_i))`` summed over all responses of
        each sampled prompt (the population penalty of the paper, per sampled prompt);
        ``"sampled"``: PPO-NoClip's unbiased estimate ``mean_i (w_i log w_i - w_i + 1)``.
    """
    arguments = _check_parts(instance, theta, batch, log_reference, beta, thresholds, kl)
    with np.errstate(over="ignore", invalid="ignore"):
        return finite_result(_ppo_lite_parts(*arguments)[0], beta)


def ppo_lite_gradient(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    log_reference: np.ndarray,
    beta: float,
    *,
    thresholds: tuple[float, float] | None = None,
    kl: str = "exact",
) -> np.ndarray:
    """Gradient of :func:`ppo_lite_objective` (Algorithm 2; paper appendix H.3.1).

    The clipped term contributes ``w_i r_i (phi - phibar)`` where ``c_lo <= w_i <= c_hi`` and
    nothing where the ratio is clipped (``clip`` is flat there; a ratio exactly on a
    threshold counts as unclipped, the one-sided derivative from inside). Since ``r >= 0``,
    clipping ``w`` and clipping ``w r`` agree. The KL term's gradient is exact
    (:func:`covpo.batches.prompt_kl`) or ``mean_i w_i log w_i (phi - phibar)`` for the sampled estimate.
    """
    arguments = _check_parts(instance, theta, batch, log_reference, beta, thresholds, kl)
    with np.errstate(over="ignore", invalid="ignore"):
        return finite_result(_ppo_lite_parts(*arguments)[1], beta)


def check_ppo_lite(
    *, beta: float, eta: float, n_iterations: int, batch_size: int, inner_steps: int,
    thresholds: tuple[float, float] | None, kl: str,
) -> dict[str, object]:
    """The hyperparameters of :func:`ppo_lite` checked by its rules, as the trajectory stores them (its validator).

    ``thresholds=None`` stays ``None`` here: the default interval needs the instance's rewards.
    """
    return {
        **check_sampled_apmd(
            beta=beta, eta=eta, n_iterations=n_iterations, batch_size=batch_size, inner_steps=inner_steps
        ),
        "thresholds": None if thresholds is None else check_clip_thresholds(thresholds),
        "kl": check_option("kl", kl, KL_ESTIMATES),
    }


def ppo_lite(
    instance: BanditInstance,
    *,
    beta: float,
    eta: float,
    n_iterations: int,
    batch_size: int,
    inner_steps: int,
    rng: np.random.Generator,
    thresholds: tuple[float, float] | None = None,
    kl: str = "exact",
    record_each_step: bool = False,
    on_inner_step: InnerStepCallback | None = None,
) -> Trajectory:
    """PPO-Lite (paper section 3.3, Algorithm 2): ``T`` resets, each with ``K`` ascent steps on the clipped objective.

    Each outer iteration resets the reference to ``pi_t`` (one reset), draws ``N`` prompts with
    one response each from ``pi_t`` (``N`` responses, one generation round) and takes ``K``
    steps ``theta <- theta + eta g`` with ``g`` :func:`ppo_lite_gradient` on that batch.
    The thresholds used are stored in the trajectory's settings.

    Parameters
    ----------
    instance
        The bandit; rewards must be ``>= 0``.
    beta, eta, n_iterations, batch_size, inner_steps, rng, record_each_step
        As for :func:`covpo.algorithms.ppo_noclip.ppo_noclip`.
    thresholds
        ``(c_lo, c_hi)`` with ``0 < c_lo < 1 < c_hi``; ``None`` for
        :func:`default_clip_thresholds` with ``R`` the instance's largest reward.
    kl
        ``"exact"`` (per sampled prompt, the default) or ``"sampled"``; see :func:`ppo_lite_objective`.
    on_inner_step
        Optional diagnostics callback, called with an
        :class:`~covpo.algorithms.outer_loop.InnerStep` at every inner iterate ``k = 0, ..., K``; its
        clip fraction is the share of the batch with ``w_i`` outside ``[c_lo, c_hi]``.

    Returns
    -------
    Trajectory
        Costs and iterates, with ``thetas`` and ``inner_kl`` as for PPO-NoClip.

    Raises
    ------
    FloatingPointError
        If a step leaves ``theta`` non-finite.
    """
    instance = check_bandit("instance", instance)
    settings = check_ppo_lite(
        beta=beta, eta=eta, n_iterations=n_iterations, batch_size=batch_size, inner_steps=inner_steps,
        thresholds=thresholds, kl=kl,
    )
    beta, eta, n_iterations, batch_size, inner_steps, kl = (
        settings[name] for name in ("beta", "eta", "n_iterations", "batch_size", "inner_steps", "kl")
    )
    thresholds = settings["thresholds"] = _check_thresholds(instance, beta, thresholds)
    check_generator("rng", rng)
    check_step_stability("PPO-Lite", eta, beta, feature_scale(instance))

    def clip_mask(log_ratio: np.ndarray) -> np.ndarray:
        return ppo_lite_clip_mask(log_ratio, thresholds)

    loop = OuterLoop("PPO-Lite", instance, settings, beta=beta, record_each_step=record_each_step,
                     on_inner_step=on_inner_step)
    theta = loop.theta
    for t in range(n_iterations):
        log_reference = loop.reset()  # pi_ref <- pi_t
        batch = unchecked_draw_batch(instance, log_reference, batch_size, rng)
        loop.count_responses(batch.size)

        def subproblem(batch: ResponseBatch = batch, log_reference: np.ndarray = log_reference) -> Subproblem:
            options = {"thresholds": thresholds, "kl": kl}
            return Subproblem(
                lambda at: ppo_lite_objective(instance, at, batch, log_reference, beta, **options),
                lambda at: ppo_lite_gradient(instance, at, batch, log_reference, beta, **options),
                eta,
            )

        observe = loop.observer(
            t, subproblem, batch=batch, log_sampling=log_reference, log_reference=log_reference, clip_mask=clip_mask
        )
        for k in range(inner_steps):
            observe(k, theta)
            with np.errstate(over="ignore", invalid="ignore"):
                gradient = _ppo_lite_parts(instance, theta, batch, log_reference, beta, thresholds, kl)[1]
            theta = loop.step(theta, eta, gradient, t, k)
        observe(inner_steps, theta)
        loop.end_iteration(theta, log_reference)
    return loop.finish()
