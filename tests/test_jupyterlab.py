"""A chapter run in JupyterLab as the README tells a reader to, with a live widget that redraws.

nbval shows that a chapter's cells run; this shows what a reader who opens it in JupyterLab
gets. The test runs ``postBuild`` (what Binder runs, and what the README tells a local reader to
run once), starts ``jupyter lab`` on 127.0.0.1 with a token and a free port, and opens
``book/setting.md`` in the system's Chromium through Playwright, at a fresh workspace URL. The
chapter must open as a notebook through jupytext's viewer (the default ``postBuild`` sets),
run all cells from the Run menu, and show its live ipywidgets slider; two arrow-key presses on
the slider must redraw the figure. It fails if jupytext's viewer, ``postBuild``'s default or the
ipywidgets front end is missing: the chapter then opens as text, or the widget never renders.
The server is shut down whatever happens. It serves a copy of the chapter (JupyterLab saves the
notebook it runs, and jupytext would rewrite the source), and every setting it writes goes to a
temporary folder, except ``postBuild``'s overrides in the environment, which are the point.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from covpo.static_pages import STANDINS_VARIABLE
from tests.conftest import REPOSITORY

CHAPTER = "book/setting.md"
# Every wait below is a hang guard only, never a verdict on speed: idle, the whole test takes about
# 10 s, but beside three busy programs on 2 cores running the chapter alone took over 150 s.
HANG_GUARD_S = 900
HANG_GUARD_MS = HANG_GUARD_S * 1000
SCREENSHOT = REPOSITORY / "_build" / "screenshots-jupyterlab" / "setting.png"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_server(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"jupyter lab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    pytest.fail(f"jupyter lab did not answer within {HANG_GUARD_S} s:\n{log.read_text()[-3000:]}")


def kernel_is_idle(base: str, token: str) -> bool:
    """Whether the server runs a kernel that has started and is idle.

    jupyter_server registers a new kernel before it stamps the kernel's last activity, and lets
    other requests run in between: a list of kernels asked for in that window fails with a 500.
    That reply means "not yet", as a kernel still starting does; any other error is the test's.
    """
    try:
        with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=5) as reply:
            return any(kernel.get("execution_state") == "idle" for kernel in json.load(reply))
    except urllib.error.HTTPError as error:
        if error.code == 500:
            return False
        raise


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JupyterLab server on the repository, set up by ``postBuild``; yields its base URL with the token."""
    executable = Path(sys.executable).with_name("jupyter-lab")
    if not executable.exists():
        reason = "JupyterLab is not installed (it is pinned in requirements.txt)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    home = tmp_path_factory.mktemp("lab")
    # The server works on a copy of the chapter: JupyterLab saves what it runs (jupytext then
    # rewrites the markdown), and the test must leave the book as it found it.
    reader = home / "reader"
    (reader / Path(CHAPTER).parent).mkdir(parents=True)
    shutil.copy2(REPOSITORY / CHAPTER, reader / CHAPTER)
    # postBuild finds the environment through `python` on PATH, as Binder's does.
    # A reader's JupyterLab runs live widgets: no request for static stand-ins reaches it, whatever
    # the test process was given.
    environment = {
        **{name: value for name, value in os.environ.items() if name != STANDINS_VARIABLE},
        "PATH": f"{executable.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    subprocess.run(["bash", str(REPOSITORY / "postBuild")], env=environment, check=True, capture_output=True, timeout=60)
    token = uuid.uuid4().hex
    port = free_port()
    log = home / "lab.log"
    with log.open("w") as output:
        server = subprocess.Popen(
            [
                str(executable), "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={reader}",
                # Nothing reaches for the network: no update check, no news.
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None",
                "--LabApp.extension_manager=readonly",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            cwd=reader, env=environment, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_server(f"{base}/api/status?token={token}", server, log)
        yield f"{base}|{token}"
    finally:
        # SIGTERM lets the server shut its kernels down; whatever is left of its process group goes after.
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        server.wait()


def test_chapter_runs_in_jupyterlab_and_its_widget_redraws(lab: str, browser):
    base, token = lab.split("|")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(HANG_GUARD_MS)
    context.route(lambda url: not url.startswith(base), lambda route: route.abort())
    tab = context.new_page()
    try:
        tab.goto(f"{base}/lab/workspaces/{uuid.uuid4().hex[:8]}/tree/{CHAPTER}?reset&token={token}")
        # Opened through jupytext's viewer, the chapter is a notebook panel, not a text editor.
        notebook = tab.locator(".jp-NotebookPanel").first
        try:
            notebook.wait_for(state="visible")
        except PlaywrightTimeoutError:
            opened = tab.locator(".jp-FileEditor, .jp-MarkdownViewer").count()
            pytest.fail(
                f"{CHAPTER} did not open as a notebook ({opened} text editor or markdown view open instead): "
                "jupytext's viewer is missing, or postBuild's default viewer did not take effect"
            )
        tab.locator(".jp-Notebook-cell").first.wait_for()
        # A fresh workspace may ask which kernel to start (the reader accepts the chapter's own), or
        # start the chapter's kernel by itself: whichever happens first is awaited.
        choose = tab.locator(".jp-Dialog", has_text="Select Kernel")
        deadline = time.monotonic() + HANG_GUARD_S
        while not (offered := choose.is_visible()) and not kernel_is_idle(base, token):
            if time.monotonic() > deadline:
                pytest.fail(f"{CHAPTER}'s kernel neither started nor was offered within {HANG_GUARD_S} s")
            tab.wait_for_timeout(250)
        if offered:
            choose.get_by_role("button", name="Select", exact=True).click()
        tab.locator(".lm-MenuBar-item", has_text="Run").first.click()
        tab.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        slider = tab.locator(".jp-OutputArea .widget-slider").first
        try:
            slider.wait_for(state="visible")
        except PlaywrightTimeoutError:
            # Without the ipywidgets front end JupyterLab shows the next richest output: the static
            # stand-in (or the plain-text name of the widget). The plain text can also show while
            # the widget's view is being made, so only a slider that never comes is a failure.
            raw = tab.locator(".jp-OutputArea .covpo-standin").count() + tab.locator(
                ".jp-OutputArea", has_text="(interactive widget)").count()
            pytest.fail(
                f"no live widget slider appeared within {HANG_GUARD_S} s of running {CHAPTER}"
                + (" (the widget output shows as plain text: the ipywidgets front end is missing)" if raw else "")
            )
        figure = tab.locator(".jp-OutputArea .widget-output img").first
        figure.wait_for(state="visible")
        before = figure.get_attribute("src")
        handle = slider.locator(".noUi-handle").first
        handle.focus()
        handle.press("ArrowRight")
        handle.press("ArrowRight")
        tab.wait_for_function(
            "before => { const i = document.querySelector('.jp-OutputArea .widget-output img');"
            " return i !== null && i.getAttribute('src') !== before; }",
            arg=before,
        )
    finally:
        # What the reader would have seen at the end (or when it failed).
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=SCREENSHOT)
        context.close()
