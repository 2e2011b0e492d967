"""Broken copies of the algorithms: the bugs the registry's contract suite must catch.

Each :class:`Mutant` is one small edit of the package's source, made where a real bug would sit
(the private function both the run and the public gradient call, or the run's own loop), and
the registered algorithm it breaks. :func:`applied` compiles the edited function in its module's
namespace and puts it in place of the original for the duration of a ``with`` block, so that
the registry, the public functions and the runs all see the broken copy.
``tests/test_mutants.py`` runs the suite of ``tests/registry_contract.py`` on each of them.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import linecache
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """One edit of one function of the package, and the registered algorithm it breaks.

    Attributes
    ----------
    name
        What the bug is.
    algorithm
        The registry name whose contract the bug breaks.
    module, qualname
        Where the edited function lives (``qualname`` may be ``Class.method``).
    old, new
        The source text replaced; ``old`` must occur exactly once in the function.
    """

    name: str
    algorithm: str
    module: str
    qualname: str
    old: str
    new: str


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "PPO-NoClip with the KL sign flipped", "ppo_noclip", "covpo.algorithms.ppo_noclip", "_gradient",
        "(batch.rewards - beta * log_ratio)", "(batch.rewards + beta * log_ratio)",
    ),
    Mutant(
        "PPO-NoClip without its importance weight", "ppo_noclip", "covpo.algorithms.ppo_noclip", "_gradient",
        "np.exp(log_ratio) * (batch.rewards - beta * log_ratio)", "(batch.rewards - beta * log_ratio)",
    ),
    Mutant(
        "PPO-NoClip drawing its batches from pi_0", "ppo_noclip", "covpo.algorithms.ppo_noclip", "ppo_noclip",
        "unchecked_draw_batch(instance, log_reference, batch_size, rng)",
        "unchecked_draw_batch(instance, loop.log_base, batch_size, rng)",
    ),
    Mutant(
        "GRPO with advantages not centred", "grpo_fixed", "covpo.algorithms.grpo", "group_advantages",
        "advantages = rewards - rewards.mean(axis=1, keepdims=True)", "advantages = rewards.copy()",
    ),
    Mutant(
        "KimiPO with a zero baseline", "kimipo", "covpo.algorithms.kimipo", "unchecked_draw_baseline_batch",
        'values = mean_baseline(extra) if baseline == "mean" else normalizer_baseline(extra, beta)',
        "values = np.zeros(extra.shape[0])",
    ),
    Mutant(
        "APMD never resetting its reference", "apmd", "covpo.algorithms.mirror_descent", "apmd",
        "log_reference = loop.reset()  # pi_ref <- pi_t", "loop.reset()\n        log_reference = loop.log_base",
    ),
    Mutant(
        "Rebel-OnPolicy's gradient doubled", "rebel_onpolicy", "covpo.algorithms.rebel", "unchecked_rebel_gradient",
        "return 2.0 * beta * feature_sums", "return 4.0 * beta * feature_sums",
    ),
    Mutant(
        "PPO-Lite's clip mask inverted", "ppo_lite", "covpo.algorithms.ppo_lite", "_unchecked_clip_mask",
        "return (log_ratio < np.log(low)) | (log_ratio > np.log(high))",
        "return ~((log_ratio < np.log(low)) | (log_ratio > np.log(high)))",
    ),
    Mutant(
        "REINFORCE without its KL shaping", "reinforce", "covpo.algorithms.reinforce", "_advantages",
        "shaped = shaped - beta * (log_probs - log_base)[prompts, responses]", "shaped = shaped",
    ),
    Mutant(
        "NPG stepping 2 / beta", "npg", "covpo.algorithms.npg", "npg",
        "theta = theta + _batch_direction(instance, log_reference, batch) / beta",
        "theta = theta + 2.0 * _batch_direction(instance, log_reference, batch) / beta",
    ),
    Mutant(
        "the score without phibar", "ppo_noclip", "covpo.batches", "BatchTerms.score_average",
        "self.scores.reshape(size, -1)",
        "self.instance.features[self.batch.prompts, self.batch.responses].reshape(size, -1)",
    ),
    # Bugs a run can carry consistently (its objective, gradient and reports all agree with it),
    # visible only at settings that tell parameters apart, in an option branch, or from outside.
    Mutant(
        "PPO-NoClip unpacking beta and eta swapped", "ppo_noclip", "covpo.algorithms.ppo_noclip", "ppo_noclip",
        'settings[name] for name in ("beta", "eta", "n_iterations", "batch_size", "inner_steps")',
        'settings[name] for name in ("eta", "beta", "n_iterations", "batch_size", "inner_steps")',
    ),
    Mutant(
        "REINFORCE shaping with 1 / beta", "reinforce", "covpo.algorithms.reinforce", "_advantages",
        "shaped = shaped - beta * (log_probs - log_base)[prompts, responses]",
        "shaped = shaped - (1.0 / beta) * (log_probs - log_base)[prompts, responses]",
    ),
    Mutant(
        "KimiPO-Norm's normalizer at temperature 1 / beta", "kimipo_norm", "covpo.algorithms.kimipo",
        "normalizer_baseline",
        "return beta * (logsumexp(rewards / beta, axis=-1) - np.log(rewards.shape[-1]))",
        "return (logsumexp(rewards * beta, axis=-1) - np.log(rewards.shape[-1])) / beta",
    ),
    Mutant(
        "GRPO's clip bounds swapped (eps and eps_high)", "grpo_fixed", "covpo.algorithms.grpo", "check_clip_epsilon",
        "return 1.0 - low, 1.0 + high", "return 1.0 - high, 1.0 + low",
    ),
    Mutant(
        "REINFORCE sampling its responses from pi_0", "reinforce", "covpo.algorithms.reinforce", "reinforce",
        "responses = unchecked_sample_responses(log_probs, prompts, rng)",
        "responses = unchecked_sample_responses(log_base, prompts, rng)",
    ),
    Mutant(
        "REINFORCE's batch-mean branch without its baseline", "reinforce", "covpo.algorithms.reinforce", "_advantages",
        "return shaped - shaped.sum() / prompts.size", "return shaped",
    ),
    Mutant(
        "GRPO's std-scaled branch dropping the group mean", "grpo_reset", "covpo.algorithms.grpo", "group_advantages",
        "advantages = advantages / (rewards.std(axis=1, ddof=1, keepdims=True) + std_eps)",
        "advantages = rewards / (rewards.std(axis=1, ddof=1, keepdims=True) + std_eps)",
    ),
    Mutant(
        "sampled NPG regressing rewards without the leave-one-out baseline", "npg", "covpo.algorithms.npg",
        "_batch_direction",
        "advantages = batch.rewards - leave_one_out_baseline(batch.rewards)", "advantages = batch.rewards",
    ),
    Mutant(
        "PPO-Lite's default thresholds exp(+-R beta)", "ppo_lite", "covpo.algorithms.ppo_lite", "clip_width_thresholds",
        "exponent = min(width * max_reward / beta, MAX_LOG_THRESHOLD)",
        "exponent = min(width * max_reward * beta, MAX_LOG_THRESHOLD)",
    ),
    Mutant(
        "APMD (exact targets) stepping theta_star * beta", "apmd_exact", "covpo.algorithms.mirror_descent",
        "apmd_exact",
        "theta = theta + theta_star / beta", "theta = theta + theta_star * beta",
    ),
    Mutant(
        "GRPO (reset reference) keeping pi_0 as its KL reference", "grpo_reset", "covpo.algorithms.grpo", "grpo",
        "log_reference = log_old if reset else loop.log_base", "log_reference = loop.log_base",
    ),
    Mutant(
        "PPO-NoClip resetting every second iteration", "ppo_noclip", "covpo.algorithms.ppo_noclip", "ppo_noclip",
        "log_reference = loop.reset()  # pi_ref <- pi_t",
        "log_reference = loop.reset() if t % 2 == 0 else log_reference",
    ),
    Mutant(
        "KimiPO's baseline including the regressed response", "kimipo", "covpo.algorithms.kimipo",
        "unchecked_draw_baseline_batch", "extra = group.rewards[:, 1:]", "extra = group.rewards[:, :-1]",
    ),
    Mutant(
        "exact NPG stepping 1 / beta^2", "npg_exact", "covpo.algorithms.npg", "npg",
        "theta = npg_step(instance, theta, beta)", "theta = npg_step(instance, theta, beta * beta)",
    ),
    Mutant(
        "filtered SFT filtering against the stale best reward", "filtered_sft", "covpo.algorithms.filtered_sft",
        "filter_best", "top = rewards >= new_best[prompts] - REWARD_TOLERANCE",
        "top = rewards >= best_reward[prompts] - REWARD_TOLERANCE",
    ),
)


@contextlib.contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """The package with ``mutant``'s edit in place, restored on leaving the block."""
    module = importlib.import_module(mutant.module)
    *owners, name = mutant.qualname.split(".")
    owner = module
    for attribute in owners:
        owner = getattr(owner, attribute)
    original = inspect.unwrap(getattr(owner, name))
    source = textwrap.dedent(inspect.getsource(original))
    if source.count(mutant.old) != 1:
        raise AssertionError(f"{mutant.name}: the text to edit occurs {source.count(mutant.old)} times in {mutant.qualname}")
    edited = source.replace(mutant.old, mutant.new)
    filename = f"<mutant: {mutant.name}>"
    linecache.cache[filename] = (len(edited), None, edited.splitlines(keepends=True), filename)  # for inspect.getsource
    namespace: dict[str, object] = {}
    exec(compile(edited, filename, "exec"), vars(module), namespace)
    setattr(owner, name, namespace[name])
    try:
        yield
    finally:
        setattr(owner, name, original)
