"""Per-prompt coverage measures over a completion log (paper sections 1.3 and 5: coverage collapse in GRPO).

The paper's coverage of a prompt is the probability its policy gives the optimal answer; the log
shows, at each visit of a prompt, ``G`` sampled completions and how many succeeded, so a visit's
solve rate estimates that coverage (a binomial proportion with its Wilson interval). Everything
here is computed from the visits table (:func:`visits`: one row per prompt and step) with numpy,
never a loop over completions:

* the steps are cut into ``windows`` consecutive windows of (nearly) equal numbers of logged
  steps (:func:`step_windows`); the first is the **early window**;
* **difficulty groups** (:func:`difficulty_groups`): a prompt's early rate is its pooled solve rate
  over its visits in the early window; it is *unsolved* at 0, *hard* below
  :data:`HARD_BELOW`, *easy* from :data:`EASY_FROM`, *medium* between; a prompt not visited early
  has no group;
* **coverage-loss events** (:func:`coverage_loss`): a prompt solved early (early rate ``p > 0``)
  whose visits after the early window end in at least ``zero_visits`` visits with no success at
  all, ``n`` completions in that trailing run; the probability of ``n`` failures by chance at the
  early rate is ``(1 - p)^n``, and the event is flagged when it is below ``alpha``. It is flagged
  at the first visit of the run where both hold, and dates from the run's first visit. The early
  rate of a prompt selected for an early success is biased upward for rarely solved prompts, so
  this chance probability is optimistic for them; ``early_rate="wilson_lower"`` assumes the lower
  end of the early rate's Wilson interval instead (on a steady simulated policy, 400 prompts of
  rates drawn from Beta(0.3, 1.5), seeds 0-4, it cut the false flags from 3 to 8 of 245 to 259
  judged prompts per seed to 0 or 1; ``tests/test_diagnose.py`` keeps that comparison);
* the **signature** (:func:`signature`): the change of the mean reward, and the paired change of
  the hard prompts' solve rate, from the second window to the last. The second window, not the
  first, is the baseline: the hard prompts were chosen by their first-window rate, and a rate
  measured on the samples that chose them regresses toward the mean;
* **sparse revisits** (:func:`bin_comparison`): prompts binned by their first visit's solve rate,
  each bin's first-visit rate against the same prompts' later visits, and, for prompts that never
  recur, the first-visit rates of the prompts first seen in each window;
* **pass@k** (:func:`pass_at_k`, the unbiased estimator of Chen et al. 2021 for ``k <= G``) and
  beyond ``G`` by a **beta-binomial fit** (:func:`beta_binomial_fit`, :func:`beta_binomial_pass_at_k`):
  it assumes the visits' solve probabilities are independent draws from one beta distribution
  and each visit's successes binomial given its probability; it estimates the mean over prompts
  of ``1 - (1 - p)^k``, not any one prompt's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import betaln, gammaln
from scipy.stats import betabinom, norm

from covpo.diagnose.readers import CompletionLog
from covpo.table import Table
from covpo.validation import check_count, check_finite_array, check_instance, check_option, check_probability

#: A prompt whose early rate is positive and below this is *hard*.
HARD_BELOW = 0.25
#: A prompt whose early rate is at least this is *easy*.
EASY_FROM = 0.75
#: The difficulty groups, in order.
GROUPS = ("unsolved", "hard", "medium", "easy")
#: The early rates a coverage-loss event's chance probability may assume (:func:`coverage_loss`).
EARLY_RATES = ("point", "wilson_lower")


@dataclass(frozen=True)
class Visits:
    """Each visit of a prompt: one (prompt, step) pair and its group of completions, sorted by prompt then step.

    Attributes
    ----------
    prompt, step
        The visit's prompt (an index into ``prompts``) and step.
    trials, successes
        Its completions and how many succeeded.
    reward_sum
        The sum of its completions' rule rewards.
    prompts
        The prompts' texts.
    starts
        The index of each prompt's first visit (its visits run to the next prompt's start).
    """

    prompt: np.ndarray
    step: np.ndarray
    trials: np.ndarray
    successes: np.ndarray
    reward_sum: np.ndarray
    prompts: np.ndarray
    starts: np.ndarray

    @property
    def rate(self) -> np.ndarray:
        """Each visit's solve rate."""
        return self.successes / self.trials

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Each visit's Wilson interval of its solve rate (:func:`wilson_interval`)."""
        return wilson_interval(self.successes, self.trials, level)

    @property
    def counts(self) -> np.ndarray:
        """How many visits each prompt has, in prompt order."""
        return np.diff(np.append(self.starts, self.prompt.size))

    @property
    def group_size(self) -> int:
        """The most common number of completions per visit (the trainer's ``G``)."""
        values, how_often = np.unique(self.trials, return_counts=True)
        return int(values[np.argmax(how_often)])


def visits(log: CompletionLog) -> Visits:
    """The visits of ``log`` (paper section 5: a prompt's group of ``G`` completions at one step)."""
    log = check_instance("log", log, CompletionLog)
    span = int(log.steps.max()) + 1
    keys, inverse = np.unique(log.prompt_index * span + log.steps, return_inverse=True)
    prompt = keys // span
    return Visits(
        prompt=prompt,
        step=keys % span,
        trials=np.bincount(inverse).astype(np.int64),
        successes=np.bincount(inverse, weights=log.success).astype(np.int64),
        reward_sum=np.bincount(inverse, weights=log.reward),
        prompts=log.prompts,
        starts=np.flatnonzero(np.r_[True, prompt[1:] != prompt[:-1]]),
    )


def _count_array(name: str, value: object, minimum: int = 0) -> np.ndarray:
    """``value`` as a non-empty one-dimensional int64 array of integers ``>= minimum``, else raise naming ``name``."""
    array = check_finite_array(name, value, ndim=1)
    if array.size == 0 or np.any(array != np.round(array)) or np.any(array < minimum) or np.any(np.abs(array) > 2**53):
        raise ValueError(f"{name} must be a non-empty array of integers >= {minimum}, got {value!r}")
    return array.astype(np.int64)


def _counts_pair(successes: object, trials: object) -> tuple[np.ndarray, np.ndarray]:
    """Checked ``successes`` and ``trials`` of one shape, ``0 <= successes <= trials``, ``trials >= 1``."""
    s, n = _count_array("successes", successes), _count_array("trials", trials, minimum=1)
    if s.shape != n.shape:
        raise ValueError(f"successes and trials must have one shape, got {s.shape} and {n.shape}")
    if np.any(s > n):
        raise ValueError("successes must be at most trials in every group")
    return s, n


def wilson_interval(successes: np.ndarray, trials: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score intervals of many binomial proportions at once (the interval of :func:`covpo.rates.wilson_rate`).

    Parameters
    ----------
    successes, trials
        Counts, elementwise ``0 <= successes <= trials``, ``trials >= 1``.
    level
        The confidence level, in (0, 1).

    Returns
    -------
    tuple of numpy.ndarray
        The lower and upper ends.
    """
    level = check_probability("level", level)
    s, n = (array.astype(float) for array in _counts_pair(successes, trials))
    z = norm.ppf(0.5 + level / 2)
    p = s / n
    denominator = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denominator
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def pass_at_k(successes: np.ndarray, trials: np.ndarray, k: int) -> np.ndarray:
    """The unbiased pass@k of each group, ``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021), in log space.

    Parameters
    ----------
    successes, trials
        Each group's successes ``c`` and completions ``n`` (``k <= n``).
    k
        Attempts.
    """
    k = check_count("k", k)
    c, n = (array.astype(float) for array in _counts_pair(successes, trials))
    if np.any(n < k):
        raise ValueError(f"trials must be at least k ({k}) in every group")
    failures = n - c
    enough = failures >= k
    safe = np.where(enough, failures, k)
    log_ratio = gammaln(safe + 1) - gammaln(safe - k + 1) - gammaln(n + 1) + gammaln(n - k + 1)
    return np.where(enough, -np.expm1(log_ratio), 1.0)


@dataclass(frozen=True)
class BetaBinomialFit:
    """A beta distribution of per-visit solve probabilities, fitted by maximum likelihood to binomial counts.

    Attributes
    ----------
    alpha, beta
        The beta distribution's parameters.
    groups
        How many visits the fit used.
    """

    alpha: float
    beta: float
    groups: int

    @property
    def mean(self) -> float:
        """The fitted mean solve probability."""
        return self.alpha / (self.alpha + self.beta)


def beta_binomial_fit(successes: np.ndarray, trials: np.ndarray) -> BetaBinomialFit:
    """Fit ``p ~ Beta(alpha, beta)``, ``successes ~ Binomial(trials, p)`` by maximum likelihood (log-parameters in [-8, 8]).

    Parameters
    ----------
    successes, trials
        Each visit's successes and completions (at least two visits, ``trials >= 1``).
    """
    c, n = _counts_pair(successes, trials)
    if c.size < 2:
        raise ValueError(f"successes and trials must hold at least two visits, got {c.size}")
    pairs, weight = np.unique(np.stack([c, n]), axis=1, return_counts=True)

    def negative_log_likelihood(log_parameters: np.ndarray) -> float:
        a, b = np.exp(log_parameters)
        return -float(np.sum(weight * betabinom.logpmf(pairs[0], pairs[1], a, b)))

    mean = np.clip(c.sum() / n.sum(), 0.01, 0.99)
    start = np.log([mean, 1 - mean])
    found = minimize(negative_log_likelihood, start, method="L-BFGS-B", bounds=[(-8.0, 8.0)] * 2)
    a, b = np.exp(found.x)
    return BetaBinomialFit(float(a), float(b), int(c.size))


def beta_binomial_pass_at_k(fit: BetaBinomialFit, k: int) -> float:
    """The mean pass@k of the fitted population, ``1 - B(alpha, beta + k) / B(alpha, beta)``, any ``k``."""
    fit = check_instance("fit", fit, BetaBinomialFit)
    k = check_count("k", k)
    return float(-np.expm1(betaln(fit.alpha, fit.beta + k) - betaln(fit.alpha, fit.beta)))


def step_windows(steps: np.ndarray, windows: int) -> np.ndarray:
    """The window (0 to ``windows - 1``) of each step: the distinct steps cut into consecutive runs of near-equal length."""
    windows = check_count("windows", windows)
    steps = _count_array("steps", steps)
    distinct = np.unique(steps)
    if distinct.size < windows:
        raise ValueError(f"windows must be at most the number of logged steps ({distinct.size}), got {windows}")
    edges = [part[-1] for part in np.array_split(distinct, windows)]
    return np.searchsorted(np.asarray(edges), steps)


@dataclass(frozen=True)
class DifficultyGroups:
    """Each prompt's early rate and difficulty group (:data:`GROUPS`), by prompt index.

    Attributes
    ----------
    early_trials, early_successes
        Each prompt's completions and successes in the early window.
    label
        Each prompt's group, ``""`` for a prompt not visited early.
    """

    early_trials: np.ndarray
    early_successes: np.ndarray
    label: np.ndarray

    @property
    def early_rate(self) -> np.ndarray:
        """Each prompt's pooled early solve rate (NaN if not visited early)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.early_trials > 0, self.early_successes / np.maximum(self.early_trials, 1), np.nan)


def _labels(rate: np.ndarray) -> np.ndarray:
    label = np.full(rate.shape, "", dtype=object)
    seen = ~np.isnan(rate)
    label[seen & (rate == 0)] = "unsolved"
    label[seen & (rate > 0) & (rate < HARD_BELOW)] = "hard"
    label[seen & (rate >= HARD_BELOW) & (rate < EASY_FROM)] = "medium"
    label[seen & (rate >= EASY_FROM)] = "easy"
    return label


def _visit_windows(table: object, windows: object, minimum: int = 1) -> tuple[Visits, np.ndarray]:
    """Checked visits and the window of each visit (:func:`step_windows` of its steps)."""
    table = check_instance("table", table, Visits)
    windows = check_count("windows", windows, minimum=minimum)
    return table, step_windows(table.step, windows)


def difficulty_groups(table: Visits, windows: int) -> DifficultyGroups:
    """Each prompt's group by its pooled solve rate over its visits in the first of ``windows`` step windows (the early window)."""
    table, window = _visit_windows(table, windows)
    early = window == 0
    n_prompts = table.prompts.size
    trials = np.bincount(table.prompt, weights=table.trials * early, minlength=n_prompts).astype(np.int64)
    successes = np.bincount(table.prompt, weights=table.successes * early, minlength=n_prompts).astype(np.int64)
    groups = DifficultyGroups(trials, successes, np.empty(0))
    return DifficultyGroups(trials, successes, _labels(groups.early_rate))


@dataclass(frozen=True)
class CoverageLoss:
    """Coverage-loss events: prompts solved early whose later visits end in a run of zeros.

    Attributes
    ----------
    prompt, early_rate, early_trials
        Each event's prompt, its early rate and the completions that rate pools.
    since_step
        The step of the zero run's first visit (coverage lost since then).
    flagged_step
        The step at which the run first had ``zero_visits`` visits and a chance probability below ``alpha``.
    zero_visits, zero_trials
        The zero run's visits and completions (to the end of the log).
    chance_probability
        ``(1 - r) ** zero_trials``: the probability of the run by chance at the assumed early rate ``r``
        (the early rate itself, or its Wilson lower end; ``settings["early_rate"]`` says which).
    covered_early
        Prompts with an early success.
    evaluable
        Those with at least ``zero_visits`` later visits (the others have too few to judge).
    settings
        ``zero_visits``, ``alpha`` and the last step of the early window.
    """

    prompt: np.ndarray
    early_rate: np.ndarray
    early_trials: np.ndarray
    since_step: np.ndarray
    flagged_step: np.ndarray
    zero_visits: np.ndarray
    zero_trials: np.ndarray
    chance_probability: np.ndarray
    covered_early: int
    evaluable: int
    settings: dict

    @property
    def events(self) -> int:
        """How many prompts lost coverage."""
        return int(self.prompt.size)

    def table(self, prompts: np.ndarray, limit: int = 20) -> Table:
        """The events, earliest first, at most ``limit`` rows, each prompt shown by its first 48 characters."""
        order = np.argsort(self.since_step, kind="stable")[:limit]
        rows = tuple(
            (_short(prompts[self.prompt[i]]), float(self.early_rate[i]), int(self.early_trials[i]),
             int(self.since_step[i]), int(self.flagged_step[i]), int(self.zero_trials[i]),
             float(self.chance_probability[i]))
            for i in order
        )
        return Table(
            ("prompt", "early rate", "early completions", "zero since step", "flagged at step", "zero completions",
             "chance probability"),
            rows,
            caption=f"Prompts that lost coverage ({self.events} of {self.evaluable} judged), earliest first",
            notes=(f"Chance probability: (1 - early rate)^(zero completions); flagged below {self.settings['alpha']:g} "
                   f"after at least {self.settings['zero_visits']} zero visits.",),
        )


def _short(text: str, width: int = 48) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def coverage_loss(
    table: Visits, windows: int = 5, *, zero_visits: int = 3, alpha: float = 0.01, early_rate: str = "point",
) -> CoverageLoss:
    """The coverage-loss events of ``table`` (see the module docstring), computed for all prompts at once.

    Parameters
    ----------
    table
        The log's visits.
    windows
        How many step windows to cut the log into (:func:`step_windows`); the first is the early window.
    zero_visits
        The fewest trailing visits without a success that count as a loss.
    alpha
        The chance probability below which a run is flagged.
    early_rate
        The rate the chance probability assumes: ``"point"``, the pooled early rate, or
        ``"wilson_lower"``, the lower end of its 95% Wilson interval, which offsets the upward bias
        of an early rate chosen for its success (fewer false flags, later and fewer true ones).
    """
    table, window = _visit_windows(table, windows)
    zero_visits = check_count("zero_visits", zero_visits)
    alpha = check_probability("alpha", alpha)
    early_rate_rule = check_option("early_rate", early_rate, EARLY_RATES)
    groups = difficulty_groups(table, int(window.max()) + 1)
    point = np.nan_to_num(groups.early_rate)
    if early_rate_rule == "point":
        assumed = point
    else:
        covered = groups.early_trials > 0
        assumed = np.zeros_like(point)
        assumed[covered] = wilson_interval(groups.early_successes[covered], groups.early_trials[covered])[0]
    starts, n = table.starts, table.prompt.size
    ends = np.append(starts[1:], n)
    index = np.arange(n)
    late_zero = (window > 0) & (table.successes == 0)
    last_other = np.maximum.reduceat(np.where(late_zero, -1, index), starts)
    run_start = np.maximum(last_other + 1, starts)
    run_visits = ends - run_start
    cumulative = np.concatenate([[0], np.cumsum(table.trials)])
    run_trials = cumulative[ends] - cumulative[run_start]
    prompts_present = table.prompt[starts]
    rate = assumed[prompts_present]
    with np.errstate(divide="ignore"):
        log_keep = np.log1p(-rate)  # -inf for a prompt always solved early: any zero is then impossible by chance
    # Every visit: whether, counted from its run's start up to it, the run is long and unlikely enough.
    owner = np.repeat(np.arange(starts.size), ends - starts)
    position = index - run_start[owner] + 1
    trials_so_far = cumulative[index + 1] - cumulative[run_start[owner]]
    with np.errstate(invalid="ignore"):
        ready = (position >= zero_visits) & (trials_so_far * log_keep[owner] < np.log(alpha)) & (rate[owner] > 0)
    first_ready = np.minimum.reduceat(np.where(ready, index, n), starts)
    late_visits = np.add.reduceat((window > 0).astype(np.int64), starts)
    event = first_ready < n
    with np.errstate(invalid="ignore"):
        chance = np.where(run_trials > 0, np.exp(run_trials * log_keep), 1.0)
    return CoverageLoss(
        prompt=prompts_present[event],
        early_rate=point[prompts_present][event],
        early_trials=groups.early_trials[prompts_present][event],
        since_step=table.step[run_start[event]],
        flagged_step=table.step[first_ready[event]],
        zero_visits=run_visits[event],
        zero_trials=run_trials[event],
        chance_probability=chance[event],
        covered_early=int(np.sum(point[prompts_present] > 0)),
        evaluable=int(np.sum((point[prompts_present] > 0) & (late_visits >= zero_visits))),
        settings={"zero_visits": zero_visits, "alpha": alpha, "early_rate": early_rate_rule,
                  "early_end": int(table.step[window == 0].max()) if np.any(window == 0) else -1},
    )


@dataclass(frozen=True)
class Signature:
    """Reward up while hard-prompt coverage goes down, window by window.

    Attributes
    ----------
    window_steps
        Each window's first and last step.
    mean_reward
        Each window's mean rule reward over all its completions.
    hard_rate
        Each window's mean solve rate over the hard prompts visited in it (NaN where none).
    group_rates
        The same for every difficulty group, by group name.
    hard_prompts
        How many prompts are hard (by their early rate).
    reward_change
        Mean reward of the last window minus that of the second (the first if there are two).
    hard_change, hard_change_low, hard_change_high
        The hard prompts' paired solve-rate change over the same windows, with its normal interval;
        NaN where no hard prompt is visited in both.
    paired_prompts
        Hard prompts visited in both windows.
    """

    window_steps: np.ndarray
    mean_reward: np.ndarray
    hard_rate: np.ndarray
    group_rates: dict
    hard_prompts: int
    reward_change: float
    hard_change: float
    hard_change_low: float
    hard_change_high: float
    paired_prompts: int

    @property
    def present(self) -> bool:
        """Whether the reward rose while the hard prompts' solve rate fell (its interval below zero)."""
        return bool(self.reward_change > 0 and self.hard_change_high < 0)


def _window_rates(table: Visits, window: np.ndarray, chosen: np.ndarray, w: int) -> np.ndarray:
    """Each prompt's pooled solve rate in window ``w`` among ``chosen`` visits (NaN if not visited)."""
    inside = (window == w) & chosen
    size = table.prompts.size
    trials = np.bincount(table.prompt[inside], weights=table.trials[inside], minlength=size)
    successes = np.bincount(table.prompt[inside], weights=table.successes[inside], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(trials > 0, successes / trials, np.nan)


def signature(table: Visits, windows: int = 5, level: float = 0.95) -> Signature:
    """The reward-up, hard-coverage-down signature (see the module docstring) over ``windows`` step windows (at least two)."""
    table, window = _visit_windows(table, windows, minimum=2)
    level = check_probability("level", level)
    count = int(window.max()) + 1
    groups = difficulty_groups(table, count)
    hard = groups.label == "hard"
    trials_w = np.bincount(window, weights=table.trials, minlength=count)
    reward_w = np.bincount(window, weights=table.reward_sum, minlength=count) / trials_w
    group_rates, per_window = {}, []
    for group in GROUPS:
        rates = [_window_rates(table, window, (groups.label == group)[table.prompt], w) for w in range(count)]
        group_rates[group] = np.array([np.nanmean(r) if np.any(~np.isnan(r)) else np.nan for r in rates])
        per_window = rates if group == "hard" else per_window
    base = 1 if count > 2 else 0
    before, after = per_window[base], per_window[count - 1]
    both = ~np.isnan(before) & ~np.isnan(after)
    differences = after[both] - before[both]
    if differences.size:
        change = float(differences.mean())
        spread = float(differences.std(ddof=1) / np.sqrt(differences.size)) if differences.size > 1 else np.inf
        half = float(norm.ppf(0.5 + level / 2)) * spread
    else:
        change, half = np.nan, np.nan
    edges = np.array([[table.step[window == w].min(), table.step[window == w].max()] for w in range(count)])
    return Signature(
        window_steps=edges, mean_reward=reward_w, hard_rate=group_rates["hard"], group_rates=group_rates,
        hard_prompts=int(hard.sum()),
        reward_change=float(reward_w[-1] - reward_w[base]), hard_change=change,
        hard_change_low=change - half, hard_change_high=change + half, paired_prompts=int(both.sum()),
    )


def bin_comparison(table: Visits, windows: int = 5) -> Table:
    """Prompts binned by their first visit's solve rate: that rate against the same prompts' later visits.

    Binning by a noisy first visit selects prompts whose first rate erred in the bin's direction,
    so later visits drift toward the middle even under a steady policy; compare bins with each
    other and over windows, not a bin's change with zero. The last rows give, for each window,
    the mean first-visit rate of the prompts first seen in it (the comparison for prompts that do not recur).
    """
    table, window = _visit_windows(table, windows)
    first = table.starts
    label = _labels(table.rate[first])
    later = np.ones(table.prompt.size, dtype=bool)
    later[first] = False
    size = table.prompts.size
    later_trials = np.bincount(table.prompt[later], weights=table.trials[later], minlength=size)[table.prompt[first]]
    later_successes = np.bincount(table.prompt[later], weights=table.successes[later], minlength=size)[table.prompt[first]]
    rows = []
    for group in GROUPS:
        members = label == group
        again = members & (later_trials > 0)
        first_rate = float(table.rate[first][again].mean()) if np.any(again) else None
        later_rate = float(np.mean(later_successes[again] / later_trials[again])) if np.any(again) else None
        change = None if first_rate is None else later_rate - first_rate
        rows.append((f"{group} at first visit", int(members.sum()), int(again.sum()), first_rate, later_rate, change))
    for w in range(int(window.max()) + 1):
        fresh = window[first] == w
        if np.any(fresh):
            rows.append((f"first seen in window {w + 1}", int(fresh.sum()), None, float(table.rate[first][fresh].mean()),
                         None, None))
    return Table(
        ("prompts", "count", "revisited", "first-visit rate", "later rate", "change"),
        tuple(rows),
        caption="Solve rates by first-visit difficulty, and of the prompts first seen in each window",
        notes=(f"Groups: unsolved at 0, hard below {HARD_BELOW:g}, easy from {EASY_FROM:g}; rates are means over prompts.",),
    )


@dataclass(frozen=True)
class PassAtK:
    """Mean pass@k over the visits of the first and the last window, by the unbiased estimator up to ``G`` and a beta-binomial fit beyond.

    Attributes
    ----------
    ks
        The attempts.
    first, last
        The first and last windows' mean pass@k at each ``k``.
    fitted
        Whether each ``k`` is beyond ``G`` (a beta-binomial estimate).
    group_size
        ``G``.
    """

    ks: np.ndarray
    first: np.ndarray
    last: np.ndarray
    fitted: np.ndarray
    group_size: int


def pass_at_k_curves(table: Visits, windows: int = 5, ks: tuple[int, ...] | None = None) -> PassAtK:
    """Mean pass@k in the first and last of ``windows`` step windows, for ``ks`` (default powers of two up to ``64 G``)."""
    table, window = _visit_windows(table, windows)
    group = table.group_size
    if ks is None:
        ks = tuple(2**i for i in range(int(np.log2(64 * group)) + 1))
    else:
        ks = tuple(int(k) for k in _count_array("ks", ks, minimum=1))
    curves = []
    for w in (0, int(window.max())):
        inside = (window == w) & (table.trials >= group)
        c, n = table.successes[inside], table.trials[inside]
        fit = beta_binomial_fit(c, n) if c.size >= 2 else None
        curves.append([float(pass_at_k(c, n, k).mean()) if k <= group else
                       (np.nan if fit is None else beta_binomial_pass_at_k(fit, k)) for k in ks])
    return PassAtK(np.array(ks), np.array(curves[0]), np.array(curves[1]), np.array(ks) > group, group)


def visit_counts(table: Visits) -> Table:
    """How many prompts were visited how often, and the median number of steps between a prompt's visits."""
    table = check_instance("table", table, Visits)
    counts = table.counts
    bins = ((1, 1), (2, 2), (3, 5), (6, 10), (11, 100), (101, None))
    gaps = np.diff(table.step)
    gaps = gaps[np.r_[table.prompt[1:] == table.prompt[:-1]]]
    rows = []
    for low, high in bins:
        inside = (counts >= low) & (counts <= (high if high is not None else np.inf))
        if np.any(inside):
            label = f"{low}" if low == high else (f"{low}-{high}" if high else f"{low} or more")
            rows.append((label, int(inside.sum())))
    return Table(
        ("visits", "prompts"),
        tuple(rows),
        caption="How often the log shows each prompt",
        notes=(f"Median steps between a prompt's visits: {float(np.median(gaps)):g}." if gaps.size
               else "No prompt is visited twice: per-prompt changes cannot be measured; see the first-visit bins.",),
    )


@dataclass(frozen=True)
class Diagnosis:
    """Everything the report and the command show about one log.

    Attributes
    ----------
    log
        The log diagnosed.
    visits
        Its visits.
    window
        Each visit's window.
    steps, mean_reward, success_rate
        Each logged step, its mean rule reward and its fraction of successes.
    groups
        Each prompt's early rate and difficulty group.
    loss
        The coverage-loss events.
    signature
        The reward-up, hard-coverage-down signature.
    bins
        The first-visit bin comparison.
    pass_at_k
        pass@k in the first and last windows.
    visit_table
        How often prompts were visited.
    """

    log: CompletionLog
    visits: Visits
    window: np.ndarray
    steps: np.ndarray
    mean_reward: np.ndarray
    success_rate: np.ndarray
    groups: DifficultyGroups
    loss: CoverageLoss
    signature: Signature
    bins: Table
    pass_at_k: PassAtK
    visit_table: Table


def diagnose(
    log: CompletionLog, *, windows: int = 5, zero_visits: int = 3, alpha: float = 0.01, level: float = 0.95,
    early_rate: str = "point",
) -> Diagnosis:
    """Every measure of this module on ``log`` (paper sections 1.3 and 5), see the module docstring.

    Parameters
    ----------
    log
        The completion log.
    windows
        Consecutive step windows (at least two); the first is the early window.
    zero_visits, alpha, early_rate
        The coverage-loss rule (:func:`coverage_loss`).
    level
        Confidence level of the intervals.
    """
    log = check_instance("log", log, CompletionLog)
    windows = check_count("windows", windows, minimum=2)
    table = visits(log)
    window = step_windows(table.step, windows)
    steps, inverse = np.unique(log.steps, return_inverse=True)
    rows = np.bincount(inverse)
    return Diagnosis(
        log=log,
        visits=table,
        window=window,
        steps=steps,
        mean_reward=np.bincount(inverse, weights=log.reward) / rows,
        success_rate=np.bincount(inverse, weights=log.success) / rows,
        groups=difficulty_groups(table, windows),
        loss=coverage_loss(table, windows, zero_visits=zero_visits, alpha=alpha, early_rate=early_rate),
        signature=signature(table, windows, level),
        bins=bin_comparison(table, windows),
        pass_at_k=pass_at_k_curves(table, windows),
        visit_table=visit_counts(table),
    )
