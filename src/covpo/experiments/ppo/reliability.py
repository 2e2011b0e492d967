"""How often the reset methods reach eps on the collapse family, against batch size and inner steps.

Paper sections 3.2 and 3.3, appendices G and H.4: PPO-NoClip, PPO-Lite and GRPO with reference
resets are coverage-preserving when their batches and inner loops are large enough, with sizes
that the paper bounds by a polynomial in ``C_cov`` (and ``1/eps``, ``log(1/delta)``, the class's
complexity). Chapter 4's cost sweep of the collapse family (:func:`~covpo.experiments.sweeps.cost_sweep`
with :func:`~covpo.experiments.sweeps.collapse_family_methods`) runs them at one batch size and one
inner-loop length for every coverage; this module measures, over seeds, how often those settings
and larger ones reach eps:

- :func:`reliability_methods` and :func:`scaled_method`: the chapter's three reset methods, and one
  with its batch and inner loop multiplied;
- :func:`reliability_study`: every method at every coverage, batch multiplier, inner-step
  multiplier and seed, each run seeded as the chapter's sweep seeds it, so that a cell at the
  chapter's settings is the chapter's cell bit for bit; a :class:`ReliabilityStudy` of outcomes;
- :func:`paired_loss_difference` (with :func:`sign_test_interval`): the inner-steps comparison,
  paired by seed;
- :func:`read_reliability_record`: the stamped record ``scripts/ppo_reliability.py`` writes.

The budget rule is the chapter's: every method keeps its number of outer iterations ``T``, so a
batch ``m`` times larger spends ``m`` times the responses and an inner loop ``m`` times longer
``m`` times the gradient steps. Every instance, constant, budget and seed here is ours.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from math import comb
from pathlib import Path

import numpy as np

from covpo.experiments.parallel import run_tasks
from covpo.experiments.ppo.clipping import clipping_benefit
from covpo.experiments.ppo.concavity import inner_loop_curvature, landscape
from covpo.experiments.ppo.estimators import estimator_spread
from covpo.experiments.ppo.inner_loop import inner_loop_by_batch
from covpo.experiments.ppo.practice import practice_recipes
from covpo.experiments.sweeps import (
    Method,
    RecipeComparison,
    collapse_family_methods,
    compare_recipes,
    random_family_methods,
    summarize_run,
)
from covpo.families import COLLAPSE_COVERAGES, RANDOM_COVERAGES, collapse_family, random_family
from covpo.rates import Rate, wilson_rate
from covpo.records import read_stamped_record
from covpo.table import Table
from covpo.validation import (
    check_count,
    check_finite_array,
    check_instance,
    check_instances,
    check_positive,
    check_probability,
    check_seeds,
    check_text,
)

RELIABILITY_COVERAGES = (20.0, 40.0, 80.0, 160.0)
"""``C_cov`` of the study, the three where the chapter's settings failed in some seeds, and 20 as a control."""
BATCH_MULTIPLIERS = (1, 2, 4, 8)
"""Batch sizes of the study, as multiples of the chapter's (256 responses per outer iteration for each method)."""
INNER_MULTIPLIERS = (1, 2, 4)
"""Inner-loop lengths of the study, as multiples of the chapter's (``K`` = 40 for PPO, 20 for GRPO)."""
RELIABILITY_EPS = 0.04
"""The accuracy target of the chapter's collapse sweep."""
RELIABILITY_SEEDS = 20
"""How many seeds the record holds, sweep seeds ``0 .. 19``."""
RECORD_PATH = Path(__file__).with_name("reliability_record.json")
"""The stamped record the book reads."""
RECORD_COMMAND = "python scripts/ppo_reliability.py"
"""The command that regenerates :data:`RECORD_PATH` (run it plainly and under the second CPU profile)."""
RECORD_MODULES = (
    "covpo.algorithms",
    "covpo.batches",
    "covpo.experiments.parallel",
    "covpo.experiments.ppo",
    "covpo.experiments.sweeps",
    "covpo.families",
    "covpo.instances",
    "covpo.objectives",
    "covpo.policies",
    "covpo.trajectory",
)
"""The code the record's runs depend on, hashed into its stamp."""
RECORD_SCRIPTS = ("scripts/ppo_reliability.py",)
"""The script that writes the record, hashed into its stamp."""


def reliability_methods() -> tuple[Method, ...]:
    """The reset methods of chapter 4's collapse sweep: PPO-NoClip, PPO-Lite, GRPO with resets (paper sections 3.2, 3.3, appendix H.4)."""
    return tuple(method for method in collapse_family_methods() if method.definition.resets)


def scaled_method(method: Method, batch_multiplier: int, inner_multiplier: int) -> Method:
    """``method`` with its ``batch_size`` and ``inner_steps`` multiplied, its outer iterations kept (paper Algorithm 1).

    The label is kept, so that the study's rows name the chapter's methods; ``batch_size`` counts
    prompts (GRPO draws ``group_size`` responses for each).
    """
    method = check_instance("method", method, Method)
    batch_multiplier = check_count("batch_multiplier", batch_multiplier)
    inner_multiplier = check_count("inner_multiplier", inner_multiplier)
    hyperparameters = method.hyperparameters
    if "batch_size" not in hyperparameters or "inner_steps" not in hyperparameters:
        raise ValueError(f"method must have a batch_size and inner_steps, got {method.label!r} with {hyperparameters}")
    return method.with_hyperparameters(
        batch_size=int(hyperparameters["batch_size"]) * batch_multiplier,
        inner_steps=int(hyperparameters["inner_steps"]) * inner_multiplier,
    )


@dataclass(frozen=True, eq=False)
class ReliabilityStudy:
    """Outcomes of the reset methods on the collapse family over seeds, batch sizes and inner-loop lengths.

    Arrays of outcomes have the shape ``(n_methods, n_coverages, n_batches, n_inner, n_seeds)``.

    Attributes
    ----------
    labels
        The methods' labels (the chapter's).
    coverages
        ``C_cov`` of each instance.
    batch_multipliers, inner_multipliers
        The multiples of the chapter's batch size and inner-loop length.
    seeds
        The sweep seeds: run ``(seed, j)`` on the ``j``-th instance of the chapter's family.
    eps
        The accuracy target.
    batch_responses
        Responses one outer iteration samples, ``(n_methods, n_batches)``.
    inner_steps
        Gradient steps one outer iteration takes, ``(n_methods, n_inner)``.
    n_iterations
        Outer iterations of each method, ``(n_methods,)``: the chapter's, at every setting.
    reached
        Whether the run became eps-optimal within its budget.
    diverged
        Whether a step left the parameters non-finite (counted as not reaching eps).
    coverage_loss
        The largest fall of any prompt's coverage below its base value, in decades (``nan`` where diverged).
    responses, steps
        Responses and gradient steps to eps where reached; the whole budget spent elsewhere.
    """

    labels: tuple[str, ...]
    coverages: np.ndarray
    batch_multipliers: tuple[int, ...]
    inner_multipliers: tuple[int, ...]
    seeds: tuple[int, ...]
    eps: float
    batch_responses: np.ndarray
    inner_steps: np.ndarray
    n_iterations: np.ndarray
    reached: np.ndarray
    diverged: np.ndarray
    coverage_loss: np.ndarray
    responses: np.ndarray
    steps: np.ndarray

    def __post_init__(self) -> None:
        shape = (len(self.labels), len(self.coverages), len(self.batch_multipliers), len(self.inner_multipliers),
                 len(self.seeds))
        for name in ("reached", "diverged", "coverage_loss", "responses", "steps"):
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(f"{name} must have the shape {shape}, got {np.shape(getattr(self, name))}")

    def index(self, label: str, coverage: float | None = None) -> tuple[int, ...]:
        """Row of the method labelled ``label`` (and, with ``coverage``, its column)."""
        if label not in self.labels:
            raise ValueError(f"label must be one of {self.labels}, got {label!r}")
        if coverage is None:
            return (self.labels.index(label),)
        matches = np.flatnonzero(np.isclose(self.coverages, coverage))
        if not matches.size:
            raise ValueError(f"coverage must be one of {self.coverages.tolist()}, got {coverage!r}")
        return self.labels.index(label), int(matches[0])

    def failures(self, label: str, coverage: float) -> np.ndarray:
        """Seeds that did not reach eps, per batch and inner multiplier, ``(n_batches, n_inner)``."""
        i, j = self.index(label, coverage)
        return (~self.reached[i, j]).sum(axis=-1)

    def failure_rate(self, label: str, coverage: float, batch_multiplier: int, inner_multiplier: int) -> Rate:
        """The share of seeds that did not reach eps at one setting, with its Wilson interval."""
        i, j = self.index(label, coverage)
        b = self._position("batch_multiplier", batch_multiplier, self.batch_multipliers)
        k = self._position("inner_multiplier", inner_multiplier, self.inner_multipliers)
        return wilson_rate(int((~self.reached[i, j, b, k]).sum()), len(self.seeds))

    @staticmethod
    def _position(name: str, value: int, grid: tuple[int, ...]) -> int:
        if isinstance(value, bool) or value not in grid:
            raise ValueError(f"{name} must be one of {grid}, got {value!r}")
        return grid.index(value)

    def smallest_reliable_batch(self, label: str, coverage: float, inner_multiplier: int) -> int | None:
        """The smallest batch multiplier at which every seed reached eps, ``None`` if none of the grid did."""
        i, j = self.index(label, coverage)
        k = self._position("inner_multiplier", inner_multiplier, self.inner_multipliers)
        for b, multiplier in enumerate(self.batch_multipliers):
            if self.reached[i, j, b, k].all():
                return multiplier
        return None

    def median_responses_to_eps(self, label: str, coverage: float) -> np.ndarray:
        """Median responses to eps over the seeds that reached it, ``(n_batches, n_inner)`` (``nan`` where none did)."""
        i, j = self.index(label, coverage)
        values = np.where(self.reached[i, j], self.responses[i, j].astype(float), np.nan)
        out = np.full(values.shape[:2], np.nan)
        for b, k in np.ndindex(out.shape):
            if self.reached[i, j, b, k].any():
                out[b, k] = np.nanmedian(values[b, k])
        return out

    def select(self, labels: Sequence[str] | None = None, coverages: Sequence[float] | None = None,
               batch_multipliers: Sequence[int] | None = None, inner_multipliers: Sequence[int] | None = None,
               n_seeds: int | None = None) -> ReliabilityStudy:
        """The sub-study of the given methods, coverages, multipliers and first ``n_seeds`` seeds (default: all)."""
        rows = [self.index(label)[0] for label in (self.labels if labels is None else labels)]
        columns = [self.index(self.labels[0], c)[1] for c in (self.coverages if coverages is None else coverages)]
        batches = [self._position("batch_multipliers", m, self.batch_multipliers)
                   for m in (self.batch_multipliers if batch_multipliers is None else batch_multipliers)]
        inner = [self._position("inner_multipliers", m, self.inner_multipliers)
                 for m in (self.inner_multipliers if inner_multipliers is None else inner_multipliers)]
        n_seeds = len(self.seeds) if n_seeds is None else check_count("n_seeds", n_seeds)
        if n_seeds > len(self.seeds):
            raise ValueError(f"n_seeds must be at most {len(self.seeds)}, got {n_seeds}")
        grid = np.ix_(rows, columns, batches, inner, range(n_seeds))

        def cut(array: np.ndarray) -> np.ndarray:
            return array[grid]

        return ReliabilityStudy(
            labels=tuple(self.labels[i] for i in rows),
            coverages=self.coverages[columns],
            batch_multipliers=tuple(self.batch_multipliers[b] for b in batches),
            inner_multipliers=tuple(self.inner_multipliers[k] for k in inner),
            seeds=self.seeds[:n_seeds],
            eps=self.eps,
            batch_responses=self.batch_responses[np.ix_(rows, batches)],
            inner_steps=self.inner_steps[np.ix_(rows, inner)],
            n_iterations=self.n_iterations[rows],
            reached=cut(self.reached),
            diverged=cut(self.diverged),
            coverage_loss=cut(self.coverage_loss),
            responses=cut(self.responses),
            steps=cut(self.steps),
        )

    def counts_table(self, caption: str = "") -> Table:
        """One row per method, coverage, batch and inner-loop length: failures of the seeds, worst loss, median cost."""
        rows = []
        for i, label in enumerate(self.labels):
            for j, coverage in enumerate(self.coverages):
                for b, batch in enumerate(self.batch_responses[i]):
                    for k, steps in enumerate(self.inner_steps[i]):
                        reached = self.reached[i, j, b, k]
                        loss = self.coverage_loss[i, j, b, k]
                        rows.append((
                            label, float(coverage), int(batch), int(steps),
                            f"{int((~reached).sum())} of {len(self.seeds)}",
                            float(np.nanmax(loss)) if np.isfinite(loss).any() else None,
                            float(np.median(self.responses[i, j, b, k][reached])) if reached.any() else None,
                        ))
        return Table(
            ("method", "$C_{\\mathrm{cov}}$", "N (responses per iteration)", "K (inner steps)", "missed ε",
             "worst coverage loss (decades)", "median responses to ε"),
            tuple(rows),
            caption=caption or f"Seeds that missed ε = {self.eps:g}, per setting, over seeds {self.seeds[0]}-{self.seeds[-1]}",
            notes=("Median responses over the seeds that reached ε; a dash where none did. Diverged runs count as missing ε.",),
        )

    def to_record(self) -> dict:
        """The study as JSON-ready lists (``None`` for ``nan``), read back by :meth:`from_record`."""
        loss = np.where(np.isfinite(self.coverage_loss), self.coverage_loss, np.nan)
        return {
            "labels": list(self.labels),
            "coverages": self.coverages.tolist(),
            "batch_multipliers": list(self.batch_multipliers),
            "inner_multipliers": list(self.inner_multipliers),
            "seeds": list(self.seeds),
            "eps": self.eps,
            "batch_responses": self.batch_responses.tolist(),
            "inner_steps": self.inner_steps.tolist(),
            "n_iterations": self.n_iterations.tolist(),
            "reached": self.reached.tolist(),
            "diverged": self.diverged.tolist(),
            "coverage_loss": [None if np.isnan(value) else float(value) for value in loss.ravel()],
            "responses": self.responses.tolist(),
            "steps": self.steps.tolist(),
        }

    @classmethod
    def from_record(cls, record: dict) -> ReliabilityStudy:
        """The study :meth:`to_record` wrote."""
        if not isinstance(record, dict):
            raise ValueError(f"record must be a mapping written by ReliabilityStudy.to_record, got {record!r}")
        try:
            reached = np.array(record["reached"], dtype=bool)
            loss = np.array([np.nan if value is None else value for value in record["coverage_loss"]], dtype=float)
            return cls(
                labels=tuple(record["labels"]),
                coverages=np.array(record["coverages"], dtype=float),
                batch_multipliers=tuple(int(m) for m in record["batch_multipliers"]),
                inner_multipliers=tuple(int(m) for m in record["inner_multipliers"]),
                seeds=tuple(int(s) for s in record["seeds"]),
                eps=float(record["eps"]),
                batch_responses=np.array(record["batch_responses"], dtype=np.int64),
                inner_steps=np.array(record["inner_steps"], dtype=np.int64),
                n_iterations=np.array(record["n_iterations"], dtype=np.int64),
                reached=reached,
                diverged=np.array(record["diverged"], dtype=bool),
                coverage_loss=loss.reshape(reached.shape),
                responses=np.array(record["responses"], dtype=np.int64),
                steps=np.array(record["steps"], dtype=np.int64),
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"record must be written by ReliabilityStudy.to_record ({error!r})") from None


def _coverage_indices(coverages: Sequence[float]) -> list[int]:
    """Position of each coverage in the chapter's family, which sets its runs' seeds."""
    if isinstance(coverages, (str, bytes)) or not isinstance(coverages, (Sequence, np.ndarray)):
        raise ValueError(f"coverages must be a sequence of the chapter's C_cov values {COLLAPSE_COVERAGES}, got {coverages!r}")
    indices = []
    for c in coverages:
        c = check_positive("coverages", c)
        if c not in COLLAPSE_COVERAGES:
            raise ValueError(f"coverages must be among the chapter's {COLLAPSE_COVERAGES}, got {c!r}")
        indices.append(COLLAPSE_COVERAGES.index(c))
    if len(set(indices)) != len(indices) or not indices:
        raise ValueError(f"coverages must be distinct and non-empty, got {coverages!r}")
    return indices


def _multipliers(name: str, values: Sequence[int]) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise ValueError(f"{name} must be a non-empty sequence of integers >= 1, got {values!r}")
    grid = tuple(check_count(name, value) for value in values)
    if list(grid) != sorted(set(grid)):
        raise ValueError(f"{name} must be increasing without repeats, got {values!r}")
    return grid


def reliability_study(
    methods: Sequence[Method] | None = None,
    *,
    coverages: Sequence[float] = RELIABILITY_COVERAGES,
    batch_multipliers: Sequence[int] = BATCH_MULTIPLIERS,
    inner_multipliers: Sequence[int] = INNER_MULTIPLIERS,
    seeds: Sequence[int] = tuple(range(RELIABILITY_SEEDS)),
    eps: float = RELIABILITY_EPS,
    progress: bool = True,
) -> ReliabilityStudy:
    """Run every method at every coverage, batch multiplier, inner multiplier and seed (paper sections 3.2, 3.3, appendix H.4).

    Parameters
    ----------
    methods
        Methods with a ``batch_size`` and ``inner_steps`` and one learning rate each (default:
        :func:`reliability_methods`).
    coverages
        ``C_cov`` values, each one of :data:`~covpo.families.COLLAPSE_COVERAGES`: the run of seed
        ``s`` on the instance at position ``j`` of that family draws from
        ``np.random.default_rng([s, j])``, as in :func:`~covpo.experiments.sweeps.cost_sweep`, so
        the chapter's sweep with ``seed=s`` holds the same runs at multipliers 1.
    batch_multipliers, inner_multipliers
        Increasing multiples of each method's batch size and inner-loop length.
    seeds
        The sweep seeds.
    eps
        The accuracy target.
    progress
        Show the progress bar of :func:`~covpo.experiments.parallel.run_tasks`.

    Returns
    -------
    ReliabilityStudy
    """
    methods = reliability_methods() if methods is None else check_instances("methods", methods, Method)
    for method in methods:
        if len(method.learning_rates) != 1 or method.learning_rates[0] is None:
            raise ValueError(f"methods must have one learning rate each, got {method.label!r} with {method.etas}")
    labels = tuple(method.label for method in methods)
    if len(set(labels)) != len(labels):
        raise ValueError(f"methods must have distinct labels, got {labels}")
    family_indices = _coverage_indices(coverages)
    batch_multipliers = _multipliers("batch_multipliers", batch_multipliers)
    inner_multipliers = _multipliers("inner_multipliers", inner_multipliers)
    seeds = check_seeds("seeds", seeds)
    eps = check_positive("eps", eps)
    if not isinstance(progress, bool):
        raise ValueError(f"progress must be a bool, got {progress!r}")
    instances = collapse_family(tuple(COLLAPSE_COVERAGES[j] for j in family_indices))
    variants = [[[scaled_method(method, b, k) for k in inner_multipliers] for b in batch_multipliers] for method in methods]
    shape = (len(methods), len(instances), len(batch_multipliers), len(inner_multipliers), len(seeds))
    coordinates = list(np.ndindex(shape))
    tasks = [
        (variants[i][b][k], instances[j], methods[i].learning_rates[0], (seeds[s], family_indices[j]), eps)
        for i, j, b, k, s in coordinates
    ]
    reached = np.zeros(shape, dtype=bool)
    diverged = np.zeros(shape, dtype=bool)
    loss = np.full(shape, np.nan)
    responses = np.zeros(shape, dtype=np.int64)
    steps = np.zeros(shape, dtype=np.int64)
    for (i, j, b, k, s), outcome in zip(coordinates, run_tasks(summarize_run, tasks, "reliability", progress=progress)):
        variant = variants[i][b][k]
        if outcome is None:
            diverged[i, j, b, k, s] = True
            responses[i, j, b, k, s], steps[i, j, b, k, s] = variant.response_budget, variant.step_budget
            continue
        reached[i, j, b, k, s] = outcome.responses_to_eps is not None
        responses[i, j, b, k, s] = outcome.responses_to_eps if reached[i, j, b, k, s] else outcome.total_responses
        steps[i, j, b, k, s] = outcome.steps_to_eps if reached[i, j, b, k, s] else outcome.total_steps
        loss[i, j, b, k, s] = outcome.coverage_loss
    return ReliabilityStudy(
        labels=labels,
        coverages=np.array([COLLAPSE_COVERAGES[j] for j in family_indices]),
        batch_multipliers=batch_multipliers,
        inner_multipliers=inner_multipliers,
        seeds=seeds,
        eps=eps,
        batch_responses=np.array([[row[0].responses_per_iteration for row in variants[i]] for i in range(len(methods))]),
        inner_steps=np.array([[v.steps_per_iteration for v in variants[i][0]] for i in range(len(methods))]),
        n_iterations=np.array([method.n_iterations for method in methods]),
        reached=reached,
        diverged=diverged,
        coverage_loss=loss,
        responses=responses,
        steps=steps,
    )


# ---------------------------------------------------------------------------------------
# Paired comparisons over seeds


@dataclass(frozen=True)
class PairedDifference:
    """Median paired difference over seeds and its sign-test interval ``[low, high]`` at ``level``.

    ``verdict`` is ``+1`` where the interval lies above zero, ``-1`` below, ``0`` where it holds
    zero (the study cannot tell).
    """

    differences: np.ndarray
    median: float
    low: float
    high: float
    level: float

    @property
    def verdict(self) -> int:
        """``+1``, ``-1`` or ``0``: the sign of the interval, ``0`` where it contains zero."""
        return 1 if self.low > 0 else -1 if self.high < 0 else 0


def sign_test_interval(differences: object, level: float = 0.95) -> PairedDifference:
    """The narrowest order-statistic interval for the median of ``differences`` with coverage at least ``level``.

    The ``k``-th smallest and largest of ``n`` differences bracket their median with probability
    ``1 - 2 P(Bin(n, 1/2) <= k - 1)`` (the interval that inverts the sign test), whatever their
    distribution. Raises ``ValueError`` when too few differences reach ``level``.
    """
    values = np.sort(check_finite_array("differences", differences, ndim=1))
    level = check_probability("level", level)
    n = values.size
    coverage = [1 - 2 * subsets / 2**n for subsets in accumulate(comb(n, i) for i in range(n // 2))]
    enough = [k for k, value in zip(range(1, n // 2 + 1), coverage) if value >= level]
    if not enough:
        raise ValueError(f"differences must hold enough values for a {level:.0%} interval, got {n}")
    k = max(enough)
    return PairedDifference(values, float(np.median(values)), float(values[k - 1]), float(values[n - k]),
                            float(coverage[k - 1]))


def paired_loss_difference(
    study: ReliabilityStudy, label: str, batch_multiplier: int, *, longer: int, shorter: int,
    coverages: Sequence[float] | None = None,
) -> PairedDifference:
    """Coverage loss at ``longer`` inner steps minus at ``shorter``, paired by coverage and seed, over the given coverages.

    A positive median means the longer inner loop lost more coverage. Pairs where a run diverged
    are left out.
    """
    check_instance("study", study, ReliabilityStudy)
    check_text("label", label)
    if coverages is None:
        coverages = tuple(study.coverages)
    elif isinstance(coverages, (str, bytes)) or not isinstance(coverages, (Sequence, np.ndarray)) or not len(coverages):
        raise ValueError(f"coverages must be a non-empty sequence of the study's C_cov values, got {coverages!r}")
    else:
        coverages = tuple(check_positive("coverages", c) for c in coverages)
    b = study._position("batch_multiplier", batch_multiplier, study.batch_multipliers)
    long_k = study._position("longer", longer, study.inner_multipliers)
    short_k = study._position("shorter", shorter, study.inner_multipliers)
    differences = []
    for coverage in coverages:
        i, j = study.index(label, coverage)
        difference = study.coverage_loss[i, j, b, long_k] - study.coverage_loss[i, j, b, short_k]
        differences.extend(difference[np.isfinite(difference)].tolist())
    return sign_test_interval(np.array(differences))


# ---------------------------------------------------------------------------------------
# The section page's other sampled claims, over seeds

DETAILS_INNER_STEPS = (5, 10, 20, 40)
"""PPO-NoClip's inner-loop lengths on the hardest collapse instance (the section page's table)."""


def _crossover(scales: np.ndarray, lite_wins: np.ndarray) -> float:
    """The first candidate from which the clipped gradient wins on error at every larger candidate (``inf`` if none)."""
    losing = np.flatnonzero(~lite_wins)
    if not losing.size:
        return float(scales[0])
    return float(scales[losing[-1] + 1]) if losing[-1] + 1 < scales.size else float("inf")


def _per_seed(function: Callable[[int], dict], seeds: tuple[int, ...], progress: bool) -> list[dict]:
    return run_tasks(function, [(seed,) for seed in seeds], function.__name__.strip("_"), progress=progress)


def _concavity_seed(seed: int) -> dict:
    """The landscape (direction seed) and the inner loops' curvature, gaps and convergence by batch (batch seed)."""

    hardest = random_family(RANDOM_COVERAGES)[-1]
    land = landscape(hardest, 1.0, [0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 8.0], n_directions=20, seed=seed)
    curvature = inner_loop_curvature(hardest, beta=1.0, eta=2.0, n_iterations=10, batch_size=256, inner_steps=10,
                                     seed=seed)
    by_batch = inner_loop_by_batch(hardest, (64, 256, 1024), beta=1.0, eta=2.0, n_iterations=10, inner_steps=10,
                                   seed=seed)
    end = np.median(by_batch.end_gap, axis=1)
    return {
        "concave_radius": float(land.concave_radius),
        "noclip_top_far": float(land.noclip_top[-1]),
        "kimi_bottom": float(land.kimi_bottom.min()),
        "inner_top": float(curvature.top_eigenvalue.max()),
        "gap_ratio": float(np.median(curvature.gap[:, 0]) / np.median(curvature.gap[:, -1])),
        "end_gap": float(np.median(curvature.gap[:, -1])),
        "batch_gap": float(np.median(curvature.batch_gap)),
        "batch_gap_falls": bool(np.all(np.diff(end) < 0)),
        "batch_gap_ratio": float(end[0] / end[-1]),
        "batch_gap_below_half_start": bool(np.all(end < 0.5 * np.median(by_batch.start_gap, axis=1))),
        "largest_stray": float(by_batch.largest_stray.max()),
    }


def _estimator_seed(seed: int) -> dict:
    """The spread of PPO-NoClip's and PPO-Lite's batch estimates on the collapse instance with ``C_cov`` = 40."""

    estimates = estimator_spread(collapse_family((40.0,))[0], 1.0, np.linspace(0.0, 6.0, 13), batch_size=64,
                                 n_batches=400, seed=seed)
    s = estimates.scales
    outside = s >= 2.0
    se = estimates.noclip_std / np.sqrt(estimates.n_batches)
    return {
        "noclip_grad_growth": float(estimates.noclip_gradient_std[-1] / estimates.noclip_gradient_std[s == 2.0][0]),
        "noclip_grad_s6": float(estimates.noclip_gradient_std[-1]),
        "lite_grad_max": float(estimates.lite_gradient_std[outside].max()),
        "lite_grad_share": float(estimates.lite_gradient_std[outside].max() / estimates.noclip_gradient_std[-1]),
        "crossover": _crossover(s, estimates.lite_gradient_rmse < estimates.noclip_gradient_rmse),
        "bias_in_sd": float((estimates.true_objective[-1] - estimates.lite_mean[-1]) / estimates.lite_std[-1]),
        "noclip_z": float(np.max(np.abs(estimates.noclip_mean - estimates.true_objective) / se)),
        "noclip_quieter_at_target": bool(
            estimates.noclip_gradient_std[s == 1.0][0] < estimates.lite_gradient_std[s == 1.0][0]),
    }


def _inner_steps_seed(seed: int) -> dict:
    """PPO-NoClip with each of :data:`DETAILS_INNER_STEPS` on the hardest collapse instance.

    Seeded as the section page's one-instance sweep seeds it: ``(seed, 0)``.
    """
    noclip = collapse_family_methods()[0]
    j = 0
    instance = collapse_family((160.0,))[0]
    reached, loss = [], []
    for k in DETAILS_INNER_STEPS:
        outcome = summarize_run(noclip.with_hyperparameters(inner_steps=k), instance, noclip.etas[0], (seed, j),
                                RELIABILITY_EPS)
        reached.append(outcome is not None and outcome.responses_to_eps is not None)
        loss.append(None if outcome is None else float(outcome.coverage_loss))
    return {"reached": reached, "coverage_loss": loss}


def _comparison(comparison: RecipeComparison) -> dict:
    return {
        "names": list(comparison.names),
        "reached": comparison.reached.tolist(),
        "diverged": comparison.diverged.tolist(),
        "responses_to_eps": comparison.responses_to_eps.tolist(),
        "coverage_loss": [[None if np.isnan(v) else float(v) for v in row] for row in comparison.coverage_loss],
    }


def details_over_seeds(seeds: Sequence[int], progress: bool = True) -> dict:
    """The section page's sampled measurements at every seed (paper appendices G.1, G.2, H.2, H.4).

    The page computes each at one seed; this runs them at each of ``seeds`` with the page's
    settings: the landscape and the inner loop's curvature and convergence (random instance,
    ``C_cov`` = 100), PPO-NoClip's inner-loop lengths at ``C_cov`` = 160, the estimator spread,
    the clipping benefit in training and the group scaling. Returns JSON-ready lists, one entry per seed.
    """

    seeds = check_seeds("seeds", seeds)
    if not isinstance(progress, bool):
        raise ValueError(f"progress must be a bool, got {progress!r}")
    hardest = random_family(RANDOM_COVERAGES)[-1]
    collapse = collapse_family(COLLAPSE_COVERAGES)[2]
    benefit = clipping_benefit(hardest, 0.25, (0.5, 1.0), eta=16.0, batch_size=16, inner_steps=20, n_iterations=32,
                               eps=0.05, seeds=seeds)
    one_step = practice_recipes()[0]
    rand_reset, coll_reset = random_family_methods()[2], collapse_family_methods()[2]

    def scaled(method: Method, eta: float | None = None) -> Method:
        label = method.label + ", std-scaled" + ("" if eta is None else f", eta = {eta:g}")
        method = method.with_hyperparameters(scale_by_std=True)
        if eta is not None:
            method = dataclasses.replace(method, etas=(eta,))
        return dataclasses.replace(method, label=label)

    (coll_rate,) = coll_reset.etas
    budget = 8192
    return {
        "seeds": list(seeds),
        "concavity": _per_seed(_concavity_seed, seeds, progress),
        "estimator": _per_seed(_estimator_seed, seeds, progress),
        "inner_steps": {"inner_steps": list(DETAILS_INNER_STEPS), "runs": _per_seed(_inner_steps_seed, seeds, progress)},
        "benefit": {
            "labels": list(benefit.labels),
            "clip_fraction": benefit.clip_fraction.tolist(),
            "reached": benefit.reached.tolist(),
            "responses_to_eps": benefit.responses_to_eps.tolist(),
            "inner_kl": benefit.inner_kl.tolist(),
            "final_suboptimality": benefit.final_suboptimality.tolist(),
        },
        "scaling": {
            "rand": _comparison(compare_recipes(hardest, (one_step, rand_reset), budget, eps=0.05, seeds=seeds)),
            "coll": _comparison(compare_recipes(collapse, (one_step, coll_reset), budget, eps=0.04, seeds=seeds)),
            "rand_scaled": _comparison(compare_recipes(hardest, (scaled(one_step), scaled(rand_reset)), budget,
                                                       eps=0.05, seeds=seeds)),
            "coll_scaled": _comparison(compare_recipes(
                collapse, (scaled(one_step), scaled(coll_reset), scaled(coll_reset, coll_rate / 2)), budget,
                eps=0.04, seeds=seeds)),
        },
    }


# ---------------------------------------------------------------------------------------
# The record


def check_reliability_record(record: dict) -> dict:
    """``record`` if each of its runs holds a study (``"study"``) :meth:`ReliabilityStudy.from_record` reads, else ``ValueError``."""
    runs = record.get("runs") if isinstance(record, dict) else None
    if not isinstance(runs, list) or not runs:
        raise ValueError(f"record must be a stamped record with a non-empty 'runs' list, got {record!r}")
    for number, run in enumerate(runs):
        if not isinstance(run, dict) or "study" not in run or "details" not in run:
            raise ValueError(f"record: run {number} holds no 'study' and 'details'")
        ReliabilityStudy.from_record(run["study"])
    return record


def read_reliability_record(path: str | Path = RECORD_PATH) -> dict[str, tuple[dict, ReliabilityStudy]]:
    """The record's runs by CPU profile (``"default"``, ``"second"``): each run's stamp and its study."""
    record = read_stamped_record(path, check_reliability_record)
    return {run["stamp"]["profile"]: (run["stamp"], ReliabilityStudy.from_record(run["study"])) for run in record["runs"]}


__all__ = [
    "BATCH_MULTIPLIERS",
    "INNER_MULTIPLIERS",
    "PairedDifference",
    "RECORD_COMMAND",
    "RECORD_MODULES",
    "RECORD_PATH",
    "RECORD_SCRIPTS",
    "RELIABILITY_COVERAGES",
    "RELIABILITY_EPS",
    "RELIABILITY_SEEDS",
    "ReliabilityStudy",
    "DETAILS_INNER_STEPS",
    "check_reliability_record",
    "details_over_seeds",
    "paired_loss_difference",
    "read_reliability_record",
    "reliability_methods",
    "reliability_study",
    "scaled_method",
    "sign_test_interval",
]
