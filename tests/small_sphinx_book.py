"""Building a small Sphinx project with some of the book's extensions, for the tests of those extensions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sphinx.application import Sphinx
from sphinx.util.docutils import docutils_namespace, patch_docutils

EXTENSIONS = Path(__file__).resolve().parent.parent / "book" / "_ext"
"""The folder of the book's own Sphinx extensions."""


def build_pages(source: Path, tmp_path: Path, extensions: list[str], pages: tuple[str, ...],
                monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Build the project in ``source`` to HTML under ``tmp_path`` with the book's ``extensions`` importable.

    The extensions are unloaded afterwards, so that a later build with others starts clean. Returns
    the HTML of each page of ``pages``.
    """
    output = tmp_path / "html"
    monkeypatch.syspath_prepend(str(EXTENSIONS))
    try:
        with patch_docutils(str(source)), docutils_namespace():
            app = Sphinx(str(source), str(source), str(output), str(tmp_path / "doctrees"), "html",
                         status=None, warning=None, freshenv=True)
            app.build()
    finally:
        for name in extensions:
            sys.modules.pop(name, None)
    return {name: (output / f"{name}.html").read_text() for name in pages}
