"""Every numbered chapter ends with exercises whose folded solutions run and assert their answers.

The convention (issue 56, in the manner of QuantEcon's lectures): each numbered chapter, with the
section pages listed under it, holds at least three ``exercise`` directives in a closing section
``## Exercises``, labelled ``ex-<chapter>-<n>`` (the chapter's one word, ``n`` counting from 1 in
reading order, as Sphinx numbers them). Each has a gated solution (``solution-start`` and
``solution-end`` with its label, ``:class: dropdown``, so it stays folded and can hold code
cells) after it, with at least one code cell whose ``assert`` checks the answer (one that can
fail: the forms ``tests/test_check_cells.py`` rejects in the check cells are rejected here too),
so a chapter whose answer stops holding fails under nbval. Shown code lines fit 79 characters.

The static tests read the MyST sources with myst-nb's reader. The last test builds a small
project with ``sphinx_exercise`` and the book's ``numbered_outputs`` extension under nitpicky
mode: the exercises are numbered within their chapter, a reference to one resolves, the solution
is a dropdown, and a table inside a (folded) solution takes no number, so the tables on view are
numbered without a gap.
"""

from __future__ import annotations

import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
import yaml
from sphinx.application import Sphinx
from sphinx.util.docutils import docutils_namespace, patch_docutils

from covpo.table import Table
from tests.conftest import REPOSITORY, read_chapter
from tests.small_sphinx_book import EXTENSIONS
from tests.test_check_cells import assertions_that_cannot_fail, code_sources, fixed_names

TOC = REPOSITORY / "_toc.yml"
FEWEST = 3
"""Exercises each numbered chapter holds at least."""
LINE_LENGTH = 79
"""The longest shown code line of a solution."""

DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<name>exercise|exercise-start|solution-start|solution-end)\}(?P<argument>[^\n]*)\n"
    r"(?P<options>(?:[ \t]*:[\w-]+:[^\n]*\n)*)",
    flags=re.M,
)
LABEL = re.compile(r"^[ \t]*:label:[ \t]*(\S+)", flags=re.M)
CLASS = re.compile(r"^[ \t]*:class:[ \t]*([^\n]*)", flags=re.M)
HEADING = re.compile(r"^(#{1,6})[ \t]+(.*)$", flags=re.M)


@dataclass
class Solution:
    """A gated solution: its label, its classes and the sources of its code cells."""

    label: str
    classes: list[str]
    code: list[str] = field(default_factory=list)


@dataclass
class Page:
    """One chapter file's exercises (labels in order), solutions, and whether they close the page."""

    entry: str
    exercises: list[str] = field(default_factory=list)
    solutions: list[Solution] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def numbered_chapters(toc_path: Path = TOC) -> dict[str, list[str]]:
    """Each numbered chapter of the table of contents (its one word) with its files: itself, then its sections."""
    toc = yaml.safe_load(toc_path.read_text())
    chapters: dict[str, list[str]] = {}

    def files(entry: dict) -> list[str]:
        return [entry["file"], *(name for section in entry.get("sections", []) for name in files(section))]

    for part in toc.get("parts", []):
        if part.get("numbered"):
            for entry in part.get("chapters", []):
                chapters[Path(entry["file"]).name] = files(entry)
    return chapters


def read_page(entry: str) -> Page:
    """The exercises and gated solutions of ``book/<entry>.md``, in reading order.

    A code cell belongs to the solution whose ``solution-start`` came before it and whose
    ``solution-end`` has not; a problem is recorded where the structure breaks the convention.
    """
    page = Page(entry)
    notebook = read_chapter(REPOSITORY / f"{entry}.md")
    sources = iter(code_sources(notebook))
    open_solution: Solution | None = None
    exercises_heading_seen = False
    for cell in notebook.cells:
        if cell.cell_type == "code":
            source = next(sources)
            if open_solution is not None:
                open_solution.code.append(source)
            continue
        if cell.cell_type != "markdown":
            continue
        events = [(m.start(), "heading", m) for m in HEADING.finditer(cell.source)]
        events += [(m.start(), m["name"], m) for m in DIRECTIVE.finditer(cell.source)]
        for _, kind, match in sorted(events, key=lambda event: event[0]):
            if kind == "heading":
                level, title = len(match[1]), match[2].strip()
                if level == 2 and title == "Exercises":
                    exercises_heading_seen = True
                elif level <= 2 and exercises_heading_seen:
                    page.problems.append(f"the section '{title}' comes after '## Exercises', which must close the page")
            elif kind in ("exercise", "exercise-start"):
                label = LABEL.search(match["options"])
                if label is None:
                    page.problems.append(f"an exercise without a :label: ('{match['argument'].strip()}')")
                    continue
                page.exercises.append(label[1])
                if not exercises_heading_seen:
                    page.problems.append(f"{label[1]} comes before the '## Exercises' section")
                if open_solution is not None:
                    page.problems.append(f"{label[1]} starts inside the solution of {open_solution.label}")
            elif kind == "solution-start":
                if open_solution is not None:
                    page.problems.append(f"the solution of {open_solution.label} has no solution-end")
                classes = CLASS.search(match["options"])
                open_solution = Solution(match["argument"].strip(), classes[1].split() if classes else [])
                page.solutions.append(open_solution)
            elif open_solution is None:
                page.problems.append("a solution-end without its solution-start")
            else:
                open_solution = None
    if open_solution is not None:
        page.problems.append(f"the solution of {open_solution.label} has no solution-end")
    return page


CHAPTERS = numbered_chapters()


def test_the_numbered_chapters_are_found():
    assert len(CHAPTERS) >= 8 and "ppo" in CHAPTERS and "book/ppo_details" in CHAPTERS["ppo"]


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_each_numbered_chapter_has_three_exercises_with_asserting_folded_solutions(chapter):
    pages = [read_page(entry) for entry in CHAPTERS[chapter]]
    problems = [f"{page.entry}.md: {problem}" for page in pages for problem in page.problems]
    labels = [label for page in pages for label in page.exercises]
    assert len(labels) >= FEWEST, f"chapter '{chapter}' has {len(labels)} exercises, fewer than {FEWEST}"
    expected = [f"ex-{chapter}-{n}" for n in range(1, len(labels) + 1)]
    assert labels == expected, f"chapter '{chapter}': exercise labels {labels}, expected {expected} in reading order"
    fixed = fixed_names([source for page in pages for source in code_sources(read_chapter(REPOSITORY / f"{page.entry}.md"))])
    for page in pages:
        solved = [solution.label for solution in page.solutions]
        if solved != page.exercises:
            problems.append(f"{page.entry}.md: solutions {solved} do not follow the exercises {page.exercises} one to one")
        for solution in page.solutions:
            if "dropdown" not in solution.classes:
                problems.append(f"{page.entry}.md: the solution of {solution.label} is not folded (':class: dropdown')")
            asserting = [
                source for source in solution.code
                if "assert" in source and not assertions_that_cannot_fail(source, fixed)
            ]
            if not asserting:
                problems.append(f"{page.entry}.md: the solution of {solution.label} has no code cell asserting its answer")
            for source in solution.code:
                problems += [
                    f"{page.entry}.md: a code line of the solution of {solution.label} is longer than {LINE_LENGTH}: {line!r}"
                    for line in source.splitlines() if len(line) > LINE_LENGTH
                ]
                problems += [
                    f"{page.entry}.md: the solution of {solution.label} asserts on fixed values: {found}"
                    for found in assertions_that_cannot_fail(source, fixed)
                ]
    assert not problems, "\n".join(problems)


def test_exercise_labels_are_unique_across_the_book():
    labels = [label for chapter in CHAPTERS.values() for entry in chapter for label in read_page(entry).exercises]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    assert not repeated, f"exercise labels used twice: {repeated}"


def test_the_reader_finds_a_solution_without_an_assert_and_a_misplaced_exercise(tmp_path, monkeypatch):
    """The test above can fail: a page with an exercise before its section and a solution that asserts nothing."""
    text = (
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n# Page\n\n"
        "```{exercise} Early\n:label: ex-page-1\n\nDo it.\n```\n\n## Exercises\n\n"
        "````{solution-start} ex-page-1\n:class: dropdown\n````\n\n"
        "```{code-cell} ipython3\nanswer = 2\n```\n\n````{solution-end}\n````\n\n"
        "```{exercise} Later\n:label: ex-page-2\n\nDo more.\n```\n\n"
        "````{solution-start} ex-page-2\n````\n\n```{code-cell} ipython3\nassert 1 < 2\n```\n\n"
        "````{solution-end}\n````\n"
    )
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "page.md").write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "REPOSITORY", tmp_path)
    page = read_page("book/page")
    assert page.exercises == ["ex-page-1", "ex-page-2"]
    assert page.problems == ["ex-page-1 comes before the '## Exercises' section"]
    assert [solution.label for solution in page.solutions] == ["ex-page-1", "ex-page-2"]
    assert page.solutions[0].classes == ["dropdown"] and page.solutions[1].classes == []
    assert page.solutions[0].code == ["answer = 2"]
    assert assertions_that_cannot_fail(page.solutions[1].code[0], frozenset()) == ["assert 1 < 2"]


def test_the_book_enables_the_exercise_extension_and_pins_it():
    config = yaml.safe_load((REPOSITORY / "_config.yml").read_text())
    assert "sphinx_exercise" in config["sphinx"]["extra_extensions"]
    assert "sphinx-exercise==1.2.1" in (REPOSITORY / "requirements.txt").read_text().splitlines()


def _table_cell(caption: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("table", execution_count=1)
    table = Table(("method", "cost"), (("APMD", 40.0),), caption=caption)
    cell.outputs = [nbformat.v4.new_output("display_data", {"text/html": table._repr_html_(), "text/plain": str(table)})]
    return cell


def test_exercises_number_within_the_chapter_and_a_folded_solution_takes_no_table_number(tmp_path, monkeypatch):
    """A small book: a table on view, an exercise whose folded solution displays a table, another table on view."""
    source = tmp_path / "source"
    source.mkdir()
    markdown = nbformat.v4.new_markdown_cell
    cells = [
        markdown("# Chapter\n\nSee {numref}`ex-mirror_descent-1` and {ref}`ex-mirror_descent-2`.\n"),
        _table_cell("First on view"),
        markdown(
            "## Exercises\n\n```{exercise} A derivation\n:label: ex-mirror_descent-1\n\nDerive it.\n```\n\n"
            "````{solution-start} ex-mirror_descent-1\n:class: dropdown\n````\n\nThe reasoning.\n"
        ),
        _table_cell("Inside the solution"),
        markdown(
            "````{solution-end}\n````\n\n```{exercise} A prediction\n:label: ex-mirror_descent-2\n\nPredict it.\n```\n"
        ),
        _table_cell("Second on view"),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, source / "chapter.ipynb")
    (source / "index.rst").write_text("Book\n====\n\n.. toctree::\n   :numbered:\n\n   chapter\n")
    (source / "conf.py").write_text(
        "extensions = ['myst_nb', 'sphinx_exercise', 'numbered_outputs']\nnumfig = True\nnitpicky = True\n"
        "nb_execution_mode = 'off'\nhtml_theme = 'sphinx_book_theme'\nmyst_enable_extensions = ['colon_fence']\n"
    )
    warnings = io.StringIO()
    monkeypatch.syspath_prepend(str(EXTENSIONS))
    try:
        with patch_docutils(str(source)), docutils_namespace():
            app = Sphinx(str(source), str(source), str(tmp_path / "html"), str(tmp_path / "doctrees"), "html",
                         status=None, warning=warnings, freshenv=True)
            app.build()
    finally:
        sys.modules.pop("numbered_outputs", None)
    assert warnings.getvalue() == ""
    page = (tmp_path / "html" / "chapter.html").read_text()
    assert re.findall(r'<span class="caption-number">(Table [\d.]+) </span>', page) == ["Table 1.1", "Table 1.2"]
    assert "<caption>Inside the solution</caption>" in page
    assert re.findall(r'<span class="caption-number">(Exercise [\d.]+) </span>', page) == ["Exercise 1.1", "Exercise 1.2"]
    assert page.count('<span class="std std-numref">Exercise 1.1</span>') == 1
    assert re.search(r'<a class="reference internal" href="#ex-mirror_descent-2">', page)
    assert re.search(r'<div class="solution dropdown admonition"', page)
