"""The mean-squared-error criterion of paper section 4.1 along a run (appendices E and L).

:func:`mse_path` measures each step's MSE against the exact mirror-descent step, its KL, the
method's own objective and the coverage bound it implies; :func:`rebel_objective_check`
compares Rebel-OnPolicy's objective on fresh batches with that MSE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo.algorithms import ALGORITHMS
from covpo.instances import BanditInstance
from covpo.objectives import regularized_optimum
from covpo.policies import base_log_policy, kl_per_prompt, log_coverage, log_policy
from covpo.experiments.sweeps import Method, RunSummary, run_unless_diverged
from covpo.algorithms.rebel import rebel_loss
from covpo.experiments.population import (
    kimi_population_loss,
    mean_baseline_moments,
    normalizer_baseline_moments,
    mse_coverage_bound,
    rebel_population_loss,
    regression_mse,
)
from covpo.batches import draw_batch
from covpo.trajectory import Trajectory
from covpo.validation import check_count, check_generator, check_instance, check_option
from covpo.experiments.squared_loss.checks import _weighted_mean


SQUARED_LOSS_ALGORITHMS = tuple(ALGORITHMS[name].label for name in ("kimipo", "kimipo_norm", "rebel_onpolicy"))
"""The labels the three squared-loss runs' trajectories carry (the registry's), the runs :func:`mse_path` measures."""


@dataclass(frozen=True, eq=False)
class MSEPath:
    """Each outer iteration of one squared-loss run, measured in the MSE criterion's terms.

    Step ``t`` goes from ``pi_t`` to the inner loop's output ``pi_{t+1}``; its target is the exact
    mirror-descent step ``pi*_{t+1}``. Averages over prompts are under ``rho``.

    Attributes
    ----------
    algorithm
        The run's algorithm name.
    beta
        Its regularization strength.
    mse
        ``E_x MSE_t(x)`` per step (:func:`covpo.experiments.population.regression_mse`), shape ``(T,)``.
    centered_mse
        ``E_x Var_{pi_t}(delta)``, the shift-free error, shape ``(T,)``.
    inner_kl
        ``E_x KL(pi_{t+1} || pi*_{t+1})``, APMD's accuracy of the step, shape ``(T,)``.
    objective_gap
        The method's own population objective at ``pi_{t+1}`` minus its value at the target,
        with the baseline replaced by its expectation (KimiPO: ``V_t``; KimiPO-Norm: ``E bhat``
        over ``G`` draws; Rebel-OnPolicy: the pairwise loss, zero at the target), shape ``(T,)``.
    coverage_bound
        Per step and prompt, the most ``log c`` may fall by our lemma
        (:func:`covpo.experiments.population.mse_coverage_bound`), shape ``(T, n_prompts)``.
    coverage_change
        Per step and prompt, the measured ``log c_{t+1} - log c_t``, same shape.
    thetas
        ``theta_0, ..., theta_T`` of the run.
    """

    algorithm: str
    beta: float
    mse: np.ndarray
    centered_mse: np.ndarray
    inner_kl: np.ndarray
    objective_gap: np.ndarray
    coverage_bound: np.ndarray
    coverage_change: np.ndarray
    thetas: np.ndarray

    @property
    def accumulated_bound(self) -> np.ndarray:
        """Per prompt, the sum of the per-step bounds in decades, the most coverage may fall over the run."""
        return self.coverage_bound.sum(axis=0) / np.log(10.0)

    @property
    def coverage_fall(self) -> np.ndarray:
        """Per prompt, the largest fall of coverage below the base model's over the run, in decades (``>= 0``)."""
        path = np.cumsum(self.coverage_change, axis=0) / np.log(10.0)
        return np.maximum(0.0, -path.min(axis=0))


def _objective_gap(instance: BanditInstance, trajectory: Trajectory, t: int, log_reference: np.ndarray) -> float:
    """The method's population objective at ``theta_{t+1}`` minus at the exact target (see :class:`MSEPath`)."""
    beta = trajectory.settings["beta"]
    theta = trajectory.thetas[t + 1]
    target = regularized_optimum(instance, log_reference, beta)
    kind = trajectory.settings.get("baseline")  # the Kimi runs' baseline; Rebel-OnPolicy has none
    if kind is None:
        return rebel_population_loss(instance, theta, log_reference, beta)
    if kind == "mean":
        baseline = mean_baseline_moments(instance, log_reference).mean
    else:
        baseline = normalizer_baseline_moments(
            instance, log_reference, beta, trajectory.settings["extra_responses"]
        ).mean
    shift = instance.rewards - baseline[:, None]
    probs = np.exp(log_reference)
    at_target = float(instance.prompt_probs @ np.sum(probs * (shift - beta * (target - log_reference)) ** 2, axis=1))
    return kimi_population_loss(instance, theta, log_reference, beta, baseline) - at_target


def mse_path(instance: BanditInstance, trajectory: Trajectory) -> MSEPath:
    """Measure every outer iteration of a KimiPO, KimiPO-Norm or Rebel-OnPolicy run in the MSE criterion's terms.

    Paper section 4.1 and appendix E: APMD stays coverage-preserving when every inner loop's
    mean-squared error is small. ``trajectory`` must keep its ``thetas`` (the three runs do).
    """
    check_instance("instance", instance, BanditInstance)
    check_instance("trajectory", trajectory, Trajectory)
    check_option("trajectory.algorithm", trajectory.algorithm, SQUARED_LOSS_ALGORITHMS)
    if trajectory.thetas is None:
        raise ValueError("trajectory has no thetas: mse_path needs the parameters after every outer iteration")
    beta = float(trajectory.settings["beta"])
    thetas = np.asarray(trajectory.thetas, dtype=float)
    log_policies = [log_policy(instance, theta) for theta in thetas]
    rows = []
    for t in range(thetas.shape[0] - 1):
        log_reference, log_next = log_policies[t], log_policies[t + 1]
        rows.append((
            _weighted_mean(instance, regression_mse(instance, log_reference, log_next, beta)),
            _weighted_mean(instance, regression_mse(instance, log_reference, log_next, beta, centered=True)),
            _weighted_mean(instance, kl_per_prompt(log_next, regularized_optimum(instance, log_reference, beta))),
            _objective_gap(instance, trajectory, t, log_reference),
            mse_coverage_bound(instance, log_reference, log_next, beta),
            log_coverage(instance, log_next) - log_coverage(instance, log_reference),
        ))
    columns = list(zip(*rows))
    return MSEPath(
        algorithm=trajectory.algorithm,
        beta=beta,
        mse=np.array(columns[0]),
        centered_mse=np.array(columns[1]),
        inner_kl=np.array(columns[2]),
        objective_gap=np.array(columns[3]),
        coverage_bound=np.array(columns[4]),
        coverage_change=np.array(columns[5]),
        thetas=thetas,
    )


def _batch_size_run(
    method: Method, instance: BanditInstance, eta: float | None, seed: tuple[int, ...], eps: float
) -> tuple[RunSummary, MSEPath] | None:
    """One run of :func:`batch_size_study`: the :func:`summarize_run` summary and the run's :class:`MSEPath`."""
    trajectory = run_unless_diverged(method, instance, eta, np.random.default_rng(list(seed)))
    if trajectory is None:
        return None
    log_base = log_coverage(instance, base_log_policy(instance))
    summary = RunSummary(
        responses_to_eps=trajectory.responses_to_eps(eps),
        steps_to_eps=trajectory.steps_to_eps(eps),
        total_responses=trajectory.total_responses,
        total_steps=trajectory.total_gradient_steps,
        final_suboptimality=float(trajectory.suboptimality[-1]),
        min_log10_coverage=trajectory.min_log10_coverage,
        coverage_loss=trajectory.coverage_loss(log_base),
    )
    squared = trajectory.algorithm in SQUARED_LOSS_ALGORITHMS
    return summary, (mse_path(instance, trajectory) if squared else None)


@dataclass(frozen=True, eq=False)
class RebelObjectiveCheck:
    """Rebel-OnPolicy's empirical objective on fresh batches against the MSE (paper appendix L).

    Attributes
    ----------
    batch_size
        ``N``, pairs per batch.
    objectives
        The empirical pairwise loss at ``theta_{t+1}`` on each fresh batch of pairs from ``pi_t``,
        shape ``(T, n_batches)``.
    centered_mse, mse
        The step's ``E_x Var_{pi_t}(delta)`` and ``E_x MSE_t(x)``, shape ``(T,)``.
    """

    batch_size: int
    objectives: np.ndarray
    centered_mse: np.ndarray
    mse: np.ndarray

    @property
    def ratio(self) -> np.ndarray:
        """Per step, the mean objective over the fresh batches divided by ``2 E_x Var_{pi_t}(delta)``."""
        return self.objectives.mean(axis=1) / (2.0 * self.centered_mse)

    @property
    def standard_error(self) -> np.ndarray:
        """Per step, the standard error of :attr:`ratio` over the fresh batches."""
        n = self.objectives.shape[1]
        return self.objectives.std(axis=1, ddof=1) / np.sqrt(n) / (2.0 * self.centered_mse)


def rebel_objective_check(
    instance: BanditInstance,
    path: MSEPath,
    *,
    batch_size: int,
    n_batches: int,
    rng: np.random.Generator,
) -> RebelObjectiveCheck:
    """Evaluate Rebel-OnPolicy's empirical loss at each output ``theta_{t+1}`` of a run on fresh batches from ``pi_t``.

    Paper appendix L: the pairwise loss's residual on a pair is ``delta(y) - delta(y')`` with
    ``delta = beta log(pi / pi*_{t+1})``, so each empirical objective estimates ``2 E_x Var_{pi_t}(delta)``
    without bias, and the objective controls the MSE of :func:`covpo.experiments.population.regression_mse`.
    ``path`` is the run's :class:`MSEPath` (its ``thetas`` and ``beta``).
    """
    check_instance("instance", instance, BanditInstance)
    check_instance("path", path, MSEPath)
    batch_size = check_count("batch_size", batch_size)
    n_batches = check_count("n_batches", n_batches, minimum=2)
    check_generator("rng", rng)
    objectives = np.empty((path.thetas.shape[0] - 1, n_batches))
    for t in range(objectives.shape[0]):
        log_reference = log_policy(instance, path.thetas[t])
        for b in range(n_batches):
            batch = draw_batch(instance, log_reference, batch_size, rng, group_size=2)
            objectives[t, b] = rebel_loss(instance, path.thetas[t + 1], batch, path.beta)
    return RebelObjectiveCheck(batch_size, objectives, path.centered_mse, path.mse)
