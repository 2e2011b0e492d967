"""Input checks shared by the whole package.

Every public function validates its arguments with these helpers, so that bad input
fails early with a ``ValueError`` that names the argument and shows the offending value.
"""

from __future__ import annotations

import numpy as np

PROBABILITY_TOLERANCE = 1e-8
MAX_COUNT = 2**53
"""Largest count :func:`check_count` accepts: beyond it a float is no longer an exact integer."""


def _describe(value: object) -> str:
    array = np.asarray(value)
    if array.ndim == 0:
        return repr(array.item())
    return f"array of shape {array.shape}"


def _real(name: str, value: object, requirement: str) -> float:
    """``value`` as a float if it is a real number (not a bool, string, ``None`` or array), else raise naming ``name``.

    A 0-d numpy array counts as the number it holds (``np.array(0.5)``, what numpy reductions return).
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be {requirement}, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be {requirement}, got {value!r}") from None


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number above zero."""
    number = _real(name, value, "a finite number > 0")
    if not np.isfinite(number) or number <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def check_flag(name: str, value: object) -> bool:
    """Return ``value`` as a bool if it is ``True`` or ``False`` (numpy bools included), else raise.

    Strings, numbers and ``None`` are refused: ``"no"`` would otherwise read as true.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_text(name: str, value: object, allow_empty: bool = False) -> str:
    """Return ``value`` if it is a string (a non-empty one unless ``allow_empty``), else raise."""
    if not isinstance(value, str) or not (value or allow_empty):
        raise ValueError(f"{name} must be a {'' if allow_empty else 'non-empty '}string, got {value!r}")
    return value


def check_generator(name: str, value: object) -> np.random.Generator:
    """Return ``value`` if it is a numpy ``Generator`` (the only source of randomness a run may use), else raise."""
    if not isinstance(value, np.random.Generator):
        raise ValueError(f"{name} must be a numpy Generator, got {value!r}")
    return value


def check_option(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of the ``allowed`` strings, else raise."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_nonnegative(name: str, value: float) -> float:
    """Return ``value`` as a float, or raise if it is negative or not finite."""
    number = _real(name, value, "a finite number >= 0")
    if not np.isfinite(number) or number < 0.0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return number


def check_count(name: str, value: int, minimum: int = 1) -> int:
    """Return ``value`` as an int, or raise if it is not an integer at least ``minimum``.

    Integral floats such as ``3.0`` are accepted; NaN, infinity, strings, ``None``, bools and
    values beyond ``MAX_COUNT`` (``2^53``, where floats stop being exact integers; e.g. ``1e308``) are not.
    """
    number = _real(name, value, f"an integer >= {minimum}")
    if not np.isfinite(number) or abs(number) > MAX_COUNT or number != int(number) or int(number) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(number)


def check_positive_grid(name: str, values: object, integers: bool = False) -> np.ndarray:
    """A non-empty one-dimensional grid of finite values ``> 0`` (integers ``>= 1`` with ``integers``)."""
    grid = check_finite_array(name, values, ndim=1)
    if grid.size == 0:
        raise ValueError(f"{name} must hold at least one value")
    if integers:
        return np.array([check_count(name, value) for value in grid], dtype=np.int64)
    return np.array([check_positive(name, value) for value in grid])


def check_probability_grid(name: str, values: object) -> np.ndarray:
    """A non-empty one-dimensional grid of values each strictly between 0 and 1 (reward gaps, coverages)."""
    grid = check_finite_array(name, values, ndim=1)
    if grid.size == 0:
        raise ValueError(f"{name} must hold at least one value")
    return np.array([check_probability(name, value) for value in grid])


def check_probability(name: str, value: float) -> float:
    """Return ``value`` as a float, or raise if it lies outside the open interval (0, 1)."""
    number = _real(name, value, "a number strictly between 0 and 1")
    if not 0.0 < number < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return number


def check_finite_array(name: str, value: object, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a float array, or raise if it holds NaN or infinity, is not numeric, or has the wrong rank."""
    array = check_real_array(name, value, ndim)
    if not np.all(np.isfinite(array)):
        bad = array[~np.isfinite(array)].ravel()[0]
        raise ValueError(f"{name} must be finite everywhere, found {bad!r}")
    return array


def check_real_array(name: str, value: object, ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a float array, NaN and infinity allowed (for the caller to judge); raise if not real or of the wrong rank."""
    array = _float_array(name, value)
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got {_describe(array)}")
    return array


def _float_array(name: str, value: object) -> np.ndarray:
    """``value`` as a float array, or raise naming ``name`` if it is not real (strings, ``None``, ragged lists, complex).

    Complex values are refused rather than cut to their real part (which is what a cast to
    float does, with only numpy's ``ComplexWarning``).
    """
    if value is None or isinstance(value, (str, bytes)):
        raise _not_numbers(name, value)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        raise _not_numbers(name, value) from None
    if array.dtype.kind == "c":
        raise ValueError(f"{name} must hold real numbers, got complex values ({_describe(array)})")
    try:
        return array.astype(float, copy=False)
    except (TypeError, ValueError, OverflowError):
        raise _not_numbers(name, value) from None


def _not_numbers(name: str, value: object) -> ValueError:
    return ValueError(f"{name} must be an array of numbers, got {value!r}")


def check_theta(name: str, value: object, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as finite policy parameters of exactly ``shape`` (``(d,)`` for softmax-linear), or raise naming ``name``.

    The one check of a parameter vector ``theta`` (paper section 2.2) in the package: a starting
    point, an iterate handed to an objective or gradient, or a policy class's parameters.
    """
    return check_shape(name, check_finite_array(name, value, ndim=len(shape)), tuple(shape))


POLICY_CLASS_METHODS = ("log_policy", "batch_score_average", "population_score_sum")
"""The methods of a policy class (:class:`covpo.policy_classes.PolicyClass`), besides its ``initial_params``."""


def check_policy_class(name: str, value: object) -> object:
    """``value`` if it has the members of a policy class (``initial_params`` and :data:`POLICY_CLASS_METHODS`), else raise.

    The one check of a policy class in the package; ``None`` (the softmax-linear default) is
    resolved by :func:`covpo.policy_classes.policy_class` before it gets here.
    """
    missing = [method for method in POLICY_CLASS_METHODS if not callable(getattr(value, method, None))]
    if not hasattr(value, "initial_params"):
        missing.insert(0, "initial_params")
    if missing:
        raise ValueError(f"{name} must be a PolicyClass (missing {', '.join(missing)}), got {value!r}")
    return value


def check_index_array(name: str, value: object, upper: int) -> np.ndarray:
    """Return ``value`` as an int64 array of indices in ``[0, upper)``, or raise naming ``name``."""
    array = _float_array(name, value)
    if array.size and (not np.all(np.isfinite(array)) or np.any(array != np.round(array))):
        raise ValueError(f"{name} must hold integer indices, got {value!r}")
    indices = array.astype(np.int64)
    if indices.size and (indices.min() < 0 or indices.max() >= upper):
        raise ValueError(f"{name} must hold indices in [0, {upper}), got values from {indices.min()} to {indices.max()}")
    return indices


def check_mask(name: str, value: object, shape: tuple[int, ...]) -> np.ndarray:
    """Return ``value`` as a boolean array of ``shape``, or raise if it is not boolean (0/1 integers are accepted)."""
    if value is None or isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a boolean array of shape {tuple(shape)}, got {value!r}")
    array = np.asarray(value)
    if array.dtype != bool:
        if not np.issubdtype(array.dtype, np.integer) or not np.all((array == 0) | (array == 1)):
            raise ValueError(f"{name} must be a boolean array (True/False), got values of type {array.dtype}")
        array = array.astype(bool)
    return check_shape(name, array, shape)


def check_shape(name: str, array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Raise unless ``array`` has exactly ``shape``."""
    if tuple(array.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got shape {tuple(array.shape)}")
    return array


def check_distribution(name: str, value: object, axis: int = -1) -> np.ndarray:
    """Return ``value`` as a float array of probabilities summing to one along ``axis``."""
    array = check_finite_array(name, value)
    if array.ndim == 0:
        raise ValueError(f"{name} must be an array of probabilities summing to one, got {_describe(array)}")
    if np.any(array < 0.0):
        raise ValueError(f"{name} must be non-negative, found {array[array < 0.0].ravel()[0]!r}")
    totals = array.sum(axis=axis)
    if not np.allclose(totals, 1.0, rtol=0.0, atol=PROBABILITY_TOLERANCE * max(1, array.shape[axis])):
        worst = np.ravel(totals)[np.argmax(np.abs(np.ravel(totals) - 1.0))]
        raise ValueError(f"{name} must sum to one, but a row sums to {worst!r}")
    return array


def check_log_distribution(name: str, value: object) -> np.ndarray:
    """Return ``value`` as log-probabilities whose exponentials sum to one along the last axis.

    ``-inf`` entries (responses of probability zero) are allowed; NaN and ``+inf`` are not.
    A table of probabilities where log-probabilities are expected fails the normalization check.
    """
    array = _float_array(name, value)
    if np.any(np.isnan(array)) or np.any(array == np.inf):
        raise ValueError(f"{name} must hold log-probabilities (no NaN or +inf)")
    if np.any(array > PROBABILITY_TOLERANCE):
        raise ValueError(f"{name} must hold log-probabilities <= 0, found {array.max()!r}")
    with np.errstate(divide="ignore"):
        totals = np.log(np.exp(array).sum(axis=-1))
    if not np.allclose(totals, 0.0, atol=1e-6):
        worst = np.ravel(totals)[np.argmax(np.abs(np.ravel(totals)))]
        raise ValueError(f"{name} must be normalized: a row has log-sum-exp {worst!r}, not 0")
    return array


def check_instance(name: str, value: object, cls: type) -> object:
    """Return ``value`` if it is an instance of ``cls``, else raise naming ``name`` and showing the value."""
    if not isinstance(value, cls):
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise ValueError(f"{name} must be a {cls.__name__}, got {type(value).__name__} {shown}")
    return value


def check_seed(name: str, value: object) -> int | tuple[int, ...]:
    """Return ``value`` if it seeds ``np.random.default_rng``: an integer ``>= 0`` or a non-empty tuple of them, else raise."""
    if isinstance(value, (tuple, list)):
        if not value:
            raise ValueError(f"{name} must be an integer >= 0 or a non-empty sequence of them, got {value!r}")
        return tuple(check_count(name, entry, minimum=0) for entry in value)
    return check_count(name, value, minimum=0)


def check_instances(name: str, values: object, cls: type) -> tuple:
    """Return ``values`` as a non-empty tuple of ``cls`` instances, else raise naming ``name``."""
    if isinstance(values, (str, bytes, cls)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a non-empty sequence of {cls.__name__}, got {values!r}")
    checked = tuple(check_instance(name, value, cls) for value in values)
    if not checked:
        raise ValueError(f"{name} must hold at least one {cls.__name__}, got {values!r}")
    return checked


def check_seeds(name: str, values: object) -> tuple[int, ...]:
    """Return ``values`` as a non-empty tuple of integer seeds ``>= 0``, else raise naming ``name``."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a non-empty sequence of integer seeds >= 0, got {values!r}")
    seeds = tuple(check_count(name, value, minimum=0) for value in values)
    if not seeds:
        raise ValueError(f"{name} must hold at least one seed, got {values!r}")
    return seeds
