"""GRPO-style training with a fixed or a reset reference (paper appendix H.4).

The stylized GRPO of the paper's comparison, in our contextual-bandit notation (one response
is a whole answer, so there is no token averaging). Each outer iteration draws ``N`` prompts
with a group of ``G`` responses each from the current policy ``pi_old`` and takes ``K``
full-batch gradient steps on

    ``mean_{i,j} min(w_ij A_ij, clip(w_ij, 1 - eps, 1 + eps_high) A_ij) - beta KL-term``,

with ``w_ij = pi_theta(y_ij|x_i) / pi_old(y_ij|x_i)`` and the group advantage
``A_ij = r_ij - mean_j r_ij``, divided by the group's standard deviation when asked (TRL's
default, ``scale_rewards="group"``; ours is not to). The KL
term is toward a reference that is either

- **fixed** at the base model ``pi_0`` (common practice; ``beta = 0``, no KL, is the default
  of TRL's trainer): :func:`grpo` with ``reference="fixed"``, no resets; or
- **reset** to ``pi_t`` every outer iteration (DeepSeekMath's iterative GRPO, ProRL):
  :func:`grpo` with ``reference="reset"``. With the k3 estimator and a clip, its inner problem is
  not APMD's subproblem (paper section 3.1): the k3 term's expectation is the chi-square minus
  the KL divergence from the reference, a reverse-direction penalty, and the clip caps the step.

The KL term is exact per sampled prompt (``"exact"``) or the k3 estimator
``mean_ij [exp(lr_ij) - lr_ij - 1]``, ``lr = log pi_ref - log pi_theta`` (``"k3"``), as
practical trainers compute it on the batch.
"""

from __future__ import annotations

import numpy as np

from covpo.algorithms.outer_loop import InnerStepCallback, OuterLoop, Subproblem
from covpo.algorithms.steps import check_step_stability, feature_scale
from covpo.batches import (
    BatchTerms,
    ResponseBatch,
    check_batch,
    unchecked_batch_terms,
    unchecked_draw_batch,
    unchecked_prompt_kl,
)
from covpo.instances import BanditInstance
from covpo.policies import check_bandit, check_policy
from covpo.trajectory import Trajectory
from covpo.validation import (
    check_count,
    check_finite_array,
    check_flag,
    check_generator,
    check_nonnegative,
    check_option,
    check_positive,
    check_probability,
    check_shape,
    check_theta,
)

KL_ESTIMATORS = ("exact", "k3")
REFERENCES = ("fixed", "reset")
DEFAULT_STD_EPS = 1e-4


def group_advantages(rewards: np.ndarray, scale_by_std: bool = False, std_eps: float = DEFAULT_STD_EPS) -> np.ndarray:
    """GRPO's group-relative advantages ``A_ij = r_ij - mean_j r_ij`` (paper appendix H.4).

    ``rewards`` has shape ``(N, G)``, one row per prompt's group. With ``scale_by_std`` each
    row is divided by its sample standard deviation (``ddof = 1``) plus ``std_eps``, so a
    group whose rewards are all equal gets zero advantages either way. The paper's
    stylized comparison omits the scaling; every row of the result sums to zero.
    """
    rewards = check_finite_array("rewards", rewards, ndim=2)
    if rewards.shape[1] < 2:
        raise ValueError(f"rewards must hold groups of at least 2 responses (shape (N, G), G >= 2), got shape {rewards.shape}")
    std_eps = check_positive("std_eps", std_eps)
    scale_by_std = check_flag("scale_by_std", scale_by_std)
    advantages = rewards - rewards.mean(axis=1, keepdims=True)
    if scale_by_std:
        advantages = advantages / (rewards.std(axis=1, ddof=1, keepdims=True) + std_eps)
    return advantages


def k3_estimate(log_reference: np.ndarray, log_policy_values: np.ndarray) -> np.ndarray:
    """The k3 KL estimator ``exp(lr) - lr - 1`` with ``lr = log pi_ref(y) - log pi_theta(y)`` (common in practice, e.g. TRL; not in the paper).

    Elementwise; non-negative (``e^z >= 1 + z``) and, for ``y ~ pi_theta``, unbiased for
    ``KL(pi_theta || pi_ref)`` because ``E_{pi_theta}[pi_ref / pi_theta] = 1``.
    """
    log_ratio = _log_values("log_reference", log_reference) - _log_values("log_policy_values", log_policy_values)
    return np.maximum(np.expm1(log_ratio) - log_ratio, 0.0)


def _log_values(name: str, values: object) -> np.ndarray:
    array = check_finite_array(name, values)
    if np.any(array > 0.0):
        raise ValueError(f"{name} must hold log-probabilities <= 0, found {array.max()!r}")
    return array


def check_clip_epsilon(clip_epsilon: float, clip_epsilon_high: float | None = None) -> tuple[float, float]:
    """Return the ratio interval ``(1 - eps, 1 + eps_high)``; ``0 < eps < 1``, ``eps_high > 0`` (``eps`` by default)."""
    low = check_probability("clip_epsilon", clip_epsilon)
    high = low if clip_epsilon_high is None else check_positive("clip_epsilon_high", clip_epsilon_high)
    return 1.0 - low, 1.0 + high


def _check_interval(interval: tuple[float, float]) -> tuple[float, float]:
    if isinstance(interval, (str, bytes)):
        raise ValueError(f"interval must be a pair (1 - eps, 1 + eps_high), got {interval!r}")
    try:
        low, high = (float(value) for value in interval)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"interval must be a pair (1 - eps, 1 + eps_high), got {interval!r}") from None
    if not (0.0 < low < 1.0 < high < np.inf):
        raise ValueError(f"interval must satisfy 0 < low < 1 < high < inf, got {interval!r}")
    return low, high


def grpo_clip_mask(log_ratio: np.ndarray, advantages: np.ndarray, interval: tuple[float, float]) -> np.ndarray:
    """Where ``min(w A, clip(w) A)`` takes the clipped branch and so passes no gradient.

    ``A > 0`` and ``w > 1 + eps_high``, or ``A < 0`` and ``w < 1 - eps`` (the ``clip_ratio``
    that practical trainers log). Elsewhere the minimum is ``w A``.
    """
    advantages = check_finite_array("advantages", advantages)
    log_ratio = check_shape("log_ratio", check_finite_array("log_ratio", log_ratio), advantages.shape)
    return _unchecked_clip_mask(log_ratio, advantages, _check_interval(interval))


def _unchecked_clip_mask(log_ratio: np.ndarray, advantages: np.ndarray, interval: tuple[float, float]) -> np.ndarray:
    low, high = interval
    return ((advantages > 0.0) & (log_ratio > np.log(high))) | ((advantages < 0.0) & (log_ratio < np.log(low)))


def _grpo_parts(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    advantages: np.ndarray,
    log_reference: np.ndarray,
    beta: float,
    interval: tuple[float, float],
    kl: str,
) -> tuple[float, np.ndarray, BatchTerms, np.ndarray]:
    terms = unchecked_batch_terms(instance, theta, batch)
    weights = np.exp(terms.log_ratio)
    clipped = _unchecked_clip_mask(terms.log_ratio, advantages, interval)
    surrogate = np.minimum(weights * advantages, np.clip(weights, *interval) * advantages)
    objective = float(surrogate.mean())
    gradient = terms.score_average(np.where(clipped, 0.0, weights * advantages))
    if beta > 0.0:
        if kl == "exact":
            penalty, penalty_gradient = unchecked_prompt_kl(instance, terms.log_probs, log_reference, batch.prompts)
        else:
            log_ref_samples = log_reference[batch.prompts, batch.responses]
            log_theta_samples = terms.log_probs[batch.prompts, batch.responses]
            penalty = float(k3_estimate(log_ref_samples, log_theta_samples).mean())
            # d/dtheta [e^lr - lr - 1] = (1 - e^lr) grad log pi_theta, with lr = log pi_ref - log pi_theta
            penalty_gradient = terms.score_average(-np.expm1(log_ref_samples - log_theta_samples))
        objective -= beta * penalty
        gradient = gradient - beta * penalty_gradient
    return objective, gradient, terms, clipped


def _check_advantages(batch: ResponseBatch, advantages: np.ndarray) -> np.ndarray:
    advantages = check_finite_array("advantages", advantages)
    if advantages.shape != batch.responses.shape:
        raise ValueError(f"advantages must have the batch's shape {batch.responses.shape}, got {advantages.shape}")
    return advantages


def _check_parts(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    advantages: np.ndarray,
    log_reference: np.ndarray,
    beta: float,
    clip_epsilon: float,
    clip_epsilon_high: float | None,
    kl: str,
) -> tuple:
    """The checked arguments of :func:`grpo_objective` and :func:`grpo_gradient`, in ``_grpo_parts``' order."""
    instance = check_bandit("instance", instance)
    theta = check_theta("theta", theta, (instance.dim,))
    batch = check_batch("batch", batch, instance)
    log_reference = check_policy("log_reference", instance, log_reference)
    beta = check_nonnegative("beta", beta)
    interval = check_clip_epsilon(clip_epsilon, clip_epsilon_high)
    kl = check_option("kl", kl, KL_ESTIMATORS)
    return instance, theta, batch, _check_advantages(batch, advantages), log_reference, beta, interval, kl


def grpo_objective(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    advantages: np.ndarray,
    log_reference: np.ndarray,
    beta: float,
    *,
    clip_epsilon: float = 0.2,
    clip_epsilon_high: float | None = None,
    kl: str = "k3",
) -> float:
    """GRPO's ``mean_ij min(w A, clip(w, 1 - eps, 1 + eps_high) A) - beta KL-term`` (our stylized GRPO, after paper appendix H.4).

    Parameters
    ----------
    instance, theta
        The bandit and the parameters of ``pi_theta``.
    batch
        Groups drawn from ``pi_old``, shape ``(N, G)`` (:func:`covpo.batches.draw_batch`).
    advantages
        ``A_ij``, the batch's shape (:func:`group_advantages`).
    log_reference
        The KL reference table ``log pi_ref(y|x)`` (``pi_0`` or ``pi_t``).
    beta
        KL strength, ``>= 0`` (0 drops the term).
    clip_epsilon, clip_epsilon_high
        The ratio interval ``[1 - eps, 1 + eps_high]``.
    kl
        ``"exact"``: ``mean_i KL(pi_theta(.|x_i) || pi_ref(.|x_i))`` over the sampled prompts;
        ``"k3"``: :func:`k3_estimate` averaged over the batch's responses.
    """
    arguments = _check_parts(
        instance, theta, batch, advantages, log_reference, beta, clip_epsilon, clip_epsilon_high, kl
    )
    return _grpo_parts(*arguments)[0]


def grpo_gradient(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    advantages: np.ndarray,
    log_reference: np.ndarray,
    beta: float,
    *,
    clip_epsilon: float = 0.2,
    clip_epsilon_high: float | None = None,
    kl: str = "k3",
) -> np.ndarray:
    """Gradient of :func:`grpo_objective`, as automatic differentiation of the loss computes it.

    The surrogate contributes ``w A (phi - phibar)`` where the unclipped branch is the minimum
    and nothing where :func:`grpo_clip_mask` holds. The k3 term is differentiated through
    the estimator on the fixed batch, ``beta (pi_ref / pi_theta - 1)(phi - phibar)`` per sample;
    on-policy its expectation is ``-beta grad KL(pi_ref || pi_theta)``, the gradient of the
    reverse KL, not of ``KL(pi_theta || pi_ref)``, though both vanish at ``pi_theta = pi_ref``.
    """
    arguments = _check_parts(
        instance, theta, batch, advantages, log_reference, beta, clip_epsilon, clip_epsilon_high, kl
    )
    return _grpo_parts(*arguments)[1]


def check_grpo(
    *, beta: float, eta: float, n_iterations: int, batch_size: int, group_size: int, inner_steps: int,
    reference: str, clip_epsilon: float, clip_epsilon_high: float | None, kl: str, scale_by_std: bool, std_eps: float,
) -> dict[str, object]:
    """The hyperparameters of :func:`grpo` checked by its rules, as the trajectory stores them (its validator).

    ``beta`` must be ``> 0`` with a reset reference (as for every method with resets), ``>= 0``
    with a fixed one (0 drops the KL term).
    """
    reference = check_option("reference", reference, REFERENCES)
    check_clip_epsilon(clip_epsilon, clip_epsilon_high)
    return {
        "beta": check_positive("beta", beta) if reference == "reset" else check_nonnegative("beta", beta),
        "n_iterations": check_count("n_iterations", n_iterations),
        "reference": reference,
        "scale_by_std": check_flag("scale_by_std", scale_by_std),
        "batch_size": check_count("batch_size", batch_size),
        "group_size": check_count("group_size", group_size, minimum=2),
        "inner_steps": check_count("inner_steps", inner_steps),
        "eta": check_positive("eta", eta),
        "clip_epsilon": float(clip_epsilon),
        "clip_epsilon_high": None if clip_epsilon_high is None else float(clip_epsilon_high),
        "kl": check_option("kl", kl, KL_ESTIMATORS),
        "std_eps": check_positive("std_eps", std_eps),
    }


def grpo(
    instance: BanditInstance,
    *,
    beta: float,
    eta: float,
    n_iterations: int,
    batch_size: int,
    group_size: int,
    inner_steps: int,
    rng: np.random.Generator,
    reference: str = "fixed",
    clip_epsilon: float = 0.2,
    clip_epsilon_high: float | None = None,
    kl: str = "k3",
    scale_by_std: bool = False,
    std_eps: float = DEFAULT_STD_EPS,
    record_each_step: bool = False,
    on_inner_step: InnerStepCallback | None = None,
) -> Trajectory:
    """GRPO-style training (paper appendix H.4) with a fixed or a reset KL reference.

    Each of the ``T = n_iterations`` outer iterations draws ``N = batch_size`` prompts with
    ``G = group_size`` responses each from the current policy ``pi_old = pi_t`` (``N G``
    responses, one generation round), forms the group advantages once
    (:func:`group_advantages`) and takes ``K = inner_steps`` ascent steps
    ``theta <- theta + eta grad`` of :func:`grpo_gradient` on that batch. With
    ``reference="reset"`` the KL reference is reset to ``pi_t`` at the start of every outer
    iteration, in the manner of APMD (paper section 3.1), though with the k3 estimator and the clip
    its inner problem differs from APMD's subproblem.

    Parameters
    ----------
    instance
        The bandit.
    beta
        KL strength. With ``reference="fixed"``, ``>= 0`` (0 is plain clipped GRPO without
        KL); with ``reference="reset"``, ``> 0``, as for every method with resets.
    eta
        Learning rate, ``> 0``.
    n_iterations
        ``T``, outer iterations (batches), ``>= 1``.
    batch_size
        ``N``, prompts per outer iteration, ``>= 1``.
    group_size
        ``G``, responses per prompt, ``>= 2`` (a group of one has no baseline).
    inner_steps
        ``K``, full-batch gradient steps on each batch, ``>= 1``.
    rng
        The only source of randomness; a seed fixes the run bit for bit.
    reference
        ``"fixed"``: the KL reference is the base model ``pi_0`` throughout and no reset is
        counted; ``"reset"``: the reference is reset to ``pi_t`` every outer iteration (one
        reset each).
    clip_epsilon, clip_epsilon_high
        Ratio interval ``[1 - eps, 1 + eps_high]``; ``eps_high = eps`` by default.
    kl
        ``"k3"`` (practice) or ``"exact"`` (:func:`grpo_objective`).
    scale_by_std, std_eps
        Divide advantages by the group's standard deviation plus ``std_eps``.
    record_each_step
        Record every gradient step's iterate instead of one record per outer iteration.
    on_inner_step
        Optional diagnostics callback, called with an
        :class:`~covpo.algorithms.outer_loop.InnerStep` at every inner iterate ``k = 0, ..., K``
        (e.g. :class:`~covpo.algorithms.ratios.RatioRecorder`); its clip mask is
        :func:`grpo_clip_mask`.

    Returns
    -------
    Trajectory
        With ``thetas``; ``inner_kl`` (``E_x KL(pi_{t+1} || pi*_{t+1})`` per outer iteration)
        for the reset reference, ``None`` for the fixed one, which has no per-iteration target.

    Raises
    ------
    FloatingPointError
        If a step leaves ``theta`` non-finite (a learning rate too large for the importance
        weights), naming the outer iteration and inner step.
    """
    instance = check_bandit("instance", instance)
    settings = check_grpo(
        beta=beta, eta=eta, n_iterations=n_iterations, batch_size=batch_size, group_size=group_size,
        inner_steps=inner_steps, reference=reference, clip_epsilon=clip_epsilon,
        clip_epsilon_high=clip_epsilon_high, kl=kl, scale_by_std=scale_by_std, std_eps=std_eps,
    )
    beta, eta, n_iterations, batch_size, group_size, inner_steps, kl, std_eps = (
        settings[name]
        for name in ("beta", "eta", "n_iterations", "batch_size", "group_size", "inner_steps", "kl", "std_eps")
    )
    interval = check_clip_epsilon(clip_epsilon, clip_epsilon_high)
    check_generator("rng", rng)
    if beta > 0.0:
        check_step_stability("GRPO", eta, beta, feature_scale(instance))
    reset = settings["reference"] == "reset"
    loop = OuterLoop(
        "GRPO (reset reference)" if reset else "GRPO (fixed reference)", instance, settings,
        beta=beta if reset else None, record_each_step=record_each_step, on_inner_step=on_inner_step,
    )
    theta = loop.theta
    for t in range(n_iterations):
        log_old = loop.reset() if reset else loop.log_probs  # with resets, pi_ref <- pi_t
        log_reference = log_old if reset else loop.log_base
        batch = unchecked_draw_batch(instance, log_old, batch_size, rng, group_size)
        loop.count_responses(batch.size)
        advantages = group_advantages(batch.rewards, scale_by_std, std_eps)

        def subproblem(
            batch: ResponseBatch = batch, advantages: np.ndarray = advantages, log_reference: np.ndarray = log_reference
        ) -> Subproblem:
            options = {"clip_epsilon": clip_epsilon, "clip_epsilon_high": clip_epsilon_high, "kl": kl}
            return Subproblem(
                lambda at: grpo_objective(instance, at, batch, advantages, log_reference, beta, **options),
                lambda at: grpo_gradient(instance, at, batch, advantages, log_reference, beta, **options),
                eta,
            )

        observe = loop.observer(
            t, subproblem, batch=batch, log_sampling=log_old, log_reference=log_reference if beta > 0.0 else None,
            clip_mask=lambda log_ratio, advantages=advantages: grpo_clip_mask(log_ratio, advantages, interval),
        )
        for k in range(inner_steps):
            observe(k, theta)
            with np.errstate(over="ignore", invalid="ignore"):
                gradient = _grpo_parts(instance, theta, batch, advantages, log_reference, beta, interval, kl)[1]
            theta = loop.step(theta, eta, gradient, t, k)
        observe(inner_steps, theta)
        loop.end_iteration(theta, log_reference if reset else None)
    return loop.finish()
