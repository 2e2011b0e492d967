"""The site's reading fixes (book/_ext and references.bib) on a small project, without building the book.

A small book built with myst-nb and sphinxcontrib-bibtex from a notebook that carries its
outputs and from a reStructuredText page, with the book's bibliography style and the
extensions that fix what a reader of the built site met:

* the bibliography labelled "[{Kimi Team}, 2025a]" and cited two works of one corporate author
  as "[Kimi Team, 2025, Kimi Team, 2025]" (``author_year_bibliography``);
* a docstring's "pass@256" became a ``mailto:`` link (``no_email_links``);
* the execution table marked its status with emoji (``execution_status_words``);
* every figure's alt text was its file path (``figure_alt_text``);
* table numbers skipped the folded tables (``numbered_outputs``);
* every page had two search boxes, one alone in a bar above the page (``one_search_box``).

Each check fails without its extension (the last test builds the project without them). The
built site itself is checked for the same faults in ``tests/test_browser.py``.
"""

from __future__ import annotations

import base64
import importlib
import re
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from bs4 import BeautifulSoup
from myst_nb.ext.execution_tables import make_stat_table
from pybtex.database import parse_file

from covpo.table import Table
from tests.small_sphinx_book import EXTENSIONS, build_pages

REPOSITORY = Path(__file__).resolve().parent.parent
READING_EXTENSIONS = ["author_year_bibliography", "no_email_links", "execution_status_words", "figure_alt_text",
                      "numbered_outputs", "one_search_box"]
DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
# Code points that only an emoji font draws: the pictographs and symbols planes, dingbats and
# miscellaneous symbols (U+2600-27BF, where "✅" and "❌" live), and the emoji variation selector.
EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f]")

BIBLIOGRAPHY = r"""
@article{kimi2025k15,
  title   = {Kimi k1.5: Scaling Reinforcement Learning with {LLMs}},
  author  = {{Kimi Team}},
  journal = {arXiv preprint arXiv:2501.12599},
  year    = {2025}
}

@article{kimi2025k2,
  title   = {Kimi K2: Open Agentic Intelligence},
  author  = {{Kimi Team}},
  journal = {arXiv preprint arXiv:2507.20534},
  year    = {2025}
}

@inproceedings{mei2020global,
  title     = {On the Global Convergence Rates of Softmax Policy Gradient Methods},
  author    = {Mei, Jincheng and Xiao, Chenjun and Szepesv{\'a}ri, Csaba and Schuurmans, Dale},
  booktitle = {International Conference on Machine Learning},
  year      = {2020}
}

@inproceedings{szepesvari2020,
  title     = {A Paper by One Author with an Accent},
  author    = {Szepesv{\'a}ri, Csaba},
  booktitle = {A Conference},
  year      = {2020}
}
"""

INDEX = """Book
====

.. toctree::
   :numbered:

   chapter

.. toctree::

   api
"""

API = """API
===

Exact pass@256 on the hard prompts, pass@k and ``pass@1``; write to someone@example.org.

Kimi models [#]_ train with the squared loss :cite:p:`kimi2025k15,kimi2025k2`, as
:cite:t:`kimi2025k2` describes; see also :cite:p:`mei2020global` and :cite:t:`szepesvari2020`.

.. [#] A footnote, so that the page has other bracketed labels.

.. bibliography::
"""


def chapter_notebook() -> nbformat.NotebookNode:
    """A figure, a table folded under its cell (hide-output), then a table on view."""
    figure = (
        "# Chapter\n\n```{figure} dot.png\n:name: fig-dot\n\n"
        "Coverage of $\\pi_t$ against steps for $\\beta \\ge 1$, e.g. at $C_{\\mathrm{cov}} = 4$ (Fig. 1.2 repeats it). "
        "The second sentence is not part of the description.\n```\n"
    )
    cells = [nbformat.v4.new_markdown_cell(figure)]
    for caption, tags in (("Per-seed outcomes, folded", ["hide-output"]), ("Costs to reach the target", [])):
        cell = nbformat.v4.new_code_cell("table", execution_count=len(cells), metadata={"tags": tags})
        table = Table(("method", "cost"), (("APMD", 40.0),), caption=caption)
        cell.outputs = [nbformat.v4.new_output("display_data", {"text/html": table._repr_html_(), "text/plain": str(table)})]
        cells.append(cell)
    book = nbformat.v4.new_notebook(cells=cells)
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return book


def build(tmp_path: Path, extensions: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Build the small book with ``extensions`` besides myst-nb and sphinxcontrib-bibtex; return each page's HTML."""
    source = tmp_path / "source"
    source.mkdir(parents=True)
    styles = (
        "bibtex_default_style = 'author_year'\nbibtex_reference_style = 'author_year_labels'\n"
        if "author_year_bibliography" in extensions else "bibtex_reference_style = 'author_year'\n"
    )
    (source / "conf.py").write_text(
        f"extensions = ['myst_nb', 'sphinxcontrib.bibtex', *{extensions!r}]\nnumfig = True\n"
        "nb_execution_mode = 'off'\nhtml_theme = 'sphinx_book_theme'\n"
        "myst_enable_extensions = ['dollarmath']\nbibtex_bibfiles = ['references.bib']\n" + styles
    )
    (source / "dot.png").write_bytes(base64.b64decode(DOT))
    (source / "references.bib").write_text(BIBLIOGRAPHY)
    (source / "index.rst").write_text(INDEX)
    (source / "api.rst").write_text(API)
    nbformat.write(chapter_notebook(), source / "chapter.ipynb")
    return build_pages(source, tmp_path, READING_EXTENSIONS, ("chapter", "api"), monkeypatch)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return build(tmp_path_factory.mktemp("book"), READING_EXTENSIONS, monkeypatch)


def bibliography_labels(page: str) -> list[str]:
    """The labels of the bibliography's entries, as the page shows them (brackets dropped)."""
    labels = BeautifulSoup(page, "html.parser").select("div.citation span.label")
    return [label.get_text().strip("[]") for label in labels]


def citations(page: str) -> list[str]:
    """The text of each citation in the prose (``bibtex-citation`` spans)."""
    return [span.get_text() for span in BeautifulSoup(page, "html.parser").select("span.bibtex-citation")]


def test_bibliography_labels_have_no_braces_and_tell_one_authors_works_apart(pages):
    labels = [label for label in bibliography_labels(pages["api"]) if "," in label]
    assert sorted(labels) == ["Kimi Team, 2025a", "Kimi Team, 2025b", "Mei et al., 2020", "Szepesvári, 2020"], labels


def test_citations_carry_the_bibliographys_labels_without_repeats(pages):
    cited = citations(pages["api"])
    assert "[Kimi Team, 2025a; Kimi Team, 2025b]" in cited, cited
    assert "Kimi Team [2025b]" in cited and "[Mei et al., 2020]" in cited and "Szepesvári [2020]" in cited, cited
    assert not [text for text in cited if "{" in text or "}" in text], cited


def extension(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """One of the book's extensions (``book/_ext/<name>.py``), imported as Sphinx imports it."""
    monkeypatch.syspath_prepend(str(EXTENSIONS))
    return importlib.import_module(name)


def test_the_book_bibliography_gets_distinct_labels_without_braces(monkeypatch):
    style = extension("author_year_bibliography", monkeypatch).AuthorYearStyle()
    entries = style.sort(parse_file(REPOSITORY / "references.bib").entries.values())
    labels = list(style.format_labels(entries))
    assert len(set(labels)) == len(labels), labels
    assert not [label for label in labels if re.search(r"[{}\\]", label)], labels
    assert {"Kimi Team, 2025a", "Kimi Team, 2025b", "von Werra et al., 2020"} <= set(labels), labels


def test_every_arxiv_preprint_with_an_identifier_links_to_it():
    entries = parse_file(REPOSITORY / "references.bib").entries
    unlinked = {}
    for key, entry in entries.items():
        identifier = re.search(r"arXiv:(\d{4}\.\d{4,5})", entry.fields.get("journal", ""))
        if identifier and entry.fields.get("url") != f"https://arxiv.org/abs/{identifier.group(1)}":
            unlinked[key] = identifier.group(1)
    assert not unlinked, f"arXiv preprints whose entry has no url to their abstract page: {unlinked}"


def test_text_that_looks_like_an_address_is_not_linked(pages):
    assert "mailto:" not in pages["api"]
    assert "Exact pass@256 on the hard prompts" in BeautifulSoup(pages["api"], "html.parser").get_text()


def test_figures_are_described_by_their_captions_first_sentence(pages):
    alts = re.findall(r'<img[^>]*\salt="([^"]*)"', pages["chapter"])
    assert alts == ["Coverage of π_t against steps for β ≥ 1, e.g. at C_cov = 4 (Fig. 1.2 repeats it)."], alts


def test_a_short_first_sentence_takes_the_next_and_math_reads_as_letters(monkeypatch):
    alt = extension("figure_alt_text", monkeypatch)
    caption = "Token sequences. Top: the log-probability along REINFORCE (solid) and APMD (dashed). Bottom: the ratio."
    assert alt.opening(caption) == "Token sequences. Top: the log-probability along REINFORCE (solid) and APMD (dashed)."
    assert alt.opening("One sentence only") == "One sentence only"
    assert alt.plain_math(r"\mathrm{KL}(\pi_{t+1} \Vert \pi^\star) \le \varepsilon \lambda_{\max}") == "KL(π_t+1 ‖ π^*) ≤ ε λ_max"


def test_folded_tables_take_no_number_so_the_tables_on_view_count_on(pages):
    chapter = pages["chapter"]
    assert '<caption><span class="caption-number">Table 1.1 </span>Costs to reach the target</caption>' in chapter
    assert "<caption>Per-seed outcomes, folded</caption>" in chapter
    assert "Table 1.2" not in chapter


def search_fields(page: str) -> list[str]:
    """Where each search field on the page sits (the classes of its container); the dialog a field opens is not one."""
    fields = BeautifulSoup(page, "html.parser").select(".search-button-field, input[type=search]")
    return [" ".join(field.parent.get("class") or []) for field in fields if not field.find_parent("dialog")]


def test_each_page_has_one_search_field_in_its_sidebar(pages):
    for page in pages.values():
        assert search_fields(page) == ["sidebar-primary-item"], search_fields(page)
        assert "bd-header__inner" not in page


def test_the_execution_table_states_the_status_in_words(monkeypatch):
    runs = {
        "chapter": {"exec_data": {"mtime": 0.0, "method": "cache", "runtime": 1.5, "succeeded": True}},
        "broken": {"exec_data": {"mtime": 0.0, "method": "cache", "runtime": 0.5, "succeeded": False, "error": "boom"}},
    }
    table = make_stat_table("execution", runs)
    assert EMOJI.search(table.astext()), "myst-nb no longer marks the status with emoji: this fix is not needed"
    assert extension("execution_status_words", monkeypatch).status_in_words(table) == 2
    assert not EMOJI.search(table.astext()) and {"passed", "failed"} <= set(table.astext().split())


def test_without_the_extensions_each_fault_returns(tmp_path, monkeypatch):
    plain = build(tmp_path, [], monkeypatch)
    emailed = [link.get_text() for link in BeautifulSoup(plain["api"], "html.parser").select('a[href^="mailto:"]')]
    assert "pass@256" in emailed, emailed
    assert re.search(r'<img[^>]*\salt="[^"]*dot\.png"', plain["chapter"])
    assert "[Kimi Team, 2025, Kimi Team, 2025]" in citations(plain["api"])
    assert len(search_fields(plain["chapter"])) == 3  # the sidebar's, the header bar's, and its copy for narrow screens
