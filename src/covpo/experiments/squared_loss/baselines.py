"""How far each baseline's expectation sits from the normalizer, and the error it leaves in one exactly solved APMD step (paper section 4.2, appendix I.2).

:func:`baseline_bias_sweep` sweeps the mean baseline against ``beta`` and the normalizer
baseline against ``G``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covpo.algorithms.steps import check_squared_loss_beta
from covpo.fits import fit_line
from covpo.instances import BanditInstance
from covpo.objectives import regularized_optimum
from covpo.policies import kl_per_prompt, log_policy
from covpo.experiments.population import (
    kimi_population_minimizer,
    mean_baseline_bias,
    mean_baseline_bias_approximation,
    mean_baseline_moments,
    normalizer,
    normalizer_baseline_bias_approximation,
    normalizer_baseline_moments,
)
from covpo.table import Table
from covpo.validation import check_positive_grid
from covpo.experiments.squared_loss.checks import _check_theta, _weighted_mean


@dataclass(frozen=True, eq=False)
class BaselineBiasSweep:
    """Bias of both baselines against the normalizer, and the error of one exactly solved step.

    All biases are ``E_x |E bhat(x) - b_t(x)|`` (``rho``-weighted); step errors are
    ``E_x KL(pi_min || pi*_{t+1})`` where ``pi_min`` minimizes the population Kimi loss with the
    baseline's expectation (:func:`covpo.experiments.population.kimi_population_minimizer`).

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
                ("β", r"bias $\lvert V_t - b_t \rvert$", r"$\mathrm{Var}_t(r) / 2\beta$", "step error (KL)"),
                tuple((float(b), float(x), float(a), float(e)) for b, x, a, e in rows),
                caption="KimiPO's mean baseline against β",
                notes=(f"Log-log slopes in β: bias {self.slope('mean_bias'):.2f}, "
                       f"step error {self.slope('mean_step_error'):.2f}.",),
            )
        if baseline == "normalizer":
            rows = zip(self.group_sizes, self.normalizer_bias, self.normalizer_bias_approximation,
                       self.normalizer_step_error)
            return Table(
                ("G (extra responses)", r"bias $\lvert \mathbb{E}\,\hat b - b_t \rvert$", "first order in 1/G", "step error (KL)"),
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
