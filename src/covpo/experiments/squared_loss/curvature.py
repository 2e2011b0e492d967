"""The curvature of the population squared losses around ``theta_t`` (paper section 4.2, appendices I.3 and J.1).

:func:`curvature_scan` finds the smallest Hessian eigenvalue of each loss over a ball around
``theta_t``; :func:`loss_slice` evaluates the losses along a line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from covpo.instances import BanditInstance, tabular_instance
from covpo.policies import log_policy
from covpo.experiments.population import (
    kimi_population_hessian,
    kimi_population_loss,
    mean_baseline_moments,
    normalizer,
    normalizer_baseline_moments,
    rebel_population_hessian,
    rebel_population_loss,
)
from covpo.table import Table
from covpo.validation import (
    check_count,
    check_finite_array,
    check_generator,
    check_instance,
    check_log_distribution,
    check_positive,
    check_probability,
    check_shape,
)
from covpo.experiments.squared_loss.checks import _check_theta


NEGATIVE_CURVATURE_TOLERANCE = 1e-12
"""Eigenvalues above ``-1e-12`` count as zero: rounding leaves about ``1e-17`` on a flat direction."""
LOSSES = ("KimiPO (mean)", "KimiPO-Norm (E bhat, G)", "exact normalizer", "Rebel-OnPolicy")
"""The population losses compared by :func:`curvature_scan` and :func:`loss_slice`."""


def two_response_instance(optimal_prob: float) -> BanditInstance:
    """One prompt, two responses with rewards 1 and 0, the optimal one at base probability ``optimal_prob``.

    Tabular (``d = 2``); the smallest instance on which KimiPO-Norm's loss is not convex.
    """
    optimal_prob = check_probability("optimal_prob", optimal_prob)
    return tabular_instance(np.array([[1.0, 0.0]]), np.array([[optimal_prob, 1.0 - optimal_prob]]))


def population_baselines(
    instance: BanditInstance, log_reference: np.ndarray, beta: float, group_size: int
) -> dict[str, np.ndarray]:
    """The expected baselines of :data:`LOSSES` (Rebel needs none): ``V_t``, ``E bhat_G`` and ``b_t``."""
    instance = check_instance("instance", instance, BanditInstance)
    log_reference = check_shape("log_reference", check_log_distribution("log_reference", log_reference), instance.rewards.shape)
    beta = check_positive("beta", beta)
    group_size = check_count("group_size", group_size)
    return {
        LOSSES[0]: mean_baseline_moments(instance, log_reference).mean,
        LOSSES[1]: normalizer_baseline_moments(instance, log_reference, beta, group_size).mean,
        LOSSES[2]: normalizer(instance, log_reference, beta),
    }


def _population_losses(
    instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float, baselines: dict
) -> np.ndarray:
    kimi = [kimi_population_loss(instance, theta, log_reference, beta, b) for b in baselines.values()]
    return np.array([*kimi, rebel_population_loss(instance, theta, log_reference, beta)])


@dataclass(frozen=True, eq=False)
class CurvatureScan:
    """Smallest Hessian eigenvalue of each population loss at random points of a ball around ``theta_t``.

    Attributes
    ----------
    names
        :data:`LOSSES`.
    radius
        Radius of the ball (Euclidean, in parameter space).
    min_eigenvalue
        ``(n_losses, n_points)``: the smallest eigenvalue at each point.
    at_reference
        ``(n_losses,)``: the smallest eigenvalue at ``theta_t`` itself.
    """

    names: tuple[str, ...]
    radius: float
    min_eigenvalue: np.ndarray
    at_reference: np.ndarray

    def negative_share(self) -> np.ndarray:
        """Per loss, the share of points whose smallest eigenvalue is below ``-NEGATIVE_CURVATURE_TOLERANCE``."""
        return np.mean(self.min_eigenvalue < -NEGATIVE_CURVATURE_TOLERANCE, axis=1)

    def summary(self) -> str:
        """Per loss: the smallest eigenvalue at ``theta_t`` and over the ball, and the share of points with a negative one."""
        return "\n".join(
            f"{name:26} at theta_t {ref: .3e}, min over ball {values.min(): .3e}, "
            f"negative (below -{NEGATIVE_CURVATURE_TOLERANCE:g}) at {share:.0%} of points"
            for name, ref, values, share in zip(self.names, self.at_reference, self.min_eigenvalue, self.negative_share())
        )

    def table_rows(self, label: str) -> tuple[tuple[str, str, float, float, float], ...]:
        """Rows of :func:`curvature_table` for this scan, whose instance is called ``label``."""
        return tuple(
            (label, name, float(ref), float(values.min()), float(100 * share))
            for name, ref, values, share in zip(self.names, self.at_reference, self.min_eigenvalue, self.negative_share())
        )


def curvature_table(scans: dict[str, CurvatureScan]) -> Table:
    """Several :class:`CurvatureScan` records as one table: one row per instance and loss."""
    if not isinstance(scans, Mapping):
        raise ValueError(f"scans must be a mapping of names to CurvatureScan, got {scans!r}")
    for scan in scans.values():
        check_instance("scans", scan, CurvatureScan)
    radius = {scan.radius for scan in scans.values()}
    return Table(
        ("instance", "loss", "at $\\theta_t$", "lowest over the ball", "negative at (% of points)"),
        tuple(row for label, scan in scans.items() for row in scan.table_rows(label)),
        caption="Smallest eigenvalue of each population loss's Hessian",
        notes=(f"Over points drawn uniformly from the ball of radius {', '.join(f'{r:g}' for r in sorted(radius))} "
               f"around $\\theta_t$; negative: below −{NEGATIVE_CURVATURE_TOLERANCE:g}.",),
    )


def curvature_scan(
    instance: BanditInstance,
    reference_theta: np.ndarray,
    beta: float,
    group_size: int,
    *,
    radius: float,
    n_points: int,
    rng: np.random.Generator,
) -> CurvatureScan:
    """Scan the convexity of the Kimi-style and pairwise population losses (paper appendices I, J.1 and L.2).

    Points are drawn uniformly from the ball of ``radius`` around ``theta_t`` with ``rng``.
    The mean baseline's loss is globally convex and Rebel's Hessian is constant, so their
    smallest eigenvalues are ``>= 0`` up to rounding everywhere; a baseline above ``V_t`` (the
    normalizer's) can make the Hessian indefinite away from the target.
    """
    reference_theta = _check_theta(instance, reference_theta)
    beta = check_positive("beta", beta)
    group_size = check_count("group_size", group_size)
    radius = check_positive("radius", radius)
    n_points = check_count("n_points", n_points)
    rng = check_generator("rng", rng)
    log_reference = log_policy(instance, reference_theta)
    baselines = population_baselines(instance, log_reference, beta, group_size)
    directions = rng.normal(size=(n_points, instance.dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    points = reference_theta + radius * rng.uniform(size=(n_points, 1)) ** (1.0 / instance.dim) * directions
    rebel = float(np.linalg.eigvalsh(rebel_population_hessian(instance, log_reference, beta))[0])

    def smallest(theta: np.ndarray) -> np.ndarray:
        kimi = [
            np.linalg.eigvalsh(kimi_population_hessian(instance, theta, log_reference, beta, b))[0]
            for b in baselines.values()
        ]
        return np.array([*kimi, rebel])

    return CurvatureScan(
        names=LOSSES,
        radius=radius,
        min_eigenvalue=np.stack([smallest(theta) for theta in points], axis=1),
        at_reference=smallest(reference_theta),
    )


@dataclass(frozen=True, eq=False)
class LossSlice:
    """The population losses along ``theta_t + s (theta* - theta_t)``, ``theta*`` the target's parameters.

    Attributes
    ----------
    names
        :data:`LOSSES`.
    steps
        The positions ``s`` (``0``: ``theta_t``; ``1``: the target).
    losses
        ``(n_losses, n_steps)``.
    """

    names: tuple[str, ...]
    steps: np.ndarray
    losses: np.ndarray

    def argmin(self) -> np.ndarray:
        """Position ``s`` of each loss's smallest value along the slice."""
        return self.steps[np.argmin(self.losses, axis=1)]

    def table(self, caption: str = "") -> Table:
        """Per loss: where along the slice it is smallest, its value there and its value at the target (``s = 1``)."""
        target = int(np.argmin(np.abs(self.steps - 1.0)))
        rows = tuple(
            (name, float(self.steps[np.argmin(losses)]), float(losses.min()), float(losses[target]))
            for name, losses in zip(self.names, self.losses)
        )
        return Table(
            ("loss", "minimizer s", "loss there", f"loss at s = {self.steps[target]:g}"),
            rows,
            caption=caption or "Population losses along $\\theta_t + s\\,(\\theta^\\star - \\theta_t)$",
            notes=("$s = 0$ is $\\theta_t$ and $s = 1$ the target; the minimizer is the best point of the grid of s.",),
        )


def loss_slice(
    instance: BanditInstance, reference_theta: np.ndarray, beta: float, group_size: int, steps: Sequence[float]
) -> LossSlice:
    """Evaluate every population loss of :data:`LOSSES` along the line from ``theta_t`` through the target.

    The target's parameters are ``theta_t + theta_star / beta`` for a linear reward
    (the instance's ``reward_theta``); the instance must have one.
    """
    reference_theta = _check_theta(instance, reference_theta)
    beta = check_positive("beta", beta)
    group_size = check_count("group_size", group_size)
    steps = check_finite_array("steps", steps, ndim=1)
    if steps.size == 0:
        raise ValueError("steps must hold at least one step along the slice")
    if instance.reward_theta is None:
        raise ValueError("instance has no reward_theta: the slice needs a linear reward to place the target")
    log_reference = log_policy(instance, reference_theta)
    baselines = population_baselines(instance, log_reference, beta, group_size)
    direction = instance.reward_theta / beta
    losses = np.stack(
        [_population_losses(instance, reference_theta + s * direction, log_reference, beta, baselines) for s in steps],
        axis=1,
    )
    return LossSlice(names=LOSSES, steps=steps, losses=losses)
