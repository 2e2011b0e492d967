"""Independent first iterations of every registered algorithm, from the paper's formulas, in a few lines of numpy each.

Nothing here calls the package's objectives, gradients, baselines, clips or samplers: each
reference recomputes the softmax-linear policy ``pi_theta(y|x) ∝ exp <theta, phi(x, y)>``, its
score ``phi - phibar_theta`` and the algorithm's update from the formulas of the paper's boxes
(section 2.1, REINFORCE; appendix B.3 and section 3.1, mirror descent and APMD; Algorithms 1 to 5;
appendix H.4, GRPO; appendix M, NPG; section 1.3, Best-of-N; section 2.2, filtered SFT). Where an
algorithm samples, the reference takes the batch the run drew (:func:`recorded_draws` records
the sampler's output from outside) and computes the update on that batch: the prompts and
responses are the run's, every probability, ratio, baseline and clip decision is the test's.

:func:`reference` returns the first ``min(T, 2)`` outer iterates (two, so that a fixed reference's
KL term, zero at ``pi_0``, and a reset's new reference both act), as log-probability tables and,
where the iterate is a parameter vector, as parameters; and the sides on which a clip engaged.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

import covpo.policies
from covpo.instances import BanditInstance

ITERATIONS = 2
"""Outer iterations each reference computes (fewer when the run has fewer)."""


@dataclass
class ReferenceRun:
    """The reference's iterates ``pi_1, ..., pi_m`` and what its clip did.

    Attributes
    ----------
    tables
        ``log pi_t``, ``t = 1, ..., m``.
    thetas
        ``theta_t``, ``t = 1, ..., m``, for an algorithm whose iterate is a parameter vector; else ``None``.
    clipped
        The sides (``"high"``, ``"low"``) on which the clip removed a sample that would have moved the iterate.
    derived
        Settings the run derives from the instance (PPO-Lite's default thresholds, Best-of-N's ``n``),
        which its trajectory's ``settings`` must hold.
    """

    tables: list[np.ndarray] = field(default_factory=list)
    thetas: list[np.ndarray] | None = field(default_factory=list)
    clipped: set[str] = field(default_factory=set)
    derived: dict[str, object] = field(default_factory=dict)


@contextlib.contextmanager
def recorded_draws() -> Iterator[list[tuple[np.ndarray, np.ndarray]]]:
    """Record every call of the response sampler the algorithms use, as ``(prompts, responses)``, in call order.

    The sampler is ``covpo.policies.unchecked_sample_responses``; every loaded ``covpo`` module that
    imported it (``covpo.batches``, whose batch drawer the APMD instances call, and the modules
    that call it directly, such as REINFORCE's) gets a wrapper that passes the call through
    unchanged and keeps its prompts and its result. Restored on leaving the block. Only modules
    already imported are wrapped: import the algorithm's module first (``Algorithm.function`` does).
    """
    original = covpo.policies.unchecked_sample_responses
    draws: list[tuple[np.ndarray, np.ndarray]] = []

    def sampler(log_probs: np.ndarray, prompts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        responses = original(log_probs, prompts, rng)
        draws.append((np.array(prompts), np.array(responses)))
        return responses

    users = [module for name, module in list(sys.modules.items())
             if name.startswith("covpo.") and name != "covpo.policies"
             and getattr(module, "unchecked_sample_responses", None) is original]
    for module in users:
        module.unchecked_sample_responses = sampler
    try:
        yield draws
    finally:
        for module in users:
            module.unchecked_sample_responses = original


# ---------------------------------------------------------------------------------------
# The softmax-linear class, written out (paper section 2.2)


def log_pi(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """``log pi_theta(y|x) = <theta, phi(x, y)> - log sum_y' exp <theta, phi(x, y')>``."""
    logits = instance.features @ theta
    return logits - logsumexp(logits, axis=1, keepdims=True)


def scores(instance: BanditInstance, theta: np.ndarray) -> np.ndarray:
    """``grad log pi_theta(y|x) = phi(x, y) - E_{y'~pi_theta} phi(x, y')``, shape ``(X, Y, d)``."""
    probs = np.exp(log_pi(instance, theta))
    return instance.features - np.einsum("xy,xyd->xd", probs, instance.features)[:, None, :]


def kl_gradient_rows(instance: BanditInstance, theta: np.ndarray, log_reference: np.ndarray) -> np.ndarray:
    """``grad_theta KL(pi_theta(.|x) || pi_ref(.|x))`` for every prompt, shape ``(X, d)`` (softmax-linear, paper section 2.2)."""
    lp = log_pi(instance, theta)
    probs = np.exp(lp)
    kl = np.sum(probs * (lp - log_reference), axis=1, keepdims=True)
    return np.einsum("xy,xyd->xd", probs * (lp - log_reference - kl), scores(instance, theta))


def mirror_step(instance: BanditInstance, log_probs: np.ndarray, beta: float) -> np.ndarray:
    """The exact mirror-descent step ``pi_{t+1} ∝ pi_t exp(r / beta)`` (paper appendix B.3)."""
    tilted = log_probs + instance.rewards / beta
    return tilted - logsumexp(tilted, axis=1, keepdims=True)


def _record(run: ReferenceRun, instance: BanditInstance, theta: np.ndarray) -> None:
    run.tables.append(log_pi(instance, theta))
    run.thetas.append(theta.copy())


# ---------------------------------------------------------------------------------------
# One reference per registered algorithm


def _reinforce_exact(instance, h, draws, m):
    """``theta <- theta + eta grad J_beta(pi_theta; pi_0)``, ``grad = E_x E_pi[(r - beta log pi/pi_0) score]`` (section 2.1)."""
    run, theta, beta = ReferenceRun(), np.array(instance.base_theta, float), float(h.get("beta", 0.0))
    base = log_pi(instance, theta)
    for _ in range(m):
        lp = log_pi(instance, theta)
        shaped = instance.rewards - beta * (lp - base)
        weights = instance.prompt_probs[:, None] * np.exp(lp) * shaped
        theta = theta + h["eta"] * np.einsum("xy,xyd->d", weights, scores(instance, theta))
        _record(run, instance, theta)
    return run


def _reinforce(instance, h, draws, m):
    """``theta <- theta + eta mean_i A_i score_i``, ``A_i`` the KL-shaped reward less a leave-one-out or batch-mean baseline."""
    run, theta, beta = ReferenceRun(), np.array(instance.base_theta, float), float(h.get("beta", 0.0))
    base = log_pi(instance, theta)
    for t in range(m):
        x, y = draws[t]
        shaped = instance.rewards[x, y] - beta * (log_pi(instance, theta) - base)[x, y]
        if h.get("baseline", "leave_one_out") == "leave_one_out":
            advantage = shaped - (shaped.sum() - shaped) / (shaped.size - 1)
        else:
            advantage = shaped - shaped.mean()
        theta = theta + h["eta"] * np.mean(advantage[:, None] * scores(instance, theta)[x, y], axis=0)
        _record(run, instance, theta)
    return run


def _mirror_descent_tables(instance, h, draws, m):
    """Exact mirror descent, ``pi_{t+1} ∝ pi_t exp(r / beta)``: the target every exact instance of APMD reaches (B.3, B.4.1, M)."""
    run, lp = ReferenceRun(thetas=None), log_pi(instance, np.array(instance.base_theta, float))
    for _ in range(m):
        lp = mirror_step(instance, lp, h["beta"])
        run.tables.append(lp)
    return run


def _apmd(instance, h, draws, m):
    """``K`` steps ``theta <- theta + eta grad J_beta(pi_theta; pi_t)`` from ``theta_t`` after each reset (appendix C.1)."""
    run, theta, beta = ReferenceRun(), np.array(instance.base_theta, float), h["beta"]
    for _ in range(m):
        reference = log_pi(instance, theta)
        for _ in range(h["inner_steps"]):
            lp = log_pi(instance, theta)
            shaped = instance.rewards - beta * (lp - reference)
            weights = instance.prompt_probs[:, None] * np.exp(lp) * shaped
            theta = theta + h["eta"] * np.einsum("xy,xyd->d", weights, scores(instance, theta))
        _record(run, instance, theta)
    return run


def _ppo_noclip(instance, h, draws, m):
    """Algorithm 1: ``K`` steps on ``mean_i w_i (r_i - beta log w_i) score_i``, ``w = pi_theta / pi_t``, on the batch from ``pi_t``."""
    run, theta, beta = ReferenceRun(), np.array(instance.base_theta, float), h["beta"]
    for t in range(m):
        x, y = draws[t]
        old, reward = log_pi(instance, theta)[x, y], instance.rewards[x, y]
        for _ in range(h["inner_steps"]):
            log_w = log_pi(instance, theta)[x, y] - old
            coefficient = np.exp(log_w) * (reward - beta * log_w)
            theta = theta + h["eta"] * np.mean(coefficient[:, None] * scores(instance, theta)[x, y], axis=0)
        _record(run, instance, theta)
    return run


def _ppo_lite(instance, h, draws, m):
    """Algorithm 2: ``mean_i clip(w_i, c_lo, c_hi) r_i - beta KL``, the KL exact per sampled prompt or PPO-NoClip's estimate."""
    run, theta, beta = ReferenceRun(), np.array(instance.base_theta, float), h["beta"]
    top = float(instance.rewards.max())
    low, high = h.get("thresholds") or (math.exp(-top / beta), math.exp(top / beta))
    run.derived["thresholds"] = (low, high)
    for t in range(m):
        x, y = draws[t]
        reference = log_pi(instance, theta)
        old, reward = reference[x, y], instance.rewards[x, y]
        for _ in range(h["inner_steps"]):
            log_w = log_pi(instance, theta)[x, y] - old
            w = np.exp(log_w)
            above, below = (w > high) & (reward > 0), (w < low) & (reward > 0)
            run.clipped |= {side for side, hit in (("high", above.any()), ("low", below.any())) if hit}
            surrogate = np.where((w > high) | (w < low), 0.0, w * reward)
            score = scores(instance, theta)[x, y]
            if h.get("kl", "exact") == "exact":
                penalty = kl_gradient_rows(instance, theta, reference)[x].mean(axis=0)
            else:
                penalty = np.mean((w * log_w)[:, None] * score, axis=0)
            theta = theta + h["eta"] * (np.mean(surrogate[:, None] * score, axis=0) - beta * penalty)
        _record(run, instance, theta)
    return run


def _grpo(instance, h, draws, m):
    """Appendix H.4: group advantages, ``min(w A, clip(w, 1 - eps, 1 + eps_high) A)``, a KL to ``pi_0`` or to ``pi_t``."""
    run, theta, beta = ReferenceRun(), np.array(instance.base_theta, float), h["beta"]
    base = log_pi(instance, theta)
    eps = h.get("clip_epsilon", 0.2)
    eps_high = h.get("clip_epsilon_high") or eps
    for t in range(m):
        x, y = draws[t]
        current = log_pi(instance, theta)
        reference = current if h["reference"] == "reset" else base
        reward = instance.rewards[x, y]
        advantage = reward - reward.mean(axis=1, keepdims=True)
        if h.get("scale_by_std", False):
            advantage = advantage / (reward.std(axis=1, ddof=1, keepdims=True) + h.get("std_eps", 1e-4))
        old = current[x, y]
        for _ in range(h["inner_steps"]):
            lp = log_pi(instance, theta)
            w = np.exp(lp[x, y] - old)
            above, below = (advantage > 0) & (w > 1 + eps_high), (advantage < 0) & (w < 1 - eps)
            run.clipped |= {side for side, hit in (("high", above.any()), ("low", below.any())) if hit}
            score = scores(instance, theta)[x, y]
            step = np.mean(np.where(above | below, 0.0, w * advantage)[..., None] * score, axis=(0, 1))
            if beta > 0 and h.get("kl", "k3") == "exact":
                step = step - beta * kl_gradient_rows(instance, theta, reference)[x].mean(axis=(0, 1))
            elif beta > 0:
                # d/dtheta [e^l - l - 1], l = log pi_ref - log pi_theta: (1 - e^l) score
                step = step - beta * np.mean((1 - np.exp(reference[x, y] - lp[x, y]))[..., None] * score, axis=(0, 1))
            theta = theta + h["eta"] * step
        _record(run, instance, theta)
    return run


def _kimipo(instance, h, draws, m):
    """Algorithms 3 and 4: ``K`` descent steps on ``mean_i (r_i - b_i - beta log pi_theta/pi_t)^2``, ``b`` from the extra responses."""
    run, theta, beta = ReferenceRun(), np.array(instance.base_theta, float), h["beta"]
    for t in range(m):
        prompts, responses = draws[t]
        x, y = prompts[:, 0], responses[:, 0]
        extra = instance.rewards[prompts[:, 1:], responses[:, 1:]]
        if h["baseline"] == "mean":
            baseline = extra.mean(axis=1)
        else:
            baseline = beta * np.log(np.mean(np.exp(extra / beta), axis=1))
        old, reward = log_pi(instance, theta)[x, y], instance.rewards[x, y]
        for _ in range(h["inner_steps"]):
            residual = reward - baseline - beta * (log_pi(instance, theta)[x, y] - old)
            gradient = -2 * beta * np.mean(residual[:, None] * scores(instance, theta)[x, y], axis=0)
            theta = theta - h["eta"] * gradient
        _record(run, instance, theta)
    return run


def _rebel(instance, h, draws, m):
    """Algorithm 5: ``K`` descent steps on ``mean_i (beta [u_i - u'_i] - (r_i - r'_i))^2``, ``u = log pi_theta/pi_t``."""
    run, theta, beta = ReferenceRun(), np.array(instance.base_theta, float), h["beta"]
    for t in range(m):
        x, y = draws[t]
        old, reward = log_pi(instance, theta)[x, y], instance.rewards[x, y]
        difference = instance.features[x[:, 0], y[:, 0]] - instance.features[x[:, 1], y[:, 1]]
        for _ in range(h["inner_steps"]):
            u = log_pi(instance, theta)[x, y] - old
            residual = beta * (u[:, 0] - u[:, 1]) - (reward[:, 0] - reward[:, 1])
            theta = theta - h["eta"] * 2 * beta * np.mean(residual[:, None] * difference, axis=0)
        _record(run, instance, theta)
    return run


def _npg(instance, h, draws, m):
    """Appendix M: ``theta <- theta + w / beta``, ``w`` least squares of leave-one-out advantages on the scores at ``pi_t``."""
    run, theta, beta = ReferenceRun(), np.array(instance.base_theta, float), h["beta"]
    for t in range(m):
        x, y = draws[t]
        reward = instance.rewards[x, y]
        group = reward.shape[1]
        advantage = reward - (reward.sum(axis=1, keepdims=True) - reward) / (group - 1)
        design = scores(instance, theta)[x, y].reshape(-1, instance.dim)
        theta = theta + np.linalg.pinv(design) @ advantage.ravel() / beta
        _record(run, instance, theta)
    return run


def _best_of_n(instance, h, draws, m):
    """Section 1.3: ``n = max_x ceil(log(1/delta) / -log(1 - c_0(x)))``; the best of ``n`` draws from ``pi_0``, ties in proportion to ``pi_0``."""
    run = ReferenceRun(thetas=None)
    probs = np.exp(log_pi(instance, np.array(instance.base_theta, float)))
    coverage = np.sum(np.where(instance.optimal_mask, probs, 0.0), axis=1)
    n = int(np.max(np.ceil(np.log(1 / h["delta"]) / -np.log1p(-coverage))))
    run.derived["n"] = n
    table = np.empty_like(probs)
    for x in range(instance.n_prompts):
        for y in range(instance.n_responses):
            level = probs[x][instance.rewards[x] == instance.rewards[x, y]].sum()
            at_most = probs[x][instance.rewards[x] <= instance.rewards[x, y]].sum()
            # log(F^n - (F - p)^n), F = P(r <= v), p = P(r = v), and the level's share pi(y) / p
            best = n * np.log(at_most) + np.log1p(-((at_most - level) / at_most) ** n)
            table[x, y] = best + np.log(probs[x, y] / level)
    run.tables.append(table - logsumexp(table, axis=1, keepdims=True))
    return run


def _filtered_sft(instance, h, draws, m):
    """Section 2.2: keep the samples of the best reward seen per prompt; ``K`` ascent steps on their mean log-likelihood."""
    run, theta = ReferenceRun(), np.array(instance.base_theta, float)
    seen_x, seen_y = np.empty(0, int), np.empty(0, int)
    for t in range(m):
        x, y = draws[t]
        seen_x, seen_y = np.concatenate([seen_x, x.ravel()]), np.concatenate([seen_y, y.ravel()])
        reward = instance.rewards[seen_x, seen_y]
        best = np.full(instance.n_prompts, -np.inf)
        np.maximum.at(best, seen_x, reward)
        keep = reward >= best[seen_x] - 1e-12
        for _ in range(h["inner_steps"]):
            theta = theta + h["eta"] * np.mean(scores(instance, theta)[seen_x[keep], seen_y[keep]], axis=0)
        _record(run, instance, theta)
    return run


#: The reference of every registered name.
REFERENCES: Mapping[str, Callable[[BanditInstance, Mapping[str, object], list, int], ReferenceRun]] = {
    "reinforce": _reinforce,
    "reinforce_exact": _reinforce_exact,
    "mirror_descent_exact": _mirror_descent_tables,
    "apmd_exact": _mirror_descent_tables,
    "apmd": _apmd,
    "ppo_noclip": _ppo_noclip,
    "ppo_lite": _ppo_lite,
    "grpo_reset": _grpo,
    "grpo_fixed": _grpo,
    "kimipo": _kimipo,
    "kimipo_norm": _kimipo,
    "rebel_onpolicy": _rebel,
    "npg": _npg,
    "npg_exact": _mirror_descent_tables,
    "best_of_n": _best_of_n,
    "filtered_sft": _filtered_sft,
}


def reference(name: str, hyperparameters: Mapping[str, object], instance: BanditInstance,
              draws: list[tuple[np.ndarray, np.ndarray]], iterations: int = ITERATIONS) -> ReferenceRun:
    """The independent first ``iterations`` outer iterations (fewer if the run has fewer) of the registered ``name``.

    ``hyperparameters`` include the name's fixed ones; ``draws`` are the run's batches, in order.
    """
    count = min(int(hyperparameters.get("n_iterations", 1)), iterations)
    return REFERENCES[name](instance, hyperparameters, draws, count)


def summaries(instance: BanditInstance, log_probs: np.ndarray) -> dict[str, np.ndarray]:
    """What a trajectory records of ``pi``: ``J(pi)``, ``log pi(Y*(x)|x)`` per prompt, ``E_x KL(pi || pi_0)`` (paper sections 1 and 2)."""
    base = log_pi(instance, np.array(instance.base_theta, float))
    probs = np.exp(log_probs)
    return {
        "reward": np.asarray(instance.prompt_probs @ np.sum(probs * instance.rewards, axis=1)),
        "log_coverage": logsumexp(np.where(instance.optimal_mask, log_probs, -np.inf), axis=1),
        "kl_to_base": np.asarray(instance.prompt_probs @ np.sum(probs * (log_probs - base), axis=1)),
    }
