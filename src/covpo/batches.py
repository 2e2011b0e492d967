"""A batch of sampled prompt-response pairs and what every batch gradient needs (paper section 2.2).

Every sampled algorithm draws prompts from ``rho`` and responses from a policy, then forms a
gradient ``mean_i a_i grad log pi_theta(y_i|x_i)`` with the softmax-linear score
``grad log pi_theta(y|x) = phi(x, y) - phibar_theta(x)``. These are the shared primitives; the
algorithms in :mod:`covpo.algorithms` differ only in the coefficients ``a_i``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from covpo.instances import BanditInstance
from covpo.policies import (
    check_bandit,
    check_policy,
    feature_sums,
    unchecked_kl_per_prompt,
    unchecked_log_policy,
    unchecked_mean_features,
    unchecked_sample_prompts,
    unchecked_sample_responses,
)
from covpo.validation import (
    check_count,
    check_finite_array,
    check_generator,
    check_index_array,
    check_instance,
    check_theta,
)


@dataclass(frozen=True, eq=False)
class ResponseBatch:
    """Prompt-response pairs drawn once per outer iteration and reused by every inner step.

    Attributes
    ----------
    prompts, responses
        Indices ``x_i`` and ``y_i``; shape ``(N,)``, or ``(N, G)`` for ``G`` responses per prompt.
    rewards
        ``r(x_i, y_i)``, same shape.
    log_sampling
        ``log pi_old(y_i|x_i)`` under the policy the batch was drawn from (``pi_t`` in APMD),
        the denominator of every importance weight.
    """

    prompts: np.ndarray
    responses: np.ndarray
    rewards: np.ndarray
    log_sampling: np.ndarray

    def __post_init__(self) -> None:
        prompts = _check_indices("prompts", self.prompts)
        shape = prompts.shape
        responses = _check_like_prompts("responses", _check_indices("responses", self.responses), shape)
        rewards = _check_like_prompts("rewards", check_finite_array("rewards", self.rewards), shape)
        log_sampling = _check_like_prompts(
            "log_sampling", check_finite_array("log_sampling", self.log_sampling), shape
        )
        if np.any(log_sampling > 0.0):
            raise ValueError(f"log_sampling must hold log-probabilities <= 0, found {log_sampling.max()!r}")
        # a frozen dataclass: the checked arrays replace the given ones in the instance's dict
        self.__dict__.update(prompts=prompts, responses=responses, rewards=rewards, log_sampling=log_sampling)

    @classmethod
    def unchecked(
        cls, prompts: np.ndarray, responses: np.ndarray, rewards: np.ndarray, log_sampling: np.ndarray
    ) -> ResponseBatch:
        """A batch of arrays the caller drew itself, as the checks would return them, left unchecked (the algorithms' loops).

        ``prompts`` and ``responses`` int64 indices, ``rewards`` and ``log_sampling`` finite
        floats, all of one shape.
        """
        batch = object.__new__(cls)
        batch.__dict__.update(prompts=prompts, responses=responses, rewards=rewards, log_sampling=log_sampling)
        return batch

    @property
    def size(self) -> int:
        """Number of responses in the batch (``N`` or ``N G``)."""
        return int(self.responses.size)


def _check_like_prompts(name: str, array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Raise unless ``array`` has the shape of the batch's prompts."""
    if array.shape != shape:
        raise ValueError(f"{name} must have the shape of prompts, {shape}, got shape {array.shape}")
    return array


def _check_indices(name: str, value: object) -> np.ndarray:
    """Non-negative integer indices (their upper bound is the instance's, checked by :func:`check_batch`)."""
    return check_index_array(name, value, np.iinfo(np.int64).max)


def check_batch(name: str, batch: object, instance: BanditInstance) -> ResponseBatch:
    """Return ``batch`` if it is a :class:`ResponseBatch` whose indices fit ``instance``, else raise naming ``name``."""
    batch = check_instance(name, batch, ResponseBatch)
    check_index_array(f"{name}.prompts", batch.prompts, instance.n_prompts)
    check_index_array(f"{name}.responses", batch.responses, instance.n_responses)
    return batch


def draw_batch(
    instance: BanditInstance,
    log_probs: np.ndarray,
    batch_size: int,
    rng: np.random.Generator,
    group_size: int | None = None,
) -> ResponseBatch:
    """Draw ``batch_size`` prompts from ``rho`` and responses from ``pi(.|x)`` (vectorized).

    With ``group_size = G`` each prompt gets ``G`` independent responses (GRPO's group) and
    the arrays have shape ``(batch_size, G)``; otherwise one response each, shape
    ``(batch_size,)``. Prompts are drawn first, then all responses in one call.
    """
    instance = check_bandit("instance", instance)
    log_probs = check_policy("log_probs", instance, log_probs)
    batch_size = check_count("batch_size", batch_size)
    rng = check_generator("rng", rng)
    if group_size is not None:
        group_size = check_count("group_size", group_size)
    return unchecked_draw_batch(instance, log_probs, batch_size, rng, group_size)


def unchecked_draw_batch(
    instance: BanditInstance,
    log_probs: np.ndarray,
    batch_size: int,
    rng: np.random.Generator,
    group_size: int | None = None,
) -> ResponseBatch:
    """:func:`draw_batch` for arguments the caller has already validated (the algorithms' loops)."""
    prompts = unchecked_sample_prompts(instance, rng, batch_size)
    if group_size is not None:
        prompts = np.repeat(prompts[:, None], group_size, axis=1)
    responses = unchecked_sample_responses(log_probs, prompts, rng)
    return ResponseBatch.unchecked(
        prompts=prompts,
        responses=responses,
        rewards=instance.rewards[prompts, responses],
        log_sampling=log_probs[prompts, responses],
    )


@dataclass(frozen=True, eq=False)
class BatchTerms:
    """What every importance-weighted objective needs at ``theta`` on a fixed batch.

    Attributes
    ----------
    instance
        The bandit whose features the scores are taken over.
    batch
        The batch.
    log_probs
        The full table ``log pi_theta(y|x)``.
    """

    instance: BanditInstance
    batch: ResponseBatch
    log_probs: np.ndarray

    @cached_property
    def log_ratio(self) -> np.ndarray:
        """``log w_i = log pi_theta(y_i|x_i) - log pi_old(y_i|x_i)``, the batch's shape."""
        return self.log_probs[self.batch.prompts, self.batch.responses] - self.batch.log_sampling

    @cached_property
    def scores(self) -> np.ndarray:
        """``grad log pi_theta(y_i|x_i) = phi(x_i, y_i) - phibar_theta(x_i)``, the batch's shape plus ``(d,)``."""
        phibar = unchecked_mean_features(self.instance, self.log_probs)
        return self.instance.features[self.batch.prompts, self.batch.responses] - phibar[self.batch.prompts]

    def score_average(self, coefficients: np.ndarray) -> np.ndarray:
        """``mean_i c_i grad log pi_theta(y_i|x_i)`` for coefficients of the batch's shape (paper section 2.2).

        The package's one score average: every batch gradient of the softmax-linear class is
        formed here. On dense features the scores are formed once and averaged. On tabular features (:attr:`~covpo.instances.BanditInstance.one_hot_columns`) they never
        are: ``sum_i c_i phi(x_i, y_i)`` scatters each coefficient onto its pair's coordinate,
        and ``sum_i c_i phibar(x_i)`` scatters ``pi(.|x)``, times the coefficients' total on
        prompt ``x``, onto that prompt's coordinates. That costs ``O(N + |X| |Y|)`` instead of
        ``O(N d)`` with ``d = |X| |Y|``; the sums run in another order, so the last bits differ
        from the dense product's.
        """
        columns = self.instance.one_hot_columns
        if columns is None:
            # np.tensordot(coefficients, scores, axes=coefficients.ndim) without its axis bookkeeping:
            # the same reshapes and the same np.dot call, so the same bits.
            size = coefficients.size
            return np.dot(coefficients.reshape(1, size), self.scores.reshape(size, -1)).reshape(self.instance.dim) / size
        weights = np.ravel(coefficients)
        prompts = np.ravel(self.batch.prompts)
        sums = np.bincount(columns[prompts, np.ravel(self.batch.responses)], weights=weights, minlength=self.instance.dim)
        prompt_totals = np.bincount(prompts, weights=weights, minlength=self.instance.n_prompts)
        sums[columns] -= prompt_totals[:, None] * np.exp(self.log_probs)
        return sums / weights.size


def batch_terms(instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch) -> BatchTerms:
    """Log-probabilities, log importance ratios and softmax-linear scores on ``batch`` (paper section 2.2)."""
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", theta, (instance.dim,))
    return unchecked_batch_terms(instance, theta, check_batch("batch", batch, instance))


def unchecked_batch_terms(instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch) -> BatchTerms:
    """:func:`batch_terms` for arguments the caller has already validated (the algorithms' inner loops)."""
    return BatchTerms(instance=instance, batch=batch, log_probs=unchecked_log_policy(instance, theta))


def prompt_kl(
    instance: BanditInstance, log_probs: np.ndarray, log_reference: np.ndarray, prompts: np.ndarray
) -> tuple[float, np.ndarray]:
    """Exact ``mean_i KL(pi_theta(.|x_i) || pi_ref(.|x_i))`` over the sampled prompts, and its gradient.

    Responses are enumerable, so each sampled prompt's KL is a sum over ``y``; the gradient
    is ``mean_i E_{y~pi_theta(.|x_i)}[(log pi_theta/pi_ref - KL_{x_i}) (phi - phibar)]`` (the
    standard KL gradient), formed once per distinct prompt and weighted by how often it was drawn.
    ``pi_ref`` needs full support.
    """
    instance = check_bandit("instance", instance)
    log_probs = check_policy("log_probs", instance, log_probs)
    log_reference = check_finite_array("log_reference", check_policy("log_reference", instance, log_reference))
    prompts = check_index_array("prompts", prompts, instance.n_prompts)
    if prompts.size == 0:
        raise ValueError("prompts must hold at least one prompt index, got an empty array")
    return unchecked_prompt_kl(instance, log_probs, log_reference, prompts)


def unchecked_prompt_kl(
    instance: BanditInstance, log_probs: np.ndarray, log_reference: np.ndarray, prompts: np.ndarray
) -> tuple[float, np.ndarray]:
    """:func:`prompt_kl` for arguments the caller has already validated (the algorithms' inner loops)."""
    weights = np.bincount(np.ravel(prompts), minlength=instance.n_prompts) / np.size(prompts)
    kl = unchecked_kl_per_prompt(log_probs, log_reference)
    probs = np.exp(log_probs)
    table = weights[:, None] * probs * (log_probs - log_reference - kl[:, None])
    return float(weights @ kl), feature_sums(instance, table)
