"""Every algorithm of the paper and every baseline, by name, and the one way to run them.

``ALGORITHMS`` maps a name to an :class:`Algorithm`, the one record of that algorithm from which
everything else is derived: its function, its label (the one its trajectories carry), its paper
citation (the one its docstring gives), its validator (the function's own), its true costs per
outer iteration and what it accepts. ``run(name, instance, rng=rng, **hyperparameters)`` runs it
and returns its :class:`~covpo.trajectory.Trajectory`. Hyperparameters are keyword-only and
spelled the same in every algorithm, after the paper's symbols: ``beta`` (KL strength), ``eta``
(learning rate), ``n_iterations`` (``T``), ``batch_size`` (``N``), ``inner_steps`` (``K``),
``group_size`` (``G``), ``extra_responses`` (``M``), ``clip_epsilon``, ``thresholds``, ``kl``,
``delta``. One module per algorithm; each is imported only when its algorithm is first run, so
importing this package loads numpy and scipy and nothing heavier. ``CONTRIBUTING.md`` says how
to add one.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from covpo.instances import BanditInstance
from covpo.trajectory import Trajectory
from covpo.validation import check_instance


@dataclass(frozen=True)
class IterationCosts:
    """What one outer iteration of an algorithm spends (paper section 1, "Implications": samples, steps, rounds).

    Attributes
    ----------
    responses
        Responses sampled (every response drawn, baselines' extra responses included).
    gradient_steps
        Parameter updates; an exact solve (an exact target, a natural-gradient step) counts as one.
    resets
        Reference resets (one for an instance of APMD, none for a fixed reference).
    generation_rounds
        Fresh batches drawn (one per iteration for a method that samples, however many steps reuse it).
    """

    responses: int
    gradient_steps: int
    resets: int
    generation_rounds: int


def _batch(h: Mapping) -> int:
    return int(h["batch_size"])


def _inner_steps(h: Mapping) -> int:
    return int(h["inner_steps"])


def _best_of_n_responses(h: Mapping, instance: BanditInstance | None) -> int:
    if instance is None:
        raise ValueError("instance is needed for the costs of 'best_of_n': its N depends on the base model's coverage")
    from covpo.algorithms.best_of_n import best_of_n_size

    return best_of_n_size(instance, h["delta"])


@dataclass(frozen=True)
class Algorithm:
    """One algorithm: the single record its function, label, citation, validator, costs and accepted inputs come from.

    Attributes
    ----------
    name
        The registry key, e.g. ``"ppo_noclip"``.
    label
        The name its trajectories carry (``Trajectory.algorithm``), e.g. ``"PPO-NoClip"``.
    module, function_name, validator_name
        ``covpo.algorithms.<module>.<function_name>`` runs it; ``<validator_name>`` in the same
        module checks its hyperparameters (the function calls it first, so there is one set of rules).
    paper
        Where the paper states it, exactly as the function's docstring cites it ("section 3.2, Algorithm 1").
    costs
        ``(hyperparameters, instance) -> IterationCosts``: what one outer iteration spends, at the
        hyperparameters the run takes (the name's ``fixed`` ones included). ``instance`` may be
        ``None`` for every algorithm whose costs do not depend on it.
    samples
        Whether it draws responses from ``rng`` (and so requires one).
    resets
        Whether it resets its KL reference to the latest iterate every outer iteration, as APMD does.
    accepts_policy
        Whether it takes ``policy=``, a :class:`~covpo.policy_classes.PolicyClass`.
    trains
        Whether it trains a policy; ``False`` for a test-time procedure (Best-of-N), whose
        responses are per test prompt.
    on_policy
        Whether its batches are drawn from the current iterate (``False``: from the base model).
    shift_invariant
        Whether adding one constant to every reward leaves its run unchanged (up to rounding):
        true of a centred advantage, a baseline, a pairwise loss and an exact target, which all
        see rewards through their differences; ``False`` for PPO-NoClip and PPO-Lite, whose
        importance-weighted rewards have no baseline (paper Algorithms 1 and 2).
    fixed
        Hyperparameters the name fixes, e.g. ``{"reference": "reset"}`` for ``"grpo_reset"``.
    """

    name: str
    label: str
    module: str
    function_name: str
    validator_name: str
    paper: str
    costs: Callable[[Mapping, BanditInstance | None], IterationCosts]
    samples: bool
    resets: bool
    accepts_policy: bool = False
    trains: bool = True
    on_policy: bool = True
    shift_invariant: bool = True
    fixed: Mapping[str, object] = field(default_factory=dict)

    @property
    def function(self) -> Callable[..., Trajectory]:
        """The algorithm's function, ``function(instance, **hyperparameters) -> Trajectory``."""
        return getattr(importlib.import_module(f"covpo.algorithms.{self.module}"), self.function_name)

    @property
    def validator(self) -> Callable[..., dict]:
        """The function's own validator, ``validator(**hyperparameters)``, which returns them checked or raises ``ValueError``."""
        return getattr(importlib.import_module(f"covpo.algorithms.{self.module}"), self.validator_name)

    def __call__(self, instance: BanditInstance, **hyperparameters: object) -> Trajectory:
        """Run the algorithm with the hyperparameters its name fixes plus ``hyperparameters``."""
        return self.function(instance, **self._with_fixed(hyperparameters))

    def _with_fixed(self, hyperparameters: Mapping[str, object]) -> dict[str, object]:
        if not isinstance(hyperparameters, Mapping):
            raise ValueError(f"hyperparameters must be a mapping of names to values, got {hyperparameters!r}")
        clashes = sorted(set(self.fixed) & set(hyperparameters))
        if clashes:
            raise ValueError(f"{clashes[0]} is fixed by the algorithm name {self.name!r}; do not pass it")
        return {**self.fixed, **hyperparameters}

    def check(self, hyperparameters: Mapping[str, object]) -> dict[str, object]:
        """``hyperparameters`` checked by the function's own validator without running it (``ValueError`` naming the first bad one).

        The function's defaults fill what is not given; a required hyperparameter that is
        missing is named. Settings that need an instance (``theta``, ``policy``, the default
        clip thresholds) are checked when the run starts.
        """
        arguments = inspect.signature(self.function).bind_partial(**self._with_fixed(hyperparameters))
        arguments.apply_defaults()
        wanted = inspect.signature(self.validator).parameters
        missing = [name for name in wanted if name not in arguments.arguments]
        if missing:
            raise ValueError(f"{missing[0]} is required by {self.name!r}, got hyperparameters {sorted(hyperparameters)}")
        return self.validator(**{name: arguments.arguments[name] for name in wanted})

    def iteration_costs(self, hyperparameters: Mapping[str, object], instance: BanditInstance | None = None) -> IterationCosts:
        """What one outer iteration spends at ``hyperparameters`` (the name's fixed ones added), by :attr:`costs`."""
        return self.costs(self._with_fixed(hyperparameters), instance)


def _algorithms(*algorithms: Algorithm) -> Mapping[str, Algorithm]:
    return MappingProxyType({algorithm.name: algorithm for algorithm in algorithms})


#: Every algorithm by name; :func:`run` runs any of them.
ALGORITHMS: Mapping[str, Algorithm] = _algorithms(
    Algorithm(
        "reinforce", "sampled REINFORCE", "reinforce", "reinforce", "check_reinforce", "section 2.1",
        lambda h, instance: IterationCosts(_batch(h), 1, 0, 1),
        samples=True, resets=False, accepts_policy=True,
    ),
    Algorithm(
        "reinforce_exact", "exact REINFORCE", "reinforce", "exact_reinforce", "check_exact_reinforce", "section 2.1",
        lambda h, instance: IterationCosts(0, 1, 0, 0),
        samples=False, resets=False, accepts_policy=True,
    ),
    Algorithm(
        "mirror_descent_exact", "exact mirror descent", "mirror_descent", "exact_mirror_descent",
        "check_exact_mirror_descent", "appendix B.3",
        lambda h, instance: IterationCosts(0, 1, 1, 0),
        samples=False, resets=True,
    ),
    Algorithm(
        "apmd_exact", "APMD (exact targets)", "mirror_descent", "apmd_exact", "check_apmd_exact",
        "section 3.1, appendix B.4.1",
        lambda h, instance: IterationCosts(0, 1, 1, 0),
        samples=False, resets=True,
    ),
    Algorithm(
        "apmd", "APMD", "mirror_descent", "apmd", "check_apmd", "section 3.1, appendix C.1",
        lambda h, instance: IterationCosts(0, _inner_steps(h), 1, 0),
        samples=False, resets=True, accepts_policy=True,
    ),
    Algorithm(
        "ppo_noclip", "PPO-NoClip", "ppo_noclip", "ppo_noclip", "check_ppo_noclip", "section 3.2, Algorithm 1",
        lambda h, instance: IterationCosts(_batch(h), _inner_steps(h), 1, 1),
        samples=True, resets=True, accepts_policy=True, shift_invariant=False,
    ),
    Algorithm(
        "ppo_lite", "PPO-Lite", "ppo_lite", "ppo_lite", "check_ppo_lite", "section 3.3, Algorithm 2",
        lambda h, instance: IterationCosts(_batch(h), _inner_steps(h), 1, 1),
        samples=True, resets=True, shift_invariant=False,
    ),
    Algorithm(
        "grpo_reset", "GRPO (reset reference)", "grpo", "grpo", "check_grpo", "appendix H.4",
        lambda h, instance: IterationCosts(_batch(h) * int(h["group_size"]), _inner_steps(h), 1, 1),
        samples=True, resets=True, fixed=MappingProxyType({"reference": "reset"}),
    ),
    Algorithm(
        "grpo_fixed", "GRPO (fixed reference)", "grpo", "grpo", "check_grpo", "appendix H.4",
        lambda h, instance: IterationCosts(_batch(h) * int(h["group_size"]), _inner_steps(h), 0, 1),
        samples=True, resets=False, fixed=MappingProxyType({"reference": "fixed"}),
    ),
    Algorithm(
        "kimipo", "KimiPO", "kimipo", "kimipo", "check_kimipo", "section 4.2, Algorithm 3",
        lambda h, instance: IterationCosts(_batch(h) * (1 + int(h.get("extra_responses", 1))), _inner_steps(h), 1, 1),
        samples=True, resets=True, fixed=MappingProxyType({"baseline": "mean"}),
    ),
    Algorithm(
        "kimipo_norm", "KimiPO-Norm", "kimipo", "kimipo", "check_kimipo", "section 4.2, Algorithm 4",
        lambda h, instance: IterationCosts(_batch(h) * (1 + int(h.get("extra_responses", 1))), _inner_steps(h), 1, 1),
        samples=True, resets=True, fixed=MappingProxyType({"baseline": "normalizer"}),
    ),
    Algorithm(
        "rebel_onpolicy", "Rebel-OnPolicy", "rebel", "rebel_onpolicy", "check_rebel_onpolicy", "section 4.3, Algorithm 5",
        lambda h, instance: IterationCosts(2 * _batch(h), _inner_steps(h), 1, 1),
        samples=True, resets=True,
    ),
    Algorithm(
        "npg", "NPG (sampled)", "npg", "npg", "check_npg", "appendix M",
        lambda h, instance: IterationCosts(_batch(h) * int(h.get("group_size", 2)), 1, 1, 1),
        samples=True, resets=True,
    ),
    Algorithm(
        "npg_exact", "NPG (exact)", "npg", "npg", "check_npg", "appendix M",
        lambda h, instance: IterationCosts(0, 1, 1, 0),
        samples=False, resets=True, fixed=MappingProxyType({"batch_size": None}),
    ),
    Algorithm(
        "best_of_n", "Best-of-N", "best_of_n", "best_of_n", "check_best_of_n", "section 1.3",
        lambda h, instance: IterationCosts(_best_of_n_responses(h, instance), 0, 0, 1),
        samples=False, resets=False, trains=False, on_policy=False,
    ),
    Algorithm(
        "filtered_sft", "SFT on filtered samples", "filtered_sft", "filtered_sft", "check_filtered_sft", "section 2.2",
        lambda h, instance: IterationCosts(_batch(h) * int(h["group_size"]), _inner_steps(h), 0, 1),
        samples=True, resets=False, on_policy=False,
    ),
)


def run(name: str, instance: BanditInstance, *, rng: np.random.Generator | None = None, **hyperparameters: object) -> Trajectory:
    """Run the algorithm registered as ``name`` on ``instance``; return its trajectory.

    Parameters
    ----------
    name
        A key of :data:`ALGORITHMS`.
    instance
        The bandit.
    rng
        The run's only source of randomness; required by algorithms that sample, and ignored
        (it must be ``None``) by those that do not.
    **hyperparameters
        Keyword-only, spelled as in :mod:`covpo.algorithms` (``beta``, ``eta``, ``n_iterations``, ...).

    Examples
    --------
    >>> import numpy as np, covpo
    >>> rng = np.random.default_rng(0)
    >>> instance = covpo.random_softmax_linear_instance(rng, 4, 6, 3)
    >>> run = covpo.run("ppo_noclip", instance, rng=np.random.default_rng(1), beta=1.0,
    ...                 eta=0.5, n_iterations=5, batch_size=32, inner_steps=4)
    >>> run.total_responses, run.total_gradient_steps, run.total_resets
    (160, 20, 5)
    """
    if not isinstance(name, str) or name not in ALGORITHMS:
        raise ValueError(f"name must be one of {tuple(ALGORITHMS)}, got {name!r}")
    algorithm = ALGORITHMS[name]
    check_instance("instance", instance, BanditInstance)
    if algorithm.samples:
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy Generator for {name!r}, which samples, got {rng!r}")
        return algorithm(instance, rng=rng, **hyperparameters)
    if rng is not None:
        raise ValueError(f"rng must be None for {name!r}, which samples nothing, got {rng!r}")
    return algorithm(instance, **hyperparameters)
