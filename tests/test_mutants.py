"""The registry's contract suite alone catches every broken algorithm of ``tests/mutants.py``.

Each mutant is applied in place (:func:`tests.mutants.applied`) and the suite of
``tests/contract_checks.py`` (the behavioural checks, the independent first iterations and the
sampling law) runs on the registry entry it breaks, at that entry's settings in
``tests/contract_settings.py``, setting after setting and check after check until one fails: at
least one check must fail at some setting, and the edited function is put back afterwards (the
full table of which check kills which mutant at which setting is ``failures`` of
``tests/contract_checks.py`` run on each). The per-algorithm test files
catch many of these bugs too; this test shows that an algorithm registered tomorrow, which brings
no such file, would still be held to them. ``tests/test_algorithm_contract.py`` shows the
unbroken registry passes the same suite at every setting.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from covpo import ALGORITHMS
from tests.contract_checks import CHECKS
from tests.contract_settings import SETTINGS
from tests.mutants import MUTANTS, Mutant, applied
from tests.registry_contract import contract_instance


def _edited(mutant: Mutant):
    owner = importlib.import_module(mutant.module)
    *owners, name = mutant.qualname.split(".")
    for attribute in owners:
        owner = getattr(owner, attribute)
    return getattr(owner, name)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: mutant.name)
def test_the_registry_suite_kills_the_mutant(mutant):
    algorithm, instance = ALGORITHMS[mutant.algorithm], contract_instance()
    original = _edited(mutant)
    with applied(mutant):
        killed = first_failure(algorithm, instance)
    print(f"{mutant.name}: {killed or 'survives'}")
    assert killed, f"{mutant.name} passes the registry suite at every setting"
    assert _edited(mutant) is original


def first_failure(algorithm, instance) -> str | None:
    """The first check of the suite that ``algorithm`` fails, at its first setting that fails one; ``None`` if none does."""
    for index, hyperparameters in enumerate(SETTINGS[algorithm.name]):
        for check in CHECKS:
            try:
                check(algorithm, hyperparameters, instance)
            except (AssertionError, ValueError, FloatingPointError, IndexError, KeyError) as error:
                return f"killed at setting {index} by {check.__name__}: {type(error).__name__}: {str(error)[:200]}"
    return None


def test_every_mutant_edits_real_code_and_breaks_a_registered_algorithm():
    # The fixture's count, derived from its source: one Mutant(...) per bug, none lost or duplicated.
    tree = ast.parse(Path(inspect.getfile(Mutant)).read_text())
    written = [node for node in ast.walk(tree)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Mutant"]
    assert len(MUTANTS) == len(written) == len({mutant.name for mutant in MUTANTS})
    assert {mutant.algorithm for mutant in MUTANTS} <= set(ALGORITHMS)
    for mutant in MUTANTS:
        with applied(mutant):
            pass
