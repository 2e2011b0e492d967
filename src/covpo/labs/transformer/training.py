"""Supervised pre-training of the base model, and the policy-optimization methods, in one jitted loop.

Pre-training (:func:`pretrain`) fits the mixture of :mod:`covpo.labs.transformer.task` by
maximum likelihood. Every post-training method (:func:`default_methods` lists them) is the same outer loop, as
practitioners run it (TRL's ``GRPOTrainer``): draw ``n_prompts`` training prompts, sample a group
of ``group_size`` answers per prompt from the current policy ``pi_t``, score them, and take
``inner_steps`` Adam steps on one loss over that batch. The loss is

    pg_weight * L_pg + sq_weight * L_sq,

with the GRPO surrogate (per-token clipped ratio ``w = pi_theta / pi_t``, group advantage, and the
k3 penalty ``beta * (exp(l) - l - 1)``, ``l = log pi_ref - log pi_theta``, per token; paper
section 3 and appendix H)

    L_pg = -mean_{i,t} [ min(w A_i, clip(w, 1 - eps, 1 + eps) A_i) - beta * k3_{i,t} ],

and the Rebel-OnPolicy squared loss on pairs ``(y, y')`` of a group (paper section 4, Algorithm 5)

    L_sq = mean ( sq_beta * [log(pi_theta/pi_t)(y) - log(pi_theta/pi_t)(y')] - (r(y) - r(y')) )^2.

The methods differ only in these constants, in the advantage (group mean and standard deviation,
or a leave-one-out baseline) and in the reference: fixed at the base model, or **reset** to the
current policy every ``reset_every`` outer steps (in TRL, ``sync_ref_model=True`` with
``ref_model_mixup_alpha=1`` and ``ref_model_sync_steps`` = the period; it acts only with
``beta > 0`` and a separate reference model, i.e. no PEFT adapters). Because the constants are
data, one compiled function runs every method, and ``jax.vmap`` runs all (method, reward, seed)
runs of a study at once; each run's randomness is its own JAX key.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from covpo.validation import check_count, check_instance, check_instances, check_nonnegative, check_option, check_positive, check_text

from .model import ModelConfig, Params, group_answer_logits, group_token_log_probs
from .sampling import sample_answers
from .task import ReversalTask, correct_answer, mixture_weights, near_miss, reward_table


@dataclass(frozen=True)
class Method:
    """One post-training method: the constants of the shared loss (see the module docstring).

    Parameters
    ----------
    name
        Label in tables and figures.
    learning_rate
        Adam step size.
    beta
        Weight of the k3 penalty to the reference (GRPO's ``beta``).
    clip_eps
        Ratio clip ``eps``.
    inner_steps
        Adam steps per sampled batch (TRL's ``num_iterations``).
    reset_every
        Reset the reference to the current policy every this many outer steps; 0 keeps it
        fixed at the base model.
    advantage
        ``"group"``: ``(r - mean) / (std + 1e-4)`` (GRPO); ``"loo"``: ``r`` minus the mean of the
        other answers of the group (REINFORCE leave-one-out); ``"none"`` for the squared loss.
    pg_weight, sq_weight, sq_beta
        Weights of the two losses and the squared loss's ``beta``.
    """

    name: str
    learning_rate: float
    beta: float = 0.0
    clip_eps: float = 0.2
    inner_steps: int = 1
    reset_every: int = 0
    advantage: str = "group"
    pg_weight: float = 1.0
    sq_weight: float = 0.0
    sq_beta: float = 1.0

    def __post_init__(self) -> None:
        check_text("name", self.name)
        check_positive("learning_rate", self.learning_rate)
        check_nonnegative("beta", self.beta)
        check_nonnegative("clip_eps", self.clip_eps)
        check_count("inner_steps", self.inner_steps)
        check_count("reset_every", self.reset_every, 0)
        check_option("advantage", self.advantage, ("group", "loo", "none"))
        check_nonnegative("pg_weight", self.pg_weight)
        check_nonnegative("sq_weight", self.sq_weight)
        check_positive("sq_beta", self.sq_beta)

    def constants(self) -> dict[str, jax.Array]:
        """The method as traced data for the shared loop."""
        return {
            "learning_rate": jnp.float32(self.learning_rate), "beta": jnp.float32(self.beta),
            "clip_eps": jnp.float32(self.clip_eps), "inner_steps": jnp.int32(self.inner_steps),
            "reset_every": jnp.int32(self.reset_every),
            "std_norm": jnp.float32(self.advantage == "group"), "loo": jnp.float32(self.advantage == "loo"),
            "pg_weight": jnp.float32(self.pg_weight), "sq_weight": jnp.float32(self.sq_weight),
            "sq_beta": jnp.float32(self.sq_beta),
        }


def default_methods(beta: float = 0.04, strong_beta: float = 0.5, reset_every: int = 10, inner_steps: int = 2,
                    learning_rate: float = 2e-3, squared_learning_rate: float = 5e-4) -> tuple[Method, ...]:
    """The chapter's five methods (our constants).

    GRPO with a fixed reference at ``beta`` (practice), the same with reference resets every
    ``reset_every`` steps (the practical switch), GRPO with resets at ``strong_beta`` (the paper's
    prescription: strong regularization, reset often), REINFORCE with a leave-one-out baseline,
    and Rebel-OnPolicy (reference ``pi_t``, i.e. a reset every step).
    """
    check_nonnegative("beta", beta)
    check_nonnegative("strong_beta", strong_beta)
    check_count("reset_every", reset_every, 0)
    check_count("inner_steps", inner_steps)
    check_positive("learning_rate", learning_rate)
    check_positive("squared_learning_rate", squared_learning_rate)
    return (
        Method("GRPO, fixed reference", learning_rate, beta=beta, inner_steps=inner_steps),
        Method("GRPO, resets", learning_rate, beta=beta, inner_steps=inner_steps, reset_every=reset_every),
        Method("GRPO, resets, strong beta", learning_rate, beta=strong_beta, inner_steps=inner_steps,
               reset_every=reset_every),
        Method("REINFORCE, leave-one-out", learning_rate, advantage="loo", inner_steps=1),
        Method("Rebel (squared loss)", squared_learning_rate, advantage="none", pg_weight=0.0, sq_weight=1.0,
               sq_beta=1.0, inner_steps=inner_steps),
    )


class RunRecord(NamedTuple):
    """Per-outer-step measurements of one run (arrays with a leading step axis).

    ``reward`` and ``pass1`` are batch means on training prompts; ``kl`` estimates
    ``KL(pi_t || pi_0)`` on the batch (exact per-token KL along sampled prefixes);
    ``log_coverage`` and ``log_near`` are exact ``log pi_t(y*|x)`` and ``log pi_t(y~|x)`` on
    every held-out prompt (``[steps, held_out]``).
    """

    reward: jax.Array
    pass1: jax.Array
    kl: jax.Array
    log_coverage: jax.Array
    log_near: jax.Array


def _adam_update(grads: Params, state: optax.OptState, lr: jax.Array, active: jax.Array,
                 params: Params) -> tuple[Params, optax.OptState]:
    """One Adam step of size ``lr``, applied only where ``active``."""
    updates, new_state = optax.scale_by_adam().update(grads, state)
    new_params = jax.tree_util.tree_map(lambda p, u: p - lr * u, params, updates)
    keep = lambda new, old: jnp.where(active, new, old)
    return jax.tree_util.tree_map(keep, new_params, params), jax.tree_util.tree_map(keep, new_state, state)


def policy_loss(params: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array,
                old_log_probs: jax.Array, ref_log_probs: jax.Array, rewards: jax.Array,
                constants: dict) -> jax.Array:
    """The shared loss (module docstring) on one batch: ``prompts [N, L]``, ``answers [N, G, L]``."""
    G = answers.shape[1]
    log_probs = group_token_log_probs(params, config, prompts, answers)
    centered = rewards - rewards.mean(axis=1, keepdims=True)
    scale = jnp.where(constants["std_norm"] > 0, 1.0 / (rewards.std(axis=1, keepdims=True) + 1e-4),
                      jnp.where(constants["loo"] > 0, G / (G - 1.0), 1.0))
    advantage = (centered * scale)[..., None]
    ratio = jnp.exp(log_probs - old_log_probs)
    eps = constants["clip_eps"]
    surrogate = jnp.minimum(ratio * advantage, jnp.clip(ratio, 1 - eps, 1 + eps) * advantage)
    to_ref = ref_log_probs - log_probs
    k3 = jnp.exp(to_ref) - to_ref - 1.0
    pg = -(surrogate - constants["beta"] * k3).mean()
    log_ratio = (log_probs - old_log_probs).sum(-1)
    pairs = constants["sq_beta"] * (log_ratio[:, 0::2] - log_ratio[:, 1::2]) - (rewards[:, 0::2] - rewards[:, 1::2])
    sq = (pairs ** 2).mean()
    return constants["pg_weight"] * pg + constants["sq_weight"] * sq


@dataclass(frozen=True)
class TrainingSetup:
    """What every run of a study shares: model, task, prompts, sizes (static under ``jit``).

    Parameters
    ----------
    config, task
        Model shape and task.
    n_steps
        Outer steps (sampled batches) per run.
    n_prompts, group_size
        Prompts per batch and answers per prompt (even, for the squared loss's pairs); every
        run draws ``n_steps * n_prompts * group_size`` responses.
    max_inner_steps
        Largest ``inner_steps`` of any method (the loop runs this many, masked).
    """

    config: ModelConfig
    task: ReversalTask
    n_steps: int = 150
    n_prompts: int = 16
    group_size: int = 8
    max_inner_steps: int = 2

    def __post_init__(self) -> None:
        check_instance("config", self.config, ModelConfig)
        check_instance("task", self.task, ReversalTask)
        check_count("n_steps", self.n_steps)
        check_count("n_prompts", self.n_prompts)
        check_count("group_size", self.group_size, 2)
        if self.group_size % 2:
            raise ValueError(f"group_size must be even, got {self.group_size}")
        check_count("max_inner_steps", self.max_inner_steps)

    @property
    def responses(self) -> int:
        """Responses each run samples."""
        return self.n_steps * self.n_prompts * self.group_size


def _sequence_kl(params: Params, base: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array) -> jax.Array:
    """``KL(pi || pi_0)`` estimated from answers drawn from ``pi``: per-token exact KL summed along each sample.

    ``prompts [N, L]``, ``answers [N, G, L]``.
    """
    log_p = jax.nn.log_softmax(group_answer_logits(params, config, prompts, answers), axis=-1)
    log_q = jax.nn.log_softmax(group_answer_logits(base, config, prompts, answers), axis=-1)
    return (jnp.exp(log_p) * (log_p - log_q)).sum((-1, -2)).mean()


def held_out_log_probs(params: Params, config: ModelConfig, task: ReversalTask,
                       prompts: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Exact ``log pi(y*|x)`` and ``log pi(y~|x)`` for ``prompts [H, L]`` (two arrays ``[H]``).

    The near miss differs from the correct answer only in its last symbol, which is never an
    input of teacher forcing, so the pass that scores one scores both.
    """
    answers = jnp.stack([correct_answer(task, prompts), near_miss(task, prompts)], axis=1)
    log_probs = jax.nn.log_softmax(group_answer_logits(params, config, prompts, answers[:, :1]), axis=-1)
    both = jnp.take_along_axis(log_probs, answers[..., None], axis=-1)[..., 0].sum(-1)
    return both[:, 0], both[:, 1]


@partial(jax.jit, static_argnames=("setup",))
def train_runs(setup: TrainingSetup, base: Params, train_prompts: jax.Array, held_out: jax.Array,
               constants: dict, reward_kind: jax.Array, keys: jax.Array) -> tuple[Params, RunRecord]:
    """Run a batch of post-training runs at once (``jax.vmap`` over the leading axis of ``constants``, ``reward_kind``, ``keys``).

    Returns the final parameters of every run (leading run axis) and their :class:`RunRecord`
    (``[runs, steps, ...]``). ``reward_kind`` indexes :data:`~covpo.labs.transformer.task.REWARDS`.
    """
    config, task = setup.config, setup.task
    G, N = setup.group_size, setup.n_prompts

    def one_run(constants, kind, key):
        def outer(carry, step):
            params, ref, opt_state, key = carry
            key, pick_key, sample_key = jax.random.split(key, 3)
            reset = (constants["reset_every"] > 0) & (step % jnp.maximum(constants["reset_every"], 1) == 0)
            ref = jax.tree_util.tree_map(lambda p, r: jnp.where(reset, p, r), params, ref)
            prompts = train_prompts[jax.random.choice(pick_key, train_prompts.shape[0], (N,), replace=False)]
            answers, old = sample_answers(params, config, prompts, G, sample_key)
            rewards = reward_table(task, prompts[:, None, :], answers)[kind]
            ref_lp = group_token_log_probs(ref, config, prompts, answers)
            record = (rewards.mean(),
                      (answers == correct_answer(task, prompts)[:, None, :]).all(-1).mean(),
                      _sequence_kl(params, base, config, prompts, answers),
                      *held_out_log_probs(params, config, task, held_out))

            def inner(state, i):
                params, opt_state = state
                grads = jax.grad(policy_loss)(params, config, prompts, answers, old, ref_lp, rewards, constants)
                return _adam_update(grads, opt_state, constants["learning_rate"], i < constants["inner_steps"],
                                    params), None

            (params, opt_state), _ = jax.lax.scan(inner, (params, opt_state), jnp.arange(setup.max_inner_steps))
            return (params, ref, opt_state, key), record

        init = (base, base, optax.scale_by_adam().init(base), key)
        (params, _, _, _), record = jax.lax.scan(outer, init, jnp.arange(setup.n_steps))
        return params, RunRecord(*record)

    return jax.vmap(one_run)(constants, reward_kind, keys)


def stack_constants(methods: list[Method]) -> dict[str, jax.Array]:
    """The constants of several methods stacked along a leading run axis."""
    constants = [method.constants() for method in check_instances("methods", methods, Method)]
    return {name: jnp.stack([c[name] for c in constants]) for name in constants[0]}


def pretraining_loss(params: Params, config: ModelConfig, task: ReversalTask, prompts: jax.Array,
                     junk: jax.Array) -> jax.Array:
    """Expected cross-entropy of the pre-training mixture (per prompt: correct, near miss, uniform junk).

    The junk term is exact given one uniformly drawn junk prefix per prompt: the cross-entropy
    against the uniform next-symbol distribution, summed over answer positions.
    """
    p_correct, p_near = mixture_weights(task, prompts)
    targets = jnp.stack([correct_answer(task, prompts), near_miss(task, prompts)], axis=1)
    # teacher forcing feeds all answer symbols but the last, where the near miss and the correct
    # answer differ: one pass along the correct answer scores both
    log_probs = jax.nn.log_softmax(
        group_answer_logits(params, config, prompts, jnp.stack([targets[:, 0], junk], axis=1)), axis=-1)
    correct, near = jnp.take_along_axis(log_probs[:, :1], targets[..., None], axis=-1)[..., 0].sum(-1).T
    uniform = log_probs[:, 1].mean(-1).sum(-1)
    return -(p_correct * correct + p_near * near + (1 - p_correct - p_near) * uniform).mean()


@partial(jax.jit, static_argnames=("config", "task", "n_steps", "batch"))
def _pretrain(params: Params, config: ModelConfig, task: ReversalTask, prompts: jax.Array, key: jax.Array,
              n_steps: int, batch: int, learning_rate: float) -> tuple[Params, jax.Array]:
    schedule = optax.cosine_decay_schedule(learning_rate, n_steps)
    optimizer = optax.adam(schedule)

    def step(carry, _):
        params, state, key = carry
        key, pick_key, junk_key = jax.random.split(key, 3)
        chosen = prompts[jax.random.choice(pick_key, prompts.shape[0], (batch,), replace=False)]
        junk = jax.random.randint(junk_key, chosen.shape, 0, config.n_symbols, dtype=chosen.dtype)
        loss, grads = jax.value_and_grad(pretraining_loss)(params, config, task, chosen, junk)
        updates, state = optimizer.update(grads, state, params)
        return (optax.apply_updates(params, updates), state, key), loss

    (params, _, _), losses = jax.lax.scan(step, (params, optimizer.init(params), key), None, length=n_steps)
    return params, losses


def pretrain(params: Params, config: ModelConfig, task: ReversalTask, prompts: np.ndarray, key: jax.Array, *,
             n_steps: int = 1500, batch: int = 64, learning_rate: float = 3e-3) -> tuple[Params, np.ndarray]:
    """Fit the base model ``pi_0`` to the pre-training mixture on ``prompts`` (Adam, cosine decay); returns it and the loss curve."""
    check_instance("config", config, ModelConfig)
    check_instance("task", task, ReversalTask)
    check_count("n_steps", n_steps)
    check_count("batch", batch)
    check_positive("learning_rate", learning_rate)
    if batch > len(prompts):
        raise ValueError(f"batch must be at most the {len(prompts)} prompts, got {batch}")
    params, losses = _pretrain(params, config, task, jnp.asarray(prompts), key, n_steps, batch, learning_rate)
    return params, np.asarray(losses)


