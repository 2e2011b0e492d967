"""No ``mailto:`` links: the book has no email address, only text that docutils takes for one.

reStructuredText turns any word of the form ``name@host`` into an email link, with no setting
to turn it off, and the API pages' docstrings are reStructuredText: "exact pass@256" became a
link to ``mailto:pass@256``. This extension puts such links back as the text they were made
from, on every page, as soon as it is read. A link whose text differs from its address (one an
author wrote on purpose) is kept.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform

EMAIL_SCHEME = "mailto:"


def unlink_recognised_addresses(document: nodes.Node) -> int:
    """Replace each ``mailto:`` link whose text is its own address by that text; returns how many."""
    links = [
        link for link in document.findall(nodes.reference)
        if link.get("refuri", "") == EMAIL_SCHEME + link.astext()
    ]
    for link in links:
        link.replace_self(nodes.Text(link.astext()))
    return len(links)


class UnlinkRecognisedAddresses(SphinxTransform):
    """Runs :func:`unlink_recognised_addresses` on every page read."""

    default_priority = 500

    def apply(self, **kwargs: Any) -> None:
        unlink_recognised_addresses(self.document)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(UnlinkRecognisedAddresses)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
