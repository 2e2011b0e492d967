"""A two-layer network policy beyond softmax-linear, run through the book's algorithms.

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

Those two are the score sums of the policy protocol (:mod:`covpo.policy_classes`), so
:class:`NetworkPolicy` makes the network a policy class and the package's own algorithms run
on it unchanged: ``covpo.run(name, instance, policy=NetworkPolicy(...), ...)`` for exact REINFORCE
(:mod:`covpo.algorithms.reinforce`), APMD with ``K`` exact gradient steps per reset
(:mod:`covpo.algorithms.mirror_descent`), sampled REINFORCE and PPO-NoClip
(:mod:`covpo.algorithms.ppo_noclip`). :func:`nonlinear_experiment` runs all of them, for the
linear and the network policy, on one instance of each chapter-4 family
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
from covpo.batches import ResponseBatch
from covpo.families import collapse_family, random_family
from covpo.instances import BanditInstance
from covpo.policies import base_log_policy, expected_kl, log_coverage
from covpo.policy_classes import PolicyClass, SoftmaxLinear
from covpo.table import Table
from covpo.trajectory import LOG10_E, Trajectory
from covpo.validation import check_count, check_finite_array, check_nonnegative, check_positive, check_shape

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


class NetworkPolicy:
    """:class:`TwoLayerNetwork` on ``instance`` as a :class:`~covpo.policy_classes.PolicyClass`.

    The package's algorithms see the network only through this protocol: the log-probability
    table (:func:`forward`) and the two score sums, each a logit sensitivity
    (:func:`batch_sensitivity`, :func:`population_sensitivity`) pulled back through the hand
    backward pass of :func:`logit_backprop`. The last forward pass is kept, so a gradient at the
    parameters whose log-probabilities were just computed does not repeat it.

    Parameters
    ----------
    instance
        The bandit whose features the network reads.
    network
        The architecture; ``network.dim`` must be the instance's feature dimension.
    initial_params
        The flat starting parameters, e.g. from :func:`initial_parameters`; the algorithms start
        here and take this policy as the base model ``pi_0`` of their recorded ``kl_to_base``.
    """

    def __init__(self, instance: BanditInstance, network: TwoLayerNetwork, initial_params: np.ndarray) -> None:
        self.instance = instance
        self.network = _check_network(instance, network)
        self.initial_params = network.check_params(initial_params).copy()
        self._last: tuple[np.ndarray, ForwardPass] | None = None

    def forward(self, params: np.ndarray) -> ForwardPass:
        """:func:`forward` at ``params``, reused when ``params`` equals the last call's."""
        if self._last is None or not np.array_equal(self._last[0], params):
            self._last = (np.array(params, dtype=float), forward(self.instance, self.network, params))
        return self._last[1]

    def log_policy(self, params: np.ndarray) -> np.ndarray:
        """``log pi_params(y|x)``, shape ``(n_prompts, n_responses)``, by log-softmax of the logits."""
        return self.forward(params).log_probs

    def batch_score_average(
        self, params: np.ndarray, batch: ResponseBatch, coefficients: np.ndarray, log_probs: np.ndarray
    ) -> np.ndarray:
        """``mean_i c_i grad log pi_params(y_i|x_i)``: backprop of :func:`batch_sensitivity`."""
        sensitivity = batch_sensitivity(self.instance, log_probs, batch.prompts, batch.responses, coefficients)
        return _backprop(self.instance, self.network, params, sensitivity, self.forward(params).hidden)

    def population_score_sum(self, params: np.ndarray, advantage: np.ndarray, log_probs: np.ndarray) -> np.ndarray:
        """``E_x E_{y~pi}[(A - E_pi A) grad log pi_params]``: backprop of :func:`population_sensitivity`."""
        sensitivity = population_sensitivity(self.instance, log_probs, advantage)
        return _backprop(self.instance, self.network, params, sensitivity, self.forward(params).hidden)


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
    return expected_kl(instance, base_log_policy(instance), forward(instance, network, params).log_probs)


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


def _run(method: str, instance: BanditInstance, policy: PolicyClass, s: ExperimentSettings, seed: int) -> Trajectory:
    """One method of :data:`METHODS` with ``policy``, starting at its ``initial_params``, through :func:`covpo.run`."""
    if method == "exact REINFORCE":
        return covpo.run(
            "reinforce_exact", instance, policy=policy, eta=s.reinforce_eta, n_iterations=s.reinforce_steps,
            record_every=s.record_every,
        )
    if method.startswith("exact APMD"):
        steps = s.few_inner_steps if method.endswith("few inner steps") else s.many_inner_steps
        return covpo.run(
            "apmd", instance, policy=policy, beta=s.beta, eta=s.apmd_eta, n_iterations=s.apmd_steps // steps,
            inner_steps=steps,
        )
    rng = np.random.default_rng(seed)
    if method == "sampled REINFORCE":
        return covpo.run(
            "reinforce", instance, rng=rng, policy=policy, eta=s.sampled_eta, n_iterations=s.sampled_steps,
            batch_size=s.sampled_batch, record_every=s.record_every,
        )
    eta = s.ppo_eta * (s.smaller_eta_factor if method.endswith("smaller eta") else 1.0)
    return covpo.run(
        "ppo_noclip", instance, rng=rng, policy=policy, beta=s.beta, eta=eta, n_iterations=s.ppo_iterations,
        batch_size=s.ppo_batch, inner_steps=s.ppo_inner_steps,
    )


def _or_diverged(run: Callable[[], Trajectory]) -> Trajectory | None:
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


def _family_instance(family: str, coverage: float) -> BanditInstance:
    return collapse_family((coverage,))[0] if family == "collapse" else random_family((coverage,))[0]


def _family_runs(
    instance: BanditInstance, settings: ExperimentSettings, width: int, seeds: tuple[int, ...]
) -> tuple[tuple, list[float]]:
    """``runs[method][policy][seed]`` on one instance (``None`` where diverged), and the network's starting KL per seed."""
    network = network_for(instance, width)
    starts = [initial_parameters(instance, network, np.random.default_rng(seed)) for seed in seeds]
    linear = SoftmaxLinear(instance)
    networks = [NetworkPolicy(instance, network, params) for params in starts]
    runs = []
    for method in METHODS:

        def one(policy: PolicyClass, seed: int, method: str = method) -> Trajectory | None:
            return _or_diverged(lambda: _run(method, instance, policy, settings, seed))

        if method in EXACT_METHODS:
            linear_runs = (one(linear, seeds[0]),) * len(seeds)
        else:
            linear_runs = tuple(one(linear, seed) for seed in seeds)
        runs.append((linear_runs, tuple(one(policy, seed) for policy, seed in zip(networks, seeds))))
    return tuple(runs), [base_fit_kl(instance, network, params) for params in starts]


def _measure(runs: list[Trajectory | None], eps: float) -> dict[str, np.ndarray]:
    """Per run: coverage floor, reached, costs to eps, final gap, worst inner KL, diverged.

    ``nan`` and ``-1`` stand in where a run diverged.
    """

    def cost(value: int | None) -> int:
        return -1 if value is None else value

    rows = [
        (np.nan, False, -1, -1, np.nan, np.nan, True)
        if run is None
        else (
            run.min_log10_coverage,
            run.first_eps_optimal(eps) is not None,
            cost(run.steps_to_eps(eps)),
            cost(run.responses_to_eps(eps)),
            float(run.suboptimality[-1]),
            np.nan if run.inner_kl is None else float(np.max(run.inner_kl)),
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
        trajectories=tuple(all_runs),
        settings=settings,
        width=width,
        **measured,
    )
