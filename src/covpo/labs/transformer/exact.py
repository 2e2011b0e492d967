"""Exact sequence-level quantities over all answers: the mirror-descent target, KL divergences, expected rewards.

With ``n_symbols ** L`` answers per prompt (512 in chapter 7), every answer's log-probability
is computed exactly (:func:`covpo.labs.transformer.model.all_answer_log_probs`), so the
quantities the theory is stated in need no sampling. Arrays are log-probability tables
``[..., A]`` over the answers of each prompt (last axis), in log space throughout.

- :func:`regularized_target`: the maximizer of ``E_pi r - beta KL(pi || pi_ref)`` over all
  policies, ``pi_ref exp(r / beta) / Z`` (paper section 3.1, the mirror-descent step);
- :func:`sequence_kl`: ``KL(p || q)`` per prompt;
- :func:`regularized_objective`: ``E_pi r - beta KL(pi || pi_ref)`` per prompt.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def regularized_target(log_reference: jax.Array, rewards: jax.Array, beta: jax.Array) -> jax.Array:
    """``log pi*`` with ``pi* = pi_ref exp(r / beta) / Z`` per prompt (paper section 3.1), from ``log pi_ref`` and ``r``.

    The maximizer over all policies of :func:`regularized_objective`: with a reset reference
    ``pi_ref = pi_t`` it is the exact mirror-descent step ``pi*_{t+1}``.
    """
    unnormalized = log_reference + rewards / beta
    return unnormalized - jax.nn.logsumexp(unnormalized, axis=-1, keepdims=True)


def sequence_kl(log_p: jax.Array, log_q: jax.Array) -> jax.Array:
    """``KL(p || q) = sum_y p(y) (log p(y) - log q(y))`` per prompt (last axis summed; finite log-probabilities)."""
    return (jnp.exp(log_p) * (log_p - log_q)).sum(-1)


def regularized_objective(log_policy: jax.Array, log_reference: jax.Array, rewards: jax.Array,
                          beta: jax.Array) -> jax.Array:
    """``E_{y~pi} r(y) - beta KL(pi || pi_ref)`` per prompt (the inner objective of APMD, paper section 3.1)."""
    return (jnp.exp(log_policy) * rewards).sum(-1) - beta * sequence_kl(log_policy, log_reference)
