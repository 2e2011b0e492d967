"""Hypothesis strategies: random bandit instances and parameters, and the bad values the fuzz suite draws."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from covpo import BanditInstance, random_softmax_linear_instance


@st.composite
def softmax_linear_instances(draw: st.DrawFn, max_prompts: int = 4, max_responses: int = 6, max_dim: int = 5) -> BanditInstance:
    """A random realizable softmax-linear instance, built from a drawn seed."""
    seed = draw(st.integers(0, 2**32 - 1))
    n_prompts = draw(st.integers(1, max_prompts))
    n_responses = draw(st.integers(2, max_responses))
    dim = draw(st.integers(1, max_dim))
    base_scale = draw(st.floats(0.1, 4.0))
    return random_softmax_linear_instance(np.random.default_rng(seed), n_prompts, n_responses, dim, base_scale=base_scale)


@st.composite
def instances_with_theta(draw: st.DrawFn) -> tuple[BanditInstance, np.ndarray]:
    """An instance together with a parameter vector of matching dimension."""
    instance = draw(softmax_linear_instances())
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.floats(0.0, 3.0))
    theta = scale * np.random.default_rng(seed).standard_normal(instance.dim)
    return instance, theta


# Bad values the fuzz suite (tests/test_fuzz.py) draws: each stands for a whole family of careless input.

#: Imaginary parts, tiny to huge: any of them makes a number complex, however close to real it is.
imaginary_parts = st.floats(allow_nan=False, allow_infinity=False).filter(lambda value: value != 0.0)


def complex_scalars() -> st.SearchStrategy[complex]:
    """A Python or numpy complex number with a non-zero imaginary part."""
    numbers = st.builds(complex, st.floats(-1e6, 1e6), imaginary_parts)
    return st.one_of(numbers, numbers.map(np.complex128))


@st.composite
def complex_arrays(draw: st.DrawFn, real: object) -> np.ndarray:
    """``real`` (numbers of any shape) as a complex array, one drawn entry given a drawn imaginary part."""
    array = np.array(real, dtype=complex)
    array.flat[draw(st.integers(0, array.size - 1))] += 1j * draw(imaginary_parts)
    return array


def non_bool_flags() -> st.SearchStrategy[object]:
    """What a careless caller passes for a flag instead of ``True`` or ``False``: strings, integers, floats."""
    return st.one_of(st.text(max_size=5), st.integers(), st.floats(), st.integers(0, 1).map(np.int64))


def bad_seeds() -> st.SearchStrategy[object]:
    """What is not an integer seed ``>= 0``: negative integers, fractions, huge or non-finite floats, complex, text, bools."""
    fractions = st.floats(-1e6, 1e6).filter(lambda value: value != int(value))
    return st.one_of(st.integers(max_value=-1), fractions, st.floats(min_value=2.0**53, exclude_min=True),
                     st.sampled_from([math.nan, math.inf, -math.inf]), complex_scalars(), st.text(max_size=3),
                     st.booleans())
