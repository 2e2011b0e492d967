"""Numbered references (``{numref}``) resolved from one read of each target page.

Sphinx resolves a numbered reference by loading the whole doctree of the page that holds its
target (``BuildEnvironment.get_doctree``, which un-pickles the page), once per reference, only
to look up the target's node by its id. This book's chapters carry their figures and widget
frames in their doctrees, megabytes each, and refer to their own figures dozens of times, so the
un-pickling alone took several seconds of every build. This extension gives the standard domain
an environment whose ``get_doctree`` keeps each page it has read, for the write phase, when no
page changes any more; the nodes are only read, for their type and number.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.domains.std import StandardDomain
from sphinx.environment import BuildEnvironment

_TARGET_PAGES: dict[str, nodes.document] = {}
"""Doctrees read for numbered references during this write phase, by page name."""


class _EnvironmentReadingTargetsOnce:
    """The build environment, but ``get_doctree`` returns the page read before (for reading only)."""

    def __init__(self, env: BuildEnvironment) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def get_doctree(self, docname: str) -> nodes.document:
        if docname not in _TARGET_PAGES:
            _TARGET_PAGES[docname] = self._env.get_doctree(docname)
        return _TARGET_PAGES[docname]


class StandardDomainReadingTargetsOnce(StandardDomain):
    """Sphinx's standard domain, resolving ``numref`` with :class:`_EnvironmentReadingTargetsOnce`."""

    def _resolve_numref_xref(self, env: BuildEnvironment, *arguments: Any) -> nodes.Element | None:
        return super()._resolve_numref_xref(_EnvironmentReadingTargetsOnce(env), *arguments)


def _forget_target_pages(*_: Any) -> None:
    _TARGET_PAGES.clear()


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_domain(StandardDomainReadingTargetsOnce, override=True)
    # pages are read (and may change) before env-updated; the copies go when the build ends
    app.connect("env-updated", _forget_target_pages)
    app.connect("build-finished", _forget_target_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
