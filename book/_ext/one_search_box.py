"""One search box on every page: the one at the top of the sidebar.

sphinx-book-theme puts a search field at the top of its sidebar, and pydata-sphinx-theme (0.16
and later) adds another to its own header bar unless the theme option ``navbar_persistent`` is
set: every page showed two search boxes, the second alone in a 64 px bar above the page. Jupyter
Book writes the theme options from its own ``html`` settings, with no place for this one, so this
extension sets it to an empty list before the theme reads its options. The header bar then has
nothing to hold and is not drawn; on a narrow screen the article's header keeps its search button.
An option the configuration sets explicitly is left alone.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config


def no_search_field_in_the_header(app: Sphinx, config: Config) -> None:
    """Leave the header bar's search field out, unless ``navbar_persistent`` is set already."""
    config.html_theme_options = {**config.html_theme_options}
    config.html_theme_options.setdefault("navbar_persistent", [])


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", no_search_field_in_the_header)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
