"""The coverage-collapse construction of the paper's section 2.1 and appendix C (SPEC section 5).

One prompt, an optimal response (reward 1), a distractor (reward ``1 - gap``) and ``n_zero``
exchangeable zero-reward responses; exact-gradient REINFORCE on it makes coverage collapse
while reward rises. The subpackage follows the data flow of the book, one job per module:

- :mod:`covpo.collapse.instance`: the instance, its closed forms and the ``(u, v)`` plane;
- :mod:`covpo.collapse.engine`: the compiled exact-gradient REINFORCE engine;
- :mod:`covpo.collapse.sweeps`: the sweeps chapter 2 reports;
- :mod:`covpo.collapse.landscape`: the objective over the plane and the path on the simplex;
- :mod:`covpo.collapse.sampled`: stochastic REINFORCE on the same instance;
- :mod:`covpo.collapse.resets`: exact-gradient APMD (reference resets) in the same engine;
- :mod:`covpo.collapse.reset_sweeps`: the sweeps of APMD (learning rate, inner steps, knob);
- :mod:`covpo.collapse.paper_figures`: the data of the paper's Figures 1, 2a and 3.

Every public name is re-exported here, so ``from covpo.collapse import exact_collapse_run``
works whichever module holds it.
"""

from .engine import (
    CHUNK_STEPS,
    DEFAULT_ETA,
    DEFAULT_MAX_STEPS,
    DEFAULT_N_RECORDS,
    PROGRESS_DELAY_SECONDS,
    PROGRESS_MIN_STEPS,
    CollapseRun,
    ExactRunsSummary,
    exact_collapse_run,
    exact_reinforce_many,
    run_exact_reinforce,
)
from .instance import (
    BETA_SEARCH_BOUNDS,
    DEFAULT_DISTRACTOR_PROB,
    DEFAULT_EPS_FRACTION,
    DEFAULT_MARGIN,
    DEFAULT_N_ZERO,
    DEFAULT_OPTIMAL_PROB,
    DISTRACTOR,
    OPTIMAL,
    ZERO,
    CollapseInstance,
    class_log_probs,
    collapse_instance,
    logits_from_plane,
    plane_coordinates,
    regularized_optimum_suboptimality,
    strongest_eps_optimal_beta,
)
from .landscape import Landscape, SimplexPath, landscape_grid, simplex_path
from .paper_figures import (
    FIGURE_GAP,
    FIGURE_MAX_STEPS,
    Figure1Data,
    Figure2aData,
    Figure3Data,
    figure_1_data,
    figure_2a_data,
    figure_3_data,
)
from .reset_sweeps import (
    APMD_KNOB_GAPS,
    DEFAULT_COVERAGE_FRACTION,
    ETA_GRID,
    INNER_STEPS_GRID,
    APMDKnobSweep,
    APMDLearningRateSweep,
    InnerStepsSweep,
    PowerFit,
    apmd_learning_rate_sweep,
    apmd_steps_along_knob,
    fit_power,
    inner_steps_sweep,
)
from .resets import (
    DEFAULT_APMD_BETA,
    DEFAULT_INNER_STEPS,
    exact_apmd_many,
    exact_apmd_run,
    mirror_descent_resets_to_eps,
)
from .sampled import SeedSweep, sampled_collapse_run, sampled_reinforce_over_seeds
from .sweeps import (
    DEFAULT_DELTA,
    ESCAPE_MAP_BETAS,
    ESCAPE_MAP_GAPS,
    ESCAPE_OUTCOMES,
    REGULARIZED_GAPS,
    UNREGULARIZED_GAPS,
    BetaEscapeMap,
    BetaSweep,
    ExponentialFit,
    LearningRateSweep,
    StepsToEpsSweep,
    beta_escape_map,
    beta_sweep,
    fit_exponential,
    learning_rate_sweep,
    steps_to_eps_sweep,
)

__all__ = [
    "APMD_KNOB_GAPS",
    "BETA_SEARCH_BOUNDS",
    "CHUNK_STEPS",
    "DEFAULT_APMD_BETA",
    "DEFAULT_COVERAGE_FRACTION",
    "DEFAULT_DELTA",
    "DEFAULT_DISTRACTOR_PROB",
    "DEFAULT_EPS_FRACTION",
    "DEFAULT_ETA",
    "DEFAULT_INNER_STEPS",
    "DEFAULT_MARGIN",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_N_RECORDS",
    "DEFAULT_N_ZERO",
    "DEFAULT_OPTIMAL_PROB",
    "DISTRACTOR",
    "ESCAPE_MAP_BETAS",
    "ESCAPE_MAP_GAPS",
    "ESCAPE_OUTCOMES",
    "ETA_GRID",
    "FIGURE_GAP",
    "FIGURE_MAX_STEPS",
    "INNER_STEPS_GRID",
    "OPTIMAL",
    "PROGRESS_DELAY_SECONDS",
    "PROGRESS_MIN_STEPS",
    "REGULARIZED_GAPS",
    "UNREGULARIZED_GAPS",
    "ZERO",
    "APMDKnobSweep",
    "APMDLearningRateSweep",
    "BetaEscapeMap",
    "BetaSweep",
    "CollapseInstance",
    "CollapseRun",
    "ExactRunsSummary",
    "ExponentialFit",
    "Figure1Data",
    "Figure2aData",
    "Figure3Data",
    "InnerStepsSweep",
    "Landscape",
    "LearningRateSweep",
    "PowerFit",
    "SeedSweep",
    "SimplexPath",
    "StepsToEpsSweep",
    "apmd_learning_rate_sweep",
    "apmd_steps_along_knob",
    "beta_escape_map",
    "beta_sweep",
    "class_log_probs",
    "collapse_instance",
    "exact_apmd_many",
    "exact_apmd_run",
    "exact_collapse_run",
    "exact_reinforce_many",
    "figure_1_data",
    "figure_2a_data",
    "figure_3_data",
    "fit_exponential",
    "fit_power",
    "inner_steps_sweep",
    "landscape_grid",
    "learning_rate_sweep",
    "logits_from_plane",
    "mirror_descent_resets_to_eps",
    "plane_coordinates",
    "regularized_optimum_suboptimality",
    "run_exact_reinforce",
    "sampled_collapse_run",
    "sampled_reinforce_over_seeds",
    "simplex_path",
    "steps_to_eps_sweep",
    "strongest_eps_optimal_beta",
]
