"""The squared-loss methods' inner loops against the paper's inner-loop results (appendices J.2, K.3 and L.3).

:func:`squared_loss_inner_loops` runs KimiPO, KimiPO-Norm or Rebel-OnPolicy once and measures
every inner iterate ``theta_{t,k}`` of every outer iteration: the step's mean-squared error
against the exact mirror-descent step (section 4.1; the form of the error is our
reconstruction, :func:`covpo.experiments.population.regression_mse`) and its distance to the
target parameter ``theta*_{t+1} = theta_t + theta_star / beta``, relative to where the loop
started.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo import run
from covpo.algorithms.mirror_descent import exact_target_theta
from covpo.experiments.population import regression_mse
from covpo.instances import BanditInstance
from covpo.policies import log_policy
from covpo.validation import check_instance, check_option, check_seed

from covpo.experiments.sweeps import Method

SQUARED_LOSS_ALGORITHMS = ("kimipo", "kimipo_norm", "rebel_onpolicy")
"""The registry entries whose inner loops this module measures."""


@dataclass(frozen=True, eq=False)
class SquaredLossInnerLoops:
    """Every inner iterate of one squared-loss run, measured (paper appendices J.2, K.3, L.3).

    Attributes
    ----------
    label
        The method's label.
    mse
        ``E_x MSE_t(x)`` of the iterate ``theta_{t,k}`` against the step's target, shape
        ``(T, K + 1)``: column 0 is the reference ``pi_t`` itself, column ``K`` the loop's output.
    stray
        ``||theta_{t,k} - theta*_{t+1}|| / ||theta_t - theta*_{t+1}||``, same shape (column 0 is 1).
    """

    label: str
    mse: np.ndarray
    stray: np.ndarray

    @property
    def start_mse(self) -> np.ndarray:
        """The MSE of each outer iteration's reference, where its inner loop starts."""
        return self.mse[:, 0]

    @property
    def end_mse(self) -> np.ndarray:
        """The MSE of each inner loop's output."""
        return self.mse[:, -1]


def squared_loss_inner_loops(method: Method, instance: BanditInstance, *, seed: int) -> SquaredLossInnerLoops:
    """Run ``method`` (KimiPO, KimiPO-Norm or Rebel-OnPolicy) at its first learning rate from ``np.random.default_rng(seed)``.

    ``instance`` must be realizable, so that every step's target is the softmax-linear policy of
    :func:`~covpo.algorithms.mirror_descent.exact_target_theta`.
    """
    check_instance("method", method, Method)
    check_option("method.algorithm", method.algorithm, SQUARED_LOSS_ALGORITHMS)
    instance = check_instance("instance", instance, BanditInstance)
    seed = check_seed("seed", seed)
    beta = float(method.hyperparameters["beta"])
    inner_steps = int(method.hyperparameters["inner_steps"])
    shape = (int(method.hyperparameters["n_iterations"]), inner_steps + 1)
    mse, stray = np.zeros(shape), np.zeros(shape)
    state: dict[str, object] = {}

    def observe(step) -> None:
        if step.inner_step == 0:
            state["target"] = exact_target_theta(instance, step.theta, beta)
            state["radius"] = float(np.linalg.norm(step.theta - state["target"]))
        per_prompt = regression_mse(instance, step.log_sampling, log_policy(instance, step.theta), beta)
        mse[step.iteration, step.inner_step] = float(instance.prompt_probs @ per_prompt)
        stray[step.iteration, step.inner_step] = float(np.linalg.norm(step.theta - state["target"])) / state["radius"]

    run(
        method.algorithm, instance, rng=np.random.default_rng(seed), eta=method.learning_rates[0],
        on_inner_step=observe, **method.hyperparameters,
    )
    return SquaredLossInnerLoops(label=method.label, mse=mse, stray=stray)
