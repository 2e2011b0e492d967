"""Responses as token sequences: an exact, enumerable autoregressive laboratory.

The paper treats a response as one unit (paper section 5) and lists "responses are token
sequences, and policy ratios over full responses can be large" as an open question. Here a
response is a sequence ``y = (y_0, ..., y_{L-1})`` of ``L`` tokens from a vocabulary of
``V``, and the policy is tabular autoregressive: one logit per (prompt, prefix, next token),

    pi_theta(y|x) = prod_t softmax(theta[x, y_<t, :])[y_t],

which represents every full-support distribution over the ``V**L`` sequences (so the
regularized targets of paper sections 2.1 and 3.1 stay in the class) but couples sequences that
share a prefix. With ``V**L`` in the thousands everything is enumerable, so rewards, KL,
coverage and gradients are exact; the reward is on the whole sequence.

Sequences are numbered in lexicographic order (sequence ``s`` is ``s`` written in base
``V``), so the sequences that share their first ``l`` tokens are contiguous, and a sum over
a subtree of the prefix tree is a reshape followed by a sum. Prefixes of length ``l`` are
numbered ``sum_{j<l} V**j`` plus their base-``V`` value. Parameters ``theta`` have shape
``(n_prompts, n_prefixes, V)`` with ``n_prefixes = sum_{l<L} V**l``.

The module follows the package's data flow: the instance (with a coverage-collapse
construction after paper section 2.1), the policy and its exact gradients, the package's view
of it (:func:`bandit_view`, a bandit over the enumerated sequences, and :class:`TokenPolicy`,
the token-level policy class), through which :func:`run_on_sequences` runs the package's own
REINFORCE (exact and sampled) and APMD on token logits; then the one algorithm the package does
not have, a sampled PPO-NoClip-style reset method with groups of sequences and sequence-level or
per-token importance ratios, optionally clipped per token (after paper section 3.2); every run
returns the shared :class:`~covpo.trajectory.Trajectory`, and one experiment that a chapter
calls in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from covpo import algorithms
from covpo.algorithms.reinforce import leave_one_out_baseline
from covpo.batches import ResponseBatch
from covpo.collapse_instance import DEFAULT_DISTRACTOR_PROB, DEFAULT_OPTIMAL_PROB
from covpo.instances import OPTIMAL_REWARD_TOLERANCE, BanditInstance
from covpo.policies import kl_per_prompt, sample_responses
from covpo.table import Table
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import (
    check_count,
    check_distribution,
    check_finite_array,
    check_nonnegative,
    check_positive,
    check_probability,
    check_shape,
)

RATIO_FLAVOURS = ("sequence", "token")


# ---------------------------------------------------------------------------------------
# Enumeration of sequences and prefixes


def enumerate_sequences(vocab_size: int, length: int) -> np.ndarray:
    """All ``V**L`` token sequences in lexicographic order, shape ``(V**L, L)``; row ``s`` is ``s`` in base ``V``."""
    vocab_size = check_count("vocab_size", vocab_size, minimum=2)
    length = check_count("length", length)
    powers = vocab_size ** np.arange(length - 1, -1, -1)
    return (np.arange(vocab_size**length)[:, None] // powers) % vocab_size


def level_offsets(vocab_size: int, length: int) -> np.ndarray:
    """Index of the first prefix of each length ``l = 0, ..., L``: ``sum_{j<l} V**j``, shape ``(L + 1,)``.

    The last entry is the number of prefixes ``sum_{l<L} V**l``.
    """
    vocab_size = check_count("vocab_size", vocab_size, minimum=2)
    length = check_count("length", length)
    return np.concatenate([[0], np.cumsum(vocab_size ** np.arange(length))])


def prefix_indices(vocab_size: int, length: int) -> np.ndarray:
    """Index of the prefix ``y_<t`` of every sequence at every position ``t``, shape ``(V**L, L)``.

    The prefix of length ``t`` of sequence ``s`` has base-``V`` value ``s // V**(L - t)``.
    """
    offsets = level_offsets(vocab_size, length)[:-1]
    positions = np.arange(length)
    return offsets + np.arange(vocab_size**length)[:, None] // vocab_size ** (length - positions)


def sequence_index(tokens: np.ndarray, vocab_size: int) -> np.ndarray:
    """Lexicographic index of token sequences given along the last axis (inverse of :func:`enumerate_sequences`)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if np.any(tokens < 0) or np.any(tokens >= vocab_size):
        raise ValueError(f"tokens must lie in [0, {vocab_size}), got values from {tokens.min()} to {tokens.max()}")
    powers = vocab_size ** np.arange(tokens.shape[-1] - 1, -1, -1)
    return tokens @ powers


# ---------------------------------------------------------------------------------------
# The instance


@dataclass(frozen=True, eq=False)
class SequenceInstance:
    """A contextual bandit whose responses are all ``V**L`` token sequences, with a tabular autoregressive base model.

    Parameters
    ----------
    vocab_size
        ``V >= 2``.
    length
        ``L >= 1`` tokens per response.
    prompt_probs
        ``rho(x)``, shape ``(n_prompts,)``.
    rewards
        ``r(x, y)`` of whole sequences, shape ``(n_prompts, V**L)``, in lexicographic order.
    base_theta
        Token logits of ``pi_0``, shape ``(n_prompts, n_prefixes, V)``.
    optimal_mask
        ``Y*(x)``; by default the sequences whose reward is within ``1e-12`` of the maximum.

    Attributes
    ----------
    tokens, prefix_index
        :func:`enumerate_sequences` and :func:`prefix_indices`, both ``(V**L, L)``.
    """

    vocab_size: int
    length: int
    prompt_probs: np.ndarray
    rewards: np.ndarray
    base_theta: np.ndarray
    optimal_mask: np.ndarray | None = None
    tokens: np.ndarray = field(init=False, repr=False)
    prefix_index: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        vocab_size = check_count("vocab_size", self.vocab_size, minimum=2)
        length = check_count("length", self.length)
        prompt_probs = check_distribution("prompt_probs", check_finite_array("prompt_probs", self.prompt_probs, ndim=1))
        n_prompts, n_sequences = prompt_probs.size, vocab_size**length
        rewards = check_shape("rewards", check_finite_array("rewards", self.rewards, ndim=2), (n_prompts, n_sequences))
        n_prefixes = int(level_offsets(vocab_size, length)[-1])
        base_theta = check_shape(
            "base_theta", check_finite_array("base_theta", self.base_theta, ndim=3), (n_prompts, n_prefixes, vocab_size)
        )
        if self.optimal_mask is None:
            mask = rewards >= rewards.max(axis=1, keepdims=True) - OPTIMAL_REWARD_TOLERANCE
        else:
            mask = check_shape("optimal_mask", np.asarray(self.optimal_mask, dtype=bool), rewards.shape)
        if not np.all(mask.any(axis=1)):
            raise ValueError("optimal_mask must mark at least one optimal sequence for every prompt")
        for name, value in (
            ("vocab_size", vocab_size),
            ("length", length),
            ("prompt_probs", prompt_probs),
            ("rewards", rewards),
            ("base_theta", base_theta),
            ("optimal_mask", mask),
            ("tokens", enumerate_sequences(vocab_size, length)),
            ("prefix_index", prefix_indices(vocab_size, length)),
        ):
            object.__setattr__(self, name, value)

    @property
    def n_prompts(self) -> int:
        """Number of prompts."""
        return int(self.prompt_probs.size)

    @property
    def n_sequences(self) -> int:
        """Number of responses ``V**L``."""
        return int(self.rewards.shape[1])

    @property
    def n_prefixes(self) -> int:
        """Number of prefixes ``sum_{l<L} V**l``, one softmax over the next token each."""
        return int(self.base_theta.shape[1])

    @property
    def optimal_value(self) -> float:
        """``J* = E_x max_y r(x, y)`` (paper section 1.2)."""
        return float(self.prompt_probs @ self.rewards.max(axis=1))


def autoregressive_logits(vocab_size: int, length: int, log_sequence_probs: np.ndarray) -> np.ndarray:
    """Token logits whose autoregressive policy is exactly a given distribution over sequences.

    ``theta[x, h, a] = log q((h, a) prefix | x)``, the log mass of the subtree below the
    prefix ``(h, a)``; the softmax over ``a`` then gives ``q(h, a) / q(h)``, the chain-rule
    factor. Computed by log-sum-exp over contiguous blocks, so it is exact for masses far
    below ``1e-300``. ``log_sequence_probs`` has shape ``(n_prompts, V**L)`` and needs full
    support (finite entries).
    """
    vocab_size = check_count("vocab_size", vocab_size, minimum=2)
    length = check_count("length", length)
    log_q = check_finite_array("log_sequence_probs", log_sequence_probs, ndim=2)
    check_shape("log_sequence_probs", log_q, (log_q.shape[0], vocab_size**length))
    n_prompts = log_q.shape[0]
    blocks = [
        logsumexp(log_q.reshape(n_prompts, vocab_size ** (level + 1), -1), axis=2).reshape(
            n_prompts, vocab_size**level, vocab_size
        )
        for level in range(length)
    ]
    return np.concatenate(blocks, axis=1)


def _collapse_pair(
    vocab_size: int, length: int, shared_prefix: int, prompt: int, rng: np.random.Generator | None
) -> tuple[np.ndarray, np.ndarray]:
    """The optimal sequence and the distractor of one prompt, equal on their first ``shared_prefix`` tokens."""
    if rng is None:
        optimal = np.full(length, prompt % vocab_size)
        detour = np.full(length - shared_prefix, (prompt + 1) % vocab_size)
    else:
        optimal = rng.integers(vocab_size, size=length)
        detour = rng.integers(vocab_size, size=length - shared_prefix)
        detour[0] = (optimal[shared_prefix] + rng.integers(1, vocab_size)) % vocab_size
    return optimal, np.concatenate([optimal[:shared_prefix], detour])


def sequence_collapse_instance(
    gap: float,
    vocab_size: int = 4,
    length: int = 4,
    shared_prefix: int = 0,
    optimal_prob: float = DEFAULT_OPTIMAL_PROB,
    distractor_prob: float = DEFAULT_DISTRACTOR_PROB,
    n_prompts: int = 1,
    rng: np.random.Generator | int | None = None,
) -> SequenceInstance:
    """The coverage-collapse bandit of paper section 2.1 (our instance) with token-sequence responses.

    For each prompt, one optimal sequence (reward 1), one distractor (reward ``1 - gap``)
    and ``V**L - 2`` zero-reward sequences. The base model gives the optimal sequence
    ``optimal_prob`` (its coverage ``c_0``, so ``C_cov = 1 / optimal_prob``), the distractor
    ``distractor_prob`` and spreads the rest uniformly; its token logits come from
    :func:`autoregressive_logits`, so these sequence probabilities hold exactly.

    Parameters
    ----------
    gap
        The distractor's reward gap, in ``(0, 1)``; ``1 / gap`` is the hardness knob.
    vocab_size, length
        ``V >= 2`` and ``L >= 1`` with ``V**L >= 3``.
    shared_prefix
        Number of leading tokens the optimal sequence and the distractor share, ``0`` to
        ``L - 1``: ``0`` separates them at the first token, ``L - 1`` only at the last, so
        they share every logit along the way.
    optimal_prob, distractor_prob
        Base-model probabilities of the two rewarding sequences.
    n_prompts
        Number of prompts, uniformly weighted.
    rng
        ``None`` for a deterministic instance (optimal sequence ``(x mod V, ...)``, the
        distractor continues with ``(x + 1) mod V``); a generator or integer seed draws the
        sequences at random.
    """
    gap = check_probability("gap", gap)
    vocab_size = check_count("vocab_size", vocab_size, minimum=2)
    length = check_count("length", length)
    if vocab_size**length < 3:
        raise ValueError(f"vocab_size**length must be >= 3 to hold a zero-reward sequence, got {vocab_size**length}")
    shared_prefix = check_count("shared_prefix", shared_prefix, minimum=0)
    if shared_prefix > length - 1:
        raise ValueError(f"shared_prefix must be at most length - 1 = {length - 1}, got {shared_prefix!r}")
    optimal_prob = check_probability("optimal_prob", optimal_prob)
    distractor_prob = check_probability("distractor_prob", distractor_prob)
    if optimal_prob + distractor_prob >= 1.0:
        raise ValueError(f"optimal_prob + distractor_prob must be < 1, got {optimal_prob!r} + {distractor_prob!r}")
    n_prompts = check_count("n_prompts", n_prompts)
    generator = None if rng is None else np.random.default_rng(rng)
    n_sequences = vocab_size**length
    rewards = np.zeros((n_prompts, n_sequences))
    log_q = np.full((n_prompts, n_sequences), np.log1p(-(optimal_prob + distractor_prob)) - np.log(n_sequences - 2))
    for prompt in range(n_prompts):
        optimal, distractor = sequence_index(
            _collapse_pair(vocab_size, length, shared_prefix, prompt, generator), vocab_size
        )
        rewards[prompt, [optimal, distractor]] = 1.0, 1.0 - gap
        log_q[prompt, [optimal, distractor]] = np.log(optimal_prob), np.log(distractor_prob)
    return SequenceInstance(
        vocab_size=vocab_size,
        length=length,
        prompt_probs=np.full(n_prompts, 1.0 / n_prompts),
        rewards=rewards,
        base_theta=autoregressive_logits(vocab_size, length, log_q),
    )


# ---------------------------------------------------------------------------------------
# The autoregressive policy, in log space


def _check_theta(instance: SequenceInstance, theta: np.ndarray) -> np.ndarray:
    return check_shape("theta", check_finite_array("theta", theta, ndim=3), instance.base_theta.shape)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-softmax over the last axis, shifted by the maximum so nothing overflows or underflows to ``-inf``."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def next_token_log_probs(instance: SequenceInstance, theta: np.ndarray) -> np.ndarray:
    """``log pi_theta(a | x, h)`` for every prompt, prefix and next token, shape ``(n_prompts, n_prefixes, V)``."""
    return _log_softmax(_check_theta(instance, theta))


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
    return sequence_log_policy(instance, instance.base_theta)


def _check_table(instance: SequenceInstance, name: str, table: np.ndarray) -> np.ndarray:
    array = np.asarray(table, dtype=float)
    if np.any(np.isnan(array)):
        raise ValueError(f"{name} must not hold NaN")
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
        A :class:`SequenceInstance`; its arrays are copied, not shared.
    """
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
    :func:`covpo.run`, as :func:`run_on_sequences` does.

    Parameters
    ----------
    instance
        The :class:`SequenceInstance` whose token logits are the parameters.
    """

    instance: SequenceInstance

    @property
    def initial_params(self) -> np.ndarray:
        """The base model's token logits ``theta_0``, flattened."""
        return self.instance.base_theta.flatten()

    def token_logits(self, params: np.ndarray) -> np.ndarray:
        """The flat parameters as token logits, shape ``(n_prompts, n_prefixes, V)``."""
        theta = self.instance.base_theta
        return check_shape("params", check_finite_array("params", params, ndim=1), (theta.size,)).reshape(theta.shape)

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


def run_on_sequences(
    name: str, instance: SequenceInstance, *, rng: np.random.Generator | None = None, **hyperparameters: object
) -> Trajectory:
    """Run the package's algorithm ``name`` (:func:`covpo.run`) on the token logits of a :class:`SequenceInstance`.

    The algorithm sees :func:`bandit_view` of ``instance`` and differentiates :class:`TokenPolicy`;
    every iterate is evaluated exactly over all ``V**L`` sequences, its KL measured to the
    sequence base model. For example ``run_on_sequences("apmd", instance, beta=0.5, eta=4.0,
    n_iterations=40, inner_steps=8)`` is exact APMD with resets on the token logits (paper
    section 3.1): the target ``pi_t exp(r / beta) / Z`` is in the tabular autoregressive class,
    so enough inner steps reach it.

    Parameters
    ----------
    name
        A key of :data:`covpo.ALGORITHMS` whose function takes ``policy`` (``"reinforce_exact"``,
        ``"reinforce"``, ``"apmd"``, ...).
    instance
        The :class:`SequenceInstance`.
    rng
        The generator of an algorithm that samples; ``None`` for an exact one.
    **hyperparameters
        Keyword-only, as :func:`covpo.run` takes them.
    """
    return algorithms.run(name, bandit_view(instance), rng=rng, policy=TokenPolicy(instance), **hyperparameters)


# ---------------------------------------------------------------------------------------
# Sampling


def as_generator(rng: np.random.Generator | int) -> np.random.Generator:
    """``rng`` itself if it is a generator, ``np.random.default_rng(rng)`` for an integer seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise ValueError(f"rng must be a numpy Generator or an integer seed, got {type(rng).__name__}")


def sample_sequences(
    instance: SequenceInstance, log_probs: np.ndarray, rng: np.random.Generator, batch_size: int, group_size: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``batch_size`` prompts from ``rho`` and ``group_size`` sequences from ``pi(.|x)`` for each.

    Sequences are drawn whole, by inverse CDF over the enumerated table of
    :func:`sequence_log_policy` (the same law as token-by-token sampling). Returns prompt
    and sequence indices, both of shape ``(batch_size, group_size)``.
    """
    batch_size = check_count("batch_size", batch_size)
    group_size = check_count("group_size", group_size)
    prompts = rng.choice(instance.n_prompts, size=batch_size, p=instance.prompt_probs)
    prompts = np.repeat(prompts[:, None], group_size, axis=1)
    return prompts, sample_responses(_check_table(instance, "log_probs", log_probs), prompts, rng)


def _scatter(
    instance: SequenceInstance, prompts: np.ndarray, sequences: np.ndarray, coefficients: np.ndarray
) -> np.ndarray:
    """Sum per-sample coefficients into a table over (prompt, sequence[, position]) for :func:`token_score_sum`."""
    table = np.zeros((instance.n_prompts, instance.n_sequences) + coefficients.shape[prompts.ndim :])
    np.add.at(table, (prompts, sequences), coefficients)
    return table


# ---------------------------------------------------------------------------------------
# A PPO-NoClip-style reset method with sequence-level or per-token ratios (after paper section 3.2)


@dataclass(frozen=True, eq=False)
class SequenceBatch:
    """Groups of sequences drawn once per outer iteration from ``pi_t`` and reused by every inner step.

    Attributes
    ----------
    prompts, sequences
        Indices, shape ``(batch_size, group_size)``.
    advantages
        Sequence reward minus the leave-one-out mean of its group, same shape.
    log_sampling_tokens
        ``log pi_t(y_t | x, y_<t)`` of every token, shape ``(batch_size, group_size, L)``.
    """

    prompts: np.ndarray
    sequences: np.ndarray
    advantages: np.ndarray
    log_sampling_tokens: np.ndarray

    @property
    def size(self) -> int:
        """Number of sequences in the batch."""
        return int(self.sequences.size)


def batch_token_log_probs(
    instance: SequenceInstance, theta: np.ndarray, prompts: np.ndarray, sequences: np.ndarray
) -> np.ndarray:
    """``log pi_theta(y_t | x, y_<t)`` of the sampled sequences only, shape ``sequences.shape + (L,)``."""
    return _gather_batch(instance, next_token_log_probs(instance, theta), prompts, sequences)


def _gather_batch(
    instance: SequenceInstance, next_token: np.ndarray, prompts: np.ndarray, sequences: np.ndarray
) -> np.ndarray:
    return next_token[np.asarray(prompts)[..., None], instance.prefix_index[sequences], instance.tokens[sequences]]


def draw_sequence_batch(
    instance: SequenceInstance, theta: np.ndarray, batch_size: int, group_size: int, rng: np.random.Generator
) -> SequenceBatch:
    """Draw ``batch_size`` prompts with ``group_size >= 2`` sequences each from ``pi_theta``.

    The advantage of each sequence is its reward minus the mean reward of the other
    sequences of its group (leave-one-out, so the reward term stays unbiased).
    """
    group_size = check_count("group_size", group_size, minimum=2)
    prompts, sequences = sample_sequences(instance, sequence_log_policy(instance, theta), rng, batch_size, group_size)
    rewards = instance.rewards[prompts, sequences]
    return SequenceBatch(
        prompts=prompts,
        sequences=sequences,
        advantages=rewards - leave_one_out_baseline(rewards),
        log_sampling_tokens=batch_token_log_probs(instance, theta, prompts, sequences),
    )


def _check_ratio(ratio: str) -> str:
    if ratio not in RATIO_FLAVOURS:
        raise ValueError(f"ratio must be one of {RATIO_FLAVOURS}, got {ratio!r}")
    return ratio


def _check_clip(clip_eps: float | None) -> float | None:
    return None if clip_eps is None else check_probability("clip_eps", clip_eps)


@dataclass(frozen=True, eq=False)
class SurrogateParts:
    """The surrogate objective on a batch at ``theta``, its gradient, and the ratios it used.

    Attributes
    ----------
    objective, gradient
        The value and the gradient (shape of ``theta``) of :func:`ppo_surrogate`.
    log_token_ratio
        ``log rho_t = log pi_theta(y_t|x, y_<t) - log pi_t(y_t|x, y_<t)``, shape ``(B, G, L)``.
    clip_fraction
        Fraction of the importance weights (sequences or tokens) whose gradient the clip removes.
    """

    objective: float
    gradient: np.ndarray
    log_token_ratio: np.ndarray
    clip_fraction: float


def surrogate_parts(
    instance: SequenceInstance,
    theta: np.ndarray,
    batch: SequenceBatch,
    beta: float,
    ratio: str = "sequence",
    clip_eps: float | None = None,
) -> SurrogateParts:
    """PPO-style surrogate on a reused batch with sequence-level or per-token importance ratios (after paper section 3.2).

    With ``ratio="sequence"`` the weight is the exact sequence ratio
    ``w = prod_t rho_t = pi_theta(y|x) / pi_t(y|x)`` and the surrogate is PPO-NoClip's
    (Algorithm 1) with advantages: ``mean_i [w_i A_i - beta (w_i log w_i - w_i + 1)]``,
    unbiased for ``J(pi_theta) - beta KL(pi_theta || pi_t)`` up to a constant. With
    ``ratio="token"`` each token carries its own ratio ``rho_t`` and the sequence advantage,
    as practical PPO/GRPO implementations do:
    ``mean_i sum_t [rho_{i,t} A_i - beta (rho_{i,t} log rho_{i,t} - rho_{i,t} + 1)]``; the KL
    term then estimates the per-token KL along prefixes drawn from ``pi_t``. With
    ``clip_eps = e`` the reward term of each weight ``u`` becomes PPO's
    ``min(u A, clip(u, 1 - e, 1 + e) A)``, whose gradient vanishes where ``A > 0, u > 1 + e``
    or ``A < 0, u < 1 - e``.

    The gradient of each term is ``u (A [unclipped] - beta log u)`` times the score of the
    sequence (sequence ratio) or of the token (token ratio); see :func:`token_score_sum`.
    """
    beta = check_positive("beta", beta)
    ratio = _check_ratio(ratio)
    clip_eps = _check_clip(clip_eps)
    next_token = next_token_log_probs(instance, theta)
    log_token_ratio = _gather_batch(instance, next_token, batch.prompts, batch.sequences) - batch.log_sampling_tokens
    log_weight = log_token_ratio.sum(axis=-1, keepdims=True) if ratio == "sequence" else log_token_ratio
    weight = np.exp(log_weight)
    advantage = batch.advantages[..., None]
    reward_term = weight * advantage
    active = np.ones(weight.shape, dtype=bool)
    if clip_eps is not None:
        reward_term = np.minimum(reward_term, np.clip(weight, 1.0 - clip_eps, 1.0 + clip_eps) * advantage)
        active = ~(((advantage > 0) & (weight > 1.0 + clip_eps)) | ((advantage < 0) & (weight < 1.0 - clip_eps)))
    penalty = weight * log_weight - weight + 1.0
    objective = float(np.sum(reward_term - beta * penalty) / batch.size)
    coefficients = weight * (np.where(active, advantage, 0.0) - beta * log_weight) / batch.size
    per_token = np.broadcast_to(coefficients, log_token_ratio.shape)
    gradient = _score_sum(instance, next_token, _scatter(instance, batch.prompts, batch.sequences, per_token))
    return SurrogateParts(objective, gradient, log_token_ratio, float(1.0 - active.mean()))


def ppo_surrogate(
    instance: SequenceInstance,
    theta: np.ndarray,
    batch: SequenceBatch,
    beta: float,
    ratio: str = "sequence",
    clip_eps: float | None = None,
) -> float:
    """The value of the surrogate of :func:`surrogate_parts`."""
    return surrogate_parts(instance, theta, batch, beta, ratio, clip_eps).objective


@dataclass(frozen=True, eq=False)
class SequenceRatioRecord:
    """How far the importance ratios travel in each outer iteration, one entry per iteration.

    Attributes
    ----------
    max_abs_log_sequence_ratio
        ``max |log w|`` over the batch and every inner iterate ``k = 0, ..., K``, where
        ``w = prod_t rho_t`` is the sequence ratio ``pi_theta(y|x) / pi_t(y|x)``.
    max_abs_log_token_ratio
        ``max |log rho_t|`` over the batch's tokens and every inner iterate.
    max_abs_log_policy_ratio
        ``max_{x, y} |log pi_{t+1}(y|x) / pi_t(y|x)|`` over all sequences, exact, at the
        iterate handed back.
    clip_fraction
        Mean fraction of clipped weights over the ``K`` gradient evaluations (0 without a clip).
    """

    max_abs_log_sequence_ratio: np.ndarray
    max_abs_log_token_ratio: np.ndarray
    max_abs_log_policy_ratio: np.ndarray
    clip_fraction: np.ndarray


@dataclass(frozen=True, eq=False)
class SequencePPORun:
    """A sampled reset run: the shared trajectory plus its :class:`SequenceRatioRecord`."""

    trajectory: Trajectory
    ratios: SequenceRatioRecord


def _record(
    recorder: TrajectoryRecorder, instance: SequenceInstance, log_probs: np.ndarray, log_base: np.ndarray
) -> None:
    """Keep an iterate's reward, per-prompt log coverage and KL to the base model, all exact."""
    recorder.record(
        expected_reward(instance, log_probs),
        log_coverage(instance, log_probs),
        expected_kl(instance, log_probs, log_base),
    )


def _ratio_name(ratio: str, clip_eps: float | None) -> str:
    clip = "no clip" if clip_eps is None else f"clip {clip_eps:g}"
    return f"sampled PPO ({ratio} ratio, {clip})"


def sampled_sequence_ppo(
    instance: SequenceInstance,
    beta: float,
    eta: float,
    inner_steps: int,
    n_iterations: int,
    batch_size: int,
    rng: np.random.Generator | int,
    *,
    group_size: int = 4,
    ratio: str = "sequence",
    clip_eps: float | None = None,
    record_each_step: bool = False,
) -> SequencePPORun:
    """A PPO-NoClip-style APMD on token sequences: reset, sample once, ``K`` steps on the surrogate (after paper section 3.2).

    Each outer iteration resets the reference to ``pi_t`` (one reset), draws ``batch_size``
    prompts with ``group_size`` sequences each from ``pi_t`` (:func:`draw_sequence_batch`) and
    takes ``inner_steps`` gradient-ascent steps on :func:`surrogate_parts` with that batch.

    Parameters
    ----------
    instance
        A :class:`SequenceInstance`.
    beta, eta
        Regularization strength toward ``pi_t`` and inner learning rate, both ``> 0``.
    inner_steps, n_iterations
        ``K`` gradient steps per reset and ``T`` resets, both ``>= 1``.
    batch_size, group_size
        Prompts per outer iteration and sequences per prompt (``>= 2``).
    rng
        A generator or integer seed; the only randomness of the run.
    ratio
        ``"sequence"`` (the exact sequence ratio ``prod_t rho_t``) or ``"token"`` (per-token ratios).
    clip_eps
        PPO's clip ``e`` in ``(0, 1)`` applied to each weight, or ``None``.
    record_each_step
        Record every inner iterate in the trajectory, not only the end of each iteration.
    """
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    inner_steps = check_count("inner_steps", inner_steps)
    n_iterations = check_count("n_iterations", n_iterations)
    batch_size = check_count("batch_size", batch_size)
    group_size = check_count("group_size", group_size, minimum=2)
    ratio = _check_ratio(ratio)
    clip_eps = _check_clip(clip_eps)
    rng = as_generator(rng)
    settings = {
        "beta": beta,
        "eta": eta,
        "inner_steps": inner_steps,
        "n_iterations": n_iterations,
        "batch_size": batch_size,
        "group_size": group_size,
        "ratio": ratio,
        "clip_eps": clip_eps,
    }
    recorder = TrajectoryRecorder(_ratio_name(ratio, clip_eps), instance.optimal_value, settings)
    theta = instance.base_theta.copy()
    log_base = log_probs = base_sequence_log_policy(instance)
    _record(recorder, instance, log_probs, log_base)
    rows = []
    for _ in range(n_iterations):
        recorder.count_reset()
        batch = draw_sequence_batch(instance, theta, batch_size, group_size, rng)
        recorder.count_responses(batch.size)
        log_ratios, clip_fractions = [], []
        for _ in range(inner_steps):
            parts = surrogate_parts(instance, theta, batch, beta, ratio, clip_eps)
            theta = theta + eta * parts.gradient
            recorder.count_gradient_steps()
            log_ratios.append(parts.log_token_ratio)
            clip_fractions.append(parts.clip_fraction)
            if record_each_step:
                _record(recorder, instance, sequence_log_policy(instance, theta), log_base)
        log_ratios.append(
            batch_token_log_probs(instance, theta, batch.prompts, batch.sequences) - batch.log_sampling_tokens
        )
        log_reference, log_probs = log_probs, sequence_log_policy(instance, theta)
        stacked = np.stack(log_ratios)
        rows.append(
            (
                float(np.abs(stacked.sum(axis=-1)).max()),
                float(np.abs(stacked).max()),
                float(np.abs(log_probs - log_reference).max()),
                float(np.mean(clip_fractions)),
            )
        )
        if not record_each_step:
            _record(recorder, instance, log_probs, log_base)
    ratios = SequenceRatioRecord(*(np.array(column) for column in zip(*rows)))
    return SequencePPORun(trajectory=recorder.finish(), ratios=ratios)


# ---------------------------------------------------------------------------------------
# The experiment a chapter calls in one line

DEFAULT_GAP = 0.1
DEFAULT_ETA = 4.0
DEFAULT_BETA = 0.5
DEFAULT_INNER_STEPS = 8
DEFAULT_REINFORCE_STEPS = 10_000
DEFAULT_APMD_ITERATIONS = 40
DEFAULT_SAMPLED_REINFORCE_STEPS = 3_000
DEFAULT_SAMPLED_REINFORCE_BATCH = 64
DEFAULT_BATCH_SIZE = 8
DEFAULT_GROUP_SIZE = 4
DEFAULT_CLIP_EPS = 0.2
DEFAULT_RATIO_LENGTHS = (2, 4, 6)
PPO_FLAVOURS = (("sequence", None), ("token", None), ("token", DEFAULT_CLIP_EPS))
"""The sampled reset methods compared, as ``(ratio, clip_eps)`` pairs."""


@dataclass(frozen=True, eq=False)
class SequenceExperiment:
    """Collapse, resets and importance ratios on token-sequence responses, with the settings that produced them.

    Attributes
    ----------
    gap, eps, vocab_size, length
        The instance family (:func:`sequence_collapse_instance`) and the accuracy target.
    eta, beta, inner_steps
        The learning rate of every method, and APMD's strength and gradient steps per reset.
    seed
        Seed of every sampled run.
    shared_prefixes
        Shared prefix lengths of the exact comparison, ``(0, L - 1)``.
    reinforce, apmd
        Exact REINFORCE and exact APMD (every step recorded), one run per shared prefix length.
    sampled
        Sampled REINFORCE, then the sampled reset methods of :data:`PPO_FLAVOURS`, at shared prefix 0.
    ratio_lengths
        Sequence lengths ``L`` of the ratio measurement (shared prefix 0, same ``V``).
    ratio_names
        The sampled reset method of each row of the ratio arrays.
    max_abs_log_sequence_ratio, max_abs_log_token_ratio
        Per outer iteration, the largest ``|log w|`` and ``|log rho_t|`` over the batch and the
        inner loop, shape ``(n_methods, n_lengths, n_iterations)``.
    ratio_min_log10_coverage, ratio_steps_to_eps
        Lowest base-10 log coverage and gradient steps to eps (``-1`` if not reached) of those
        runs, shape ``(n_methods, n_lengths)``.
    """

    gap: float
    eps: float
    vocab_size: int
    length: int
    eta: float
    beta: float
    inner_steps: int
    seed: int
    shared_prefixes: np.ndarray
    reinforce: tuple[Trajectory, ...]
    apmd: tuple[Trajectory, ...]
    sampled: tuple[Trajectory, ...]
    ratio_lengths: np.ndarray
    ratio_names: tuple[str, ...]
    max_abs_log_sequence_ratio: np.ndarray
    max_abs_log_token_ratio: np.ndarray
    ratio_min_log10_coverage: np.ndarray
    ratio_steps_to_eps: np.ndarray

    def _steps(self, runs: tuple[Trajectory, ...]) -> np.ndarray:
        return np.array([_steps_or_missing(run, self.eps) for run in runs])

    @property
    def reinforce_steps_to_eps(self) -> np.ndarray:
        """Exact REINFORCE's gradient steps to eps per shared prefix length, ``-1`` where not reached."""
        return self._steps(self.reinforce)

    @property
    def apmd_steps_to_eps(self) -> np.ndarray:
        """Exact APMD's gradient steps to eps per shared prefix length, ``-1`` where not reached."""
        return self._steps(self.apmd)

    @property
    def sampled_steps_to_eps(self) -> np.ndarray:
        """Gradient steps to eps of each sampled run, ``-1`` where not reached."""
        return self._steps(self.sampled)

    def table(self) -> Table:
        """The runs at length ``L``: exact REINFORCE and APMD per shared prefix, then the sampled runs.

        ``str(table)`` gives it as aligned text; :meth:`ratio_table` has the ratios against ``L``.
        """
        rows = []
        for index, shared in enumerate(self.shared_prefixes):
            for run in (self.reinforce[index], self.apmd[index]):
                steps = _steps_or_missing(run, self.eps)
                rows.append((run.algorithm, int(shared), float(run.min_log10_coverage),
                             None if steps < 0 else int(steps), int(run.total_gradient_steps), "exact"))
        for run, steps in zip(self.sampled, self.sampled_steps_to_eps):
            responses = _responses_or_missing(run, self.eps)
            rows.append((run.algorithm, 0, float(run.min_log10_coverage), None if steps < 0 else int(steps),
                         int(run.total_gradient_steps), None if responses < 0 else int(responses)))
        return Table(
            ("run", "shared prefix (tokens)", "lowest log10 coverage", "steps to ε", "steps run",
             "responses to ε"),
            tuple(rows),
            caption=(
                f"Token sequences: V = {self.vocab_size}, L = {self.length}, gap {self.gap:g}, ε = {self.eps:g}, "
                f"η = {self.eta:g}; APMD with β = {self.beta:g}, K = {self.inner_steps}; seed {self.seed}"
            ),
            notes=("'-': ε not reached within the run. 'exact': the run samples nothing. Coverage is the "
                   "optimal sequence's probability.",),
        )

    def ratio_table(self) -> Table:
        """Per sampled reset method and length ``L``: the largest ratios, the lowest coverage, steps to eps."""
        rows = tuple(
            (name, int(length), float(self.max_abs_log_sequence_ratio[m, n].max()),
             float(self.max_abs_log_token_ratio[m, n].max()), float(self.ratio_min_log10_coverage[m, n]),
             None if self.ratio_steps_to_eps[m, n] < 0 else int(self.ratio_steps_to_eps[m, n]))
            for m, name in enumerate(self.ratio_names)
            for n, length in enumerate(self.ratio_lengths)
        )
        return Table(
            ("method", "L", "largest |log w| (sequence)", "largest |log ρ_t| (token)", "lowest log10 coverage",
             "steps to ε"),
            rows,
            caption=f"Sampled reset methods against the sequence length L (seed {self.seed})",
            notes=(f"w: a sequence's ratio to the reference, ρ_t: a token's; largest over the batches and inner "
                   f"steps of the run. The target's bound on |log w| is R/β = {1.0 / self.beta:g}. "
                   "'-': ε not reached.",),
        )

    def summary(self) -> str:
        """A plain-text table of every measurement."""
        lines = [
            (
                f"V={self.vocab_size}, L={self.length}, gap={self.gap:g}, eps={self.eps:g}, eta={self.eta:g}, "
                f"APMD beta={self.beta:g} with K={self.inner_steps}, seed={self.seed}"
            ),
            "exact methods: shared prefix | min log10 coverage | steps to eps (-1: not reached)",
        ]
        for index, shared in enumerate(self.shared_prefixes):
            for run in (self.reinforce[index], self.apmd[index]):
                steps = _steps_or_missing(run, self.eps)
                lines.append(
                    f"  {run.algorithm:<32} {shared:>2} | {run.min_log10_coverage:8.2f} | "
                    f"{steps:>6} of {run.total_gradient_steps}"
                )
        lines.append("sampled methods, shared prefix 0: min log10 coverage | steps to eps | responses")
        for run, steps in zip(self.sampled, self.sampled_steps_to_eps):
            responses = _responses_or_missing(run, self.eps)
            lines.append(f"  {run.algorithm:<40} | {run.min_log10_coverage:6.2f} | {steps:>6} | {responses:>6}")
        lines.append(
            "ratios per method and L: max |log w| (sequence), max |log rho_t| (token), min log10 coverage, steps to eps"
        )
        for m, name in enumerate(self.ratio_names):
            for n, length in enumerate(self.ratio_lengths):
                lines.append(
                    f"  {name:<40} L={length} | {self.max_abs_log_sequence_ratio[m, n].max():5.2f} | "
                    f"{self.max_abs_log_token_ratio[m, n].max():5.2f} | {self.ratio_min_log10_coverage[m, n]:6.2f} | "
                    f"{self.ratio_steps_to_eps[m, n]:>5}"
                )
        return "\n".join(lines)


def _steps_or_missing(run: Trajectory, eps: float) -> int:
    steps = run.steps_to_eps(eps)
    return -1 if steps is None else steps


def _responses_or_missing(run: Trajectory, eps: float) -> int:
    responses = run.responses_to_eps(eps)
    return -1 if responses is None else responses


def sequence_experiment(
    gap: float = DEFAULT_GAP,
    vocab_size: int = 4,
    length: int = 4,
    eps: float | None = None,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    inner_steps: int = DEFAULT_INNER_STEPS,
    reinforce_steps: int = DEFAULT_REINFORCE_STEPS,
    apmd_iterations: int = DEFAULT_APMD_ITERATIONS,
    ratio_lengths: tuple[int, ...] = DEFAULT_RATIO_LENGTHS,
    seed: int = 0,
) -> SequenceExperiment:
    """Run every measurement of the token-sequence laboratory (a few seconds with the defaults).

    1. Exact REINFORCE (no KL) and exact APMD, the package's through :func:`run_on_sequences`,
       on :func:`sequence_collapse_instance` with the optimal sequence and the distractor
       separated at the first token (shared prefix 0) and at the last (shared prefix ``L - 1``).
    2. At shared prefix 0: sampled REINFORCE (batch 64) and the sampled reset method in the
       flavours of :data:`PPO_FLAVOURS` (batch 8 prompts x 4 sequences, ``apmd_iterations``
       resets of ``inner_steps`` steps).
    3. The same sampled reset methods at each length in ``ratio_lengths``, recording how far
       the sequence and token ratios travel per outer iteration.

    ``eps`` defaults to ``gap / 2``. Every sampled run uses ``np.random.default_rng(seed)``.
    """
    gap = check_probability("gap", gap)
    eps = gap / 2 if eps is None else check_nonnegative("eps", eps)
    seed = check_count("seed", seed, minimum=0)
    shared_prefixes = np.array([0, length - 1])
    instances = [sequence_collapse_instance(gap, vocab_size, length, shared_prefix=int(k)) for k in shared_prefixes]
    reinforce = tuple(
        run_on_sequences("reinforce_exact", instance, eta=eta, n_iterations=reinforce_steps, record_every=10)
        for instance in instances
    )
    apmd = tuple(
        run_on_sequences(
            "apmd", instance, beta=beta, eta=eta, n_iterations=apmd_iterations, inner_steps=inner_steps,
            record_each_step=True,
        )
        for instance in instances
    )
    sampled = (
        run_on_sequences(
            "reinforce", instances[0], rng=np.random.default_rng(seed), eta=eta,
            n_iterations=DEFAULT_SAMPLED_REINFORCE_STEPS, batch_size=DEFAULT_SAMPLED_REINFORCE_BATCH, record_every=10,
        ),
        *(run.trajectory for run in _ppo_runs(instances[0], beta, eta, inner_steps, apmd_iterations, seed)),
    )
    ratio_runs = [
        _ppo_runs(
            sequence_collapse_instance(gap, vocab_size, int(ratio_length)),
            beta,
            eta,
            inner_steps,
            apmd_iterations,
            seed,
        )
        for ratio_length in ratio_lengths
    ]
    by_method = list(zip(*ratio_runs))
    return SequenceExperiment(
        gap=gap,
        eps=eps,
        vocab_size=vocab_size,
        length=length,
        eta=eta,
        beta=beta,
        inner_steps=inner_steps,
        seed=seed,
        shared_prefixes=shared_prefixes,
        reinforce=reinforce,
        apmd=apmd,
        sampled=sampled,
        ratio_lengths=np.array(ratio_lengths),
        ratio_names=tuple(runs[0].trajectory.algorithm for runs in by_method),
        max_abs_log_sequence_ratio=np.array(
            [[run.ratios.max_abs_log_sequence_ratio for run in runs] for runs in by_method]
        ),
        max_abs_log_token_ratio=np.array([[run.ratios.max_abs_log_token_ratio for run in runs] for runs in by_method]),
        ratio_min_log10_coverage=np.array([[run.trajectory.min_log10_coverage for run in runs] for runs in by_method]),
        ratio_steps_to_eps=np.array([[_steps_or_missing(run.trajectory, eps) for run in runs] for runs in by_method]),
    )


def _ppo_runs(
    instance: SequenceInstance, beta: float, eta: float, inner_steps: int, n_iterations: int, seed: int
) -> tuple[SequencePPORun, ...]:
    """The sampled reset method in every flavour of :data:`PPO_FLAVOURS`, each from ``default_rng(seed)``."""
    return tuple(
        sampled_sequence_ppo(
            instance,
            beta,
            eta,
            inner_steps,
            n_iterations,
            DEFAULT_BATCH_SIZE,
            np.random.default_rng(seed),
            group_size=DEFAULT_GROUP_SIZE,
            ratio=ratio,
            clip_eps=clip_eps,
        )
        for ratio, clip_eps in PPO_FLAVOURS
    )
