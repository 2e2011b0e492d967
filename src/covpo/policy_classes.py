"""The small protocol through which every algorithm differentiates its policy (paper section 2.2).

The algorithms of :mod:`covpo.algorithms` touch the policy class in three places only: its
table of log-probabilities, a batch average of scores ``mean_i c_i grad log pi(y_i|x_i)``, and
the population sum ``E_x E_{y~pi}[(A(x, y) - E_pi A) grad log pi(y|x)]`` for an advantage table
``A``. :class:`PolicyClass` names those three; :class:`SoftmaxLinear` is the paper's class over
the instance's features, and the laboratories in :mod:`covpo.labs` supply others (a two-layer
network, a token-level autoregressive policy), so that one implementation of each algorithm
serves every class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from covpo.batches import BatchTerms, ResponseBatch
from covpo.instances import BanditInstance
from covpo.policies import check_bandit, feature_sums, unchecked_log_policy
from covpo.validation import check_policy_class, check_theta


class PolicyClass(Protocol):
    """A differentiable policy class ``pi_params(y|x)`` over an instance's prompts and responses.

    Attributes
    ----------
    initial_params
        The base model's parameters ``theta_0``, a flat vector.
    """

    initial_params: np.ndarray

    def log_policy(self, params: np.ndarray) -> np.ndarray:
        """``log pi_params(y|x)``, shape ``(n_prompts, n_responses)``."""
        ...

    def batch_score_average(
        self, params: np.ndarray, batch: ResponseBatch, coefficients: np.ndarray, log_probs: np.ndarray
    ) -> np.ndarray:
        """``mean_i c_i grad log pi_params(y_i|x_i)`` over ``batch``; ``log_probs`` is :meth:`log_policy` at ``params``."""
        ...

    def population_score_sum(self, params: np.ndarray, advantage: np.ndarray, log_probs: np.ndarray) -> np.ndarray:
        """``E_x E_{y~pi}[(A(x, y) - E_pi A) grad log pi_params(y|x)]`` for the table ``A = advantage``."""
        ...


@dataclass(frozen=True, eq=False)
class SoftmaxLinear:
    """The paper's class: ``pi_theta(y|x) proportional to exp <theta, phi(x, y)>`` (paper section 2.2).

    Scores are ``grad log pi_theta(y|x) = phi(x, y) - phibar_theta(x)`` with
    ``phibar_theta(x) = E_{pi_theta} phi(x, .)``.
    """

    instance: BanditInstance

    def __post_init__(self) -> None:
        check_bandit("instance", self.instance)

    @property
    def initial_params(self) -> np.ndarray:
        """``theta_0``, the base model's parameters."""
        return np.array(self.instance.base_theta, dtype=float)

    def log_policy(self, params: np.ndarray) -> np.ndarray:
        """``log pi_theta(y|x)`` (:func:`covpo.policies.log_policy`)."""
        return unchecked_log_policy(self.instance, check_theta("params", params, (self.instance.dim,)))

    def batch_score_average(
        self, params: np.ndarray, batch: ResponseBatch, coefficients: np.ndarray, log_probs: np.ndarray
    ) -> np.ndarray:
        """``mean_i c_i (phi(x_i, y_i) - phibar_theta(x_i))``.

        The algorithms call this in their inner loops with arrays they computed from validated
        arguments, so nothing is checked here: a non-finite coefficient is a diverging run, and
        the step that follows raises ``FloatingPointError``.
        """
        return BatchTerms(instance=self.instance, batch=batch, log_probs=log_probs).score_average(coefficients)

    def population_score_sum(self, params: np.ndarray, advantage: np.ndarray, log_probs: np.ndarray) -> np.ndarray:
        """``E_x E_{y~pi}[(A - E_pi A)(phi - phibar)]``, summed over the feature table.

        Unchecked, like :meth:`batch_score_average`, for the same reason.
        """
        probs = np.exp(log_probs)
        centered = advantage - np.sum(probs * advantage, axis=1, keepdims=True)
        weights = self.instance.prompt_probs[:, None] * probs * centered
        return feature_sums(self.instance, weights)


def policy_class(name: str, instance: BanditInstance, policy: object) -> PolicyClass:
    """``policy`` checked as a :class:`PolicyClass`, or the softmax-linear class over ``instance`` for ``None``.

    The check is :func:`covpo.validation.check_policy_class`, the package's one for policy classes.
    """
    return SoftmaxLinear(instance) if policy is None else check_policy_class(name, policy)
