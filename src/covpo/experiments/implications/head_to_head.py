"""The head-to-head of every algorithm of the book: one suite, one budget, one table (paper sections 1 to 4).

Every algorithm the book implements runs on the same instances, under the same response
budget and the same seeds, and reports the same costs (paper section 5, its
summary claim: reference resets are coverage-preserving, fixed references are not):

- each algorithm is a :class:`~covpo.experiments.sweeps.Method` (a registered name of
  :data:`covpo.ALGORITHMS`, its hyperparameters and learning rates), run through :func:`covpo.run`;
- :func:`head_to_head_run` and :func:`run_task`: one run of one method on one instance at one
  learning rate, read by the cost conventions below, and its summary;
- :func:`covpo.algorithms.filtered_sft.filtered_sft` and :func:`covpo.algorithms.best_of_n.best_of_n`:
  the two coverage-governed baselines (supervised fine-tuning on reward-filtered base samples, and
  Best-of-N sampling from the base model, a test-time procedure);
- :func:`head_to_head`: every method on every instance for every seed, through
  :func:`covpo.experiments.parallel.run_tasks`, with a frozen :class:`HeadToHead` record, its
  :meth:`~HeadToHead.table` and :meth:`~HeadToHead.summary`;
- :func:`default_suite`, :func:`default_methods` and :func:`default_head_to_head`: the book's
  suite and settings, reproducible from one call.

Cost conventions (decided here, stated in every table):

- *responses* are every response an algorithm samples, baselines' extra responses included;
  *steps* are gradient steps, every parameter update inner steps included (one
  natural-gradient step counts as one); *rounds* are rounds of batch generation (one per
  fresh batch drawn from the current policy, however many steps reuse it), the paper's
  third unit (section 1, "Implications");
- every cost is the registry's (:attr:`covpo.algorithms.Algorithm.costs`), the one its
  trajectories count: **exact APMD** (:func:`covpo.algorithms.mirror_descent.apmd_exact`)
  samples nothing and counts one step per outer iteration (an exact solve counts as one step,
  as NPG's natural-gradient step does), marked ``exact`` in the responses column; so is
  **exact REINFORCE** (population gradients, no responses);
- **Best-of-N** is not a trained policy (the registry's ``trains`` is false): its cost is ``N``,
  the responses drawn *per test prompt*, with ``N = max_x ceil(log(1/delta) / -log(1 - c_0(x)))``
  (paper section 1.3) and ``delta = eps`` in the book's methods, so that on every prompt it
  returns an optimal response with probability ``1 - eps``; its reward is the exact value of
  the Best-of-N distribution and its steps are zero;
- **SFT on filtered samples** draws responses from ``pi_0`` only, keeps the best ones and
  fits them by maximum likelihood; its cost is responses drawn plus gradient steps.

Every instance, constant, budget and seed here is ours; the paper's are not reproduced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.coverage_instances import dialled_coverage_instance
from covpo.experiments.parallel import run_tasks
from covpo.experiments.sweeps import (
    Method,
    check_methods,
    collapse_family_methods,
    random_family_methods,
    run_unless_diverged,
)
from covpo.families import (
    COLLAPSE_COVERAGES,
    COLLAPSE_GAP,
    COLLAPSE_N_ZERO,
    RANDOM_COVERAGES,
    RANDOM_SHAPE,
    stacked_collapse_instance,
)
from covpo.instances import BanditInstance
from covpo.objectives import regularized_optimum
from covpo.policies import base_log_policy, expected_reward, log_coverage
from covpo.table import Table
from covpo.trajectory import Trajectory
from covpo.validation import (
    check_count,
    check_finite_array,
    check_flag,
    check_generator,
    check_instance,
    check_instances,
    check_option,
    check_positive,
    check_seeds,
    check_text,
)

FAMILIES = ("collapse", "random")
FAMILY_EPS = {"collapse": 0.04, "random": 0.05}
"""The accuracy target of each family (chapter 4's)."""
FAMILY_RESPONSE_BUDGET = {"collapse": 12_800, "random": 10_240}
"""Responses every sampling method of a family may spend (each method's ``T`` is set from it)."""
FAMILY_BETA_FIXED_KL = {"collapse": 0.05, "random": 0.01}
"""``beta`` of REINFORCE with a KL penalty to ``pi_0``: the fixed-reference optimum is eps/2-optimal on every suite instance."""
BOOK_COVERAGES = {"collapse": (10.0, 40.0, 160.0), "random": (5.0, 20.0, 100.0)}
FULL_COLLAPSE_PROMPTS = (4, 8)
FULL_RANDOM_SHAPES = (RANDOM_SHAPE, (200, 8, 6), (50, 16, 24))
BOOK_SEEDS = (1, 2)
FULL_SEEDS = tuple(range(1, 6))
SUITE_SIZES = ("book", "full")
HALF_COVERAGE_DECADES = float(np.log10(2.0))
COSTS = ("responses", "steps", "rounds")
"""The three costs a run is charged (responses sampled, gradient steps, rounds of batch generation)."""


# ---------------------------------------------------------------------------------------
# One run


def is_test_time(method: Method) -> bool:
    """Whether ``method`` is a test-time procedure (the registry's ``trains`` is false: Best-of-N), not a trained policy."""
    check_instance("method", method, Method)
    return not method.definition.trains


def is_exact(method: Method) -> bool:
    """Whether ``method`` trains on population quantities: it samples nothing, so its cost is iterations or steps."""
    check_instance("method", method, Method)
    return not method.definition.samples and method.definition.trains


def is_deterministic(method: Method) -> bool:
    """Whether ``method`` samples nothing, so that every seed gives the same run (the exact methods and Best-of-N)."""
    check_instance("method", method, Method)
    return not method.definition.samples


def head_to_head_run(
    method: Method, instance: BanditInstance, eta: float | None, rng: np.random.Generator | None, *, eps: float
) -> Trajectory | None:
    """Run ``method`` (:func:`~covpo.experiments.sweeps.run_unless_diverged`); ``None`` if the run diverged.

    ``eps`` is the accuracy the run is read at, checked here as every task's.
    """
    method = check_instance("method", method, Method)
    instance = check_instance("instance", instance, BanditInstance)
    eta = None if eta is None else check_positive("eta", eta)
    rng = None if rng is None else check_generator("rng", rng)
    check_positive("eps", eps)
    return run_unless_diverged(method, instance, eta, rng)


@dataclass(frozen=True)
class RunOutcome:
    """What the head-to-head keeps of one run (no trajectory, so tasks return little).

    ``responses_to_eps``, ``steps_to_eps`` and ``rounds_to_eps`` (generation rounds) are the
    costs at the first eps-optimal record, or what the run spent when it never got there; the coverage fields are ``nan`` and
    ``final_suboptimality`` is ``inf`` for a run that diverged.
    """

    reached: bool
    responses_to_eps: int
    steps_to_eps: int
    min_log10_coverage: float
    coverage_loss: float
    final_suboptimality: float
    diverged: bool
    rounds_to_eps: int = 0


def outcome_of(trajectory: Trajectory, log_base_coverage: np.ndarray, eps: float) -> RunOutcome:
    """Summarize a trajectory: costs to eps, lowest log10 coverage, worst coverage loss in decades, final gap."""
    trajectory = check_instance("trajectory", trajectory, Trajectory)
    eps = check_positive("eps", eps)
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
        rounds_to_eps=int(trajectory.generation_rounds[index]),
    )


def run_task(
    method: Method, instance: BanditInstance, eta: float | None, eps: float, seed: tuple[int, ...]
) -> RunOutcome:
    """One task of :func:`head_to_head`: :func:`head_to_head_run` with ``np.random.default_rng(list(seed))``, summarized.

    A run that diverges becomes an outcome with ``diverged`` set and the whole budget as cost.
    """
    method = check_instance("method", method, Method)
    instance = check_instance("instance", instance, BanditInstance)
    seed = check_seeds("seed", seed)
    log_base_coverage = log_coverage(instance, base_log_policy(instance))
    trajectory = head_to_head_run(method, instance, eta, np.random.default_rng(list(seed)), eps=eps)
    if trajectory is None:
        return RunOutcome(
            False, method.response_budget, method.step_budget, np.nan, np.nan, np.inf, True, method.round_budget
        )
    return outcome_of(trajectory, log_base_coverage, eps)


# ---------------------------------------------------------------------------------------
# The head-to-head


@dataclass(frozen=True, eq=False)
class HeadToHead:
    """Every method on every instance for every seed, at each method's best learning rate per instance.

    Arrays are indexed ``[method, instance, seed]`` unless stated.

    Attributes
    ----------
    methods, coverages, eps, seeds
        The settings: the :class:`~covpo.experiments.sweeps.Method` list, ``C_cov`` of each
        instance's base model, the accuracy target, and the seeds.
    eta
        The learning rate kept per ``[method, instance]`` (``nan`` for methods without one).
    reached
        Whether the run became eps-optimal within its budget.
    responses_to_eps, steps_to_eps, rounds_to_eps
        Costs at the first eps-optimal record (responses, gradient steps, rounds of batch
        generation); where not reached, what the run spent (a lower bound).
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

    methods: tuple[Method, ...]
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
    rounds_to_eps: np.ndarray | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if self.rounds_to_eps is None:
            object.__setattr__(self, "rounds_to_eps", np.zeros_like(self.steps_to_eps))

    @property
    def names(self) -> tuple[str, ...]:
        """The methods' labels."""
        return tuple(method.label for method in self.methods)

    def method_index(self, label: str) -> int:
        """Row of the method labelled ``label``."""
        if label not in self.names:
            raise ValueError(f"no method labelled {label!r}; the head-to-head has {list(self.names)}")
        return self.names.index(label)

    def subset(self, rows: Sequence[int]) -> HeadToHead:
        """The head-to-head restricted to the methods at ``rows`` (in that order)."""
        rows = [int(row) for row in rows]
        if not rows or any(row < 0 or row >= len(self.methods) for row in rows):
            raise ValueError(f"rows must be a non-empty list of method indices below {len(self.methods)}, got {rows!r}")
        arrays = ("eta", "reached", "responses_to_eps", "steps_to_eps", "rounds_to_eps", "min_log10_coverage",
                  "coverage_loss", "final_suboptimality", "diverged")
        return dataclasses.replace(
            self, methods=tuple(self.methods[row] for row in rows), **{name: getattr(self, name)[rows] for name in arrays}
        )

    def within_budget(self, response_budget: int) -> HeadToHead:
        """The same runs read at a smaller response budget (the widget's budget slider).

        Every sampling run at a fixed learning rate draws the same responses whatever its total
        budget, so its first ``response_budget`` responses are exactly those of a run given that
        budget; the learning rate stays the one kept at the full budget. A sampling run that had
        not reached eps within ``response_budget`` responses is marked as not reaching it and
        charged the whole outer iterations that fit in the budget. Exact methods and Best-of-N
        are unchanged, and the coverage columns still describe the whole run.
        """
        response_budget = check_count("response_budget", response_budget)
        responses = self.responses_to_eps.copy()
        steps = self.steps_to_eps.copy()
        rounds = self.rounds_to_eps.copy()
        reached = self.reached.copy()
        for row, method in enumerate(self.methods):
            if is_exact(method) or is_test_time(method):
                continue
            over = responses[row] > response_budget
            iterations = response_budget // method.responses_per_iteration
            reached[row] &= ~over
            responses[row][over] = iterations * method.responses_per_iteration
            steps[row][over] = iterations * method.steps_per_iteration
            rounds[row][over] = iterations * method.rounds_per_iteration
        return dataclasses.replace(
            self, reached=reached, responses_to_eps=responses, steps_to_eps=steps, rounds_to_eps=rounds
        )

    def costs(self, cost: str = "responses") -> np.ndarray:
        """The ``[method, instance, seed]`` array of one cost: ``"responses"``, ``"steps"`` or ``"rounds"`` to eps."""
        cost = check_option("cost", cost, COSTS)
        return {"responses": self.responses_to_eps, "steps": self.steps_to_eps, "rounds": self.rounds_to_eps}[cost]

    def median_cost(self, row: int, cost: str = "responses") -> float:
        """Median ``"responses"``, ``"steps"`` or ``"rounds"`` to eps over the runs of method ``row`` that reached it (``nan`` if none)."""
        values = self.costs(cost)[row]
        hits = values[self.reached[row]]
        return float(np.median(hits)) if hits.size else float("nan")

    def table(self) -> Table:
        """One row per algorithm: runs that reached eps, median costs, worst coverage loss, divergences.

        Columns: runs that reached eps; median responses, gradient steps and rounds of batch
        generation to eps over those runs (``exact``: none sampled; Best-of-N: per test prompt;
        an exact solve counts as one step); the worst coverage loss over all runs in decades (``*`` after the name
        marks more than half a prompt's base coverage lost); runs that diverged.
        ``str(table)`` gives it as aligned text.
        """
        runs = self.reached[0].size if self.methods else 0
        rows = tuple(self._table_row(row, method) for row, method in enumerate(self.methods))
        coverages = ", ".join(f"{c:g}" for c in np.round(self.coverages, 3))
        caption = (
            f"{self.label + ': ' if self.label else ''}ε = {self.eps:g}, $C_{{\\mathrm{{cov}}}}$ = {coverages}, "
            f"seeds {', '.join(str(seed) for seed in self.seeds)}"
        )
        return Table(
            ("algorithm", f"runs reaching ε (of {runs})", "median responses to ε", "median steps to ε",
             "median generation rounds to ε", "worst coverage loss (decades)", "runs diverged"),
            rows,
            caption=caption,
            notes=(
                f"* after a name: some run lost more than half of a prompt's base coverage "
                f"(a loss above $\\log_{{10}} 2$ = {HALF_COVERAGE_DECADES:.2f} decades).",
                "Medians are over the runs that reached ε; '-': no run did. 'exact': the algorithm "
                "samples nothing. Best-of-N is test-time: its cost is responses per test prompt and "
                "nothing is trained. An exact solve (exact APMD's target) counts as one step.",
            ),
        )

    def _table_row(self, row: int, method: Method) -> tuple:
        responses = self.median_cost(row, "responses")
        steps = self.median_cost(row, "steps")
        rounds = self.median_cost(row, "rounds")
        losses = self.coverage_loss[row]
        worst = float(np.nanmax(losses)) if np.any(np.isfinite(losses)) else float("nan")
        name = f"{method.label} (test time)" if is_test_time(method) else method.label
        if worst > HALF_COVERAGE_DECADES:
            name += " *"
        return (
            name,
            int(self.reached[row].sum()),
            "exact" if is_exact(method) else (None if np.isnan(responses) else float(responses)),
            None if np.isnan(steps) else float(steps),
            "exact" if is_exact(method) else (None if np.isnan(rounds) else float(rounds)),
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
            f"{self.label or 'head-to-head'}: {len(self.methods)} algorithms, {self.coverages.size} instances, "
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
    instances: Sequence[BanditInstance], coverages: Sequence[float], methods: Sequence[Method], eps: float, seeds: Sequence[int]
) -> tuple[tuple[BanditInstance, ...], np.ndarray, tuple[Method, ...], float, tuple[int, ...]]:
    instances = check_instances("instances", instances, BanditInstance)
    coverages = check_finite_array("coverages", coverages, ndim=1)
    methods = check_methods("methods", methods)
    eps = check_positive("eps", eps)
    seeds = check_seeds("seeds", seeds)
    if len(instances) != coverages.size:
        raise ValueError(f"coverages must hold one value per instance: got {len(instances)} instances and {coverages.size} coverages")
    if np.any(coverages < 1.0):
        raise ValueError(f"coverages must be >= 1 (C_cov = E_x 1/c_0(x)), got {coverages!r}")
    return instances, coverages, methods, eps, seeds


def _task_list(
    instances: tuple[BanditInstance, ...], methods: tuple[Method, ...], eps: float, seeds: tuple[int, ...]
) -> tuple[list[tuple], list[tuple[int, int, int, int]]]:
    """One task per (method, instance, eta, seed); deterministic methods run once and serve every seed."""
    tasks, keys = [], []
    for i, method in enumerate(methods):
        run_seeds = seeds[:1] if is_deterministic(method) else seeds
        for j, instance in enumerate(instances):
            for k, eta in enumerate(method.learning_rates):
                for s, seed in enumerate(run_seeds):
                    tasks.append((method, instance, eta, eps, (seed, j, i, k)))
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
    methods: Sequence[Method],
    *,
    eps: float,
    seeds: Sequence[int],
    label: str = "",
    progress: bool = True,
) -> HeadToHead:
    """Run every method on every instance for every seed and record its costs to eps-optimality.

    All runs go through :func:`covpo.experiments.parallel.run_tasks`, so the joblib configuration of the
    caller decides where they run. The run of method ``i`` on instance ``j`` at learning rate
    ``k`` for ``seed`` draws from ``np.random.default_rng([seed, j, i, k])``: results are
    identical bit for bit for every backend and number of workers. Per instance, a method keeps
    the learning rate of its grid that reaches eps in the most seeds, then with the fewest
    median responses, steps, and the lowest median final gap (the rule of
    :func:`~covpo.experiments.sweeps.cost_sweep`, over seeds); all its seeds are reported at that
    rate. Exact methods and Best-of-N do not depend on the seed and run once per instance.

    Parameters
    ----------
    instances
        The bandits, at least one.
    coverages
        ``C_cov`` of each instance's base model (one per instance, each ``>= 1``), the x-axis of
        :func:`covpo.plots.head_to_head.head_to_head_figure`.
    methods
        The :class:`~covpo.experiments.sweeps.Method` records, at least one, with distinct labels.
    eps
        Accuracy target, ``> 0``.
    seeds
        Non-negative integer seeds, at least one.
    label
        A name for the suite part, for titles.
    progress
        Show a progress bar (on stderr, after a second).
    """
    instances, coverages, methods, eps, seeds = _check_arguments(instances, coverages, methods, eps, seeds)
    label = check_text("label", label, allow_empty=True)
    progress = check_flag("progress", progress)
    tasks, keys = _task_list(instances, methods, eps, seeds)
    results = run_tasks(run_task, tasks, f"head-to-head {label}".strip(), progress=progress)
    by_key = dict(zip(keys, results))
    shape = (len(methods), len(instances), len(seeds))
    fields = {name: np.zeros(shape, dtype=kind) for name, kind in _OUTCOME_ARRAYS.items()}
    eta = np.full(shape[:2], np.nan)
    for i, method in enumerate(methods):
        repeats = 1 if is_deterministic(method) else len(seeds)
        for j in range(len(instances)):
            grid = [[by_key[(i, j, k, s)] for s in range(repeats)] for k in range(len(method.learning_rates))]
            best = min(range(len(grid)), key=lambda k: _selection_key(grid[k]))
            if method.learning_rates[best] is not None:
                eta[i, j] = method.learning_rates[best]
            for s in range(len(seeds)):
                outcome = grid[best][s if repeats > 1 else 0]
                for name, values in fields.items():
                    values[i, j, s] = getattr(outcome, name)
    base = np.array([instance.optimal_value - expected_reward(instance, base_log_policy(instance)) for instance in instances])
    return HeadToHead(
        methods=methods,
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
    "rounds_to_eps": np.int64,
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
    (:func:`~covpo.families.collapse_family`, :func:`~covpo.families.random_family`).
    ``"full"``: chapter 4's five coverages of each, the collapse family also with 8 prompts,
    and the random family also with 200 prompts and with 16 responses in ``d = 24``.
    """
    size = check_option("size", size, SUITE_SIZES)
    if size == "book":
        return (
            _collapse_part(BOOK_COVERAGES["collapse"], 4),
            _random_part(BOOK_COVERAGES["random"], RANDOM_SHAPE),
        )
    return (
        *(_collapse_part(COLLAPSE_COVERAGES, n) for n in FULL_COLLAPSE_PROMPTS),
        *(_random_part(RANDOM_COVERAGES, shape) for shape in FULL_RANDOM_SHAPES),
    )


def default_methods(family: str) -> tuple[Method, ...]:
    """Every algorithm of the book at our settings for ``family`` (``"collapse"`` or ``"random"``).

    Chapter 4's five methods keep its settings (:func:`~covpo.experiments.sweeps.random_family_methods`,
    :func:`~covpo.experiments.sweeps.collapse_family_methods`); the squared-loss methods take the
    reset methods' ``beta = 1``, batch (256 responses per iteration) and inner steps, with
    ``eta = 2 / beta^2`` (their curvature scales like ``beta^2``; ``8 / beta^2`` diverges on
    both families). NPG steps by ``1 / beta``: ``beta = 1`` with ``N = 128, G = 2`` on the random
    family; on the tabular collapse family its least-squares direction is underdetermined
    (``d = 408``) and ``beta`` of 1, 2 or 4 let the iterates blow up on some seeds, so it runs
    at ``beta = 8`` with ``N = 32, G = 8``: stable, and slow. REINFORCE with a KL penalty is
    :func:`~covpo.algorithms.reinforce.reinforce` with ``beta`` from :data:`FAMILY_BETA_FIXED_KL`;
    SFT draws 32 prompts with 8 responses each per round and takes 10 steps. Every sampling
    method's ``T`` is then set so that it spends the family's :data:`FAMILY_RESPONSE_BUDGET`;
    exact APMD gets 50 outer iterations, exact REINFORCE 1,000 steps.
    """
    family = check_option("family", family, FAMILIES)
    collapse = family == "collapse"
    squared_loss = {"beta": 1.0, "inner_steps": 40 if collapse else 10, "n_iterations": 1}
    fixed_etas = (8.0, 64.0, 512.0) if collapse else (4.0, 16.0, 64.0)
    npg_beta, npg_batch, npg_group = (8.0, 32, 8) if collapse else (1.0, 128, 2)
    own = (
        Method(
            "REINFORCE, KL to base", "reinforce",
            {"beta": FAMILY_BETA_FIXED_KL[family], "batch_size": 32, "n_iterations": 1,
             "record_every": 10 if collapse else 5},
            fixed_etas,
        ),
        Method("KimiPO", "kimipo", {**squared_loss, "batch_size": 128, "extra_responses": 1}, (2.0,)),
        Method("KimiPO-Norm", "kimipo_norm", {**squared_loss, "batch_size": 64, "extra_responses": 3}, (2.0,)),
        Method("Rebel-OnPolicy", "rebel_onpolicy", {**squared_loss, "batch_size": 128}, (2.0,)),
        Method("NPG, resets", "npg", {"beta": npg_beta, "batch_size": npg_batch, "group_size": npg_group, "n_iterations": 1}),
        Method(
            "SFT, filtered base samples", "filtered_sft",
            {"batch_size": 32, "group_size": 8, "inner_steps": 10, "n_iterations": 1}, (1.0, 8.0),
        ),
    )
    chapter_4 = collapse_family_methods() if collapse else random_family_methods()
    budget = FAMILY_RESPONSE_BUDGET[family]
    sampling = tuple(method.with_response_budget(budget) for method in (*chapter_4, *own))
    exact = (
        Method("APMD, exact targets", "apmd_exact", {"beta": 1.0, "n_iterations": 50}),
        Method("REINFORCE, exact gradient", "reinforce_exact", {"n_iterations": 1_000, "record_every": 10}, fixed_etas),
        Method("Best-of-N", "best_of_n", {"delta": FAMILY_EPS[family]}),
    )
    return sampling + exact


def default_head_to_head(size: str = "book", seeds: Sequence[int] | None = None, progress: bool = True) -> tuple[HeadToHead, ...]:
    """The book's head-to-head in one call: :func:`default_methods` on every part of :func:`default_suite`.

    Seeds default to ``BOOK_SEEDS`` (``"book"``) or ``FULL_SEEDS`` (``"full"``).
    """
    suite = default_suite(size)
    seeds = (BOOK_SEEDS if size == "book" else FULL_SEEDS) if seeds is None else check_seeds("seeds", seeds)
    return tuple(
        head_to_head(
            part.instances, part.coverages, default_methods(part.family), eps=part.eps, seeds=seeds,
            label=part.label, progress=progress,
        )
        for part in suite
    )


def fixed_reference_gap(instances: Sequence[BanditInstance], beta: float) -> float:
    """Largest ``J* - J(pi_beta)`` over ``instances`` for the fixed-reference optimum ``pi_0 exp(r / beta) / Z`` (the maximizer of paper Eq. (5)).

    How far the best a KL penalty of strength ``beta`` toward ``pi_0`` allows stays from the
    optimum; :data:`FAMILY_BETA_FIXED_KL` is chosen so that it is at most eps/2 on the suite.
    """
    instances = check_instances("instances", instances, BanditInstance)
    beta = check_positive("beta", beta)
    gaps = [
        instance.optimal_value - expected_reward(instance, regularized_optimum(instance, base_log_policy(instance), beta))
        for instance in instances
    ]
    return float(max(gaps))

