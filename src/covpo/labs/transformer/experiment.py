"""Chapter 7's study in one call: pre-train base models, post-train them with every arm, measure coverage and pass@k.

:func:`transformer_study` pre-trains one base model per (base seed, task family its cells use)
on the mixture of :mod:`covpo.labs.transformer.task`, runs every cell of the study (a task, an arm of
:mod:`covpo.labs.transformer.methods`, a group size and a reward) on every seed, and then draws
``n_samples`` answers per hard prompt from the models the pass@k figure shows, with the
key-value-cache sampler, to estimate pass@k next to its exact value.

**Pairing.** Seed ``s`` fixes a base model (seeds ``0..seeds_per_base-1`` share base model 0,
and so on), its held-out prompts, the run's training prompts and the run's JAX key, and every
arm of seed ``s`` gets all four unchanged: arms of one seed differ only in their method. The
decoupled task's base model is pre-trained from the same initial weights, split and key on its
own mixture, unless the task's mixture is shared (``ReversalTask(shared_mixture=True)``): then
one base model per seed serves the mixed and the decoupled task alike.

**Tasks.** ``"mixed"``: 8 easy and 8 hard training prompts, the easy rule being the hard
prompts' near miss; ``"hard-only"``: 16 hard training prompts (the mixed task's 8 and 8 more);
``"decoupled"``: the mixed task's prompts under the decoupled rules.

**Group size at a fixed response budget.** A cell's group size ``G`` (a multiple of the
slot size) puts ``G / slot_size`` slots on one prompt, so a step has ``n_slots * slot_size / G``
prompts, always the same number of answers and of optimizer steps.

Runs execute in chunks of equal size (one compiled program for all of them), with a progress
bar; every number comes from the integer ``seed``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.std import tqdm

from covpo.validation import (check_count, check_flag, check_instance, check_instances, check_option, check_positive,
                              check_positive_grid, check_seed, check_text)

from .methods import ARM_NAMES, BOOK_ARM_NAMES, LEARNING_RATE_GRID, WEAK_ARM, default_arms, fastest_stable_rate
from .model import ModelConfig, Params, init_params, parameter_count
from .passk import exact_pass_at_k, pass_at_k
from .sampling import sample_answers
from .task import REWARDS, ReversalTask, correct_answer, is_hard, near_miss, split_prompts
from .training import (Method, RunInputs, TrainingSetup, pretrain_models, pretraining_data, stack_constants,
                       train_runs)

TASKS = ("mixed", "hard-only", "decoupled")
"""The three tasks (module docstring)."""
PROGRESS_DELAY_SECONDS = 1.0


@dataclass(frozen=True)
class Cell:
    """One configuration of the study: a task, an arm, a group size and a reward, run on every seed.

    ``learning_rate`` replaces the arm's own (the learning-rate sweep); ``None`` keeps it.
    """

    task: str
    arm: str
    group_size: int = 8
    reward: str = "partial"
    learning_rate: float | None = None

    def __post_init__(self) -> None:
        check_option("task", self.task, TASKS)
        check_option("arm", self.arm, ARM_NAMES)
        check_option("reward", self.reward, REWARDS)
        check_count("group_size", self.group_size)
        if self.learning_rate is not None:
            check_positive("learning_rate", self.learning_rate)


def book_cells() -> tuple[Cell, ...]:
    """The book's cells: its arms (:data:`~covpo.labs.transformer.methods.BOOK_ARM_NAMES`) on the mixed task, groups of 8.

    The comparisons that need more seeds or longer runs than the book affords are read from the
    record of the frontier study (:mod:`covpo.labs.transformer.frontier`).
    """
    return tuple(Cell("mixed", arm) for arm in BOOK_ARM_NAMES)


def full_cells() -> tuple[Cell, ...]:
    """Every arm on every task under both rewards, groups of 8: the default cells of the full size.

    The frontier study (:mod:`covpo.labs.transformer.frontier`) chooses its own cells, group sizes
    and task families per block.
    """
    return tuple(Cell(task, arm, 8, reward) for reward in REWARDS for task in TASKS for arm in ARM_NAMES)


#: Sizes of the study, the book's (about half a minute on two idle CPU cores) and the full one (scripts/).
SIZES = {
    "book": {"base_models": 3, "seeds_per_base": 2, "n_steps": 24, "n_prompts": 16, "slot_size": 8, "inner_steps": 4,
             "held_out": 64, "pretrain_steps": 600, "pretrain_batch": 32, "n_samples": 256, "chunk": 6},
    "full": {"base_models": 3, "seeds_per_base": 6, "n_steps": 24, "n_prompts": 16, "slot_size": 8, "inner_steps": 4,
             "held_out": 64, "pretrain_steps": 600, "pretrain_batch": 32, "n_samples": 256, "chunk": 18},
}
#: The model every size trains, with one layer, four heads, width 32.
BOOK_CONFIG = ModelConfig(d_model=32, n_layers=1, n_heads=4)
PRETRAIN_LEARNING_RATE = 1e-2


@dataclass(frozen=True)
class TransformerStudy:
    """Everything the chapter draws and asserts (arrays over runs ``R``, steps ``T``, training prompts ``P``, held-out ``H``).

    Run ``r`` is cell ``cells[run_cell[r]]`` on seed ``run_seed[r]``. The exact series
    (``kl``, ``log_coverage``, ``log_near``, ``held_log_coverage``, ``held_log_near``) have
    ``T + 1`` rows: row 0 is the base model, the last row the model the run returns, the model
    whose pass@k is reported. ``accuracy``, ``prompt_accuracy`` and ``target_log_coverage``
    have ``T`` rows (:class:`~covpo.labs.transformer.training.RunRecord`). ``train_hard[r]`` and
    ``held_hard[r]`` mark the run's hard prompts. ``sampled_runs`` lists the runs whose final models were sampled (with one base model
    per seed first, run index ``-1 - seed``); ``sampled_correct[i, q]`` counts passing answers
    among ``n_samples`` to the ``q``-th hard prompt of ``sampled_prompts_of[i]`` (held-out prompts
    first, then training prompts; ``sampled_valid`` marks the real ones).
    """

    size: str
    config: ModelConfig
    setup: TrainingSetup
    n_parameters: int
    methods: dict
    cells: tuple[Cell, ...]
    run_cell: np.ndarray
    run_seed: np.ndarray
    train_hard: np.ndarray
    held_hard: np.ndarray
    near_reward: np.ndarray
    reward: np.ndarray
    pass1: np.ndarray
    kl: np.ndarray
    accuracy: np.ndarray
    log_coverage: np.ndarray
    log_near: np.ndarray
    held_log_coverage: np.ndarray
    held_log_near: np.ndarray
    prompt_accuracy: np.ndarray
    target_log_coverage: np.ndarray
    n_samples: int
    sampled_runs: np.ndarray
    sampled_correct: np.ndarray
    sampled_held: np.ndarray
    sampled_valid: np.ndarray
    pretrain_losses: np.ndarray
    timings: dict

    @property
    def seeds(self) -> np.ndarray:
        """The seeds, ``0..n-1``."""
        return np.unique(self.run_seed)

    def runs(self, task: str = "mixed", arm: str = WEAK_ARM, group_size: int = 8,
             reward: str = "partial", learning_rate: float | None = None) -> np.ndarray:
        """Indices of the runs of one cell, one per seed in seed order (empty if the cell was not run)."""
        cell = Cell(task, arm, group_size, reward, learning_rate)
        if cell not in self.cells:
            return np.zeros(0, dtype=int)
        chosen = np.flatnonzero(self.run_cell == self.cells.index(cell))
        return chosen[np.argsort(self.run_seed[chosen])]

    def has(self, task: str, arm: str, group_size: int = 8, reward: str = "partial") -> bool:
        """Whether the cell was run at this size."""
        return Cell(task, arm, group_size, reward) in self.cells

    def _mask(self, prompts: str) -> tuple[np.ndarray, np.ndarray]:
        check_option("prompts", prompts, ("held-out", "training"))
        return (self.held_log_coverage, self.held_hard) if prompts == "held-out" else (self.log_coverage, self.train_hard)

    def exact_pass_at(self, k: int, prompts: str = "held-out", step: int = -1) -> np.ndarray:
        """Exact pass@k, ``1 - (1 - p)^k`` averaged over each run's hard ``prompts`` at ``step`` (default: the final model), ``[R]``."""
        coverage, hard = self._mask(prompts)
        values = exact_pass_at_k(np.minimum(coverage[:, step], 0.0), [k])[..., 0]
        return np.array([row[mask].mean() for row, mask in zip(values, hard)])

    def exact_pass_curve(self, runs: np.ndarray, ks: np.ndarray, prompts: str = "held-out",
                         step: int = -1) -> np.ndarray:
        """Exact pass@k for every ``k`` in ``ks`` averaged over each of ``runs``' hard prompts, ``[len(runs), len(ks)]``."""
        coverage, hard = self._mask(prompts)
        values = exact_pass_at_k(np.minimum(coverage[runs, step], 0.0), ks)
        return np.stack([row[mask].mean(0) for row, mask in zip(values, hard[runs])])

    def step_distance(self) -> np.ndarray:
        """``mean_x KL(pi_t || pi*_{t+1})`` over the training prompts, ``pi*_{t+1} = pi_t exp(r / beta) / Z``, per run and step ``[R, T]``.

        The distance each outer step's inner loop starts from (``beta`` the run's, 1 where it is
        0, as for ``accuracy``); exact, from the probabilities of the two rewarded answers:
        ``KL = log Z - E_{pi_t} r / beta`` with ``Z = 1 + p (e^{1/beta} - 1) + q (e^{r~/beta} - 1)``.
        """
        beta = np.array([self.methods[self.cells[c].arm].beta or 1.0 for c in self.run_cell])[:, None, None]
        p, q = np.exp(self.log_coverage[:, :-1]), np.exp(self.log_near[:, :-1])
        near = self.near_reward[:, None, None]
        log_z = np.log1p(p * np.expm1(1 / beta) + q * np.expm1(near / beta))
        return (log_z - (p + near * q) / beta).mean(-1)

    def distance_closed(self) -> np.ndarray:
        """The fraction of :meth:`step_distance` each outer step's inner loop closed, ``1 - accuracy / distance``, ``[R, T]``.

        One where the iterate reached the mirror-descent target, zero where it did not move
        nearer (the premise of the paper's APMD guarantee, section 3, is a fraction near one).
        """
        return 1 - self.accuracy / self.step_distance()

    def hard_lost(self, prompts: str = "held-out", step: int = -1) -> np.ndarray:
        """Hard prompts whose exact coverage ended more than a decade below the base model's, per run ``[R]``."""
        coverage, hard = self._mask(prompts)
        return ((coverage[:, step] < coverage[:, 0] - np.log(10)) & hard).sum(1)

    def sampled_pass_curve(self, ks: np.ndarray, prompts: str = "held-out") -> np.ndarray:
        """The unbiased pass@k estimate for every ``k`` in ``ks`` per sampled model, ``[len(sampled_runs), len(ks)]``."""
        check_option("prompts", prompts, ("held-out", "training"))
        estimates = pass_at_k(self.n_samples, self.sampled_correct, ks)
        mask = self.sampled_valid & (self.sampled_held == (prompts == "held-out"))
        return np.stack([row[m].mean(0) for row, m in zip(estimates, mask)])

    def log10_coverage(self, runs: np.ndarray, prompts: str = "held-out", hard: bool = True) -> np.ndarray:
        """Median over each run's hard (or easy) ``prompts`` of ``log10 pi_t(y*|x)``, ``[len(runs), T + 1]``."""
        coverage, hard_mask = self._mask(prompts)
        return np.stack([np.median(coverage[r][:, hard_mask[r] == hard], axis=1) for r in runs]) / np.log(10)


def _base_models(config: ModelConfig, task: ReversalTask, sizes: dict, seed: int,
                 decoupled: bool) -> tuple[Params, list, np.ndarray]:
    """Pre-train every base model (``task``, and its decoupled version if ``decoupled``, for every base seed) in one call.

    The decoupled models follow the mixed ones, each from the same initial weights, split and key
    as the mixed model of its base seed; the mixed models are the same either way.
    """
    families = (task, replace(task, decoupled=True)) if decoupled else (task,)
    splits = [split_prompts(task, sizes["held_out"], np.random.default_rng((seed, b)))
              for b in range(sizes["base_models"])]
    inits = [init_params(config, jax.random.fold_in(jax.random.PRNGKey(seed), b)) for b in range(sizes["base_models"])]
    data = [pretraining_data(family, split[0]) for family in families for split in splits]
    keys = jnp.stack([jax.random.fold_in(jax.random.PRNGKey(seed + 1), b) for _ in families
                      for b in range(sizes["base_models"])])
    models, losses = pretrain_models(_stack(*(inits * len(families))), config, _stack(*data), keys,
                                     n_steps=sizes["pretrain_steps"], batch=sizes["pretrain_batch"],
                                     learning_rate=PRETRAIN_LEARNING_RATE)
    return models, splits, losses


def _training_prompts(task: ReversalTask, train: np.ndarray, rng: np.random.Generator, n_prompts: int) -> dict:
    """A seed's training prompts: half easy and half hard for the mixed and decoupled tasks, all hard for hard-only."""
    hard = np.asarray(is_hard(task, train))
    easy_pool, hard_pool = train[~hard], train[hard]
    hard_chosen = hard_pool[rng.choice(len(hard_pool), n_prompts, replace=False)]
    mixed = np.concatenate([easy_pool[rng.choice(len(easy_pool), n_prompts // 2, replace=False)],
                            hard_chosen[:n_prompts // 2]])
    return {"mixed": mixed, "decoupled": mixed, "hard-only": hard_chosen}


@dataclass(frozen=True)
class StudyPlan:
    """Everything the runs of a study are made from: base models, prompt splits, training prompts and keys per seed.

    :meth:`inputs` builds one run: seed ``s`` gives every cell the same base model of its task
    family, held-out prompts, training prompts (of its task) and JAX key. ``models`` holds the
    base models as numpy arrays (leading model axis), so that picking one costs no compiled
    indexing program.
    """

    sizes: dict
    setup: TrainingSetup
    cells: tuple[Cell, ...]
    methods: dict
    families: dict
    models: Params
    splits: list
    training_prompts: list
    keys: list
    pretrain_losses: np.ndarray

    @property
    def n_seeds(self) -> int:
        return self.sizes["base_models"] * self.sizes["seeds_per_base"]

    def base_index(self, seed: int, task: str) -> int:
        """Which pre-trained model is seed ``seed``'s base model on ``task`` (the same for every task on a shared mixture)."""
        own_model = task == "decoupled" and not self.families[task].shared_mixture
        return seed // self.sizes["seeds_per_base"] + (self.sizes["base_models"] if own_model else 0)

    def held_out(self, seed: int) -> np.ndarray:
        """Seed ``seed``'s held-out prompts (its base model's)."""
        return self.splits[seed // self.sizes["seeds_per_base"]][1]

    def inputs(self, cell_index: int, seed: int) -> tuple[RunInputs, Method]:
        """The run of cell ``cells[cell_index]`` on seed ``seed`` (host arrays: the study stacks its runs on the host), and its method."""
        cell = self.cells[cell_index]
        task = self.families[cell.task]
        train = self.training_prompts[seed][cell.task]
        held = self.held_out(seed)
        groups = np.arange(self.setup.n_slots) // (cell.group_size // self.setup.slot_size)
        method = self.methods[cell.arm]
        if cell.learning_rate is not None:
            method = replace(method, learning_rate=cell.learning_rate)
        run = RunInputs(
            base=jax.tree_util.tree_map(lambda leaf: leaf[self.base_index(seed, cell.task)], self.models),
            prompts=train, correct=correct_answer(task, train), near=near_miss(task, train), held_out=held,
            held_correct=correct_answer(task, held), held_near=near_miss(task, held),
            near_reward=np.float32(1.0 - task.gap if cell.reward == "partial" else 0.0),
            slot_groups=groups.astype(np.int32), key=self.keys[seed])
        return run, method


def _check_sizes(sizes: dict | None) -> dict:
    """``sizes`` (entries replacing those of :data:`SIZES`, each a count) as a dict, or raise naming ``sizes``."""
    if sizes is None:
        return {}
    if not isinstance(sizes, Mapping):
        raise ValueError(f"sizes must be a mapping of entries of SIZES to counts, got {sizes!r}")
    unknown = sorted(str(name) for name in sizes if name not in SIZES["book"])
    if unknown:
        raise ValueError(f"sizes must name entries of SIZES ({tuple(SIZES['book'])}), got {unknown}")
    return {name: check_count(f"sizes[{name!r}]", value) for name, value in sizes.items()}


def _check_cells(cells: tuple[Cell, ...] | None, size: str) -> tuple[Cell, ...]:
    """``cells`` as a non-empty tuple of :class:`Cell` (by default those of ``size``), or raise naming ``cells``."""
    if cells is None:
        return book_cells() if size == "book" else full_cells()
    return check_instances("cells", cells, Cell)


def _check_methods(methods: dict | None) -> dict | None:
    """``methods`` as a dict from arm names to :class:`Method` (``None``: the default arms), or raise naming it."""
    if methods is None:
        return None
    if not isinstance(methods, Mapping) or not methods:
        raise ValueError(f"methods must be a non-empty mapping of arm names to Method, got {methods!r}")
    for name, method in methods.items():
        check_text("methods", name)
        check_instance(f"methods[{name!r}]", method, Method)
    return dict(methods)


def plan_study(size: str = "book", *, seed: int = 0, cells: tuple[Cell, ...] | None = None,
               methods: dict | None = None, config: ModelConfig | None = None, task: ReversalTask | None = None,
               sizes: dict | None = None) -> StudyPlan:
    """Pre-train the base models of a study and fix every run's inputs (:func:`transformer_study`'s arguments).

    ``config``, ``task`` and ``sizes`` (entries replacing those of :data:`SIZES`) default to the
    chapter's; the tests pass smaller ones.
    """
    sizes = {**SIZES[check_option("size", size, tuple(SIZES))], **_check_sizes(sizes)}
    seed = check_seed("seed", seed)
    cells = _check_cells(cells, size)
    methods = _check_methods(methods)
    task = ReversalTask() if task is None else check_instance("task", task, ReversalTask)
    config = BOOK_CONFIG if config is None else check_instance("config", config, ModelConfig)
    if (config.n_symbols, config.length) != (task.n_symbols, task.length):
        raise ValueError("config must match task in n_symbols and length")
    setup = TrainingSetup(config, n_steps=sizes["n_steps"], n_slots=sizes["n_prompts"], slot_size=sizes["slot_size"],
                          inner_steps=sizes["inner_steps"])
    methods = methods if methods is not None else {m.name: m for m in default_arms(setup.gradient_steps)}
    missing = sorted({cell.arm for cell in cells} - set(methods))
    if missing:
        raise ValueError(f"methods must define every arm of cells, missing {missing}")
    for cell in cells:
        if cell.group_size % setup.slot_size or setup.n_slots * setup.slot_size % cell.group_size:
            raise ValueError(f"group_size must divide {setup.n_slots * setup.slot_size} in multiples of "
                             f"{setup.slot_size}, got {cell.group_size}")
    families = {"mixed": task, "hard-only": task, "decoupled": replace(task, decoupled=True)}
    decoupled_models = not task.shared_mixture and any(cell.task == "decoupled" for cell in cells)
    models, splits, losses = _base_models(config, task, sizes, seed, decoupled_models)
    n_seeds = sizes["base_models"] * sizes["seeds_per_base"]
    prompts = [_training_prompts(task, splits[s // sizes["seeds_per_base"]][0], np.random.default_rng((seed, s)),
                                 sizes["n_prompts"]) for s in range(n_seeds)]
    keys = [jax.random.fold_in(jax.random.PRNGKey(seed + 2), s) for s in range(n_seeds)]
    return StudyPlan(sizes, setup, cells, methods, families, jax.device_get(models), splits, prompts, keys, losses)


def _stack(*trees: object) -> object:
    """Stack same-shaped pytrees leaf by leaf along a new leading axis, on the host.

    Stacking with ``jnp.stack`` outside ``jit`` compiles a program per leaf shape; copying
    numpy arrays gives the same values without one.
    """
    return jax.tree_util.tree_map(lambda *leaves: np.stack(leaves), *trees)


def _chunks(count: int, size: int) -> list[np.ndarray]:
    """``range(count)`` in chunks of exactly ``size`` indices, the last one padded with its own last index."""
    return [np.minimum(np.arange(start, start + size), count - 1) for start in range(0, count, size)]


@partial(jax.jit, static_argnames=("config", "n"))
def _count_correct(models: Params, config: ModelConfig, prompts: jax.Array, answers: jax.Array, n: int,
                   keys: jax.Array) -> jax.Array:
    """Passing answers among ``n`` drawn per prompt (leading model axis on ``models``, ``prompts [M, Q, L]``, ``answers``, ``keys``)."""

    def one(params, prompts, answers, key):
        drawn, _ = sample_answers(params, config, prompts, n, key)
        return (drawn == answers[:, None, :]).all(-1).sum(-1)

    return jax.lax.map(lambda args: one(*args), (models, prompts, answers, keys))


def transformer_study(size: str = "book", *, seed: int = 0, cells: tuple[Cell, ...] | None = None,
                      methods: dict | None = None, progress: bool = True, plan: StudyPlan | None = None
                      ) -> TransformerStudy:
    """Pre-train, post-train every cell on every seed, and measure (see the module docstring).

    Parameters
    ----------
    size
        ``"book"`` or ``"full"`` (:data:`SIZES`).
    seed
        Seeds the base models, the prompts and every run.
    cells
        The cells to run; :func:`book_cells` or :func:`full_cells` by default.
    methods
        Arm name to :class:`~covpo.labs.transformer.training.Method`; by default
        :func:`~covpo.labs.transformer.methods.default_arms` (the fixed learning rates).
    progress
        Show a progress bar (text, on stderr) over the chunks of runs.
    plan
        A :func:`plan_study` to run instead of planning from ``size``, ``seed``, ``cells`` and ``methods``.
    """
    check_option("size", size, tuple(SIZES))
    seed = check_seed("seed", seed)
    cells = _check_cells(cells, size)
    methods = _check_methods(methods)
    progress = check_flag("progress", progress)
    if plan is not None:
        check_instance("plan", plan, StudyPlan)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    plan = plan or plan_study(size, seed=seed, cells=cells, methods=methods)
    timings["pretrain_s"] = time.perf_counter() - start
    sizes, setup, cells, methods, families = plan.sizes, plan.setup, plan.cells, plan.methods, plan.families
    config, models, n_seeds = setup.config, plan.models, plan.n_seeds
    runs = [(c, s) for c in range(len(cells)) for s in range(n_seeds)]
    inputs = plan.inputs

    order = sorted(range(len(runs)), key=lambda r: methods[cells[runs[r][0]].arm].exact)
    exact_count = sum(methods[cells[c].arm].exact for c, _ in runs)
    groups = [(False, order[:len(runs) - exact_count]), (True, order[len(runs) - exact_count:])]
    chunk_size = sizes["chunk"]
    batches = [(exact, [members[i] for i in chunk]) for exact, members in groups if members
               for chunk in _chunks(len(members), chunk_size)]
    results: dict[int, tuple] = {}
    compiled = None
    timings["compile_s"] = timings["train_s"] = 0.0
    bar = tqdm(total=len(runs), desc="post-training runs", file=sys.stderr, disable=not progress,
               delay=PROGRESS_DELAY_SECONDS)
    with bar:
        for exact, members in batches:
            prepared = [inputs(*runs[r]) for r in members]
            arguments = (jnp.asarray(exact), stack_constants([m for _, m in prepared]), _stack(*[i for i, _ in prepared]))
            if compiled is None:
                start = time.perf_counter()
                compiled = train_runs.lower(setup, *arguments).compile()
                timings["compile_s"] = time.perf_counter() - start
            start = time.perf_counter()
            trained = jax.block_until_ready(compiled(*arguments))
            timings["train_s"] += time.perf_counter() - start
            final, record = jax.device_get(trained)
            for i, r in enumerate(members):
                results[r] = jax.tree_util.tree_map(lambda leaf: leaf[i], (final, record))
            bar.update(len(set(members)))
    timings["run_steps_per_s"] = len(runs) * setup.n_steps / timings["train_s"]
    records = [results[r][1] for r in range(len(runs))]
    series = {name: np.stack([getattr(rec, name) for rec in records]).astype(float) for name in records[0]._fields}

    def hard_mask(task: str, prompts: np.ndarray) -> np.ndarray:
        return np.asarray(is_hard(families[task], prompts))

    train_hard = np.stack([hard_mask(cells[c].task, plan.training_prompts[s][cells[c].task]) for c, s in runs])
    held_hard = np.stack([hard_mask("mixed", plan.held_out(s)) for _, s in runs])

    # pass@k from samples: one base model per seed, then every mixed-task run at group size 8 (the pass@k figure)
    sampled = [-1 - s for s in range(n_seeds)] + [r for r, (c, _) in enumerate(runs)
                                                   if cells[c].task == "mixed" and cells[c].group_size == 8
                                                   and cells[c].reward == "partial"]
    n_held = max(int(hard_mask("mixed", split[1]).sum()) for split in plan.splits)
    n_train = sizes["n_prompts"] // 2
    prompt_rows, answer_rows, held_rows, valid_rows, params_rows = [], [], [], [], []
    for r in sampled:
        s = -1 - r if r < 0 else runs[r][1]
        held = plan.held_out(s)
        held = held[hard_mask("mixed", held)]
        train = plan.training_prompts[s]["mixed"]
        train = train[hard_mask("mixed", train)]
        chosen = np.concatenate([held[np.minimum(np.arange(n_held), len(held) - 1)], train[:n_train]])
        prompt_rows.append(chosen)
        answer_rows.append(np.asarray(correct_answer(families["mixed"], chosen)))
        held_rows.append(np.arange(n_held + n_train) < n_held)
        valid_rows.append(np.concatenate([np.arange(n_held) < len(held), np.ones(n_train, bool)]))
        params_rows.append(jax.tree_util.tree_map(lambda leaf: leaf[plan.base_index(s, "mixed")], models) if r < 0
                           else results[r][0])
    sample_keys = jnp.stack([jax.random.fold_in(plan.keys[0], 1_000_000 + i) for i in range(len(sampled))])
    sample_arguments = (_stack(*params_rows), config, jnp.asarray(np.stack(prompt_rows), jnp.int32),
                        jnp.asarray(np.stack(answer_rows), jnp.int32), sizes["n_samples"], sample_keys)
    # compiled before the clock starts, as the training program is: the rate is the sampler's
    count_correct = _count_correct.lower(*sample_arguments).compile()
    start = time.perf_counter()
    counts = np.asarray(jax.block_until_ready(count_correct(*(a for i, a in enumerate(sample_arguments)
                                                              if i not in (1, 4)))))
    timings["sampling_s"] = time.perf_counter() - start
    timings["sample_tokens_per_s"] = counts.size * sizes["n_samples"] * config.length / timings["sampling_s"]

    return TransformerStudy(
        size=size, config=config, setup=setup, n_parameters=parameter_count(results[0][0]), methods=methods,
        cells=cells, run_cell=np.array([c for c, _ in runs]), run_seed=np.array([s for _, s in runs]),
        train_hard=train_hard, held_hard=held_hard,
        near_reward=np.array([1.0 - families[cells[c].task].gap if cells[c].reward == "partial" else 0.0
                              for c, _ in runs]),
        reward=series["reward"], pass1=series["pass1"], kl=series["kl"],
        accuracy=series["accuracy"], log_coverage=series["log_coverage"], log_near=series["log_near"],
        held_log_coverage=series["held_log_coverage"], held_log_near=series["held_log_near"],
        prompt_accuracy=series["prompt_accuracy"], target_log_coverage=series["target_log_coverage"],
        n_samples=sizes["n_samples"], sampled_runs=np.array(sampled), sampled_correct=counts,
        sampled_held=np.stack(held_rows), sampled_valid=np.stack(valid_rows), pretrain_losses=plan.pretrain_losses, timings=timings,
    )


@dataclass(frozen=True)
class LearningRateSweep:
    """The learning-rate protocol's measurements: for every arm, each rate's speed and stability, and the chosen rate."""

    rates: tuple[float, ...]
    speed: dict
    stable: dict
    chosen: dict


def learning_rate_sweep(size: str = "full", *, seed: int = 0, rates: tuple[float, ...] = LEARNING_RATE_GRID,
                        arms: tuple[str, ...] = ARM_NAMES, progress: bool = True) -> LearningRateSweep:
    """Every arm at every rate of ``rates`` on the mixed task (partial credit, groups of 8), on the seeds of ``size``.

    Each arm's rate is :func:`~covpo.labs.transformer.methods.fastest_stable_rate` of its batch
    rewards: the protocol that fixed :data:`~covpo.labs.transformer.methods.LEARNING_RATES`.
    """
    check_option("size", size, tuple(SIZES))
    seed = check_seed("seed", seed)
    rates = tuple(check_positive_grid("rates", rates).tolist())
    if isinstance(arms, str) or not isinstance(arms, (tuple, list)) or not arms:
        raise ValueError(f"arms must be a non-empty sequence of {ARM_NAMES}, got {arms!r}")
    arms = tuple(check_option("arms", arm, ARM_NAMES) for arm in arms)
    progress = check_flag("progress", progress)
    cells = tuple(Cell("mixed", arm, 8, "partial", rate) for arm in arms for rate in rates)
    study = transformer_study(size, seed=seed, cells=cells, progress=progress)
    speed, stable, chosen = {}, {}, {}
    for arm in arms:
        rewards = np.stack([study.reward[study.runs("mixed", arm, 8, "partial", rate)] for rate in rates])
        chosen[arm], speed[arm], stable[arm] = fastest_stable_rate(rates, rewards)
    return LearningRateSweep(rates, speed, stable, chosen)
