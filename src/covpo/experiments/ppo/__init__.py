"""The measurements of chapter 4: PPO-NoClip, PPO-Lite and GRPO-style runs side by side (paper section 3).

Paper sections 3.2 and 3.3, appendices G and H. The algorithms live in
:mod:`covpo.algorithms.ppo_noclip`, :mod:`covpo.algorithms.ppo_lite`, :mod:`covpo.algorithms.grpo` and
:mod:`covpo.algorithms.reinforce`; this package runs them at settings the chapter prints and returns
frozen records for the figures of :mod:`covpo.plots.ppo`, one module per topic (importance
weights, clipping, estimator spread, the practice recipe, concavity), all re-exported here:

- :mod:`~covpo.experiments.ppo.ratios`, :func:`~covpo.experiments.ppo.ratios.ratio_spread` and :func:`~covpo.experiments.ppo.ratios.ratio_bounds_by_beta`: the importance weights of PPO-NoClip
  per outer iteration, and their extremes against ``[exp(-R/beta), exp(R/beta)]``;
- :mod:`~covpo.experiments.ppo.clipping`, :func:`~covpo.experiments.ppo.clipping.clip_activity_grid`: how often PPO-Lite clips as
  ``beta`` and the clipping interval vary, whether the target itself is ever clipped, and
  what clipping costs the optimization;
- :mod:`~covpo.experiments.ppo.estimators`, :func:`~covpo.experiments.ppo.estimators.estimator_spread`: the spread, across independent batches, of the importance-weighted
  objective and gradient with and without clipping, at a fixed batch size;
- :mod:`~covpo.experiments.ppo.practice`, :func:`~covpo.experiments.ppo.practice.practice_recipes`: the common practice recipe as :class:`~covpo.experiments.sweeps.Method`
  records, for :func:`~covpo.experiments.sweeps.compare_recipes` beside the methods of the cost
  sweeps (:func:`~covpo.experiments.sweeps.random_family_methods`,
  :func:`~covpo.experiments.sweeps.collapse_family_methods`) on the families of :mod:`covpo.families`;
- :func:`~covpo.experiments.ppo.practice.reverse_kl_optimum`, the policy that the k3 penalty's gradient points to;
- :mod:`~covpo.experiments.ppo.concavity`, :func:`~covpo.experiments.ppo.concavity.regularized_hessian`, :func:`~covpo.experiments.ppo.concavity.landscape` and :func:`~covpo.experiments.ppo.concavity.inner_loop_curvature`: the local
  concavity of PPO-NoClip's population objective (paper Eq. 24) against KimiPO's global
  convexity (appendix J.1), and the objective-gap identity of appendix G.1 along the inner loop;
- :func:`~covpo.experiments.ppo.clipping.ppo_min_thresholds` (clipping): PPO's fixed interval ``[1 - eps, 1 + eps]`` applied through its
  pessimistic minimum, as PPO-Lite thresholds;
- :func:`~covpo.experiments.ppo.clipping.clipping_benefit` (clipping): PPO-NoClip against PPO-Lite with the same sampled penalty, in
  training runs where the clip acts.

Every instance, constant, budget and seed here is ours; the paper's are not reproduced.
"""

from covpo.experiments.ppo.clipping import (
    CLIP_ACTIVITY_GRIDS,
    PPO_INTERVAL,
    ClipActivity,
    ClippingBenefit,
    clip_activity_grid,
    clipping_benefit,
    ppo_min_thresholds,
)
from covpo.experiments.ppo.concavity import (
    InnerLoopCurvature,
    Landscape,
    inner_loop_curvature,
    landscape,
    regularized_hessian,
)
from covpo.experiments.ppo.estimators import (
    EstimatorSpread,
    batch_estimates,
    estimator_spread,
)
from covpo.experiments.ppo.practice import (
    practice_recipes,
    reverse_kl_optimum,
)
from covpo.experiments.ppo.ratios import (
    RatioBoundsTable,
    RatioSpread,
    ratio_bounds_by_beta,
    ratio_bounds_table,
    ratio_spread,
    ratio_spread_table,
    target_log_ratio_extent,
)

__all__ = [
    "CLIP_ACTIVITY_GRIDS",
    "ClipActivity",
    "ClippingBenefit",
    "EstimatorSpread",
    "InnerLoopCurvature",
    "Landscape",
    "PPO_INTERVAL",
    "RatioBoundsTable",
    "RatioSpread",
    "batch_estimates",
    "clip_activity_grid",
    "clipping_benefit",
    "estimator_spread",
    "inner_loop_curvature",
    "landscape",
    "ppo_min_thresholds",
    "practice_recipes",
    "ratio_bounds_by_beta",
    "ratio_bounds_table",
    "ratio_spread",
    "ratio_spread_table",
    "regularized_hessian",
    "reverse_kl_optimum",
    "target_log_ratio_extent",
]
