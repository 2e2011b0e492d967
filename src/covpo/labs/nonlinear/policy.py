"""The two-layer network as a policy class, so the package's own algorithms run on it unchanged."""

from __future__ import annotations

import numpy as np

from covpo.batches import ResponseBatch
from covpo.instances import BanditInstance

from .network import (
    ForwardPass,
    TwoLayerNetwork,
    _backprop,
    _batch_sensitivity,
    _check_network,
    _population_sensitivity,
    forward,
)


class NetworkPolicy:
    """The two-layer network on ``instance`` as a :class:`~covpo.policy_classes.PolicyClass`.

    The network is a :class:`~covpo.labs.nonlinear.network.TwoLayerNetwork`. The package's algorithms see it only
    through this protocol: the log-probability table (:func:`~covpo.labs.nonlinear.network.forward`) and
    the two score sums, each a logit sensitivity (:func:`~covpo.labs.nonlinear.network.batch_sensitivity`,
    :func:`~covpo.labs.nonlinear.network.population_sensitivity`) pulled back through the hand backward
    pass of :func:`~covpo.labs.nonlinear.network.logit_backprop`. The last forward pass is kept, so a
    gradient at the parameters whose log-probabilities were just computed does not repeat it.

    Parameters
    ----------
    instance
        The bandit whose features the network reads.
    network
        The architecture; ``network.dim`` must be the instance's feature dimension.
    initial_params
        The flat starting parameters, e.g. from :func:`~covpo.labs.nonlinear.network.initial_parameters`;
        the algorithms start here and take this policy as the base model ``pi_0`` of their
        recorded ``kl_to_base``.
    """

    def __init__(self, instance: BanditInstance, network: TwoLayerNetwork, initial_params: np.ndarray) -> None:
        self.instance = instance
        self.network = _check_network(instance, network)
        self.initial_params = network.check_params(initial_params, "initial_params").copy()
        self._last: tuple[np.ndarray, ForwardPass] | None = None

    def forward(self, params: np.ndarray) -> ForwardPass:
        """The forward pass at ``params``, reused when ``params`` equals the last call's.

        The pass is :func:`~covpo.labs.nonlinear.network.forward`.
        """
        if self._last is None or not np.array_equal(self._last[0], params):
            self._last = (np.array(params, dtype=float), forward(self.instance, self.network, params))
        return self._last[1]

    def log_policy(self, params: np.ndarray) -> np.ndarray:
        """``log pi_params(y|x)``, shape ``(n_prompts, n_responses)``, by log-softmax of the logits."""
        return self.forward(params).log_probs

    def batch_score_average(
        self, params: np.ndarray, batch: ResponseBatch, coefficients: np.ndarray, log_probs: np.ndarray
    ) -> np.ndarray:
        """``mean_i c_i grad log pi_params(y_i|x_i)``: backprop of the batch's logit sensitivity.

        The sensitivity is :func:`~covpo.labs.nonlinear.network.batch_sensitivity`.
        """
        sensitivity = _batch_sensitivity(self.instance, log_probs, batch.prompts, batch.responses, coefficients)
        return _backprop(self.instance, self.network, params, sensitivity, self.forward(params).hidden)

    def population_score_sum(self, params: np.ndarray, advantage: np.ndarray, log_probs: np.ndarray) -> np.ndarray:
        """``E_x E_{y~pi}[(A - E_pi A) grad log pi_params]``: backprop of the population's logit sensitivity.

        The sensitivity is :func:`~covpo.labs.nonlinear.network.population_sensitivity`.
        """
        sensitivity = _population_sensitivity(self.instance, log_probs, advantage)
        return _backprop(self.instance, self.network, params, sensitivity, self.forward(params).hidden)
