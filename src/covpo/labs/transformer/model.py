"""A small decoder-only transformer in JAX, with a key-value cache for generation.

The policy ``pi_theta(y|x)`` of this laboratory is an autoregressive transformer (pre-layer-norm,
causal multi-head self-attention, a two-layer MLP per block, learned position embeddings). A
sequence is ``[BOS, x_1..x_L, SEP, y_1..y_L]``; the head predicts answer symbols only, so the
answer space is exactly ``n_symbols ** L`` and ``sum_y pi_theta(y|x) = 1`` holds over it. The
paper's policy class is softmax-linear (paper section 2); this is the nonlinear, token-level
policy its section 5 leaves open, trained with automatic differentiation (no hand-written
backpropagation).

Parameters are a plain dict of ``jax.numpy`` arrays (a pytree), so ``jax.grad``, ``jax.vmap``
and ``optax`` apply directly. Computation is float32; log-probabilities are log-softmax values,
so sequence log-probabilities (log coverage) are sums in log space.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from covpo.validation import check_count

Params = dict


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the transformer.

    Parameters
    ----------
    n_symbols
        Size of the answer (and prompt) alphabet; tokens ``n_symbols`` and ``n_symbols + 1``
        are BOS and SEP.
    length
        Prompt length ``L`` = answer length.
    d_model, n_layers, n_heads
        Width, depth and number of attention heads (``d_model`` divisible by ``n_heads``).
    """

    n_symbols: int = 8
    length: int = 3
    d_model: int = 48
    n_layers: int = 2
    n_heads: int = 4

    def __post_init__(self) -> None:
        check_count("n_symbols", self.n_symbols, 2)
        check_count("length", self.length, 1)
        check_count("d_model", self.d_model, 2)
        check_count("n_layers", self.n_layers, 1)
        check_count("n_heads", self.n_heads, 1)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model must be divisible by n_heads, got {self.d_model} and {self.n_heads}")

    @property
    def n_tokens(self) -> int:
        """Input vocabulary, the symbols, BOS and SEP."""
        return self.n_symbols + 2

    @property
    def bos(self) -> int:
        return self.n_symbols

    @property
    def sep(self) -> int:
        return self.n_symbols + 1

    @property
    def context(self) -> int:
        """Input positions ever fed (BOS, the prompt, SEP and all answer tokens but the last)."""
        return 2 * self.length + 1

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


_standard_normals = jax.jit(jax.vmap(lambda key, size: jax.random.normal(key, (size,), dtype=jnp.float32),
                                     in_axes=(0, None)), static_argnums=1)
"""``jax.random.normal(key, (size,))`` for every key of a stack of keys."""


def init_params(config: ModelConfig, key: jax.Array) -> Params:
    """Random parameters (scaled normal weights, zero biases, unit layer-norm scales).

    Each weight matrix is ``scale * jax.random.normal(k, shape)`` with its own key ``k``. All are
    drawn in one call, as the leading values of equally long draws (JAX's threefry makes each value
    depend only on its key and its index, so the values are the same), and scaled on the host in
    float32: one compiled sampler serves every shape. Call it outside ``jit``.
    """
    d, hidden = config.d_model, 4 * config.d_model
    keys = jax.random.split(key, 3 + 4 * config.n_layers)
    longest = max(d * hidden, config.n_tokens * d, config.context * d, d * config.n_symbols)
    draws = iter(np.asarray(_standard_normals(keys, 1 << (longest - 1).bit_length())))

    def normal(shape: tuple[int, ...], scale: float) -> jax.Array:
        return jnp.asarray(np.float32(scale) * next(draws)[:math.prod(shape)].reshape(shape))

    def constant(value: float, size: int) -> jax.Array:
        return jnp.asarray(np.full(size, value, dtype=np.float32))

    layers = []
    for _ in range(config.n_layers):
        layers.append({
            "ln1": {"scale": constant(1.0, d), "bias": constant(0.0, d)},
            "qkv": normal((d, 3 * d), d ** -0.5),
            "out": normal((d, d), (2 * config.n_layers * d) ** -0.5),
            "ln2": {"scale": constant(1.0, d), "bias": constant(0.0, d)},
            "w1": normal((d, hidden), d ** -0.5), "b1": constant(0.0, hidden),
            "w2": normal((hidden, d), (2 * config.n_layers * hidden) ** -0.5), "b2": constant(0.0, d),
        })
    return {
        "embed": normal((config.n_tokens, d), 0.5),
        "position": normal((config.context, d), 0.5),
        "layers": layers,
        "ln_f": {"scale": constant(1.0, d), "bias": constant(0.0, d)},
        "head": normal((d, config.n_symbols), d ** -0.5),
    }


def parameter_count(params: Params) -> int:
    """Number of scalar parameters."""
    return int(sum(leaf.size for leaf in jax.tree_util.tree_leaves(params)))


def _layer_norm(x: jax.Array, p: dict) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"]


def _mlp(x: jax.Array, layer: dict) -> jax.Array:
    h = _layer_norm(x, layer["ln2"])
    return jax.nn.gelu(h @ layer["w1"] + layer["b1"]) @ layer["w2"] + layer["b2"]


def _split_heads(x: jax.Array, config: ModelConfig) -> jax.Array:
    return x.reshape(*x.shape[:-1], config.n_heads, config.head_dim)


def _attend(queries: jax.Array, keys: jax.Array, values: jax.Array, visible: jax.Array,
            config: ModelConfig) -> jax.Array:
    """Multi-head attention of ``queries [..., Q, H, D]`` to ``keys, values [..., K, H, D]`` where ``visible [Q, K]``."""
    scores = jnp.einsum("...qhd,...khd->...hqk", queries, keys) / jnp.sqrt(config.head_dim)
    scores = jnp.where(visible, scores, -jnp.inf)
    return jnp.einsum("...hqk,...khd->...qhd", jax.nn.softmax(scores, axis=-1), values)


def forward(params: Params, config: ModelConfig, tokens: jax.Array) -> jax.Array:
    """Logits over the answer symbols at every position of ``tokens`` (shape ``[B, T]``, ``T <= context``).

    The full (training-time) forward pass with a causal mask; its logits at position ``t``
    condition on tokens ``0..t``.
    """
    T = tokens.shape[-1]
    x = params["embed"][tokens] + params["position"][:T]
    causal = jnp.tril(jnp.ones((T, T), dtype=bool))
    for layer in params["layers"]:
        q, k, v = jnp.split(_layer_norm(x, layer["ln1"]) @ layer["qkv"], 3, axis=-1)
        q, k, v = (_split_heads(a, config) for a in (q, k, v))
        x = x + _attend(q, k, v, causal, config).reshape(*x.shape) @ layer["out"]
        x = x + _mlp(x, layer)
    return _layer_norm(x, params["ln_f"]) @ params["head"]


def empty_cache(config: ModelConfig, batch: int) -> dict:
    """An all-zero key-value cache for ``batch`` sequences (``[layers, B, context, heads, head_dim]``)."""
    shape = (config.n_layers, batch, config.context, config.n_heads, config.head_dim)
    return {"k": jnp.zeros(shape, jnp.float32), "v": jnp.zeros(shape, jnp.float32)}


def decode_step(params: Params, config: ModelConfig, cache: dict, token: jax.Array,
                position: jax.Array) -> tuple[jax.Array, dict]:
    """Feed one token per sequence at ``position``; return its next-symbol logits ``[B, V]`` and the updated cache.

    Attention reads the cached keys and values of positions ``0..position``, so generating a
    sequence of length ``T`` costs ``O(T)`` steps of ``O(T)`` attention each, instead of
    re-running the whole prefix every step.
    """
    x = params["embed"][token] + params["position"][position]
    visible = jnp.arange(config.context) <= position
    keys, values = [], []
    for i, layer in enumerate(params["layers"]):
        q, k, v = jnp.split(_layer_norm(x, layer["ln1"]) @ layer["qkv"], 3, axis=-1)
        q, k, v = (_split_heads(a, config) for a in (q, k, v))
        k_all = jax.lax.dynamic_update_index_in_dim(cache["k"][i], k, position, axis=1)
        v_all = jax.lax.dynamic_update_index_in_dim(cache["v"][i], v, position, axis=1)
        scores = jnp.einsum("bhd,bkhd->bhk", q, k_all) / jnp.sqrt(config.head_dim)
        scores = jnp.where(visible, scores, -jnp.inf)
        attended = jnp.einsum("bhk,bkhd->bhd", jax.nn.softmax(scores, axis=-1), v_all)
        x = x + attended.reshape(*x.shape) @ layer["out"]
        x = x + _mlp(x, layer)
        keys.append(k_all)
        values.append(v_all)
    logits = _layer_norm(x, params["ln_f"]) @ params["head"]
    return logits, {"k": jnp.stack(keys), "v": jnp.stack(values)}


def teacher_forcing_inputs(config: ModelConfig, prompts: jax.Array, answers: jax.Array) -> jax.Array:
    """The input tokens ``[BOS, x, SEP, y_1..y_{L-1}]`` for prompts and answers of shape ``[B, L]``."""
    batch = prompts.shape[0]
    bos = jnp.full((batch, 1), config.bos, dtype=prompts.dtype)
    sep = jnp.full((batch, 1), config.sep, dtype=prompts.dtype)
    return jnp.concatenate([bos, prompts, sep, answers[:, :-1]], axis=1)


def token_log_probs(params: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array) -> jax.Array:
    """``log pi_theta(y_t | x, y_<t)`` for every answer token, by teacher forcing (shape ``[B, L]``)."""
    logits = forward(params, config, teacher_forcing_inputs(config, prompts, answers))[:, config.length + 1:]
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(log_probs, answers[..., None], axis=-1)[..., 0]


def answer_log_probs(params: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array) -> jax.Array:
    """Exact ``log pi_theta(y|x)`` of whole answers (shape ``[B]``): the sum of token log-probabilities."""
    return token_log_probs(params, config, prompts, answers).sum(-1)


def answer_logits(params: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array) -> jax.Array:
    """Next-symbol logits at every answer position, by the full forward pass (shape ``[B, L, V]``)."""
    return forward(params, config, teacher_forcing_inputs(config, prompts, answers))[:, config.length + 1:]


def group_answer_logits(params: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array) -> jax.Array:
    """:func:`~covpo.labs.transformer.model.answer_logits` for a group of answers per prompt: ``prompts [N, L]``, ``answers [N, G, L]`` to ``[N, G, L, V]``.

    The same causal forward pass, computed once per prompt on the shared prefix
    ``[BOS, x, SEP]`` (whose states do not depend on the answer) and per answer only on the
    answer tokens ``y_1..y_{L-1}``, which attend to the prefix and causally to each other. The
    position-wise layers run on the prefix and answer tokens together, as rows of one matrix.
    """
    N, G, L = answers.shape
    shared = jnp.concatenate([jnp.full((N, 1), config.bos, prompts.dtype), prompts,
                              jnp.full((N, 1), config.sep, prompts.dtype)], axis=1)
    S, A, d = L + 2, L - 1, config.d_model
    x = jnp.concatenate([(params["embed"][shared] + params["position"][:S]).reshape(N * S, d),
                         (params["embed"][answers[..., :-1]] + params["position"][S:S + A]).reshape(N * G * A, d)])
    causal_shared = jnp.tril(jnp.ones((S, S), dtype=bool))
    causal_own = jnp.concatenate([jnp.ones((A, S), dtype=bool), jnp.tril(jnp.ones((A, A), dtype=bool))], axis=1)
    broadcast = lambda a: jnp.broadcast_to(a[:, None], (N, G, *a.shape[1:]))
    shared_part = lambda a: a[:N * S].reshape(N, S, *a.shape[1:])
    own_part = lambda a: a[N * S:].reshape(N, G, A, *a.shape[1:])
    for layer in params["layers"]:
        q, k, v = (_split_heads(a, config) for a in jnp.split(_layer_norm(x, layer["ln1"]) @ layer["qkv"], 3, axis=-1))
        attended_shared = _attend(shared_part(q), shared_part(k), shared_part(v), causal_shared, config)
        attended_own = _attend(own_part(q), jnp.concatenate([broadcast(shared_part(k)), own_part(k)], axis=2),
                               jnp.concatenate([broadcast(shared_part(v)), own_part(v)], axis=2), causal_own, config)
        attended = jnp.concatenate([attended_shared.reshape(N * S, d), attended_own.reshape(N * G * A, d)])
        x = x + attended @ layer["out"]
        x = x + _mlp(x, layer)
    x = _layer_norm(x, params["ln_f"])
    first = jnp.broadcast_to(x[:N * S].reshape(N, 1, S, d)[:, :, -1:], (N, G, 1, d))
    return jnp.concatenate([first, x[N * S:].reshape(N, G, A, d)], axis=2) @ params["head"]


def group_token_log_probs(params: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array) -> jax.Array:
    """:func:`~covpo.labs.transformer.model.token_log_probs` for ``answers [N, G, L]`` to ``prompts [N, L]`` (``[N, G, L]``).

    By :func:`~covpo.labs.transformer.model.group_answer_logits`, each prompt's prefix computed once.
    """
    log_probs = jax.nn.log_softmax(group_answer_logits(params, config, prompts, answers), axis=-1)
    return jnp.take_along_axis(log_probs, answers[..., None], axis=-1)[..., 0]


def prefix_tree_logits(params: Params, config: ModelConfig, prompts: jax.Array) -> list[jax.Array]:
    """Next-symbol logits after every possible answer prefix, for ``prompts [N, L]``: level ``t`` is ``[N, V**t, V]``.

    Level ``t`` (``t = 0..L-1``) lists the ``V**t`` prefixes ``y_1..y_t`` lexicographically. The
    causal forward pass of every answer is run once per node of the tree of prefixes instead of
    once per answer: the prompt's states ``[BOS, x, SEP]`` once, each prefix's last symbol once,
    attending to the prompt, to its own ancestors and to itself (``5 + 8 + 64`` rows per prompt for
    ``V = 8, L = 3``, against ``8**3`` sequences of 7 tokens). Equal to the full forward pass
    (:func:`~covpo.labs.transformer.model.answer_logits`) to rounding.
    """
    N, L, V, d = prompts.shape[0], config.length, config.n_symbols, config.d_model
    S = L + 2
    shared = jnp.concatenate([jnp.full((N, 1), config.bos, prompts.dtype), prompts,
                              jnp.full((N, 1), config.sep, prompts.dtype)], axis=1)
    sizes = [S] + [V ** t for t in range(1, L)]
    symbols = jnp.arange(V, dtype=prompts.dtype)
    rows = [params["embed"][shared] + params["position"][:S]]
    rows += [jnp.broadcast_to(params["embed"][jnp.tile(symbols, V ** (t - 1))] + params["position"][S + t - 1],
                              (N, V ** t, d)) for t in range(1, L)]
    x = jnp.concatenate(rows, axis=1).reshape(N * sum(sizes), d)
    bounds = np.cumsum([0] + sizes)
    causal_shared = jnp.tril(jnp.ones((S, S), dtype=bool))

    def levels(a):
        a = a.reshape(N, sum(sizes), *a.shape[1:])
        return [a[:, bounds[t]:bounds[t + 1]] for t in range(L)]

    def lineage(level_values, t):
        """For every node of level ``t``: the prompt's and its ancestors' (and its own) values, ``[N, V**t, S + t, ...]``."""
        parts = [jnp.broadcast_to(level_values[0][:, None], (N, V ** t, *level_values[0].shape[1:]))]
        for s in range(1, t + 1):
            ancestor = level_values[s][:, :, None]
            ancestor = jnp.broadcast_to(ancestor, (N, V ** s, V ** (t - s), *ancestor.shape[3:]))
            parts.append(ancestor.reshape(N, V ** t, 1, *ancestor.shape[3:]))
        return jnp.concatenate(parts, axis=2)

    for layer in params["layers"]:
        q, k, v = (levels(_split_heads(a, config))
                   for a in jnp.split(_layer_norm(x, layer["ln1"]) @ layer["qkv"], 3, axis=-1))
        attended = [_attend(q[0], k[0], v[0], causal_shared, config).reshape(N, S, d)]
        for t in range(1, L):
            visible = jnp.ones((1, S + t), dtype=bool)
            attended.append(_attend(q[t][:, :, None], lineage(k, t), lineage(v, t), visible, config)
                            .reshape(N, V ** t, d))
        x = x + jnp.concatenate(attended, axis=1).reshape(N * sum(sizes), d) @ layer["out"]
        x = x + _mlp(x, layer)
    logits = levels(_layer_norm(x, params["ln_f"]) @ params["head"])
    return [logits[0][:, -1:]] + logits[1:]


def all_answer_token_log_probs(params: Params, config: ModelConfig, prompts: jax.Array) -> jax.Array:
    """``log pi_theta(y_t | x, y_<t)`` for every token of every answer to each of ``prompts [P, L]`` (``[P, n_symbols ** L, L]``).

    Answers are listed lexicographically (:func:`~covpo.labs.transformer.task.answer_index`);
    one forward pass over the tree of prefixes (:func:`prefix_tree_logits`) gives them all.
    """
    P, L, V = prompts.shape[0], config.length, config.n_symbols
    positions = jnp.arange(V ** L)
    tokens = [jax.nn.log_softmax(level, axis=-1).reshape(P, -1)[:, positions // V ** (L - 1 - t)]
              for t, level in enumerate(prefix_tree_logits(params, config, prompts))]
    return jnp.stack(tokens, axis=-1)


def all_answer_log_probs(params: Params, config: ModelConfig, prompts: jax.Array) -> jax.Array:
    """Exact ``log pi_theta(y|x)`` of every one of the ``n_symbols ** L`` answers to each of ``prompts [P, L]`` (``[P, n_symbols ** L]``).

    The sum of :func:`all_answer_token_log_probs` over positions. This makes sequence-level
    quantities (the KL divergence between two policies, an expected reward, the mirror-descent
    target) exact sums over all answers.
    """
    return all_answer_token_log_probs(params, config, prompts).sum(-1)
