"""The one record every algorithm returns, with the cost accounting in one place.

The paper's claims are about two costs, responses sampled and gradient steps, plus the
number of reference resets an algorithm performs and the rounds in which it generates
responses (one round per fresh batch, however many gradient steps reuse it). Algorithms
never count these themselves: they report events to a :class:`TrajectoryRecorder`, which also stores the
per-record reward, per-prompt log coverage and KL to the base model, and turns all of it
into an immutable :class:`Trajectory`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from covpo.instances import BanditInstance
from covpo.policies import (
    check_bandit,
    check_policy,
    unchecked_expected_kl,
    unchecked_expected_reward,
    unchecked_log_coverage,
    unchecked_log_policy,
)
from covpo.validation import check_count, check_finite_array, check_instance, check_nonnegative, check_real_array

LOG10_E = np.log10(np.e)
LOG_COVERAGE_TOLERANCE = 1e-8
"""Rounding slack above 0 allowed in a log coverage (an optimal set holding all the mass)."""


@dataclass(frozen=True)
class Trajectory:
    """What an algorithm did and what it cost, one row per recorded iterate.

    Attributes
    ----------
    algorithm
        A short name of the algorithm that produced the run.
    gradient_steps, responses_sampled, reference_resets, generation_rounds
        Cumulative costs at each recorded iterate, shape ``(n_records,)``. A generation
        round is one fresh batch drawn from the current policy (an outer iteration of
        PPO, one REINFORCE step); the gradient steps that reuse it cost no further round.
    reward
        Expected reward ``J(pi)`` of each recorded iterate (paper section 1.2).
    log_coverage
        Natural log of the coverage ``pi(Y*(x)|x)`` per prompt, shape ``(n_records, n_prompts)``;
        stays finite far below ``1e-300``.
    kl_to_base
        ``E_x KL(pi(.|x) || pi_0(.|x))`` of each recorded iterate.
    optimal_value
        ``J*`` of the instance, so suboptimality needs nothing else.
    settings
        The hyperparameters the run used, for labels and tables.
    generation_rounds
        See the costs above; zeros for exact-gradient runs, which sample nothing.
    thetas
        Parameters after each outer iteration, ``theta_0`` first, shape
        ``(n_iterations + 1, dim)``; ``None`` for runs that do not keep them.
    inner_kl
        For instances of APMD, ``E_x KL(pi_{t+1} || pi*_{t+1})`` per outer iteration: how
        accurately each inner loop solved its subproblem (paper section 3.1); ``None`` otherwise.
    """

    algorithm: str
    gradient_steps: np.ndarray
    responses_sampled: np.ndarray
    reference_resets: np.ndarray
    reward: np.ndarray
    log_coverage: np.ndarray
    kl_to_base: np.ndarray
    optimal_value: float
    settings: dict = field(default_factory=dict)
    generation_rounds: np.ndarray | None = None
    thetas: np.ndarray | None = None
    inner_kl: np.ndarray | None = None

    def __post_init__(self) -> None:
        check_instance("algorithm", self.algorithm, str)
        steps = _check_costs("gradient_steps", self.gradient_steps)
        n_records = steps.shape[0]
        if n_records == 0:
            raise ValueError("gradient_steps must hold at least one record, got an empty array")
        checked = {
            "reward": _check_records("reward", check_finite_array("reward", self.reward, ndim=1), n_records),
            "log_coverage": _check_log_coverage_rows(self.log_coverage, n_records),
            "kl_to_base": _check_kl(self.kl_to_base, n_records),
            "optimal_value": float(check_finite_array("optimal_value", self.optimal_value, ndim=0)),
            "settings": check_instance("settings", self.settings, dict),
        }
        for name in ("responses_sampled", "reference_resets", "generation_rounds"):
            value = getattr(self, name)
            if value is None and name == "generation_rounds":
                value = np.zeros(n_records, dtype=np.int64)
            checked[name] = _check_costs(name, value, n_records)
        checked["gradient_steps"] = steps
        if self.thetas is not None:
            checked["thetas"] = check_finite_array("thetas", self.thetas, ndim=2)
        if self.inner_kl is not None:
            inner_kl = check_real_array("inner_kl", self.inner_kl, ndim=1)
            if np.any(np.isnan(inner_kl)) or np.any(inner_kl < 0.0):
                raise ValueError("inner_kl must hold KL divergences >= 0 (no NaN)")
            checked["inner_kl"] = inner_kl
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def n_records(self) -> int:
        """Number of recorded iterates."""
        return int(self.reward.shape[0])

    @property
    def suboptimality(self) -> np.ndarray:
        """``J* - J(pi)`` of each recorded iterate."""
        return self.optimal_value - self.reward

    @property
    def log10_coverage(self) -> np.ndarray:
        """Base-10 log coverage per prompt, for plots and tables."""
        return self.log_coverage * LOG10_E

    @property
    def min_log10_coverage(self) -> float:
        """The lowest base-10 log coverage over all records and prompts."""
        return float(self.log10_coverage.min())

    def coverage_loss(self, log_base_coverage: np.ndarray) -> float:
        """The largest fall of any prompt's coverage below ``log_base_coverage`` over the records, in decades (``>= 0``)."""
        log_base_coverage = check_real_array("log_base_coverage", log_base_coverage)
        if np.any(np.isnan(log_base_coverage)) or np.any(log_base_coverage > LOG_COVERAGE_TOLERANCE):
            raise ValueError("log_base_coverage must hold log coverages <= 0 (no NaN)")
        if log_base_coverage.ndim > 1 or log_base_coverage.size not in (1, self.log_coverage.shape[1]):
            raise ValueError(
                f"log_base_coverage must be one value or one per prompt ({self.log_coverage.shape[1]}), "
                f"got shape {log_base_coverage.shape}"
            )
        return max(0.0, float(np.max(log_base_coverage - self.log_coverage)) * LOG10_E)

    @property
    def total_gradient_steps(self) -> int:
        """Gradient steps of the whole run."""
        return int(self.gradient_steps[-1])

    @property
    def total_resets(self) -> int:
        """Reference resets of the whole run."""
        return int(self.reference_resets[-1])

    @property
    def total_generation_rounds(self) -> int:
        """Generation rounds of the whole run."""
        return int(self.generation_rounds[-1])

    @property
    def total_responses(self) -> int:
        """Responses sampled in the whole run."""
        return int(self.responses_sampled[-1])

    def first_eps_optimal(self, eps: float) -> int | None:
        """Index of the first record with ``J* - J(pi) <= eps``, or ``None`` if none is."""
        check_nonnegative("eps", eps)
        hits = np.flatnonzero(self.suboptimality <= eps)
        return int(hits[0]) if hits.size else None

    def steps_to_eps(self, eps: float) -> int | None:
        """Cumulative gradient steps at the first eps-optimal record, or ``None``."""
        index = self.first_eps_optimal(eps)
        return None if index is None else int(self.gradient_steps[index])

    def responses_to_eps(self, eps: float) -> int | None:
        """Cumulative responses sampled at the first eps-optimal record, or ``None``."""
        index = self.first_eps_optimal(eps)
        return None if index is None else int(self.responses_sampled[index])


class TrajectoryRecorder:
    """Counts an algorithm's costs as they happen and records its iterates.

    Algorithms call :meth:`count_gradient_steps`, :meth:`count_responses` (which also
    counts one generation round per call), and :meth:`count_reset` when they spend, and :meth:`record` when they want an iterate
    kept; :meth:`finish` freezes the result.
    """

    def __init__(self, algorithm: str, optimal_value: float, settings: dict | None = None) -> None:
        self.algorithm = check_instance("algorithm", algorithm, str)
        self.optimal_value = float(check_finite_array("optimal_value", optimal_value, ndim=0))
        self.settings = dict(check_instance("settings", {} if settings is None else settings, dict))
        self.gradient_steps = 0
        self.responses_sampled = 0
        self.reference_resets = 0
        self.generation_rounds = 0
        self._rows: list[tuple[int, int, int, int, float, np.ndarray, float]] = []
        self._base: tuple[BanditInstance, np.ndarray] | None = None

    def count_gradient_steps(self, count: int = 1) -> None:
        """Add ``count`` gradient steps."""
        self.gradient_steps += check_count("count", count, minimum=0)

    def count_responses(self, count: int) -> None:
        """Add one generation round of ``count`` sampled responses (every response drawn, baselines included)."""
        self.responses_sampled += check_count("count", count, minimum=0)
        self.generation_rounds += 1

    def count_reset(self) -> None:
        """Add one reset of the reference policy."""
        self.reference_resets += 1

    def record(self, reward: float, log_coverage: np.ndarray, kl_to_base: float) -> None:
        """Keep the current iterate's reward, per-prompt log coverage and KL to the base model."""
        reward = float(check_finite_array("reward", reward, ndim=0))
        coverage = _check_log_coverage_rows(np.atleast_1d(check_real_array("log_coverage", log_coverage))[None, :], 1)[0]
        if self._rows and coverage.shape != self._rows[0][5].shape:
            raise ValueError(
                f"log_coverage must have one value per prompt like the earlier records ({self._rows[0][5].size}), "
                f"got {coverage.size}"
            )
        kl_to_base = float(_check_kl(np.atleast_1d(check_finite_array("kl_to_base", kl_to_base, ndim=0)), 1)[0])
        self._rows.append(
            (
                self.gradient_steps,
                self.responses_sampled,
                self.reference_resets,
                self.generation_rounds,
                reward,
                coverage,
                kl_to_base,
            )
        )

    def record_policy(self, instance: BanditInstance, log_probs: np.ndarray, log_base: np.ndarray | None = None) -> None:
        """Keep an iterate given as a log-probability table: its reward, log coverage and KL to ``pi_0``.

        ``log_base`` is the base model's table; by default the softmax-linear ``pi_0`` of ``instance``.
        """
        instance = check_bandit("instance", instance)
        log_probs = check_policy("log_probs", instance, log_probs)
        if log_base is not None:
            log_base = check_policy("log_base", instance, log_base)
        self.record_iterate(instance, log_probs, log_base)

    def record_iterate(self, instance: BanditInstance, log_probs: np.ndarray, log_base: np.ndarray | None = None) -> None:
        """:meth:`record_policy` for a table an algorithm computed itself from validated parameters.

        Nothing is checked again (the algorithms call this at every recorded iterate), and the
        softmax-linear base table is computed once per recorder.
        """
        if log_base is None:
            if self._base is None or self._base[0] is not instance:
                self._base = (instance, unchecked_log_policy(instance, instance.base_theta))
            log_base = self._base[1]
        self.record(
            unchecked_expected_reward(instance, log_probs),
            unchecked_log_coverage(instance, log_probs),
            unchecked_expected_kl(instance, log_probs, log_base),
        )

    def finish(self, thetas: np.ndarray | None = None, inner_kl: np.ndarray | None = None) -> Trajectory:
        """Freeze the records into a :class:`Trajectory`, with the outer iterates and inner accuracies if kept."""
        if not self._rows:
            raise ValueError("a trajectory needs at least one record; call record() first")
        steps, responses, resets, rounds, reward, coverage, kl = zip(*self._rows)
        return Trajectory(
            algorithm=self.algorithm,
            gradient_steps=np.array(steps, dtype=np.int64),
            responses_sampled=np.array(responses, dtype=np.int64),
            reference_resets=np.array(resets, dtype=np.int64),
            reward=check_finite_array("reward", reward, ndim=1),
            log_coverage=np.vstack(coverage),
            kl_to_base=np.array(kl, dtype=float),
            optimal_value=self.optimal_value,
            settings=self.settings,
            generation_rounds=np.array(rounds, dtype=np.int64),
            thetas=None if thetas is None else np.vstack(check_finite_array("thetas", thetas)),
            inner_kl=inner_kl,
        )


def trajectory_from_arrays(
    algorithm: str,
    optimal_value: float,
    gradient_steps: np.ndarray,
    reward: np.ndarray,
    log_coverage: np.ndarray,
    kl_to_base: np.ndarray,
    responses_sampled: np.ndarray | None = None,
    reference_resets: np.ndarray | None = None,
    settings: dict | None = None,
    generation_rounds: np.ndarray | None = None,
) -> Trajectory:
    """Build a :class:`Trajectory` from arrays that a compiled engine filled in one go.

    Costs default to zero where an algorithm spends none (exact-gradient methods sample no
    responses; fixed-reference methods never reset).
    """
    check_instance("algorithm", algorithm, str)
    steps = _check_costs("gradient_steps", gradient_steps)
    n_records = steps.shape[0]
    zeros = np.zeros(n_records, dtype=np.int64)
    coverage = check_real_array("log_coverage", log_coverage)
    if coverage.ndim == 1:
        coverage = coverage[:, None]
    return Trajectory(
        algorithm=algorithm,
        gradient_steps=steps,
        responses_sampled=zeros if responses_sampled is None else responses_sampled,
        reference_resets=zeros if reference_resets is None else reference_resets,
        reward=reward,
        log_coverage=coverage,
        kl_to_base=kl_to_base,
        optimal_value=optimal_value,
        settings=dict(check_instance("settings", {} if settings is None else settings, dict)),
        generation_rounds=zeros if generation_rounds is None else generation_rounds,
    )


def _check_costs(name: str, value: object, n_records: int | None = None) -> np.ndarray:
    """Cumulative costs: a one-dimensional array of non-negative integers, one per record."""
    array = check_real_array(name, value, ndim=1)
    if n_records is not None:
        _check_records(name, array, n_records)
    if not np.all(np.isfinite(array)) or np.any(array != np.round(array)) or np.any(array < 0):
        raise ValueError(f"{name} must hold non-negative integer counts, got {value!r}")
    return array.astype(np.int64)


def _check_log_coverage_rows(value: object, n_records: int) -> np.ndarray:
    """Log coverages, one row per record and one column per prompt: ``<= 0``, ``-inf`` allowed, NaN not."""
    coverage = check_real_array("log_coverage", value)
    if coverage.ndim != 2 or coverage.shape[0] != n_records or coverage.shape[1] == 0:
        raise ValueError(
            f"log_coverage must have one row of per-prompt values per record ({n_records}, as in gradient_steps), "
            f"got shape {coverage.shape}"
        )
    if np.any(np.isnan(coverage)) or np.any(coverage > LOG_COVERAGE_TOLERANCE):
        raise ValueError("log_coverage must hold log coverages <= 0 (no NaN or positive values)")
    return coverage


def _check_kl(value: object, n_records: int) -> np.ndarray:
    """KL divergences to the base model (which has full support), one per record: finite and ``>= 0``."""
    kl = _check_records("kl_to_base", check_finite_array("kl_to_base", value), n_records)
    if np.any(kl < 0.0):
        raise ValueError(f"kl_to_base must hold KL divergences >= 0, found {kl[kl < 0.0][0]!r}")
    return kl


def _check_records(name: str, array: np.ndarray, n_records: int) -> np.ndarray:
    """Raise unless ``array`` holds one value per record (as many as ``gradient_steps``)."""
    if array.shape != (n_records,):
        raise ValueError(f"{name} must have shape {(n_records,)}, one value per entry of gradient_steps, got {array.shape}")
    return array
