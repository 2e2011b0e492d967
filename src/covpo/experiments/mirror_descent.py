"""Chapter 3's studies of mirror descent's guarantees (paper section 3.1, appendices B.3 and F.1).

:func:`mirror_descent_rate` runs exact mirror descent (``covpo.run("mirror_descent_exact", ...)``)
on several instances at several ``beta`` and sets :func:`~covpo.algorithms.mirror_descent.mirror_descent_bound`
beside each run; :class:`MirrorDescentRate` holds the result for the chapter's figure.
:func:`comparator_guarantee` runs APMD with gradient inner loops and measures every term of its
guarantee against a comparator policy other than the optimum (:class:`ComparatorGuarantee`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scipy.special import logsumexp

from covpo.algorithms import run
from covpo.algorithms.mirror_descent import mirror_descent_bound
from covpo.collapse_instance import CollapseInstance
from covpo.experiments.collapse import exact_apmd_run
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, log_coverage
from covpo.validation import check_count, check_finite_array, check_instances, check_positive, check_positive_grid


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
    (:func:`~covpo.algorithms.mirror_descent.mirror_descent_bound`). Because ``pi_T`` depends on ``T / beta`` only
    (:func:`~covpo.algorithms.mirror_descent.mirror_descent_policy`), the resets needed for a given accuracy grow in
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
    instances = check_instances("instances", instances, BanditInstance)
    betas = check_positive_grid("betas", betas)
    n_iterations = check_count("n_iterations", n_iterations)
    eps = check_positive("eps", eps)
    iterations = np.arange(n_iterations + 1)
    shape = (len(instances), betas.size, n_iterations + 1)
    suboptimality, bound = np.empty(shape), np.full(shape, np.inf)
    for i, instance in enumerate(instances):
        for j, beta in enumerate(betas):
            exact = run("mirror_descent_exact", instance, beta=beta, n_iterations=n_iterations)
            suboptimality[i, j] = exact.suboptimality
            bound[i, j, 1:] = mirror_descent_bound(instance, beta, iterations[1:])
    reached = suboptimality <= eps
    resets = np.where(reached.any(axis=2), np.argmax(reached, axis=2), -1)
    divergence = np.array(
        [-float(instance.prompt_probs @ log_coverage(instance, base_log_policy(instance))) for instance in instances]
    )
    return MirrorDescentRate(betas, iterations, suboptimality, bound, eps, resets, divergence)


@dataclass(frozen=True, eq=False)
class ComparatorGuarantee:
    """APMD measured against comparator policies other than the optimum (paper appendix F.1, our reconstruction).

    For any comparator ``pi~``, summing the per-step inequality of the telescoping argument
    with the inner-loop errors kept gives, for every ``T >= 1``,

    ``J(pi~) - (1/T) sum_{t=1..T} J(pi_t) <= beta E_x KL(pi~ || pi_0) / T
    + (beta/T) sum_{t<T} [E_x E_{pi~} log(pi*_{t+1} / pi_{t+1}) + E_x KL(pi_{t+1} || pi*_{t+1})]``,

    where ``pi*_{t+1}`` is the exact mirror-descent target of reset ``t``. The first term is
    the exact-mirror-descent rate with the comparator in place of the optimum; the other two
    are the inner loops' errors, the first weighted by the comparator (so a comparator the
    base model covers well is cheap to compete with).

    Attributes
    ----------
    names
        The comparators' names, ``(n_comparators,)``.
    comparator_reward
        ``J(pi~)``, ``(n_comparators,)``.
    comparator_kl
        ``E_x KL(pi~ || pi_0)``, ``(n_comparators,)``.
    comparator_coverage
        ``E_x E_{y ~ pi~} [pi~(y|x) / pi_0(y|x)]``, the base model's coverage coefficient of the
        comparator (``C_cov`` for the base model restricted to the optimal responses; our
        definition, not a formula quoted from the paper).
    iterations
        ``T = 1, ..., n_iterations``.
    reward
        ``J(pi_t)`` for ``t = 0, ..., n_iterations``.
    average_gap
        ``J(pi~) - (1/T) sum_{t=1..T} J(pi_t)``, ``(n_comparators, n_iterations)``.
    main_term
        ``beta E_x KL(pi~ || pi_0) / T``, same shape.
    comparator_error
        ``(beta/T) sum_{t<T} E_x E_{pi~} log(pi*_{t+1} / pi_{t+1})``, same shape.
    inner_error
        ``(beta/T) sum_{t<T} E_x KL(pi_{t+1} || pi*_{t+1})``, ``(n_iterations,)``.
    beta, eta, inner_steps
        APMD's settings.
    """

    names: tuple[str, ...]
    comparator_reward: np.ndarray
    comparator_kl: np.ndarray
    comparator_coverage: np.ndarray
    iterations: np.ndarray
    reward: np.ndarray
    average_gap: np.ndarray
    main_term: np.ndarray
    comparator_error: np.ndarray
    inner_error: np.ndarray
    beta: float
    eta: float
    inner_steps: int

    @property
    def bound(self) -> np.ndarray:
        """The right-hand side, the main term plus both error terms, ``(n_comparators, n_iterations)``."""
        return self.main_term + self.comparator_error + self.inner_error[None, :]


def comparator_guarantee(
    instance: CollapseInstance,
    comparators: Mapping[str, Sequence[float] | np.ndarray],
    beta: float,
    eta: float,
    inner_steps: int,
    n_iterations: int,
) -> ComparatorGuarantee:
    """Run APMD with gradient inner loops and measure every term of the comparator bound (paper appendix F.1).

    The run is exact-gradient APMD on the collapse family
    (:func:`~covpo.experiments.collapse.resets.exact_apmd_run`), recorded at every reset. A comparator
    is given by its masses on (optimal, distractor, zero block), spread over the zero block as
    the base model spreads it; every response of a class has the same reward, so every term
    of the bound is exact on the three class masses. See :class:`ComparatorGuarantee` for the
    inequality, our derivation in the notation of the book: the paper's appendix F.1 states
    the guarantee for a general comparator, with the base model's coverage of the comparator
    in the inner-loop tolerance; the inequality here is ours, not quoted from it.

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`.
    comparators
        Name to the comparator's three class masses, at least one; each non-negative and
        summing to one.
    beta, eta
        APMD's strength and inner learning rate, each ``> 0``.
    inner_steps
        Gradient steps per reset, ``>= 1``.
    n_iterations
        Outer iterations ``T``, ``>= 1``.
    """
    if not isinstance(instance, CollapseInstance):
        raise ValueError(f"instance must be a CollapseInstance, got {type(instance).__name__}")
    beta, eta = check_positive("beta", beta), check_positive("eta", eta)
    inner_steps, n_iterations = check_count("inner_steps", inner_steps), check_count("n_iterations", n_iterations)
    if not isinstance(comparators, Mapping) or len(comparators) == 0:
        raise ValueError(f"comparators must be a non-empty mapping of name to class masses, got {comparators!r}")
    tables = []
    for name, masses in comparators.items():
        masses = check_finite_array(f"comparators[{name!r}]", masses, ndim=1)
        if masses.shape != (3,) or np.any(masses < 0) or not np.isclose(masses.sum(), 1.0):
            raise ValueError(f"comparators[{name!r}] must hold three non-negative class masses summing to one, got {masses!r}")
        tables.append(masses)
    resets = np.arange(n_iterations + 1) * inner_steps
    apmd = exact_apmd_run(
        instance,
        beta=beta,
        inner_steps=inner_steps,
        eta=eta,
        gradient_steps=int(resets[-1]),
        record_steps=resets,
    )
    # the run also keeps its lowest-coverage step, which falls between two resets when a step overshoots
    log_policies = apmd.class_log_probs[np.isin(apmd.trajectory.gradient_steps, resets)]
    rewards_by_class = instance.rewards
    shifted = log_policies[:-1] + rewards_by_class / beta
    log_targets = shifted - logsumexp(shifted, axis=1, keepdims=True)
    log_base = instance.base_class_log_probs
    rewards = np.exp(log_policies) @ rewards_by_class
    iterations = np.arange(1, n_iterations + 1)
    following = log_policies[1:]
    inner = np.sum(np.exp(following) * (following - log_targets), axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        inner_error = beta * np.cumsum(inner) / iterations
    average_reward = np.cumsum(rewards[1:]) / iterations
    values, kls, coverages, gaps, mains, errors = [], [], [], [], [], []
    for masses in tables:
        support = masses > 0
        log_masses = np.log(np.where(support, masses, 1.0))
        # Per-member ratios equal per-class ratios: the comparator spreads the block as pi_0 does.
        log_ratio = np.where(support, log_masses - log_base, 0.0)
        kl = float(masses @ log_ratio)
        weighted = np.sum(np.where(support, masses * (log_targets - following), 0.0), axis=1)
        values.append(float(masses @ rewards_by_class))
        kls.append(kl)
        coverages.append(float(masses @ np.where(support, np.exp(log_ratio), 0.0)))
        gaps.append(values[-1] - average_reward)
        with np.errstate(over="ignore", invalid="ignore"):
            mains.append(beta * kl / iterations)
            errors.append(beta * np.cumsum(weighted) / iterations)
    if not (np.all(np.isfinite(inner_error)) and np.all(np.isfinite(mains)) and np.all(np.isfinite(errors))):
        raise ValueError(f"beta = {beta!r} is too large: the terms of the bound leave the floating-point range")
    return ComparatorGuarantee(
        names=tuple(comparators),
        comparator_reward=np.array(values),
        comparator_kl=np.array(kls),
        comparator_coverage=np.array(coverages),
        iterations=iterations,
        reward=rewards,
        average_gap=np.array(gaps),
        main_term=np.array(mains),
        comparator_error=np.array(errors),
        inner_error=inner_error,
        beta=beta,
        eta=eta,
        inner_steps=inner_steps,
    )
