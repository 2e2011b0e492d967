"""Contextual-bandit instances of one-shot post-training (paper sections 1.2, 1.3 and 2.2).

An instance holds everything that defines the problem: the prompt distribution ``rho``,
a finite response set per prompt (the same number of responses for every prompt), the
frozen features ``phi(x, y)``, the rewards ``r(x, y)``, and the base model ``pi_0`` as
softmax-linear parameters ``theta_0``. Tabular instances are the special case of one-hot
features.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from covpo.validation import (
    check_count,
    check_distribution,
    check_finite_array,
    check_generator,
    check_mask,
    check_positive,
    check_shape,
)

OPTIMAL_REWARD_TOLERANCE = 1e-12
TIED_SCORE_TOLERANCE = 1e-9
MAX_FEATURE_BYTES = 2 * 1024**3
"""Largest dense feature tensor ``phi(x, y)`` (float64) an instance constructor will allocate: 2 GiB."""


def check_feature_memory(n_prompts: int, n_responses: int, dim: int, what: str, advice: str) -> None:
    """Raise before allocating a dense ``(n_prompts, n_responses, dim)`` float64 feature tensor above :data:`MAX_FEATURE_BYTES`.

    ``what`` names the arguments that set the size, ``advice`` says what to do instead.
    """
    needed = 8 * int(n_prompts) * int(n_responses) * int(dim)
    if needed > MAX_FEATURE_BYTES:
        raise ValueError(
            f"{what} need a dense feature tensor of shape ({n_prompts}, {n_responses}, {dim}), "
            f"{_format_bytes(needed)}, above the {_format_bytes(MAX_FEATURE_BYTES)} limit; {advice}"
        )


def _format_bytes(count: int) -> str:
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2)):
        if count >= size:
            return f"{count / size:,.1f} {unit}"
    return f"{count:,} bytes"


@dataclass(frozen=True, eq=False)
class BanditInstance:
    """A contextual bandit with softmax-linear base model.

    Parameters
    ----------
    prompt_probs
        ``rho(x)``, shape ``(n_prompts,)``, non-negative and summing to one.
    features
        ``phi(x, y)``, shape ``(n_prompts, n_responses, dim)``.
    rewards
        ``r(x, y)``, shape ``(n_prompts, n_responses)``, finite.
    base_theta
        Parameters ``theta_0`` of the base model, shape ``(dim,)``.
    optimal_mask
        ``Y*(x)`` as a boolean array of the rewards' shape; by default the responses whose
        reward is within ``1e-12`` of the prompt's maximum. Every prompt needs at least one.
    reward_theta
        ``theta_star`` when the reward is linear, ``r = <theta_star, phi> + c(x)``; else ``None``.
    """

    prompt_probs: np.ndarray
    features: np.ndarray
    rewards: np.ndarray
    base_theta: np.ndarray
    optimal_mask: np.ndarray | None = None
    reward_theta: np.ndarray | None = None

    def __post_init__(self) -> None:
        features = check_finite_array("features", self.features, ndim=3)
        n_prompts, n_responses, dim = features.shape
        if n_responses == 0:
            raise ValueError("features must describe at least one response per prompt, got 0")
        prompt_probs = check_distribution("prompt_probs", self.prompt_probs)
        check_shape("prompt_probs", prompt_probs, (n_prompts,))
        rewards = check_shape("rewards", check_finite_array("rewards", self.rewards, ndim=2), (n_prompts, n_responses))
        base_theta = check_shape("base_theta", check_finite_array("base_theta", self.base_theta, ndim=1), (dim,))
        if self.optimal_mask is None:
            mask = rewards >= rewards.max(axis=1, keepdims=True) - OPTIMAL_REWARD_TOLERANCE
        else:
            mask = check_mask("optimal_mask", self.optimal_mask, rewards.shape)
        empty = np.flatnonzero(~mask.any(axis=1))
        if empty.size:
            raise ValueError(f"optimal_mask leaves prompt {int(empty[0])} with no optimal response")
        reward_theta = None
        if self.reward_theta is not None:
            reward_theta = check_shape(
                "reward_theta", check_finite_array("reward_theta", self.reward_theta, ndim=1), (dim,)
            )
        for name, value in (
            ("prompt_probs", prompt_probs),
            ("features", features),
            ("rewards", rewards),
            ("base_theta", base_theta),
            ("optimal_mask", mask),
            ("reward_theta", reward_theta),
        ):
            if value is not None:
                value.setflags(write=False)
            object.__setattr__(self, name, value)

    @property
    def n_prompts(self) -> int:
        """Number of prompts ``|X|``."""
        return int(self.features.shape[0])

    @property
    def n_responses(self) -> int:
        """Number of responses per prompt ``|Y|``."""
        return int(self.features.shape[1])

    @property
    def dim(self) -> int:
        """Feature dimension ``d``."""
        return int(self.features.shape[2])

    @cached_property
    def one_hot_columns(self) -> np.ndarray | None:
        """For tabular features, the coordinate of ``phi(x, y)``'s single 1, shape ``(n_prompts, n_responses)``; else ``None``.

        Features are tabular when every ``phi(x, y)`` is a standard basis vector and no two
        pairs share one (paper section 2.2: the tabular class is the softmax-linear class with
        one-hot features). Then ``<theta, phi(x, y)>`` is ``theta`` at that coordinate and every
        sum against the features is a scatter, which :mod:`covpo.policies` uses to skip the
        dense products; the results are the same numbers, since the dense products only add zeros.
        """
        features = self.features
        columns = np.argmax(features, axis=2)
        ones = np.take_along_axis(features, columns[:, :, None], axis=2)
        one_hot = np.all(ones == 1.0) and np.count_nonzero(features) == columns.size
        if not one_hot or np.unique(columns).size != columns.size:
            return None
        columns.setflags(write=False)
        return columns

    @cached_property
    def prompt_cdf(self) -> np.ndarray:
        """The cumulative distribution of ``rho``, computed as ``numpy.random.Generator.choice`` computes it.

        ``choice(n_prompts, size, p=prompt_probs)`` normalizes the cumulative sum by its last
        entry and looks up ``size`` uniform draws in it; with the table kept here the algorithms'
        loops draw the same prompts from the same uniforms without re-checking ``prompt_probs``
        on every draw (:func:`covpo.policies.unchecked_sample_prompts`).
        """
        cdf = self.prompt_probs.cumsum()
        cdf /= cdf[-1]
        cdf.setflags(write=False)
        return cdf

    @property
    def optimal_rewards(self) -> np.ndarray:
        """``max_y r(x, y)`` per prompt."""
        return self.rewards.max(axis=1)

    @property
    def optimal_value(self) -> float:
        """``J* = E_x max_y r(x, y)``."""
        return float(self.prompt_probs @ self.optimal_rewards)


def tabular_instance(
    rewards: np.ndarray,
    base_probs: np.ndarray,
    prompt_probs: np.ndarray | None = None,
) -> BanditInstance:
    """A tabular softmax instance: one-hot features, one logit per ``(x, y)`` (the one-hot case of paper section 2.2).

    The one-hot features are dense, ``8 (n_prompts n_responses)^2`` bytes: sizes above
    :data:`MAX_FEATURE_BYTES` (about 16,000 prompt-response pairs) are refused with an error.

    Parameters
    ----------
    rewards
        ``r(x, y)``, shape ``(n_prompts, n_responses)``.
    base_probs
        The base model ``pi_0(y|x)``, same shape, each row a distribution with full support.
    prompt_probs
        ``rho``; uniform over prompts when omitted.
    """
    rewards = check_finite_array("rewards", rewards, ndim=2)
    n_prompts, n_responses = rewards.shape
    if n_prompts == 0 or n_responses == 0:
        raise ValueError(f"rewards must have at least one prompt and one response, got shape {rewards.shape}")
    base_probs = check_distribution("base_probs", base_probs, axis=-1)
    base_probs = check_shape("base_probs", base_probs, rewards.shape)
    if np.any(base_probs <= 0.0):
        raise ValueError("base_probs must be positive everywhere: a softmax base model has full support")
    check_feature_memory(
        n_prompts,
        n_responses,
        n_prompts * n_responses,
        f"rewards of shape {rewards.shape} (one-hot features, one per prompt-response pair)",
        "use fewer responses, or a random_softmax_linear_instance with a small feature dimension",
    )
    if prompt_probs is None:
        prompt_probs = np.full(n_prompts, 1.0 / n_prompts)
    dim = n_prompts * n_responses
    features = np.eye(dim).reshape(n_prompts, n_responses, dim)
    return BanditInstance(
        prompt_probs=prompt_probs,
        features=features,
        rewards=rewards,
        base_theta=np.log(base_probs).ravel(),
        reward_theta=rewards.ravel().copy(),
    )


def random_softmax_linear_instance(
    rng: np.random.Generator,
    n_prompts: int,
    n_responses: int,
    dim: int,
    base_scale: float = 1.0,
    feature_norm: float = 1.0,
) -> BanditInstance:
    """A random softmax-linear instance with a linear (realizable) reward in ``[0, 1]``.

    Features are Gaussian directions rescaled to norm ``feature_norm`` (the bound ``B``);
    ``theta_star`` is a random direction; rewards ``<theta_star', phi> + c(x)`` are shifted per
    prompt so each prompt's worst response has reward 0 and scaled by one global constant so
    the largest reward is 1 (both keep the reward linear; ``reward_theta`` stores the scaled
    ``theta_star'``). The base parameters are Gaussian with standard deviation ``base_scale``.

    Parameters
    ----------
    rng
        The only source of randomness.
    n_prompts, n_responses, dim
        Sizes of the instance.
    base_scale
        Larger values give a more peaked, typically lower-coverage, base model.
    feature_norm
        Norm of every feature vector.
    """
    n_prompts = check_count("n_prompts", n_prompts)
    n_responses = check_count("n_responses", n_responses, minimum=2)
    dim = check_count("dim", dim)
    base_scale = check_positive("base_scale", base_scale)
    feature_norm = check_positive("feature_norm", feature_norm)
    rng = check_generator("rng", rng)
    check_feature_memory(
        n_prompts, n_responses, dim, "n_prompts, n_responses and dim", "choose smaller sizes"
    )
    features = rng.standard_normal((n_prompts, n_responses, dim))
    features *= feature_norm / np.linalg.norm(features, axis=2, keepdims=True)
    direction = rng.standard_normal(dim)
    direction /= np.linalg.norm(direction)
    scores = features @ direction
    spread = scores.max(axis=1) - scores.min(axis=1)
    scale = 1.0 / spread.max() if spread.max() > TIED_SCORE_TOLERANCE else 0.0
    rewards = scale * (scores - scores.min(axis=1, keepdims=True))
    return BanditInstance(
        prompt_probs=np.full(n_prompts, 1.0 / n_prompts),
        features=features,
        rewards=rewards,
        base_theta=base_scale * rng.standard_normal(dim),
        reward_theta=scale * direction,
    )
