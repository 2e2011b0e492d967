"""What every algorithm's inner step shares: a checked gradient step and the checks of its size and strength.

The algorithms in :mod:`covpo.algorithms` write their loops out in full (their bookkeeping is
:class:`covpo.algorithms.outer_loop.OuterLoop`). :func:`ascent_step` refuses to hand back a
non-finite iterate, :func:`check_step_stability` warns once at the start of a run whose
learning rate is far beyond the stable range of its KL term, :func:`finite_result` names
``beta`` when a public loss or gradient leaves the floating-point range, and
:func:`check_squared_loss_beta` bounds the strength of the squared losses of paper section 4.
"""

from __future__ import annotations

import warnings
from typing import NoReturn

import numpy as np

from covpo.instances import BanditInstance
from covpo.policy_classes import PolicyClass, SoftmaxLinear
from covpo.validation import (
    check_count,
    check_instance,
    check_nonnegative,
    check_option,
    check_positive,
    check_real_array,
    check_text,
)

STABILITY_MARGIN = 100.0
"""How far beyond the stable range ``eta * curvature < 2`` a step must be before :func:`check_step_stability` warns.

The curvature bound is a worst case over every response and direction, so learning rates a
few times past it still make progress in practice: the book's runs reach at most 12.8 times
``2 / curvature`` (REINFORCE with a KL penalty, ``eta = 512`` and ``beta = 0.05`` on the collapse
family, in the head-to-head comparison of the implications chapter). A factor of 100 leaves room
for them and flags settings such as ``eta = 1`` with ``beta = 1e8``, where the KL term alone is
eight orders of magnitude past it.
"""

#: The loss whose curvature a step must respect, as ``(coefficient, power of beta)``:
#: ``"kl"``, the KL penalty ``beta KL(pi_theta || pi_ref)`` of REINFORCE, APMD, PPO and GRPO,
#: whose Hessian is ``beta`` times the Fisher information; ``"kimi"``, the squared loss of
#: KimiPO and KimiPO-Norm, ``2 beta^2 E[s s^T]`` near ``theta_t`` (paper appendix I); ``"rebel"``,
#: the pairwise loss of Rebel-OnPolicy, ``4 beta^2 E_x Cov_{pi_t}(phi)`` (paper appendix L).
CURVATURES: dict[str, tuple[float, int]] = {"kl": (1.0, 1), "kimi": (2.0, 2), "rebel": (4.0, 2)}


class UnstableStepWarning(RuntimeWarning):
    """A learning rate far beyond the stable range of the run's KL term: the run will not approach its target."""


def feature_scale(instance: BanditInstance, policy: PolicyClass | None = None) -> float | None:
    """``max_{x, y} ||phi(x, y)||^2``, the bound on the Fisher information of the softmax-linear class (paper section 2.2).

    The Fisher information ``E_x Cov_{pi_theta}(phi)`` of a softmax-linear policy is a covariance
    of features, so its largest eigenvalue is at most the largest squared feature norm, at every
    ``theta``. ``None`` for another policy class (``policy`` not :class:`~covpo.policy_classes.SoftmaxLinear`), whose
    curvature this bound does not cover.
    """
    check_instance("instance", instance, BanditInstance)
    if policy is not None and not isinstance(policy, SoftmaxLinear):
        return None
    features = instance.features if policy is None else policy.instance.features
    return float(np.max(np.einsum("xyd,xyd->xy", features, features)))


def check_step_stability(
    algorithm: str, eta: float, beta: float, scale: float | None, loss: str = "kl"
) -> None:
    """Warn (:class:`UnstableStepWarning`) if ``eta`` is far beyond the stable range of the run's KL term.

    One rule for every algorithm with a KL step. Its loss has curvature at most
    ``c beta^p scale`` (:data:`CURVATURES`: ``beta scale`` for the KL penalty, ``2 beta^2 scale``
    for KimiPO's squared loss, ``4 beta^2 scale`` for Rebel's), with ``scale`` the largest
    squared feature norm (:func:`feature_scale`), so a gradient step is stable for every
    direction only if ``eta c beta^p scale < 2``. The warning fires when ``eta`` exceeds that
    range by more than :data:`STABILITY_MARGIN`, and gives the stable range. ``scale=None``
    (a policy class without the bound) or ``beta = 0`` (no KL term) never warns. NPG needs no
    check: its step ``w / beta`` is preconditioned by the inverse Fisher information, so its
    step size times its curvature is 1 by construction (paper appendix M).

    Parameters
    ----------
    algorithm
        The algorithm's name, for the message.
    eta, beta
        The run's learning rate, ``> 0``, and KL strength, ``>= 0``.
    scale
        ``max ||phi||^2`` of the policy class, ``>= 0``, or ``None``.
    loss
        A key of :data:`CURVATURES`.
    """
    check_text("algorithm", algorithm)
    loss = check_option("loss", loss, tuple(CURVATURES))
    eta, beta = check_positive("eta", eta), check_nonnegative("beta", beta)
    if scale is None:
        return
    coefficient, power = CURVATURES[loss]
    scale = check_nonnegative("scale", scale)
    with np.errstate(over="ignore"):
        curvature = float(coefficient * np.float64(beta) ** power * scale)
    if curvature <= 0.0 or eta * curvature <= 2.0 * STABILITY_MARGIN:
        return
    term = {1: "beta", 2: "beta^2"}[power]
    factor = "" if coefficient == 1.0 else f"{coefficient:g} "
    warnings.warn(
        f"{algorithm}: eta = {eta!r} with beta = {beta!r} is {eta * curvature / 2.0:.3g} times the stable step "
        f"size of its KL term; a step is stable for eta * {factor}{term} * max ||phi||^2 < 2, here "
        f"eta < {2.0 / curvature:.3g} (max ||phi||^2 = {scale:.3g}), so the run will not approach its target",
        UnstableStepWarning,
        stacklevel=3,
    )


def finite_result(result: np.ndarray | float, beta: float) -> np.ndarray | float:
    """``result`` if it is finite; else ``ValueError`` naming ``beta``, the strength whose product left the float range.

    The public losses and gradients of the algorithms multiply log-ratios by ``beta`` (or
    ``beta^2``); a valid but astronomically large ``beta`` (``1e300``) overflows there. The runs
    call unchecked versions instead, so a diverging run still stops with ``FloatingPointError``.
    """
    if not np.all(np.isfinite(result)):
        raise ValueError(
            f"beta = {beta!r} (with these theta) is too large: the result leaves the floating-point range"
        )
    return result


def ascent_step(theta: np.ndarray, eta: float, direction: np.ndarray, iteration: int, inner_step: int) -> np.ndarray:
    """``theta + eta direction``, or ``FloatingPointError`` naming the outer iteration and inner step if it is not finite.

    A learning rate too large for the importance weights sends ``theta`` to infinity in a
    step or two; the error says where (``inner_step`` counts from 1). Descent is
    ``ascent_step(theta, -eta, gradient, ...)`` written as ``theta - eta gradient``.
    """
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            stepped = theta + eta * direction
    except (TypeError, ValueError):
        _reject_step(theta, eta, direction)
    if not np.all(np.isfinite(stepped)):
        raise FloatingPointError(
            f"theta became non-finite at outer iteration {iteration}, inner step {inner_step}; "
            f"eta = {abs(eta)!r} is too large for these importance weights"
        )
    return stepped


def _reject_step(theta: object, eta: object, direction: object) -> NoReturn:
    """Raise the ``ValueError`` naming what made :func:`ascent_step` impossible: not real numbers, or mismatched shapes.

    Called only once the step has failed, so the inner loops pay nothing for it.
    """
    theta = check_real_array("theta", theta)
    check_real_array("eta", eta, ndim=0)
    direction = check_real_array("direction", direction)
    raise ValueError(f"direction must have the shape of theta {theta.shape}, got shape {direction.shape}")


MAX_BETA = float(np.sqrt(np.finfo(float).max))
"""The largest ``beta`` the squared losses accept: they scale with ``beta^2``, which must stay finite."""


def check_squared_loss_beta(beta: float, name: str = "beta") -> float:
    """Return ``beta`` if it is finite, ``> 0`` and its square is finite (the squared losses of paper section 4 scale with ``beta^2``)."""
    beta = check_positive(name, beta)
    if beta >= MAX_BETA:
        raise ValueError(f"{name} must be below {MAX_BETA:.3g} (the squared losses scale with {name}^2), got {beta!r}")
    return beta


def check_sampled_apmd(*, beta: float, eta: float, n_iterations: int, batch_size: int, inner_steps: int) -> dict[str, object]:
    """The rules every sampled instance of APMD applies to the hyperparameters they share (paper section 3.1).

    ``beta > 0`` (a reset subproblem needs a KL term), ``eta > 0``, and counts ``T``, ``N`` and
    ``K`` of at least 1; returned checked. Each algorithm's own validator starts from these.
    """
    return {
        "beta": check_positive("beta", beta),
        "eta": check_positive("eta", eta),
        "n_iterations": check_count("n_iterations", n_iterations),
        "batch_size": check_count("batch_size", batch_size),
        "inner_steps": check_count("inner_steps", inner_steps),
    }
