"""The verifiable task: reverse a string, with a base model whose coverage we dial.

A prompt ``x`` is a string of ``L`` symbols from an alphabet of ``n_symbols``. Write
``rev_s(x)`` for ``x`` reversed with its last symbol moved up by ``s`` (mod ``n_symbols``), so
``rev_0`` is plain reversal. Prompts whose first symbol is in the lower half of the alphabet are
**easy**: the correct answer ``y*(x)`` is ``rev_0(x)`` and the **near miss** ``y~(x)`` is
``rev_1(x)``. The others are **hard**. In the **mixed** task (the default) the two conventions are
swapped on hard prompts, ``y* = rev_1(x)`` and ``y~ = rev_0(x)``, so what post-training teaches on
easy prompts is, through shared parameters, the near miss of the hard ones. In the **decoupled**
task (``decoupled=True``) hard prompts use rules of their own, ``y* = rev_2(x)`` and
``y~ = rev_3(x)``: no rule of the easy prompts is a good answer to a hard one. The checker compares
strings. Two rewards (paper section 2; the collapse construction of section 2.1 needs a distractor
whose reward is close to the optimum's):

- ``"partial"``: 1 for ``y*``, ``1 - gap`` for ``y~``, 0 otherwise;
- ``"binary"``: 1 for ``y*``, 0 otherwise (pass/fail, what practitioners verify).

The base model is pre-trained on a mixture that we choose, per prompt: the correct answer with
probability ``p_correct``, the near miss with ``p_near``, and a uniformly random string (junk)
with the rest; hard prompts get a small ``p_correct``. With ``shared_mixture=True`` one mixture
serves the mixed and the decoupled task at once, so both run on the same base models: hard
prompts carry both tasks' correct answers (``rev_1`` and ``rev_2``, each with ``hard_correct``)
and both near misses (``rev_0`` and ``rev_3``, each with half of ``hard_near``), and the two tasks
differ only in what the reward pays for. All constants are ours, not the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np

from covpo.validation import (check_count, check_flag, check_generator, check_index_array, check_instance,
                              check_nonnegative, check_option, check_probability)

REWARDS = ("partial", "binary")
"""The two rewards, partial credit (a near miss earns ``1 - gap``) and binary pass/fail."""


@dataclass(frozen=True)
class ReversalTask:
    """Alphabet, length, reward gap and the pre-training mixture (our constants).

    Parameters
    ----------
    n_symbols, length
        Alphabet size and string length ``L``.
    gap
        Reward gap of the near miss under the partial-credit reward.
    easy_correct, easy_near, hard_correct, hard_near
        Mixture weights of the correct answer and of the near miss for easy and hard prompts;
        junk takes the rest.
    decoupled
        Hard prompts' answers follow rules of their own (``rev_2``, ``rev_3``) instead of the
        easy prompts' rules swapped (module docstring).
    shared_mixture
        Pre-train on the mixture that serves the mixed and the decoupled task alike (module
        docstring); the rewards are those of ``decoupled``.
    """

    n_symbols: int = 8
    length: int = 3
    gap: float = 0.1
    easy_correct: float = 0.2
    easy_near: float = 0.6
    hard_correct: float = 0.02
    hard_near: float = 0.78
    decoupled: bool = False
    shared_mixture: bool = False

    def __post_init__(self) -> None:
        check_count("n_symbols", self.n_symbols, 2)
        check_count("length", self.length, 1)
        check_probability("gap", self.gap)
        check_flag("decoupled", self.decoupled)
        check_flag("shared_mixture", self.shared_mixture)
        if (self.decoupled or self.shared_mixture) and self.n_symbols < 4:
            raise ValueError(f"n_symbols must be at least 4 for the decoupled task or the shared mixture, "
                             f"got {self.n_symbols}")
        for name in ("easy_correct", "easy_near", "hard_correct", "hard_near"):
            check_nonnegative(name, getattr(self, name))
        for kind in ("easy", "hard"):
            if getattr(self, f"{kind}_correct") + getattr(self, f"{kind}_near") > 1:
                raise ValueError(f"{kind}_correct + {kind}_near must be at most 1")
        if self.shared_mixture and 2 * self.hard_correct + self.hard_near > 1:
            raise ValueError("2 * hard_correct + hard_near must be at most 1 for the shared mixture")

    @property
    def n_prompts(self) -> int:
        return self.n_symbols ** self.length

    @property
    def n_answers(self) -> int:
        """Possible answers to each prompt, ``n_symbols ** length``."""
        return self.n_symbols ** self.length

    @property
    def shifts(self) -> tuple[int, int, int, int]:
        """The shifts ``s`` of ``rev_s`` of the easy correct answer, easy near miss, hard correct answer and hard near miss."""
        return (0, 1, 2, 3) if self.decoupled else (0, 1, 1, 0)


def _xp(array):
    """``jax.numpy`` for JAX arrays (traced or not), ``numpy`` otherwise."""
    return jnp if isinstance(array, jax.Array) else np


def _check_symbols(name: str, strings: object, n_symbols: int, length: int | None = None) -> object:
    """``strings`` (last axis: the ``L`` symbols of each string) after checking it on the host, or raise naming ``name``.

    Every symbol must be an integer in ``[0, n_symbols)`` and the array must have a last axis
    (of ``length`` symbols where given). A traced array inside compiled JAX code (a
    ``jax.core.Tracer``) has no values to check and is returned as it is; a concrete JAX array is
    checked and returned unchanged, anything else comes back as an int64 numpy array.
    """
    if isinstance(strings, jax.core.Tracer):
        return strings
    checked = check_index_array(name, strings, n_symbols)
    if checked.ndim == 0 or (length is not None and checked.shape[-1] != length):
        expected = "L" if length is None else str(length)
        raise ValueError(f"{name} must have a last axis of {expected} symbols, got shape {checked.shape}")
    return strings if isinstance(strings, jax.Array) else checked


def all_prompts(task: ReversalTask) -> np.ndarray:
    """Every prompt, in lexicographic order (shape ``[n_symbols**L, L]``)."""
    check_instance("task", task, ReversalTask)
    digits = np.arange(task.n_prompts)[:, None] // task.n_symbols ** np.arange(task.length - 1, -1, -1)
    return (digits % task.n_symbols).astype(np.int32)


def check_prompts(task: ReversalTask, prompts: object) -> np.ndarray:
    """``prompts`` as a non-empty host array of ``task``'s prompts ``[N, L]`` (symbols in ``[0, n_symbols)``), or raise.

    For the entry points that take prompts from the caller; the compiled loops' traced prompts are
    never checked.
    """
    check_instance("task", task, ReversalTask)
    checked = check_index_array("prompts", prompts, task.n_symbols)
    if checked.ndim != 2 or checked.shape[0] == 0 or checked.shape[1] != task.length:
        raise ValueError(f"prompts must have shape [N >= 1, {task.length}], got shape {checked.shape}")
    return checked


def split_prompts(task: ReversalTask, held_out: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random split into training prompts and ``held_out`` prompts never seen in pre-training or RL."""
    check_instance("task", task, ReversalTask)
    check_count("held_out", held_out)
    check_generator("rng", rng)
    if held_out >= task.n_prompts:
        raise ValueError(f"held_out must be below the {task.n_prompts} prompts, got {held_out}")
    order = rng.permutation(task.n_prompts)
    prompts = all_prompts(task)
    return prompts[np.sort(order[held_out:])], prompts[np.sort(order[:held_out])]


def _shifted_reverse(task: ReversalTask, prompts, shift):
    """``rev_s(x)``: ``x`` reversed, its last symbol moved up by ``shift`` (per prompt)."""
    answer = prompts[..., ::-1]
    last = (answer[..., -1:] + shift[..., None]) % task.n_symbols
    return _xp(prompts).concatenate([answer[..., :-1], last.astype(answer.dtype)], axis=-1)


def _rule(task: ReversalTask, prompts, easy_shift: int, hard_shift: int):
    hard = is_hard(task, prompts).astype(prompts.dtype)
    return _shifted_reverse(task, prompts, easy_shift + (hard_shift - easy_shift) * hard)


def correct_answer(task: ReversalTask, prompts):
    """``y*(x)``: ``rev_0(x)`` on easy prompts; ``rev_1(x)`` on hard ones (``rev_2`` in the decoupled task)."""
    check_instance("task", task, ReversalTask)
    easy, _, hard, _ = task.shifts
    return _rule(task, prompts, easy, hard)


def near_miss(task: ReversalTask, prompts):
    """``y~(x)``: ``rev_1(x)`` on easy prompts; ``rev_0(x)`` on hard ones (``rev_3`` in the decoupled task)."""
    check_instance("task", task, ReversalTask)
    _, easy, _, hard = task.shifts
    return _rule(task, prompts, easy, hard)


def answer_index(answers, n_symbols: int):
    """The position of each answer (last axis, ``L`` symbols) in the lexicographic list of all ``n_symbols**L`` answers.

    Concrete ``answers`` (numpy, lists, JAX arrays on the host) must hold integer symbols in
    ``[0, n_symbols)`` and have a last axis, else a ``ValueError`` names ``answers``: an
    out-of-range or fractional symbol would otherwise land on another answer's position. Traced
    arrays inside the compiled training loop are not checked (their symbols come from the task's
    own rules, :func:`correct_answer` and :func:`near_miss`).
    """
    check_count("n_symbols", n_symbols, 2)
    answers = _check_symbols("answers", answers, n_symbols)
    weights = n_symbols ** _xp(answers).arange(answers.shape[-1] - 1, -1, -1)
    return (answers * weights).sum(-1)


def is_hard(task: ReversalTask, prompts):
    """Whether each prompt is hard (first symbol in the upper half of the alphabet)."""
    check_instance("task", task, ReversalTask)
    return prompts[..., 0] >= task.n_symbols // 2


def mixture_weights(task: ReversalTask, prompts) -> tuple:
    """Per-prompt pre-training weights of the task's correct answer and of its near miss (:func:`mixture` has them all)."""
    check_instance("task", task, ReversalTask)
    hard = is_hard(task, prompts)
    xp = _xp(prompts)
    hard_near = task.hard_near / 2 if task.shared_mixture else task.hard_near
    return (xp.where(hard, task.hard_correct, task.easy_correct), xp.where(hard, hard_near, task.easy_near))


def mixture(task: ReversalTask, prompts) -> tuple:
    """Every answer of the pre-training mixture other than junk, with its weight, per prompt of ``prompts [N, L]``.

    Returns ``answers [N, A, L]`` and ``weights [N, A]``: the task's correct answer and near miss
    (``A = 2``) or, for the shared mixture, the mixed task's and the decoupled task's correct
    answers and near misses (``A = 4``; on easy prompts the two tasks agree, and the decoupled
    columns carry weight 0). Junk takes ``1 - weights.sum(-1)``. The answers differ only in their
    last symbol.
    """
    check_instance("task", task, ReversalTask)
    prompts = _check_symbols("prompts", prompts, task.n_symbols, task.length)
    xp = _xp(prompts)
    if not task.shared_mixture:
        p_correct, p_near = mixture_weights(task, prompts)
        return (xp.stack([correct_answer(task, prompts), near_miss(task, prompts)], axis=-2),
                xp.stack([p_correct, p_near], axis=-1))
    mixed, decoupled = replace(task, decoupled=False), replace(task, decoupled=True)
    hard = is_hard(task, prompts)
    zero = xp.zeros(prompts.shape[:-1])
    weights = xp.stack([xp.where(hard, task.hard_correct, task.easy_correct),
                        xp.where(hard, task.hard_near / 2, task.easy_near),
                        xp.where(hard, task.hard_correct, zero), xp.where(hard, task.hard_near / 2, zero)], axis=-1)
    answers = xp.stack([correct_answer(mixed, prompts), near_miss(mixed, prompts),
                        correct_answer(decoupled, prompts), near_miss(decoupled, prompts)], axis=-2)
    return answers, weights


def reward(task: ReversalTask, prompts, answers, kind: str):
    """Reward of ``answers`` to ``prompts`` (``kind`` ``"partial"`` or ``"binary"``); works on numpy and JAX arrays.

    Concrete ``prompts`` and ``answers`` must hold integer symbols in ``[0, task.n_symbols)`` with a
    last axis of ``task.length``, else a ``ValueError`` names the argument (an answer outside the
    alphabet is no string of the task, not a wrong one worth 0). Traced arrays inside compiled
    JAX code are not checked.
    """
    check_instance("task", task, ReversalTask)
    check_option("kind", kind, REWARDS)
    prompts = _check_symbols("prompts", prompts, task.n_symbols, task.length)
    answers = _check_symbols("answers", answers, task.n_symbols, task.length)
    correct = (answers == correct_answer(task, prompts)).all(-1)
    if kind == "binary":
        return correct.astype(jnp.float32)
    near = (answers == near_miss(task, prompts)).all(-1)
    return correct * 1.0 + near * (1.0 - task.gap)

