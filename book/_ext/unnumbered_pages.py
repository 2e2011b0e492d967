"""Figures, tables and boxes are numbered in the numbered chapters only.

Sphinx numbers the figures of every page: those of a numbered chapter after the chapter ("Fig.
3.2"), those of the pages outside the numbered part of the table of contents (the front page,
the notation, execution and API pages) with one counter that runs across all of them, so the
front page held "Fig. 1" and the API page "Fig. 2". Those pages are not chapters and their
numbers say nothing, so this extension takes them away once Sphinx has assigned them: on
such a page a figure keeps its caption and its label, and is referred to by ``{ref}``.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

#: After Sphinx's own handler of the event, which assigns the numbers (default priority 500).
AFTER_NUMBERING = 900


def unnumber_pages_outside_chapters(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """Drop the figure, table and box numbers of every page that has no section number."""
    for docname in list(env.toc_fignumbers):
        if not env.toc_secnumbers.get(docname):
            del env.toc_fignumbers[docname]
    return []


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-get-updated", unnumber_pages_outside_chapters, priority=AFTER_NUMBERING)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
