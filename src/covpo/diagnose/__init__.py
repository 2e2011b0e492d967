"""Is my run collapsing? Coverage measures read from a trainer's completion logs (paper sections 1.3 and 5).

The paper shows that policy-gradient post-training can lose the optimal answer's probability
while the reward rises. This subpackage asks that question of a real run: it reads the
completion logs that TRL's ``GRPOTrainer`` (``log_completions=True``) and verl
(``trainer.rollout_data_dir``) write (:mod:`covpo.diagnose.readers`), decides which completions
succeeded by a stated rule (:mod:`covpo.diagnose.success`), measures each prompt's solve rate
over the steps and the coverage-loss events (:mod:`covpo.diagnose.measures`), and writes a
verdict and an HTML report (:mod:`covpo.diagnose.report`, the command ``covpo-diagnose`` of
:mod:`covpo.diagnose.cli`). It reads logs; it trains nothing.

Importing it loads pyarrow; the report loads matplotlib when it is imported.
"""

from covpo.diagnose.measures import (
    BetaBinomialFit, CoverageLoss, Diagnosis, DifficultyGroups, PassAtK, Signature, Visits, beta_binomial_fit,
    beta_binomial_pass_at_k, bin_comparison, coverage_loss, diagnose, difficulty_groups, pass_at_k, pass_at_k_curves,
    signature, step_windows, visit_counts, visits, wilson_interval,
)
from covpo.diagnose.readers import CompletionLog, completion_log, detect_format, read_log, write_trl_step, write_verl_step
from covpo.diagnose.success import SuccessRule, success_rule

__all__ = [
    "BetaBinomialFit", "CompletionLog", "CoverageLoss", "Diagnosis", "DifficultyGroups", "PassAtK", "Signature",
    "SuccessRule", "Visits", "beta_binomial_fit", "beta_binomial_pass_at_k", "bin_comparison", "completion_log",
    "coverage_loss", "detect_format", "diagnose", "difficulty_groups", "pass_at_k", "pass_at_k_curves", "read_log",
    "signature", "step_windows", "success_rule", "visit_counts", "visits", "wilson_interval", "write_trl_step",
    "write_verl_step",
]
