"""The book's figure type: how it shows itself in a notebook."""

from __future__ import annotations

import base64

from covpo.plots import base
from covpo.plots.base import new_figure

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _figure() -> base.BookFigure:
    figure = new_figure(2.0, 1.0)
    figure.add_subplot().plot([0, 1], [1, 0])
    return figure


def test_a_figure_shows_itself_as_a_png_at_its_design_size():
    figure = _figure()
    data, metadata = figure._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(PNG_SIGNATURE)
    assert metadata["image/png"] == base.display_size(figure)
