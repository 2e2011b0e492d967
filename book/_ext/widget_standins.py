"""The book's build asks every widget for its static stand-in, and every progress bar for silence.

A widget of the book (``covpo.plots.widgets``) renders the stand-in that a reader of the static
site explores, a grid of precomputed frames, only when the environment variable
``covpo.static_pages`` names is ``1``: a live front end shows the live widget instead, so a
chapter run in JupyterLab or Binder skips those frames. The same variable keeps the package's
progress bars out of the executed notebooks the site offers for download. Sphinx loads this
extension before any chapter executes; it sets the variable in the build's process, and the
kernels that execute the chapters inherit it.
"""

from __future__ import annotations

import os
from typing import Any

from sphinx.application import Sphinx

from covpo.static_pages import STANDINS_VARIABLE


def setup(app: Sphinx) -> dict[str, Any]:
    os.environ[STANDINS_VARIABLE] = "1"
    return {"parallel_read_safe": True, "parallel_write_safe": True}
