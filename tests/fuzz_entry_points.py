"""The public entry points of the package, each with one small valid call, shared by the fuzz suite and its report.

Every function or class a user calls is listed once as an :class:`EntryPoint`: a name, the
callable, a factory of keyword arguments for one good call (fresh generators every time, tiny
instances, well under 0.2 s), and the kind of each argument that is fuzzed. The kind decides
which bad values apply (:func:`bad_values`): a count gets 0, a negative, NaN, infinity, 1e308,
a string, ``None``, a bool and a fraction; a log-probability table gets NaN entries, a wrong
shape, an empty array, unnormalized rows and a table of probabilities; and so on. The fuzz
suite (``tests/test_fuzz.py``) and the report script (``scripts/fuzz_report.py``) both read
:data:`ENTRY_POINTS`, so they fuzz exactly the same surface. The bad-input promise is issue 18's;
the algorithms are those of Huang et al. (2026).
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping
import dataclasses
from dataclasses import dataclass, field

import numpy as np

import covpo
from covpo import batches, coverage_instances, families, instances, objectives, policies, policy_classes, trajectory
from covpo import collapse_instance as collapse
from covpo.algorithms import best_of_n, filtered_sft, grpo, kimipo, mirror_descent, npg
from covpo.algorithms import ppo_lite, ppo_noclip, rebel, reinforce
from covpo.experiments import mirror_descent as md_experiments
from covpo.experiments import population as squared
from covpo.experiments import ppo as ppo_experiments
from covpo.experiments import setting
from covpo.experiments import squared_loss as squared_experiments
from covpo.experiments import sweeps
from covpo.experiments.collapse import engine, landscape, resets, sampled
from covpo.experiments.collapse import sweeps as collapse_sweeps
from covpo.experiments.implications import head_to_head, tuning
from covpo.labs import nonlinear, sequences
from covpo.plots import collapse as collapse_plots
from covpo.plots import mirror_descent as md_plots
from covpo.plots import ppo as ppo_plots
from covpo.plots import setting as setting_plots
from covpo.plots import squared_loss as squared_plots
from tests.helpers import small_instance


@dataclass(frozen=True)
class BadValue:
    """One bad value for one argument.

    Attributes
    ----------
    label
        What is wrong with it, e.g. ``"nan"`` or ``"probabilities_for_logs"``.
    value
        The value passed in place of the good one.
    clearly_bad
        Whether any finite result for it is a silent wrong answer. False only for extreme
        magnitudes of a real number (``1e308`` as a learning rate), which a function may handle.
    """

    label: str
    value: object
    clearly_bad: bool = True


@dataclass(frozen=True)
class EntryPoint:
    """One public callable and one good call of it.

    Attributes
    ----------
    name
        ``module.function`` as a user writes it (``run:<algorithm>`` for :func:`covpo.run`).
    function
        The callable.
    arguments
        Builds the keyword arguments of one good call (fresh each time: generators are stateful).
    kinds
        The kind of each fuzzed argument; arguments not listed (titles, progress flags) are not fuzzed.
    infinite_ok
        Whether a valid result may hold infinity (a bound at ``t = 0``); NaN is never valid.
    optional
        Arguments whose default is ``None``, for which ``None`` is a valid value.
    """

    name: str
    function: Callable[..., object]
    arguments: Callable[[], dict[str, object]]
    kinds: Mapping[str, str] = field(default_factory=dict)
    infinite_ok: bool = False
    optional: frozenset[str] = frozenset()


def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed."""
    return np.random.default_rng(1)


def instance() -> covpo.BanditInstance:
    """The shared tiny instance: 3 prompts, 5 responses, 4 features."""
    return small_instance()


def tiny_collapse() -> collapse.CollapseInstance:
    """A collapse instance with ten zero-reward responses."""
    return collapse.collapse_instance(gap=0.1, n_zero=10)


def tiny_sequences() -> sequences.SequenceInstance:
    """A token-sequence collapse instance: vocabulary 2, length 2."""
    return sequences.sequence_collapse_instance(gap=0.1, vocab_size=2, length=2)


def theta(bandit: covpo.BanditInstance | None = None) -> np.ndarray:
    """A small parameter vector for ``bandit`` (the shared instance by default)."""
    bandit = bandit or instance()
    return np.linspace(-0.3, 0.4, bandit.dim)


def log_table(bandit: covpo.BanditInstance | None = None) -> np.ndarray:
    """The policy's log-probabilities at :func:`theta`, one row per prompt."""
    bandit = bandit or instance()
    return policies.log_policy(bandit, theta(bandit))


def base_table() -> np.ndarray:
    """The base policy's log-probabilities on the shared instance."""
    return policies.base_log_policy(instance())


def batch() -> batches.ResponseBatch:
    """A batch of eight responses from the base policy of the shared instance."""
    return batches.draw_batch(instance(), base_table(), 8, rng())


def grouped_batch() -> batches.ResponseBatch:
    """Four prompts with three responses each from the base policy of the shared instance."""
    return batches.draw_batch(instance(), base_table(), 4, rng(), group_size=3)


def paired_batch() -> batches.ResponseBatch:
    """Four prompts with two responses each from the base policy of the shared instance."""
    return batches.draw_batch(instance(), base_table(), 4, rng(), group_size=2)


def method(algorithm: str = "reinforce") -> sweeps.Method:
    """A tiny sweep method: three iterations of a small batch."""
    if algorithm == "reinforce":
        return sweeps.Method("REINFORCE", "reinforce", {"n_iterations": 3, "batch_size": 4}, etas=(0.5,))
    return sweeps.Method(
        "PPO-NoClip", "ppo_noclip", {"beta": 1.0, "n_iterations": 2, "batch_size": 4, "inner_steps": 2}, etas=(0.5,)
    )


def network() -> nonlinear.TwoLayerNetwork:
    """A width-4 network for the shared instance."""
    return nonlinear.network_for(instance(), width=4)


def network_params() -> np.ndarray:
    """Initial parameters of :func:`network`."""
    return nonlinear.initial_parameters(instance(), network(), rng())


def trajectory_arrays() -> dict[str, object]:
    """The arrays of a three-point trajectory."""
    return {
        "algorithm": "demo", "optimal_value": 1.0, "gradient_steps": np.array([0, 1, 2]),
        "reward": np.array([0.2, 0.5, 0.7]), "log_coverage": np.array([-1.0, -1.5, -2.0]),
        "kl_to_base": np.array([0.0, 0.1, 0.2]),
    }


#: Hyperparameters of one tiny run per registered algorithm.
RUNS: Mapping[str, dict[str, object]] = {
    "reinforce": {"eta": 0.5, "n_iterations": 3, "batch_size": 4},
    "reinforce_exact": {"eta": 0.5, "n_iterations": 3},
    "mirror_descent_exact": {"beta": 1.0, "n_iterations": 3},
    "apmd_exact": {"beta": 1.0, "n_iterations": 3},
    "apmd": {"beta": 1.0, "eta": 0.5, "n_iterations": 2, "inner_steps": 2},
    "ppo_noclip": {"beta": 1.0, "eta": 0.5, "n_iterations": 2, "batch_size": 4, "inner_steps": 2},
    "ppo_lite": {"beta": 1.0, "eta": 0.5, "n_iterations": 2, "batch_size": 4, "inner_steps": 2},
    "grpo_fixed": {"beta": 0.1, "eta": 0.5, "n_iterations": 2, "batch_size": 2, "group_size": 3, "inner_steps": 2},
    "grpo_reset": {"beta": 0.1, "eta": 0.5, "n_iterations": 2, "batch_size": 2, "group_size": 3, "inner_steps": 2},
    "kimipo": {"beta": 1.0, "eta": 0.5, "n_iterations": 2, "batch_size": 2, "inner_steps": 2, "extra_responses": 2},
    "kimipo_norm": {
        "beta": 1.0, "eta": 0.5, "n_iterations": 2, "batch_size": 2, "inner_steps": 2, "extra_responses": 2,
    },
    "rebel_onpolicy": {"beta": 1.0, "eta": 0.5, "n_iterations": 2, "batch_size": 2, "inner_steps": 2},
    "npg": {"beta": 1.0, "n_iterations": 2, "batch_size": 2, "group_size": 3},
    "npg_exact": {"beta": 1.0, "n_iterations": 2},
    "best_of_n": {"delta": 0.1},
    "filtered_sft": {"eta": 0.5, "n_iterations": 2, "batch_size": 2, "group_size": 3, "inner_steps": 2},
}

#: The kind of an argument from its name, unless an entry point says otherwise.
KIND_BY_NAME: Mapping[str, str] = {
    "instance": "instance", "rng": "rng", "theta": "theta", "beta": "positive", "eta": "positive",
    "n_iterations": "count", "batch_size": "count", "inner_steps": "count", "group_size": "count",
    "extra_responses": "count", "delta": "probability", "eps": "positive", "log_probs": "log_table",
    "log_p": "log_table", "log_q": "log_table", "log_ref": "log_table", "log_reference": "log_table",
    "kl": "option", "baseline": "option", "statistic": "option", "n": "count", "trials": "count",
    "max_steps": "count", "n_steps": "count", "n_records": "count", "n_zero": "count0", "gap": "probability",
    "optimal_prob": "probability", "distractor_prob": "probability", "target_coverage": "positive",
    "n_prompts": "count", "n_responses": "count", "dim": "count", "base_scale": "positive",
    "feature_norm": "positive", "clip_epsilon": "probability", "thresholds": "thresholds", "prompts": "indices",
    "responses": "indices", "std_eps": "nonnegative", "coverage": "positive", "budget": "count",
    "width": "positive", "seed": "count0", "n_seeds": "count", "response_budget": "count", "margin": "probability",
    "vocab_size": "count", "length": "count", "record_every": "count", "batch": "object", "method": "object",
    "network": "object", "params": "theta", "reference_theta": "theta", "log_coverage": "log_coverage",
    "coverages": "grid", "betas": "grid", "etas": "grid", "widths": "grid", "group_sizes": "count_grid",
    "batch_sizes": "count_grid", "ns": "count_grid", "instances": "object", "methods": "object", "u": "grid",
    "v": "grid", "logits": "theta", "t": "count0", "rewards": "rewards", "kept": "mask",
    "eta_beta": "positive", "horizon": "positive", "scales": "real_grid", "n_batches": "count", "radius": "positive",
    "n_points": "count", "group_beta": "positive", "eta_scale": "positive", "steps": "grid", "policy": "object",
    "reference": "option", "ratio": "option", "clip_eps": "probability", "collapse_coverage": "positive",
    "random_coverage": "positive", "family": "option", "size": "option", "inner_steps_grid": "count_grid",
    "name": "option",
}


def kinds(arguments: Mapping[str, object], skip: tuple[str, ...] = (), **overrides: str) -> dict[str, str]:
    """The kind of every argument in ``arguments`` that :data:`KIND_BY_NAME` or ``overrides`` names."""
    found = {name: KIND_BY_NAME[name] for name in arguments if name in KIND_BY_NAME and name not in skip}
    found.update(overrides)
    return found


def entry(name: str, function: Callable[..., object], arguments: Callable[[], dict[str, object]],
          skip: tuple[str, ...] = (), infinite_ok: bool = False, **overrides: str) -> EntryPoint:
    """An :class:`EntryPoint` whose argument kinds come from their names, with ``overrides``."""
    good = arguments()
    target = covpo.ALGORITHMS[good["name"]].function if function is covpo.run else function
    optional = frozenset(
        parameter.name for parameter in inspect.signature(target).parameters.values() if parameter.default is None
    )
    return EntryPoint(name, function, arguments, kinds(good, skip, **overrides), infinite_ok, optional)


def run_entry(algorithm: str) -> EntryPoint:
    """``covpo.run`` of one registered algorithm with its tiny hyperparameters."""
    samples = covpo.ALGORITHMS[algorithm].samples

    def arguments() -> dict[str, object]:
        return {"name": algorithm, "instance": instance(), "rng": rng() if samples else None, **RUNS[algorithm]}

    beta = {"beta": "nonnegative"} if algorithm.startswith("grpo") else {}
    return entry(f"run:{algorithm}", covpo.run, arguments, skip=() if samples else ("rng",), **beta)


def _entries() -> tuple[EntryPoint, ...]:
    c = tiny_collapse
    found = [run_entry(algorithm) for algorithm in covpo.ALGORITHMS]
    found += [
        # algorithm modules: run functions, objectives and gradients
        entry("reinforce.reinforce", reinforce.reinforce,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["reinforce"]}),
        entry("reinforce.exact_reinforce", reinforce.exact_reinforce,
              lambda: {"instance": instance(), "theta": theta(), **RUNS["reinforce_exact"]}),
        entry("reinforce.sampled_gradient", reinforce.sampled_gradient, lambda: {
            "instance": instance(), "theta": theta(), "prompts": np.array([0, 1, 2, 0]),
            "responses": np.array([1, 2, 3, 4]), "beta": 0.5}, beta="nonnegative"),
        entry("mirror_descent.exact_mirror_descent", mirror_descent.exact_mirror_descent,
              lambda: {"instance": instance(), **RUNS["mirror_descent_exact"]}),
        entry("mirror_descent.apmd", mirror_descent.apmd, lambda: {"instance": instance(), **RUNS["apmd"]}),
        entry("mirror_descent.mirror_descent_policy", mirror_descent.mirror_descent_policy,
              lambda: {"instance": instance(), "beta": 1.0, "t": 3}, t="nonnegative"),
        entry("mirror_descent.mirror_descent_bound", mirror_descent.mirror_descent_bound,
              lambda: {"instance": instance(), "beta": 1.0, "t": 3.0}, t="nonnegative"),
        entry("mirror_descent.exact_target_theta", mirror_descent.exact_target_theta,
              lambda: {"instance": instance(), "theta": theta(), "beta": 1.0}),
        entry("ppo_noclip.ppo_noclip", ppo_noclip.ppo_noclip,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["ppo_noclip"]}),
        entry("ppo_noclip.ppo_noclip_objective", ppo_noclip.ppo_noclip_objective,
              lambda: {"instance": instance(), "theta": theta(), "batch": batch(), "beta": 1.0}),
        entry("ppo_noclip.ppo_noclip_gradient", ppo_noclip.ppo_noclip_gradient,
              lambda: {"instance": instance(), "theta": theta(), "batch": batch(), "beta": 1.0}),
        entry("ppo_lite.ppo_lite", ppo_lite.ppo_lite,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["ppo_lite"]}),
        entry("ppo_lite.ppo_lite_objective", ppo_lite.ppo_lite_objective, lambda: {
            "instance": instance(), "theta": theta(), "batch": batch(), "log_reference": base_table(), "beta": 1.0}),
        entry("ppo_lite.ppo_lite_gradient", ppo_lite.ppo_lite_gradient, lambda: {
            "instance": instance(), "theta": theta(), "batch": batch(), "log_reference": base_table(), "beta": 1.0,
            "thresholds": (0.5, 2.0)}),
        entry("ppo_lite.clip_width_thresholds", ppo_lite.clip_width_thresholds,
              lambda: {"beta": 1.0, "max_reward": 1.0, "width": 1.0}, max_reward="positive"),
        entry("grpo.grpo", grpo.grpo, lambda: {"instance": instance(), "rng": rng(), **RUNS["grpo_fixed"]},
              beta="nonnegative"),
        entry("grpo.grpo_gradient", grpo.grpo_gradient, lambda: {
            "instance": instance(), "theta": theta(), "batch": grouped_batch(),
            "advantages": grpo.group_advantages(grouped_batch().rewards.reshape(4, 3)),
            "log_reference": base_table(), "beta": 0.1}, advantages="theta", beta="nonnegative"),
        entry("grpo.group_advantages", grpo.group_advantages,
              lambda: {"rewards": np.array([[0.0, 1.0, 0.5], [1.0, 1.0, 0.0]]), "std_eps": 1e-4}),
        entry("npg.npg", npg.npg, lambda: {"instance": instance(), "rng": rng(), **RUNS["npg"]}),
        entry("npg.npg_step", npg.npg_step, lambda: {"instance": instance(), "theta": theta(), "beta": 1.0}),
        entry("npg.sampled_npg_direction", npg.sampled_npg_direction,
              lambda: {"instance": instance(), "theta": theta(), "rng": rng(), "batch_size": 4, "group_size": 2}),
        entry("mirror_descent.apmd_exact", mirror_descent.apmd_exact,
              lambda: {"instance": instance(), **RUNS["apmd_exact"]}),
        entry("grpo.grpo_objective", grpo.grpo_objective, lambda: {
            "instance": instance(), "theta": theta(), "batch": grouped_batch(),
            "advantages": grpo.group_advantages(grouped_batch().rewards.reshape(4, 3)),
            "log_reference": base_table(), "beta": 0.1}, advantages="theta", beta="nonnegative"),
        entry("kimipo.kimipo", kimipo.kimipo, lambda: {"instance": instance(), "rng": rng(), **RUNS["kimipo"]}),
        entry("kimipo.kimipo (normalizer baseline)", kimipo.kimipo,
              lambda: {"instance": instance(), "rng": rng(), "baseline": "normalizer", **RUNS["kimipo_norm"]}),
        entry("rebel.rebel_onpolicy", rebel.rebel_onpolicy,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["rebel_onpolicy"]}),
        entry("npg.fisher_information", npg.fisher_information, lambda: {"instance": instance(), "theta": theta()}),
        entry("npg.npg_direction", npg.npg_direction, lambda: {"instance": instance(), "theta": theta()}),
        entry("rebel.rebel_gradient", rebel.rebel_gradient,
              lambda: {"instance": instance(), "theta": theta(), "batch": paired_batch(), "beta": 1.0}),
        entry("population.kimi_population_loss", squared.kimi_population_loss, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "beta": 1.0,
            "baseline": np.zeros(3)}, baseline="theta"),
        entry("filtered_sft.filtered_sft_log_likelihood", filtered_sft.filtered_sft_log_likelihood, lambda: {
            "instance": instance(), "theta": theta(), "kept": np.eye(3, 5, dtype=bool)}),
        entry("filtered_sft.filtered_sft", filtered_sft.filtered_sft,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["filtered_sft"]}),
        entry("filtered_sft.filtered_sft_gradient", filtered_sft.filtered_sft_gradient, lambda: {
            "instance": instance(), "theta": theta(), "kept": np.eye(3, 5, dtype=bool)}),
        entry("population.kimi_population_gradient", squared.kimi_population_gradient, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "beta": 1.0,
            "baseline": np.zeros(3)}, baseline="theta"),
        entry("population.rebel_population_loss", squared.rebel_population_loss, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "beta": 1.0}),
        entry("population.normalizer_baseline_bias_approximation", squared.normalizer_baseline_bias_approximation,
              lambda: {"instance": instance(), "log_reference": base_table(), "beta": 1.0, "group_size": 4}),
        entry("population.mean_baseline_moments", squared.mean_baseline_moments,
              lambda: {"instance": instance(), "log_reference": base_table(), "extra_responses": 2}),
        # Best-of-N
        entry("best_of_n.best_of_n", best_of_n.best_of_n, lambda: {"instance": instance(), "delta": 0.1}),
        entry("best_of_n.best_of_n_success", best_of_n.best_of_n_success,
              lambda: {"log_coverage": np.array([-1.0, -3.0]), "n": 5}),
        entry("best_of_n.log_best_of_n_success", best_of_n.log_best_of_n_success,
              lambda: {"log_coverage": np.array([-1.0, -3.0]), "n": np.array([1, 10])}, n="count_grid"),
        entry("best_of_n.best_of_n_samples_needed", best_of_n.best_of_n_samples_needed,
              lambda: {"log_coverage": np.array([-1.0, -3.0]), "delta": 0.1}),
        entry("best_of_n.best_of_n_samples_bound", best_of_n.best_of_n_samples_bound,
              lambda: {"log_coverage": -2.0, "delta": 0.1}),
        entry("best_of_n.sampled_best_of_n", best_of_n.sampled_best_of_n,
              lambda: {"instance": instance(), "log_probs": base_table(), "n": 3, "trials": 20, "rng": rng()}),
        entry("best_of_n.best_of_n_log_policy", best_of_n.best_of_n_log_policy,
              lambda: {"instance": instance(), "log_probs": base_table(), "n": 3}),
        entry("best_of_n.best_of_n_size", best_of_n.best_of_n_size, lambda: {"instance": instance(), "delta": 0.1}),
        # instances and families
        entry("instances.BanditInstance", instances.BanditInstance, lambda: {
            "prompt_probs": np.array([0.4, 0.6]), "features": np.arange(24.0).reshape(2, 4, 3) / 24.0,
            "rewards": np.array([[0.0, 1.0, 0.5, 0.2], [1.0, 0.0, 0.3, 0.1]]),
            "base_theta": np.array([0.1, -0.2, 0.3])},
              prompt_probs="probs", features="theta", base_theta="theta"),
        entry("instances.tabular_instance", instances.tabular_instance, lambda: {
            "rewards": np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.3]]),
            "base_probs": np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]),
            "prompt_probs": np.array([0.5, 0.5])}, base_probs="probs", prompt_probs="probs"),
        entry("instances.random_softmax_linear_instance", instances.random_softmax_linear_instance,
              lambda: {"rng": rng(), "n_prompts": 2, "n_responses": 3, "dim": 2}),
        entry("families.stacked_collapse_instance", families.stacked_collapse_instance,
              lambda: {"n_prompts": 2, "gap": 0.1, "coverage": 10.0, "n_zero": 5}, coverage="positive"),
        entry("families.random_family", families.random_family, lambda: {"coverages": (5.0, 10.0), "seed": 0}),
        entry("families.collapse_family", families.collapse_family, lambda: {"coverages": (10.0, 20.0)}),
        entry("coverage_instances.log_coverage_coefficient", coverage_instances.log_coverage_coefficient,
              lambda: {"instance": instance(), "theta": theta(), "statistic": "mean"}),
        entry("coverage_instances.dial_coverage", coverage_instances.dial_coverage,
              lambda: {"instance": instance(), "target_coverage": 10.0}),
        entry("coverage_instances.dialled_coverage_instance", coverage_instances.dialled_coverage_instance,
              lambda: {"rng": rng(), "n_prompts": 2, "n_responses": 3, "dim": 2, "target_coverage": 5.0}),
        entry("collapse_instance.collapse_instance", collapse.collapse_instance,
              lambda: {"gap": 0.1, "optimal_prob": 0.1, "distractor_prob": 0.2, "n_zero": 10}),
        entry("collapse_instance.class_log_probs", collapse.class_log_probs,
              lambda: {"instance": c(), "logits": np.array([0.5, 0.0, -0.5])}, instance="collapse"),
        entry("collapse_instance.logits_from_plane", collapse.logits_from_plane,
              lambda: {"instance": c(), "u": np.array([0.1, 0.2]), "v": np.array([0.0, -0.1])},
              instance="collapse", u="theta", v="theta"),
        entry("collapse_instance.plane_coordinates", collapse.plane_coordinates,
              lambda: {"instance": c(), "logits": np.array([0.5, 0.0, -0.5])}, instance="collapse"),
        entry("collapse_instance.strongest_eps_optimal_beta", collapse.strongest_eps_optimal_beta,
              lambda: {"instance": c(), "eps": 0.05, "margin": 0.5}, instance="collapse"),
        entry("collapse_instance.regularized_optimum_suboptimality", collapse.regularized_optimum_suboptimality,
              lambda: {"instance": c(), "beta": 0.1}, instance="collapse"),
        # policies, objectives, batches, trajectories, policy classes
        entry("policies.log_policy", policies.log_policy, lambda: {"instance": instance(), "theta": theta()}),
        entry("policies.logits", policies.logits, lambda: {"instance": instance(), "theta": theta()}),
        entry("policies.mean_features", policies.mean_features,
              lambda: {"instance": instance(), "log_probs": log_table()}),
        entry("policies.policy_probs", policies.policy_probs, lambda: {"log_probs": log_table()}),
        entry("policies.kl_per_prompt", policies.kl_per_prompt, lambda: {"log_p": log_table(), "log_q": base_table()}),
        entry("policies.expected_kl", policies.expected_kl,
              lambda: {"instance": instance(), "log_p": log_table(), "log_q": base_table()}),
        entry("policies.log_coverage", policies.log_coverage,
              lambda: {"instance": instance(), "log_probs": log_table()}),
        entry("policies.coverage_coefficient", policies.coverage_coefficient,
              lambda: {"instance": instance(), "log_probs": log_table()}),
        entry("policies.value_per_prompt", policies.value_per_prompt,
              lambda: {"instance": instance(), "log_probs": log_table()}),
        entry("policies.expected_reward", policies.expected_reward,
              lambda: {"instance": instance(), "log_probs": log_table()}),
        entry("policies.sample_prompts", policies.sample_prompts,
              lambda: {"instance": instance(), "rng": rng(), "batch_size": 4}),
        entry("policies.sample_responses", policies.sample_responses,
              lambda: {"log_probs": log_table(), "prompts": np.array([0, 2, 1]), "rng": rng()}),
        entry("objectives.regularized_objective", objectives.regularized_objective,
              lambda: {"instance": instance(), "log_probs": log_table(), "log_ref": base_table(), "beta": 1.0}),
        entry("objectives.reward_gradient", objectives.reward_gradient,
              lambda: {"instance": instance(), "theta": theta()}),
        entry("objectives.kl_gradient", objectives.kl_gradient,
              lambda: {"instance": instance(), "theta": theta(), "log_ref": base_table()}),
        entry("objectives.regularized_gradient", objectives.regularized_gradient,
              lambda: {"instance": instance(), "theta": theta(), "log_ref": base_table(), "beta": 1.0}),
        entry("objectives.regularized_optimum", objectives.regularized_optimum,
              lambda: {"instance": instance(), "log_ref": base_table(), "beta": 1.0}),
        entry("objectives.regularized_gap", objectives.regularized_gap,
              lambda: {"instance": instance(), "log_probs": log_table(), "log_ref": base_table(), "beta": 1.0}),
        entry("batches.draw_batch", batches.draw_batch,
              lambda: {
                  "instance": instance(), "log_probs": base_table(), "batch_size": 4, "rng": rng(), "group_size": 2}),
        entry("batches.batch_terms", batches.batch_terms,
              lambda: {"instance": instance(), "theta": theta(), "batch": batch()}),
        entry("batches.prompt_kl", batches.prompt_kl, lambda: {
            "instance": instance(), "log_probs": log_table(), "log_reference": base_table(),
            "prompts": np.array([0, 1, 1])}),
        entry("trajectory.trajectory_from_arrays", trajectory.trajectory_from_arrays, trajectory_arrays,
              gradient_steps="grid", reward="theta", log_coverage="theta", kl_to_base="theta", optimal_value="real"),
        entry("policy_classes.SoftmaxLinear", policy_classes.SoftmaxLinear, lambda: {"instance": instance()}),
        # experiments, at tiny sizes
        entry("experiments.setting.best_of_n_curves", setting.best_of_n_curves, lambda: {
            "coverages": np.array([0.1, 0.5]), "ns": np.array([1, 4]), "trials": 10, "rng": rng()}),
        entry("experiments.setting.coverage_instance", setting.coverage_instance,
              lambda: {"coverage": 0.2, "n_responses": 4}, coverage="probability"),
        entry("experiments.mirror_descent.mirror_descent_rate", md_experiments.mirror_descent_rate, lambda: {
            "instances": [instance()], "betas": (1.0,), "n_iterations": 3, "eps": 0.1}, infinite_ok=True),
        entry("experiments.sweeps.cost_sweep", sweeps.cost_sweep, lambda: {
            "instances": [instance()], "coverages": (5.0,), "methods": (method(),), "eps": 0.1, "seed": 0},
              infinite_ok=True),
        entry("experiments.sweeps.compare_at_budget", sweeps.compare_at_budget, lambda: {
            "instance": instance(), "methods": (method("ppo_noclip"),), "response_budget": 16, "seed": 0}),
        entry("experiments.sweeps.summarize_run", sweeps.summarize_run, lambda: {
            "method": method(), "instance": instance(), "eta": 0.5, "seed": (0, 1), "eps": 0.1}, seed="object"),
        entry("experiments.collapse.exact_collapse_run", engine.exact_collapse_run, lambda: {
            "instance": c(), "eta": 4.0, "n_iterations": 50, "n_records": 5}, instance="collapse"),
        entry("experiments.collapse.sampled_collapse_run", sampled.sampled_collapse_run, lambda: {
            "instance": c(), "eta": 4.0, "n_iterations": 10, "batch_size": 4, "rng": rng(), "n_records": 5},
              instance="collapse"),
        entry("experiments.collapse.exact_apmd_run", resets.exact_apmd_run, lambda: {
            "instance": c(), "beta": 0.5, "inner_steps": 4, "eta": 4.0, "gradient_steps": 40, "n_records": 5},
              instance="collapse", gradient_steps="count"),
        entry("experiments.collapse.learning_rate_sweep", collapse_sweeps.learning_rate_sweep, lambda: {
            "instance": c(), "etas": (1.0, 4.0), "n_steps": 20}, instance="collapse"),
        entry("experiments.collapse.landscape_grid", landscape.landscape_grid, lambda: {
            "instance": c(), "beta": 0.1, "n_points": 5}, instance="collapse"),
        entry("experiments.ppo.target_log_ratio_extent", ppo_experiments.target_log_ratio_extent, lambda: {
            "instance": instance(), "thetas": np.stack([theta(), 0.5 * theta()]), "beta": 1.0}, thetas="theta"),
        entry("experiments.ppo.estimator_spread", ppo_experiments.estimator_spread, lambda: {
            "instance": instance(), "beta": 1.0, "scales": (0.5, 1.0), "batch_size": 4, "n_batches": 3, "seed": 0}),
        entry("experiments.squared_loss.population_baselines", squared_experiments.population_baselines, lambda: {
            "instance": instance(), "log_reference": base_table(), "beta": 1.0, "group_size": 4}),
        entry("experiments.squared_loss.two_response_instance", squared_experiments.two_response_instance,
              lambda: {"optimal_prob": 0.3}),
        entry("experiments.implications.tuning_prescriptions", tuning.tuning_prescriptions, lambda: {
            "instance": instance(), "betas": (0.5, 1.0), "n_iterations": 5, "eta_beta": 4.0, "eps": 0.1}),
        entry("experiments.implications.head_to_head_run", head_to_head.head_to_head_run, lambda: {
            "method": method(), "instance": instance(), "eta": 0.5, "rng": rng(), "eps": 0.1}),
        # laboratories
        entry("labs.sequences.sequence_collapse_instance", sequences.sequence_collapse_instance, lambda: {
            "gap": 0.1, "vocab_size": 2, "length": 2, "optimal_prob": 0.1, "distractor_prob": 0.2}),
        entry("labs.sequences.run_on_sequences", sequences.run_on_sequences, lambda: {
            "name": "ppo_noclip", "instance": tiny_sequences(), "rng": rng(), **RUNS["ppo_noclip"]},
              instance="sequence_instance"),
        entry("labs.sequences.sampled_sequence_ppo", sequences.sampled_sequence_ppo, lambda: {
            "instance": tiny_sequences(), "beta": 1.0, "eta": 0.5, "inner_steps": 2, "n_iterations": 2, "batch_size": 4,
            "rng": rng(), "group_size": 2}, instance="sequence_instance", rng="object"),
        entry("labs.sequences.sequence_log_policy", sequences.sequence_log_policy, lambda: {
            "instance": tiny_sequences(), "theta": tiny_sequences().base_theta.copy()}, instance="sequence_instance"),
        entry("labs.nonlinear.network_for", nonlinear.network_for, lambda: {"instance": instance(), "width": 4},
              width="count"),
        entry("labs.nonlinear.forward", nonlinear.forward, lambda: {
            "instance": instance(), "network": network(), "params": network_params()}),
        entry("labs.nonlinear.initial_parameters", nonlinear.initial_parameters, lambda: {
            "instance": instance(), "network": network(), "rng": rng(), "hidden_scale": 1.0, "output_scale": 0.01},
              hidden_scale="positive", output_scale="positive"),
        # widget figures, at valid slider values
        entry("plots.setting.best_of_n_explorer_figure", setting_plots.best_of_n_explorer_figure,
              lambda: {"coverage": 0.05, "n": 20, "delta": 0.05}, coverage="probability"),
        entry("plots.collapse.collapse_explorer_figure", collapse_plots.collapse_explorer_figure,
              lambda: {"gap": 0.15, "beta": 0.0, "eta": 4.0, "budget": 1000}, beta="nonnegative"),
        entry("plots.mirror_descent.apmd_explorer_figure", md_plots.apmd_explorer_figure,
              lambda: {"beta": 0.5, "inner_steps": 8, "eta": 4.0, "budget": 100}),
        entry("plots.ppo.ppo_explorer_figure", ppo_plots.ppo_explorer_figure,
              lambda: {"beta": 1.0, "width": 1.0, "inner_steps": 2, "batch_size": 8}),
        entry("plots.squared_loss.squared_loss_explorer_figure", squared_plots.squared_loss_explorer_figure,
              lambda: {"beta": 0.5, "group_size": 1, "batch_size": 16}),
    ]
    return tuple(found)


#: Every public entry point, in the order above.
ENTRY_POINTS: tuple[EntryPoint, ...] = _entries()


def bad_values(kind: str, good: object) -> list[BadValue]:
    """The bad values that apply to an argument of ``kind`` whose good value is ``good``."""
    text, nothing = BadValue("string", "abc"), BadValue("none", None)
    if kind in ("count", "count0"):
        values = [BadValue("negative", -3), BadValue("nan", math.nan), BadValue("inf", math.inf),
                  BadValue("huge", 1e308), text, nothing, BadValue("bool", True), BadValue("fractional", 2.5)]
        return ([BadValue("zero", 0)] if kind == "count" else []) + values
    if kind in ("positive", "nonnegative", "probability", "real"):
        values = [BadValue("nan", math.nan), BadValue("inf", math.inf), text, nothing]
        if kind != "real":
            values += [BadValue("negative", -0.5), BadValue("huge", 1e308, clearly_bad=kind == "probability")]
        if kind in ("positive", "probability"):
            values.append(BadValue("zero", 0.0))
        if kind == "probability":
            values.append(BadValue("above_one", 1.5))
        return values
    if kind in ("instance", "collapse", "sequence_instance"):
        wrong = tiny_collapse() if kind == "instance" else instance()
        return [nothing, text, BadValue("wrong_type", wrong)]
    if kind == "rng":
        return [BadValue("int", 0), text] + ([] if good is None else [nothing])
    if kind == "object":
        return [nothing, text]
    if kind == "option":
        return [BadValue("unknown", "no-such-option"), nothing, BadValue("int", 0)]
    good_array = np.asarray(good, dtype=float)
    arrays = [text, nothing] + ([] if kind == "indices" else [BadValue("empty", np.array([]))])
    if kind in ("theta", "log_table", "probs", "rewards", "grid", "count_grid", "real_grid", "log_coverage"):
        arrays += [BadValue("nan_entry", _with(good_array, math.nan)),
                   BadValue("inf_entry", _with(good_array, math.inf))]
    if kind in ("theta", "log_table", "probs", "rewards"):
        arrays.append(BadValue("wrong_shape", np.concatenate([good_array.ravel(), [0.0]])))
    if kind == "log_table":
        arrays += [BadValue("probabilities_for_logs", np.exp(good_array)), BadValue("unnormalized", good_array + 1.0)]
    if kind == "probs":
        arrays += [BadValue("unnormalized", 2.0 * good_array), BadValue("negative_entry", _with(good_array, -0.5))]
    if kind in ("grid", "count_grid"):
        arrays.append(BadValue("negative_entry", _with(good_array, -1.0)))
    if kind == "count_grid":
        arrays.append(BadValue("fractional_entry", _with(good_array, 2.5)))
    if kind == "log_coverage":
        arrays.append(BadValue("probabilities_for_logs", np.abs(good_array) + 0.5))
    if kind == "indices":
        indices = np.array(good, dtype=np.int64)
        out_of_range, negative = indices.copy(), indices.copy()
        out_of_range[0], negative[0] = 99, -1
        arrays += [BadValue("out_of_range", out_of_range), BadValue("negative_entry", negative),
                   BadValue("fractional_entry", _with(good_array, 0.5)),
                   BadValue("nan_entry", _with(good_array, math.nan))]
    if kind == "mask":
        arrays += [BadValue("float_mask", np.full(good_array.shape, 0.5)),
                   BadValue("nan_entry", _with(good_array, math.nan)),
                   BadValue("wrong_shape", np.ones((1, 2), dtype=bool))]
    if kind == "thresholds":
        arrays += [BadValue("nan_entry", (math.nan, 1.0)), BadValue("reversed", (1.0, -1.0)),
                   BadValue("wrong_shape", (1.0,))]
        arrays = [value for value in arrays if value.label != "none"]
    return arrays


def _with(array: np.ndarray, value: float) -> np.ndarray:
    """A copy of ``array`` (at least one-dimensional) with its first entry replaced by ``value``."""
    changed = np.array(array, dtype=float, ndmin=1)
    changed.flat[0] = value
    return changed


def argument_bad_values(point: EntryPoint, argument: str) -> list[BadValue]:
    """The bad values of ``argument`` of ``point``: those of its kind, less ``None`` where ``None`` is its default."""
    found = bad_values(point.kinds[argument], point.arguments()[argument])
    return [bad for bad in found if not (bad.label == "none" and argument in point.optional)]


def cases() -> list[tuple[EntryPoint, str, BadValue]]:
    """Every (entry point, argument, bad value) the fuzz suite and the report try."""
    return [(point, argument, bad) for point in ENTRY_POINTS for argument in point.kinds
            for bad in argument_bad_values(point, argument)]


def is_finite_result(result: object, infinite_ok: bool = False, depth: int = 0) -> bool:
    """Whether every number in ``result`` (arrays, floats, dataclass fields such as a trajectory's) is finite.

    With ``infinite_ok`` only NaN counts as not finite. Figures, strings, ``None`` and booleans
    count as finite; objects of this package are searched through their attributes, a few levels deep.
    """
    if depth > 4 or result is None or isinstance(result, (str, bytes, bool, np.bool_)):
        return True
    if isinstance(result, np.ndarray) and result.dtype == object:
        return all(is_finite_result(item, infinite_ok, depth + 1) for item in result.ravel())
    if isinstance(result, (int, float, np.number, np.ndarray)):
        values = np.asarray(result)
        if values.dtype.kind not in "fciu":
            return True
        return bool(not np.any(np.isnan(values)) if infinite_ok else np.all(np.isfinite(values)))
    if isinstance(result, Mapping):
        return all(is_finite_result(value, infinite_ok, depth + 1) for value in result.values())
    if isinstance(result, (list, tuple)):
        return all(is_finite_result(item, infinite_ok, depth + 1) for item in result)
    if dataclasses.is_dataclass(result):
        return all(
            is_finite_result(getattr(result, item.name), infinite_ok, depth + 1) for item in dataclasses.fields(result)
        )
    if type(result).__module__.startswith("covpo") and hasattr(result, "__dict__"):
        return all(is_finite_result(value, infinite_ok, depth + 1) for value in vars(result).values())
    return True


def names_argument(message: str, argument: str) -> bool:
    """Whether an error message names ``argument`` as a word of its own."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(argument)}(?![A-Za-z0-9_])", message) is not None
