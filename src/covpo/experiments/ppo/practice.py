"""The common practice recipe of GRPO as :class:`~covpo.experiments.sweeps.Method` records, and the policy the k3 penalty points to (paper appendix H.4)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

from covpo.instances import BanditInstance
from covpo.experiments.sweeps import Method
from covpo.validation import check_instance, check_positive
from covpo.experiments.ppo.checks import _check_log_reference


def practice_recipes(eta: float = 16.0) -> tuple[Method, ...]:
    """The common practice recipe in three variants (our practice notes, not the paper): GRPO-style with the reference fixed at ``pi_0``.

    ``N = 32`` prompts with ``G = 8`` responses, clip ``epsilon = 0.2``, learning rate ``eta``:
    one inner step without KL, one inner step with the k3 penalty toward ``pi_0`` at
    ``beta = 0.05``, and four inner steps without KL. Their ``n_iterations`` is a placeholder
    that :func:`~covpo.experiments.sweeps.compare_at_budget` replaces.
    """
    eta = check_positive("eta", eta)
    common = {"batch_size": 32, "group_size": 8, "clip_epsilon": 0.2, "n_iterations": 1}
    return (
        Method("practice: K = 1, no KL", "grpo_fixed", {"beta": 0.0, "inner_steps": 1, **common}, (eta,)),
        Method("practice: K = 1, k3 KL to base", "grpo_fixed", {"beta": 0.05, "inner_steps": 1, "kl": "k3", **common}, (eta,)),
        Method("practice: K = 4, no KL", "grpo_fixed", {"beta": 0.0, "inner_steps": 4, **common}, (eta,)),
    )


def reverse_kl_optimum(instance: BanditInstance, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """Log-probabilities of ``argmax_pi J(pi) - beta E_x KL(pi_ref || pi)`` over all policies.

    The k3 penalty, differentiated on a batch drawn from ``pi_theta``, follows the gradient of
    this *reverse* KL (:func:`covpo.algorithms.grpo.grpo_gradient`). Per prompt, stationarity gives
    ``pi(y) = beta pi_ref(y) / (lambda - r(y))`` with ``lambda`` in
    ``(max r, max r + beta]`` set by normalization; ``lambda`` is found by
    :func:`scipy.optimize.brentq` from the exact bracket
    ``[max r + beta c_ref / 2, max r + beta]``, ``c_ref`` the reference's coverage, and the
    result is computed in log space. Unlike the forward-KL optimum ``pi_ref exp(r / beta) / Z``, it
    keeps mass of order ``beta pi_ref(y)`` on every response.
    """
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    log_reference = _check_log_reference(instance, log_reference)
    rewards = instance.rewards
    result = np.empty_like(log_reference)
    for x in range(instance.n_prompts):
        best = float(rewards[x].max())
        log_coverage_ref = float(logsumexp(log_reference[x][instance.optimal_mask[x]]))
        log_terms = np.log(beta) + log_reference[x]
        distances = best - rewards[x]

        def excess(shift: float, log_terms: np.ndarray = log_terms, distances: np.ndarray = distances) -> float:
            return float(logsumexp(log_terms - np.log(shift + distances)))

        low = 0.5 * beta * np.exp(log_coverage_ref)
        if excess(beta) >= 0.0:  # every response optimal: the optimum is the reference itself
            shift = beta
        else:
            shift = brentq(excess, low, beta, xtol=1e-15 * beta, rtol=4 * np.finfo(float).eps)
        row = log_terms - np.log(shift + distances)
        result[x] = row - logsumexp(row)
    return result
