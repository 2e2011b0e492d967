"""The transformer laboratory of chapter 7: exact probabilities, gradients, pass@k, seeding, the cache."""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import covpo.labs.transformer as lab  # noqa: E402
from covpo.labs.transformer import (  # noqa: E402
    Cell,
    Method,
    ModelConfig,
    ReversalTask,
    TrainingSetup,
    answer_log_probs,
    decode_step,
    exact_pass_at_k,
    fastest_stable_rate,
    init_params,
    make_arm,
    pass_at_k,
    policy_loss,
    regularized_objective,
    regularized_target,
    reward,
    sample_answers,
    sequence_kl,
    sign_test_interval,
    train_runs,
)
import covpo.labs.transformer.training as training  # noqa: E402
from covpo.labs.transformer.analysis import Comparison, Side  # noqa: E402
from covpo.labs.transformer.literature import STUDIES  # noqa: E402
import covpo.labs.transformer.experiment as experiment  # noqa: E402
from covpo.labs.transformer.experiment import plan_study  # noqa: E402
from covpo.labs.transformer.model import (  # noqa: E402
    all_answer_log_probs,
    answer_logits,
    empty_cache,
    group_answer_logits,
    group_token_log_probs,
    teacher_forcing_inputs,
)
from covpo.labs.transformer.task import (  # noqa: E402
    all_prompts,
    answer_index,
    correct_answer,
    is_hard,
    mixture,
    mixture_weights,
    near_miss,
)
from covpo.labs.transformer.training import (  # noqa: E402
    RunInputs,
    group_advantages,
    held_out_log_probs,
    stack_constants,
    synced_reference,
)

TINY = ModelConfig(n_symbols=3, length=2, d_model=8, n_layers=1, n_heads=2)

# The tests check values, not speed, so their programs compile without LLVM's optimizations
# (XLA's own graph passes still run; the chapter runs the optimized programs): compiling, not
# running, is most of these tests' time. The model's functions, and the exact quantities and the
# reference sync that the training loop traces, are compiled whole here, where the package calls
# them inside its own compiled programs; run op by op, every primitive would compile on its own,
# once per shape. For the same reason the tests build their inputs and read the results with
# numpy (int32 and float32, the dtypes JAX would give them): indexing, stacking or reshaping a
# JAX array outside ``jit`` compiles a program of its own.
TEST_COMPILE = {"xla_backend_optimization_level": 0}


def compiled(function, **static):
    return jax.jit(function, compiler_options=TEST_COMPILE, **static)


answer_log_probs = compiled(answer_log_probs, static_argnums=1)
answer_logits = compiled(answer_logits, static_argnums=1)
group_answer_logits = compiled(group_answer_logits, static_argnums=1)
group_token_log_probs = compiled(group_token_log_probs, static_argnums=1)
all_answer_log_probs = compiled(all_answer_log_probs, static_argnums=1)
decode_step = compiled(decode_step, static_argnums=1)
held_out_log_probs = compiled(held_out_log_probs, static_argnums=(1, 2))
sample_answers = compiled(sample_answers, static_argnames=("config", "n"))
train_runs = compiled(train_runs, static_argnames=("setup",))
regularized_target = compiled(regularized_target)
regularized_objective = compiled(regularized_objective)
sequence_kl = compiled(sequence_kl)
synced_reference = compiled(synced_reference)
unoptimized_pretraining = compiled(training._pretrain.__wrapped__, static_argnames=("config", "n_steps", "batch"))


def all_answers(config: ModelConfig) -> np.ndarray:
    return np.array(list(itertools.product(range(config.n_symbols), repeat=config.length)), np.int32)


def test_sequence_probabilities_sum_to_one_over_all_answers():
    params = init_params(TINY, jax.random.PRNGKey(0))
    answers = all_answers(TINY)
    for prompt in all_prompts(ReversalTask(n_symbols=3, length=2)):
        prompts = np.repeat(prompt[None], len(answers), axis=0)
        total = np.exp(np.asarray(answer_log_probs(params, TINY, prompts, answers))).sum()
        assert abs(float(total) - 1.0) < 1e-5


def test_initial_weights_are_the_scaled_normal_draws_of_their_keys():
    config = ModelConfig(n_symbols=5, length=4, d_model=16, n_layers=2, n_heads=4)
    key = jax.random.PRNGKey(11)
    params = init_params(config, key)
    keys = np.asarray(jax.random.split(key, 3 + 4 * config.n_layers))
    first = params["layers"][0]
    # the draws are JAX's; the scaling is one float32 product, in numpy as init_params does it
    np.testing.assert_array_equal(first["qkv"], 16 ** -0.5 * np.asarray(jax.random.normal(keys[0], (16, 48))))
    np.testing.assert_array_equal(first["w2"], (4 * 64) ** -0.5 * np.asarray(jax.random.normal(keys[3], (64, 16))))
    np.testing.assert_array_equal(params["head"], 16 ** -0.5 * np.asarray(jax.random.normal(keys[-1], (16, 5))))


@pytest.mark.parametrize("length", [1, 3])
def test_grouped_forward_pass_equals_the_full_forward_pass(length):
    config = ModelConfig(n_symbols=5, length=length, d_model=16, n_layers=2, n_heads=4)
    params = init_params(config, jax.random.PRNGKey(12))
    draw = np.random.default_rng(13)
    prompts = draw.integers(0, 5, (3, length), dtype=np.int32)
    answers = draw.integers(0, 5, (3, 4, length), dtype=np.int32)
    flat = (np.repeat(prompts, 4, axis=0), answers.reshape(12, length))
    np.testing.assert_allclose(group_answer_logits(params, config, prompts, answers),
                               np.asarray(answer_logits(params, config, *flat)).reshape(3, 4, length, 5), atol=2e-5)
    np.testing.assert_allclose(np.asarray(group_token_log_probs(params, config, prompts, answers)).sum(-1),
                               np.asarray(answer_log_probs(params, config, *flat)).reshape(3, 4), atol=2e-5)


def test_held_out_log_probs_score_correct_answer_and_near_miss():
    task = ReversalTask(n_symbols=4, length=3)
    config = ModelConfig(n_symbols=4, length=3, d_model=16, n_layers=1, n_heads=2)
    params = init_params(config, jax.random.PRNGKey(15))
    prompts = all_prompts(task)[::5]
    coverage, near = held_out_log_probs(params, config, task, prompts)
    np.testing.assert_allclose(coverage, answer_log_probs(params, config, prompts, correct_answer(task, prompts)),
                               atol=2e-5)
    np.testing.assert_allclose(near, answer_log_probs(params, config, prompts, near_miss(task, prompts)), atol=2e-5)


def test_cache_sampler_logits_equal_the_full_forward_pass():
    config = ModelConfig(n_symbols=5, length=4, d_model=16, n_layers=2, n_heads=4)
    params = init_params(config, jax.random.PRNGKey(1))
    draw = np.random.default_rng(2)
    prompts = draw.integers(0, config.n_symbols, (6, config.length), dtype=np.int32)
    answers = draw.integers(0, config.n_symbols, (6, config.length), dtype=np.int32)
    tokens = np.asarray(teacher_forcing_inputs(config, prompts, answers))
    cache = empty_cache(config, 6)
    cached = []
    for position in range(tokens.shape[1]):
        logits, cache = decode_step(params, config, cache, tokens[:, position], position)
        cached.append(np.asarray(logits))
    cached = np.stack(cached, axis=1)[:, config.length + 1:]
    np.testing.assert_allclose(cached, answer_logits(params, config, prompts, answers), atol=2e-5)


def test_sampler_log_probs_match_teacher_forcing():
    config = ModelConfig(n_symbols=4, length=3, d_model=16, n_layers=1, n_heads=2)
    params = init_params(config, jax.random.PRNGKey(4))
    prompts = np.array([[0, 1, 2], [3, 3, 0]], np.int32)
    answers, log_probs = sample_answers(params, config, prompts, 5, jax.random.PRNGKey(5))
    exact = answer_log_probs(params, config, np.repeat(prompts, 5, axis=0), np.asarray(answers).reshape(10, 3))
    np.testing.assert_allclose(np.asarray(log_probs).sum(-1).reshape(10), exact, atol=2e-5)


def test_policy_gradient_estimate_matches_exact_gradient_of_expected_reward():
    """REINFORCE-LOO's loss at theta = theta_old: its gradient estimates -grad E r, within sampling error."""
    task = ReversalTask(n_symbols=3, length=2)
    params = init_params(TINY, jax.random.PRNGKey(6))
    prompt = np.array([[1, 2]], np.int32)
    answers = all_answers(TINY)
    rewards = reward(task, prompt, answers, "partial").astype(np.float32)  # numpy's is float64, JAX's float32

    def expected_reward(p):
        return (jnp.exp(lab.answer_log_probs(p, TINY, jnp.repeat(prompt, len(answers), 0), answers)) * rewards).sum()

    direction = compiled(lambda p: jax.tree_util.tree_map(
        lambda leaf: jax.random.normal(jax.random.PRNGKey(7), leaf.shape), p))(params)

    def project(tree):
        return sum((a * b).sum() for a, b in zip(jax.tree_util.tree_leaves(tree), jax.tree_util.tree_leaves(direction)))

    constants = Method("loo", 1e-3, advantage="loo").constants()
    group, chunks = 8, 40
    prompts = np.repeat(prompt, 64, 0)

    # one compiled program: the package's functions inside it, not this file's compiled ones;
    # the chunks' keys are made inside it too
    @compiled
    def estimates(seeds):
        def one(key):
            drawn, old = lab.sample_answers(params, TINY, prompts, group, key)
            r = reward(task, prompts[:, None, :], drawn, "partial")
            # the loss averages over tokens; the sequence-level estimate is L times its negative gradient
            advantages = group_advantages(r, jnp.arange(64), constants["loo"])
            return -TINY.length * project(jax.grad(policy_loss)(params, TINY, prompts, drawn, old, old, r, advantages,
                                                                constants))
        return jax.lax.map(one, jax.vmap(jax.random.PRNGKey)(seeds))

    exact = float(compiled(lambda p: project(jax.grad(expected_reward)(p)))(params))
    estimated = np.asarray(estimates(100 + np.arange(chunks, dtype=np.int32)), float)
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
    decoupled = ReversalTask(n_symbols=4, length=3, decoupled=True)
    assert correct_answer(decoupled, easy).tolist() == [[3, 2, 1]]
    assert correct_answer(decoupled, hard).tolist() == [[1, 0, 0]]
    assert near_miss(decoupled, hard).tolist() == [[1, 0, 1]]


def test_the_shared_mixture_gives_both_tasks_the_same_coverage_of_their_own_answers():
    shared = ReversalTask(n_symbols=4, length=3, shared_mixture=True)
    prompts = all_prompts(shared)
    answers, weights = mixture(shared, prompts)
    assert answers.shape == (len(prompts), 4, 3) and weights.shape == (len(prompts), 4)
    hard = np.asarray(is_hard(shared, prompts))
    for task in (shared, replace(shared, decoupled=True)):
        p_correct, p_near = mixture_weights(task, prompts)
        for answer, weight in ((correct_answer(task, prompts), p_correct), (near_miss(task, prompts), p_near)):
            # each task's own correct answer and near miss carry the weights the task states
            carried = ((answers == np.asarray(answer)[:, None, :]).all(-1) * weights).sum(-1)
            np.testing.assert_allclose(carried, weight)
        np.testing.assert_allclose(p_correct[hard], shared.hard_correct)
        np.testing.assert_allclose(p_near[hard], shared.hard_near / 2)
    # every answer of the mixture shares the others' first L - 1 symbols (one teacher-forced pass scores all)
    assert (answers[..., :-1] == answers[:, :1, :-1]).all()
    np.testing.assert_allclose(weights[~hard].sum(-1), shared.easy_correct + shared.easy_near)
    np.testing.assert_allclose(weights[hard].sum(-1), 2 * shared.hard_correct + shared.hard_near)
    unshared_answers, unshared_weights = mixture(ReversalTask(n_symbols=4, length=3), prompts)
    assert unshared_answers.shape == (len(prompts), 2, 3)
    with pytest.raises(ValueError, match="hard_correct"):
        ReversalTask(shared_mixture=True, hard_correct=0.2, hard_near=0.7)
    with pytest.raises(ValueError, match="n_symbols"):
        ReversalTask(n_symbols=3, shared_mixture=True)


@pytest.mark.parametrize("shared", [False, True])
def test_the_decoupled_task_has_base_models_of_its_own_unless_the_mixture_is_shared(shared):
    task = ReversalTask(shared_mixture=shared)
    families = {"mixed": task, "hard-only": task, "decoupled": replace(task, decoupled=True)}
    plan = experiment.StudyPlan({"base_models": 3, "seeds_per_base": 2}, None, (), {}, families, None, [], [], [],
                                None)
    for seed in range(6):
        assert plan.base_index(seed, "mixed") == plan.base_index(seed, "hard-only") == seed // 2
        assert plan.base_index(seed, "decoupled") == seed // 2 + (0 if shared else 3)


@pytest.mark.parametrize("answers", [[[9, 0, 0]], [[-1, 0, 0]], [[0.5, 0, 0]], None, 0.5],
                         ids=["out-of-range", "negative", "fractional", "none", "scalar"])
def test_answer_index_refuses_what_is_no_answer(answers):
    """Issue 53: a symbol outside ``[0, n_symbols)`` or a fraction used to land on another answer's position."""
    with pytest.raises(ValueError, match="answers"):
        answer_index(answers, 8)


def test_answer_index_checks_host_arrays_and_leaves_traced_ones_to_the_compiled_loop():
    answers = np.array([[1, 2, 3], [7, 7, 7]])
    assert answer_index(answers, 8).tolist() == [83, 511]
    assert np.asarray(answer_index(jnp.asarray(answers), 8)).tolist() == [83, 511]
    assert np.asarray(jax.jit(partial(answer_index, n_symbols=8))(answers)).tolist() == [83, 511]
    with pytest.raises(ValueError, match="answers"):
        answer_index(jnp.asarray([[8, 0, 0]]), 8)


@pytest.mark.parametrize("answers", [[[4, 0, 1]], [[1, 0, -1]], [[1, 0]]], ids=["out-of-range", "negative", "short"])
def test_reward_refuses_answers_outside_the_task(answers):
    """Issue 53: an answer outside the alphabet is no string of the task; it used to score 0."""
    task = ReversalTask(n_symbols=4, length=3)
    with pytest.raises(ValueError, match="answers"):
        reward(task, np.array([[2, 0, 1]]), np.array(answers), "partial")
    with pytest.raises(ValueError, match="prompts"):
        reward(task, np.array([[2, 0, 4]]), np.array([[1, 0, 3]]), "binary")


def test_comparison_refuses_an_empty_label():
    with pytest.raises(ValueError, match="label"):
        Comparison("", Side("APMD"), Side("fixed, weak β"))


def test_every_literature_row_cites_a_bibliography_entry_with_its_arxiv_link():
    """Issue 53: each study of chapter 7's literature table names a ``references.bib`` key that has a url."""
    bibliography = (Path(__file__).resolve().parent.parent / "references.bib").read_text()
    keys = [re.search(r"\((\w+)\)$", study).group(1) for study, *_ in STUDIES]
    assert "wu2025invisible" in keys and len(set(keys)) == len(STUDIES)
    for key in keys:
        entry = re.search(r"@\w+\{" + key + r",(.*?)\n\}", bibliography, re.S)
        assert entry is not None, key
        assert re.search(r"url\s*=\s*\{https://arxiv\.org/abs/\d{4}\.\d{5}\}", entry.group(1)), key


def test_prefix_tree_log_probs_equal_teacher_forcing_of_every_answer():
    config = ModelConfig(n_symbols=4, length=3, d_model=16, n_layers=2, n_heads=4)
    params = init_params(config, jax.random.PRNGKey(16))
    prompts = np.array([[0, 1, 2], [3, 3, 0]], np.int32)
    answers = all_answers(config)
    exact = np.asarray(all_answer_log_probs(params, config, prompts))
    for row, prompt in enumerate(prompts):
        flat = answer_log_probs(params, config, np.repeat(prompt[None], len(answers), 0), answers)
        np.testing.assert_allclose(exact[row], flat, atol=2e-5)
    np.testing.assert_allclose(exact[:, answer_index(answers[5:6], 4)[0]], exact[:, 5])


def test_regularized_target_sums_to_one_and_maximizes_the_regularized_objective():
    rng = np.random.default_rng(17)
    log_reference = np.log(rng.dirichlet(np.ones(9), size=3))
    rewards = rng.uniform(0, 1, (3, 9))
    beta = 0.3
    as_float32 = partial(np.asarray, dtype=np.float32)  # what jnp.asarray makes of float64 arrays
    target = np.asarray(regularized_target(as_float32(log_reference), as_float32(rewards), beta))
    np.testing.assert_allclose(np.exp(target).sum(-1), 1.0, atol=1e-6)
    best = np.asarray(regularized_objective(target, as_float32(log_reference), as_float32(rewards), beta))
    # the maximum is beta log E_ref exp(r / beta), attained at the target
    np.testing.assert_allclose(best, beta * np.log((np.exp(log_reference) * np.exp(rewards / beta)).sum(-1)),
                               rtol=1e-5)
    others = np.log(rng.dirichlet(np.ones(9), size=(200, 3)))
    values = np.asarray(regularized_objective(as_float32(others), as_float32(log_reference), as_float32(rewards),
                                              beta))
    assert (values < best).all()
    nearby = target + 1e-2 * rng.normal(size=target.shape)
    nearby -= np.log(np.exp(nearby).sum(-1, keepdims=True))
    assert (np.asarray(regularized_objective(as_float32(nearby), as_float32(log_reference), as_float32(rewards),
                                             beta)) < best).all()
    np.testing.assert_allclose(sequence_kl(target, target), 0.0, atol=1e-7)


TINY_TASK = ReversalTask(n_symbols=3, length=2)
# The tests that train use four symbols, the fewest the decoupled task of a study's plan allows.
TRAIN_CONFIG = ModelConfig(n_symbols=4, length=2, d_model=8, n_layers=1, n_heads=2)
TRAIN_TASK = ReversalTask(n_symbols=4, length=2)
# One setup, two arms and one shape of inputs for every test that trains: ``train_runs`` then
# compiles once for all of them (the inner-loop choice ``exact`` is traced, not static).
TINY_SIZES = {"base_models": 2, "seeds_per_base": 1, "n_steps": 3, "n_prompts": 3, "slot_size": 2, "inner_steps": 30,
              "held_out": 2, "pretrain_steps": 2, "pretrain_batch": 4}
TINY_SETUP = TrainingSetup(TRAIN_CONFIG, n_steps=TINY_SIZES["n_steps"], n_slots=TINY_SIZES["n_prompts"],
                           slot_size=TINY_SIZES["slot_size"], inner_steps=TINY_SIZES["inner_steps"])


def tiny_run(key: int = 9, near_reward: float = 0.9) -> RunInputs:
    """One run's inputs on the 16 prompts of the four-symbol task: 3 training prompts (one easy), 2 held out."""
    prompts = all_prompts(TRAIN_TASK)
    train, held = prompts[[1, 5, 7]], prompts[[2, 6]]
    return RunInputs(init_params(TRAIN_CONFIG, jax.random.PRNGKey(8)), train, correct_answer(TRAIN_TASK, train),
                     near_miss(TRAIN_TASK, train), held, correct_answer(TRAIN_TASK, held),
                     near_miss(TRAIN_TASK, held), np.float32(near_reward), np.arange(3, dtype=np.int32),
                     jax.random.PRNGKey(key))


def run_arms(methods: list[Method], run: RunInputs):
    """Train the two ``methods`` on ``run`` with :data:`TINY_SETUP`."""
    assert len(methods) == 2, "every training test runs two arms, so that one program serves them all"
    stacked = jax.tree_util.tree_map(lambda leaf: np.stack([leaf] * len(methods)), run)
    return train_runs(TINY_SETUP, methods[0].exact, stack_constants(methods), stacked)


def step_distance(log_coverage: np.ndarray, log_near: np.ndarray, near_reward: float, beta: float) -> np.ndarray:
    """``KL(pi_t || pi_t exp(r / beta) / Z)`` per prompt, from the probabilities of the two rewarded answers."""
    p, q = np.exp(log_coverage), np.exp(log_near)
    z = 1 + p * np.expm1(1 / beta) + q * np.expm1(near_reward / beta)
    return np.log(z) - (p + near_reward * q) / beta


def test_exact_target_apmd_fits_each_steps_target_from_the_policy_that_it_resets_to():
    """Every outer step's K steps close most of the distance from pi_t to pi_t exp(r / beta) / Z, at two learning rates.

    A reset that does nothing (the base model kept as the reference) or a penalty of the wrong
    sign fails this test: the iterate then fits another target, or none.
    """
    beta = 0.5
    arms = [Method(f"apmd {rate}", rate, family="apmd", beta=beta, exact_reward=True) for rate in (3e-2, 2e-2)]
    _, record = jax.tree_util.tree_map(np.asarray, run_arms(arms, tiny_run()))
    for i in range(len(arms)):
        before = step_distance(record.log_coverage[i, :-1], record.log_near[i, :-1], 0.9, beta)
        after = record.accuracy[i]
        assert (before.mean(-1) > 1e-2).all()
        assert (after < 0.2 * before.mean(-1)).all()


def test_the_k3_penalty_pulls_the_policy_toward_its_reference():
    """With zero advantages a step on the GRPO loss lowers KL(pi_ref || pi): the penalty has the right sign."""
    base, prompts = init_params(TINY, jax.random.PRNGKey(8)), all_prompts(TINY_TASK)[[1, 5, 7]]
    reference = init_params(TINY, jax.random.PRNGKey(18))
    answers = np.tile(all_answers(TINY)[None, :8], (3, 1, 1))
    old = group_token_log_probs(base, TINY, prompts, answers)
    ref = group_token_log_probs(reference, TINY, prompts, answers)
    zeros = np.zeros(answers.shape[:2], np.float32)
    constants = Method("fixed", 1e-3, beta=1.0).constants()
    gradient = compiled(jax.grad(policy_loss), static_argnums=1)(base, TINY, prompts, answers, old, ref,
                                                                zeros, zeros, constants)
    stepped = jax.tree_util.tree_map(lambda p, g: np.asarray(p) - 1e-2 * np.asarray(g), base, gradient)

    def distance(params):
        return float(np.asarray(sequence_kl(all_answer_log_probs(reference, TINY, prompts),
                                            all_answer_log_probs(params, TINY, prompts))).mean())

    assert distance(stepped) < distance(base)


def test_trl_sync_mixes_the_policy_into_the_reference_every_period_only():
    params, reference = {"w": np.full(2, 1.0, np.float32)}, {"w": np.zeros(2, np.float32)}
    constants = Method("sync", 1e-3, beta=0.04, sync_every=3, sync_alpha=0.6).constants()
    for step in range(1, 7):
        synced = synced_reference(params, reference, np.int32(step), constants)
        np.testing.assert_allclose(synced["w"], 0.6 if step % 3 == 0 else 0.0, atol=1e-7)
    fixed = Method("fixed", 1e-3, beta=0.04).constants()
    np.testing.assert_array_equal(synced_reference(params, reference, np.int32(3), fixed)["w"], 0.0)


@pytest.mark.same_on_every_cpu
def test_arms_of_a_seed_share_base_model_prompts_and_random_stream(monkeypatch):
    # the base models are pre-trained by the test's unoptimized compilation: the values, not the speed, are checked
    monkeypatch.setattr(training, "_pretrain", unoptimized_pretraining)
    arms = ("fixed, weak β", "REINFORCE, leave-one-out")
    plan = plan_study("book", cells=tuple(Cell("hard-only", arm, group_size=2) for arm in arms), config=TRAIN_CONFIG,
                      task=TRAIN_TASK, sizes=TINY_SIZES)
    assert plan.setup == TINY_SETUP
    for seed in range(2):
        runs = [plan.inputs(c, seed) for c in range(len(arms))]
        for run, _ in runs[1:]:
            for a, b in zip(jax.tree_util.tree_leaves(run), jax.tree_util.tree_leaves(runs[0][0])):
                np.testing.assert_array_equal(a, b)
    assert not np.array_equal(plan.inputs(0, 0)[0].key, plan.inputs(0, 1)[0].key)
    # the first batch is drawn from the shared base model with the shared key: equal in every arm
    runs = [plan.inputs(c, 0) for c in range(len(arms))]
    stacked = jax.tree_util.tree_map(lambda *leaves: np.stack(leaves), *[run for run, _ in runs])
    _, record = train_runs(plan.setup, False, stack_constants([m for _, m in runs]), stacked)
    assert np.unique(np.asarray(record.reward)[:, 0]).size == 1
    assert np.unique(np.asarray(record.kl)[:, -1]).size == len(arms)


def test_coverage_and_kl_are_logged_for_the_model_the_run_returns():
    setup = TINY_SETUP
    arms = [make_arm("fixed, weak β", 1e-2, setup.gradient_steps), make_arm("Rebel", 1e-2, setup.gradient_steps)]
    run = tiny_run()
    final, record = jax.tree_util.tree_map(np.asarray, run_arms(arms, run))
    assert record.log_coverage.shape[1] == setup.n_steps + 1
    for i in range(len(arms)):
        params = jax.tree_util.tree_map(lambda leaf: leaf[i], final)
        table = all_answer_log_probs(params, TRAIN_CONFIG, run.prompts)
        correct = answer_index(run.correct, TRAIN_CONFIG.n_symbols)
        np.testing.assert_allclose(record.log_coverage[i, -1], np.asarray(table)[np.arange(3), correct],
                                   atol=2e-5)
        held, _ = held_out_log_probs(params, TRAIN_CONFIG, TRAIN_TASK, run.held_out)
        np.testing.assert_allclose(record.held_log_coverage[i, -1], held, atol=2e-5)
        base = all_answer_log_probs(run.base, TRAIN_CONFIG, run.prompts)
        np.testing.assert_allclose(record.kl[i, -1], np.asarray(sequence_kl(table, base)).mean(), atol=2e-5)
    again = run_arms(arms, run)
    for a, b in zip(jax.tree_util.tree_leaves((final, record)), jax.tree_util.tree_leaves(again)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert setup.responses == 3 * 3 * 2 and setup.gradient_steps == 3 * 30


def test_sign_test_interval_brackets_the_median_at_its_level():
    interval = sign_test_interval([0.3, -0.1, 0.2, 0.5, 0.4, 0.1])
    assert (interval.low, interval.high) == (-0.1, 0.5) and interval.verdict == 0
    assert interval.level == pytest.approx(1 - 2 / 64)
    assert sign_test_interval(np.arange(1, 7) / 10).verdict == 1
    assert sign_test_interval(-np.arange(1, 7) / 10).verdict == -1
    assert sign_test_interval([-0.004, -0.003, 0.1, 0.2, 0.3, 0.4]).summary == "+0.15 [-0.00, +0.40]"
    wide = sign_test_interval(np.arange(16.0))
    assert (wide.low, wide.high) == (3.0, 12.0) and wide.level >= 0.95
    # the level is the sign test's: one minus both binomial tails beyond the order statistics kept
    # (scipy.stats, about 1.5 s to import, is imported by this test only, not by every process that collects it)
    from scipy.stats import binom
    assert wide.level == pytest.approx(1 - 2 * binom.cdf(3, 16, 0.5), rel=1e-14)
    assert interval.level == pytest.approx(1 - 2 * binom.cdf(0, 6, 0.5), rel=1e-14)
    with pytest.raises(ValueError, match="differences"):
        sign_test_interval([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="level"):
        sign_test_interval(np.arange(6.0), level=1.5)


def test_fastest_stable_rate_skips_rates_whose_reward_falls_back():
    steps = np.linspace(0, 1, 8)
    rewards = np.stack([np.tile(curve, (3, 1)) for curve in (0.2 * steps, 0.5 * steps, 1 - steps)])
    rate, speed, stable = fastest_stable_rate([1e-3, 3e-3, 1e-2], rewards)
    assert rate == 3e-3 and stable.tolist() == [True, True, False] and speed[2] > speed[1]
    with pytest.raises(ValueError, match="rewards"):
        fastest_stable_rate([1e-3], rewards)


@pytest.mark.parametrize("bad", [
    lambda: Method("m", 1e-3, family="ppo"), lambda: Method("m", 1e-3, sync_alpha=1.5),
    lambda: Method("m", 1e-3, exact_reward=True), lambda: Method("m", 1e-3, family="apmd", beta=0.0),
    lambda: make_arm("GRPO", 1e-3, 10), lambda: Cell("mixed", "APMD", reward="graded"),
    lambda: Cell("easy-only", "APMD"), lambda: TrainingSetup(TINY, slot_size=3),
    lambda: ReversalTask(n_symbols=3, decoupled=True),
])
def test_the_study_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        bad()
