"""The measurements of chapter 5: baselines, curvature and the paper's Table 1 (paper section 4, appendices I to K).

Everything here is built on :mod:`covpo.algorithms.squared_loss`: the exact population losses,
Hessians and baseline moments, and the three sampled algorithms.

- :func:`baseline_bias_sweep`: how far each baseline's expectation sits from the normalizer
  ``b_t`` (the mean baseline against ``beta``, the normalizer baseline against ``G``), and
  the error that bias leaves in one exactly solved APMD step.
- :func:`curvature_scan` and :func:`loss_slice`: the smallest Hessian eigenvalue of each
  population loss over a ball around ``theta_t``, and the losses along a line.
- :func:`table_1`: the paper's Table 1 measured, the cheapest setting of KimiPO and
  KimiPO-Norm for each accuracy ``eps``, with fitted scalings in ``1 / eps``.
- :func:`mse_path` and :func:`rebel_objective_check`: the mean-squared-error criterion of the
  paper's section 4.1 along a run (each step's MSE against the exact mirror-descent step, its KL,
  the method's own objective and the coverage bound it implies), and Rebel-OnPolicy's objective
  on fresh batches against that MSE (appendix L). :func:`batch_size_study` measures every run
  it makes this way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from covpo.fits import fit_line
from covpo.instances import BanditInstance, tabular_instance
from covpo.objectives import regularized_optimum
from covpo.experiments.parallel import run_tasks
from covpo.policies import base_log_policy, kl_per_prompt, log_coverage, log_policy
from covpo.experiments.sweeps import (
    Method,
    check_methods,
    collapse_family_methods,
    random_family_methods,
    RunSummary,
    run_unless_diverged,
)
from covpo.algorithms.squared_loss import (
    check_squared_loss_beta,
    kimi_population_hessian,
    kimi_population_loss,
    kimi_population_minimizer,
    mean_baseline_bias,
    mean_baseline_bias_approximation,
    mean_baseline_moments,
    normalizer,
    normalizer_baseline_bias_approximation,
    normalizer_baseline_moments,
    mse_coverage_bound,
    rebel_loss,
    rebel_population_hessian,
    rebel_population_loss,
    regression_mse,
)
from covpo.batches import draw_batch
from covpo.trajectory import Trajectory
from covpo.table import Table
from covpo.validation import (
    check_count,
    check_finite_array,
    check_generator,
    check_instance,
    check_log_distribution,
    check_option,
    check_positive,
    check_positive_grid,
    check_probability,
    check_seed,
    check_seeds,
    check_shape,
)



def _check_theta(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    check_instance("instance", instance, BanditInstance)
    theta = check_finite_array("reference_theta", theta, ndim=1)
    return check_shape("reference_theta", theta, (instance.dim,))


def _weighted_mean(instance: BanditInstance, per_prompt: np.ndarray) -> float:
    return float(instance.prompt_probs @ per_prompt)


# ---------------------------------------------------------------------------------------
# Baseline bias and the step error it causes


@dataclass(frozen=True, eq=False)
class BaselineBiasSweep:
    """Bias of both baselines against the normalizer, and the error of one exactly solved step.

    All biases are ``E_x |E bhat(x) - b_t(x)|`` (``rho``-weighted); step errors are
    ``E_x KL(pi_min || pi*_{t+1})`` where ``pi_min`` minimizes the population Kimi loss with the
    baseline's expectation (:func:`covpo.algorithms.squared_loss.kimi_population_minimizer`).

    Attributes
    ----------
    betas
        The strengths of the mean-baseline sweep.
    mean_bias, mean_bias_approximation
        The mean baseline's bias ``|V_t - b_t|`` at each ``beta``, exact and ``Var_t(r) / (2 beta)``.
    mean_step_error
        The step error with the mean baseline at each ``beta``.
    group_beta
        The fixed ``beta`` of the normalizer-baseline sweep.
    group_sizes
        The ``G`` of that sweep.
    normalizer_bias, normalizer_bias_approximation
        The normalizer baseline's bias at each ``G``, exact (enumerated) and to first order.
    normalizer_step_error
        The step error with the normalizer baseline's expectation at each ``G``.
    """

    betas: np.ndarray
    mean_bias: np.ndarray
    mean_bias_approximation: np.ndarray
    mean_step_error: np.ndarray
    group_beta: float
    group_sizes: np.ndarray
    normalizer_bias: np.ndarray
    normalizer_bias_approximation: np.ndarray
    normalizer_step_error: np.ndarray

    def slope(self, quantity: str) -> float:
        """Log-log slope of ``"mean_bias"`` or ``"mean_step_error"`` in ``beta``, or of the normalizer's in ``G``."""
        x = self.betas if quantity.startswith("mean") else self.group_sizes.astype(float)
        values = getattr(self, quantity)
        return fit_line(np.log10(x), np.log10(values)).slope

    def summary(self) -> str:
        """The two sweeps as text, with their log-log slopes."""
        lines = ["mean baseline (KimiPO):  beta   |V - b|   Var/(2 beta)   step KL"]
        for row in zip(self.betas, self.mean_bias, self.mean_bias_approximation, self.mean_step_error):
            lines.append("                         {:5g}  {:.2e}  {:.2e}       {:.2e}".format(*row))
        lines.append(
            f"  slopes in beta: bias {self.slope('mean_bias'):.2f}, step KL {self.slope('mean_step_error'):.2f}"
        )
        lines.append(f"normalizer baseline (KimiPO-Norm), beta = {self.group_beta:g}:  G   |E bhat - b|   first order   step KL")
        for row in zip(self.group_sizes, self.normalizer_bias, self.normalizer_bias_approximation, self.normalizer_step_error):
            lines.append("                         {:5d}  {:.2e}     {:.2e}      {:.2e}".format(*row))
        lines.append(
            f"  slopes in G: bias {self.slope('normalizer_bias'):.2f}, step KL {self.slope('normalizer_step_error'):.2f}"
        )
        return "\n".join(lines)

    def table(self, baseline: str) -> Table:
        """One sweep as a :class:`~covpo.table.Table`: ``"mean"`` (rows: ``beta``) or ``"normalizer"`` (rows: ``G``).

        Columns: the exact bias, its first-order approximation and the step error; the notes
        give the log-log slopes of the bias and of the step error along the sweep.
        """
        if baseline == "mean":
            rows = zip(self.betas, self.mean_bias, self.mean_bias_approximation, self.mean_step_error)
            return Table(
                ("β", "bias |V_t − b_t|", "Var_t(r) / 2β", "step error (KL)"),
                tuple((float(b), float(x), float(a), float(e)) for b, x, a, e in rows),
                caption="KimiPO's mean baseline against β",
                notes=(f"Log-log slopes in β: bias {self.slope('mean_bias'):.2f}, "
                       f"step error {self.slope('mean_step_error'):.2f}.",),
            )
        if baseline == "normalizer":
            rows = zip(self.group_sizes, self.normalizer_bias, self.normalizer_bias_approximation,
                       self.normalizer_step_error)
            return Table(
                ("G (extra responses)", "bias |E b̂ − b_t|", "first order in 1/G", "step error (KL)"),
                tuple((int(g), float(x), float(a), float(e)) for g, x, a, e in rows),
                caption=f"KimiPO-Norm's normalizer baseline against G, at β = {self.group_beta:g}",
                notes=(f"Log-log slopes in G: bias {self.slope('normalizer_bias'):.2f}, "
                       f"step error {self.slope('normalizer_step_error'):.2f}.",),
            )
        raise ValueError(f"baseline must be 'mean' or 'normalizer', got {baseline!r}")


def _step_error(instance: BanditInstance, reference_theta: np.ndarray, beta: float, baseline: np.ndarray) -> float:
    log_reference = log_policy(instance, reference_theta)
    target = regularized_optimum(instance, log_reference, beta)
    minimizer = kimi_population_minimizer(instance, reference_theta, beta, baseline)
    return _weighted_mean(instance, kl_per_prompt(log_policy(instance, minimizer), target))


def baseline_bias_sweep(
    instance: BanditInstance,
    reference_theta: np.ndarray,
    betas: Sequence[float],
    group_sizes: Sequence[int],
    group_beta: float,
) -> BaselineBiasSweep:
    """Measure both baselines' bias and the step error it leaves (paper appendix I.2).

    Parameters
    ----------
    instance
        The bandit (responses are enumerated, so keep it small).
    reference_theta
        ``theta_t``, the reference of the step.
    betas
        Strengths for the mean baseline, each ``> 0``.
    group_sizes
        ``G`` values for the normalizer baseline, each ``>= 1``; its moments are enumerated exactly.
    group_beta
        The strength at which the normalizer baseline is swept, ``> 0``.
    """
    reference_theta = _check_theta(instance, reference_theta)
    betas = np.array([check_squared_loss_beta(beta, "betas") for beta in check_positive_grid("betas", betas)])
    group_sizes = check_positive_grid("group_sizes", group_sizes, integers=True)
    group_beta = check_squared_loss_beta(group_beta, "group_beta")
    log_reference = log_policy(instance, reference_theta)
    value = mean_baseline_moments(instance, log_reference).mean
    mean_bias = np.array([_weighted_mean(instance, np.abs(mean_baseline_bias(instance, log_reference, b))) for b in betas])
    mean_approx = np.array(
        [_weighted_mean(instance, np.abs(mean_baseline_bias_approximation(instance, log_reference, b))) for b in betas]
    )
    mean_error = np.array([_step_error(instance, reference_theta, b, value) for b in betas])
    exact = normalizer(instance, log_reference, group_beta)
    normalizer_bias, normalizer_approx, normalizer_error = [], [], []
    for g in group_sizes:
        expected = normalizer_baseline_moments(instance, log_reference, group_beta, int(g)).mean
        normalizer_bias.append(_weighted_mean(instance, np.abs(expected - exact)))
        approximation = normalizer_baseline_bias_approximation(instance, log_reference, group_beta, int(g))
        normalizer_approx.append(_weighted_mean(instance, np.abs(approximation)))
        normalizer_error.append(_step_error(instance, reference_theta, group_beta, expected))
    return BaselineBiasSweep(
        betas=betas,
        mean_bias=mean_bias,
        mean_bias_approximation=mean_approx,
        mean_step_error=mean_error,
        group_beta=group_beta,
        group_sizes=group_sizes,
        normalizer_bias=np.array(normalizer_bias),
        normalizer_bias_approximation=np.array(normalizer_approx),
        normalizer_step_error=np.array(normalizer_error),
    )


# ---------------------------------------------------------------------------------------
# Curvature of the population losses


NEGATIVE_CURVATURE_TOLERANCE = 1e-12
"""Eigenvalues above ``-1e-12`` count as zero: rounding leaves about ``1e-17`` on a flat direction."""
LOSSES = ("KimiPO (mean)", "KimiPO-Norm (E bhat, G)", "exact normalizer", "Rebel-OnPolicy")
"""The population losses compared by :func:`curvature_scan` and :func:`loss_slice`."""


def two_response_instance(optimal_prob: float) -> BanditInstance:
    """One prompt, two responses with rewards 1 and 0, the optimal one at base probability ``optimal_prob``.

    Tabular (``d = 2``); the smallest instance on which KimiPO-Norm's loss is not convex.
    """
    optimal_prob = check_probability("optimal_prob", optimal_prob)
    return tabular_instance(np.array([[1.0, 0.0]]), np.array([[optimal_prob, 1.0 - optimal_prob]]))


def population_baselines(
    instance: BanditInstance, log_reference: np.ndarray, beta: float, group_size: int
) -> dict[str, np.ndarray]:
    """The expected baselines of :data:`LOSSES` (Rebel needs none): ``V_t``, ``E bhat_G`` and ``b_t``."""
    instance = check_instance("instance", instance, BanditInstance)
    log_reference = check_shape("log_reference", check_log_distribution("log_reference", log_reference), instance.rewards.shape)
    beta = check_positive("beta", beta)
    group_size = check_count("group_size", group_size)
    return {
        LOSSES[0]: mean_baseline_moments(instance, log_reference).mean,
        LOSSES[1]: normalizer_baseline_moments(instance, log_reference, beta, group_size).mean,
        LOSSES[2]: normalizer(instance, log_reference, beta),
    }


def _population_losses(
    instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray, beta: float, baselines: dict
) -> np.ndarray:
    kimi = [kimi_population_loss(instance, theta, log_reference, beta, b) for b in baselines.values()]
    return np.array([*kimi, rebel_population_loss(instance, theta, log_reference, beta)])


@dataclass(frozen=True, eq=False)
class CurvatureScan:
    """Smallest Hessian eigenvalue of each population loss at random points of a ball around ``theta_t``.

    Attributes
    ----------
    names
        :data:`LOSSES`.
    radius
        Radius of the ball (Euclidean, in parameter space).
    min_eigenvalue
        ``(n_losses, n_points)``: the smallest eigenvalue at each point.
    at_reference
        ``(n_losses,)``: the smallest eigenvalue at ``theta_t`` itself.
    """

    names: tuple[str, ...]
    radius: float
    min_eigenvalue: np.ndarray
    at_reference: np.ndarray

    def negative_share(self) -> np.ndarray:
        """Per loss, the share of points whose smallest eigenvalue is below ``-NEGATIVE_CURVATURE_TOLERANCE``."""
        return np.mean(self.min_eigenvalue < -NEGATIVE_CURVATURE_TOLERANCE, axis=1)

    def summary(self) -> str:
        """Per loss: the smallest eigenvalue at ``theta_t`` and over the ball, and the share of points with a negative one."""
        return "\n".join(
            f"{name:26} at theta_t {ref: .3e}, min over ball {values.min(): .3e}, "
            f"negative (below -{NEGATIVE_CURVATURE_TOLERANCE:g}) at {share:.0%} of points"
            for name, ref, values, share in zip(self.names, self.at_reference, self.min_eigenvalue, self.negative_share())
        )

    def table_rows(self, label: str) -> tuple[tuple[str, str, float, float, float], ...]:
        """Rows of :func:`curvature_table` for this scan, whose instance is called ``label``."""
        return tuple(
            (label, name, float(ref), float(values.min()), float(100 * share))
            for name, ref, values, share in zip(self.names, self.at_reference, self.min_eigenvalue, self.negative_share())
        )


def curvature_table(scans: dict[str, CurvatureScan]) -> Table:
    """Several :class:`CurvatureScan` records as one table: one row per instance and loss."""
    if not isinstance(scans, Mapping):
        raise ValueError(f"scans must be a mapping of names to CurvatureScan, got {scans!r}")
    for scan in scans.values():
        check_instance("scans", scan, CurvatureScan)
    radius = {scan.radius for scan in scans.values()}
    return Table(
        ("instance", "loss", "at θ_t", "lowest over the ball", "negative at (% of points)"),
        tuple(row for label, scan in scans.items() for row in scan.table_rows(label)),
        caption="Smallest eigenvalue of each population loss's Hessian",
        notes=(f"Over points drawn uniformly from the ball of radius {', '.join(f'{r:g}' for r in sorted(radius))} "
               f"around θ_t; negative: below −{NEGATIVE_CURVATURE_TOLERANCE:g}.",),
    )


def curvature_scan(
    instance: BanditInstance,
    reference_theta: np.ndarray,
    beta: float,
    group_size: int,
    *,
    radius: float,
    n_points: int,
    rng: np.random.Generator,
) -> CurvatureScan:
    """Scan the convexity of the Kimi-style and pairwise population losses (paper appendices I, J.1 and L.2).

    Points are drawn uniformly from the ball of ``radius`` around ``theta_t`` with ``rng``.
    The mean baseline's loss is globally convex and Rebel's Hessian is constant, so their
    smallest eigenvalues are ``>= 0`` up to rounding everywhere; a baseline above ``V_t`` (the
    normalizer's) can make the Hessian indefinite away from the target.
    """
    reference_theta = _check_theta(instance, reference_theta)
    beta = check_positive("beta", beta)
    group_size = check_count("group_size", group_size)
    radius = check_positive("radius", radius)
    n_points = check_count("n_points", n_points)
    rng = check_generator("rng", rng)
    log_reference = log_policy(instance, reference_theta)
    baselines = population_baselines(instance, log_reference, beta, group_size)
    directions = rng.normal(size=(n_points, instance.dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    points = reference_theta + radius * rng.uniform(size=(n_points, 1)) ** (1.0 / instance.dim) * directions
    rebel = float(np.linalg.eigvalsh(rebel_population_hessian(instance, log_reference, beta))[0])

    def smallest(theta: np.ndarray) -> np.ndarray:
        kimi = [
            np.linalg.eigvalsh(kimi_population_hessian(instance, theta, log_reference, beta, b))[0]
            for b in baselines.values()
        ]
        return np.array([*kimi, rebel])

    return CurvatureScan(
        names=LOSSES,
        radius=radius,
        min_eigenvalue=np.stack([smallest(theta) for theta in points], axis=1),
        at_reference=smallest(reference_theta),
    )


@dataclass(frozen=True, eq=False)
class LossSlice:
    """The population losses along ``theta_t + s (theta* - theta_t)``, ``theta*`` the target's parameters.

    Attributes
    ----------
    names
        :data:`LOSSES`.
    steps
        The positions ``s`` (``0``: ``theta_t``; ``1``: the target).
    losses
        ``(n_losses, n_steps)``.
    """

    names: tuple[str, ...]
    steps: np.ndarray
    losses: np.ndarray

    def argmin(self) -> np.ndarray:
        """Position ``s`` of each loss's smallest value along the slice."""
        return self.steps[np.argmin(self.losses, axis=1)]

    def table(self, caption: str = "") -> Table:
        """Per loss: where along the slice it is smallest, its value there and its value at the target (``s = 1``)."""
        target = int(np.argmin(np.abs(self.steps - 1.0)))
        rows = tuple(
            (name, float(self.steps[np.argmin(losses)]), float(losses.min()), float(losses[target]))
            for name, losses in zip(self.names, self.losses)
        )
        return Table(
            ("loss", "minimizer s", "loss there", f"loss at s = {self.steps[target]:g}"),
            rows,
            caption=caption or "Population losses along θ_t + s (θ* − θ_t)",
            notes=("s = 0 is θ_t and s = 1 the target; the minimizer is the best point of the grid of s.",),
        )


def loss_slice(
    instance: BanditInstance, reference_theta: np.ndarray, beta: float, group_size: int, steps: Sequence[float]
) -> LossSlice:
    """Evaluate every population loss of :data:`LOSSES` along the line from ``theta_t`` through the target.

    The target's parameters are ``theta_t + theta_star / beta`` for a linear reward
    (the instance's ``reward_theta``); the instance must have one.
    """
    reference_theta = _check_theta(instance, reference_theta)
    beta = check_positive("beta", beta)
    group_size = check_count("group_size", group_size)
    steps = check_finite_array("steps", steps, ndim=1)
    if steps.size == 0:
        raise ValueError("steps must hold at least one step along the slice")
    if instance.reward_theta is None:
        raise ValueError("instance has no reward_theta: the slice needs a linear reward to place the target")
    log_reference = log_policy(instance, reference_theta)
    baselines = population_baselines(instance, log_reference, beta, group_size)
    direction = instance.reward_theta / beta
    losses = np.stack(
        [_population_losses(instance, reference_theta + s * direction, log_reference, beta, baselines) for s in steps],
        axis=1,
    )
    return LossSlice(names=LOSSES, steps=steps, losses=losses)


# ---------------------------------------------------------------------------------------
# Table 1, measured


TABLE_1_METHODS = ("KimiPO", "KimiPO-Norm")
MAX_COVERAGE_LOSS = float(np.log10(2.0))
"""Largest coverage loss (decades, on any prompt) of a run :func:`table_1` admits: a factor of two."""


@dataclass(frozen=True, eq=False)
class Table1:
    """The paper's Table 1 measured: the cheapest setting of each method for each ``eps``.

    For each method and ``eps`` the setting kept is the one reaching ``eps`` with the fewest
    gradient steps (fewest responses on a tie) among all runs whose coverage never fell by
    more than ``log10 2`` below the base model's on any prompt.

    Attributes
    ----------
    eps
        The accuracy targets, decreasing.
    beta, eta, extra_responses, outer_iterations, responses, gradient_steps
        ``(n_methods, n_eps)`` arrays: the kept setting and its costs to ``eps`` (``nan``/``-1``
        where no run reached it).
    batch_size, inner_steps
        ``N`` and ``K``, shared by every run.
    eta_scale
        ``c`` in the inner learning rate ``eta = c / beta^2``.
    reached
        ``(n_methods, n_eps)``, whether any admissible run reached ``eps``.
    runs
        Every run's ``(method, beta, extra responses)``.
    run_steps
        ``(n_runs, n_eps)``: each run's gradient steps to each ``eps`` (``-1``: not reached).
    run_coverage_loss
        ``(n_runs,)``: the largest fall of any prompt's coverage below the base model's, in decades
        (a run is admissible when it is at most ``log10 2``; ``nan`` if it diverged).
    run_final_suboptimality
        ``(n_runs,)``: ``J* - J`` at the end of each run (``nan`` if it diverged).
    """

    eps: np.ndarray
    beta: np.ndarray
    eta: np.ndarray
    extra_responses: np.ndarray
    outer_iterations: np.ndarray
    responses: np.ndarray
    gradient_steps: np.ndarray
    batch_size: int
    inner_steps: int
    eta_scale: float
    reached: np.ndarray
    runs: tuple[tuple[str, float, int], ...]
    run_steps: np.ndarray
    run_coverage_loss: np.ndarray
    run_final_suboptimality: np.ndarray
    methods: tuple[str, ...] = TABLE_1_METHODS

    def final_suboptimality(self, method: str, beta: float, extra: int = 1) -> float:
        """``J* - J`` at the end of the run of ``method`` at ``beta`` with ``extra`` baseline responses."""
        key = (method, float(beta), int(extra))
        if key not in self.runs:
            raise ValueError(f"no run {key}; the runs are {self.runs}")
        return float(self.run_final_suboptimality[self.runs.index(key)])

    def exponent(self, method: str, quantity: str) -> float:
        """Log-log slope of ``quantity`` (an attribute name) against ``1 / eps`` for ``method``."""
        row = self.methods.index(method)
        keep = self.reached[row]
        values = getattr(self, quantity)[row, keep].astype(float)
        return fit_line(np.log10(1.0 / self.eps[keep]), np.log10(values)).slope

    def summary(self) -> str:
        """The table, one block per method, with the fitted exponents in ``1 / eps``."""
        quantities = ("beta", "extra_responses", "outer_iterations", "responses", "gradient_steps")
        lines = [f"N = {self.batch_size}, K = {self.inner_steps}, eta = {self.eta_scale:g} / beta^2"]
        for row, method in enumerate(self.methods):
            lines.append(f"{method}:  eps      beta   extra  outer it.  responses  grad. steps")
            for j, eps in enumerate(self.eps):
                if not self.reached[row, j]:
                    lines.append(f"        {eps:7.4f}   not reached by any admissible setting")
                    continue
                lines.append(
                    f"        {eps:7.4f}  {self.beta[row, j]:5g}  {self.extra_responses[row, j]:5d}  "
                    f"{self.outer_iterations[row, j]:9d}  {self.responses[row, j]:9d}  {self.gradient_steps[row, j]:11d}"
                )
            if self.reached[row].sum() >= 2:
                fitted = ", ".join(f"{q} ~ (1/eps)^{self.exponent(method, q):.2f}" for q in quantities[2:])
                lines.append(f"        fitted: {fitted}")
        return "\n".join(lines)

    def table(self) -> Table:
        """The measured table as a :class:`~covpo.table.Table`: one row per method and ``eps``.

        Columns: the kept ``beta`` and extra responses (``M`` for KimiPO, ``G`` for
        KimiPO-Norm), and the outer iterations, responses and gradient steps to ``eps``; a
        dash where no admissible run reached ``eps``. The notes give ``N``, ``K``, ``eta``,
        the admissibility rule and each method's fitted exponents in ``1 / eps``.
        """
        rows = []
        for row, method in enumerate(self.methods):
            for j, eps in enumerate(self.eps):
                if not self.reached[row, j]:
                    rows.append((method, float(eps), None, None, None, None, None))
                    continue
                rows.append((
                    method, float(eps), float(self.beta[row, j]), int(self.extra_responses[row, j]),
                    int(self.outer_iterations[row, j]), int(self.responses[row, j]), int(self.gradient_steps[row, j]),
                ))
        quantities = (("outer_iterations", "outer iterations"), ("responses", "responses"),
                      ("gradient_steps", "gradient steps"))
        fits = tuple(
            f"{method}: " + ", ".join(f"{label} ~ (1/ε)^{round(self.exponent(method, q), 2) + 0.0:.2f}" for q, label in quantities) + "."
            for row, method in enumerate(self.methods)
            if self.reached[row].sum() >= 2
        )
        return Table(
            ("method", "ε", "β", "extra responses", "outer iterations", "responses", "gradient steps"),
            tuple(rows),
            caption=f"Table 1, measured: the cheapest admissible setting per ε (N = {self.batch_size}, "
                    f"K = {self.inner_steps}, η = {self.eta_scale:g}/β²)",
            notes=(
                "Extra responses: M for KimiPO, G for KimiPO-Norm. Admissible: no prompt's coverage falls "
                "below half the base model's. Costs are counted up to the first ε-optimal iterate; a dash: "
                "no admissible run reached ε.",
                *fits,
            ),
        )

    def runs_table(self, method: str) -> Table:
        """Every run of ``method``: its setting, gradient steps to each ``eps`` and the coverage it lost."""
        if method not in self.methods:
            raise ValueError(f"method must be one of {self.methods}, got {method!r}")
        rows = tuple(
            (float(beta), int(extra), *(int(s) if s >= 0 else None for s in steps),
             None if np.isnan(loss) else float(loss), bool(loss <= MAX_COVERAGE_LOSS))
            for (name, beta, extra), steps, loss in zip(self.runs, self.run_steps, self.run_coverage_loss)
            if name == method
        )
        return Table(
            ("β", "extra responses", *(f"steps to ε = {eps:g}" for eps in self.eps),
             "coverage lost (decades)", "admissible"),
            rows,
            caption=f"Every {method} run: gradient steps to each ε",
            notes=("A dash: the run never reached that ε (or, in the coverage column, diverged). "
                   "Admissible: coverage lost at most log10 2 decades, a factor of two.",),
        )


def _table_1_run(
    instance: BanditInstance,
    method: str,
    beta: float,
    extra: int,
    settings: tuple[int, int, int, float],
    eps: np.ndarray,
    seed: tuple[int, ...],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """One Table-1 run: iterations, responses and steps to each ``eps``, coverage loss in decades, final ``J* - J``."""
    n_iterations, batch_size, inner_steps, eta_scale = settings
    eta = eta_scale / beta**2
    hyperparameters = {
        "beta": beta, "n_iterations": n_iterations, "batch_size": batch_size, "inner_steps": inner_steps,
        "extra_responses": extra,
    }
    algorithm = "kimipo" if method == "KimiPO" else "kimipo_norm"
    trajectory = run_unless_diverged(
        Method(method, algorithm, hyperparameters, (eta,)), instance, eta, np.random.default_rng(list(seed))
    )
    if trajectory is None:
        missing = np.full(eps.size, -1)
        return missing, missing, missing, float("nan"), float("nan")
    base = log_coverage(instance, log_policy(instance, instance.base_theta))
    loss = trajectory.coverage_loss(base)
    iterations, responses, steps = [], [], []
    for target in eps:
        index = trajectory.first_eps_optimal(float(target))
        iterations.append(-1 if index is None else int(trajectory.reference_resets[index]))
        responses.append(-1 if index is None else int(trajectory.responses_sampled[index]))
        steps.append(-1 if index is None else int(trajectory.gradient_steps[index]))
    final = float(trajectory.suboptimality[-1])
    return np.array(iterations), np.array(responses), np.array(steps), loss, final


def table_1(
    instance: BanditInstance,
    eps: Sequence[float],
    *,
    betas: Sequence[float],
    group_sizes: Sequence[int],
    batch_size: int,
    inner_steps: int,
    eta_scale: float,
    n_iterations: int,
    seed: int,
) -> Table1:
    """Measure the paper's Table 1 (appendix I.2): parameters and costs of KimiPO and KimiPO-Norm against ``eps``.

    KimiPO (``M = 1`` extra response, as in the paper's analysis) runs at every ``beta``;
    KimiPO-Norm at every ``beta`` and every ``G`` of ``group_sizes``. All runs share ``N``,
    ``K`` and ``eta = eta_scale / beta^2`` (the losses' curvature grows like ``beta^2``) and
    last ``n_iterations`` outer iterations; each run reads its costs to every ``eps`` off one
    trajectory. Run ``i`` draws from ``np.random.default_rng([seed, i])``. The runs go
    through :func:`covpo.experiments.parallel.run_tasks`.

    Parameters
    ----------
    instance
        The bandit.
    eps
        Accuracy targets, each ``> 0``.
    betas, group_sizes
        The grids searched.
    batch_size, inner_steps, eta_scale, n_iterations
        ``N``, ``K``, ``c`` in ``eta = c / beta^2``, and ``T``.
    seed
        Base seed.
    """
    instance = check_instance("instance", instance, BanditInstance)
    eps = np.sort(check_positive_grid("eps", eps))[::-1]
    betas = check_positive_grid("betas", betas)
    group_sizes = check_positive_grid("group_sizes", group_sizes, integers=True)
    seed = check_seed("seed", seed)
    settings = (
        check_count("n_iterations", n_iterations),
        check_count("batch_size", batch_size),
        check_count("inner_steps", inner_steps),
        check_positive("eta_scale", eta_scale),
    )
    configs = [("KimiPO", float(b), 1) for b in betas]
    configs += [("KimiPO-Norm", float(b), int(g)) for b in betas for g in group_sizes]
    tasks = [(instance, m, b, g, settings, eps, (seed, i)) for i, (m, b, g) in enumerate(configs)]
    results = run_tasks(_table_1_run, tasks, "Table 1 runs")
    shape = (len(TABLE_1_METHODS), eps.size)
    table = {name: np.full(shape, -1, dtype=np.int64) for name in ("extra", "iterations", "responses", "steps")}
    beta = np.full(shape, np.nan)
    for (method, b, g), (iterations, responses, steps, loss, _) in zip(configs, results):
        row = TABLE_1_METHODS.index(method)
        for j in range(eps.size):
            if not loss <= MAX_COVERAGE_LOSS or steps[j] < 0:
                continue
            key = (steps[j], responses[j])
            current = (table["steps"][row, j], table["responses"][row, j])
            if current[0] < 0 or key < current:
                beta[row, j] = b
                table["extra"][row, j], table["iterations"][row, j] = g, iterations[j]
                table["responses"][row, j], table["steps"][row, j] = responses[j], steps[j]
    return Table1(
        eps=eps,
        beta=beta,
        eta=eta_scale / beta**2,
        extra_responses=table["extra"],
        outer_iterations=table["iterations"],
        responses=table["responses"],
        gradient_steps=table["steps"],
        batch_size=settings[1],
        inner_steps=settings[2],
        eta_scale=settings[3],
        reached=table["steps"] >= 0,
        runs=tuple(configs),
        run_steps=np.stack([result[2] for result in results]),
        run_coverage_loss=np.array([result[3] for result in results]),
        run_final_suboptimality=np.array([result[4] for result in results]),
    )


# ---------------------------------------------------------------------------------------
# The mean-squared-error criterion along a run (paper section 4.1, appendices E and L)


SQUARED_LOSS_ALGORITHMS = ("KimiPO", "KimiPO-Norm", "Rebel-OnPolicy")
"""The trajectory names of the three squared-loss runs, the ones :func:`mse_path` measures."""


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
        ``E_x MSE_t(x)`` per step (:func:`covpo.algorithms.squared_loss.regression_mse`), shape ``(T,)``.
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
        (:func:`covpo.algorithms.squared_loss.mse_coverage_bound`), shape ``(T, n_prompts)``.
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
    if trajectory.algorithm == "Rebel-OnPolicy":
        return rebel_population_loss(instance, theta, log_reference, beta)
    if trajectory.algorithm == "KimiPO":
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
    without bias, and the objective controls the MSE of :func:`covpo.algorithms.squared_loss.regression_mse`.
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


# ---------------------------------------------------------------------------------------
# Costs against coverage, on chapter 4's instance families


def squared_loss_methods(family: str) -> tuple[Method, ...]:
    """The three squared-loss methods with chapter 5's settings, plus chapter 4's PPO-Lite for reference.

    ``family`` is ``"random"`` or ``"collapse"`` (the families of
    :mod:`covpo.families`). Every method uses ``beta = 0.5`` and ``eta = 2 / beta^2``.
    On the random family: ``N = 256``, ``K = 10``, 40 outer iterations, ``G = 8`` for
    KimiPO-Norm. On the collapse family: ``K = 40``, 25 outer iterations, ``N = 256`` for
    Rebel-OnPolicy and ``N = 1024`` for the two Kimi-style methods, which lose decades of
    coverage at ``N = 256`` there (:func:`batch_size_study`).
    """
    family = check_option("family", family, ("random", "collapse"))
    beta = 0.5
    etas = (2.0 / beta**2,)
    if family == "random":
        common = {"beta": beta, "batch_size": 256, "inner_steps": 10, "n_iterations": 40}
        reference = random_family_methods()[1]
        kimi_batch = 256
    else:
        common = {"beta": beta, "batch_size": 256, "inner_steps": 40, "n_iterations": 25}
        reference = collapse_family_methods()[1]
        kimi_batch = 1024
    return (
        Method("KimiPO", "kimipo", {**common, "batch_size": kimi_batch, "extra_responses": 1}, etas),
        Method("KimiPO-Norm", "kimipo_norm", {**common, "batch_size": kimi_batch, "extra_responses": 8}, etas),
        Method("Rebel-OnPolicy", "rebel_onpolicy", common, etas),
        reference,
    )


@dataclass(frozen=True, eq=False)
class BatchSizeStudy:
    """Coverage loss and success of methods over batch sizes and seeds on one instance.

    Attributes
    ----------
    names
        The methods' names.
    batch_sizes
        The ``N`` tried.
    seeds
        The seeds.
    coverage_loss
        ``(n_methods, n_batch_sizes, n_seeds)``: the largest fall of any prompt's coverage below
        the base model's, in decades (``nan`` where the run diverged).
    reached
        Same shape: whether the run became ``eps``-optimal.
    paths
        Each run's :class:`MSEPath` (``None`` where it diverged or is not a squared-loss run), in the order of the runs:
        method, then batch size, then seed; see :meth:`path`.
    """

    names: tuple[str, ...]
    batch_sizes: np.ndarray
    seeds: tuple[int, ...]
    coverage_loss: np.ndarray
    reached: np.ndarray
    paths: tuple[MSEPath | None, ...] = ()

    def path(self, method: int, batch: int, seed: int) -> MSEPath | None:
        """The :class:`MSEPath` of run ``(method, batch size, seed)`` (indices), ``None`` if it diverged."""
        return self.paths[(method * self.batch_sizes.size + batch) * len(self.seeds) + seed]

    def mse_table(self, caption: str = "") -> Table:
        """Per method and ``N``, over seeds: the largest step MSE, the range of ``2 beta^2 KL / MSE``, the bound and the fall."""
        rows = []
        for i, name in enumerate(self.names):
            for j, batch in enumerate(self.batch_sizes):
                paths = [p for p in (self.path(i, j, k) for k in range(len(self.seeds))) if p is not None]
                if not paths:
                    continue
                ratios = np.concatenate([2.0 * p.beta**2 * p.inner_kl / p.mse for p in paths])
                rows.append((
                    name, int(batch), float(max(p.mse.max() for p in paths)),
                    float(ratios.min()), float(ratios.max()),
                    float(max(p.accumulated_bound.max() for p in paths)),
                    float(max(p.coverage_fall.max() for p in paths)),
                ))
        return Table(
            ("method", "N (prompts)", "largest step MSE", "smallest 2β²KL/MSE", "largest 2β²KL/MSE",
             "largest bound on the fall (decades)", "largest fall (decades)"),
            tuple(rows),
            caption=caption or f"The MSE criterion over {len(self.seeds)} seeds",
            notes=("Step MSE: E_x E_{π_t} (β log(π_{t+1}/π*_{t+1}))², the largest over steps and seeds.",
                   "Bound: the sum over steps of sqrt(MSE_t(x)/c_t(x))/β on the worst prompt, in decades.",
                   "Fall: the largest fall of any prompt's coverage below the base model's."),
        )

    def summary(self) -> str:
        """Per method and ``N``: the runs reaching eps, the runs losing more than a factor of two, the worst loss."""
        lines = []
        for i, name in enumerate(self.names):
            for j, n in enumerate(self.batch_sizes):
                losses = self.coverage_loss[i, j]
                lines.append(
                    f"{name:16} N = {n:5d}: eps reached {int(self.reached[i, j].sum())}/{len(self.seeds)}, "
                    f"coverage lost beyond a factor 2 in {int(np.sum(losses > MAX_COVERAGE_LOSS))}, "
                    f"worst loss {np.nanmax(losses):.2f} decades"
                )
        return "\n".join(lines)

    def table(self, caption: str = "") -> Table:
        """Per method and ``N``: runs reaching eps, runs losing more than a factor of two, the worst loss."""
        n = len(self.seeds)
        rows = tuple(
            (name, int(batch), int(self.reached[i, j].sum()),
             int(np.sum(self.coverage_loss[i, j] > MAX_COVERAGE_LOSS)), float(np.nanmax(self.coverage_loss[i, j])))
            for i, name in enumerate(self.names)
            for j, batch in enumerate(self.batch_sizes)
        )
        return Table(
            ("method", "N (prompts)", f"runs reaching ε (of {n})", f"runs losing > 2× (of {n})",
             "worst coverage loss (decades)"),
            rows,
            caption=caption or f"Coverage lost against the batch size, over {n} seeds",
            notes=("Losing > 2×: some prompt's coverage fell below half the base model's (log10 2 decades).",),
        )


def batch_size_study(
    instance: BanditInstance,
    methods: Sequence[Method],
    batch_sizes: Sequence[int],
    *,
    eps: float,
    seeds: Sequence[int],
) -> BatchSizeStudy:
    """Run each method at each batch size ``N`` (all else as in its settings) for every seed.

    Run ``(i, j, k)`` draws from ``np.random.default_rng([seed_k, i, j])`` and uses the first
    learning rate of the method's grid; the runs go through :func:`covpo.experiments.parallel.run_tasks`.
    Each squared-loss run is also measured in the MSE criterion's terms (:func:`mse_path`, paper
    section 4.1); other methods' runs get no :class:`MSEPath`.
    """
    instance = check_instance("instance", instance, BanditInstance)
    methods = check_methods("methods", methods)
    batch_sizes = check_positive_grid("batch_sizes", batch_sizes, integers=True)
    eps = check_positive("eps", eps)
    seeds = check_seeds("seeds", seeds)
    coordinates = [
        (i, j, k) for i in range(len(methods)) for j in range(batch_sizes.size) for k in range(len(seeds))
    ]
    tasks = [
        (methods[i].with_hyperparameters(batch_size=int(batch_sizes[j])), instance, methods[i].learning_rates[0],
         (seeds[k], i, j), eps)
        for i, j, k in coordinates
    ]
    results = run_tasks(_batch_size_run, tasks, "batch-size runs")
    summaries = [None if r is None else r[0] for r in results]
    shape = (len(methods), batch_sizes.size, len(seeds))
    return BatchSizeStudy(
        names=tuple(m.label for m in methods),
        batch_sizes=batch_sizes,
        seeds=seeds,
        coverage_loss=np.array([np.nan if r is None else r.coverage_loss for r in summaries]).reshape(shape),
        reached=np.array([r is not None and r.responses_to_eps is not None for r in summaries]).reshape(shape),
        paths=tuple(None if r is None else r[1] for r in results),
    )
