"""Reward targets against a comparator policy, read off chapter 4's cost sweeps (paper appendix F.1).

The paper's appendix F.1 extends the APMD guarantee from the optimum to any comparator policy
``pi~``: combined with the sample bounds of PPO-NoClip and PPO-Lite, it bounds the responses
needed to reach the reward target ``J(pi~) - eps``, through the base model's coverage of the
comparator. :func:`comparator_targets` measures that on the runs of a
:class:`~covpo.experiments.sweeps.SeededCostSweep`: for each comparator, accuracy and run, the
responses sampled at the first record whose expected reward reaches ``J(pi~) - eps``.

The comparators here are ours: the base model restricted to the responses whose reward lies in
a given set and renormalized (:func:`restricted_base`), whose coverage coefficient by the base
model, ``E_x E_{y ~ pi~}[pi~(y|x) / pi_0(y|x)]``, is ``E_x 1 / pi_0(S(x) | x)`` for the kept set
``S(x)`` (:func:`comparator_coverage`; the optimum's is ``C_cov``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from covpo.fits import fit_line
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, expected_reward
from covpo.table import Table
from covpo.validation import check_instance, check_instances, check_positive_grid

from covpo.experiments.sweeps import SeededCostSweep


def _real_array(name: str, value: object) -> np.ndarray:
    """``value`` as a float array if it holds real numbers (no complex, text or objects), else raise naming ``name``."""
    array = np.asarray(value) if not isinstance(value, (str, bytes)) else np.asarray([value])
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold real numbers, got {value!r}")
    return array.astype(float)


def restricted_base(instance: BanditInstance, rewards_kept: Sequence[float]) -> np.ndarray:
    """Log-probabilities of the base model restricted to responses whose reward is in ``rewards_kept``, renormalized per prompt.

    Raises ``ValueError`` naming ``rewards_kept`` when some prompt has no such response.
    """
    instance = check_instance("instance", instance, BanditInstance)
    levels = _real_array("rewards_kept", rewards_kept)
    if levels.ndim != 1 or levels.size == 0 or not np.all(np.isfinite(levels)):
        raise ValueError(f"rewards_kept must be a non-empty sequence of finite rewards, got {rewards_kept!r}")
    kept = np.isclose(instance.rewards[..., None], levels, rtol=0.0, atol=1e-12).any(axis=-1)
    if not kept.any(axis=1).all():
        raise ValueError(f"rewards_kept must name a reward of every prompt, got {rewards_kept!r}")
    log_base = np.where(kept, base_log_policy(instance), -np.inf)
    return log_base - logsumexp(log_base, axis=1, keepdims=True)


def comparator_coverage(instance: BanditInstance, log_comparator: np.ndarray) -> float:
    """The base model's coverage coefficient of a comparator, ``E_x sum_y pi~(y|x)^2 / pi_0(y|x)`` (our definition), in log space."""
    instance = check_instance("instance", instance, BanditInstance)
    log_comparator = _real_array("log_comparator", log_comparator)
    if log_comparator.shape != instance.rewards.shape or np.any(np.isnan(log_comparator)) or np.any(log_comparator > 0):
        raise ValueError(f"log_comparator must be log-probabilities (<= 0) of shape {instance.rewards.shape}, got {log_comparator!r}")
    per_prompt = logsumexp(2.0 * log_comparator - base_log_policy(instance), axis=1)
    return float(instance.prompt_probs @ np.exp(per_prompt))


@dataclass(frozen=True, eq=False)
class ComparatorTargets:
    """Responses to ``J(pi~) - eps`` per seed, method, comparator, accuracy and coverage.

    Attributes
    ----------
    names
        The comparators, ``(n_comparators,)``.
    methods
        The method labels measured.
    seeds, coverages, eps
        The sweep's seeds and ``C_cov`` grid, and the accuracies.
    comparator_reward
        ``J(pi~)`` per comparator (the same on every instance of the family), ``(n_comparators,)``.
    comparator_coverage
        The base model's coverage coefficient of each comparator on each instance, ``(n_comparators, n_coverages)``.
    responses
        Responses at the first record with ``J >= J(pi~) - eps``, ``-1`` where never reached,
        ``(n_seeds, n_methods, n_comparators, n_eps, n_coverages)``.
    """

    names: tuple[str, ...]
    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    coverages: np.ndarray
    eps: np.ndarray
    comparator_reward: np.ndarray
    comparator_coverage: np.ndarray
    responses: np.ndarray

    @property
    def reached(self) -> np.ndarray:
        """Whether each run reached its target, the shape of :attr:`responses`."""
        return self.responses >= 0

    def scaling_fit(self, method: str) -> tuple[float, float, float]:
        """Least squares of ``log10`` median responses on ``log10`` comparator coverage and ``log10 (1/eps)``.

        Over the (comparator, eps, coverage) cells where every seed reached the target; returns
        the exponent of the coverage, the exponent of ``1/eps`` and ``R^2``.
        """
        if method not in self.methods:
            raise ValueError(f"method must be one of {self.methods}, got {method!r}")
        runs = self.responses[:, self.methods.index(method)]
        everywhere = (runs >= 0).all(axis=0)
        median = np.median(np.where(runs >= 0, runs, np.nan), axis=0)
        coverage = np.broadcast_to(self.comparator_coverage[:, None, :], everywhere.shape)
        inverse_eps = np.broadcast_to(1.0 / self.eps[None, :, None], everywhere.shape)
        design = np.column_stack([np.ones(everywhere.sum()), np.log10(coverage[everywhere]),
                                  np.log10(inverse_eps[everywhere])])
        target = np.log10(median[everywhere])
        if everywhere.sum() < 4:
            raise ValueError(f"{method!r} reached fewer than four targets in every seed; no fit")
        solution, *_ = np.linalg.lstsq(design, target, rcond=None)
        residual = target - design @ solution
        r_squared = 1.0 - residual @ residual / np.sum((target - target.mean()) ** 2)
        return float(solution[1]), float(solution[2]), float(r_squared)

    def table(self, caption: str = "") -> Table:
        """One row per method, comparator and eps: seeds x coverages reaching the target, median responses per coverage."""
        rows = []
        for m, method in enumerate(self.methods):
            for c, name in enumerate(self.names):
                for e, eps in enumerate(self.eps):
                    runs = self.responses[:, m, c, e]
                    reached = runs >= 0
                    medians = [float(np.median(runs[:, j][reached[:, j]])) if reached[:, j].any() else None
                               for j in range(self.coverages.size)]
                    rows.append((method, name, float(eps), f"{int(reached.sum())} of {reached.size}", *medians))
        return Table(
            ("method", "comparator $\\tilde\\pi$", "ε", "runs reaching $J(\\tilde\\pi) - ε$",
             *(f"median responses, $C_{{\\mathrm{{cov}}}}$ = {c:g}" for c in self.coverages)),
            tuple(rows),
            caption=caption or "Responses to the reward target $J(\\tilde\\pi) - ε$",
            notes=("Medians over the seeds that reached the target at that coverage; a dash where none did.",),
        )


def comparator_targets(
    sweeps: SeededCostSweep,
    instances: Sequence[BanditInstance],
    comparators: Mapping[str, Sequence[float]],
    eps: Sequence[float],
    labels: Sequence[str],
) -> ComparatorTargets:
    """Responses to ``J(pi~) - eps`` of the kept runs of ``sweeps`` for every comparator and accuracy (paper appendix F.1).

    Parameters
    ----------
    sweeps
        A :class:`~covpo.experiments.sweeps.SeededCostSweep` built with its runs' reward records
        (:func:`~covpo.experiments.sweeps.cost_sweeps`).
    instances
        The sweep's instances, one per coverage.
    comparators
        Name to the rewards a comparator keeps (:func:`restricted_base`); at least one.
    eps
        The accuracies, each ``> 0``.
    labels
        The methods to measure, labels of the sweep.
    """
    sweeps = check_instance("sweeps", sweeps, SeededCostSweep)
    instances = check_instances("instances", instances, BanditInstance)
    if len(instances) != sweeps.coverages.size:
        raise ValueError(f"instances must hold one instance per coverage ({sweeps.coverages.size}), got {len(instances)}")
    if not isinstance(comparators, Mapping) or not comparators:
        raise ValueError(f"comparators must be a non-empty mapping of name to rewards kept, got {comparators!r}")
    eps = check_positive_grid("eps", eps)
    if isinstance(labels, str) or not isinstance(labels, Sequence) or not labels or not all(
        isinstance(label, str) and label in [m.label for m in sweeps.methods] for label in labels
    ):
        raise ValueError(f"labels must be a non-empty sequence of the sweep's method labels, got {labels!r}")
    rows = sweeps.rows(labels)
    for kept in comparators.values():
        restricted_base(instances[0], kept)  # a bad comparator raises naming rewards_kept
    logs = {name: [restricted_base(instance, kept) for instance in instances] for name, kept in comparators.items()}
    rewards = np.array([[expected_reward(i, log) for i, log in zip(instances, logs[name])] for name in comparators])
    coverage = np.array([[comparator_coverage(i, log) for i, log in zip(instances, logs[name])] for name in comparators])
    responses = np.full((len(sweeps.seeds), len(rows), len(comparators), eps.size, len(instances)), -1, dtype=np.int64)
    for s, sweep in enumerate(sweeps.sweeps):
        if not sweep.best_runs:
            raise ValueError("sweeps must keep their runs' records (built by cost_sweeps)")
        for m, row in enumerate(rows):
            for j, summary in enumerate(sweep.best_runs[row]):
                if summary is None:
                    continue
                for c in range(len(comparators)):
                    for e, accuracy in enumerate(eps):
                        hit = summary.responses_to_reward(rewards[c, j] - accuracy)
                        responses[s, m, c, e, j] = -1 if hit is None else hit
    return ComparatorTargets(
        names=tuple(comparators),
        methods=tuple(labels),
        seeds=sweeps.seeds,
        coverages=sweeps.coverages,
        eps=eps,
        comparator_reward=rewards.mean(axis=1),
        comparator_coverage=coverage,
        responses=responses,
    )
