"""A two-layer network policy beyond softmax-linear, run through the book's algorithms.

The paper's guarantees are for softmax-linear policies over frozen features (paper section 2.2);
its authors list parameter sharing beyond linear as open. This subpackage is a small, exact
laboratory for that question. The policy is a softmax over a two-layer ``tanh`` network of the
instance's features, with an optional linear skip term:

    ``f(x, y) = <v, tanh(W phi(x, y) + b)> + <theta, phi(x, y)>``,
    ``pi(y|x) = exp f(x, y) / sum_y' exp f(x, y')``.

Its parameters ``(W, b, v, theta)`` travel as one flat vector. Every objective here depends on
the parameters only through the logit table ``f``, so one hand-written backward pass
(vectorized over all prompts and responses) turns the logit sensitivity ``dL/df(x, y)`` of any
objective into its exact parameter gradient:

- ``J`` and ``J_beta(.; pi_ref)`` (paper Eqs. (5) and (13)): ``dL/df(x, y) = rho(x) pi(y|x) (a(x, y) - E_pi a)``
  with ``a = r`` or ``a = r - beta log(pi / pi_ref)``;
- a batch average ``mean_i c_i log pi(y_i|x_i)`` (sampled REINFORCE, PPO-NoClip of paper section 3.2):
  ``dL/df(x, y) = mean_i c_i (1[x = x_i, y = y_i] - 1[x = x_i] pi(y|x))``.

Those two are the score sums of the policy protocol (:mod:`covpo.policy_classes`), so the
network is a policy class and the package's own algorithms run on it unchanged:
``covpo.run(name, instance, policy=NetworkPolicy(...), ...)`` for exact REINFORCE
(:mod:`covpo.algorithms.reinforce`), APMD with ``K`` exact gradient steps per reset
(:mod:`covpo.algorithms.mirror_descent`), sampled REINFORCE and PPO-NoClip
(:mod:`covpo.algorithms.ppo_noclip`). One job per module:

- :mod:`covpo.labs.nonlinear.network`: the network, its forward pass, the hand backward pass,
  the logit sensitivities, and its initialization at the base model;
- :mod:`covpo.labs.nonlinear.policy`: the network as a policy class;
- :mod:`covpo.labs.nonlinear.experiment`: all the methods, for the linear and the network
  policy, on one instance of each chapter-4 family (:mod:`covpo.families`).

The network, its initialization and every constant are ours. Every public name is re-exported
here, so ``from covpo.labs.nonlinear import nonlinear_experiment`` works whichever module holds it.
"""

from .experiment import (
    COLLAPSE_SETTINGS,
    EXACT_METHODS,
    FAMILIES,
    METHODS,
    POLICIES,
    RANDOM_SETTINGS,
    ExperimentSettings,
    NonlinearExperiment,
    nonlinear_experiment,
)
from .network import (
    BASE_FIT_MAX_ITERATIONS,
    DEFAULT_HIDDEN_SCALE,
    DEFAULT_OUTPUT_SCALE,
    DEFAULT_WIDTH,
    SPARSE_DENSITY,
    ForwardPass,
    NetworkParameters,
    TwoLayerNetwork,
    base_fit_kl,
    batch_sensitivity,
    feature_matrix,
    forward,
    initial_parameters,
    logit_backprop,
    network_for,
    population_sensitivity,
)
from .policy import NetworkPolicy

__all__ = [
    "BASE_FIT_MAX_ITERATIONS",
    "COLLAPSE_SETTINGS",
    "DEFAULT_HIDDEN_SCALE",
    "DEFAULT_OUTPUT_SCALE",
    "DEFAULT_WIDTH",
    "EXACT_METHODS",
    "ExperimentSettings",
    "FAMILIES",
    "ForwardPass",
    "METHODS",
    "NetworkParameters",
    "NetworkPolicy",
    "NonlinearExperiment",
    "POLICIES",
    "RANDOM_SETTINGS",
    "SPARSE_DENSITY",
    "TwoLayerNetwork",
    "base_fit_kl",
    "batch_sensitivity",
    "feature_matrix",
    "forward",
    "initial_parameters",
    "logit_backprop",
    "network_for",
    "nonlinear_experiment",
    "population_sensitivity",
]
