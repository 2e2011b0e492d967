"""Jitted sampling of answers with a key-value cache.

Each prompt's prefix ``[BOS, x, SEP]`` is run once through the cache (prefill), the cache is
copied to the ``n`` samples of that prompt, and the ``L`` answer symbols are drawn one step at a
time (:func:`covpo.labs.transformer.model.decode_step`), so the cost is linear in the length.
The sampler returns each drawn token's log-probability under the sampling policy, which the
policy-gradient losses use as ``log pi_old``.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from .model import ModelConfig, Params, decode_step, empty_cache


@partial(jax.jit, static_argnames=("config", "n"))
def sample_answers(params: Params, config: ModelConfig, prompts: jax.Array, n: int,
                   key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Draw ``n`` answers per prompt from ``pi_theta`` (temperature 1).

    Parameters
    ----------
    params, config
        The policy.
    prompts
        ``[P, L]`` prompt symbols.
    n
        Samples per prompt.
    key
        A JAX random key (the only source of randomness).

    Returns
    -------
    answers : jax.Array
        ``[P, n, L]`` answer symbols.
    token_log_probs : jax.Array
        ``[P, n, L]`` their log-probabilities ``log pi_theta(y_t | x, y_<t)``.
    """
    P, L = prompts.shape
    prefix = jnp.concatenate([jnp.full((P, 1), config.bos, prompts.dtype), prompts,
                              jnp.full((P, 1), config.sep, prompts.dtype)], axis=1)

    def prefill(cache, position):
        logits, cache = decode_step(params, config, cache, prefix[:, position], position)
        return cache, logits

    cache, logits = jax.lax.scan(prefill, empty_cache(config, P), jnp.arange(L + 2))
    cache = jax.tree_util.tree_map(lambda a: jnp.repeat(a, n, axis=1), cache)
    logits = jnp.repeat(logits[-1], n, axis=0)

    def choose(logits, step_key):
        token = jax.random.categorical(step_key, logits, axis=-1).astype(prompts.dtype)
        log_probs = jax.nn.log_softmax(logits, axis=-1)
        return token, jnp.take_along_axis(log_probs, token[:, None], axis=-1)[:, 0]

    def draw(carry, inputs):
        cache, logits = carry
        step_key, position = inputs
        token, chosen = choose(logits, step_key)
        logits, cache = decode_step(params, config, cache, token, position)
        return (cache, logits), (token, chosen)

    keys = jax.random.split(key, L)
    (_, logits), (tokens, chosen) = jax.lax.scan(draw, (cache, logits), (keys[:-1], jnp.arange(L + 2, 2 * L + 1)))
    last, last_chosen = choose(logits, keys[-1])
    tokens = jnp.concatenate([tokens, last[None]], axis=0)
    chosen = jnp.concatenate([chosen, last_chosen[None]], axis=0)
    return tokens.T.reshape(P, n, L), chosen.T.reshape(P, n, L)
