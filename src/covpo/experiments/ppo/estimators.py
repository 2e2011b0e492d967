"""The spread, across independent batches, of the importance-weighted objective and gradient with and without clipping (paper section 3.3).

:func:`batch_estimates` evaluates both algorithms' estimates on a stack of batches;
:func:`estimator_spread` summarizes them at a fixed batch size along a line of candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.instances import BanditInstance
from covpo.objectives import regularized_gradient, regularized_objective
from covpo.policies import base_log_policy, kl_per_prompt, log_policy
from covpo.algorithms.ppo_lite import check_clip_thresholds, default_clip_thresholds
from covpo.algorithms.steps import finite_result
from covpo.batches import BatchTerms, ResponseBatch, draw_batch
from covpo.table import Table
from covpo.validation import (
    check_count,
    check_finite_array,
    check_index_array,
    check_instance,
    check_positive,
    check_seed,
    check_shape,
    check_theta,
)
from covpo.experiments.ppo.checks import _check_log_reference


@dataclass(frozen=True, eq=False)
class EstimatorSpread:
    """PPO-NoClip's and PPO-Lite's batch estimates at candidate policies, over many batches.

    Candidates are ``theta_s = theta_ref + s theta_star``, ``pi_s proportional to pi_ref exp(s r)``:
    the mirror-descent target at strength ``1 / s``, so the largest weight grows like
    ``exp(s R)``. For each ``s`` the same ``n_batches`` batches of ``N`` samples from the
    reference are used by both estimators.

    Attributes
    ----------
    scales
        The ``s`` values, ``(n_scales,)``.
    max_log_ratio
        ``max_{x,y} log pi_s / pi_ref`` over the support.
    true_objective
        ``J_beta(pi_s; pi_ref)``, the population value NoClip estimates without bias.
    noclip_mean, noclip_std, lite_mean, lite_std
        Mean and standard deviation across batches of each estimate of the objective.
    noclip_gradient_std, lite_gradient_std
        Root mean squared deviation of the gradient estimates from their own mean (``sqrt(trace Cov)``).
    noclip_gradient_rmse, lite_gradient_rmse
        Root mean squared distance of the gradient estimates from ``grad J_beta(pi_s; pi_ref)``.
    clip_fraction
        Mean share of samples PPO-Lite clips at ``pi_s``.
    beta, thresholds, batch_size, n_batches
        The settings.
    """

    scales: np.ndarray
    max_log_ratio: np.ndarray
    true_objective: np.ndarray
    noclip_mean: np.ndarray
    noclip_std: np.ndarray
    lite_mean: np.ndarray
    lite_std: np.ndarray
    noclip_gradient_std: np.ndarray
    lite_gradient_std: np.ndarray
    noclip_gradient_rmse: np.ndarray
    lite_gradient_rmse: np.ndarray
    clip_fraction: np.ndarray
    beta: float
    thresholds: tuple[float, float]
    batch_size: int
    n_batches: int

    def summary(self) -> str:
        """A table: per candidate, the largest weight, the objectives' spreads, the gradients' spreads and errors."""
        header = "  s   max w  sd NoClip  sd Lite  grad sd NoClip  grad sd Lite  error NoClip  error Lite"
        rows = [
            f"{row[0]:3.1f} {row[1]:7.2f} {row[2]:10.3f} {row[3]:8.3f} {row[4]:15.3f} {row[5]:13.3f} {row[6]:12.3f} {row[7]:11.3f}"
            for row in zip(
                self.scales, np.exp(self.max_log_ratio), self.noclip_std, self.lite_std, self.noclip_gradient_std,
                self.lite_gradient_std, self.noclip_gradient_rmse, self.lite_gradient_rmse,
            )
        ]
        return "\n".join([header, *rows])

    def table(self) -> Table:
        """Per candidate ``s``: the largest weight, the objectives' spreads, the gradients' spreads and errors."""
        columns = zip(
            self.scales, np.exp(self.max_log_ratio), self.noclip_std, self.lite_std, self.noclip_gradient_std,
            self.lite_gradient_std, self.noclip_gradient_rmse, self.lite_gradient_rmse,
        )
        return Table(
            ("s", "largest weight", "objective sd: NoClip", "objective sd: Lite", "gradient sd: NoClip",
             "gradient sd: Lite", "gradient error: NoClip", "gradient error: Lite"),
            tuple(tuple(float(value) for value in row) for row in columns),
            caption=f"Batch estimates at $\\pi_s$, across {self.n_batches} batches of N = {self.batch_size}",
            notes=("sd: standard deviation across batches (for a gradient, the root of the trace of its "
                   "covariance). Error: root-mean-square distance from the true gradient of $J_\\beta(\\pi_s; \\pi_0)$.",),
        )


def batch_estimates(
    instance: BanditInstance,
    theta: np.ndarray,
    log_reference: np.ndarray,
    prompts: np.ndarray,
    responses: np.ndarray,
    beta: float,
    thresholds: tuple[float, float],
) -> dict[str, np.ndarray]:
    """Both algorithms' objective and gradient estimates on each row of a stack of batches.

    ``prompts`` and ``responses`` have shape ``(M, N)``, ``M`` batches of ``N`` samples from
    the reference ``pi_ref`` (``log_reference``). Returns per batch, vectorized over batches,
    PPO-NoClip's ``L_t`` and its gradient (:func:`covpo.algorithms.ppo_noclip.ppo_noclip_objective`,
    :func:`covpo.algorithms.ppo_noclip.ppo_noclip_gradient`), PPO-Lite's clipped objective with the exact KL
    and its gradient (:func:`covpo.algorithms.ppo_lite.ppo_lite_objective`,
    :func:`covpo.algorithms.ppo_lite.ppo_lite_gradient`),
    and the clipped share, under the keys ``noclip``, ``noclip_gradient``, ``lite``,
    ``lite_gradient`` and ``clipped``.
    """
    instance = check_instance("instance", instance, BanditInstance)
    theta = check_theta("theta", theta, (instance.dim,))
    log_reference = _check_log_reference(instance, log_reference)
    prompts = check_index_array("prompts", prompts, instance.n_prompts)
    if prompts.ndim != 2 or prompts.size == 0:
        raise ValueError(f"prompts must have shape (M, N) with M, N >= 1, got shape {prompts.shape}")
    responses = check_shape("responses", check_index_array("responses", responses, instance.n_responses), prompts.shape)
    beta = check_positive("beta", beta)
    low, high = check_clip_thresholds(thresholds)
    n_batches, batch_size = prompts.shape
    log_probs = log_policy(instance, theta)
    probs = np.exp(log_probs)
    log_w = log_probs[prompts, responses] - log_reference[prompts, responses]
    w = np.exp(log_w)
    rewards = instance.rewards[prompts, responses]
    clipped = (log_w < np.log(low)) | (log_w > np.log(high))
    kl = kl_per_prompt(log_probs, log_reference)
    kl_gradients = np.einsum("xy,xyd->xd", probs * (log_probs - log_reference - kl[:, None]), instance.features)
    n_prompts = instance.n_prompts
    prompt_cells = np.arange(n_batches)[:, None] * n_prompts + prompts
    samples = zip(prompts, responses, rewards, log_reference[prompts, responses])
    batches = [BatchTerms(instance, ResponseBatch.unchecked(*sample), log_probs) for sample in samples]

    def score_average(coefficients: np.ndarray) -> np.ndarray:
        return np.array([terms.score_average(row) for terms, row in zip(batches, coefficients)])

    counts = np.bincount(prompt_cells.ravel(), minlength=n_batches * n_prompts).reshape(n_batches, n_prompts)
    estimates = {
        "noclip": np.mean(w * rewards - beta * (w * log_w - w + 1.0), axis=1),
        "noclip_gradient": score_average(w * (rewards - beta * log_w)),
        "lite": np.mean(np.clip(w, low, high) * rewards, axis=1) - beta * kl[prompts].mean(axis=1),
        "lite_gradient": score_average(np.where(clipped, 0.0, w * rewards)) - beta * counts @ kl_gradients / batch_size,
        "clipped": clipped.mean(axis=1),
    }
    for values in estimates.values():
        finite_result(values, beta)
    return estimates


def estimator_spread(
    instance: BanditInstance,
    beta: float,
    scales: Sequence[float],
    *,
    thresholds: tuple[float, float] | None = None,
    batch_size: int,
    n_batches: int,
    seed: int,
) -> EstimatorSpread:
    """Spread of the importance-weighted estimates, clipped and unclipped, at a fixed batch size.

    The reference is the base model; candidates ``theta_0 + s theta_star`` (the instance needs
    ``reward_theta``). ``thresholds`` default to :func:`~covpo.algorithms.ppo_lite.default_clip_thresholds` for
    ``beta``. One stack of ``n_batches`` batches from ``np.random.default_rng(seed)`` serves
    every candidate and both estimators (common random numbers).
    """
    instance = check_instance("instance", instance, BanditInstance)
    beta = check_positive("beta", beta)
    scales = check_finite_array("scales", scales, ndim=1)
    if scales.size == 0 or np.any(scales < 0.0):
        raise ValueError(f"scales must hold at least one value, each >= 0, got {scales!r}")
    if instance.reward_theta is None:
        raise ValueError("instance.reward_theta is None: the candidates move along theta_star")
    if thresholds is None:
        low, high = default_clip_thresholds(beta, float(instance.rewards.max()))
        if not 0.0 < low < 1.0 < high < np.inf:
            raise ValueError(
                f"beta = {beta!r} leaves no default clipping interval [exp(-R/beta), exp(R/beta)] = [{low!r}, {high!r}] "
                "in floating point; pass thresholds"
            )
    thresholds = check_clip_thresholds((low, high) if thresholds is None else thresholds)
    batch_size = check_count("batch_size", batch_size)
    n_batches = check_count("n_batches", n_batches, minimum=2)
    seed = check_seed("seed", seed)
    log_reference = base_log_policy(instance)
    batch = draw_batch(instance, log_reference, n_batches * batch_size, np.random.default_rng(seed))
    prompts = batch.prompts.reshape(n_batches, batch_size)
    responses = batch.responses.reshape(n_batches, batch_size)
    support = instance.prompt_probs > 0.0
    keys = ("max", "true", "nm", "ns", "lm", "ls", "ngs", "lgs", "ngr", "lgr", "clip")
    columns: dict[str, list[float]] = {key: [] for key in keys}
    for scale in scales:
        theta = instance.base_theta + scale * instance.reward_theta
        log_probs = log_policy(instance, theta)
        estimates = batch_estimates(instance, theta, log_reference, prompts, responses, beta, thresholds)
        truth = regularized_gradient(instance, theta, log_reference, beta)
        values = (
            float((log_probs - log_reference)[support].max()),
            regularized_objective(instance, log_probs, log_reference, beta),
            float(estimates["noclip"].mean()),
            float(estimates["noclip"].std(ddof=1)),
            float(estimates["lite"].mean()),
            float(estimates["lite"].std(ddof=1)),
            *(
                float(np.sqrt(np.mean(np.sum((g - g.mean(axis=0)) ** 2, axis=1))))
                for g in (estimates["noclip_gradient"], estimates["lite_gradient"])
            ),
            *(
                float(np.sqrt(np.mean(np.sum((g - truth) ** 2, axis=1))))
                for g in (estimates["noclip_gradient"], estimates["lite_gradient"])
            ),
            float(estimates["clipped"].mean()),
        )
        for key, value in zip(keys, values):
            columns[key].append(value)
    arrays = {key: np.array(value) for key, value in columns.items()}
    return EstimatorSpread(
        scales=scales,
        max_log_ratio=arrays["max"],
        true_objective=arrays["true"],
        noclip_mean=arrays["nm"],
        noclip_std=arrays["ns"],
        lite_mean=arrays["lm"],
        lite_std=arrays["ls"],
        noclip_gradient_std=arrays["ngs"],
        lite_gradient_std=arrays["lgs"],
        noclip_gradient_rmse=arrays["ngr"],
        lite_gradient_rmse=arrays["lgr"],
        clip_fraction=arrays["clip"],
        beta=beta,
        thresholds=thresholds,
        batch_size=batch_size,
        n_batches=n_batches,
    )
