"""The public entry points of the package, each with one small valid call, shared by the fuzz suite and its report.

Every function or class a user calls is listed once as an :class:`EntryPoint`: a name, the
callable, a factory of keyword arguments for one good call (fresh generators every time, tiny
instances, well under 0.2 s), and the kind of each argument that is fuzzed. The kind decides which
bad values apply (:func:`bad_values`): a count gets 0, a negative, NaN, infinity, 1e308, a string,
``None``, a bool, a fraction and a complex number; a log-probability table gets NaN entries, a
wrong shape, an empty array, complex entries, unnormalized rows and a table of probabilities; a
label that must not be empty also gets the empty string; a flag gets strings and numbers; a list
of seeds gets an empty list and bad entries; and so on. The fuzz suite (``tests/test_fuzz.py``)
and the report script (``scripts/fuzz_report.py``) both read :data:`ENTRY_POINTS`, so they fuzz
exactly the same surface. Every public function and class of :mod:`covpo.experiments` and
:mod:`covpo.labs` is either an entry point here or in :data:`NOT_FUZZED` with the reason (result
records the package builds, and the JAX internals of the transformer laboratory); a test keeps
that true. The bad-input promise is issue 18's, extended by issue 33; the algorithms are those of
Huang et al. (2026).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import math
import os
import pkgutil
import re
from collections.abc import Callable, Iterable, Mapping
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import covpo
from covpo import batches, coverage_instances, families, instances, objectives, policies, policy_classes, trajectory
from covpo import collapse_instance as collapse
from covpo.algorithms import best_of_n, filtered_sft, grpo, kimipo, mirror_descent, npg
from covpo.algorithms import ppo_lite, ppo_noclip, rebel, reinforce, steps
from covpo.algorithms.ratios import RatioRecorder
from covpo.experiments import mirror_descent as md_experiments
from covpo.experiments import parallel
from covpo.experiments import population as squared
from covpo.experiments import setting
from covpo.experiments import sweeps
from covpo.experiments.collapse import engine, landscape, paper_figures, phases, reset_sweeps, resets, sampled
from covpo.experiments.collapse import step_sizes
from covpo.experiments.collapse import sweeps as collapse_sweeps
from covpo.experiments.implications import head_to_head, noise, paper_units, tuning
from covpo.experiments.implications import anchor as anchor_design
from covpo.experiments.implications import seeds as implication_seeds
from covpo.labs import nonlinear, sequences
from covpo.labs.sequences import experiment as sequence_experiment
from covpo.plots import collapse as collapse_plots
from covpo.plots import mirror_descent as md_plots
from covpo.plots import ppo as ppo_plots
from covpo.plots import setting as setting_plots
from covpo.plots import squared_loss as squared_plots
from covpo.diagnose import cli as diagnose_cli
from covpo.diagnose import measures as diagnose_measures
from covpo.diagnose import readers as diagnose_readers
from covpo.diagnose import report as diagnose_report
from covpo.diagnose import success as diagnose_success
from tests.helpers import small_instance

# The modules of the PPO and squared-loss chapters, by full name: each package re-exports
# functions named like its modules (``landscape``, ``table_1``), which an attribute import would return.
ppo_clipping, ppo_concavity, ppo_estimators, ppo_practice, ppo_ratios = (
    importlib.import_module(f"covpo.experiments.ppo.{name}")
    for name in ("clipping", "concavity", "estimators", "practice", "ratios")
)
squared_baselines, squared_batch_size, squared_curvature, squared_mse, squared_table_1, squared_inner_loop = (
    importlib.import_module(f"covpo.experiments.squared_loss.{name}")
    for name in ("baselines", "batch_size", "curvature", "mse", "table_1", "inner_loop")
)
squared_seeds, squared_eps_scaling = (
    importlib.import_module(f"covpo.experiments.squared_loss.{name}") for name in ("seeds", "eps_scaling")
)
ppo_inner_loop, ppo_coverage_loss_timing = (
    importlib.import_module(f"covpo.experiments.ppo.{name}") for name in ("inner_loop", "coverage_loss_timing")
)
ppo_reliability = importlib.import_module("covpo.experiments.ppo.reliability")
ppo_seeds, ppo_comparators = (
    importlib.import_module(f"covpo.experiments.ppo.{name}") for name in ("seeds", "comparators")
)
collapse_inner_factor, collapse_ridge = (
    importlib.import_module(f"covpo.experiments.collapse.{name}") for name in ("inner_factor", "ridge")
)

try:
    from covpo.labs import transformer
    from covpo.labs.transformer import analysis as transformer_analysis
    from covpo.labs.transformer import experiment as transformer_experiment
    from covpo.labs.transformer import frontier as transformer_frontier
    from covpo.labs.transformer import frontier_analysis as transformer_frontier_analysis
    from covpo.labs.transformer import literature as transformer_literature
    from covpo.labs.transformer import logs as transformer_logs
    from covpo.labs.transformer import diagnose_validation as transformer_validation
    from covpo.labs.transformer import task as transformer_task
    from covpo.labs.transformer import training as transformer_training
except ImportError:  # the transformer extra (JAX) is not installed
    transformer = transformer_analysis = transformer_experiment = transformer_literature = None
    transformer_frontier = transformer_frontier_analysis = transformer_task = transformer_training = None
    transformer_logs = transformer_validation = None


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
    argument_names
        The names of those arguments, in the good call's order: read from a good call, or declared
        by an entry whose good call needs the result of a run (:func:`entry`); a test checks
        them against the good call.
    kinds
        The kind of each fuzzed argument; arguments not listed (titles, progress flags) are not fuzzed.
    infinite_ok
        Whether a valid result may hold infinity (a bound at ``t = 0``).
    nan_ok
        Whether a valid result marks missing values with NaN (a study's ``beta`` where it ran
        unregularized, the cost of a run that never reached eps).
    optional
        Arguments whose default is ``None`` or whose type admits ``None``, for which ``None`` is a valid value.
    heavy
        Whether a good call takes seconds (a whole study, a compiled JAX program): it is never
        made, and only clearly bad values are tried, each of which must be refused before any work.
    """

    name: str
    function: Callable[..., object]
    arguments: Callable[[], dict[str, object]]
    argument_names: tuple[str, ...] = ()
    kinds: Mapping[str, str] = field(default_factory=dict)
    infinite_ok: bool = False
    optional: frozenset[str] = frozenset()
    heavy: bool = False
    nan_ok: bool = False


def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed."""
    return np.random.default_rng(1)


@functools.cache
def instance() -> covpo.BanditInstance:
    """The shared tiny instance: 3 prompts, 5 responses, 4 features (built once: instances are immutable)."""
    return small_instance()


@functools.cache
def _implication_seeds_runs() -> tuple[dict, ...]:
    return tuple(implication_seeds.seeds_record_runs())


def implication_seeds_run() -> dict:
    """The first run of chapter 6's stamped seeds record (read once)."""
    return _implication_seeds_runs()[0]


@functools.cache
def squared_seeds_run() -> dict:
    """The first run of chapter 5's stamped seeds record (read once)."""
    return squared_seeds.read_seeds_record()["runs"][0]


@functools.cache
def squared_failure_rates() -> squared_seeds.FailureRates:
    """The Kimi-style failure rates of :func:`squared_seeds_run`, read back from the record."""
    return squared_seeds.failure_rates_from_entry(squared_seeds_run()["failure_rates"])


@functools.cache
def tiny_squared_sweeps() -> squared_seeds.SeededSweeps:
    """Chapter 5's :func:`seeded_cost_sweeps` of a tiny KimiPO on the shared instance, two seeds."""
    return squared_seeds.seeded_cost_sweeps((instance(),), (2.0,), (squared_method(),), eps=0.1, seeds=(0, 1))


@functools.cache
def ppo_seeds_record() -> dict:
    """Chapter 4's stamped seeds record, as read from its file (read once)."""
    return ppo_seeds.read_seeds_record()


@functools.cache
def ppo_seeds_summary() -> dict:
    """What chapter 4 reports from the first run of :func:`ppo_seeds_record`."""
    return ppo_seeds.seeds_summary(ppo_seeds_record()["runs"][0])


def tiny_collapse() -> collapse.CollapseInstance:
    """A collapse instance with ten zero-reward responses."""
    return collapse.collapse_instance(gap=0.1, n_zero=10)


@functools.cache
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


@functools.lru_cache(maxsize=1)
def tiny_reliability_study() -> object:
    """PPO-NoClip with two outer iterations at C_cov = 20, one batch size, inner loops of 1 and 2 times, six seeds."""
    noclip = ppo_reliability.reliability_methods()[0].with_hyperparameters(n_iterations=2)
    return ppo_reliability.reliability_study((noclip,), coverages=(20.0,), batch_multipliers=(1,),
                                             inner_multipliers=(1, 2), seeds=tuple(range(6)), progress=False)


@functools.cache
def tiny_stacked_collapse() -> covpo.BanditInstance:
    """Two tabular collapse prompts with three zero-reward responses each, ``C_cov = 8``."""
    return families.stacked_collapse_instance(2, 0.2, 8.0, n_zero=3)


@functools.cache
def tiny_seeded_sweep() -> sweeps.SeededCostSweep:
    """:func:`~covpo.experiments.sweeps.cost_sweeps` of PPO-NoClip on :func:`tiny_stacked_collapse`, two seeds."""
    return sweeps.cost_sweeps([tiny_stacked_collapse()], (8.0,), (method("ppo_noclip"),), eps=0.5, seeds=(0, 1))


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


# ---------------------------------------------------------------------------------------
# Results of tiny runs, built once per process: the inputs of the functions that read them. An
# entry whose good call needs one declares its argument names (``entry(..., argument_names=...)``),
# so that building the entry points runs none of them.


@functools.cache
def collapse_run() -> engine.CollapseRun:
    """An exact REINFORCE run of 50 steps on :func:`tiny_collapse`."""
    return engine.exact_collapse_run(tiny_collapse(), eta=4.0, n_iterations=50, n_records=5)


@functools.cache
def apmd_run() -> engine.CollapseRun:
    """An exact APMD run of ten resets of four steps, recorded at every reset."""
    return resets.exact_apmd_run(
        tiny_collapse(), beta=0.5, inner_steps=4, eta=4.0, gradient_steps=40, record_steps=np.arange(0, 41, 4)
    )


@functools.cache
def figure_2a() -> paper_figures.Figure2aData:
    """Figure 2a's protocol on a gap of 0.1 with two learning rates and two inner-step counts."""
    return paper_figures.figure_2a_data(gap=0.1, etas=(1.0, 4.0), rate_sweep_steps=(20, 5), inner_steps_grid=(1, 2),
                                        max_steps=100_000, n_records=5)


@functools.cache
def figure_1() -> paper_figures.Figure1Data:
    """Figure 1's three regimes on a gap of 0.1."""
    return paper_figures.figure_1_data(gap=0.1, max_steps=100_000, n_records=5)


def squared_method() -> sweeps.Method:
    """A tiny KimiPO method."""
    hyperparameters = {"beta": 1.0, "n_iterations": 2, "batch_size": 2, "inner_steps": 2, "extra_responses": 2}
    return sweeps.Method("KimiPO", "kimipo", hyperparameters, etas=(0.5,))


@functools.cache
def head_to_head_result() -> head_to_head.HeadToHead:
    """PPO-NoClip (resets) and REINFORCE (fixed reference) on the shared instance, one seed."""
    methods = (method("ppo_noclip"), method())
    return head_to_head.head_to_head([instance()], [5.0], methods, eps=0.1, seeds=(0,), progress=False)


@functools.cache
def tuning_map() -> tuning.TuningMap:
    """An inner-steps map of one beta and two inner-step counts, one seed."""
    return tuning.inner_steps_map(instance(), betas=(1.0,), inner_steps=(1, 2), batch_size=4, n_iterations=2,
                                  n_seeds=1, progress=False)


@functools.cache
def ppo_run_with_ratios() -> tuple[covpo.Trajectory, object]:
    """A PPO-NoClip run on the shared instance and the importance ratios of its inner steps."""
    recorder = RatioRecorder()
    run = covpo.run("ppo_noclip", instance(), rng=rng(), on_inner_step=recorder, **RUNS["ppo_noclip"])
    return run, recorder.finish()


@functools.cache
def ratio_spread() -> ppo_ratios.RatioSpread:
    """The ratio spread of :func:`ppo_run_with_ratios`."""
    run, ratios = ppo_run_with_ratios()
    return ppo_ratios.ratio_spread(instance(), run, ratios)


@functools.cache
def ratio_bounds() -> ppo_ratios.RatioBoundsTable:
    """Ratio bounds at one beta."""
    return ppo_ratios.ratio_bounds_by_beta(instance(), (1.0,), eta_beta=2.0, inner_steps=2, batch_size=4,
                                                horizon=2.0, seed=0)


@functools.cache
def curvature_scan() -> squared_curvature.CurvatureScan:
    """Three points of the squared losses' curvature around :func:`theta`."""
    return squared_curvature.curvature_scan(instance(), theta(), 1.0, 2, radius=0.5, n_points=3, rng=rng())


@functools.cache
def kimi_run() -> covpo.Trajectory:
    """A KimiPO run on the shared instance."""
    return covpo.run("kimipo", instance(), rng=rng(), **RUNS["kimipo"])


@functools.cache
def mse_path() -> squared_mse.MSEPath:
    """The regression error along :func:`kimi_run`."""
    return squared_mse.mse_path(instance(), kimi_run())


@functools.cache
def reinforce_run() -> covpo.Trajectory:
    """A sampled REINFORCE run on the shared instance."""
    return covpo.run("reinforce", instance(), rng=rng(), **RUNS["reinforce"])


def nonlinear_settings() -> nonlinear.ExperimentSettings:
    """Every method of the network laboratory at a few steps."""
    return nonlinear.ExperimentSettings(
        reinforce_eta=4.0, reinforce_steps=3, beta=1.0, apmd_eta=2.0, apmd_steps=4, few_inner_steps=1,
        many_inner_steps=2, sampled_eta=4.0, sampled_steps=3, sampled_batch=4, ppo_iterations=2, ppo_batch=4,
        ppo_inner_steps=2, ppo_eta=2.0, record_every=1,
    )


@functools.cache
def sequence_batch() -> sequences.SequenceBatch:
    """Two groups of two sequences from the base policy of :func:`tiny_sequences`."""
    bandit = tiny_sequences()
    return sequences.draw_sequence_batch(bandit, bandit.base_theta, 2, 2, rng())


def sampled_baseline_arguments() -> dict[str, object]:
    """A Monte Carlo estimate of the normalizer baseline's moments at a group of two, from few samples."""
    return {"instance": instance(), "log_reference": base_table(), "beta": 1.0, "group_size": 2, "rng": rng(),
            "n_samples": 50, "max_outcomes": 1000}


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
    "width": "positive", "seed": "seed", "n_seeds": "count", "response_budget": "count", "margin": "probability",
    "vocab_size": "count", "length": "count", "record_every": "count", "batch": "object", "method": "object",
    "network": "object", "params": "theta", "reference_theta": "theta", "log_coverage": "log_coverage",
    "coverages": "grid", "betas": "grid", "etas": "grid", "widths": "grid", "group_sizes": "count_grid",
    "batch_sizes": "count_grid", "ns": "count_grid", "instances": "instances", "methods": "methods", "u": "grid",
    "v": "grid", "logits": "theta", "t": "count0", "rewards": "rewards", "kept": "mask",
    "eta_beta": "positive", "horizon": "positive", "scales": "real_grid", "n_batches": "count", "radius": "positive",
    "n_points": "count", "group_beta": "positive", "eta_scale": "positive", "steps": "grid", "policy": "object",
    "reference": "option", "ratio": "option", "clip_eps": "probability", "collapse_coverage": "positive",
    "random_coverage": "positive", "family": "option", "size": "option", "inner_steps_grid": "count_grid",
    "name": "option", "seeds": "seeds", "progress": "flag", "record_each_step": "flag", "scale_by_std": "flag",
    "centered": "flag", "skip": "flag", "regularized": "flag", "sampler": "flag", "label": "text",
    "caption": "text", "description": "text", "run": "object", "data": "object", "trajectory": "object",
    "ratios": "object", "spreads": "object", "tables": "object", "scans": "object", "maps": "object",
    "results": "object", "result": "object", "path": "object", "task": "object", "config": "object",
    "apmd_beta": "positive", "weak_beta": "positive", "strong_beta": "positive", "rate_sweep_steps": "count_grid",
    "inner_steps_factor": "count", "eps_fraction": "probability", "coverage_fraction": "probability",
    "n_surfaces": "count", "stack_points": "count_grid", "start_step": "count", "rise_decades": "grid",
    "inverse_gaps": "grid", "gaps": "grid", "collapse_factor": "positive", "smoothness": "positive",
    "levels": "grid", "radii": "real_grid", "n_directions": "count", "fixed_interval": "thresholds",
    "n_samples": "count", "max_outcomes": "count",
    "interval": "thresholds", "costs": "grid", "hyperparameters": "mapping", "comparators": "mapping",
    "log_base_coverage": "log_coverage", "held_out": "count", "ks": "grid", "n_symbols": "count",
    "d_model": "count", "n_layers": "count", "n_heads": "count", "repeats": "count", "learning_rate": "positive",
    "kind": "option", "fixed_budget_factor": "count", "tokens": "indices", "shared_prefix": "count0",
    "group": "option", "cost": "option", "families": "object", "logit_sensitivity": "theta", "advantage": "theta",
    "coefficients": "theta", "log_sequence_probs": "theta", "initial_params": "theta", "hidden_scale": "positive",
    "output_scale": "positive", "function": "callable", "tasks": "object", "gradient_steps": "count",
    "n_slots": "count", "slot_size": "count", "sync_every": "count0", "exact_reward": "flag", "study": "object",
    "metric": "option", "arm": "option", "record": "mapping",
}


def kinds(names: Iterable[str], /, skip: tuple[str, ...] = (), **overrides: str) -> dict[str, str]:
    """The kind of every argument in ``names`` but those in ``skip``, from ``overrides`` or :data:`KIND_BY_NAME`.

    An argument of no known kind that is not skipped is an error, so no argument goes unfuzzed unnoticed.
    """
    found = {name: overrides.get(name, KIND_BY_NAME.get(name)) for name in names if name not in skip}
    unknown = sorted(name for name, kind in found.items() if kind is None)
    if unknown:
        raise ValueError(f"arguments {unknown} have no kind: add them to KIND_BY_NAME, an override or skip")
    return found


def entry(name: str, function: Callable[..., object], arguments: Callable[[], dict[str, object]], /,
          skip: tuple[str, ...] = (), infinite_ok: bool = False, heavy: bool = False, nan_ok: bool = False,
          argument_names: tuple[str, ...] | None = None, **overrides: str) -> EntryPoint:
    """An :class:`EntryPoint` whose argument kinds come from their names, with ``overrides``.

    The names are read from a good call, unless ``argument_names`` declares them: an entry whose
    good call needs the result of a run (:func:`collapse_run`, :func:`figure_2a` and the other
    cached runs above) declares them, so that building :data:`ENTRY_POINTS`, which every process
    that collects the fuzz suite does, runs nothing (on a cold numba cache :func:`collapse_run`
    alone takes seconds). The runs are made at test time, where a test checks the declared names
    against the good call's.
    """
    names = tuple(arguments()) if argument_names is None else argument_names
    target = covpo.ALGORITHMS[arguments()["name"]].function if function is covpo.run else function
    optional = frozenset(
        parameter.name for parameter in inspect.signature(target).parameters.values()
        if parameter.default is None or "None" in str(parameter.annotation)
    )
    return EntryPoint(name, function, arguments, names, kinds(names, skip, **overrides), infinite_ok, optional, heavy,
                      nan_ok)


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
        entry("mirror_descent.apmd", mirror_descent.apmd,
              lambda: {"instance": instance(), **RUNS["apmd"], "record_each_step": False}),
        entry("mirror_descent.mirror_descent_policy", mirror_descent.mirror_descent_policy,
              lambda: {"instance": instance(), "beta": 1.0, "t": 3}, t="nonnegative"),
        entry("mirror_descent.mirror_descent_bound", mirror_descent.mirror_descent_bound,
              lambda: {"instance": instance(), "beta": 1.0, "t": 3.0}, t="nonnegative"),
        entry("mirror_descent.exact_target_theta", mirror_descent.exact_target_theta,
              lambda: {"instance": instance(), "theta": theta(), "beta": 1.0}),
        entry("ppo_noclip.ppo_noclip", ppo_noclip.ppo_noclip,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["ppo_noclip"], "record_each_step": False}),
        entry("ppo_noclip.ppo_noclip_objective", ppo_noclip.ppo_noclip_objective,
              lambda: {"instance": instance(), "theta": theta(), "batch": batch(), "beta": 1.0}),
        entry("ppo_noclip.ppo_noclip_gradient", ppo_noclip.ppo_noclip_gradient,
              lambda: {"instance": instance(), "theta": theta(), "batch": batch(), "beta": 1.0}),
        entry("ppo_lite.ppo_lite", ppo_lite.ppo_lite,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["ppo_lite"], "record_each_step": False}),
        entry("ppo_lite.ppo_lite_objective", ppo_lite.ppo_lite_objective, lambda: {
            "instance": instance(), "theta": theta(), "batch": batch(), "log_reference": base_table(), "beta": 1.0}),
        entry("ppo_lite.ppo_lite_gradient", ppo_lite.ppo_lite_gradient, lambda: {
            "instance": instance(), "theta": theta(), "batch": batch(), "log_reference": base_table(), "beta": 1.0,
            "thresholds": (0.5, 2.0)}),
        entry("ppo_lite.clip_width_thresholds", ppo_lite.clip_width_thresholds,
              lambda: {"beta": 1.0, "max_reward": 1.0, "width": 1.0}, max_reward="positive"),
        entry("grpo.grpo", grpo.grpo, lambda: {
            "instance": instance(), "rng": rng(), **RUNS["grpo_fixed"], "record_each_step": False, "scale_by_std": True},
              beta="nonnegative"),
        entry("grpo.grpo_gradient", grpo.grpo_gradient, lambda: {
            "instance": instance(), "theta": theta(), "batch": grouped_batch(),
            "advantages": grpo.group_advantages(grouped_batch().rewards.reshape(4, 3)),
            "log_reference": base_table(), "beta": 0.1}, advantages="theta", beta="nonnegative"),
        entry("grpo.group_advantages", grpo.group_advantages,
              lambda: {"rewards": np.array([[0.0, 1.0, 0.5], [1.0, 1.0, 0.0]]), "scale_by_std": True, "std_eps": 1e-4}),
        entry("steps.feature_scale", steps.feature_scale, lambda: {"instance": instance()}),
        entry("steps.check_step_stability", steps.check_step_stability, lambda: {
            "algorithm": "PPO-NoClip", "eta": 0.5, "beta": 1.0, "scale": 2.0, "loss": "kimi"},
              algorithm="text", beta="nonnegative", scale="nonnegative", loss="option"),
        entry("npg.npg", npg.npg,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["npg"], "record_each_step": False}),
        entry("npg.npg_step", npg.npg_step, lambda: {"instance": instance(), "theta": theta(), "beta": 1.0}),
        entry("npg.sampled_npg_direction", npg.sampled_npg_direction,
              lambda: {"instance": instance(), "theta": theta(), "rng": rng(), "batch_size": 4, "group_size": 2}),
        entry("mirror_descent.apmd_exact", mirror_descent.apmd_exact,
              lambda: {"instance": instance(), **RUNS["apmd_exact"], "record_each_step": False}),
        entry("grpo.grpo_objective", grpo.grpo_objective, lambda: {
            "instance": instance(), "theta": theta(), "batch": grouped_batch(),
            "advantages": grpo.group_advantages(grouped_batch().rewards.reshape(4, 3)),
            "log_reference": base_table(), "beta": 0.1}, advantages="theta", beta="nonnegative"),
        entry("kimipo.kimipo", kimipo.kimipo,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["kimipo"], "record_each_step": False}),
        entry("kimipo.kimipo (normalizer baseline)", kimipo.kimipo, lambda: {
            "instance": instance(), "rng": rng(), "baseline": "normalizer", **RUNS["kimipo_norm"],
            "record_each_step": False}),
        entry("rebel.rebel_onpolicy", rebel.rebel_onpolicy,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["rebel_onpolicy"], "record_each_step": False}),
        entry("npg.fisher_information", npg.fisher_information, lambda: {"instance": instance(), "theta": theta()}),
        entry("npg.npg_direction", npg.npg_direction, lambda: {"instance": instance(), "theta": theta()}),
        entry("rebel.rebel_gradient", rebel.rebel_gradient,
              lambda: {"instance": instance(), "theta": theta(), "batch": paired_batch(), "beta": 1.0}),
        entry("filtered_sft.filtered_sft_log_likelihood", filtered_sft.filtered_sft_log_likelihood, lambda: {
            "instance": instance(), "theta": theta(), "kept": np.eye(3, 5, dtype=bool)}),
        entry("filtered_sft.filtered_sft", filtered_sft.filtered_sft,
              lambda: {"instance": instance(), "rng": rng(), **RUNS["filtered_sft"]}),
        entry("filtered_sft.filtered_sft_gradient", filtered_sft.filtered_sft_gradient, lambda: {
            "instance": instance(), "theta": theta(), "kept": np.eye(3, 5, dtype=bool)}),
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
              gradient_steps="grid", reward="theta", log_coverage="theta", kl_to_base="theta", optimal_value="real",
              algorithm="text"),
        entry("policy_classes.SoftmaxLinear", policy_classes.SoftmaxLinear, lambda: {"instance": instance()}),
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


def _study_entries() -> tuple[EntryPoint, ...]:
    """Every public function and class of :mod:`covpo.experiments` and :mod:`covpo.labs`, at tiny sizes."""
    c = tiny_collapse
    seq = tiny_sequences
    found = [
        # experiments: the sweep machinery
        entry("experiments.sweeps.Method", sweeps.Method, lambda: {
            "label": "REINFORCE", "algorithm": "reinforce", "hyperparameters": {"n_iterations": 3, "batch_size": 4},
            "etas": (0.5,)}, algorithm="option", etas="grid"),
        entry("experiments.sweeps.check_methods", sweeps.check_methods, lambda: {"name": "methods", "methods": (method(),)},
              skip=("name",)),
        entry("experiments.sweeps.run_unless_diverged", sweeps.run_unless_diverged, lambda: {
            "method": method(), "instance": instance(), "eta": 0.5, "rng": rng()}),
        entry("experiments.sweeps.methods_table", sweeps.methods_table, lambda: {"methods": (method(),), "caption": "x"}),
        entry("experiments.sweeps.fit_coverage_power", sweeps.fit_coverage_power, lambda: {
            "coverages": np.array([1.0, 2.0, 4.0]), "costs": np.array([10.0, 20.0, 40.0])}),
        entry("experiments.sweeps.summarize_run", sweeps.summarize_run, lambda: {
            "method": method(), "instance": instance(), "eta": 0.5, "seed": (0, 1), "eps": 0.1}),
        entry("experiments.sweeps.cost_sweep", sweeps.cost_sweep, lambda: {
            "instances": [instance()], "coverages": (5.0,), "methods": (method(),), "eps": 0.1, "seed": 0},
              infinite_ok=True, coverages="coverage_grid"),
        entry("experiments.sweeps.cost_sweeps", sweeps.cost_sweeps, lambda: {
            "instances": [instance()], "coverages": (5.0,), "methods": (method(),), "eps": 0.1, "seeds": (0, 1)},
              infinite_ok=True, coverages="coverage_grid"),
        entry("experiments.sweeps.compare_at_budget", sweeps.compare_at_budget, lambda: {
            "instance": instance(), "methods": (method("ppo_noclip"),), "response_budget": 16, "seed": 0}),
        entry("experiments.sweeps.budget_run", sweeps.budget_run, lambda: {
            "method": method(), "instance": instance(), "response_budget": 16, "seed": 0}),
        entry("experiments.sweeps.compare_recipes", sweeps.compare_recipes, lambda: {
            "instance": instance(), "methods": (method(),), "response_budget": 16, "eps": 0.1, "seeds": (0,)}),
        entry("experiments.sweeps.random_family_methods", sweeps.random_family_methods, dict),
        entry("experiments.sweeps.collapse_family_methods", sweeps.collapse_family_methods, dict),
        entry("experiments.parallel.run_tasks", parallel.run_tasks, lambda: {
            "function": abs, "tasks": [(1,), (-2,)], "description": "tasks", "progress": False}),
        # experiments: chapter 1, the setting
        entry("experiments.setting.best_of_n_curves", setting.best_of_n_curves, lambda: {
            "coverages": np.array([0.1, 0.5]), "ns": np.array([1, 4]), "trials": 10, "rng": rng()}),
        entry("experiments.setting.coverage_instance", setting.coverage_instance,
              lambda: {"coverage": 0.2, "n_responses": 4}, coverage="probability"),
        # experiments: chapter 2, coverage collapse
        entry("experiments.collapse.exact_collapse_run", engine.exact_collapse_run, lambda: {
            "instance": c(), "eta": 4.0, "n_iterations": 50, "n_records": 5, "progress": False}, instance="collapse"),
        entry("experiments.collapse.run_exact_reinforce", engine.run_exact_reinforce, lambda: {
            "instance": c(), "eta": 4.0, "n_iterations": 50, "n_records": 5, "progress": False}, instance="collapse"),
        entry("experiments.collapse.exact_reinforce_many", engine.exact_reinforce_many, lambda: {
            "instances": [c(), c()], "eta": 4.0, "n_iterations": 50, "progress": False},
              instances="instances"),
        entry("experiments.collapse.landscape_grid", landscape.landscape_grid, lambda: {
            "instance": c(), "beta": 0.1, "n_points": 5}, instance="collapse"),
        entry("experiments.collapse.simplex_path", landscape.simplex_path, lambda: {"run": collapse_run()},
              argument_names=("run",)),
        entry("experiments.collapse.fixed_reference_rate_sweep", paper_figures.fixed_reference_rate_sweep, lambda: {
            "instance": c(), "betas": (0.05, 0.5), "etas": (1.0, 4.0), "n_steps": (20, 5)},
              instance="collapse", n_steps="count_grid"),
        entry("experiments.collapse.figure_2a_data", paper_figures.figure_2a_data, lambda: {
            "gap": 0.1, "apmd_beta": 0.5, "etas": (1.0, 4.0), "rate_sweep_steps": (20, 5), "inner_steps_grid": (1, 2),
            "inner_steps_factor": 2, "eps_fraction": 0.5, "margin": 0.5, "coverage_fraction": 0.5,
            "max_steps": 100_000, "n_records": 5}),
        entry("experiments.collapse.figure_2bc_data", paper_figures.figure_2bc_data,
              lambda: {"data": figure_2a(), "n_points": 5}, argument_names=("data", "n_points")),
        entry("experiments.collapse.figure_1_data", paper_figures.figure_1_data, lambda: {
            "gap": 0.1, "strong_beta": 0.5, "inner_steps": 8, "eta": 4.0, "eps_fraction": 0.5, "margin": 0.5,
            "max_steps": 100_000, "n_records": 5}),
        entry("experiments.collapse.figure_1a_data", paper_figures.figure_1a_data, lambda: {"data": figure_1()},
              argument_names=("data",)),
        entry("experiments.collapse.figure_3_data", paper_figures.figure_3_data, lambda: {
            "data": figure_2a(), "n_surfaces": 2, "n_points": 5, "stack_points": (3, 5)},
              argument_names=("data", "n_surfaces", "n_points", "stack_points")),
        entry("experiments.collapse.slide_profile", phases.slide_profile, lambda: {
            "instance": c(), "eta": 4.0, "start_step": 1, "n_iterations": 5000, "n_records": 100}, instance="collapse"),
        entry("experiments.collapse.recovery_profile", phases.recovery_profile, lambda: {
            "instance": c(), "eta": 4.0, "rise_decades": (0.5, 1.0), "n_iterations": 5000, "n_records": 100},
              instance="collapse"),
        entry("experiments.collapse.dense_collapse_run", phases.dense_collapse_run, lambda: {
            "instance": c(), "eta": 4.0, "n_iterations": 5000, "n_records": 100}, instance="collapse"),
        entry("experiments.collapse.inner_steps_sweep", reset_sweeps.inner_steps_sweep, lambda: {
            "instance": c(), "inner_steps": (1, 2), "etas": (4.0,), "beta": 0.5, "max_steps": 200,
            "coverage_fraction": 0.5, "progress": False}, instance="collapse", inner_steps="count_grid"),
        entry("experiments.collapse.fit_power", reset_sweeps.fit_power, lambda: {
            "inverse_gaps": np.array([1.0, 2.0, 3.0]), "steps": np.array([10.0, 40.0, 90.0])}),
        entry("experiments.collapse.apmd_steps_along_knob", reset_sweeps.apmd_steps_along_knob, lambda: {
            "gaps": (0.1, 0.2), "beta": 0.5, "inner_steps": 8, "eta": 4.0, "eps_fraction": 0.5, "max_steps": 2000,
            "n_zero": 10, "progress": False}),
        entry("experiments.collapse.inner_kl_per_reset", reset_sweeps.inner_kl_per_reset,
              lambda: {"run": apmd_run(), "beta": 0.5, "inner_steps": 4},
              argument_names=("run", "beta", "inner_steps")),
        entry("experiments.collapse.inner_accuracy_sweep", reset_sweeps.inner_accuracy_sweep, lambda: {
            "instance": c(), "inner_steps": (1, 2), "etas": (4.0,), "beta": 0.5, "max_steps": 8,
            "coverage_fraction": 0.5}, instance="collapse", inner_steps="count_grid"),
        entry("experiments.collapse.exact_apmd_run", resets.exact_apmd_run, lambda: {
            "instance": c(), "beta": 0.5, "inner_steps": 4, "eta": 4.0, "gradient_steps": 40, "n_records": 5,
            "progress": False}, instance="collapse", gradient_steps="count"),
        entry("experiments.collapse.exact_apmd_many", resets.exact_apmd_many, lambda: {
            "instances": [c()], "eta": 4.0, "gradient_steps": 40, "beta": 0.5, "inner_steps": 4, "progress": False},
              gradient_steps="count"),
        entry("experiments.collapse.mirror_descent_resets_to_eps", resets.mirror_descent_resets_to_eps,
              lambda: {"instance": c(), "beta": 0.5, "eps": 0.05}, instance="collapse"),
        entry("experiments.collapse.sampled_collapse_run", sampled.sampled_collapse_run, lambda: {
            "instance": c(), "eta": 4.0, "n_iterations": 10, "batch_size": 4, "rng": rng(), "n_records": 5,
            "progress": False}, instance="collapse"),
        entry("experiments.collapse.sampled_reinforce_over_seeds", sampled.sampled_reinforce_over_seeds, lambda: {
            "instance": c(), "eta": 4.0, "n_iterations": 10, "batch_size": 4, "n_seeds": 2, "seed": 0, "n_records": 5,
            "progress": False}, instance="collapse"),
        entry("experiments.collapse.smooth_step_limit", step_sizes.smooth_step_limit, lambda: {"smoothness": 2.5}),
        entry("experiments.collapse.learning_rate_grid", step_sizes.learning_rate_grid, lambda: {
            "gaps": (0.15, 0.18), "etas": (1.0, 4.0), "eps_fraction": 0.5, "max_steps": 500, "collapse_factor": 10.0,
            "smoothness": 2.5, "n_zero": 10, "progress": False}),
        entry("experiments.collapse.first_steps", step_sizes.first_steps,
              lambda: {"instance": c(), "etas": (1.0, 4.0), "n_steps": 3}, instance="collapse"),
        entry("experiments.collapse.fit_exponential", collapse_sweeps.fit_exponential, lambda: {
            "inverse_gaps": np.array([1.0, 2.0, 3.0]), "steps": np.array([10.0, 40.0, 90.0])}),
        entry("experiments.collapse.steps_to_eps_sweep", collapse_sweeps.steps_to_eps_sweep, lambda: {
            "gaps": (0.1, 0.2), "eta": 4.0, "eps_fraction": 0.5, "max_steps": 500, "regularized": False,
            "margin": 0.5, "n_zero": 10, "delta": 0.01, "progress": False}, nan_ok=True),
        entry("experiments.collapse.beta_sweep", collapse_sweeps.beta_sweep, lambda: {
            "instance": c(), "betas": (0.05, 0.5), "eta": 4.0, "max_steps": 200, "collapse_factor": 10.0,
            "progress": False}, instance="collapse"),
        entry("experiments.collapse.beta_escape_map", collapse_sweeps.beta_escape_map, lambda: {
            "gaps": (0.1, 0.2), "betas": (0.05, 0.5), "eta": 4.0, "max_steps": 200, "n_zero": 10, "progress": False}),
        entry("experiments.collapse.learning_rate_sweep", collapse_sweeps.learning_rate_sweep, lambda: {
            "instance": c(), "etas": (1.0, 4.0), "n_steps": 20}, instance="collapse"),
        # experiments: chapter 3, mirror descent
        entry("experiments.mirror_descent.mirror_descent_rate", md_experiments.mirror_descent_rate, lambda: {
            "instances": [instance()], "betas": (1.0,), "n_iterations": 3, "eps": 0.1}, infinite_ok=True),
        entry("experiments.mirror_descent.comparator_guarantee", md_experiments.comparator_guarantee, lambda: {
            "instance": c(), "comparators": {"optimal": (1.0, 0.0, 0.0)}, "beta": 0.5, "eta": 4.0, "inner_steps": 2,
            "n_iterations": 3}, instance="collapse"),
        # experiments: chapter 4, PPO
        entry("experiments.ppo.ratios.ratio_spread", ppo_ratios.ratio_spread, lambda: {
            "instance": instance(), "trajectory": ppo_run_with_ratios()[0], "ratios": ppo_run_with_ratios()[1],
            "levels": (0.1, 0.5, 0.9)}, argument_names=("instance", "trajectory", "ratios", "levels")),
        entry("experiments.ppo.ratios.ratio_spread_table", ppo_ratios.ratio_spread_table,
              lambda: {"spreads": [ratio_spread()]}, argument_names=("spreads",)),
        entry("experiments.ppo.ratios.ratio_bounds_by_beta", ppo_ratios.ratio_bounds_by_beta, lambda: {
            "instance": instance(), "betas": (1.0,), "eta_beta": 2.0, "inner_steps": 2, "batch_size": 4, "horizon": 2.0,
            "seed": 0}),
        entry("experiments.ppo.ratios.ratio_bounds_table", ppo_ratios.ratio_bounds_table,
              lambda: {"tables": {"instance": ratio_bounds()}}, argument_names=("tables",)),
        entry("experiments.ppo.ratios.target_log_ratio_extent", ppo_ratios.target_log_ratio_extent, lambda: {
            "instance": instance(), "thetas": np.stack([theta(), 0.5 * theta()]), "beta": 1.0}, thetas="theta"),
        entry("experiments.ppo.clipping.ppo_min_thresholds", ppo_clipping.ppo_min_thresholds, lambda: {"interval": (0.8, 1.2)}),
        entry("experiments.ppo.clipping.clip_activity_grid", ppo_clipping.clip_activity_grid, lambda: {
            "instance": instance(), "betas": (1.0,), "widths": (0.5,), "fixed_interval": (0.8, 1.2), "eta_beta": 2.0,
            "inner_steps": 2, "batch_size": 4, "horizon": 2.0, "seed": 0}),
        entry("experiments.ppo.estimators.batch_estimates", ppo_estimators.batch_estimates, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "prompts": np.array([[0, 1], [2, 0]]),
            "responses": np.array([[1, 2], [3, 4]]), "beta": 1.0, "thresholds": (0.5, 2.0)}),
        entry("experiments.ppo.estimators.estimator_spread", ppo_estimators.estimator_spread, lambda: {
            "instance": instance(), "beta": 1.0, "scales": (0.5, 1.0), "batch_size": 4, "n_batches": 3, "seed": 0}),
        entry("experiments.ppo.practice.practice_recipes", ppo_practice.practice_recipes, lambda: {"eta": 16.0}),
        entry("experiments.ppo.practice.reverse_kl_optimum", ppo_practice.reverse_kl_optimum, lambda: {
            "instance": instance(), "log_reference": base_table(), "beta": 1.0}),
        entry("experiments.ppo.concavity.regularized_hessian", ppo_concavity.regularized_hessian, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "beta": 1.0}),
        entry("experiments.ppo.concavity.landscape", ppo_concavity.landscape, lambda: {
            "instance": instance(), "beta": 1.0, "radii": (0.0, 0.5), "n_directions": 2, "seed": 0}),
        entry("experiments.ppo.concavity.inner_loop_curvature", ppo_concavity.inner_loop_curvature, lambda: {
            "instance": instance(), "beta": 1.0, "eta": 0.5, "n_iterations": 2, "batch_size": 4, "inner_steps": 2,
            "seed": 0}),
        entry("experiments.ppo.clipping.clipping_benefit", ppo_clipping.clipping_benefit, lambda: {
            "instance": instance(), "beta": 1.0, "widths": (0.5,), "eta": 0.5, "batch_size": 4, "inner_steps": 2,
            "n_iterations": 2, "eps": 0.1, "seeds": (0,)}),
        entry("experiments.ppo.reliability.reliability_methods", ppo_reliability.reliability_methods, lambda: {}),
        entry("experiments.ppo.reliability.scaled_method", ppo_reliability.scaled_method, lambda: {
            "method": method("ppo_noclip"), "batch_multiplier": 2, "inner_multiplier": 2},
              batch_multiplier="count", inner_multiplier="count"),
        entry("experiments.ppo.reliability.reliability_study", ppo_reliability.reliability_study, lambda: {
            "methods": (method("ppo_noclip"),), "coverages": (20.0,), "batch_multipliers": (1,),
            "inner_multipliers": (1,), "seeds": (0,), "eps": 0.04, "progress": False},
              batch_multipliers="count_grid", inner_multipliers="count_grid"),
        entry("experiments.ppo.reliability.sign_test_interval", ppo_reliability.sign_test_interval,
              lambda: {"differences": np.arange(8.0), "level": 0.9}, differences="real_grid", level="probability"),
        entry("experiments.ppo.reliability.paired_loss_difference", ppo_reliability.paired_loss_difference,
              lambda: {"study": tiny_reliability_study(), "label": "PPO-NoClip", "batch_multiplier": 1, "longer": 2,
                       "shorter": 1, "coverages": (20.0,)},
              argument_names=("study", "label", "batch_multiplier", "longer", "shorter", "coverages"),
              batch_multiplier="count", longer="count", shorter="count"),
        entry("experiments.ppo.reliability.check_reliability_record", ppo_reliability.check_reliability_record,
              lambda: {"record": ppo_reliability.read_stamped_record(ppo_reliability.RECORD_PATH)},
              argument_names=("record",), record="mapping"),
        entry("experiments.ppo.reliability.read_reliability_record", ppo_reliability.read_reliability_record,
              lambda: {"path": ppo_reliability.RECORD_PATH}),
        entry("experiments.ppo.reliability.details_over_seeds", ppo_reliability.details_over_seeds,
              lambda: {"seeds": (0,), "progress": False}, heavy=True),
        # experiments: chapter 5, squared losses
        entry("experiments.population.kimi_population_loss", squared.kimi_population_loss, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "beta": 1.0,
            "baseline": np.zeros(3)}, baseline="theta"),
        entry("experiments.population.kimi_population_gradient", squared.kimi_population_gradient, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "beta": 1.0,
            "baseline": np.zeros(3)}, baseline="theta"),
        entry("experiments.population.rebel_population_loss", squared.rebel_population_loss, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "beta": 1.0}),
        entry("experiments.population.normalizer_baseline_bias_approximation", squared.normalizer_baseline_bias_approximation,
              lambda: {"instance": instance(), "log_reference": base_table(), "beta": 1.0, "group_size": 4}),
        entry("experiments.population.mean_baseline_moments", squared.mean_baseline_moments,
              lambda: {"instance": instance(), "log_reference": base_table(), "extra_responses": 2}),
        entry("experiments.population.normalizer", squared.normalizer,
              lambda: {"instance": instance(), "log_reference": base_table(), "beta": 1.0}),
        entry("experiments.population.normalizer_baseline_moments", squared.normalizer_baseline_moments, sampled_baseline_arguments),
        entry("experiments.population.mean_baseline_bias", squared.mean_baseline_bias,
              lambda: {"instance": instance(), "log_reference": base_table(), "beta": 1.0}),
        entry("experiments.population.mean_baseline_bias_approximation", squared.mean_baseline_bias_approximation,
              lambda: {"instance": instance(), "log_reference": base_table(), "beta": 1.0}),
        entry("experiments.population.normalizer_baseline_bias", squared.normalizer_baseline_bias, sampled_baseline_arguments),
        entry("experiments.population.kimi_population_hessian", squared.kimi_population_hessian, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "beta": 1.0,
            "baseline": np.zeros(3)}, baseline="theta"),
        entry("experiments.population.rebel_population_gradient", squared.rebel_population_gradient, lambda: {
            "instance": instance(), "theta": theta(), "log_reference": base_table(), "beta": 1.0}),
        entry("experiments.population.reference_fisher", squared.reference_fisher,
              lambda: {"instance": instance(), "log_reference": base_table()}),
        entry("experiments.population.rebel_population_hessian", squared.rebel_population_hessian,
              lambda: {"instance": instance(), "log_reference": base_table(), "beta": 1.0}),
        entry("experiments.population.rebel_population_minimizer", squared.rebel_population_minimizer,
              lambda: {"instance": instance(), "reference_theta": theta(), "beta": 1.0}),
        entry("experiments.population.kimi_population_minimizer", squared.kimi_population_minimizer, lambda: {
            "instance": instance(), "reference_theta": theta(), "beta": 1.0, "baseline": np.zeros(3)},
              baseline="theta"),
        entry("experiments.population.minimizer_check", squared.minimizer_check,
              lambda: {"instance": instance(), "reference_theta": theta(), "beta": 1.0}),
        entry("experiments.population.regression_mse", squared.regression_mse, lambda: {
            "instance": instance(), "log_reference": base_table(), "log_probs": log_table(), "beta": 1.0,
            "centered": True}),
        entry("experiments.population.mse_coverage_bound", squared.mse_coverage_bound, lambda: {
            "instance": instance(), "log_reference": base_table(), "log_probs": log_table(), "beta": 1.0}),
        entry("experiments.squared_loss.baselines.baseline_bias_sweep", squared_baselines.baseline_bias_sweep, lambda: {
            "instance": instance(), "reference_theta": theta(), "betas": (1.0,), "group_sizes": (2,), "group_beta": 1.0}),
        entry("experiments.squared_loss.curvature.two_response_instance", squared_curvature.two_response_instance,
              lambda: {"optimal_prob": 0.3}),
        entry("experiments.squared_loss.curvature.population_baselines", squared_curvature.population_baselines, lambda: {
            "instance": instance(), "log_reference": base_table(), "beta": 1.0, "group_size": 4}),
        entry("experiments.squared_loss.curvature.curvature_table", squared_curvature.curvature_table,
              lambda: {"scans": {"instance": curvature_scan()}}, argument_names=("scans",)),
        entry("experiments.squared_loss.curvature.curvature_scan", squared_curvature.curvature_scan, lambda: {
            "instance": instance(), "reference_theta": theta(), "beta": 1.0, "group_size": 2, "radius": 0.5,
            "n_points": 3, "rng": rng()}),
        entry("experiments.squared_loss.curvature.loss_slice", squared_curvature.loss_slice, lambda: {
            "instance": instance(), "reference_theta": theta(), "beta": 1.0, "group_size": 2, "steps": (-0.5, 0.5)},
              steps="real_grid"),
        entry("experiments.squared_loss.table_1.table_1", squared_table_1.table_1, lambda: {
            "instance": instance(), "eps": (0.1,), "betas": (1.0,), "group_sizes": (2,), "batch_size": 4,
            "inner_steps": 2, "eta_scale": 1.0, "n_iterations": 2, "seed": 0}, eps="grid", nan_ok=True),
        entry("experiments.squared_loss.table_1.table_1_seeds", squared_table_1.table_1_seeds, lambda: {
            "instance": instance(), "eps": (0.1,), "betas": (1.0,), "group_sizes": (2,), "batch_size": 4,
            "inner_steps": 2, "eta_scale": 1.0, "n_iterations": 2, "seeds": (0, 1)}, eps="grid", nan_ok=True),
        entry("experiments.squared_loss.mse.mse_path", squared_mse.mse_path,
              lambda: {"instance": instance(), "trajectory": kimi_run()}, argument_names=("instance", "trajectory")),
        entry("experiments.squared_loss.mse.rebel_objective_check", squared_mse.rebel_objective_check, lambda: {
            "instance": instance(), "path": mse_path(), "batch_size": 4, "n_batches": 2, "rng": rng()},
              argument_names=("instance", "path", "batch_size", "n_batches", "rng")),
        entry("experiments.squared_loss.batch_size.squared_loss_methods", squared_batch_size.squared_loss_methods,
              lambda: {"family": "random"}),
        entry("experiments.squared_loss.batch_size.batch_size_study", squared_batch_size.batch_size_study, lambda: {
            "instance": instance(), "methods": (squared_method(),), "batch_sizes": (4,), "eps": 0.1, "seeds": (0,)}),
        entry("experiments.squared_loss.seeds.seeded_cost_sweeps", squared_seeds.seeded_cost_sweeps, lambda: {
            "instances": (instance(),), "coverages": (2.0,), "methods": (squared_method(),), "eps": 0.1,
            "seeds": (0,)}, nan_ok=True, infinite_ok=True),
        entry("experiments.squared_loss.seeds.failure_rate_study", squared_seeds.failure_rate_study, lambda: {
            "instances": (instance(),), "coverages": (2.0,), "methods": (squared_method(),), "batch_sizes": (4,),
            "inner_steps": (2,), "eps": 0.1, "seeds": (0,)}, inner_steps="count_grid", batch_sizes="count_grid"),
        entry("experiments.squared_loss.seeds.failure_rates_entry", squared_seeds.failure_rates_entry,
              lambda: {"study": squared_failure_rates()}, argument_names=("study",)),
        entry("experiments.squared_loss.seeds.failure_rates_from_entry", squared_seeds.failure_rates_from_entry,
              lambda: {"entry": squared_seeds_run()["failure_rates"]}, argument_names=("entry",), entry="mapping"),
        entry("experiments.squared_loss.seeds.sweeps_entry", squared_seeds.sweeps_entry,
              lambda: {"sweeps": tiny_squared_sweeps()}, argument_names=("sweeps",), sweeps="object", nan_ok=True),
        entry("experiments.squared_loss.seeds.read_seeds_record", squared_seeds.read_seeds_record,
              lambda: {"path": squared_seeds.SEEDS_RECORD}),
        entry("experiments.squared_loss.eps_scaling.l1_beta", squared_eps_scaling.l1_beta,
              lambda: {"eps": 0.1, "reward_range": 1.0}, eps="positive", reward_range="positive"),
        entry("experiments.squared_loss.eps_scaling.bound_slope", squared_eps_scaling.bound_slope,
              lambda: {"eps_grid": (0.1, 0.01)}, eps_grid="grid"),
        entry("experiments.squared_loss.eps_scaling.rebel_eps_scaling", squared_eps_scaling.rebel_eps_scaling,
              lambda: {"instance": instance(), "eps_grid": (0.5,), "seeds": (0,), "reward_range": 1.0,
                       "batch_size": 4, "inner_steps": 2, "eta_scale": 1.0, "n_iterations": 2}, nan_ok=True, infinite_ok=True,
              eps_grid="grid", skip=("reward_range",)),
        # experiments: chapter 6, implications
        entry("experiments.implications.is_test_time", head_to_head.is_test_time, lambda: {"method": method()}),
        entry("experiments.implications.is_exact", head_to_head.is_exact, lambda: {"method": method()}),
        entry("experiments.implications.is_deterministic", head_to_head.is_deterministic, lambda: {"method": method()}),
        entry("experiments.implications.head_to_head_run", head_to_head.head_to_head_run, lambda: {
            "method": method(), "instance": instance(), "eta": 0.5, "rng": rng(), "eps": 0.1}),
        entry("experiments.implications.outcome_of", head_to_head.outcome_of, lambda: {
            "trajectory": reinforce_run(), "log_base_coverage": policies.log_coverage(instance(), base_table()),
            "eps": 0.1}, argument_names=("trajectory", "log_base_coverage", "eps")),
        entry("experiments.implications.run_task", head_to_head.run_task, lambda: {
            "method": method(), "instance": instance(), "eta": 0.5, "eps": 0.1, "seed": (0, 1)}, seed="seeds"),
        entry("experiments.implications.head_to_head", head_to_head.head_to_head, lambda: {
            "instances": [instance()], "coverages": (5.0,), "methods": (method(),), "eps": 0.1, "seeds": (0,),
            "label": "tiny", "progress": False}, coverages="coverage_grid"),
        entry("experiments.implications.default_suite", head_to_head.default_suite, lambda: {"size": "book"}),
        entry("experiments.implications.default_methods", head_to_head.default_methods,
              lambda: {"family": "collapse"}),
        entry("experiments.implications.default_head_to_head", head_to_head.default_head_to_head, lambda: {
            "size": "book", "seeds": (1,), "progress": False}, heavy=True),
        entry("experiments.implications.fixed_reference_gap", head_to_head.fixed_reference_gap,
              lambda: {"instances": [instance()], "beta": 1.0}),
        entry("experiments.implications.noise_methods", noise.noise_methods, dict),
        entry("experiments.implications.coverage_depth", noise.coverage_depth,
              lambda: {"instance": instance(), "trajectory": reinforce_run()},
              argument_names=("instance", "trajectory")),
        entry("experiments.implications.exact_counterpart", noise.exact_counterpart,
              lambda: {"method": method(), "instance": instance()}),
        entry("experiments.implications.sampled_noise_run", noise.sampled_noise_run, lambda: {
            "method": method(), "instance": instance(), "eps": 0.1, "seed": (0, 1)}, seed="seeds", infinite_ok=True),
        entry("experiments.implications.exact_noise_run", noise.exact_noise_run,
              lambda: {"method": method(), "instance": instance(), "eps": 0.1}),
        entry("experiments.implications.noise_study", noise.noise_study, lambda: {
            "coverages": (40.0,), "methods": (method(),), "response_budget": 16, "n_seeds": 2, "eps": 0.1, "seed": 0,
            "collapse_decades": 1.0, "progress": False}, collapse_decades="positive", coverages="coverage_grid"),
        entry("experiments.implications.method_group", paper_units.method_group, lambda: {"method": method()}),
        entry("experiments.implications.group_best", paper_units.group_best, lambda: {
            "result": head_to_head_result(), "instance": 0, "group": "resets", "cost": "responses"},
              argument_names=("result", "instance", "group", "cost"), instance="index"),
        entry("experiments.implications.units_comparison", paper_units.units_comparison, lambda: {
            "results": [head_to_head_result()], "families": ["collapse"], "gaps": [None]},
              argument_names=("results", "families", "gaps"), gaps="object"),
        entry("experiments.implications.hardness_parts", paper_units.hardness_parts,
              lambda: {"gaps": (0.4,), "coverage": 40.0}),
        entry("experiments.implications.hardness_methods", paper_units.hardness_methods,
              lambda: {"fixed_budget_factor": 1}),
        entry("experiments.implications.hardness_head_to_head", paper_units.hardness_head_to_head, lambda: {
            "gaps": (0.4,), "seeds": (1,), "fixed_budget_factor": 1, "progress": False}, heavy=True),
        entry("experiments.implications.mirror_descent_time_to_eps", tuning.mirror_descent_time_to_eps,
              lambda: {"instance": instance(), "eps": 0.1}),
        entry("experiments.implications.tuning_prescriptions", tuning.tuning_prescriptions, lambda: {
            "instance": instance(), "betas": (0.5, 1.0), "n_iterations": 5, "eta_beta": 4.0, "eps": 0.1}),
        entry("experiments.implications.tuning_summary_table", tuning.tuning_summary_table,
              lambda: {"maps": [tuning_map()]}, argument_names=("maps",)),
        entry("experiments.implications.tuning_run", tuning.tuning_run, lambda: {
            "instance": instance(), "algorithm": "ppo_noclip", "beta": 1.0, "inner_steps": 2, "width": None,
            "batch_size": 4, "n_iterations": 2, "eta_beta": 2.0, "eps": 0.1, "seed": (0, 1)},
              algorithm="option", seed="seeds", infinite_ok=True),
        entry("experiments.implications.inner_steps_map", tuning.inner_steps_map, lambda: {
            "instance": instance(), "betas": (1.0,), "inner_steps": (1, 2), "algorithm": "ppo_noclip", "batch_size": 4,
            "n_iterations": 2, "eta_beta": 2.0, "eps": 0.1, "n_seeds": 1, "seed": 0, "progress": False},
              inner_steps="count_grid", algorithm="option", infinite_ok=True),
        entry("experiments.implications.clip_width_map", tuning.clip_width_map, lambda: {
            "instance": instance(), "betas": (1.0,), "widths": (0.5,), "inner_steps": 2, "batch_size": 4,
            "n_iterations": 2, "eta_beta": 2.0, "eps": 0.1, "n_seeds": 1, "seed": 0, "progress": False},
              infinite_ok=True),
        entry("experiments.implications.book_tuning_instance", tuning.book_tuning_instance, lambda: {"coverage": 40.0}),
        entry("experiments.implications.anchor_run", anchor_design.anchor_run, lambda: {
            "instance": instance(), "anchor": "reset", "batch": "fresh", "beta": 1.0, "eta": 1.0, "n_iterations": 1,
            "batch_size": 2, "inner_steps": 2, "seed": 0}, anchor="option", batch="option", nan_ok=True),
        entry("experiments.implications.paired_interval", anchor_design.paired_interval,
              lambda: {"differences": np.array([0.1, -0.2, 0.3]), "level": 0.9}, differences="real_grid", level="probability"),
        entry("experiments.implications.seeds_record_runs", implication_seeds.seeds_record_runs,
              lambda: {"path": implication_seeds.RECORD_PATH}),
        entry("experiments.implications.recorded_suite", implication_seeds.recorded_suite,
              lambda: {"run": implication_seeds_run(), "part": "random"}, argument_names=("run", "part"), part="text"),
        entry("experiments.implications.suite_rate_table", implication_seeds.suite_rate_table,
              lambda: {"run": implication_seeds_run()}, argument_names=("run",)),
        entry("experiments.implications.units_shares", implication_seeds.units_shares,
              lambda: {"run": implication_seeds_run(), "family": "random", "cost": "steps"},
              argument_names=("run", "family", "cost")),
        entry("experiments.implications.units_share_table", implication_seeds.units_share_table,
              lambda: {"run": implication_seeds_run()}, argument_names=("run",)),
        entry("experiments.implications.recorded_tuning_map", implication_seeds.recorded_tuning_map,
              lambda: {"run": implication_seeds_run(), "name": "widths"}, argument_names=("run", "name")),
        entry("experiments.implications.recorded_sequences", implication_seeds.recorded_sequences,
              lambda: {"run": implication_seeds_run()}, argument_names=("run",)),
        entry("experiments.implications.recorded_network", implication_seeds.recorded_network,
              lambda: {"run": implication_seeds_run()}, argument_names=("run",)),
        entry("experiments.implications.anchor_study", anchor_design.anchor_study, lambda: {
            "coverage": 10.0, "seeds": (0, 1), "eta": 1.0, "n_iterations": 1, "batch_size": 2, "inner_steps": 1,
            "eps": 0.1, "progress": False}, nan_ok=True),
        # laboratories: token sequences
        entry("labs.sequences.sequence_collapse_instance", sequences.sequence_collapse_instance, lambda: {
            "gap": 0.1, "vocab_size": 2, "length": 2, "shared_prefix": 1, "optimal_prob": 0.1, "distractor_prob": 0.2,
            "n_prompts": 2, "rng": 0}, rng="rng_or_seed"),
        entry("labs.sequences.run_on_sequences", sequences.run_on_sequences, lambda: {
            "name": "ppo_noclip", "instance": seq(), "rng": rng(), **RUNS["ppo_noclip"]}, instance="sequence_instance"),
        entry("labs.sequences.sequence_experiment", sequences.sequence_experiment, lambda: {
            "gap": 0.1, "vocab_size": 2, "length": 2, "eta": 4.0, "beta": 0.5, "inner_steps": 2, "reinforce_steps": 20,
            "apmd_iterations": 2, "ratio_lengths": (2,), "seed": 0}, heavy=True, ratio_lengths="count_grid",
              reinforce_steps="count", apmd_iterations="count"),
        entry("labs.sequences.enumerate_sequences", sequences.enumerate_sequences,
              lambda: {"vocab_size": 2, "length": 2}),
        entry("labs.sequences.level_offsets", sequences.level_offsets, lambda: {"vocab_size": 2, "length": 2}),
        entry("labs.sequences.prefix_indices", sequences.prefix_indices, lambda: {"vocab_size": 2, "length": 2}),
        entry("labs.sequences.sequence_index", sequences.sequence_index,
              lambda: {"tokens": np.array([[0, 1], [1, 1]]), "vocab_size": 2}),
        entry("labs.sequences.SequenceInstance", sequences.SequenceInstance, lambda: {
            "vocab_size": 2, "length": 2, "prompt_probs": np.array([1.0]), "rewards": np.array([[1.0, 0.9, 0.0, 0.0]]),
            "base_theta": np.zeros((1, 3, 2))}, prompt_probs="probs", base_theta="theta"),
        entry("labs.sequences.autoregressive_logits", sequences.autoregressive_logits, lambda: {
            "vocab_size": 2, "length": 2, "log_sequence_probs": np.log(np.full((1, 4), 0.25))}),
        entry("labs.sequences.as_generator", sequences.as_generator, lambda: {"rng": 0}, rng="rng_or_seed"),
        entry("labs.sequences.next_token_log_probs", sequences.next_token_log_probs,
              lambda: {"instance": seq(), "theta": seq().base_theta.copy()}, instance="sequence_instance"),
        entry("labs.sequences.token_log_probs", sequences.token_log_probs,
              lambda: {"instance": seq(), "theta": seq().base_theta.copy()}, instance="sequence_instance"),
        entry("labs.sequences.sequence_log_policy", sequences.sequence_log_policy, lambda: {
            "instance": seq(), "theta": seq().base_theta.copy()}, instance="sequence_instance"),
        entry("labs.sequences.base_sequence_log_policy", sequences.base_sequence_log_policy,
              lambda: {"instance": seq()}, instance="sequence_instance"),
        entry("labs.sequences.expected_reward", sequences.expected_reward, lambda: {
            "instance": seq(), "log_probs": sequences.base_sequence_log_policy(seq())}, instance="sequence_instance"),
        entry("labs.sequences.log_coverage", sequences.log_coverage, lambda: {
            "instance": seq(), "log_probs": sequences.base_sequence_log_policy(seq())}, instance="sequence_instance"),
        entry("labs.sequences.expected_kl", sequences.expected_kl, lambda: {
            "instance": seq(), "log_p": sequences.base_sequence_log_policy(seq()),
            "log_q": sequences.base_sequence_log_policy(seq())}, instance="sequence_instance"),
        entry("labs.sequences.regularized_objective", sequences.regularized_objective, lambda: {
            "instance": seq(), "theta": seq().base_theta.copy(), "log_reference": sequences.base_sequence_log_policy(seq()),
            "beta": 0.5}, instance="sequence_instance"),
        entry("labs.sequences.token_score_sum", sequences.token_score_sum, lambda: {
            "instance": seq(), "theta": seq().base_theta.copy(), "coefficients": np.ones((1, 4))},
              instance="sequence_instance"),
        entry("labs.sequences.reward_gradient", sequences.reward_gradient,
              lambda: {"instance": seq(), "theta": seq().base_theta.copy()}, instance="sequence_instance"),
        entry("labs.sequences.regularized_gradient", sequences.regularized_gradient, lambda: {
            "instance": seq(), "theta": seq().base_theta.copy(), "log_reference": sequences.base_sequence_log_policy(seq()),
            "beta": 0.5}, instance="sequence_instance"),
        entry("labs.sequences.bandit_view", sequences.bandit_view, lambda: {"instance": seq()},
              instance="sequence_instance"),
        entry("labs.sequences.TokenPolicy", sequences.TokenPolicy, lambda: {"instance": seq()},
              instance="sequence_instance"),
        entry("labs.sequences.sample_sequences", sequences.sample_sequences, lambda: {
            "instance": seq(), "log_probs": sequences.base_sequence_log_policy(seq()), "rng": rng(), "batch_size": 3,
            "group_size": 2}, instance="sequence_instance"),
        entry("labs.sequences.batch_token_log_probs", sequences.batch_token_log_probs, lambda: {
            "instance": seq(), "theta": seq().base_theta.copy(), "prompts": np.array([[0, 0]]),
            "sequences": np.array([[1, 3]])}, instance="sequence_instance", sequences="indices"),
        entry("labs.sequences.draw_sequence_batch", sequences.draw_sequence_batch, lambda: {
            "instance": seq(), "theta": seq().base_theta.copy(), "batch_size": 2, "group_size": 2, "rng": rng()},
              instance="sequence_instance"),
        entry("labs.sequences.surrogate_parts", sequences.surrogate_parts, lambda: {
            "instance": seq(), "theta": seq().base_theta.copy(), "batch": sequence_batch(), "beta": 0.5,
            "ratio": "token", "clip_epsilon": 0.2}, instance="sequence_instance"),
        entry("labs.sequences.ppo_surrogate", sequences.ppo_surrogate, lambda: {
            "instance": seq(), "theta": seq().base_theta.copy(), "batch": sequence_batch(), "beta": 0.5,
            "ratio": "sequence"}, instance="sequence_instance"),
        entry("labs.sequences.sampled_sequence_ppo", sequences.sampled_sequence_ppo, lambda: {
            "instance": seq(), "beta": 1.0, "eta": 0.5, "inner_steps": 2, "n_iterations": 2, "batch_size": 4,
            "rng": rng(), "group_size": 2, "record_each_step": False}, instance="sequence_instance"),
        # laboratories: two-layer networks
        entry("labs.nonlinear.ExperimentSettings", nonlinear.ExperimentSettings, lambda: dataclasses.asdict(
            nonlinear_settings()), reinforce_eta="positive", reinforce_steps="count", apmd_eta="positive",
              apmd_steps="count", few_inner_steps="count", many_inner_steps="count", sampled_eta="positive",
              sampled_steps="count", sampled_batch="count", ppo_iterations="count", ppo_batch="count",
              ppo_inner_steps="count", ppo_eta="positive", smaller_eta_factor="positive"),
        entry("labs.nonlinear.nonlinear_experiment", nonlinear.nonlinear_experiment, lambda: {
            "collapse_coverage": 40.0, "random_coverage": 20.0, "width": 2, "eps": 0.05, "seeds": (0,),
            "collapse_settings": nonlinear_settings(), "random_settings": nonlinear_settings()},
              width="count", eps="nonnegative", collapse_settings="object", random_settings="object", nan_ok=True),
        entry("labs.nonlinear.TwoLayerNetwork", nonlinear.TwoLayerNetwork, lambda: {"dim": 4, "width": 3, "skip": False},
              width="count"),
        entry("labs.nonlinear.network_for", nonlinear.network_for,
              lambda: {"instance": instance(), "width": 4, "skip": True}, width="count"),
        # the chapters' inner-loop and timing measurements
        entry("experiments.collapse.inner_error_factors", collapse_inner_factor.inner_error_factors, lambda: {
            "instance": c(), "beta": 0.5, "eta": 4.0, "n_steps": 4, "zero_mass": 1e-3}, instance="collapse",
              zero_mass="probability"),
        entry("experiments.collapse.equal_mass_resets", collapse_inner_factor.equal_mass_resets,
              lambda: {"run": apmd_run(), "inner_steps": 4, "ratio": 2.0},
              argument_names=("run", "inner_steps", "ratio"), ratio="positive"),
        entry("experiments.collapse.regularized_maximum", collapse_ridge.regularized_maximum,
              lambda: {"instance": c(), "beta": 0.5}, instance="collapse"),
        entry("experiments.collapse.ridge_profile", collapse_ridge.ridge_profile,
              lambda: {"run": collapse_run(), "beta": 0.5, "drained_mass": 0.05},
              argument_names=("run", "beta", "drained_mass"), drained_mass="probability"),
        entry("experiments.ppo.population_ascent", ppo_inner_loop.population_ascent,
              lambda: {"instance": instance(), "beta": 1.0, "eta": 0.5, "n_steps": 3}),
        entry("experiments.ppo.inner_loop_by_batch", ppo_inner_loop.inner_loop_by_batch, lambda: {
            "instance": instance(), "batch_sizes": (4,), "beta": 1.0, "eta": 0.5, "n_iterations": 2, "inner_steps": 2,
            "seed": 0}),
        entry("experiments.ppo.comparators.restricted_base", ppo_comparators.restricted_base, lambda: {
            "instance": tiny_stacked_collapse(), "rewards_kept": (1.0,)}, rewards_kept="real_grid",
              infinite_ok=True),
        entry("experiments.ppo.comparators.comparator_coverage", ppo_comparators.comparator_coverage, lambda: {
            "instance": tiny_stacked_collapse(),
            "log_comparator": ppo_comparators.restricted_base(tiny_stacked_collapse(), (1.0,))},
              log_comparator="theta"),
        entry("experiments.ppo.comparators.comparator_targets", ppo_comparators.comparator_targets, lambda: {
            "sweeps": tiny_seeded_sweep(), "instances": [tiny_stacked_collapse()], "comparators": {"optimum": (1.0,)},
            "eps": (0.5,), "labels": ("PPO-NoClip",)},
              argument_names=("sweeps", "instances", "comparators", "eps", "labels"), sweeps="object",
              eps="grid", labels="object"),
        entry("experiments.ppo.seeds.read_seeds_record", ppo_seeds.read_seeds_record,
              lambda: {"path": ppo_seeds.SEEDS_RECORD}),
        entry("experiments.ppo.seeds.check_seeds_record", ppo_seeds.check_seeds_record,
              lambda: {"record": ppo_seeds_record()}, argument_names=("record",), record="mapping"),
        entry("experiments.ppo.seeds.seeds_summary", ppo_seeds.seeds_summary,
              lambda: {"run_": ppo_seeds_record()["runs"][0]}, argument_names=("run_",), run_="mapping",
              infinite_ok=True),
        entry("experiments.ppo.seeds.seeds_table", ppo_seeds.seeds_table,
              lambda: {"summary": ppo_seeds_summary(), "caption": "x"}, argument_names=("summary", "caption"),
              summary="mapping"),
        # a good call is the whole study (11 s at one seed): only seeds refused before any work are tried
        entry("experiments.ppo.seeds.seed_study", ppo_seeds.seed_study, lambda: {"seeds": (0,)}, heavy=True),
        entry("experiments.ppo.coverage_loss_timing", ppo_coverage_loss_timing.coverage_loss_timing, lambda: {
            "method": method(), "instances": [instance()], "etas": (0.5,), "eps": 0.1, "seed": 0}, nan_ok=True),
        entry("experiments.squared_loss.squared_loss_inner_loops", squared_inner_loop.squared_loss_inner_loops,
              lambda: {"method": squared_method(), "instance": instance(), "seed": 0}),
        entry("labs.nonlinear.feature_matrix", nonlinear.feature_matrix, lambda: {"instance": instance()}),
        entry("labs.nonlinear.forward", nonlinear.forward, lambda: {
            "instance": instance(), "network": network(), "params": network_params()}),
        entry("labs.nonlinear.logit_backprop", nonlinear.logit_backprop, lambda: {
            "instance": instance(), "network": network(), "params": network_params(),
            "logit_sensitivity": np.ones((3, 5))}),
        entry("labs.nonlinear.population_sensitivity", nonlinear.population_sensitivity, lambda: {
            "instance": instance(), "log_probs": log_table(), "advantage": np.ones((3, 5))}),
        entry("labs.nonlinear.batch_sensitivity", nonlinear.batch_sensitivity, lambda: {
            "instance": instance(), "log_probs": log_table(), "prompts": np.array([0, 1]), "responses": np.array([1, 2]),
            "coefficients": np.array([0.5, -0.5])}),
        entry("labs.nonlinear.initial_parameters", nonlinear.initial_parameters, lambda: {
            "instance": instance(), "network": network(), "rng": rng(), "hidden_scale": 1.0, "output_scale": 0.01}),
        entry("labs.nonlinear.base_fit_kl", nonlinear.base_fit_kl, lambda: {
            "instance": instance(), "network": network(), "params": network_params()}),
        entry("labs.nonlinear.NetworkPolicy", nonlinear.NetworkPolicy, lambda: {
            "instance": instance(), "network": network(), "initial_params": network_params()}),
    ]
    return tuple(found) + _transformer_entries()


def _transformer_entries() -> tuple[EntryPoint, ...]:
    """The transformer laboratory's entry points, at a three-symbol alphabet and strings of two (none without JAX).

    Their good arguments are numpy arrays and plain records, never JAX arrays: building one
    starts JAX's thread pool, which the report's forked calls would deadlock on. The analysis
    functions read a :class:`~covpo.labs.transformer.experiment.TransformerStudy` of made-up
    numbers (:func:`synthetic_study`); the whole studies are heavy.
    """
    if transformer is None:
        return ()
    task = functools.partial(transformer.ReversalTask, n_symbols=3, length=2)
    config = functools.partial(transformer.ModelConfig, n_symbols=3, length=2, d_model=8, n_layers=1, n_heads=2)

    def prompts() -> np.ndarray:
        return transformer_task.all_prompts(task())[:4]

    def grpo() -> object:
        return transformer.Method("GRPO", 1e-3, beta=0.04)

    def cells() -> tuple:
        return (transformer.Cell("mixed", "fixed, weak β"),)

    def arms() -> dict:
        return {"fixed, weak β": transformer.make_arm("fixed, weak β", 3e-3, 4)}

    def comparison() -> object:
        return transformer_analysis.Comparison("APMD - fixed, weak β", transformer_analysis.Side("APMD"),
                                               transformer_analysis.Side("fixed, weak β"))

    tiny_sizes = {"base_models": 1, "seeds_per_base": 1, "n_steps": 1, "n_prompts": 2, "slot_size": 2,
                  "inner_steps": 1, "held_out": 2, "pretrain_steps": 1, "pretrain_batch": 2, "n_samples": 2, "chunk": 1}
    pass_metric = transformer_analysis.METRICS[0]
    return (
        entry("labs.transformer.ReversalTask", transformer.ReversalTask, lambda: {
            "n_symbols": 3, "length": 2, "gap": 0.1, "easy_correct": 0.2, "easy_near": 0.6, "hard_correct": 0.02,
            "hard_near": 0.78, "decoupled": False, "shared_mixture": False}, n_symbols="count",
              easy_correct="nonnegative", easy_near="nonnegative", hard_correct="nonnegative",
              hard_near="nonnegative", decoupled="flag", shared_mixture="flag"),
        entry("labs.transformer.all_prompts", transformer_task.all_prompts, lambda: {"task": task()}),
        entry("labs.transformer.check_prompts", transformer_task.check_prompts,
              lambda: {"task": task(), "prompts": prompts()}, prompts="indices"),
        entry("labs.transformer.split_prompts", transformer_task.split_prompts,
              lambda: {"task": task(), "held_out": 2, "rng": rng()}),
        entry("labs.transformer.correct_answer", transformer.correct_answer,
              lambda: {"task": task(), "prompts": prompts()}, skip=("prompts",)),
        entry("labs.transformer.near_miss", transformer.near_miss, lambda: {"task": task(), "prompts": prompts()},
              skip=("prompts",)),
        entry("labs.transformer.answer_index", transformer_task.answer_index,
              lambda: {"answers": prompts(), "n_symbols": 3}, answers="indices"),
        entry("labs.transformer.is_hard", transformer_task.is_hard, lambda: {"task": task(), "prompts": prompts()},
              skip=("prompts",)),
        entry("labs.transformer.mixture", transformer_task.mixture, lambda: {"task": task(), "prompts": prompts()},
              prompts="indices"),
        entry("labs.transformer.mixture_weights", transformer_task.mixture_weights,
              lambda: {"task": task(), "prompts": prompts()}, skip=("prompts",)),
        entry("labs.transformer.reward", transformer.reward, lambda: {
            "task": task(), "prompts": prompts(), "answers": transformer.correct_answer(task(), prompts()),
            "kind": "partial"}, answers="indices"),
        entry("labs.transformer.pass_at_k", transformer.pass_at_k, lambda: {
            "n": 8, "correct": np.array([0, 3, 8]), "ks": np.array([1, 2, 8])}, correct="indices"),
        entry("labs.transformer.exact_pass_at_k", transformer.exact_pass_at_k,
              lambda: {"log_coverage": np.array([-1.0, -3.0]), "ks": np.array([1, 4])}),
        entry("labs.transformer.default_ks", transformer.default_ks, lambda: {"n": 8}),
        entry("labs.transformer.sign_test_interval", transformer.sign_test_interval,
              lambda: {"differences": np.arange(6.0) - 2.0, "level": 0.95}, differences="real_grid",
              level="probability"),
        entry("labs.transformer.ModelConfig", transformer.ModelConfig, lambda: dataclasses.asdict(config())),
        entry("labs.transformer.Method", transformer.Method, lambda: {
            "name": "GRPO", "learning_rate": 1e-3, "family": "grpo", "beta": 0.04, "clip_eps": 0.2,
            "advantage": "group", "sync_every": 2, "sync_alpha": 0.6, "exact_reward": False},
              name="text", beta="nonnegative", clip_eps="nonnegative", advantage="option", sync_every="count0",
              sync_alpha="probability", exact_reward="flag"),
        entry("labs.transformer.sync_period", transformer.sync_period, lambda: {"gradient_steps": 40}),
        entry("labs.transformer.make_arm", transformer.make_arm,
              lambda: {"name": "TRL sync, α = 0.6", "learning_rate": 3e-3, "gradient_steps": 40}),
        entry("labs.transformer.default_arms", transformer.default_arms,
              lambda: {"gradient_steps": 40, "names": ("APMD", "Rebel")}, names="instances"),
        entry("labs.transformer.fastest_stable_rate", transformer.fastest_stable_rate, lambda: {
            "rates": np.array([1e-3]), "rewards": np.array([[[0.1, 0.2, 0.3, 0.4]]])}, rates="grid"),
        entry("labs.transformer.TrainingSetup", transformer.TrainingSetup, lambda: {
            "config": config(), "n_steps": 2, "n_slots": 2, "slot_size": 2, "inner_steps": 1},
              n_slots="count", slot_size="count"),
        entry("labs.transformer.stack_constants", transformer_training.stack_constants,
              lambda: {"methods": [grpo()]}, methods="instances"),
        entry("labs.transformer.pretraining_data", transformer_training.pretraining_data,
              lambda: {"task": task(), "prompts": prompts()}, prompts="indices"),
        entry("labs.transformer.Cell", transformer.Cell, lambda: {
            "task": "mixed", "arm": "APMD", "group_size": 8, "reward": "binary", "learning_rate": 1e-3},
              task="option", arm="option", reward="option"),
        entry("labs.transformer.book_cells", transformer.book_cells, lambda: {}),
        entry("labs.transformer.full_cells", transformer.full_cells, lambda: {}),
        entry("labs.transformer.literature_table", transformer_literature.literature_table, lambda: {}),
        entry("labs.transformer.Side", transformer_analysis.Side, lambda: {
            "arm": "APMD", "task": "decoupled", "group_size": 32, "reward": "binary"},
              arm="option", task="option", reward="option"),
        entry("labs.transformer.Comparison", transformer_analysis.Comparison, lambda: {
            "label": "APMD - base", "first": transformer_analysis.Side("APMD"),
            "second": transformer_analysis.Side(transformer_analysis.BASE),
            "minus": (transformer_analysis.Side("APMD", "decoupled"), transformer_analysis.Side("fixed, weak β"))},
              label="nonempty_text", first="object", second="object", minus="object"),
        entry("labs.transformer.chapter_comparisons", transformer_analysis.chapter_comparisons,
              lambda: {"reward": "binary"}, reward="option"),
        entry("labs.transformer.run_metric", transformer_analysis.run_metric,
              lambda: {"study": synthetic_study(), "metric": pass_metric, "step": 0},
              study="object", metric="option", skip=("step",)),
        entry("labs.transformer.side_values", transformer_analysis.side_values, lambda: {
            "study": synthetic_study(), "side": transformer_analysis.Side(transformer_analysis.BASE),
            "metric": pass_metric}, study="object", side="object", metric="option"),
        entry("labs.transformer.compare", transformer_analysis.compare, lambda: {
            "study": synthetic_study(), "comparison": comparison(), "metric": pass_metric},
              study="object", comparison="object", metric="option"),
        entry("labs.transformer.paired_differences", transformer_analysis.paired_differences, lambda: {
            "study": synthetic_study(), "comparison": comparison(), "metric": pass_metric},
              study="object", comparison="object", metric="option"),
        entry("labs.transformer.paired_table", transformer_analysis.paired_table, lambda: {
            "study": synthetic_study(), "comparisons": (comparison(),), "metrics": transformer_analysis.METRICS[:2],
            "reward": "partial"}, study="object", comparisons="instances", metrics="instances", reward="option"),
        entry("labs.transformer.summary_table", transformer_analysis.summary_table,
              lambda: {"study": synthetic_study(), "reward": "partial"}, study="object", reward="option"),
        entry("labs.transformer.arms_table", transformer_analysis.arms_table, lambda: {"study": synthetic_study()},
              study="object"),
        entry("labs.transformer.reference_text", transformer_analysis.reference_text,
              lambda: {"method": transformer.make_arm("ProRL-style", 3e-3, 40)}),
        entry("labs.transformer.kept_steps", transformer_frontier.kept_steps, lambda: {"n_steps": 40}),
        # the record's stamp hashes frontier.py's code, which checks none of these arguments: a good call only
        entry("labs.transformer.first_loss_step", transformer_frontier.first_loss_step, lambda: {
            "log_coverage": np.log(np.array([[0.5, 0.9], [0.01, 0.9]])), "hard": np.array([True, False]),
            "inner_steps": 4}, skip=("log_coverage", "hard", "inner_steps")),
        entry("labs.transformer.inner_condition", transformer_frontier.inner_condition, lambda: {
            "log_coverage": np.log([[0.5, 0.9], [0.45, 0.9], [0.5, 0.9]]),
            "prompt_accuracy": np.array([[0.001, 0.0], [0.0005, 0.0]]),
            "target_log_coverage": np.log([[0.55, 0.9], [0.5, 0.9]]), "hard": np.array([True, False])},
              log_coverage="log_coverage", prompt_accuracy="real_grid", target_log_coverage="log_coverage",
              hard="mask"),
        entry("labs.transformer.run_paths", transformer_frontier.run_paths, lambda: {
            "study": synthetic_study(), "run": 7}, study="object", run="count0"),
        entry("labs.transformer.mirror_descent_paths", transformer_frontier.mirror_descent_paths, lambda: {
            "study": synthetic_study(), "beta": 0.5}, study="object"),
        # a good call is the whole frontier study (hours): only values refused before any work are tried
        entry("labs.transformer.frontier_study_run", transformer_frontier.frontier_study_run, lambda: {
            "progress": False, "seed": 0}, heavy=True),
        entry("labs.transformer.read_frontier_record", transformer_frontier_analysis.read_frontier_record,
              lambda: {"path": frontier_record_file()}, argument_names=("path",)),
        entry("labs.transformer.profiles", transformer_frontier_analysis.profiles,
              lambda: {"record": frontier_record()}, argument_names=("record",)),
        entry("labs.transformer.block_paths", transformer_frontier_analysis.block_paths, lambda: {
            "record": frontier_record(), "profile": "second", "block": "48x16", "arm": "APMD", "reward": "partial",
            "task": "mixed"},
              argument_names=("record", "profile", "block", "arm", "reward", "task"), profile="option",
              block="option", reward="option", task="option"),
        entry("labs.transformer.ArmPaths", transformer_frontier_analysis.ArmPaths, lambda: {
            "block": "route", "arm": "APMD", "task": "decoupled"}, block="option", arm="option", task="option"),
        entry("labs.transformer.condition_counts", transformer_frontier_analysis.condition_counts, lambda: {
            "record": frontier_record(), "profile": "default", "arm": "APMD", "block": "24x32"},
              argument_names=("record", "profile", "arm", "block"), profile="option", arm="option", block="option"),
        entry("labs.transformer.condition_table", transformer_frontier_analysis.condition_table, lambda: {
            "record": frontier_record(), "arms": ("APMD",), "blocks": ("long", "24x32")},
              argument_names=("record", "arms", "blocks"), arms="instances", blocks="instances"),
        entry("labs.transformer.value_at_level", transformer_frontier_analysis.value_at_level, lambda: {
            "path": frontier_record()["runs"][0]["blocks"]["long"]["paths"][0], "movement": "kl",
            "measure": "pass@16", "level": 0.3, "panel": "held-out"},
              argument_names=("path", "movement", "measure", "level", "panel"), movement="option",
              measure="option", level="real", panel="option"),
        entry("labs.transformer.matched_comparison", transformer_frontier_analysis.matched_comparison, lambda: {
            "record": frontier_record(), "profile": "default", "first": "APMD", "second": "mirror descent",
            "level": 0.3, "movement": "pass1", "measure": "log10_coverage", "panel": "training", "block": "long",
            "reward": "partial"},
              argument_names=("record", "profile", "first", "second", "level", "movement", "measure", "panel", "block",
                              "reward"), profile="option", first="text", second="text", level="real",
              movement="option", measure="option", panel="option", block="option", reward="option"),
        entry("labs.transformer.matched_verdict", transformer_frontier_analysis.matched_verdict, lambda: {
            "record": frontier_record(), "first": "APMD", "second": "fixed, weak β", "level": 0.3},
              argument_names=("record", "first", "second", "level"), first="text", second="text", level="real"),
        entry("labs.transformer.median_frontier", transformer_frontier_analysis.median_frontier, lambda: {
            "record": frontier_record(), "profile": "default", "arm": "APMD", "levels": np.array([0.1, 0.3, 0.9]),
            "movement": "pass1", "measure": "near", "panel": "held-out", "block": "24x32", "reward": "partial"},
              argument_names=("record", "profile", "arm", "levels", "movement", "measure", "panel", "block", "reward"),
              profile="option", levels="real_grid", movement="option", measure="option", panel="option",
              block="option", reward="option", nan_ok=True),
        entry("labs.transformer.collapse_onset", transformer_frontier_analysis.collapse_onset, lambda: {
            "record": frontier_record(), "profile": "default", "arm": "mirror descent", "panel": "held-out",
            "block": "long", "reward": "partial"},
              argument_names=("record", "profile", "arm", "panel", "block", "reward"), profile="option",
              panel="option", block="option", reward="option"),
        entry("labs.transformer.ended_below", transformer_frontier_analysis.ended_below, lambda: {
            "record": frontier_record(), "profile": "default", "arm": "fixed, weak β", "panel": "held-out",
            "block": "48x16", "reward": "partial"},
              argument_names=("record", "profile", "arm", "panel", "block", "reward"), profile="option",
              panel="option", block="option", reward="option"),
        entry("labs.transformer.inner_accuracy", transformer_frontier_analysis.inner_accuracy, lambda: {
            "record": frontier_record(), "profile": "default", "arm": "APMD", "block": "48x16", "tolerance": 0.7},
              argument_names=("record", "profile", "arm", "block", "tolerance"), profile="option", block="option",
              tolerance="positive"),
        entry("labs.transformer.frontier_arms_table", transformer_frontier_analysis.frontier_arms_table, dict),
        entry("labs.transformer.comparison_cell", transformer_frontier_analysis.comparison_cell, lambda: {
            "record": frontier_record(), "first": "APMD", "second": "fixed, weak β", "level": 0.3},
              argument_names=("record", "first", "second", "level"), first="text", second="text", level="real"),
        entry("labs.transformer.comparison_text", transformer_frontier_analysis.comparison_text, lambda: {
            "record": frontier_record(), "first": "APMD", "second": "fixed, weak β", "level": 0.3},
              argument_names=("record", "first", "second", "level"), first="text", second="text", level="real"),
        entry("labs.transformer.frontier_table", transformer_frontier_analysis.frontier_table, lambda: {
            "record": frontier_record(), "pairs": (("APMD", "fixed, weak β"),), "levels": (0.2, 0.3)},
              argument_names=("record", "pairs", "levels"), pairs="object", levels="real_grid"),
        entry("labs.transformer.onset_table", transformer_frontier_analysis.onset_table, lambda: {
            "record": frontier_record(), "arms": ("fixed, weak β", "APMD")},
              argument_names=("record", "arms"), arms="instances"),
        entry("labs.transformer.inner_table", transformer_frontier_analysis.inner_table, lambda: {
            "record": frontier_record(), "arms": ("APMD",), "blocks": ("long",)},
              argument_names=("record", "arms", "blocks"), arms="instances", blocks="instances"),
        entry("labs.transformer.measure_cost", transformer.measure_cost, lambda: {
            "config": config(), "batch": 16, "repeats": 1, "sampler": False, "seed": 0}, heavy=True, batch="count"),
        entry("labs.transformer.cost_table", transformer.cost_table, lambda: {
            "widths": (8,), "lengths": (2,), "batch": 16, "repeats": 1, "sampler": False}, heavy=True,
              widths="count_grid", lengths="count_grid", batch="count"),
        entry("labs.transformer.plan_study", transformer_experiment.plan_study, lambda: {
            "size": "book", "seed": 0, "cells": cells(), "methods": arms(), "config": config(), "task": task(),
            "sizes": tiny_sizes}, heavy=True, cells="instances", methods="mapping", sizes="mapping"),
        entry("labs.transformer.transformer_study", transformer.transformer_study, lambda: {
            "size": "book", "seed": 0, "cells": cells(), "methods": arms(), "progress": False, "plan": None},
              heavy=True, cells="instances", methods="mapping", plan="object"),
        entry("labs.transformer.learning_rate_sweep", transformer_experiment.learning_rate_sweep, lambda: {
            "size": "book", "seed": 0, "rates": (3e-3,), "arms": ("APMD",), "progress": False}, heavy=True,
              rates="grid", arms="instances"),
        # chapter 8: chapter 7's runs as TRL logs, and the detector against their exact coverage
        entry("labs.transformer.exact_trace", transformer_logs.exact_trace, lambda: {
            "study": synthetic_study(), "run": 0, "plan": None}, heavy=True, study="object", run="count0",
              plan="object"),
        entry("labs.transformer.draw_completions", transformer_logs.draw_completions, lambda: {
            "trace": tiny_trace(), "group_size": 4, "seed": 0}, trace="object"),
        entry("labs.transformer.write_trl_logs", transformer_logs.write_trl_logs, lambda: {
            "trace": tiny_trace(), "directory": DIAGNOSE_OUTPUT / "transformer", "group_size": 4, "seed": 0},
              skip=("directory",), trace="object"),
        entry("labs.transformer.trace_log", transformer_logs.trace_log, lambda: {
            "trace": tiny_trace(), "group_size": 4, "seed": 0}, trace="object"),
        entry("labs.transformer.exact_losses", transformer_logs.exact_losses, lambda: {"trace": tiny_trace()},
              trace="object"),
        entry("labs.transformer.detection", transformer_logs.detection, lambda: {
            "trace": tiny_trace(), "log": transformer_logs.trace_log(tiny_trace(), group_size=4, seed=0),
            "windows": 2, "zero_visits": 1, "alpha": 0.5, "early_rate": "point"}, trace="object", log="object",
              windows="count", zero_visits="count", alpha="probability", early_rate="option", nan_ok=True),
        entry("labs.transformer.detector_accuracy", transformer_logs.detector_accuracy, lambda: {
            "traces": (tiny_trace(),), "group_size": 4, "seed": 0, "windows": 2, "zero_visits": 1, "alpha": 0.5,
            "early_rate": "point"}, traces="instances", windows="count", zero_visits="count", alpha="probability",
              early_rate="option", nan_ok=True),
        # a good call is the validation study (minutes): only values refused before any work are tried
        entry("labs.transformer.validation_traces", transformer_validation.validation_traces, lambda: {
            "sizes": None, "progress": False}, heavy=True, sizes="mapping"),
        entry("labs.transformer.validation_run", transformer_validation.validation_run, lambda: {
            "sizes": None, "progress": False}, heavy=True, sizes="mapping"),
        entry("labs.transformer.record_profiles", transformer_validation.record_profiles, lambda: {
            "record": diagnose_record()}, argument_names=("record",)),
        entry("labs.transformer.read_validation", transformer_validation.read_validation, lambda: {
            "record": diagnose_record(), "profile": "default"}, argument_names=("record", "profile"),
              profile="option"),
    )


def tiny_trace() -> object:
    """A chapter-8 exact trace of two prompts on three symbols over four steps, the first prompt lost after two."""
    coverage = np.array([[0.5, 0.3], [0.5, 0.3], [0.5, 0.3], [1e-6, 0.3], [1e-6, 0.3]])
    prompts = np.array([[0, 1], [2, 1]])
    return transformer_logs.ExactTrace(
        arm="fixed, weak β", seed=0, prompts=prompts, correct=prompts[:, ::-1].copy(),
        near=np.array([[1, 1], [1, 0]]), hard=np.array([False, True]), log_coverage=np.log(coverage),
        log_near=np.log(np.full_like(coverage, 0.2)), near_reward=0.9, n_symbols=3)


@functools.cache
def diagnose_record() -> dict:
    """Chapter 8's validation record, read once."""
    from covpo.records import read_stamped_record

    return read_stamped_record(transformer_validation.DIAGNOSE_RECORD)


def synthetic_study(n_seeds: int = 6, n_steps: int = 2, names: tuple[str, ...] = ("fixed, weak β", "APMD"),
                    cells: tuple | None = None) -> object:
    """A chapter 7 study record of ``cells`` (by default the mixed task's cells of the arms ``names``) over ``n_seeds`` seeds, holding made-up numbers of the right shapes.

    The analysis functions only read a study, so their fuzz cases need no training run: every
    run has two training and two held-out prompts (one hard each), log-coverages drawn below
    zero, and three sampled models.
    """
    draw = np.random.default_rng(0)
    config = transformer.ModelConfig(n_symbols=3, length=2, d_model=8, n_layers=1, n_heads=2)
    setup = transformer.TrainingSetup(config, n_steps=n_steps, n_slots=2, slot_size=2, inner_steps=2)
    if cells is None:
        cells = tuple(transformer.Cell("mixed", name) for name in names)
    names = tuple(dict.fromkeys(cell.arm for cell in cells))
    runs = len(cells) * n_seeds

    def log_probs(prompts: int) -> np.ndarray:
        return -draw.uniform(0.1, 6.0, (runs, n_steps + 1, prompts))

    return transformer.TransformerStudy(
        size="book", config=config, setup=setup, n_parameters=100,
        methods={method.name: method for method in transformer.default_arms(setup.gradient_steps, names)},
        cells=cells, run_cell=np.repeat(np.arange(len(cells)), n_seeds),
        run_seed=np.tile(np.arange(n_seeds), len(cells)),
        train_hard=np.tile([True, False], (runs, 1)), held_hard=np.tile([True, False], (runs, 1)),
        near_reward=np.full(runs, 0.9), reward=draw.uniform(0, 1, (runs, n_steps)),
        pass1=draw.uniform(0, 1, (runs, n_steps)), kl=draw.uniform(0, 1, (runs, n_steps + 1)),
        accuracy=draw.uniform(0, 1, (runs, n_steps)), log_coverage=log_probs(2), log_near=log_probs(2),
        held_log_coverage=log_probs(2), held_log_near=log_probs(2),
        prompt_accuracy=draw.uniform(0, 0.01, (runs, n_steps, 2)), target_log_coverage=log_probs(2)[:, 1:],
        n_samples=8, sampled_runs=np.array([-1, 0, 1]),
        sampled_correct=draw.integers(0, 9, (3, 2)), sampled_held=np.tile([True, False], (3, 1)),
        sampled_valid=np.ones((3, 2), dtype=bool), pretrain_losses=np.ones((1, 2)), timings={},
    )


@functools.cache
def frontier_record() -> dict:
    """A frontier record (``covpo.labs.transformer.frontier``) of :func:`synthetic_study`'s paths: two profiles, every block.

    Every block holds the same six seeds of a weak fixed reference and APMD (two outer steps of
    two inner steps), the long block also exact mirror descent from the same base models; the
    stamps name only the CPU profile, all the reading functions look at.
    """
    study = synthetic_study()
    paths = [transformer_frontier.run_paths(study, run) for run in range(len(study.run_cell))]
    blocks = {name: {"n_steps": 2, "inner_steps": 2, "seconds": 1.5, "paths": paths}
              for name in transformer_frontier.BLOCKS}
    blocks["long"] = {**blocks["long"], "mirror_descent": transformer_frontier.mirror_descent_paths(study)}
    return {"runs": [{"stamp": {"command": "fuzz", "profile": profile}, "blocks": blocks}
                     for profile in ("default", "second")]}


FUZZ_RECORD = Path(__file__).resolve().parent.parent / "_build" / "fuzz" / "frontier.json"
"""Where the fuzz cases of ``read_frontier_record`` find their record (the build folder, which git ignores)."""


@functools.cache
def frontier_record_file() -> Path:
    """:data:`FUZZ_RECORD`, holding :func:`frontier_record` (written once per process, atomically: test workers share it)."""
    FUZZ_RECORD.parent.mkdir(parents=True, exist_ok=True)
    written = FUZZ_RECORD.with_name(f"{FUZZ_RECORD.stem}.{os.getpid()}.tmp")
    written.write_text(json.dumps(frontier_record()))
    os.replace(written, FUZZ_RECORD)
    return FUZZ_RECORD


DIAGNOSE_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "diagnose"
"""The log fixtures of ``covpo.diagnose`` (a verl rollout folder and a TRL run)."""
DIAGNOSE_OUTPUT = Path(__file__).resolve().parent.parent / "_build" / "fuzz" / "diagnose"
"""Where the fuzz cases of the log writers and the report write (the build folder, which git ignores)."""


@functools.cache
def diagnose_log() -> diagnose_readers.CompletionLog:
    """A small completion log: two prompts over six steps, one solved early and never after."""
    rewards = np.concatenate([[1.0, 0.0, 0.0, 0.0, 1.0, 0.0] if step < 2 else [0.0] * 4 + [1.0, 0.0] for step in range(6)])
    return diagnose_readers.completion_log(np.repeat(np.arange(6), 6), (["lost"] * 4 + ["kept"] * 2) * 6,
                                           [f"c{i}" for i in range(36)], {"correct": rewards})


@functools.cache
def diagnose_visits() -> diagnose_measures.Visits:
    return diagnose_measures.visits(diagnose_log())


@functools.cache
def diagnose_result() -> diagnose_measures.Diagnosis:
    return diagnose_measures.diagnose(diagnose_log(), windows=3)


def _diagnose_entries() -> tuple[EntryPoint, ...]:
    """Every public function of :mod:`covpo.diagnose`, on a six-step log and the package's fixtures."""
    counts = {"successes": "count_grid", "trials": "count_grid"}
    return (
        entry("diagnose.completion_log", diagnose_readers.completion_log, lambda: {
            "steps": np.array([0, 0, 1, 1]), "prompts": ["a", "a", "a", "a"], "completions": ["w", "x", "y", "z"],
            "rewards": {"r": np.array([1.0, 0.0, 0.0, 1.0])}}, steps="count_grid", prompts="text",
              completions="text", rewards="mapping"),
        entry("diagnose.detect_format", diagnose_readers.detect_format,
              lambda: {"path": DIAGNOSE_FIXTURES / "verl"}),
        entry("diagnose.read_log", diagnose_readers.read_log, lambda: {
            "path": DIAGNOSE_FIXTURES / "verl", "threshold": 1.0, "progress": False}, threshold="real"),
        entry("diagnose.write_trl_step", diagnose_readers.write_trl_step, lambda: {
            "directory": DIAGNOSE_OUTPUT / "trl", "step": 3, "prompts": ["a", "a"], "completions": ["x", "y"],
            "rewards": {"r": [1.0, 0.0]}}, skip=("directory",), step="count0", prompts="text", completions="text",
              rewards="mapping"),
        entry("diagnose.write_verl_step", diagnose_readers.write_verl_step, lambda: {
            "directory": DIAGNOSE_OUTPUT / "verl", "step": 3, "inputs": ["a", "a"], "outputs": ["x", "y"],
            "scores": [1.0, 0.0]}, skip=("directory",), step="count0", inputs="text", outputs="text",
              scores="rewards"),
        entry("diagnose.success_rule", diagnose_success.success_rule, lambda: {
            "available": ("correct", "tidy"), "reward": "correct", "threshold": 1.0}, available="text",
              reward="text", threshold="real"),
        entry("diagnose.visits", diagnose_measures.visits, lambda: {"log": diagnose_log()}, log="object"),
        entry("diagnose.wilson_interval", diagnose_measures.wilson_interval, lambda: {
            "successes": np.array([0, 3]), "trials": np.array([8, 8]), "level": 0.95}, level="probability", **counts),
        entry("diagnose.pass_at_k", diagnose_measures.pass_at_k, lambda: {
            "successes": np.array([0, 3]), "trials": np.array([8, 8]), "k": 2}, k="count", **counts),
        entry("diagnose.beta_binomial_fit", diagnose_measures.beta_binomial_fit, lambda: {
            "successes": np.array([0, 3, 1]), "trials": np.array([8, 8, 8])}, **counts),
        entry("diagnose.beta_binomial_pass_at_k", diagnose_measures.beta_binomial_pass_at_k, lambda: {
            "fit": diagnose_measures.BetaBinomialFit(0.5, 2.0, 10), "k": 64}, fit="object", k="count"),
        entry("diagnose.step_windows", diagnose_measures.step_windows, lambda: {
            "steps": np.array([1, 2, 3, 4]), "windows": 2}, steps="count_grid", windows="count"),
        entry("diagnose.difficulty_groups", diagnose_measures.difficulty_groups, lambda: {
            "table": diagnose_visits(), "windows": 3}, table="object", windows="count"),
        entry("diagnose.coverage_loss", diagnose_measures.coverage_loss, lambda: {
            "table": diagnose_visits(), "windows": 3, "zero_visits": 2, "alpha": 0.05, "early_rate": "point"},
              table="object", windows="count", zero_visits="count", alpha="probability", early_rate="option"),
        entry("diagnose.signature", diagnose_measures.signature, lambda: {
            "table": diagnose_visits(), "windows": 3, "level": 0.95}, table="object", windows="count",
              level="probability", nan_ok=True),
        entry("diagnose.bin_comparison", diagnose_measures.bin_comparison, lambda: {
            "table": diagnose_visits(), "windows": 3}, table="object", windows="count"),
        entry("diagnose.pass_at_k_curves", diagnose_measures.pass_at_k_curves, lambda: {
            "table": diagnose_visits(), "windows": 3, "ks": (1, 2, 16)}, table="object", windows="count",
              ks="count_grid", nan_ok=True),
        entry("diagnose.visit_counts", diagnose_measures.visit_counts, lambda: {"table": diagnose_visits()},
              table="object"),
        entry("diagnose.diagnose", diagnose_measures.diagnose, lambda: {
            "log": diagnose_log(), "windows": 3, "zero_visits": 2, "alpha": 0.05, "level": 0.95}, log="object",
              windows="count", zero_visits="count", alpha="probability", level="probability", nan_ok=True),
        entry("diagnose.verdict", diagnose_report.verdict, lambda: {"diagnosis": diagnose_result()},
              diagnosis="object"),
        entry("diagnose.heatmap_figure", diagnose_report.heatmap_figure, lambda: {
            "diagnosis": diagnose_result(), "max_prompts": 5, "max_columns": 4}, diagnosis="object",
              max_prompts="count", max_columns="count"),
        entry("diagnose.signature_figure", diagnose_report.signature_figure, lambda: {"diagnosis": diagnose_result()},
              diagnosis="object"),
        entry("diagnose.pass_at_k_figure", diagnose_report.pass_at_k_figure, lambda: {"diagnosis": diagnose_result()},
              diagnosis="object"),
        entry("diagnose.report_html", diagnose_report.report_html, lambda: {
            "diagnosis": diagnose_result(), "title": "run"}, diagnosis="object", title="text"),
        entry("diagnose.write_report", diagnose_report.write_report, lambda: {
            "diagnosis": diagnose_result(), "out": DIAGNOSE_OUTPUT / "report.html"}, skip=("out",),
              diagnosis="object"),
        entry("diagnose.parser", diagnose_cli.parser, dict),
        entry("diagnose.main", diagnose_cli.main, lambda: {
            "argv": [str(DIAGNOSE_FIXTURES / "verl"), "--no-progress"]}, skip=("argv",)),
    )


#: Every public entry point, in the order above.
ENTRY_POINTS: tuple[EntryPoint, ...] = _entries() + _study_entries() + _diagnose_entries()


#: Results the package builds and hands back (frozen records of a run or a study); a user reads them, never builds them.
RESULT_RECORDS: tuple[type, ...] = (
    engine.CollapseRun, engine.ExactRunsSummary, engine.StepIncrements, landscape.Landscape, landscape.SimplexPath,
    squared.BaselineMoments, squared.MinimizerCheck, paper_figures.FixedReferenceRateSweep, paper_figures.Figure2aData, paper_figures.Figure2bcData,
    paper_figures.Figure1Data, paper_figures.Figure1aData, paper_figures.Figure3Data, phases.SlideProfile,
    phases.RecoveryProfile, reset_sweeps.InnerStepsSweep, reset_sweeps.PowerFit, reset_sweeps.APMDKnobSweep,
    reset_sweeps.InnerAccuracySweep, sampled.SeedSweep, step_sizes.ExponentialFits, step_sizes.LearningRateGrid,
    step_sizes.FirstSteps, collapse_sweeps.ExponentialFit, collapse_sweeps.StepsToEpsSweep, collapse_sweeps.BetaSweep,
    collapse_sweeps.BetaEscapeMap, collapse_sweeps.LearningRateSweep, head_to_head.RunOutcome, head_to_head.HeadToHead,
    head_to_head.SuitePart, noise.NoiseStudy, anchor_design.AnchorRun, anchor_design.AnchorStudy,
    implication_seeds.RecordedSuite, implication_seeds.RecordedTuningMap, paper_units.GroupCost, paper_units.UnitsRow, paper_units.UnitsComparison,
    tuning.TuningPrescriptions, tuning.TuningMap, md_experiments.MirrorDescentRate, md_experiments.ComparatorGuarantee,
    ppo_ratios.RatioSpread, ppo_ratios.RatioBoundsTable, ppo_clipping.ClipActivity,
    ppo_estimators.EstimatorSpread, ppo_concavity.Landscape, ppo_concavity.InnerLoopCurvature,
    ppo_clipping.ClippingBenefit, setting.BestOfNCurves, squared_baselines.BaselineBiasSweep,
    squared_curvature.CurvatureScan, squared_curvature.LossSlice, squared_table_1.Table1,
    squared_table_1.SeededTable1,
    squared_mse.MSEPath, squared_mse.RebelObjectiveCheck, squared_batch_size.BatchSizeStudy,
    sweeps.CoverageFit, sweeps.CostSweep, sweeps.RunSummary, sweeps.RecipeComparison, sweeps.SeededCostSweep,
    ppo_comparators.ComparatorTargets,
    nonlinear.NonlinearExperiment, nonlinear.NetworkParameters, nonlinear.ForwardPass,
    collapse_inner_factor.InnerErrorFactors, collapse_ridge.RidgeProfile, ppo_inner_loop.PopulationAscent,
    ppo_inner_loop.BatchInnerLoops, ppo_coverage_loss_timing.CoverageLossTiming,
    ppo_reliability.ReliabilityStudy, ppo_reliability.PairedDifference,
    squared_inner_loop.SquaredLossInnerLoops, squared_seeds.SeededSweeps, squared_seeds.FailureRates,
    squared_eps_scaling.RebelEpsScaling, sequence_experiment.SequenceExperiment, sequences.SequenceBatch,
    sequences.SurrogateParts, sequences.SequenceRatioRecord, sequences.SequencePPORun,
    diagnose_readers.CompletionLog, diagnose_success.SuccessRule, diagnose_measures.Visits,
    diagnose_measures.BetaBinomialFit, diagnose_measures.DifficultyGroups, diagnose_measures.CoverageLoss,
    diagnose_measures.Signature, diagnose_measures.PassAtK, diagnose_measures.Diagnosis,
) + (() if transformer is None else (
    transformer.TransformerStudy, transformer_training.RunRecord, transformer_experiment.StudyPlan,
    transformer_experiment.LearningRateSweep, transformer.PairedInterval, transformer_frontier_analysis.MatchedComparison,
    transformer_logs.ExactTrace, transformer_logs.Completions, transformer_logs.ExactLosses, transformer_logs.Detection,
    transformer_logs.RunAccuracy, transformer_logs.DetectorAccuracy,
))

#: The transformer laboratory's JAX code that its compiled loops call with traced arrays, and its records of JAX arrays.
JAX_INTERNALS: tuple[str, ...] = (
    "model.init_params", "model.parameter_count", "model.forward", "model.empty_cache", "model.decode_step",
    "model.teacher_forcing_inputs", "model.token_log_probs", "model.answer_log_probs", "model.answer_logits",
    "model.group_answer_logits", "model.group_token_log_probs", "model.prefix_tree_logits",
    "model.all_answer_token_log_probs", "model.all_answer_log_probs", "exact.regularized_target",
    "exact.sequence_kl", "exact.regularized_objective", "training.group_advantages", "training.leave_one_out_rewards",
    "training.synced_reference", "training.is_sync_step", "training.policy_loss", "training.apmd_loss", "training.answer_log_probs_pair",
    "training.held_out_log_probs", "training.reward_tables", "training.pretraining_loss", "training.pretrain",
    "training.pretrain_models", "training.train_runs", "training.RunInputs", "training.PretrainingData",
    "sampling.sample_answers",
)

#: Every public callable of the experiments and the laboratories that has no entry point, with the reason.
NOT_FUZZED: Mapping[object, str] = {
    **{record: "a result record the package builds" for record in RESULT_RECORDS},
    **({} if transformer is None else {
        functools.reduce(getattr, name.split("."), transformer): (
            "JAX internals of the transformer laboratory: functions traced inside its compiled loops and the records "
            "of JAX arrays they take (pretrain's arguments are JAX parameters and keys, and building them in the "
            "report would deadlock its forked calls)"
        )
        for name in JAX_INTERNALS
    }),
}

#: The packages whose every public function and class the fuzz suite must cover.
FUZZED_PACKAGES = ("covpo.experiments", "covpo.labs", "covpo.diagnose")


def public_callables() -> dict[str, object]:
    """Every public function and class defined in :data:`FUZZED_PACKAGES`, by qualified name.

    Public means a function (cached or compiled ones included) or a class defined in the module,
    not imported into it, under a name without a leading underscore; the transformer laboratory
    is left out where JAX is not installed.
    """
    found = {}
    for package_name in FUZZED_PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.walk_packages(package.__path__, f"{package_name}."):
            if transformer is None and info.name.startswith("covpo.labs.transformer"):
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                defined_here = getattr(value, "__module__", None) == module.__name__
                kind_ok = inspect.isfunction(inspect.unwrap(value)) or inspect.isclass(value)
                if not name.startswith("_") and defined_here and kind_ok:
                    found[f"{info.name}.{name}"] = value
    return found


def bad_values(kind: str, good: object) -> list[BadValue]:
    """The bad values that apply to an argument of ``kind`` whose good value is ``good``."""
    text, nothing = BadValue("string", "abc"), BadValue("none", None)
    if kind in ("count", "count0", "seed"):
        values = [BadValue("negative", -3), BadValue("nan", math.nan), BadValue("inf", math.inf),
                  BadValue("huge", 1e308), text, nothing, BadValue("bool", True), BadValue("fractional", 2.5),
                  BadValue("complex", 3 + 1j)]
        return ([BadValue("zero", 0)] if kind == "count" else []) + values
    if kind in ("positive", "nonnegative", "probability", "real"):
        values = [BadValue("nan", math.nan), BadValue("inf", math.inf), text, nothing, BadValue("complex", 0.5 + 1j)]
        if kind != "real":
            values += [BadValue("negative", -0.5), BadValue("huge", 1e308, clearly_bad=kind == "probability")]
        if kind in ("positive", "probability"):
            values.append(BadValue("zero", 0.0))
        if kind == "probability":
            values.append(BadValue("above_one", 1.5))
        return values
    if kind == "index":
        return [BadValue("negative", -1), BadValue("out_of_range", 99), BadValue("fractional", 0.5), text, nothing,
                BadValue("bool", True)]
    if kind == "flag":
        return [BadValue("string", "no"), BadValue("int", 1), BadValue("float", 0.0), nothing, BadValue("complex", 1j)]
    if kind in ("text", "nonempty_text"):
        values = [BadValue("int", 3), nothing, BadValue("bytes", b"label"), BadValue("list", ["label"])]
        return values + ([BadValue("empty", "")] if kind == "nonempty_text" else [])
    if kind == "seeds":
        return [BadValue("empty", ()), BadValue("negative_entry", (0, -1)), BadValue("fractional_entry", (0, 2.5)),
                BadValue("none_entry", (0, None)), BadValue("complex_entry", (0, 1j)), text, nothing,
                BadValue("int", 3)]
    if kind in ("methods", "instances"):
        first = tuple(good)[0]
        values = [nothing, text, BadValue("empty", ()), BadValue("wrong_entry", (first, "abc")),
                  BadValue("single", first)]
        return values + ([BadValue("duplicate_labels", (first, first))] if kind == "methods" else [])
    if kind in ("instance", "collapse", "sequence_instance"):
        wrong = tiny_collapse() if kind == "instance" else instance()
        return [nothing, text, BadValue("wrong_type", wrong)]
    if kind == "rng":
        return [BadValue("int", 0), text] + ([] if good is None else [nothing])
    if kind == "rng_or_seed":
        return [BadValue("negative", -1), BadValue("fractional", 2.5), BadValue("bool", True), text,
                BadValue("complex", 1j)]
    if kind in ("object", "callable"):
        return [nothing, text]
    if kind == "mapping":
        return [nothing, text, BadValue("list", [1, 2])]
    if kind == "option":
        return [BadValue("unknown", "no-such-option"), nothing, BadValue("int", 0)]
    good_array = np.asarray(good, dtype=float)
    arrays = [text, nothing] + ([] if kind == "indices" else [BadValue("empty", np.array([]))])
    arrays.append(BadValue("complex", good_array + 1j))
    if kind in ("theta", "log_table", "probs", "rewards", "grid", "count_grid", "coverage_grid", "real_grid",
                "log_coverage"):
        arrays += [BadValue("nan_entry", _with(good_array, math.nan)),
                   BadValue("inf_entry", _with(good_array, math.inf))]
    if kind in ("theta", "log_table", "probs", "rewards"):
        arrays.append(BadValue("wrong_shape", np.concatenate([good_array.ravel(), [0.0]])))
    if kind == "log_table":
        arrays += [BadValue("probabilities_for_logs", np.exp(good_array)), BadValue("unnormalized", good_array + 1.0)]
    if kind == "probs":
        arrays += [BadValue("unnormalized", 2.0 * good_array), BadValue("negative_entry", _with(good_array, -0.5))]
    if kind in ("grid", "count_grid", "coverage_grid"):
        arrays.append(BadValue("negative_entry", _with(good_array, -1.0)))
    if kind == "coverage_grid":
        arrays.append(BadValue("below_one", _with(good_array, 0.5)))
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
    """The bad values of ``argument`` of ``point``: those of its kind, less ``None`` where ``None`` is its default.

    A heavy entry point gets only the clearly bad values: an extreme but valid one would run it whole.
    """
    found = bad_values(point.kinds[argument], point.arguments()[argument])
    return [bad for bad in found
            if not (bad.label == "none" and argument in point.optional) and (bad.clearly_bad or not point.heavy)]


def uncovered_callables() -> list[str]:
    """The public callables of :data:`FUZZED_PACKAGES` with neither an entry point nor a reason in :data:`NOT_FUZZED`."""
    covered = {point.function for point in ENTRY_POINTS}
    return sorted(name for name, value in public_callables().items() if value not in covered and value not in NOT_FUZZED)


def cases() -> list[tuple[EntryPoint, str, BadValue]]:
    """Every (entry point, argument, bad value) the fuzz suite and the report try."""
    return [(point, argument, bad) for point in ENTRY_POINTS for argument in point.kinds
            for bad in argument_bad_values(point, argument)]


def is_finite_result(result: object, infinite_ok: bool = False, nan_ok: bool = False, depth: int = 0) -> bool:
    """Whether every number in ``result`` (arrays, floats, dataclass fields such as a trajectory's) is finite.

    With ``infinite_ok`` infinities count as finite, with ``nan_ok`` NaN does. Figures, strings,
    ``None`` and booleans count as finite; objects of this package are searched through their
    attributes, a few levels deep.
    """
    def inner(value: object) -> bool:
        return is_finite_result(value, infinite_ok, nan_ok, depth + 1)

    if depth > 4 or result is None or isinstance(result, (str, bytes, bool, np.bool_)):
        return True
    if isinstance(result, np.ndarray) and result.dtype == object:
        return all(inner(item) for item in result.ravel())
    if isinstance(result, (int, float, np.number, np.ndarray)):
        values = np.asarray(result)
        if values.dtype.kind not in "fciu":
            return True
        allowed = np.isfinite(values) | (infinite_ok & np.isinf(values)) | (nan_ok & np.isnan(values))
        return bool(np.all(allowed))
    if isinstance(result, Mapping):
        return all(inner(value) for value in result.values())
    if isinstance(result, (list, tuple)):
        return all(inner(item) for item in result)
    if dataclasses.is_dataclass(result):
        return all(inner(getattr(result, item.name)) for item in dataclasses.fields(result))
    if type(result).__module__.startswith("covpo") and hasattr(result, "__dict__"):
        return all(inner(value) for value in vars(result).values())
    return True


def names_argument(message: str, argument: str) -> bool:
    """Whether an error message names ``argument`` as a word of its own."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(argument)}(?![A-Za-z0-9_])", message) is not None
