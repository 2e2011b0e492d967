"""The settings the registry's contract runs every algorithm at: one table, keyed by the registry's names.

Every entry of ``covpo.ALGORITHMS`` runs the behavioural checks at each of its :data:`SETTINGS`.
The settings *tell parameters apart*: every positive hyperparameter differs from 1, from every
other one, from their reciprocals and from their squares (:func:`degeneracies`), so a bug that
swaps ``beta`` and ``eta``, uses ``1 / beta`` for ``beta`` or squares a step size changes what
the suite sees. Together an entry's settings run *every option branch* it accepts
(:func:`option_values`, derived from the signatures and the validators, so a new option or a new
value of one fails ``tests/test_contract_settings.py`` until it has a setting here): each ``kl``
estimator, each ``baseline``, clip-higher with ``clip_epsilon_high != clip_epsilon``, explicit
asymmetric clip thresholds, ``scale_by_std`` on and off, and ``beta = 0`` where a fixed reference
allows it.

This table moves into the registry record (a field of contract examples) with the record
refactor of issue 55; until then it is the one place a setting is typed.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
from collections.abc import Mapping

from covpo import ALGORITHMS
from covpo.algorithms import Algorithm

#: Arguments that instrument or start a run rather than choose a branch of its update: the
#: generator, the starting point and policy class (``check_policy_argument`` covers ``policy=``),
#: the diagnostics callback and the recording granularity.
INSTRUMENTATION = frozenset({"instance", "rng", "theta", "policy", "on_inner_step", "record_each_step", "record_every"})

#: How far apart (relative) two hyperparameters must be for the contract to tell them apart.
DISTINCT = 0.02

#: Each entry's settings. The first is the entry's interface setting (the one the interface
#: tests of ``tests/test_algorithm_contract.py`` vary one argument of).
SETTINGS: Mapping[str, tuple[dict[str, object], ...]] = {
    "reinforce": (
        {"eta": 0.3, "n_iterations": 24, "batch_size": 16, "beta": 0.7, "baseline": "leave_one_out"},
        {"eta": 0.45, "n_iterations": 18, "batch_size": 24, "beta": 1.6, "baseline": "batch_mean"},
        {"eta": 0.35, "n_iterations": 18, "batch_size": 12, "beta": 0.0},
    ),
    "reinforce_exact": (
        {"eta": 0.3, "n_iterations": 6, "beta": 0.7},
        {"eta": 0.45, "n_iterations": 5, "beta": 1.6},
        {"eta": 0.35, "n_iterations": 4, "beta": 0.0},
    ),
    "mirror_descent_exact": ({"beta": 0.7, "n_iterations": 4}, {"beta": 1.6, "n_iterations": 3}),
    "apmd_exact": ({"beta": 0.7, "n_iterations": 4}, {"beta": 1.6, "n_iterations": 3}),
    "apmd": (
        {"beta": 0.7, "eta": 0.3, "n_iterations": 3, "inner_steps": 5},
        {"beta": 1.6, "eta": 0.45, "n_iterations": 4, "inner_steps": 3},
    ),
    "ppo_noclip": (
        {"beta": 0.7, "eta": 0.3, "n_iterations": 3, "batch_size": 64, "inner_steps": 5},
        {"beta": 1.6, "eta": 0.45, "n_iterations": 4, "batch_size": 96, "inner_steps": 3},
    ),
    "ppo_lite": (
        {"beta": 0.7, "eta": 0.3, "n_iterations": 3, "batch_size": 64, "inner_steps": 5, "kl": "exact"},
        {"beta": 1.6, "eta": 1.8, "n_iterations": 4, "batch_size": 96, "inner_steps": 3, "kl": "sampled",
         "thresholds": (0.85, 1.12)},
    ),
    "grpo_fixed": (
        {"beta": 0.15, "eta": 0.6, "n_iterations": 3, "batch_size": 16, "group_size": 6, "inner_steps": 2},
        {"beta": 0.25, "eta": 1.8, "n_iterations": 5, "batch_size": 20, "group_size": 3, "inner_steps": 2,
         "kl": "exact", "scale_by_std": True, "clip_epsilon": 0.12, "clip_epsilon_high": 0.28},
        {"beta": 0.0, "eta": 0.6, "n_iterations": 3, "batch_size": 16, "group_size": 6, "inner_steps": 2},
    ),
    "grpo_reset": (
        {"beta": 0.15, "eta": 0.6, "n_iterations": 3, "batch_size": 16, "group_size": 6, "inner_steps": 2},
        {"beta": 0.25, "eta": 1.8, "n_iterations": 5, "batch_size": 20, "group_size": 3, "inner_steps": 2,
         "kl": "exact", "scale_by_std": True, "clip_epsilon": 0.12, "clip_epsilon_high": 0.28},
    ),
    "kimipo": (
        {"beta": 0.7, "eta": 0.3, "n_iterations": 3, "batch_size": 64, "inner_steps": 2, "extra_responses": 5},
        {"beta": 1.6, "eta": 0.15, "n_iterations": 5, "batch_size": 96, "inner_steps": 3, "extra_responses": 2},
    ),
    "kimipo_norm": (
        {"beta": 0.7, "eta": 0.3, "n_iterations": 3, "batch_size": 64, "inner_steps": 2, "extra_responses": 5},
        {"beta": 1.6, "eta": 0.15, "n_iterations": 5, "batch_size": 96, "inner_steps": 3, "extra_responses": 2},
    ),
    "rebel_onpolicy": (
        {"beta": 0.7, "eta": 0.3, "n_iterations": 3, "batch_size": 64, "inner_steps": 2},
        {"beta": 1.6, "eta": 0.15, "n_iterations": 4, "batch_size": 96, "inner_steps": 3},
    ),
    "npg": (
        {"beta": 0.7, "n_iterations": 3, "batch_size": 64, "group_size": 4},
        {"beta": 1.6, "n_iterations": 5, "batch_size": 96, "group_size": 3},
    ),
    "npg_exact": ({"beta": 0.7, "n_iterations": 3}, {"beta": 1.6, "n_iterations": 5}),
    "best_of_n": ({"delta": 0.1}, {"delta": 0.03}),
    "filtered_sft": (
        {"eta": 0.3, "n_iterations": 3, "batch_size": 6, "group_size": 5, "inner_steps": 2},
        {"eta": 0.45, "n_iterations": 4, "batch_size": 6, "group_size": 7, "inner_steps": 3},
    ),
}

#: Where a clip engages at a setting: ``(name, setting index) -> sides``, ``"high"`` for a ratio
#: above the upper bound, ``"low"`` below the lower. The independent first-iteration reference
#: (``tests/contract_references.py``) must find exactly these sides engaged.
CLIP_ENGAGES: Mapping[tuple[str, int], frozenset[str]] = {
    ("ppo_lite", 1): frozenset({"high", "low"}),
    ("grpo_fixed", 1): frozenset({"high", "low"}),
    ("grpo_reset", 1): frozenset({"high", "low"}),
}


def cases() -> list[tuple[str, int]]:
    """Every ``(name, setting index)`` the contract runs, in the registry's order."""
    return [(name, index) for name in ALGORITHMS for index in range(len(SETTINGS[name]))]


def case_id(case: tuple[str, int]) -> str:
    return f"{case[0]}#{case[1]}"


def setting(case: tuple[str, int]) -> dict[str, object]:
    """The hyperparameters of ``case``, a fresh copy."""
    name, index = case
    return dict(SETTINGS[name][index])


def _option_choices(algorithm: Algorithm, parameter: str, default: str) -> tuple[str, ...]:
    """The strings the validator accepts for ``parameter``, read from its ``must be one of (...)`` refusal."""
    probe = dict(SETTINGS[algorithm.name][0])
    for name in algorithm.fixed:
        probe.pop(name, None)
    probe[parameter] = "\x00not an option"
    arguments = inspect.signature(algorithm.validator).parameters
    values = {**{name: p.default for name, p in inspect.signature(algorithm.function).parameters.items()}, **probe}
    try:
        algorithm.validator(**{name: values[name] for name in arguments})
    except ValueError as error:
        found = re.search(rf"\b{parameter} must be one of (\(.*?\))", str(error))
        if found:
            return tuple(ast.literal_eval(found[1]))
    raise AssertionError(
        f"{algorithm.name}: the validator does not refuse an unknown {parameter} with a list of its choices"
    )


def option_values(algorithm: Algorithm) -> dict[str, tuple[object, ...]]:
    """The branches ``algorithm``'s function offers, by argument: derived, never typed.

    A string default is an option whose values are those its validator lists; a boolean
    default is a switch (``False``, ``True``); a ``None`` default is an optional setting
    (``None`` or ``"given"``). Arguments of :data:`INSTRUMENTATION` are left out.
    """
    options: dict[str, tuple[object, ...]] = {}
    for name, parameter in inspect.signature(algorithm.function).parameters.items():
        if name in INSTRUMENTATION or parameter.default is inspect.Parameter.empty:
            continue
        default = parameter.default
        if isinstance(default, bool):
            options[name] = (False, True)
        elif isinstance(default, str):
            options[name] = _option_choices(algorithm, name, default)
        elif default is None:
            options[name] = (None, "given")
    return options


def branch(value: object) -> object:
    """The branch a value takes: ``None`` stays, a string or boolean is itself, anything else is ``"given"``."""
    return value if value is None or isinstance(value, (str, bool)) else "given"


def branches_run(
    algorithm: Algorithm, option: str, settings: tuple[Mapping[str, object], ...] | None = None
) -> set[object]:
    """The branches of ``option`` that ``settings`` (``algorithm``'s own by default) run, the function's default filling a gap."""
    default = inspect.signature(algorithm.function).parameters[option].default
    values = {option: default, **algorithm.fixed}
    chosen_settings = SETTINGS[algorithm.name] if settings is None else settings
    return {branch({**values, **chosen}.get(option)) for chosen in chosen_settings}


def branches_owed(algorithm: Algorithm, option: str) -> set[object]:
    """The branches of ``option`` the entry must run: all of them, less those the name fixes or leaves to another name.

    ``"grpo_reset"`` fixes ``reference``; ``"npg"`` leaves ``batch_size=None`` to ``"npg_exact"``,
    which fixes it.
    """
    if option in algorithm.fixed:
        return {branch(algorithm.fixed[option])}
    claimed = {
        branch(other.fixed[option])
        for other in ALGORITHMS.values()
        if other is not algorithm and other.function is algorithm.function and option in other.fixed
    }
    return set(option_values(algorithm)[option]) - claimed


def missing_branches(algorithm: Algorithm, settings: tuple[Mapping[str, object], ...] | None = None) -> list[str]:
    """Each option branch ``algorithm`` accepts that ``settings`` (its own by default) never run, as ``option=value``."""
    return [
        f"{option}={value!r}"
        for option in option_values(algorithm)
        for value in sorted(branches_owed(algorithm, option) - branches_run(algorithm, option, settings), key=repr)
    ]


def positive_hyperparameters(algorithm: Algorithm, chosen: Mapping[str, object]) -> dict[str, float]:
    """Every positive number the run takes, defaults included, a pair's entries as ``name[0]``, ``name[1]``."""
    values = {
        name: parameter.default
        for name, parameter in inspect.signature(algorithm.function).parameters.items()
        if name not in INSTRUMENTATION and parameter.default is not inspect.Parameter.empty
    }
    values.update(algorithm.fixed)
    values.update(chosen)
    numbers: dict[str, float] = {}
    for name, value in values.items():
        if isinstance(value, (tuple, list)):
            numbers.update({f"{name}[{index}]": float(entry) for index, entry in enumerate(value)})
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            numbers[name] = float(value)
    return numbers


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= DISTINCT * max(abs(a), abs(b))


def degeneracies(algorithm: Algorithm, chosen: Mapping[str, object]) -> list[str]:
    """Why ``chosen`` cannot tell two hyperparameters apart: a value near 1, or a pair near equal, reciprocal or squared."""
    numbers = positive_hyperparameters(algorithm, chosen)
    found = [f"{name} = {value:g} is near 1" for name, value in numbers.items() if _close(value, 1.0)]
    for (a, x), (b, y) in itertools.combinations(numbers.items(), 2):
        for relation, left, right in (("equal to", x, y), ("the reciprocal of", x, 1.0 / y),
                                      ("the square of", x, y * y), ("the square root of", x * x, y)):
            if _close(left, right):
                found.append(f"{a} = {x:g} is {relation} {b} = {y:g}")
    return found
