"""The book's figure type: how it shows itself in a notebook, and when it is not drawn."""

from __future__ import annotations

import base64

import nbformat
import pytest

from covpo.plots import base
from covpo.plots.base import IMAGES_VARIABLE, images_requested, new_figure
from tests.conftest import REPOSITORY

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _figure() -> base.BookFigure:
    figure = new_figure(2.0, 1.0)
    figure.add_subplot().plot([0, 1], [1, 0])
    return figure


def test_a_figure_shows_itself_as_a_png_at_its_design_size(monkeypatch):
    monkeypatch.delenv(IMAGES_VARIABLE, raising=False)
    figure = _figure()
    data, metadata = figure._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(PNG_SIGNATURE)
    assert metadata["image/png"] == base.display_size(figure)


def test_with_images_off_a_figure_is_text_and_never_drawn(monkeypatch):
    monkeypatch.setenv(IMAGES_VARIABLE, "0")

    def drawn(*_):
        raise AssertionError("the figure was drawn")

    monkeypatch.setattr(base, "figure_png", drawn)
    assert not images_requested()
    data, metadata = _figure()._repr_mimebundle_()
    assert list(data) == ["text/plain"] and IMAGES_VARIABLE in data["text/plain"] and metadata == {}


@pytest.mark.parametrize("value", [None, "1", ""])
def test_images_are_on_unless_the_variable_is_zero(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(IMAGES_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(IMAGES_VARIABLE, value)
    assert images_requested()


def test_nbval_kernels_of_a_building_session_leave_drawing_to_the_build(pytester, monkeypatch):
    # A pytest run of one notebook, with the plugin as a session that builds the book has it: the
    # kernel nbval starts sees the variable at 0, and the test process does not keep it.
    monkeypatch.delenv(IMAGES_VARIABLE, raising=False)
    cell = f"import os\nassert os.environ.get({IMAGES_VARIABLE!r}) == '0', 'the kernel draws figures'"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (pytester.path / "chapter.ipynb").write_text(nbformat.writes(notebook))
    pytester.makeconftest(f"""
import os
import sys

sys.path.insert(0, {str(REPOSITORY)!r})
from tests.conftest import KernelsDeferToTheBuild


def pytest_configure(config):
    plugin = KernelsDeferToTheBuild()
    plugin.active = True
    config.pluginmanager.register(plugin)


def pytest_sessionfinish(session):
    print("test process keeps", os.environ.get({IMAGES_VARIABLE!r}))
""")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess("-p", "nbval.plugin", "--nbval-lax", "-p", "no:cacheprovider", "-s", "chapter.ipynb")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test process keeps None*"])
