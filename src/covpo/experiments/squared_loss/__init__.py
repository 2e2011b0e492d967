"""The measurements of chapter 5: baselines, curvature and the paper's Table 1 (paper section 4, appendices I to K).

Everything here is built on :mod:`covpo.experiments.population` (the exact population losses,
Hessians and baseline moments) and the three sampled algorithms, :mod:`covpo.algorithms.kimipo`
and :mod:`covpo.algorithms.rebel`; one module per topic, all re-exported here:

- :mod:`~covpo.experiments.squared_loss.baselines`, :func:`~covpo.experiments.squared_loss.baselines.baseline_bias_sweep`: how far each baseline's expectation sits from the normalizer
  ``b_t`` (the mean baseline against ``beta``, the normalizer baseline against ``G``), and
  the error that bias leaves in one exactly solved APMD step.
- :mod:`~covpo.experiments.squared_loss.curvature`, :func:`~covpo.experiments.squared_loss.curvature.curvature_scan` and :func:`~covpo.experiments.squared_loss.curvature.loss_slice`: the smallest Hessian eigenvalue of each
  population loss over a ball around ``theta_t``, and the losses along a line.
- :mod:`~covpo.experiments.squared_loss.table_1`, :func:`~covpo.experiments.squared_loss.table_1.table_1`: the paper's Table 1 measured, the cheapest setting of KimiPO and
  KimiPO-Norm for each accuracy ``eps``, with fitted scalings in ``1 / eps``, and
  :func:`~covpo.experiments.squared_loss.table_1.table_1_seeds` the same over seeds.
- :mod:`~covpo.experiments.squared_loss.mse`, :func:`~covpo.experiments.squared_loss.mse.mse_path` and :func:`~covpo.experiments.squared_loss.mse.rebel_objective_check`: the mean-squared-error criterion of the
  paper's section 4.1 along a run (each step's MSE against the exact mirror-descent step, its KL,
  the method's own objective and the coverage bound it implies), and Rebel-OnPolicy's objective
  on fresh batches against that MSE (appendix L). :func:`~covpo.experiments.squared_loss.batch_size.batch_size_study`
  (:mod:`~covpo.experiments.squared_loss.batch_size`) measures every run it makes this way.
"""

from covpo.experiments.squared_loss.baselines import (
    BaselineBiasSweep,
    baseline_bias_sweep,
)
from covpo.experiments.squared_loss.batch_size import (
    BatchSizeStudy,
    batch_size_study,
    squared_loss_methods,
)
from covpo.experiments.squared_loss.curvature import (
    LOSSES,
    NEGATIVE_CURVATURE_TOLERANCE,
    CurvatureScan,
    LossSlice,
    curvature_scan,
    curvature_table,
    loss_slice,
    population_baselines,
    two_response_instance,
)
from covpo.experiments.squared_loss.mse import (
    SQUARED_LOSS_ALGORITHMS,
    MSEPath,
    RebelObjectiveCheck,
    mse_path,
    rebel_objective_check,
)
from covpo.experiments.squared_loss.table_1 import (
    MAX_COVERAGE_LOSS,
    TABLE_1_METHODS,
    SeededTable1,
    Table1,
    table_1,
    table_1_seeds,
)

__all__ = [
    "BaselineBiasSweep",
    "BatchSizeStudy",
    "CurvatureScan",
    "LOSSES",
    "LossSlice",
    "MAX_COVERAGE_LOSS",
    "MSEPath",
    "NEGATIVE_CURVATURE_TOLERANCE",
    "RebelObjectiveCheck",
    "SQUARED_LOSS_ALGORITHMS",
    "SeededTable1",
    "TABLE_1_METHODS",
    "Table1",
    "baseline_bias_sweep",
    "batch_size_study",
    "curvature_scan",
    "curvature_table",
    "loss_slice",
    "mse_path",
    "population_baselines",
    "rebel_objective_check",
    "squared_loss_methods",
    "table_1",
    "table_1_seeds",
    "two_response_instance",
]
