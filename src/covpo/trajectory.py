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
from covpo.policies import base_log_policy, expected_kl, expected_reward, log_coverage
from covpo.validation import check_count, check_finite_array, check_nonnegative

LOG10_E = np.log10(np.e)


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
        if self.generation_rounds is None:
            object.__setattr__(self, "generation_rounds", np.zeros_like(self.gradient_steps))

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
        return max(0.0, float(np.max(log_base_coverage - self.log_coverage)) * LOG10_E)

    @property
    def total_gradient_steps(self) -> int:
        """Gradient steps of the whole run."""
        return int(self.gradient_steps[-1])

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
        self.algorithm = algorithm
        self.optimal_value = float(optimal_value)
        self.settings = dict(settings or {})
        self.gradient_steps = 0
        self.responses_sampled = 0
        self.reference_resets = 0
        self.generation_rounds = 0
        self._rows: list[tuple[int, int, int, int, float, np.ndarray, float]] = []

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
        coverage = np.atleast_1d(np.asarray(log_coverage, dtype=float)).copy()
        self._rows.append(
            (
                self.gradient_steps,
                self.responses_sampled,
                self.reference_resets,
                self.generation_rounds,
                float(reward),
                coverage,
                float(kl_to_base),
            )
        )

    def record_policy(self, instance: BanditInstance, log_probs: np.ndarray, log_base: np.ndarray | None = None) -> None:
        """Keep an iterate given as a log-probability table: its reward, log coverage and KL to ``pi_0``.

        ``log_base`` is the base model's table; by default the softmax-linear ``pi_0`` of ``instance``.
        """
        self.record(
            expected_reward(instance, log_probs),
            log_coverage(instance, log_probs),
            expected_kl(instance, log_probs, base_log_policy(instance) if log_base is None else log_base),
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
            thetas=None if thetas is None else np.vstack(thetas),
            inner_kl=None if inner_kl is None else np.asarray(inner_kl, dtype=float),
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
    steps = np.asarray(gradient_steps, dtype=np.int64)
    n_records = steps.shape[0]
    zeros = np.zeros(n_records, dtype=np.int64)
    coverage = np.asarray(log_coverage, dtype=float)
    if coverage.ndim == 1:
        coverage = coverage[:, None]
    for name, array in (("reward", reward), ("kl_to_base", kl_to_base)):
        if np.shape(array) != (n_records,):
            raise ValueError(f"{name} must have shape {(n_records,)}, got {np.shape(array)}")
    if coverage.shape[0] != n_records:
        raise ValueError(f"log_coverage must have {n_records} rows, got {coverage.shape[0]}")
    return Trajectory(
        algorithm=algorithm,
        gradient_steps=steps,
        responses_sampled=zeros if responses_sampled is None else np.asarray(responses_sampled, dtype=np.int64),
        reference_resets=zeros if reference_resets is None else np.asarray(reference_resets, dtype=np.int64),
        reward=check_finite_array("reward", reward, ndim=1),
        log_coverage=coverage,
        kl_to_base=np.asarray(kl_to_base, dtype=float),
        optimal_value=float(optimal_value),
        settings=dict(settings or {}),
        generation_rounds=zeros if generation_rounds is None else np.asarray(generation_rounds, dtype=np.int64),
    )
