"""The behavioural contract of a registered algorithm, one suite for every entry of ``covpo.ALGORITHMS``.

In the manner of scikit-learn's ``check_estimator``, :data:`CHECKS` is a list of functions
``check(algorithm, hyperparameters, instance)`` that raise ``AssertionError`` when the algorithm
breaks its contract. They read only what the registry's record declares (its label, citation,
costs, validator and tags) and what the run shows its diagnostics callback
(:class:`covpo.algorithms.outer_loop.InnerStep`), so no check names an algorithm, and a new
algorithm registered with a small setting is checked by all of them:

- the run is a well-formed trajectory carrying the record's label, and its costs are the record's;
- the run *follows its own public gradient* (or exact update) bit for bit, and the public
  gradient is that of its objective (central finite differences at every iterate it visits);
- each inner loop improves the objective it claims to optimize, every instance of APMD ends
  each outer iteration closer to its exact target, and a fixed-reference run ends with a higher
  ``J_beta(.; pi_0)`` than it started;
- a reset algorithm's reference is the previous iterate (a fixed one is ``pi_0``), and every
  batch is drawn from the policy it says it was drawn from;
- a run whose record declares it shift invariant is unchanged when a constant is added to every reward;
- the function's own validator is the one the record points to, its citation is the docstring's,
  and ``policy=`` is taken exactly when the record says so.

``tests/mutants.py`` holds broken copies of algorithms that the suite must catch
(``tests/test_mutants.py``); ``tests/test_algorithm_contract.py`` runs it over the registry.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping

import numpy as np

import covpo
from covpo.algorithms import Algorithm
from covpo.algorithms.outer_loop import InnerStep
from covpo.instances import BanditInstance
from covpo.objectives import regularized_optimum
from covpo.policies import unchecked_kl_per_prompt
from covpo.policy_classes import SoftmaxLinear
from covpo.trajectory import Trajectory

COST_COLUMNS = ("gradient_steps", "responses_sampled", "reference_resets", "generation_rounds")
FINITE_DIFFERENCE_STEP = 1e-6
FINITE_DIFFERENCE_TOLERANCE = 1e-6
"""Relative error allowed between a gradient and central differences of its objective.

A central difference at ``h = 1e-6`` on these smooth objectives (entries of order one) is exact
to about ``1e-10`` relative; a wrong gradient (a dropped weight, a flipped sign) is off by order one.
"""
REWARD_SHIFT = 0.5
"""The constant added to every reward by :func:`check_shift_invariance` (rewards stay ``>= 0``)."""
SHIFT_TOLERANCE = 1e-8
"""How far runs on shifted rewards may differ: rounding of the shifted sums, amplified over a few steps."""


def run(algorithm: Algorithm, hyperparameters: Mapping[str, object], instance: BanditInstance, seed: int = 1,
        **changes: object) -> Trajectory:
    """One run through the registry's record, seeded when the algorithm samples."""
    rng = np.random.default_rng(seed) if algorithm.samples else None
    arguments = {**hyperparameters, **changes}
    if rng is not None:
        arguments["rng"] = rng
    return algorithm(instance, **arguments)


def observed(algorithm: Algorithm, hyperparameters: Mapping[str, object], instance: BanditInstance,
             **changes: object) -> tuple[Trajectory, dict[int, list[InnerStep]]]:
    """The run and every inner iterate it showed its ``on_inner_step`` callback, by outer iteration."""
    steps: list[InnerStep] = []
    trajectory = run(algorithm, hyperparameters, instance, on_inner_step=steps.append, **changes)
    by_iteration: dict[int, list[InnerStep]] = {}
    for step in steps:
        by_iteration.setdefault(step.iteration, []).append(step)
    return trajectory, by_iteration


def n_iterations(hyperparameters: Mapping[str, object]) -> int:
    return int(hyperparameters.get("n_iterations", 1))


# ---------------------------------------------------------------------------------------
# Form: the record, the trajectory, the costs


def check_trajectory(algorithm, hyperparameters, instance):
    """The run is a trajectory with one row per record, finite, carrying the record's label."""
    trajectory = run(algorithm, hyperparameters, instance)
    assert isinstance(trajectory, Trajectory)
    assert trajectory.algorithm == algorithm.label, (trajectory.algorithm, algorithm.label)
    assert trajectory.log_coverage.shape == (trajectory.n_records, instance.n_prompts)
    assert trajectory.kl_to_base.shape == trajectory.reward.shape == (trajectory.n_records,)
    assert np.all(np.isfinite(trajectory.reward)) and np.all(trajectory.log_coverage <= 1e-12)
    if trajectory.thetas is not None:
        assert trajectory.thetas.shape[0] == n_iterations(hyperparameters) + 1
    if trajectory.inner_kl is not None:
        assert algorithm.resets and trajectory.inner_kl.shape == (n_iterations(hyperparameters),)


def check_costs(algorithm, hyperparameters, instance):
    """Costs start at zero, never decrease, and total ``T`` times the record's costs per iteration."""
    trajectory = run(algorithm, hyperparameters, instance)
    for column in COST_COLUMNS:
        costs = getattr(trajectory, column)
        assert costs[0] == 0 and np.all(np.diff(costs) >= 0), column
    per_iteration = algorithm.iteration_costs(hyperparameters, instance)
    total = n_iterations(hyperparameters)
    assert trajectory.total_responses == total * per_iteration.responses
    assert trajectory.total_gradient_steps == total * per_iteration.gradient_steps
    assert trajectory.total_resets == total * per_iteration.resets
    assert trajectory.total_generation_rounds == total * per_iteration.generation_rounds
    assert (per_iteration.resets > 0) == algorithm.resets


def check_seeding(algorithm, hyperparameters, instance):
    """The same seed gives the same run; another seed a different one if the algorithm samples."""
    first, again, other = (run(algorithm, hyperparameters, instance, seed) for seed in (1, 1, 2))
    for column in ("reward", "log_coverage", "kl_to_base", *COST_COLUMNS):
        assert np.array_equal(getattr(first, column), getattr(again, column)), column
    if algorithm.samples:
        assert not np.array_equal(first.log_coverage, other.log_coverage)


def check_citation(algorithm, hyperparameters, instance):
    """The record's citation is the one the function's docstring gives in its first line."""
    summary = inspect.getdoc(algorithm.function).splitlines()[0]
    assert f"paper {algorithm.paper}" in summary, (algorithm.paper, summary)


def check_validator(algorithm, hyperparameters, instance):
    """The record's validator is the function's own: it accepts the setting, and the run stores what it returns."""
    checked = algorithm.check(hyperparameters)
    source = inspect.getsource(algorithm.function)
    assert f"{algorithm.validator_name}(" in source, f"{algorithm.function_name} does not call {algorithm.validator_name}"
    settings = run(algorithm, hyperparameters, instance).settings
    for name, value in checked.items():
        if value is not None:
            assert settings[name] == value, (name, settings[name], value)


def check_policy_argument(algorithm, hyperparameters, instance):
    """``policy=`` is taken exactly when the record says so, and the run goes through the class it is given."""
    assert ("policy" in inspect.signature(algorithm.function).parameters) == algorithm.accepts_policy
    if not algorithm.accepts_policy:
        return
    default = run(algorithm, hyperparameters, instance)
    counted = CountingPolicy(instance)
    through = run(algorithm, hyperparameters, instance, policy=counted)
    assert counted.calls > 0
    for column in ("reward", "log_coverage", "kl_to_base"):
        assert np.array_equal(getattr(default, column), getattr(through, column)), column


@dataclasses.dataclass(frozen=True, eq=False)
class CountingPolicy(SoftmaxLinear):
    """The softmax-linear class, counting the calls an algorithm makes to it."""

    calls_box: list = dataclasses.field(default_factory=lambda: [0])

    @property
    def calls(self) -> int:
        return self.calls_box[0]

    def log_policy(self, params: np.ndarray) -> np.ndarray:
        self.calls_box[0] += 1
        return super().log_policy(params)


# ---------------------------------------------------------------------------------------
# Behaviour: the run follows its gradient, the gradient is its objective's, the objective improves


def _next(step: InnerStep, theta: np.ndarray) -> np.ndarray:
    problem = step.subproblem
    if problem.update is not None:
        return problem.update(theta)
    size = -problem.eta if problem.descent else problem.eta
    return theta + size * problem.gradient(theta)


def check_follows_its_gradient(algorithm, hyperparameters, instance):
    """Every inner step is its public gradient step (or exact update), bit for bit, and observing changes nothing."""
    plain = run(algorithm, hyperparameters, instance)
    trajectory, by_iteration = observed(algorithm, hyperparameters, instance)
    for column in ("reward", "log_coverage", "kl_to_base", *COST_COLUMNS):
        assert np.array_equal(getattr(plain, column), getattr(trajectory, column)), column
    assert sorted(by_iteration) == list(range(n_iterations(hyperparameters)))
    steps_per_iteration = algorithm.iteration_costs(hyperparameters, instance).gradient_steps
    previous = None
    for t, steps in sorted(by_iteration.items()):
        assert [step.inner_step for step in steps] == list(range(len(steps)))
        if steps[0].subproblem.update is None:
            assert len(steps) - 1 == steps_per_iteration, (t, len(steps) - 1, steps_per_iteration)
        else:
            assert len(steps) == 2
        for before, after in zip(steps, steps[1:]):
            assert np.array_equal(after.theta, _next(before, before.theta)), f"iteration {t}, step {before.inner_step}"
        if trajectory.thetas is not None:
            assert np.array_equal(steps[0].theta, trajectory.thetas[t]) and np.array_equal(steps[-1].theta, trajectory.thetas[t + 1])
        if previous is not None and algorithm.trains:
            assert np.array_equal(steps[0].theta, previous), f"iteration {t} does not start where {t - 1} ended"
        previous = steps[-1].theta


def _finite_difference(objective: Callable[[np.ndarray], float], theta: np.ndarray) -> np.ndarray:
    gradient = np.zeros_like(theta, dtype=float)
    for index in np.ndindex(theta.shape):
        up, down = theta.astype(float), theta.astype(float)
        up[index] += FINITE_DIFFERENCE_STEP
        down[index] -= FINITE_DIFFERENCE_STEP
        gradient[index] = (objective(up) - objective(down)) / (2.0 * FINITE_DIFFERENCE_STEP)
    return gradient


def check_gradient_is_its_objectives(algorithm, hyperparameters, instance):
    """At every iterate an inner loop steps from, the public gradient matches central differences of its objective."""
    _, by_iteration = observed(algorithm, hyperparameters, instance)
    for t, steps in by_iteration.items():
        for step in steps[:-1]:
            problem = step.subproblem
            if problem.gradient is None:
                continue
            analytic = problem.gradient(step.theta)
            numeric = _finite_difference(problem.objective, step.theta)
            scale = max(1.0, float(np.max(np.abs(numeric))))
            assert np.max(np.abs(analytic - numeric)) <= FINITE_DIFFERENCE_TOLERANCE * scale, (
                f"iteration {t}, step {step.inner_step}: gradient {analytic} against differences {numeric}"
            )


def check_improves_its_objective(algorithm, hyperparameters, instance):
    """Each inner loop improves its own objective; APMD instances approach their targets; fixed references raise J_beta."""
    trajectory, by_iteration = observed(algorithm, hyperparameters, instance)
    improved = False
    for t, steps in by_iteration.items():
        first, last = steps[0], steps[-1]
        start, end = first.subproblem.objective(first.theta), last.subproblem.objective(last.theta)
        gain = start - end if first.subproblem.descent else end - start
        assert gain >= -1e-12 * max(1.0, abs(start)), f"iteration {t}: the objective went from {start} to {end}"
        improved |= gain > 0.0
        if algorithm.resets:
            beta = float(trajectory.settings["beta"])
            target = regularized_optimum(instance, first.log_reference, beta)
            before = float(instance.prompt_probs @ unchecked_kl_per_prompt(first.log_probs, target))
            after = float(instance.prompt_probs @ unchecked_kl_per_prompt(last.log_probs, target))
            assert after < before, f"iteration {t} moved away from its target: KL {before} -> {after}"
    assert improved, "no inner loop improved its objective"
    if not algorithm.resets:
        beta = float(trajectory.settings.get("beta", 0.0))
        objective = trajectory.reward - beta * trajectory.kl_to_base
        assert objective[-1] > objective[0], f"J_beta(.; pi_0) went from {objective[0]} to {objective[-1]}"


def check_reference_and_sampling(algorithm, hyperparameters, instance):
    """A reset's reference is the previous iterate (a fixed one ``pi_0``); every batch comes from the policy it names."""
    _, by_iteration = observed(algorithm, hyperparameters, instance)
    log_base = by_iteration[0][0].log_probs
    for t, steps in by_iteration.items():
        first = steps[0]
        if first.log_reference is not None:
            expected = first.log_probs if algorithm.resets else log_base
            assert np.array_equal(first.log_reference, expected), f"iteration {t}: the reference is not {'pi_t' if algorithm.resets else 'pi_0'}"
        elif algorithm.resets:
            raise AssertionError(f"iteration {t}: a reset algorithm shows no reference")
        if first.batch is None:
            continue
        sampling = first.log_probs if algorithm.on_policy else log_base
        assert np.array_equal(first.log_sampling, sampling), f"iteration {t}: the batch's policy is not the declared one"
        batch = first.batch
        assert np.array_equal(batch.log_sampling, first.log_sampling[batch.prompts, batch.responses]), (
            f"iteration {t}: the batch was not drawn from the policy it names"
        )
        assert np.array_equal(batch.rewards, instance.rewards[batch.prompts, batch.responses])


def check_shift_invariance(algorithm, hyperparameters, instance):
    """Adding one constant to every reward leaves a shift-invariant run unchanged (up to rounding)."""
    if not algorithm.shift_invariant:
        return
    shifted = dataclasses.replace(instance, rewards=instance.rewards + REWARD_SHIFT, optimal_mask=instance.optimal_mask)
    plain, moved = run(algorithm, hyperparameters, instance), run(algorithm, hyperparameters, shifted)
    pairs = [("log_coverage", plain.log_coverage, moved.log_coverage), ("kl_to_base", plain.kl_to_base, moved.kl_to_base)]
    if plain.thetas is not None:
        pairs.append(("thetas", plain.thetas, moved.thetas))
    for name, a, b in pairs:
        assert np.allclose(a, b, rtol=SHIFT_TOLERANCE, atol=SHIFT_TOLERANCE), f"{name} moved by {np.max(np.abs(a - b))}"


#: The registry suite, in the order it runs.
CHECKS: tuple[Callable[[Algorithm, Mapping[str, object], BanditInstance], None], ...] = (
    check_trajectory,
    check_costs,
    check_seeding,
    check_citation,
    check_validator,
    check_policy_argument,
    check_follows_its_gradient,
    check_gradient_is_its_objectives,
    check_improves_its_objective,
    check_reference_and_sampling,
    check_shift_invariance,
)


def contract_instance() -> BanditInstance:
    """The suite's tiny instance: 3 prompts, 5 responses, 3 features, a linear reward in ``[0, 1]``."""
    return covpo.random_softmax_linear_instance(np.random.default_rng(0), 3, 5, 3)


def failures(algorithm: Algorithm, hyperparameters: Mapping[str, object], instance: BanditInstance) -> dict[str, str]:
    """The checks of :data:`CHECKS` that ``algorithm`` fails, each with its message (empty: it keeps the contract)."""
    found = {}
    for check in CHECKS:
        try:
            check(algorithm, hyperparameters, instance)
        except (AssertionError, ValueError, FloatingPointError) as error:
            found[check.__name__] = f"{type(error).__name__}: {error}"[:300]
    return found
