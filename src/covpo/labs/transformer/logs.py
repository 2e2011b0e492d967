"""Chapter 7's runs as TRL completion logs, and the log detector measured against their exact coverage (paper section 5).

Chapter 7's transformer knows every training prompt's exact coverage ``pi_t(y*|x)`` and near-miss
probability ``pi_t(y~|x)`` at every outer step ``t`` (``TransformerStudy.log_coverage`` and
``log_near``). This module turns one run into what a practitioner's trainer writes and then asks
how well :mod:`covpo.diagnose`, which sees only the log, recovers what the exact numbers say:

* :func:`exact_trace` keeps one run's exact per-step probabilities on its training prompts
  (an :class:`ExactTrace`, small enough to store in a record);
* :func:`draw_completions` and :func:`write_trl_logs` draw ``G`` completions per training prompt
  and step from the run's **exact** policy at that step, restricted to three outcomes (the correct
  answer, the near miss, any other answer, drawn uniformly among the others), and write them as
  TRL's ``completions_<step>.parquet`` files (:func:`~covpo.diagnose.readers.write_trl_step`). These are
  draws from the same distribution as the run's training batches, not the batches themselves:
  the training loop does not keep its batches;
* :func:`exact_losses`: which training prompts lost coverage exactly, by the book's definition
  (coverage below half the base model's; :data:`LOSS_FACTOR`), and from which step;
* :func:`detector_accuracy`: over runs (seeds and arms), how many of the exactly lost prompts
  :func:`~covpo.diagnose.measures.coverage_loss` flags from the written logs, how soon, how many of its
  flags are false, and the error of the beta-binomial pass@k beyond ``G``
  (:func:`~covpo.diagnose.measures.beta_binomial_pass_at_k`) against the exact pass@k.

The constants (the factor of two, the detector's settings) are ours, not the paper's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from covpo.diagnose import (CompletionLog, beta_binomial_fit, beta_binomial_pass_at_k, completion_log, coverage_loss,
                             read_log, step_windows, visits, write_trl_step)
from covpo.diagnose.measures import EARLY_RATES
from covpo.rates import Rate, wilson_rate
from covpo.table import Table
from covpo.validation import (check_count, check_finite_array, check_instance, check_instances, check_option,
                              check_probability, check_text)

from .experiment import StudyPlan, TransformerStudy
from .task import answer_index, correct_answer, is_hard, near_miss

#: A prompt has lost coverage when its coverage is below its base model's divided by this (the book's threshold).
LOSS_FACTOR = 2.0
#: The reward column the written logs carry (the task's reward, :func:`covpo.labs.transformer.task.reward`).
REWARD_COLUMN = "reversal_reward"
#: The letters that spell the task's symbols in the logs (symbol ``i`` is the ``i``-th letter).
ALPHABET = "abcdefghijklmnopqrstuvwxyz"
#: Multiples of the group size at which the beta-binomial pass@k is compared with the exact one.
BEYOND_G = (4, 16)


@dataclass(frozen=True)
class ExactTrace:
    """One run's exact per-step policy on its training prompts (chapter 7, paper section 5).

    Attributes
    ----------
    arm, seed
        The run's arm (a name of :data:`~covpo.labs.transformer.methods.ARM_NAMES`) and seed.
    prompts, correct, near
        The training prompts, their correct answers and near misses, ``[P, L]`` symbols.
    hard
        Which prompts are hard, ``[P]``.
    log_coverage, log_near
        ``log pi_t(y*|x)`` and ``log pi_t(y~|x)``, ``[T + 1, P]``; row ``t < T`` is the policy that
        drew outer step ``t``'s batch, row 0 the base model, row ``T`` the returned model.
    near_reward
        The near miss's reward (``1 - gap`` under partial credit, 0 under the binary reward).
    n_symbols
        The alphabet's size.
    """

    arm: str
    seed: int
    prompts: np.ndarray
    correct: np.ndarray
    near: np.ndarray
    hard: np.ndarray
    log_coverage: np.ndarray
    log_near: np.ndarray
    near_reward: float
    n_symbols: int

    def __post_init__(self) -> None:
        check_text("arm", self.arm)
        check_count("seed", self.seed, minimum=0)
        check_count("n_symbols", self.n_symbols, minimum=3)
        if self.n_symbols > len(ALPHABET):
            raise ValueError(f"n_symbols must be at most {len(ALPHABET)}, got {self.n_symbols}")
        prompts = np.asarray(self.prompts)
        for name in ("prompts", "correct", "near"):
            value = np.asarray(getattr(self, name))
            if value.ndim != 2 or value.shape != prompts.shape or value.size == 0:
                raise ValueError(f"{name} must be a non-empty [P, L] array shaped like prompts, got shape {value.shape}")
            if not np.issubdtype(value.dtype, np.integer) or value.min() < 0 or value.max() >= self.n_symbols:
                raise ValueError(f"{name} must hold integer symbols in [0, {self.n_symbols})")
        if np.any(np.all(np.asarray(self.correct) == np.asarray(self.near), axis=1)):
            raise ValueError("near must differ from correct on every prompt")
        if np.asarray(self.hard).shape != (prompts.shape[0],):
            raise ValueError(f"hard must have shape ({prompts.shape[0]},), got {np.asarray(self.hard).shape}")
        for name in ("log_coverage", "log_near"):
            value = check_finite_array(name, getattr(self, name), ndim=2)
            if value.shape[0] < 2 or value.shape[1] != prompts.shape[0] or np.any(value > 1e-9):
                raise ValueError(f"{name} must be [T + 1 >= 2, {prompts.shape[0]}] log-probabilities, got shape "
                                 f"{value.shape}")
        total = np.exp(self.log_coverage) + np.exp(self.log_near)
        if np.any(total > 1 + 1e-6):
            raise ValueError("log_coverage and log_near must give probabilities that sum to at most 1")
        check_probability("near_reward", self.near_reward)

    @property
    def n_steps(self) -> int:
        """The logged outer steps ``T`` (rows ``0..T-1`` drew batches)."""
        return int(np.asarray(self.log_coverage).shape[0] - 1)

    def to_json(self) -> dict:
        """The trace as JSON values (probabilities rounded to 7 significant digits of their logarithm)."""
        return {
            "arm": self.arm, "seed": int(self.seed), "prompts": np.asarray(self.prompts).tolist(),
            "correct": np.asarray(self.correct).tolist(), "near": np.asarray(self.near).tolist(),
            "hard": np.asarray(self.hard, dtype=bool).tolist(),
            "log_coverage": [[float(f"{v:.7g}") for v in row] for row in np.asarray(self.log_coverage, dtype=float)],
            "log_near": [[float(f"{v:.7g}") for v in row] for row in np.asarray(self.log_near, dtype=float)],
            "near_reward": float(self.near_reward), "n_symbols": int(self.n_symbols),
        }

    @classmethod
    def from_json(cls, data: dict) -> ExactTrace:
        """The trace :meth:`to_json` wrote."""
        if not isinstance(data, dict):
            raise ValueError(f"data must be a dict written by ExactTrace.to_json, got {type(data).__name__}")
        return cls(
            arm=data["arm"], seed=data["seed"], prompts=np.asarray(data["prompts"], dtype=np.int64),
            correct=np.asarray(data["correct"], dtype=np.int64), near=np.asarray(data["near"], dtype=np.int64),
            hard=np.asarray(data["hard"], dtype=bool), log_coverage=np.asarray(data["log_coverage"], dtype=float),
            log_near=np.asarray(data["log_near"], dtype=float), near_reward=data["near_reward"],
            n_symbols=data["n_symbols"],
        )


def exact_trace(study: TransformerStudy, run: int, *, plan: StudyPlan) -> ExactTrace:
    """Run ``run`` of ``study`` as an :class:`ExactTrace`; ``plan`` is the :func:`~covpo.labs.transformer.experiment.plan_study` it ran."""
    study = check_instance("study", study, TransformerStudy)
    run = check_count("run", run, minimum=0)
    if run >= study.run_cell.size:
        raise ValueError(f"run must be below the study's {study.run_cell.size} runs, got {run}")
    plan = check_instance("plan", plan, StudyPlan)
    if plan.cells != study.cells:
        raise ValueError("plan must be the plan the study ran (its cells differ)")
    cell = study.cells[study.run_cell[run]]
    seed = int(study.run_seed[run])
    task = plan.families[cell.task]
    prompts = np.asarray(plan.training_prompts[seed][cell.task], dtype=np.int64)
    return ExactTrace(
        arm=cell.arm, seed=seed, prompts=prompts, correct=np.asarray(correct_answer(task, prompts), dtype=np.int64),
        near=np.asarray(near_miss(task, prompts), dtype=np.int64), hard=np.asarray(is_hard(task, prompts), dtype=bool),
        log_coverage=np.minimum(study.log_coverage[run], 0.0), log_near=np.minimum(study.log_near[run], 0.0),
        near_reward=float(study.near_reward[run]), n_symbols=task.n_symbols,
    )


def _spell(symbols: np.ndarray) -> np.ndarray:
    """Each row of symbols as a string of letters (symbol ``i`` is the ``i``-th letter)."""
    letters = np.array(list(ALPHABET))[symbols]
    return np.array(["".join(row) for row in letters.reshape(-1, symbols.shape[-1])], dtype=object).reshape(
        symbols.shape[:-1])


def _answers(indices: np.ndarray, n_symbols: int, length: int) -> np.ndarray:
    """The answers at lexicographic ``indices`` (the inverse of :func:`~covpo.labs.transformer.task.answer_index`)."""
    return (indices[..., None] // n_symbols ** np.arange(length - 1, -1, -1)) % n_symbols


@dataclass(frozen=True)
class Completions:
    """Drawn completions, one row each: the step, the prompt's index, its outcome and its texts and reward.

    ``outcome`` is 0 for the correct answer, 1 for the near miss, 2 for any other answer.
    """

    steps: np.ndarray
    prompt: np.ndarray
    outcome: np.ndarray
    prompt_text: np.ndarray
    completion_text: np.ndarray
    reward: np.ndarray


def draw_completions(trace: ExactTrace, *, group_size: int, seed: int) -> Completions:
    """``group_size`` completions per training prompt at every logged step, drawn from the run's exact policy.

    At step ``t`` (``0..T-1``) a completion of prompt ``x`` is the correct answer with probability
    ``pi_t(y*|x)``, the near miss with ``pi_t(y~|x)``, and otherwise another answer drawn
    uniformly among the remaining ``n_symbols**L - 2``. The generator is
    ``numpy.random.default_rng((seed, trace.seed))``: the arms of one seed share their draws' uniforms.
    """
    trace = check_instance("trace", trace, ExactTrace)
    group_size = check_count("group_size", group_size)
    seed = check_count("seed", seed, minimum=0)
    rng = np.random.default_rng((seed, trace.seed))
    n_steps, (n_prompts, length) = trace.n_steps, np.asarray(trace.prompts).shape
    p = np.exp(np.asarray(trace.log_coverage)[:n_steps])[:, :, None]
    q = np.exp(np.asarray(trace.log_near)[:n_steps])[:, :, None]
    uniform = rng.random((n_steps, n_prompts, group_size))
    outcome = np.where(uniform < p, 0, np.where(uniform < p + q, 1, 2))
    excluded = np.sort(np.stack([answer_index(trace.correct, trace.n_symbols),
                                 answer_index(trace.near, trace.n_symbols)], axis=-1), axis=-1)
    other = rng.integers(0, trace.n_symbols ** length - 2, size=outcome.shape)
    other = other + (other >= excluded[None, :, 0, None])
    other = other + (other >= excluded[None, :, 1, None])
    answers = np.where((outcome == 0)[..., None], np.asarray(trace.correct)[None, :, None],
                       np.where((outcome == 1)[..., None], np.asarray(trace.near)[None, :, None],
                                _answers(other, trace.n_symbols, length)))
    reward = np.select([outcome == 0, outcome == 1], [1.0, trace.near_reward], 0.0)
    steps = np.broadcast_to(np.arange(n_steps)[:, None, None], outcome.shape)
    prompt = np.broadcast_to(np.arange(n_prompts)[None, :, None], outcome.shape)
    return Completions(steps.ravel(), prompt.ravel(), outcome.ravel(), _spell(np.asarray(trace.prompts))[prompt.ravel()],
                       _spell(answers).ravel(), reward.ravel())


def write_trl_logs(trace: ExactTrace, directory: str | Path, *, group_size: int, seed: int) -> list[Path]:
    """Write one TRL completions file per logged step of ``trace``'s run, drawn by :func:`draw_completions`.

    The files are what ``GRPOTrainer`` with ``log_completions=True`` writes
    (``completions_<step:05d>.parquet``; columns ``step``, ``prompt``, ``completion``, the reward
    column :data:`REWARD_COLUMN` with partial credit ``1``, ``1 - gap``, ``0`` or the binary
    reward, and ``advantage``), step ``t`` being the run's outer step. Prompts and completions are
    the task's strings spelled in letters. These are draws from the run's exact policy at each
    step, the same distribution as its training batches but not its actual batches (the training
    loop does not keep them).

    Returns
    -------
    list of pathlib.Path
        The files written, in step order.
    """
    drawn = draw_completions(trace, group_size=group_size, seed=seed)
    directory = Path(directory)
    edges = np.searchsorted(drawn.steps, np.arange(trace.n_steps + 1))
    return [
        write_trl_step(directory, step, drawn.prompt_text[start:end].tolist(), drawn.completion_text[start:end].tolist(),
                       {REWARD_COLUMN: drawn.reward[start:end]})
        for step, (start, end) in enumerate(zip(edges[:-1], edges[1:]))
    ]


@dataclass(frozen=True)
class ExactLosses:
    """Which training prompts lost coverage exactly, and since when (:func:`exact_losses`).

    Attributes
    ----------
    lost
        Prompts whose coverage at the last logged step is below the base model's divided by :data:`LOSS_FACTOR`.
    since_step
        For a lost prompt, the first step from which its coverage stays below that level to the last logged step; -1 otherwise.
    log_ratio
        ``log`` of the coverage at the last logged step over the base model's, per prompt.
    """

    lost: np.ndarray
    since_step: np.ndarray
    log_ratio: np.ndarray

    @property
    def count(self) -> int:
        """How many prompts lost coverage."""
        return int(np.sum(self.lost))


def exact_losses(trace: ExactTrace) -> ExactLosses:
    """The training prompts that lost coverage, by the book's definition, over the logged steps ``0..T-1``.

    A prompt has lost coverage when its exact coverage at the last logged step ``T - 1`` (the
    policy that drew the last batch) is below half its base model's (row 0); it has lost it since
    the first step from which it stays below half to ``T - 1``.
    """
    trace = check_instance("trace", trace, ExactTrace)
    coverage = np.asarray(trace.log_coverage, dtype=float)[: trace.n_steps]
    below = coverage < coverage[0] - np.log(LOSS_FACTOR)
    lost = below[-1]
    # the last step at which the prompt was not below, plus one
    last_above = np.where(~below, np.arange(coverage.shape[0])[:, None], -1).max(0)
    return ExactLosses(lost=lost, since_step=np.where(lost, last_above + 1, -1), log_ratio=coverage[-1] - coverage[0])


@dataclass(frozen=True)
class RunAccuracy:
    """The detector on one run's logs against its exact losses (:func:`detector_accuracy`).

    Attributes
    ----------
    arm, seed
        The run.
    lost
        Prompts that lost coverage exactly.
    lost_solved_early
        Of those, the prompts with a success in the log's early window (the only ones the detector can judge).
    flagged, true_flags, false_flags
        Prompts the detector flagged; of them, those that lost coverage exactly and those that did not.
    delays
        For each true flag, the step it was flagged at minus the step the exact loss dates from.
    pass_error
        For each ``k`` of ``ks``: the beta-binomial pass@k over the last window's visits minus the
        exact pass@k averaged over the same prompts and steps.
    ks
        The ``k`` of ``pass_error`` (multiples of the group size, :data:`BEYOND_G`).
    """

    arm: str
    seed: int
    lost: int
    lost_solved_early: int
    flagged: int
    true_flags: int
    false_flags: int
    delays: tuple[int, ...]
    pass_error: tuple[float, ...]
    ks: tuple[int, ...]

    def to_json(self) -> dict:
        """The row as JSON values."""
        return {"arm": self.arm, "seed": self.seed, "lost": self.lost, "lost_solved_early": self.lost_solved_early,
                "flagged": self.flagged, "true_flags": self.true_flags, "false_flags": self.false_flags,
                "delays": list(self.delays), "pass_error": list(self.pass_error), "ks": list(self.ks)}

    @classmethod
    def from_json(cls, data: dict) -> RunAccuracy:
        """The row :meth:`to_json` wrote."""
        if not isinstance(data, dict):
            raise ValueError(f"data must be a dict written by RunAccuracy.to_json, got {type(data).__name__}")
        return cls(**{**data, "delays": tuple(data["delays"]), "pass_error": tuple(data["pass_error"]),
                      "ks": tuple(data["ks"])})


def trace_log(trace: ExactTrace, *, group_size: int, seed: int) -> CompletionLog:
    """The completions :func:`write_trl_logs` writes, as a :class:`~covpo.diagnose.readers.CompletionLog` in memory (no files)."""
    drawn = draw_completions(trace, group_size=group_size, seed=seed)
    return completion_log(drawn.steps, drawn.prompt_text, drawn.completion_text, {REWARD_COLUMN: drawn.reward},
                          source=f"{trace.arm}, seed {trace.seed}")


@dataclass(frozen=True)
class Detection:
    """The detector's verdict on one run's log beside the exact losses, prompts in the trace's order (:func:`detection`).

    Attributes
    ----------
    truth
        The exact losses (:func:`exact_losses`).
    flagged, flagged_step
        Which prompts the detector flagged, and at which step (-1 where not flagged).
    solved_early
        Prompts with a success in the log's early window (the only ones the detector can judge).
    solve_rate
        Each prompt's solve rate at each logged step, ``[P, T]`` (NaN where not visited).
    pass_error, ks
        The beta-binomial pass@k of the last window minus the exact pass@k over the same visits, at each ``k`` of ``ks``.
    """

    truth: ExactLosses
    flagged: np.ndarray
    flagged_step: np.ndarray
    solved_early: np.ndarray
    solve_rate: np.ndarray
    pass_error: tuple[float, ...]
    ks: tuple[int, ...]

    @property
    def true_flags(self) -> np.ndarray:
        """Flagged prompts that lost coverage exactly."""
        return self.flagged & self.truth.lost

    @property
    def false_flags(self) -> np.ndarray:
        """Flagged prompts that did not."""
        return self.flagged & ~self.truth.lost

    def accuracy(self, arm: str, seed: int) -> RunAccuracy:
        """The counts of :class:`RunAccuracy` for this run."""
        true = self.true_flags
        return RunAccuracy(
            arm=arm, seed=int(seed), lost=self.truth.count,
            lost_solved_early=int(np.sum(self.truth.lost & self.solved_early)), flagged=int(np.sum(self.flagged)),
            true_flags=int(np.sum(true)), false_flags=int(np.sum(self.false_flags)),
            delays=tuple(int(d) for d in self.flagged_step[true] - self.truth.since_step[true]),
            pass_error=self.pass_error, ks=self.ks,
        )


def detection(trace: ExactTrace, log: CompletionLog, *, windows: int = 5, zero_visits: int = 3, alpha: float = 0.01,
              early_rate: str = "point") -> Detection:
    """Judge ``log`` (``trace``'s run, written or drawn) with :func:`~covpo.diagnose.measures.coverage_loss` and set it beside the exact losses.

    The beyond-``G`` pass@k is fitted (:func:`~covpo.diagnose.measures.beta_binomial_fit`) to the visits
    of the last of ``windows`` step windows and compared, at ``k`` = :data:`BEYOND_G` times the
    group size, with the exact ``1 - (1 - p)^k`` averaged over the same visits.
    """
    trace = check_instance("trace", trace, ExactTrace)
    log = check_instance("log", log, CompletionLog)
    table = visits(log)
    loss = coverage_loss(table, windows, zero_visits=zero_visits, alpha=alpha, early_rate=early_rate)
    truth = exact_losses(trace)
    index = {text: i for i, text in enumerate(_spell(np.asarray(trace.prompts)))}
    unknown = sorted(set(table.prompts) - set(index))
    if unknown:
        raise ValueError(f"log must hold the trace's prompts only, got {unknown[:3]}")
    row = np.array([index[text] for text in table.prompts], dtype=np.int64)[table.prompt]
    if np.any(table.step >= trace.n_steps):
        raise ValueError(f"log must hold the trace's steps 0..{trace.n_steps - 1}, got step {int(table.step.max())}")
    n_prompts = truth.lost.size
    flagged_step = np.full(n_prompts, -1, dtype=np.int64)
    flagged_step[np.array([index[text] for text in table.prompts[loss.prompt]], dtype=np.int64)] = loss.flagged_step
    window = step_windows(table.step, windows)
    solved_early = np.zeros(n_prompts, bool)
    solved_early[row[(window == 0) & (table.successes > 0)]] = True
    solve_rate = np.full((n_prompts, trace.n_steps), np.nan)
    solve_rate[row, table.step] = table.successes / table.trials
    last = window == window.max()
    fit = beta_binomial_fit(table.successes[last], table.trials[last])
    coverage = np.exp(np.asarray(trace.log_coverage)[table.step[last], row[last]])
    group_size = int(np.median(table.trials))
    ks = tuple(int(m * group_size) for m in BEYOND_G)
    exact = [float(np.mean(-np.expm1(k * np.log1p(-np.minimum(coverage, 1 - 1e-16))))) for k in ks]
    return Detection(truth=truth, flagged=flagged_step >= 0, flagged_step=flagged_step, solved_early=solved_early,
                     solve_rate=solve_rate, pass_error=tuple(beta_binomial_pass_at_k(fit, k) - e for k, e in zip(ks, exact)),
                     ks=ks)


def _run_accuracy(trace: ExactTrace, directory: str | Path, *, group_size: int, seed: int, settings: dict) -> RunAccuracy:
    """Write ``trace``'s logs into ``directory``, read them back, and judge them (:func:`detection`)."""
    write_trl_logs(trace, directory, group_size=group_size, seed=seed)
    found = detection(trace, read_log(directory, progress=False), windows=settings["windows"],
                      zero_visits=settings["zero_visits"], alpha=settings["alpha"], early_rate=settings["early_rate"])
    return found.accuracy(trace.arm, trace.seed)


@dataclass(frozen=True)
class DetectorAccuracy:
    """The detector's accuracy against exact coverage over runs (:func:`detector_accuracy`)."""

    runs: tuple[RunAccuracy, ...]
    settings: dict

    def arms(self) -> tuple[str, ...]:
        """The arms, in the order of their first run."""
        return tuple(dict.fromkeys(run.arm for run in self.runs))

    def of(self, arm: str) -> tuple[RunAccuracy, ...]:
        """The runs of ``arm``, in seed order."""
        check_option("arm", arm, self.arms())
        return tuple(sorted((run for run in self.runs if run.arm == arm), key=lambda run: run.seed))

    def recall(self, arm: str) -> Rate | None:
        """Flagged among the exactly lost prompts of ``arm``'s runs (Wilson interval); ``None`` if none was lost."""
        runs = self.of(arm)
        lost = sum(r.lost for r in runs)
        return wilson_rate(sum(r.true_flags for r in runs), lost) if lost else None

    def precision(self, arm: str) -> Rate | None:
        """Exactly lost among the flagged prompts of ``arm``'s runs (Wilson interval); ``None`` if none was flagged."""
        runs = self.of(arm)
        flagged = sum(r.flagged for r in runs)
        return wilson_rate(sum(r.true_flags for r in runs), flagged) if flagged else None

    def delays(self, arm: str) -> np.ndarray:
        """Every true flag's delay (steps) over ``arm``'s runs."""
        return np.array([d for run in self.of(arm) for d in run.delays], dtype=np.int64)

    def pass_errors(self, arm: str) -> np.ndarray:
        """The beyond-``G`` pass@k errors of ``arm``'s runs, ``[runs, len(ks)]``."""
        return np.array([run.pass_error for run in self.of(arm)], dtype=float)

    def table(self) -> Table:
        """One row per arm: runs, lost prompts, recall, precision, delay, false flags and the beyond-``G`` pass@k error."""
        ks = self.runs[0].ks
        rows = []
        for arm in self.arms():
            runs, recall, precision, delays = self.of(arm), self.recall(arm), self.precision(arm), self.delays(arm)
            errors = np.abs(self.pass_errors(arm))
            rows.append((
                arm, len(runs), sum(r.lost for r in runs), sum(r.lost_solved_early for r in runs),
                _rate_cell(recall), _rate_cell(precision),
                float(np.median(delays)) if delays.size else "-", sum(r.false_flags for r in runs),
                *(float(np.median(errors[:, i])) for i in range(len(ks))),
            ))
        return Table(
            ("arm", "runs", "prompts lost (exact)", "of them solved early", "flagged of lost (recall)",
             "lost of flagged (precision)", "median delay (steps)", "false flags",
             *(f"median |error| of pass@{k}" for k in ks)),
            tuple(rows),
            caption="The log detector against exact coverage: chapter 7's runs written as TRL logs",
            notes=("Lost: exact coverage at the last logged step below half the base model's. Intervals: 95% Wilson. "
                   "Delay: step flagged minus the step since which the exact coverage stayed below half.",
                   f"Detector: {self.settings['windows']} windows, {self.settings['zero_visits']} zero visits, "
                   f"$\\alpha$ = {self.settings['alpha']:g}; groups of {self.settings['group_size']}; pass@k beyond the "
                   "group by the Beta-binomial fit of the last window against the exact pass@k."),
        )


def _rate_cell(rate: Rate | None) -> str:
    """A rate as "k of n (low-high%)", or "-" where there is none."""
    return "-" if rate is None else f"{rate.successes} of {rate.trials} ({rate.low:.0%}-{rate.high:.0%})"


def detector_accuracy(traces: Sequence[ExactTrace], *, group_size: int = 8, seed: int = 0, windows: int = 5,
                      zero_visits: int = 3, alpha: float = 0.01, early_rate: str = "point") -> DetectorAccuracy:
    """The detector on every trace's written logs against its exact losses (see the module docstring).

    Each trace's logs are written to a temporary directory (:func:`write_trl_logs`, draws seeded by
    ``(seed, trace.seed)``), read back with :func:`~covpo.diagnose.readers.read_log` and judged by
    :func:`~covpo.diagnose.measures.coverage_loss` with ``windows``, ``zero_visits``, ``alpha`` and ``early_rate``.
    """
    traces = check_instances("traces", traces, ExactTrace)
    group_size = check_count("group_size", group_size)
    seed = check_count("seed", seed, minimum=0)
    settings = {"windows": check_count("windows", windows, minimum=2), "zero_visits": check_count("zero_visits", zero_visits),
                "alpha": check_probability("alpha", alpha),
                "early_rate": check_option("early_rate", early_rate, EARLY_RATES), "group_size": group_size}
    rows = []
    for trace in traces:
        with tempfile.TemporaryDirectory() as directory:
            rows.append(_run_accuracy(trace, directory, group_size=group_size, seed=seed, settings=settings))
    return DetectorAccuracy(tuple(rows), settings)

