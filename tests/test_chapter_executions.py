"""nbval's execution of a chapter is the build's: kernels started as the build's, outputs kept, records left for the build."""

from __future__ import annotations

import json
import logging

import nbformat
import pytest
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from myst_nb.core.config import NbParserConfig
from myst_nb.core.execute.cache import NotebookClientCache

from tests.chapter_executions import chapter_record
from tests.conftest import REPOSITORY

PROFILE_NAME = "COVPO_TEST_PROFILE_VARIABLE"
KERNEL_CELL = f"""import os
print("profile", os.environ.get({PROFILE_NAME!r}), "standins", os.environ.get("COVPO_STATIC_STANDINS"))"""
DISPLAY_CELL = "from IPython.display import HTML\nHTML('<b>shown</b>')"


def run_chapter(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cells: list[str], *options: str):
    """Run a notebook ``chapter.ipynb`` of ``cells`` under nbval with the plugin active, as a building session has it."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (pytester.path / "chapter.ipynb").write_text(nbformat.writes(notebook))
    folder = pytester.path / "executions"
    pytester.makeconftest(f"""
import os
import sys

sys.path.insert(0, {str(REPOSITORY)!r})
from pathlib import Path

from tests.chapter_executions import ChapterExecutions


def pytest_configure(config):
    config.pluginmanager.register(ChapterExecutions(), "executions")


def pytest_collection_finish(session):
    plugin = session.config.pluginmanager.get_plugin("executions")
    plugin.activate(Path({str(folder)!r}), {{{PROFILE_NAME!r}: "second"}}, session.items)


def pytest_sessionfinish(session):
    print("test process keeps", os.environ.get({PROFILE_NAME!r}), os.environ.get("COVPO_STATIC_STANDINS"))
""")
    monkeypatch.delenv(PROFILE_NAME, raising=False)
    monkeypatch.delenv("COVPO_STATIC_STANDINS", raising=False)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess("-p", "nbval.plugin", "--nbval-lax", "-p", "no:cacheprovider", "-s",
                                           *options, "chapter.ipynb")
    return result, notebook, chapter_record(folder, "chapter")


def test_a_passed_chapter_leaves_its_execution_in_kernels_started_as_the_builds(pytester, monkeypatch):
    result, source, record = run_chapter(pytester, monkeypatch, [KERNEL_CELL, DISPLAY_CELL])
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test process keeps None None*"])
    assert record["status"] == "passed" and record["seconds"] > 0
    executed = nbformat.reads(record["notebook"], as_version=4)
    printed, shown = (cell.outputs for cell in executed.cells)
    assert printed[0].output_type == "stream" and printed[0].text == "profile second standins 1\n"
    assert shown[0].output_type == "execute_result" and shown[0].data["text/html"] == "<b>shown</b>"
    assert [cell.execution_count for cell in executed.cells] == [1, 2]
    nbformat.validate(executed)
    # the build's cache recognizes the execution as that of the notebook it reads
    cache = get_cache(str(pytester.path / "cache"))
    cache.cache_notebook_bundle(CacheBundleIn(executed, record["source"]), check_validity=False)
    cache.match_cache_notebook(source)


def test_a_failed_cell_records_the_chapter_as_failed(pytester, monkeypatch):
    result, _, record = run_chapter(pytester, monkeypatch, [KERNEL_CELL, "raise ValueError('claim fails')", "1"])
    result.assert_outcomes(passed=2, failed=1)
    assert record["status"] == "failed" and "Cell 1" in record["reason"] and "notebook" not in record


def test_a_chapter_run_in_part_is_not_handed_to_the_build(pytester, monkeypatch):
    result, _, record = run_chapter(pytester, monkeypatch, [KERNEL_CELL, DISPLAY_CELL], "-k", "0")
    result.assert_outcomes(passed=1)
    assert record["status"] == "incomplete" and "notebook" not in record


def test_the_build_renders_handed_executions_and_executes_nothing(monkeypatch, tmp_path):
    from tests.book_build import book_extension

    extension = book_extension("executed_chapters")

    class Config:
        nb_execution_mode = "force"
        nb_execution_cache_path = ""

    monkeypatch.delenv(extension.EXECUTIONS_VARIABLE, raising=False)
    extension.use_handed_executions(None, config := Config())
    assert config.nb_execution_mode == "force", "the README's build executes every chapter"
    monkeypatch.setattr(NotebookClientCache, "start_client", NotebookClientCache.start_client)
    monkeypatch.setenv(extension.EXECUTIONS_VARIABLE, str(tmp_path / "cache"))
    extension.use_handed_executions(None, config)
    assert (config.nb_execution_mode, config.nb_execution_cache_path) == ("cache", str(tmp_path / "cache"))
    # the page's executed notebook (offered for download) is the notebook the parser read, with
    # the cached outputs merged into it, as in the README's build
    source = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    source.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    executed = nbformat.from_dict(json.loads(nbformat.writes(source)))
    executed.cells[0].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)]
    get_cache(str(tmp_path / "cache")).cache_notebook_bundle(CacheBundleIn(executed, "chapter.md"), check_validity=False)
    nb_config = NbParserConfig(execution_mode="cache", execution_cache_path=str(tmp_path / "cache"))
    with NotebookClientCache(source, None, nb_config, logging.getLogger("test")) as client:
        assert client.notebook is source
    assert source.cells[0].outputs[0].data["text/plain"] == "2"
