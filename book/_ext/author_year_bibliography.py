"""Bibliography labels in author-year form, to match the author-year citations in the text.

sphinxcontrib-bibtex labels entries with pybtex's label styles (alpha by default, so a reader
sees "[HJK+26]" in the list while the text says "Huang et al. (2026)"). This Sphinx extension
registers a pybtex formatting style, ``author_year``, that labels each entry "Huang et al.,
2026" and sorts the list by author and year; ``_config.yml`` selects it with
``bibtex_default_style``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from pybtex.database import Entry
from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsortedStyle
from pybtex.style.labels import BaseLabelStyle


def _surname(person: object) -> str:
    return " ".join(person.prelast_names + person.last_names)


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
                names = entry.fields.get("organization", entry.key)
            elif len(people) == 1:
                names = _surname(people[0])
            elif len(people) == 2:
                names = f"{_surname(people[0])} and {_surname(people[1])}"
            else:
                names = f"{_surname(people[0])} et al."
            yield f"{names}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearStyle(UnsortedStyle):
    """pybtex's ``unsrt`` entries, labelled by :class:`AuthorYearLabelStyle`, sorted by author and year."""

    default_label_style = AuthorYearLabelStyle
    default_sorting_style = "author_year_title"


register_plugin("pybtex.style.labels", "author_year", AuthorYearLabelStyle)
register_plugin("pybtex.style.formatting", "author_year", AuthorYearStyle)


def setup(app: object) -> dict[str, bool]:
    return {"parallel_read_safe": True, "parallel_write_safe": True}
