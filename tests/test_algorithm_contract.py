"""The contract every registered algorithm keeps, checked over all of ``covpo.ALGORITHMS``.

Each algorithm runs through its registry record on one tiny realizable instance at every one of
its settings in ``tests/contract_settings.py``: two or more per entry, each telling its
hyperparameters apart (none near 1, none equal, reciprocal or square to another), and together
running every option branch the entry accepts. The whole suite of ``tests/contract_checks.py``
(in the manner of scikit-learn's ``check_estimator``) runs at each: the behavioural checks of
``tests/registry_contract.py`` (the run carries the record's label and costs, follows its own
public gradient bit for bit, its gradient is its objective's, it improves the objective it
claims, a reset's reference is the previous iterate, and shift invariance, citation, validator
and ``policy=`` are as the record declares), its first outer iterations against an independent
computation from the paper's formulas, and the law of its draws seen at the sampler. The checks
below add the interface: bad input raises a ``ValueError`` that names the argument, and every
function takes its hyperparameters keyword-only, spelled as in the paper's symbols.
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
from tests.contract_checks import CHECKS
from tests.contract_settings import SETTINGS, case_id, cases, setting
from tests.registry_contract import contract_instance

#: Each registered name's interface setting: the first of its settings in ``tests/contract_settings.py``.
HYPERPARAMETERS: Mapping[str, dict[str, object]] = {name: dict(settings[0]) for name, settings in SETTINGS.items()}

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
    return contract_instance()


def run_case(case: str, instance: BanditInstance, seed: int = 1, **changes: object) -> Trajectory:
    name, hyperparameters = CASES[case]
    rng = np.random.default_rng(seed) if ALGORITHMS[name].samples else None
    return covpo.run(name, instance, rng=rng, **{**hyperparameters, **changes})


def parameters(name: str) -> Mapping[str, inspect.Parameter]:
    return inspect.signature(ALGORITHMS[name].function).parameters


def test_every_registered_algorithm_has_a_case():
    assert set(HYPERPARAMETERS) == set(ALGORITHMS)


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
@pytest.mark.parametrize("case", cases(), ids=case_id)
def test_every_registered_algorithm_keeps_the_contract_at_every_setting(case, check, instance):
    check(ALGORITHMS[case[0]], setting(case), instance)


@pytest.mark.parametrize("case", [case for case in CASES if "record_each_step" in parameters(CASES[case][0])])
def test_recording_every_step_leaves_the_run_unchanged(case, instance):
    plain = run_case(case, instance)
    detailed = run_case(case, instance, record_each_step=True)
    assert detailed.n_records >= plain.n_records
    for column in ("reward", "log_coverage", *COST_COLUMNS):
        assert np.array_equal(getattr(detailed, column)[-1], getattr(plain, column)[-1]), column


def test_every_algorithm_shows_its_inner_steps_to_a_callback():
    assert [name for name in ALGORITHMS if "on_inner_step" not in parameters(name)] == []


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


@pytest.mark.parametrize("case", cases(), ids=case_id)
def test_the_contract_settings_do_not_warn(case, instance):
    name = case[0]
    rng = (lambda: {"rng": np.random.default_rng(1)}) if ALGORITHMS[name].samples else dict
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnstableStepWarning)
        covpo.run(name, instance, **rng(), **setting(case))
        if "beta" in parameters(name) and not ALGORITHMS[name].resets:
            covpo.run(name, instance, **rng(), **{**setting(case), "beta": 0.05})
