"""Readers of trainers' completion logs: TRL's parquet files and verl's rollout JSONL.

Both readers return one tidy long-format :class:`CompletionLog`: a row per logged completion,
with its step, its prompt, its completion, its reward columns, the success rule's reward and
whether it succeeded (:mod:`covpo.diagnose.success`). The measures of
:mod:`covpo.diagnose.measures` take that log, and so can a log built from arrays
(:func:`completion_log`), which is how a simulated run (the book's chapter 7 transformer, paper
section 5's setting) enters the same diagnosis.

TRL (``GRPOTrainer`` with ``log_completions=True``, read against trl 1.16.0): at every logging
step ``GRPOTrainer.log`` writes ``<output_dir>/completions/completions_<step:05d>.parquet`` with
``pandas.DataFrame(table).to_parquet``, where ``table`` holds the columns ``step``, ``prompt``,
``completion``, one raw (unweighted) column per reward function, the columns of ``log_extra``
and ``advantage``. The rows are the deques ``self._logs``, of length ``generation_batch_size``:
the latest generation batch, all ``num_generations`` completions of each of its prompts.
Conversational prompts and completions are lists of messages; the reader keys them by their
JSON text. Three quirks of that code, and what the reader does about each:

* **Evaluation rows in the same step's file.** Evaluation appends to the same deques, and its
  ``log`` call writes the same file name, so the file of a step at which evaluation ran holds
  evaluation rows (overwriting the training rows of that step). The reader leaves such files
  out: the steps named by ``eval_steps``, the steps at which the run's ``trainer_state.json``
  (in the output directory or its latest ``checkpoint-*``) records ``eval_*`` entries, and any
  file whose completions per prompt differ from the run's usual group size (TRL's
  ``num_generations_eval`` differs from ``num_generations``). Each file left out is named in
  the log's notes. With the same group size and no ``trainer_state.json``, evaluation rows
  cannot be told apart: pass ``eval_steps``.
* **Batches repeated when ``num_iterations > 1``.** A generation batch is reused for
  ``num_iterations`` optimizer steps (``steps_per_generation`` likewise), and every logging
  step in between writes the same rows again under a new step. The reader keeps a batch once,
  at its first step: a file whose prompts, completions and rewards equal the previous file's is
  left out and counted.
* **The last step's file rewritten at the end of training.** ``Trainer.train`` ends with one
  more ``log`` call at the final step, which writes that step's file again with whatever the
  deques hold then: the same rows (harmless), or evaluation rows when evaluation ran last,
  which the rules above catch.

verl (``RayPPOTrainer._dump_generations`` with ``trainer.rollout_data_dir``, read against verl
0.8.0.dev, commit b178a3c): one file ``<dir>/<global_step>.jsonl`` per step, one JSON object a
line with keys ``input`` (decoded prompt), ``output``, ``gts`` (absent before 0.5), ``score``
(the sum of the token-level scores) and ``step``, plus the reward function's extra keys. The
rows are reordered by batch balancing, so completions are grouped by ``input``. Validation
dumps (``trainer.validation_data_dir``) have the same form: point the reader at the rollout
directory only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm.std import tqdm

from covpo.diagnose.success import DEFAULT_THRESHOLD, SuccessRule, success_rule
from covpo.validation import check_count, check_finite_array, check_flag

#: The log formats the readers know.
FORMATS = ("trl", "verl")
#: TRL's file names, ``completions_<step>.parquet``.
TRL_FILE = re.compile(r"^completions_(\d+)\.parquet$")
#: verl's file names, ``<step>.jsonl``.
VERL_FILE = re.compile(r"^(\d+)\.jsonl$")
#: Columns every TRL completions file has.
TRL_COLUMNS = ("step", "prompt", "completion")
#: Numeric TRL columns that are not rewards.
TRL_NOT_REWARDS = ("step", "advantage")
#: Keys every verl rollout line has.
VERL_KEYS = ("input", "output", "score", "step")
#: The reward a verl log is judged by unless another is chosen (what its trainer optimizes).
VERL_DEFAULT_REWARD = "score"


@dataclass(frozen=True)
class CompletionLog:
    """One tidy long-format log: a row per logged completion (paper section 5's sampled groups).

    Attributes
    ----------
    format
        ``"trl"``, ``"verl"`` or ``"columns"`` (built from arrays by :func:`completion_log`).
    source
        Where it was read from.
    steps
        The training step of each row (int64).
    prompt_index
        Each row's prompt, an index into ``prompts``.
    prompts
        The distinct prompts, by index (an object array of strings).
    completions
        Each row's completion text (a pyarrow string array).
    rewards
        Each reward column of the log, by name (float arrays, NaN where unscored).
    rule
        The success rule applied.
    reward
        The rule's reward of each row.
    success
        Whether each row's reward reaches the rule's threshold.
    notes
        What the reader left out or assumed, one sentence each.
    """

    format: str
    source: str
    steps: np.ndarray
    prompt_index: np.ndarray
    prompts: np.ndarray
    completions: pa.Array
    rewards: Mapping[str, np.ndarray]
    rule: SuccessRule
    reward: np.ndarray
    success: np.ndarray
    notes: tuple[str, ...] = field(default=())

    @property
    def rows(self) -> int:
        """How many completions the log holds."""
        return int(self.steps.size)

    def table(self) -> pa.Table:
        """The log as a pyarrow table: ``step``, ``prompt``, ``completion``, ``success``, ``reward`` and the reward columns."""
        columns = {
            "step": pa.array(self.steps),
            "prompt": pa.DictionaryArray.from_arrays(pa.array(self.prompt_index, pa.int64()), pa.array(self.prompts, pa.string())),
            "completion": self.completions,
            "success": pa.array(self.success),
            "reward": pa.array(self.reward),
        }
        columns.update({f"reward:{name}": pa.array(values) for name, values in self.rewards.items()})
        return pa.table(columns)


def completion_log(
    steps: Sequence[int] | np.ndarray,
    prompts: Sequence[str] | np.ndarray | pa.Array,
    completions: Sequence[str] | np.ndarray | pa.Array,
    rewards: Mapping[str, Sequence[float] | np.ndarray],
    *,
    reward: str | None = None,
    reward_weights: Sequence[float] | Mapping[str, float] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    format: str = "columns",
    source: str = "",
    notes: Iterable[str] = (),
) -> CompletionLog:
    """A :class:`CompletionLog` from columns, one entry per completion (paper section 5's groups of ``G``).

    Parameters
    ----------
    steps
        Each completion's training step (integers >= 0).
    prompts
        Each completion's prompt text; equal texts are one prompt.
    completions
        Each completion's text.
    rewards
        Reward columns by name, one value per completion (NaN where unscored).
    reward, reward_weights, threshold
        The success rule (:func:`covpo.diagnose.success.success_rule`).
    format, source, notes
        What the log is, where it came from, and what the reader noted.

    Returns
    -------
    CompletionLog
        Rows whose rule reward is NaN (no reward function scored them) are dropped and counted in the notes.
    """
    step_array = _integer_column("steps", steps)
    prompt_array = _string_column("prompts", prompts)
    completion_array = _string_column("completions", completions)
    if not isinstance(rewards, Mapping) or not rewards:
        raise ValueError(f"rewards must map at least one reward column name to values, got {rewards!r}")
    reward_arrays = {}
    for name, values in rewards.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"rewards must be keyed by column names, got {name!r}")
        try:
            array = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"rewards column {name!r} must hold numbers, got {values!r}") from None
        if array.ndim != 1 or np.any(np.isinf(array)):
            raise ValueError(f"rewards column {name!r} must be one finite number (or NaN) per completion")
        reward_arrays[name] = array
    lengths = {len(step_array), len(prompt_array), len(completion_array), *(len(a) for a in reward_arrays.values())}
    if len(lengths) != 1:
        raise ValueError(f"steps, prompts, completions and rewards must have one entry per completion, got lengths {sorted(lengths)}")
    if len(step_array) == 0:
        raise ValueError("steps must hold at least one completion, got none")
    if format not in FORMATS + ("columns",):
        raise ValueError(f"format must be one of {FORMATS + ('columns',)}, got {format!r}")
    rule = success_rule(tuple(reward_arrays), reward=reward, reward_weights=reward_weights, threshold=threshold)
    rule_reward = rule.reward(reward_arrays)
    scored = ~np.isnan(rule_reward)
    notes = list(notes)
    if not np.all(scored):
        notes.append(f"{int((~scored).sum()):,} completions had no reward under the rule (every term NaN) and were left out.")
        if not np.any(scored):
            raise ValueError(f"rewards must score at least one completion under the rule {rule.describe()}, got none")
        keep = np.flatnonzero(scored)
        step_array, prompt_array = step_array[keep], prompt_array.take(pa.array(keep))
        completion_array = completion_array.take(pa.array(keep))
        reward_arrays = {name: values[keep] for name, values in reward_arrays.items()}
        rule_reward = rule_reward[keep]
    encoded = pc.dictionary_encode(prompt_array)
    return CompletionLog(
        format=format,
        source=str(source),
        steps=step_array,
        prompt_index=encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
        prompts=np.asarray(encoded.dictionary.to_pylist(), dtype=object),
        completions=completion_array,
        rewards=reward_arrays,
        rule=rule,
        reward=rule_reward,
        success=rule.success(rule_reward),
        notes=tuple(notes),
    )


def _integer_column(name: str, values: object) -> np.ndarray:
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be integers >= 0, got {values!r}") from None
    if array.ndim != 1 or array.dtype.kind not in "iu" or (array.size and array.min() < 0):
        raise ValueError(f"{name} must be a one-dimensional array of integers >= 0, got {values!r}")
    return array.astype(np.int64)


def _string_column(name: str, values: object) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, (str, bytes)) or values is None:
        raise ValueError(f"{name} must be a sequence of strings, got {values!r}")
    try:
        array = values if isinstance(values, pa.Array) else pa.array(list(values), pa.string())
    except (TypeError, pa.ArrowInvalid, pa.ArrowTypeError):
        raise ValueError(f"{name} must be a sequence of strings, got {values!r}") from None
    if array.type == pa.large_string():
        array = array.cast(pa.string())
    if array.type != pa.string() or array.null_count:
        raise ValueError(f"{name} must be a sequence of strings (no missing entries), got {array.type}")
    return array


def detect_format(path: str | Path) -> tuple[str, list[Path]]:
    """The format of the log at ``path`` and its files in step order (TRL, or verl's rollout dump).

    ``path`` is a TRL output directory (its ``completions`` folder is read), a folder of
    ``completions_<step>.parquet`` or ``<step>.jsonl`` files, or one such file.

    Raises
    ------
    ValueError
        For a path that does not exist, an empty directory, a directory with neither kind of file,
        both kinds at once (mixed schemas), or a file that is neither.
    """
    if isinstance(path, bool) or not isinstance(path, (str, Path)) or not str(path):
        raise ValueError(f"path must be a file or directory path, got {path!r}")
    path = Path(path)
    if not path.exists():
        raise ValueError(f"path {str(path)!r} does not exist")
    if path.is_file():
        if TRL_FILE.match(path.name) or path.suffix == ".parquet":
            return "trl", [path]
        if path.suffix == ".jsonl":
            return "verl", [path]
        raise ValueError(f"path {str(path)!r} is not a log: expected completions_<step>.parquet or <step>.jsonl")
    if (path / "completions").is_dir():
        path = path / "completions"
    entries = list(path.iterdir())
    if not entries:
        raise ValueError(f"path {str(path)!r} is an empty directory: no completion logs")
    trl = sorted((p for p in entries if TRL_FILE.match(p.name)), key=lambda p: int(TRL_FILE.match(p.name).group(1)))
    verl = sorted((p for p in entries if VERL_FILE.match(p.name)), key=lambda p: int(VERL_FILE.match(p.name).group(1)))
    if trl and verl:
        raise ValueError(
            f"path {str(path)!r} mixes schemas: {len(trl)} TRL completions_<step>.parquet files and "
            f"{len(verl)} verl <step>.jsonl files; point at one run's logs"
        )
    if not trl and not verl:
        raise ValueError(f"path {str(path)!r} holds no TRL completions_<step>.parquet or verl <step>.jsonl files")
    return ("trl", trl) if trl else ("verl", verl)


def read_log(
    path: str | Path,
    *,
    reward: str | None = None,
    reward_weights: Sequence[float] | Mapping[str, float] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    eval_steps: Iterable[int] | None = None,
    progress: bool = False,
) -> CompletionLog:
    """Read a TRL or verl completion log at ``path`` into a :class:`CompletionLog` (see the module docstring).

    Parameters
    ----------
    path
        A TRL output directory, a folder of log files, or one log file (:func:`detect_format`).
    reward, reward_weights, threshold
        The success rule (:func:`covpo.diagnose.success.success_rule`); a verl log defaults to its ``score``.
    eval_steps
        Steps at which evaluation ran, whose files hold evaluation rows (TRL); found in the
        run's ``trainer_state.json`` where there is one.
    progress
        Whether to show a progress bar while reading.

    Returns
    -------
    CompletionLog

    Raises
    ------
    ValueError
        Naming the file and column for a missing column, an unknown reward column, a file that
        is not a log, mixed schemas, an empty directory or a malformed JSONL line.
    """
    progress = check_flag("progress", progress)
    kind, files = detect_format(path)
    skipped = set() if eval_steps is None else {check_count("eval_steps", step, minimum=0) for step in _iterable("eval_steps", eval_steps)}
    if kind == "trl":
        columns, notes = _read_trl(Path(path), files, skipped, progress)
    else:
        columns, notes = _read_verl(files, skipped, progress)
        if reward is None and reward_weights is None:
            reward = VERL_DEFAULT_REWARD
    steps, prompts, completions, rewards = columns
    return completion_log(
        steps, prompts, completions, rewards, reward=reward, reward_weights=reward_weights, threshold=threshold,
        format=kind, source=str(path), notes=notes,
    )


def _iterable(name: str, values: object) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a sequence of steps, got {values!r}")
    return list(values)


def _file_step(path: Path) -> int | None:
    match = TRL_FILE.match(path.name) or VERL_FILE.match(path.name)
    return int(match.group(1)) if match else None


def _trainer_eval_steps(path: Path) -> set[int]:
    """Steps with ``eval_*`` entries in the run's ``trainer_state.json`` (the output directory's, or its latest checkpoint's)."""
    run = path.parent if path.is_file() else path
    if run.name == "completions":
        run = run.parent
    states = [run / "trainer_state.json"] + sorted(run.glob("checkpoint-*/trainer_state.json"))
    found: set[int] = set()
    for state in states:
        if state.is_file():
            try:
                history = json.loads(state.read_text()).get("log_history", [])
            except (json.JSONDecodeError, AttributeError):
                continue
            found |= {int(entry["step"]) for entry in history
                      if isinstance(entry, dict) and "step" in entry and any(str(key).startswith("eval_") for key in entry)}
    return found


def _text_column(table: pa.Table, name: str) -> pa.Array:
    """A TRL text column as strings: conversational entries (lists of messages) as their JSON text."""
    column = table.column(name).combine_chunks()
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column.cast(pa.string())
    return pa.array([json.dumps(value, sort_keys=True, ensure_ascii=False) for value in column.to_pylist()], pa.string())


def _numeric(data_type: pa.DataType) -> bool:
    return pa.types.is_floating(data_type) or pa.types.is_integer(data_type) or pa.types.is_boolean(data_type)


def _read_trl(path: Path, files: list[Path], skipped: set[int], progress: bool):
    skipped = skipped | _trainer_eval_steps(path)
    notes, tables, reward_names = [], [], None
    left_out_eval, repeats, previous, previous_evaluation = [], 0, None, False
    for file in tqdm(files, desc="reading TRL completions", unit="file", disable=not progress):
        try:
            table = pq.read_table(file)
        except (pa.ArrowInvalid, OSError) as error:
            raise ValueError(f"file {str(file)!r} is not a log: not a readable parquet file ({error})") from None
        missing = [column for column in TRL_COLUMNS if column not in table.column_names]
        if missing:
            raise ValueError(f"file {str(file)!r} is not a TRL completions log: missing column {missing[0]!r}")
        names = tuple(name for name in table.column_names
                      if name not in TRL_COLUMNS + TRL_NOT_REWARDS and _numeric(table.schema.field(name).type))
        if reward_names is None:
            if not names:
                raise ValueError(f"file {str(file)!r} is not a TRL completions log: missing column for a reward (no numeric column)")
            reward_names = names
        elif names != reward_names:
            raise ValueError(
                f"file {str(file)!r} mixes schemas: its reward columns {list(names)} differ from the run's {list(reward_names)}"
            )
        step_values = pc.unique(table.column("step")).to_pylist()
        named_step = _file_step(file)
        if len(step_values) != 1 or (named_step is not None and step_values[0] != named_step):
            raise ValueError(f"file {str(file)!r} is not a TRL completions log: column 'step' holds {step_values[:3]}, not its step")
        step = int(step_values[0])
        current = (table.num_rows, _text_column(table, "prompt"), _text_column(table, "completion"),
                   tuple(table.column(name).combine_chunks().cast(pa.float64()) for name in reward_names))
        repeated = previous is not None and current[0] == previous[0] and all(
            a.equals(b) for a, b in zip((current[1], current[2], *current[3]), (previous[1], previous[2], *previous[3]))
        )
        if step in skipped or (repeated and previous_evaluation):
            # An evaluation file, or a later step's copy of one (its generation batch reused, num_iterations > 1).
            left_out_eval.append(step)
            previous, previous_evaluation = current, True
            continue
        if repeated:
            repeats += 1
            continue
        previous, previous_evaluation = current, False
        tables.append((step, current))
    if left_out_eval:
        notes.append(f"Files at steps {_steps_text(left_out_eval)} hold evaluation rows (evaluation ran then, or the file "
                     "repeats such a file) and were left out.")
    if repeats:
        notes.append(f"{repeats} files repeated the previous generation batch (num_iterations > 1) and were counted once.")
    if not tables:
        raise ValueError(f"path {str(path)!r} holds no training rows once evaluation files are left out")
    tables, group_notes = _drop_other_group_sizes(tables)
    notes += group_notes
    steps = np.concatenate([np.full(rows, step, dtype=np.int64) for step, (rows, *_rest) in tables])
    prompts = pa.concat_arrays([current[1] for _step, current in tables])
    completions = pa.concat_arrays([current[2] for _step, current in tables])
    rewards = {name: np.concatenate([current[3][i].to_numpy(zero_copy_only=False) for _step, current in tables])
               for i, name in enumerate(reward_names)}
    return (steps, prompts, completions, rewards), notes


def _group_size(prompts: pa.Array) -> int:
    """The most common number of completions per prompt in one file."""
    counts = pc.value_counts(prompts).field("counts").to_numpy()
    values, how_often = np.unique(counts, return_counts=True)
    return int(values[np.argmax(how_often)])


def _drop_other_group_sizes(tables: list) -> tuple[list, list[str]]:
    """Files whose group size differs from the run's usual one: evaluation rows (``num_generations_eval``)."""
    sizes = np.array([_group_size(current[1]) for _step, current in tables])
    values, how_often = np.unique(sizes, return_counts=True)
    usual = int(values[np.argmax(how_often)])
    odd = [step for (step, _current), size in zip(tables, sizes) if size != usual]
    if not odd:
        return tables, []
    kept = [entry for entry, size in zip(tables, sizes) if size == usual]
    return kept, [f"Files at steps {_steps_text(odd)} have another group size than the run's {usual} "
                  "(evaluation rows, num_generations_eval) and were left out."]


def _steps_text(steps: list[int]) -> str:
    shown = ", ".join(str(step) for step in steps[:8])
    return shown + (f" and {len(steps) - 8} more" if len(steps) > 8 else "")


def _read_verl(files: list[Path], skipped: set[int], progress: bool):
    steps, prompts, completions, rewards, reward_names, notes, left_out = [], [], [], None, None, [], []
    for file in tqdm(files, desc="reading verl rollouts", unit="file", disable=not progress):
        named_step = _file_step(file)
        if named_step is not None and named_step in skipped:
            left_out.append(named_step)
            continue
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            raise ValueError(f"file {str(file)!r} is not a log: not UTF-8 text") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"file {str(file)!r} line {number} is malformed JSONL: {error.msg}") from None
            if not isinstance(entry, dict):
                raise ValueError(f"file {str(file)!r} line {number} is not a verl rollout record (not a JSON object)")
            missing = [key for key in VERL_KEYS if key not in entry]
            if missing:
                raise ValueError(f"file {str(file)!r} line {number} is not a verl rollout record: missing column {missing[0]!r}")
            if reward_names is None:
                reward_names = tuple(key for key, value in entry.items()
                                     if key not in ("step", "input", "output", "gts") and _is_number(value))
                rewards = {name: [] for name in reward_names}
            if not isinstance(entry["input"], str) or not isinstance(entry["output"], str):
                raise ValueError(f"file {str(file)!r} line {number}: columns 'input' and 'output' must be text")
            if not isinstance(entry["step"], int) or isinstance(entry["step"], bool) or entry["step"] < 0:
                raise ValueError(f"file {str(file)!r} line {number}: column 'step' must be an integer >= 0, got {entry['step']!r}")
            steps.append(entry["step"])
            prompts.append(entry["input"])
            completions.append(entry["output"])
            for name in reward_names:
                value = entry.get(name)
                rewards[name].append(float(value) if _is_number(value) else np.nan)
    if left_out:
        notes.append(f"Files at steps {_steps_text(left_out)} were named evaluation steps and were left out.")
    if not steps:
        raise ValueError(f"files {str(files[0].parent)!r} hold no rollout rows")
    return (np.asarray(steps, dtype=np.int64), prompts, completions, {n: np.asarray(v) for n, v in rewards.items()}), notes


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and (isinstance(value, bool) or np.isfinite(value))


def write_trl_step(
    directory: str | Path,
    step: int,
    prompts: Sequence[str],
    completions: Sequence[str],
    rewards: Mapping[str, Sequence[float] | np.ndarray],
    advantages: Sequence[float] | np.ndarray | None = None,
) -> Path:
    """Write one TRL completions file, ``<directory>/completions_<step:05d>.parquet``, as ``GRPOTrainer.log`` does.

    The columns are TRL's (``step``, ``prompt``, ``completion``, one per reward function,
    ``advantage``); with no ``advantages`` given, each completion's is its summed reward centred
    and scaled within its prompt's group, TRL's default (``scale_rewards="group"``, paper section 5's GRPO).
    The file is written with pyarrow rather than pandas, so it lacks pandas' metadata, which no reader needs.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    step = check_count("step", step, minimum=0)
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__len__"):
        raise ValueError(f"prompts must be a sequence of strings, got {prompts!r}")
    if not isinstance(rewards, Mapping) or not rewards:
        raise ValueError(f"rewards must map at least one reward column name to values, got {rewards!r}")
    log = completion_log(np.full(len(prompts), step, dtype=np.int64), prompts, completions, rewards,
                         reward_weights=[1.0] * len(rewards))
    if log.rows != len(prompts):
        raise ValueError("rewards must score every completion (TRL logs unscored rows as NaN rewards too)")
    if advantages is None:
        total = log.reward
        counts = np.bincount(log.prompt_index)
        mean = np.bincount(log.prompt_index, total) / counts
        spread = np.sqrt(np.bincount(log.prompt_index, (total - mean[log.prompt_index]) ** 2) / np.maximum(counts - 1, 1))
        advantage = (total - mean[log.prompt_index]) / (spread[log.prompt_index] + 1e-4)
    else:
        advantage = np.asarray(advantages, dtype=float)
        if advantage.shape != (log.rows,) or not np.all(np.isfinite(advantage)):
            raise ValueError(f"advantages must be one finite number per completion, got shape {advantage.shape}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.table({
        "step": pa.array(log.steps), "prompt": _string_column("prompts", prompts), "completion": log.completions,
        **{name: pa.array(values) for name, values in log.rewards.items()}, "advantage": pa.array(advantage),
    })
    target = directory / f"completions_{step:05d}.parquet"
    pq.write_table(table, target)
    return target


def write_verl_step(
    directory: str | Path,
    step: int,
    inputs: Sequence[str],
    outputs: Sequence[str],
    scores: Sequence[float],
    gts: Sequence[object] | None = None,
    extra: Mapping[str, Sequence[object]] | None = None,
) -> Path:
    """Write one verl rollout file, ``<directory>/<step>.jsonl``, line by line as ``RayPPOTrainer._dump_generations`` does.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    step = check_count("step", step, minimum=0)
    inputs, outputs = _string_column("inputs", inputs).to_pylist(), _string_column("outputs", outputs).to_pylist()
    score_values = check_finite_array("scores", scores, ndim=1)
    n = len(inputs)
    if n == 0 or len(outputs) != n or score_values.size != n:
        raise ValueError(f"inputs, outputs and scores must have one entry per completion (at least one), got lengths "
                         f"{n}, {len(outputs)} and {score_values.size}")
    if gts is not None and (isinstance(gts, (str, bytes)) or not hasattr(gts, "__len__") or len(gts) != n):
        raise ValueError(f"gts must hold one ground truth per completion, got {gts!r}")
    if extra is not None and not isinstance(extra, Mapping):
        raise ValueError(f"extra must map reward-info names to values, got {extra!r}")
    base = {"input": inputs, "output": outputs, "gts": [None] * n if gts is None else list(gts),
            "score": score_values.tolist(), "step": [step] * n}
    for name, values in (extra or {}).items():
        if len(values) == n:
            base[name] = list(values)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{step}.jsonl"
    lines = [json.dumps({key: values[i] for key, values in base.items()}, ensure_ascii=False) for i in range(n)]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target
