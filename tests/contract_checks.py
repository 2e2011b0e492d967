"""The registry's contract checks that look at an algorithm from outside, and the whole suite they complete.

``tests/registry_contract.py`` checks that each run agrees with itself (its gradient, its
objective, its reported batches). Two checks here compare it with what it should be:

- :func:`check_first_iterations`: the run's first outer iterations (two, where it has two) equal
  an independent computation from the paper's formulas (``tests/contract_references.py``), on the
  batch the run drew, recorded at the sampler; where a clip exists, it engages on the sides
  ``tests/contract_settings.py`` declares.
- :func:`check_sampling_law`: the draws the sampler records follow the policy the algorithm
  should sample from (``pi_t`` on-policy, ``pi_0`` otherwise), computed by the reference, at
  batches large enough for a chi-square test.

:data:`CHECKS` is the whole suite; :func:`failures` runs it, as ``tests/test_mutants.py`` does on
every mutant.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
from scipy.stats import chi2

from covpo.algorithms import Algorithm
from covpo.instances import BanditInstance
from tests import registry_contract
from tests.contract_references import log_pi, recorded_draws, reference, summaries
from tests.contract_settings import CLIP_ENGAGES, SETTINGS
from tests.registry_contract import run

REFERENCE_RTOL = 1e-8
"""Relative agreement of a run's iterates with the reference: both compute the same formulas in another order,
so they agree to about ``1e-14``; a wrong constant, power, sign or batch moves them by far more than ``1e-8``."""
REFERENCE_ATOL = 1e-10

LAW_DRAWS = 2500
"""Responses per outer iteration in :func:`check_sampling_law`: about 800 per prompt of the contract's instance."""
FALSE_ALARM = 1e-6
"""Probability that the chi-square test of :func:`check_sampling_law` rejects a correct sampler (one test per setting
of a sampling algorithm, 22 of them, so a correct registry fails with probability below ``3e-5`` for a fresh seed)."""
MIN_EXPECTED = 5.0
"""Cells expecting fewer draws are pooled per prompt, so the chi-square approximation holds."""


def _merged(hyperparameters: Mapping[str, object], algorithm: Algorithm) -> dict[str, object]:
    return {**algorithm.fixed, **hyperparameters}


def _drawn_run(algorithm: Algorithm, hyperparameters: Mapping[str, object], instance: BanditInstance):
    algorithm.function  # imports the algorithm's module, so that its sampler is wrapped
    with recorded_draws() as draws:
        trajectory = run(algorithm, hyperparameters, instance)
    return trajectory, draws


def _clip_case(algorithm: Algorithm, hyperparameters: Mapping[str, object]) -> frozenset[str]:
    """The clip sides the settings table declares for this setting (none for a setting it does not list)."""
    for index, chosen in enumerate(SETTINGS.get(algorithm.name, ())):
        if dict(chosen) == dict(hyperparameters):
            return CLIP_ENGAGES.get((algorithm.name, index), frozenset())
    return frozenset()


def check_first_iterations(algorithm, hyperparameters, instance):
    """The first outer iterations equal the paper's formulas computed independently on the run's own batches."""
    trajectory, draws = _drawn_run(algorithm, hyperparameters, instance)
    if algorithm.samples:
        assert len(draws) == trajectory.total_generation_rounds, (len(draws), trajectory.total_generation_rounds)
        assert sum(responses.size for _, responses in draws) == trajectory.total_responses
    else:
        assert draws == [], "an algorithm that samples nothing called the sampler"
    expected = reference(algorithm.name, _merged(hyperparameters, algorithm), instance, draws)
    for t, table in enumerate(expected.tables, start=1):
        for column, value in summaries(instance, table).items():
            np.testing.assert_allclose(
                getattr(trajectory, column)[t], value, rtol=REFERENCE_RTOL, atol=REFERENCE_ATOL,
                err_msg=f"{column} after outer iteration {t} is not the reference's",
            )
    if trajectory.thetas is not None and expected.thetas:
        for t, theta in enumerate(expected.thetas, start=1):
            np.testing.assert_allclose(trajectory.thetas[t], theta, rtol=REFERENCE_RTOL, atol=REFERENCE_ATOL,
                                       err_msg=f"theta_{t} is not the reference's")
    for name, value in expected.derived.items():
        np.testing.assert_allclose(trajectory.settings[name], value, rtol=REFERENCE_RTOL,
                                   err_msg=f"the run's {name} is not the reference's")
    declared = _clip_case(algorithm, hyperparameters)
    assert expected.clipped == declared, f"the clip engaged on {sorted(expected.clipped)}, declared {sorted(declared)}"


def _chi_square(observed: np.ndarray, expected: np.ndarray) -> tuple[float, int]:
    """Pearson's statistic and its degrees of freedom, cells expecting fewer than :data:`MIN_EXPECTED` pooled."""
    small = expected < MIN_EXPECTED
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    keep = expected > 0
    if np.any(observed[~keep] > 0):
        return math.inf, 1
    observed, expected = observed[keep], expected[keep]
    return float(np.sum((observed - expected) ** 2 / expected)), observed.size - 1


def law_setting(algorithm: Algorithm, hyperparameters: Mapping[str, object]) -> dict[str, object]:
    """``hyperparameters`` with about :data:`LAW_DRAWS` responses in each outer iteration."""
    per_prompt = algorithm.iteration_costs({**hyperparameters, "batch_size": 1}).responses
    return {**hyperparameters, "batch_size": math.ceil(LAW_DRAWS / per_prompt)}


def check_sampling_law(algorithm, hyperparameters, instance):
    """Every response the run draws follows ``pi_t`` (``pi_0`` off-policy), seen at the sampler, by a chi-square test.

    The expected policy of outer iteration 0 is ``pi_0``; that of iteration ``t`` is the reference's
    ``pi_t``, computed from the paper's formulas on the run's first ``t`` batches. Per iteration
    and prompt, the counts of the responses are compared with ``n_x pi_t(.|x)``, and the counts of
    the prompts with ``N rho`` (Pearson); given the past, each iteration's draws are independent
    multinomials, so the statistics summed over iterations and prompts are chi-square with the
    summed degrees of freedom under a correct sampler. One test per setting, rejecting at :data:`FALSE_ALARM`: summing lets a one-step
    method (REINFORCE), whose policy moves little per iteration, show a wrong policy over its run.
    """
    if not algorithm.samples:
        return
    chosen = law_setting(algorithm, hyperparameters)
    trajectory, draws = _drawn_run(algorithm, chosen, instance)
    iterations = int(chosen["n_iterations"])
    assert len(draws) == trajectory.total_generation_rounds == iterations, (
        len(draws), trajectory.total_generation_rounds
    )
    base = reference_base(instance)
    if algorithm.on_policy:
        later = reference(algorithm.name, _merged(chosen, algorithm), instance, draws, iterations - 1).tables
        expected_tables = [base, *later]
    else:
        expected_tables = [base] * iterations
    statistic, freedom = 0.0, 0
    for (prompts, responses), table in zip(draws, expected_tables, strict=True):
        counts = np.zeros(instance.rewards.shape)
        np.add.at(counts, (np.ravel(prompts), np.ravel(responses)), 1.0)
        for x in range(instance.n_prompts):
            part, df = _chi_square(counts[x], counts[x].sum() * np.exp(table[x]))
            statistic, freedom = statistic + part, freedom + df
        drawn = prompts if prompts.ndim == 1 else prompts[:, 0]  # a group repeats its prompt
        part, df = _chi_square(np.bincount(drawn, minlength=instance.n_prompts), drawn.size * instance.prompt_probs)
        statistic, freedom = statistic + part, freedom + df
    bound = chi2.isf(FALSE_ALARM, max(freedom, 1))
    assert statistic <= bound, (
        f"the draws do not follow {'pi_t' if algorithm.on_policy else 'pi_0'} over {iterations} iterations "
        f"(chi-square {statistic:.1f} on {freedom} degrees of freedom, bound {bound:.1f} at {FALSE_ALARM:g})"
    )


def reference_base(instance: BanditInstance) -> np.ndarray:
    """``log pi_0``, the test's own softmax of the base parameters."""
    return log_pi(instance, np.array(instance.base_theta, float))


#: The whole registry suite: the checks of ``tests/registry_contract.py`` and the two from outside.
CHECKS: tuple[Callable[[Algorithm, Mapping[str, object], BanditInstance], None], ...] = (
    *registry_contract.CHECKS,
    check_first_iterations,
    check_sampling_law,
)


def failures(algorithm: Algorithm, hyperparameters: Mapping[str, object], instance: BanditInstance) -> dict[str, str]:
    """The checks of :data:`CHECKS` that ``algorithm`` fails at ``hyperparameters``, each with its message."""
    found = {}
    for check in CHECKS:
        try:
            check(algorithm, hyperparameters, instance)
        except (AssertionError, ValueError, FloatingPointError, IndexError, KeyError) as error:
            found[check.__name__] = f"{type(error).__name__}: {error}"[:300]
    return found
