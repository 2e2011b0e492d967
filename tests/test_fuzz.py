"""Bad input to any public entry point gets a clear error, never NaN, inf or a stray exception.

Each public entry point of ``tests/fuzz_entry_points.py`` is called with one argument replaced
by a bad value drawn for the argument's kind (0, negatives, NaN, infinity, 1e308, strings,
``None``, bools, fractions and complex numbers for counts and seeds, wrong shapes, empty and
complex arrays, distributions that do not sum to one, probabilities where log-probabilities are
expected, indices out of range, masks that are not boolean, strings and numbers for flags, empty
or duplicate lists of methods, seeds and instances). Hypothesis then draws more of each family
of bad value: complex numbers and arrays with any imaginary part, any string or number for a
flag, any negative, fractional, huge, complex or textual seed (alone, in a list of seeds, or
where a generator belongs), other negative, fractional and huge numbers. A clearly bad value
must raise a ``ValueError`` whose message names that argument; an extreme but valid one
(``1e308`` as a learning rate) may instead run to a finite result or stop with the documented
``FloatingPointError``. Every public function and class of :mod:`covpo.experiments` and
:mod:`covpo.labs` has an entry point (or a stated reason not to), and a test keeps it so. The
findings of issue 18 (items 1 to 10) and of issue 33 are regression tests of their own, and so
are the extreme-but-valid inputs that must keep working: log-space coverage at ``1e-320`` and
``1e-400`` (Huang et al., 2026, section 1.3) and learning rates from ``1e-12`` to ``1e6``.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import resource
import signal
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import covpo  # noqa: E402
from covpo import policies  # noqa: E402
from covpo.algorithms import best_of_n, grpo, mirror_descent, steps  # noqa: E402
from covpo.collapse_instance import class_log_probs, collapse_instance, logits_from_plane  # noqa: E402
from covpo.experiments import population, sweeps  # noqa: E402
from covpo.experiments.collapse import exact_collapse_run, mirror_descent_resets_to_eps  # noqa: E402
from covpo.experiments.implications.head_to_head import head_to_head  # noqa: E402
from covpo.experiments.mirror_descent import comparator_guarantee  # noqa: E402
from covpo.experiments.sweeps import Method, budget_run, compare_at_budget, compare_recipes, cost_sweep  # noqa: E402
from covpo.objectives import regularized_gap  # noqa: E402
from covpo.plots.collapse import collapse_explorer_figure  # noqa: E402
from covpo.plots.mirror_descent import apmd_explorer_figure  # noqa: E402
from tests.fuzz_entry_points import (  # noqa: E402
    ENTRY_POINTS, NOT_FUZZED, RESULT_RECORDS, RUNS, BadValue, EntryPoint, argument_bad_values, base_table, instance,
    is_finite_result, log_table, method, names_argument, public_callables, rng, theta, tiny_collapse, transformer,
    transformer_task, uncovered_callables,
)
from tests.strategies import bad_seeds, complex_arrays, complex_scalars, non_bool_flags  # noqa: E402

#: Seconds one fuzzed call may take before it counts as a hang: a guard, never a verdict on speed.
#: It catches a bad argument accepted into a whole study (which then runs for minutes) or a loop
#: that never ends. The longest timed call of this file took 0.06 s (14,137 calls, one process on
#: a shared 2-core machine; a point's first, compiling call is untimed), so a machine a thousand
#: times slower still passes.
CALL_SECONDS = 60.0

FUZZ_SETTINGS = settings(
    max_examples=6, deadline=None, derandomize=True, database=None, phases=(Phase.explicit, Phase.generate)
)

#: The bad values that stand for a family of them (any negative count, any fraction, any huge number), drawn afresh.
VARIED_LABELS = ("negative", "fractional", "huge")

#: Kinds of argument whose every bad value stands for a family: flags, and seeds where a seed or a generator belongs.
VARIED_KINDS = ("flag", "seed", "rng_or_seed")

#: Every fuzzed (entry point, argument) pair.
ARGUMENTS = [(point, argument) for point in ENTRY_POINTS for argument in point.kinds]


#: Memory the million-response tabular instance may take beyond what the process holds already.
LARGE_INSTANCE_BYTES = 2 * 1024**3


class CallTimeout(Exception):
    """A fuzzed call ran past :data:`CALL_SECONDS`."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`CallTimeout` in the body after ``seconds`` of wall time."""

    def expire(signum: int, frame: object) -> None:
        raise CallTimeout(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def memory_limit(extra_bytes: int) -> Iterator[None]:
    """Let the process map at most ``extra_bytes`` more address space in the body (an allocation beyond fails)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    limit = mapped + extra_bytes if hard == resource.RLIM_INFINITY else min(hard, mapped + extra_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def varied(kind: str, good: object, bad: BadValue) -> st.SearchStrategy[BadValue]:
    """Drawn values of the kind of badness of ``bad``, for an argument of ``kind`` whose good value is ``good``.

    Complex numbers and arrays get a drawn imaginary part, flags any string or number, seeds
    any negative, fractional, huge, complex or textual value (as the bad entry of a list of seeds
    too), a generator any integer seed in its place; otherwise another negative, another
    fraction, another huge number.
    """
    def labelled(values: st.SearchStrategy[object]) -> st.SearchStrategy[BadValue]:
        return values.map(lambda value: dataclasses.replace(bad, value=value))

    if bad.label == "complex":
        return labelled(complex_arrays(good) if isinstance(bad.value, np.ndarray) else complex_scalars())
    if kind == "flag":
        return labelled(non_bool_flags())
    if kind == "seeds" and bad.label.endswith("_entry"):
        return labelled(bad_seeds().map(lambda seed: (0, seed)))
    if kind in ("seed", "rng_or_seed"):
        return labelled(bad_seeds())
    if kind == "rng":
        return labelled(st.integers())
    if bad.label == "negative" and isinstance(bad.value, int):
        return st.integers(-10**6, -1).map(lambda value: BadValue("negative", value))
    if bad.label == "negative":
        return st.floats(-1e6, -1e-9).map(lambda value: BadValue("negative", value))
    if bad.label == "fractional":
        fractions = st.floats(0.01, 99.99).filter(lambda value: value != int(value))
        return fractions.map(lambda value: BadValue("fractional", value))
    return labelled(st.sampled_from([1e308, 1e300]))


def is_varied(kind: str, bad: BadValue) -> bool:
    """Whether ``bad`` stands for a family of values :func:`varied` draws (a ``None`` or an empty list does not)."""
    if bad.label in ("none", "empty"):
        return False
    if kind == "seeds":
        return bad.label.endswith("_entry")
    if kind == "rng":
        return bad.label == "int"
    return bad.label in VARIED_LABELS + ("complex",) or kind in VARIED_KINDS


def drawn_bad_values(point: EntryPoint, argument: str) -> st.SearchStrategy[BadValue] | None:
    """Draws of the bad values of ``argument`` that stand for a family (:func:`is_varied`); ``None`` if none do."""
    kind, good = point.kinds[argument], point.arguments()[argument]
    families = [bad for bad in argument_bad_values(point, argument) if is_varied(kind, bad)]
    return st.sampled_from(families).flatmap(lambda bad: varied(kind, good, bad)) if families else None


#: Entry points called once already in this process: their compiled engines (numba) are built.
COMPILED: set[str] = set()


def call(point: EntryPoint, **changes: object) -> object:
    """Call ``point`` with its good arguments and ``changes``, under the time limit, closing any figures.

    A point's first call in the process may compile its engine (numba, seconds on a cold cache);
    that is a one-off cost, not a hang, so the first call is made untimed with good arguments.
    """
    if point.name not in COMPILED and not point.heavy:
        COMPILED.add(point.name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            point.function(**point.arguments())
        plt.close("all")
    arguments = {**point.arguments(), **changes}
    try:
        with warnings.catch_warnings(), time_limit(CALL_SECONDS):
            warnings.simplefilter("ignore")
            return point.function(**arguments)
    finally:
        plt.close("all")


def assert_clear_error_or_finite(point: EntryPoint, argument: str, bad: BadValue) -> None:
    """The promise: a ``ValueError`` naming ``argument``; for an extreme but valid value, a finite result or
    the documented ``FloatingPointError``."""
    try:
        result = call(point, **{argument: bad.value})
    except ValueError as error:
        assert names_argument(str(error), argument), (
            f"{point.name}({argument}={bad.label}) raised ValueError without naming {argument!r}: {error}"
        )
        return
    except FloatingPointError:
        if bad.clearly_bad:
            raise
        return
    assert not bad.clearly_bad, f"{point.name}({argument}={bad.label}) accepted clearly bad input: {result!r:.200}"
    assert is_finite_result(result, point.infinite_ok, point.nan_ok), (
        f"{point.name}({argument}={bad.label}) returned NaN or inf: {result!r:.200}"
    )


#: The entry points whose good call is quick enough to make (every one but the whole studies).
QUICK_POINTS = [point for point in ENTRY_POINTS if not point.heavy]


@pytest.mark.parametrize("point", QUICK_POINTS, ids=[point.name for point in QUICK_POINTS])
def test_good_call_is_finite(point: EntryPoint) -> None:
    assert is_finite_result(call(point), point.infinite_ok, point.nan_ok)


@pytest.mark.parametrize(
    ("point", "argument"), ARGUMENTS, ids=[f"{point.name}-{argument}" for point, argument in ARGUMENTS]
)
def test_bad_argument_gets_clear_error_or_finite_result(point: EntryPoint, argument: str) -> None:
    for bad in argument_bad_values(point, argument):
        assert_clear_error_or_finite(point, argument, bad)
    drawn = drawn_bad_values(point, argument)
    if drawn is None:
        return

    @FUZZ_SETTINGS
    @given(bad=drawn)
    def check(bad: BadValue) -> None:
        assert_clear_error_or_finite(point, argument, bad)

    check()


def test_every_public_callable_of_the_experiments_and_labs_has_fuzz_cases() -> None:
    missing = uncovered_callables()
    assert not missing, f"public callables without an entry point in tests/fuzz_entry_points.py: {missing}"


def test_a_new_public_function_without_fuzz_cases_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    def new_study(instance: covpo.BanditInstance) -> float:
        return 0.0

    new_study.__module__ = sweeps.__name__
    monkeypatch.setattr(sweeps, "new_study", new_study, raising=False)
    assert uncovered_callables() == ["covpo.experiments.sweeps.new_study"]


def test_what_is_not_fuzzed_is_public_uncovered_and_a_record_or_jax_code() -> None:
    public = list(public_callables().values())
    covered = {point.function for point in ENTRY_POINTS}
    for value, reason in NOT_FUZZED.items():
        assert value in public and value not in covered, value
        if value in RESULT_RECORDS:
            assert dataclasses.is_dataclass(value) or issubclass(value, tuple), f"{value} is no record"
        else:
            assert "JAX" in reason and value.__module__.startswith("covpo.labs.transformer"), value


def test_every_entry_point_has_a_unique_name_and_a_good_call_of_its_own_arguments() -> None:
    names = [point.name for point in ENTRY_POINTS]
    assert len(set(names)) == len(names)
    for point in ENTRY_POINTS:
        # the names an entry declares, to be built without running the runs of its good call, are that call's
        assert tuple(point.arguments()) == point.argument_names, point.name
        assert set(point.kinds) <= set(point.arguments()), point.name


def entry_point(name: str) -> EntryPoint:
    return next(point for point in ENTRY_POINTS if point.name == name)


def raises_naming(argument: str, function: object, *args: object, **kwargs: object) -> None:
    """Assert that the call raises ``ValueError`` naming ``argument``."""
    with pytest.raises(ValueError) as raised, warnings.catch_warnings(), time_limit(CALL_SECONDS):
        warnings.simplefilter("ignore")
        function(*args, **kwargs)
    assert names_argument(str(raised.value), argument), str(raised.value)


# Issue 18, item 1: a configuration error is an error, never a "diverged" row.


@pytest.mark.parametrize(
    ("algorithm", "hyperparameters", "etas", "argument"),
    [
        ("ppo_lite", {**RUNS["ppo_lite"], "kl": "no-such-estimator"}, (0.5,), "kl"),
        ("grpo_fixed", {**RUNS["grpo_fixed"], "clip_epsilon": 1.5}, (0.5,), "clip_epsilon"),
        ("grpo_fixed", {**RUNS["grpo_fixed"], "group_size": 1}, (0.5,), "group_size"),
        ("best_of_n", {"delta": 1.5}, (), "delta"),
    ],
    ids=["unknown-kl", "clip-width-1.5", "group-of-one", "best-of-n-delta-above-one"],
)
def test_head_to_head_configuration_error_propagates(
    algorithm: str, hyperparameters: dict, etas: tuple, argument: str
) -> None:
    settings_ = {name: value for name, value in hyperparameters.items() if name != "eta"}
    with pytest.raises(ValueError) as raised:
        method = Method("entry", algorithm, settings_, etas=etas)
        head_to_head([instance()], [5.0], [method], eps=0.1, seeds=(0,), progress=False)
    assert names_argument(str(raised.value), argument), str(raised.value)


# Item 2: NaN log-probabilities, or probabilities where log-probabilities belong, are rejected.


@pytest.mark.parametrize("table", ["nan", "probabilities"])
def test_kl_per_prompt_rejects_bad_log_probabilities(table: str) -> None:
    bad = log_table().copy()
    if table == "probabilities":
        bad = np.exp(bad)
    else:
        bad[0, 0] = np.nan
    raises_naming("log_p", policies.kl_per_prompt, log_p=bad, log_q=base_table())


@pytest.mark.parametrize("table", ["nan", "probabilities"])
def test_regularized_gap_rejects_bad_log_probabilities(table: str) -> None:
    bad = np.exp(log_table()) if table == "probabilities" else np.full_like(log_table(), np.nan)
    raises_naming("log_probs", regularized_gap, instance=instance(), log_probs=bad, log_ref=base_table(), beta=1.0)


@pytest.mark.parametrize("table", ["nan", "probabilities"])
def test_sampled_best_of_n_rejects_bad_log_probabilities(table: str) -> None:
    bad = np.exp(base_table()) if table == "probabilities" else np.full_like(base_table(), np.nan)
    raises_naming(
        "log_probs", best_of_n.sampled_best_of_n, instance=instance(), log_probs=bad, n=3, trials=10,
        rng=np.random.default_rng(0),
    )


# Item 3: prompts that do not exist.


def test_sample_responses_rejects_prompts_out_of_range() -> None:
    two_prompts = covpo.random_softmax_linear_instance(np.random.default_rng(0), 2, 3, 2)
    log_probs = policies.base_log_policy(two_prompts)
    raises_naming(
        "prompts", policies.sample_responses, log_probs=log_probs, prompts=[0, 5, -1], rng=np.random.default_rng(0)
    )


# Item 4: every count, given NaN, inf, a string, None or 1e308.


@pytest.mark.parametrize("value", [math.nan, math.inf, "3", None, 1e308, True, 2.5], ids=repr)
@pytest.mark.parametrize(("algorithm", "argument"), [("reinforce", "n_iterations"), ("reinforce", "batch_size"),
                                                     ("ppo_noclip", "inner_steps"), ("grpo_fixed", "group_size"),
                                                     ("kimipo", "extra_responses")])
def test_count_arguments_reject_non_counts(algorithm: str, argument: str, value: object) -> None:
    hyperparameters = {**RUNS[algorithm], argument: value}
    raises_naming(argument, covpo.run, algorithm, instance(), rng=np.random.default_rng(0), **hyperparameters)


@pytest.mark.parametrize("value", [math.nan, math.inf, "10", None, 1e308])
def test_experiment_max_steps_rejects_non_counts(value: object) -> None:
    point = entry_point("experiments.collapse.exact_collapse_run")
    raises_naming("n_iterations", point.function, **{**point.arguments(), "n_iterations": value})


# Item 5: a wrong instance or generator is named, never an AttributeError.


@pytest.mark.parametrize("value", [None, "instance", "collapse"])
@pytest.mark.parametrize("name", ["policies.log_policy", "objectives.regularized_gradient", "best_of_n.best_of_n_size",
                                  "coverage_instances.dial_coverage", "run:reinforce_exact"])
def test_wrong_instance_is_named(name: str, value: object) -> None:
    point = entry_point(name)
    bad = collapse_instance(gap=0.1, n_zero=10) if value == "collapse" else value
    raises_naming("instance", point.function, **{**point.arguments(), "instance": bad})


@pytest.mark.parametrize("name", ["reinforce.reinforce", "policies.sample_prompts", "best_of_n.sampled_best_of_n",
                                  "batches.draw_batch", "npg.sampled_npg_direction"])
def test_integer_rng_is_named(name: str) -> None:
    point = entry_point(name)
    raises_naming("rng", point.function, **{**point.arguments(), "rng": 0})


# Item 6: NaN never comes back from bad numbers.


def test_mirror_descent_policy_at_huge_t_is_finite_or_named() -> None:
    try:
        with time_limit(CALL_SECONDS):
            result = mirror_descent.mirror_descent_policy(instance(), beta=1.0, t=1e308)
    except ValueError as error:
        assert names_argument(str(error), "t"), str(error)
    else:
        assert np.all(np.isfinite(result))


def test_logits_from_plane_rejects_nan() -> None:
    raises_naming("u", logits_from_plane, instance=collapse_instance(gap=0.1, n_zero=10), u=np.array([np.nan, 0.1]),
                  v=np.array([0.0, 0.0]))


def test_class_log_probs_rejects_nan_logits() -> None:
    raises_naming(
        "logits", class_log_probs, instance=collapse_instance(gap=0.1, n_zero=10), logits=np.array([np.nan, 0.0, 0.0])
    )


def test_policy_probs_rejects_nan_log_probabilities() -> None:
    raises_naming("log_probs", policies.policy_probs, log_probs=np.full((2, 3), np.nan))


# Item 7: a mask of floats is not a boolean mask.


@pytest.mark.parametrize("fill", [0.5, math.nan])
def test_optimal_mask_of_floats_is_rejected(fill: float) -> None:
    point = entry_point("instances.BanditInstance")
    raises_naming("optimal_mask", point.function, **{**point.arguments(), "optimal_mask": np.full((2, 4), fill)})


# Item 8: errors name only arguments the caller passed.


def test_ppo_lite_tiny_beta_does_not_blame_thresholds() -> None:
    try:
        with warnings.catch_warnings(), time_limit(CALL_SECONDS):
            warnings.simplefilter("ignore")
            hyperparameters = {**RUNS["ppo_lite"], "beta": 1e-8}
            trajectory = covpo.run("ppo_lite", instance(), rng=np.random.default_rng(0), **hyperparameters)
    except ValueError as error:
        assert "thresholds" not in str(error) and names_argument(str(error), "beta"), str(error)
    else:
        assert is_finite_result(trajectory)


@pytest.mark.parametrize("figure", [collapse_explorer_figure, apmd_explorer_figure])
def test_widget_budget_zero_names_budget(figure: object) -> None:
    point = next(point for point in ENTRY_POINTS if point.function is figure)
    try:
        raises_naming("budget", point.function, **{**point.arguments(), "budget": 0})
    finally:
        plt.close("all")


@pytest.mark.parametrize(("function", "argument", "arguments"), [
    (policies.coverage_coefficient, "log_probs", lambda: {"instance": instance(),
                                                         "log_probs": np.full((3, 5), np.nan)}),
    (policies.expected_kl, "log_p", lambda: {"instance": instance(), "log_p": np.full((3, 5), np.nan),
                                              "log_q": base_table()}),
    (policies.expected_kl, "log_q", lambda: {"instance": instance(), "log_p": log_table(),
                                              "log_q": np.full((3, 5), np.nan)}),
], ids=["coverage_coefficient", "expected_kl-log_p", "expected_kl-log_q"])
def test_errors_name_the_callers_argument(function: object, argument: str, arguments: object) -> None:
    raises_naming(argument, function, **arguments())


# Item 9: a step size times beta far beyond the stable range raises or warns, for every sampled method.


@pytest.mark.parametrize(
    "algorithm", ["ppo_noclip", "ppo_lite", "grpo_fixed", "kimipo", "kimipo_norm", "rebel_onpolicy"]
)
def test_unstable_beta_times_eta_raises_or_warns(algorithm: str) -> None:
    hyperparameters = {**RUNS[algorithm], "beta": 1e8, "eta": 0.9}
    with warnings.catch_warnings(record=True) as caught, time_limit(CALL_SECONDS):
        warnings.simplefilter("always")
        try:
            covpo.run(algorithm, instance(), rng=np.random.default_rng(0), **hyperparameters)
        except (ValueError, FloatingPointError):
            return
    assert caught, f"{algorithm} at beta=1e8, eta=0.9 ran without an error or a warning"


# Item 10: a one-hot tabular instance with a million responses.


def test_large_tabular_instance_runs_or_says_how_much_memory() -> None:
    n_responses = 10**6
    rewards = np.zeros((1, n_responses))
    rewards[0, 0] = 1.0
    base_probs = np.full((1, n_responses), 1.0 / n_responses)
    with memory_limit(LARGE_INSTANCE_BYTES), time_limit(10 * CALL_SECONDS):
        try:
            large = covpo.tabular_instance(rewards, base_probs)
        except ValueError as error:
            assert "memory" in str(error) or "GiB" in str(error) or "TiB" in str(error), str(error)
            return
        log_probs = policies.base_log_policy(large)
        log_coverage = policies.log_coverage(large, log_probs)
    assert log_coverage[0] == pytest.approx(-np.log(n_responses), rel=1e-9)


# Extreme but valid: coverage far below the smallest float, and learning rates over eighteen decades.


@pytest.mark.parametrize("coverage_exponent", [-320, -400])
def test_log_space_coverage_stays_finite_and_exact(coverage_exponent: int) -> None:
    log_c = coverage_exponent * np.log(10.0)
    success = best_of_n.log_best_of_n_success(log_c, 10)
    assert np.isfinite(success) and success == pytest.approx(np.log(10.0) + log_c, rel=1e-12)
    tiny = covpo.tabular_instance(np.array([[1.0, 0.0]]), np.array([[0.5, 0.5]]))
    log_probs = np.array([[log_c, np.log1p(-np.exp(log_c))]])
    log_coverage = policies.log_coverage(tiny, log_probs)
    assert np.all(np.isfinite(log_coverage)) and log_coverage[0] == pytest.approx(log_c, rel=1e-12)


@pytest.mark.parametrize("eta", [1e-12, 1e6])
@pytest.mark.parametrize("algorithm", [name for name in covpo.ALGORITHMS if "eta" in RUNS[name]])
def test_extreme_learning_rates_give_finite_results_or_floating_point_error(algorithm: str, eta: float) -> None:
    rng = np.random.default_rng(0) if covpo.ALGORITHMS[algorithm].samples else None
    try:
        with warnings.catch_warnings(), time_limit(CALL_SECONDS):
            warnings.simplefilter("ignore")
            trajectory = covpo.run(algorithm, instance(), rng=rng, **{**RUNS[algorithm], "eta": eta})
    except FloatingPointError:
        return
    assert is_finite_result(trajectory)


# Issue 33: complex arrays are refused, not cut to their real part.


@pytest.mark.parametrize(("function", "argument", "arguments"), [
    (covpo.tabular_instance, "rewards", lambda: {"rewards": np.array([[1.0, 0.0]]) + 1j,
                                                 "base_probs": np.array([[0.5, 0.5]])}),
    (policies.log_policy, "theta", lambda: {"instance": instance(), "theta": theta() + 1j}),
    (best_of_n.best_of_n_success, "log_coverage", lambda: {"log_coverage": np.array([-1.0 + 1j]), "n": 3}),
    (covpo.run, "eta", lambda: {"name": "reinforce_exact", "instance": instance(), "eta": 0.5 + 1j,
                                "n_iterations": 2}),
], ids=["tabular_instance", "log_policy", "best_of_n_success", "run-eta"])
def test_complex_input_is_refused(function: object, argument: str, arguments: object) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)  # the value never reaches a cast to float
        with pytest.raises(ValueError) as raised:
            function(**arguments())
    assert names_argument(str(raised.value), argument), str(raised.value)


# Issue 33: flags are bools (numpy bools included), never strings or numbers read as truth values.


FLAG_RUNS = [name for name in covpo.ALGORITHMS if "record_each_step" in inspect.signature(
    covpo.ALGORITHMS[name].function).parameters and name in RUNS]


@pytest.mark.parametrize("value", ["no", 1, None, 0.0])
@pytest.mark.parametrize("algorithm", FLAG_RUNS)
def test_record_each_step_must_be_a_bool(algorithm: str, value: object) -> None:
    run_rng = rng() if covpo.ALGORITHMS[algorithm].samples else None
    raises_naming("record_each_step", covpo.run, algorithm, instance(), rng=run_rng, record_each_step=value,
                  **RUNS[algorithm])


def test_a_numpy_bool_flag_runs_as_the_bool() -> None:
    as_numpy = covpo.run("ppo_noclip", instance(), rng=rng(), record_each_step=np.True_, **RUNS["ppo_noclip"])
    as_bool = covpo.run("ppo_noclip", instance(), rng=rng(), record_each_step=True, **RUNS["ppo_noclip"])
    assert np.array_equal(as_numpy.reward, as_bool.reward) and as_numpy.n_records == as_bool.n_records


def test_grpo_scale_by_std_no_is_refused_not_read_as_true() -> None:
    raises_naming("scale_by_std", covpo.run, "grpo_fixed", instance(), rng=rng(), scale_by_std="no",
                  **RUNS["grpo_fixed"])
    raises_naming("scale_by_std", grpo.group_advantages, np.array([[0.0, 1.0]]), scale_by_std="no")


@pytest.mark.parametrize(("function", "arguments"), [
    (population.regression_mse, lambda: {"instance": instance(), "log_reference": base_table(), "log_probs": log_table(),
                                       "beta": 1.0, "centered": 1}),
    (head_to_head, lambda: {"instances": [instance()], "coverages": [5.0], "methods": [method()], "eps": 0.1,
                            "seeds": (0,), "progress": "no"}),
    (exact_collapse_run, lambda: {"instance": tiny_collapse(), "n_iterations": 10, "progress": "yes"}),
], ids=["centered", "head_to_head-progress", "exact_collapse_run-progress"])
def test_other_flags_must_be_bools(function: object, arguments: object) -> None:
    bad = next(name for name in ("centered", "progress") if name in arguments())
    raises_naming(bad, function, **arguments())


# Issue 33: seeds are integers where a run promises to be reproducible.


def test_budget_run_is_reproducible_and_refuses_a_missing_seed() -> None:
    first, second = (budget_run(method(), instance(), 40, 7) for _ in range(2))
    assert np.array_equal(first.reward, second.reward) and np.array_equal(first.log_coverage, second.log_coverage)
    for seed in (None, 2.5, -1, "0"):
        raises_naming("seed", budget_run, method(), instance(), 40, seed)
    raises_naming("method", budget_run, None, instance(), 40, 0)


@pytest.mark.skipif(transformer is None, reason="the transformer laboratory needs JAX")
def test_split_prompts_wants_a_generator_not_a_seed() -> None:
    raises_naming("rng", transformer_task.split_prompts, transformer.ReversalTask(), 4, 0)


# Issue 33: a named ValueError where an internal error used to escape.


def test_a_scalar_distribution_is_named() -> None:
    rewards = np.array([[1.0, 0.0]])
    raises_naming("base_probs", covpo.tabular_instance, rewards, 0.5)
    raises_naming("prompt_probs", covpo.BanditInstance, 0.5, np.ones((1, 2, 1)), rewards, np.ones(1))


def test_step_helpers_name_their_arguments() -> None:
    raises_naming("loss", steps.check_step_stability, "PPO", 1.0, 1.0, 1.0, loss="bogus")
    raises_naming("theta", steps.ascent_step, "abc", 0.1, np.ones(3), 0, 1)
    raises_naming("direction", steps.ascent_step, np.zeros(3), 0.1, np.ones(2), 0, 1)
    raises_naming("instance", steps.feature_scale, None)
    raises_naming("hyperparameters", covpo.ALGORITHMS["reinforce"].check, None)
    raises_naming("hyperparameters", covpo.ALGORITHMS["reinforce"].iteration_costs, None)
    assert np.array_equal(steps.ascent_step(np.zeros(2), 0.5, np.ones(2), 0, 1), np.full(2, 0.5))
    with pytest.raises(FloatingPointError):
        steps.ascent_step(np.zeros(2), 1e308, np.full(2, 1e308), 0, 1)


@pytest.mark.parametrize("beta", [1e308, 1e300])
def test_comparator_guarantee_at_a_huge_beta_names_beta(beta: float) -> None:
    raises_naming("beta", comparator_guarantee, tiny_collapse(), {"optimal": (1.0, 0.0, 0.0)}, beta, 4.0, 2, 3)


def test_comparator_guarantee_reads_the_resets_when_the_lowest_coverage_falls_between_them() -> None:
    guarantee = comparator_guarantee(tiny_collapse(), {"optimal": (1.0, 0.0, 0.0)}, 1e10, 1.0, 2, 3)
    assert guarantee.reward.shape == (4,) and np.all(np.isfinite(guarantee.bound))


def test_mirror_descent_resets_to_eps_at_a_huge_beta_names_beta() -> None:
    raises_naming("beta", mirror_descent_resets_to_eps, tiny_collapse(), 1e308, 0.05)
    assert mirror_descent_resets_to_eps(tiny_collapse(), 1e10, 0.05) > 10**9


@pytest.mark.skipif(transformer is None, reason="the transformer laboratory needs JAX")
def test_transformer_entry_points_name_a_missing_task_or_config() -> None:
    task = transformer.ReversalTask()
    prompts = transformer_task.all_prompts(task)[:2]
    raises_naming("task", transformer.reward, None, prompts, prompts, "binary")
    raises_naming("config", transformer.measure_cost, None)
    raises_naming("config", transformer.TrainingSetup, None, task)
    raises_naming("name", transformer.Method, 3, 1e-3)


# Issue 33: the experiments accept only what head_to_head accepts.


@pytest.mark.parametrize(("change", "argument"), [
    ({"coverages": (0.5,)}, "coverages"),
    ({"methods": (method(), method())}, "methods"),
    ({"methods": ()}, "methods"),
], ids=["coverage-below-one", "duplicate-labels", "no-methods"])
def test_cost_sweep_refuses_what_head_to_head_refuses(change: dict, argument: str) -> None:
    arguments = {"instances": [instance()], "coverages": (5.0,), "methods": (method(),), "eps": 0.1, "seed": 0}
    raises_naming(argument, cost_sweep, **{**arguments, **change})


@pytest.mark.parametrize("methods", [(), (method(), method())], ids=["empty", "duplicate-labels"])
def test_budget_comparisons_refuse_empty_or_duplicate_methods(methods: tuple) -> None:
    raises_naming("methods", compare_at_budget, instance(), methods, 16, seed=0)
    raises_naming("methods", compare_recipes, instance(), methods, 16, eps=0.1, seeds=(0,))


def test_head_to_head_label_must_be_a_string() -> None:
    raises_naming("label", head_to_head, [instance()], [5.0], [method()], eps=0.1, seeds=(0,), label=3,
                  progress=False)


@pytest.mark.skipif(transformer is None, reason="the transformer laboratory needs JAX")
@pytest.mark.parametrize("ks", [[], [math.inf], [math.nan]], ids=["empty", "inf", "nan"])
def test_exact_pass_at_k_refuses_empty_or_non_finite_ks(ks: list) -> None:
    raises_naming("ks", transformer.exact_pass_at_k, np.array([-1.0]), ks)


# A beta whose square overflows is the squared losses' limit, not a divergence blamed on eta.


@pytest.mark.parametrize("beta", [1e308, 2.0 * steps.MAX_BETA, steps.MAX_BETA])
@pytest.mark.parametrize("algorithm", ["kimipo", "kimipo_norm", "rebel_onpolicy"])
def test_squared_loss_beta_above_max_beta_names_beta_not_eta(algorithm: str, beta: float) -> None:
    hyperparameters = {**RUNS[algorithm], "beta": beta}
    raises_naming("beta", covpo.ALGORITHMS[algorithm].check, hyperparameters)
    with pytest.raises(ValueError, match=r"beta must be below") as raised, time_limit(CALL_SECONDS):
        covpo.run(algorithm, instance(), rng=rng(), **hyperparameters)
    assert not names_argument(str(raised.value), "eta"), str(raised.value)


@pytest.mark.parametrize("algorithm", ["kimipo", "kimipo_norm", "rebel_onpolicy"])
def test_squared_loss_beta_just_below_max_beta_passes_the_validator(algorithm: str) -> None:
    beta = float(np.nextafter(steps.MAX_BETA, 0.0))
    assert covpo.ALGORITHMS[algorithm].check({**RUNS[algorithm], "beta": beta})["beta"] == beta
