"""A small transformer trained the way practitioners post-train: GRPO, resets, pass@k (chapter 7).

The paper's theory is about softmax-linear policies (paper sections 2 to 4); its section 5 leaves
token sequences and richer policy parameterizations open. This laboratory is a decoder-only
transformer written with JAX and optax, pre-trained on a mixture we control and post-trained with
GRPO (fixed reference or reference resets), REINFORCE with a leave-one-out baseline and the
Rebel-OnPolicy squared loss, all through one loop. One job per module:

- :mod:`covpo.labs.transformer.model`: the transformer, teacher-forced log-probabilities and the
  key-value-cache decoding step;
- :mod:`covpo.labs.transformer.task`: the verifiable reversal task, its two rewards and the
  pre-training mixture;
- :mod:`covpo.labs.transformer.sampling`: the jitted sampler;
- :mod:`covpo.labs.transformer.training`: pre-training and the post-training methods;
- :mod:`covpo.labs.transformer.passk`: the unbiased pass@k estimator and exact pass@k;
- :mod:`covpo.labs.transformer.throughput`: cost against width and length;
- :mod:`covpo.labs.transformer.experiment`: the chapter's study in one call.

Importing this subpackage imports JAX; the rest of :mod:`covpo` does not.
"""

from .experiment import SIZES, TransformerStudy, transformer_study
from .model import ModelConfig, answer_log_probs, decode_step, forward, init_params, parameter_count
from .passk import default_ks, exact_pass_at_k, pass_at_k
from .sampling import sample_answers
from .task import REWARDS, ReversalTask, correct_answer, near_miss, reward
from .throughput import cost_table, measure_cost
from .training import Method, TrainingSetup, default_methods, policy_loss, pretrain, train_runs

__all__ = [
    "REWARDS", "SIZES", "Method", "ModelConfig", "ReversalTask", "TrainingSetup", "TransformerStudy",
    "answer_log_probs", "correct_answer", "cost_table", "decode_step", "default_ks", "default_methods",
    "exact_pass_at_k", "forward", "init_params", "measure_cost", "near_miss", "parameter_count", "pass_at_k",
    "policy_loss", "pretrain", "reward", "sample_answers", "train_runs", "transformer_study",
]
