"""The success rule: which logged completions count as solving their prompt.

A trainer's log records rewards, not successes. The diagnosis needs a yes or no per completion,
the analogue of drawing the optimal answer in the paper's bandit (paper section 2, where a
prompt's coverage is the probability of its best response). The rule is stated, never guessed:

* the reward of a row is one chosen reward column, or the weighted sum of several with weights
  ``w`` (TRL's ``reward_weights``: ``GRPOTrainer`` sums ``rewards_per_func * reward_weights``
  with NaN entries skipped, and a row whose every reward is NaN, one no reward function scored,
  has no reward);
* a row succeeds when its reward is at least ``threshold``; a row with no reward is dropped
  from the diagnosis and counted.

With one reward column it is the default; with several, the rule must be chosen (a column, or
weights: TRL's default ``reward_weights`` are all 1), since a log's numeric columns may include a
reward function's extra values (``log_extra``) that are no reward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from covpo.validation import check_text

#: The default threshold (a verifier's reward of 1, or more, for a correct answer counts as solved).
DEFAULT_THRESHOLD = 1.0


@dataclass(frozen=True)
class SuccessRule:
    """A row succeeds when ``sum_i weights[i] * reward[columns[i]] >= threshold`` (NaN terms skipped).

    Attributes
    ----------
    columns
        The reward columns the rule reads, in the log's order.
    weights
        One weight per column (TRL's ``reward_weights``).
    threshold
        The reward at or above which a row counts as solved.
    """

    columns: tuple[str, ...]
    weights: tuple[float, ...]
    threshold: float

    def describe(self) -> str:
        """The rule in words, e.g. ``"accuracy >= 1"`` or ``"1 x accuracy + 0.5 x format >= 1.2"``."""
        if len(self.columns) == 1 and self.weights[0] == 1.0:
            reward = self.columns[0]
        else:
            reward = " + ".join(f"{weight:g} x {column}" for column, weight in zip(self.columns, self.weights))
        return f"{reward} >= {self.threshold:g}"

    def reward(self, rewards: Mapping[str, np.ndarray]) -> np.ndarray:
        """The rule's reward of every row: the weighted sum of its columns, NaN where every term is NaN."""
        missing = [column for column in self.columns if column not in rewards]
        if missing:
            raise ValueError(f"rewards must hold the rule's columns {list(self.columns)}, missing {missing}")
        stacked = np.stack([np.asarray(rewards[column], dtype=float) for column in self.columns])
        total = np.nansum(stacked * np.asarray(self.weights)[:, None], axis=0)
        total[np.all(np.isnan(stacked), axis=0)] = np.nan
        return total

    def success(self, reward: np.ndarray) -> np.ndarray:
        """Whether each reward reaches the threshold (False for NaN; callers drop NaN rows first)."""
        return np.asarray(reward, dtype=float) >= self.threshold


def success_rule(
    available: Sequence[str],
    *,
    reward: str | None = None,
    reward_weights: Sequence[float] | Mapping[str, float] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> SuccessRule:
    """The success rule over a log's reward columns ``available`` (TRL: paper section 5's GRPO setting).

    Parameters
    ----------
    available
        The log's reward columns, in the order the trainer wrote them.
    reward
        One column to read alone. Exclusive with ``reward_weights``.
    reward_weights
        Weights of a weighted sum: a mapping from column to weight, or one weight per column of
        ``available`` in order (TRL's ``reward_weights``, one per reward function).
    threshold
        The reward at or above which a row counts as solved (a finite number).

    Returns
    -------
    SuccessRule

    Raises
    ------
    ValueError
        For an unknown ``reward`` column, weights that do not match the columns, both choices at
        once, or a threshold that is not a finite number.
    """
    if isinstance(available, (str, bytes)) or not isinstance(available, Sequence):
        raise ValueError(f"available must be a sequence of reward column names, got {available!r}")
    columns = tuple(available)
    if not columns or not all(isinstance(column, str) and column for column in columns):
        raise ValueError(f"available must name at least one reward column by a non-empty string, got {available!r}")
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, (int, float, np.integer, np.floating)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    if not np.isfinite(float(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    if reward is not None and reward_weights is not None:
        raise ValueError("reward and reward_weights are exclusive: choose one column or a weighted sum")
    if reward is not None:
        check_text("reward", reward)
        if reward not in columns:
            raise ValueError(f"reward must be one of the log's available reward columns {list(columns)}, got {reward!r}")
        return SuccessRule((reward,), (1.0,), float(threshold))
    if reward_weights is None:
        if len(columns) > 1:
            raise ValueError(
                f"reward must name one of the log's reward columns {list(columns)}, or reward_weights weigh them: "
                "with several reward columns the rule is not guessed"
            )
        return SuccessRule(columns, (1.0,), float(threshold))
    if isinstance(reward_weights, Mapping):
        unknown = sorted(set(reward_weights) - set(columns))
        if unknown or not reward_weights:
            raise ValueError(
                f"reward_weights must map some of the log's reward columns {list(columns)} to weights, got {dict(reward_weights)!r}"
            )
        chosen = tuple(column for column in columns if column in reward_weights)
        weights = tuple(reward_weights[column] for column in chosen)
    else:
        if isinstance(reward_weights, (str, bytes)) or len(reward_weights) != len(columns):
            raise ValueError(
                f"reward_weights must give one weight per reward column {list(columns)}, got {reward_weights!r}"
            )
        chosen, weights = columns, tuple(reward_weights)
    for weight in weights:
        if isinstance(weight, (bool, np.bool_)) or not isinstance(weight, (int, float, np.integer, np.floating)) or not np.isfinite(weight):
            raise ValueError(f"reward_weights must be finite numbers, got {reward_weights!r}")
    return SuccessRule(chosen, tuple(float(weight) for weight in weights), float(threshold))
