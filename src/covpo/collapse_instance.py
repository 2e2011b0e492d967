"""The coverage-collapse bandit in its reduced, three-class form (our instance of paper section 2.1).

One prompt, tabular softmax. The responses fall into three classes: one optimal response
(reward 1), one distractor (reward ``1 - gap``) and ``n_zero`` exchangeable zero-reward
responses. The base model puts ``optimal_prob`` on the optimal response, ``distractor_prob``
on the distractor and spreads the rest uniformly over the zero block.

Exchangeable responses keep equal logits under exact gradient ascent, so the whole state is
three per-member logits ``(theta_opt, theta_dis, theta_zero)``; the zero block enters the
normalizer with its multiplicity. This module holds the instance, the closed forms on the
reduced state (class masses, the maximizer of paper Eq. (5) and the beta rule of
paper appendix C.1) and the plane the figures draw in.

Up to a common shift the three logits form a plane, spanned by

- ``u = theta_opt - theta_dis``, which raises the optimal response relative to the distractor;
- ``v = (theta_opt + theta_dis) / 2 - theta_zero``, which raises both rewarding responses
  relative to the zero block without changing their ratio.

The book reports both coordinates relative to the base model, so ``pi_0`` sits at the origin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from covpo.instances import BanditInstance, check_feature_memory, tabular_instance
from covpo.validation import (
    check_count,
    check_finite_array,
    check_instance,
    check_nonnegative,
    check_positive,
    check_probability,
)

OPTIMAL, DISTRACTOR, ZERO = 0, 1, 2

DEFAULT_OPTIMAL_PROB = 0.1
DEFAULT_DISTRACTOR_PROB = 0.2
DEFAULT_N_ZERO = 1000
DEFAULT_EPS_FRACTION = 0.5
DEFAULT_MARGIN = 0.5
BETA_SEARCH_BOUNDS = (1e-6, 1e6)


@dataclass(frozen=True)
class CollapseInstance:
    """The coverage-collapse bandit in its reduced, three-class form (our instance of paper section 2.1).

    Parameters
    ----------
    gap
        Reward gap of the distractor: its reward is ``1 - gap``, in ``(0, 1)``.
    optimal_prob
        Base-model probability of the optimal response, which is the base coverage ``c_0``.
    distractor_prob
        Base-model probability of the distractor; collapse needs it above ``optimal_prob``.
    n_zero
        Number of zero-reward responses sharing the remaining base mass equally.
    """

    gap: float
    optimal_prob: float = DEFAULT_OPTIMAL_PROB
    distractor_prob: float = DEFAULT_DISTRACTOR_PROB
    n_zero: int = DEFAULT_N_ZERO

    def __post_init__(self) -> None:
        gap = check_probability("gap", self.gap)
        optimal_prob = check_probability("optimal_prob", self.optimal_prob)
        distractor_prob = check_probability("distractor_prob", self.distractor_prob)
        if optimal_prob + distractor_prob >= 1.0:
            raise ValueError(
                "optimal_prob + distractor_prob must be < 1 to leave mass for the zero-reward block, "
                f"got {optimal_prob!r} + {distractor_prob!r}"
            )
        n_zero = check_count("n_zero", self.n_zero)
        object.__setattr__(self, "gap", gap)
        object.__setattr__(self, "optimal_prob", optimal_prob)
        object.__setattr__(self, "distractor_prob", distractor_prob)
        object.__setattr__(self, "n_zero", n_zero)

    @property
    def rewards(self) -> np.ndarray:
        """Reward of each class, ``(1, 1 - gap, 0)``."""
        return np.array([1.0, 1.0 - self.gap, 0.0])

    @property
    def multiplicities(self) -> np.ndarray:
        """Number of responses in each class, ``(1, 1, n_zero)``."""
        return np.array([1, 1, self.n_zero], dtype=np.int64)

    @property
    def log_multiplicities(self) -> np.ndarray:
        """Natural log of :attr:`multiplicities`."""
        return np.log(self.multiplicities.astype(float))

    @property
    def base_class_log_probs(self) -> np.ndarray:
        """Log base-model mass of each class, the zero block's mass computed without cancellation."""
        zero_mass = np.log1p(-(self.optimal_prob + self.distractor_prob))
        return np.array([np.log(self.optimal_prob), np.log(self.distractor_prob), zero_mass])

    @property
    def base_logits(self) -> np.ndarray:
        """Normalized per-member logits of the base model, ``log pi_0(y)`` for one member of each class."""
        return self.base_class_log_probs - self.log_multiplicities

    @property
    def base_coverage(self) -> float:
        """Coverage ``c_0 = pi_0(y*)`` of the base model (paper section 1.3)."""
        return self.optimal_prob

    @property
    def optimal_value(self) -> float:
        """``J* = 1``."""
        return 1.0

    @property
    def n_responses(self) -> int:
        """Total number of responses ``n_zero + 2``."""
        return self.n_zero + 2

    def to_bandit(self) -> BanditInstance:
        """The full tabular :class:`~covpo.instances.BanditInstance`, one logit per response.

        Response 0 is optimal, response 1 the distractor, the rest the zero-reward block.
        Its features are one-hot, so it needs ``O(n_responses**2)`` memory: meant for tests and
        for the general code on small blocks; an ``n_zero`` whose features exceed
        :data:`~covpo.instances.MAX_FEATURE_BYTES` is refused.
        """
        check_feature_memory(
            1,
            self.n_responses,
            self.n_responses,
            f"n_zero={self.n_zero} (one-hot features of the full vector)",
            "use the reduced three-class form, which needs no features, or a smaller n_zero",
        )
        rewards = np.concatenate([self.rewards[:2], np.zeros(self.n_zero)])
        member_probs = np.exp(self.base_logits)
        base_probs = np.concatenate([member_probs[:2], np.full(self.n_zero, member_probs[ZERO])])
        return tabular_instance(rewards[None, :], base_probs[None, :])


def collapse_instance(
    gap: float,
    optimal_prob: float = DEFAULT_OPTIMAL_PROB,
    distractor_prob: float = DEFAULT_DISTRACTOR_PROB,
    n_zero: int = DEFAULT_N_ZERO,
) -> CollapseInstance:
    """The collapse instance with distractor reward ``1 - gap`` (our instance of paper section 2.1).

    The hardness knob is ``1 / gap``; the base coverage ``optimal_prob`` does not move along it.
    """
    return CollapseInstance(gap=gap, optimal_prob=optimal_prob, distractor_prob=distractor_prob, n_zero=n_zero)


def _check_instance(instance: object) -> CollapseInstance:
    return check_instance("instance", instance, CollapseInstance)


def _check_logits(logits: object) -> np.ndarray:
    """Finite per-member logits whose last axis holds the three classes."""
    array = check_finite_array("logits", logits)
    if array.ndim == 0 or array.shape[-1] != 3:
        raise ValueError(f"logits must have a last axis of length 3 (one logit per class), got shape {array.shape}")
    return array


def _check_beta(beta: float | None) -> float | None:
    return None if beta is None else check_positive("beta", beta)


def _check_eps(eps: float | None) -> float | None:
    return None if eps is None else check_nonnegative("eps", eps)


def class_log_probs(instance: CollapseInstance, logits: np.ndarray) -> np.ndarray:
    """Log mass of each class, ``log(m_c exp(theta_c) / Z)``, for per-member logits of shape ``(..., 3)``."""
    instance = _check_instance(instance)
    return _class_log_probs(instance, _check_logits(logits))


def _class_log_probs(instance: CollapseInstance, logits: np.ndarray) -> np.ndarray:
    """:func:`class_log_probs` for logits the caller has already validated (or computed itself)."""
    weights = np.asarray(logits, dtype=float) + instance.log_multiplicities
    return weights - logsumexp(weights, axis=-1, keepdims=True)


def _state_summary(instance: CollapseInstance, logits: np.ndarray) -> dict[str, np.ndarray]:
    """Reward, log coverage and KL to the base model of per-member logits ``(..., 3)``."""
    log_masses = _class_log_probs(instance, logits)
    masses = np.exp(log_masses)
    return {
        "log_masses": log_masses,
        "reward": masses @ instance.rewards,
        "log_coverage": log_masses[..., OPTIMAL],
        "kl_to_base": np.maximum(np.sum(masses * (log_masses - instance.base_class_log_probs), axis=-1), 0.0),
    }


def _absolute_plane(logits: np.ndarray) -> np.ndarray:
    theta = np.asarray(logits, dtype=float)
    u = theta[..., OPTIMAL] - theta[..., DISTRACTOR]
    v = 0.5 * (theta[..., OPTIMAL] + theta[..., DISTRACTOR]) - theta[..., ZERO]
    return np.stack([u, v], axis=-1)


def plane_coordinates(instance: CollapseInstance, logits: np.ndarray) -> np.ndarray:
    """The exact ``(u, v)`` coordinates of per-member logits ``(..., 3)``, relative to the base model.

    ``u`` raises the optimal logit against the distractor's, ``v`` raises both rewarding
    logits against the zero block's (paper appendix C.1); the base model is ``(0, 0)``.
    """
    instance = _check_instance(instance)
    return _absolute_plane(_check_logits(logits)) - _absolute_plane(instance.base_logits)


def logits_from_plane(instance: CollapseInstance, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per-member logits (zero-block logit 0) at plane coordinates ``(u, v)``; inverse of :func:`plane_coordinates`."""
    instance = _check_instance(instance)
    u = check_finite_array("u", u)
    v = check_finite_array("v", v)
    try:
        np.broadcast_shapes(u.shape, v.shape)
    except ValueError:
        raise ValueError(f"u and v must have broadcastable shapes, got {u.shape} and {v.shape}") from None
    base_u, base_v = _absolute_plane(instance.base_logits)
    u, v = np.broadcast_arrays(u + base_u, v + base_v)
    return np.stack([v + 0.5 * u, v - 0.5 * u, np.zeros(u.shape)], axis=-1)


def regularized_optimum_suboptimality(instance: CollapseInstance, beta: float) -> float:
    """``J* - J(pi_beta)`` for ``pi_beta = pi_0 exp(r / beta) / Z``, computed in log space (the maximizer of paper Eq. (5))."""
    instance = _check_instance(instance)
    beta = check_positive("beta", beta)
    with np.errstate(over="ignore"):
        log_weights = instance.base_class_log_probs + (instance.rewards - instance.optimal_value) / beta
    masses = np.exp(log_weights - logsumexp(log_weights))
    return float(masses @ (instance.optimal_value - instance.rewards))


def strongest_eps_optimal_beta(instance: CollapseInstance, eps: float, margin: float = DEFAULT_MARGIN) -> float:
    """The largest ``beta`` whose regularized optimum has suboptimality ``margin * eps`` (paper appendix C.1).

    This is how the book picks REINFORCE's fixed-reference strength: the strongest
    regularization whose optimum is still eps-optimal with room to spare. The suboptimality
    of ``pi_beta`` increases with ``beta``, so the root is unique.
    """
    instance = _check_instance(instance)
    eps = check_positive("eps", eps)
    margin = check_probability("margin", margin)
    target = margin * eps
    base_suboptimality = float(np.exp(instance.base_class_log_probs) @ (instance.optimal_value - instance.rewards))
    if target >= base_suboptimality:
        raise ValueError(f"eps={eps!r} is so loose that the base model is already within margin * eps of optimal")
    low, high = np.log(BETA_SEARCH_BOUNDS)
    log_beta = brentq(lambda s: regularized_optimum_suboptimality(instance, np.exp(s)) - target, low, high, xtol=1e-12)
    return float(np.exp(log_beta))
