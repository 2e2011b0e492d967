"""The head-to-head: known outcomes on a tiny collapse instance, reproducibility, the baselines' exact laws."""

import itertools
import subprocess
import sys
import math

import joblib
import numpy as np
import pytest

from covpo.algorithms.best_of_n import best_of_n_log_policy, best_of_n_size, log_best_of_n_success
from covpo.algorithms.filtered_sft import filter_best, filtered_sft_gradient, filtered_sft_log_likelihood
from covpo import ALGORITHMS
from covpo.experiments.implications.head_to_head import (
    FAMILY_BETA_FIXED_KL,
    FAMILY_EPS,
    FAMILY_RESPONSE_BUDGET,
    default_methods,
    default_suite,
    fixed_reference_gap,
    head_to_head,
    head_to_head_run,
    is_exact,
    is_test_time,
)
from covpo.instances import tabular_instance
from covpo.algorithms.mirror_descent import mirror_descent_policy
from covpo.plots.head_to_head import (
    algorithm_group,
    head_to_head_explorer_figure,
    head_to_head_figure,
    method_styles,
)
from covpo.plots.style import method_colour, method_kind
from covpo.table import Table
from covpo.policies import base_log_policy, expected_reward, log_coverage
from covpo.experiments.squared_loss import squared_loss_methods
from covpo.experiments.sweeps import Method, random_family_methods
from covpo.families import stacked_collapse_instance
from tests.conftest import REPOSITORY
from tests.helpers import finite_difference, small_instance

EPS = 0.04
COVERAGE = 100.0


@pytest.fixture(scope="module")
def collapse_one() -> object:
    """One prompt of the collapse bandit: optimal 1/100, distractor 2/100 (reward 0.8), 20 zero-reward responses."""
    return stacked_collapse_instance(1, 0.2, COVERAGE, n_zero=20)


def tiny_methods() -> tuple[Method, ...]:
    """One method of every algorithm the head-to-head runs, with budgets small enough for a unit test."""
    ppo = {"beta": 1.0, "batch_size": 64, "inner_steps": 5, "n_iterations": 3}
    squared_loss = {"beta": 1.0, "inner_steps": 5, "n_iterations": 3}
    return (
        Method("APMD, exact targets", "apmd_exact", {"beta": 1.0, "n_iterations": 40}),
        Method("REINFORCE, exact gradient", "reinforce_exact", {"n_iterations": 300, "record_every": 10}, (4.0,)),
        Method("Best-of-N", "best_of_n", {"delta": EPS}),
        Method("PPO-NoClip", "ppo_noclip", ppo, (8.0,)),
        Method("PPO-Lite", "ppo_lite", ppo, (8.0,)),
        Method(
            "GRPO, resets", "grpo_reset",
            {"beta": 0.5, "batch_size": 8, "group_size": 4, "inner_steps": 5, "n_iterations": 3}, (8.0,),
        ),
        Method(
            "GRPO, fixed", "grpo_fixed",
            {"beta": 0.0, "batch_size": 8, "group_size": 4, "inner_steps": 1, "n_iterations": 3}, (8.0,),
        ),
        Method("REINFORCE", "reinforce", {"batch_size": 16, "n_iterations": 30}, (8.0, 64.0)),
        Method("REINFORCE, KL", "reinforce", {"beta": 0.05, "batch_size": 16, "n_iterations": 20}, (8.0,)),
        Method("KimiPO", "kimipo", {**squared_loss, "batch_size": 32, "extra_responses": 1}, (2.0,)),
        Method("KimiPO-Norm", "kimipo_norm", {**squared_loss, "batch_size": 16, "extra_responses": 3}, (2.0,)),
        Method("Rebel-OnPolicy", "rebel_onpolicy", {**squared_loss, "batch_size": 32}, (2.0,)),
        Method("NPG", "npg", {"beta": 2.0, "batch_size": 16, "group_size": 4, "n_iterations": 4}),
        Method("SFT", "filtered_sft", {"batch_size": 4, "group_size": 8, "inner_steps": 5, "n_iterations": 5}, (4.0,)),
    )


@pytest.fixture(scope="module")
def tiny_result(collapse_one):
    return head_to_head([collapse_one], [COVERAGE], tiny_methods(), eps=EPS, seeds=(0, 1), progress=False)


def test_every_registered_algorithm_runs_but_the_exact_variants_of_chapters_3_and_5():
    # exact mirror descent and gradient-ascent APMD are what exact APMD solves and approximates,
    # and exact NPG takes the same step as exact APMD on a realizable instance (its sampled form runs)
    left_out = {"mirror_descent_exact", "apmd", "npg_exact"}
    assert {method.algorithm for method in tiny_methods()} == set(ALGORITHMS) - left_out
    for family in ("collapse", "random"):
        assert {method.algorithm for method in default_methods(family)} == set(ALGORITHMS) - left_out


def test_exact_apmd_reaches_eps_when_exact_mirror_descent_does(tiny_result, collapse_one):
    row = tiny_result.method_index("APMD, exact targets")
    assert tiny_result.reached[row].all()
    assert np.all(tiny_result.responses_to_eps[row] == 0)
    assert np.all(tiny_result.coverage_loss[row] == 0.0)
    gaps = [collapse_one.optimal_value - expected_reward(collapse_one, mirror_descent_policy(collapse_one, 1.0, t)) for t in range(41)]
    first = next(t for t, gap in enumerate(gaps) if gap <= EPS)
    assert np.all(tiny_result.steps_to_eps[row] == first)


def test_exact_reinforce_collapses_and_fails(tiny_result):
    row = tiny_result.method_index("REINFORCE, exact gradient")
    assert not tiny_result.reached[row].any()
    assert np.all(tiny_result.coverage_loss[row] > 1.0)
    assert np.all(tiny_result.steps_to_eps[row] == 300)
    assert not tiny_result.diverged.any()


def test_best_of_n_cost_is_the_coverage_formula(tiny_result):
    row = tiny_result.method_index("Best-of-N")
    expected = math.ceil(math.log(1.0 / EPS) / -math.log1p(-1.0 / COVERAGE))
    assert np.all(tiny_result.responses_to_eps[row] == expected)
    assert np.all(tiny_result.steps_to_eps[row] == 0)
    assert tiny_result.reached[row].all()
    assert np.all(tiny_result.final_suboptimality[row] <= EPS)


def test_generation_rounds_follow_each_methods_schedule(tiny_result, collapse_one):
    # one fresh batch per REINFORCE step, one per outer iteration of a reset method (K steps each),
    # none for the exact methods; the table's rounds column is their median over the runs that reached eps
    for row, method in enumerate(tiny_result.methods):
        rounds, steps = tiny_result.rounds_to_eps[row], tiny_result.steps_to_eps[row]
        costs = method.iteration_costs(collapse_one)
        if costs.generation_rounds == 0:
            assert np.all(rounds == 0), method.label
        elif costs.gradient_steps > 0:
            assert np.array_equal(rounds * costs.gradient_steps, steps), method.label
        assert tiny_result.median_cost(row, "rounds") == pytest.approx(
            float(np.median(rounds[tiny_result.reached[row]])) if tiny_result.reached[row].any() else float("nan"),
            nan_ok=True,
        )
    table = tiny_result.table()
    for row, cell in enumerate(table.column("median generation rounds to ε")):
        median = tiny_result.median_cost(row, "rounds")
        if is_exact(tiny_result.methods[row]):
            assert cell == "exact"
        else:
            assert cell == (None if np.isnan(median) else pytest.approx(median))
    with pytest.raises(ValueError, match="cost"):
        tiny_result.median_cost(0, "seconds")


def test_within_budget_charges_rounds_too(tiny_result):
    smaller = tiny_result.within_budget(64)
    for row, method in enumerate(tiny_result.methods):
        if method.definition.samples and method.responses_per_iteration <= 64:
            missed = ~smaller.reached[row]
            iterations = 64 // method.responses_per_iteration
            assert np.all(smaller.rounds_to_eps[row][missed] <= iterations), method.label


@pytest.mark.same_on_every_cpu
def test_results_identical_under_threads_and_serial(collapse_one, tiny_result):
    with joblib.parallel_config(backend="threading", n_jobs=2):
        threaded = head_to_head([collapse_one], [COVERAGE], tiny_methods(), eps=EPS, seeds=(0, 1), progress=False)
    for name in ("reached", "responses_to_eps", "steps_to_eps", "rounds_to_eps", "min_log10_coverage",
                 "coverage_loss", "final_suboptimality", "diverged", "eta"):
        np.testing.assert_array_equal(getattr(threaded, name), getattr(tiny_result, name))


def test_seeds_change_sampled_runs_only(tiny_result):
    sampled = tiny_result.method_index("PPO-Lite")
    exact = tiny_result.method_index("REINFORCE, exact gradient")
    assert tiny_result.min_log10_coverage[exact, 0, 0] == tiny_result.min_log10_coverage[exact, 0, 1]
    assert tiny_result.min_log10_coverage[sampled, 0, 0] != tiny_result.min_log10_coverage[sampled, 0, 1]


def test_table_has_a_row_per_algorithm(tiny_result):
    table = tiny_result.table()
    assert isinstance(table, Table)
    names = [name.removesuffix(" *") for name in table.column("algorithm")]
    assert names == [f"{m.label} (test time)" if is_test_time(m) else m.label for m in tiny_result.methods]
    exact = tiny_result.method_index("REINFORCE, exact gradient")
    assert table.rows[exact][2] == "exact" and table.column("runs diverged") == [0] * len(names)
    reached = table.column(table.columns[1])
    assert reached == [int(tiny_result.reached[row].sum()) for row in range(len(names))]
    for row, cell in enumerate(table.column("worst coverage loss (decades)")):
        assert cell == pytest.approx(float(np.nanmax(tiny_result.coverage_loss[row])))
        assert table.rows[row][0].endswith(" *") == (cell > np.log10(2.0))
    text = str(table)
    assert "(test time)" in text and "exact" in text and any(note.startswith("*") for note in table.notes)
    summary = tiny_result.summary()
    assert "REINFORCE, exact gradient" in summary.split("never reached eps:")[1]


def test_figure_draws_every_algorithm(tiny_result):
    figure = head_to_head_figure(tiny_result, "tiny")
    assert figure.get_figwidth() <= 7.0
    legends = [axes.get_legend() for axes in figure.axes if axes.get_legend() is not None]
    labels = {text.get_text() for legend in legends for text in legend.get_texts()}
    assert labels == {f"{m.label} (test time)" if is_test_time(m) else m.label for m in tiny_result.methods}
    groups = {algorithm_group(method) for method in tiny_result.methods}
    panels = [axes for axes in figure.axes if axes.axison]
    assert len(figure.subfigs) == len(groups) and len(panels) == 2 * len(groups) == 2 * len(legends)
    # fits the first screen under the chapter's summary; every method in the book's colour of its
    # kind, and no two methods of a group share a marker
    assert figure.get_figheight() <= 4.8
    styles = method_styles(tiny_result)
    keyed = [(method, style) for method, style in zip(tiny_result.methods, styles) if method_kind(method.label)]
    assert keyed
    for method, style in keyed:
        assert style["color"] == method_colour(method_kind(method.label)), method.label
    for group in groups:
        members = [style for method, style in zip(tiny_result.methods, styles) if algorithm_group(method) == group]
        assert len({style["marker"] for style in members}) == len(members)


def test_explorer_figure_shows_the_plot_only(tiny_result):
    figure = head_to_head_explorer_figure((tiny_result,), 0, 0, 10_000)
    assert figure.get_figwidth() <= 7.0 and len(figure.axes) == 1
    assert not any(text.get_fontfamily() == ["monospace"] for text in figure.texts)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"eps": 0.0}, "eps"),
        ({"eps": float("nan")}, "eps"),
        ({"methods": ()}, "methods"),
        ({"coverages": [COVERAGE, 2.0]}, "coverages"),
        ({"coverages": [0.5]}, "coverages"),
        ({"seeds": ()}, "seeds"),
        ({"seeds": (-1,)}, "seeds"),
        ({"instances": []}, "instances"),
    ],
)
def test_bad_arguments_raise(collapse_one, change, message):
    arguments = {"instances": [collapse_one], "coverages": [COVERAGE], "methods": tiny_methods()[:1], "eps": EPS, "seeds": (0,)}
    arguments.update(change)
    with pytest.raises(ValueError, match=message):
        head_to_head(arguments.pop("instances"), arguments.pop("coverages"), arguments.pop("methods"), **arguments)


def test_duplicate_names_raise(collapse_one):
    method = tiny_methods()[0]
    with pytest.raises(ValueError, match="distinct"):
        head_to_head([collapse_one], [COVERAGE], [method, method], eps=EPS, seeds=(0,))
    with pytest.raises(ValueError, match="Method"):
        head_to_head([collapse_one], [COVERAGE], [("APMD", "apmd_exact")], eps=EPS, seeds=(0,))


@pytest.mark.parametrize(
    "algorithm, hyperparameters, etas, message",
    [
        ("sgd", {}, (1.0,), "algorithm"),
        ("ppo_lite", {"beta": 1.0, "batch_size": 8, "inner_steps": 1, "n_iterations": 1}, (), "etas"),
        ("filtered_sft", {"batch_size": 4, "group_size": 2, "inner_steps": 1, "n_iterations": 1}, (-1.0,), "etas"),
        ("npg", {"beta": 1.0, "batch_size": 8, "group_size": 2, "n_iterations": 1}, (1.0,), "etas"),
        ("npg", {"beta": 1.0, "batch_size": 8, "group_size": 2, "inner_steps": 1, "n_iterations": 1}, (), "inner_steps"),
    ],
)
def test_bad_methods_raise(algorithm, hyperparameters, etas, message):
    with pytest.raises(ValueError, match=message):
        Method("bad", algorithm, hyperparameters, etas)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (("kimipo", {"beta": 0.0, "batch_size": 8, "inner_steps": 1, "n_iterations": 1}, (1.0,)), "beta"),
        (("best_of_n", {"delta": 1.5}), "delta"),
        (("npg", {"beta": 1.0, "batch_size": 0, "group_size": 2, "n_iterations": 1}), "batch_size"),
    ],
)
def test_bad_settings_are_refused_before_the_head_to_head_runs(arguments, message):
    # a ValueError is a configuration error, never a diverged run: the Method refuses it when built
    with pytest.raises(ValueError, match=message):
        Method("bad", *arguments)


def test_the_head_to_head_runs_chapter_4_and_5_methods_unchanged_but_for_the_budget():
    for method, budgeted in zip(random_family_methods(), default_methods("random")):
        assert budgeted == method.with_response_budget(FAMILY_RESPONSE_BUDGET["random"])
    by_label = {method.label: method for method in default_methods("random")}
    for method in squared_loss_methods("random")[:3]:
        assert by_label[method.label].algorithm == method.algorithm
    kimi = Method("KimiPO", "kimipo", {"beta": 1.0, "batch_size": 8, "inner_steps": 1, "n_iterations": 1,
                                       "extra_responses": 3}, (1.0,))
    assert kimi.responses_per_iteration == 8 * 4
    assert by_label["NPG, resets"].learning_rates == (None,)


def test_default_methods_share_the_family_budget():
    for family, budget in FAMILY_RESPONSE_BUDGET.items():
        for method in default_methods(family):
            if method.definition.samples:
                assert budget - method.responses_per_iteration < method.response_budget <= budget, method.label


def test_with_response_budget_never_overspends():
    method = Method("KimiPO", "kimipo", {"beta": 1.0, "batch_size": 10, "inner_steps": 1, "n_iterations": 1,
                                         "extra_responses": 2}, (1.0,))
    assert method.with_response_budget(100).response_budget == 90
    with pytest.raises(ValueError, match="response_budget"):
        method.with_response_budget(20)


def test_fixed_kl_beta_keeps_the_fixed_optimum_near_optimal():
    for part in default_suite("book"):
        assert fixed_reference_gap(part.instances, FAMILY_BETA_FIXED_KL[part.family]) <= FAMILY_EPS[part.family] / 2


def test_book_suite_has_the_dialled_coverages():
    for part in default_suite("book"):
        for instance, coverage in zip(part.instances, part.coverages, strict=True):
            inverse = np.exp(-log_coverage(instance, base_log_policy(instance)))
            assert instance.prompt_probs @ inverse == pytest.approx(coverage, rel=1e-8)


def test_sft_gradient_matches_finite_differences():
    instance = small_instance()
    kept = np.zeros(instance.rewards.shape)
    kept[0, 1], kept[1, 3], kept[2, 0] = 2.0, 1.0, 3.0
    theta = np.random.default_rng(0).standard_normal(instance.dim)
    numeric = finite_difference(lambda t: filtered_sft_log_likelihood(instance, t, kept), theta)
    np.testing.assert_allclose(filtered_sft_gradient(instance, theta, kept), numeric, atol=1e-8)
    np.testing.assert_array_equal(filtered_sft_gradient(instance, theta, np.zeros_like(kept)), 0.0)


def test_filter_keeps_only_the_best_seen():
    kept = np.zeros((2, 3))
    best = np.full(2, -np.inf)
    kept, best = filter_best(kept, best, np.array([0, 0, 1]), np.array([1, 2, 0]), np.array([0.5, 0.2, 0.0]))
    np.testing.assert_array_equal(kept, [[0, 1, 0], [1, 0, 0]])
    kept, best = filter_best(kept, best, np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([1.0, 0.5, 0.0]))
    np.testing.assert_array_equal(kept, [[1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(best, [1.0, 0.0])


def test_best_of_n_law_matches_enumeration():
    """Every ordered triple of draws, the first draw of the highest reward returned."""
    rewards = np.array([[1.0, 0.5, 0.5, 0.0]])
    probs = np.array([[0.1, 0.2, 0.3, 0.4]])
    instance = tabular_instance(rewards, probs)
    n = 3
    exact = np.zeros(4)
    for draws in itertools.product(range(4), repeat=n):
        weight = np.prod(probs[0, list(draws)])
        top = max(rewards[0, d] for d in draws)
        exact[next(d for d in draws if rewards[0, d] == top)] += weight  # ties: the first best draw
    np.testing.assert_allclose(np.exp(best_of_n_log_policy(instance, np.log(probs), n))[0], exact, atol=1e-12)


def test_best_of_n_coverage_is_exact_far_below_underflow():
    instance = stacked_collapse_instance(1, 0.2, 4.0, n_zero=5)
    log_probs = base_log_policy(instance).copy()
    log_probs[0, 0] = -900.0
    log_probs -= np.logaddexp.reduce(log_probs, axis=1, keepdims=True)
    coverage = log_coverage(instance, best_of_n_log_policy(instance, log_probs, 50))
    np.testing.assert_allclose(coverage, log_best_of_n_success(log_probs[0, 0], 50), rtol=1e-12)
    assert best_of_n_size(instance, 0.1) == math.ceil(math.log(10.0) / -math.log1p(-0.25))


def test_exact_apmd_counts_a_step_per_iteration_and_best_of_n_its_n(collapse_one):
    method = Method("APMD", "apmd_exact", {"beta": 2.0, "n_iterations": 7})
    trajectory = head_to_head_run(method, collapse_one, None, np.random.default_rng(0), eps=EPS)
    np.testing.assert_array_equal(trajectory.gradient_steps, np.arange(8))
    assert trajectory.total_responses == 0 and method.step_budget == 7
    best = Method("Best-of-N", "best_of_n", {"delta": 0.5})
    run = head_to_head_run(best, collapse_one, None, None, eps=EPS)
    assert run.total_responses == best_of_n_size(collapse_one, 0.5) == best.iteration_costs(collapse_one).responses
    assert run.total_generation_rounds == 1 == best.iteration_costs(collapse_one).generation_rounds
    with pytest.raises(ValueError, match="delta"):
        Method("Best-of-N", "best_of_n", {})


STUDY_DIGEST = """
import hashlib
import numpy as np
from covpo.experiments.implications.head_to_head import head_to_head
from covpo.families import stacked_collapse_instance
from tests.test_head_to_head import COVERAGE, EPS, tiny_methods
instance = stacked_collapse_instance(1, 0.2, COVERAGE, n_zero=20)
result = head_to_head([instance], [COVERAGE], tiny_methods(), eps=EPS, seeds=(0, 1), progress=False)
digest = hashlib.sha256()
for name in ("reached", "responses_to_eps", "steps_to_eps", "min_log10_coverage", "coverage_loss",
             "final_suboptimality", "diverged", "eta"):
    digest.update(np.ascontiguousarray(getattr(result, name)).tobytes())
print(digest.hexdigest())
"""


@pytest.mark.same_on_every_cpu
def test_study_is_identical_bit_for_bit_in_two_processes():
    """Seeded runs reproduce exactly on one machine: the same study in two fresh processes."""
    digests = [
        subprocess.run([sys.executable, "-c", STUDY_DIGEST], cwd=REPOSITORY, capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    assert digests[0] == digests[1] and len(digests[0].strip()) == 64


def _bad_head_to_head_calls():
    from covpo.collapse_instance import collapse_instance
    from covpo.experiments.implications import head_to_head as h2h

    instance = stacked_collapse_instance(1, 0.2, 10.0, n_zero=5)
    method = Method("R", "reinforce", {"batch_size": 4, "n_iterations": 2}, (1.0,))
    return [
        (lambda: h2h.is_exact(None), "method"),
        (lambda: h2h.is_test_time("x"), "method"),
        (lambda: h2h.head_to_head_run(method, instance, 1.0, 0, eps=0.1), "rng"),
        (lambda: h2h.head_to_head_run(method, collapse_instance(0.1), 1.0, np.random.default_rng(0), eps=0.1), "instance"),
        (lambda: h2h.run_task(method, instance, 1.0, 0.1, (-1,)), "seed"),
        (lambda: h2h.outcome_of(None, np.zeros(1), 0.1), "trajectory"),
        (lambda: h2h.head_to_head(None, [2.0], [method], eps=0.1, seeds=[0]), "instances"),
        (lambda: h2h.head_to_head([None], [2.0], [method], eps=0.1, seeds=[0]), "instances"),
        (lambda: h2h.head_to_head([instance], [2.0], method, eps=0.1, seeds=[0]), "methods"),
        (lambda: h2h.head_to_head([instance], [2.0], [method], eps=0.1, seeds=None), "seeds"),
        (lambda: h2h.default_suite(None), "size"),
        (lambda: h2h.default_head_to_head("book", seeds=["x"]), "seeds"),
        (lambda: h2h.fixed_reference_gap([collapse_instance(0.1)], 1.0), "instances"),
        (lambda: head_to_head_explorer_figure((), 0, 0, 100), "results"),
    ]


@pytest.mark.parametrize("index", range(14))
def test_bad_input_raises_naming_the_argument(index):
    call, name = _bad_head_to_head_calls()[index]
    with pytest.raises(ValueError, match=name):
        call()
