"""A small transformer post-trained the way practitioners post-train, with the controls the theory calls for (chapter 7).

The paper's end-to-end guarantees are for softmax-linear policies (paper sections 2 to 4); its
APMD guarantee holds for any parameterization whose inner loops are accurate, and its section 5
leaves richer parameterizations and token sequences open. This laboratory is a decoder-only
transformer written with JAX and optax, pre-trained on a mixture we control and post-trained by
GRPO as TRL runs it (fixed reference, weak or strong penalty, TRL's reference sync),
REINFORCE with a leave-one-out baseline, Rebel, and APMD as the theory prescribes it (with a
sampled and an exact inner objective), all through one loop. One job per module:

- :mod:`covpo.labs.transformer.model`: the transformer, teacher-forced log-probabilities, exact
  log-probabilities of every answer, and the key-value-cache decoding step;
- :mod:`covpo.labs.transformer.task`: the verifiable reversal task (mixed and decoupled), its two
  rewards and the pre-training mixture;
- :mod:`covpo.labs.transformer.sampling`: the jitted sampler;
- :mod:`covpo.labs.transformer.exact`: the mirror-descent target and exact sequence KL divergences;
- :mod:`covpo.labs.transformer.training`: pre-training and the post-training loop;
- :mod:`covpo.labs.transformer.methods`: the study's arms and their learning-rate protocol;
- :mod:`covpo.labs.transformer.passk`: the unbiased pass@k estimator and exact pass@k;
- :mod:`covpo.labs.transformer.paired`: paired differences over seeds and their sign-test interval;
- :mod:`covpo.labs.transformer.analysis`: the chapter's paired comparisons and tables;
- :mod:`covpo.labs.transformer.frontier`: the frontier study, every arm measured along its path, kept as a
  stamped record;
- :mod:`covpo.labs.transformer.frontier_analysis`: the record read at matched reward or matched KL, paired by
  seed;
- :mod:`covpo.labs.transformer.literature`: the published studies the chapter compares with;
- :mod:`covpo.labs.transformer.throughput`: cost against width and length;
- :mod:`covpo.labs.transformer.experiment`: the chapter's study in one call.

Importing this subpackage imports JAX; the rest of :mod:`covpo` does not.
"""

from .exact import regularized_objective, regularized_target, sequence_kl
from .experiment import SIZES, TASKS, Cell, TransformerStudy, book_cells, full_cells, transformer_study
from .methods import ARM_NAMES, LEARNING_RATES, default_arms, fastest_stable_rate, make_arm, sync_period
from .model import (ModelConfig, all_answer_log_probs, answer_log_probs, decode_step, forward, init_params,
                    parameter_count)
from .paired import PairedInterval, sign_test_interval
from .passk import default_ks, exact_pass_at_k, pass_at_k
from .sampling import sample_answers
from .task import REWARDS, ReversalTask, correct_answer, near_miss, reward
from .throughput import cost_table, measure_cost
from .training import Method, RunInputs, TrainingSetup, policy_loss, pretrain, pretrain_models, train_runs

__all__ = [
    "ARM_NAMES", "LEARNING_RATES", "REWARDS", "SIZES", "TASKS", "Cell", "Method", "ModelConfig", "PairedInterval",
    "ReversalTask", "RunInputs", "TrainingSetup", "TransformerStudy", "all_answer_log_probs", "answer_log_probs",
    "book_cells", "correct_answer", "cost_table", "decode_step", "default_arms", "default_ks", "exact_pass_at_k",
    "fastest_stable_rate", "forward", "full_cells", "init_params", "make_arm", "measure_cost", "near_miss",
    "parameter_count", "pass_at_k", "policy_loss", "pretrain", "pretrain_models", "regularized_objective",
    "regularized_target", "reward", "sample_answers", "sequence_kl", "sign_test_interval", "sync_period",
    "train_runs", "transformer_study",
]
