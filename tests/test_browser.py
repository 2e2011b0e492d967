"""The built site in a real browser: every page works offline, as a reader sees it.

Each page of the book's build is opened from disk (``file://``) in the system's headless
Chromium, driven by Playwright (``tests/conftest.py`` launches it; Playwright downloads no
browser of its own). For every page it checks that

* no JavaScript error is raised or logged, except those in :data:`JS_ERROR_ALLOW_LIST`;
* nothing is requested from the network (MathJax is served from ``_static/mathjax/``); every
  request that leaves the disk is recorded, then aborted;
* math is typeset wherever the chapter's source has math: no raw ``\\(`` left in the visible
  text, a MathJax container in every math element, and no TeX error; and the numbered chapters
  write no math as plain text outside code (``C_cov``, ``pi_t``, ``log10``, ``beta``, ``KL(``);
* every image has loaded;
* every widget of the chapter is on the page as its static stand-in, and moving each of its
  controls switches the displayed frame;
* a numbered chapter, and each section page under it, is at most :data:`MAX_CHAPTER_SCREENS`
  screens long, with its collapsed cells and dropdowns closed, and each page of the API
  reference at most :data:`MAX_API_SCREENS`;
* a numbered chapter opens on its key figure: the first screen shows a figure whole, after a
  summary box of at most :data:`MAX_SUMMARY_SENTENCES` sentences;

and saves a screenshot of its first screen to ``_build/screenshots/``, with ``pages.json`` there
summarising each page (its size, what it loaded, the errors seen). Without the browser these
tests skip with the reason, except under ``CI=true``, where a missing browser fails them (the
README's test command installs Debian's ``chromium`` when it runs as root with apt-get).

The site is the session's build of the book under the second CPU profile
(``tests/book_build.py``): made once, with the README's flags and ``--all``, from the executions
nbval made of every chapter in the build's kernels (``tests/chapter_executions.py``), unless an
earlier session's build is newer than every source.
The checks that need no browser (page sizes, no remote scripts, the API pages, and the faults a
reader met on the pages: ``mailto:`` links, emoji, braces or repeats in citations, file paths
as alt text, table numbers that skip, two search fields) run whenever the build succeeded.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from tests.book_build import LOG, SESSION_BUILD, BuiltSite, describe_build_failure
from tests.conftest import REPOSITORY, chapter_files, numbered_chapters, numbered_pages

SCREENSHOTS = REPOSITORY / "_build" / "screenshots"
TOC = REPOSITORY / "_toc.yml"
CHAPTERS = chapter_files(TOC)
NUMBERED_PAGES = numbered_pages(TOC)
NUMBERED_CHAPTERS = numbered_chapters(TOC)
# A chapter opens on its key figure after a summary of at most this many sentences (issue 56).
MAX_SUMMARY_SENTENCES = 3
MAX_PAGE_BYTES = 5_000_000
VIEWPORT = {"width": 1280, "height": 900}
# The most screens (of VIEWPORT's height, every collapsed cell and dropdown closed) a numbered
# chapter or one of its section pages may fill: a page a reader finishes. A longer chapter folds
# the tables that repeat a figure and its derivations into titled collapsed sections, or moves a
# study to a section page of its own.
MAX_CHAPTER_SCREENS = 25
# The API reference (book/api/): one page per group of modules, each at most this many screens.
# A reference page is looked up, not read through, so it may be longer than a chapter; a group
# that grows past it is split into two pages (book/api/index.md lists them).
API_PAGES = [entry for entry in CHAPTERS if entry.startswith("book/api/")]
MAX_API_SCREENS = 40
# A figure shown at less than this fraction of its design width is too small to read.
MIN_FIGURE_SCALE = 0.8
# CSS pixels per inch of a figure's design size (covpo.plots.style.DISPLAY_PX_PER_INCH), and the
# least resolution of its image, in pixels per inch of design size, that stays sharp on a
# high-density screen (figures are saved at 200).
DISPLAY_PX_PER_INCH = 100
MIN_FIGURE_DPI = 150
# A hang guard only, for every wait on a page (loading it, and what Playwright waits for by
# default): idle, a page loads in about a second, but beside busy programs the browser gets a
# small share of the cores.
PAGE_TIMEOUT_MS = 900_000

# JavaScript errors that are known, harmless, and not ours to fix. Each entry: a pattern that
# the error's text must match, and why it is allowed. Everything else fails the page. None is
# left: the two the pages raised are fixed where they arose (book/_ext/page_head.py), the Thebe
# settings that Sphinx 7.4 put in each page's head twice and the colour mode that Jupyter Book 1
# leaves empty, so pydata-sphinx-theme logged "Got invalid theme mode" on a first visit.
JS_ERROR_ALLOW_LIST: tuple[tuple[str, str], ...] = ()
# Requests to the network a page may make while it loads (none: Thebe and Binder reach the
# network only when the reader presses their buttons).
EXTERNAL_REQUEST_ALLOW_LIST: tuple[str, ...] = ()
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
NETWORK_URL = re.compile(r"^(?!file:|data:|blob:|about:)")


# --------------------------------------------------------------------------------------------
# The build
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def book_build() -> BuiltSite:
    """The session's build of the book under the second CPU profile (waits for it to finish)."""
    return SESSION_BUILD.result()


@pytest.fixture(scope="session")
def built_site(book_build: BuiltSite) -> BuiltSite:
    """The build, for the tests that read its pages: they skip when it failed, so that the one
    failure a broken build causes is :func:`test_book_build_is_clean`, which names the cause."""
    if book_build.returncode != 0 or not (book_build.html / f"{CHAPTERS[0]}.html").exists():
        pytest.skip("the book build failed, so its pages are not checked; test_book_build_is_clean says why")
    return book_build


def built_pages(html: Path) -> list[Path]:
    """The site's own pages (not the HTML templates that themes keep under _static)."""
    skip = {"_static", "_sources", "_images"}
    return sorted(p for p in html.rglob("*.html") if not skip & set(p.relative_to(html).parts))


def redirect_target(page: Path) -> str | None:
    """The target of a page that only redirects (Jupyter Book's root index.html), else None."""
    text = page.read_text(errors="replace")
    match = re.search(r"""http-equiv=["']refresh["']\s+content=["']\d+;\s*url=([^"']+)["']""", text, flags=re.I)
    return match.group(1) if match else None


# --------------------------------------------------------------------------------------------
# Loading a page and recording what a reader would see
# --------------------------------------------------------------------------------------------

# Run in the page after its load event: waits for MathJax's first typesetting and for every
# image, then moves each control of each widget stand-in one step and back.
INSPECT_PAGE = r"""
(async () => {
  const report = {};
  const PLAIN_TEXT_MATH = /(?<![\w\\])[A-Za-z\u03b1-\u03c9\u0391-\u03a9]+_(?:\{|\(|[A-Za-z0-9])|\blog10\b|\b(?:beta|eta|epsilon|eps|theta|lambda|rho)\b|KL\(|\bJ\*|\bpi\*/;
  report.thebeConfigured = typeof THEBE_JS_URL === "string" && typeof thebe_selector === "string";
  report.mathjaxLoaded = !!(window.MathJax && window.MathJax.version && window.MathJax.startup);
  if (report.mathjaxLoaded) { await window.MathJax.startup.promise; }
  const math = [...document.querySelectorAll(".math")];
  report.mathElements = math.length;
  report.untypeset = math.filter(e => !e.querySelector("mjx-container")).map(e => e.textContent.slice(0, 80));
  report.mathContainers = document.querySelectorAll("mjx-container").length;
  report.texErrors = [...document.querySelectorAll("mjx-merror")].map(
    e => e.getAttribute("data-mjx-error") || e.textContent.slice(0, 80));
  // Raw TeX in the visible text, outside code and typeset math: a math delimiter (\( \[ $),
  // an environment, or a command such as \frac, \pi or \log that was never typeset. The API
  // page's signatures (.sig) are code: they show the values of module constants as Python.
  const raw = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode: n => n.parentElement.closest("pre, code, kbd, script, style, textarea, mjx-container, .sig")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  // Math written as plain text where the page typesets math: a subscript spelled with an
  // underscore (C_cov, pi_t, theta_{t+1}), log10, a Greek letter spelled out, KL( or J* outside math.
  const plain = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const m = n.textContent.match(/\\[()\[\]]|\\begin\{|\$|\\[A-Za-z]{2,}/);
    if (m) raw.push(n.textContent.trim().slice(0, 80));
    const p = n.textContent.match(PLAIN_TEXT_MATH);
    if (p) plain.push(n.textContent.trim().slice(0, 80));
  }
  report.rawTex = raw;
  report.plainTextMath = plain;
  const images = [...document.images];
  images.forEach(i => { i.loading = "eager"; });
  await Promise.all(images.map(i => i.decode().catch(() => null)));
  report.images = images.map(i => ({src: (i.getAttribute("src") || "").slice(0, 80), width: i.naturalWidth}));
  report.standins = [];
  for (const root of document.querySelectorAll("div.covpo-standin")) {
    const image = root.querySelector("img.covpo-frame");
    const standin = {id: root.id, hasImage: !!image, controls: []};
    for (const input of root.querySelectorAll(".covpo-range")) {
      const isSelect = input.tagName === "SELECT";
      const lowest = isSelect ? 0 : Number(input.min);
      const highest = isSelect ? input.options.length - 1 : Number(input.max);
      if ((!isSelect && input.type !== "range") || highest <= lowest) continue;
      const label = input.getAttribute("aria-label");
      const value = input.value;
      const before = {frame: image && image.getAttribute("data-frame"), src: image && image.src};
      const next = Number(value) < highest ? Number(value) + 1 : lowest;
      input.value = String(next);
      input.dispatchEvent(new Event("input", {bubbles: true}));
      if (image) { await image.decode().catch(() => null); }
      const after = {frame: image && image.getAttribute("data-frame"), src: image && image.src,
                     width: image ? image.naturalWidth : 0};
      standin.controls.push({label, from: value, to: String(next), frameBefore: before.frame,
                             frameAfter: after.frame, srcChanged: before.src !== after.src,
                             widthAfter: after.width});
      input.value = value;
      input.dispatchEvent(new Event("input", {bubbles: true}));
    }
    report.standins.push(standin);
  }
  const article = document.querySelector("article") || document.querySelector("main") || document.body;
  // Figures: the width each image is shown at against the width it was designed for (its
  // width attribute, set from the figure's design size; otherwise its pixel width).
  report.figures = [...article.querySelectorAll("img")]
    .filter(i => i.closest(".cell_output, figure, .covpo-standin"))
    .map(i => {
      const designed = Number(i.getAttribute("width")) || parseFloat(i.style.width) || i.naturalWidth;
      const shown = i.getBoundingClientRect().width;
      const figure = i.closest("figure");
      const box = i.getBoundingClientRect();
      return {src: (i.getAttribute("src") || "").slice(0, 60), designed, shown,
              natural: i.naturalWidth, shownHeight: box.height,
              top: box.top + window.scrollY, bottom: box.bottom + window.scrollY,
              scale: designed > 0 ? shown / designed : 0,
              standin: !!i.closest(".covpo-standin"),
              caption: figure && figure.querySelector("figcaption") ? figure.querySelector("figcaption").textContent.trim().slice(0, 80) : "",
              number: figure && figure.querySelector("figcaption .caption-number") ? figure.querySelector("figcaption .caption-number").textContent.trim() : "",
              id: figure ? figure.id : ""};
    });
  // Result tables, algorithm boxes, and every number a caption or box title carries.
  const numberIn = e => (e && e.querySelector(".caption-number")) ? e.querySelector(".caption-number").textContent.trim() : "";
  report.tables = [...article.querySelectorAll("div.covpo-table table")].map(t => ({
    caption: t.caption ? t.caption.textContent.trim().slice(0, 80) : "", number: numberIn(t.caption),
    folded: !!t.closest("details")}));
  report.algorithms = [...article.querySelectorAll("div.proof.algorithm")].map(box => (
    {title: (box.firstElementChild ? box.firstElementChild.textContent : box.textContent).trim().slice(0, 80)}));
  report.numbers = [...article.querySelectorAll(".caption-number")].map(e => e.textContent.trim());
  // The page's first box (a chapter's summary), its text without the title.
  const summary = article.querySelector("div.admonition");
  report.summaryBox = summary ? [...summary.children].filter(e => !e.matches(".admonition-title"))
    .map(e => e.textContent.trim()).join(" ").replace(/\s+/g, " ") : "";
  // Search fields a reader sees (not the dialog one opens), and the height of the theme's header bar.
  report.searchFields = [...document.querySelectorAll(".search-button-field, input[type=search]")]
    .filter(e => !e.closest("dialog") && e.getBoundingClientRect().width > 0).length;
  const header = document.querySelector("header.bd-header");
  report.headerHeight = header ? header.getBoundingClientRect().height : 0;
  // Blocks that overflow sideways (code, outputs, tables, display math): their content is
  // wider than the box that shows it, so the reader must scroll or loses the right edge.
  // Collapsed cells are opened for the measurement (a reader may open them), then closed.
  const closed = [...article.querySelectorAll("details:not([open])")];
  closed.forEach(d => { d.open = true; });
  const blocks = [...article.querySelectorAll(
    "div.highlight pre, .cell_output pre, .output pre, div.math, mjx-container[display='true'], table")];
  report.overflowing = blocks
    .filter(e => e.getBoundingClientRect().width > 0)
    .filter(e => {
      const box = e.matches("mjx-container") ? e.parentElement : e;
      const content = e.matches("mjx-container") && e.firstElementChild ? e.firstElementChild.getBoundingClientRect().width : e.scrollWidth;
      return content > box.clientWidth + 2;
    })
    .map(e => ({kind: e.tagName.toLowerCase() + (e.className ? "." + String(e.className).split(" ")[0] : ""),
                text: e.textContent.trim().slice(0, 80), overflow: (e.scrollWidth - e.clientWidth)}));
  closed.forEach(d => { d.open = false; });
  report.scrollHeight = Math.max(document.documentElement.scrollHeight, document.body.scrollHeight);
  return report;
})()
"""


@dataclass
class PageReport:
    """What loading one page in the browser showed."""

    page: str
    errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    inspection: dict = field(default_factory=dict)
    screenshot: Path | None = None
    loaded_bytes: int = 0  # the page and every local file it loaded, as read from disk

    def unexpected_errors(self) -> list[str]:
        return [e for e in self.errors if not any(re.search(pattern, e) for pattern, _ in JS_ERROR_ALLOW_LIST)]


class PageRecorder:
    """Everything one tab reports while a page loads: errors, console errors, requests."""

    def __init__(self, tab) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        tab.on("pageerror", lambda error: self.errors.append(f"exception: {error.stack or error.message}"))
        tab.on("console", self._console)
        tab.on("request", lambda request: self.requests.append(request.url))
        tab.on("websocket", lambda socket: self.requests.append(socket.url))

    def _console(self, message) -> None:
        if message.type in ("error", "assert"):
            where = message.location.get("url", "")
            self.errors.append(f"console.{message.type}: {message.text} ({where})")

    def clear(self) -> None:
        self.errors.clear()
        self.requests.clear()


def load_page(tab, recorder: PageRecorder, html: Path, page: Path) -> PageReport:
    """Open one page from disk, inspect it, and save its screenshot."""
    name = page.relative_to(html).as_posix()
    recorder.clear()
    tab.goto(page.as_uri(), wait_until="load")
    report = PageReport(name, inspection=tab.evaluate(INSPECT_PAGE))
    report.errors = list(recorder.errors)
    local_files = set()
    for url in recorder.requests:
        if not url.startswith(LOCAL_SCHEMES):
            report.external_requests.append(url)
        elif url.startswith("file:"):
            local_files.add(Path(unquote(urlsplit(url).path)))
    report.loaded_bytes = sum(path.stat().st_size for path in local_files if path.is_file())
    # The first screen, the one a reader lands on (every check of the page's length, blocks and
    # figures reads the DOM; a full-page capture of every page cost a quarter of the crawl).
    height = min(int(report.inspection["scrollHeight"]), VIEWPORT["height"])
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    report.screenshot = SCREENSHOTS / (name.removesuffix(".html").replace("/", "__") + ".jpg")
    # JPEG: a full chapter is up to 16,000 pixels tall, and Chromium encodes it as PNG a third slower
    tab.screenshot(
        path=report.screenshot, full_page=True, type="jpeg", quality=90,
        clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height},
    )
    return report


@pytest.fixture(scope="session")
def page_reports(built_site: BuiltSite, browser) -> dict[str, PageReport]:
    """Every page of the site (except redirects), loaded once in one tab."""
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    # Nothing may reach the network; a request is still recorded (above) before it is aborted.
    context.route(NETWORK_URL, lambda route: route.abort())
    tab = context.new_page()
    recorder = PageRecorder(tab)
    if SCREENSHOTS.exists():
        shutil.rmtree(SCREENSHOTS)
    reports = {}
    try:
        for page in built_pages(built_site.html):
            if redirect_target(page) is None:
                report = load_page(tab, recorder, built_site.html, page)
                reports[report.page] = report
    finally:
        context.close()
    summary = {
        name: {
            "html_bytes": (built_site.html / name).stat().st_size,
            "loaded_bytes": report.loaded_bytes,
            "screens": round(report.inspection["scrollHeight"] / VIEWPORT["height"], 1),
            "errors": report.errors,
            "external_requests": report.external_requests,
            "math_elements": report.inspection["mathElements"],
            "widget_standins": len(report.inspection["standins"]),
            "images": len(report.inspection["images"]),
            "figures": report.inspection["figures"],
            "overflowing": report.inspection["overflowing"],
        }
        for name, report in reports.items()
    }
    (SCREENSHOTS / "pages.json").write_text(json.dumps(summary, indent=1))
    return reports


# --------------------------------------------------------------------------------------------
# What the chapter sources say the pages must show
# --------------------------------------------------------------------------------------------


def source_has_math(entry: str) -> bool:
    """Whether a chapter's markdown (outside code) has math: $...$, {math} or an environment."""
    text = (REPOSITORY / f"{entry}.md").read_text()
    code = re.compile(r"^```(?:\{code-cell\}[^\n]*|[\w+-]*)\n.*?^```[ \t]*$", flags=re.S | re.M)
    prose = re.sub(r"`[^`\n]*`", "", code.sub("", text))
    return bool(re.search(r"\$[^$\n]+\$|\{math\}|\\begin\{", prose))


def expected_widgets(entry: str, executed: Path) -> int:
    """How many widget stand-ins the chapter's executed notebook (in the build's ``executed`` folder) displayed."""
    notebook = executed / f"{entry}.ipynb"
    if not notebook.exists():
        return 0
    outputs = [o for cell in nbformat.read(notebook, as_version=4).cells for o in cell.get("outputs", [])]
    return sum('class="covpo-standin"' in o.get("data", {}).get("text/html", "") for o in outputs)


def chapter_report(page_reports: dict[str, PageReport], entry: str) -> PageReport:
    assert f"{entry}.html" in page_reports, f"{entry}.html was not built"
    return page_reports[f"{entry}.html"]


# --------------------------------------------------------------------------------------------
# Tests that need only the build
# --------------------------------------------------------------------------------------------


def test_book_build_is_clean(book_build: BuiltSite):
    assert book_build.returncode == 0, (
        f"jupyter-book build -W -n --keep-going --all under the second CPU profile failed ({LOG}): {book_build.failure}"
    )


def test_the_build_executed_no_chapter_that_nbval_had_run(book_build: BuiltSite):
    # A chapter nbval ran in kernels started as the build's is rendered, not executed again: a
    # chapter the build executes anyway (its code cells no longer match nbval's execution)
    # costs the session that chapter's time twice. (A session that runs no chapter, only the
    # site's tests, has the build execute them all.)
    again = sorted(set(book_build.handed) & set(book_build.executed_by_the_build))
    assert not again, f"the build executed {again} itself instead of rendering nbval's executions"


def test_every_page_is_under_5_mb(built_site: BuiltSite):
    sizes = {p.relative_to(built_site.html).as_posix(): p.stat().st_size for p in built_pages(built_site.html)}
    too_big = {page: size for page, size in sizes.items() if size > MAX_PAGE_BYTES}
    assert not too_big, f"pages over {MAX_PAGE_BYTES} bytes: {too_big}"


def test_pages_load_no_script_style_or_image_from_the_network(built_site: BuiltSite):
    remote = re.compile(r"""<(?:script|img|iframe)\b[^>]*\ssrc=["'](?:https?:)?//|<link\b[^>]*\shref=["'](?:https?:)?//[^"']*\.(?:css|js)""")
    found = {}
    for page in built_pages(built_site.html):
        hits = remote.findall(page.read_text(errors="replace"))
        if hits:
            found[page.relative_to(built_site.html).as_posix()] = hits
    assert not found, f"pages that load from the network: {found}"


def test_every_page_head_declares_the_thebe_settings_once(built_site: BuiltSite):
    # Sphinx 7.4 added sphinx-thebe's inline settings to every head twice, and the second
    # `const` declaration threw (book/_ext/page_head.py)
    counts = {p.relative_to(built_site.html).as_posix(): p.read_text(errors="replace").count("const THEBE_JS_URL")
              for p in built_pages(built_site.html) if redirect_target(p) is None}
    assert counts and all(count == 1 for count in counts.values()), f"Thebe settings per page: {counts}"


#: The chapter whose downloadable notebook is opened: the one with the most figures and sweeps.
DOWNLOADED_CHAPTER = "book/implications"


def test_the_downloaded_notebook_carries_its_figures_and_no_progress_bars(built_site: BuiltSite):
    page = built_site.html / f"{DOWNLOADED_CHAPTER}.html"
    links = re.findall(r'href="([^"]*_sources/[^"]*\.ipynb)"', page.read_text())
    assert links, f"{page.name} offers no .ipynb download"
    notebook = nbformat.read(page.parent / links[0], as_version=4)
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    # every figure of the page is a glue:figure of a cell that displays it (glue with display)
    figures = len(re.findall(r"\{glue:figure\}", (REPOSITORY / f"{DOWNLOADED_CHAPTER}.md").read_text()))
    pictures = [output for output in outputs if "image/png" in output.get("data", {})]
    assert figures and len(pictures) >= figures, f"the notebook shows {len(pictures)} images; its page {figures} figures"
    bars = [output for output in outputs if output.get("output_type") == "stream" and output.get("name") == "stderr"]
    assert not bars, f"the notebook carries {len(bars)} stderr outputs (progress bars?): {bars[0]['text'][:80]!r}"


#: Tables known to be wider than the column when this check was added, by chapter and caption start
#: (ten columns each); each is to be split as chapter 6's table of the paper's units was, then removed here.
KNOWN_WIDE_TABLES = {
    "book/diagnose": "The log detector against exact coverage",
    "book/mirror_descent": "APMD against three comparators",
}


@pytest.mark.parametrize("entry", CHAPTERS)
def test_no_output_is_a_repr_and_every_table_fits_the_column(built_site: BuiltSite, entry: str):
    from tests.test_book_structure import CONTENT_COLUMN_PX, bare_repr_outputs, estimated_table_width_px

    page = built_site.html / f"{entry}.html"
    links = re.findall(r'href="([^"]*_sources/[^"]*\.ipynb)"', page.read_text())
    if not links:
        assert "```{code-cell}" not in (REPOSITORY / f"{entry}.md").read_text(), f"{page.name} offers no .ipynb download"
        return
    notebook = nbformat.read(page.parent / links[0], as_version=4)
    assert not bare_repr_outputs(notebook), f"{entry}: outputs that are an object's repr: {bare_repr_outputs(notebook)}"
    tables = [output["data"]["text/html"] for cell in notebook.cells if cell.cell_type == "code"
              for output in cell.get("outputs", []) if 'class="covpo-table"' in str(output.get("data", {}).get("text/html", ""))]
    wide = [(re.findall(r"<caption>(.*?)</caption>", "".join(t))[:1], estimated_table_width_px("".join(t))) for t in tables]
    known = KNOWN_WIDE_TABLES.get(entry)
    wide = [(caption, width) for caption, width in wide if width > CONTENT_COLUMN_PX
            and not (known and caption and caption[0].startswith(known))]
    assert not wide, f"{entry}: tables wider than the {CONTENT_COLUMN_PX} px column (caption, estimated px): {wide}"


def test_mathjax_is_served_from_the_site(built_site: BuiltSite):
    page = (built_site.html / f"{CHAPTERS[0]}.html").read_text()
    match = re.search(r'<script[^>]*src="([^"]*mathjax[^"]*)"', page, flags=re.I)
    assert match, "no MathJax script on the page"
    local = (built_site.html / CHAPTERS[0]).parent / match.group(1).split("?")[0]
    assert local.resolve().is_file(), f"MathJax is loaded from {match.group(1)}, which is not a file of the site"


def test_redirect_pages_point_at_built_pages(built_site: BuiltSite):
    for page in built_pages(built_site.html):
        if (target := redirect_target(page)) is not None:
            assert (page.parent / target).resolve().is_file(), f"{page.name} redirects to missing {target}"


def test_api_pages_document_every_module(built_site: BuiltSite):
    pages = {entry: built_site.html / f"{entry}.html" for entry in API_PAGES}
    assert pages and all(page.exists() for page in pages.values()), f"API pages not built: {[e for e, p in pages.items() if not p.exists()]}"
    text = "".join(page.read_text() for page in pages.values())
    package = REPOSITORY / "src"
    modules = {
        ".".join(path.relative_to(package).with_suffix("").parts).removesuffix(".__init__")
        for path in (package / "covpo").rglob("*.py")
        if not path.name.startswith("_") or path.name == "__init__.py"
    }
    missing = sorted(m for m in modules if f'id="module-{m}"' not in text)
    assert not missing, f"modules on no API page (tests/test_book_structure.py names the page for each): {missing}"


# What a reader meets on every page: the faults found reading the site page by page, each fixed
# in book/_ext (tests/test_site_reading.py checks each fix on a small project) and checked here
# on the whole site. Each check is a function of the site's folder, so it can be run on any build.
# They read the pages' HTML with patterns, not a parser: parsing the site's 7 MB takes seconds.

# Code points that only an emoji font draws (the pictographs and symbols planes, dingbats and
# miscellaneous symbols, the emoji variation selector): the fonts the pages name have none.
EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f]")
IMAGE_FILE = re.compile(r"\.(?:png|svg|jpe?g|gif|webp)$", flags=re.I)
TAG = re.compile(r"<[^>]+>")
SCRIPT_OR_STYLE = re.compile(r"<(script|style|noscript|template)\b.*?</\1>", flags=re.S | re.I)
ARTICLE = re.compile(r"<article\b.*</article>", flags=re.S)
DIALOG = re.compile(r"<dialog\b.*?</dialog>", flags=re.S)
SEARCH_PAGE_QUERY = re.compile(r'<div class="bd-search-container">.*?</form>', flags=re.S)
SEARCH_FIELD = re.compile(r'class="[^"]*\bsearch-button-field\b|<input\b[^>]*\btype="search"')
EMAIL_LINK = re.compile(r'<a\b[^>]*\bhref="mailto:[^"]*"[^>]*>(.*?)</a>', flags=re.S)
CITATION = re.compile(r'<span class="bibtex-citation"[^>]*>(.*?)</span>', flags=re.S)
CITED_WORK = re.compile(r"<a\b[^>]*>(.*?)</a>", flags=re.S)
LABEL = re.compile(r'<span class="label"><span class="fn-bracket">\[</span>(.*?)<span class="fn-bracket">\]</span>', flags=re.S)
IMAGE = re.compile(r"<img\b[^>]*>")
ATTRIBUTE = re.compile(r'\s(alt|src)="([^"]*)"')
FOLD_OR_TABLE_NUMBER = re.compile(r'<details\b|</details>|<caption><span class="caption-number">([^<]*)</span>')


def page_text(page: Path) -> str:
    return page.read_text(errors="replace")


def plain(fragment: str) -> str:
    """An HTML fragment's text: tags dropped, entities read."""
    import html

    return html.unescape(TAG.sub("", fragment))


def site_pages(html: Path) -> list[Path]:
    return [page for page in built_pages(html) if redirect_target(page) is None]


def email_links(html: Path) -> dict[str, list[str]]:
    """Each page's ``mailto:`` links, by their text (docutils links any ``name@host``, "pass@256" too)."""
    found = {page.relative_to(html).as_posix(): [plain(text) for text in EMAIL_LINK.findall(page_text(page))]
             for page in site_pages(html)}
    return {page: links for page, links in found.items() if links}


def emoji_on_pages(html: Path) -> dict[str, list[str]]:
    """Each page's visible text that holds a code point only an emoji font draws."""
    found = {}
    for page in site_pages(html):
        text = plain(SCRIPT_OR_STYLE.sub("", page_text(page)))
        if hits := sorted({line.strip()[:60] for line in text.splitlines() if EMOJI.search(line)}):
            found[page.relative_to(html).as_posix()] = hits
    return found


def citation_faults(html: Path) -> list[str]:
    """Bibliography labels or citations with TeX braces, two entries with one label, or a citation naming a work twice."""
    faults = []
    for page in site_pages(html):
        text, name = page_text(page), page.relative_to(html).as_posix()
        labels = [plain(label) for label in LABEL.findall(text)]
        faults += [f"{name}: label {label!r} twice" for label in sorted({l for l in labels if labels.count(l) > 1})]
        faults += [f"{name}: label {label!r} holds TeX" for label in labels if re.search(r"[{}\\]", label)]
        for citation in CITATION.findall(text):
            shown, works = plain(citation), [plain(work) for work in CITED_WORK.findall(citation)]
            if re.search(r"[{}\\]", shown):
                faults.append(f"{name}: citation {shown!r} holds TeX")
            if len(set(works)) < len(works):
                faults.append(f"{name}: citation {shown!r} names a work twice")
    return faults


def images_without_description(html: Path) -> list[str]:
    """Images of the pages' articles whose alt text is missing, empty, or a file's path or name."""
    bare = []
    for page in site_pages(html):
        article = ARTICLE.search(page_text(page))
        for image in IMAGE.findall(article.group(0) if article else ""):
            attributes = dict(ATTRIBUTE.findall(image))
            alt, src = plain(attributes.get("alt", "")).strip(), attributes.get("src", "")
            if not alt or alt == src or IMAGE_FILE.search(alt) or "_images/" in alt:
                bare.append(f"{page.relative_to(html).as_posix()}: {src[:50]} alt={alt[:60]!r}")
    return bare


def chapter_groups(toc: Path) -> list[list[str]]:
    """Each numbered chapter with the section pages listed under it, which number on from it, in reading order."""
    import yaml

    groups = []

    def walk(entry: dict) -> list[str]:
        return [entry["file"], *(page for section in entry.get("sections", []) for page in walk(section))]

    for part in yaml.safe_load(toc.read_text()).get("parts", []):
        if part.get("numbered"):
            groups += [walk(chapter) for chapter in part.get("chapters", [])]
    return groups


def table_number_faults(html: Path, groups: list[list[str]]) -> list[str]:
    """Tables on view whose numbers do not run 1, 2, 3, ... through a chapter, and folded tables that take a number."""
    faults = []
    for pages in groups:
        shown = []
        for entry in pages:
            article = ARTICLE.search(page_text(html / f"{entry}.html"))
            depth = 0
            for match in FOLD_OR_TABLE_NUMBER.finditer(article.group(0) if article else ""):
                if match.group(0).startswith("<details"):
                    depth += 1
                elif match.group(0) == "</details>":
                    depth -= 1
                elif depth:
                    faults.append(f"{entry}: folded table numbered {match.group(1).strip()!r}")
                else:
                    shown.append(match.group(1).strip())
        counts = [int(m.group(1)) for m in (re.search(r"\.(\d+)$", text) for text in shown) if m]
        if counts != list(range(1, len(shown) + 1)):
            faults.append(f"{pages[0]}: tables on view numbered {shown}")
    return faults


def search_fields_per_page(html: Path) -> dict[str, int]:
    """How many search fields each page holds around its content (not the dialog a field opens, nor the search page's query)."""
    return {
        page.relative_to(html).as_posix(): len(SEARCH_FIELD.findall(SEARCH_PAGE_QUERY.sub("", DIALOG.sub("", page_text(page)))))
        for page in site_pages(html)
    }


def test_no_page_links_an_email_address(built_site: BuiltSite):
    # the API page linked "pass@256" to mailto:pass@256 (book/_ext/no_email_links.py)
    assert not email_links(built_site.html), f"mailto: links: {email_links(built_site.html)}"


def test_no_page_shows_a_glyph_only_an_emoji_font_draws(built_site: BuiltSite):
    # the execution page marked each chapter's status with ✅ (book/_ext/execution_status_words.py)
    assert not emoji_on_pages(built_site.html), f"emoji on the pages: {emoji_on_pages(built_site.html)}"


def test_bibliography_labels_and_citations_have_no_braces_or_repeats(built_site: BuiltSite):
    # "[{Kimi Team}, 2025a]" and "[Kimi Team, 2025, Kimi Team, 2025]" (book/_ext/author_year_bibliography.py)
    assert not citation_faults(built_site.html), citation_faults(built_site.html)


def test_every_image_has_alt_text_that_says_what_it_shows(built_site: BuiltSite):
    # every figure's alt text was its file path (book/_ext/figure_alt_text.py)
    bare = images_without_description(built_site.html)
    assert not bare, f"{len(bare)} images whose alt text is a file or missing, e.g. {bare[:5]}"


def test_table_numbers_run_on_as_a_reader_sees_them(built_site: BuiltSite):
    # folded tables took numbers, so those on view skipped 2.1 -> 2.3 -> 2.6 (book/_ext/numbered_outputs.py)
    faults = table_number_faults(built_site.html, chapter_groups(TOC))
    assert not faults, faults


def test_each_page_has_one_search_field(built_site: BuiltSite):
    # the header bar held a second search field (book/_ext/one_search_box.py)
    counts = search_fields_per_page(built_site.html)
    assert counts and all(count == 1 for count in counts.values()), f"search fields per page: {counts}"


# --------------------------------------------------------------------------------------------
# Tests in the browser
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_has_no_javascript_errors_or_network_requests(page_reports, entry):
    report = chapter_report(page_reports, entry)
    assert not report.unexpected_errors(), f"JavaScript errors on {report.page}: {report.unexpected_errors()}"
    assert report.inspection["thebeConfigured"], f"{report.page} lacks the Thebe settings its launch buttons need"
    unexpected = [u for u in report.external_requests if not u.startswith(EXTERNAL_REQUEST_ALLOW_LIST)]
    assert not unexpected, f"{report.page} requested {unexpected}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_math_is_typeset(page_reports, entry):
    report = chapter_report(page_reports, entry)
    seen = report.inspection
    if source_has_math(entry):
        assert seen["mathElements"] > 0, f"{entry}.md has math but the page has none"
    if seen["mathElements"]:
        assert seen["mathjaxLoaded"], f"MathJax did not load on {report.page}"
        assert not seen["untypeset"], f"math left untypeset on {report.page}: {seen['untypeset'][:5]}"
        assert seen["mathContainers"] >= seen["mathElements"]
    assert not seen["texErrors"], f"TeX errors on {report.page}: {seen['texErrors']}"
    assert not seen["rawTex"], f"raw TeX in the visible text of {report.page}: {seen['rawTex'][:5]}"


@pytest.mark.parametrize("entry", NUMBERED_PAGES)
def test_numbered_chapters_write_math_as_math(page_reports, entry):
    # Tables, captions, notes, widget labels and check labels included: where the prose is
    # typeset, a subscript spelled with an underscore or a Greek letter spelled out reads as code.
    report = chapter_report(page_reports, entry)
    plain = report.inspection["plainTextMath"]
    assert not plain, f"math written as plain text on {report.page}: {plain[:5]}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_images_load(page_reports, entry):
    report = chapter_report(page_reports, entry)
    broken = [image["src"] for image in report.inspection["images"] if image["width"] <= 0]
    assert not broken, f"images that did not load on {report.page}: {broken}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_widget_standins_respond(page_reports, built_site, entry):
    report = chapter_report(page_reports, entry)
    standins = report.inspection["standins"]
    expected = expected_widgets(entry, built_site.executed)
    assert len(standins) == expected, f"{report.page} shows {len(standins)} widget stand-ins, its notebook {expected}"
    for standin in standins:
        assert standin["hasImage"], f"stand-in {standin['id']} on {report.page} has no frame"
        assert standin["controls"], f"stand-in {standin['id']} on {report.page} has no control to move"
        for control in standin["controls"]:
            where = f"control {control['label']!r} of {standin['id']} on {report.page}"
            assert control["frameAfter"] != control["frameBefore"], f"{where} did not change the frame"
            assert control["srcChanged"], f"{where} changed data-frame but not the image"
            assert control["widthAfter"] > 0, f"{where} shows a frame that does not load"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_figures_are_shown_near_their_design_size(page_reports, entry):
    report = chapter_report(page_reports, entry)
    small = [f"{figure['src']} at {figure['scale']:.0%}" for figure in report.inspection["figures"] if figure["scale"] < MIN_FIGURE_SCALE]
    assert not small, f"figures on {report.page} shown below {MIN_FIGURE_SCALE:.0%} of their design width: {small}"


def figure_dpi(figure: dict) -> float:
    """The resolution of a figure's image in pixels per inch of its design size."""
    return figure["natural"] / figure["designed"] * DISPLAY_PX_PER_INCH if figure["designed"] > 0 else 0.0


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_figures_fit_one_screen_and_are_sharp(page_reports, entry):
    report = chapter_report(page_reports, entry)
    figures = report.inspection["figures"]
    tall = [f"{f['caption'] or f['src']!r} ({f['shownHeight']:.0f} px)" for f in figures if f["shownHeight"] > VIEWPORT["height"]]
    assert not tall, f"figures on {report.page} taller than the {VIEWPORT['height']} px screen: {tall}"
    # A widget stand-in's frames are all in its page (up to covpo.plots.widgets.MAX_FRAMES of
    # them), so they are drawn at the display resolution to keep the page within its size limit.
    blurry = [f"{f['caption'] or f['src']!r} at {figure_dpi(f):.0f} dpi" for f in figures
              if not f["standin"] and figure_dpi(f) < MIN_FIGURE_DPI]
    assert not blurry, f"figures on {report.page} under {MIN_FIGURE_DPI} dpi of design size: {blurry}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_figures_are_numbered_and_captioned(page_reports, entry):
    report = chapter_report(page_reports, entry)
    # widget stand-ins included: book/_ext/numbered_outputs.py makes each one a figure
    bare = [figure["src"] for figure in report.inspection["figures"] if not figure["caption"]]
    assert not bare, f"figures on {report.page} without a caption (use glue:figure or figure with a caption): {bare}"
    unlabelled = [figure["caption"] for figure in report.inspection["figures"] if not figure["id"]]
    assert not unlabelled, f"figures on {report.page} without a label to refer to them by: {unlabelled}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_figures_tables_and_algorithms_are_numbered_in_the_numbered_chapters_only(page_reports, entry):
    report = chapter_report(page_reports, entry)
    seen = report.inspection
    if entry not in NUMBERED_PAGES:
        assert not seen["numbers"], f"{report.page} is not a numbered chapter but numbers {seen['numbers']}"
        return
    figures = [f["caption"] for f in seen["figures"] if not f["number"].startswith("Fig. ")]
    assert not figures, f"figures (widget stand-ins included) on {report.page} without a number: {figures}"
    # a folded table takes no number (test_table_numbers_run_on_as_a_reader_sees_them)
    tables = [t["caption"] for t in seen["tables"] if t["caption"] and not t["folded"] and not t["number"].startswith("Table ")]
    assert not tables, f"result tables on view on {report.page} without a number: {tables}"
    boxes = [box["title"] for box in seen["algorithms"] if not re.match(r"Algorithm \d+\.\d+", box["title"])]
    assert not boxes, f"algorithm boxes on {report.page} without a number: {boxes}"


def sentence_count(text: str) -> int:
    """Sentences in a box's text: a full stop, question or exclamation mark before a space and a capital (or the end)."""
    return len(re.findall(r"[.!?](?=\s+[A-Z(]|\s*$)", text.strip()))


@pytest.mark.parametrize("entry", NUMBERED_CHAPTERS)
def test_numbered_chapter_opens_on_its_key_figure(page_reports, entry):
    # issue 56: the first screen at 1280 x 900 shows the chapter's key figure whole, after a
    # summary of at most three plain sentences
    report = chapter_report(page_reports, entry)
    figures = [f for f in report.inspection["figures"] if not f["standin"]]
    assert figures, f"{report.page} has no figure"
    first = min(figures, key=lambda f: f["top"])
    assert first["bottom"] <= VIEWPORT["height"], (
        f"{report.page}: its first figure ({first['caption']!r}) ends {first['bottom']:.0f} px down the page, "
        f"below the first screen ({VIEWPORT['height']} px): shorten what comes before it"
    )
    box = report.inspection["summaryBox"]
    assert box and sentence_count(box) <= MAX_SUMMARY_SENTENCES, (
        f"{report.page}: its summary box has {sentence_count(box)} sentences, over {MAX_SUMMARY_SENTENCES}: {box[:300]!r}"
    )


@pytest.mark.parametrize("entry", NUMBERED_PAGES)
def test_numbered_chapters_fit_in_25_screens(page_reports, entry):
    # every numbered page: the chapters and the section pages listed under them (book/ppo_details)
    report = chapter_report(page_reports, entry)
    screens = report.inspection["scrollHeight"] / VIEWPORT["height"]
    assert screens <= MAX_CHAPTER_SCREENS, (
        f"{report.page} is {screens:.1f} screens of {VIEWPORT['width']} x {VIEWPORT['height']} long, over "
        f"{MAX_CHAPTER_SCREENS}: fold the tables that repeat a figure and the derivations into titled collapsed "
        "cells and dropdowns, or move a study to a section page of its own (book/ppo_details)"
    )


@pytest.mark.parametrize("entry", API_PAGES)
def test_api_pages_fit_in_40_screens(page_reports, entry):
    report = chapter_report(page_reports, entry)
    screens = report.inspection["scrollHeight"] / VIEWPORT["height"]
    assert screens <= MAX_API_SCREENS, (
        f"{report.page} is {screens:.1f} screens of {VIEWPORT['width']} x {VIEWPORT['height']} long, over "
        f"{MAX_API_SCREENS}: split its group of modules into two pages (book/api/index.md lists them)"
    )


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_blocks_do_not_overflow_sideways(page_reports, entry):
    report = chapter_report(page_reports, entry)
    wide = [f"{block['kind']} ({block['overflow']} px): {block['text']!r}" for block in report.inspection["overflowing"]]
    assert not wide, f"blocks wider than the column on {report.page}: " + "; ".join(wide)


def test_every_page_shows_one_search_field_and_no_empty_bar(page_reports):
    # two search fields, the second alone in a 64 px bar on top (book/_ext/one_search_box.py, book/_static/covpo.css)
    fields = {name: report.inspection["searchFields"] for name, report in page_reports.items()}
    assert all(count == 1 for count in fields.values()), f"search fields seen per page: {fields}"
    bars = {name: report.inspection["headerHeight"] for name, report in page_reports.items() if report.inspection["headerHeight"]}
    assert not bars, f"pages with a header bar above the book's own (px): {bars}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_chapter_screenshot_saved(page_reports, entry):
    report = chapter_report(page_reports, entry)
    assert report.screenshot is not None and report.screenshot.stat().st_size > 0


def test_other_pages_work_in_the_browser(page_reports):
    others = {name: report for name, report in page_reports.items() if name.removesuffix(".html") not in CHAPTERS}
    assert others, "no index or search pages were built"
    for name, report in others.items():
        assert not report.unexpected_errors(), f"JavaScript errors on {name}: {report.unexpected_errors()}"
        assert not report.external_requests, f"{name} requested {report.external_requests}"
        assert all(image["width"] > 0 for image in report.inspection["images"]), f"broken image on {name}"
        assert not report.inspection["texErrors"] and not report.inspection["untypeset"], f"math broken on {name}"


def test_a_failed_build_is_described_by_its_chapter_and_cell():
    log = (
        f"myst_nb.core.execute.base.ExecutionError: {REPOSITORY}/book/implications.md\n"
        "nbclient.exceptions.CellExecutionError: An error occurred while executing the following cell:\n"
        "------------------\n# Claim: resets lose less.\nassert loss < 1\n------------------\n\n"
        "\x1b[31mAssertionError\x1b[39m                            Traceback (most recent call last)\n"
        "----> 2 assert loss < 1\n\n\x1b[31mAssertionError\x1b[39m: \n"
    )
    described = describe_build_failure(log)
    assert described.startswith("book/implications.md failed to execute.")
    assert "assert loss < 1" in described and described.rstrip().endswith("AssertionError:")

