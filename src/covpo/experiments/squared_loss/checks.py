"""Argument checks and averages shared by the measurements of chapter 5 (paper section 4)."""

from __future__ import annotations

import numpy as np

from covpo.instances import BanditInstance
from covpo.validation import check_instance, check_theta


def _check_theta(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    check_instance("instance", instance, BanditInstance)
    return check_theta("reference_theta", theta, (instance.dim,))


def _weighted_mean(instance: BanditInstance, per_prompt: np.ndarray) -> float:
    return float(instance.prompt_probs @ per_prompt)
