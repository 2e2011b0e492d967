"""PPO-NoClip and PPO-Lite: importance-weighted inner loops for APMD (paper section 3).

Paper sections 3.2 and 3.3, Algorithms 1 and 2, appendices G and H. Each outer iteration
``t`` of APMD (:func:`covpo.algorithms.mirror_descent.apmd`) draws one batch of ``N`` prompts with one
response each from the reference ``pi_t`` and reuses it for all ``K`` inner gradient steps,
correcting for the drift of ``pi_theta`` away from ``pi_t`` with the importance weight
``w_theta(x, y) = pi_theta(y|x) / pi_t(y|x)``.

- **PPO-NoClip** (Algorithm 1) ascends
  ``L_t(theta) = mean_i [w_i r_i - beta (w_i log w_i - w_i + 1)]``, an unbiased estimate of
  ``J(pi_theta) - beta KL(pi_theta || pi_t)`` (``E_{pi_t}[w log w - w + 1] = KL(pi_theta || pi_t)``).
- **PPO-Lite** (Algorithm 2) clips the importance-weighted reward,
  ``mean_i clip(w_i, c_lo, c_hi) r_i``, and keeps the KL penalty, computed exactly per
  sampled prompt by default (responses are enumerable here) or by the sampled estimate of
  PPO-NoClip.

The gradients are written out with the softmax-linear score
``grad log pi_theta(y|x) = phi(x, y) - phibar_theta(x)`` (paper section 2.2) and are vectorized
over the batch. Costs go to the run's shared :class:`~covpo.trajectory.TrajectoryRecorder`
(``N`` responses and ``K`` gradient steps per outer iteration, one reset). The importance
ratios and the clip activity, which the trajectory does not hold, go to an optional
:class:`RatioRecorder`, one row per inner iterate, aligned with the trajectory by the
cumulative gradient-step count.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from covpo.batches import BatchTerms, ResponseBatch, batch_terms, draw_batch, prompt_kl, score_average
from covpo.instances import BanditInstance
from covpo.algorithms.mirror_descent import InnerLoop, InnerLoopContext, Subproblem, apmd
from covpo.policies import kl_per_prompt, log_policy, sample_prompts, sample_responses
from covpo.trajectory import Trajectory
from covpo.validation import check_count, check_positive

KL_ESTIMATES = ("exact", "sampled")


# ---------------------------------------------------------------------------------------
# PPO-NoClip (Algorithm 1)


def _check_beta(beta: float) -> float:
    return check_positive("beta", beta)


def ppo_noclip_objective(instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch, beta: float) -> float:
    """PPO-NoClip's ``L_t(theta) = mean_i [w_i r_i - beta (w_i log w_i - w_i + 1)]`` (paper Algorithm 1, cf. Eq. (20)).

    ``w_i = pi_theta(y_i|x_i) / pi_t(y_i|x_i)`` with ``pi_t`` the policy the batch was drawn
    from. Unbiased for ``J(pi_theta) - beta E_x KL(pi_theta || pi_t)``.
    """
    beta = _check_beta(beta)
    log_ratio = batch_terms(instance, theta, batch).log_ratio
    weights = np.exp(log_ratio)
    return float(np.mean(weights * batch.rewards - beta * (weights * log_ratio - weights + 1.0)))


def ppo_noclip_gradient(instance: BanditInstance, theta: np.ndarray, batch: ResponseBatch, beta: float) -> np.ndarray:
    """``grad L_t(theta) = mean_i w_i (r_i - beta log w_i) (phi(x_i, y_i) - phibar_theta(x_i))`` (Algorithm 1)."""
    beta = _check_beta(beta)
    terms = batch_terms(instance, theta, batch)
    return score_average(np.exp(terms.log_ratio) * (batch.rewards - beta * terms.log_ratio), terms.scores)


# ---------------------------------------------------------------------------------------
# PPO-Lite (Algorithm 2)


def default_clip_thresholds(beta: float, max_reward: float) -> tuple[float, float]:
    """``(exp(-R / beta), exp(R / beta))``: the narrowest interval that never clips the target (paper section 3.3).

    The target ratio is ``pi*_{t+1} / pi_t = exp(r / beta) / Z_t(x)`` with
    ``Z_t(x) = E_{pi_t} exp(r / beta)`` in ``[1, exp(R / beta)]`` for rewards in ``[0, R]``, so
    it lies in this interval. Stronger regularization (larger ``beta``) means tighter clipping.
    """
    beta = _check_beta(beta)
    max_reward = check_positive("max_reward", max_reward)
    return float(np.exp(-max_reward / beta)), float(np.exp(max_reward / beta))


def check_clip_thresholds(thresholds: tuple[float, float]) -> tuple[float, float]:
    """Return ``(c_lo, c_hi)`` if ``0 < c_lo < 1 < c_hi`` (both finite), else raise ``ValueError``."""
    try:
        low, high = (float(value) for value in thresholds)
    except (TypeError, ValueError):
        raise ValueError(f"thresholds must be a pair (c_lo, c_hi), got {thresholds!r}") from None
    if not (0.0 < low < 1.0 < high < np.inf):
        raise ValueError(f"thresholds must satisfy 0 < c_lo < 1 < c_hi < inf, got {thresholds!r}")
    return low, high


def check_kl_option(kl: str, allowed: tuple[str, ...]) -> str:
    """Return ``kl`` if it names one of the ``allowed`` KL computations, else raise ``ValueError``."""
    if kl not in allowed:
        raise ValueError(f"kl must be one of {allowed}, got {kl!r}")
    return kl


def _check_nonnegative_rewards(instance: BanditInstance) -> float:
    if instance.rewards.min() < 0.0:
        raise ValueError(
            f"instance.rewards must be >= 0 for the clipped objective clip(w) r, found {instance.rewards.min()!r}"
        )
    return float(instance.rewards.max())


def ppo_lite_clip_mask(log_ratio: np.ndarray, thresholds: tuple[float, float]) -> np.ndarray:
    """Which samples PPO-Lite clips: ``w_i < c_lo`` or ``w_i > c_hi`` (a ratio on a threshold is not clipped)."""
    low, high = thresholds
    return (log_ratio < np.log(low)) | (log_ratio > np.log(high))


def _ppo_lite_parts(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    log_reference: np.ndarray,
    beta: float,
    thresholds: tuple[float, float] | None,
    kl: str,
) -> tuple[float, np.ndarray, BatchTerms, np.ndarray]:
    beta = _check_beta(beta)
    kl = check_kl_option(kl, KL_ESTIMATES)
    max_reward = _check_nonnegative_rewards(instance)
    if thresholds is None:
        thresholds = default_clip_thresholds(beta, max_reward)
    low, high = check_clip_thresholds(thresholds)
    terms = batch_terms(instance, theta, batch)
    weights = np.exp(terms.log_ratio)
    clipped = ppo_lite_clip_mask(terms.log_ratio, (low, high))
    objective = float(np.mean(np.clip(weights, low, high) * batch.rewards))
    gradient = score_average(np.where(clipped, 0.0, weights * batch.rewards), terms.scores)
    if kl == "exact":
        penalty, penalty_gradient = prompt_kl(instance, terms.log_probs, log_reference, batch.prompts)
    else:
        penalty = float(np.mean(weights * terms.log_ratio - weights + 1.0))
        penalty_gradient = score_average(weights * terms.log_ratio, terms.scores)
    return objective - beta * penalty, gradient - beta * penalty_gradient, terms, clipped


def ppo_lite_objective(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    log_reference: np.ndarray,
    beta: float,
    *,
    thresholds: tuple[float, float] | None = None,
    kl: str = "exact",
) -> float:
    """PPO-Lite's ``mean_i clip(w_i, c_lo, c_hi) r_i - beta KL-term`` (paper section 3.3, Algorithm 2).

    Parameters
    ----------
    instance
        The bandit; rewards must be ``>= 0`` (the paper's setting ``r in [0, R]``).
    theta
        Parameters of ``pi_theta``.
    batch
        Drawn from the reference ``pi_t`` (the sampling policy is the reference in APMD).
    log_reference
        The table ``log pi_t(y|x)``, for the exact KL.
    beta
        Regularization strength, ``> 0``.
    thresholds
        ``(c_lo, c_hi)`` with ``0 < c_lo < 1 < c_hi``; by default
        :func:`default_clip_thresholds` with ``R`` the instance's largest reward.
    kl
        ``"exact"``: ``mean_i KL(pi_theta(.|x_i) || pi_t(.|x_i))`` summed over all responses of
        each sampled prompt (the population penalty of the paper, per sampled prompt);
        ``"sampled"``: PPO-NoClip's unbiased estimate ``mean_i (w_i log w_i - w_i + 1)``.
    """
    return _ppo_lite_parts(instance, theta, batch, log_reference, beta, thresholds, kl)[0]


def ppo_lite_gradient(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    log_reference: np.ndarray,
    beta: float,
    *,
    thresholds: tuple[float, float] | None = None,
    kl: str = "exact",
) -> np.ndarray:
    """Gradient of :func:`ppo_lite_objective` (Algorithm 2; paper appendix H.3.1).

    The clipped term contributes ``w_i r_i (phi - phibar)`` where ``c_lo <= w_i <= c_hi`` and
    nothing where the ratio is clipped (``clip`` is flat there; a ratio exactly on a
    threshold counts as unclipped, the one-sided derivative from inside). Since ``r >= 0``,
    clipping ``w`` and clipping ``w r`` agree. The KL term's gradient is exact
    (:func:`prompt_kl`) or ``mean_i w_i log w_i (phi - phibar)`` for the sampled estimate.
    """
    return _ppo_lite_parts(instance, theta, batch, log_reference, beta, thresholds, kl)[1]


# ---------------------------------------------------------------------------------------
# Diagnostics: importance ratios and clip activity


@dataclass(frozen=True, eq=False)
class RatioRecord:
    """Importance ratios and clip activity of a run, one row per inner iterate ``theta_{t,k}``.

    Row ``(t, k)`` is measured at the iterate after ``k`` of the ``K`` inner steps of outer
    iteration ``t`` (``k = 0`` is the start, where every ratio is 1; ``k = K`` is the iterate
    handed back). Ratios are to the policy the batch was drawn from (``pi_t`` in APMD).

    Attributes
    ----------
    iteration, inner_step
        ``t`` and ``k`` of each row.
    gradient_steps
        Cumulative gradient steps of the run at that iterate, the horizontal axis of
        :class:`~covpo.trajectory.Trajectory`, so rows line up with its records.
    batch_log_ratio_min, batch_log_ratio_max
        Extremes of ``log w_i`` over the reused batch: the weights the estimator multiplies by.
    log_ratio_min, log_ratio_max
        Extremes of ``log pi_theta(y|x) / pi_old(y|x)`` over every response of every prompt
        with ``rho(x) > 0``: the policy ratio bounds of the paper's analysis (appendix G).
    clip_fraction
        Fraction of the batch whose gradient the clip removes at this iterate (the gradient of
        step ``k + 1`` is taken here); 0 for PPO-NoClip.
    """

    iteration: np.ndarray
    inner_step: np.ndarray
    gradient_steps: np.ndarray
    batch_log_ratio_min: np.ndarray
    batch_log_ratio_max: np.ndarray
    log_ratio_min: np.ndarray
    log_ratio_max: np.ndarray
    clip_fraction: np.ndarray

    @property
    def n_rows(self) -> int:
        """Number of recorded inner iterates."""
        return int(self.iteration.shape[0])

    @property
    def ratio_bounds(self) -> tuple[float, float]:
        """``(min, max)`` of the policy ratio ``pi_theta / pi_old`` over all rows, prompts and responses."""
        return float(np.exp(self.log_ratio_min.min())), float(np.exp(self.log_ratio_max.max()))

    @property
    def batch_ratio_bounds(self) -> tuple[float, float]:
        """``(min, max)`` of the importance weights on the reused batches over the whole run."""
        return float(np.exp(self.batch_log_ratio_min.min())), float(np.exp(self.batch_log_ratio_max.max()))

    @property
    def mean_clip_fraction(self) -> float:
        """Average clip fraction over the iterates at which gradients were taken (``k < K``)."""
        returned = np.r_[self.iteration[1:] != self.iteration[:-1], True]
        return float(self.clip_fraction[~returned].mean()) if np.any(~returned) else 0.0


class RatioRecorder:
    """Collects :class:`RatioRecord` rows while inner loops run; :meth:`finish` freezes them.

    Pass one to an inner-loop factory (``ppo_noclip_inner_loop(..., ratios=recorder)``); the
    factory binds it positionally, so the run's settings list hyperparameters only.
    """

    def __init__(self) -> None:
        self._rows: list[tuple[int, int, int, float, float, float, float, float]] = []

    def record(
        self,
        *,
        iteration: int,
        inner_step: int,
        gradient_steps: int,
        batch_log_ratio: np.ndarray,
        log_ratio_table: np.ndarray,
        clip_fraction: float,
    ) -> None:
        """Keep one inner iterate's ratio extremes and clip fraction."""
        self._rows.append(
            (
                int(iteration),
                int(inner_step),
                int(gradient_steps),
                float(np.min(batch_log_ratio)),
                float(np.max(batch_log_ratio)),
                float(np.min(log_ratio_table)),
                float(np.max(log_ratio_table)),
                float(clip_fraction),
            )
        )

    def finish(self) -> RatioRecord:
        """Freeze the rows into a :class:`RatioRecord`."""
        if not self._rows:
            raise ValueError("a ratio record needs at least one row; run an inner loop first")
        columns = list(zip(*self._rows))
        integers = [np.array(column, dtype=np.int64) for column in columns[:3]]
        floats = [np.array(column, dtype=float) for column in columns[3:]]
        return RatioRecord(*integers, *floats)


@dataclass(frozen=True, eq=False)
class Evaluation:
    """One inner iterate's gradient plus what the diagnostics keep of it."""

    gradient: np.ndarray
    log_probs: np.ndarray
    batch_log_ratio: np.ndarray
    clip_fraction: float


def ascend(
    theta: np.ndarray,
    evaluate: Callable[[np.ndarray], Evaluation],
    *,
    inner_steps: int,
    eta: float,
    on_step: Callable[[np.ndarray], None],
    log_sampling: np.ndarray,
    prompt_support: np.ndarray,
    ratios: RatioRecorder | None,
    iteration: int,
    steps_before: int,
) -> np.ndarray:
    """``K`` full-batch gradient-ascent steps ``theta <- theta + eta g(theta)`` on one reused batch.

    The shared inner loop of Algorithms 1 and 2 and of GRPO: ``evaluate`` returns the batch
    gradient at ``theta``; ``on_step`` reports each step to the cost recorder. With a
    ``ratios`` recorder, every iterate ``k = 0, ..., K`` is measured against the sampling
    policy ``log_sampling`` (the final one with one extra evaluation). Raises
    ``FloatingPointError`` if a step leaves ``theta`` non-finite (a learning rate too large
    for the importance weights), naming the outer iteration and inner step.
    """
    theta = np.array(theta, dtype=float)
    for k in range(inner_steps + 1):
        with np.errstate(over="ignore", invalid="ignore"):
            evaluation = evaluate(theta) if (k < inner_steps or ratios is not None) else None
        if ratios is not None:
            ratios.record(
                iteration=iteration,
                inner_step=k,
                gradient_steps=steps_before + k,
                batch_log_ratio=evaluation.batch_log_ratio,
                log_ratio_table=(evaluation.log_probs - log_sampling)[prompt_support],
                clip_fraction=evaluation.clip_fraction,
            )
        if k == inner_steps:
            break
        theta = theta + eta * evaluation.gradient
        if not np.all(np.isfinite(theta)):
            raise FloatingPointError(
                f"theta became non-finite at outer iteration {iteration}, inner step {k + 1}; "
                f"eta = {eta!r} is too large for these importance weights"
            )
        on_step(theta)
    return theta


def check_inner_loop_sizes(batch_size: int, inner_steps: int, eta: float) -> tuple[int, int, float]:
    """Validate ``N >= 1``, ``K >= 1`` and ``eta > 0``; the error names the offending argument."""
    return (
        check_count("batch_size", batch_size),
        check_count("inner_steps", inner_steps),
        check_positive("eta", eta),
    )


def draw_reference_batch(
    subproblem: Subproblem, context: InnerLoopContext, batch_size: int, group_size: int | None = None
) -> ResponseBatch:
    """Draw an outer iteration's batch from the reference ``pi_t`` and count its responses."""
    batch = draw_batch(subproblem.instance, subproblem.log_reference, batch_size, context.generator(), group_size)
    context.responses_sampled(batch.size)
    return batch


def ascend_on_subproblem(
    ratios: RatioRecorder | None,
    subproblem: Subproblem,
    context: InnerLoopContext,
    evaluate: Callable[[np.ndarray], Evaluation],
    inner_steps: int,
    eta: float,
) -> np.ndarray:
    """:func:`ascend` from ``theta_t`` with costs reported to the APMD context."""
    return ascend(
        subproblem.reference_theta,
        evaluate,
        inner_steps=inner_steps,
        eta=eta,
        on_step=lambda theta: context.gradient_step_taken(subproblem, theta),
        log_sampling=subproblem.log_reference,
        prompt_support=subproblem.instance.prompt_probs > 0.0,
        ratios=ratios,
        iteration=subproblem.iteration,
        steps_before=context.recorder.gradient_steps,
    )


# ---------------------------------------------------------------------------------------
# Inner loops for APMD


def ppo_noclip_steps(
    ratios: RatioRecorder | None,
    subproblem: Subproblem,
    context: InnerLoopContext,
    *,
    batch_size: int,
    inner_steps: int,
    eta: float,
) -> np.ndarray:
    """One outer iteration of PPO-NoClip (Algorithm 1): one batch from ``pi_t``, ``K`` steps on ``L_t``.

    Draws ``N = batch_size`` prompts and one response each from ``pi_t`` (``N`` responses
    counted), then takes ``K = inner_steps`` steps ``theta <- theta + eta grad L_t(theta)``
    from ``theta_t`` on that batch (:func:`ppo_noclip_gradient`).
    """
    instance, beta = subproblem.instance, subproblem.beta
    batch = draw_reference_batch(subproblem, context, batch_size)

    def evaluate(theta: np.ndarray) -> Evaluation:
        terms = batch_terms(instance, theta, batch)
        coefficients = np.exp(terms.log_ratio) * (batch.rewards - beta * terms.log_ratio)
        return Evaluation(score_average(coefficients, terms.scores), terms.log_probs, terms.log_ratio, 0.0)

    return ascend_on_subproblem(ratios, subproblem, context, evaluate, inner_steps, eta)


def ppo_noclip_inner_loop(
    batch_size: int, inner_steps: int, eta: float, ratios: RatioRecorder | None = None
) -> InnerLoop:
    """The PPO-NoClip inner loop for :func:`covpo.algorithms.mirror_descent.apmd` (paper section 3.2, Algorithm 1).

    Parameters
    ----------
    batch_size
        ``N``, prompt-response pairs drawn from ``pi_t`` per outer iteration, ``>= 1``.
    inner_steps
        ``K``, full-batch gradient steps on the reused batch, ``>= 1``.
    eta
        Inner learning rate, ``> 0``.
    ratios
        Optional :class:`RatioRecorder` that receives every inner iterate's ratios.
    """
    batch_size, inner_steps, eta = check_inner_loop_sizes(batch_size, inner_steps, eta)
    return functools.partial(ppo_noclip_steps, ratios, batch_size=batch_size, inner_steps=inner_steps, eta=eta)


def ppo_lite_steps(
    ratios: RatioRecorder | None,
    subproblem: Subproblem,
    context: InnerLoopContext,
    *,
    batch_size: int,
    inner_steps: int,
    eta: float,
    thresholds: tuple[float, float] | None,
    kl: str,
) -> np.ndarray:
    """One outer iteration of PPO-Lite (Algorithm 2): one batch from ``pi_t``, ``K`` steps on the clipped objective.

    Gradient ascent on :func:`ppo_lite_objective` with reference ``pi_t`` (paper appendix
    H.3.1); ``thresholds=None`` uses :func:`default_clip_thresholds` for this ``beta``.
    """
    instance, beta = subproblem.instance, subproblem.beta
    batch = draw_reference_batch(subproblem, context, batch_size)

    def evaluate(theta: np.ndarray) -> Evaluation:
        _, gradient, terms, clipped = _ppo_lite_parts(
            instance, theta, batch, subproblem.log_reference, beta, thresholds, kl
        )
        return Evaluation(gradient, terms.log_probs, terms.log_ratio, float(clipped.mean()))

    return ascend_on_subproblem(ratios, subproblem, context, evaluate, inner_steps, eta)


def ppo_lite_inner_loop(
    batch_size: int,
    inner_steps: int,
    eta: float,
    *,
    thresholds: tuple[float, float] | None = None,
    kl: str = "exact",
    ratios: RatioRecorder | None = None,
) -> InnerLoop:
    """The PPO-Lite inner loop for :func:`covpo.algorithms.mirror_descent.apmd` (paper section 3.3, Algorithm 2).

    Parameters
    ----------
    batch_size, inner_steps, eta
        ``N``, ``K`` and the learning rate, as for :func:`ppo_noclip_inner_loop`.
    thresholds
        ``(c_lo, c_hi)`` with ``0 < c_lo < 1 < c_hi``; ``None`` for
        ``(exp(-R / beta), exp(R / beta))`` with ``R`` the instance's largest reward.
    kl
        ``"exact"`` (per sampled prompt, the default) or ``"sampled"``.
    ratios
        Optional :class:`RatioRecorder`; its clip fraction is the share of the batch with
        ``w_i`` outside ``[c_lo, c_hi]``.
    """
    batch_size, inner_steps, eta = check_inner_loop_sizes(batch_size, inner_steps, eta)
    if thresholds is not None:
        thresholds = check_clip_thresholds(thresholds)
    kl = check_kl_option(kl, KL_ESTIMATES)
    return functools.partial(
        ppo_lite_steps,
        ratios,
        batch_size=batch_size,
        inner_steps=inner_steps,
        eta=eta,
        thresholds=thresholds,
        kl=kl,
    )


# ---------------------------------------------------------------------------------------
# Whole runs


@dataclass(frozen=True, eq=False)
class PolicyOptimizationRun:
    """A PPO- or GRPO-style run: the shared trajectory plus the importance-ratio diagnostics.

    Attributes
    ----------
    trajectory
        Costs and iterates, as every algorithm reports them.
    thetas
        Parameters after each outer iteration, ``theta_0`` first; shape ``(n_iterations + 1, d)``.
    inner_kl
        ``E_x KL(pi_{t+1} || pi*_{t+1})`` per outer iteration for runs with resets (APMD);
        ``None`` for a fixed reference, which has no per-iteration target.
    ratios
        The :class:`RatioRecord` of every inner iterate.
    """

    trajectory: Trajectory
    thetas: np.ndarray
    inner_kl: np.ndarray | None
    ratios: RatioRecord


def apmd_with_ratios(
    instance: BanditInstance,
    beta: float,
    n_iterations: int,
    inner_loop: InnerLoop,
    ratios: RatioRecorder,
    *,
    rng: np.random.Generator,
    record_each_step: bool,
    algorithm: str,
    settings: dict | None = None,
) -> PolicyOptimizationRun:
    """Run :func:`covpo.algorithms.mirror_descent.apmd` with a sampling inner loop bound to ``ratios``.

    The one place every sampled instance of APMD (PPO, GRPO with resets, the squared-loss
    methods) turns into a :class:`PolicyOptimizationRun`: the shared trajectory record plus the
    importance-ratio diagnostics its inner loop wrote into ``ratios``.
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator, got {rng!r}")
    result = apmd(
        instance,
        beta,
        n_iterations,
        inner_loop,
        rng=rng,
        record_each_step=record_each_step,
        algorithm=algorithm,
        settings=settings,
    )
    return PolicyOptimizationRun(result.trajectory, result.thetas, result.inner_kl, ratios.finish())


def ppo_noclip(
    instance: BanditInstance,
    beta: float,
    n_iterations: int,
    *,
    batch_size: int,
    inner_steps: int,
    eta: float,
    rng: np.random.Generator,
    record_each_step: bool = False,
) -> PolicyOptimizationRun:
    """PPO-NoClip (paper Algorithm 1, section 3.2): APMD with :func:`ppo_noclip_inner_loop`.

    ``T = n_iterations`` resets; each costs ``N = batch_size`` responses and ``K = inner_steps``
    gradient steps. All randomness comes from ``rng``, so a seed fixes the run bit for bit.
    """
    ratios = RatioRecorder()
    loop = ppo_noclip_inner_loop(batch_size, inner_steps, eta, ratios)
    return apmd_with_ratios(
        instance, beta, n_iterations, loop, ratios, rng=rng, record_each_step=record_each_step, algorithm="PPO-NoClip"
    )


def ppo_lite(
    instance: BanditInstance,
    beta: float,
    n_iterations: int,
    *,
    batch_size: int,
    inner_steps: int,
    eta: float,
    rng: np.random.Generator,
    thresholds: tuple[float, float] | None = None,
    kl: str = "exact",
    record_each_step: bool = False,
) -> PolicyOptimizationRun:
    """PPO-Lite (paper Algorithm 2, section 3.3): APMD with :func:`ppo_lite_inner_loop`.

    The thresholds actually used are stored in the trajectory's settings.
    """
    beta = _check_beta(beta)
    used = thresholds if thresholds is not None else default_clip_thresholds(beta, _check_nonnegative_rewards(instance))
    ratios = RatioRecorder()
    loop = ppo_lite_inner_loop(batch_size, inner_steps, eta, thresholds=thresholds, kl=kl, ratios=ratios)
    return apmd_with_ratios(
        instance,
        beta,
        n_iterations,
        loop,
        ratios,
        rng=rng,
        record_each_step=record_each_step,
        algorithm="PPO-Lite",
        settings={"thresholds": check_clip_thresholds(used)},
    )
