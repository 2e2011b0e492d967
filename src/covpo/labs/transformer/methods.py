"""The arms of chapter 7's study, and the one protocol that sets their learning rates.

Every arm is a :class:`~covpo.labs.transformer.training.Method` on the shared loop of
:mod:`covpo.labs.transformer.training`, with the same responses and optimizer steps per run:

- ``"fixed, weak β"``: GRPO as TRL runs it, the k3 penalty to the base model at
  ``beta = 0.04`` (TRL's former default);
- ``"fixed, strong β"``: the same at the strong ``beta`` of the APMD arms (the control that
  separates "resets help" from "a strong penalty helps");
- ``"TRL sync, α = 0.6"`` and ``"TRL sync, α = 1"``: TRL's ``sync_ref_model`` at the weak
  ``beta``, mixing the policy into the reference (TRL's default ``ref_model_mixup_alpha``) or
  replacing it, every ``sync_every`` optimizer steps;
- ``"β = 0"``: GRPO with no penalty (TRL's default);
- ``"REINFORCE, leave-one-out"``: the leave-one-out baseline, no normalization, no penalty;
- ``"Rebel"``: the Rebel-OnPolicy squared loss (paper Algorithm 5) at the strong ``beta``;
- ``"APMD"``: the theory's prescription (reset to the sampling policy every outer step, strong
  ``beta``, the exact ``KL(pi || pi_t)``, sampled rewards);
- ``"APMD, exact target"``: the same inner objective with the exact expected reward (no
  responses drawn), so its inner loop fits the exact mirror-descent target.

The protocol for each arm's learning rate is the fastest stable rate on a grid
(:func:`fastest_stable_rate`, after the procedure of the paper's appendix C.1: the rate that
improves reward fastest in a short sweep). The full study (``scripts/transformer_study.py``)
measures it and prints it next to :data:`LEARNING_RATES`, the rates the chapter uses. Two
completed runs of that measurement, on 18 seeds and on machines that round differently (a GPU and
a 2-core CPU), chose these rates for every arm but two: for REINFORCE with leave-one-out the
speeds at ``3e-3`` and ``1e-2`` differ by under 0.01 and their order flipped between the runs,
and for Rebel the rate ``3e-3`` kept every seed's reward from falling back in one run and not in
the other. For those two arms the protocol does not single out one rate.
"""

from __future__ import annotations

import numpy as np

from covpo.validation import check_count, check_option, check_positive, check_positive_grid, check_real_array

from .training import Method

WEAK_BETA = 0.04
"""The practice arms' ``beta`` (TRL's default before it became 0)."""
STRONG_BETA = 0.5
"""The strong ``beta`` of the APMD, Rebel and strong fixed-reference arms (our constant)."""
TRL_DEFAULT_SYNC_STEPS = 512
"""TRL's default ``ref_model_sync_steps``."""
TRL_DEFAULT_ALPHA = 0.6
"""TRL's default ``ref_model_mixup_alpha``."""
SYNCS_PER_RUN = 8
"""How many times a TRL-sync arm refreshes its reference in one run (our scaling of TRL's period)."""
LEARNING_RATE_GRID = (1e-3, 3e-3, 1e-2, 3e-2)
"""The grid the full study searches for every arm."""

WEAK_ARM = "fixed, weak β"
"""The practice arm, GRPO with the k3 penalty to the fixed base model at :data:`WEAK_BETA`."""
STRONG_ARM = "fixed, strong β"
"""The control arm, the same at :data:`STRONG_BETA`."""

ARM_NAMES = (WEAK_ARM, STRONG_ARM, "TRL sync, α = 0.6", "TRL sync, α = 1", "β = 0",
             "REINFORCE, leave-one-out", "Rebel", "APMD", "APMD, exact target")
"""The arms, in the order of the chapter's tables."""

BOOK_ARM_NAMES = tuple(name for name in ARM_NAMES if name != "Rebel")
"""The arms the book's study runs, all but Rebel.

The rate protocol has not settled on a rate at which Rebel learns on every seed of the full study
(module docstring), and an arm that does not learn says nothing about what learning does to
coverage. The full study still runs it.
"""

LEARNING_RATES = {
    WEAK_ARM: 3e-3, STRONG_ARM: 1e-3, "TRL sync, α = 0.6": 3e-3, "TRL sync, α = 1": 3e-3,
    "β = 0": 3e-3, "REINFORCE, leave-one-out": 1e-2, "Rebel": 3e-3, "APMD": 3e-3, "APMD, exact target": 3e-3,
}
"""Each arm's rate on :data:`LEARNING_RATE_GRID` (the full study's sweep measures them; module docstring)."""


def sync_period(gradient_steps: int) -> int:
    """TRL's ``ref_model_sync_steps`` scaled to a run of ``gradient_steps`` optimizer steps: :data:`SYNCS_PER_RUN` syncs per run."""
    gradient_steps = check_count("gradient_steps", gradient_steps)
    return max(1, gradient_steps // SYNCS_PER_RUN)


def make_arm(name: str, learning_rate: float, gradient_steps: int) -> Method:
    """The arm ``name`` (one of :data:`ARM_NAMES`) at ``learning_rate``, for runs of ``gradient_steps`` optimizer steps."""
    check_option("name", name, ARM_NAMES)
    check_positive("learning_rate", learning_rate)
    period = sync_period(gradient_steps)
    arms = {
        WEAK_ARM: dict(beta=WEAK_BETA),
        STRONG_ARM: dict(beta=STRONG_BETA),
        "TRL sync, α = 0.6": dict(beta=WEAK_BETA, sync_every=period, sync_alpha=TRL_DEFAULT_ALPHA),
        "TRL sync, α = 1": dict(beta=WEAK_BETA, sync_every=period, sync_alpha=1.0),
        "β = 0": dict(),
        "REINFORCE, leave-one-out": dict(advantage="loo"),
        "Rebel": dict(family="rebel", beta=STRONG_BETA),
        "APMD": dict(family="apmd", beta=STRONG_BETA),
        "APMD, exact target": dict(family="apmd", beta=STRONG_BETA, exact_reward=True),
    }
    return Method(name, learning_rate, **arms[name])


def default_arms(gradient_steps: int, names: tuple[str, ...] = ARM_NAMES) -> tuple[Method, ...]:
    """The arms ``names`` at their :data:`LEARNING_RATES`, for runs of ``gradient_steps`` optimizer steps."""
    check_count("gradient_steps", gradient_steps)
    if isinstance(names, str) or not isinstance(names, (tuple, list)) or not names:
        raise ValueError(f"names must be a non-empty selection of {ARM_NAMES}, got {names!r}")
    for name in names:
        check_option("names", name, ARM_NAMES)
    return tuple(make_arm(name, LEARNING_RATES[name], gradient_steps) for name in names)


def fastest_stable_rate(rates, rewards) -> tuple[float, np.ndarray, np.ndarray]:
    """The fastest stable learning rate of a sweep (the protocol of :data:`LEARNING_RATES`).

    Parameters
    ----------
    rates
        The grid, ``[K]``.
    rewards
        Batch rewards over training, ``[K, seeds, steps]``.

    Returns
    -------
    tuple
        ``(rate, speed, stable)``: the chosen rate; each rate's speed, the median over seeds of the mean batch reward
        over the run (the area under the reward curve); and whether it was stable: every
        reward finite and, in every seed, the last quarter's mean reward at least the first
        quarter's (a rate whose reward fell back is not stable). The chosen rate is the
        fastest stable one.
    """
    rates = check_positive_grid("rates", rates)
    rewards = check_real_array("rewards", rewards)
    if rewards.ndim != 3 or rewards.shape[0] != len(rates) or rewards.shape[2] < 4:
        raise ValueError(f"rewards must have shape [{len(rates)}, seeds, steps >= 4], got {rewards.shape}")
    quarter = rewards.shape[2] // 4
    finite = np.isfinite(rewards).all(axis=(1, 2))
    with np.errstate(invalid="ignore"):
        held = (rewards[:, :, -quarter:].mean(2) >= rewards[:, :, :quarter].mean(2)).all(1)
        speed = np.median(rewards.mean(2), axis=1)
    stable = finite & held
    if not stable.any():
        raise ValueError("rewards show no stable rate on the grid")
    return float(rates[np.argmax(np.where(stable, speed, -np.inf))]), speed, stable
