"""How long the chapters' sentences are: a reading measure for the prose passes.

For each chapter given (default: every page in ``_toc.yml`` outside the API reference) it prints
the number of sentences of its prose, their words, the median and mean sentence length in words
and how many sentences run over 40 words. Prose is the markdown outside code cells, plain code
blocks, display math, figure and table directives, directive options, headings and tables; a
role such as ``{glue:text}`key```, inline code and inline math count as one word each. A
sentence ends at ``.``, ``!`` or ``?`` before a capital letter, and each bullet is a sentence of
its own; pieces of fewer than three words are not counted. Run from the repository root::

    python scripts/sentence_lengths.py                  # every chapter
    python scripts/sentence_lengths.py book/ppo.md      # one
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

import yaml

REPOSITORY = Path(__file__).resolve().parent.parent
# Directives whose body is not prose: code, math, figures and tables.
NOT_PROSE = ("{code-cell}", "{math}", "{glue:figure}", "{glue:math}", "{list-table}", "{csv-table}", "{raw}",
             "{bibliography}", "{tableofcontents}")
LONG_SENTENCE_WORDS = 40


def prose(text: str) -> str:
    """The chapter's prose, one paragraph per blank-line-separated block, inline markup replaced by ``X``."""
    text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    kept: list[str] = []
    fences: list[tuple[str, bool]] = []
    in_math = False
    for line in text.splitlines():
        stripped = line.strip()
        fence = re.match(r"^(`{3,}|:{3,})(.*)$", stripped)
        if fence:
            marker, rest = fence.group(1), fence.group(2).strip()
            if fences and marker == fences[-1][0] and not rest:
                fences.pop()
            else:
                skipped = (marker.startswith("`") and not rest.startswith("{")) or rest.startswith(NOT_PROSE)
                fences.append((marker, skipped or bool(fences and fences[-1][1])))
            kept.append("")
            continue
        if fences and fences[-1][1]:
            continue
        if stripped.startswith("$$"):
            in_math = in_math != (not (stripped.endswith("$$") and len(stripped) > 2))
            kept.append("")
            continue
        if in_math or re.match(r"^(:[\w-]+:|#|\||\+\+\+|\(.*\)=$)", stripped):
            kept.append("")
            continue
        kept.append(stripped)
    joined = "\n".join(kept)
    for pattern in (r"\{[\w:-]+\}`[^`]*`", r"`[^`]*`", r"\$[^$]*\$"):
        joined = re.sub(pattern, "X", joined)
    return joined


def sentence_lengths(text: str) -> list[int]:
    """The length in words of every sentence of ``text``'s prose."""
    lengths = []
    for block in re.split(r"\n\s*\n|\n\s*[-*] |\n\s*\d+\. ", prose(text)):
        block = re.sub(r"^\s*([-*]|\d+\.)\s+", "", block.replace("\n", " ")).strip()
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(*])", block):
            words = [word for word in sentence.split() if re.search(r"\w", word)]
            if len(words) >= 3:
                lengths.append(len(words))
    return lengths


def chapters() -> list[Path]:
    """Every page of the table of contents outside the API reference."""
    toc = yaml.safe_load((REPOSITORY / "_toc.yml").read_text())
    found = [toc["root"]]
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            found += [chapter["file"], *(section["file"] for section in chapter.get("sections", []))]
    return [REPOSITORY / f"{page}.md" for page in found if not page.startswith("book/api/")]


def main(paths: list[str]) -> None:
    print(f"{'page':22s} {'sentences':>9s} {'words':>6s} {'median':>6s} {'mean':>5s} {'over 40':>7s}")
    for path in [Path(p) for p in paths] or chapters():
        lengths = sentence_lengths(path.read_text())
        if not lengths:
            continue
        print(f"{path.stem:22s} {len(lengths):9d} {sum(lengths):6d} {statistics.median(lengths):6.1f} "
              f"{statistics.mean(lengths):5.1f} {sum(n > LONG_SENTENCE_WORDS for n in lengths):7d}")


if __name__ == "__main__":
    main(sys.argv[1:])
