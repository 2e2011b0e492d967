"""Least-squares straight lines, the one fit behind every scaling law the book reports.

Exponential growth in ``1/gap`` (chapter 2), power laws in ``1/gap`` (chapter 3) and in
``C_cov`` (chapter 4) are all straight lines after taking logarithms; each chapter's fit
transforms its data and calls :func:`fit_line`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo.validation import check_finite_array


@dataclass(frozen=True)
class LineFit:
    """``y = intercept + slope x`` fitted by least squares.

    Attributes
    ----------
    slope, intercept
        The fitted line.
    r_squared
        Coefficient of determination (1 when ``y`` is constant).
    max_abs_residual
        Largest distance of a point from the line, in the units of ``y``.
    n_points
        Number of points fitted.
    """

    slope: float
    intercept: float
    r_squared: float
    max_abs_residual: float
    n_points: int


def fit_line(x: np.ndarray, y: np.ndarray) -> LineFit:
    """Fit a straight line through ``(x, y)`` by least squares; inputs are already transformed.

    ``x`` and ``y`` are finite one-dimensional arrays of the same length, with at least two distinct ``x``.
    """
    x = check_finite_array("x", x, ndim=1)
    y = check_finite_array("y", y, ndim=1)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.size} and {y.size}")
    if np.unique(x).size < 2:
        raise ValueError(f"x must hold at least two distinct values to fit a line, got {x.tolist()!r}")
    slope, intercept = np.polyfit(x, y, 1)
    residuals = y - (intercept + slope * x)
    spread = float(np.sum((y - y.mean()) ** 2))
    r_squared = 1.0 - float(np.sum(residuals**2)) / spread if spread > 0.0 else 1.0
    return LineFit(float(slope), float(intercept), r_squared, float(np.abs(residuals).max()), int(x.size))
