"""The data of the paper's Figures 1, 2a and 3 on the collapse family, no plotting (paper sections 2.1 and 3, appendix C.1).

One function per figure, named after it; each returns a frozen record the chapter's
plotting code reads. They share one member of the family, ``gap = 0.03``, where no fixed
reference strength escapes (:func:`~covpo.experiments.collapse.sweeps.beta_escape_map`), and the
protocol of the paper's appendix C.1 as we reconstruct it: fixed-reference
REINFORCE at the strongest beta whose regularized optimum is still eps-optimal with margin,
APMD at a much larger beta with a fixed number of exact gradient steps per reset, one
learning rate for both, and gradient steps on the horizontal axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.validation import (
    check_count,
    check_finite_array,
    check_positive,
    check_positive_grid,
    check_probability,
)

from .engine import (
    DEFAULT_ETA,
    DEFAULT_N_RECORDS,
    CollapseRun,
    _log_spaced_steps,
    exact_collapse_run,
)
from covpo.collapse_instance import (
    CollapseInstance,
    DEFAULT_EPS_FRACTION,
    DEFAULT_MARGIN,
    collapse_instance,
    regularized_optimum_suboptimality,
    strongest_eps_optimal_beta,
)
from .landscape import Landscape, SimplexPath, landscape_grid, simplex_path
from .reset_sweeps import (
    DEFAULT_COVERAGE_FRACTION,
    ETA_GRID,
    INNER_STEPS_GRID,
    APMDLearningRateSweep,
    InnerStepsSweep,
    apmd_learning_rate_sweep,
    inner_steps_sweep,
)
from .resets import DEFAULT_APMD_BETA, DEFAULT_INNER_STEPS, exact_apmd_run

FIGURE_GAP = 0.03
"""The member of the family the figures use, where every fixed reference strength fails."""

FIGURE_MAX_STEPS = 1_000_000
"""Gradient-step budget of the figures' runs, about eight times what fixed-reference REINFORCE needs."""

LANDSCAPE_MARGIN = 2.0


def _figure_instance(gap: float, eps_fraction: float) -> tuple[CollapseInstance, float]:
    instance = collapse_instance(gap)
    return instance, check_probability("eps_fraction", eps_fraction) * instance.gap


def _weak_beta(instance: CollapseInstance, eps: float, weak_beta: float | None, margin: float) -> float:
    """The given weak strength, or by default the strongest eps-optimal one (paper appendix C.1)."""
    check_probability("margin", margin)
    if weak_beta is None:
        return strongest_eps_optimal_beta(instance, eps, margin)
    return check_positive("weak_beta", weak_beta)


def _apmd_to_eps(
    instance: CollapseInstance, beta: float, inner_steps: int, eta: float, eps: float, max_steps: int
) -> CollapseRun:
    """An APMD run that stops at eps, recorded at every step (cheap: APMD is fast)."""
    probe = exact_apmd_run(instance, beta, inner_steps, eta=eta, max_steps=max_steps, eps=eps, n_records=2)
    last = probe.trajectory.total_gradient_steps
    return exact_apmd_run(
        instance, beta, inner_steps, eta=eta, max_steps=max_steps, eps=eps, record_steps=np.arange(last + 1)
    )


@dataclass(frozen=True)
class Figure2aData:
    """Paper Figure 2a: reward and coverage against gradient steps, REINFORCE vs APMD (paper appendix C.1).

    Attributes
    ----------
    instance, eps
        The member of the family and the accuracy target.
    eta
        The one learning rate of both methods, picked by ``learning_rate_sweep``.
    reinforce_beta
        REINFORCE's fixed-reference strength: the strongest whose regularized optimum has
        suboptimality ``margin * eps``.
    apmd_beta, inner_steps
        APMD's strength and its gradient steps per reset, picked by ``inner_steps_sweep``.
    learning_rate_sweep
        The short APMD sweep that picked ``eta`` (at the default inner step count).
    inner_steps_sweep
        The inner-step sweep at ``eta`` that picked ``inner_steps``: the fastest to eps among
        the runs that kept coverage above ``coverage_fraction`` of the base coverage.
    reinforce, apmd
        Both runs over the whole budget, at log-spaced records.
    reinforce_steps_to_eps, apmd_steps_to_eps
        Exact gradient steps to eps, ``None`` if not reached within the budget.
    reinforce_min_log10_coverage, apmd_min_log10_coverage
        Lowest base-10 log coverage over every step until eps (the whole budget if not reached).
    """

    instance: CollapseInstance
    eps: float
    eta: float
    reinforce_beta: float
    apmd_beta: float
    inner_steps: int
    learning_rate_sweep: APMDLearningRateSweep
    inner_steps_sweep: InnerStepsSweep
    reinforce: CollapseRun
    apmd: CollapseRun
    reinforce_steps_to_eps: int | None
    apmd_steps_to_eps: int | None
    reinforce_min_log10_coverage: float
    apmd_min_log10_coverage: float


def figure_2a_data(
    gap: float = FIGURE_GAP,
    apmd_beta: float = DEFAULT_APMD_BETA,
    etas: Sequence[float] | np.ndarray = ETA_GRID,
    learning_rate_steps: int = 100,
    inner_steps_grid: Sequence[int] | np.ndarray = INNER_STEPS_GRID,
    eps_fraction: float = DEFAULT_EPS_FRACTION,
    margin: float = DEFAULT_MARGIN,
    coverage_fraction: float = DEFAULT_COVERAGE_FRACTION,
    max_steps: int = FIGURE_MAX_STEPS,
    n_records: int = DEFAULT_N_RECORDS,
) -> Figure2aData:
    """REINFORCE vs APMD under the same gradient-step budget, the protocol of paper appendix C.1.

    1. REINFORCE's strength is the strongest fixed-reference beta whose optimum has
       suboptimality ``margin * eps`` (anything stronger cannot reach eps at all).
    2. The learning rate is the one that improves APMD's reward fastest, without a
       decrease, over ``learning_rate_steps`` steps (:func:`~covpo.experiments.collapse.reset_sweeps.apmd_learning_rate_sweep`).
    3. At that rate the inner step count is swept (:func:`~covpo.experiments.collapse.reset_sweeps.inner_steps_sweep`);
       APMD uses the fastest that keeps coverage.
    4. Both methods start at the base model and run ``max_steps`` exact gradient steps at
       that one rate; the steps to eps and the lowest coverage come from runs that stop at eps.

    Parameters
    ----------
    gap
        The member of the family, in ``(0, 1)``.
    apmd_beta
        APMD's regularization strength, ``> 0``; much larger than REINFORCE's.
    etas
        Learning rates of the short sweep.
    learning_rate_steps
        Length of the short sweep, in gradient steps.
    inner_steps_grid
        Inner step counts to sweep.
    eps_fraction
        ``eps / gap``, in ``(0, 1)``.
    margin
        Margin of REINFORCE's beta rule, in ``(0, 1)``.
    coverage_fraction
        The fraction of the base coverage an inner step count must keep to be picked.
    max_steps
        The common budget of gradient steps.
    n_records
        Log-spaced records per run.
    """
    instance, eps = _figure_instance(gap, eps_fraction)
    apmd_beta = check_positive("apmd_beta", apmd_beta)
    etas = check_positive_grid("etas", etas)
    learning_rate_steps = check_count("learning_rate_steps", learning_rate_steps)
    inner_steps_grid = check_positive_grid("inner_steps_grid", inner_steps_grid, integers=True)
    margin = check_probability("margin", margin)
    coverage_fraction = check_probability("coverage_fraction", coverage_fraction)
    max_steps = check_count("max_steps", max_steps)
    n_records = check_count("n_records", n_records)
    reinforce_beta = strongest_eps_optimal_beta(instance, eps, margin)
    rates = apmd_learning_rate_sweep(instance, etas, learning_rate_steps, apmd_beta, DEFAULT_INNER_STEPS)
    if rates.best_eta is None:
        raise ValueError(f"etas holds no learning rate whose APMD reward rises monotonically: {rates.etas.tolist()}")
    eta = rates.best_eta
    counts = inner_steps_sweep(
        instance, inner_steps_grid, [eta], apmd_beta, eps, max_steps, coverage_fraction, progress=False
    )
    usable = counts.reached_eps[0] & counts.preserved[0]
    if not usable.any():
        raise ValueError(
            f"inner_steps_grid holds no inner step count that reaches eps and keeps coverage at eta={eta!r}"
        )
    inner_steps = int(counts.inner_steps[usable][np.argmin(counts.steps_to_eps[0][usable])])
    reinforce_to_eps = exact_collapse_run(instance, eta, max_steps, beta=reinforce_beta, eps=eps, n_records=2)
    apmd_to_eps = exact_apmd_run(instance, apmd_beta, inner_steps, eta=eta, max_steps=max_steps, eps=eps, n_records=2)
    return Figure2aData(
        instance=instance,
        eps=eps,
        eta=eta,
        reinforce_beta=reinforce_beta,
        apmd_beta=apmd_beta,
        inner_steps=inner_steps,
        learning_rate_sweep=rates,
        inner_steps_sweep=counts,
        reinforce=exact_collapse_run(instance, eta, max_steps, beta=reinforce_beta, n_records=n_records),
        apmd=exact_apmd_run(instance, apmd_beta, inner_steps, eta=eta, max_steps=max_steps, n_records=n_records),
        reinforce_steps_to_eps=reinforce_to_eps.steps_to_eps,
        apmd_steps_to_eps=apmd_to_eps.steps_to_eps,
        reinforce_min_log10_coverage=reinforce_to_eps.trajectory.min_log10_coverage,
        apmd_min_log10_coverage=apmd_to_eps.trajectory.min_log10_coverage,
    )


@dataclass(frozen=True)
class Figure1Data:
    """Paper Figure 1: three regimes on one member of the family (paper sections 2.1 and 3).

    Attributes
    ----------
    instance, eps, eta
        The member of the family, the accuracy target and the learning rate of all three runs.
    weak_beta, strong_beta, inner_steps
        The fixed weak strength, the strong strength (fixed, and with resets), and the
        gradient steps per reset.
    weak, strong, resets
        Fixed weak regularization (collapses), fixed strong regularization (stuck near the
        base model) and resets under the strong strength (climbs to the optimum).
    weak_path, strong_path, resets_path
        Their masses on (optimal, distractor, zero block) at every record. Records are
        log-spaced, plus the first eps-optimal step of the weak and the resets runs (so
        ``trajectory.steps_to_eps(eps)`` is exact) and every reset until the resets run gets there.
    strong_optimum_suboptimality
        ``J* - J(pi_beta)`` of the strong fixed-reference optimum: the bias of fixed strong
        regularization.
    strong_bias_bound
        Its bound ``beta KL(pi* || pi_0) = beta log(1 / c_0)`` (a standard bound, our reconstruction; cf. paper Fig. 1b).
    """

    instance: CollapseInstance
    eps: float
    eta: float
    weak_beta: float
    strong_beta: float
    inner_steps: int
    weak: CollapseRun
    strong: CollapseRun
    resets: CollapseRun
    weak_path: SimplexPath
    strong_path: SimplexPath
    resets_path: SimplexPath
    strong_optimum_suboptimality: float
    strong_bias_bound: float


def figure_1_data(
    gap: float = FIGURE_GAP,
    weak_beta: float | None = None,
    strong_beta: float = DEFAULT_APMD_BETA,
    inner_steps: int = DEFAULT_INNER_STEPS,
    eta: float = DEFAULT_ETA,
    eps_fraction: float = DEFAULT_EPS_FRACTION,
    margin: float = DEFAULT_MARGIN,
    max_steps: int = FIGURE_MAX_STEPS,
    n_records: int = DEFAULT_N_RECORDS,
) -> Figure1Data:
    """Weak fixed, strong fixed and reset regularization on one instance (paper Fig. 1, on our instance).

    All three runs start at the base model and take ``max_steps`` exact gradient steps at
    ``eta``. The weak strength defaults to the strongest eps-optimal fixed-reference beta, the
    best a fixed reference can do; at ``FIGURE_GAP`` it still collapses coverage.

    Parameters
    ----------
    gap
        The member of the family, in ``(0, 1)``.
    weak_beta
        The weak fixed strength, ``> 0``; ``None`` picks the strongest eps-optimal one.
    strong_beta
        The strong strength, ``> 0``, of both the fixed and the reset runs.
    inner_steps
        Gradient steps per reset.
    eta
        The learning rate of all three runs.
    eps_fraction, margin
        ``eps / gap`` and the margin of the weak-beta rule, both in ``(0, 1)``.
    max_steps
        The common budget of gradient steps.
    n_records
        Log-spaced records per run.
    """
    instance, eps = _figure_instance(gap, eps_fraction)
    weak_beta = _weak_beta(instance, eps, weak_beta, margin)
    strong_beta = check_positive("strong_beta", strong_beta)
    inner_steps = check_count("inner_steps", inner_steps)
    max_steps = check_count("max_steps", max_steps)
    log_spaced = _log_spaced_steps(max_steps, check_count("n_records", n_records))
    weak_to_eps = exact_collapse_run(instance, eta, max_steps, beta=weak_beta, eps=eps, n_records=2)
    resets_to_eps = exact_apmd_run(
        instance, strong_beta, inner_steps, eta=eta, max_steps=max_steps, eps=eps, n_records=2
    ).trajectory.total_gradient_steps
    at_resets = np.append(np.arange(0, resets_to_eps + 1, inner_steps), resets_to_eps)
    weak = exact_collapse_run(
        instance,
        eta,
        max_steps,
        beta=weak_beta,
        record_steps=np.union1d(log_spaced, weak_to_eps.trajectory.total_gradient_steps),
    )
    strong = exact_collapse_run(instance, eta, max_steps, beta=strong_beta, record_steps=log_spaced)
    resets = exact_apmd_run(
        instance,
        strong_beta,
        inner_steps,
        eta=eta,
        max_steps=max_steps,
        record_steps=np.union1d(log_spaced, at_resets),
    )
    return Figure1Data(
        instance=instance,
        eps=eps,
        eta=eta,
        weak_beta=weak_beta,
        strong_beta=strong_beta,
        inner_steps=inner_steps,
        weak=weak,
        strong=strong,
        resets=resets,
        weak_path=simplex_path(weak),
        strong_path=simplex_path(strong),
        resets_path=simplex_path(resets),
        strong_optimum_suboptimality=regularized_optimum_suboptimality(instance, strong_beta),
        strong_bias_bound=strong_beta * float(np.log(1.0 / instance.base_coverage)),
    )


@dataclass(frozen=True)
class Figure3Data:
    """Paper Figure 3: the landscape under weak, strong and reset regularization (paper appendix C.1).

    Every surface lies over the same ``(u, v)`` grid.

    Attributes
    ----------
    weak
        ``J_beta(.; pi_0)`` at the weak strength, with fixed-reference REINFORCE's path to eps.
    strong
        ``J_beta(.; pi_0)`` at the strong strength, with its fixed-reference path over the budget.
    stack
        ``J_beta(.; pi_t)`` at the strong strength for the resets ``stack_resets``, each with
        the whole APMD path to eps (recorded at every step) and its reference marked.
    stack_resets
        The outer iteration ``t`` of each surface of the stack.
    stack_steps
        The gradient step of each reset, ``t * inner_steps``: the path's segment that
        ascends surface ``t`` runs from there for ``inner_steps`` steps.
    apmd
        The APMD run drawn on the stack.
    weak_beta, strong_beta, inner_steps, eta, eps
        The settings.
    """

    weak: Landscape
    strong: Landscape
    stack: tuple[Landscape, ...]
    stack_resets: np.ndarray
    stack_steps: np.ndarray
    apmd: CollapseRun
    weak_beta: float
    strong_beta: float
    inner_steps: int
    eta: float
    eps: float


def figure_3_data(
    gap: float = FIGURE_GAP,
    weak_beta: float | None = None,
    strong_beta: float = DEFAULT_APMD_BETA,
    inner_steps: int = DEFAULT_INNER_STEPS,
    eta: float = DEFAULT_ETA,
    eps_fraction: float = DEFAULT_EPS_FRACTION,
    margin: float = DEFAULT_MARGIN,
    n_surfaces: int = 6,
    max_steps: int = FIGURE_MAX_STEPS,
    u: Sequence[float] | np.ndarray | None = None,
    v: Sequence[float] | np.ndarray | None = None,
    n_points: int = 101,
) -> Figure3Data:
    """The weakly and strongly regularized surfaces and the stack APMD solves (paper Fig. 3, appendix C.1).

    Each surface comes from :func:`~covpo.experiments.collapse.landscape.landscape_grid`. The stack holds
    ``n_surfaces`` of the subproblems ``J_beta(.; pi_t)``, evenly spread over the resets
    before APMD reaches eps; each is a strongly regularized, well-conditioned problem around
    its own reference, and their maximizers step toward the optimum.

    Parameters
    ----------
    gap
        The member of the family, in ``(0, 1)``.
    weak_beta
        The weak fixed strength, ``> 0``; ``None`` picks the strongest eps-optimal one.
    strong_beta
        The strong strength, ``> 0``, of the fixed surface and of every surface of the stack.
    inner_steps
        APMD's gradient steps per reset.
    eta
        The learning rate of all runs.
    eps_fraction, margin
        ``eps / gap`` and the margin of the weak-beta rule, both in ``(0, 1)``.
    n_surfaces
        Number of surfaces in the stack, ``>= 1``.
    max_steps
        Budget of every run (the weak and the APMD runs stop at eps).
    u, v
        Grid coordinates relative to the base model; by default the grid covers all three
        paths with a margin.
    n_points
        Grid size per axis when ``u`` or ``v`` is omitted.
    """
    instance, eps = _figure_instance(gap, eps_fraction)
    weak_beta = _weak_beta(instance, eps, weak_beta, margin)
    strong_beta = check_positive("strong_beta", strong_beta)
    inner_steps = check_count("inner_steps", inner_steps)
    n_surfaces = check_count("n_surfaces", n_surfaces)
    max_steps = check_count("max_steps", max_steps)
    n_points = check_count("n_points", n_points, minimum=2)
    weak_run = exact_collapse_run(instance, eta, max_steps, beta=weak_beta, eps=eps)
    strong_run = exact_collapse_run(instance, eta, max_steps, beta=strong_beta)
    apmd = _apmd_to_eps(instance, strong_beta, inner_steps, eta, eps, max_steps)
    paths = np.vstack([weak_run.plane, strong_run.plane, apmd.plane, np.zeros((1, 2))])

    def axis(name: str, values: object, column: int) -> np.ndarray:
        if values is not None:
            grid = check_finite_array(name, values, ndim=1)
            if grid.size == 0:
                raise ValueError(f"{name} must hold at least one coordinate, got {values!r}")
            return grid
        low, high = paths[:, column].min() - LANDSCAPE_MARGIN, paths[:, column].max() + LANDSCAPE_MARGIN
        return np.linspace(low, high, n_points)

    grid = {"u": axis("u", u, 0), "v": axis("v", v, 1)}
    last_reset = (apmd.trajectory.total_gradient_steps - 1) // inner_steps
    stack_resets = np.unique(np.round(np.linspace(0, max(last_reset, 0), n_surfaces)).astype(np.int64))
    stack_steps = stack_resets * inner_steps
    return Figure3Data(
        weak=landscape_grid(instance, weak_beta, weak_run, **grid),
        strong=landscape_grid(instance, strong_beta, strong_run, **grid),
        stack=tuple(
            landscape_grid(instance, strong_beta, apmd, reference=apmd.logits[index], **grid)
            for index in np.searchsorted(apmd.trajectory.gradient_steps, stack_steps)
        ),
        stack_resets=stack_resets,
        stack_steps=stack_steps,
        apmd=apmd,
        weak_beta=weak_beta,
        strong_beta=strong_beta,
        inner_steps=inner_steps,
        eta=eta,
        eps=eps,
    )
