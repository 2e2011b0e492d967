"""Views for the figures: the objective over the ``(u, v)`` plane and the path on the simplex (paper appendix C.1).

The three-logit state is exactly two-dimensional up to a common shift (see
:mod:`covpo.collapse_instance`), so a surface over the plane and a run drawn on it lose
nothing; the simplex of class masses is the other exact view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from covpo.trajectory import LOG10_E
from covpo.validation import check_count, check_finite_array

from .engine import CollapseRun
from covpo.collapse_instance import (
    CollapseInstance,
    _check_beta,
    _check_instance,
    _state_summary,
    class_log_probs,
    logits_from_plane,
    plane_coordinates,
)


@dataclass(frozen=True)
class Landscape:
    """The regularized objective over the ``(u, v)`` plane, with a run drawn on it (paper Figs. 2b and 2c, appendix C.1).

    Attributes
    ----------
    u, v
        Grid coordinates relative to the base model, shapes ``(n_u,)`` and ``(n_v,)``.
    objective
        ``J_beta(pi; pi_ref)`` on the grid, ``(n_v, n_u)`` (plain ``J`` when ``beta`` is ``None``);
        the reference is the base model unless another was given.
    reward, log10_coverage
        ``J`` and base-10 log coverage on the grid.
    beta
        The KL strength of the surface.
    path
        ``(u, v)`` of the run's records, ``(n_records, 2)``, or ``None`` without a run.
    path_objective
        The surface's objective along the run, or ``None``.
    reference
        ``(u, v)`` of the reference ``pi_ref``; the base model sits at the origin.
    """

    u: np.ndarray
    v: np.ndarray
    objective: np.ndarray
    reward: np.ndarray
    log10_coverage: np.ndarray
    beta: float | None
    path: np.ndarray | None
    path_objective: np.ndarray | None
    reference: np.ndarray = field(default_factory=lambda: np.zeros(2))


def _objective_at(
    instance: CollapseInstance, logits: np.ndarray, beta: float | None, reference_log_probs: np.ndarray
) -> dict[str, np.ndarray]:
    """The state summary plus ``J_beta(pi; pi_ref)``, the reference given by its class log masses."""
    summary = _state_summary(instance, logits)
    if beta is None:
        return {**summary, "objective": summary["reward"]}
    log_masses = summary["log_masses"]
    kl = np.maximum(np.sum(np.exp(log_masses) * (log_masses - reference_log_probs), axis=-1), 0.0)
    return {**summary, "objective": summary["reward"] - beta * kl}


def landscape_grid(
    instance: CollapseInstance,
    beta: float | None = None,
    run: CollapseRun | None = None,
    u: Sequence[float] | np.ndarray | None = None,
    v: Sequence[float] | np.ndarray | None = None,
    n_points: int = 101,
    reference: np.ndarray | None = None,
) -> Landscape:
    """``J_beta(.; pi_ref)``, reward and log10 coverage over the ``(u, v)`` plane (paper Eq. (5), appendix C.1).

    The three-logit state is exactly two-dimensional up to a common shift, so the surface
    and the projected run are exact, not a projection that loses information. By default the
    grid covers the run's path (or the base model's neighbourhood) with a margin, and the
    reference is the base model; APMD's surfaces pass the policy of each reset instead.

    Parameters
    ----------
    instance
        The collapse instance.
    beta
        KL strength toward the base model of the plotted objective; ``None`` plots ``J``.
    run
        A run to draw on the surface; its instance must be ``instance``.
    u, v
        Grid coordinates relative to the base model; chosen automatically when omitted.
    n_points
        Grid size per axis when ``u`` or ``v`` is omitted.
    reference
        Per-member logits ``(theta_opt, theta_dis, theta_zero)`` of the reference ``pi_ref``;
        ``None`` means the base model.
    """
    instance = _check_instance(instance)
    beta = _check_beta(beta)
    n_points = check_count("n_points", n_points, minimum=2)
    if reference is None:
        reference_logits, reference_log_probs = instance.base_logits, instance.base_class_log_probs
    else:
        reference_logits = check_finite_array("reference", reference, ndim=1)
        if reference_logits.shape != (3,):
            raise ValueError(f"reference must hold the three per-member logits, got shape {reference_logits.shape}")
        reference_log_probs = class_log_probs(instance, reference_logits)
    if run is not None and not isinstance(run, CollapseRun):
        raise ValueError(f"run must be a CollapseRun or None, got {type(run).__name__} {run!r}")
    path = None if run is None else run.plane
    if run is not None and run.instance != instance:
        raise ValueError("run must come from the same instance as the landscape")

    def axis(name: str, values: object, column: int) -> np.ndarray:
        if values is not None:
            grid = check_finite_array(name, values, ndim=1)
            if grid.size == 0:
                raise ValueError(f"{name} must hold at least one coordinate, got {values!r}")
            return grid
        extent = np.array([0.0, 0.0]) if path is None else np.array([path[:, column].min(), path[:, column].max()])
        low, high = min(extent[0], 0.0) - 2.0, max(extent[1], 0.0) + 2.0
        return np.linspace(low, high, n_points)

    u_values, v_values = axis("u", u, 0), axis("v", v, 1)
    grid_u, grid_v = np.meshgrid(u_values, v_values)
    surface = _objective_at(instance, logits_from_plane(instance, grid_u, grid_v), beta, reference_log_probs)
    path_objective = None
    if run is not None:
        path_objective = _objective_at(instance, run.logits, beta, reference_log_probs)["objective"]
    return Landscape(
        u=u_values,
        v=v_values,
        objective=surface["objective"],
        reward=surface["reward"],
        log10_coverage=surface["log_coverage"] * LOG10_E,
        beta=beta,
        path=path,
        path_objective=path_objective,
        reference=plane_coordinates(instance, reference_logits),
    )


@dataclass(frozen=True)
class SimplexPath:
    """Mass on (optimal, distractor, zero block) along a run.

    Attributes
    ----------
    gradient_steps
        Step of each record.
    log10_masses
        Base-10 log mass of each class, ``(n_records, 3)``; exact even where a mass underflows.
    """

    gradient_steps: np.ndarray
    log10_masses: np.ndarray

    @property
    def masses(self) -> np.ndarray:
        """The masses themselves (rows sum to one), for plotting on the simplex."""
        return 10.0**self.log10_masses


def simplex_path(run: CollapseRun) -> SimplexPath:
    """Masses on the three classes at every record of an exact run (paper section 2.1)."""
    if not isinstance(run, CollapseRun):
        raise ValueError(f"run must be a CollapseRun, got {type(run).__name__}")
    return SimplexPath(run.trajectory.gradient_steps.copy(), run.class_log_probs * LOG10_E)

