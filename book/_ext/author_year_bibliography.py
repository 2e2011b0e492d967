"""Bibliography labels in author-year form, and citations in the text that use the same labels.

sphinxcontrib-bibtex labels entries with pybtex's label styles (alpha by default, so a reader
sees "[HJK+26]" in the list while the text says "Huang et al. (2026)"). This Sphinx extension
registers a pybtex formatting style, ``author_year``, that labels each entry "Huang et al.,
2026" and sorts the list by author and year; ``_config.yml`` selects it with
``bibtex_default_style``. Names are labelled as a reader sees them: a corporate author kept
whole with braces (``{Kimi Team}``) or a name with a TeX accent is labelled in plain text.

Two entries that share a label ("Kimi Team, 2025") are told apart by a letter after the year,
and the citations in the text must carry the same letter: sphinxcontrib-bibtex's own
``author_year`` reference style writes author and year afresh, so a citation of both entries
read "[Kimi Team, 2025, Kimi Team, 2025]". The reference style registered here,
``author_year_labels``, cites by the bibliography's label ("[Kimi Team, 2025a; Kimi Team,
2025b]", "Huang et al. [2026]"); ``_config.yml`` selects it with ``bibtex_reference_style``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from pybtex.database import Entry
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsortedStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle as AuthorYearTitleSorting
from pybtex.style.template import Node, join, node
from sphinxcontrib.bibtex.plugin import register_plugin as register_reference_style
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
    BasicAuthorYearParentheticalReferenceStyle,
    BasicAuthorYearTextualReferenceStyle,
)
from sphinxcontrib.bibtex.style.template import entry_label, join2, post_text, pre_text, reference

TEX_MARKUP = re.compile(r"[{}\\~]")
"""What makes a BibTeX string differ from its text (pybtex reads TeX slowly, so plain strings skip it)."""
LABEL_YEAR_SEPARATOR = ", "
"""What separates the names from the year (and its letter) in a label."""


@lru_cache(maxsize=None)
def plain_text(latex: str) -> str:
    """A BibTeX name or field as a reader sees it: braces dropped, TeX accents as letters."""
    if not TEX_MARKUP.search(latex):
        return latex
    return Text.from_latex(latex).render_as("text")


def _surname(person: object) -> str:
    return plain_text(" ".join(person.prelast_names + person.last_names))


def _is_others(person: object) -> bool:
    """BibTeX's ``and others``, which ends an author list that is not complete."""
    return _surname(person) == "others" and not person.first_names


class AuthorYearLabelStyle(BaseLabelStyle):
    """Labels "Surname, year", "Surname and Surname, year" or "Surname et al., year".

    Entries that would share a label get "a", "b", ... after the year, in list order.
    """

    def format_labels(self, sorted_entries: Iterable[Entry]) -> Iterator[str]:
        labels = list(self._plain_labels(sorted_entries))
        counts = Counter(labels)
        seen: Counter[str] = Counter()
        for label in labels:
            if counts[label] > 1:
                seen[label] += 1
                label = f"{label}{'abcdefghijklmnopqrstuvwxyz'[seen[label] - 1]}"
            yield label

    def _plain_labels(self, sorted_entries: Iterable[Entry]) -> Iterator[str]:
        for entry in sorted_entries:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            if not people:
                names = plain_text(entry.fields.get("organization", entry.key))
            elif len(people) == 1:
                names = _surname(people[0])
            elif len(people) == 2 and not _is_others(people[1]):
                names = f"{_surname(people[0])} and {_surname(people[1])}"
            else:
                names = f"{_surname(people[0])} et al."
            yield f"{names}{LABEL_YEAR_SEPARATOR}{entry.fields.get('year', 'n.d.')}"


class PlainAuthorYearTitleSorting(AuthorYearTitleSorting):
    """pybtex's author-year-title order, by names and titles as a reader sees them.

    ``{Kimi Team}`` sorts under K, and titles sort regardless of case ("Kimi k1.5" before "Kimi K2").
    """

    def sorting_key(self, entry: Entry) -> tuple[str, str, str]:
        author, year, title = super().sorting_key(entry)
        return author, year, plain_text(title).lower()

    def person_key(self, person: object) -> str:
        return plain_text(super().person_key(person)).lower()


class AuthorYearStyle(UnsortedStyle):
    """pybtex's ``unsrt`` entries, labelled by :class:`AuthorYearLabelStyle`, sorted by author and year."""

    default_label_style = AuthorYearLabelStyle
    default_sorting_style = PlainAuthorYearTitleSorting


@node
def label_year(children: list, data: dict) -> Text:
    """The year of an entry's label, with the letter that tells it from another entry's ("2025a")."""
    assert not children
    return Text(data["formatted_entry"].label.rsplit(LABEL_YEAR_SEPARATOR, 1)[-1])


@dataclass
class LabelParentheticalReferenceStyle(BasicAuthorYearParentheticalReferenceStyle):
    """``{cite}`` and ``{cite:p}``: the bibliography's labels in brackets, "[Kimi Team, 2025a; Kimi Team, 2025b]"."""

    def inner(self, role_name: str) -> Node:
        return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[pre_text, reference[entry_label], post_text]


@dataclass
class LabelYearTextualReferenceStyle(BasicAuthorYearTextualReferenceStyle):
    """``{cite:t}``: the authors, then the label's year and letter in brackets, "Kimi Team [2025a]"."""

    def inner(self, role_name: str) -> Node:
        return join(sep=self.text_reference_sep)[
            self.person.author_or_editor_or_title(full="s" in role_name),
            join[
                self.bracket.left,
                join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[pre_text, reference[label_year], post_text],
                self.bracket.right,
            ],
        ]


@dataclass
class AuthorYearLabelReferenceStyle(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's author-year citations, written with the labels of :class:`AuthorYearLabelStyle`.

    Several references in one parenthetical citation are separated by semicolons, since each
    label holds a comma.
    """

    bracket_parenthetical: BracketStyle = field(default_factory=lambda: BracketStyle(sep="; "))

    def __post_init__(self) -> None:
        super().__post_init__()
        labelled = [
            LabelParentheticalReferenceStyle(
                bracket=self.bracket_parenthetical, person=self.person, author_year_sep=self.author_year_sep,
                pre_text_sep=self.pre_text_sep, post_text_sep=self.post_text_sep,
            ),
            LabelYearTextualReferenceStyle(
                bracket=self.bracket_textual, person=self.person, text_reference_sep=self.text_reference_sep,
                pre_text_sep=self.pre_text_sep, post_text_sep=self.post_text_sep,
            ),
        ]
        self.styles[:2] = labelled
        self.role_style.update((name, style) for style in labelled for name in style.role_names())


register_plugin("pybtex.style.labels", "author_year", AuthorYearLabelStyle)
register_plugin("pybtex.style.formatting", "author_year", AuthorYearStyle)
register_reference_style("sphinxcontrib.bibtex.style.referencing", "author_year_labels", AuthorYearLabelReferenceStyle)


def setup(app: object) -> dict[str, bool]:
    return {"parallel_read_safe": True, "parallel_write_safe": True}
