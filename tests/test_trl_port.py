"""Our GRPO objective against a port of TRL's GRPO loss, on one-token responses.

The port follows ``GRPOTrainer._compute_loss`` and the advantage computation of
``GRPOTrainer._generate_and_score_completions`` in ``trl/trainer/grpo_trainer.py`` of TRL
v1.9.0 (with ``nanstd`` from ``trl/trainer/utils.py``), restricted to what a contextual bandit
exercises: one token per response (so ``completion_mask`` is all ones, and the per-token and
per-sequence quantities coincide), ``importance_sampling_level="token"``, one reward function,
no vLLM, entropy or off-policy masks, ``delta=None``. It is written in numpy from the source,
without TRL as a dependency:

- advantages ``r - mean_group(r)``, divided by ``nanstd + 1e-4`` (Bessel-corrected) for
  ``scale_rewards="group"``, by the batch's deviation for ``"batch"``, not at all for ``"none"``;
- ``coef_1 = exp(logp - old_logp)``, ``coef_2 = clamp(coef_1, 1 - epsilon, 1 + epsilon_high)``,
  ``per_token_loss = -min(coef_1 A, coef_2 A)``;
- ``per_token_kl = exp(ref_logp - logp) - (ref_logp - logp) - 1``, times ``coef_1`` when
  ``use_bias_correction_kl``, added as ``+ beta * per_token_kl`` outside the minimum;
- the aggregations of ``loss_type`` "grpo", "bnpo", "dr_grpo" (``max_completion_length = 1``)
  and "dapo" (one process, ``num_items_in_batch`` the number of tokens), which all reduce to a
  mean over the batch for one-token responses.

TRL differentiates this loss with autograd. We differentiate the port by the complex step
``Im f(theta + i h e_k) / h``, exact to rounding, with every branch chosen on real parts the
way ``torch.min`` and ``torch.clamp`` choose them; so gradients are compared to rounding too.
"""

from __future__ import annotations

import numpy as np
import pytest

from covpo.algorithms.grpo import group_advantages, grpo_gradient, grpo_objective
from covpo.algorithms.ppo_noclip import ppo_noclip_objective
from covpo.batches import ResponseBatch, draw_batch
from covpo.instances import BanditInstance, tabular_instance
from covpo.policies import base_log_policy, log_policy
from tests.helpers import small_instance

COMPLEX_STEP = 1e-30
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")


# ---------------------------------------------------------------------------------------
# The port


def _nanstd(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """TRL's ``nanstd``: the square root of the Bessel-corrected variance."""
    mean = values.mean(axis=axis, keepdims=True)
    count = values.size if axis is None else values.shape[axis]
    return np.sqrt(((values - mean) ** 2).mean(axis=axis, keepdims=True) * count / (count - 1))


def trl_advantages(rewards: np.ndarray, scale_rewards: str) -> np.ndarray:
    """``(rewards - group mean) / (std + 1e-4)`` as TRL forms it; ``rewards`` has shape ``(N, G)``."""
    advantages = rewards - rewards.mean(axis=1, keepdims=True)
    if scale_rewards == "group":
        advantages = advantages / (_nanstd(rewards, axis=1) + 1e-4)
    elif scale_rewards == "batch":
        advantages = advantages / (_nanstd(rewards) + 1e-4)
    return advantages


def _torch_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a.real <= b.real, a, b)


def _torch_clamp(x: np.ndarray, low: float, high: float) -> np.ndarray:
    return np.where(x.real < low, low + 0j, np.where(x.real > high, high + 0j, x))


def _complex_log_softmax(scores: np.ndarray) -> np.ndarray:
    shift = scores.real.max(axis=-1, keepdims=True)
    return scores - shift - np.log(np.exp(scores - shift).sum(axis=-1, keepdims=True))


def trl_grpo_loss(
    instance: BanditInstance,
    theta: np.ndarray,
    batch: ResponseBatch,
    advantages: np.ndarray,
    ref_logps: np.ndarray,
    *,
    beta: float,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    use_bias_correction_kl: bool = False,
    loss_type: str = "dapo",
) -> complex:
    """TRL v1.9.0's GRPO loss for one-token responses, as a function of the (possibly complex) parameters."""
    epsilon_high = epsilon if epsilon_high is None else epsilon_high
    scores = np.einsum("xyd,d->xy", instance.features, theta)
    per_token_logps = _complex_log_softmax(scores)[batch.prompts, batch.responses].reshape(-1, 1)
    old_per_token_logps = batch.log_sampling.reshape(-1, 1)
    advantages = advantages.reshape(-1, 1)
    mask = np.ones_like(per_token_logps.real)
    coef_1 = np.exp(per_token_logps - old_per_token_logps)
    if beta != 0.0:
        ref = ref_logps.reshape(-1, 1)
        per_token_kl = np.exp(ref - per_token_logps) - (ref - per_token_logps) - 1
        if use_bias_correction_kl:
            per_token_kl = per_token_kl * coef_1
    coef_2 = _torch_clamp(coef_1, 1 - epsilon, 1 + epsilon_high)
    per_token_loss = -_torch_min(coef_1 * advantages, coef_2 * advantages)
    if beta != 0.0:
        per_token_loss = per_token_loss + beta * per_token_kl
    if loss_type == "grpo":
        return ((per_token_loss * mask).sum(-1) / np.maximum(mask.sum(-1), 1.0)).mean()
    if loss_type == "bnpo":
        return (per_token_loss * mask).sum() / max(mask.sum(), 1.0)
    if loss_type == "dr_grpo":
        max_completion_length = 1
        return (per_token_loss * mask).sum() / (per_token_loss.shape[0] * max_completion_length)
    if loss_type == "dapo":
        num_items_in_batch = mask.sum()
        return (per_token_loss * mask).sum() / max(num_items_in_batch, 1.0)
    raise ValueError(loss_type)


def complex_step_gradient(function, theta: np.ndarray) -> np.ndarray:
    """``d function / d theta`` by the complex step, exact to rounding for real-analytic branches."""
    gradient = np.empty(theta.size)
    for k in range(theta.size):
        shifted = theta.astype(complex)
        shifted[k] += 1j * COMPLEX_STEP
        gradient[k] = function(shifted).imag / COMPLEX_STEP
    return gradient


# ---------------------------------------------------------------------------------------
# Cases


def _case(seed: int, scale: float, n_prompts: int = 10, group_size: int = 6):
    """A batch of groups from a perturbed policy, and parameters ``scale`` away from it."""
    instance = small_instance(seed)
    rng = np.random.default_rng(seed)
    log_old = log_policy(instance, instance.base_theta + 0.3 * rng.standard_normal(instance.dim))
    batch = draw_batch(instance, log_old, n_prompts, rng, group_size)
    theta = instance.base_theta + scale * rng.standard_normal(instance.dim)
    return instance, batch, theta, log_old


def _compare(instance, batch, theta, log_reference, *, beta, scale_rewards, epsilon=0.2, epsilon_high=None,
             use_bias_correction_kl=False):
    """Our objective and gradient against minus TRL's loss and its gradient, under every aggregation."""
    advantages = trl_advantages(batch.rewards, scale_rewards)
    ours_advantages = group_advantages(batch.rewards, scale_by_std=scale_rewards == "group")
    if scale_rewards != "batch":
        np.testing.assert_allclose(ours_advantages, advantages, rtol=1e-13, atol=1e-13)
    ref_logps = log_reference[batch.prompts, batch.responses]
    ours = grpo_objective(instance, theta, batch, advantages, log_reference, beta, clip_epsilon=epsilon,
                          clip_epsilon_high=epsilon_high)
    ours_gradient = grpo_gradient(instance, theta, batch, advantages, log_reference, beta, clip_epsilon=epsilon,
                                  clip_epsilon_high=epsilon_high)
    for loss_type in LOSS_TYPES:
        def loss(parameters, loss_type=loss_type):
            return trl_grpo_loss(instance, parameters, batch, advantages, ref_logps, beta=beta, epsilon=epsilon,
                                 epsilon_high=epsilon_high, use_bias_correction_kl=use_bias_correction_kl,
                                 loss_type=loss_type)

        assert ours == pytest.approx(-loss(theta.astype(complex)).real, rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(ours_gradient, -complex_step_gradient(loss, theta), rtol=1e-10, atol=1e-13)
    return ours


def _weights(instance, batch, theta):
    return np.exp(log_policy(instance, theta)[batch.prompts, batch.responses] - batch.log_sampling)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scale_rewards", ["none", "group"])
def test_first_inner_step_matches_without_kl(seed, scale_rewards):
    # At theta = theta_old every ratio is 1: nothing is clipped.
    instance = small_instance(seed)
    rng = np.random.default_rng(seed)
    theta_old = instance.base_theta + 0.3 * rng.standard_normal(instance.dim)
    batch = draw_batch(instance, log_policy(instance, theta_old), 10, rng, 6)
    np.testing.assert_allclose(_weights(instance, batch, theta_old), 1.0, rtol=1e-13)
    _compare(instance, batch, theta_old, base_log_policy(instance), beta=0.0, scale_rewards=scale_rewards)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scale_rewards", ["none", "group"])
@pytest.mark.parametrize("beta", [0.0, 0.04, 0.5])
def test_clipping_active_with_and_without_the_k3_term(seed, scale_rewards, beta):
    # Far from theta_old, both ends of the interval act on samples of either sign of advantage.
    instance, batch, theta, log_old = _case(seed, 1.5)
    weights = _weights(instance, batch, theta)
    advantages = trl_advantages(batch.rewards, scale_rewards)
    assert np.any((weights > 1.2) & (advantages > 0)) and np.any((weights < 0.8) & (advantages < 0))
    _compare(instance, batch, theta, base_log_policy(instance), beta=beta, scale_rewards=scale_rewards)


@pytest.mark.parametrize("seed", range(3))
def test_asymmetric_interval_and_a_reset_reference(seed):
    # epsilon_high (DAPO's clip-higher) and the KL reference equal to the sampling policy.
    instance, batch, theta, log_old = _case(seed, 1.0)
    _compare(instance, batch, theta, log_old, beta=0.3, scale_rewards="none", epsilon=0.2, epsilon_high=0.28)


@pytest.mark.parametrize("scale_rewards", ["none", "group"])
def test_ties_in_rewards(scale_rewards):
    # Reward levels with ties inside groups, and a group whose rewards are all equal (zero
    # advantages: TRL's std of 0 plus 1e-4 leaves them zero, as ours does).
    rewards = np.array([[1.0, 0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5, 1.0]])
    base = np.array([[0.1, 0.3, 0.2, 0.2, 0.2], [0.3, 0.3, 0.2, 0.1, 0.1]])
    instance = tabular_instance(rewards, base)
    log_old = base_log_policy(instance)
    prompts = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    responses = np.array([[0, 1, 2, 3], [0, 1, 2, 0], [1, 2, 1, 2]])
    batch = ResponseBatch(prompts, responses, rewards[prompts, responses], log_old[prompts, responses])
    assert np.all(trl_advantages(batch.rewards, scale_rewards)[1:] == 0.0)
    rng = np.random.default_rng(5)
    for scale in (0.0, 0.5, 2.0):
        theta = instance.base_theta + scale * rng.standard_normal(instance.dim)
        for beta in (0.0, 0.2):
            _compare(instance, batch, theta, log_old, beta=beta, scale_rewards=scale_rewards)


def test_batch_scaling_is_a_constant_rescaling_of_the_surrogate():
    # scale_rewards="batch" divides every advantage by one number: our objective with those
    # advantages passed in matches the port (the comparison of advantages is skipped for it).
    instance, batch, theta, _ = _case(7, 1.0)
    _compare(instance, batch, theta, base_log_policy(instance), beta=0.1, scale_rewards="batch")


@pytest.mark.parametrize("seed", range(3))
def test_bias_corrected_k3_with_a_reset_reference_is_ppo_noclips_penalty(seed):
    # use_bias_correction_kl multiplies k3 by the ratio to the sampling policy; with the reference
    # reset to that policy, w k3 = w log w - w + 1, PPO-NoClip's penalty. On an instance with
    # zero rewards both losses are the penalty alone.
    instance = small_instance(seed)
    zero = BanditInstance(instance.prompt_probs, instance.features, np.zeros_like(instance.rewards),
                          instance.base_theta)
    rng = np.random.default_rng(seed)
    log_old = log_policy(zero, zero.base_theta + 0.3 * rng.standard_normal(zero.dim))
    batch = draw_batch(zero, log_old, 12, rng, 4)
    theta = zero.base_theta + rng.standard_normal(zero.dim)
    advantages = trl_advantages(batch.rewards, "group")
    loss = trl_grpo_loss(zero, theta.astype(complex), batch, advantages, batch.log_sampling, beta=0.7,
                         use_bias_correction_kl=True).real
    flat = ResponseBatch(batch.prompts.ravel(), batch.responses.ravel(), batch.rewards.ravel(),
                         batch.log_sampling.ravel())
    assert -loss == pytest.approx(ppo_noclip_objective(zero, theta, flat, 0.7), rel=1e-12)
