"""Importance ratios and clip activity of an inner loop, recorded through ``on_inner_step``.

Paper appendix G bounds the policy ratio ``pi_theta / pi_t`` that the importance-weighted
inner loops of Algorithms 1 and 2 (and GRPO, KimiPO, Rebel) multiply by; section 3.3
clips it. A trajectory does not hold these ratios. A :class:`RatioRecorder` passed as
``on_inner_step`` to such an algorithm collects them, one row per inner iterate
``theta_{t,k}``, ``k = 0, ..., K``, and :meth:`RatioRecorder.finish` freezes them into a
:class:`RatioRecord`, aligned with the trajectory by the cumulative gradient-step count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo.algorithms.outer_loop import InnerStep


@dataclass(frozen=True, eq=False)
class RatioRecord:
    """Importance ratios and clip activity of a run, one row per inner iterate ``theta_{t,k}``.

    Row ``(t, k)`` is measured at the iterate after ``k`` of the ``K`` inner steps of outer
    iteration ``t`` (``k = 0`` is the start, where every ratio is 1; ``k = K`` is the iterate
    handed back). Ratios are to the policy the batch was drawn from (``pi_t`` in APMD).

    Attributes
    ----------
    iteration, inner_step
        ``t`` and ``k`` of each row.
    gradient_steps
        Cumulative gradient steps of the run at that iterate, the horizontal axis of
        :class:`~covpo.trajectory.Trajectory`, so rows line up with its records.
    batch_log_ratio_min, batch_log_ratio_max
        Extremes of ``log w_i`` over the reused batch: the weights the estimator multiplies by.
    log_ratio_min, log_ratio_max
        Extremes of ``log pi_theta(y|x) / pi_old(y|x)`` over every response of every prompt
        with ``rho(x) > 0``: the policy ratio bounds of the paper's analysis (appendix G).
    clip_fraction
        Fraction of the batch whose gradient the clip removes at this iterate (the gradient of
        step ``k + 1`` is taken here); 0 for PPO-NoClip.
    """

    iteration: np.ndarray
    inner_step: np.ndarray
    gradient_steps: np.ndarray
    batch_log_ratio_min: np.ndarray
    batch_log_ratio_max: np.ndarray
    log_ratio_min: np.ndarray
    log_ratio_max: np.ndarray
    clip_fraction: np.ndarray

    @property
    def n_rows(self) -> int:
        """Number of recorded inner iterates."""
        return int(self.iteration.shape[0])

    @property
    def ratio_bounds(self) -> tuple[float, float]:
        """``(min, max)`` of the policy ratio ``pi_theta / pi_old`` over all rows, prompts and responses."""
        return float(np.exp(self.log_ratio_min.min())), float(np.exp(self.log_ratio_max.max()))

    @property
    def batch_ratio_bounds(self) -> tuple[float, float]:
        """``(min, max)`` of the importance weights on the reused batches over the whole run."""
        return float(np.exp(self.batch_log_ratio_min.min())), float(np.exp(self.batch_log_ratio_max.max()))

    @property
    def mean_clip_fraction(self) -> float:
        """Average clip fraction over the iterates at which gradients were taken (``k < K``)."""
        returned = np.r_[self.iteration[1:] != self.iteration[:-1], True]
        return float(self.clip_fraction[~returned].mean()) if np.any(~returned) else 0.0


class RatioRecorder:
    """An ``on_inner_step`` callback that keeps every inner iterate's ratios; :meth:`finish` freezes them.

    Pass one to an algorithm, ``ppo_noclip(instance, ..., on_inner_step=recorder)``, then call
    ``recorder.finish()`` for the :class:`RatioRecord` of the run (paper appendix G).
    """

    def __init__(self) -> None:
        self._rows: list[tuple[int, int, int, float, float, float, float, float]] = []

    def __call__(self, step: InnerStep) -> None:
        """Keep the ratio extremes and clip fraction of one inner iterate.

        The batch extremes are over ``log w_i`` on the reused batch; the table extremes over
        ``log pi_theta(y|x) - log pi_old(y|x)`` for every response of every prompt with ``rho(x) > 0``.
        """
        batch_log_ratio = step.batch_log_ratio
        log_ratio_table = (step.log_probs - step.log_sampling)[step.instance.prompt_probs > 0.0]
        self._rows.append(
            (
                int(step.iteration),
                int(step.inner_step),
                int(step.gradient_steps),
                float(np.min(batch_log_ratio)),
                float(np.max(batch_log_ratio)),
                float(np.min(log_ratio_table)),
                float(np.max(log_ratio_table)),
                float(step.clip_fraction),
            )
        )

    def finish(self) -> RatioRecord:
        """Freeze the rows into a :class:`RatioRecord`."""
        if not self._rows:
            raise ValueError("a ratio record needs at least one row; run an algorithm with this recorder first")
        columns = list(zip(*self._rows))
        integers = [np.array(column, dtype=np.int64) for column in columns[:3]]
        floats = [np.array(column, dtype=float) for column in columns[3:]]
        return RatioRecord(*integers, *floats)
