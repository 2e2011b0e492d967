"""The chapters' hidden check cells check claims: none asserts on literals alone.

A collapsed check cell stands beside a sentence and fails when the sentence stops holding. An
assertion whose value is fixed before any of the book's code runs cannot fail, and so checks
nothing: ``assert 0.05 < 0.1``, an assertion on a name the chapter only ever assigned from
literals (``epsilon = 0.2`` and then ``assert 1 - epsilon < 0.9``), or on arithmetic of such names
with ``numpy`` or ``math`` functions. This test finds those forms in every chapter's hidden cells.
Identities of the package's functions belong in the unit tests instead.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from tests.conftest import REPOSITORY, chapter_files, has_code, read_chapter

TOC = REPOSITORY / "_toc.yml"

PURE_MODULES = frozenset({"np", "numpy", "math"})
"""Modules whose functions, applied to literals, still give a value fixed before the book runs."""

PURE_BUILTINS = frozenset({"abs", "min", "max", "round", "float", "int", "len", "sum", "pow", "range", "tuple", "list"})
"""Builtins of the same kind."""


def _is_fixed(node: ast.AST, fixed_names: frozenset[str]) -> bool:
    """Whether ``node`` evaluates to a value known without running any of the book's code.

    Literals, containers and arithmetic of them, names in ``fixed_names``, and calls of
    :data:`PURE_BUILTINS` or of functions of :data:`PURE_MODULES` whose arguments are all fixed.
    """
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in fixed_names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_fixed(element, fixed_names) for element in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _is_fixed(node.operand, fixed_names)
    if isinstance(node, ast.BinOp):
        return _is_fixed(node.left, fixed_names) and _is_fixed(node.right, fixed_names)
    if isinstance(node, ast.BoolOp):
        return all(_is_fixed(value, fixed_names) for value in node.values)
    if isinstance(node, ast.Compare):
        return _is_fixed(node.left, fixed_names) and all(_is_fixed(c, fixed_names) for c in node.comparators)
    if isinstance(node, ast.Call):
        function = node.func
        pure = (isinstance(function, ast.Name) and function.id in PURE_BUILTINS) or (
            isinstance(function, ast.Attribute)
            and isinstance(function.value, ast.Name)
            and function.value.id in PURE_MODULES
        )
        arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
        return pure and all(_is_fixed(argument, fixed_names) for argument in arguments)
    return False


def _assigned_values(tree: ast.AST) -> dict[str, list[ast.AST | None]]:
    """Every name bound in ``tree``, with the values bound to it (``None`` where the value is unknown)."""
    bound: dict[str, list[ast.AST | None]] = {}

    def bind(target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            bound.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for element, element_value in zip(target.elts, value.elts):
                    bind(element, element_value)
            else:
                for element in target.elts:
                    bind(element, value)
        elif isinstance(target, ast.Starred):
            bind(target.value, None)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value)
        elif isinstance(node, ast.AnnAssign):
            bind(node.target, node.value)
        elif isinstance(node, ast.AugAssign):
            bind(node.target, None)
        elif isinstance(node, (ast.For, ast.comprehension)):
            iterable = node.iter
            elements = iterable.elts if isinstance(iterable, (ast.Tuple, ast.List)) else None
            if elements is not None and isinstance(node.target, (ast.Tuple, ast.List)):
                for element in elements:
                    bind(node.target, element)
            else:
                bind(node.target, iterable if elements is None else ast.Tuple(elts=elements))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for argument in ast.walk(node.args):
                if isinstance(argument, ast.arg):
                    bound.setdefault(argument.arg, []).append(None)
            if not isinstance(node, ast.Lambda):
                bound.setdefault(node.name, []).append(None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.setdefault((alias.asname or alias.name).split(".")[0], []).append(None)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars, None)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target, node.value)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.setdefault(node.name, []).append(None)
    return bound


def fixed_names(sources: list[str]) -> frozenset[str]:
    """The names that every assignment in ``sources`` (a chapter's cells) binds to a fixed value."""
    bound: dict[str, list[ast.AST | None]] = {}
    for source in sources:
        for name, values in _assigned_values(ast.parse(source)).items():
            bound.setdefault(name, []).extend(values)
    fixed: frozenset[str] = frozenset()
    while True:
        grown = frozenset(
            name
            for name, values in bound.items()
            if values and all(value is not None and _is_fixed(value, fixed) for value in values)
        )
        if grown == fixed:
            return fixed
        fixed = grown


def assertions_that_cannot_fail(source: str, fixed: frozenset[str]) -> list[str]:
    """The ``assert`` statements of ``source`` (and ``np.testing.assert_*`` calls) whose test is fixed."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert) and _is_fixed(node.test, fixed):
            found.append(ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith("assert_")
            and node.args
            and all(_is_fixed(argument, fixed) for argument in node.args)
        ):
            found.append(ast.unparse(node))
    return found


def code_sources(notebook) -> list[str]:
    """The code cells' sources, with IPython magics and shell escapes dropped."""
    return [
        textwrap.dedent("\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))))
        for cell in notebook.cells
        if cell.cell_type == "code"
    ]


def hidden_check_sources(notebook) -> list[str]:
    """The sources of the chapter's hidden (collapsed or removed) code cells."""
    return [
        source
        for cell, source in zip((c for c in notebook.cells if c.cell_type == "code"), code_sources(notebook))
        if {"hide-cell", "remove-cell"} & set(cell.metadata.get("tags", []))
    ]


EXECUTABLE_CHAPTERS = [
    entry
    for entry in chapter_files(TOC)
    if (REPOSITORY / f"{entry}.md").exists() and has_code(read_chapter(REPOSITORY / f"{entry}.md"))
]


@pytest.mark.parametrize("entry", EXECUTABLE_CHAPTERS)
def test_no_hidden_check_asserts_on_literals_alone(entry):
    notebook = read_chapter(REPOSITORY / f"{entry}.md")
    fixed = fixed_names(code_sources(notebook))
    found = [
        assertion for source in hidden_check_sources(notebook) for assertion in assertions_that_cannot_fail(source, fixed)
    ]
    assert not found, (
        f"{entry}.md: these checks assert on values fixed before any of the book's code runs, so they cannot fail; "
        f"check the claim beside them, or move an identity to the unit tests: {found}"
    )


CANNOT_FAIL = [
    "assert 0.05 < 0.1",
    "assert np.log10(2.0) < 0.5",
    "epsilon = 0.2\nassert 1 - epsilon < 0.9",
    "low, high = 0.8, 1.2\nassert low < high",
    "edge = 1 / np.log(1 + 0.2)\nassert 5 < edge < 6",
    "for beta in (0.5, 1.0):\n    assert beta > 0",
    "np.testing.assert_allclose(np.sqrt(4.0), 2.0)",
    "assert True",
]

CAN_FAIL = [
    "assert run.steps > 100",
    "value = measure(3)\nassert value < 0.1",
    "epsilon = 0.2\nassert run.ratio < 1 + epsilon",
    "assert best_of_n_success(np.log(1e-6), 64) < 1e-4",
    "x = np.array(run.values)\nassert np.all(x > 0)",
    "for beta in betas:\n    assert beta > 0",
    "np.testing.assert_allclose(measured, [1.0, 2.0])",
]


@pytest.mark.parametrize("source", CANNOT_FAIL)
def test_the_scan_finds_assertions_on_literals(source):
    assert assertions_that_cannot_fail(source, fixed_names([source]))


@pytest.mark.parametrize("source", CAN_FAIL)
def test_the_scan_leaves_checks_of_computed_values_alone(source):
    assert not assertions_that_cannot_fail(source, fixed_names([source]))


def test_a_name_fixed_in_one_cell_is_fixed_in_the_check_cells():
    cells = ["ppo_epsilon = 0.2\nedge = 1 / np.log(1 / (1 - ppo_epsilon))", "assert edge > 4"]
    assert assertions_that_cannot_fail(cells[1], fixed_names(cells))


def test_a_name_computed_anywhere_is_not_fixed():
    cells = ["eta = 4.0", "eta = chosen_rate(sweep)", "assert eta > 1"]
    assert not assertions_that_cannot_fail(cells[2], fixed_names(cells))
