"""The transformer laboratory of chapter 7: exact probabilities, gradients, pass@k, seeding, the cache."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import covpo.labs.transformer as lab  # noqa: E402
from covpo.labs.transformer import (  # noqa: E402
    Method,
    ModelConfig,
    ReversalTask,
    TrainingSetup,
    answer_log_probs,
    decode_step,
    default_methods,
    exact_pass_at_k,
    init_params,
    pass_at_k,
    policy_loss,
    reward,
    sample_answers,
    train_runs,
)
from covpo.labs.transformer.model import (  # noqa: E402
    answer_logits,
    empty_cache,
    group_answer_logits,
    group_token_log_probs,
    teacher_forcing_inputs,
)
from covpo.labs.transformer.task import all_prompts, correct_answer, near_miss  # noqa: E402
from covpo.labs.transformer.training import held_out_log_probs, stack_constants  # noqa: E402

TINY = ModelConfig(n_symbols=3, length=2, d_model=8, n_layers=1, n_heads=2)

# The tests check values, not speed, so their programs compile without LLVM's optimizations
# (XLA's own graph passes still run; the chapter runs the optimized programs): compiling, not
# running, is most of these tests' time. The model's functions are compiled whole here, where the
# package calls them inside its own compiled programs; run op by op, every primitive would
# compile on its own.
TEST_COMPILE = {"xla_backend_optimization_level": 0}


def compiled(function, **static):
    return jax.jit(function, compiler_options=TEST_COMPILE, **static)


answer_log_probs = compiled(answer_log_probs, static_argnums=1)
answer_logits = compiled(answer_logits, static_argnums=1)
group_answer_logits = compiled(group_answer_logits, static_argnums=1)
group_token_log_probs = compiled(group_token_log_probs, static_argnums=1)
decode_step = compiled(decode_step, static_argnums=1)
held_out_log_probs = compiled(held_out_log_probs, static_argnums=(1, 2))
sample_answers = compiled(sample_answers, static_argnames=("config", "n"))
train_runs = compiled(train_runs, static_argnames=("setup",))


def all_answers(config: ModelConfig) -> jnp.ndarray:
    return jnp.array(list(itertools.product(range(config.n_symbols), repeat=config.length)), jnp.int32)


def test_sequence_probabilities_sum_to_one_over_all_answers():
    params = init_params(TINY, jax.random.PRNGKey(0))
    answers = all_answers(TINY)
    for prompt in all_prompts(ReversalTask(n_symbols=3, length=2)):
        prompts = jnp.repeat(jnp.asarray(prompt)[None], len(answers), axis=0)
        total = jnp.exp(answer_log_probs(params, TINY, prompts, answers)).sum()
        assert abs(float(total) - 1.0) < 1e-5


def test_initial_weights_are_the_scaled_normal_draws_of_their_keys():
    config = ModelConfig(n_symbols=5, length=4, d_model=16, n_layers=2, n_heads=4)
    key = jax.random.PRNGKey(11)
    params = init_params(config, key)
    keys = jax.random.split(key, 3 + 4 * config.n_layers)
    first = params["layers"][0]
    np.testing.assert_array_equal(first["qkv"], 16 ** -0.5 * jax.random.normal(keys[0], (16, 48)))
    np.testing.assert_array_equal(first["w2"], (4 * 64) ** -0.5 * jax.random.normal(keys[3], (64, 16)))
    np.testing.assert_array_equal(params["head"], 16 ** -0.5 * jax.random.normal(keys[-1], (16, 5)))


@pytest.mark.parametrize("length", [1, 3])
def test_grouped_forward_pass_equals_the_full_forward_pass(length):
    config = ModelConfig(n_symbols=5, length=length, d_model=16, n_layers=2, n_heads=4)
    params = init_params(config, jax.random.PRNGKey(12))
    prompts = jax.random.randint(jax.random.PRNGKey(13), (3, length), 0, 5, dtype=jnp.int32)
    answers = jax.random.randint(jax.random.PRNGKey(14), (3, 4, length), 0, 5, dtype=jnp.int32)
    flat = (jnp.repeat(prompts, 4, axis=0), answers.reshape(12, length))
    np.testing.assert_allclose(group_answer_logits(params, config, prompts, answers),
                               answer_logits(params, config, *flat).reshape(3, 4, length, 5), atol=2e-5)
    np.testing.assert_allclose(group_token_log_probs(params, config, prompts, answers).sum(-1),
                               answer_log_probs(params, config, *flat).reshape(3, 4), atol=2e-5)


def test_held_out_log_probs_score_correct_answer_and_near_miss():
    task = ReversalTask(n_symbols=4, length=3)
    config = ModelConfig(n_symbols=4, length=3, d_model=16, n_layers=1, n_heads=2)
    params = init_params(config, jax.random.PRNGKey(15))
    prompts = jnp.asarray(all_prompts(task)[::5])
    coverage, near = held_out_log_probs(params, config, task, prompts)
    np.testing.assert_allclose(coverage, answer_log_probs(params, config, prompts, correct_answer(task, prompts)),
                               atol=2e-5)
    np.testing.assert_allclose(near, answer_log_probs(params, config, prompts, near_miss(task, prompts)), atol=2e-5)


def test_cache_sampler_logits_equal_the_full_forward_pass():
    config = ModelConfig(n_symbols=5, length=4, d_model=16, n_layers=2, n_heads=4)
    params = init_params(config, jax.random.PRNGKey(1))
    key = jax.random.PRNGKey(2)
    prompts = jax.random.randint(key, (6, config.length), 0, config.n_symbols, dtype=jnp.int32)
    answers = jax.random.randint(jax.random.PRNGKey(3), (6, config.length), 0, config.n_symbols, dtype=jnp.int32)
    tokens = teacher_forcing_inputs(config, prompts, answers)
    cache = empty_cache(config, 6)
    cached = []
    for position in range(tokens.shape[1]):
        logits, cache = decode_step(params, config, cache, tokens[:, position], position)
        cached.append(logits)
    cached = jnp.stack(cached, axis=1)[:, config.length + 1:]
    np.testing.assert_allclose(cached, answer_logits(params, config, prompts, answers), atol=2e-5)


def test_sampler_log_probs_match_teacher_forcing():
    config = ModelConfig(n_symbols=4, length=3, d_model=16, n_layers=1, n_heads=2)
    params = init_params(config, jax.random.PRNGKey(4))
    prompts = jnp.array([[0, 1, 2], [3, 3, 0]], jnp.int32)
    answers, log_probs = sample_answers(params, config, prompts, 5, jax.random.PRNGKey(5))
    exact = answer_log_probs(params, config, jnp.repeat(prompts, 5, axis=0), answers.reshape(10, 3))
    np.testing.assert_allclose(log_probs.sum(-1).reshape(10), exact, atol=2e-5)


def test_policy_gradient_estimate_matches_exact_gradient_of_expected_reward():
    """REINFORCE-LOO's loss at theta = theta_old: its gradient estimates -grad E r, within sampling error."""
    task = ReversalTask(n_symbols=3, length=2)
    params = init_params(TINY, jax.random.PRNGKey(6))
    prompt = jnp.array([[1, 2]], jnp.int32)
    answers = all_answers(TINY)
    rewards = reward(task, prompt, answers, "partial")

    def expected_reward(p):
        return (jnp.exp(lab.answer_log_probs(p, TINY, jnp.repeat(prompt, len(answers), 0), answers)) * rewards).sum()

    direction = compiled(lambda p: jax.tree_util.tree_map(
        lambda leaf: jax.random.normal(jax.random.PRNGKey(7), leaf.shape), p))(params)

    def project(tree):
        return sum((a * b).sum() for a, b in zip(jax.tree_util.tree_leaves(tree), jax.tree_util.tree_leaves(direction)))

    constants = Method("loo", 1e-3, advantage="loo").constants()
    group, chunks = 8, 40
    prompts = jnp.repeat(prompt, 64, 0)

    # one compiled program: the package's functions inside it, not this file's compiled ones
    @compiled
    def estimates(keys):
        def one(key):
            drawn, old = lab.sample_answers(params, TINY, prompts, group, key)
            r = reward(task, prompts[:, None, :], drawn, "partial")
            # the loss averages over tokens; the sequence-level estimate is L times its negative gradient
            return -TINY.length * project(jax.grad(policy_loss)(params, TINY, prompts, drawn, old, old, r, constants))
        return jax.lax.map(one, keys)

    exact = float(compiled(lambda p: project(jax.grad(expected_reward)(p)))(params))
    estimated = np.asarray(estimates(jax.vmap(jax.random.PRNGKey)(100 + jnp.arange(chunks))), float)
    error = estimated.std(ddof=1) / np.sqrt(chunks)
    assert abs(estimated.mean() - exact) < 4 * error + 1e-6


def test_pass_at_k_estimator_is_unbiased_against_enumeration():
    n, p = 12, 0.17
    counts = np.arange(n + 1)
    weights = np.array([math.comb(n, c) * p ** c * (1 - p) ** (n - c) for c in counts])
    ks = np.arange(1, n + 1)
    expected = (weights[:, None] * pass_at_k(n, counts, ks)).sum(0)
    np.testing.assert_allclose(expected, 1 - (1 - p) ** ks, atol=1e-12)
    np.testing.assert_allclose(exact_pass_at_k(np.log([p]), ks)[0], 1 - (1 - p) ** ks, rtol=1e-12)


@pytest.mark.parametrize("bad", [{"n": 0, "correct": [0], "ks": [1]}, {"n": 4, "correct": [5], "ks": [1]},
                                 {"n": 4, "correct": [1], "ks": [5]}])
def test_pass_at_k_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        pass_at_k(bad["n"], np.asarray(bad["correct"]), np.asarray(bad["ks"]))


def test_task_rewards_and_conventions():
    task = ReversalTask(n_symbols=4, length=3)
    easy, hard = np.array([[1, 2, 3]]), np.array([[2, 0, 1]])
    assert correct_answer(task, easy).tolist() == [[3, 2, 1]]
    assert near_miss(task, easy).tolist() == [[3, 2, 2]]
    assert correct_answer(task, hard).tolist() == [[1, 0, 3]]
    assert near_miss(task, hard).tolist() == [[1, 0, 2]]
    answers = np.array([[1, 0, 3], [1, 0, 2], [0, 0, 0]])
    np.testing.assert_allclose(reward(task, hard, answers, "partial"), [1.0, 0.9, 0.0])
    np.testing.assert_allclose(reward(task, hard, answers, "binary"), [1.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        reward(task, hard, answers, "graded")
    with pytest.raises(ValueError):
        ReversalTask(easy_correct=0.6, easy_near=0.6)
    with pytest.raises(ValueError):
        ModelConfig(d_model=10, n_heads=4)
    with pytest.raises(ValueError):
        Method("bad", 1e-3, advantage="median")


def test_seeded_runs_reproduce_and_budgets_are_equal():
    task = ReversalTask(n_symbols=3, length=2)
    config = ModelConfig(n_symbols=3, length=2, d_model=8, n_layers=1, n_heads=2)
    base = init_params(config, jax.random.PRNGKey(8))
    prompts = jnp.asarray(all_prompts(task))
    setup = TrainingSetup(config, task, n_steps=3, n_prompts=2, group_size=4, max_inner_steps=2)
    methods = default_methods(inner_steps=2)
    arguments = (base, prompts[:6], prompts[6:], stack_constants(list(methods)),
                 jnp.zeros(len(methods), jnp.int32), jnp.stack([jax.random.PRNGKey(9)] * len(methods)))
    first = train_runs(setup, *arguments)
    second = train_runs(setup, *arguments)
    for a, b in zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(second)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert setup.responses == 3 * 2 * 4
    assert np.isfinite(np.asarray(first[1].log_coverage)).all()
