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
