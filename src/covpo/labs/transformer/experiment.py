"""The chapter's study in one call: pre-train a base model, post-train it every way, measure pass@k and coverage.

:func:`transformer_study` builds the base model by supervised pre-training on the mixture of
:mod:`covpo.labs.transformer.task`, runs every (method, reward, seed) of its size at once
(:func:`covpo.labs.transformer.training.train_runs`), and then draws ``n_samples`` answers per
held-out prompt from the base model and from every trained model to estimate pass@k
(:func:`covpo.labs.transformer.passk.pass_at_k`). Exact log-coverage of the correct answers of
the held-out prompts is recorded at every step of every run. All randomness comes from the
integer ``seed``; every run of a given seed shares its JAX key, so methods meet the same prompts'
draws at step 0.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from covpo.validation import check_instance, check_instances, check_option, check_seed

from .model import ModelConfig, Params, init_params, parameter_count
from .passk import default_ks, exact_pass_at_k, pass_at_k
from .sampling import sample_answers
from .task import REWARDS, ReversalTask, correct_answer, is_hard, split_prompts
from .training import Method, TrainingSetup, default_methods, held_out_log_probs, pretrain, stack_constants, train_runs

#: Sizes of the study, the book's (a few minutes on two CPU cores) and the full one (scripts/).
SIZES = {
    "book": {"n_steps": 80, "n_prompts": 8, "group_size": 8, "seeds": 3, "held_out": 64, "n_samples": 256,
             "pretrain_steps": 250, "pretrain_batch": 32, "binary_methods": 2},
    "full": {"n_steps": 200, "n_prompts": 16, "group_size": 8, "seeds": 8, "held_out": 64, "n_samples": 1024,
             "pretrain_steps": 1500, "pretrain_batch": 64, "binary_methods": 5},
}


@dataclass(frozen=True)
class TransformerStudy:
    """Everything the chapter draws and asserts (arrays over runs ``R``, steps ``T``, held-out prompts ``H``).

    ``methods`` are the method names; run ``r`` is method ``run_method[r]`` under reward
    ``REWARDS[run_reward[r]]`` with seed ``run_seed[r]``. ``log_coverage[r, t, h]`` is the exact
    ``log pi_t(y*|x_h)``; ``base_log_coverage[h]`` the base model's. ``correct[r, j]`` (and
    ``base_correct[j]``) count passing answers among ``n_samples`` drawn after training for the
    ``j``-th hard held-out prompt (sampling is spent where coverage can be lost).
    """

    size: str
    config: ModelConfig
    task: ReversalTask
    n_parameters: int
    responses_per_run: int
    n_steps: int
    methods: tuple[str, ...]
    run_method: np.ndarray
    run_reward: np.ndarray
    run_seed: np.ndarray
    hard: np.ndarray
    base_log_coverage: np.ndarray
    base_log_near: np.ndarray
    reward: np.ndarray
    pass1: np.ndarray
    kl: np.ndarray
    log_coverage: np.ndarray
    log_near: np.ndarray
    n_samples: int
    base_correct: np.ndarray
    correct: np.ndarray
    pretrain_losses: np.ndarray
    timings: dict

    @property
    def ks(self) -> np.ndarray:
        """The ``k`` of the pass@k curves: powers of two up to ``n_samples``."""
        return default_ks(self.n_samples)

    def runs(self, method: int, reward: str) -> np.ndarray:
        """Indices of the runs of one method and reward (one per seed)."""
        kind = REWARDS.index(check_option("reward", reward, REWARDS))
        return np.flatnonzero((self.run_method == method) & (self.run_reward == kind))

    def pass_curves(self) -> tuple[np.ndarray, np.ndarray]:
        """Estimated pass@k averaged over the hard held-out prompts: base ``[K]``, runs ``[R, K]``."""
        base = pass_at_k(self.n_samples, self.base_correct, self.ks).mean(0)
        return base, pass_at_k(self.n_samples, self.correct, self.ks).mean(1)

    def exact_pass_curves(self, prompts: str = "hard") -> tuple[np.ndarray, np.ndarray]:
        """pass@k from the exact final coverage, as :meth:`pass_curves`."""
        mask = self._mask(prompts)
        base = exact_pass_at_k(self.base_log_coverage[mask], self.ks).mean(0)
        return base, exact_pass_at_k(self.log_coverage[:, -1, mask], self.ks).mean(1)

    def log10_coverage(self, prompts: str = "hard") -> np.ndarray:
        """Median over held-out prompts of ``log10 pi_t(y*|x)``, ``[R, T]``."""
        return np.median(self.log_coverage[:, :, self._mask(prompts)], axis=2) / np.log(10)

    def _mask(self, prompts: str) -> np.ndarray:
        check_option("prompts", prompts, ("hard", "easy", "all"))
        return {"hard": self.hard, "easy": ~self.hard, "all": np.ones_like(self.hard)}[prompts]


@partial(jax.jit, static_argnames=("config", "task", "n"))
def _count_correct(base: Params, trained: Params, config: ModelConfig, task: ReversalTask, prompts: jax.Array, n: int,
                   key: jax.Array) -> jax.Array:
    """Passing answers among ``n`` drawn per prompt, for the base model and every trained model (leading run axis)."""
    answers = correct_answer(task, prompts)

    def one(params):
        drawn, _ = sample_answers(params, config, prompts, n, key)
        return (drawn == answers[:, None, :]).all(-1).sum(-1)
    return jax.lax.map(one, jax.tree_util.tree_map(lambda b, t: jnp.concatenate([b[None], t]), base, trained))


_base_log_probs = jax.jit(held_out_log_probs, static_argnames=("config", "task"))


def transformer_study(size: str = "book", *, seed: int = 0, config: ModelConfig | None = None,
                      task: ReversalTask | None = None, methods: tuple[Method, ...] | None = None) -> TransformerStudy:
    """Pre-train, post-train every method, and measure (see the module docstring).

    Parameters
    ----------
    size
        ``"book"`` or ``"full"`` (:data:`SIZES`). At book size the partial-credit reward gets
        every method and the binary reward the first ``binary_methods`` (the two GRPO runs).
    seed
        Seeds the prompt split, the base model and the post-training runs (seed ``s`` of a run is
        ``seed * 1000 + s``).
    config, task, methods
        Model shape, task and methods; the chapter's defaults when ``None``.
    """
    sizes = SIZES[check_option("size", size, tuple(SIZES))]
    seed = check_seed("seed", seed)
    task = ReversalTask() if task is None else check_instance("task", task, ReversalTask)
    config = ModelConfig(task.n_symbols, task.length) if config is None else check_instance("config", config, ModelConfig)
    if (config.n_symbols, config.length) != (task.n_symbols, task.length):
        raise ValueError("config must match task in n_symbols and length")
    methods = default_methods() if methods is None else check_instances("methods", methods, Method)
    timings: dict[str, float] = {}

    train, held = split_prompts(task, sizes["held_out"], np.random.default_rng(seed))
    start = time.perf_counter()
    base, losses = pretrain(init_params(config, jax.random.PRNGKey(seed)), config, task, train,
                            jax.random.PRNGKey(seed + 1), n_steps=sizes["pretrain_steps"], batch=sizes["pretrain_batch"])
    timings["pretrain_s"] = time.perf_counter() - start

    runs = [(m, kind, s) for kind, count in ((0, len(methods)), (1, sizes["binary_methods"]))
            for m in range(min(count, len(methods))) for s in range(sizes["seeds"])]
    setup = TrainingSetup(config, task, n_steps=sizes["n_steps"], n_prompts=sizes["n_prompts"],
                          group_size=sizes["group_size"], max_inner_steps=max(m.inner_steps for m in methods))
    arguments = (base, jnp.asarray(train), jnp.asarray(held), stack_constants([methods[m] for m, _, _ in runs]),
                 jnp.asarray([kind for _, kind, _ in runs], jnp.int32),
                 jnp.stack([jax.random.PRNGKey(seed * 1000 + s) for _, _, s in runs]))
    start = time.perf_counter()
    compiled = train_runs.lower(setup, *arguments).compile()
    timings["compile_s"] = time.perf_counter() - start
    start = time.perf_counter()
    final, record = jax.block_until_ready(compiled(*arguments))
    timings["train_s"] = time.perf_counter() - start
    timings["run_steps_per_s"] = len(runs) * setup.n_steps / timings["train_s"]
    timings["train_tokens_per_s"] = len(runs) * setup.responses * task.length / timings["train_s"]

    hard = np.asarray(is_hard(task, held))
    base_log_coverage, base_log_near = _base_log_probs(base, config, task, jnp.asarray(held))
    hard_prompts, sample_key = jnp.asarray(held[hard]), jax.random.PRNGKey(seed + 2)
    # compiled before the clock starts, as the training program is: the rate is the sampler's
    count_correct = _count_correct.lower(base, final, config, task, hard_prompts, sizes["n_samples"], sample_key).compile()
    start = time.perf_counter()
    counts = np.asarray(jax.block_until_ready(count_correct(base, final, hard_prompts, sample_key)))
    timings["sampling_s"] = time.perf_counter() - start
    timings["sample_tokens_per_s"] = counts.shape[0] * int(hard.sum()) * sizes["n_samples"] * task.length / timings["sampling_s"]

    return TransformerStudy(
        size=size, config=config, task=task, n_parameters=parameter_count(base),
        responses_per_run=setup.responses, n_steps=setup.n_steps, methods=tuple(m.name for m in methods),
        run_method=np.array([m for m, _, _ in runs]), run_reward=np.array([k for _, k, _ in runs]),
        run_seed=np.array([s for _, _, s in runs]), hard=hard,
        base_log_coverage=np.asarray(base_log_coverage, dtype=float), base_log_near=np.asarray(base_log_near, dtype=float),
        reward=np.asarray(record.reward, dtype=float), pass1=np.asarray(record.pass1, dtype=float),
        kl=np.asarray(record.kl, dtype=float), log_coverage=np.asarray(record.log_coverage, dtype=float),
        log_near=np.asarray(record.log_near, dtype=float), n_samples=sizes["n_samples"],
        base_correct=counts[0], correct=counts[1:], pretrain_losses=losses, timings=timings,
    )
