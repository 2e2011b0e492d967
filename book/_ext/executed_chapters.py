"""A build handed the chapters' executions renders them instead of executing the chapters again.

The test command runs every chapter under nbval in kernels started as the build's would be, and
keeps each chapter's executed notebook in a jupyter-cache (``tests/chapter_executions.py``). It
then starts the build with the environment variable :data:`EXECUTIONS_VARIABLE` naming that
cache: this extension switches myst-nb to its cache mode on it, so every chapter's outputs come
from nbval's execution and the build executes nothing. A chapter whose code differs from the
cached one (by its code cells' hash) would be executed and cached as usual.

In cache mode myst-nb renders the cached notebook but writes the notebook it read, without
outputs, as the page's executed notebook (the one the site offers for download); in force mode
the two are one object. :func:`merge_cached_outputs_in_place` makes them one object here too,
so the site the tests check is the site the README's build makes.

Without the variable, the build is the README's: ``execute_notebooks: force`` in ``_config.yml``.
"""

from __future__ import annotations

import os
from typing import Any

from myst_nb.core.execute.cache import NotebookClientCache
from sphinx.application import Sphinx
from sphinx.config import Config

EXECUTIONS_VARIABLE = "COVPO_EXECUTED_CHAPTERS"
_start_from_cache = NotebookClientCache.start_client


def merge_cached_outputs_in_place(client: NotebookClientCache) -> None:
    """Start a cache client, then put the cached cells into the notebook the parser holds (and writes)."""
    read = client.notebook
    _start_from_cache(client)
    if client.notebook is not read:
        read.cells, read.metadata = client.notebook.cells, client.notebook.metadata
        client._notebook = read


def use_handed_executions(app: Sphinx, config: Config) -> None:
    if cache := os.environ.get(EXECUTIONS_VARIABLE):
        config.nb_execution_mode = "cache"
        config.nb_execution_cache_path = cache
        NotebookClientCache.start_client = merge_cached_outputs_in_place


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", use_handed_executions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
