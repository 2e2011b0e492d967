"""Bad input raises a ValueError that names the argument."""

from __future__ import annotations

import numpy as np
import pytest

import covpo
from covpo import BanditInstance, random_softmax_linear_instance, tabular_instance
from covpo.algorithms.best_of_n import best_of_n_samples_needed, best_of_n_success
from covpo.objectives import regularized_objective
from covpo.policies import base_log_policy, expected_reward, log_policy


def good_arguments() -> dict:
    return dict(
        prompt_probs=np.array([0.5, 0.5]),
        features=np.eye(4).reshape(2, 2, 4),
        rewards=np.array([[1.0, 0.0], [0.0, 1.0]]),
        base_theta=np.zeros(4),
    )


def test_good_arguments_build_an_instance():
    assert BanditInstance(**good_arguments()).optimal_value == 1.0


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("rewards", np.array([[1.0, np.nan], [0.0, 1.0]]), "rewards must be finite"),
        ("rewards", np.array([[1.0, np.inf], [0.0, 1.0]]), "rewards must be finite"),
        ("rewards", np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), "rewards must have shape"),
        ("prompt_probs", np.array([0.5, 0.6]), "prompt_probs must sum to one"),
        ("prompt_probs", np.array([1.5, -0.5]), "prompt_probs must be non-negative"),
        ("prompt_probs", np.array([1.0]), "prompt_probs must have shape"),
        ("base_theta", np.zeros(3), "base_theta must have shape"),
        ("features", np.zeros((2, 0, 4)), "at least one response"),
        ("optimal_mask", np.array([[True, False], [False, False]]), "no optimal response"),
    ],
)
def test_instance_rejects_bad_input(name, value, message):
    arguments = good_arguments()
    arguments[name] = value
    with pytest.raises(ValueError, match=message):
        BanditInstance(**arguments)


def test_tabular_instance_rejects_bad_base_model():
    with pytest.raises(ValueError, match="base_probs must sum to one"):
        tabular_instance(np.array([[1.0, 0.0]]), np.array([[0.5, 0.6]]))
    with pytest.raises(ValueError, match="base_probs must be positive"):
        tabular_instance(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0]]))
    with pytest.raises(ValueError, match="base_probs must have shape"):
        tabular_instance(np.array([[1.0, 0.0]]), np.array([[0.2, 0.3, 0.5]]))


@pytest.mark.parametrize(("name", "value"), [("n_prompts", 0), ("n_responses", 1), ("dim", 2.5), ("base_scale", -1.0)])
def test_random_instance_rejects_bad_sizes(name, value):
    arguments = dict(n_prompts=2, n_responses=3, dim=2, base_scale=1.0)
    arguments[name] = value
    with pytest.raises(ValueError, match=name):
        random_softmax_linear_instance(np.random.default_rng(0), **arguments)


def test_policy_functions_reject_bad_input():
    instance = tabular_instance(np.array([[1.0, 0.0]]), np.array([[0.5, 0.5]]))
    with pytest.raises(ValueError, match="theta must have shape"):
        log_policy(instance, np.zeros(3))
    with pytest.raises(ValueError, match="theta must be finite"):
        log_policy(instance, np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="log_probs must be normalized"):
        expected_reward(instance, np.log(np.array([[0.5, 0.6]])))
    with pytest.raises(ValueError, match="log_probs must have shape"):
        expected_reward(instance, np.log(np.array([[0.2, 0.3, 0.5]])))
    with pytest.raises(ValueError, match="beta must be a finite number > 0, got -0.1"):
        regularized_objective(instance, base_log_policy(instance), base_log_policy(instance), -0.1)


def test_best_of_n_rejects_bad_input():
    with pytest.raises(ValueError, match="log_coverage"):
        best_of_n_success(0.5, 3)
    with pytest.raises(ValueError, match="n must hold integers"):
        best_of_n_success(np.log(0.5), 0)
    with pytest.raises(ValueError, match="delta"):
        best_of_n_samples_needed(np.log(0.5), 1.5)


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (np.array([[1.0, 0.5], [0.0, 1.0]]), "optimal_mask must be a boolean array"),
        (np.array([[np.nan, 0.0], [0.0, 1.0]]), "optimal_mask must be a boolean array"),
        (np.array([[1, 2], [0, 1]]), "optimal_mask must be a boolean array"),
        ("mask", "optimal_mask must be a boolean array"),
    ],
)
def test_instance_rejects_a_mask_that_is_not_boolean_instead_of_casting_it(mask, message):
    arguments = good_arguments()
    arguments["optimal_mask"] = mask
    with pytest.raises(ValueError, match=message):
        BanditInstance(**arguments)


def test_instance_accepts_a_mask_of_zeros_and_ones():
    arguments = good_arguments()
    arguments["optimal_mask"] = np.array([[1, 0], [0, 1]])
    assert BanditInstance(**arguments).optimal_mask.dtype == bool


def test_tabular_instance_refuses_dense_features_that_do_not_fit_in_memory():
    with pytest.raises(ValueError, match=r"7\.3 TiB, above the 2\.0 GiB limit; use fewer responses"):
        tabular_instance(np.zeros((1, 10**6)), np.full((1, 10**6), 1e-6))
    with pytest.raises(ValueError, match="rewards must have at least one prompt"):
        tabular_instance(np.zeros((0, 2)), np.zeros((0, 2)))
    with pytest.raises(ValueError, match="base_probs must have shape"):
        tabular_instance(np.array([[1.0, 0.0]]), np.array([0.5, 0.5]))


def test_random_instance_rejects_a_bad_rng_and_sizes_that_do_not_fit_in_memory():
    with pytest.raises(ValueError, match="rng must be a numpy Generator, got 0"):
        random_softmax_linear_instance(0, 2, 2, 2)
    with pytest.raises(ValueError, match="n_prompts, n_responses and dim need a dense feature tensor"):
        random_softmax_linear_instance(np.random.default_rng(0), 1000, 1000, 1000)


def test_check_instance_names_the_argument_and_shortens_the_value():
    from covpo.validation import check_instance

    assert check_instance("instance", 3, int) == 3
    with pytest.raises(ValueError, match=r"instance must be a int, got str 'aaa.*\.\.\.$"):
        check_instance("instance", "a" * 500, int)


def test_coverage_instances_validate_under_the_callers_names():
    from covpo.coverage_instances import coverage_shift, dialled_coverage_instance, log_coverage_coefficient

    instance = random_softmax_linear_instance(np.random.default_rng(0), 3, 4, 2)
    with pytest.raises(ValueError, match="statistic must be one of"):
        log_coverage_coefficient(instance, instance.base_theta, "median")
    with pytest.raises(ValueError, match="theta must be finite"):
        log_coverage_coefficient(instance, np.array([np.nan, 0.0]))
    with pytest.raises(ValueError, match="instance must be a BanditInstance"):
        coverage_shift(None, 5.0)
    with pytest.raises(ValueError, match="rng must be a numpy Generator"):
        dialled_coverage_instance(1, 3, 4, 2, 5.0)
    with pytest.raises(ValueError, match="target_coverage must be > 1"):
        dialled_coverage_instance(np.random.default_rng(0), 3, 4, 2, 0.5)


def test_zero_dimensional_arrays_count_as_the_numbers_they_hold():
    from covpo.validation import check_count, check_positive

    assert check_positive("eta", np.array(0.5)) == 0.5 and check_count("n_iterations", np.array(2)) == 2
    instance = random_softmax_linear_instance(np.random.default_rng(0), 3, 5, 3)
    by_array = covpo.run("reinforce_exact", instance, eta=np.array(0.5), n_iterations=np.array(2))
    by_number = covpo.run("reinforce_exact", instance, eta=0.5, n_iterations=2)
    assert np.array_equal(by_array.reward, by_number.reward)
    for bad in (np.array(True), np.array("0.5"), np.array([0.5])):
        with pytest.raises(ValueError, match="eta"):
            check_positive("eta", bad)
