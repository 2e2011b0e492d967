"""The contract every registered algorithm keeps, checked over all of ``covpo.ALGORITHMS``.

Each algorithm is run through :func:`covpo.run` on one tiny realizable instance with small
hyperparameters. The checks: it returns a :class:`~covpo.trajectory.Trajectory`; its cost
columns start at zero, never decrease, and end where the registry's per-iteration costs say
(responses sampled, gradient steps, one reset per outer iteration for instances of APMD, one
generation round per fresh batch); the same seed gives the same run and another seed a
different one; bad input raises a ``ValueError`` that names the argument; and every function
takes its hyperparameters keyword-only, spelled as in the paper's symbols.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Mapping

import numpy as np
import pytest

import covpo
from covpo import ALGORITHMS, Trajectory
from covpo.algorithms.steps import UnstableStepWarning
from covpo.collapse_instance import collapse_instance
from covpo.instances import BanditInstance

#: Small hyperparameters per registered name: each run takes well under a second.
HYPERPARAMETERS: Mapping[str, dict[str, object]] = {
    "reinforce": {"eta": 0.5, "n_iterations": 6, "batch_size": 8},
    "reinforce_exact": {"eta": 0.5, "n_iterations": 6},
    "mirror_descent_exact": {"beta": 1.0, "n_iterations": 4},
    "apmd_exact": {"beta": 1.0, "n_iterations": 4},
    "apmd": {"beta": 1.0, "eta": 0.5, "n_iterations": 3, "inner_steps": 4},
    "ppo_noclip": {"beta": 1.0, "eta": 0.5, "n_iterations": 3, "batch_size": 8, "inner_steps": 3},
    "ppo_lite": {"beta": 1.0, "eta": 0.5, "n_iterations": 3, "batch_size": 8, "inner_steps": 3},
    "grpo_fixed": {"beta": 0.1, "eta": 0.5, "n_iterations": 3, "batch_size": 4, "group_size": 3, "inner_steps": 2},
    "grpo_reset": {"beta": 0.1, "eta": 0.5, "n_iterations": 3, "batch_size": 4, "group_size": 3, "inner_steps": 2},
    "kimipo": {"beta": 1.0, "eta": 0.5, "n_iterations": 3, "batch_size": 4, "inner_steps": 2, "extra_responses": 2},
    "kimipo_norm": {
        "beta": 1.0, "eta": 0.5, "n_iterations": 3, "batch_size": 4, "inner_steps": 2, "extra_responses": 2,
    },
    "rebel_onpolicy": {"beta": 1.0, "eta": 0.5, "n_iterations": 3, "batch_size": 4, "inner_steps": 2},
    "npg": {"beta": 1.0, "n_iterations": 3, "batch_size": 4, "group_size": 3},
    "npg_exact": {"beta": 1.0, "n_iterations": 3},
    "best_of_n": {"delta": 0.1},
    "filtered_sft": {"eta": 0.5, "n_iterations": 3, "batch_size": 4, "group_size": 3, "inner_steps": 2},
}

#: Runs checked: every registered name.
CASES: Mapping[str, tuple[str, dict[str, object]]] = {
    name: (name, hyperparameters) for name, hyperparameters in HYPERPARAMETERS.items()
}

COST_COLUMNS = ("gradient_steps", "responses_sampled", "reference_resets", "generation_rounds")

#: The one spelling of each hyperparameter (the paper's symbols).
VOCABULARY = frozenset(
    {
        "beta", "eta", "n_iterations", "batch_size", "inner_steps", "group_size", "extra_responses",
        "clip_epsilon", "clip_epsilon_high", "thresholds", "kl", "reference", "delta", "rng",
        "record_each_step", "record_every", "on_inner_step", "policy",
    }
)
#: Options beyond the paper's symbols that one algorithm has and no other spells differently:
#: REINFORCE's baseline choice and starting point, GRPO's optional standard-deviation scaling.
ALGORITHM_OPTIONS = frozenset({"baseline", "theta", "scale_by_std", "std_eps"})
#: Spellings the redesign retired.
RETIRED = frozenset({"n_steps", "n_rounds", "max_steps", "steps", "clip_eps"})


@pytest.fixture(scope="module")
def instance() -> BanditInstance:
    return covpo.random_softmax_linear_instance(np.random.default_rng(0), 3, 5, 3)


def run_case(case: str, instance: BanditInstance, seed: int = 1, **changes: object) -> Trajectory:
    name, hyperparameters = CASES[case]
    rng = np.random.default_rng(seed) if ALGORITHMS[name].samples else None
    return covpo.run(name, instance, rng=rng, **{**hyperparameters, **changes})


def parameters(name: str) -> Mapping[str, inspect.Parameter]:
    return inspect.signature(ALGORITHMS[name].function).parameters


def test_every_registered_algorithm_has_a_case():
    assert set(HYPERPARAMETERS) == set(ALGORITHMS)


@pytest.mark.parametrize("case", CASES)
def test_run_returns_a_trajectory_with_one_row_per_record(case, instance):
    trajectory = run_case(case, instance)
    assert isinstance(trajectory, Trajectory)
    assert trajectory.log_coverage.shape == (trajectory.n_records, instance.n_prompts)
    assert trajectory.kl_to_base.shape == trajectory.reward.shape == (trajectory.n_records,)
    assert np.all(np.isfinite(trajectory.reward)) and np.all(trajectory.log_coverage <= 1e-12)


@pytest.mark.parametrize("case", CASES)
def test_costs_start_at_zero_never_decrease_and_match_the_registry(case, instance):
    name, hyperparameters = CASES[case]
    algorithm = ALGORITHMS[name]
    trajectory = run_case(case, instance)
    for column in COST_COLUMNS:
        costs = getattr(trajectory, column)
        assert costs.shape == (trajectory.n_records,), column
        assert costs[0] == 0 and np.all(np.diff(costs) >= 0), column
    h = {**algorithm.fixed, **hyperparameters}
    if name == "best_of_n":
        # Test-time sampling: one round of N responses per prompt, no training.
        assert trajectory.total_gradient_steps == 0 and trajectory.reference_resets[-1] == 0
        assert trajectory.total_responses >= 1 and trajectory.total_generation_rounds == 1
        return
    n_iterations = int(h["n_iterations"])
    per_round = algorithm.responses_per_iteration(h)
    assert trajectory.total_responses == n_iterations * per_round
    assert trajectory.total_gradient_steps == n_iterations * algorithm.steps_per_iteration(h)
    assert trajectory.reference_resets[-1] == (n_iterations if algorithm.resets else 0)
    assert trajectory.total_generation_rounds == (n_iterations if per_round > 0 else 0)


@pytest.mark.parametrize("case", CASES)
def test_outer_iterates_and_inner_accuracy_have_one_entry_per_iteration(case, instance):
    name, hyperparameters = CASES[case]
    trajectory = run_case(case, instance)
    if trajectory.thetas is not None:
        assert trajectory.thetas.shape == (int(hyperparameters["n_iterations"]) + 1, instance.dim)
        np.testing.assert_array_equal(trajectory.thetas[0], instance.base_theta)
    if trajectory.inner_kl is not None:
        assert ALGORITHMS[name].resets
        assert trajectory.inner_kl.shape == (int(hyperparameters["n_iterations"]),)
        assert np.all(trajectory.inner_kl >= -1e-12)


@pytest.mark.parametrize("case", CASES)
def test_the_same_seed_gives_the_same_run_and_another_seed_a_different_one(case, instance):
    name, hyperparameters = CASES[case]
    first, again, other = (run_case(case, instance, seed) for seed in (1, 1, 2))
    for column in ("reward", "log_coverage", "kl_to_base", *COST_COLUMNS):
        assert np.array_equal(getattr(first, column), getattr(again, column)), column
    sampled = ALGORITHMS[name].responses_per_iteration({**ALGORITHMS[name].fixed, **hyperparameters}) > 0
    if sampled:
        assert not np.array_equal(first.reward, other.reward)


@pytest.mark.parametrize("case", [case for case, (name, _) in CASES.items() if name != "best_of_n"])
def test_recording_every_step_or_observing_inner_steps_leaves_the_run_unchanged(case, instance):
    name, hyperparameters = CASES[case]
    known = parameters(name)
    plain = run_case(case, instance)
    if "record_each_step" in known:
        detailed = run_case(case, instance, record_each_step=True)
        assert detailed.n_records >= plain.n_records
        for column in ("reward", "log_coverage", *COST_COLUMNS):
            assert np.array_equal(getattr(detailed, column)[-1], getattr(plain, column)[-1]), column
    if "on_inner_step" in known:
        seen: list[tuple[int, int]] = []
        observed = run_case(case, instance, on_inner_step=lambda step: seen.append((step.iteration, step.inner_step)))
        for column in ("reward", "log_coverage", *COST_COLUMNS):
            assert np.array_equal(getattr(observed, column), getattr(plain, column)), column
        n_iterations, inner_steps = int(hyperparameters["n_iterations"]), int(hyperparameters["inner_steps"])
        assert seen == [(t, k) for t in range(n_iterations) for k in range(inner_steps + 1)]


#: Bad values of the hyperparameters, each checked wherever the algorithm takes that hyperparameter.
BAD_INPUTS = (("beta", -1.0), ("eta", 0.0), ("eta", math.nan), ("n_iterations", 0), ("batch_size", 0))


@pytest.mark.parametrize("case", CASES)
def test_a_bad_hyperparameter_raises_a_value_error_naming_it(case, instance):
    known = parameters(CASES[case][0])
    checked = [(argument, value) for argument, value in BAD_INPUTS if argument in known]
    assert checked or case == "best_of_n"
    for argument, value in checked:
        with pytest.raises(ValueError, match=rf"\b{argument}\b"):
            run_case(case, instance, **{argument: value})


@pytest.mark.parametrize("case", CASES)
def test_a_stray_keyword_raises_a_type_error_naming_it(case, instance):
    # An unknown hyperparameter is a TypeError from Python's own argument binding.
    with pytest.raises(TypeError, match="n_stray"):
        run_case(case, instance, n_stray=3)


def test_an_unknown_name_raises_a_value_error_naming_the_argument(instance):
    with pytest.raises(ValueError, match=r"\bname\b"):
        covpo.run("no_such_algorithm", instance, beta=1.0)


@pytest.mark.parametrize("name", [name for name, algorithm in ALGORITHMS.items() if algorithm.samples])
def test_sampling_algorithms_require_a_generator(name, instance):
    with pytest.raises(ValueError, match=r"\brng\b"):
        covpo.run(name, instance, rng=None, **HYPERPARAMETERS[name])
    with pytest.raises(ValueError, match=r"\brng\b"):
        ALGORITHMS[name](instance, rng=None, **HYPERPARAMETERS[name])


@pytest.mark.parametrize("name", [name for name, algorithm in ALGORITHMS.items() if not algorithm.samples])
def test_algorithms_that_sample_nothing_refuse_a_generator(name, instance):
    with pytest.raises(ValueError, match=r"\brng\b"):
        covpo.run(name, instance, rng=np.random.default_rng(0), **HYPERPARAMETERS[name])


@pytest.mark.parametrize("name", ALGORITHMS)
def test_hyperparameters_are_keyword_only_after_the_instance(name):
    first, *rest = parameters(name).values()
    assert first.name == "instance" and first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert rest, f"{name} takes no hyperparameters"
    assert [p.name for p in rest if p.kind is not inspect.Parameter.KEYWORD_ONLY] == []


@pytest.mark.parametrize("name", ALGORITHMS)
def test_hyperparameters_use_the_one_spelling(name):
    spelled = set(parameters(name)) - {"instance"}
    assert not spelled & RETIRED
    assert spelled <= VOCABULARY | ALGORITHM_OPTIONS, sorted(spelled - VOCABULARY - ALGORITHM_OPTIONS)
    assert set(ALGORITHMS[name].fixed) <= spelled
    assert set(HYPERPARAMETERS[name]) <= spelled


#: Values that are not an instance at all, or an instance of the wrong kind.
BAD_INSTANCES = (None, "instance", 3)


def test_a_collapse_instance_where_a_bandit_is_expected_is_named(instance):
    collapse = collapse_instance(0.1)
    for case in CASES:
        with pytest.raises(ValueError, match=r"\binstance\b.*BanditInstance"):
            run_case(case, collapse)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bad", BAD_INSTANCES, ids=repr)
def test_a_bad_instance_raises_a_value_error_naming_it(case, bad):
    name, hyperparameters = CASES[case]
    with pytest.raises(ValueError, match=r"\binstance\b"):
        run_case(case, bad)
    # the algorithm's own function checks it too, under the same name
    rng = {"rng": np.random.default_rng(0)} if ALGORITHMS[name].samples else {}
    with pytest.raises(ValueError, match=r"\binstance\b"):
        ALGORITHMS[name](bad, **rng, **hyperparameters)


@pytest.mark.parametrize("name", [name for name, algorithm in ALGORITHMS.items() if algorithm.samples])
@pytest.mark.parametrize("bad", [0, "rng", np.random.RandomState(0)], ids=["zero", "string", "RandomState"])
def test_a_bad_generator_is_named(name, bad, instance):
    with pytest.raises(ValueError, match=r"\brng\b"):
        covpo.run(name, instance, rng=bad, **HYPERPARAMETERS[name])
    with pytest.raises(ValueError, match=r"\brng\b"):
        ALGORITHMS[name](instance, rng=bad, **HYPERPARAMETERS[name])


#: Bad counts and strengths, checked before they are converted (no OverflowError, no hang at 1e308).
BAD_NUMBERS = (
    *(("n_iterations", value) for value in (math.nan, math.inf, "3", None, True, 1e308, 2.5, -1)),
    *(("beta", value) for value in (math.nan, math.inf, -math.inf, "1", None)),
    *(("eta", value) for value in (math.inf, -1.0, "0.5", None)),
    *(("inner_steps", value) for value in (math.nan, 1e308, "2")),
    *(("batch_size", value) for value in (math.inf, None, False)),
)


@pytest.mark.parametrize("case", CASES)
def test_bad_counts_and_strengths_raise_value_errors_naming_them(case, instance):
    known = parameters(CASES[case][0])
    for argument, value in BAD_NUMBERS:
        if argument in known and not (CASES[case][0] == "npg" and argument == "batch_size" and value is None):
            with pytest.raises(ValueError, match=rf"\b{argument}\b"):
                run_case(case, instance, **{argument: value})


@pytest.mark.parametrize("case", [case for case in CASES if "eta" in parameters(CASES[case][0])])
def test_a_huge_learning_rate_diverges_cleanly_or_stays_finite(case, instance):
    # eta = 1e308 is a valid number: a clear FloatingPointError (a diverging run), or a finite result
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnstableStepWarning)
        try:
            trajectory = run_case(case, instance, eta=1e308)
        except FloatingPointError as error:
            assert "eta" in str(error)
            return
    assert np.all(np.isfinite(trajectory.reward)) and np.all(np.isfinite(trajectory.kl_to_base))


#: Every run with a KL step: the registry name and the hyperparameters that turn the step on.
KL_STEPS = {
    "reinforce": {"beta": 1e8}, "reinforce_exact": {"beta": 1e8}, "apmd": {"beta": 1e8},
    "ppo_noclip": {"beta": 1e8}, "ppo_lite": {"beta": 1e8}, "grpo_fixed": {"beta": 1e8}, "grpo_reset": {"beta": 1e8},
    "kimipo": {"beta": 1e8}, "kimipo_norm": {"beta": 1e8}, "rebel_onpolicy": {"beta": 1e8},
}


def test_every_algorithm_with_a_learning_rate_and_a_kl_term_is_checked_for_stability():
    with_kl_step = {name for name in ALGORITHMS if {"eta", "beta"} <= set(parameters(name))}
    assert with_kl_step == set(KL_STEPS)


@pytest.mark.parametrize("case", KL_STEPS)
def test_a_step_far_beyond_the_stable_range_warns_with_the_range(case, instance):
    with pytest.warns(UnstableStepWarning, match=r"stable for eta \*.*< 2, here eta < "):
        try:
            run_case(case, instance, eta=1.0, **KL_STEPS[case])
        except FloatingPointError:
            pass  # a diverging run may also stop; the warning came first


@pytest.mark.parametrize("case", CASES)
def test_the_contract_settings_do_not_warn(case, instance):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnstableStepWarning)
        run_case(case, instance)
        if "beta" in parameters(CASES[case][0]) and not ALGORITHMS[CASES[case][0]].resets:
            run_case(case, instance, beta=0.05)
