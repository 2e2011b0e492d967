"""The result tables and widget stand-ins that chapter cells display are numbered, as tables and figures.

A cell that displays a :class:`covpo.table.Table` or a widget (:mod:`covpo.plots.widgets`) leaves
HTML in its output: a ``div.covpo-table`` holding a ``<table>`` with its ``<caption>``, or a
``div.covpo-standin`` with its controls and frames. Sphinx numbers only the figures and tables
of the document tree, not HTML, so such outputs had no number a reader could refer to. When a
page has been read, this extension wraps each of those outputs in a node that Sphinx numbers
with the page's tables (:class:`numbered_table`, "Table 6.1") or its figures
(:class:`numbered_widget`, "Fig. 6.3"), in order of appearance, so the counters run on
through the page's own figures and tables. A table is numbered inside its own caption; a
stand-in becomes a figure whose caption is the widget's title. A table without a caption is
left unnumbered, as Sphinx leaves an uncaptioned figure.

Table numbers run as a reader sees them: a table folded away (the output of a cell whose output
is hidden, or in a dropdown) is left unnumbered, so the numbers of the tables on view run on
without a gap. A widget stand-in keeps its figure number wherever it is.
"""

from __future__ import annotations

import html
import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.writers.html5 import HTML5Translator

TABLE_MARK = 'class="covpo-table"'
STANDIN_MARK = 'class="covpo-standin"'
CAPTION = re.compile(r"<caption>(.*?)</caption>", flags=re.S)
STANDIN_TITLE = re.compile(r'<div class="covpo-standin"[^>]*\sdata-title="([^"]*)"')
FOLDING_HIDE_MODES = ("all", "output", "input+output")
"""myst-nb's ``hide_mode`` of a cell whose output is folded (tags ``hide-cell``, ``hide-output``)."""


class numbered_table(nodes.General, nodes.Element):
    """A displayed :class:`covpo.table.Table`, numbered with the page's tables; ``caption`` is its caption text."""


class numbered_widget(nodes.General, nodes.Element):
    """A displayed widget stand-in, numbered with the page's figures; ``caption`` is the widget's title."""


def _html_output(bundle: nodes.Element) -> str:
    """The ``text/html`` data of one of myst-nb's output bundles ('' if it has none)."""
    for container in bundle.children:
        if isinstance(container, nodes.Element) and container.get("mime_type") == "text/html":
            return container.astext()
    return ""


def is_folded(node: nodes.Node) -> bool:
    """Whether a reader sees the node only after opening a fold: a hidden cell output or a dropdown."""
    for ancestor in ancestors(node):
        if ancestor.get("nb_element") == "cell_code" and ancestor.get("hide_mode") in FOLDING_HIDE_MODES:
            return True
        if any("dropdown" in name for name in ancestor.get("classes", [])):
            return True
    return False


def ancestors(node: nodes.Node) -> list[nodes.Element]:
    """The node's parent, its parent's parent, and so on up to the document."""
    found = []
    while node.parent is not None:
        node = node.parent
        found.append(node)
    return found


def _free_id(document: nodes.document, prefix: str) -> str:
    count = 1
    while f"{prefix}-{count}" in document.ids:
        count += 1
    return f"{prefix}-{count}"


def number_displayed_results(app: Sphinx, document: nodes.document) -> None:
    """Wrap every output bundle showing a result table on view or a widget stand-in in its numbered node."""
    bundles = [node for node in document.findall(nodes.container) if node.get("nb_element") == "mime_bundle"]
    for bundle in bundles:
        output = _html_output(bundle)
        if TABLE_MARK in output and is_folded(bundle):
            continue
        if TABLE_MARK in output:
            caption = CAPTION.search(output)
            wrapper, prefix = numbered_table(caption=html.unescape(caption.group(1)) if caption else ""), "result-table"
        elif STANDIN_MARK in output:
            title = STANDIN_TITLE.search(output)
            wrapper, prefix = numbered_widget(caption=html.unescape(title.group(1)) if title else ""), "widget"
        else:
            continue
        wrapper["ids"] = [_free_id(document, prefix)]
        document.ids[wrapper["ids"][0]] = wrapper
        bundle.replace_self(wrapper)
        wrapper.append(bundle)


def caption_of(node: nodes.Element) -> str:
    """The text Sphinx numbers the node by (an empty caption leaves it unnumbered)."""
    return node["caption"]


def _fignumber_html(translator: HTML5Translator, node: nodes.Element) -> str:
    """The ``<span class="caption-number">`` Sphinx writes for ``node`` ('' where it has no number)."""
    start = len(translator.body)
    translator.add_fignumber(node)
    number = "".join(translator.body[start:])
    del translator.body[start:]
    return number


def visit_numbered_table(translator: HTML5Translator, node: numbered_table) -> None:
    translator.body.append(translator.starttag(node, "div", CLASS="covpo-numbered-table"))
    node["body_start"] = len(translator.body)


def depart_numbered_table(translator: HTML5Translator, node: numbered_table) -> None:
    start = node["body_start"]
    written = "".join(translator.body[start:])
    number = _fignumber_html(translator, node)
    translator.body[start:] = [written.replace("<caption>", "<caption>" + number, 1), "</div>\n"]


def visit_numbered_widget(translator: HTML5Translator, node: numbered_widget) -> None:
    translator.body.append(translator.starttag(node, "figure", CLASS="covpo-widget-figure"))


def depart_numbered_widget(translator: HTML5Translator, node: numbered_widget) -> None:
    number = _fignumber_html(translator, node)
    caption = f'<span class="caption-text">{html.escape(node["caption"])}</span>' if node["caption"] else ""
    translator.body.append(f"<figcaption>\n<p>{number}{caption}</p>\n</figcaption>\n</figure>\n")


def _visit_contents_only(translator: Any, node: nodes.Element) -> None:
    """Builders other than HTML show the output itself, unnumbered."""


def setup(app: Sphinx) -> dict[str, Any]:
    others = {name: (_visit_contents_only, _visit_contents_only) for name in ("latex", "text", "man", "texinfo")}
    app.add_enumerable_node(
        numbered_table, "table", caption_of, html=(visit_numbered_table, depart_numbered_table), **others
    )
    app.add_enumerable_node(
        numbered_widget, "figure", caption_of, html=(visit_numbered_widget, depart_numbered_widget), **others
    )
    app.connect("doctree-read", number_displayed_results)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
