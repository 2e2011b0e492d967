"""Every page's head loads each of its scripts once and names the theme's colour mode.

Two things in the head of every page raised a JavaScript error in the browser:

* **the Thebe settings twice.** sphinx-thebe registers its settings as an inline script
  (``app.add_js_file(None, body=...)``) while the documents are read, when the HTML builder
  already exists, so Sphinx hands the script to the builder at once, under the file name
  ``None``. Before writing, Sphinx 7.4 adds every registered script again, under the file name
  ``filename or ''``, and keeps only scripts it has not seen; ``''`` is not ``None``, so the
  inline script lands in the head twice and the second copy's ``const THEBE_JS_URL`` throws.
  :func:`name_inline_scripts_as_sphinx_does` renames the builder's inline scripts to ``''``
  right after they are registered, so the second addition finds them and adds nothing.
* **no colour mode.** pydata-sphinx-theme reads the mode (light, dark or auto) from the
  reader's stored choice, else from the page context's ``default_mode``, and logs a console
  error when that is empty, as it is where ``html_context`` does not set it: Jupyter Book 1
  writes ``html_context`` itself and has no key for it in ``_config.yml``.
  :func:`default_to_automatic_mode` sets the mode the theme falls back to anyway, ``auto``
  (follow the reader's system), unless the context names one.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.builders.html._assets import _JavaScript
from sphinx.config import Config
from sphinx.environment import BuildEnvironment

#: After every extension's handler of the same event (Sphinx's default priority is 500).
AFTER_EXTENSIONS = 900


def name_inline_scripts_as_sphinx_does(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    """Give the builder's inline scripts the file name ``''`` under which Sphinx adds them again."""
    builder = app.builder
    if isinstance(builder, StandaloneHTMLBuilder):
        builder._js_files[:] = [
            _JavaScript("", priority=script.priority, **script.attributes) if script.filename is None else script
            for script in builder._js_files
        ]


def default_to_automatic_mode(app: Sphinx, config: Config) -> None:
    """Set the page context's ``default_mode`` to ``auto`` where no mode is named."""
    if not (config.html_context or {}).get("default_mode"):
        config.html_context = {**(config.html_context or {}), "default_mode": "auto"}


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", default_to_automatic_mode)
    app.connect("env-before-read-docs", name_inline_scripts_as_sphinx_does, priority=AFTER_EXTENSIONS)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
