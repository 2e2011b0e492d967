"""covpo: coverage-preserving policy optimization.

The executable companion to Huang, Jiang, Kakade, Malladi, Krishnamurthy and Foster (2026),
*A Theory of Policy Optimization in Post-Training: Coverage Collapse and Reference Resets*.
The data flow follows the module list: instances -> policies -> objectives -> algorithms ->
trajectory -> figures and widgets (``covpo.plots``, ``covpo.widgets``, kept at the edge).
"""

from covpo.instances import BanditInstance, random_softmax_linear_instance, tabular_instance
from covpo.trajectory import Trajectory, TrajectoryRecorder

__all__ = [
    "BanditInstance",
    "Trajectory",
    "TrajectoryRecorder",
    "random_softmax_linear_instance",
    "tabular_instance",
]
