"""The package's layers: importing an algorithm is cheap, and imports only go downward.

The layers, bottom to top: the core (``covpo/*.py``), :mod:`covpo.algorithms`, then
:mod:`covpo.experiments` (one module or subpackage per chapter, plus shared sweep machinery)
and :mod:`covpo.labs`, and at the edge :mod:`covpo.plots` (figures and widgets). The
direction is read from the source with :mod:`ast`, so an import inside a function counts too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


from tests.conftest import REPOSITORY

SOURCE = REPOSITORY / "src"
PACKAGE = SOURCE / "covpo"

#: Modules of covpo.experiments that every chapter may use; every other child of
#: covpo.experiments is one chapter's.
SHARED_EXPERIMENTS = frozenset({"covpo.experiments.parallel", "covpo.experiments.population", "covpo.experiments.sweeps"})
#: Chapter units another chapter may use: the collapse engine serves chapters 2 and 3.
SHARED_BETWEEN_CHAPTERS = {"covpo.experiments.collapse": frozenset({"covpo.experiments.mirror_descent"})}

#: What each layer must not import, by module-name prefix.
FORBIDDEN = {
    "core": ("covpo.algorithms", "covpo.experiments", "covpo.labs", "covpo.plots", "covpo.diagnose"),
    "package": ("covpo.experiments", "covpo.labs", "covpo.plots", "covpo.diagnose"),
    "algorithms": ("covpo.experiments", "covpo.labs", "covpo.plots", "covpo.diagnose"),
    "experiments": ("covpo.labs", "covpo.plots", "covpo.diagnose"),
    "labs": ("covpo.experiments", "covpo.plots"),
    "diagnose": ("covpo.experiments", "covpo.labs"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str | None:
    if module == "covpo":
        return "package"
    if module.count(".") == 1 and not (PACKAGE / module.split(".")[1]).is_dir():
        return "core"
    top = module.split(".")[1]
    return top if top in FORBIDDEN else None


def imported_modules(module: str) -> Iterator[str]:
    """Every ``covpo`` module that ``module`` imports, relative imports resolved, ``from m import sub`` as ``m.sub``."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == "covpo")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "covpo":
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                yield submodule if submodule in MODULES else source


def chapter_of(module: str) -> str | None:
    """The chapter unit of an experiments module (``covpo.experiments.<child>``), or ``None`` if shared."""
    parts = module.split(".")
    if len(parts) < 3 or parts[:2] != ["covpo", "experiments"]:
        return None
    unit = ".".join(parts[:3])
    return None if unit in SHARED_EXPERIMENTS else unit


def layer_violations() -> list[str]:
    found = []
    for module in MODULES:
        forbidden = FORBIDDEN.get(layer(module) or "", ())
        for target in sorted(set(imported_modules(module))):
            if any(target == prefix or target.startswith(prefix + ".") for prefix in forbidden):
                found.append(f"{module} imports {target}")
    return found


def chapter_violations() -> list[str]:
    found = []
    for module in MODULES:
        own = chapter_of(module)
        if own is None:
            continue
        for target in sorted(set(imported_modules(module))):
            other = chapter_of(target)
            if other is not None and other != own and own not in SHARED_BETWEEN_CHAPTERS.get(other, ()):
                found.append(f"{module} imports {target}")
    return found


def test_the_source_tree_has_every_layer():
    assert {layer(module) for module in MODULES} >= set(FORBIDDEN)
    assert {chapter_of(module) for module in MODULES} - {None}


def test_imports_only_go_downward():
    violations = layer_violations()
    print("\n".join(violations))
    assert violations == []


def test_no_chapter_imports_another_chapters_experiments():
    violations = chapter_violations()
    print("\n".join(violations))
    assert violations == []


IMPORT_AND_RUN = """
import sys
import numpy as np
import covpo, covpo.algorithms
for algorithm in covpo.ALGORITHMS.values():
    algorithm.function
instance = covpo.random_softmax_linear_instance(np.random.default_rng(0), 3, 5, 3)
trajectory = covpo.run("ppo_noclip", instance, rng=np.random.default_rng(1),
                       beta=1.0, eta=0.5, n_iterations=2, batch_size=8, inner_steps=2)
assert trajectory.total_responses == 16
print(" ".join(sorted(name for name in ("numba", "matplotlib") if name in sys.modules)))
"""


def test_importing_and_running_an_algorithm_loads_neither_numba_nor_matplotlib():
    # Every algorithm module is imported (its registry entry resolved) and one algorithm runs.
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_AND_RUN], capture_output=True, text=True, check=False, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == []


GLUE_IMPORT = """
import sys
from myst_nb.ext.glue import glue
print(" ".join(sorted(name for name in ("lark", "rfc3987_syntax") if name in sys.modules)))
"""


def test_glue_in_a_kernel_compiles_no_grammar():
    # Every chapter's kernel imports glue, and with it nbformat and jsonschema. A jsonschema
    # whose format checker builds rfc3987-syntax's IRI grammar at import costs each kernel
    # about 1.5 s (requirements.txt holds jsonschema below that release).
    result = subprocess.run([sys.executable, "-c", GLUE_IMPORT], capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == []
