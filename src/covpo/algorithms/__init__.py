"""Every algorithm of the paper and every baseline, by name, and the one way to run them.

``ALGORITHMS`` maps a name to an :class:`Algorithm`; ``run(name, instance, rng=rng, **hyperparameters)``
runs it and returns its :class:`~covpo.trajectory.Trajectory`. Hyperparameters are keyword-only
and spelled the same in every algorithm, after the paper's symbols: ``beta`` (KL strength),
``eta`` (learning rate), ``n_iterations`` (``T``), ``batch_size`` (``N``), ``inner_steps``
(``K``), ``group_size`` (``G``), ``extra_responses`` (``M``), ``clip_epsilon``, ``thresholds``,
``kl``, ``delta``. One module per algorithm; each is imported only when its algorithm is first
run, so importing this package loads numpy and scipy and nothing heavier.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from covpo.instances import BanditInstance
from covpo.trajectory import Trajectory
from covpo.validation import (
    check_count,
    check_generator,
    check_instance,
    check_nonnegative,
    check_option,
    check_positive,
    check_probability,
)

#: Hyperparameters that are counts, each with its smallest value.
_COUNTS = {
    "n_iterations": 1, "batch_size": 1, "inner_steps": 1, "extra_responses": 1, "record_every": 1, "group_size": 2,
}
#: Hyperparameters that are one of a few strings, with the module constant that lists them.
_OPTIONS = {"kl": "KL_ESTIMATES", "baseline": "BASELINES"}


def _batch(h: Mapping) -> int:
    return int(h["batch_size"])


def _per_iteration(h: Mapping) -> int:
    return int(h.get("inner_steps", 1))


@dataclass(frozen=True)
class Algorithm:
    """One algorithm: where its function lives and what one outer iteration costs.

    Attributes
    ----------
    name
        The registry key, e.g. ``"ppo_noclip"``.
    label
        The name in tables and figures, e.g. ``"PPO-NoClip"``.
    module, function_name
        ``covpo.algorithms.<module>.<function_name>`` runs it.
    paper
        Where the paper states it.
    samples
        Whether it draws responses (and so needs ``rng``).
    resets
        Whether it resets its KL reference every outer iteration, as APMD does.
    fixed
        Hyperparameters the name fixes, e.g. ``{"reference": "reset"}`` for ``"grpo_reset"``.
    responses_per_iteration
        Responses one outer iteration samples, from the hyperparameters.
    steps_per_iteration
        Gradient steps one outer iteration takes, from the hyperparameters.
    """

    name: str
    label: str
    module: str
    function_name: str
    paper: str
    samples: bool
    resets: bool
    fixed: Mapping[str, object] = field(default_factory=dict)
    responses_per_iteration: Callable[[Mapping], int] = lambda h: 0
    steps_per_iteration: Callable[[Mapping], int] = _per_iteration
    minimum_group_size: int = 2
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def function(self) -> Callable[..., Trajectory]:
        """The algorithm's function, ``function(instance, **hyperparameters) -> Trajectory``."""
        return getattr(importlib.import_module(f"covpo.algorithms.{self.module}"), self.function_name)

    def __call__(self, instance: BanditInstance, **hyperparameters: object) -> Trajectory:
        """Run the algorithm with the hyperparameters its name fixes plus ``hyperparameters``."""
        clashes = sorted(set(self.fixed) & set(hyperparameters))
        if clashes:
            raise ValueError(f"{clashes[0]} is fixed by the algorithm name {self.name!r}; do not pass it")
        return self.function(instance, **self.fixed, **hyperparameters)

    def check_hyperparameters(self, hyperparameters: Mapping[str, object]) -> None:
        """Raise ``ValueError`` naming the first hyperparameter that this algorithm would reject, without running it.

        Checks what does not depend on an instance, with the rules the algorithm's function
        applies: counts, ``beta`` (``> 0`` for an instance of APMD, ``>= 0`` otherwise), ``eta``,
        ``delta``, clip widths and thresholds, and the string options. A name fixed by the
        registry entry may not be passed. Instance-dependent settings (``theta``, ``policy``)
        are checked when the run starts.
        """
        if not isinstance(hyperparameters, Mapping):
            raise ValueError(f"hyperparameters must be a mapping of names to values, got {hyperparameters!r}")
        for name, value in hyperparameters.items():
            if name in self.fixed:
                raise ValueError(f"{name} is fixed by the algorithm name {self.name!r}; do not pass it")
            if name in _COUNTS:
                if name == "batch_size" and value is None and self.name == "npg":
                    continue
                minimum = self.minimum_group_size if name == "group_size" else _COUNTS[name]
                check_count(name, value, minimum=minimum)
            elif name == "beta":
                (check_positive if self.resets else check_nonnegative)(name, value)
            elif name in ("eta", "std_eps") or (name == "clip_epsilon_high" and value is not None):
                check_positive(name, value)
            elif name in ("delta", "clip_epsilon"):
                check_probability(name, value)
            elif name == "thresholds" and value is not None:
                importlib.import_module("covpo.algorithms.ppo_lite").check_clip_thresholds(value)
            elif name in _OPTIONS:
                module = importlib.import_module(f"covpo.algorithms.{self.module}")
                check_option(name, value, getattr(module, self.options.get(name, _OPTIONS[name])))
            elif name == "rng":
                check_generator(name, value)
        merged = {**self.fixed, **hyperparameters}
        if merged.get("baseline", "leave_one_out") == "leave_one_out" and self.module == "reinforce":
            if "batch_size" in merged:
                check_count("batch_size", merged["batch_size"], minimum=2)


def _algorithms(*algorithms: Algorithm) -> Mapping[str, Algorithm]:
    return MappingProxyType({algorithm.name: algorithm for algorithm in algorithms})


#: Every algorithm by name; :func:`run` runs any of them.
ALGORITHMS: Mapping[str, Algorithm] = _algorithms(
    Algorithm(
        "reinforce", "REINFORCE", "reinforce", "reinforce", "section 2.1", samples=True, resets=False,
        responses_per_iteration=_batch, steps_per_iteration=lambda h: 1,
    ),
    Algorithm(
        "reinforce_exact", "REINFORCE (exact gradient)", "reinforce", "exact_reinforce", "section 2.1",
        samples=False, resets=False, steps_per_iteration=lambda h: 1,
    ),
    Algorithm(
        "mirror_descent_exact", "exact mirror descent", "mirror_descent", "exact_mirror_descent", "appendix B.3",
        samples=False, resets=True, steps_per_iteration=lambda h: 0,
    ),
    Algorithm(
        "apmd_exact", "APMD (exact targets)", "mirror_descent", "apmd_exact", "section 3.1, appendix B.4.1",
        samples=False, resets=True, steps_per_iteration=lambda h: 0,
    ),
    Algorithm(
        "apmd", "APMD", "mirror_descent", "apmd", "section 3.1, appendix C.1", samples=False, resets=True,
    ),
    Algorithm(
        "ppo_noclip", "PPO-NoClip", "ppo_noclip", "ppo_noclip", "Algorithm 1", samples=True, resets=True,
        responses_per_iteration=_batch,
    ),
    Algorithm(
        "ppo_lite", "PPO-Lite", "ppo_lite", "ppo_lite", "Algorithm 2", samples=True, resets=True,
        responses_per_iteration=_batch,
    ),
    Algorithm(
        "grpo_reset", "GRPO (reset)", "grpo", "grpo", "section 3.4", samples=True, resets=True,
        fixed=MappingProxyType({"reference": "reset"}), options=MappingProxyType({"kl": "KL_ESTIMATORS"}),
        responses_per_iteration=lambda h: _batch(h) * int(h["group_size"]),
    ),
    Algorithm(
        "grpo_fixed", "GRPO (fixed reference)", "grpo", "grpo", "section 3.4", samples=True, resets=False,
        fixed=MappingProxyType({"reference": "fixed"}), options=MappingProxyType({"kl": "KL_ESTIMATORS"}),
        responses_per_iteration=lambda h: _batch(h) * int(h["group_size"]),
    ),
    Algorithm(
        "kimipo", "KimiPO", "kimipo", "kimipo", "section 4.1", samples=True, resets=True,
        responses_per_iteration=lambda h: _batch(h) * (1 + int(h.get("extra_responses", 1))),
    ),
    Algorithm(
        "kimipo_norm", "KimiPO-Norm", "kimipo_norm", "kimipo_norm", "section 4.1", samples=True, resets=True,
        responses_per_iteration=lambda h: _batch(h) * (1 + int(h["extra_responses"])),
    ),
    Algorithm(
        "rebel_onpolicy", "Rebel-OnPolicy", "rebel", "rebel_onpolicy", "section 4.2", samples=True, resets=True,
        responses_per_iteration=lambda h: 2 * _batch(h),
    ),
    Algorithm(
        "npg", "NPG", "npg", "npg", "appendix F.1", samples=True, resets=True,
        responses_per_iteration=lambda h: 0 if h.get("batch_size") is None else _batch(h) * int(h.get("group_size", 2)),
        steps_per_iteration=lambda h: 1,
    ),
    Algorithm(
        "npg_exact", "NPG (exact)", "npg", "npg", "appendix F.1", samples=False, resets=True,
        fixed=MappingProxyType({"batch_size": None}), steps_per_iteration=lambda h: 1,
    ),
    Algorithm(
        "best_of_n", "Best-of-N", "best_of_n", "best_of_n", "section 1.3", samples=False, resets=False,
        steps_per_iteration=lambda h: 0,
    ),
    Algorithm(
        "filtered_sft", "SFT on filtered samples", "filtered_sft", "filtered_sft", "section 1.3", samples=True,
        resets=False, responses_per_iteration=lambda h: _batch(h) * int(h["group_size"]), minimum_group_size=1,
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
