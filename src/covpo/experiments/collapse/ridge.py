"""The ridge REINFORCE follows on the fixed-reference surface of paper Figure 2b (our measurement, appendix C.1's run).

After the first few steps drain the zero-reward block, the run of
:func:`~covpo.experiments.collapse.paper_figures.figure_2a_data` moves along a ridge of
``J_beta(pi; pi_0)`` towards the distractor. :func:`ridge_profile` measures how far below the
surface's maximum it stays there, and how little it climbs, against the climb of the drain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from covpo.collapse_instance import OPTIMAL, CollapseInstance, _check_instance
from covpo.validation import check_positive, check_probability

from .engine import CollapseRun
from .landscape import _objective_at


def regularized_maximum(instance: CollapseInstance, beta: float) -> float:
    """``max_pi J_beta(pi; pi_0) = beta log E_{pi_0} exp(r / beta)``, attained at ``pi_0 exp(r / beta) / Z`` (the normalizer identity of paper section 3.1, here with the base model as reference)."""
    instance = _check_instance(instance)
    beta = check_positive("beta", beta)
    return float(beta * logsumexp(instance.base_class_log_probs + instance.rewards / beta))


@dataclass(frozen=True)
class RidgeProfile:
    """REINFORCE on the ridge of the fixed-reference surface, from the drain to its lowest coverage.

    Attributes
    ----------
    maximum
        ``max_pi J_beta(pi; pi_0)``, the top of the surface.
    drain_steps
        The first recorded step at which the zero-reward block holds under ``drained_mass``.
    lowest_steps
        The step of the run's lowest coverage, where the ridge ends.
    drain_climb
        ``J_beta`` gained from the base model to ``drain_steps``.
    ridge_climb
        ``J_beta`` gained from ``drain_steps`` to ``lowest_steps``.
    below_maximum
        ``maximum - J_beta`` at every record on the ridge.
    gap
        The instance's reward gap, the scale of ``below_maximum``.
    """

    maximum: float
    drain_steps: int
    lowest_steps: int
    drain_climb: float
    ridge_climb: float
    below_maximum: np.ndarray
    gap: float


def ridge_profile(run: CollapseRun, beta: float, drained_mass: float = 0.05) -> RidgeProfile:
    """Measure the ridge of ``J_beta(.; pi_0)`` along an exact run with a KL penalty of strength ``beta`` to the base model.

    Parameters
    ----------
    run
        An exact run of :func:`~covpo.experiments.collapse.engine.exact_collapse_run`.
    beta
        The strength of the surface (the run's own, for REINFORCE's path).
    drained_mass
        The zero-reward block counts as drained once its mass falls below this, in ``(0, 1)``.
    """
    if not isinstance(run, CollapseRun):
        raise ValueError(f"run must be a CollapseRun, got {type(run).__name__}")
    beta = check_positive("beta", beta)
    drained_mass = check_probability("drained_mass", drained_mass)
    instance = run.instance
    log_masses = run.class_log_probs
    lowest = int(np.argmin(log_masses[:, OPTIMAL]))
    drained = np.flatnonzero(np.exp(log_masses[: lowest + 1, 2]) < drained_mass)
    if drained.size == 0:
        raise ValueError(f"the zero-reward block never falls below drained_mass = {drained_mass!r} before the lowest coverage")
    first = int(drained[0])
    objective = _objective_at(instance, run.logits, beta, instance.base_class_log_probs)["objective"]
    maximum = regularized_maximum(instance, beta)
    steps = run.trajectory.gradient_steps
    return RidgeProfile(
        maximum=maximum,
        drain_steps=int(steps[first]),
        lowest_steps=int(steps[lowest]),
        drain_climb=float(objective[first] - objective[0]),
        ridge_climb=float(objective[lowest] - objective[first]),
        below_maximum=maximum - objective[first : lowest + 1],
        gap=float(instance.gap),
    )
