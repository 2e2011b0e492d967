"""Each figure's image carries alt text that says what the figure shows: its caption's opening sentences.

A glued figure (``glue:figure``) or any image without an ``alt`` option is written with its file
path as alt text (docutils' default), so a screen reader, or a reader whose image did not load,
got "../_images/0a1b...png". This extension gives every image inside a captioned figure that has
no alt text of its own the opening of the figure's caption, with its math in plain letters: its
first sentence, and the next ones while the text is shorter than :data:`MIN_DESCRIPTION`
characters. The chapters' captions open with what the figure plots ("Token sequences. Top: the
base-10 logarithm of ..."), so the opening is the description.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

from numbered_outputs import ancestors

SENTENCE_END = re.compile(r"(?<![A-Z]\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\bFig\.)(?<=[.!?])\s+(?=[A-Z])")
"""Where one sentence of a caption ends and the next begins (not after an initial or "e.g.")."""
TEX_COMMAND = re.compile(r"\\([A-Za-z]+)")
MIN_DESCRIPTION = 80
"""The fewest characters of a description: a shorter first sentence ("Token sequences.") takes the next."""
TEX_SYMBOLS = {
    "ge": "≥", "geq": "≥", "le": "≤", "leq": "≤", "approx": "≈", "times": "×", "cdot": "·",
    "infty": "∞", "star": "*", "propto": "∝", "to": "→", "ldots": "…", "mid": "|", "Vert": "‖",
    "lambda": "λ", "Lambda": "Λ", "varepsilon": "ε", "vartheta": "ϑ", "varphi": "φ", "varrho": "ϱ",
}
"""TeX commands written as a symbol; other Greek letters by their Unicode names, other commands as their name."""
TEX_SPACING = re.compile(r"\\[,;:! ]|[{}]|\\(?:mathrm|mathbb|text|mathbf|mathcal|operatorname|left|right)\b")


def plain_math(latex: str) -> str:
    """TeX as letters a reader can hear: ``\\beta`` is β, ``\\ge`` is ≥, ``\\mathrm{cov}`` is cov, braces go."""
    text = TEX_SPACING.sub("", latex)

    def letter(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in TEX_SYMBOLS:
            return TEX_SYMBOLS[name]
        case = "CAPITAL" if name[0].isupper() else "SMALL"
        try:
            return unicodedata.lookup(f"GREEK {case} LETTER {name.upper()}")
        except KeyError:
            return name

    return " ".join(TEX_COMMAND.sub(letter, text).split())


def caption_text(caption: nodes.Element) -> str:
    """The caption as plain text, its math written with :func:`plain_math`."""
    parts = []
    for node in caption.findall(lambda n: isinstance(n, (nodes.Text, nodes.math))):
        if isinstance(node, nodes.math):
            parts.append(plain_math(node.astext()))
        elif not any(isinstance(parent, nodes.math) for parent in ancestors(node)):
            parts.append(str(node))
    return " ".join("".join(parts).split())


def opening(text: str, min_chars: int = MIN_DESCRIPTION) -> str:
    """The text's first sentence, and the next ones while shorter than ``min_chars`` (the whole text at most)."""
    sentences = SENTENCE_END.split(text.strip())
    taken = sentences[0]
    for sentence in sentences[1:]:
        if len(taken) >= min_chars:
            break
        taken = f"{taken} {sentence}"
    return taken


def describe_figures(document: nodes.Node) -> int:
    """Give each image of a captioned figure that has no alt text its caption's opening; returns how many."""
    described = 0
    for figure in document.findall(nodes.figure):
        captions = [child for child in figure.children if isinstance(child, nodes.caption)]
        if not captions:
            continue
        description = opening(caption_text(captions[0]))
        for image in figure.findall(nodes.image):
            if not image.get("alt") and description:
                image["alt"] = description
                described += 1
    return described


class DescribeFigures(SphinxPostTransform):
    """Runs :func:`describe_figures` once myst-nb has chosen each output's image (priority 4)."""

    default_priority = 20

    def run(self, **kwargs: Any) -> None:
        describe_figures(self.document)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(DescribeFigures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
