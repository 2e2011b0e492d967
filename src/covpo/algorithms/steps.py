"""What every algorithm's inner loop shares: a checked gradient step and the diagnostics hook.

The algorithms in :mod:`covpo.algorithms` write their loops out in full; the two pieces here
are the only ones they call for bookkeeping. :func:`ascent_step` refuses to hand back a
non-finite iterate, and :func:`inner_step_observer` turns an optional ``on_inner_step``
callback into a function the inner loop calls at every iterate ``k = 0, ..., K``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from covpo.batches import ResponseBatch
from covpo.instances import BanditInstance
from covpo.policy_classes import PolicyClass, SoftmaxLinear
from covpo.trajectory import TrajectoryRecorder


def ascent_step(theta: np.ndarray, eta: float, direction: np.ndarray, iteration: int, inner_step: int) -> np.ndarray:
    """``theta + eta direction``, or ``FloatingPointError`` naming the outer iteration and inner step if it is not finite.

    A learning rate too large for the importance weights sends ``theta`` to infinity in a
    step or two; the error says where (``inner_step`` counts from 1). Descent is
    ``ascent_step(theta, -eta, gradient, ...)`` written as ``theta - eta gradient``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        stepped = theta + eta * direction
    if not np.all(np.isfinite(stepped)):
        raise FloatingPointError(
            f"theta became non-finite at outer iteration {iteration}, inner step {inner_step}; "
            f"eta = {abs(eta)!r} is too large for these importance weights"
        )
    return stepped


@dataclass(frozen=True, eq=False)
class InnerStep:
    """One inner iterate ``theta_{t,k}`` on its reused batch, as a diagnostics callback sees it.

    Attributes
    ----------
    instance
        The bandit.
    iteration, inner_step
        ``t`` and ``k`` (``k = 0`` is the start of the inner loop, ``k = K`` the iterate handed back).
    gradient_steps
        Cumulative gradient steps of the run at this iterate.
    theta
        The iterate.
    batch
        The batch the inner loop reuses.
    log_sampling
        ``log pi_old(y|x)``, the table of the policy the batch was drawn from.
    clip_mask
        Which samples the algorithm's clip removes, as a function of ``log w_i``; ``None`` when
        nothing is clipped.
    policy
        The policy class ``theta`` parametrizes.
    """

    instance: BanditInstance
    iteration: int
    inner_step: int
    gradient_steps: int
    theta: np.ndarray
    batch: ResponseBatch
    log_sampling: np.ndarray
    clip_mask: Callable[[np.ndarray], np.ndarray] | None
    policy: PolicyClass

    @cached_property
    def log_probs(self) -> np.ndarray:
        """``log pi_theta(y|x)`` at this iterate."""
        return self.policy.log_policy(self.theta)

    @cached_property
    def batch_log_ratio(self) -> np.ndarray:
        """``log w_i = log pi_theta(y_i|x_i) - log pi_old(y_i|x_i)`` on the batch."""
        return self.log_probs[self.batch.prompts, self.batch.responses] - self.batch.log_sampling

    @property
    def clip_fraction(self) -> float:
        """Fraction of the batch the clip removes at this iterate (0 without a clip)."""
        return 0.0 if self.clip_mask is None else float(np.mean(self.clip_mask(self.batch_log_ratio)))


InnerStepCallback = Callable[[InnerStep], None]


def inner_step_observer(
    on_inner_step: InnerStepCallback | None,
    instance: BanditInstance,
    iteration: int,
    batch: ResponseBatch,
    log_sampling: np.ndarray,
    recorder: TrajectoryRecorder,
    clip_mask: Callable[[np.ndarray], np.ndarray] | None = None,
    policy: PolicyClass | None = None,
) -> Callable[[int, np.ndarray], None]:
    """``observe(k, theta)`` for one outer iteration: hands an :class:`InnerStep` to ``on_inner_step``; a no-op without one."""
    if on_inner_step is None:
        return lambda inner_step, theta: None
    policy = SoftmaxLinear(instance) if policy is None else policy

    def observe(inner_step: int, theta: np.ndarray) -> None:
        on_inner_step(
            InnerStep(
                instance=instance,
                iteration=iteration,
                inner_step=inner_step,
                gradient_steps=recorder.gradient_steps,
                theta=theta,
                batch=batch,
                log_sampling=log_sampling,
                clip_mask=clip_mask,
                policy=policy,
            )
        )

    return observe
