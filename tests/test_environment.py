"""The environment's bytecode list (``scripts/bytecode_modules.txt``) belongs to today's requirements.

``scripts/make_environment.sh`` compiles the installed modules that list names
(``scripts/bytecode_manifest.py``), the ones a test session imports. A list made with other pins
names modules the environment may no longer hold, and misses the new ones, which every process
of a session would then compile again: the list is regenerated with
``python scripts/bytecode_manifest.py --record``.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.conftest import REPOSITORY

SPEC = importlib.util.spec_from_file_location("bytecode_manifest", REPOSITORY / "scripts" / "bytecode_manifest.py")
bytecode_manifest = importlib.util.module_from_spec(SPEC)
# registered by name, so that the processes that compile find the function they are sent
sys.modules[SPEC.name] = bytecode_manifest
SPEC.loader.exec_module(bytecode_manifest)
REGENERATE = "python scripts/bytecode_manifest.py --record"


@pytest.mark.same_on_every_cpu
def test_the_bytecode_list_was_made_with_todays_requirements():
    first = bytecode_manifest.MANIFEST.read_text().splitlines()[0]
    assert first == bytecode_manifest.HEADER + bytecode_manifest.requirements_hash(), (
        f"scripts/bytecode_modules.txt was made with other requirements; regenerate it: {REGENERATE}"
    )


@pytest.mark.same_on_every_cpu
def test_every_listed_module_is_installed_and_the_session_s_own_are_listed():
    lines = [line for line in bytecode_manifest.MANIFEST.read_text().splitlines()[1:] if line]
    listed = bytecode_manifest.listed_modules()
    missing = sorted(set(lines) - {path.relative_to(bytecode_manifest.site_packages()).as_posix() for path in listed})
    assert not missing, f"listed but not installed ({len(missing)}), regenerate with {REGENERATE}: {missing[:5]}"
    for module in ("numpy/__init__.py", "matplotlib/pyplot.py", "jax/__init__.py", "sphinx/application.py",
                   "_pytest/main.py", "ipykernel/kernelapp.py"):
        assert module in lines, f"{module} is imported by every session but not listed: {REGENERATE}"


@pytest.mark.same_on_every_cpu
def test_the_listed_modules_compile_to_the_bytecode_python_reads(tmp_path, monkeypatch):
    module = tmp_path / "site-packages" / "package" / "module.py"
    module.parent.mkdir(parents=True)
    module.write_text("VALUE = 3\n")
    manifest = tmp_path / "bytecode_modules.txt"
    manifest.write_text(bytecode_manifest.HEADER + "0" * 64 + "\npackage/module.py\npackage/gone.py\n")
    monkeypatch.setattr(bytecode_manifest, "MANIFEST", manifest)
    monkeypatch.setattr(bytecode_manifest, "site_packages", lambda: tmp_path / "site-packages")
    assert bytecode_manifest.compile_listed() == 1
    assert [path.as_posix() for path in (module.parent / "__pycache__").iterdir()] == [
        importlib.util.cache_from_source(module.as_posix())
    ]
