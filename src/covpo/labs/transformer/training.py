"""Supervised pre-training of the base model, and every post-training method, in one jitted loop.

Pre-training (:func:`pretrain`, :func:`pretrain_models`) fits the mixture of
:mod:`covpo.labs.transformer.task` by maximum likelihood. Post-training is one outer loop for
every method: each outer step ``t`` draws the step's prompts, samples answers to them from the
current policy ``pi_t`` (``n_slots`` groups of ``slot_size`` answers; slots that share a prompt
form one larger group, so one compiled program runs every group size at a fixed number of
answers per step), scores them, and takes ``inner_steps`` Adam steps on one loss over that
batch. Every method takes the same number of optimizer steps on the same number of responses.
The methods (:class:`Method`) come in three families.

``"grpo"``: the clipped per-token surrogate of GRPO as TRL's ``GRPOTrainer`` computes it
(DeepSeekMath's GRPO, as implemented in TRL 1.9.0, not an algorithm of the paper), with ratio
``w = pi_theta / pi_t`` per token, advantage ``A`` and the k3 penalty
``k3 = exp(l) - l - 1``, ``l = log pi_ref - log pi_theta``, per token:

    L_grpo = -mean_{i,t} [ min(w A_i, clip(w, 1 - eps, 1 + eps) A_i) - beta * k3_{i,t} ].

The advantage is TRL's group-normalized one, ``(r - mean) / (std + 1e-4)`` with the
Bessel-corrected standard deviation of the group (``scale_rewards="group"``), or ``r`` minus the
mean reward of the group's other answers (REINFORCE with a leave-one-out baseline). The
reference is fixed at the base model or, as TRL's ``sync_ref_model`` does, replaced every
``sync_every`` optimizer steps by ``alpha * theta + (1 - alpha) * theta_ref`` (parameter mixup;
``alpha = 1`` is a hard reset). Its penalty's gradient on fresh samples is that of
``KL(pi_ref || pi)``, not the theory's ``KL(pi || pi_ref)`` (chapter 4 of the book).

``"rebel"``: the Rebel-OnPolicy squared loss on pairs ``(y, y')`` of a group (paper section 4,
Algorithm 5), with the sampling policy as reference:

    L_rebel = mean ( beta * [log(pi_theta/pi_t)(y) - log(pi_theta/pi_t)(y')] - (r(y) - r(y')) )^2.

``"apmd"``: approximate policy mirror descent as the paper's theory prescribes it (paper section
3.1; with sampled rewards it is PPO-NoClip, section 3.2 and Algorithm 1, with the KL term summed
exactly over all answers instead of estimated): the reference is reset to the sampling policy
``pi_t`` at every outer step, and the inner steps ascend

    L_t(theta) = R_t(theta) - beta * mean_x KL(pi_theta(.|x) || pi_t(.|x)).

With the exact expected reward as ``R_t``, its maximizer over all policies is the mirror-descent
target ``pi*_{t+1} = pi_t exp(r / beta) / Z``
(:func:`covpo.labs.transformer.exact.regularized_target`); with the sampled estimate it is that
target's estimate from the batch.
The KL divergence is the exact sum over all answers of each prompt of the batch
(:func:`~covpo.labs.transformer.model.all_answer_log_probs`). ``R_t`` is either the sampled
importance-weighted estimate ``mean_i w_i (r_i - b_i)`` with sequence-level ratios and the
leave-one-out baseline ``b_i``, the mean reward of the group's other answers
(PPO-NoClip's reward term) or, for the exact-target control, the exact expected reward
``mean_x sum_y pi_theta(y|x) r(x, y)``, which draws no responses: its inner loop fits the exact
target, and what it loses comes from the parameterization and the optimizer alone. After every
outer step the loop records the inner loop's accuracy, ``mean_x KL(pi_{t+1} || pi*_{t+1})``
over all training prompts (the quantity the paper's APMD guarantee asks to be small). With
``reset_optimizer`` the Adam state starts afresh at every outer step, so each outer step solves
its own subproblem; without it the moments carry over from the previous subproblems.

Because a method's constants are data, one compiled program runs every method of the
``"grpo"`` and ``"rebel"`` families and another every ``"apmd"`` method, and ``jax.vmap`` runs
all their runs at once. Everything a run depends on (base model, prompts, answers' rules,
reward, random key) is data of that run (:class:`RunInputs`), so arms of one seed share their
base model, prompts and random stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from covpo.validation import (check_count, check_flag, check_instance, check_instances, check_nonnegative, check_option,
                              check_positive, check_text)

from .exact import regularized_target, sequence_kl
from .model import (ModelConfig, Params, all_answer_log_probs, all_answer_token_log_probs, group_answer_logits,
                    group_token_log_probs)
from .task import ReversalTask, answer_index, check_prompts, correct_answer, mixture, near_miss

FAMILIES = ("grpo", "rebel", "apmd")
"""The three loss families (module docstring)."""
ADVANTAGES = ("group", "loo")
"""GRPO's advantages, group-normalized (TRL's default) or leave-one-out."""
STD_EPSILON = 1e-4
"""TRL's constant in ``(r - mean) / (std + 1e-4)``."""


@dataclass(frozen=True)
class Method:
    """One post-training method: the constants of its family's loss (see the module docstring).

    Parameters
    ----------
    name
        Label in tables and figures.
    learning_rate
        Adam step size.
    family
        ``"grpo"``, ``"rebel"`` or ``"apmd"`` (module docstring).
    beta
        Regularization strength: the k3 penalty's weight (``"grpo"``), the squared loss's
        ``beta`` (``"rebel"``) or the mirror-descent step's ``beta`` (``"apmd"``).
    clip_eps
        Ratio clip ``eps`` of the GRPO surrogate.
    advantage
        ``"group"`` or ``"loo"`` (GRPO family).
    sync_every
        Optimizer steps between reference syncs, as TRL's ``ref_model_sync_steps``; 0 keeps the
        reference at the base model (GRPO family).
    sync_alpha
        TRL's ``ref_model_mixup_alpha``, in ``(0, 1]``.
    exact_reward
        ``"apmd"`` only: use the exact expected reward instead of the sampled estimate (the
        exact-target control, which draws no responses).
    reset_optimizer
        Re-initialise the Adam state whenever the reference is reset: at every outer step for the
        ``"apmd"`` family (each outer step then solves its own subproblem afresh, as the theory
        states APMD), at every hard sync (``sync_alpha = 1``) for the ``"grpo"`` family (ProRL's
        recipe). ``False`` carries the state across resets.
    """

    name: str
    learning_rate: float
    family: str = "grpo"
    beta: float = 0.0
    clip_eps: float = 0.2
    advantage: str = "group"
    sync_every: int = 0
    sync_alpha: float = 1.0
    exact_reward: bool = False
    reset_optimizer: bool = False

    def __post_init__(self) -> None:
        check_text("name", self.name)
        check_positive("learning_rate", self.learning_rate)
        check_option("family", self.family, FAMILIES)
        check_nonnegative("beta", self.beta)
        if self.family != "grpo":
            check_positive("beta", self.beta)
        check_nonnegative("clip_eps", self.clip_eps)
        check_option("advantage", self.advantage, ADVANTAGES)
        check_count("sync_every", self.sync_every, 0)
        if not 0.0 < check_positive("sync_alpha", self.sync_alpha) <= 1.0:
            raise ValueError(f"sync_alpha must be in (0, 1], got {self.sync_alpha!r}")
        check_flag("exact_reward", self.exact_reward)
        if self.exact_reward and self.family != "apmd":
            raise ValueError("exact_reward applies to the apmd family only")
        check_flag("reset_optimizer", self.reset_optimizer)
        if self.reset_optimizer and self.family == "rebel":
            raise ValueError("reset_optimizer applies to the apmd family and to grpo with reference syncs only")
        if self.reset_optimizer and self.family == "grpo" and not (self.sync_every and self.sync_alpha == 1.0):
            raise ValueError("reset_optimizer needs hard reference syncs (sync_every > 0, sync_alpha = 1) in the grpo family")

    @property
    def exact(self) -> bool:
        """Whether the method needs the exact sums over all answers (the ``"apmd"`` family's program)."""
        return self.family == "apmd"

    @property
    def draws_responses(self) -> bool:
        """Whether the method's loss uses sampled responses (all but the exact-target control)."""
        return not self.exact_reward

    def constants(self) -> dict[str, jax.Array]:
        """The method as traced data for the shared loop."""
        return {
            "learning_rate": jnp.float32(self.learning_rate), "beta": jnp.float32(self.beta),
            "clip_eps": jnp.float32(self.clip_eps), "loo": jnp.float32(self.advantage == "loo"),
            "sync_every": jnp.int32(self.sync_every), "sync_alpha": jnp.float32(self.sync_alpha),
            "rebel": jnp.float32(self.family == "rebel"), "exact_reward": jnp.float32(self.exact_reward),
            "reset_optimizer": jnp.float32(self.reset_optimizer),
        }


def stack_constants(methods: list[Method]) -> dict[str, jax.Array]:
    """The constants of several methods stacked along a leading run axis."""
    constants = [method.constants() for method in check_instances("methods", methods, Method)]
    return {name: jnp.stack([c[name] for c in constants]) for name in constants[0]}


@dataclass(frozen=True)
class TrainingSetup:
    """What every run of one compiled program shares: the model shape and the sizes (static under ``jit``).

    Parameters
    ----------
    config
        Model shape.
    n_steps
        Outer steps (sampled batches) per run.
    n_slots, slot_size
        Each outer step draws ``n_slots * slot_size`` answers: ``slot_size`` (even, for the
        squared loss's pairs) per slot; slots that share a prompt form one group
        (:class:`RunInputs`).
    inner_steps
        Adam steps per batch, the same for every method (TRL's ``num_iterations``).
    """

    config: ModelConfig
    n_steps: int = 40
    n_slots: int = 16
    slot_size: int = 8
    inner_steps: int = 4

    def __post_init__(self) -> None:
        check_instance("config", self.config, ModelConfig)
        check_count("n_steps", self.n_steps)
        check_count("n_slots", self.n_slots)
        check_count("slot_size", self.slot_size, 2)
        if self.slot_size % 2:
            raise ValueError(f"slot_size must be even, got {self.slot_size}")
        check_count("inner_steps", self.inner_steps)

    @property
    def responses(self) -> int:
        """Responses each run that samples draws."""
        return self.n_steps * self.n_slots * self.slot_size

    @property
    def gradient_steps(self) -> int:
        """Optimizer steps each run takes."""
        return self.n_steps * self.inner_steps


class RunInputs(NamedTuple):
    """Everything one post-training run depends on (with a leading run axis when stacked).

    ``prompts`` are the ``P`` training prompts with their correct answers and near misses; the
    policy gradient never sees other prompts. ``held_out`` prompts are measured only.
    ``slot_groups[s]`` is the group of slot ``s``: each outer step draws a random order of the
    training prompts and gives slot ``s`` the ``slot_groups[s]``-th of them, so with
    ``slot_groups = arange(P)`` every step has every training prompt once, and with groups of
    ``m`` slots a step has ``n_slots / m`` prompts with ``m * slot_size`` answers each.
    ``near_reward`` is the reward of a near miss (``1 - gap`` under partial credit, 0 under the
    binary reward); ``key`` is the run's only source of randomness.
    """

    base: Params
    prompts: jax.Array
    correct: jax.Array
    near: jax.Array
    held_out: jax.Array
    held_correct: jax.Array
    held_near: jax.Array
    near_reward: jax.Array
    slot_groups: jax.Array
    key: jax.Array


class RunRecord(NamedTuple):
    """What a run measured (arrays with a leading step axis).

    ``reward`` and ``pass1`` are means over the step's sampled batch (drawn from ``pi_t``,
    ``t = 0..T-1``). The others are exact and have ``T + 1`` rows, ``t = 0..T``: the last row is
    the model the run returns. ``kl`` is ``mean_x KL(pi_t || pi_0)`` over the training prompts;
    ``log_coverage`` and ``log_near`` are ``log pi_t(y*|x)`` and ``log pi_t(y~|x)`` on every
    training prompt, ``held_log_coverage`` and ``held_log_near`` on every held-out prompt.
    ``accuracy[t]`` (``T`` rows) is ``mean_x KL(pi_{t+1} || pi*_{t+1})`` over the training
    prompts, with ``pi*_{t+1} = pi_t exp(r / beta) / Z`` at the method's ``beta`` (1 where
    ``beta = 0``): the inner loop's accuracy for methods whose reference is ``pi_t``.
    ``prompt_accuracy[t]`` (``[T, P]``) is the same KL divergence per training prompt and
    ``target_log_coverage[t]`` is ``log pi*_{t+1}(y*|x)``, the target's coverage of the correct
    answer, per training prompt (the terms of the KL form of the inner-loop condition,
    :mod:`covpo.labs.transformer.frontier`).
    """

    reward: jax.Array
    pass1: jax.Array
    kl: jax.Array
    accuracy: jax.Array
    log_coverage: jax.Array
    log_near: jax.Array
    held_log_coverage: jax.Array
    held_log_near: jax.Array
    prompt_accuracy: jax.Array
    target_log_coverage: jax.Array


def _adam_update(grads: Params, state: optax.OptState, lr: jax.Array, params: Params) -> tuple[Params, optax.OptState]:
    """One Adam step of size ``lr``."""
    updates, new_state = optax.scale_by_adam().update(grads, state)
    return jax.tree_util.tree_map(lambda p, u: p - lr * u, params, updates), new_state


def group_advantages(rewards: jax.Array, slot_groups: jax.Array, loo: jax.Array) -> jax.Array:
    """Advantages of ``rewards [S, n]`` within groups of slots: TRL's group-normalized ones, or leave-one-out where ``loo``.

    A group is every slot with the same ``slot_groups`` entry. Group-normalized:
    ``(r - mean) / (std + 1e-4)`` with the Bessel-corrected deviation; leave-one-out: ``r``
    minus the mean of the group's other answers.
    """
    same = (slot_groups[:, None] == slot_groups[None, :]).astype(rewards.dtype)
    count = same.sum(1, keepdims=True) * rewards.shape[1]
    total = same @ rewards.sum(1, keepdims=True)
    mean = total / count
    variance = jnp.maximum(same @ (rewards ** 2).sum(1, keepdims=True) - count * mean ** 2, 0.0) / (count - 1)
    normalized = (rewards - mean) / (jnp.sqrt(variance) + STD_EPSILON)
    leave_one_out = rewards - (total - rewards) / (count - 1)
    return jnp.where(loo > 0, leave_one_out, normalized)


def leave_one_out_rewards(rewards: jax.Array, slot_groups: jax.Array) -> jax.Array:
    """``r`` minus the mean reward of the other answers of its group.

    The baseline leaves the answer itself out, so the sampled reward term of the ``"apmd"``
    family estimates ``R_t(theta)`` minus a constant without bias, and the inner objective's
    maximizer is the mirror-descent target's estimate (a baseline that includes the answer
    would scale the reward term by ``(G - 1) / G``).
    """
    same = (slot_groups[:, None] == slot_groups[None, :]).astype(rewards.dtype)
    count = same.sum(1, keepdims=True) * rewards.shape[1]
    return rewards - (same @ rewards.sum(1, keepdims=True) - rewards) / (count - 1)


def _reset_where(reset: jax.Array, opt_state: optax.OptState) -> optax.OptState:
    """The Adam state re-initialised (zero moments, count zero) where ``reset``, else unchanged."""
    return jax.tree_util.tree_map(lambda leaf: jnp.where(reset, jnp.zeros_like(leaf), leaf), opt_state)


def is_sync_step(optimizer_step: jax.Array, constants: dict) -> jax.Array:
    """Whether the reference is synced after optimizer step ``optimizer_step`` (counted from 1): every ``sync_every`` steps."""
    every = constants["sync_every"]
    return (every > 0) & (optimizer_step % jnp.maximum(every, 1) == 0)


def synced_reference(params: Params, reference: Params, optimizer_step: jax.Array, constants: dict) -> Params:
    """The reference after optimizer step ``optimizer_step`` (counted from 1), as TRL's ``sync_ref_model`` updates it.

    Every ``sync_every`` optimizer steps the reference becomes ``alpha * theta + (1 - alpha) *
    theta_ref`` (``alpha = sync_alpha``; 1 is a hard reset); between syncs, and always when
    ``sync_every`` is 0, it is unchanged.
    """
    sync = is_sync_step(optimizer_step, constants)
    alpha = constants["sync_alpha"]
    return jax.tree_util.tree_map(lambda p, r: jnp.where(sync, alpha * p + (1 - alpha) * r, r), params, reference)


def policy_loss(params: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array,
                old_log_probs: jax.Array, ref_log_probs: jax.Array, rewards: jax.Array, advantages: jax.Array,
                constants: dict) -> jax.Array:
    """The loss of the ``"grpo"`` or ``"rebel"`` family (module docstring) on one batch.

    ``prompts [S, L]``, ``answers [S, n, L]``; ``old_log_probs`` and ``ref_log_probs`` are
    per-token log-probabilities ``[S, n, L]`` under the sampling policy and the reference.
    """
    log_probs = group_token_log_probs(params, config, prompts, answers)
    ratio = jnp.exp(log_probs - old_log_probs)
    eps = constants["clip_eps"]
    advantage = advantages[..., None]
    surrogate = jnp.minimum(ratio * advantage, jnp.clip(ratio, 1 - eps, 1 + eps) * advantage)
    to_ref = ref_log_probs - log_probs
    k3 = jnp.exp(to_ref) - to_ref - 1.0
    grpo = -(surrogate - constants["beta"] * k3).mean()
    log_ratio = (log_probs - old_log_probs).sum(-1)
    pairs = constants["beta"] * (log_ratio[:, 0::2] - log_ratio[:, 1::2]) - (rewards[:, 0::2] - rewards[:, 1::2])
    rebel = (pairs ** 2).mean()
    return jnp.where(constants["rebel"] > 0, rebel, grpo)


def apmd_loss(params: Params, config: ModelConfig, prompts: jax.Array, slot_prompts: jax.Array,
              answer_indices: jax.Array, log_reference: jax.Array, advantages: jax.Array, reward_table: jax.Array,
              constants: dict) -> jax.Array:
    """Minus the ``"apmd"`` family's inner objective ``L_t`` (module docstring) on one batch.

    ``prompts [P, L]`` are all training prompts; the batch's slots hold prompts
    ``slot_prompts [S]`` and answers ``answer_indices [S, n]`` (positions among all answers).
    ``log_reference [P, A]`` is ``log pi_t`` of every answer and ``reward_table [P, A]`` every
    answer's reward. The sampled reward term has sequence-level ratios to ``pi_t``.
    """
    log_probs = all_answer_log_probs(params, config, prompts)[slot_prompts]
    reference = log_reference[slot_prompts]
    ratio = jnp.exp(jnp.take_along_axis(log_probs - reference, answer_indices, axis=1))
    sampled = (ratio * advantages).mean()
    exact = (jnp.exp(log_probs) * reward_table[slot_prompts]).sum(-1).mean()
    reward = jnp.where(constants["exact_reward"] > 0, exact, sampled)
    return -(reward - constants["beta"] * sequence_kl(log_probs, reference).mean())


def answer_log_probs_pair(params: Params, config: ModelConfig, prompts: jax.Array, correct: jax.Array,
                          near: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Exact ``log pi(y*|x)`` and ``log pi(y~|x)`` for ``prompts [H, L]`` (two arrays ``[H]``).

    The near miss differs from the correct answer only in its last symbol, which is never an
    input of teacher forcing, so the pass that scores one scores both.
    """
    answers = jnp.stack([correct, near], axis=1)
    log_probs = jax.nn.log_softmax(group_answer_logits(params, config, prompts, answers[:, :1]), axis=-1)
    both = jnp.take_along_axis(log_probs, answers[..., None], axis=-1)[..., 0].sum(-1)
    return both[:, 0], both[:, 1]


def held_out_log_probs(params: Params, config: ModelConfig, task: ReversalTask,
                       prompts: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Exact ``log pi(y*|x)`` and ``log pi(y~|x)`` of ``task``'s answers to ``prompts [H, L]``."""
    return answer_log_probs_pair(params, config, prompts, correct_answer(task, prompts), near_miss(task, prompts))


def reward_tables(correct: jax.Array, near: jax.Array, near_reward: jax.Array, n_symbols: int) -> jax.Array:
    """Every answer's reward for prompts with answers ``correct, near [P, L]``: ``[P, n_symbols ** L]``."""
    positions = jnp.arange(n_symbols ** correct.shape[-1])
    return ((positions == answer_index(correct, n_symbols)[:, None]).astype(jnp.float32)
            + near_reward * (positions == answer_index(near, n_symbols)[:, None]))


def _one_run(setup: TrainingSetup, exact: jax.Array, constants: dict, run: RunInputs) -> tuple[Params, RunRecord]:
    config, K, n, S = setup.config, setup.inner_steps, setup.slot_size, setup.n_slots
    V, L = config.n_symbols, config.length
    n_prompts = run.prompts.shape[0]
    table = reward_tables(run.correct, run.near, run.near_reward, V)
    correct_index, near_index = answer_index(run.correct, V), answer_index(run.near, V)
    base_table = all_answer_log_probs(run.base, config, run.prompts)
    target_beta = jnp.where(constants["beta"] > 0, constants["beta"], 1.0)
    digits = V ** jnp.arange(L - 1, -1, -1)

    def measure(params, log_policy):
        held_coverage, held_near = answer_log_probs_pair(params, config, run.held_out, run.held_correct, run.held_near)
        rows = jnp.arange(n_prompts)
        return (log_policy[rows, correct_index], log_policy[rows, near_index], held_coverage, held_near)

    def exact_steps(state, batch):
        params, ref, opt_state = state
        slot_prompts, indices, _, _, _, log_policy, rewards, _ = batch
        advantages = leave_one_out_rewards(rewards, run.slot_groups)
        opt_state = _reset_where(constants["reset_optimizer"] > 0, opt_state)

        def inner(state, _):
            params, opt_state = state
            grads = jax.grad(apmd_loss)(params, config, run.prompts, slot_prompts, indices, log_policy, advantages,
                                        table, constants)
            return _adam_update(grads, opt_state, constants["learning_rate"], params), None

        (params, opt_state), _ = jax.lax.scan(inner, (params, opt_state), None, length=K)
        return params, ref, opt_state

    def sampled_steps(state, batch):
        params, ref, opt_state = state
        _, _, prompts, answers, old, _, rewards, step = batch
        ref_log_probs = group_token_log_probs(ref, config, prompts, answers)
        advantages = group_advantages(rewards, run.slot_groups, constants["loo"])

        def inner(state, i):
            params, ref, opt_state = state
            grads = jax.grad(policy_loss)(params, config, prompts, answers, old, ref_log_probs, rewards, advantages,
                                          constants)
            params, opt_state = _adam_update(grads, opt_state, constants["learning_rate"], params)
            synced = is_sync_step(step * K + i + 1, constants)
            opt_state = _reset_where(synced & (constants["reset_optimizer"] > 0), opt_state)
            return (params, synced_reference(params, ref, step * K + i + 1, constants), opt_state), None

        return jax.lax.scan(inner, (params, ref, opt_state), jnp.arange(K))[0]

    def outer(carry, step):
        params, ref, opt_state, key, previous_target = carry
        key, pick_key, sample_key = jax.random.split(key, 3)
        token_log_probs = all_answer_token_log_probs(params, config, run.prompts)
        log_policy = token_log_probs.sum(-1)
        slot_prompts = jax.random.permutation(pick_key, n_prompts)[run.slot_groups]
        indices = jax.random.categorical(sample_key, log_policy[slot_prompts][:, None, :], shape=(S, n))
        answers = (indices[..., None] // digits) % V
        old = token_log_probs[slot_prompts[:, None], indices]
        rewards = jnp.take_along_axis(table[slot_prompts], indices, axis=1)
        record = (rewards.mean(), (rewards == 1.0).mean(), sequence_kl(log_policy, base_table).mean(),
                  sequence_kl(log_policy, previous_target), previous_target[jnp.arange(n_prompts), correct_index],
                  *measure(params, log_policy))
        batch = (slot_prompts, indices, run.prompts[slot_prompts], answers, old, log_policy, rewards, step)
        params, ref, opt_state = jax.lax.cond(exact, exact_steps, sampled_steps, (params, ref, opt_state), batch)
        target = regularized_target(log_policy, table, target_beta)
        return (params, ref, opt_state, key, target), record

    init = (run.base, run.base, optax.scale_by_adam().init(run.base), run.key, base_table)
    (params, _, _, _, last_target), record = jax.lax.scan(outer, init, jnp.arange(setup.n_steps))
    reward, pass1, kl, step_kl, step_target, *measured = record
    log_policy = all_answer_log_probs(params, config, run.prompts)
    final = measure(params, log_policy)
    prompt_accuracy = jnp.concatenate([step_kl[1:], sequence_kl(log_policy, last_target)[None]])
    target_log_coverage = jnp.concatenate([step_target[1:], last_target[jnp.arange(n_prompts), correct_index][None]])
    kl = jnp.concatenate([kl, sequence_kl(log_policy, base_table).mean()[None]])
    return params, RunRecord(reward, pass1, kl, prompt_accuracy.mean(-1),
                             *(jnp.concatenate([series, last[None]]) for series, last in zip(measured, final)),
                             prompt_accuracy, target_log_coverage)


@partial(jax.jit, static_argnames=("setup",))
def train_runs(setup: TrainingSetup, exact: bool, constants: dict, inputs: RunInputs) -> tuple[Params, RunRecord]:
    """Run a batch of post-training runs at once (``jax.vmap`` over the leading axis of ``constants`` and ``inputs``).

    ``exact`` selects the inner loop of every run of the call: ``True`` for methods of the
    ``"apmd"`` family, ``False`` for the others (:attr:`Method.exact`). It is traced, not
    static: one compiled program runs both. Returns the final parameters of every run
    (leading run axis) and their :class:`RunRecord` (``[runs, steps, ...]``).
    """
    return jax.vmap(partial(_one_run, setup), in_axes=(None, 0, 0))(jnp.asarray(exact), constants, inputs)


def pretraining_loss(params: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array, weights: jax.Array,
                     junk: jax.Array) -> jax.Array:
    """Expected cross-entropy of the pre-training mixture (per prompt: ``answers [N, A, L]`` with ``weights [N, A]``, uniform junk).

    The junk term is exact given one uniformly drawn junk prefix per prompt: the cross-entropy
    against the uniform next-symbol distribution, summed over answer positions. Teacher forcing
    feeds all answer symbols but the last, where the mixture's answers differ
    (:func:`~covpo.labs.transformer.task.mixture`), so one pass along the first answer scores
    them all.
    """
    log_probs = jax.nn.log_softmax(
        group_answer_logits(params, config, prompts, jnp.stack([answers[:, 0], junk], axis=1)), axis=-1)
    on_answers = jnp.take_along_axis(log_probs[:, :1], answers[..., None], axis=-1)[..., 0].sum(-1)
    uniform = log_probs[:, 1].mean(-1).sum(-1)
    return -((weights * on_answers).sum(-1) + (1 - weights.sum(-1)) * uniform).mean()


class PretrainingData(NamedTuple):
    """One base model's pre-training data: its prompts, the mixture's answers to them and their weights (junk takes the rest)."""

    prompts: jax.Array
    answers: jax.Array
    weights: jax.Array


def pretraining_data(task: ReversalTask, prompts: np.ndarray) -> PretrainingData:
    """The mixture of ``task`` on ``prompts [N, L]`` as data for :func:`pretrain_models` (:func:`~covpo.labs.transformer.task.mixture`)."""
    check_instance("task", task, ReversalTask)
    prompts = jnp.asarray(check_prompts(task, prompts), jnp.int32)
    answers, weights = mixture(task, prompts)
    return PretrainingData(prompts, jnp.asarray(answers, jnp.int32), jnp.asarray(weights, jnp.float32))


@partial(jax.jit, static_argnames=("config", "n_steps", "batch"))
def _pretrain(params: Params, config: ModelConfig, data: PretrainingData, key: jax.Array,
              n_steps: int, batch: int, learning_rate: float) -> tuple[Params, jax.Array]:
    optimizer = optax.adam(optax.cosine_decay_schedule(learning_rate, n_steps))

    def one_model(params, data, key):
        def step(carry, _):
            params, state, key = carry
            key, pick_key, junk_key = jax.random.split(key, 3)
            chosen = jax.random.choice(pick_key, data.prompts.shape[0], (batch,), replace=False)
            junk = jax.random.randint(junk_key, (batch, config.length), 0, config.n_symbols, dtype=jnp.int32)
            loss, grads = jax.value_and_grad(pretraining_loss)(
                params, config, data.prompts[chosen], data.answers[chosen], data.weights[chosen], junk)
            updates, state = optimizer.update(grads, state, params)
            return (optax.apply_updates(params, updates), state, key), loss

        (params, _, _), losses = jax.lax.scan(step, (params, optimizer.init(params), key), None, length=n_steps)
        return params, losses

    return jax.vmap(one_model)(params, data, key)


def pretrain_models(params: Params, config: ModelConfig, data: PretrainingData, keys: jax.Array, *,
                    n_steps: int = 1500, batch: int = 64, learning_rate: float = 3e-3) -> tuple[Params, np.ndarray]:
    """Fit several base models at once, each to its own mixture (leading model axis on ``params``, ``data``, ``keys``).

    Adam with a cosine-decayed step size from ``learning_rate``; returns the models and their
    loss curves ``[models, n_steps]``.
    """
    check_instance("config", config, ModelConfig)
    check_instance("data", data, PretrainingData)
    check_count("n_steps", n_steps)
    check_count("batch", batch)
    check_positive("learning_rate", learning_rate)
    if batch > data.prompts.shape[1]:
        raise ValueError(f"batch must be at most the {data.prompts.shape[1]} prompts, got {batch}")
    params, losses = _pretrain(params, config, data, keys, n_steps, batch, learning_rate)
    return params, np.asarray(losses)


def pretrain(params: Params, config: ModelConfig, task: ReversalTask, prompts: np.ndarray, key: jax.Array, *,
             n_steps: int = 1500, batch: int = 64, learning_rate: float = 3e-3) -> tuple[Params, np.ndarray]:
    """Fit one base model ``pi_0`` to ``task``'s pre-training mixture on ``prompts``; returns it and the loss curve."""
    check_instance("config", config, ModelConfig)
    check_instance("task", task, ReversalTask)
    prompts = check_prompts(task, prompts)
    check_count("n_steps", n_steps)
    check_count("batch", batch)
    check_positive("learning_rate", learning_rate)
    if batch > len(prompts):
        raise ValueError(f"batch must be at most the {len(prompts)} prompts, got {batch}")
    add_axis = partial(jax.tree_util.tree_map, lambda a: a[None])
    models, losses = pretrain_models(add_axis(params), config, add_axis(pretraining_data(task, prompts)), key[None],
                                     n_steps=n_steps, batch=batch, learning_rate=learning_rate)
    return jax.tree_util.tree_map(lambda a: a[0], models), losses[0]
