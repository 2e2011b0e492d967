"""The two-layer network, its exact forward pass and hand-written backward pass, and its start at the base model.

``f(x, y) = <v, tanh(W phi(x, y) + b)> + <theta, phi(x, y)>`` with ``pi = softmax_y f``; its
parameters ``(W, b, v, theta)`` travel as one flat vector (:meth:`TwoLayerNetwork.pack`,
:meth:`TwoLayerNetwork.unpack`). :func:`logit_backprop` turns the logit sensitivity
``dL/df(x, y)`` of any objective into its exact parameter gradient;
:func:`population_sensitivity` and :func:`batch_sensitivity` are the sensitivities of the
population and batch score sums (paper section 2.2); :func:`initial_parameters` starts the
network (close to) the base model. The network, its initialization and every constant are ours.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import minimize

from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, expected_kl, log_softmax_rows
from covpo.validation import (
    check_count,
    check_finite_array,
    check_flag,
    check_generator,
    check_index_array,
    check_instance,
    check_log_distribution,
    check_positive,
    check_shape,
    check_theta,
)

DEFAULT_WIDTH = 16
"""Hidden width of the network in :func:`~covpo.labs.nonlinear.experiment.nonlinear_experiment`."""
DEFAULT_HIDDEN_SCALE = 1.0
"""Standard deviation of the initial pre-activations ``W phi`` for features of the largest norm."""
DEFAULT_OUTPUT_SCALE = 0.01
"""Scale of the initial output weights ``v``: ``KL(pi_0 || pi_net) <= DEFAULT_OUTPUT_SCALE**2 / 2`` roughly."""
BASE_FIT_MAX_ITERATIONS = 500
"""L-BFGS iterations when a network without skip term is fitted to the base model."""
SPARSE_DENSITY = 0.25
"""Feature tables with at most this fraction of non-zeros (one-hot, tabular) are multiplied as sparse matrices."""


# ---------------------------------------------------------------------------------------
# The network and its parameters


@dataclass(frozen=True, eq=False)
class NetworkParameters:
    """The parameters of :class:`TwoLayerNetwork`, unpacked (read-only views of the flat vector).

    Attributes
    ----------
    hidden_weights
        ``W``, shape ``(width, dim)``.
    hidden_bias
        ``b``, shape ``(width,)``.
    output_weights
        ``v``, shape ``(width,)``.
    skip_weights
        ``theta`` of the linear skip term, shape ``(dim,)``; ``None`` for a network without one.
    """

    hidden_weights: np.ndarray
    hidden_bias: np.ndarray
    output_weights: np.ndarray
    skip_weights: np.ndarray | None


@dataclass(frozen=True)
class TwoLayerNetwork:
    """The architecture ``f(x, y) = <v, tanh(W phi(x, y) + b)> (+ <theta, phi(x, y)>)``.

    A flat parameter vector holds ``W`` (row-major), then ``b``, then ``v``, then ``theta``
    when ``skip`` is set.

    Attributes
    ----------
    dim
        Feature dimension ``d`` of the instance.
    width
        Hidden width ``h``.
    skip
        Whether the logit has the linear skip term ``<theta, phi>``.
    """

    dim: int
    width: int = DEFAULT_WIDTH
    skip: bool = True

    def __post_init__(self) -> None:
        check_count("dim", self.dim)
        check_count("width", self.width)
        object.__setattr__(self, "skip", check_flag("skip", self.skip))

    @property
    def n_params(self) -> int:
        """Length of the flat parameter vector, ``h d + 2 h (+ d)``."""
        return self.width * self.dim + 2 * self.width + (self.dim if self.skip else 0)

    def check_params(self, params: np.ndarray, name: str = "params") -> np.ndarray:
        """Return ``params`` as a finite float vector of length :attr:`n_params`, else raise naming ``name``."""
        return check_theta(name, params, (self.n_params,))

    def unpack(self, params: np.ndarray) -> NetworkParameters:
        """Split a flat vector into ``W, b, v, theta`` (views, not copies)."""
        params = self.check_params(params)
        h, d = self.width, self.dim
        ends = np.cumsum([h * d, h, h])
        return NetworkParameters(
            hidden_weights=params[: ends[0]].reshape(h, d),
            hidden_bias=params[ends[0] : ends[1]],
            output_weights=params[ends[1] : ends[2]],
            skip_weights=params[ends[2] :] if self.skip else None,
        )

    def pack(
        self,
        hidden_weights: np.ndarray,
        hidden_bias: np.ndarray,
        output_weights: np.ndarray,
        skip_weights: np.ndarray | None = None,
    ) -> np.ndarray:
        """The flat vector of ``W (width, dim), b (width,), v (width,)`` and ``theta (dim,)`` if ``skip``."""
        h, d = self.width, self.dim
        parts = [
            check_shape("hidden_weights", check_finite_array("hidden_weights", hidden_weights, ndim=2), (h, d)),
            check_shape("hidden_bias", check_finite_array("hidden_bias", hidden_bias, ndim=1), (h,)),
            check_shape("output_weights", check_finite_array("output_weights", output_weights, ndim=1), (h,)),
        ]
        if self.skip:
            if skip_weights is None:
                raise ValueError("skip_weights must be given for a network with a skip term, got None")
            parts.append(check_shape("skip_weights", check_finite_array("skip_weights", skip_weights, ndim=1), (d,)))
        elif skip_weights is not None:
            raise ValueError("skip_weights must be None for a network without a skip term")
        return np.concatenate([part.ravel() for part in parts])


def network_for(instance: BanditInstance, width: int = DEFAULT_WIDTH, skip: bool = True) -> TwoLayerNetwork:
    """The :class:`TwoLayerNetwork` of hidden width ``width`` on ``instance``'s features."""
    instance = check_instance("instance", instance, BanditInstance)
    return TwoLayerNetwork(dim=instance.dim, width=width, skip=skip)


def _check_network(instance: BanditInstance, network: TwoLayerNetwork) -> TwoLayerNetwork:
    check_instance("instance", instance, BanditInstance)
    if not isinstance(network, TwoLayerNetwork):
        raise ValueError(f"network must be a TwoLayerNetwork, got {type(network).__name__}")
    if network.dim != instance.dim:
        raise ValueError(f"network.dim must equal the instance's feature dimension {instance.dim}, got {network.dim}")
    return network


# ---------------------------------------------------------------------------------------
# Forward and backward passes


@dataclass(frozen=True, eq=False)
class ForwardPass:
    """What the backward pass needs: the hidden activations and the policy's log-probabilities.

    Attributes
    ----------
    hidden
        ``tanh(W phi(x, y) + b)``, shape ``(n_prompts, n_responses, width)``.
    log_probs
        ``log pi(y|x)``, shape ``(n_prompts, n_responses)``.
    """

    hidden: np.ndarray
    log_probs: np.ndarray


@functools.lru_cache(maxsize=8)
def feature_matrix(instance: BanditInstance) -> np.ndarray | sparse.csr_array:
    """The features as one ``(n_prompts n_responses, dim)`` matrix, sparse when mostly zeros.

    Tabular instances have one-hot features; as a sparse matrix their products with ``W``
    cost ``O(n_prompts n_responses width)`` instead of ``O(n_prompts n_responses dim width)``.
    Instances are immutable, so the matrix is computed once per instance and cached.
    """
    check_instance("instance", instance, BanditInstance)
    flat = instance.features.reshape(instance.n_prompts * instance.n_responses, instance.dim)
    if np.count_nonzero(flat) <= SPARSE_DENSITY * flat.size:
        return sparse.csr_array(flat)
    return flat


def forward(instance: BanditInstance, network: TwoLayerNetwork, params: np.ndarray) -> ForwardPass:
    """Hidden activations and ``log pi = log_softmax_y f(x, y)``, all prompts and responses at once."""
    network = _check_network(instance, network)
    parts = network.unpack(params)
    features = feature_matrix(instance)
    pre_activation = np.asarray(features @ parts.hidden_weights.T) + parts.hidden_bias
    hidden = np.tanh(pre_activation).reshape(instance.n_prompts, instance.n_responses, network.width)
    logits = hidden @ parts.output_weights
    if parts.skip_weights is not None:
        logits = logits + np.asarray(features @ parts.skip_weights).reshape(logits.shape)
    return ForwardPass(hidden=hidden, log_probs=log_softmax_rows(logits))


def logit_backprop(
    instance: BanditInstance,
    network: TwoLayerNetwork,
    params: np.ndarray,
    logit_sensitivity: np.ndarray,
    hidden: np.ndarray | None = None,
) -> np.ndarray:
    """The gradient of ``sum_{x,y} S(x, y) f(x, y)`` in the flat parameters: backprop by hand.

    With ``S`` the sensitivity ``dL/df`` of an objective ``L`` to the logits, this is
    ``grad L``: ``dL/dv = sum S tanh(a)``, ``dL/da = S v (1 - tanh(a)^2)`` for the
    pre-activations ``a = W phi + b``, ``dL/dW = sum dL/da phi^T``, ``dL/db = sum dL/da``
    and ``dL/dtheta = sum S phi``. ``hidden`` may pass the activations of a
    :func:`forward` at ``params`` to skip recomputing them.
    """
    network = _check_network(instance, network)
    sensitivity = check_shape(
        "logit_sensitivity",
        check_finite_array("logit_sensitivity", logit_sensitivity, ndim=2),
        (instance.n_prompts, instance.n_responses),
    )
    params = network.check_params(params)
    if hidden is None:
        hidden = forward(instance, network, params).hidden
    else:
        hidden = check_shape(
            "hidden",
            check_finite_array("hidden", hidden, ndim=3),
            (instance.n_prompts, instance.n_responses, network.width),
        )
    return _backprop(instance, network, params, sensitivity, hidden)


def _backprop(
    instance: BanditInstance,
    network: TwoLayerNetwork,
    params: np.ndarray,
    sensitivity: np.ndarray,
    hidden: np.ndarray,
) -> np.ndarray:
    """:func:`logit_backprop` on checked input, for the inner loops."""
    parts = network.unpack(params)
    features_transposed = feature_matrix(instance).T
    flat_sensitivity = sensitivity.ravel()
    flat_hidden = hidden.reshape(-1, network.width)
    pre_activation = flat_sensitivity[:, None] * (1.0 - flat_hidden**2) * parts.output_weights
    gradients = [
        np.asarray(features_transposed @ pre_activation).T,
        pre_activation.sum(axis=0),
        flat_sensitivity @ flat_hidden,
    ]
    if network.skip:
        gradients.append(np.asarray(features_transposed @ flat_sensitivity))
    return np.concatenate([gradient.ravel() for gradient in gradients])


def _check_log_probs(instance: BanditInstance, log_probs: object) -> np.ndarray:
    """``log_probs`` as a normalized ``(n_prompts, n_responses)`` table of log-probabilities, else raise."""
    return check_shape("log_probs", check_log_distribution("log_probs", log_probs), instance.rewards.shape)


def population_sensitivity(instance: BanditInstance, log_probs: np.ndarray, advantage: np.ndarray) -> np.ndarray:
    """``d/df(x, y)`` of ``E_x E_{y~pi} a(x, y)`` with ``a`` held fixed: ``rho(x) pi(y|x) (a - E_pi a)``."""
    instance = check_instance("instance", instance, BanditInstance)
    log_probs = _check_log_probs(instance, log_probs)
    advantage = check_shape("advantage", check_finite_array("advantage", advantage, ndim=2), instance.rewards.shape)
    return _population_sensitivity(instance, log_probs, advantage)


def _population_sensitivity(instance: BanditInstance, log_probs: np.ndarray, advantage: np.ndarray) -> np.ndarray:
    """:func:`population_sensitivity` on checked input, for the inner loops."""
    probs = np.exp(log_probs)
    centered = advantage - np.sum(probs * advantage, axis=1, keepdims=True)
    return instance.prompt_probs[:, None] * probs * centered


def batch_sensitivity(
    instance: BanditInstance,
    log_probs: np.ndarray,
    prompts: np.ndarray,
    responses: np.ndarray,
    coefficients: np.ndarray,
) -> np.ndarray:
    """``d/df(x, y)`` of ``mean_i c_i log pi(y_i|x_i)``: ``mean_i c_i (1[x_i, y_i] - 1[x_i] pi(.|x_i))``.

    The score of the softmax in the logits, summed over the batch with ``np.add.at`` and a
    per-prompt ``bincount``, so the cost is one table of the instance's size.
    """
    instance = check_instance("instance", instance, BanditInstance)
    log_probs = _check_log_probs(instance, log_probs)
    prompts = np.ravel(check_index_array("prompts", prompts, instance.n_prompts))
    if prompts.size == 0:
        raise ValueError("prompts must hold at least one sample")
    responses = check_shape(
        "responses", np.ravel(check_index_array("responses", responses, instance.n_responses)), prompts.shape
    )
    coefficients = check_shape("coefficients", np.ravel(check_finite_array("coefficients", coefficients)), prompts.shape)
    return _batch_sensitivity(instance, log_probs, prompts, responses, coefficients)


def _batch_sensitivity(
    instance: BanditInstance, log_probs: np.ndarray, prompts: np.ndarray, responses: np.ndarray, coefficients: np.ndarray
) -> np.ndarray:
    """:func:`batch_sensitivity` on checked input, for the inner loops."""
    prompts = np.ravel(prompts)
    coefficients = np.ravel(coefficients) / prompts.size
    table = np.zeros((instance.n_prompts, instance.n_responses))
    np.add.at(table, (prompts, np.ravel(responses)), coefficients)
    per_prompt = np.bincount(prompts, weights=coefficients, minlength=instance.n_prompts)
    return table - per_prompt[:, None] * np.exp(log_probs)

# ---------------------------------------------------------------------------------------
# Initialization at the base model


def _cross_entropy_and_gradient(
    instance: BanditInstance, network: TwoLayerNetwork, params: np.ndarray, log_base: np.ndarray
) -> tuple[float, np.ndarray]:
    """``E_x KL(pi_0 || pi_params)`` up to a constant, and its gradient (logit sensitivity ``rho (pi - pi_0)``)."""
    passed = forward(instance, network, params)
    loss = -float(instance.prompt_probs @ np.sum(np.exp(log_base) * passed.log_probs, axis=1))
    sensitivity = instance.prompt_probs[:, None] * (np.exp(passed.log_probs) - np.exp(log_base))
    return loss, _backprop(instance, network, params, sensitivity, passed.hidden)


def initial_parameters(
    instance: BanditInstance,
    network: TwoLayerNetwork,
    rng: np.random.Generator,
    *,
    hidden_scale: float = DEFAULT_HIDDEN_SCALE,
    output_scale: float = DEFAULT_OUTPUT_SCALE,
) -> np.ndarray:
    """Parameters whose policy is (close to) the base model ``pi_0 = softmax <theta_0, phi>``.

    Our choice: ``W`` has i.i.d. ``N(0, (hidden_scale / B)^2)`` entries, ``B`` the largest
    feature norm, so the pre-activations have standard deviation up to ``hidden_scale`` and
    ``tanh`` works in its nonlinear range; ``b = 0``; ``v`` has i.i.d.
    ``N(0, output_scale^2 / width)`` entries, so the network's contribution to each logit has
    standard deviation below ``output_scale``; the skip term is ``theta_0``. Then
    ``pi_net = pi_0`` up to that small perturbation (``KL(pi_0 || pi_net)`` is about
    ``output_scale^2 / 2`` at most, see :func:`base_fit_kl`). Setting ``v = 0`` would be exact,
    but then ``dL/dW`` is zero (it is proportional to ``v``) and every hidden unit receives the
    same update; a small random ``v`` breaks that symmetry.

    The hidden layer adds ``|tanh(W phi + b)|^2`` (about 6 at width 16 and ``hidden_scale = 1``)
    to the squared norm of each logit's gradient, against ``|phi|^2`` for the skip term: at
    the same learning rate the network takes steps several times larger in logit space than
    the softmax-linear policy.

    Without a skip term the network has no ``theta_0`` to copy: the random start is then fitted
    to ``pi_0`` by L-BFGS on ``E_x KL(pi_0 || pi_net)`` (at most
    :data:`BASE_FIT_MAX_ITERATIONS` iterations; check :func:`base_fit_kl`, the fit may be loose).
    """
    network = _check_network(instance, network)
    rng = check_generator("rng", rng)
    hidden_scale = check_positive("hidden_scale", hidden_scale)
    output_scale = check_positive("output_scale", output_scale)
    norms = np.linalg.norm(instance.features, axis=2)
    feature_bound = float(norms.max()) if norms.max() > 0.0 else 1.0
    hidden_weights = rng.normal(0.0, hidden_scale / feature_bound, size=(network.width, network.dim))
    output_weights = rng.normal(0.0, output_scale / np.sqrt(network.width), size=network.width)
    skip_weights = np.array(instance.base_theta, dtype=float) if network.skip else None
    params = network.pack(hidden_weights, np.zeros(network.width), output_weights, skip_weights)
    if network.skip:
        return params
    log_base = base_log_policy(instance)
    fitted = minimize(
        lambda p: _cross_entropy_and_gradient(instance, network, p, log_base),
        params,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": BASE_FIT_MAX_ITERATIONS},
    )
    return np.asarray(fitted.x, dtype=float)


def base_fit_kl(instance: BanditInstance, network: TwoLayerNetwork, params: np.ndarray) -> float:
    """``E_x KL(pi_0 || pi_params)``: how far the network's starting policy is from the base model."""
    log_probs = forward(instance, network, params).log_probs
    return expected_kl(instance, base_log_policy(instance), log_probs)
