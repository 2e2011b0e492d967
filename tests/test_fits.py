"""The least-squares line behind every scaling fit."""

from __future__ import annotations

import numpy as np
import pytest

from covpo.fits import fit_line


def test_exact_line_is_recovered():
    x = np.linspace(1.0, 5.0, 9)
    fit = fit_line(x, 2.5 * x - 1.0)
    assert fit.slope == pytest.approx(2.5) and fit.intercept == pytest.approx(-1.0)
    assert fit.r_squared == pytest.approx(1.0) and fit.max_abs_residual < 1e-12 and fit.n_points == 9


def test_noise_lowers_r_squared_and_shows_in_the_residual():
    x = np.arange(6.0)
    y = x + np.array([0.0, 0.3, -0.3, 0.3, -0.3, 0.0])
    fit = fit_line(x, y)
    assert 0.9 < fit.r_squared < 1.0
    assert fit.max_abs_residual > 0.2


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.array([1.0, np.nan, 3.0]), np.array([1.0, 2.0, 3.0]), "x must be finite"),
        (np.array([1.0, 2.0, 3.0]), np.array([1.0, np.inf, 3.0]), "y must be finite"),
        (np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]), "x and y must have the same length"),
        (np.array([2.0, 2.0]), np.array([1.0, 3.0]), "x must hold at least two distinct values"),
        (np.array([[1.0, 2.0]]), np.array([1.0, 2.0]), "x must have 1 dimension"),
        ("x", np.array([1.0]), "x must be an array of numbers"),
    ],
)
def test_bad_points_raise_naming_the_argument(x, y, message):
    with pytest.raises(ValueError, match=message):
        fit_line(x, y)
