"""A two-layer network policy beyond softmax-linear, and the algorithms of the book run on it.

The paper's guarantees are for softmax-linear policies over frozen features (paper section 2.2);
its authors list parameter sharing beyond linear as open. This module is a small, exact
laboratory for that question. The policy is a softmax over a two-layer ``tanh`` network of the
instance's features, with an optional linear skip term:

    ``f(x, y) = <v, tanh(W phi(x, y) + b)> + <theta, phi(x, y)>``,
    ``pi(y|x) = exp f(x, y) / sum_y' exp f(x, y')``.

Its parameters ``(W, b, v, theta)`` travel as one flat vector (:meth:`TwoLayerNetwork.pack`,
:meth:`TwoLayerNetwork.unpack`). Every objective here depends on the parameters only through
the logit table ``f``, so one hand-written backward pass (:func:`logit_backprop`, vectorized
over all prompts and responses) turns the logit sensitivity ``dL/df(x, y)`` of any objective
into its exact parameter gradient:

- ``J`` and ``J_beta(.; pi_ref)`` (paper Eqs. (5) and (13)): ``dL/df(x, y) = rho(x) pi(y|x) (a(x, y) - E_pi a)``
  with ``a = r`` or ``a = r - beta log(pi / pi_ref)``;
- a batch average ``mean_i c_i log pi(y_i|x_i)`` (sampled REINFORCE, PPO-NoClip of paper section 3.2):
  ``dL/df(x, y) = mean_i c_i (1[x = x_i, y = y_i] - 1[x = x_i] pi(y|x))``.

The algorithms mirror the softmax-linear ones and fill the shared
:class:`~covpo.trajectory.TrajectoryRecorder` with the same cost accounting: exact REINFORCE
(:mod:`covpo.algorithms.reinforce`), exact APMD with ``K`` gradient steps per reset
(:mod:`covpo.algorithms.mirror_descent`), sampled REINFORCE, and PPO-NoClip (:mod:`covpo.algorithms.ppo_noclip`,
whose batch drawing and checked step are reused). :func:`nonlinear_experiment` runs all of them, for
the linear and the network policy, on one instance of each chapter-4 family
(:mod:`covpo.families`). The network, its initialization and every constant are ours.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import minimize
from scipy.special import log_softmax

import covpo
from covpo.instances import BanditInstance
from covpo.objectives import regularized_optimum
from covpo.policies import (
    base_log_policy,
    expected_kl,
    log_coverage,
    sample_prompts,
    sample_responses,
)
from covpo.algorithms.steps import ascent_step
from covpo.batches import ResponseBatch, draw_batch
from covpo.families import collapse_family, random_family
from covpo.algorithms.reinforce import check_baseline, leave_one_out_baseline
from covpo.table import Table
from covpo.trajectory import LOG10_E, Trajectory, TrajectoryRecorder
from covpo.validation import (
    check_count,
    check_finite_array,
    check_log_distribution,
    check_nonnegative,
    check_positive,
    check_shape,
)

DEFAULT_WIDTH = 16
"""Hidden width of the network in :func:`nonlinear_experiment`."""
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
        if not isinstance(self.skip, bool):
            raise ValueError(f"skip must be True or False, got {self.skip!r}")

    @property
    def n_params(self) -> int:
        """Length of the flat parameter vector, ``h d + 2 h (+ d)``."""
        return self.width * self.dim + 2 * self.width + (self.dim if self.skip else 0)

    def check_params(self, params: np.ndarray) -> np.ndarray:
        """Return ``params`` as a finite float vector of length :attr:`n_params`, else raise ``ValueError``."""
        return check_shape("params", check_finite_array("params", params, ndim=1), (self.n_params,))

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
    return TwoLayerNetwork(dim=instance.dim, width=width, skip=skip)


def _check_network(instance: BanditInstance, network: TwoLayerNetwork) -> TwoLayerNetwork:
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
    return ForwardPass(hidden=hidden, log_probs=log_softmax(logits, axis=1))


def network_log_policy(instance: BanditInstance, network: TwoLayerNetwork, params: np.ndarray) -> np.ndarray:
    """``log pi(y|x)`` of the network policy, shape ``(n_prompts, n_responses)``, by log-softmax."""
    return forward(instance, network, params).log_probs


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
    if hidden is None:
        hidden = forward(instance, network, params).hidden
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


def population_sensitivity(instance: BanditInstance, log_probs: np.ndarray, advantage: np.ndarray) -> np.ndarray:
    """``d/df(x, y)`` of ``E_x E_{y~pi} a(x, y)`` with ``a`` held fixed: ``rho(x) pi(y|x) (a - E_pi a)``."""
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
    prompts = np.ravel(prompts)
    coefficients = np.ravel(coefficients) / prompts.size
    table = np.zeros((instance.n_prompts, instance.n_responses))
    np.add.at(table, (prompts, np.ravel(responses)), coefficients)
    per_prompt = np.bincount(prompts, weights=coefficients, minlength=instance.n_prompts)
    return table - per_prompt[:, None] * np.exp(log_probs)


def _check_reference(instance: BanditInstance, log_reference: np.ndarray) -> np.ndarray:
    log_reference = check_log_distribution("log_reference", log_reference)
    return check_shape("log_reference", log_reference, (instance.n_prompts, instance.n_responses))


def network_reward_gradient(instance: BanditInstance, network: TwoLayerNetwork, params: np.ndarray) -> np.ndarray:
    """Exact ``grad J(pi_params)`` (paper appendix B.2) through the network."""
    passed = forward(instance, network, params)
    sensitivity = population_sensitivity(instance, passed.log_probs, instance.rewards)
    return _backprop(instance, network, params, sensitivity, passed.hidden)


def network_regularized_gradient(
    instance: BanditInstance,
    network: TwoLayerNetwork,
    params: np.ndarray,
    log_reference: np.ndarray,
    beta: float,
) -> np.ndarray:
    """Exact ``grad [J(pi) - beta E_x KL(pi || pi_ref)]`` (paper Eqs. (5) and (13)) through the network.

    The logit sensitivity is that of the shaped reward ``r - beta log(pi / pi_ref)``
    (:func:`population_sensitivity`); the KL's own score term has mean zero under ``pi``.
    """
    beta = check_positive("beta", beta)
    log_reference = _check_reference(instance, log_reference)
    return _regularized_gradient(instance, network, params, log_reference, beta)


def _regularized_gradient(
    instance: BanditInstance, network: TwoLayerNetwork, params: np.ndarray, log_reference: np.ndarray, beta: float
) -> np.ndarray:
    """:func:`network_regularized_gradient` on checked input, for the inner loops."""
    passed = forward(instance, network, params)
    shaped = instance.rewards - beta * (passed.log_probs - log_reference)
    sensitivity = population_sensitivity(instance, passed.log_probs, shaped)
    return _backprop(instance, network, params, sensitivity, passed.hidden)


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
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator, got {rng!r}")
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
    return expected_kl(instance, base_log_policy(instance), network_log_policy(instance, network, params))


# ---------------------------------------------------------------------------------------
# Algorithms


def _network_settings(network: TwoLayerNetwork, **settings: object) -> dict:
    return {"policy": "network", "width": network.width, "skip": network.skip, **settings}


def _check_optional_beta(beta: float | None) -> float | None:
    return None if beta is None else check_positive("beta", beta)


def network_exact_reinforce(
    instance: BanditInstance,
    network: TwoLayerNetwork,
    params: np.ndarray,
    eta: float,
    n_steps: int,
    beta: float | None = None,
    record_every: int = 1,
) -> Trajectory:
    """Exact REINFORCE through the network: ``params <- params + eta grad J_beta(pi; pi_0)`` (paper section 2.1).

    The counterpart of :func:`covpo.algorithms.reinforce.exact_reinforce`: one gradient step per update,
    no responses; ``beta = None`` ascends plain ``J``, otherwise the reference is the
    instance's base model ``pi_0``. Records every ``record_every``-th iterate, first and last included.
    """
    network = _check_network(instance, network)
    params = network.check_params(params).copy()
    eta = check_positive("eta", eta)
    n_steps = check_count("n_steps", n_steps)
    beta = _check_optional_beta(beta)
    record_every = check_count("record_every", record_every)
    log_base = base_log_policy(instance)
    recorder = TrajectoryRecorder(
        "exact REINFORCE",
        instance.optimal_value,
        _network_settings(network, eta=eta, beta=beta, n_steps=n_steps),
    )
    recorder.record_policy(instance, network_log_policy(instance, network, params))
    for step in range(1, n_steps + 1):
        if beta is None:
            gradient = network_reward_gradient(instance, network, params)
        else:
            gradient = _regularized_gradient(instance, network, params, log_base, beta)
        params = params + eta * gradient
        recorder.count_gradient_steps()
        if step % record_every == 0 or step == n_steps:
            recorder.record_policy(instance, network_log_policy(instance, network, params))
    return recorder.finish()


def network_exact_apmd(
    instance: BanditInstance,
    network: TwoLayerNetwork,
    params: np.ndarray,
    beta: float,
    n_iterations: int,
    *,
    inner_steps: int,
    eta: float,
    record_each_step: bool = False,
) -> Trajectory:
    """Exact APMD through the network: reset ``pi_ref <- pi_t``, then ``K`` exact gradient steps (paper section 3.1).

    Each outer iteration ascends ``J(pi) - beta E_x KL(pi || pi_t)`` from ``params_t`` with
    :func:`network_regularized_gradient`, the counterpart of
    :func:`covpo.algorithms.mirror_descent.apmd` with ``inner_steps = K``. Costs: one reset and
    ``K`` gradient steps per outer iteration, no responses.

    Returns
    -------
    Trajectory
        With the flat parameters after every outer iteration in ``thetas`` (``params_0``
        first) and each inner loop's accuracy ``E_x KL(pi_{t+1} || pi*_{t+1})`` in ``inner_kl``.
    """
    network = _check_network(instance, network)
    params = network.check_params(params).copy()
    beta = check_positive("beta", beta)
    n_iterations = check_count("n_iterations", n_iterations)
    inner_steps = check_count("inner_steps", inner_steps)
    eta = check_positive("eta", eta)
    recorder = TrajectoryRecorder(
        "exact APMD",
        instance.optimal_value,
        _network_settings(network, beta=beta, n_iterations=n_iterations, inner_steps=inner_steps, eta=eta),
    )
    log_probs = network_log_policy(instance, network, params)
    recorder.record_policy(instance, log_probs)
    history, inner_kl = [params], []
    for t in range(n_iterations):
        log_reference = log_probs
        recorder.count_reset()
        for k in range(inner_steps):
            gradient = _regularized_gradient(instance, network, params, log_reference, beta)
            params = ascent_step(params, eta, gradient, t, k + 1)
            recorder.count_gradient_steps()
            if record_each_step:
                recorder.record_policy(instance, network_log_policy(instance, network, params))
        log_probs = network_log_policy(instance, network, params)
        inner_kl.append(expected_kl(instance, log_probs, regularized_optimum(instance, log_reference, beta)))
        if not record_each_step:
            recorder.record_policy(instance, log_probs)
        history.append(params)
    return recorder.finish(thetas=history, inner_kl=inner_kl)


def _baseline_advantages(shaped: np.ndarray, baseline: str) -> np.ndarray:
    """``shaped`` minus the mean of the other samples (``"leave_one_out"``) or of the batch (``"batch_mean"``)."""
    if baseline == "leave_one_out":
        return shaped - leave_one_out_baseline(shaped)
    return shaped - shaped.sum() / shaped.size


def network_sampled_gradient(
    instance: BanditInstance,
    network: TwoLayerNetwork,
    params: np.ndarray,
    prompts: np.ndarray,
    responses: np.ndarray,
    beta: float | None = None,
    baseline: str = "leave_one_out",
) -> np.ndarray:
    """The REINFORCE estimate ``mean_i A_i grad log pi(y_i|x_i)`` of ``grad J_beta(pi; pi_0)`` (sampled, after paper section 2.1).

    As :func:`covpo.algorithms.reinforce.sampled_gradient`, with the network's score: ``A_i`` is
    ``r - beta log(pi / pi_0)`` (just ``r`` when ``beta`` is ``None``) minus a leave-one-out or
    batch-mean baseline.
    """
    beta = _check_optional_beta(beta)
    prompts = np.asarray(prompts, dtype=np.int64)
    responses = np.asarray(responses, dtype=np.int64)
    baseline = check_baseline(baseline, prompts.size)
    passed = forward(instance, network, params)
    shaped = instance.rewards[prompts, responses]
    if beta is not None:
        shaped = shaped - beta * (passed.log_probs - base_log_policy(instance))[prompts, responses]
    advantages = _baseline_advantages(shaped, baseline)
    sensitivity = batch_sensitivity(instance, passed.log_probs, prompts, responses, advantages)
    return _backprop(instance, network, params, sensitivity, passed.hidden)


def network_sampled_reinforce(
    instance: BanditInstance,
    network: TwoLayerNetwork,
    params: np.ndarray,
    eta: float,
    n_steps: int,
    batch_size: int,
    rng: np.random.Generator,
    beta: float | None = None,
    baseline: str = "leave_one_out",
    record_every: int = 1,
) -> Trajectory:
    """Stochastic REINFORCE through the network (paper section 2.1, sampled), as :func:`covpo.algorithms.reinforce.reinforce`.

    Each step draws ``batch_size`` pairs ``x ~ rho, y ~ pi(.|x)`` from ``rng`` (prompts first,
    then responses, the same order as the linear version) and steps along
    :func:`network_sampled_gradient`. Costs: one gradient step and ``batch_size`` responses per update.
    """
    network = _check_network(instance, network)
    params = network.check_params(params).copy()
    eta = check_positive("eta", eta)
    n_steps = check_count("n_steps", n_steps)
    batch_size = check_count("batch_size", batch_size)
    beta = _check_optional_beta(beta)
    baseline = check_baseline(baseline, batch_size)
    record_every = check_count("record_every", record_every)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator, got {rng!r}")
    recorder = TrajectoryRecorder(
        "sampled REINFORCE",
        instance.optimal_value,
        _network_settings(network, eta=eta, beta=beta, n_steps=n_steps, batch_size=batch_size, baseline=baseline),
    )
    log_probs = network_log_policy(instance, network, params)
    recorder.record_policy(instance, log_probs)
    for step in range(1, n_steps + 1):
        prompts = sample_prompts(instance, rng, batch_size)
        responses = sample_responses(log_probs, prompts, rng)
        params = params + eta * network_sampled_gradient(instance, network, params, prompts, responses, beta, baseline)
        recorder.count_responses(batch_size)
        recorder.count_gradient_steps()
        log_probs = network_log_policy(instance, network, params)
        if step % record_every == 0 or step == n_steps:
            recorder.record_policy(instance, log_probs)
    return recorder.finish()


def _noclip_terms(
    instance: BanditInstance, network: TwoLayerNetwork, params: np.ndarray, batch: ResponseBatch
) -> tuple[ForwardPass, np.ndarray]:
    passed = forward(instance, network, params)
    return passed, passed.log_probs[batch.prompts, batch.responses] - batch.log_sampling


def network_ppo_noclip_objective(
    instance: BanditInstance, network: TwoLayerNetwork, params: np.ndarray, batch: ResponseBatch, beta: float
) -> float:
    """PPO-NoClip's ``L_t = mean_i [w_i r_i - beta (w_i log w_i - w_i + 1)]`` for the network (paper Algorithm 1, cf. Eq. (20)).

    The objective of :func:`covpo.algorithms.ppo_noclip.ppo_noclip_objective`, with
    ``w_i = pi_params(y_i|x_i) / pi_t(y_i|x_i)`` and ``pi_t`` the policy ``batch`` was drawn from.
    """
    beta = check_positive("beta", beta)
    _, log_ratio = _noclip_terms(instance, network, params, batch)
    weights = np.exp(log_ratio)
    return float(np.mean(weights * batch.rewards - beta * (weights * log_ratio - weights + 1.0)))


def network_ppo_noclip_gradient(
    instance: BanditInstance, network: TwoLayerNetwork, params: np.ndarray, batch: ResponseBatch, beta: float
) -> np.ndarray:
    """``grad L_t = mean_i w_i (r_i - beta log w_i) grad log pi(y_i|x_i)`` through the network (Algorithm 1)."""
    beta = check_positive("beta", beta)
    passed, log_ratio = _noclip_terms(instance, network, params, batch)
    coefficients = np.exp(log_ratio) * (batch.rewards - beta * log_ratio)
    sensitivity = batch_sensitivity(instance, passed.log_probs, batch.prompts, batch.responses, coefficients)
    return _backprop(instance, network, params, sensitivity, passed.hidden)


def network_ppo_noclip(
    instance: BanditInstance,
    network: TwoLayerNetwork,
    params: np.ndarray,
    beta: float,
    n_iterations: int,
    *,
    batch_size: int,
    inner_steps: int,
    eta: float,
    rng: np.random.Generator,
    record_each_step: bool = False,
) -> Trajectory:
    """PPO-NoClip (paper Algorithm 1, section 3.2) through the network: APMD with a reused batch.

    Each outer iteration resets ``pi_ref <- pi_t``, draws ``N = batch_size`` prompts with one
    response each from ``pi_t`` (:func:`covpo.batches.draw_batch`) and takes ``K = inner_steps``
    steps along :func:`network_ppo_noclip_gradient` on that batch, as
    :func:`covpo.algorithms.ppo_noclip.ppo_noclip` does for the softmax-linear policy. Costs:
    one reset, ``N`` responses and ``K`` gradient steps per outer iteration. Returns the
    trajectory with the flat parameters after every outer iteration in ``thetas`` (``params_0``
    first) and each inner loop's accuracy ``E_x KL(pi_{t+1} || pi*_{t+1})`` in ``inner_kl``.
    Raises ``FloatingPointError`` if a step leaves the parameters non-finite.
    """
    network = _check_network(instance, network)
    params = network.check_params(params).copy()
    beta = check_positive("beta", beta)
    n_iterations = check_count("n_iterations", n_iterations)
    batch_size = check_count("batch_size", batch_size)
    inner_steps = check_count("inner_steps", inner_steps)
    eta = check_positive("eta", eta)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator, got {rng!r}")
    recorder = TrajectoryRecorder(
        "PPO-NoClip",
        instance.optimal_value,
        _network_settings(
            network, beta=beta, n_iterations=n_iterations, batch_size=batch_size, inner_steps=inner_steps, eta=eta
        ),
    )
    log_probs = network_log_policy(instance, network, params)
    recorder.record_policy(instance, log_probs)
    history, inner_kl = [params], []
    for t in range(n_iterations):
        log_reference = log_probs  # reset the reference to pi_t
        recorder.count_reset()
        batch = draw_batch(instance, log_reference, batch_size, rng)
        recorder.count_responses(batch.size)
        for k in range(inner_steps):
            with np.errstate(over="ignore", invalid="ignore"):
                gradient = network_ppo_noclip_gradient(instance, network, params, batch, beta)
            params = ascent_step(params, eta, gradient, t, k + 1)
            recorder.count_gradient_steps()
            if record_each_step:
                recorder.record_policy(instance, network_log_policy(instance, network, params))
        log_probs = network_log_policy(instance, network, params)
        inner_kl.append(expected_kl(instance, log_probs, regularized_optimum(instance, log_reference, beta)))
        if not record_each_step:
            recorder.record_policy(instance, log_probs)
        history.append(params)
    return recorder.finish(thetas=history, inner_kl=inner_kl)


# ---------------------------------------------------------------------------------------
# The experiment: linear against network on the two chapter-4 families


FAMILIES = ("collapse", "random")
"""The instance families of :func:`nonlinear_experiment`, from :mod:`covpo.families`."""
METHODS = (
    "exact REINFORCE",
    "exact APMD, few inner steps",
    "exact APMD, many inner steps",
    "sampled REINFORCE",
    "PPO-NoClip",
    "PPO-NoClip, smaller eta",
)
"""The methods of :func:`nonlinear_experiment`, each run with both policies (see :class:`ExperimentSettings`)."""
POLICIES = ("linear", "network")
"""Softmax-linear over the features, and :class:`TwoLayerNetwork` with skip term."""
EXACT_METHODS = frozenset(METHODS[:3])
"""Methods that use no randomness; their linear runs are the same for every seed."""


@dataclass(frozen=True)
class ExperimentSettings:
    """The hyperparameters of one family in :func:`nonlinear_experiment` (ours, shared by both policies).

    Attributes
    ----------
    reinforce_eta, reinforce_steps
        Exact REINFORCE (no KL): learning rate and gradient steps.
    beta
        Strength of every reset method.
    apmd_eta, apmd_steps, few_inner_steps, many_inner_steps
        Exact APMD: learning rate, gradient-step budget, and the two inner step counts ``K``
        (``T = apmd_steps // K`` outer iterations, so both spend the same steps).
    sampled_eta, sampled_steps, sampled_batch
        Sampled REINFORCE (leave-one-out baseline): learning rate, steps, batch size.
    ppo_iterations, ppo_batch, ppo_inner_steps, ppo_eta
        PPO-NoClip at strength ``beta``: ``T``, ``N``, ``K`` and learning rate.
    smaller_eta_factor
        "PPO-NoClip, smaller eta" runs at ``smaller_eta_factor * ppo_eta``, otherwise the same.
    record_every
        REINFORCE (exact and sampled) records every ``record_every``-th step.
    """

    reinforce_eta: float
    reinforce_steps: int
    beta: float
    apmd_eta: float
    apmd_steps: int
    few_inner_steps: int
    many_inner_steps: int
    sampled_eta: float
    sampled_steps: int
    sampled_batch: int
    ppo_iterations: int
    ppo_batch: int
    ppo_inner_steps: int
    ppo_eta: float
    smaller_eta_factor: float = 0.25
    record_every: int = 10

    def __post_init__(self) -> None:
        for name in ("reinforce_eta", "beta", "apmd_eta", "sampled_eta", "ppo_eta", "smaller_eta_factor"):
            check_positive(name, getattr(self, name))
        for name in ("reinforce_steps", "few_inner_steps", "many_inner_steps", "sampled_steps", "ppo_iterations",
                     "ppo_batch", "ppo_inner_steps", "record_every"):
            check_count(name, getattr(self, name))
        check_count("sampled_batch", self.sampled_batch, minimum=2)
        check_count("apmd_steps", self.apmd_steps, minimum=max(self.few_inner_steps, self.many_inner_steps))

    def describe(self) -> str:
        """One line with every setting, for the chapter's text."""
        return (
            f"REINFORCE eta {self.reinforce_eta:g} x {self.reinforce_steps} steps; APMD beta {self.beta:g}, "
            f"eta {self.apmd_eta:g}, K {self.few_inner_steps} or {self.many_inner_steps}, {self.apmd_steps} steps; "
            f"sampled REINFORCE eta {self.sampled_eta:g}, N {self.sampled_batch}, {self.sampled_steps} steps; "
            f"PPO-NoClip N {self.ppo_batch}, K {self.ppo_inner_steps}, T {self.ppo_iterations}, "
            f"eta {self.ppo_eta:g} (smaller: x{self.smaller_eta_factor:g})"
        )


COLLAPSE_SETTINGS = ExperimentSettings(
    reinforce_eta=16.0,
    reinforce_steps=1000,
    beta=1.0,
    apmd_eta=8.0,
    apmd_steps=600,
    few_inner_steps=10,
    many_inner_steps=40,
    sampled_eta=16.0,
    sampled_steps=500,
    sampled_batch=32,
    ppo_iterations=25,
    ppo_batch=256,
    ppo_inner_steps=40,
    ppo_eta=8.0,
)
"""Settings on the stacked collapse instance (the PPO-NoClip ones are chapter 4's)."""
RANDOM_SETTINGS = ExperimentSettings(
    reinforce_eta=16.0,
    reinforce_steps=300,
    beta=1.0,
    apmd_eta=8.0,
    apmd_steps=600,
    few_inner_steps=10,
    many_inner_steps=40,
    sampled_eta=16.0,
    sampled_steps=300,
    sampled_batch=32,
    ppo_iterations=40,
    ppo_batch=256,
    ppo_inner_steps=10,
    ppo_eta=2.0,
    record_every=5,
)
"""Settings on the random dialled-coverage instance (the PPO-NoClip ones are chapter 4's)."""


Run = tuple[Trajectory, np.ndarray | None]
"""A run's trajectory and, for a reset method, the accuracy of each of its inner loops."""


def _linear_run(method: str, instance: BanditInstance, s: ExperimentSettings, seed: int) -> Run:
    """One method with the softmax-linear policy, starting at ``theta_0``."""
    if method == "exact REINFORCE":
        trajectory = covpo.run(
            "reinforce_exact", instance, eta=s.reinforce_eta, n_iterations=s.reinforce_steps,
            record_every=s.record_every,
        )
        return trajectory, None
    if method.startswith("exact APMD"):
        steps = s.few_inner_steps if method.endswith("few inner steps") else s.many_inner_steps
        trajectory = covpo.run(
            "apmd", instance, beta=s.beta, eta=s.apmd_eta, n_iterations=s.apmd_steps // steps, inner_steps=steps
        )
        return trajectory, trajectory.inner_kl
    rng = np.random.default_rng(seed)
    if method == "sampled REINFORCE":
        trajectory = covpo.run(
            "reinforce", instance, rng=rng, eta=s.sampled_eta, n_iterations=s.sampled_steps,
            batch_size=s.sampled_batch, record_every=s.record_every,
        )
        return trajectory, None
    eta = s.ppo_eta * (s.smaller_eta_factor if method.endswith("smaller eta") else 1.0)
    trajectory = covpo.run(
        "ppo_noclip", instance, rng=rng, beta=s.beta, eta=eta, n_iterations=s.ppo_iterations,
        batch_size=s.ppo_batch, inner_steps=s.ppo_inner_steps,
    )
    return trajectory, trajectory.inner_kl


def _network_run(
    method: str,
    instance: BanditInstance,
    network: TwoLayerNetwork,
    params: np.ndarray,
    s: ExperimentSettings,
    seed: int,
) -> Run:
    """One method with the network policy, starting at ``params``."""
    if method == "exact REINFORCE":
        run = network_exact_reinforce(
            instance, network, params, s.reinforce_eta, s.reinforce_steps, record_every=s.record_every
        )
        return run, None
    if method.startswith("exact APMD"):
        steps = s.few_inner_steps if method.endswith("few inner steps") else s.many_inner_steps
        trajectory = network_exact_apmd(
            instance, network, params, s.beta, s.apmd_steps // steps, inner_steps=steps, eta=s.apmd_eta
        )
        return trajectory, trajectory.inner_kl
    rng = np.random.default_rng(seed)
    if method == "sampled REINFORCE":
        run = network_sampled_reinforce(
            instance, network, params, s.sampled_eta, s.sampled_steps, s.sampled_batch, rng,
            record_every=s.record_every,
        )
        return run, None
    eta = s.ppo_eta * (s.smaller_eta_factor if method.endswith("smaller eta") else 1.0)
    trajectory = network_ppo_noclip(
        instance, network, params, s.beta, s.ppo_iterations,
        batch_size=s.ppo_batch, inner_steps=s.ppo_inner_steps, eta=eta, rng=rng,
    )
    return trajectory, trajectory.inner_kl


def _or_diverged(run: Callable[[], Run]) -> Run | None:
    try:
        return run()
    except FloatingPointError:
        return None


@dataclass(frozen=True, eq=False)
class NonlinearExperiment:
    """Linear and network policies under the same methods and settings, on two instance families.

    Arrays are indexed ``[family, method, policy, seed]`` in the order of ``families``,
    ``methods``, ``policies`` and ``seeds``. A run that diverged (a non-finite
    step) has ``nan`` coverage and suboptimality, ``reached`` false and costs ``-1``.

    Attributes
    ----------
    families, methods, policies, seeds
        The labels of the four axes. The seed sets the network's initialization and every
        sampled run; the linear policy's exact runs do not depend on it.
    coverages
        ``C_cov`` of each family's instance.
    base_log10_coverage
        The lowest base-10 log coverage of the base model over prompts, per family.
    init_kl
        ``E_x KL(pi_0 || pi_net)`` of the network's starting parameters, ``[family, seed]``.
    eps
        The accuracy target of ``reached`` and the ``*_to_eps`` arrays.
    min_log10_coverage
        Lowest base-10 log coverage over all records and prompts of each run.
    reached
        Whether the run became eps-optimal.
    steps_to_eps, responses_to_eps
        Costs at the first eps-optimal record; ``-1`` where eps was not reached.
    final_suboptimality
        ``J* - J`` of the last iterate.
    max_inner_kl
        For the reset methods, the worst inner-loop accuracy ``max_t E_x KL(pi_{t+1} || pi*_{t+1})``
        (the quantity APMD's guarantee needs small, paper section 3.1); ``nan`` for REINFORCE.
    diverged
        Whether the run stopped on a non-finite step.
    trajectories
        The runs, ``trajectories[family][method][policy][seed]`` (``None`` where diverged).
    settings
        The :class:`ExperimentSettings` of each family.
    width
        The network's hidden width.
    """

    families: tuple[str, ...]
    methods: tuple[str, ...]
    policies: tuple[str, ...]
    seeds: tuple[int, ...]
    coverages: np.ndarray
    base_log10_coverage: np.ndarray
    init_kl: np.ndarray
    eps: float
    min_log10_coverage: np.ndarray
    reached: np.ndarray
    steps_to_eps: np.ndarray
    responses_to_eps: np.ndarray
    final_suboptimality: np.ndarray
    max_inner_kl: np.ndarray
    diverged: np.ndarray
    trajectories: tuple
    settings: tuple[ExperimentSettings, ...]
    width: int

    def trajectory(self, family: str, method: str, policy: str, seed_index: int = 0) -> Trajectory | None:
        """The run of ``method`` with ``policy`` on ``family`` for the ``seed_index``-th seed, by label."""
        f, m, p = self.families.index(family), self.methods.index(method), self.policies.index(policy)
        return self.trajectories[f][m][p][seed_index]

    def _line(self, f: int, m: int, p: int) -> str:
        reached = self.reached[f, m, p]
        cost = "eps never reached"
        if reached.any():
            steps = int(np.median(self.steps_to_eps[f, m, p][reached]))
            responses = int(np.median(self.responses_to_eps[f, m, p][reached]))
            cost = f"median {steps:5d} steps, {responses:6,d} responses to eps"
        inner = self.max_inner_kl[f, m, p]
        accuracy = f"; worst inner KL {np.nanmax(inner):.1e}" if np.any(np.isfinite(inner)) else ""
        if self.diverged[f, m, p].all():
            return f"  {self.methods[m]:29} {self.policies[p]:7}: diverged for every seed"
        return (
            f"  {self.methods[m]:29} {self.policies[p]:7}: worst log10 coverage "
            f"{np.nanmin(self.min_log10_coverage[f, m, p]):7.2f}; eps {int(reached.sum())}/{reached.size} seeds, "
            f"{cost}; median final J* - J {np.nanmedian(self.final_suboptimality[f, m, p]):.3f}{accuracy}"
        )

    def table(self) -> Table:
        """One row per instance, method and policy, summarized over the seeds.

        ``str(table)`` gives it as aligned text.
        """
        rows = []
        for f, family in enumerate(self.families):
            for m, method in enumerate(self.methods):
                for p, policy in enumerate(self.policies):
                    reached = self.reached[f, m, p]
                    diverged = bool(self.diverged[f, m, p].all())
                    steps = float(np.median(self.steps_to_eps[f, m, p][reached])) if reached.any() else None
                    inner = self.max_inner_kl[f, m, p]
                    rows.append((
                        family,
                        method,
                        policy,
                        None if diverged else float(np.nanmin(self.min_log10_coverage[f, m, p])),
                        int(reached.sum()),
                        steps,
                        None if diverged else float(np.nanmedian(self.final_suboptimality[f, m, p])),
                        float(np.nanmax(inner)) if np.any(np.isfinite(inner)) else None,
                    ))
        bases = ", ".join(f"{family} {base:.2f}" for family, base in zip(self.families, self.base_log10_coverage))
        return Table(
            ("instance", "method", "policy", "worst log10 coverage", f"seeds reaching ε (of {len(self.seeds)})",
             "median steps to ε", "median final J* - J", "worst inner KL"),
            tuple(rows),
            caption=(
                f"Linear policy against a network of width {self.width}, ε = {self.eps:g}, "
                f"seeds {', '.join(str(seed) for seed in self.seeds)}"
            ),
            notes=(
                f"Worst log10 coverage: the lowest over seeds, prompts and the run; the base model's is {bases}. "
                "Median steps over the seeds that reached ε. Worst inner KL: the largest KL from an inner "
                "loop's end to its target (APMD and PPO only). '-': none, or every seed diverged.",
            ),
        )

    def summary(self) -> str:
        """One block per family, one line per method and policy, summarized over the seeds."""
        lines = []
        for f, family in enumerate(self.families):
            header = (
                f"{family} instance: C_cov {self.coverages[f]:g}, base model's lowest log10 coverage "
                f"{self.base_log10_coverage[f]:.2f}; network width {self.width}, KL(pi_0 || pi_net) at start "
                f"<= {self.init_kl[f].max():.1e}; eps {self.eps:g}; seeds {list(self.seeds)}"
            )
            lines += [header, f"  settings: {self.settings[f].describe()}"]
            lines += [self._line(f, m, p) for m in range(len(self.methods)) for p in range(len(self.policies))]
        return "\n".join(lines)


def _trajectories_only(all_runs: list) -> tuple:
    """``[family][method][policy][seed]`` of trajectories (``None`` where diverged) from the runs."""
    return tuple(
        tuple(tuple(tuple(None if run is None else run[0] for run in policy) for policy in method) for method in family)
        for family in all_runs
    )


def _family_instance(family: str, coverage: float) -> BanditInstance:
    return collapse_family((coverage,))[0] if family == "collapse" else random_family((coverage,))[0]


def _family_runs(
    instance: BanditInstance, settings: ExperimentSettings, width: int, seeds: tuple[int, ...]
) -> tuple[tuple, list[float]]:
    """``runs[method][policy][seed]`` on one instance, and the network's starting KL per seed."""
    network = network_for(instance, width)
    starts = [initial_parameters(instance, network, np.random.default_rng(seed)) for seed in seeds]
    runs = []
    for method in METHODS:

        def linear(seed: int, method: str = method) -> Run | None:
            return _or_diverged(lambda: _linear_run(method, instance, settings, seed))

        def nonlinear(params: np.ndarray, seed: int, method: str = method) -> Run | None:
            return _or_diverged(lambda: _network_run(method, instance, network, params, settings, seed))

        if method in EXACT_METHODS:
            linear_runs = (linear(seeds[0]),) * len(seeds)
        else:
            linear_runs = tuple(linear(seed) for seed in seeds)
        runs.append((linear_runs, tuple(nonlinear(params, seed) for params, seed in zip(starts, seeds))))
    return tuple(runs), [base_fit_kl(instance, network, params) for params in starts]


def _measure(runs: list[Run | None], eps: float) -> dict[str, np.ndarray]:
    """Per run: coverage floor, reached, costs to eps, final gap, worst inner KL, diverged.

    ``nan`` and ``-1`` stand in where a run diverged.
    """

    def cost(value: int | None) -> int:
        return -1 if value is None else value

    rows = [
        (np.nan, False, -1, -1, np.nan, np.nan, True)
        if run is None
        else (
            run[0].min_log10_coverage,
            run[0].first_eps_optimal(eps) is not None,
            cost(run[0].steps_to_eps(eps)),
            cost(run[0].responses_to_eps(eps)),
            float(run[0].suboptimality[-1]),
            np.nan if run[1] is None else float(np.max(run[1])),
            False,
        )
        for run in runs
    ]
    names = (
        "min_log10_coverage", "reached", "steps_to_eps", "responses_to_eps", "final_suboptimality", "max_inner_kl",
        "diverged",
    )
    dtypes = (float, bool, np.int64, np.int64, float, float, bool)
    return {name: np.array(column, dtype=dtype) for name, column, dtype in zip(names, zip(*rows), dtypes)}


def nonlinear_experiment(
    *,
    collapse_coverage: float = 40.0,
    random_coverage: float = 20.0,
    width: int = DEFAULT_WIDTH,
    eps: float = 0.05,
    seeds: tuple[int, ...] = (0, 1, 2),
    collapse_settings: ExperimentSettings = COLLAPSE_SETTINGS,
    random_settings: ExperimentSettings = RANDOM_SETTINGS,
) -> NonlinearExperiment:
    """Every method of :data:`METHODS` with the linear and the network policy, on one instance per family.

    The collapse instance is :func:`covpo.families.collapse_family` at ``collapse_coverage``
    (4 prompts x 102 responses, one-hot features, ``d = 408``), the random one
    :func:`covpo.families.random_family` at ``random_coverage`` (50 x 8, ``d = 6``). For
    each seed the network (:class:`TwoLayerNetwork` of width ``width`` with skip term) starts
    from :func:`initial_parameters` with ``np.random.default_rng(seed)``, and every sampled run
    of either policy draws from a fresh ``np.random.default_rng(seed)``. Both policies run at
    the same settings, so the comparison isolates the parametrization.
    """
    collapse_coverage = check_positive("collapse_coverage", collapse_coverage)
    random_coverage = check_positive("random_coverage", random_coverage)
    width = check_count("width", width)
    eps = check_nonnegative("eps", eps)
    seeds = tuple(check_count("seeds", seed, minimum=0) for seed in seeds)
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    settings = (collapse_settings, random_settings)
    coverages = np.array([collapse_coverage, random_coverage])
    all_runs, init_kl, base_coverage = [], [], []
    for family, coverage, family_settings in zip(FAMILIES, coverages, settings):
        instance = _family_instance(family, float(coverage))
        runs, kls = _family_runs(instance, family_settings, width, seeds)
        all_runs.append(runs)
        init_kl.append(kls)
        base_coverage.append(float(log_coverage(instance, base_log_policy(instance)).min()) * LOG10_E)
    flat = [run for family in all_runs for method in family for policy in method for run in policy]
    shape = (len(FAMILIES), len(METHODS), len(POLICIES), len(seeds))
    measured = {name: column.reshape(shape) for name, column in _measure(flat, eps).items()}
    return NonlinearExperiment(
        families=FAMILIES,
        methods=METHODS,
        policies=POLICIES,
        seeds=seeds,
        coverages=coverages,
        base_log10_coverage=np.array(base_coverage),
        init_kl=np.array(init_kl),
        eps=eps,
        trajectories=_trajectories_only(all_runs),
        settings=settings,
        width=width,
        **measured,
    )
