"""The bookkeeping every algorithm's outer loop shares, in one helper; the loops themselves stay in the algorithms.

APMD (paper section 3.1) and its instances run the same outer loop: reset the reference to
``pi_t``, draw what the inner loop needs, take ``K`` steps on the subproblem of iteration ``t``,
keep ``theta_{t+1}`` and the inner loop's accuracy ``E_x KL(pi_{t+1} || pi*_{t+1})``. Each
algorithm writes that loop out beside its algorithm box; :class:`OuterLoop` does the counting
and recording it calls for (costs, records, outer iterates, inner accuracies), so the
bookkeeping exists once.

Every inner iterate can also be shown to a diagnostics callback (``on_inner_step``) as an
:class:`InnerStep`, which carries the iteration's :class:`Subproblem`: the objective the inner
loop optimizes and its gradient (or its exact update), through the algorithm's public
functions. The registry's contract suite (``tests/registry_contract.py``) reads it to check that
every run follows its own gradient, that the gradient is that of its objective, and that the
reference of a reset is the previous iterate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from covpo.algorithms.steps import ascent_step
from covpo.batches import ResponseBatch
from covpo.instances import BanditInstance
from covpo.objectives import unchecked_kl_to_regularized_optimum
from covpo.policy_classes import PolicyClass, SoftmaxLinear
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import check_flag


@dataclass(frozen=True, eq=False)
class Subproblem:
    """What the inner loop of one outer iteration optimizes, as the algorithm's public functions compute it.

    Attributes
    ----------
    objective
        ``theta -> L_t(theta)``, the inner objective (a loss when ``descent`` is set).
    gradient
        ``theta -> grad L_t(theta)``, the public gradient the inner steps follow; ``None`` for an
        exact update.
    eta
        The learning rate of the inner steps, ``theta <- theta + eta grad`` (``- eta grad`` when
        ``descent``); ``None`` for an exact update.
    descent
        Whether ``objective`` is a loss stepped down (the squared-loss methods of paper section 4).
    update
        ``theta_t -> theta_{t+1}``, the exact update of an algorithm without gradient steps
        (exact targets, NPG, exact mirror descent, Best-of-N); ``None`` otherwise.
    """

    objective: Callable[[np.ndarray], float]
    gradient: Callable[[np.ndarray], np.ndarray] | None = None
    eta: float | None = None
    descent: bool = False
    update: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass(frozen=True, eq=False)
class InnerStep:
    """One inner iterate ``theta_{t,k}`` and the subproblem it belongs to, as a diagnostics callback sees it.

    Attributes
    ----------
    instance
        The bandit.
    iteration, inner_step
        ``t`` and ``k`` (``k = 0`` is the start of the inner loop, ``k = K`` the iterate handed back).
    gradient_steps
        Cumulative gradient steps of the run at this iterate.
    theta
        The iterate: the parameters of ``policy``, or, for an algorithm whose iterates are
        log-probability tables (exact mirror descent, Best-of-N), the table itself.
    batch
        The batch the inner loop reuses; ``None`` for an algorithm that draws none.
    log_sampling
        ``log pi_old(y|x)``, the table of the policy the batch was drawn from; ``None`` without a batch.
    clip_mask
        Which samples the algorithm's clip removes, as a function of ``log w_i``; ``None`` when
        nothing is clipped.
    policy
        The policy class ``theta`` parametrizes; ``None`` when ``theta`` is a table.
    log_reference
        The table of the subproblem's KL reference (``pi_t`` after a reset, ``pi_0`` for a fixed
        reference); ``None`` for an algorithm without one.
    subproblem
        The iteration's :class:`Subproblem`.
    """

    instance: BanditInstance
    iteration: int
    inner_step: int
    gradient_steps: int
    theta: np.ndarray
    batch: ResponseBatch | None
    log_sampling: np.ndarray | None
    clip_mask: Callable[[np.ndarray], np.ndarray] | None
    policy: PolicyClass | None
    log_reference: np.ndarray | None
    subproblem: Subproblem

    @cached_property
    def log_probs(self) -> np.ndarray:
        """``log pi_theta(y|x)`` at this iterate."""
        return self.theta if self.policy is None else self.policy.log_policy(self.theta)

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
    recorder: TrajectoryRecorder,
    subproblem: Callable[[], Subproblem],
    *,
    policy: PolicyClass | None,
    batch: ResponseBatch | None = None,
    log_sampling: np.ndarray | None = None,
    log_reference: np.ndarray | None = None,
    clip_mask: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Callable[[int, np.ndarray], None]:
    """``observe(k, theta)`` for one outer iteration: hands an :class:`InnerStep` to ``on_inner_step``; a no-op without one.

    ``subproblem`` builds the iteration's :class:`Subproblem`; it is called once, and only
    when there is a callback, so a run without one builds nothing.
    """
    if on_inner_step is None:
        return lambda inner_step, theta: None
    problem = subproblem()

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
                log_reference=log_reference,
                subproblem=problem,
            )
        )

    return observe


class OuterLoop:
    """The counting and recording of an outer loop, from ``theta_0`` to the finished :class:`~covpo.trajectory.Trajectory`.

    Created at ``theta_0 = policy.initial_params`` (recorded); then, per outer iteration, the
    algorithm calls :meth:`reset` (APMD's ``pi_ref <- pi_t``) or reads ``log_probs``, counts
    what it draws with :meth:`count_responses`, takes its inner steps with :meth:`step` (or
    counts an exact update with :meth:`count_step`), and closes the iteration with
    :meth:`end_iteration`; :meth:`finish` freezes the trajectory.

    Parameters
    ----------
    algorithm
        The label the trajectory carries (the registry's ``label``).
    instance
        The bandit.
    settings
        The run's checked hyperparameters, stored in the trajectory.
    policy
        The policy class of the iterates; softmax-linear over ``instance`` when ``None``.
    beta
        The strength of the reset subproblems, whose exact targets ``pi*_{t+1}`` the inner
        accuracies are measured against; ``None`` for a loop without resets (no ``inner_kl``).
    record_each_step
        Record the iterate after every gradient step instead of once per outer iteration.
    on_inner_step
        The diagnostics callback, or ``None``.
    """

    def __init__(
        self,
        algorithm: str,
        instance: BanditInstance,
        settings: dict,
        *,
        policy: PolicyClass | None = None,
        beta: float | None = None,
        record_each_step: bool = False,
        on_inner_step: InnerStepCallback | None = None,
    ) -> None:
        self.instance = instance
        self.policy = SoftmaxLinear(instance) if policy is None else policy
        self.beta = beta
        self.record_each_step = check_flag("record_each_step", record_each_step)
        self.on_inner_step = on_inner_step
        self.recorder = TrajectoryRecorder(algorithm, instance.optimal_value, settings)
        self.theta = np.array(self.policy.initial_params, dtype=float)
        self.log_probs = self.policy.log_policy(self.theta)
        self.log_base = self.log_probs
        self.recorder.record_iterate(instance, self.log_probs, log_base=self.log_base)
        self.thetas = [self.theta]
        self.inner_kl: list[float] = []

    def reset(self) -> np.ndarray:
        """Reset the reference to the current iterate ``pi_t`` (one reset) and return its table."""
        self.recorder.count_reset()
        return self.log_probs

    def count_responses(self, count: int) -> None:
        """Count one generation round of ``count`` responses."""
        self.recorder.count_responses(count)

    def observer(
        self,
        iteration: int,
        subproblem: Callable[[], Subproblem],
        *,
        batch: ResponseBatch | None = None,
        log_sampling: np.ndarray | None = None,
        log_reference: np.ndarray | None = None,
        clip_mask: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> Callable[[int, np.ndarray], None]:
        """:func:`inner_step_observer` for iteration ``iteration`` of this loop."""
        return inner_step_observer(
            self.on_inner_step, self.instance, iteration, self.recorder, subproblem, policy=self.policy,
            batch=batch, log_sampling=log_sampling, log_reference=log_reference, clip_mask=clip_mask,
        )

    def step(self, theta: np.ndarray, eta: float, direction: np.ndarray, iteration: int, inner_step: int) -> np.ndarray:
        """``theta + eta direction`` (:func:`~covpo.algorithms.steps.ascent_step`), counted as one gradient step.

        ``inner_step`` counts from 0; descent passes ``-eta``. With ``record_each_step`` the new
        iterate is recorded.
        """
        stepped = ascent_step(theta, eta, direction, iteration, inner_step + 1)
        self.count_step(stepped)
        return stepped

    def count_step(self, theta: np.ndarray) -> None:
        """Count one gradient step (an exact update counts as one) that reached ``theta``; record it with ``record_each_step``."""
        self.recorder.count_gradient_steps()
        if self.record_each_step:
            self.recorder.record_iterate(self.instance, self.policy.log_policy(theta), log_base=self.log_base)

    def end_iteration(self, theta: np.ndarray, log_reference: np.ndarray | None = None) -> None:
        """Close an outer iteration at ``theta_{t+1}``: its table, its accuracy against the target of ``log_reference``, its record.

        ``log_reference`` is the table ``pi_t`` the iteration reset to; its exact target
        ``pi*_{t+1}`` at the loop's ``beta`` gives the inner accuracy ``E_x KL(pi_{t+1} || pi*_{t+1})``
        (paper section 3.1). ``None`` for a loop without resets.
        """
        self.theta = theta
        self.log_probs = self.policy.log_policy(theta)
        if log_reference is not None:
            self.inner_kl.append(
                unchecked_kl_to_regularized_optimum(self.instance, self.log_probs, log_reference, self.beta)
            )
        if not self.record_each_step:
            self.recorder.record_iterate(self.instance, self.log_probs, log_base=self.log_base)
        self.thetas.append(theta)

    @property
    def gradient_steps(self) -> int:
        """Gradient steps taken so far."""
        return self.recorder.gradient_steps

    def finish(self) -> Trajectory:
        """The trajectory, with the outer iterates ``theta_0, ..., theta_T`` and, with resets, each inner loop's accuracy."""
        return self.recorder.finish(thetas=self.thetas, inner_kl=self.inner_kl if self.beta is not None else None)
