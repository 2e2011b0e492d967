"""Chapter 3's study of exact mirror descent: its suboptimality beside its rate bound (paper section 3.1, appendix B.3).

:func:`mirror_descent_rate` runs exact mirror descent (``covpo.run("mirror_descent_exact", ...)``)
on several instances at several ``beta`` and sets :func:`~covpo.algorithms.mirror_descent.mirror_descent_bound`
beside each run; :class:`MirrorDescentRate` holds the result for the chapter's figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.algorithms import run
from covpo.algorithms.mirror_descent import mirror_descent_bound
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, log_coverage
from covpo.validation import check_count, check_instances, check_positive, check_positive_grid


@dataclass(frozen=True, eq=False)
class MirrorDescentRate:
    """Exact mirror descent's suboptimality next to its bound, per instance and ``beta`` (paper appendix B.3).

    Attributes
    ----------
    betas
        The regularization strengths, ``(n_betas,)``.
    iterations
        ``t = 0, ..., T``, ``(T + 1,)``.
    suboptimality
        ``J* - J(pi_t)``, ``(n_instances, n_betas, T + 1)``.
    bound
        ``beta E_x log(1 / c_0(x)) / t`` for ``t >= 1`` (``inf`` at ``t = 0``), same shape.
    eps
        The accuracy target of ``resets_to_eps``.
    resets_to_eps
        The first ``t`` with ``J* - J(pi_t) <= eps``, ``-1`` where not reached by ``T``,
        ``(n_instances, n_betas)``.
    log_inverse_base_coverage
        ``E_x log(1 / c_0(x))`` of each instance, ``(n_instances,)``.
    """

    betas: np.ndarray
    iterations: np.ndarray
    suboptimality: np.ndarray
    bound: np.ndarray
    eps: float
    resets_to_eps: np.ndarray
    log_inverse_base_coverage: np.ndarray


def mirror_descent_rate(
    instances: Sequence[BanditInstance],
    betas: Sequence[float] | np.ndarray,
    n_iterations: int,
    eps: float,
) -> MirrorDescentRate:
    """Run exact mirror descent on each instance at each ``beta`` and set its rate bound beside it.

    Paper section 3.1 (cf. Eq. (18)) and appendix B.3: ``J* - J(pi_T) <= beta E_x log(1 / c_0(x)) / T``
    (:func:`~covpo.algorithms.mirror_descent.mirror_descent_bound`). Because ``pi_T`` depends on ``T / beta`` only
    (:func:`~covpo.algorithms.mirror_descent.mirror_descent_policy`), the resets needed for a given accuracy grow in
    proportion to ``beta``; ``resets_to_eps`` measures it.

    Parameters
    ----------
    instances
        Bandit instances, at least one.
    betas
        Regularization strengths, each ``> 0``.
    n_iterations
        Outer iterations ``T`` per run, ``>= 1``.
    eps
        Accuracy target for ``resets_to_eps``, ``> 0``.
    """
    instances = check_instances("instances", instances, BanditInstance)
    betas = check_positive_grid("betas", betas)
    n_iterations = check_count("n_iterations", n_iterations)
    eps = check_positive("eps", eps)
    iterations = np.arange(n_iterations + 1)
    shape = (len(instances), betas.size, n_iterations + 1)
    suboptimality, bound = np.empty(shape), np.full(shape, np.inf)
    for i, instance in enumerate(instances):
        for j, beta in enumerate(betas):
            exact = run("mirror_descent_exact", instance, beta=beta, n_iterations=n_iterations)
            suboptimality[i, j] = exact.suboptimality
            bound[i, j, 1:] = mirror_descent_bound(instance, beta, iterations[1:])
    reached = suboptimality <= eps
    resets = np.where(reached.any(axis=2), np.argmax(reached, axis=2), -1)
    divergence = np.array(
        [-float(instance.prompt_probs @ log_coverage(instance, base_log_policy(instance))) for instance in instances]
    )
    return MirrorDescentRate(betas, iterations, suboptimality, bound, eps, resets, divergence)
