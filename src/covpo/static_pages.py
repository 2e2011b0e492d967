"""Whether this process executes a chapter for the book's static pages.

The book's build sets the environment variable :data:`STANDINS_VARIABLE` to ``1`` for the
kernels that execute its chapters, and the test command starts the kernels in which it runs the
chapters the same way. What such a kernel computes goes onto a page and into the notebook the
page offers for download, where no one watches it run, so:

* every widget makes its static stand-in instead of live controls (:mod:`covpo.plots.widgets`);
* progress bars stay silent: a bar left in a notebook's outputs tells its reader nothing.

A kernel without the variable (JupyterLab, Binder, a plain Jupyter) shows live widgets and
progress bars.
"""

from __future__ import annotations

import os

#: The environment variable that marks a kernel executing a chapter for the static pages.
STANDINS_VARIABLE = "COVPO_STATIC_STANDINS"


def standins_requested() -> bool:
    """Whether this process executes a chapter for the static pages: :data:`STANDINS_VARIABLE` is ``1``."""
    return os.environ.get(STANDINS_VARIABLE) == "1"
