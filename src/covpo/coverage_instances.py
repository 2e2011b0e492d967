"""Realizable softmax-linear instances whose base-model coverage is set by a dial (paper sections 1.3 and 2.2).

The paper's guarantees for PPO-NoClip and PPO-Lite (paper sections 3.2 and 3.3) bound
responses and gradient steps by a polynomial in the coverage coefficient
``C_cov = E_x 1 / c_0(x)``. To plot costs against ``C_cov`` we need a family of instances
that keeps the features and the (linear) reward fixed and moves only the base model.

With a linear reward ``r(x, y) = <theta_star, phi(x, y)> + c(x)``, shifting the base
parameters along ``theta_star``,

    ``theta_0(s) = theta_rand - s theta_star``,

tilts the base model against the reward, ``pi_0(s) proportional to pi_rand exp(-s r)``: the
prompt-dependent constant ``c(x)`` cancels in the normalization. The optimal set's
probability is non-increasing in ``s`` (its log derivative is ``-(max_y r - E_{pi_0(s)} r)``),
so ``C_cov(s)`` is monotone and a one-dimensional root finder sets it to any target above 1.
Only the base model changes: features, rewards, ``theta_star`` and ``J*`` stay as they were.
This family is ours; the paper's constants and instances are not reproduced.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from covpo.instances import BanditInstance, random_softmax_linear_instance
from covpo.policies import check_bandit, unchecked_log_coverage, unchecked_log_policy
from covpo.validation import check_count, check_generator, check_option, check_positive, check_theta

COVERAGE_STATISTICS = ("mean", "max")
MAX_BRACKET_DOUBLINGS = 60
ROOT_TOLERANCE = 1e-12


def log_coverage_coefficient(instance: BanditInstance, theta: np.ndarray, statistic: str = "mean") -> float:
    """``log C_cov`` of ``pi_theta``: ``log E_x 1/c(x)`` (``"mean"``) or ``log max_x 1/c(x)`` (``"max"``).

    Coverage as in paper section 1.3; our reconstruction takes ``C_cov = E_x[1 / c_{pi_0}(x)]``
    and calls the maximum over prompts its worst-case variant. Computed from log coverage by log-sum-exp, so it stays finite
    when a coverage underflows.
    """
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", theta, (instance.dim,))
    return _log_coverage_coefficient(instance, theta, check_option("statistic", statistic, COVERAGE_STATISTICS))


def _log_coverage_coefficient(instance: BanditInstance, theta: np.ndarray, statistic: str) -> float:
    """:func:`log_coverage_coefficient` for arguments already validated."""
    inverse = -unchecked_log_coverage(instance, unchecked_log_policy(instance, theta))
    if statistic == "max":
        return float(inverse.max())
    support = instance.prompt_probs > 0.0
    return float(logsumexp(inverse[support], b=instance.prompt_probs[support]))


def _check_realizable_direction(instance: BanditInstance) -> np.ndarray:
    if instance.reward_theta is None:
        raise ValueError("instance.reward_theta is None: dialling coverage needs a linear reward")
    direction = np.asarray(instance.reward_theta, dtype=float)
    if not np.any(direction):
        raise ValueError("instance.reward_theta is zero: the rewards are tied and coverage cannot be dialled")
    if np.ptp(instance.rewards, axis=1).max() <= 0.0:
        raise ValueError("instance.rewards are tied on every prompt: every base model has coverage 1")
    return direction


def coverage_shift(instance: BanditInstance, target_coverage: float, statistic: str = "mean") -> float:
    """The scalar ``s`` with ``C_cov(theta_0 - s theta_star) = target_coverage``.

    Solves the monotone equation ``log C_cov(s) = log target_coverage`` with
    :func:`scipy.optimize.brentq`, after doubling a bracket around ``s = 0``. Negative ``s``
    tilts the base model toward the reward (higher coverage), positive ``s`` against it.

    Parameters
    ----------
    instance
        A realizable instance (``reward_theta`` set, rewards not tied on every prompt).
    target_coverage
        The desired ``C_cov``, ``> 1`` (``C_cov >= 1`` always; it equals 1 only for a base
        model that puts all its mass on optimal responses).
    statistic
        ``"mean"`` for ``E_x 1/c_0(x)``, ``"max"`` for the worst case ``max_x 1/c_0(x)``.
    """
    instance = check_bandit("instance", instance)
    target = check_positive("target_coverage", target_coverage)
    if target <= 1.0:
        raise ValueError(f"target_coverage must be > 1, got {target_coverage!r}")
    statistic = check_option("statistic", statistic, COVERAGE_STATISTICS)
    direction = _check_realizable_direction(instance)
    base = np.asarray(instance.base_theta, dtype=float)
    log_target = float(np.log(target))

    def excess(shift: float) -> float:
        return _log_coverage_coefficient(instance, base - shift * direction, statistic) - log_target

    low, high = -1.0, 1.0
    for _ in range(MAX_BRACKET_DOUBLINGS):
        if excess(low) < 0.0:
            break
        low *= 2.0
    else:
        raise ValueError(f"target_coverage {target_coverage!r} is too close to 1 for this instance")
    for _ in range(MAX_BRACKET_DOUBLINGS):
        if excess(high) > 0.0:
            break
        high *= 2.0
    else:
        raise ValueError(f"target_coverage {target_coverage!r} is out of reach for this instance")
    return float(brentq(excess, low, high, xtol=ROOT_TOLERANCE, rtol=4 * np.finfo(float).eps))


def dial_coverage(instance: BanditInstance, target_coverage: float, statistic: str = "mean") -> BanditInstance:
    """A copy of ``instance`` whose base model has ``C_cov = target_coverage`` (paper section 1.3).

    The base parameters become ``theta_0 - s theta_star`` with ``s`` from
    :func:`coverage_shift`; features, rewards and ``reward_theta`` are unchanged, so the
    reward stays linear and the APMD target stays in the softmax-linear class.
    """
    shift = coverage_shift(instance, target_coverage, statistic)
    base_theta = np.asarray(instance.base_theta, dtype=float) - shift * np.asarray(instance.reward_theta)
    return dataclasses.replace(instance, base_theta=base_theta)


def dialled_coverage_instance(
    rng: np.random.Generator,
    n_prompts: int,
    n_responses: int,
    dim: int,
    target_coverage: float,
    *,
    statistic: str = "mean",
    base_scale: float = 1.0,
    feature_norm: float = 1.0,
) -> BanditInstance:
    """A random realizable softmax-linear instance with a dialled coverage coefficient.

    Draws an instance with :func:`covpo.instances.random_softmax_linear_instance` (Gaussian
    features of norm ``feature_norm``, linear rewards in ``[0, 1]``, Gaussian base parameters
    of scale ``base_scale``) and moves its base parameters along ``-theta_star`` until
    ``C_cov`` equals ``target_coverage`` (:func:`dial_coverage`). With the same ``rng`` state,
    instances for different targets share features, rewards and the random part of the
    base model, so a sweep over ``target_coverage`` changes coverage alone.

    Parameters
    ----------
    rng
        The only source of randomness.
    n_prompts, n_responses, dim
        Sizes of the instance (``n_responses >= 2``).
    target_coverage
        ``C_cov`` of the base model, ``> 1``.
    statistic
        ``"mean"`` (``E_x 1/c_0(x)``) or ``"max"`` (``max_x 1/c_0(x)``).
    base_scale
        Scale of the random part of the base parameters.
    feature_norm
        Norm of every feature vector (the bound ``B``).
    """
    rng = check_generator("rng", rng)
    n_prompts = check_count("n_prompts", n_prompts)
    n_responses = check_count("n_responses", n_responses, minimum=2)
    dim = check_count("dim", dim)
    target_coverage = check_positive("target_coverage", target_coverage)
    if target_coverage <= 1.0:
        raise ValueError(f"target_coverage must be > 1, got {target_coverage!r}")
    statistic = check_option("statistic", statistic, COVERAGE_STATISTICS)
    instance = random_softmax_linear_instance(
        rng, n_prompts, n_responses, dim, base_scale=base_scale, feature_norm=feature_norm
    )
    return dial_coverage(instance, target_coverage, statistic)
