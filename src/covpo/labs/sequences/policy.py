"""The tabular autoregressive policy on a :class:`~covpo.labs.sequences.instance.SequenceInstance`, exactly.

``pi_theta(y|x) = prod_t softmax(theta[x, y_<t, :])[y_t]``: token and sequence
log-probabilities in log space, the exact rewards, coverage and KL over all ``V**L``
sequences, the exact gradients (a sum over a subtree of the prefix tree is a reshape followed
by a sum), the package's view of the instance (:func:`bandit_view`, a bandit over the
enumerated sequences, and :class:`TokenPolicy`, the token-level policy class of paper
section 2.2), and whole-sequence sampling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from covpo.batches import ResponseBatch
from covpo.instances import BanditInstance
from covpo.policies import kl_per_prompt, log_softmax_rows, sample_responses
from covpo.validation import (
    check_count,
    check_finite_array,
    check_generator,
    check_log_distribution,
    check_positive,
    check_shape,
    check_theta,
)

from .instance import SequenceInstance, _check_instance


# ---------------------------------------------------------------------------------------
# The autoregressive policy, in log space


def _check_theta(instance: SequenceInstance, theta: np.ndarray) -> np.ndarray:
    _check_instance(instance)
    return check_theta("theta", theta, instance.base_theta.shape)


def next_token_log_probs(instance: SequenceInstance, theta: np.ndarray) -> np.ndarray:
    """``log pi_theta(a | x, h)`` for every prompt, prefix and next token, shape ``(n_prompts, n_prefixes, V)``."""
    return log_softmax_rows(_check_theta(instance, theta))


def token_log_probs(instance: SequenceInstance, theta: np.ndarray) -> np.ndarray:
    """``log pi_theta(y_t | x, y_<t)`` for every sequence and position, shape ``(n_prompts, V**L, L)``.

    One gather of the per-prefix log-softmax along each sequence's prefixes.
    """
    return _gather_tokens(instance, next_token_log_probs(instance, theta))


def _gather_tokens(instance: SequenceInstance, next_token: np.ndarray) -> np.ndarray:
    return next_token[:, instance.prefix_index, instance.tokens]


def sequence_log_policy(instance: SequenceInstance, theta: np.ndarray) -> np.ndarray:
    """``log pi_theta(y|x) = sum_t log pi_theta(y_t | x, y_<t)`` for all sequences, shape ``(n_prompts, V**L)``."""
    return token_log_probs(instance, theta).sum(axis=-1)


def base_sequence_log_policy(instance: SequenceInstance) -> np.ndarray:
    """``log pi_0(y|x)`` of the base model, shape ``(n_prompts, V**L)``."""
    instance = _check_instance(instance)
    return sequence_log_policy(instance, instance.base_theta)


def _check_table(instance: SequenceInstance, name: str, table: np.ndarray) -> np.ndarray:
    _check_instance(instance)
    array = check_log_distribution(name, table)
    return check_shape(name, array, (instance.n_prompts, instance.n_sequences))


def expected_reward(instance: SequenceInstance, log_probs: np.ndarray) -> float:
    """``J(pi) = E_x E_{y~pi(.|x)} r(x, y)`` over whole sequences (paper section 1.2)."""
    log_probs = _check_table(instance, "log_probs", log_probs)
    return float(instance.prompt_probs @ np.sum(np.exp(log_probs) * instance.rewards, axis=1))


def log_coverage(instance: SequenceInstance, log_probs: np.ndarray) -> np.ndarray:
    """``log pi(Y*(x)|x)`` per prompt by log-sum-exp over the optimal sequences (paper section 1.3)."""
    log_probs = _check_table(instance, "log_probs", log_probs)
    return logsumexp(np.where(instance.optimal_mask, log_probs, -np.inf), axis=1)


def expected_kl(instance: SequenceInstance, log_p: np.ndarray, log_q: np.ndarray) -> float:
    """``E_x KL(p(.|x) || q(.|x))`` between sequence distributions, summed over all ``V**L`` sequences."""
    log_p = _check_table(instance, "log_p", log_p)
    log_q = _check_table(instance, "log_q", log_q)
    return float(instance.prompt_probs @ kl_per_prompt(log_p, log_q))


def regularized_objective(
    instance: SequenceInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float
) -> float:
    """``J(pi_theta) - beta E_x KL(pi_theta || pi_ref)`` over whole sequences (paper Eqs. (5) and (13))."""
    beta = check_positive("beta", beta)
    log_reference = _check_table(instance, "log_reference", log_reference)
    log_probs = sequence_log_policy(instance, theta)
    return expected_reward(instance, log_probs) - beta * expected_kl(instance, log_probs, log_reference)


# ---------------------------------------------------------------------------------------
# Exact gradients


def _node_sums(instance: SequenceInstance, coefficients: np.ndarray) -> np.ndarray:
    """``sum_{y, t: y_<t = h, y_t = a} c[x, y, t]`` for every prompt, prefix ``h`` and token ``a``.

    ``coefficients`` has shape ``(n_prompts, V**L, L)``, or ``(n_prompts, V**L)`` for the same
    coefficient at every position. The sequences through the node ``(h, a)`` at depth ``t``
    are a contiguous block, so each depth is one reshape and one sum.
    """
    n_prompts, vocab_size = instance.n_prompts, instance.vocab_size
    coefficients = np.asarray(coefficients, dtype=float)
    per_depth = coefficients.transpose(2, 0, 1) if coefficients.ndim == 3 else [coefficients] * instance.length
    blocks = [
        per_depth[depth]
        .reshape(n_prompts, vocab_size ** (depth + 1), -1)
        .sum(axis=2)
        .reshape(n_prompts, vocab_size**depth, vocab_size)
        for depth in range(instance.length)
    ]
    return np.concatenate(blocks, axis=1)


def token_score_sum(instance: SequenceInstance, theta: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """``sum_{x, y, t} c[x, y, t] grad_theta log pi_theta(y_t | x, y_<t)``, shape of ``theta``.

    The form of every gradient in this module. With ``c`` of shape ``(n_prompts, V**L)`` (one
    coefficient per sequence) it is ``sum_{x, y} c[x, y] grad log pi_theta(y|x)``. The token
    score is ``d log pi(y_t|x, h) / d theta[x, h, a] = 1[a = y_t] - pi(a|x, h)`` at the
    sequence's own prefix ``h = y_<t`` and zero elsewhere (paper section 2.2, tabular softmax
    at each prefix).
    """
    instance = _check_instance(instance)
    expected_shapes = {
        (instance.n_prompts, instance.n_sequences),
        (instance.n_prompts, instance.n_sequences, instance.length),
    }
    if np.shape(coefficients) not in expected_shapes:
        raise ValueError(
            f"coefficients must have one of the shapes {sorted(expected_shapes)}, got {np.shape(coefficients)}"
        )
    coefficients = check_finite_array("coefficients", coefficients)
    return _score_sum(instance, next_token_log_probs(instance, theta), coefficients)


def _score_sum(instance: SequenceInstance, next_token: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    counts = _node_sums(instance, coefficients)
    return counts - np.exp(next_token) * counts.sum(axis=-1, keepdims=True)


def _exact_policy_gradient(
    instance: SequenceInstance, next_token: np.ndarray, log_probs: np.ndarray, payoff: np.ndarray
) -> np.ndarray:
    """``E_x E_{y~pi}[(f(x, y) - E_pi f) grad log pi_theta(y|x)]`` for a payoff table ``f`` held fixed."""
    probs = np.exp(log_probs)
    advantage = payoff - np.sum(probs * payoff, axis=1, keepdims=True)
    return _score_sum(instance, next_token, instance.prompt_probs[:, None] * probs * advantage)


def reward_gradient(instance: SequenceInstance, theta: np.ndarray) -> np.ndarray:
    """Exact ``grad J(pi_theta) = E_x E_{y~pi}[(r(x, y) - V(x)) grad log pi_theta(y|x)]`` (paper appendix B.2).

    Enumerates all ``V**L`` sequences; the sequence score is the sum of the token scores.
    """
    next_token = next_token_log_probs(instance, theta)
    log_probs = _gather_tokens(instance, next_token).sum(axis=-1)
    return _exact_policy_gradient(instance, next_token, log_probs, instance.rewards)


def regularized_gradient(
    instance: SequenceInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float
) -> np.ndarray:
    """Exact gradient of ``J(pi_theta) - beta E_x KL(pi_theta || pi_ref)`` over whole sequences (paper Eqs. (5) and (13)).

    The KL's gradient is ``E_pi[(log(pi/pi_ref) - KL_x) grad log pi]``, so the whole gradient
    is the policy gradient of the shaped payoff ``r - beta log(pi_theta / pi_ref)``.
    """
    beta = check_positive("beta", beta)
    log_reference = _check_table(instance, "log_reference", log_reference)
    next_token = next_token_log_probs(instance, theta)
    log_probs = _gather_tokens(instance, next_token).sum(axis=-1)
    return _exact_policy_gradient(
        instance, next_token, log_probs, instance.rewards - beta * (log_probs - log_reference)
    )


# ---------------------------------------------------------------------------------------
# The package's view: a bandit over the enumerated sequences, and the token-level policy class


def bandit_view(instance: SequenceInstance) -> BanditInstance:
    """The sequence instance as a :class:`~covpo.instances.BanditInstance` whose responses are the ``V**L`` sequences.

    It carries what the package's algorithms read from an instance: ``rho``, the rewards of
    whole sequences, ``Y*(x)`` and the response sampling over the enumerated table (paper
    section 1.2). Its one feature ``phi(x, y) = log pi_0(y|x)`` with ``theta_0 = 1`` makes its
    own softmax-linear base model the sequence base model ``pi_0``; the algorithms
    differentiate the token logits through :class:`TokenPolicy`, passed as their ``policy``.

    Parameters
    ----------
    instance
        A :class:`~covpo.labs.sequences.instance.SequenceInstance`; its arrays are copied, not shared.
    """
    instance = _check_instance(instance)
    log_base = base_sequence_log_policy(instance)
    return BanditInstance(
        prompt_probs=instance.prompt_probs.copy(),
        features=log_base[:, :, None],
        rewards=instance.rewards.copy(),
        base_theta=np.ones(1),
        optimal_mask=instance.optimal_mask.copy(),
    )


@dataclass(frozen=True, eq=False)
class TokenPolicy:
    """The tabular autoregressive class as a :class:`~covpo.policy_classes.PolicyClass` (after paper section 2.2).

    Parameters are the token logits ``theta[x, h, a]`` flattened; a sequence's score is the sum
    of its token scores ``1[a = y_t] - pi_theta(a|x, h)`` at its own prefixes
    (:func:`token_score_sum`). Pass it with :func:`bandit_view` of the same instance to
    :func:`covpo.run`, as :func:`~covpo.labs.sequences.experiment.run_on_sequences` does.

    Parameters
    ----------
    instance
        The :class:`~covpo.labs.sequences.instance.SequenceInstance` whose token logits are the parameters.
    """

    instance: SequenceInstance

    def __post_init__(self) -> None:
        _check_instance(self.instance)

    @property
    def initial_params(self) -> np.ndarray:
        """The base model's token logits ``theta_0``, flattened."""
        return self.instance.base_theta.flatten()

    def token_logits(self, params: np.ndarray) -> np.ndarray:
        """The flat parameters as token logits, shape ``(n_prompts, n_prefixes, V)``."""
        theta = self.instance.base_theta
        return check_theta("params", params, (theta.size,)).reshape(theta.shape)

    def log_policy(self, params: np.ndarray) -> np.ndarray:
        """``log pi_theta(y|x)`` over all sequences (:func:`sequence_log_policy`)."""
        return sequence_log_policy(self.instance, self.token_logits(params))

    def batch_score_average(
        self, params: np.ndarray, batch: ResponseBatch, coefficients: np.ndarray, log_probs: np.ndarray
    ) -> np.ndarray:
        """``mean_i c_i grad log pi_theta(y_i|x_i)``, the coefficients summed onto the sequence table first."""
        coefficients = np.asarray(coefficients, dtype=float)
        table = _scatter(self.instance, batch.prompts, batch.responses, coefficients / coefficients.size)
        return token_score_sum(self.instance, self.token_logits(params), table).ravel()

    def population_score_sum(self, params: np.ndarray, advantage: np.ndarray, log_probs: np.ndarray) -> np.ndarray:
        """``E_x E_{y~pi}[(A(x, y) - E_pi A) grad log pi_theta(y|x)]``, exact over all sequences."""
        next_token = next_token_log_probs(self.instance, self.token_logits(params))
        return _exact_policy_gradient(self.instance, next_token, log_probs, advantage).ravel()


# ---------------------------------------------------------------------------------------
# Sampling


def sample_sequences(
    instance: SequenceInstance, log_probs: np.ndarray, rng: np.random.Generator, batch_size: int, group_size: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``batch_size`` prompts from ``rho`` and ``group_size`` sequences from ``pi(.|x)`` for each.

    Sequences are drawn whole, by inverse CDF over the enumerated table of
    :func:`sequence_log_policy` (the same law as token-by-token sampling). Returns prompt
    and sequence indices, both of shape ``(batch_size, group_size)``.
    """
    log_probs = _check_table(instance, "log_probs", log_probs)
    rng = check_generator("rng", rng)
    batch_size = check_count("batch_size", batch_size)
    group_size = check_count("group_size", group_size)
    prompts = rng.choice(instance.n_prompts, size=batch_size, p=instance.prompt_probs)
    prompts = np.repeat(prompts[:, None], group_size, axis=1)
    return prompts, sample_responses(log_probs, prompts, rng)


def _scatter(
    instance: SequenceInstance, prompts: np.ndarray, sequences: np.ndarray, coefficients: np.ndarray
) -> np.ndarray:
    """Sum per-sample coefficients into a table over (prompt, sequence[, position]) for :func:`token_score_sum`."""
    table = np.zeros((instance.n_prompts, instance.n_sequences) + coefficients.shape[prompts.ndim :])
    np.add.at(table, (prompts, sequences), coefficients)
    return table
