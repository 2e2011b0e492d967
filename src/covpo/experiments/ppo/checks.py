"""Argument checks shared by the measurements of chapter 4 (paper section 3): intervals, records, reference tables."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from covpo.instances import BanditInstance
from covpo.algorithms.ppo_lite import check_clip_thresholds
from covpo.validation import check_instance, check_log_distribution, check_shape


def _check_interval(name: str, value: object) -> tuple[float, float]:
    """``value`` as a clipping interval ``(c_lo, c_hi)`` with ``0 < c_lo < 1 < c_hi`` (paper section 3.3), named ``name``."""
    try:
        return check_clip_thresholds(value)
    except ValueError as error:
        raise ValueError(str(error).replace("thresholds", name, 1)) from None


def _check_sequence(name: str, values: object, cls: type) -> tuple:
    """``values`` as a tuple of ``cls`` records (possibly empty), else raise naming ``name``."""
    if isinstance(values, (str, bytes, cls)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a sequence of {cls.__name__}, got {values!r}")
    return tuple(check_instance(name, value, cls) for value in values)


def _check_mapping(name: str, values: object, cls: type) -> Mapping:
    """``values`` if it maps names to ``cls`` records, else raise naming ``name``."""
    if not isinstance(values, Mapping):
        raise ValueError(f"{name} must be a mapping of names to {cls.__name__}, got {values!r}")
    for value in values.values():
        check_instance(name, value, cls)
    return values


def _check_log_reference(instance: BanditInstance, log_reference: object) -> np.ndarray:
    """``log_reference`` as a normalized ``(n_prompts, n_responses)`` table of log-probabilities."""
    log_reference = check_log_distribution("log_reference", log_reference)
    return check_shape("log_reference", log_reference, instance.rewards.shape)
