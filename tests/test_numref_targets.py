"""The book's numbered-reference extension (book/_ext/numref_targets.py) on a small Sphinx project."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import docutils_namespace, patch_docutils

EXTENSIONS = Path(__file__).resolve().parent.parent / "book" / "_ext"
REFERENCES = 3

FIGURE_PAGE = """Figures
=======

.. _fig-first:

.. figure:: dot.svg

   The first figure.

.. _fig-second:

.. figure:: dot.svg

   The second figure.
"""

CITING_PAGE = "Citing\n======\n\n" + "\n\n".join(
    [":numref:`fig-first` and :numref:`Figure {number} <fig-second>`."] * REFERENCES
) + "\n"


def build(tmp_path: Path, extensions: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[str, Counter]:
    """Build the two-page project to HTML; return the citing page and the doctree reads per page."""
    source = tmp_path / "source"
    source.mkdir(parents=True)
    (source / "conf.py").write_text(f"extensions = {extensions!r}\nnumfig = True\n")
    (source / "dot.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    (source / "index.rst").write_text(".. toctree::\n\n   figures\n   citing\n")
    (source / "figures.rst").write_text(FIGURE_PAGE)
    (source / "citing.rst").write_text(CITING_PAGE)
    reads: Counter = Counter()
    read_doctree = BuildEnvironment.get_doctree

    def counted(env: BuildEnvironment, docname: str):
        reads[docname] += 1
        return read_doctree(env, docname)

    output = tmp_path / "html"
    with monkeypatch.context() as patch, patch_docutils(str(source)), docutils_namespace():
        patch.setattr(BuildEnvironment, "get_doctree", counted)
        app = Sphinx(str(source), str(source), str(output), str(tmp_path / "doctrees"), "html",
                     status=None, warningiserror=True, freshenv=True)
        app.build()
    return (output / "citing.html").read_text(), reads


def test_numbered_references_read_their_target_page_once_and_render_the_same(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(EXTENSIONS))
    plain, plain_reads = build(tmp_path / "plain", [], monkeypatch)
    cached, cached_reads = build(tmp_path / "cached", ["numref_targets"], monkeypatch)
    sys.modules.pop("numref_targets", None)
    assert plain.count("Fig. 1") == REFERENCES and plain.count("Figure 2") == REFERENCES
    assert cached == plain
    # without the extension Sphinx reads the figure page again for every numbered reference to it
    assert plain_reads["figures"] - cached_reads["figures"] == 2 * REFERENCES - 1
    other_pages = lambda reads: {page: count for page, count in reads.items() if page != "figures"}
    assert other_pages(plain_reads) == other_pages(cached_reads)
