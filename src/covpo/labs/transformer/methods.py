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
  ``beta``, the exact ``KL(pi || pi_t)``, sampled rewards with a leave-one-out baseline, and the
  optimizer state re-initialised at every reset, so each outer step solves its own subproblem);
- ``"APMD, exact target"``: the same inner objective with the exact expected reward (no
  responses drawn), so its inner loop fits the exact mirror-descent target;
- ``"APMD, state carried"`` and ``"APMD, exact target, state carried"``: the same two with the
  Adam state carried across resets (a variant, not the theory's statement);
- ``"ProRL-style"``: the k3 penalty at the strong ``beta`` to a reference that is hard-reset to
  the policy, with the optimizer re-initialised, every quarter of the run
  (:data:`PRORL_RESETS_PER_RUN`), after ProRL's recipe (Liu et al. 2025; the period is ours).

**One learning rate for every arm** (:data:`SHARED_LEARNING_RATE`): arms differ in their
method only, and the chapter compares them at matched reward or matched KL to the base model
along their paths, so an arm that moves slower is compared where it has moved as far, never at
its end point. The full study's sweep (:func:`fastest_stable_rate`, after the procedure of the
paper's appendix C.1) still measures each arm's fastest stable rate on :data:`LEARNING_RATE_GRID`
and prints it beside the shared rate.
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
PRORL_RESETS_PER_RUN = 4
"""How many hard reference resets (with the optimizer re-initialised) the ProRL-style arm makes per run (ours)."""
SHARED_LEARNING_RATE = 3e-3
"""The one Adam step size of every arm (module docstring)."""
LEARNING_RATE_GRID = (1e-3, 3e-3, 1e-2, 3e-2)
"""The grid the full study searches for every arm."""

WEAK_ARM = "fixed, weak β"
"""The practice arm, GRPO with the k3 penalty to the fixed base model at :data:`WEAK_BETA`."""
STRONG_ARM = "fixed, strong β"
"""The control arm, the same at :data:`STRONG_BETA`."""

PRORL_ARM = "ProRL-style"
"""Strong penalty, reference hard-reset with the optimizer re-initialised every quarter of the run."""
APMD_ARM = "APMD"
"""APMD as the theory states it, with sampled rewards, a reset every outer step and the optimizer state re-initialised."""
EXACT_ARM = "APMD, exact target"
"""The same with the exact expected reward (a perfect reward estimate; only the parameterization and optimizer err)."""
CARRIED_ARM = "APMD, state carried"
"""APMD with the Adam state carried across resets."""
EXACT_CARRIED_ARM = "APMD, exact target, state carried"
"""The exact-target arm with the Adam state carried across resets."""

ARM_NAMES = (WEAK_ARM, STRONG_ARM, "TRL sync, α = 0.6", "TRL sync, α = 1", "β = 0",
             "REINFORCE, leave-one-out", "Rebel", PRORL_ARM, APMD_ARM, EXACT_ARM, CARRIED_ARM, EXACT_CARRIED_ARM)
"""The arms, in the order of the chapter's tables."""

BOOK_ARM_NAMES = (WEAK_ARM, STRONG_ARM, APMD_ARM, EXACT_ARM)
"""The arms the chapter's own short study runs (the frontier study runs the rest at full length)."""

LEARNING_RATES = {name: SHARED_LEARNING_RATE for name in ARM_NAMES}
"""Each arm's rate, :data:`SHARED_LEARNING_RATE` for every arm (module docstring)."""


def sync_period(gradient_steps: int) -> int:
    """TRL's ``ref_model_sync_steps`` scaled to a run of ``gradient_steps`` optimizer steps: :data:`SYNCS_PER_RUN` syncs per run."""
    gradient_steps = check_count("gradient_steps", gradient_steps)
    return max(1, gradient_steps // SYNCS_PER_RUN)


def make_arm(name: str, learning_rate: float, gradient_steps: int) -> Method:
    """The arm ``name`` (one of :data:`ARM_NAMES`) at ``learning_rate``, for runs of ``gradient_steps`` optimizer steps."""
    check_option("name", name, ARM_NAMES)
    check_positive("learning_rate", learning_rate)
    period = sync_period(gradient_steps)
    prorl_period = max(1, gradient_steps // PRORL_RESETS_PER_RUN)
    arms = {
        WEAK_ARM: dict(beta=WEAK_BETA),
        STRONG_ARM: dict(beta=STRONG_BETA),
        "TRL sync, α = 0.6": dict(beta=WEAK_BETA, sync_every=period, sync_alpha=TRL_DEFAULT_ALPHA),
        "TRL sync, α = 1": dict(beta=WEAK_BETA, sync_every=period, sync_alpha=1.0),
        "β = 0": dict(),
        "REINFORCE, leave-one-out": dict(advantage="loo"),
        "Rebel": dict(family="rebel", beta=STRONG_BETA),
        PRORL_ARM: dict(beta=STRONG_BETA, sync_every=prorl_period, sync_alpha=1.0, reset_optimizer=True),
        APMD_ARM: dict(family="apmd", beta=STRONG_BETA, reset_optimizer=True),
        EXACT_ARM: dict(family="apmd", beta=STRONG_BETA, exact_reward=True, reset_optimizer=True),
        CARRIED_ARM: dict(family="apmd", beta=STRONG_BETA),
        EXACT_CARRIED_ARM: dict(family="apmd", beta=STRONG_BETA, exact_reward=True),
    }
    return Method(name, learning_rate, **arms[name])


def default_arms(gradient_steps: int, names: tuple[str, ...] = ARM_NAMES) -> tuple[Method, ...]:
    """The arms ``names`` at their :data:`LEARNING_RATES`, for runs of ``gradient_steps`` optimizer steps."""
    check_count("gradient_steps", gradient_steps)
    if isinstance(names, str) or not isinstance(names, (tuple, list)) or not names:
        raise ValueError(f"names must be a non-empty selection of {ARM_NAMES}, got {names!r}")
    for name in names:
        check_option("names", name, ARM_NAMES)
    if len(set(names)) != len(names):
        raise ValueError(f"names must not repeat an arm, got {names!r}")
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
    if not np.isfinite(rewards).all():
        raise ValueError("rewards must be finite (a run whose reward is NaN or infinite diverged: rerun it at a smaller rate)")
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
