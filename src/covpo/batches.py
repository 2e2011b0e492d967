"""A batch of sampled prompt-response pairs and what every batch gradient needs (paper section 2.2).

Every sampled algorithm draws prompts from ``rho`` and responses from a policy, then forms a
gradient ``mean_i a_i grad log pi_theta(y_i|x_i)`` with the softmax-linear score
``grad log pi_theta(y|x) = phi(x, y) - phibar_theta(x)``. These are the shared primitives; the
algorithms in :mod:`covpo.algorithms` differ only in the coefficients ``a_i``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo.instances import BanditInstance
from covpo.policies import kl_per_prompt, log_policy, mean_features, sample_prompts, sample_responses
from covpo.validation import check_count


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

    @property
    def size(self) -> int:
        """Number of responses in the batch (``N`` or ``N G``)."""
        return int(self.responses.size)


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
    prompts = sample_prompts(instance, rng, batch_size)
    if group_size is not None:
        group_size = check_count("group_size", group_size)
        prompts = np.repeat(prompts[:, None], group_size, axis=1)
    responses = sample_responses(log_probs, prompts, rng)
    return ResponseBatch(
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
    log_probs
        The full table ``log pi_theta(y|x)``.
    log_ratio
        ``log w_i = log pi_theta(y_i|x_i) - log pi_old(y_i|x_i)``, the batch's shape.
    scores
        ``grad log pi_theta(y_i|x_i) = phi(x_i, y_i) - phibar_theta(x_i)``, the batch's shape plus ``(d,)``.
    """

    log_probs: np.ndarray
    log_ratio: np.ndarray
    scores: np.ndarray


def batch_terms(instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch) -> BatchTerms:
    """Log-probabilities, log importance ratios and softmax-linear scores on ``batch`` (paper section 2.2)."""
    log_probs = log_policy(instance, theta)
    scores = instance.features[batch.prompts, batch.responses] - mean_features(instance, log_probs)[batch.prompts]
    log_ratio = log_probs[batch.prompts, batch.responses] - batch.log_sampling
    return BatchTerms(log_probs=log_probs, log_ratio=log_ratio, scores=scores)


def score_average(coefficients: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``mean_i a_i grad log pi_theta(y_i|x_i)``, the common form of every batch gradient here."""
    return np.tensordot(coefficients, scores, axes=coefficients.ndim) / coefficients.size


def prompt_kl(
    instance: BanditInstance, log_probs: np.ndarray, log_reference: np.ndarray, prompts: np.ndarray
) -> tuple[float, np.ndarray]:
    """Exact ``mean_i KL(pi_theta(.|x_i) || pi_ref(.|x_i))`` over the sampled prompts, and its gradient.

    Responses are enumerable, so each sampled prompt's KL is a sum over ``y``; the gradient
    is ``mean_i E_{y~pi_theta(.|x_i)}[(log pi_theta/pi_ref - KL_{x_i}) (phi - phibar)]`` (the
    standard KL gradient), formed once per distinct prompt and weighted by how often it was drawn.
    """
    weights = np.bincount(np.ravel(prompts), minlength=instance.n_prompts) / np.size(prompts)
    kl = kl_per_prompt(log_probs, log_reference)
    probs = np.exp(log_probs)
    table = weights[:, None] * probs * (log_probs - log_reference - kl[:, None])
    return float(weights @ kl), np.einsum("xy,xyd->d", table, instance.features)
