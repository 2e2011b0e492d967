"""The shared sweep machinery (covpo.experiments.sweeps): a Method's validation, its runs, and divergence."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from covpo.experiments.sweeps import (
    Method,
    compare_at_budget,
    compare_recipes,
    cost_sweep,
    run_unless_diverged,
    summarize_run,
)
from tests.helpers import small_instance

PPO = {"beta": 1.0, "batch_size": 8, "inner_steps": 2, "n_iterations": 3}
SFT = {"batch_size": 4, "group_size": 2, "inner_steps": 1, "n_iterations": 1}


def test_a_method_copies_its_hyperparameters_and_survives_pickling():
    hyperparameters = dict(PPO)
    method = Method("PPO", "ppo_noclip", hyperparameters, [0.5, 1])
    hyperparameters["beta"] = 2.0
    assert method.hyperparameters["beta"] == 1.0 and method.etas == (0.5, 1.0)
    assert method.learning_rates == (0.5, 1.0) and method.definition.label == "PPO-NoClip"
    assert pickle.loads(pickle.dumps(method)) == method
    exact = Method("APMD", "apmd_exact", {"beta": 1.0, "n_iterations": 4})
    assert exact.learning_rates == (None,) and exact.response_budget == 0


@pytest.mark.parametrize("algorithm", ["sgd", "ppo", "", "PPO-NoClip"])
def test_an_unknown_algorithm_raises_naming_it(algorithm):
    with pytest.raises(ValueError, match=rf"algorithm must be one of .*{algorithm!r}"):
        Method("x", algorithm, {}, (1.0,))


@pytest.mark.parametrize(
    ("algorithm", "hyperparameters", "name"),
    [
        ("ppo_noclip", {**PPO, "clip_eps": 0.2}, "clip_eps"),
        ("ppo_noclip", {**PPO, "n_steps": 3}, "n_steps"),
        ("reinforce", {"batch_size": 8, "n_iterations": 3, "inner_steps": 2}, "inner_steps"),
        ("rebel_onpolicy", {**PPO, "extra_responses": 2}, "extra_responses"),
        ("ppo_noclip", {**PPO, "eta": 0.5}, "eta"),
        ("ppo_noclip", {**PPO, "rng": None}, "rng"),
        ("ppo_noclip", {**PPO, "instance": None}, "instance"),
        ("grpo_reset", {**PPO, "group_size": 4, "reference": "fixed"}, "reference"),
    ],
)
def test_an_unknown_or_reserved_hyperparameter_raises_naming_it(algorithm, hyperparameters, name):
    with pytest.raises(ValueError, match=rf"hyperparameters .*{name!r}"):
        Method("x", algorithm, hyperparameters, (1.0,))


@pytest.mark.parametrize(
    ("algorithm", "hyperparameters", "etas"),
    [
        ("ppo_noclip", PPO, ()),
        ("ppo_noclip", PPO, (0.5, 0.0)),
        ("ppo_noclip", PPO, (-1.0,)),
        ("ppo_noclip", PPO, (float("nan"),)),
        ("ppo_noclip", PPO, (float("inf"),)),
        ("apmd_exact", {"beta": 1.0, "n_iterations": 4}, (1.0,)),
        ("best_of_n", {}, (1.0,)),
    ],
)
def test_a_bad_learning_rate_grid_raises_naming_it(algorithm, hyperparameters, etas):
    with pytest.raises(ValueError, match="etas"):
        Method("x", algorithm, hyperparameters, etas)


def test_a_method_needs_a_label_and_a_mapping():
    with pytest.raises(ValueError, match="label"):
        Method("", "ppo_noclip", PPO, (1.0,))
    with pytest.raises(ValueError, match="hyperparameters"):
        Method("x", "ppo_noclip", [("beta", 1.0)], (1.0,))


def test_run_takes_a_learning_rate_exactly_when_the_algorithm_does():
    instance = small_instance()
    with pytest.raises(ValueError, match="eta"):
        Method("x", "ppo_noclip", PPO, (1.0,)).run(instance, None, np.random.default_rng(0))
    with pytest.raises(ValueError, match="eta"):
        Method("x", "apmd_exact", {"beta": 1.0, "n_iterations": 3}).run(instance, 1.0, None)
    # a generator is dropped for an algorithm that samples nothing
    exact = Method("x", "apmd_exact", {"beta": 1.0, "n_iterations": 3}).run(instance, None, np.random.default_rng(0))
    assert exact.total_responses == 0 and exact.reference_resets[-1] == 3


def test_budgets_follow_the_registry_and_never_overspend():
    kimi = Method("KimiPO", "kimipo", {**PPO, "batch_size": 10, "extra_responses": 2}, (1.0,))
    assert kimi.responses_per_iteration == 30 and kimi.steps_per_iteration == 2
    budgeted = kimi.with_response_budget(100)
    assert budgeted.response_budget == 90 and budgeted.n_iterations == 3 and kimi.n_iterations == 3
    assert kimi.with_response_budget(1000).step_budget == 33 * 2
    with pytest.raises(ValueError, match="response_budget"):
        kimi.with_response_budget(20)
    exact = Method("x", "apmd_exact", {"beta": 1.0, "n_iterations": 3})
    assert exact.with_response_budget(100) is exact
    assert kimi.with_hyperparameters(batch_size=4).responses_per_iteration == 12


def test_one_generation_round_per_outer_iteration_of_a_sampling_method():
    kimi = Method("KimiPO", "kimipo", {**PPO, "batch_size": 10, "extra_responses": 2}, (1.0,))
    assert kimi.rounds_per_iteration == 1
    run = kimi.run(small_instance(), 1.0, np.random.default_rng(0))
    assert run.generation_rounds[-1] == kimi.n_iterations * kimi.rounds_per_iteration
    assert Method("x", "apmd_exact", {"beta": 1.0, "n_iterations": 3}).rounds_per_iteration == 0


def test_only_a_floating_point_error_reads_as_divergence():
    instance = small_instance()
    exploding = Method("x", "grpo_fixed", {**PPO, "group_size": 4, "inner_steps": 4}, (1e6,))
    with pytest.raises(FloatingPointError):
        exploding.run(instance, 1e6, np.random.default_rng(0))
    assert run_unless_diverged(exploding, instance, 1e6, np.random.default_rng(0)) is None
    assert summarize_run(exploding, instance, 1e6, (0,), 0.1) is None
    misconfigured = Method("x", "reinforce", {"batch_size": 4, "n_iterations": 2, "theta": np.zeros(99)}, (0.5,))
    with pytest.raises(ValueError, match="theta"):
        run_unless_diverged(misconfigured, instance, 0.5, np.random.default_rng(0))


@pytest.mark.parametrize(
    "sweep",
    [
        lambda instance, method: cost_sweep([instance], (2.0,), [method], eps=0.1, seed=0),
        lambda instance, method: compare_at_budget(instance, [method], 64, seed=0),
        lambda instance, method: compare_recipes(instance, [method], 64, eps=0.1, seeds=(0,)),
    ],
)
def test_a_value_error_inside_a_sweep_propagates(sweep):
    # a starting point of the wrong shape is refused when the run starts (it depends on the instance),
    # and the sweep must not read that as divergence
    method = Method("x", "reinforce", {"batch_size": 4, "n_iterations": 2, "theta": np.zeros(99)}, (0.5,))
    with pytest.raises(ValueError, match="theta"):
        sweep(small_instance(), method)


@pytest.mark.parametrize(
    "algorithm, hyperparameters, etas, message",
    [
        ("ppo_noclip", {**PPO, "beta": 0.0}, (0.5,), "beta"),  # beta = 0 is no instance of APMD
        ("ppo_noclip", {**PPO, "batch_size": 0}, (0.5,), "batch_size"),
        ("ppo_noclip", {**PPO, "n_iterations": math.nan}, (0.5,), "n_iterations"),
        ("ppo_noclip", {**PPO, "inner_steps": "3"}, (0.5,), "inner_steps"),
        ("ppo_noclip", {**PPO, "n_iterations": True}, (0.5,), "n_iterations"),
        ("ppo_noclip", {**PPO, "n_iterations": 1e308}, (0.5,), "n_iterations"),
        ("ppo_noclip", PPO, (math.inf,), "etas"),
        ("ppo_noclip", PPO, "0.5", "etas"),
        ("ppo_lite", {**PPO, "kl": "k3"}, (0.5,), "kl"),
        ("ppo_lite", {**PPO, "thresholds": (0.5, 0.9)}, (0.5,), "thresholds"),
        ("grpo_fixed", {**PPO, "group_size": 4, "kl": "sampled"}, (0.5,), "kl"),
        ("grpo_fixed", {**PPO, "group_size": 4, "clip_epsilon": 1.5}, (0.5,), "clip_epsilon"),
        ("grpo_fixed", {**PPO, "group_size": 4, "clip_epsilon": 0.0}, (0.5,), "clip_epsilon"),
        ("grpo_reset", {**PPO, "group_size": 1}, (0.5,), "group_size"),
        ("grpo_reset", {**PPO, "group_size": 4, "reference": "fixed"}, (0.5,), "reference"),
        ("npg", {"beta": 1.0, "n_iterations": 2, "batch_size": 4, "group_size": 1}, (), "group_size"),
        ("best_of_n", {"delta": 1.0}, (), "delta"),
        ("best_of_n", {"delta": 0.0}, (), "delta"),
        ("reinforce", {"batch_size": 1, "n_iterations": 2}, (0.5,), "batch_size"),
        ("reinforce", {"batch_size": 4, "n_iterations": 2, "baseline": "median"}, (0.5,), "baseline"),
        ("reinforce", {"batch_size": 4, "n_iterations": 2, "beta": -1.0}, (0.5,), "beta"),
        ("filtered_sft", {**SFT, "group_size": 0}, (0.5,), "group_size"),
    ],
)
def test_a_method_refuses_bad_settings_when_built(algorithm, hyperparameters, etas, message):
    # validated at construction, so no sweep can read a configuration error as a diverged run
    with pytest.raises(ValueError, match=rf"\b{message}\b"):
        Method("x", algorithm, hyperparameters, etas)


def test_a_method_accepts_its_valid_edge_settings():
    Method("x", "filtered_sft", {**SFT, "group_size": 1}, (0.5,))
    Method("x", "grpo_fixed", {**PPO, "group_size": 2, "beta": 0.0, "clip_epsilon": 0.999}, (0.5,))
    Method("x", "reinforce", {"batch_size": 1, "n_iterations": 2, "baseline": "batch_mean"}, (0.5,))
    Method("x", "npg", {"beta": 1.0, "n_iterations": 2, "batch_size": None})


def test_cost_sweeps_stacks_the_sweep_of_each_seed_and_reports_rates():
    from covpo.experiments.sweeps import SeededCostSweep, cost_sweeps

    instance = small_instance()
    methods = (Method("PPO", "ppo_noclip", PPO, (0.5,)), Method("REINFORCE", "reinforce", {"n_iterations": 3, "batch_size": 4}, (0.5,)))
    seeded = cost_sweeps([instance, instance], (5.0, 6.0), methods, eps=0.5, seeds=(0, 1, 2))
    for seed, sweep in zip(seeded.seeds, seeded.sweeps):
        alone = cost_sweep([instance, instance], (5.0, 6.0), methods, eps=0.5, seed=seed)
        np.testing.assert_array_equal(sweep.responses_to_eps, alone.responses_to_eps)
        np.testing.assert_array_equal(sweep.reached, alone.reached)
    assert seeded.reached.shape == (3, 2, 2)
    rate = seeded.reach_rate(["PPO", "REINFORCE"])
    assert (rate.successes, rate.trials) == (int(seeded.reached.sum()), 12)
    assert len(seeded.table().rows) == 12 and len(seeded.rate_table().rows) == 2
    assert seeded.to_record()["seeds"] == [0, 1, 2]
    summary = seeded.sweeps[0].best_runs[0][0]
    target = float(np.max(summary.reward_record))
    assert summary.responses_to_reward(target) in summary.responses_record
    assert summary.responses_to_reward(target + 1.0) is None
    with pytest.raises(ValueError, match="sweeps"):
        SeededCostSweep((0,), seeded.sweeps)


def test_a_median_fit_uses_only_coverages_most_seeds_reached():
    from covpo.experiments.sweeps import SeededCostSweep

    instance = small_instance()
    method = Method("PPO", "ppo_noclip", PPO, (0.5,))
    sweeps = tuple(cost_sweep([instance, instance], (5.0, 10.0), [method], eps=1e-9, seed=s) for s in (0, 1))
    seeded = SeededCostSweep((0, 1), sweeps)
    assert not seeded.reached.any() and seeded.median_fit("PPO") is None
    assert np.isnan(seeded.exponents("PPO")).all()
