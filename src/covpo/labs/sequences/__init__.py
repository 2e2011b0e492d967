"""Responses as token sequences: an exact, enumerable autoregressive laboratory.

The paper treats a response as one unit (paper section 5) and lists "responses are token
sequences, and policy ratios over full responses can be large" as an open question. Here a
response is a sequence ``y = (y_0, ..., y_{L-1})`` of ``L`` tokens from a vocabulary of
``V``, and the policy is tabular autoregressive: one logit per (prompt, prefix, next token),

    pi_theta(y|x) = prod_t softmax(theta[x, y_<t, :])[y_t],

which represents every full-support distribution over the ``V**L`` sequences (so the
regularized targets of paper sections 2.1 and 3.1 stay in the class) but couples sequences that
share a prefix. With ``V**L`` in the thousands everything is enumerable, so rewards, KL,
coverage and gradients are exact; the reward is on the whole sequence.

Sequences are numbered in lexicographic order (sequence ``s`` is ``s`` written in base
``V``), so the sequences that share their first ``l`` tokens are contiguous, and a sum over
a subtree of the prefix tree is a reshape followed by a sum. Prefixes of length ``l`` are
numbered ``sum_{j<l} V**j`` plus their base-``V`` value. Parameters ``theta`` have shape
``(n_prompts, n_prefixes, V)`` with ``n_prefixes = sum_{l<L} V**l``.

The subpackage follows the package's data flow, one job per module:

- :mod:`covpo.labs.sequences.instance`: the enumeration of sequences and prefixes, the
  instance and its coverage-collapse construction after paper section 2.1;
- :mod:`covpo.labs.sequences.policy`: the policy and its exact gradients, and the package's
  view of it (a bandit over the enumerated sequences, and the token-level policy class);
- :mod:`covpo.labs.sequences.ppo`: the one algorithm the package does not have, a sampled
  PPO-NoClip-style reset method with groups of sequences and sequence-level or per-token
  importance ratios, optionally clipped per token (after paper section 3.2);
- :mod:`covpo.labs.sequences.experiment`: the package's own REINFORCE (exact and sampled) and
  APMD run on token logits, and one experiment that a chapter calls in one line.

Every run returns the shared :class:`~covpo.trajectory.Trajectory`. Every public name is
re-exported here, so ``from covpo.labs.sequences import sequence_experiment`` works whichever
module holds it.
"""

from .experiment import (
    DEFAULT_APMD_ITERATIONS,
    DEFAULT_BATCH_SIZE,
    DEFAULT_BETA,
    DEFAULT_CLIP_EPS,
    DEFAULT_ETA,
    DEFAULT_GAP,
    DEFAULT_GROUP_SIZE,
    DEFAULT_INNER_STEPS,
    DEFAULT_RATIO_LENGTHS,
    DEFAULT_REINFORCE_STEPS,
    DEFAULT_SAMPLED_REINFORCE_BATCH,
    DEFAULT_SAMPLED_REINFORCE_STEPS,
    PPO_FLAVOURS,
    SequenceExperiment,
    run_on_sequences,
    sequence_experiment,
)
from .instance import (
    SequenceInstance,
    as_generator,
    autoregressive_logits,
    enumerate_sequences,
    level_offsets,
    prefix_indices,
    sequence_collapse_instance,
    sequence_index,
)
from .policy import (
    TokenPolicy,
    bandit_view,
    base_sequence_log_policy,
    expected_kl,
    expected_reward,
    log_coverage,
    next_token_log_probs,
    regularized_gradient,
    regularized_objective,
    reward_gradient,
    sample_sequences,
    sequence_log_policy,
    token_log_probs,
    token_score_sum,
)
from .ppo import (
    RATIO_FLAVOURS,
    SequenceBatch,
    SequencePPORun,
    SequenceRatioRecord,
    SurrogateParts,
    batch_token_log_probs,
    draw_sequence_batch,
    ppo_surrogate,
    sampled_sequence_ppo,
    surrogate_parts,
)

__all__ = [
    "DEFAULT_APMD_ITERATIONS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_BETA",
    "DEFAULT_CLIP_EPS",
    "DEFAULT_ETA",
    "DEFAULT_GAP",
    "DEFAULT_GROUP_SIZE",
    "DEFAULT_INNER_STEPS",
    "DEFAULT_RATIO_LENGTHS",
    "DEFAULT_REINFORCE_STEPS",
    "DEFAULT_SAMPLED_REINFORCE_BATCH",
    "DEFAULT_SAMPLED_REINFORCE_STEPS",
    "PPO_FLAVOURS",
    "RATIO_FLAVOURS",
    "SequenceBatch",
    "SequenceExperiment",
    "SequenceInstance",
    "SequencePPORun",
    "SequenceRatioRecord",
    "SurrogateParts",
    "TokenPolicy",
    "as_generator",
    "autoregressive_logits",
    "bandit_view",
    "base_sequence_log_policy",
    "batch_token_log_probs",
    "draw_sequence_batch",
    "enumerate_sequences",
    "expected_kl",
    "expected_reward",
    "level_offsets",
    "log_coverage",
    "next_token_log_probs",
    "ppo_surrogate",
    "prefix_indices",
    "regularized_gradient",
    "regularized_objective",
    "reward_gradient",
    "run_on_sequences",
    "sample_sequences",
    "sampled_sequence_ppo",
    "sequence_collapse_instance",
    "sequence_experiment",
    "sequence_index",
    "sequence_log_policy",
    "surrogate_parts",
    "token_log_probs",
    "token_score_sum",
]
