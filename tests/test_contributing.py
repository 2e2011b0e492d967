"""CONTRIBUTING.md's way of adding an algorithm works: the toy it adds keeps the registry's contract.

The guide's "Adding an algorithm" gives three code blocks: the module, its record in
``ALGORITHMS`` and its settings in the contract's ``SETTINGS``. The test takes them from
the guide, follows its steps (the module imported as ``covpo.algorithms.toy_apmd``, the record
added to ``ALGORITHMS``) and runs the behavioural suite of ``tests/registry_contract.py`` on the
entry, so the guide cannot drift from the code without this failing.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import textwrap
from types import MappingProxyType

import numpy as np
import pytest

import covpo
import covpo.algorithms as algorithms
from covpo.algorithms import Algorithm
from tests.conftest import REPOSITORY
from tests.contract_settings import degeneracies, missing_branches
from tests.registry_contract import contract_instance, failures

GUIDE = REPOSITORY / "CONTRIBUTING.md"
#: A code block of the guide, named by its first line, a comment saying where the code goes.
BLOCK = re.compile(r"^( *)```python\n\1# (?P<where>[^\n]+)\n(?P<code>.*?)^\1```", flags=re.M | re.S)
MODULE_BLOCK = "src/covpo/algorithms/toy_apmd.py"
RECORD_BLOCK = "in ALGORITHMS, src/covpo/algorithms/__init__.py"
SETTING_BLOCK = "in SETTINGS, tests/contract_settings.py"


def guide_blocks() -> dict[str, str]:
    """The guide's named Python blocks, dedented, by where their code goes."""
    return {match["where"]: textwrap.dedent(match["code"]) for match in BLOCK.finditer(GUIDE.read_text())}


def register(monkeypatch: pytest.MonkeyPatch, directory, module_source: str) -> tuple[Algorithm, tuple[dict, ...]]:
    """Follow the guide's steps 1 to 3 with ``module_source`` as the module; return the record and its settings."""
    blocks = guide_blocks()
    path = directory / "toy_apmd.py"
    path.write_text(module_source)
    spec = importlib.util.spec_from_file_location("covpo.algorithms.toy_apmd", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "covpo.algorithms.toy_apmd", module)
    spec.loader.exec_module(module)
    record = eval(blocks[RECORD_BLOCK].strip().rstrip(","), vars(algorithms))
    monkeypatch.setattr(algorithms, "ALGORITHMS", MappingProxyType({**algorithms.ALGORITHMS, record.name: record}))
    settings = ast.literal_eval("{" + blocks[SETTING_BLOCK] + "}")
    return record, settings[record.name]


def test_the_guide_names_its_three_blocks():
    assert {MODULE_BLOCK, RECORD_BLOCK, SETTING_BLOCK} <= set(guide_blocks())


def test_the_guides_toy_algorithm_keeps_the_registry_contract(monkeypatch, tmp_path):
    record, settings = register(monkeypatch, tmp_path, guide_blocks()[MODULE_BLOCK])
    assert isinstance(record, Algorithm) and covpo.algorithms.ALGORITHMS["toy_apmd"] is record
    assert len(settings) >= 2 and missing_branches(record, settings) == []
    for setting in settings:
        assert degeneracies(record, setting) == [], setting
        assert failures(record, setting, contract_instance()) == {}, setting


def test_the_toy_runs_through_covpo_run_as_apmd_with_one_inner_step(monkeypatch, tmp_path):
    _, (setting, *_) = register(monkeypatch, tmp_path, guide_blocks()[MODULE_BLOCK])
    instance = contract_instance()
    toy = covpo.run("toy_apmd", instance, **setting)
    apmd = covpo.run("apmd", instance, inner_steps=1, **setting)
    assert toy.algorithm == "toy APMD"
    for column in ("reward", "log_coverage", "kl_to_base", "thetas", "inner_kl", "gradient_steps", "reference_resets"):
        assert np.array_equal(getattr(toy, column), getattr(apmd, column)), column


def test_the_suite_catches_the_toy_broken(monkeypatch, tmp_path):
    # The same toy stepping against its gradient: the suite is not vacuous on a new entry.
    source = guide_blocks()[MODULE_BLOCK]
    assert source.count("loop.step(theta, eta, gradient") == 1
    broken = source.replace("loop.step(theta, eta, gradient", "loop.step(theta, -eta, gradient")
    record, (setting, *_) = register(monkeypatch, tmp_path, broken)
    found = failures(record, setting, contract_instance())
    assert {"check_follows_its_gradient", "check_improves_its_objective"} <= set(found), found
