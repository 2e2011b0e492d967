"""The execution page says "passed" or "failed" in words, not with emoji.

myst-nb's ``nb-exec-table`` marks each chapter's status with "✅" or "❌", which only an emoji
font draws: on a reader's machine without one (most Linux desktops, the headless browser the
tests use) they show as empty boxes. This extension replaces them with words once myst-nb has
made the table.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

STATUS_WORDS = {"\u2705": "passed", "\u274c": "failed"}
"""myst-nb's status marks, and the word that replaces each."""


def status_in_words(document: nodes.Node) -> int:
    """Replace every status mark in the document's tables by its word; returns how many."""
    marks = [
        text for table in document.findall(nodes.table) for text in table.findall(nodes.Text)
        if str(text) in STATUS_WORDS
    ]
    for text in marks:
        text.parent.replace(text, nodes.Text(STATUS_WORDS[str(text)]))
    return len(marks)


class StatusInWords(SphinxPostTransform):
    """Runs :func:`status_in_words` after myst-nb's table has replaced its placeholder (priority 8)."""

    default_priority = 9

    def run(self, **kwargs: Any) -> None:
        status_in_words(self.document)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(StatusInWords)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
