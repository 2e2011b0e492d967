"""When along a run a method loses coverage: before or after it is eps-optimal (chapter 4's random family).

:func:`coverage_loss_timing` reruns a method of a :func:`~covpo.experiments.sweeps.cost_sweep`
at the learning rates the sweep kept, with the sweep's random streams, and reads off each run
the worst prompt's lowest coverage, the suboptimality at that record, and the suboptimality
after the first eps-optimal record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, log_coverage
from covpo.trajectory import LOG10_E
from covpo.validation import check_instances, check_positive, check_positive_grid, check_seed

from covpo.experiments.sweeps import Method, run_unless_diverged


@dataclass(frozen=True)
class CoverageLossTiming:
    """Per instance: how much coverage a run lost, and how close to the optimum it was when it did.

    Attributes
    ----------
    coverage_loss
        The largest fall of any prompt's coverage below its base value, in decades.
    steps_at_lowest, suboptimality_at_lowest
        The gradient steps and ``J* - J`` at the record where the worst prompt's coverage is lowest.
    steps_to_eps
        The gradient steps at the first eps-optimal record (``-1`` if never).
    worst_after_eps
        The largest ``J* - J`` from the first eps-optimal record on (``nan`` if never eps-optimal).
    eps
        The accuracy target.
    """

    coverage_loss: np.ndarray
    steps_at_lowest: np.ndarray
    suboptimality_at_lowest: np.ndarray
    steps_to_eps: np.ndarray
    worst_after_eps: np.ndarray
    eps: float


def coverage_loss_timing(
    method: Method, instances: Sequence[BanditInstance], etas: Sequence[float], *, eps: float, seed: int
) -> CoverageLossTiming:
    """Run ``method`` on instance ``j`` at ``etas[j]`` from ``np.random.default_rng([seed, j])``, as :func:`~covpo.experiments.sweeps.cost_sweep` does."""
    if not isinstance(method, Method):
        raise ValueError(f"method must be a Method, got {type(method).__name__}")
    instances = check_instances("instances", instances, BanditInstance)
    etas = check_positive_grid("etas", etas).tolist()
    if len(etas) != len(instances):
        raise ValueError(f"etas must hold one learning rate per instance: got {len(etas)} for {len(instances)}")
    eps = check_positive("eps", eps)
    seed = check_seed("seed", seed)
    fields = {name: [] for name in ("loss", "steps_low", "sub_low", "steps_eps", "after")}
    for j, (instance, eta) in enumerate(zip(instances, etas)):
        trajectory = run_unless_diverged(method, instance, eta, np.random.default_rng([seed, j]))
        if trajectory is None:
            raise ValueError(f"the run on instance {j} diverged at eta = {eta!r}")
        base = log_coverage(instance, base_log_policy(instance)) * LOG10_E
        drop = base[None, :] - trajectory.log10_coverage
        worst = int(np.argmax(drop.max(axis=0)))
        lowest = int(np.argmax(drop[:, worst]))
        hit = trajectory.first_eps_optimal(eps)
        fields["loss"].append(max(float(drop.max()), 0.0))
        fields["steps_low"].append(int(trajectory.gradient_steps[lowest]))
        fields["sub_low"].append(float(trajectory.suboptimality[lowest]))
        fields["steps_eps"].append(-1 if hit is None else int(trajectory.gradient_steps[hit]))
        fields["after"].append(np.nan if hit is None else float(trajectory.suboptimality[hit:].max()))
    return CoverageLossTiming(
        coverage_loss=np.array(fields["loss"]),
        steps_at_lowest=np.array(fields["steps_low"]),
        suboptimality_at_lowest=np.array(fields["sub_low"]),
        steps_to_eps=np.array(fields["steps_eps"]),
        worst_after_eps=np.array(fields["after"]),
        eps=eps,
    )
