"""How the cost of training and sampling grows with model width and sequence length.

:func:`measure_cost` times one gradient step of teacher-forced log-likelihood (what every
post-training inner step computes) and, optionally, the key-value-cache sampler, for one model
shape; :func:`cost_table` does so over a grid of widths and lengths. Wall-clock times depend on the
machine and its load; the chapter reports what it measures, never a fixed number.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from covpo.table import Table
from covpo.validation import check_count, check_flag, check_instance, check_positive_grid, check_seed

from .model import ModelConfig, answer_log_probs, init_params, parameter_count
from .sampling import sample_answers


def _best_time(function, repeats: int) -> float:
    """The shortest of ``repeats`` wall-clock times of ``function()`` (after one warm-up call)."""
    jax.block_until_ready(function())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(function())
        times.append(time.perf_counter() - start)
    return min(times)


def measure_cost(config: ModelConfig, *, batch: int = 256, repeats: int = 3, sampler: bool = True,
                 seed: int = 0) -> dict[str, float]:
    """Parameters, gradient steps per second, tokens per second (training and sampling) for one shape.

    ``batch`` sequences per gradient step; the sampler draws ``batch`` answers (16 prompts,
    ``batch // 16`` answers each). Times are the best of ``repeats`` after a warm-up call.
    """
    check_instance("config", config, ModelConfig)
    check_count("batch", batch, 16)
    check_count("repeats", repeats)
    sampler = check_flag("sampler", sampler)
    seed = check_seed("seed", seed)
    key = jax.random.PRNGKey(seed)
    params = init_params(config, key)
    # drawn on the host: a JAX draw would compile one more program per shape, for timing data only
    prompts = jnp.asarray(np.random.default_rng(seed).integers(0, config.n_symbols, (batch, config.length)), jnp.int32)
    step = jax.jit(jax.grad(lambda p: -answer_log_probs(p, config, prompts, prompts).mean()))
    seconds = _best_time(lambda: step(params), repeats)
    result = {"d_model": config.d_model, "length": config.length, "parameters": parameter_count(params),
              "steps_per_s": 1.0 / seconds, "train_tokens_per_s": batch * config.length / seconds}
    if sampler:
        n = batch // 16
        seconds = _best_time(lambda: sample_answers(params, config, prompts[:16], n, key), repeats)
        result["sample_tokens_per_s"] = 16 * n * config.length / seconds
    return result


def cost_table(widths=(32, 64), lengths=(3, 6), *, batch: int = 256, repeats: int = 3,
               sampler: bool = False) -> Table:
    """:func:`measure_cost` over every (width, length), as a table (measured on this machine, now)."""
    widths = check_positive_grid("widths", widths, integers=True).tolist()
    lengths = check_positive_grid("lengths", lengths, integers=True).tolist()
    check_count("batch", batch, 16)
    check_count("repeats", repeats)
    sampler = check_flag("sampler", sampler)
    rows = []
    for width in widths:
        for length in lengths:
            cost = measure_cost(ModelConfig(length=length, d_model=width), batch=batch, repeats=repeats,
                                sampler=sampler)
            row = (width, length, cost["parameters"], round(cost["steps_per_s"], 1), int(cost["train_tokens_per_s"]))
            rows.append(row + ((int(cost["sample_tokens_per_s"]),) if sampler else ()))
    columns = ("width d", "length L", "parameters", "gradient steps / s", "answer tokens / s (training)")
    return Table(columns + (("answer tokens / s (sampling)",) if sampler else ()), tuple(rows),
                 caption=f"Cost of a gradient step on {batch} sequences, by width and length (this machine, this run)")
