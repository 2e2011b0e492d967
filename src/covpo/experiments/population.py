"""The population analysis of the squared-loss instances of APMD (paper section 4, appendices I to L).

The runs live in :mod:`covpo.algorithms.kimipo` (KimiPO and KimiPO-Norm, Algorithms 3 and 4)
and :mod:`covpo.algorithms.rebel` (Rebel-OnPolicy, Algorithm 5); this module holds what the
book measures about their losses with every response enumerated, shared by the chapters on
PPO (section 3) and on the squared-loss methods (section 4):

- the exact normalizer ``b_t(x) = beta log E_{y~pi_t} exp(r(x, y) / beta)`` (:func:`normalizer`)
  and the moments and biases of the two sampled baselines against it
  (:func:`mean_baseline_moments`, :func:`normalizer_baseline_moments`, :func:`mean_baseline_bias`,
  :func:`normalizer_baseline_bias` and their approximations);
- the population losses, gradients, Hessians and minimizers of the Kimi-style and pairwise
  losses (:func:`kimi_population_loss`, :func:`rebel_population_loss`, ...) and their values at
  the exact target (:func:`minimizer_check`);
- the mean-squared-error criterion of section 4.1 (:func:`regression_mse`, :func:`mse_coverage_bound`).

For softmax-linear policies, with scores ``s_theta(x, y) = phi(x, y) - phibar_theta(x)``,
residual ``e = r - bhat - beta u_theta`` and ``Cov_theta(x)`` the feature covariance under
``pi_theta(.|x)``, the population quantities used by the analysis helpers below are

    ``grad L = -2 beta E_x E_{pi_t}[e s_theta]``,
    ``hess L = 2 beta^2 E_x E_{pi_t}[s_theta s_theta^T] + 2 beta E_x (E_{pi_t} e) Cov_theta(x)``,

with ``E_{pi_t} e = V_t(x) - b(x) + beta KL(pi_t || pi_theta)`` for a baseline with mean ``b(x)``. The
second Hessian term is PSD wherever the expected baseline is at most ``V_t(x)`` (the mean
baseline: KimiPO's population loss is globally convex); a baseline above ``V_t`` (the
normalizer, which exceeds ``V_t`` by Jensen) can make it indefinite. At the target, with the
exact normalizer, every residual vanishes and the Hessian is PSD: convexity is local. The
pairwise loss is a quadratic with constant Hessian ``4 beta^2 E_x Cov_{pi_t}(x)``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import minimize
from scipy.special import gammaln, logsumexp

from covpo.algorithms.kimipo import normalizer_baseline
from covpo.algorithms.mirror_descent import exact_target_theta
from covpo.algorithms.steps import check_squared_loss_beta, finite_result
from covpo.instances import BanditInstance
from covpo.objectives import regularized_optimum
from covpo.policies import centered_features, check_bandit, check_policy, log_coverage, log_policy, sample_responses
from covpo.validation import check_count, check_finite_array, check_flag, check_generator, check_positive, check_shape, check_theta

DEFAULT_MAX_OUTCOMES = 200_000
DEFAULT_MONTE_CARLO_SAMPLES = 4_000


def _check_reference(instance: BanditInstance, log_reference: np.ndarray) -> np.ndarray:
    """``log_reference`` as ``instance``'s log-probability table; checks ``instance`` first."""
    return check_policy("log_reference", check_bandit("instance", instance), log_reference)


def _check_prompt_baseline(instance: BanditInstance, baseline: np.ndarray) -> np.ndarray:
    baseline = check_finite_array("baseline", baseline, ndim=1)
    return check_shape("baseline", baseline, (instance.n_prompts,))


# ---------------------------------------------------------------------------------------
# Baselines


def normalizer(instance: BanditInstance, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """The exact normalizer ``b_t(x) = beta log E_{y~pi_t} exp(r(x, y) / beta)`` per prompt (paper section 4.1).

    The shift that makes ``r - b_t`` equal ``beta log(pi*_{t+1} / pi_t)``; computed by
    log-sum-exp, so it stays exact for small ``beta``. Lies in ``[V_t(x), max_y r(x, y)]``.
    """
    beta = check_squared_loss_beta(beta)
    log_reference = _check_reference(instance, log_reference)
    return beta * logsumexp(log_reference + instance.rewards / beta, axis=1)


@dataclass(frozen=True, eq=False)
class BaselineMoments:
    """Mean and variance of a sampled baseline ``bhat(x)`` per prompt, given ``pi_t``.

    A baseline drawn independently of the regression response enters the expected loss
    only through its mean (the variance adds the constant ``E_x Var bhat(x)``), so
    ``mean`` is what the population losses take as their ``baseline`` argument.

    Attributes
    ----------
    mean
        ``E[bhat(x)]``, shape ``(n_prompts,)``.
    variance
        ``Var[bhat(x)]``, same shape.
    standard_error
        Monte Carlo standard error of ``mean``; zeros where it was computed exactly.
    exact
        Whether every prompt was computed by enumeration.
    """

    mean: np.ndarray
    variance: np.ndarray
    standard_error: np.ndarray
    exact: bool


def mean_baseline_moments(
    instance: BanditInstance, log_reference: np.ndarray, extra_responses: int = 1
) -> BaselineMoments:
    """Exact moments of KimiPO's mean baseline over ``M`` extra responses: ``V_t(x)`` and ``Var_t(r) / M``.

    Paper section 4.2 (Algorithm 3). The mean is unbiased for ``V_t(x) = E_{pi_t} r``, not for
    the normalizer; more extra responses shrink the variance only.
    """
    log_reference = _check_reference(instance, log_reference)
    extra_responses = check_count("extra_responses", extra_responses)
    probs = np.exp(log_reference)
    value = np.sum(probs * instance.rewards, axis=1)
    variance = np.sum(probs * (instance.rewards - value[:, None]) ** 2, axis=1)
    return BaselineMoments(value, variance / extra_responses, np.zeros_like(value), True)


@lru_cache(maxsize=64)
def _compositions(total: int, parts: int) -> np.ndarray:
    """Every vector of ``parts`` non-negative integers summing to ``total`` (stars and bars), one per row.

    Cached (prompts with as many distinct rewards share it) and read-only.
    """
    if parts == 1:
        counts = np.array([[total]], dtype=np.int64)
    else:
        bars = np.array(list(itertools.combinations(range(total + parts - 1), parts - 1)), dtype=np.int64)
        edges = np.hstack([np.full((bars.shape[0], 1), -1), bars, np.full((bars.shape[0], 1), total + parts - 1)])
        counts = np.diff(edges, axis=1) - 1
    counts.setflags(write=False)
    return counts


def _exact_normalizer_moments(
    values: np.ndarray, log_probs: np.ndarray, beta: float, group_size: int
) -> tuple[float, float]:
    """Mean and variance of ``beta log mean_j exp(r_j / beta)`` for ``G`` draws from a discrete law."""
    counts = _compositions(group_size, values.size)
    log_weights = (
        gammaln(group_size + 1.0)
        - gammaln(counts + 1.0).sum(axis=1)
        + np.where(counts > 0, counts * log_probs[None, :], 0.0).sum(axis=1)
    )
    weights = np.exp(log_weights - logsumexp(log_weights))
    with np.errstate(divide="ignore"):
        log_counts = np.log(counts)
    outcomes = beta * (logsumexp(log_counts + values[None, :] / beta, axis=1) - np.log(group_size))
    mean = float(weights @ outcomes)
    return mean, float(weights @ (outcomes - mean) ** 2)


def normalizer_baseline_moments(
    instance: BanditInstance,
    log_reference: np.ndarray,
    beta: float,
    group_size: int,
    *,
    rng: np.random.Generator | None = None,
    n_samples: int = DEFAULT_MONTE_CARLO_SAMPLES,
    max_outcomes: int = DEFAULT_MAX_OUTCOMES,
) -> BaselineMoments:
    """Moments of KimiPO-Norm's baseline ``beta log mean_j exp(r_j / beta)`` over ``G`` draws from ``pi_t``.

    Paper section 4.2 and appendix K (Algorithm 4). Per prompt, responses with equal reward are merged and the
    multinomial laws of the ``G`` draws over the ``k`` distinct rewards are enumerated exactly
    when there are at most ``max_outcomes`` of them (``C(G + k - 1, k - 1)``); otherwise, if
    ``rng`` is given, ``n_samples`` groups are drawn for every prompt (vectorized) and the
    standard error of the mean is reported. By Jensen, ``E bhat <= b_t(x)``; ``G = 1`` gives
    ``V_t(x)`` and ``G -> inf`` gives ``b_t(x)``.

    Parameters
    ----------
    instance, log_reference
        The bandit and ``log pi_t``.
    beta
        Regularization strength, ``> 0``.
    group_size
        ``G``, extra responses per prompt, ``>= 1``.
    rng
        Needed only when some prompt is too large to enumerate.
    n_samples
        Monte Carlo groups per prompt, ``>= 2``.
    max_outcomes
        Largest number of multinomial outcomes enumerated per prompt, ``>= 1``.
    """
    beta = check_squared_loss_beta(beta)
    log_reference = _check_reference(instance, log_reference)
    group_size = check_count("group_size", group_size)
    n_samples = check_count("n_samples", n_samples, minimum=2)
    max_outcomes = check_count("max_outcomes", max_outcomes)
    if rng is not None:
        check_generator("rng", rng)
    n_prompts = instance.n_prompts
    mean, variance, error = np.zeros(n_prompts), np.zeros(n_prompts), np.zeros(n_prompts)
    sampled = []
    for x in range(n_prompts):
        values, inverse = np.unique(instance.rewards[x], return_inverse=True)
        if math.comb(group_size + values.size - 1, values.size - 1) > max_outcomes:
            sampled.append(x)
            continue
        classes = inverse[None, :] == np.arange(values.size)[:, None]
        log_probs = logsumexp(np.where(classes, log_reference[x][None, :], -np.inf), axis=1)
        mean[x], variance[x] = _exact_normalizer_moments(values, log_probs, beta, group_size)
    if sampled:
        if rng is None:
            raise ValueError(
                f"rng is None, but group_size {group_size} gives more than max_outcomes = {max_outcomes} "
                "outcomes to enumerate; pass a Generator for Monte Carlo"
            )
        prompts = np.broadcast_to(np.array(sampled)[:, None, None], (len(sampled), n_samples, group_size))
        responses = sample_responses(log_reference, prompts, rng)
        draws = normalizer_baseline(instance.rewards[prompts, responses], beta)
        mean[sampled] = draws.mean(axis=1)
        variance[sampled] = draws.var(axis=1, ddof=1)
        error[sampled] = np.sqrt(variance[sampled] / n_samples)
    return BaselineMoments(mean, variance, error, not sampled)


def mean_baseline_bias(instance: BanditInstance, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """``V_t(x) - b_t(x)`` per prompt: the mean baseline's bias against the normalizer (``<= 0``).

    Our derivation (cf. paper appendix I.2): ``b_t - V_t = beta log E_{pi_t} exp((r - V_t) / beta)``, the cumulant
    generating function of the centered reward at ``1 / beta``; it does not depend on how
    many extra responses are averaged. See :func:`mean_baseline_bias_approximation`.
    """
    moments = mean_baseline_moments(instance, log_reference)
    return moments.mean - normalizer(instance, log_reference, beta)


def mean_baseline_bias_approximation(instance: BanditInstance, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """``-Var_{pi_t}(r) / (2 beta)``, the leading term of :func:`mean_baseline_bias` for large ``beta``.

    The cumulant expansion ``beta log E exp(c / beta) = Var(c) / (2 beta) + kappa_3 / (6 beta^2) + ...``
    of the centered reward ``c = r - V_t``; the error is ``O(R^3 / beta^2)``.
    """
    beta = check_squared_loss_beta(beta)
    return -mean_baseline_moments(instance, log_reference).variance / (2.0 * beta)


def normalizer_baseline_bias(
    instance: BanditInstance,
    log_reference: np.ndarray,
    beta: float,
    group_size: int,
    *,
    rng: np.random.Generator | None = None,
    n_samples: int = DEFAULT_MONTE_CARLO_SAMPLES,
    max_outcomes: int = DEFAULT_MAX_OUTCOMES,
) -> tuple[np.ndarray, np.ndarray]:
    """``E bhat(x) - b_t(x)`` for KimiPO-Norm's ``G``-sample baseline, with its standard error.

    Paper appendix I.2 (Algorithm 4): ``<= 0`` by Jensen, shrinking toward 0 as ``G`` grows at
    fixed ``beta`` (to first order ``-beta Var(Z) / (2 G E[Z]^2)`` with ``Z = exp(r / beta)``).
    Arguments as for :func:`normalizer_baseline_moments`; the standard error is zero for
    prompts computed exactly.
    """
    moments = normalizer_baseline_moments(
        instance, log_reference, beta, group_size, rng=rng, n_samples=n_samples, max_outcomes=max_outcomes
    )
    return moments.mean - normalizer(instance, log_reference, beta), moments.standard_error


def normalizer_baseline_bias_approximation(
    instance: BanditInstance, log_reference: np.ndarray, beta: float, group_size: int
) -> np.ndarray:
    """The delta-method bias of KimiPO-Norm's baseline for large ``G``.

    ``-beta Var_{pi_t}(Z) / (2 G E_{pi_t}[Z]^2)`` with ``Z = exp(r / beta)``, per prompt.
    """
    beta = check_squared_loss_beta(beta)
    log_reference = _check_reference(instance, log_reference)
    group_size = check_count("group_size", group_size)
    shifted = instance.rewards - instance.rewards.max(axis=1, keepdims=True)
    z = np.exp(shifted / beta)
    probs = np.exp(log_reference)
    first = np.sum(probs * z, axis=1)
    second = np.sum(probs * z**2, axis=1)
    return -beta * (second - first**2) / (2.0 * group_size * first**2)


# ---------------------------------------------------------------------------------------
# Population losses, gradients and Hessians (softmax linear, enumerating responses)


@dataclass(frozen=True, eq=False)
class _PopulationTerms:
    reference_probs: np.ndarray
    log_ratio: np.ndarray
    centered: np.ndarray
    covariance: np.ndarray


def _population_terms(instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray) -> _PopulationTerms:
    log_probs = log_policy(instance, theta)
    probs = np.exp(log_probs)
    centered = centered_features(instance, log_probs)
    covariance = np.einsum("xy,xyd,xye->xde", probs, centered, centered)
    return _PopulationTerms(np.exp(log_reference), log_probs - log_reference, centered, covariance)


def kimi_population_loss(
    instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float, baseline: np.ndarray
) -> float:
    """``E_x E_{y~pi_t} (r - b(x) - beta log(pi_theta / pi_t))^2`` for a per-prompt baseline ``b`` (paper section 4, cf. Eq. (33)).

    The population loss of Algorithms 3 and 4 with the baseline replaced by its expectation
    (for a sampled baseline, add ``E_x Var bhat(x)`` to get the expected empirical loss).
    ``baseline = normalizer(...)`` makes it zero exactly at the target ``pi*_{t+1}``;
    ``baseline = V_t`` (:func:`mean_baseline_moments`) is KimiPO's.

    Parameters
    ----------
    instance
        The bandit.
    theta
        Parameters of ``pi_theta``.
    log_reference
        ``log pi_t``, the sampling distribution and the reference of the log-ratio.
    beta
        Regularization strength, ``> 0``.
    baseline
        ``b(x)``, shape ``(n_prompts,)``.
    """
    beta = check_squared_loss_beta(beta)
    log_reference = _check_reference(instance, log_reference)
    baseline = _check_prompt_baseline(instance, baseline)
    with np.errstate(over="ignore", invalid="ignore"):
        residual = instance.rewards - baseline[:, None] - beta * (log_policy(instance, theta) - log_reference)
        return finite_result(float(instance.prompt_probs @ np.sum(np.exp(log_reference) * residual**2, axis=1)), beta)


def kimi_population_gradient(
    instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float, baseline: np.ndarray
) -> np.ndarray:
    """``grad L = -2 beta E_x E_{pi_t}[e (phi - phibar_theta)]`` of :func:`kimi_population_loss`."""
    beta = check_squared_loss_beta(beta)
    log_reference = _check_reference(instance, log_reference)
    baseline = _check_prompt_baseline(instance, baseline)
    terms = _population_terms(instance, theta, log_reference)
    with np.errstate(over="ignore", invalid="ignore"):
        residual = instance.rewards - baseline[:, None] - beta * terms.log_ratio
        weights = instance.prompt_probs[:, None] * terms.reference_probs * residual
        return finite_result(-2.0 * beta * np.einsum("xy,xyd->d", weights, terms.centered), beta)


def kimi_population_hessian(
    instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float, baseline: np.ndarray
) -> np.ndarray:
    """Hessian of :func:`kimi_population_loss` for softmax-linear policies (paper appendix I).

    ``2 beta^2 E_x E_{pi_t}[s s^T] + 2 beta E_x (E_{pi_t} e) Cov_theta(phi | x)`` with
    ``s = phi - phibar_theta`` and ``E_{pi_t} e = V_t(x) - b(x) + beta KL(pi_t || pi_theta)``.
    The first term is PSD; the second is PSD whenever ``b(x) <= V_t(x)``, as for KimiPO's
    mean baseline, hence global convexity; it can be indefinite for larger baselines.
    """
    beta = check_squared_loss_beta(beta)
    log_reference = _check_reference(instance, log_reference)
    baseline = _check_prompt_baseline(instance, baseline)
    terms = _population_terms(instance, theta, log_reference)
    residual = instance.rewards - baseline[:, None] - beta * terms.log_ratio
    weights = instance.prompt_probs[:, None] * terms.reference_probs
    outer = np.einsum("xy,xyd,xye->de", weights, terms.centered, terms.centered)
    mean_residual = np.sum(weights * residual, axis=1)
    return 2.0 * beta**2 * outer + 2.0 * beta * np.einsum("x,xde->de", mean_residual, terms.covariance)


def rebel_population_loss(instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float) -> float:
    """Rebel-OnPolicy's population loss (paper section 4.3, Algorithm 5).

    ``E_x E_{y, y' ~ pi_t} (beta [u(y) - u(y')] - (r(y) - r(y')))^2 = 2 E_x Var_{pi_t}(beta u - r)``
    with ``u = log(pi_theta / pi_t)``: the normalizer cancels, and the loss is zero exactly
    when ``beta u - r`` is constant in ``y`` on the support of ``pi_t``, i.e. at the target.
    """
    beta = check_squared_loss_beta(beta)
    log_reference = _check_reference(instance, log_reference)
    probs = np.exp(log_reference)
    with np.errstate(over="ignore", invalid="ignore"):
        shifted = beta * (log_policy(instance, theta) - log_reference) - instance.rewards
        centered = shifted - np.sum(probs * shifted, axis=1, keepdims=True)
        return finite_result(float(2.0 * instance.prompt_probs @ np.sum(probs * centered**2, axis=1)), beta)


def rebel_population_gradient(
    instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float
) -> np.ndarray:
    """``4 beta E_x Cov_{pi_t}(beta u - r, phi)``, the gradient of :func:`rebel_population_loss`.

    ``phibar_theta`` cancels in the difference ``u(y) - u(y')``, so only the reference's
    feature covariance enters.
    """
    beta = check_squared_loss_beta(beta)
    log_reference = _check_reference(instance, log_reference)
    probs = np.exp(log_reference)
    with np.errstate(over="ignore", invalid="ignore"):
        shifted = beta * (log_policy(instance, theta) - log_reference) - instance.rewards
        centered = shifted - np.sum(probs * shifted, axis=1, keepdims=True)
        weights = instance.prompt_probs[:, None] * probs * centered
        return finite_result(4.0 * beta * np.einsum("xy,xyd->d", weights, instance.features), beta)


def reference_fisher(instance: BanditInstance, log_reference: np.ndarray) -> np.ndarray:
    """``E_x Cov_{y~pi_t}(phi(x, y))``, the Fisher information of the softmax-linear class at ``pi_t``."""
    log_reference = _check_reference(instance, log_reference)
    probs = np.exp(log_reference)
    centered = centered_features(instance, log_reference)
    return np.einsum("xy,xyd,xye->de", instance.prompt_probs[:, None] * probs, centered, centered)


def rebel_population_hessian(instance: BanditInstance, log_reference: np.ndarray, beta: float) -> np.ndarray:
    """``4 beta^2 E_x Cov_{pi_t}(phi)``: the constant, PSD Hessian of Rebel-OnPolicy's loss (paper appendix L).

    The pairwise loss is a quadratic in ``theta`` for softmax-linear policies, because
    ``u(y) - u(y') = <theta, phi(y) - phi(y')> - log(pi_t(y) / pi_t(y'))`` is affine in
    ``theta``; its Hessian is the reference's Fisher information (:func:`reference_fisher`)
    times ``4 beta^2``, the same at every ``theta``.
    """
    beta = check_squared_loss_beta(beta)
    return 4.0 * beta**2 * reference_fisher(instance, log_reference)


def rebel_population_minimizer(instance: BanditInstance, reference_theta: np.ndarray, beta: float) -> np.ndarray:
    """The minimum-norm exact minimizer of Rebel-OnPolicy's population loss, one Newton step from ``theta_t``.

    Because the loss is quadratic, ``theta_t - H^+ grad L(theta_t)`` (pseudo-inverse of
    :func:`rebel_population_hessian`) minimizes it. At ``theta_t`` the gradient is
    ``-4 beta grad J(pi_t)``, so the step is ``F_t^+ grad J / beta``: the natural policy
    gradient step of size ``1 / beta`` (paper appendix M), for any reward.
    """
    instance = check_bandit("instance", instance)
    beta = check_squared_loss_beta(beta)
    reference_theta = check_theta("reference_theta", reference_theta, (instance.dim,))
    log_reference = log_policy(instance, reference_theta)
    hessian = rebel_population_hessian(instance, log_reference, beta)
    gradient = rebel_population_gradient(instance, reference_theta, log_reference, beta)
    return reference_theta - np.linalg.pinv(hessian, hermitian=True) @ gradient


def kimi_population_minimizer(
    instance: BanditInstance,
    reference_theta: np.ndarray,
    beta: float,
    baseline: np.ndarray,
    *,
    tolerance: float = 1e-12,
) -> np.ndarray:
    """A minimizer of :func:`kimi_population_loss` near ``theta_t``: an inner loop solved exactly with infinite data.

    Trust-region Newton (:func:`scipy.optimize.minimize`, ``method="trust-exact"``) from
    ``theta_t`` with the exact gradient and Hessian; for a nonconvex loss (a baseline above
    ``V_t``) it returns the local minimizer that Newton's method reaches from ``theta_t``.
    ``E_x KL(pi_{theta} || pi*_{t+1})`` at the result isolates the error a baseline's bias
    causes in one APMD step (paper appendix I.2): zero for the exact normalizer under a linear
    reward, and shrinking as ``beta`` grows (mean baseline) or as ``G`` grows (normalizer
    baseline's expectation, :func:`normalizer_baseline_moments`).

    Parameters
    ----------
    instance
        The bandit.
    reference_theta
        ``theta_t``; the reference ``pi_t`` and the starting point.
    beta
        Regularization strength, ``> 0``.
    baseline
        The expected baseline ``b(x)``, shape ``(n_prompts,)``.
    tolerance
        Gradient-norm tolerance of the solver, ``> 0``.
    """
    instance = check_bandit("instance", instance)
    beta = check_squared_loss_beta(beta)
    tolerance = check_positive("tolerance", tolerance)
    reference_theta = check_theta("reference_theta", reference_theta, (instance.dim,))
    log_reference = log_policy(instance, reference_theta)
    baseline = _check_prompt_baseline(instance, baseline)
    result = minimize(
        lambda theta: kimi_population_loss(instance, theta, log_reference, beta, baseline),
        reference_theta,
        jac=lambda theta: kimi_population_gradient(instance, theta, log_reference, beta, baseline),
        hess=lambda theta: kimi_population_hessian(instance, theta, log_reference, beta, baseline),
        method="trust-exact",
        options={"gtol": tolerance},
    )
    return np.asarray(result.x, dtype=float)


@dataclass(frozen=True, eq=False)
class MinimizerCheck:
    """The population squared losses at the exact target ``theta_t + theta_star / beta`` (paper section 4).

    Attributes
    ----------
    target_theta
        ``theta_t + theta_star / beta``, the parameters of ``pi*_{t+1}`` under a linear reward.
    kimi_loss_normalizer, kimi_gradient_norm_normalizer
        Kimi-style loss and gradient norm with the exact normalizer ``b_t``: both zero.
    kimi_loss_mean
        The loss with KimiPO's expected baseline ``V_t``: ``E_x (b_t(x) - V_t(x))^2 > 0``.
    kimi_gradient_norm_mean
        Its gradient norm at the target: nonzero, so the mean baseline moves the minimizer.
    rebel_loss, rebel_gradient_norm
        Rebel-OnPolicy's loss and gradient norm: both zero.
    """

    target_theta: np.ndarray
    kimi_loss_normalizer: float
    kimi_gradient_norm_normalizer: float
    kimi_loss_mean: float
    kimi_gradient_norm_mean: float
    rebel_loss: float
    rebel_gradient_norm: float


def minimizer_check(instance: BanditInstance, reference_theta: np.ndarray, beta: float) -> MinimizerCheck:
    """Evaluate the population losses of Algorithms 3 to 5 at the exact mirror-descent target.

    Under a linear reward ``r = <theta_star, phi> + c(x)`` the target ``pi*_{t+1}`` is
    ``pi_{theta_t + theta_star / beta}`` (paper appendix B.4.1). With the true normalizer the
    Kimi-style residual ``r - b_t - beta log(pi*/pi_t)`` vanishes for every response, so loss
    and gradient are zero there; the same holds for the pairwise loss. Raises
    ``ValueError`` if the instance's reward is not linear in its features.
    """
    instance = check_bandit("instance", instance)
    beta = check_squared_loss_beta(beta)
    reference_theta = check_theta("reference_theta", reference_theta, (instance.dim,))
    log_reference = log_policy(instance, reference_theta)
    target = exact_target_theta(instance, reference_theta, beta)
    exact_baseline = normalizer(instance, log_reference, beta)
    value = mean_baseline_moments(instance, log_reference).mean
    return MinimizerCheck(
        target_theta=target,
        kimi_loss_normalizer=kimi_population_loss(instance, target, log_reference, beta, exact_baseline),
        kimi_gradient_norm_normalizer=float(
            np.linalg.norm(kimi_population_gradient(instance, target, log_reference, beta, exact_baseline))
        ),
        kimi_loss_mean=kimi_population_loss(instance, target, log_reference, beta, value),
        kimi_gradient_norm_mean=float(
            np.linalg.norm(kimi_population_gradient(instance, target, log_reference, beta, value))
        ),
        rebel_loss=rebel_population_loss(instance, target, log_reference, beta),
        rebel_gradient_norm=float(np.linalg.norm(rebel_population_gradient(instance, target, log_reference, beta))),
    )


# ---------------------------------------------------------------------------------------
# The mean-squared-error criterion (paper section 4.1, appendix E)


def regression_mse(
    instance: BanditInstance,
    log_reference: np.ndarray,
    log_probs: np.ndarray,
    beta: float,
    *,
    centered: bool = False,
) -> np.ndarray:
    """Per prompt, the squared error of a step's log-ratio against the exact mirror-descent step (paper section 4.1).

    With ``delta(x, y) = beta log(pi(y|x) / pi*_{t+1}(y|x))`` for the inner loop's output ``pi``
    and the target ``pi*_{t+1} ~ pi_t exp(r / beta)``, returns ``E_{y~pi_t} delta(x, y)^2``:
    the Kimi-style loss with the exact normalizer (:func:`kimi_population_loss` with
    ``baseline = normalizer(...)``), per prompt. The paper's appendix E states its criterion in
    a mean-squared error whose formula our copy lost; this is our reconstruction of it.
    ``centered=True`` returns ``Var_{y~pi_t} delta(x, .)`` instead, the shift-free error that
    Rebel-OnPolicy's population loss equals twice (appendix L).

    Parameters
    ----------
    instance
        The bandit.
    log_reference
        ``log pi_t``, the reference and sampling policy of the step.
    log_probs
        ``log pi``, the inner loop's output.
    beta
        Regularization strength of the step, ``> 0``.
    centered
        Subtract each prompt's mean error under ``pi_t`` first.
    """
    beta = check_squared_loss_beta(beta)
    log_reference = _check_reference(instance, log_reference)
    log_probs = check_policy("log_probs", instance, log_probs)
    centered = check_flag("centered", centered)
    error = beta * (log_probs - regularized_optimum(instance, log_reference, beta))
    probs = np.exp(log_reference)
    if centered:
        error = error - np.sum(probs * error, axis=1, keepdims=True)
    return np.sum(probs * error**2, axis=1)


def mse_coverage_bound(
    instance: BanditInstance, log_reference: np.ndarray, log_probs: np.ndarray, beta: float
) -> np.ndarray:
    """Per prompt, the most the natural log of the coverage can fall in one step with this MSE (our lemma).

    Returns ``sqrt(MSE_t(x) / c_t(x)) / beta`` with ``MSE_t`` from :func:`regression_mse` and
    ``c_t = pi_t(Y*(x)|x)``, so that ``log c_{t+1}(x) >= log c_t(x) - bound``. Derivation (ours,
    in the spirit of the paper's appendix E.1): the exact step never lowers coverage, and
    ``c_{t+1} = c*_{t+1} E_{pi*(.|Y*)} exp(delta / beta) >= c*_{t+1} exp(E_{pi*(.|Y*)} delta / beta)``
    by Jensen; on ``Y*`` the ratio ``pi*_{t+1} / (c*_{t+1} pi_t)`` equals ``1 / c_t``, so
    ``E_{pi*(.|Y*)} delta^2 <= MSE_t(x) / c_t(x)``, and Cauchy-Schwarz finishes. The coverage in
    the denominator is why a tolerance on the MSE must scale with the base model's coverage.
    """
    mse = regression_mse(instance, log_reference, log_probs, beta)
    with np.errstate(over="ignore"):  # a coverage below ~1e-300 leaves no guarantee: inf
        return np.sqrt(mse) * np.exp(-0.5 * log_coverage(instance, log_reference)) / beta
