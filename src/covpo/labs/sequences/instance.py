"""The token-sequence instance: enumeration of sequences and prefixes, and the collapse construction.

A response is a sequence ``y = (y_0, ..., y_{L-1})`` of ``L`` tokens from a vocabulary of ``V``,
numbered in lexicographic order (sequence ``s`` is ``s`` written in base ``V``), so the
sequences that share their first ``l`` tokens are contiguous. Prefixes of length ``l`` are
numbered ``sum_{j<l} V**j`` plus their base-``V`` value. :class:`SequenceInstance` holds the
rewards of whole sequences and the tabular autoregressive base model's token logits;
:func:`autoregressive_logits` turns any full-support distribution over sequences into such
logits, and :func:`sequence_collapse_instance` is the coverage-collapse bandit of paper
section 2.1 with token-sequence responses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from covpo.collapse_instance import DEFAULT_DISTRACTOR_PROB, DEFAULT_OPTIMAL_PROB
from covpo.instances import OPTIMAL_REWARD_TOLERANCE
from covpo.validation import (
    check_count,
    check_distribution,
    check_finite_array,
    check_index_array,
    check_instance,
    check_probability,
    check_shape,
)


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
    vocab_size = check_count("vocab_size", vocab_size, minimum=2)
    tokens = check_index_array("tokens", tokens, vocab_size)
    if tokens.ndim == 0:
        raise ValueError(f"tokens must hold at least one axis of tokens, got {tokens!r}")
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
        rewards = check_finite_array("rewards", self.rewards, ndim=2)
        if rewards.shape != (n_prompts, n_sequences):
            raise ValueError(
                f"rewards must have shape {(n_prompts, n_sequences)} (one row per entry of prompt_probs, one column "
                f"per sequence), got shape {rewards.shape}"
            )
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
    generator = None if rng is None else as_generator(rng)
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
# Arguments


def _check_instance(instance: object) -> SequenceInstance:
    return check_instance("instance", instance, SequenceInstance)


def as_generator(rng: np.random.Generator | int) -> np.random.Generator:
    """``rng`` itself if it is a generator, ``np.random.default_rng(rng)`` for an integer seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise ValueError(f"rng must be a numpy Generator or an integer seed >= 0, got {rng!r}")

