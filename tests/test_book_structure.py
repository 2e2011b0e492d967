"""The book's layout: every chapter is in the table of contents, and nothing breaks the build."""

from __future__ import annotations

import html
import re
from pathlib import Path

import jupytext
import pytest
import yaml

from tests.conftest import REPOSITORY, chapter_files, has_code, read_chapter

TOC = REPOSITORY / "_toc.yml"
# The package's reference: book/api/index.md, the quickstart, and one page per group of modules.
API = REPOSITORY / "book" / "api"


def test_every_chapter_file_is_listed_in_the_toc():
    listed = {REPOSITORY / f"{entry}.md" for entry in chapter_files(TOC)}
    on_disk = set((REPOSITORY / "book").glob("*.md")) | set(API.glob("*.md"))
    assert on_disk == listed


def test_chapters_are_myst_notebooks_without_paired_ipynb():
    for entry in chapter_files(TOC):
        path = REPOSITORY / f"{entry}.md"
        assert not path.with_suffix(".ipynb").exists(), f"{path.name} has a paired .ipynb, which breaks the build"
        notebook = jupytext.read(path)
        if has_code(read_chapter(path)):
            assert notebook.metadata.get("kernelspec", {}).get("name") == "python3", f"{path.name} needs a python3 kernelspec"
            hidden = [c for c in notebook.cells if {"remove-cell", "hide-cell"} & set(c.metadata.get("tags", []))]
            assert hidden, f"{path.name} runs code but has no hidden assertion cells"
            checks = ("assert", "check_stated_settings(")
            assert all(any(check in c.source for check in checks) for c in hidden), f"{path.name} has a hidden cell without assertions"
            for cell in hidden:
                if "hide-cell" in cell.metadata.get("tags", []):
                    label = cell.metadata.get("mystnb", {}).get("code_prompt_show", "")
                    assert label.startswith("Check: "), f"{path.name}: a collapsed check needs a 'Check: ...' label"


def test_no_root_static_folder_and_hidden_folders_are_excluded():
    assert not (REPOSITORY / "_static").exists()
    config = yaml.safe_load((REPOSITORY / "_config.yml").read_text())
    assert config["only_build_toc_files"] is True
    assert ".*" in config["exclude_patterns"] and "**/.*" in config["exclude_patterns"]
    assert config["execute"]["raise_on_error"] is True
    assert config["sphinx"]["config"]["nb_execution_raise_on_error"] is True


def test_toc_chapters_are_collected_by_the_test_run(request):
    """When the run covers the tests folder, every executable chapter in the toc is among its items."""
    covered = {Path(arg.split("::")[0]).resolve() for arg in request.config.args}
    ignored = {Path(path).absolute() for path in request.config.getoption("ignore") or ()}
    toc = REPOSITORY / "tests" / "_toc.yml"
    if toc in ignored or not covered & {REPOSITORY, REPOSITORY / "tests", toc}:
        pytest.skip("this run was narrowed to files that do not include the chapters")
    collected = {item.path.stem for item in request.session.items if item.path.suffix == ".ipynb"}
    executable = {Path(entry).name for entry in chapter_files(TOC) if has_code(read_chapter(REPOSITORY / f"{entry}.md"))}
    assert executable, "the table of contents lists no executable chapter"
    assert executable <= collected, f"chapters not executed: {sorted(executable - collected)}"


def bash_blocks(path: Path) -> list[str]:
    """The ``bash`` code blocks of a Markdown file, in order."""
    return re.findall(r"```bash\n(.*?)\n```", path.read_text(), flags=re.S)


def test_front_page_gives_the_readme_commands():
    readme = bash_blocks(REPOSITORY / "README.md")
    front = bash_blocks(REPOSITORY / "book" / "intro.md")
    assert front == readme[:2], "book/intro.md must show the README's build and test commands, unchanged"


# A newcomer reads the README's first screen: what the book is, the two commands, what to expect.
README_FIRST_LINES = 40


def test_readme_gives_both_commands_in_its_first_lines():
    first = "\n".join((REPOSITORY / "README.md").read_text().splitlines()[:README_FIRST_LINES])
    assert bash_blocks(REPOSITORY / "README.md")[:2] == re.findall(r"```bash\n(.*?)\n```", first, flags=re.S), (
        f"the README's build and test commands must be its first two bash blocks, within its first {README_FIRST_LINES} lines"
    )


def test_readme_links_the_book_binder_and_the_guide_of_the_configured_repository():
    # the links _config.yml's repository makes: where publish.yml publishes the book, and the
    # Binder launch the book's buttons use (binderhub_url/v2/gh/OWNER/NAME/BRANCH)
    from scripts.set_repository import pages_url

    config = yaml.safe_load((REPOSITORY / "_config.yml").read_text())
    repository = config["repository"]["url"].removeprefix("https://github.com/")
    links = re.findall(r"\]\(([^)\s]+)\)", (REPOSITORY / "README.md").read_text())
    binder = f"{config['launch_buttons']['binderhub_url']}/v2/gh/{repository}/{config['repository']['branch']}"
    for link in (pages_url(repository), binder, "CONTRIBUTING.md", "benchmarks/README.md"):
        assert link in links, f"the README does not link {link}"
    assert all((REPOSITORY / link).exists() for link in links if not link.startswith("https://")), "a README link to a missing file"


def documented_modules() -> dict[str, Path]:
    """Each module that an API page (``book/api/*.md``) documents with an ``automodule``, and that page."""
    found: dict[str, Path] = {}
    for page in sorted(API.glob("*.md")):
        for module in re.findall(r"^\.\. automodule:: (\S+)$", page.read_text(), re.M):
            assert module not in found, f"{module} is documented twice, on {found[module].name} and {page.name}"
            found[module] = page
    return found


def api_page_for(module: str, documented: dict[str, Path]) -> Path:
    """The API page a module goes on: the page of its closest documented package (``covpo`` at the least)."""
    package = module
    while package not in documented and "." in package:
        package = package.rsplit(".", 1)[0]
    return documented[package]


def test_every_module_of_the_package_is_on_an_api_page():
    package = REPOSITORY / "src" / "covpo"
    modules = {
        ".".join(("covpo", *path.relative_to(package).with_suffix("").parts)).removesuffix(".__init__")
        for path in package.rglob("*.py")
    }
    documented = documented_modules()
    missing = {module: api_page_for(module, documented).relative_to(REPOSITORY).as_posix() for module in sorted(modules - set(documented))}
    assert not missing, f"modules on no API page; add an automodule for each to the page named: {missing}"
    assert set(documented) - modules == set(), "the API pages document modules that do not exist"


def test_a_new_module_is_sent_to_its_packages_page():
    documented = {"covpo": API / "core.md", "covpo.experiments.ppo": API / "ppo.md", "covpo.experiments.ppo.seeds": API / "ppo_seeds.md"}
    assert api_page_for("covpo.experiments.ppo.new_study", documented) == API / "ppo.md"
    assert api_page_for("covpo.experiments.ppo.seeds", documented) == API / "ppo_seeds.md"
    assert api_page_for("covpo.new_core_module", documented) == API / "core.md"


# The chapters whose checks are split into one settings check and result checks (issue 52);
# chapter 7 (book/transformer) is reshaped by its own study and keeps its constants check.
CHAPTERS_WITH_A_SETTINGS_CHECK = ("setting", "collapse", "mirror_descent", "ppo", "ppo_details", "squared_loss", "squared_loss_details", "implications",
                                  "transformer", "diagnose")


def hidden_code_cells(chapter: str) -> list:
    notebook = jupytext.read(REPOSITORY / "book" / f"{chapter}.md")
    return [c for c in notebook.cells if c.cell_type == "code" and {"remove-cell", "hide-cell"} & set(c.metadata.get("tags", []))]


@pytest.mark.parametrize("chapter", CHAPTERS_WITH_A_SETTINGS_CHECK)
def test_each_chapter_states_its_settings_in_one_check_apart_from_its_results(chapter: str) -> None:
    settings_cells = [c for c in hidden_code_cells(chapter) if "check_stated_settings(" in c.source]
    assert len(settings_cells) == 1, f"{chapter}.md needs exactly one settings check, has {len(settings_cells)}"


@pytest.mark.parametrize("chapter", CHAPTERS_WITH_A_SETTINGS_CHECK)
def test_no_check_reports_a_run_the_page_does_not_show(chapter: str) -> None:
    for cell in hidden_code_cells(chapter):
        for line in cell.source.splitlines():
            if line.lstrip().startswith("#"):
                assert not re.search(r"\boffline\b|run elsewhere|not shown", line, re.I), f"{chapter}.md: {line.strip()}"


# The widest code line the content column shows without a horizontal scroll bar (688 px of
# the book's code font), measured by tests/test_browser.py's overflow check.
WIDEST_SHOWN_CODE_LINE = 88


@pytest.mark.parametrize("entry", chapter_files(TOC))
def test_shown_code_fits_the_column(entry: str) -> None:
    notebook = jupytext.read(REPOSITORY / f"{entry}.md")
    for cell in notebook.cells:
        if cell.cell_type != "code" or {"remove-input", "remove-cell"} & set(cell.metadata.get("tags", [])):
            continue
        for line in cell.source.splitlines():
            assert len(line) <= WIDEST_SHOWN_CODE_LINE, f"{entry}.md: a line of {len(line)} characters: {line[:60]}..."


# A result table's narrowest rendering, estimated from its HTML: the browser may wrap a cell at
# its spaces, so each column is as wide as its longest unbreakable word plus the cell's padding.
# Calibrated on the book's pages (tables at 0.9 of the 16 px body font): chapter 6's first
# table of the paper's units, sixteen columns, was measured at 1,234 px; this estimate gives it
# about as much. The content column is 688 px wide (tests/test_browser.py's overflow check).
CONTENT_COLUMN_PX = 688
TABLE_CHARACTER_PX = 8.0
TABLE_CELL_PADDING_PX = 16.0


def _visible_text(cell_html: str) -> str:
    """A table cell's text as the page shows it: tags gone, inline TeX reduced to its symbols."""
    text = re.sub(r"<[^>]+>", "", cell_html)
    text = re.sub(r"\\\((.*?)\\\)", lambda m: re.sub(r"\\[a-zA-Z]+|[{}_^]", "", m.group(1)), text)
    return html.unescape(text)


def estimated_table_width_px(table_html: str) -> float:
    """The narrowest width, in CSS pixels, at which a :class:`covpo.table.Table`'s HTML renders (see above)."""
    widths: dict[int, float] = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table_html, flags=re.S):
        for column, cell in enumerate(re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)):
            longest = max((len(word) for word in _visible_text(cell).split()), default=0)
            widths[column] = max(widths.get(column, 0.0), longest * TABLE_CHARACTER_PX + TABLE_CELL_PADDING_PX)
    return sum(widths.values())


def _units_comparison():
    """A comparison of the paper's units with the widest cells chapter 6 shows (a lower bound on every cost)."""
    from covpo.experiments.implications.paper_units import GroupCost, UnitsComparison, UnitsRow

    costs = ("steps", "rounds", "responses")
    rows = tuple(
        UnitsRow(family, coverage, gap, 0.04, {cost: GroupCost(1_250_000.0, False, "REINFORCE") for cost in costs},
                 {cost: GroupCost(125_468.0, False, "PPO-Lite") for cost in costs})
        for family, coverage, gap in (("collapse", 160.0, 0.2), ("collapse, fixed 3× responses", 40.0, 0.1),
                                      ("random", 10.0, None))
    )
    return UnitsComparison(rows, (1, 2))


def test_the_table_width_estimate_finds_a_table_wider_than_the_column() -> None:
    wide = _units_comparison().table()._repr_html_()
    assert estimated_table_width_px(wide) > 1.5 * CONTENT_COLUMN_PX


def test_the_papers_units_tables_fit_the_column() -> None:
    from covpo.plots.paper_units import units_tables

    for table in units_tables(_units_comparison()):
        width = estimated_table_width_px(table._repr_html_())
        assert width <= CONTENT_COLUMN_PX, f"{table.caption!r}: about {width:.0f} px wide"


#: An object's default repr, ``<joblib.parallel.parallel_config at 0x7f...>``: never a result.
BARE_REPR = re.compile(r"<[^<>\n]* at 0x[0-9a-fA-F]+>")


def bare_repr_outputs(notebook) -> list[str]:
    """The outputs of an executed notebook that show a reader nothing but an object's repr.

    A text output (a stream, or a result with no richer form than ``text/plain``) holding
    ``<... at 0x...>``; a figure's ``text/plain`` beside its image is not shown and not counted.
    """
    found = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if output.get("output_type") == "stream":
                text = output.get("text", "")
            elif set(data) <= {"text/plain"}:
                text = data.get("text/plain", "")
            else:
                continue
            text = "".join(text) if isinstance(text, list) else text
            found += BARE_REPR.findall(text)
    return found


def test_the_repr_check_finds_a_stray_repr_and_passes_a_figure() -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("joblib.parallel_config(n_jobs=2)", outputs=[nbformat.v4.new_output(
            "execute_result", {"text/plain": "<joblib.parallel.parallel_config at 0x7f3a2c1d9e50>"})]),
        nbformat.v4.new_code_cell("figure", outputs=[nbformat.v4.new_output(
            "display_data", {"text/plain": "<Figure size 700x300 with 1 Axes>", "image/png": "iVBORw0KGgo="})]),
    ])
    assert bare_repr_outputs(notebook) == ["<joblib.parallel.parallel_config at 0x7f3a2c1d9e50>"]


@pytest.mark.parametrize("entry", chapter_files(TOC))
def test_no_code_cell_ends_on_a_call_that_returns_a_config_object(entry: str) -> None:
    # the executed outputs are checked in tests/test_browser.py; this catches the known case
    # from the source: a context-manager factory called for its effect as a cell's last line
    notebook = jupytext.read(REPOSITORY / f"{entry}.md")
    for cell in notebook.cells:
        if cell.cell_type != "code" or "remove-output" in cell.metadata.get("tags", []):
            continue
        lines = [line for line in cell.source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        if lines:
            assert not re.match(r"\w+\.(parallel_config|parallel_backend|seterr)\(", lines[-1]), (
                f"{entry}.md: a cell ends on {lines[-1]!r}, whose return value would be shown as its repr")
