"""The instance families of chapters 4 to 6 (covpo.families): the dialled coverage and what the members share."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from covpo.families import collapse_family, random_family, stacked_collapse_instance
from covpo.policies import base_log_policy, coverage_coefficient, log_policy


def test_stacked_collapse_instance_has_the_dialled_coverage_and_the_collapse_rewards():
    instance = stacked_collapse_instance(3, 0.2, 25.0, n_zero=7)
    assert (instance.n_prompts, instance.n_responses, instance.dim) == (3, 9, 27)
    assert coverage_coefficient(instance, base_log_policy(instance)) == pytest.approx(25.0, rel=1e-12)
    probs = np.exp(base_log_policy(instance))
    np.testing.assert_allclose(probs[:, 0], 1 / 25)
    np.testing.assert_allclose(probs[:, 1], 2 / 25)
    np.testing.assert_allclose(instance.rewards[:, :2], [[1.0, 0.8]] * 3)
    assert np.all(instance.rewards[:, 2:] == 0.0)
    # each prompt has its own parameters: moving one prompt's logits leaves the others alone
    theta = instance.base_theta.copy()
    theta[0] += 5.0
    np.testing.assert_allclose(log_policy(instance, theta)[1:], base_log_policy(instance)[1:])


def test_families_share_everything_but_the_base_model():
    random = random_family((3.0, 30.0), seed=4)
    np.testing.assert_array_equal(random[0].features, random[1].features)
    np.testing.assert_array_equal(random[0].rewards, random[1].rewards)
    assert [coverage_coefficient(i, base_log_policy(i)) for i in random] == pytest.approx([3.0, 30.0], rel=1e-8)
    collapse = collapse_family((10.0, 20.0))
    np.testing.assert_array_equal(collapse[0].features, collapse[1].features)
    np.testing.assert_array_equal(collapse[0].rewards, collapse[1].rewards)
    assert not np.array_equal(collapse[0].base_theta, collapse[1].base_theta)


@pytest.mark.parametrize(
    ("arguments", "name"),
    [((0, 0.2, 10.0), "n_prompts"), ((2, 0.2, 0.0), "coverage"), ((2, 0.2, 10.0, -1.0), "distractor_ratio")],
)
def test_bad_arguments_raise_naming_them(arguments, name):
    n_prompts, gap, coverage, *ratio = arguments
    extra = {"distractor_ratio": ratio[0]} if ratio else {}
    with pytest.raises(ValueError, match=name):
        stacked_collapse_instance(n_prompts, gap, coverage, **extra)


@pytest.mark.same_on_every_cpu
def test_importing_the_families_loads_neither_numba_nor_matplotlib():
    code = "import sys, covpo.families; print('numba' in sys.modules, 'matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        (dict(coverage=0.5), "coverage must exceed 1 \\+ distractor_ratio"),
        (dict(coverage=2.5), "coverage must exceed 1 \\+ distractor_ratio"),
        (dict(gap=1.5), "gap"),
        (dict(n_zero=np.nan), "n_zero"),
        (dict(n_prompts=200, n_zero=1000), "n_prompts=200 and n_zero=1000 .* above the 2.0 GiB limit"),
    ],
)
def test_stacked_instance_errors_name_the_callers_arguments(arguments, name):
    full = dict(n_prompts=2, gap=0.2, coverage=10.0) | arguments
    n_zero = {"n_zero": full.pop("n_zero")} if "n_zero" in full else {}
    with pytest.raises(ValueError, match=name):
        stacked_collapse_instance(**full, **n_zero)


@pytest.mark.parametrize("coverages", [(0.5,), (np.nan,), ("ten",), ()])
def test_families_reject_bad_coverages(coverages):
    with pytest.raises(ValueError, match="coverages"):
        random_family(coverages)
    with pytest.raises(ValueError, match="coverages"):
        collapse_family(coverages)


def test_random_family_rejects_a_bad_seed():
    with pytest.raises(ValueError, match="seed"):
        random_family((5.0,), seed=-1)


def test_both_families_have_unit_norm_features():
    for instance in (collapse_family((40.0,))[0], random_family((20.0,))[0]):
        np.testing.assert_allclose(np.sum(instance.features**2, axis=-1), 1.0)
