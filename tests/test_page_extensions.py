"""The book's page extensions (book/_ext/numbered_outputs.py, unnumbered_pages.py, page_head.py) on a small project.

A two-page book, built with myst-nb from notebooks that carry their outputs: a numbered chapter
and an unnumbered reference page, each displaying a result table and a widget stand-in and
holding a figure. The chapter numbers all three, in the counters Sphinx keeps for its own
figures and tables; the reference page numbers nothing; and each page's head declares the
Thebe settings once.
"""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat
import pytest

from covpo.plots.widgets import Frames, Slider, static_standin_html
from covpo.table import Table
from tests.small_sphinx_book import build_pages

PAGE_EXTENSIONS = ["numbered_outputs", "unnumbered_pages", "page_head"]
DOT = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

INDEX = """Book
====

.. toctree::
   :numbered:

   chapter

.. toctree::

   reference
"""


def notebook(title: str) -> nbformat.NotebookNode:
    """A notebook with a figure, then a cell that displays a result table and a widget stand-in."""
    table = Table(("method", r"$C_{\mathrm{cov}}$"), (("APMD", 40.0),), caption="Costs to reach the target")
    slider = Slider("beta", "beta", 0.1, 1.0, 0.5, (0.1, 0.5))
    standin = static_standin_html(Frames([DOT, DOT], 100), [slider], "Coverage against beta")
    cell = nbformat.v4.new_code_cell("table; widget", execution_count=1)
    cell.outputs = [
        nbformat.v4.new_output("display_data", {"text/html": table._repr_html_(), "text/plain": str(table)}),
        nbformat.v4.new_output("display_data", {"text/html": standin, "text/plain": "widget"}),
    ]
    figure = f"# {title}\n\n```{{figure}} dot.png\n:name: fig-{title.lower()}\n\nA dot.\n```\n"
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(figure), cell])
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return book


def build(tmp_path: Path, extensions: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Build the book to HTML with ``extensions`` besides myst-nb and sphinx-thebe; return each page's HTML."""
    source = tmp_path / "source"
    source.mkdir(parents=True)
    (source / "conf.py").write_text(
        f"extensions = ['myst_nb', 'sphinx_thebe', *{extensions!r}]\nnumfig = True\n"
        "nb_execution_mode = 'off'\nhtml_theme = 'sphinx_book_theme'\nthebe_config = {'always_load': False}\n"
    )
    (source / "dot.png").write_bytes(base64.b64decode(DOT.split(",", 1)[1]))
    (source / "index.rst").write_text(INDEX)
    for name in ("chapter", "reference"):
        nbformat.write(notebook(name.title()), source / f"{name}.ipynb")
    return build_pages(source, tmp_path, PAGE_EXTENSIONS, ("chapter", "reference"), monkeypatch)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return build(tmp_path_factory.mktemp("book"), PAGE_EXTENSIONS, monkeypatch)


def test_a_chapter_numbers_its_result_tables_and_widget_stand_ins(pages):
    chapter = pages["chapter"]
    assert '<caption><span class="caption-number">Table 1.1 </span>Costs to reach the target</caption>' in chapter
    # the stand-in is the chapter's second figure, after the figure of its markdown
    assert '<span class="caption-number">Fig. 1.1 </span><span class="caption-text">A dot.' in chapter
    assert '<span class="caption-number">Fig. 1.2 </span><span class="caption-text">Coverage against beta</span>' in chapter
    assert '<figure class="covpo-widget-figure" id="widget-1">' in chapter


def test_table_headers_are_typeset_math(pages):
    assert r'<th><span class="math notranslate nohighlight">\(C_{\mathrm{cov}}\)</span></th>' in pages["chapter"]


def test_a_page_outside_the_numbered_chapters_numbers_nothing(pages):
    reference = pages["reference"]
    assert "caption-number" not in reference
    assert "Costs to reach the target</caption>" in reference and "Coverage against beta" in reference


def test_each_page_head_declares_the_thebe_settings_once_and_names_a_colour_mode(pages):
    assert all(page.count("const THEBE_JS_URL") == 1 for page in pages.values())
    assert all('localStorage.getItem("mode") || "auto"' in page for page in pages.values())


def test_without_the_extensions_the_pages_number_nothing_displayed_and_repeat_the_thebe_settings(tmp_path, monkeypatch):
    plain = build(tmp_path, [], monkeypatch)
    assert "Table 1.1" not in plain["chapter"] and "Fig. 1.2" not in plain["chapter"]
    assert '<span class="caption-number">Fig. 1 </span>' in plain["reference"]
    assert plain["chapter"].count("const THEBE_JS_URL") == 2
    assert 'localStorage.getItem("mode") || ""' in plain["chapter"]
