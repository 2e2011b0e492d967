"""The head-to-head of every algorithm of the book: one suite, one budget, one table (paper sections 1 to 4).

Every algorithm the book implements runs on the same instances, under the same response
budget and the same seeds, and reports the same costs (paper section 5, its
summary claim: reference resets are coverage-preserving, fixed references are not):

- :class:`Entry`: one algorithm and its settings (a superset of chapter 4's
  :class:`~covpo.experiments.ppo.MethodSettings`, which it wraps for the five algorithms
  chapter 4 runs); :data:`ALGORITHMS` lists the keys;
- :func:`run_entry`: one run of one entry on one instance at one learning rate;
- :func:`filtered_sft` and :func:`best_of_n_trajectory`: the two coverage-governed baselines
  that no other module runs (supervised fine-tuning on reward-filtered base samples, and
  Best-of-N sampling from the base model, a test-time procedure);
- :func:`head_to_head`: every entry on every instance for every seed, through
  :func:`covpo.experiments.parallel.run_tasks`, with a frozen :class:`HeadToHead` record, its
  :meth:`~HeadToHead.table` and :meth:`~HeadToHead.summary`;
- :func:`default_suite`, :func:`default_entries` and :func:`default_head_to_head`: the book's
  suite and settings, reproducible from one call.

Cost conventions (decided here, stated in every table):

- *responses* are every response an algorithm samples, baselines' extra responses included;
  *steps* are gradient steps (one natural-gradient step counts as one);
- **exact APMD** (:func:`covpo.algorithms.mirror_descent.exact_target_inner_loop`) samples nothing and
  takes no gradient step; its cost is the number of outer iterations (exact solves), reported
  in the steps column and marked ``exact`` in the responses column; so is **exact REINFORCE**
  (population gradients, no responses);
- **Best-of-N** is not a trained policy: its cost is ``N``, the responses drawn *per test
  prompt*, with ``N = max_x ceil(log(1/delta) / -log(1 - c_0(x)))`` (paper section 1.3), so that
  on every prompt it returns an optimal response with probability ``1 - delta``; its reward is
  the exact value of the Best-of-N distribution and its steps are zero;
- **SFT on filtered samples** draws responses from ``pi_0`` only, keeps the best ones and
  fits them by maximum likelihood; its cost is responses drawn plus gradient steps.

Every instance, constant, budget and seed here is ours; the paper's are not reproduced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from covpo.algorithms.best_of_n import best_of_n_samples_needed, log_best_of_n_success
from covpo.coverage_instances import dialled_coverage_instance
from covpo.instances import BanditInstance
from covpo.algorithms.mirror_descent import apmd, exact_target_inner_loop
from covpo.algorithms.npg import npg
from covpo.objectives import regularized_optimum
from covpo.experiments.parallel import run_tasks
from covpo.policies import base_log_policy, expected_reward, log_coverage, log_policy
from covpo.algorithms.ppo import draw_batch
from covpo.experiments.ppo import (
    COLLAPSE_COVERAGES,
    COLLAPSE_GAP,
    COLLAPSE_N_ZERO,
    RANDOM_COVERAGES,
    RANDOM_SHAPE,
    MethodSettings,
    collapse_family_methods,
    random_family_methods,
    run_method,
    stacked_collapse_instance,
)
from covpo.algorithms.reinforce import exact_reinforce, sampled_reinforce
from covpo.table import Table
from covpo.trajectory import Trajectory, TrajectoryRecorder, trajectory_from_arrays
from covpo.validation import (
    check_count,
    check_finite_array,
    check_nonnegative,
    check_positive,
    check_probability,
)

CHAPTER_4_ALGORITHMS = ("ppo_noclip", "ppo_lite", "grpo_reset", "grpo_fixed", "reinforce")
"""Chapter 4's five algorithms."""
SQUARED_LOSS_ALGORITHMS = ("kimipo", "kimipo_norm", "rebel_onpolicy")
"""Chapter 5's three algorithms."""
METHOD_ALGORITHMS = (*CHAPTER_4_ALGORITHMS, *SQUARED_LOSS_ALGORITHMS)
"""The algorithms :class:`~covpo.experiments.ppo.MethodSettings` describes, run through :func:`~covpo.experiments.ppo.run_method`."""
BASELINE_ALGORITHMS = ("kimipo", "kimipo_norm")
"""Algorithms whose ``group_size`` counts extra baseline responses (``extra_responses`` of ``MethodSettings``)."""
EXACT_ALGORITHMS = ("apmd_exact", "reinforce_exact")
"""Algorithms that use population quantities; they sample nothing and give the same result for every seed."""
ALGORITHMS = (
    *CHAPTER_4_ALGORITHMS,
    "reinforce_kl",
    *SQUARED_LOSS_ALGORITHMS,
    "npg",
    *EXACT_ALGORITHMS,
    "best_of_n",
    "sft_filtered",
)
"""Every algorithm key an :class:`Entry` may name."""
RESET_ALGORITHMS = ("ppo_noclip", "ppo_lite", "grpo_reset", *SQUARED_LOSS_ALGORITHMS, "npg", "apmd_exact")
"""Instances of APMD; the reference is reset every outer iteration, so ``beta > 0``."""
WITHOUT_LEARNING_RATE = ("npg", "apmd_exact", "best_of_n")
"""Algorithms whose step is fixed by ``beta`` or that take no step: their grid is ignored."""
DETERMINISTIC_ALGORITHMS = (*EXACT_ALGORITHMS, "best_of_n")
FAMILIES = ("collapse", "random")
FAMILY_EPS = {"collapse": 0.04, "random": 0.05}
"""The accuracy target of each family (chapter 4's)."""
FAMILY_RESPONSE_BUDGET = {"collapse": 12_800, "random": 10_240}
"""Responses every sampling entry of a family may spend (each entry's ``T`` is set from it)."""
FAMILY_BETA_FIXED_KL = {"collapse": 0.05, "random": 0.01}
"""``beta`` of REINFORCE with a KL penalty to ``pi_0``: the fixed-reference optimum is eps/2-optimal on every suite instance."""
BOOK_COVERAGES = {"collapse": (10.0, 40.0, 160.0), "random": (5.0, 20.0, 100.0)}
FULL_COLLAPSE_PROMPTS = (4, 8)
FULL_RANDOM_SHAPES = (RANDOM_SHAPE, (200, 8, 6), (50, 16, 24))
BOOK_SEEDS = (1, 2)
FULL_SEEDS = tuple(range(1, 6))
SUITE_SIZES = ("book", "full")
OPTIMAL_TOLERANCE = 1e-12
HALF_COVERAGE_DECADES = float(np.log10(2.0))


# ---------------------------------------------------------------------------------------
# The registry


@dataclass(frozen=True)
class Entry:
    """One algorithm of the head-to-head and the settings it runs at.

    Attributes
    ----------
    name
        The label in tables and figures.
    algorithm
        One of :data:`ALGORITHMS`: chapter 4's five (:class:`~covpo.experiments.ppo.MethodSettings`),
        ``"reinforce_kl"`` (sampled REINFORCE on ``J - beta KL(pi || pi_0)``, paper section 2.1),
        ``"kimipo"``, ``"kimipo_norm"``, ``"rebel_onpolicy"`` (paper section 4), ``"npg"``
        (sampled NPG with resets, step ``1 / beta``), ``"apmd_exact"`` (exact targets),
        ``"reinforce_exact"`` (population gradient, no KL), ``"best_of_n"`` and ``"sft_filtered"``.
    beta
        KL strength (0 for none); ``> 0`` for the instances of APMD and ``"reinforce_kl"``.
    batch_size
        ``N`` prompts per batch (ignored by the exact algorithms and Best-of-N).
    inner_steps
        ``K`` gradient steps per batch (1 for REINFORCE and NPG).
    n_iterations
        The budget in outer iterations (REINFORCE: steps).
    etas
        Learning rates tried; the best is kept per instance. Empty for :data:`WITHOUT_LEARNING_RATE`.
    group_size
        ``G``: GRPO's group, NPG's responses per prompt, KimiPO-Norm's extra responses, KimiPO's
        ``M`` extra responses, SFT's responses per prompt; 1 otherwise.
    clip_epsilon, kl
        GRPO's ratio interval and KL computation.
    record_every
        REINFORCE records every ``record_every``-th step.
    delta
        Best-of-N's failure probability per prompt; ``None`` uses the run's ``eps`` (with
        rewards in ``[0, 1]`` the Best-of-N policy is then eps-optimal).
    """

    name: str
    algorithm: str
    beta: float = 0.0
    batch_size: int = 1
    inner_steps: int = 1
    n_iterations: int = 1
    etas: tuple[float, ...] = ()
    group_size: int = 1
    clip_epsilon: float = 0.2
    kl: str = "k3"
    record_every: int = 1
    delta: float | None = None

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        check_nonnegative("beta", self.beta)
        if (self.algorithm in RESET_ALGORITHMS or self.algorithm == "reinforce_kl") and self.beta <= 0.0:
            raise ValueError(f"beta must be > 0 for {self.algorithm}, got {self.beta!r}")
        for name in ("batch_size", "inner_steps", "n_iterations", "group_size", "record_every"):
            check_count(name, getattr(self, name))
        if self.algorithm not in WITHOUT_LEARNING_RATE and (
            not self.etas or any(not np.isfinite(eta) or eta <= 0.0 for eta in self.etas)
        ):
            raise ValueError(f"etas must be a non-empty tuple of positive learning rates, got {self.etas!r}")
        if self.delta is not None:
            check_probability("delta", self.delta)
        if self.algorithm in METHOD_ALGORITHMS:
            self.method_settings()

    @classmethod
    def from_method(cls, settings: MethodSettings) -> Entry:
        """The entry that runs a :class:`~covpo.experiments.ppo.MethodSettings` (chapters 4 and 5) unchanged."""
        if settings.algorithm not in METHOD_ALGORITHMS:
            raise ValueError(f"settings.algorithm must be one of {METHOD_ALGORITHMS}, got {settings.algorithm!r}")
        fields = {name: getattr(settings, name) for name in _shared_fields()}
        if settings.algorithm in BASELINE_ALGORITHMS:
            fields["group_size"] = settings.extra_responses
        return cls(**fields)

    def method_settings(self) -> MethodSettings:
        """This entry as a :class:`~covpo.experiments.ppo.MethodSettings` (the algorithms of chapters 4 and 5 only)."""
        if self.algorithm not in METHOD_ALGORITHMS:
            raise ValueError(f"algorithm {self.algorithm!r} is not one of {METHOD_ALGORITHMS}")
        fields = {name: getattr(self, name) for name in _shared_fields()}
        if self.algorithm in BASELINE_ALGORITHMS:
            fields.update(group_size=1, extra_responses=self.group_size)
        return MethodSettings(**fields)

    @property
    def learning_rates(self) -> tuple[float | None, ...]:
        """The grid a sweep runs, ``etas``, or ``(None,)`` for an algorithm without a learning rate."""
        return (None,) if self.algorithm in WITHOUT_LEARNING_RATE else tuple(float(eta) for eta in self.etas)

    @property
    def is_exact(self) -> bool:
        """Whether the entry uses population quantities (its cost is counted in iterations or steps only)."""
        return self.algorithm in EXACT_ALGORITHMS

    @property
    def is_test_time(self) -> bool:
        """Whether the entry is a test-time procedure (Best-of-N), not a trained policy."""
        return self.algorithm == "best_of_n"

    @property
    def responses_per_iteration(self) -> int:
        """Responses one outer iteration samples (0 for the exact entries and Best-of-N)."""
        if self.algorithm in (*EXACT_ALGORITHMS, "best_of_n"):
            return 0
        if self.algorithm in METHOD_ALGORITHMS:
            return self.method_settings().responses_per_iteration
        if self.algorithm == "reinforce_kl":
            return self.batch_size
        return self.batch_size * self.group_size

    @property
    def response_budget(self) -> int:
        """Responses the whole budget samples."""
        return self.n_iterations * self.responses_per_iteration

    @property
    def step_budget(self) -> int:
        """Gradient steps the whole budget takes (outer iterations for exact APMD, 0 for Best-of-N)."""
        if self.algorithm == "best_of_n":
            return 0
        if self.algorithm in ("apmd_exact", "npg"):
            return self.n_iterations
        return self.n_iterations * self.inner_steps


def _shared_fields() -> tuple[str, ...]:
    """The fields :class:`Entry` and :class:`~covpo.experiments.ppo.MethodSettings` have in common."""
    own = {field.name for field in dataclasses.fields(Entry)}
    return tuple(field.name for field in dataclasses.fields(MethodSettings) if field.name in own)


def with_response_budget(entry: Entry, response_budget: int) -> Entry:
    """``entry`` with ``n_iterations`` set so that it samples at most ``response_budget`` responses.

    Entries that sample nothing are returned unchanged.
    """
    response_budget = check_count("response_budget", response_budget)
    if entry.responses_per_iteration == 0:
        return entry
    n_iterations = response_budget // entry.responses_per_iteration
    if n_iterations < 1:
        raise ValueError(
            f"response_budget {response_budget} is smaller than one batch of {entry.name!r} "
            f"({entry.responses_per_iteration} responses)"
        )
    return dataclasses.replace(entry, n_iterations=n_iterations)


# ---------------------------------------------------------------------------------------
# The two baselines no other module runs


def filtered_sft_log_likelihood(instance: BanditInstance, theta: np.ndarray, kept: np.ndarray) -> float:
    """Mean log-likelihood ``sum_{x,y} w(x,y) log pi_theta(y|x)`` of the kept samples, ``w = kept / sum(kept)``.

    ``kept`` counts, per ``(x, y)``, the base-model samples that survived the reward filter;
    the SFT objective of :func:`filtered_sft` (paper section 2.2 policies, maximum likelihood).
    """
    total = float(kept.sum())
    if total == 0.0:
        return 0.0
    return float(np.sum(kept * log_policy(instance, theta)) / total)


def filtered_sft_gradient(instance: BanditInstance, theta: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Gradient of :func:`filtered_sft_log_likelihood`: ``sum_{x,y} w(x,y) (phi(x,y) - phibar_theta(x))`` (paper section 2.2)."""
    total = float(kept.sum())
    if total == 0.0:
        return np.zeros(instance.dim)
    weights = kept / total
    mean_features = np.einsum("xy,xyd->xd", np.exp(log_policy(instance, theta)), instance.features)
    return np.einsum("xy,xyd->d", weights, instance.features) - weights.sum(axis=1) @ mean_features


def filter_best(
    kept: np.ndarray, best_reward: np.ndarray, prompts: np.ndarray, responses: np.ndarray, rewards: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Add a batch to the reward-filtered dataset: per prompt, keep only samples of the highest reward seen.

    Returns the new counts ``kept`` (``(n_prompts, n_responses)``) and the new best reward per
    prompt; a prompt whose best reward rises drops its earlier samples. Vectorized.
    """
    prompts, responses, rewards = (np.ravel(a) for a in (prompts, responses, rewards))
    batch_best = np.full_like(best_reward, -np.inf)
    np.maximum.at(batch_best, prompts, rewards)
    new_best = np.maximum(best_reward, batch_best)
    kept = np.where((new_best > best_reward + OPTIMAL_TOLERANCE)[:, None], 0.0, kept)
    top = rewards >= new_best[prompts] - OPTIMAL_TOLERANCE
    np.add.at(kept, (prompts[top], responses[top]), 1.0)
    return kept, new_best


def filtered_sft(
    instance: BanditInstance,
    n_rounds: int,
    *,
    batch_size: int,
    group_size: int,
    inner_steps: int,
    eta: float,
    rng: np.random.Generator,
) -> Trajectory:
    """Supervised fine-tuning on reward-filtered base samples (rejection-sampling fine-tuning).

    Each round draws ``N = batch_size`` prompts with ``G = group_size`` responses each from the
    *base model* ``pi_0`` (``N G`` responses counted), keeps per prompt the samples of the
    highest reward seen so far (:func:`filter_best`), and takes ``K = inner_steps`` gradient-ascent
    steps of size ``eta`` on their mean log-likelihood (:func:`filtered_sft_gradient`), warm
    started. A prompt's kept samples are optimal only once an optimal response has been drawn
    for it, which takes about ``1 / c_0(x)`` draws: the method is governed by coverage
    (paper section 1.3), and fitting suboptimal survivors can lower coverage.
    """
    n_rounds = check_count("n_rounds", n_rounds)
    inner_steps = check_count("inner_steps", inner_steps)
    eta = check_positive("eta", eta)
    settings = {"batch_size": batch_size, "group_size": group_size, "inner_steps": inner_steps, "eta": eta}
    recorder = TrajectoryRecorder("SFT on filtered samples", instance.optimal_value, settings)
    log_base = base_log_policy(instance)
    recorder.record_policy(instance, log_base)
    theta = np.array(instance.base_theta, dtype=float)
    kept = np.zeros(instance.rewards.shape)
    best_reward = np.full(instance.n_prompts, -np.inf)
    for _ in range(n_rounds):
        batch = draw_batch(instance, log_base, batch_size, rng, group_size=group_size)
        recorder.count_responses(batch.size)
        kept, best_reward = filter_best(kept, best_reward, batch.prompts, batch.responses, batch.rewards)
        for _ in range(inner_steps):
            theta = theta + eta * filtered_sft_gradient(instance, theta, kept)
        recorder.count_gradient_steps(inner_steps)
        recorder.record_policy(instance, log_policy(instance, theta))
    return recorder.finish()


def best_of_n_log_policy(instance: BanditInstance, log_probs: np.ndarray, n: int) -> np.ndarray:
    """Log-probabilities of the response Best-of-N returns: the best of ``n`` draws from ``pi`` (paper section 1.3).

    Per prompt, with ``F(v)`` the probability that one draw has reward at most ``v`` and ``p(v)``
    that it has reward exactly ``v``, the best of ``n`` draws has reward ``v`` with probability
    ``F(v)^n - (F(v) - p(v))^n = F(v)^n (1 - (1 - p(v) / F(v))^n)``; the second factor is
    :func:`covpo.algorithms.best_of_n.log_best_of_n_success` at ``log(p(v) / F(v))``, exact when ``p(v)`` is
    far below ``1e-300``. Ties go to the first best draw, so that mass is shared by the responses
    of reward ``v`` in proportion to ``pi``.
    """
    n = check_count("n", n)
    result = np.empty_like(log_probs, dtype=float)
    for x in range(instance.n_prompts):
        levels, level_of = np.unique(instance.rewards[x], return_inverse=True)
        log_level_mass = np.array([logsumexp(log_probs[x][level_of == k]) for k in range(levels.size)])
        log_cdf = np.minimum(np.logaddexp.accumulate(log_level_mass), 0.0)
        log_share = np.minimum(log_level_mass - log_cdf, 0.0)
        log_best_mass = n * log_cdf + log_best_of_n_success(log_share, n)
        result[x] = log_best_mass[level_of] + log_probs[x] - log_level_mass[level_of]
    return result - logsumexp(result, axis=1, keepdims=True)


def best_of_n_size(instance: BanditInstance, delta: float) -> int:
    """``N = max_x ceil(log(1/delta) / -log(1 - c_0(x)))``: every prompt succeeds with probability ``1 - delta``.

    :func:`covpo.algorithms.best_of_n.best_of_n_samples_needed` at each prompt's base coverage; one ``N``
    for all prompts, since a test-time procedure does not know which prompt is hard.
    """
    needed = best_of_n_samples_needed(log_coverage(instance, base_log_policy(instance)), delta)
    return int(np.max(needed))


def best_of_n_trajectory(instance: BanditInstance, delta: float) -> Trajectory:
    """Best-of-N from ``pi_0`` as a two-record trajectory: the base model, then the Best-of-N policy at ``N`` responses.

    ``N`` is :func:`best_of_n_size`; the second record's reward, log coverage and KL are those of
    :func:`best_of_n_log_policy`, exactly. No gradient steps. The responses are per test prompt.
    """
    delta = check_probability("delta", delta)
    n = best_of_n_size(instance, delta)
    log_base = base_log_policy(instance)
    recorder = TrajectoryRecorder("Best-of-N", instance.optimal_value, {"delta": delta, "n": n})
    recorder.record_policy(instance, log_base)
    recorder.count_responses(n)
    recorder.record_policy(instance, best_of_n_log_policy(instance, log_base, n))
    return recorder.finish()


# ---------------------------------------------------------------------------------------
# One run


def _exact_apmd_trajectory(entry: Entry, instance: BanditInstance) -> Trajectory:
    """Exact APMD; the outer iterations (resets) are moved into the steps column, the unit of its cost."""
    run = apmd(instance, entry.beta, entry.n_iterations, exact_target_inner_loop, algorithm="APMD (exact targets)")
    trajectory = run.trajectory
    return trajectory_from_arrays(
        trajectory.algorithm,
        trajectory.optimal_value,
        gradient_steps=trajectory.reference_resets,
        reward=trajectory.reward,
        log_coverage=trajectory.log_coverage,
        kl_to_base=trajectory.kl_to_base,
        reference_resets=trajectory.reference_resets,
        settings={**trajectory.settings, "steps_column": "outer iterations"},
    )


def run_entry(
    entry: Entry, instance: BanditInstance, eta: float | None, rng: np.random.Generator, *, eps: float
) -> Trajectory:
    """Run ``entry`` on ``instance`` at learning rate ``eta`` for its whole budget; return its trajectory.

    ``eps`` is used only by Best-of-N when ``entry.delta`` is ``None``. A learning rate too large
    for the importance weights raises ``FloatingPointError``; a run whose iterates leave the
    floating-point range raises ``ValueError`` (from the trajectory's checks).
    """
    algorithm = entry.algorithm
    if algorithm in METHOD_ALGORITHMS:
        return run_method(entry.method_settings(), instance, eta, rng)
    if algorithm == "reinforce_kl":
        return sampled_reinforce(
            instance, eta, entry.n_iterations, entry.batch_size, rng, beta=entry.beta, record_every=entry.record_every
        )
    if algorithm == "npg":
        return npg(
            instance, entry.beta, entry.n_iterations, batch_size=entry.batch_size, group_size=entry.group_size, rng=rng
        ).trajectory
    if algorithm == "apmd_exact":
        return _exact_apmd_trajectory(entry, instance)
    if algorithm == "reinforce_exact":
        return exact_reinforce(instance, eta, entry.n_iterations, record_every=entry.record_every)
    if algorithm == "best_of_n":
        return best_of_n_trajectory(instance, eps if entry.delta is None else entry.delta)
    return filtered_sft(
        instance,
        entry.n_iterations,
        batch_size=entry.batch_size,
        group_size=entry.group_size,
        inner_steps=entry.inner_steps,
        eta=eta,
        rng=rng,
    )


@dataclass(frozen=True)
class RunOutcome:
    """What the head-to-head keeps of one run (no trajectory, so tasks return little).

    ``responses_to_eps`` and ``steps_to_eps`` are the costs at the first eps-optimal record, or
    what the run spent when it never got there; the coverage fields are ``nan`` and
    ``final_suboptimality`` is ``inf`` for a run that diverged, whose ``error`` says why.
    """

    reached: bool
    responses_to_eps: int
    steps_to_eps: int
    min_log10_coverage: float
    coverage_loss: float
    final_suboptimality: float
    diverged: bool
    error: str | None = None


def outcome_of(trajectory: Trajectory, log_base_coverage: np.ndarray, eps: float) -> RunOutcome:
    """Summarize a trajectory: costs to eps, lowest log10 coverage, worst coverage loss in decades, final gap."""
    hit = trajectory.first_eps_optimal(eps)
    index = trajectory.n_records - 1 if hit is None else hit
    return RunOutcome(
        reached=hit is not None,
        responses_to_eps=int(trajectory.responses_sampled[index]),
        steps_to_eps=int(trajectory.gradient_steps[index]),
        min_log10_coverage=trajectory.min_log10_coverage,
        coverage_loss=trajectory.coverage_loss(log_base_coverage),
        final_suboptimality=float(trajectory.suboptimality[-1]),
        diverged=False,
    )


def run_task(
    entry: Entry, instance: BanditInstance, eta: float | None, eps: float, seed: tuple[int, ...]
) -> RunOutcome:
    """One task of :func:`head_to_head`: :func:`run_entry` with ``np.random.default_rng(list(seed))``, summarized.

    A run that diverges (``FloatingPointError``, or non-finite iterates caught as ``ValueError``
    by the trajectory's checks) becomes an outcome with ``diverged`` set and the spent budget as cost.
    """
    log_base_coverage = log_coverage(instance, base_log_policy(instance))
    try:
        trajectory = run_entry(entry, instance, eta, np.random.default_rng(list(seed)), eps=eps)
    except (FloatingPointError, ValueError) as error:
        return RunOutcome(False, entry.response_budget, entry.step_budget, np.nan, np.nan, np.inf, True, str(error))
    return outcome_of(trajectory, log_base_coverage, eps)


# ---------------------------------------------------------------------------------------
# The head-to-head


@dataclass(frozen=True, eq=False)
class HeadToHead:
    """Every entry on every instance for every seed, at each entry's best learning rate per instance.

    Arrays are indexed ``[entry, instance, seed]`` unless stated.

    Attributes
    ----------
    entries, coverages, eps, seeds
        The settings: the :class:`Entry` list, ``C_cov`` of each instance's base model, the
        accuracy target, and the seeds.
    eta
        The learning rate kept per ``[entry, instance]`` (``nan`` for entries without one).
    reached
        Whether the run became eps-optimal within its budget.
    responses_to_eps, steps_to_eps
        Costs at the first eps-optimal record; where not reached, what the run spent (a lower bound).
    min_log10_coverage
        Lowest base-10 log coverage over the run's records and prompts (``nan`` if diverged).
    coverage_loss
        Largest fall of any prompt's coverage below its base value, in decades (``>= 0``; ``nan`` if diverged).
    final_suboptimality
        ``J* - J`` at the end of the budget (``inf`` if diverged).
    diverged
        Whether the run stopped on a non-finite step.
    base_suboptimality
        ``J* - J(pi_0)`` per instance.
    label
        A name for the suite part, for titles.
    """

    entries: tuple[Entry, ...]
    coverages: np.ndarray
    eps: float
    seeds: tuple[int, ...]
    eta: np.ndarray
    reached: np.ndarray
    responses_to_eps: np.ndarray
    steps_to_eps: np.ndarray
    min_log10_coverage: np.ndarray
    coverage_loss: np.ndarray
    final_suboptimality: np.ndarray
    diverged: np.ndarray
    base_suboptimality: np.ndarray
    label: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """The entries' names."""
        return tuple(entry.name for entry in self.entries)

    def entry_index(self, name: str) -> int:
        """Row of the entry called ``name``."""
        if name not in self.names:
            raise ValueError(f"no entry named {name!r}; the head-to-head has {list(self.names)}")
        return self.names.index(name)

    def subset(self, rows: Sequence[int]) -> HeadToHead:
        """The head-to-head restricted to the entries at ``rows`` (in that order)."""
        rows = [int(row) for row in rows]
        if not rows or any(row < 0 or row >= len(self.entries) for row in rows):
            raise ValueError(f"rows must be a non-empty list of entry indices below {len(self.entries)}, got {rows!r}")
        arrays = ("eta", "reached", "responses_to_eps", "steps_to_eps", "min_log10_coverage", "coverage_loss",
                  "final_suboptimality", "diverged")
        return dataclasses.replace(
            self, entries=tuple(self.entries[row] for row in rows), **{name: getattr(self, name)[rows] for name in arrays}
        )

    def within_budget(self, response_budget: int) -> HeadToHead:
        """The same runs read at a smaller response budget (the widget's budget slider).

        Every sampling run at a fixed learning rate draws the same responses whatever its total
        budget, so its first ``response_budget`` responses are exactly those of a run given that
        budget; the learning rate stays the one kept at the full budget. A sampling run that had
        not reached eps within ``response_budget`` responses is marked as not reaching it and
        charged the whole outer iterations that fit in the budget. Exact entries and Best-of-N
        are unchanged, and the coverage columns still describe the whole run.
        """
        response_budget = check_count("response_budget", response_budget)
        responses = self.responses_to_eps.copy()
        steps = self.steps_to_eps.copy()
        reached = self.reached.copy()
        for row, entry in enumerate(self.entries):
            if entry.is_exact or entry.is_test_time:
                continue
            over = responses[row] > response_budget
            iterations = response_budget // entry.responses_per_iteration
            reached[row] &= ~over
            responses[row][over] = iterations * entry.responses_per_iteration
            steps[row][over] = iterations * (entry.step_budget // entry.n_iterations)
        return dataclasses.replace(self, reached=reached, responses_to_eps=responses, steps_to_eps=steps)

    def median_cost(self, row: int, cost: str = "responses") -> float:
        """Median ``"responses"`` or ``"steps"`` to eps over the runs of entry ``row`` that reached it (``nan`` if none)."""
        if cost not in ("responses", "steps"):
            raise ValueError(f"cost must be 'responses' or 'steps', got {cost!r}")
        values = (self.responses_to_eps if cost == "responses" else self.steps_to_eps)[row]
        hits = values[self.reached[row]]
        return float(np.median(hits)) if hits.size else float("nan")

    def table(self) -> Table:
        """One row per algorithm: runs that reached eps, median costs, worst coverage loss, divergences.

        Columns: runs that reached eps; median responses and gradient steps to eps over those
        runs (``exact``: none sampled; Best-of-N: per test prompt; exact APMD's steps are outer
        iterations); the worst coverage loss over all runs in decades (``*`` after the name
        marks more than half a prompt's base coverage lost); runs that diverged.
        ``str(table)`` gives it as aligned text.
        """
        runs = self.reached[0].size if self.entries else 0
        rows = tuple(self._table_row(row, entry) for row, entry in enumerate(self.entries))
        coverages = ", ".join(f"{c:g}" for c in np.round(self.coverages, 3))
        caption = (
            f"{self.label + ': ' if self.label else ''}ε = {self.eps:g}, C_cov = {coverages}, "
            f"seeds {', '.join(str(seed) for seed in self.seeds)}"
        )
        return Table(
            ("algorithm", f"runs reaching ε (of {runs})", "median responses to ε", "median steps to ε",
             "worst coverage loss (decades)", "runs diverged"),
            rows,
            caption=caption,
            notes=(
                f"* after a name: some run lost more than half of a prompt's base coverage "
                f"(a loss above log10 2 = {HALF_COVERAGE_DECADES:.2f} decades).",
                "Medians are over the runs that reached ε; '-': no run did. 'exact': the algorithm "
                "samples nothing. Best-of-N is test-time: its cost is responses per test prompt and "
                "nothing is trained. Exact APMD's steps are outer iterations.",
            ),
        )

    def _table_row(self, row: int, entry: Entry) -> tuple:
        responses = self.median_cost(row, "responses")
        steps = self.median_cost(row, "steps")
        losses = self.coverage_loss[row]
        worst = float(np.nanmax(losses)) if np.any(np.isfinite(losses)) else float("nan")
        name = f"{entry.name} (test time)" if entry.is_test_time else entry.name
        if worst > HALF_COVERAGE_DECADES:
            name += " *"
        return (
            name,
            int(self.reached[row].sum()),
            "exact" if entry.is_exact else (None if np.isnan(responses) else float(responses)),
            None if np.isnan(steps) else float(steps),
            worst,
            int(self.diverged[row].sum()),
        )

    def summary(self) -> str:
        """Which algorithms reached eps in every run, which never did, and which lost over half the base coverage."""
        always = [name for row, name in enumerate(self.names) if self.reached[row].all()]
        never = [name for row, name in enumerate(self.names) if not self.reached[row].any()]
        sometimes = [name for name in self.names if name not in always and name not in never]
        worst = np.max(np.where(np.isfinite(self.coverage_loss), self.coverage_loss, -np.inf), axis=(1, 2))
        lossy = [f"{name} ({loss:.3g})" for name, loss in zip(self.names, worst) if loss > HALF_COVERAGE_DECADES]
        title = (
            f"{self.label or 'head-to-head'}: {len(self.entries)} algorithms, {self.coverages.size} instances, "
            f"{len(self.seeds)} seeds, eps = {self.eps:g}"
        )
        lines = [
            title,
            f"  reached eps in every run: {'; '.join(always) or 'none'}",
            f"  reached eps in some runs: {'; '.join(sometimes) or 'none'}",
            f"  never reached eps: {'; '.join(never) or 'none'}",
            f"  lost more than half the base coverage (worst, decades): {'; '.join(lossy) or 'none'}",
        ]
        if self.diverged.any():
            lines.append(f"  diverged runs: {int(self.diverged.sum())}")
        return "\n".join(lines)


def _check_arguments(
    instances: Sequence[BanditInstance], coverages: Sequence[float], entries: Sequence[Entry], eps: float, seeds: Sequence[int]
) -> tuple[tuple[BanditInstance, ...], np.ndarray, tuple[Entry, ...], float, tuple[int, ...]]:
    instances = tuple(instances)
    coverages = check_finite_array("coverages", coverages, ndim=1)
    entries = tuple(entries)
    eps = check_positive("eps", eps)
    seeds = tuple(check_count("seeds", seed, minimum=0) for seed in seeds)
    if not instances:
        raise ValueError("instances must hold at least one instance")
    if len(instances) != coverages.size:
        raise ValueError(f"coverages must hold one value per instance: got {len(instances)} instances and {coverages.size} coverages")
    if np.any(coverages < 1.0):
        raise ValueError(f"coverages must be >= 1 (C_cov = E_x 1/c_0(x)), got {coverages!r}")
    if not entries:
        raise ValueError("entries must hold at least one Entry")
    if not all(isinstance(entry, Entry) for entry in entries):
        raise ValueError("entries must all be Entry records")
    names = [entry.name for entry in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"entries must have distinct names, got {names}")
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    return instances, coverages, entries, eps, seeds


def _task_list(
    instances: tuple[BanditInstance, ...], entries: tuple[Entry, ...], eps: float, seeds: tuple[int, ...]
) -> tuple[list[tuple], list[tuple[int, int, int, int]]]:
    """One task per (entry, instance, eta, seed); deterministic entries run once and serve every seed."""
    tasks, keys = [], []
    for i, entry in enumerate(entries):
        run_seeds = seeds[:1] if entry.algorithm in DETERMINISTIC_ALGORITHMS else seeds
        for j, instance in enumerate(instances):
            for k, eta in enumerate(entry.learning_rates):
                for s, seed in enumerate(run_seeds):
                    tasks.append((entry, instance, eta, eps, (seed, j, i, k)))
                    keys.append((i, j, k, s))
    return tasks, keys


def _selection_key(outcomes: list[RunOutcome]) -> tuple[int, float, float, float]:
    """Rank a learning rate by runs not reaching eps, then median responses, steps and final gap."""
    return (
        sum(not outcome.reached for outcome in outcomes),
        float(np.median([outcome.responses_to_eps for outcome in outcomes])),
        float(np.median([outcome.steps_to_eps for outcome in outcomes])),
        float(np.median([outcome.final_suboptimality for outcome in outcomes])),
    )


def head_to_head(
    instances: Sequence[BanditInstance],
    coverages: Sequence[float],
    entries: Sequence[Entry],
    *,
    eps: float,
    seeds: Sequence[int],
    label: str = "",
    progress: bool = True,
) -> HeadToHead:
    """Run every entry on every instance for every seed and record its costs to eps-optimality.

    All runs go through :func:`covpo.experiments.parallel.run_tasks`, so the joblib configuration of the
    caller decides where they run. The run of entry ``i`` on instance ``j`` at learning rate
    ``k`` for ``seed`` draws from ``np.random.default_rng([seed, j, i, k])``: results are
    identical bit for bit for every backend and number of workers. Per instance, an entry keeps
    the learning rate of its grid that reaches eps in the most seeds, then with the fewest
    median responses, steps, and the lowest median final gap (the rule of
    :func:`~covpo.experiments.ppo.cost_sweep`, over seeds); all its seeds are reported at that
    rate. Exact entries and Best-of-N do not depend on the seed and run once per instance.

    Parameters
    ----------
    instances
        The bandits, at least one.
    coverages
        ``C_cov`` of each instance's base model (one per instance, each ``>= 1``), the x-axis of
        :func:`covpo.plots.head_to_head.head_to_head_figure`.
    entries
        The :class:`Entry` records, at least one, with distinct names.
    eps
        Accuracy target, ``> 0``.
    seeds
        Non-negative integer seeds, at least one.
    label
        A name for the suite part, for titles.
    progress
        Show a progress bar (on stderr, after a second).
    """
    instances, coverages, entries, eps, seeds = _check_arguments(instances, coverages, entries, eps, seeds)
    tasks, keys = _task_list(instances, entries, eps, seeds)
    results = run_tasks(run_task, tasks, f"head-to-head {label}".strip(), progress=progress)
    by_key = dict(zip(keys, results))
    shape = (len(entries), len(instances), len(seeds))
    fields = {name: np.zeros(shape, dtype=kind) for name, kind in _OUTCOME_ARRAYS.items()}
    eta = np.full(shape[:2], np.nan)
    for i, entry in enumerate(entries):
        repeats = 1 if entry.algorithm in DETERMINISTIC_ALGORITHMS else len(seeds)
        for j in range(len(instances)):
            grid = [[by_key[(i, j, k, s)] for s in range(repeats)] for k in range(len(entry.learning_rates))]
            best = min(range(len(grid)), key=lambda k: _selection_key(grid[k]))
            if entry.learning_rates[best] is not None:
                eta[i, j] = entry.learning_rates[best]
            for s in range(len(seeds)):
                outcome = grid[best][s if repeats > 1 else 0]
                for name, values in fields.items():
                    values[i, j, s] = getattr(outcome, name)
    base = np.array([instance.optimal_value - expected_reward(instance, base_log_policy(instance)) for instance in instances])
    return HeadToHead(
        entries=entries,
        coverages=coverages,
        eps=eps,
        seeds=seeds,
        eta=eta,
        base_suboptimality=base,
        label=label,
        **fields,
    )


_OUTCOME_ARRAYS = {
    "reached": bool,
    "responses_to_eps": np.int64,
    "steps_to_eps": np.int64,
    "min_log10_coverage": float,
    "coverage_loss": float,
    "final_suboptimality": float,
    "diverged": bool,
}


# ---------------------------------------------------------------------------------------
# The book's suite and settings


@dataclass(frozen=True, eq=False)
class SuitePart:
    """Instances of one family and shape, with their ``C_cov`` and the family's accuracy target."""

    family: str
    label: str
    instances: tuple[BanditInstance, ...]
    coverages: np.ndarray
    eps: float


def _random_part(coverages: Sequence[float], shape: tuple[int, int, int], seed: int = 0) -> SuitePart:
    n_prompts, n_responses, dim = shape
    instances = tuple(
        dialled_coverage_instance(np.random.default_rng(seed), n_prompts, n_responses, dim, float(c)) for c in coverages
    )
    label = f"random softmax-linear, {n_prompts} prompts, {n_responses} responses, d = {dim}"
    return SuitePart("random", label, instances, np.array(coverages, dtype=float), FAMILY_EPS["random"])


def _collapse_part(coverages: Sequence[float], n_prompts: int) -> SuitePart:
    instances = tuple(
        stacked_collapse_instance(n_prompts, COLLAPSE_GAP, float(c), n_zero=COLLAPSE_N_ZERO) for c in coverages
    )
    label = f"stacked collapse, {n_prompts} prompts, {COLLAPSE_N_ZERO} zero-reward responses each"
    return SuitePart("collapse", label, instances, np.array(coverages, dtype=float), FAMILY_EPS["collapse"])


def default_suite(size: str = "book") -> tuple[SuitePart, ...]:
    """The head-to-head's instances: the tabular collapse family and the random dialled-coverage family.

    ``"book"``: three coverages of each family at chapter 4's shapes
    (:func:`~covpo.experiments.ppo.collapse_family`, :func:`~covpo.experiments.ppo.random_family`).
    ``"full"``: chapter 4's five coverages of each, the collapse family also with 8 prompts,
    and the random family also with 200 prompts and with 16 responses in ``d = 24``.
    """
    if size not in SUITE_SIZES:
        raise ValueError(f"size must be one of {SUITE_SIZES}, got {size!r}")
    if size == "book":
        return (
            _collapse_part(BOOK_COVERAGES["collapse"], 4),
            _random_part(BOOK_COVERAGES["random"], RANDOM_SHAPE),
        )
    return (
        *(_collapse_part(COLLAPSE_COVERAGES, n) for n in FULL_COLLAPSE_PROMPTS),
        *(_random_part(RANDOM_COVERAGES, shape) for shape in FULL_RANDOM_SHAPES),
    )


def _chapter_4_entries(family: str) -> tuple[Entry, ...]:
    """Chapter 4's settings (PPO-NoClip, PPO-Lite, GRPO with and without resets, REINFORCE)."""
    methods = collapse_family_methods() if family == "collapse" else random_family_methods()
    return tuple(Entry.from_method(method) for method in methods)


def default_entries(family: str) -> tuple[Entry, ...]:
    """Every algorithm of the book at our settings for ``family`` (``"collapse"`` or ``"random"``).

    Chapter 4's five methods keep its settings (:func:`~covpo.experiments.ppo.random_family_methods`,
    :func:`~covpo.experiments.ppo.collapse_family_methods`); the squared-loss methods take the
    reset methods' ``beta = 1``, batch (256 responses per iteration) and inner steps, with
    ``eta = 2 / beta^2`` (their curvature scales like ``beta^2``; ``8 / beta^2`` diverges on
    both families). NPG steps by ``1 / beta``: ``beta = 1`` with ``N = 128, G = 2`` on the random
    family; on the tabular collapse family its least-squares direction is underdetermined
    (``d = 408``) and ``beta`` of 1, 2 or 4 let the iterates blow up on some seeds, so it runs
    at ``beta = 8`` with ``N = 32, G = 8``: stable, and slow. REINFORCE with a KL penalty is
    :func:`~covpo.algorithms.reinforce.sampled_reinforce` with ``beta`` from :data:`FAMILY_BETA_FIXED_KL`;
    SFT draws 32 prompts with 8 responses each per round and takes 10 steps. Every sampling
    entry's ``T`` is then set so that it spends the family's :data:`FAMILY_RESPONSE_BUDGET`;
    exact APMD gets 50 outer iterations, exact REINFORCE 1,000 steps.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    collapse = family == "collapse"
    inner = 40 if collapse else 10
    fixed_etas = (8.0, 64.0, 512.0) if collapse else (4.0, 16.0, 64.0)
    npg_beta, npg_batch, npg_group = (8.0, 32, 8) if collapse else (1.0, 128, 2)
    own = (
        Entry("REINFORCE, KL to base", "reinforce_kl", FAMILY_BETA_FIXED_KL[family], 32, 1, 1, fixed_etas,
              record_every=10 if collapse else 5),
        Entry("KimiPO", "kimipo", 1.0, 128, inner, 1, (2.0,), group_size=1),
        Entry("KimiPO-Norm", "kimipo_norm", 1.0, 64, inner, 1, (2.0,), group_size=3),
        Entry("Rebel-OnPolicy", "rebel_onpolicy", 1.0, 128, inner, 1, (2.0,)),
        Entry("NPG, resets", "npg", npg_beta, npg_batch, 1, 1, group_size=npg_group),
        Entry("SFT, filtered base samples", "sft_filtered", 0.0, 32, 10, 1, (1.0, 8.0), group_size=8),
    )
    budget = FAMILY_RESPONSE_BUDGET[family]
    sampling = tuple(with_response_budget(entry, budget) for entry in (*_chapter_4_entries(family), *own))
    exact = (
        Entry("APMD, exact targets", "apmd_exact", 1.0, n_iterations=50),
        Entry("REINFORCE, exact gradient", "reinforce_exact", 0.0, n_iterations=1_000, etas=fixed_etas, record_every=10),
        Entry("Best-of-N", "best_of_n"),
    )
    return sampling + exact


def default_head_to_head(size: str = "book", seeds: Sequence[int] | None = None, progress: bool = True) -> tuple[HeadToHead, ...]:
    """The book's head-to-head in one call: :func:`default_entries` on every part of :func:`default_suite`.

    Seeds default to ``BOOK_SEEDS`` (``"book"``) or ``FULL_SEEDS`` (``"full"``).
    """
    suite = default_suite(size)
    seeds = (BOOK_SEEDS if size == "book" else FULL_SEEDS) if seeds is None else tuple(seeds)
    return tuple(
        head_to_head(
            part.instances, part.coverages, default_entries(part.family), eps=part.eps, seeds=seeds,
            label=part.label, progress=progress,
        )
        for part in suite
    )


def fixed_reference_gap(instances: Sequence[BanditInstance], beta: float) -> float:
    """Largest ``J* - J(pi_beta)`` over ``instances`` for the fixed-reference optimum ``pi_0 exp(r / beta) / Z`` (the maximizer of paper Eq. (5)).

    How far the best a KL penalty of strength ``beta`` toward ``pi_0`` allows stays from the
    optimum; :data:`FAMILY_BETA_FIXED_KL` is chosen so that it is at most eps/2 on the suite.
    """
    beta = check_positive("beta", beta)
    gaps = [
        instance.optimal_value - expected_reward(instance, regularized_optimum(instance, base_log_policy(instance), beta))
        for instance in instances
    ]
    return float(max(gaps))

