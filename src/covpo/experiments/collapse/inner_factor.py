"""How one exact inner step of APMD shrinks, or flips, the inner problem's error along ``u`` (chapter 3, paper section 3.1).

Near a reference that gives the optimal response and the distractor equal mass, the inner
objective ``J_beta(pi_theta; pi_ref)`` is, to second order around its target, ``-beta/2`` times
the policy's covariance of the logits, so a gradient step multiplies the error of
``u = theta_opt - theta_dis`` by ``1 - eta * beta * (1 - z) / 2``, ``z`` the zero block's mass (our
linearization). :func:`inner_error_factors` measures the factor step by step, on the
reduced three-class state with exact gradients; :func:`equal_mass_resets` counts the resets
an APMD run spends near equal masses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo.collapse_instance import DISTRACTOR, OPTIMAL, CollapseInstance, _check_instance
from covpo.validation import check_count, check_positive, check_probability

from .engine import CollapseRun


@dataclass(frozen=True)
class InnerErrorFactors:
    """One inner loop of exact APMD from an equal-mass reference.

    Attributes
    ----------
    beta, eta
        The strength and the learning rate.
    errors
        ``u_k - u*`` at inner steps ``k = 0, ..., n_steps`` (``u*`` is the target's ``u``).
    factors
        ``errors[k + 1] / errors[k]``, the measured factor of each step.
    predicted
        ``1 - eta * beta * (1 - z) / 2``, the linearized factor.
    """

    beta: float
    eta: float
    errors: np.ndarray
    factors: np.ndarray
    predicted: float


def inner_error_factors(
    instance: CollapseInstance, beta: float, eta: float, n_steps: int = 8, zero_mass: float = 1e-3
) -> InnerErrorFactors:
    """Run one inner loop of ``n_steps`` exact gradient steps on ``J_beta(pi; pi_ref)`` from ``pi_ref``.

    The reference gives the optimal response and the distractor equal mass and the zero block
    ``zero_mass``. Each member's logit moves by ``eta`` times its own gradient,
    ``pi(y) [(r(y) - J) - beta (log(pi(y) / pi_ref(y)) - KL)]``, the per-member gradient of the
    tabular objective, so the block's multiplicity enters through its members' probabilities.
    The target ``pi_ref exp(r / beta) / Z`` has ``u* = gap / beta``.
    """
    instance = _check_instance(instance)
    beta = check_positive("beta", beta)
    eta = check_positive("eta", eta)
    n_steps = check_count("n_steps", n_steps)
    zero_mass = check_probability("zero_mass", zero_mass)
    multiplicity = np.array([1.0, 1.0, float(instance.n_zero)])
    logits = np.array([0.0, 0.0, np.log(2.0 * zero_mass / (instance.n_zero * (1.0 - zero_mass)))])

    def class_masses(theta: np.ndarray) -> np.ndarray:
        weights = multiplicity * np.exp(theta - theta.max())
        return weights / weights.sum()

    reference = class_masses(logits)
    target_u = instance.gap / beta
    errors = [logits[OPTIMAL] - logits[DISTRACTOR] - target_u]
    theta = logits.copy()
    for _ in range(n_steps):
        masses = class_masses(theta)
        log_ratio = np.log(masses / reference)
        reward = masses @ instance.rewards
        kl = masses @ log_ratio
        member = masses / multiplicity
        theta = theta + eta * member * ((instance.rewards - reward) - beta * (log_ratio - kl))
        errors.append(theta[OPTIMAL] - theta[DISTRACTOR] - target_u)
    errors = np.array(errors)
    with np.errstate(divide="ignore", invalid="ignore"):
        factors = errors[1:] / errors[:-1]
    if not (np.all(np.isfinite(errors)) and np.all(np.isfinite(factors))):
        raise FloatingPointError(
            f"the inner loop's errors overflowed at beta = {beta!r}, eta = {eta!r} (the steps scale with eta * beta)"
        )
    return InnerErrorFactors(
        beta=beta,
        eta=eta,
        errors=errors,
        factors=factors,
        predicted=1.0 - eta * beta * (1.0 - zero_mass) / 2.0,
    )


def equal_mass_resets(run: CollapseRun, inner_steps: int, ratio: float = 2.0) -> tuple[int, int]:
    """How many references of an APMD run give the optimal response and the distractor masses within ``ratio`` of each other.

    Counts the recorded resets after the base model (recorded steps that are positive multiples
    of ``inner_steps``); ``run`` must record every one of them. Returns ``(near_equal, resets)``.
    """
    if not isinstance(run, CollapseRun):
        raise ValueError(f"run must be a CollapseRun, got {type(run).__name__}")
    inner_steps = check_count("inner_steps", inner_steps)
    ratio = check_positive("ratio", ratio)
    if ratio <= 1.0:
        raise ValueError(f"ratio must be > 1, got {ratio!r}")
    steps = run.trajectory.gradient_steps
    at_resets = (steps % inner_steps == 0) & (steps > 0)
    log_masses = run.class_log_probs[at_resets]
    near = np.abs(log_masses[:, OPTIMAL] - log_masses[:, DISTRACTOR]) < np.log(ratio)
    return int(near.sum()), int(at_resets.sum())
