"""The data of the paper's Figures 1, 2 and 3 on the collapse family, no plotting (paper sections 2.1 and 3, appendix C.1).

One function per figure, named after it; each returns a frozen record the chapter's
plotting code reads. Figures 2a, 2b,c and 3 come from **one instance and one run**, as the
paper's appendix C.1 builds them: :func:`figure_2a_data` runs the protocol once and
:func:`figure_2bc_data` and :func:`figure_3_data` draw the landscapes of that very record.
The protocol, as we read appendix C.1 (every constant here is ours, not the paper's):

1. REINFORCE's fixed-reference strength is the strongest beta whose regularized optimum is
   still eps-optimal with a margin (:func:`~covpo.collapse_instance.strongest_eps_optimal_beta`);
   APMD's strength is fixed and much larger.
2. The learning rate is picked by comparing candidate rates in **fixed-reference** runs at
   both strengths (:func:`fixed_reference_rate_sweep`): the rate with the fastest reward
   improvement in both.
3. At that rate APMD's inner step count is swept; the run uses a count **larger** than the
   fastest one, to show more optimization within each subproblem.
4. Both methods start at the base model and take the same budget of exact gradient steps at
   that one rate; the horizontal axis counts gradient steps, not resets.

Figure 1 (three regimes) keeps the book's own constants (learning rate 4, eight inner steps),
on the same member of the family.
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
    _run_exact,
    exact_collapse_run,
)
from covpo.collapse_instance import (
    CollapseInstance,
    DEFAULT_EPS_FRACTION,
    DEFAULT_MARGIN,
    _check_instance,
    _state_summary,
    collapse_instance,
    regularized_optimum_suboptimality,
    strongest_eps_optimal_beta,
)
from .landscape import Landscape, SimplexPath, landscape_grid, simplex_path
from .reset_sweeps import (
    DEFAULT_COVERAGE_FRACTION,
    ETA_GRID,
    INNER_STEPS_GRID,
    InnerStepsSweep,
    inner_steps_sweep,
)
from .resets import DEFAULT_APMD_BETA, DEFAULT_INNER_STEPS, exact_apmd_run

FIGURE_GAP = 0.03
"""The member of the family the figures use, where every fixed reference strength fails."""

FIGURE_MAX_STEPS = 1_000_000
"""Gradient-step budget of the figures' runs, well past fixed-reference REINFORCE's first eps-optimal step."""

RATE_SWEEP_STEPS = (200, 20)
"""Length, in gradient steps, of the fixed-reference rate sweeps at the weak and at the strong strength.

The strongly regularized run settles within a few dozen steps, so a short run separates the rates."""

INNER_STEPS_FACTOR = 2
"""APMD's inner step count is this multiple of the fastest count of the sweep (paper appendix C.1)."""

LANDSCAPE_MARGIN = 2.0
MONOTONE_TOLERANCE = 1e-12


def _pair(name: str, values: object, minimum: int = 1) -> tuple[int, int]:
    """Two counts ``>= minimum`` (one per strength, or one per axis)."""
    if isinstance(values, (str, bytes)) or np.ndim(values) != 1 or np.size(values) != 2:
        raise ValueError(f"{name} must hold two counts, got {values!r}")
    first, second = values
    return check_count(name, first, minimum=minimum), check_count(name, second, minimum=minimum)


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
    settings = {"beta": beta, "inner_steps": inner_steps, "eta": eta, "gradient_steps": max_steps, "eps": eps}
    last = exact_apmd_run(instance, **settings, n_records=2).trajectory.total_gradient_steps
    return exact_apmd_run(instance, **settings, record_steps=np.arange(last + 1))


@dataclass(frozen=True)
class FixedReferenceRateSweep:
    """Candidate learning rates compared in fixed-reference runs at two strengths (paper appendix C.1).

    Attributes
    ----------
    etas
        The candidate learning rates, ``(n_etas,)``.
    betas
        The two fixed-reference strengths (REINFORCE's weak one, then APMD's strong one).
    n_steps
        Length of the run at each strength.
    reward
        ``J`` at every step of every run, one ``(n_etas, n_steps + 1)`` array per strength.
    monotone
        Whether the reward never decreased (to ``1e-12``), ``(2, n_etas)``.
    final_reward
        ``J`` after the run, ``(2, n_etas)``.
    best_eta
        The pick: among the rates whose reward rises at every step at both strengths, the one
        with the highest final reward at both; ``None`` if no rate rises monotonically at both.
    fastest_in_both
        Whether ``best_eta`` is the fastest candidate at each strength separately. When the
        two sweeps disagree, the pick maximizes the smaller of its two gains relative to the
        best gain at that strength.
    """

    etas: np.ndarray
    betas: np.ndarray
    n_steps: tuple[int, int]
    reward: tuple[np.ndarray, np.ndarray]
    monotone: np.ndarray
    final_reward: np.ndarray
    best_eta: float | None
    fastest_in_both: bool


def fixed_reference_rate_sweep(
    instance: CollapseInstance,
    betas: Sequence[float] | np.ndarray,
    etas: Sequence[float] | np.ndarray = ETA_GRID,
    n_steps: Sequence[int] = RATE_SWEEP_STEPS,
) -> FixedReferenceRateSweep:
    """Pick the learning rate in fixed-reference runs at both strengths (paper appendix C.1).

    Every candidate rate runs exact gradient ascent on ``J_beta(pi; pi_0)`` from the base
    model, once at each of the two strengths, for the matching number of steps. A rate whose
    reward drops at some step is oscillating rather than improving, so it is not a candidate
    (our reading); among the rest the pick is the rate with the fastest reward improvement,
    read as the highest reward at the end of the run, at both strengths.

    Parameters
    ----------
    instance
        A :class:`~covpo.collapse_instance.CollapseInstance`.
    betas
        The two strengths ``(weak, strong)``, each ``> 0``.
    etas
        Candidate learning rates, each ``> 0``.
    n_steps
        Steps of the run at each strength, each ``>= 1``.
    """
    instance = _check_instance(instance)
    betas = check_positive_grid("betas", betas)
    if betas.size != 2:
        raise ValueError(f"betas must hold the two strengths (weak, strong), got {betas.tolist()!r}")
    etas = check_positive_grid("etas", etas)
    n_steps = _pair("n_steps", n_steps)
    rewards = []
    for beta, steps in zip(betas, n_steps):
        runs = _run_exact(
            [instance] * etas.size,
            etas,
            np.full(etas.size, beta),
            np.full(etas.size, -1.0),
            steps,
            np.arange(steps + 1, dtype=np.int64),
            progress=False,
        )
        rewards.append(_state_summary(instance, runs.record_logits)["reward"])
    monotone = np.array([np.all(np.diff(reward, axis=1) >= -MONOTONE_TOLERANCE, axis=1) for reward in rewards])
    final = np.array([reward[:, -1] for reward in rewards])
    candidates = np.flatnonzero(monotone.all(axis=0))
    best_eta, fastest_in_both = None, False
    if candidates.size:
        best_each = {int(candidates[np.argmax(final[j, candidates])]) for j in range(2)}
        if len(best_each) == 1:
            pick, fastest_in_both = best_each.pop(), True
        else:
            start = rewards[0][0, 0]
            gains = final[:, candidates] - start
            score = np.min(gains / gains.max(axis=1, keepdims=True), axis=0)
            pick = int(candidates[np.argmax(score)])
        best_eta = float(etas[pick])
    return FixedReferenceRateSweep(etas, betas, n_steps, tuple(rewards), monotone, final, best_eta, fastest_in_both)


@dataclass(frozen=True)
class Figure2aData:
    """Paper Figure 2a, and the one run behind Figures 2b,c and 3 (paper appendix C.1).

    Attributes
    ----------
    instance, eps
        The member of the family and the accuracy target.
    eta
        The one learning rate of both methods, picked by ``learning_rate_sweep``.
    reinforce_beta
        REINFORCE's fixed-reference strength: the strongest whose regularized optimum has
        suboptimality ``margin * eps``.
    apmd_beta
        APMD's strength.
    learning_rate_sweep
        The fixed-reference sweeps at both strengths that picked ``eta``.
    inner_steps_sweep
        APMD over the inner step counts at ``eta``, each until eps or the budget.
    fastest_inner_steps
        The count that reached eps in the fewest gradient steps.
    inner_steps
        The count APMD uses: ``inner_steps_factor`` times the fastest.
    reinforce, apmd
        Both runs over the whole budget, at log-spaced records.
    reinforce_to_eps, apmd_to_eps
        The same runs stopped at their first eps-optimal step (REINFORCE at log-spaced
        records, APMD at every step); the landscapes draw these paths.
    reinforce_steps_to_eps, apmd_steps_to_eps
        Exact gradient steps to eps, ``None`` if not reached within the budget.
    reinforce_min_log10_coverage, apmd_min_log10_coverage
        Lowest base-10 log coverage over every step until eps (the whole budget if not reached).
    max_steps
        The common budget.
    """

    instance: CollapseInstance
    eps: float
    eta: float
    reinforce_beta: float
    apmd_beta: float
    learning_rate_sweep: FixedReferenceRateSweep
    inner_steps_sweep: InnerStepsSweep
    fastest_inner_steps: int
    inner_steps: int
    reinforce: CollapseRun
    apmd: CollapseRun
    reinforce_to_eps: CollapseRun
    apmd_to_eps: CollapseRun
    reinforce_steps_to_eps: int | None
    apmd_steps_to_eps: int | None
    reinforce_min_log10_coverage: float
    apmd_min_log10_coverage: float
    max_steps: int


def figure_2a_data(
    gap: float = FIGURE_GAP,
    apmd_beta: float = DEFAULT_APMD_BETA,
    etas: Sequence[float] | np.ndarray = ETA_GRID,
    rate_sweep_steps: Sequence[int] = RATE_SWEEP_STEPS,
    inner_steps_grid: Sequence[int] | np.ndarray = INNER_STEPS_GRID,
    inner_steps_factor: int = INNER_STEPS_FACTOR,
    eps_fraction: float = DEFAULT_EPS_FRACTION,
    margin: float = DEFAULT_MARGIN,
    coverage_fraction: float = DEFAULT_COVERAGE_FRACTION,
    max_steps: int = FIGURE_MAX_STEPS,
    n_records: int = DEFAULT_N_RECORDS,
) -> Figure2aData:
    """REINFORCE vs APMD under the same gradient-step budget, the protocol of paper appendix C.1.

    1. REINFORCE's strength is the strongest fixed-reference beta whose optimum has
       suboptimality ``margin * eps`` (anything stronger cannot reach eps at all).
    2. The learning rate comes from :func:`fixed_reference_rate_sweep` at REINFORCE's and
       APMD's strengths.
    3. At that rate the inner step count is swept
       (:func:`~covpo.experiments.collapse.reset_sweeps.inner_steps_sweep`); APMD uses
       ``inner_steps_factor`` times the fastest count to eps.
    4. Both methods start at the base model and run ``max_steps`` exact gradient steps at
       that one rate; the steps to eps and the lowest coverage come from runs that stop at eps.

    Parameters
    ----------
    gap
        The member of the family, in ``(0, 1)``.
    apmd_beta
        APMD's regularization strength, ``> 0``; much larger than REINFORCE's.
    etas
        Candidate learning rates.
    rate_sweep_steps
        Length of the fixed-reference rate sweep at REINFORCE's and at APMD's strength.
    inner_steps_grid
        Inner step counts to sweep.
    inner_steps_factor
        APMD's inner step count over the fastest one, ``>= 1``.
    eps_fraction
        ``eps / gap``, in ``(0, 1)``.
    margin
        Margin of REINFORCE's beta rule, in ``(0, 1)``.
    coverage_fraction
        The fraction of the base coverage the inner-step sweep reports as kept.
    max_steps
        The common budget of gradient steps.
    n_records
        Log-spaced records per run.
    """
    instance, eps = _figure_instance(gap, eps_fraction)
    apmd_beta = check_positive("apmd_beta", apmd_beta)
    etas = check_positive_grid("etas", etas)
    rate_sweep_steps = _pair("rate_sweep_steps", rate_sweep_steps)
    inner_steps_grid = check_positive_grid("inner_steps_grid", inner_steps_grid, integers=True)
    inner_steps_factor = check_count("inner_steps_factor", inner_steps_factor)
    margin = check_probability("margin", margin)
    coverage_fraction = check_probability("coverage_fraction", coverage_fraction)
    max_steps = check_count("max_steps", max_steps)
    log_spaced = _log_spaced_steps(max_steps, check_count("n_records", n_records))
    reinforce_beta = strongest_eps_optimal_beta(instance, eps, margin)
    rates = fixed_reference_rate_sweep(instance, [reinforce_beta, apmd_beta], etas, rate_sweep_steps)
    if rates.best_eta is None:
        raise ValueError(f"etas holds no learning rate whose reward rises at every step at both strengths: {etas.tolist()}")
    eta = rates.best_eta
    counts = inner_steps_sweep(
        instance, inner_steps_grid, [eta], apmd_beta, eps, max_steps, coverage_fraction, progress=False
    )
    if not counts.reached_eps[0].any():
        raise ValueError(
            f"inner_steps_grid holds no inner step count that reaches eps at eta={eta!r} with apmd_beta={apmd_beta!r} "
            f"within max_steps={max_steps}"
        )
    reached = counts.reached_eps[0]
    fastest = int(counts.inner_steps[reached][np.argmin(counts.steps_to_eps[0][reached])])
    inner_steps = inner_steps_factor * fastest
    reinforce_settings = {"eta": eta, "n_iterations": max_steps, "beta": reinforce_beta}
    probe = exact_collapse_run(instance, **reinforce_settings, eps=eps, n_records=2)
    reinforce_to_eps = exact_collapse_run(
        instance, **reinforce_settings, eps=eps,
        record_steps=np.union1d(log_spaced[log_spaced <= probe.trajectory.total_gradient_steps],
                                probe.trajectory.total_gradient_steps),
    )
    apmd_to_eps = _apmd_to_eps(instance, apmd_beta, inner_steps, eta, eps, max_steps)
    return Figure2aData(
        instance=instance,
        eps=eps,
        eta=eta,
        reinforce_beta=reinforce_beta,
        apmd_beta=apmd_beta,
        learning_rate_sweep=rates,
        inner_steps_sweep=counts,
        fastest_inner_steps=fastest,
        inner_steps=inner_steps,
        reinforce=exact_collapse_run(instance, **reinforce_settings, record_steps=log_spaced),
        apmd=exact_apmd_run(
            instance, beta=apmd_beta, inner_steps=inner_steps, eta=eta, gradient_steps=max_steps, record_steps=log_spaced
        ),
        reinforce_to_eps=reinforce_to_eps,
        apmd_to_eps=apmd_to_eps,
        reinforce_steps_to_eps=reinforce_to_eps.steps_to_eps,
        apmd_steps_to_eps=apmd_to_eps.steps_to_eps,
        reinforce_min_log10_coverage=reinforce_to_eps.trajectory.min_log10_coverage,
        apmd_min_log10_coverage=apmd_to_eps.trajectory.min_log10_coverage,
        max_steps=max_steps,
    )


def _check_figure_2a(data: object) -> Figure2aData:
    if data is None:
        return figure_2a_data()
    if not isinstance(data, Figure2aData):
        raise ValueError(f"data must be a Figure2aData (from figure_2a_data) or None, got {type(data).__name__}")
    return data


def _grid_axis(name: str, values: object, paths: np.ndarray, column: int, n_points: int, margin: float) -> np.ndarray:
    """The given coordinates, or a grid covering ``paths`` (and the origin) with ``margin``."""
    if values is not None:
        grid = check_finite_array(name, values, ndim=1)
        if grid.size == 0:
            raise ValueError(f"{name} must hold at least one coordinate, got {values!r}")
        return grid
    low, high = min(paths[:, column].min(), 0.0) - margin, max(paths[:, column].max(), 0.0) + margin
    return np.linspace(low, high, n_points)


@dataclass(frozen=True)
class Figure2bcData:
    """Paper Figure 2b,c: the fixed-reference objective over the ``(u, v)`` plane, with both runs (appendix C.1).

    Both landscapes hold the same surface, ``J_beta(pi; pi_0)`` at REINFORCE's strength
    (paper Eq. (5)), with its expected reward and log coverage for the colours; each carries
    one run's path until that run is eps-optimal.

    Attributes
    ----------
    reinforce, apmd
        The surface with REINFORCE's path, and the same surface with APMD's path.
    beta
        REINFORCE's strength, the surface's.
    eps
        The accuracy target.
    """

    reinforce: Landscape
    apmd: Landscape
    beta: float
    eps: float


def figure_2bc_data(
    data: Figure2aData | None = None,
    u: Sequence[float] | np.ndarray | None = None,
    v: Sequence[float] | np.ndarray | None = None,
    n_points: int = 81,
) -> Figure2bcData:
    """The surface of paper Figure 2b,c for the run of :func:`figure_2a_data` (paper Eq. (5), appendix C.1).

    Parameters
    ----------
    data
        The record of :func:`figure_2a_data`; ``None`` runs it with its defaults.
    u, v
        Grid coordinates relative to the base model; by default the grid covers both paths
        with a margin.
    n_points
        Grid size per axis when ``u`` or ``v`` is omitted, ``>= 2``.
    """
    n_points = check_count("n_points", n_points, minimum=2)
    data = _check_figure_2a(data)
    paths = np.vstack([data.reinforce_to_eps.plane, data.apmd_to_eps.plane])
    grid = {
        "u": _grid_axis("u", u, paths, 0, n_points, LANDSCAPE_MARGIN),
        "v": _grid_axis("v", v, paths, 1, n_points, LANDSCAPE_MARGIN),
    }
    return Figure2bcData(
        reinforce=landscape_grid(data.instance, data.reinforce_beta, data.reinforce_to_eps, **grid),
        apmd=landscape_grid(data.instance, data.reinforce_beta, data.apmd_to_eps, **grid),
        beta=data.reinforce_beta,
        eps=data.eps,
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
    strong_bias_bound = strong_beta * float(np.log(1.0 / instance.base_coverage))
    if not np.isfinite(strong_bias_bound):
        raise ValueError(f"strong_beta = {strong_beta!r} is too large: its bias bound beta log(1/c_0) is not finite")
    reinforce_settings = {"eta": eta, "n_iterations": max_steps}
    apmd_settings = {"beta": strong_beta, "inner_steps": inner_steps, "eta": eta, "gradient_steps": max_steps}
    weak_to_eps = exact_collapse_run(instance, **reinforce_settings, beta=weak_beta, eps=eps, n_records=2)
    resets_to_eps = exact_apmd_run(instance, **apmd_settings, eps=eps, n_records=2).trajectory.total_gradient_steps
    at_resets = np.append(np.arange(0, resets_to_eps + 1, inner_steps), resets_to_eps)
    weak = exact_collapse_run(
        instance, **reinforce_settings, beta=weak_beta,
        record_steps=np.union1d(log_spaced, weak_to_eps.trajectory.total_gradient_steps),
    )
    strong = exact_collapse_run(instance, **reinforce_settings, beta=strong_beta, record_steps=log_spaced)
    resets = exact_apmd_run(instance, **apmd_settings, record_steps=np.union1d(log_spaced, at_resets))
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
        strong_bias_bound=strong_bias_bound,
    )


@dataclass(frozen=True)
class Figure1aData:
    """Paper Figure 1a: the weak fixed-reference regime, where the KL penalty pulls back only after the collapse.

    Forces are the two parts of ``d J_beta(pi; pi_0) / du`` along the run (``u`` raises the
    optimal response against the distractor, :func:`~covpo.collapse_instance.plane_coordinates`):
    the reward's pull and the KL penalty's. While the distractor gains, the reward pulls ``u``
    down; the penalty pulls it back toward the base model.

    Attributes
    ----------
    run
        Fixed-reference REINFORCE at the weak strength over the whole budget (Figure 1's weak regime).
    path
        Its masses on (optimal, distractor, zero block) at every record until its first
        eps-optimal step; the forces below share these records.
    beta, eps
        The weak strength and the accuracy target.
    reward_pull
        ``-d J / du`` at every record: how hard the reward pushes toward the distractor.
    kl_pull
        ``-beta d KL(pi || pi_0) / du``: how hard the penalty pushes back toward the optimal response.
    crossing
        Index of the first record at which the penalty's pull is at least the reward's, or
        ``None``.
    """

    run: CollapseRun
    path: SimplexPath
    beta: float
    eps: float
    reward_pull: np.ndarray
    kl_pull: np.ndarray
    crossing: int | None


def figure_1a_data(data: Figure1Data | None = None) -> Figure1aData:
    """The forces along the weak fixed-reference run of :func:`figure_1_data` (paper Fig. 1a, section 2.1).

    The records are cut at the run's first eps-optimal step. With per-member masses ``p`` and reference
    masses ``p_0``, ``d/du`` moves the optimal and distractor logits by ``+1/2`` and ``-1/2``,
    so the reward's part is ``(p_opt (1 - J) - p_dis (r_dis - J)) / 2`` and the penalty's is
    ``-beta (p_opt (l_opt - KL) - p_dis (l_dis - KL)) / 2`` with ``l = log(p / p_0)``.

    Parameters
    ----------
    data
        The record of :func:`figure_1_data`; ``None`` runs it with its defaults.
    """
    if data is None:
        data = figure_1_data()
    if not isinstance(data, Figure1Data):
        raise ValueError(f"data must be a Figure1Data (from figure_1_data) or None, got {type(data).__name__}")
    weak, instance = data.weak, data.instance
    first = weak.trajectory.steps_to_eps(data.eps)
    keep = slice(None) if first is None else slice(0, int(np.searchsorted(weak.trajectory.gradient_steps, first)) + 1)
    log_masses = weak.class_log_probs[keep]
    masses = np.exp(log_masses)
    rewards = instance.rewards
    value = masses @ rewards
    log_ratio = log_masses - instance.base_class_log_probs
    kl = np.sum(masses * log_ratio, axis=1)
    reward_du = (masses[:, 0] * (rewards[0] - value) - masses[:, 1] * (rewards[1] - value)) / 2.0
    kl_du = (masses[:, 0] * (log_ratio[:, 0] - kl) - masses[:, 1] * (log_ratio[:, 1] - kl)) / 2.0
    reward_pull, kl_pull = -reward_du, -data.weak_beta * kl_du
    crossed = np.flatnonzero((kl_pull >= reward_pull) & (reward_pull > 0))
    return Figure1aData(
        run=weak,
        path=SimplexPath(weak.trajectory.gradient_steps[keep].copy(), data.weak_path.log10_masses[keep].copy()),
        beta=data.weak_beta,
        eps=data.eps,
        reward_pull=reward_pull,
        kl_pull=kl_pull,
        crossing=int(crossed[0]) if crossed.size else None,
    )


@dataclass(frozen=True)
class Figure3Data:
    """Paper Figure 3: the landscape under weak, strong and reset regularization, in the run of Figure 2 (appendix C.1).

    Attributes
    ----------
    weak
        ``J_beta(.; pi_0)`` at REINFORCE's strength with REINFORCE's path to eps: the surface
        of Figure 2b.
    strong
        ``J_beta(.; pi_0)`` at APMD's strength with APMD's path to eps; on it APMD's first
        inner loop (``inner_steps`` steps) is exact gradient ascent. It is the lowest surface of
        the stack, on the grid of panels (a) and (b).
    stack
        ``J_beta(.; pi_t)`` at APMD's strength for the resets ``stack_resets``, each with the
        whole APMD path to eps and its reference marked, on the finer grid of panel (c).
    stack_resets
        The outer iteration ``t`` of each surface of the stack; the first is ``0``.
    stack_steps
        The gradient step of each reset, ``t * inner_steps``: the path's segment that
        ascends surface ``t`` runs from there for ``inner_steps`` steps.
    apmd
        The APMD run drawn on the stack (that of Figure 2a, recorded at every step until eps).
    weak_beta, strong_beta, inner_steps, eta, eps
        The settings, those of Figure 2a.
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


STACK_GRID_MARGIN = (0.6, 0.8)
"""Margin in ``(u, v)`` around APMD's path of the default grid of the stack."""


def figure_3_data(
    data: Figure2aData | None = None,
    n_surfaces: int = 6,
    u: Sequence[float] | np.ndarray | None = None,
    v: Sequence[float] | np.ndarray | None = None,
    n_points: int = 81,
    stack_points: tuple[int, int] = (43, 83),
) -> Figure3Data:
    """The weakly and strongly regularized surfaces and the stack APMD solves, in the run of Figure 2 (paper Fig. 3, appendix C.1).

    Panel (a) is the surface of Figure 2b; panel (b) is the strongly regularized surface
    around the base model, which is the lowest surface of the stack; panel (c) holds
    ``n_surfaces`` of APMD's subproblems ``J_beta(.; pi_t)``, evenly spread over the resets
    before APMD reaches eps (the first is ``t = 0``). Each surface comes from
    :func:`~covpo.experiments.collapse.landscape.landscape_grid`.

    Parameters
    ----------
    data
        The record of :func:`figure_2a_data`; ``None`` runs it with its defaults.
    n_surfaces
        Number of surfaces in the stack, ``>= 1``.
    u, v
        Grid coordinates of panels (a) and (b) relative to the base model; by default the grid
        covers both paths with a margin.
    n_points
        Grid size per axis when ``u`` or ``v`` is omitted, ``>= 2``.
    stack_points
        Grid size ``(n_u, n_v)`` of the stack's grid around APMD's path, each ``>= 2``.
    """
    n_surfaces = check_count("n_surfaces", n_surfaces)
    n_points = check_count("n_points", n_points, minimum=2)
    stack_points = _pair("stack_points", stack_points, minimum=2)
    data = _check_figure_2a(data)
    instance, apmd = data.instance, data.apmd_to_eps
    paths = np.vstack([data.reinforce_to_eps.plane, apmd.plane])
    grid = {
        "u": _grid_axis("u", u, paths, 0, n_points, LANDSCAPE_MARGIN),
        "v": _grid_axis("v", v, paths, 1, n_points, LANDSCAPE_MARGIN),
    }
    low = apmd.plane.min(axis=0) - STACK_GRID_MARGIN
    high = apmd.plane.max(axis=0) + STACK_GRID_MARGIN
    fine = {"u": np.linspace(low[0], high[0], stack_points[0]), "v": np.linspace(low[1], high[1], stack_points[1])}
    last_reset = (apmd.trajectory.total_gradient_steps - 1) // data.inner_steps
    stack_resets = np.unique(np.round(np.linspace(0, max(last_reset, 0), n_surfaces)).astype(np.int64))
    stack_steps = stack_resets * data.inner_steps
    return Figure3Data(
        weak=landscape_grid(instance, data.reinforce_beta, data.reinforce_to_eps, **grid),
        strong=landscape_grid(instance, data.apmd_beta, apmd, **grid),
        stack=tuple(
            landscape_grid(instance, data.apmd_beta, apmd, reference=apmd.logits[index], **fine)
            for index in np.searchsorted(apmd.trajectory.gradient_steps, stack_steps)
        ),
        stack_resets=stack_resets,
        stack_steps=stack_steps,
        apmd=apmd,
        weak_beta=data.reinforce_beta,
        strong_beta=data.apmd_beta,
        inner_steps=data.inner_steps,
        eta=data.eta,
        eps=data.eps,
    )
