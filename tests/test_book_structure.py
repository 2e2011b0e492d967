"""The book's layout: every chapter is in the table of contents, and nothing breaks the build."""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest
import yaml

from tests.conftest import REPOSITORY, chapter_files, has_code, read_chapter

TOC = REPOSITORY / "_toc.yml"


def test_every_chapter_file_is_listed_in_the_toc():
    listed = {REPOSITORY / f"{entry}.md" for entry in chapter_files(TOC)}
    on_disk = set((REPOSITORY / "book").glob("*.md"))
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


def test_every_module_of_the_package_is_on_the_api_page():
    package = REPOSITORY / "src" / "covpo"
    modules = {
        ".".join(("covpo", *path.relative_to(package).with_suffix("").parts)).removesuffix(".__init__")
        for path in package.rglob("*.py")
    }
    documented = set(re.findall(r"^\.\. automodule:: (\S+)$", (REPOSITORY / "book" / "api.md").read_text(), re.M))
    assert modules - documented == set(), "modules missing from book/api.md"
    assert documented - modules == set(), "book/api.md documents modules that do not exist"


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
