"""Exact policy mirror descent and Approximate Policy Mirror Descent (paper section 3.1, appendix B.3).

Paper section 3.1 and appendices B.3, D and F. Exact mirror descent resets the reference
to the current policy and jumps to the regularized optimum,
``pi_{t+1}(y|x) proportional to pi_t(y|x) exp(r(x, y) / beta)``, which unrolls to
``pi_T proportional to pi_0 exp(T r / beta)``. APMD is the same outer loop with a pluggable
inner loop that only approximates each target inside the softmax-linear class.

An inner loop is any callable ``inner_loop(subproblem, context) -> theta_next`` (the
:class:`InnerLoop` protocol). The :class:`Subproblem` holds the mathematics of one outer
iteration (reference ``pi_t``, target ``pi*_{t+1}``, ``beta``); the :class:`InnerLoopContext`
is where the inner loop reports what it spends (gradient steps, responses) and draws its
random numbers, so every instance of APMD is costed by the same shared recorder.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import logsumexp

from covpo.instances import BanditInstance
from covpo.objectives import regularized_gradient, regularized_optimum
from covpo.policies import base_log_policy, expected_kl, log_coverage, log_policy
from covpo.trajectory import Trajectory, TrajectoryRecorder
from covpo.validation import (
    check_count,
    check_finite_array,
    check_positive,
    check_shape,
)

REALIZABILITY_TOLERANCE = 1e-9


def mirror_descent_policy(instance: BanditInstance, beta: float, t: int) -> np.ndarray:
    """Closed form of the ``t``-th exact mirror-descent iterate, ``pi_0 exp(t r / beta) / Z``.

    Paper section 3.1 and appendix B.3: ``t`` resets at strength ``beta`` equal one fixed-reference step at
    strength ``beta / t``. Returns the log-probability table; ``t = 0`` gives ``pi_0``.
    """
    beta = check_positive("beta", beta)
    t = check_count("t", t, minimum=0)
    unnormalized = base_log_policy(instance) + t * instance.rewards / beta
    return unnormalized - logsumexp(unnormalized, axis=1, keepdims=True)


def exact_mirror_descent(instance: BanditInstance, beta: float, n_iterations: int) -> Trajectory:
    """Exact policy mirror descent ``pi_{t+1} proportional to pi_t exp(r / beta)`` (paper appendix B.3).

    Each iteration resets the reference to ``pi_t`` and moves to the exact regularized
    optimum of ``J_beta(.; pi_t)`` on the log-probability table, so the iterate need not lie
    in the softmax-linear class. One record per iterate, ``pi_0`` included; every
    iteration counts one reset and no gradient steps or responses.

    Parameters
    ----------
    instance
        The bandit; any rewards, realizable or not.
    beta
        Regularization strength of every step, ``> 0``.
    n_iterations
        Number of outer iterations ``T``, ``>= 1``.
    """
    beta = check_positive("beta", beta)
    n_iterations = check_count("n_iterations", n_iterations)
    recorder = TrajectoryRecorder(
        "exact mirror descent", instance.optimal_value, {"beta": beta, "n_iterations": n_iterations}
    )
    log_probs = base_log_policy(instance)
    recorder.record_policy(instance, log_probs)
    for _ in range(n_iterations):
        recorder.count_reset()
        log_probs = regularized_optimum(instance, log_probs, beta)
        recorder.record_policy(instance, log_probs)
    return recorder.finish()


def mirror_descent_bound(instance: BanditInstance, beta: float, t: float | np.ndarray) -> float | np.ndarray:
    """The exact mirror-descent rate ``J* - J(pi_t) <= beta E_x log(1 / c_0(x)) / t`` (paper section 3.1, cf. Eq. (18); appendix B.3).

    ``log(1 / c_0(x))`` is ``KL(pi* || pi_0)`` for ``pi*`` the base model restricted to the
    optimal set, computed from log coverage so it stays exact however small ``c_0`` is.
    ``t`` may be an array of iteration counts, each ``> 0``.
    """
    beta = check_positive("beta", beta)
    iterations = check_finite_array("t", t)
    if np.any(iterations <= 0.0):
        raise ValueError(f"t must be > 0 everywhere, got {t!r}")
    divergence = -float(instance.prompt_probs @ log_coverage(instance, base_log_policy(instance)))
    bound = beta * divergence / iterations
    return float(bound) if bound.ndim == 0 else bound


@dataclass(frozen=True, eq=False)
class Subproblem:
    """The regularized problem of one APMD outer iteration (paper section 3.1, step 1).

    Maximize ``J_beta(pi_theta; pi_t)`` over softmax-linear parameters; its maximizer over
    all policies is the target ``pi*_{t+1} proportional to pi_t exp(r / beta)``.

    Attributes
    ----------
    instance
        The bandit.
    beta
        Regularization strength toward the reference.
    iteration
        The outer index ``t`` (0 for the first iteration).
    reference_theta
        ``theta_t``, the parameters of the reference ``pi_t``; a natural warm start.
    log_reference
        ``log pi_t(y|x)``.
    log_target
        ``log pi*_{t+1}(y|x)``, exactly normalized.
    """

    instance: BanditInstance
    beta: float
    iteration: int
    reference_theta: np.ndarray
    log_reference: np.ndarray
    log_target: np.ndarray


@dataclass(frozen=True, eq=False)
class InnerLoopContext:
    """Where an inner loop reports its costs and finds its random numbers.

    Attributes
    ----------
    recorder
        The run's shared :class:`~covpo.trajectory.TrajectoryRecorder`.
    rng
        The generator handed to :func:`apmd`; ``None`` for deterministic runs.
    record_each_step
        Whether every gradient step's iterate is kept in the trajectory.
    """

    recorder: TrajectoryRecorder
    rng: np.random.Generator | None
    record_each_step: bool

    def gradient_step_taken(self, subproblem: Subproblem, theta: np.ndarray) -> None:
        """Count one gradient step, arriving at ``theta``, and record it if asked to."""
        self.recorder.count_gradient_steps(1)
        if self.record_each_step:
            self.recorder.record_policy(subproblem.instance, log_policy(subproblem.instance, theta))

    def responses_sampled(self, count: int) -> None:
        """Count ``count`` sampled responses (every response drawn, baselines included)."""
        self.recorder.count_responses(count)

    def generator(self) -> np.random.Generator:
        """The run's generator; raise if the run was started without one."""
        if self.rng is None:
            raise ValueError("rng must be a numpy Generator for an inner loop that samples, got None")
        return self.rng


class InnerLoop(Protocol):
    """An APMD inner loop (paper section 3.1, step 2): approximately solve one subproblem.

    It returns ``theta_{t+1}``, reports each gradient step through
    ``context.gradient_step_taken`` and each batch of responses through
    ``context.responses_sampled``, and draws randomness only from ``context.generator()``.
    An inner loop that takes gradient steps returns the iterate of its last step.
    """

    def __call__(self, subproblem: Subproblem, context: InnerLoopContext) -> np.ndarray: ...


def exact_target_inner_loop(subproblem: Subproblem, context: InnerLoopContext) -> np.ndarray:
    """Jump to the target exactly: ``theta_{t+1} = theta_t + theta_star / beta`` (paper appendix B.4.1).

    Exact for softmax-linear policies with a linear reward ``r = <theta_star, phi> + c(x)``,
    because ``c(x)`` cancels in the normalization. Costs nothing. Raises ``ValueError`` on an
    instance whose reward is not linear in its features.
    """
    instance = subproblem.instance
    if instance.reward_theta is None:
        raise ValueError("reward_theta is None: the exact target is only reachable for linear rewards")
    residual = instance.rewards - instance.features @ instance.reward_theta
    spread = residual.max(axis=1) - residual.min(axis=1)
    if np.any(spread > REALIZABILITY_TOLERANCE * max(1.0, float(np.abs(instance.rewards).max()))):
        raise ValueError(
            "reward_theta does not reproduce the rewards up to a per-prompt constant "
            f"(largest spread {spread.max()!r}); the target is not in the softmax-linear class"
        )
    return subproblem.reference_theta + instance.reward_theta / subproblem.beta


def gradient_ascent_steps(
    subproblem: Subproblem, context: InnerLoopContext, *, steps: int, eta: float
) -> np.ndarray:
    """``steps`` exact gradient-ascent steps on ``J_beta(pi_theta; pi_t)`` from ``theta_t``.

    ``theta <- theta + eta grad J_beta(pi_theta; pi_t)`` with the population gradient of
    paper Eq. (13) (:func:`covpo.objectives.regularized_gradient`); no responses are sampled.
    """
    theta = np.array(subproblem.reference_theta, dtype=float)
    for _ in range(steps):
        theta = theta + eta * regularized_gradient(
            subproblem.instance, theta, subproblem.log_reference, subproblem.beta
        )
        context.gradient_step_taken(subproblem, theta)
    return theta


def gradient_ascent_inner_loop(steps: int, eta: float) -> InnerLoop:
    """The inner loop of ``steps`` exact gradient-ascent steps at learning rate ``eta``.

    APMD with ``K = steps`` gradient steps per reset, the variant that paper appendix C.1 compares
    with REINFORCE (paper Figure 2).
    """
    steps = check_count("steps", steps)
    eta = check_positive("eta", eta)
    return functools.partial(gradient_ascent_steps, steps=steps, eta=eta)


def inner_loop_settings(inner_loop: InnerLoop) -> dict:
    """The name of an inner loop and, for one built with :func:`functools.partial`, its keywords."""
    if isinstance(inner_loop, functools.partial):
        return {"inner_loop": getattr(inner_loop.func, "__name__", repr(inner_loop.func)), **inner_loop.keywords}
    return {"inner_loop": getattr(inner_loop, "__name__", type(inner_loop).__name__)}


@dataclass(frozen=True, eq=False)
class APMDResult:
    """What an APMD run returns: the shared trajectory record plus per-iteration accuracy.

    Attributes
    ----------
    trajectory
        The costs and iterates, as every algorithm reports them.
    thetas
        ``theta_0, ..., theta_T``, shape ``(n_iterations + 1, dim)``.
    inner_kl
        ``E_x KL(pi_{t+1} || pi*_{t+1})`` for ``t = 0, ..., T-1``: the accuracy of each inner
        loop, equal to its regularized objective gap divided by ``beta`` (paper section 3.1).
    """

    trajectory: Trajectory
    thetas: np.ndarray
    inner_kl: np.ndarray


def apmd(
    instance: BanditInstance,
    beta: float,
    n_iterations: int,
    inner_loop: InnerLoop,
    *,
    rng: np.random.Generator | None = None,
    record_each_step: bool = False,
    algorithm: str = "APMD",
    settings: dict | None = None,
) -> APMDResult:
    """Approximate Policy Mirror Descent as a meta-algorithm (paper section 3.1).

    From ``theta_0``, each outer iteration resets the reference to ``pi_t`` (one reset),
    forms the target ``pi*_{t+1} proportional to pi_t exp(r / beta)``, and lets ``inner_loop``
    return ``theta_{t+1}``; the accuracy ``E_x KL(pi_{t+1} || pi*_{t+1})`` is kept per iteration.

    Parameters
    ----------
    instance
        The bandit.
    beta
        Regularization strength toward each reset reference, ``> 0``.
    n_iterations
        Number of outer iterations ``T``, ``>= 1``.
    inner_loop
        An :class:`InnerLoop`, e.g. :func:`exact_target_inner_loop` or
        ``gradient_ascent_inner_loop(steps, eta)``.
    rng
        The only randomness a sampling inner loop may use; ``None`` for exact inner loops.
    record_each_step
        Record every gradient step's iterate instead of one record per outer iteration (an
        outer iteration that takes no gradient step is still recorded once).
    algorithm
        Name stored in the trajectory, for instances of APMD such as PPO or KimiPO.
    settings
        Extra hyperparameters to store in the trajectory's settings.
    """
    beta = check_positive("beta", beta)
    n_iterations = check_count("n_iterations", n_iterations)
    run_settings = {"beta": beta, "n_iterations": n_iterations, **inner_loop_settings(inner_loop), **(settings or {})}
    recorder = TrajectoryRecorder(algorithm, instance.optimal_value, run_settings)
    context = InnerLoopContext(recorder=recorder, rng=rng, record_each_step=record_each_step)
    theta = np.array(instance.base_theta, dtype=float)
    log_probs = log_policy(instance, theta)
    recorder.record_policy(instance, log_probs)
    thetas = [theta]
    inner_kl = []
    for iteration in range(n_iterations):
        recorder.count_reset()
        subproblem = Subproblem(
            instance=instance,
            beta=beta,
            iteration=iteration,
            reference_theta=theta,
            log_reference=log_probs,
            log_target=regularized_optimum(instance, log_probs, beta),
        )
        steps_before = recorder.gradient_steps
        returned = check_finite_array("theta returned by the inner loop", inner_loop(subproblem, context), ndim=1)
        theta = check_shape("theta returned by the inner loop", returned, (instance.dim,))
        log_probs = log_policy(instance, theta)
        inner_kl.append(expected_kl(instance, log_probs, subproblem.log_target))
        if not (record_each_step and recorder.gradient_steps > steps_before):
            recorder.record_policy(instance, log_probs)
        thetas.append(theta)
    return APMDResult(trajectory=recorder.finish(), thetas=np.vstack(thetas), inner_kl=np.array(inner_kl))


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
    (:func:`mirror_descent_bound`). Because ``pi_T`` depends on ``T / beta`` only
    (:func:`mirror_descent_policy`), the resets needed for a given accuracy grow in
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
    instances = tuple(instances)
    if not instances:
        raise ValueError("instances must hold at least one instance")
    betas = check_finite_array("betas", betas, ndim=1)
    if betas.size == 0:
        raise ValueError("betas must hold at least one value")
    betas = np.array([check_positive("betas", beta) for beta in betas])
    n_iterations = check_count("n_iterations", n_iterations)
    eps = check_positive("eps", eps)
    iterations = np.arange(n_iterations + 1)
    shape = (len(instances), betas.size, n_iterations + 1)
    suboptimality, bound = np.empty(shape), np.full(shape, np.inf)
    for i, instance in enumerate(instances):
        for j, beta in enumerate(betas):
            suboptimality[i, j] = exact_mirror_descent(instance, beta, n_iterations).suboptimality
            bound[i, j, 1:] = mirror_descent_bound(instance, beta, iterations[1:])
    reached = suboptimality <= eps
    resets = np.where(reached.any(axis=2), np.argmax(reached, axis=2), -1)
    divergence = np.array(
        [-float(instance.prompt_probs @ log_coverage(instance, base_log_policy(instance))) for instance in instances]
    )
    return MirrorDescentRate(betas, iterations, suboptimality, bound, eps, resets, divergence)
