"""pass@k: the unbiased estimator from samples, and the exact value from coverage.

With ``n`` answers drawn for a prompt of which ``c`` pass the checker, the unbiased estimator of
``pass@k = 1 - (1 - p)^k`` (``p`` the probability of passing) is

    1 - C(n - c, k) / C(n, k),

computed here in log space with log-gamma. Because this laboratory knows ``p = pi(y*|x)`` exactly
(teacher forcing), :func:`exact_pass_at_k` gives the value the estimator estimates. pass@k for large
``k`` is the practitioner's view of coverage (paper section 2): ``1 - (1 - p)^k`` is near 1 as
soon as ``k`` exceeds ``1/p``, so a model whose coverage of the correct answer fell by a decade needs
ten times more attempts.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from covpo.validation import check_count, check_finite_array


def pass_at_k(n: int, correct, ks) -> np.ndarray:
    """Unbiased pass@k estimates for every count in ``correct`` (any shape) and every ``k`` in ``ks``.

    Parameters
    ----------
    n
        Samples drawn per prompt.
    correct
        Number of passing samples per prompt, integers in ``[0, n]``.
    ks
        The ``k`` values, integers in ``[1, n]``.

    Returns
    -------
    numpy.ndarray
        Shape ``correct.shape + (len(ks),)``.
    """
    n = check_count("n", n)
    correct = np.asarray(correct)
    if correct.size and (not np.issubdtype(correct.dtype, np.integer) or correct.min() < 0 or correct.max() > n):
        raise ValueError(f"correct must hold integers in [0, {n}]")
    ks = np.asarray(ks)
    if ks.ndim != 1 or ks.size == 0 or not np.issubdtype(ks.dtype, np.integer) or ks.min() < 1 or ks.max() > n:
        raise ValueError(f"ks must be a 1-d array of integers in [1, {n}], got {ks!r}")
    c = correct[..., None].astype(float)
    k = ks.astype(float)
    failing = n - c
    log_ratio = (gammaln(failing + 1) - gammaln(failing - k + 1)) - (gammaln(n + 1) - gammaln(n - k + 1))
    return np.where(failing < k, 1.0, -np.expm1(np.where(failing < k, 0.0, log_ratio)))


def exact_pass_at_k(log_coverage, ks) -> np.ndarray:
    """``1 - (1 - p)^k`` with ``p = exp(log_coverage)``, in log space (shape ``log_coverage.shape + (len(ks),)``)."""
    log_coverage = check_finite_array("log_coverage", log_coverage)
    if log_coverage.size == 0:
        raise ValueError("log_coverage must hold at least one log-coverage")
    if np.any(log_coverage > 1e-6):
        raise ValueError("log_coverage must be <= 0")
    ks = check_finite_array("ks", ks, ndim=1)
    if ks.size == 0 or np.any(ks < 1):
        raise ValueError(f"ks must be a non-empty 1-d array of numbers >= 1, got {ks!r}")
    with np.errstate(divide="ignore"):
        log_fail = np.log1p(-np.minimum(np.exp(log_coverage), 1.0))[..., None]
    return -np.expm1(ks * log_fail)


def default_ks(n: int) -> np.ndarray:
    """Powers of two from 1 up to ``n`` (``n`` included)."""
    n = check_count("n", n)
    powers = 2 ** np.arange(int(np.floor(np.log2(n))) + 1)
    return np.unique(np.append(powers, n)).astype(int)
