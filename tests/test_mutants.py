"""The registry's contract suite alone catches every broken algorithm of ``tests/mutants.py``.

Each mutant is applied in place (:func:`tests.mutants.applied`) and the checks of
``tests/registry_contract.py`` run on the registry entry it breaks, with the contract's own
small setting: at least one check must fail, and the same checks pass once it is undone. The
per-algorithm test files catch these bugs too; this test shows that an algorithm registered
tomorrow, which brings no such file, would still be held to them.
"""

from __future__ import annotations

import pytest

from covpo import ALGORITHMS
from tests.mutants import MUTANTS, applied
from tests.registry_contract import contract_instance, failures
from tests.test_algorithm_contract import HYPERPARAMETERS


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: mutant.name)
def test_the_registry_suite_kills_the_mutant(mutant):
    algorithm, instance = ALGORITHMS[mutant.algorithm], contract_instance()
    with applied(mutant):
        killed = failures(algorithm, HYPERPARAMETERS[mutant.algorithm], instance)
    print(f"{mutant.name}: killed by {', '.join(killed) or 'nothing'}")
    assert killed, f"{mutant.name} passes the registry suite"
    assert failures(algorithm, HYPERPARAMETERS[mutant.algorithm], instance) == {}


def test_every_mutant_edits_real_code_and_breaks_a_registered_algorithm():
    assert len(MUTANTS) == 11 and {mutant.algorithm for mutant in MUTANTS} <= set(ALGORITHMS)
    for mutant in MUTANTS:
        with applied(mutant):
            pass
