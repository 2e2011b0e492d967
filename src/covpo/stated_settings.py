"""One check per chapter of the settings its text states against the values its cells use.

A chapter's prose gives its settings in words ("batches of 256 responses", "a budget of 32,000
responses"). Those sentences are not results: comparing a configuration value with a literal
cannot fail as the chapter is built. They still have to agree with the code, so each chapter
gathers them in one settings check, :func:`check_stated_settings`, kept apart from the check
cells that test its results.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def _agrees(used: object, stated: object) -> bool:
    if isinstance(used, str) or isinstance(stated, str):
        return used == stated
    used_array, stated_array = np.asarray(used), np.asarray(stated)
    if used_array.shape != stated_array.shape:
        return False
    if used_array.dtype.kind in "fc" or stated_array.dtype.kind in "fc":
        return bool(np.all(np.isclose(used_array, stated_array, rtol=1e-12, atol=0.0)))
    return bool(np.array_equal(used_array, stated_array))


def check_stated_settings(settings: Mapping[str, tuple[object, object]]) -> int:
    """Compare every setting the text states with the value the chapter's cells use.

    Parameters
    ----------
    settings
        ``{description: (value used, value stated)}``. Integers, strings and arrays must be
        equal; floats equal to twelve significant digits (a stated ratio of settings, such as
        a span of coverages, is computed with one rounding).

    Returns
    -------
    int
        How many settings were compared.

    Raises
    ------
    AssertionError
        Listing every setting whose value differs from the text's.
    """
    if not isinstance(settings, Mapping) or not settings:
        raise ValueError(f"settings must be a non-empty mapping of description to (used, stated), got {settings!r}")
    differing = []
    for description, pair in settings.items():
        if not isinstance(description, str) or not isinstance(pair, tuple) or len(pair) != 2:
            raise ValueError(f"settings[{description!r}] must be a pair (value used, value stated), got {pair!r}")
        used, stated = pair
        if not _agrees(used, stated):
            differing.append(f"{description}: the cells use {used!r}, the text states {stated!r}")
    if differing:
        raise AssertionError("settings the text states differ from the code's:\n" + "\n".join(differing))
    return len(settings)
