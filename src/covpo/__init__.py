"""covpo: coverage-preserving policy optimization.

The executable companion to Huang, Jiang, Kakade, Malladi, Krishnamurthy and Foster (2026),
*A Theory of Policy Optimization in Post-Training: Coverage Collapse and Reference Resets*.
The package is layered and imports only go downward: the core (instances, policies,
objectives, batches, trajectory, validation), then :mod:`covpo.algorithms` (one module per
algorithm, reached through :data:`ALGORITHMS` and :func:`run`), then :mod:`covpo.experiments`
(one per chapter) and :mod:`covpo.labs` (sequence and network policies), and at the edge the
figures and widgets (:mod:`covpo.plots`).
"""

from covpo.algorithms import ALGORITHMS, Algorithm, run
from covpo.instances import BanditInstance, random_softmax_linear_instance, tabular_instance
from covpo.trajectory import Trajectory, TrajectoryRecorder

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "BanditInstance",
    "Trajectory",
    "TrajectoryRecorder",
    "random_softmax_linear_instance",
    "run",
    "tabular_instance",
]
