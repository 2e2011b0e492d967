"""SFT on reward-filtered base samples: costs, reproducibility, and the tested gradient in its loop (after paper section 1.3)."""

from __future__ import annotations

import numpy as np
import pytest

from covpo import random_softmax_linear_instance, run
from covpo.algorithms.filtered_sft import filter_best, filtered_sft, filtered_sft_gradient
from covpo.batches import draw_batch
from covpo.policies import base_log_policy, expected_reward, log_policy

SETTINGS = {"eta": 0.8, "n_iterations": 3, "batch_size": 4, "group_size": 3, "inner_steps": 2}


@pytest.fixture
def instance():
    return random_softmax_linear_instance(np.random.default_rng(3), 3, 5, 4, base_scale=1.5)


def test_filtered_sft_counts_costs_and_is_reproducible(instance):
    first = filtered_sft(instance, rng=np.random.default_rng(2), **SETTINGS)
    second = run("filtered_sft", instance, rng=np.random.default_rng(2), **SETTINGS)
    np.testing.assert_array_equal(first.reward, second.reward)
    np.testing.assert_array_equal(first.responses_sampled, [0, 12, 24, 36])
    np.testing.assert_array_equal(first.generation_rounds, [0, 1, 2, 3])
    np.testing.assert_array_equal(first.gradient_steps, [0, 2, 4, 6])
    np.testing.assert_array_equal(first.reference_resets, 0)


def test_one_round_is_k_steps_of_the_tested_gradient_on_the_filtered_batch(instance):
    one_round = filtered_sft(instance, rng=np.random.default_rng(5), **{**SETTINGS, "n_iterations": 1})
    rng = np.random.default_rng(5)
    batch = draw_batch(instance, base_log_policy(instance), 4, rng, group_size=3)
    empty, no_best = np.zeros(instance.rewards.shape), np.full(instance.n_prompts, -np.inf)
    kept, _ = filter_best(empty, no_best, batch.prompts, batch.responses, batch.rewards)
    theta = instance.base_theta.copy()
    for _ in range(2):
        theta = theta + 0.8 * filtered_sft_gradient(instance, theta, kept)
    assert one_round.reward[-1] == expected_reward(instance, log_policy(instance, theta))


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"eta": 0.0}, "eta"),
        ({"n_iterations": 0}, "n_iterations"),
        ({"batch_size": 0}, "batch_size"),
        ({"group_size": 0}, "group_size"),
        ({"inner_steps": 0}, "inner_steps"),
        ({"rng": 1}, "rng"),
    ],
)
def test_filtered_sft_rejects_bad_arguments(instance, arguments, name):
    settings = {**SETTINGS, "rng": np.random.default_rng(0), **arguments}
    with pytest.raises(ValueError, match=name):
        filtered_sft(instance, **settings)
