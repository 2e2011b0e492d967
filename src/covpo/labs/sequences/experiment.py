"""The token-sequence experiment a chapter calls in one line, and the package's algorithms on token logits.

:func:`run_on_sequences` runs the package's own REINFORCE (exact and sampled) and APMD on the
token logits of a :class:`~covpo.labs.sequences.instance.SequenceInstance`;
:func:`sequence_experiment` measures collapse, resets and importance ratios with them and with
:func:`~covpo.labs.sequences.ppo.sampled_sequence_ppo`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covpo import algorithms
from covpo.table import Table
from covpo.trajectory import Trajectory
from covpo.validation import check_count, check_nonnegative, check_positive, check_positive_grid, check_probability

from .instance import SequenceInstance, _check_instance, sequence_collapse_instance
from .policy import TokenPolicy, bandit_view
from .ppo import SequencePPORun, sampled_sequence_ppo


# ---------------------------------------------------------------------------------------
# The package's algorithms on token logits


def run_on_sequences(
    name: str, instance: SequenceInstance, *, rng: np.random.Generator | None = None, **hyperparameters: object
) -> Trajectory:
    """Run the package's algorithm ``name`` (:func:`covpo.run`) on the token logits of a sequence instance.

    The algorithm sees :func:`~covpo.labs.sequences.policy.bandit_view` of ``instance`` and differentiates
    :class:`~covpo.labs.sequences.policy.TokenPolicy`; every iterate is evaluated exactly over all
    ``V**L`` sequences, its KL measured to the sequence base model. For example
    ``run_on_sequences("apmd", instance, beta=0.5, eta=4.0, n_iterations=40, inner_steps=8)`` is
    exact APMD with resets on the token logits (paper section 3.1): the target
    ``pi_t exp(r / beta) / Z`` is in the tabular autoregressive class, so enough inner steps reach it.

    Parameters
    ----------
    name
        A key of :data:`covpo.ALGORITHMS` whose function takes ``policy`` (``"reinforce_exact"``,
        ``"reinforce"``, ``"apmd"``, ...).
    instance
        The :class:`~covpo.labs.sequences.instance.SequenceInstance`.
    rng
        The generator of an algorithm that samples; ``None`` for an exact one.
    **hyperparameters
        Keyword-only, as :func:`covpo.run` takes them.
    """
    instance = _check_instance(instance)
    return algorithms.run(name, bandit_view(instance), rng=rng, policy=TokenPolicy(instance), **hyperparameters)


# ---------------------------------------------------------------------------------------
# The experiment a chapter calls in one line

DEFAULT_GAP = 0.1
DEFAULT_ETA = 4.0
DEFAULT_BETA = 0.5
DEFAULT_INNER_STEPS = 8
DEFAULT_REINFORCE_STEPS = 10_000
DEFAULT_APMD_ITERATIONS = 40
DEFAULT_SAMPLED_REINFORCE_STEPS = 3_000
DEFAULT_SAMPLED_REINFORCE_BATCH = 64
DEFAULT_BATCH_SIZE = 8
DEFAULT_GROUP_SIZE = 4
DEFAULT_CLIP_EPS = 0.2
DEFAULT_RATIO_LENGTHS = (2, 4, 6)
PPO_FLAVOURS = (("sequence", None), ("token", None), ("token", DEFAULT_CLIP_EPS))
"""The sampled reset methods compared, as ``(ratio, clip_epsilon)`` pairs."""


@dataclass(frozen=True, eq=False)
class SequenceExperiment:
    """Collapse, resets and importance ratios on token-sequence responses, with the settings that produced them.

    Attributes
    ----------
    gap, eps, vocab_size, length
        The instance family (:func:`~covpo.labs.sequences.instance.sequence_collapse_instance`) and the accuracy target.
    eta, beta, inner_steps
        The learning rate of every method, and APMD's strength and gradient steps per reset.
    seed
        Seed of every sampled run.
    shared_prefixes
        Shared prefix lengths of the exact comparison, ``(0, L - 1)``.
    reinforce, apmd
        Exact REINFORCE and exact APMD (every step recorded), one run per shared prefix length.
    sampled
        Sampled REINFORCE, then the sampled reset methods of :data:`PPO_FLAVOURS`, at shared prefix 0.
    ratio_lengths
        Sequence lengths ``L`` of the ratio measurement (shared prefix 0, same ``V``).
    ratio_names
        The sampled reset method of each row of the ratio arrays.
    max_abs_log_sequence_ratio, max_abs_log_token_ratio
        Per outer iteration, the largest ``|log w|`` and ``|log rho_t|`` over the batch and the
        inner loop, shape ``(n_methods, n_lengths, n_iterations)``.
    ratio_min_log10_coverage, ratio_steps_to_eps
        Lowest base-10 log coverage and gradient steps to eps (``-1`` if not reached) of those
        runs, shape ``(n_methods, n_lengths)``.
    """

    gap: float
    eps: float
    vocab_size: int
    length: int
    eta: float
    beta: float
    inner_steps: int
    seed: int
    shared_prefixes: np.ndarray
    reinforce: tuple[Trajectory, ...]
    apmd: tuple[Trajectory, ...]
    sampled: tuple[Trajectory, ...]
    ratio_lengths: np.ndarray
    ratio_names: tuple[str, ...]
    max_abs_log_sequence_ratio: np.ndarray
    max_abs_log_token_ratio: np.ndarray
    ratio_min_log10_coverage: np.ndarray
    ratio_steps_to_eps: np.ndarray

    def _steps(self, runs: tuple[Trajectory, ...]) -> np.ndarray:
        return np.array([_steps_or_missing(run, self.eps) for run in runs])

    @property
    def reinforce_steps_to_eps(self) -> np.ndarray:
        """Exact REINFORCE's gradient steps to eps per shared prefix length, ``-1`` where not reached."""
        return self._steps(self.reinforce)

    @property
    def apmd_steps_to_eps(self) -> np.ndarray:
        """Exact APMD's gradient steps to eps per shared prefix length, ``-1`` where not reached."""
        return self._steps(self.apmd)

    @property
    def sampled_steps_to_eps(self) -> np.ndarray:
        """Gradient steps to eps of each sampled run, ``-1`` where not reached."""
        return self._steps(self.sampled)

    def table(self) -> Table:
        """The runs at length ``L``: exact REINFORCE and APMD per shared prefix, then the sampled runs.

        ``str(table)`` gives it as aligned text; :meth:`ratio_table` has the ratios against ``L``.
        """
        rows = []
        for index, shared in enumerate(self.shared_prefixes):
            for run in (self.reinforce[index], self.apmd[index]):
                steps = _steps_or_missing(run, self.eps)
                rows.append((run.algorithm, int(shared), float(run.min_log10_coverage),
                             None if steps < 0 else int(steps), int(run.total_gradient_steps), "exact"))
        for run, steps in zip(self.sampled, self.sampled_steps_to_eps):
            responses = _responses_or_missing(run, self.eps)
            rows.append((run.algorithm, 0, float(run.min_log10_coverage), None if steps < 0 else int(steps),
                         int(run.total_gradient_steps), None if responses < 0 else int(responses)))
        return Table(
            ("run", "shared prefix (tokens)", r"lowest $\log_{10}$ coverage", "steps to ε", "steps run",
             "responses to ε"),
            tuple(rows),
            caption=(
                f"Token sequences: V = {self.vocab_size}, $H$ = {self.length}, gap {self.gap:g}, ε = {self.eps:g}, "
                f"η = {self.eta:g}; APMD with β = {self.beta:g}, K = {self.inner_steps}; seed {self.seed}"
            ),
            notes=("'-': ε not reached within the run. 'exact': the run samples nothing. Coverage is the "
                   "optimal sequence's probability.",),
        )

    def ratio_table(self) -> Table:
        """Per sampled reset method and length ``L``: the largest ratios, the lowest coverage, steps to eps."""
        rows = tuple(
            (name, int(length), float(self.max_abs_log_sequence_ratio[m, n].max()),
             float(self.max_abs_log_token_ratio[m, n].max()), float(self.ratio_min_log10_coverage[m, n]),
             None if self.ratio_steps_to_eps[m, n] < 0 else int(self.ratio_steps_to_eps[m, n]))
            for m, name in enumerate(self.ratio_names)
            for n, length in enumerate(self.ratio_lengths)
        )
        return Table(
            ("method", "$H$", r"largest $\lvert\log w\rvert$ (sequence)", r"largest $\lvert\log w_h\rvert$ (token)", r"lowest $\log_{10}$ coverage",
             "steps to ε"),
            rows,
            caption=f"Sampled reset methods against the sequence length $H$ (seed {self.seed})",
            notes=(f"$w$: a sequence's ratio to the reference, $w_h$: a token's; largest over the batches and inner "
                   f"steps of the run. The target's bound on $\\lvert\\log w\\rvert$ is $R/\\beta = {1.0 / self.beta:g}$. "
                   "'-': ε not reached.",),
        )

    def summary(self) -> str:
        """A plain-text table of every measurement."""
        lines = [
            (
                f"V={self.vocab_size}, L={self.length}, gap={self.gap:g}, eps={self.eps:g}, eta={self.eta:g}, "
                f"APMD beta={self.beta:g} with K={self.inner_steps}, seed={self.seed}"
            ),
            "exact methods: shared prefix | min log10 coverage | steps to eps (-1: not reached)",
        ]
        for index, shared in enumerate(self.shared_prefixes):
            for run in (self.reinforce[index], self.apmd[index]):
                steps = _steps_or_missing(run, self.eps)
                lines.append(
                    f"  {run.algorithm:<32} {shared:>2} | {run.min_log10_coverage:8.2f} | "
                    f"{steps:>6} of {run.total_gradient_steps}"
                )
        lines.append("sampled methods, shared prefix 0: min log10 coverage | steps to eps | responses")
        for run, steps in zip(self.sampled, self.sampled_steps_to_eps):
            responses = _responses_or_missing(run, self.eps)
            lines.append(f"  {run.algorithm:<40} | {run.min_log10_coverage:6.2f} | {steps:>6} | {responses:>6}")
        lines.append(
            "ratios per method and L: max |log w| (sequence), max |log rho_t| (token), min log10 coverage, steps to eps"
        )
        for m, name in enumerate(self.ratio_names):
            for n, length in enumerate(self.ratio_lengths):
                lines.append(
                    f"  {name:<40} L={length} | {self.max_abs_log_sequence_ratio[m, n].max():5.2f} | "
                    f"{self.max_abs_log_token_ratio[m, n].max():5.2f} | {self.ratio_min_log10_coverage[m, n]:6.2f} | "
                    f"{self.ratio_steps_to_eps[m, n]:>5}"
                )
        return "\n".join(lines)


def _steps_or_missing(run: Trajectory, eps: float) -> int:
    steps = run.steps_to_eps(eps)
    return -1 if steps is None else steps


def _responses_or_missing(run: Trajectory, eps: float) -> int:
    responses = run.responses_to_eps(eps)
    return -1 if responses is None else responses


def sequence_experiment(
    gap: float = DEFAULT_GAP,
    vocab_size: int = 4,
    length: int = 4,
    eps: float | None = None,
    eta: float = DEFAULT_ETA,
    beta: float = DEFAULT_BETA,
    inner_steps: int = DEFAULT_INNER_STEPS,
    reinforce_steps: int = DEFAULT_REINFORCE_STEPS,
    apmd_iterations: int = DEFAULT_APMD_ITERATIONS,
    ratio_lengths: tuple[int, ...] = DEFAULT_RATIO_LENGTHS,
    seed: int = 0,
) -> SequenceExperiment:
    """Run every measurement of the token-sequence laboratory (a few seconds with the defaults).

    1. Exact REINFORCE (no KL) and exact APMD, the package's through :func:`run_on_sequences`,
       on :func:`~covpo.labs.sequences.instance.sequence_collapse_instance` with the optimal sequence and the distractor
       separated at the first token (shared prefix 0) and at the last (shared prefix ``L - 1``).
    2. At shared prefix 0: sampled REINFORCE (batch 64) and the sampled reset method in the
       flavours of :data:`PPO_FLAVOURS` (batch 8 prompts x 4 sequences, ``apmd_iterations``
       resets of ``inner_steps`` steps).
    3. The same sampled reset methods at each length in ``ratio_lengths``, recording how far
       the sequence and token ratios travel per outer iteration.

    ``eps`` defaults to ``gap / 2``. Every sampled run uses ``np.random.default_rng(seed)``.
    """
    gap = check_probability("gap", gap)
    vocab_size = check_count("vocab_size", vocab_size, minimum=2)
    length = check_count("length", length)
    eps = gap / 2 if eps is None else check_nonnegative("eps", eps)
    eta, beta = check_positive("eta", eta), check_positive("beta", beta)
    inner_steps = check_count("inner_steps", inner_steps)
    reinforce_steps = check_count("reinforce_steps", reinforce_steps)
    apmd_iterations = check_count("apmd_iterations", apmd_iterations)
    ratio_lengths = check_positive_grid("ratio_lengths", ratio_lengths, integers=True).tolist()
    seed = check_count("seed", seed, minimum=0)
    shared_prefixes = np.array([0, length - 1])
    instances = [sequence_collapse_instance(gap, vocab_size, length, shared_prefix=int(k)) for k in shared_prefixes]
    reinforce = tuple(
        run_on_sequences("reinforce_exact", instance, eta=eta, n_iterations=reinforce_steps, record_every=10)
        for instance in instances
    )
    apmd = tuple(
        run_on_sequences(
            "apmd", instance, beta=beta, eta=eta, n_iterations=apmd_iterations, inner_steps=inner_steps,
            record_each_step=True,
        )
        for instance in instances
    )
    sampled = (
        run_on_sequences(
            "reinforce", instances[0], rng=np.random.default_rng(seed), eta=eta,
            n_iterations=DEFAULT_SAMPLED_REINFORCE_STEPS, batch_size=DEFAULT_SAMPLED_REINFORCE_BATCH, record_every=10,
        ),
        *(run.trajectory for run in _ppo_runs(instances[0], beta, eta, inner_steps, apmd_iterations, seed)),
    )
    ratio_runs = [
        _ppo_runs(
            sequence_collapse_instance(gap, vocab_size, int(ratio_length)),
            beta,
            eta,
            inner_steps,
            apmd_iterations,
            seed,
        )
        for ratio_length in ratio_lengths
    ]
    by_method = list(zip(*ratio_runs))
    return SequenceExperiment(
        gap=gap,
        eps=eps,
        vocab_size=vocab_size,
        length=length,
        eta=eta,
        beta=beta,
        inner_steps=inner_steps,
        seed=seed,
        shared_prefixes=shared_prefixes,
        reinforce=reinforce,
        apmd=apmd,
        sampled=sampled,
        ratio_lengths=np.array(ratio_lengths),
        ratio_names=tuple(runs[0].trajectory.algorithm for runs in by_method),
        max_abs_log_sequence_ratio=np.array(
            [[run.ratios.max_abs_log_sequence_ratio for run in runs] for runs in by_method]
        ),
        max_abs_log_token_ratio=np.array([[run.ratios.max_abs_log_token_ratio for run in runs] for runs in by_method]),
        ratio_min_log10_coverage=np.array([[run.trajectory.min_log10_coverage for run in runs] for runs in by_method]),
        ratio_steps_to_eps=np.array([[_steps_or_missing(run.trajectory, eps) for run in runs] for runs in by_method]),
    )


def _ppo_runs(
    instance: SequenceInstance, beta: float, eta: float, inner_steps: int, n_iterations: int, seed: int
) -> tuple[SequencePPORun, ...]:
    """The sampled reset method in every flavour of :data:`PPO_FLAVOURS`, each from ``default_rng(seed)``."""
    return tuple(
        sampled_sequence_ppo(
            instance,
            beta=beta,
            eta=eta,
            inner_steps=inner_steps,
            n_iterations=n_iterations,
            batch_size=DEFAULT_BATCH_SIZE,
            rng=np.random.default_rng(seed),
            group_size=DEFAULT_GROUP_SIZE,
            ratio=ratio,
            clip_epsilon=clip_epsilon,
        )
        for ratio, clip_epsilon in PPO_FLAVOURS
    )
