"""Chapter 7's frontier study: what a path keeps, exact mirror descent, and the record read at matched movement."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from covpo.labs.transformer import Cell, ModelConfig, ReversalTask, transformer_study  # noqa: E402
from covpo.labs.transformer import experiment, training  # noqa: E402
from covpo.labs.transformer.experiment import plan_study  # noqa: E402
from covpo.labs.transformer.frontier import (  # noqa: E402
    BLOCKS,
    FRONTIER_RECORD,
    FRONTIER_SIZES,
    MAX_POINTS,
    ONSET_DROP,
    PANELS,
    PASS_KS,
    first_loss_step,
    inner_condition,
    kept_steps,
    mirror_descent_paths,
    run_paths,
)
from covpo.labs.transformer.frontier_analysis import (  # noqa: E402
    MIN_SEEDS,
    ArmPaths,
    block_paths,
    condition_counts,
    condition_table,
    collapse_onset,
    inner_accuracy,
    matched_comparison,
    matched_verdict,
    median_frontier,
    profiles,
    read_frontier_record,
    value_at_level,
)
from covpo.labs.transformer.methods import APMD_ARM, EXACT_ARM, STRONG_BETA, WEAK_ARM  # noqa: E402
from tests.fuzz_entry_points import synthetic_study  # noqa: E402

SERIES = ("pass1", "log10_coverage", "near", *(f"pass@{k}" for k in PASS_KS))
"""The series of every panel of a path."""


def pass256(probability: float) -> float:
    return 1 - (1 - probability) ** 256


# ---- what a path keeps -------------------------------------------------------------------------


def test_kept_steps_are_every_step_when_few_else_at_most_max_points_with_both_ends():
    np.testing.assert_array_equal(kept_steps(5), np.arange(6))
    np.testing.assert_array_equal(kept_steps(MAX_POINTS - 1), np.arange(MAX_POINTS))
    for n_steps in (MAX_POINTS, 48, 192, 1000):
        rows = kept_steps(n_steps)
        assert len(rows) <= MAX_POINTS and rows[0] == 0 and rows[-1] == n_steps
        assert (np.diff(rows) > 0).all()
    with pytest.raises(ValueError, match="n_steps"):
        kept_steps(0)


def test_first_loss_step_is_the_first_row_whose_hard_pass256_fell_by_more_than_the_drop_times_inner_steps():
    hard = np.array([True, True, False])
    # the easy prompt loses everything; the hard prompts keep pass@256 near one: no loss
    kept = np.log(np.array([[0.5, 0.2, 0.9], [0.4, 0.2, 1e-9], [0.3, 0.1, 1e-12]]))
    assert first_loss_step(kept, hard, 4) is None
    # a fall just short of the drop does not count, one just beyond it does
    short = 1 - (1 - (1 - 2 * (ONSET_DROP - 0.01))) ** (1 / 256)  # the hard pair's mean pass@256 falls by DROP - 0.01
    beyond = 1 - (1 - (1 - 2 * (ONSET_DROP + 0.01))) ** (1 / 256)
    assert pass256(short) == pytest.approx(1 - 2 * (ONSET_DROP - 0.01))
    rows = np.log(np.array([[0.5, 0.5, 0.9], [0.5, short, 0.9], [0.5, 0.5, 0.9], [0.5, beyond, 0.9],
                            [0.5, 1e-6, 0.9]]))
    assert first_loss_step(rows, hard, 16) == 3 * 16
    assert first_loss_step(rows, hard, 1) == 3
    # log-coverages above zero (rounding) are read as coverage one
    assert first_loss_step(np.array([[1e-7, 1e-7], [0.0, 1e-7]]), np.array([True, True]), 4) is None


# ---- exact mirror descent ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def descent_study():
    """A study-like record whose base models are valid distributions over the correct answer, the near miss and the rest."""
    study = synthetic_study(n_seeds=3, n_steps=6)
    draw = np.random.default_rng(3)
    shape = study.log_coverage.shape
    correct = draw.uniform(1e-4, 0.5, shape[:1] + (1,) + shape[2:])
    near = draw.uniform(0.0, 0.45, correct.shape)
    held_correct = draw.uniform(1e-4, 0.5, correct.shape)
    held_near = draw.uniform(0.0, 0.45, correct.shape)
    tile = (1, shape[1], 1)
    return replace(study, log_coverage=np.tile(np.log(correct), tile), log_near=np.tile(np.log(near), tile),
                   held_log_coverage=np.tile(np.log(held_correct), tile),
                   held_log_near=np.tile(np.log(held_near), tile))


def test_mirror_descent_paths_follow_the_closed_form_and_only_gain_coverage(descent_study):
    study, beta = descent_study, 0.5
    paths = mirror_descent_paths(study, beta)
    assert [(path["reward"], path["seed"]) for path in paths] == [("partial", s) for s in study.seeds]
    steps = np.arange(study.setup.n_steps + 1)
    for path in paths:
        run = next(r for r in range(len(study.run_cell)) if study.run_seed[r] == path["seed"])
        assert path["arm"] == "mirror descent" and path["outer_steps"] == steps.tolist()
        for panel, coverage, near in (("training", study.log_coverage, study.log_near),
                                      ("held-out", study.held_log_coverage, study.held_log_near)):
            p, q = np.exp(coverage[run, 0]), np.exp(near[run, 0])
            tilt = np.exp(steps[:, None] / beta)
            tilt_near = np.exp(steps[:, None] * study.near_reward[run] / beta)
            z = p * tilt + q * tilt_near + (1 - p - q)
            np.testing.assert_allclose(path[panel]["pass1"], (p * tilt / z).mean(1), rtol=1e-3)
            np.testing.assert_allclose(path[panel]["near"], ((q * tilt_near / z)[:, study.train_hard[run]
                                                                              if panel == "training"
                                                                              else study.held_hard[run]]).mean(1),
                                       rtol=1e-3)
            # the correct answer is the best response: its probability, and every pass@k, only grow
            for name in ("pass1", "log10_coverage", *(f"pass@{k}" for k in PASS_KS)):
                assert (np.diff(path[panel][name]) >= -1e-12).all(), (panel, name)
            assert path[panel]["first_loss_step"] is None
        kl = np.asarray(path["kl"])
        assert (kl >= -1e-12).all() and kl[0] == pytest.approx(0.0, abs=1e-12) and (np.diff(kl) > 0).all()


def test_mirror_descent_at_a_weaker_beta_moves_faster(descent_study):
    study = descent_study
    strong, weak = mirror_descent_paths(study, STRONG_BETA), mirror_descent_paths(study, 10 * STRONG_BETA)
    for fast, slow in zip(strong, weak):
        assert fast["kl"][-1] > slow["kl"][-1]
    with pytest.raises(ValueError, match="beta"):
        mirror_descent_paths(study, 0.0)
    with pytest.raises(ValueError, match="study"):
        mirror_descent_paths("study")


# ---- run_paths on a tiny real study ------------------------------------------------------------------

# The values, not the speed, are checked: the programs compile without LLVM's optimizations.
TEST_COMPILE = {"xla_backend_optimization_level": 0}
TINY_CONFIG = ModelConfig(n_symbols=4, length=2, d_model=8, n_layers=1, n_heads=2)
TINY_TASK = ReversalTask(n_symbols=4, length=2)
TINY_SIZES = {"base_models": 2, "seeds_per_base": 1, "n_steps": 3, "n_prompts": 3, "slot_size": 2, "inner_steps": 2,
              "held_out": 2, "pretrain_steps": 2, "pretrain_batch": 4, "n_samples": 2, "chunk": 2}


@pytest.fixture(scope="module")
def tiny_study():
    """A weak fixed reference and the exact-target APMD arm, two seeds, three outer steps of two inner steps."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(training, "_pretrain", jax.jit(training._pretrain.__wrapped__, compiler_options=TEST_COMPILE,
                                                     static_argnames=("config", "n_steps", "batch")))
        patch.setattr(experiment, "train_runs", jax.jit(training.train_runs.__wrapped__, static_argnames=("setup",),
                                                        compiler_options=TEST_COMPILE))
        patch.setattr(experiment, "_count_correct", jax.jit(experiment._count_correct.__wrapped__,
                                                            static_argnames=("config", "n"),
                                                            compiler_options=TEST_COMPILE))
        cells = (Cell("mixed", WEAK_ARM, group_size=2), Cell("mixed", EXACT_ARM, group_size=2))
        plan = plan_study("book", cells=cells, config=TINY_CONFIG, task=TINY_TASK, sizes=TINY_SIZES)
        return transformer_study("book", plan=plan, progress=False)


# The path restates the study's own arrays: structure, the same on every CPU.
@pytest.mark.same_on_every_cpu
def test_run_paths_keep_every_series_at_every_kept_step_finite(tiny_study):
    study = tiny_study
    inner = study.setup.inner_steps
    for run in range(len(study.run_cell)):
        path = run_paths(study, run)
        cell = study.cells[study.run_cell[run]]
        assert (path["arm"], path["reward"], path["seed"]) == (cell.arm, "partial", int(study.run_seed[run]))
        assert path["optimizer_steps"] == [t * inner for t in range(study.setup.n_steps + 1)]
        np.testing.assert_allclose(path["kl"], study.kl[run], rtol=1e-3, atol=1e-12)
        assert path["kl"][0] == pytest.approx(0.0, abs=1e-6)
        for panel in PANELS:
            assert set(path[panel]) == {*SERIES, "first_loss_step"}
            for name in SERIES:
                values = np.asarray(path[panel][name])
                assert values.shape == (study.setup.n_steps + 1,) and np.isfinite(values).all(), (panel, name)
            assert path[panel]["first_loss_step"] is None or path[panel]["first_loss_step"] % inner == 0
        np.testing.assert_allclose(path["training"]["pass1"], np.exp(study.log_coverage[run]).mean(1), rtol=1e-3)
        if cell.arm == EXACT_ARM:
            accuracy = study.accuracy[run]
            assert path["inner"]["accuracy"] == pytest.approx(accuracy, rel=1e-3)
            assert path["inner"]["accuracy_sum"] == pytest.approx(np.cumsum(accuracy), rel=1e-3)
            assert path["inner"]["total"] == pytest.approx(accuracy.sum(), rel=1e-4)
            assert math.isfinite(path["inner"]["closed"]) and path["inner"]["closed"] <= 1
        else:
            assert "inner" not in path
        json.dumps(path)
    with pytest.raises(ValueError, match="run"):
        run_paths(study, len(study.run_cell))


def test_a_long_run_keeps_at_most_max_points_of_its_path():
    study = synthetic_study(n_seeds=1, n_steps=80)
    path = run_paths(study, 1)
    rows = kept_steps(80)
    assert path["optimizer_steps"] == (rows * study.setup.inner_steps).tolist()
    assert len(path["kl"]) == len(rows) == len(path["training"]["pass@256"]) == len(path["inner"]["accuracy"]) + 1


# ---- reading the record: hand-made paths -------------------------------------------------------------


def hand_path(arm: str, seed: int, pass1, coverage, kl=None, lost=None, inner=None) -> dict:
    """A path whose two panels read the same ``pass1`` and ``pass@256 = coverage`` (every other measure too)."""
    panel = {name: list(map(float, coverage)) for name in SERIES if name != "pass1"}
    panel["pass1"] = list(map(float, pass1))
    panel["first_loss_step"] = lost
    path = {"arm": arm, "reward": "partial", "seed": seed, "optimizer_steps": list(range(len(pass1))),
            "kl": list(map(float, kl if kl is not None else pass1)), "training": panel,
            "held-out": copy.deepcopy(panel)}
    if inner is not None:
        path["inner"] = inner
    return path


def hand_record(blocks_by_profile: dict[str, list[dict]]) -> dict:
    """A record with one run per profile, the same paths in every block."""
    return {"runs": [{"stamp": {"command": "test", "profile": profile},
                      "blocks": {name: {"n_steps": 2, "inner_steps": 1, "paths": paths} for name in BLOCKS}}
                     for profile, paths in blocks_by_profile.items()]}


def test_value_at_level_interpolates_linearly_at_the_first_crossing():
    path = hand_path(APMD_ARM, 0, [0.1, 0.4, 0.2, 0.5], [0.9, 0.6, 0.3, 0.1], kl=[0.0, 1.0, 2.0, 3.0])
    assert value_at_level(path, "pass1", "pass@256", 0.3) == pytest.approx(0.9 + (0.2 / 0.3) * (0.6 - 0.9))
    # the first crossing of 0.45 is between the third and fourth points, not the first two
    assert value_at_level(path, "pass1", "pass@256", 0.45) == pytest.approx(0.3 + (0.25 / 0.3) * (0.1 - 0.3))
    assert value_at_level(path, "pass1", "pass@256", 0.1) == 0.9  # reached at the start
    assert value_at_level(path, "pass1", "pass@256", 0.0) == 0.9
    assert value_at_level(path, "pass1", "pass@256", 0.51) is None  # never reached
    assert value_at_level(path, "kl", "pass@256", 2.5, panel="held-out") == pytest.approx(0.2)
    assert value_at_level(path, "kl", "pass1", 0.5) == pytest.approx(0.25)


@pytest.mark.parametrize(("arguments", "argument"), [
    (("pass1", "pass@256", math.nan), "level"), (("pass1", "pass@256", "0.3"), "level"),
    (("reward", "pass@256", 0.3), "movement"), (("pass1", "pass@7", 0.3), "measure"),
    (("pass1", "pass@256", 0.3, "test"), "panel"),
])
def test_value_at_level_refuses_bad_input_naming_it(arguments, argument):
    with pytest.raises(ValueError, match=rf"\b{argument}\b"):
        value_at_level(hand_path(APMD_ARM, 0, [0.1, 0.5], [0.9, 0.5]), *arguments)
    with pytest.raises(ValueError, match=r"\bpath\b"):
        value_at_level({"kl": [0.0]}, "pass1", "pass@256", 0.3)


def matched_paths(shift: float, n_seeds: int = 8, missing_first=(), missing_second=()) -> list[dict]:
    """Per seed: APMD reaching pass@1 0.5 with coverage ``0.8 + shift``, the weak reference with coverage 0.6."""
    paths = []
    for seed in range(n_seeds):
        top = 0.25 if seed in missing_first else 0.6
        paths.append(hand_path(APMD_ARM, seed, [0.0, top], [1.0, 2 * (0.8 + shift + 0.01 * seed) - 1.0]))
        top = 0.25 if seed in missing_second else 0.6
        paths.append(hand_path(WEAK_ARM, seed, [0.0, top], [1.0, 2 * 0.6 - 1.0]))
    return paths


def test_matched_comparison_pairs_by_seed_only_over_the_seeds_both_reach():
    record = hand_record({"default": matched_paths(0.0, missing_first=(1,), missing_second=(6,))})
    comparison = matched_comparison(record, "default", APMD_ARM, WEAK_ARM, 0.3)
    assert comparison.seeds == (0, 2, 3, 4, 5, 7)
    # at pass@1 0.3, halfway: APMD's coverage (1 + c) / 2 = 0.8 + 0.01 seed, the weak reference's 0.6
    differences = np.array([0.2 + 0.01 * seed for seed in comparison.seeds])
    assert comparison.interval.median == pytest.approx(np.median(differences))
    assert comparison.verdict == 1 and comparison.interval.low > 0
    reverse = matched_comparison(record, "default", WEAK_ARM, APMD_ARM, 0.3)
    assert reverse.verdict == -1 and reverse.seeds == comparison.seeds
    # too few seeds reach the level: no interval, no verdict
    sparse = hand_record({"default": matched_paths(0.0, missing_first=(0, 1, 2))})
    few = matched_comparison(sparse, "default", APMD_ARM, WEAK_ARM, 0.3)
    assert len(few.seeds) == 5 < MIN_SEEDS and few.interval is None and few.verdict == 0
    assert few.summary == "5 seeds reach it"
    assert matched_comparison(record, "default", APMD_ARM, WEAK_ARM, 0.55).seeds == (0, 2, 3, 4, 5, 7)
    with pytest.raises(ValueError, match="has no runs"):
        matched_comparison(record, "default", APMD_ARM, EXACT_ARM, 0.3)


def test_matched_verdict_holds_only_where_every_profile_agrees():
    agree = hand_record({"default": matched_paths(0.0), "second": matched_paths(0.05)})
    assert profiles(agree) == ("default", "second")
    assert matched_verdict(agree, APMD_ARM, WEAK_ARM, 0.3) == 1
    assert matched_verdict(agree, WEAK_ARM, APMD_ARM, 0.3) == -1
    disagree = hand_record({"default": matched_paths(0.0), "second": matched_paths(-0.5)})
    assert matched_comparison(disagree, "second", APMD_ARM, WEAK_ARM, 0.3).verdict == -1
    assert matched_verdict(disagree, APMD_ARM, WEAK_ARM, 0.3) == 0


def test_median_frontier_is_nan_where_fewer_than_half_the_seeds_reach():
    record = hand_record({"default": matched_paths(0.0, n_seeds=4, missing_first=(0, 1, 2))})
    stats = median_frontier(record, "default", APMD_ARM, [0.0, 0.2, 0.5])
    assert stats.shape == (3, 4)
    # levels 0 and 0.2: every seed reaches them (0.2 is below the 0.25 top of the seeds that stop short)
    np.testing.assert_allclose(stats[0], [1.0, 1.0, 1.0, 4])
    at = [value_at_level(p, "pass1", "pass@256", 0.2) for p in block_paths(record, "default", "long", APMD_ARM)]
    assert len(set(at)) == 4
    np.testing.assert_allclose(stats[1], [np.median(at), *np.percentile(at, [25, 75]), 4])
    # level 0.5: one seed of four reaches it
    assert np.isnan(stats[2, :3]).all() and stats[2, 3] == 1
    half = hand_record({"default": matched_paths(0.0, n_seeds=4, missing_first=(0, 1))})
    assert np.isfinite(median_frontier(half, "default", APMD_ARM, [0.5])[0]).all()
    with pytest.raises(ValueError, match="levels"):
        median_frontier(record, "default", APMD_ARM, [])


def test_collapse_onset_counts_the_seeds_that_lost_and_their_median_step():
    paths = [hand_path(WEAK_ARM, s, [0.1, 0.2], [0.9, 0.5], lost=step) for s, step in enumerate((None, 96, 192, None))]
    paths += [hand_path(APMD_ARM, s, [0.1, 0.2], [0.9, 0.9]) for s in range(4)]
    record = hand_record({"default": paths})
    assert collapse_onset(record, "default", WEAK_ARM) == (2, 4, 144.0)
    assert collapse_onset(record, "default", APMD_ARM, panel="held-out") == (0, 4, None)
    with pytest.raises(ValueError, match="panel"):
        collapse_onset(record, "default", WEAK_ARM, panel="test")


def test_inner_accuracy_reads_the_apmd_arms_and_refuses_the_others():
    inner = [{"accuracy": [0.1], "accuracy_sum": [0.1], "total": total, "closed": closed}
             for total, closed in ((0.2, 0.9), (0.5, 0.7), (1.5, 0.4))]
    paths = [hand_path(APMD_ARM, s, [0.1, 0.2], [0.9, 0.9], inner=inner[s]) for s in range(3)]
    paths += [hand_path(WEAK_ARM, s, [0.1, 0.2], [0.9, 0.9]) for s in range(3)]
    record = hand_record({"default": paths})
    assert inner_accuracy(record, "default", APMD_ARM, "long") == {
        "closed": 0.7, "accumulated": 0.5, "within": 2, "seeds": 3}
    assert inner_accuracy(record, "default", APMD_ARM, "long", tolerance=0.3)["within"] == 1
    with pytest.raises(ValueError, match=r"\barm\b"):
        inner_accuracy(record, "default", WEAK_ARM, "long")
    with pytest.raises(ValueError, match="tolerance"):
        inner_accuracy(record, "default", APMD_ARM, "long", tolerance=-1.0)


def test_block_paths_are_in_seed_order_and_empty_for_an_arm_not_run():
    paths = [hand_path(APMD_ARM, s, [0.1, 0.2], [0.9, 0.9]) for s in (2, 0, 1)]
    record = hand_record({"default": paths})
    assert [path["seed"] for path in block_paths(record, "default", "24x32", APMD_ARM)] == [0, 1, 2]
    assert block_paths(record, "default", "long", EXACT_ARM) == []
    assert block_paths(record, "default", "long", APMD_ARM, reward="binary") == []


@pytest.mark.parametrize(("change", "argument"), [
    ({"profile": "third"}, "profile"), ({"block": "96x8"}, "block"), ({"arm": "APMD, guessed"}, "arm"),
    ({"reward": "graded"}, "reward"),
])
def test_block_paths_refuse_bad_input_naming_it(change, argument):
    record = hand_record({"default": [hand_path(APMD_ARM, 0, [0.1, 0.2], [0.9, 0.9])]})
    arguments = {"record": record, "profile": "default", "block": "long", "arm": APMD_ARM, **change}
    with pytest.raises(ValueError, match=rf"\b{argument}\b"):
        block_paths(**arguments)


def damaged(change) -> dict:
    record = hand_record({"default": [hand_path(APMD_ARM, 0, [0.1, 0.2], [0.9, 0.9])]})
    change(record)
    return record


@pytest.mark.parametrize("record", [
    None, "record", {"runs": []}, damaged(lambda r: r["runs"][0].pop("stamp")),
    damaged(lambda r: r["runs"][0]["blocks"].pop("48x16")), damaged(lambda r: r["runs"][0]["blocks"].update(long=[])),
    damaged(lambda r: r["runs"][0]["blocks"]["long"].update(paths=[])),
], ids=["none", "text", "no runs", "no stamp", "missing block", "block not a mapping", "no paths"])
def test_a_damaged_record_is_refused_naming_the_record(record):
    with pytest.raises(ValueError, match=r"\brecord\b"):
        profiles(record)


def test_read_frontier_record_refuses_a_file_that_is_not_a_stamped_frontier_record(tmp_path):
    missing = tmp_path / "absent.json"
    with pytest.raises(ValueError, match="path"):
        read_frontier_record(missing)
    text = tmp_path / "text.json"
    text.write_text("not json")
    with pytest.raises(ValueError, match="text.json"):
        read_frontier_record(text)
    unstamped = tmp_path / "unstamped.json"
    unstamped.write_text(json.dumps({"runs": [{"blocks": {}}]}))
    with pytest.raises(ValueError, match="unstamped.json"):
        read_frontier_record(unstamped)
    partial = tmp_path / "partial.json"
    record = hand_record({"default": [hand_path(APMD_ARM, 0, [0.1, 0.2], [0.9, 0.9])]})
    del record["runs"][0]["blocks"]["24x32"]
    partial.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"partial\.json.*blocks"):
        read_frontier_record(partial)
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(hand_record({"default": [hand_path(APMD_ARM, 0, [0.1, 0.2], [0.9, 0.9])]})))
    assert profiles(read_frontier_record(whole)) == ("default",)


# ---- the book's record -------------------------------------------------------------------------------


@pytest.mark.skipif(not FRONTIER_RECORD.is_file(), reason="the frontier record has not been written yet")
def test_the_books_record_holds_both_profiles_and_every_cell_of_every_block_on_eight_seeds():
    record = read_frontier_record()
    assert sorted(profiles(record)) == ["default", "second"]
    seeds = list(range(FRONTIER_SIZES["base_models"] * FRONTIER_SIZES["seeds_per_base"]))
    assert len(seeds) == 8
    for profile in profiles(record):
        for name, block in BLOCKS.items():
            entry = record["runs"][profiles(record).index(profile)]["blocks"][name]
            assert (entry["n_steps"], entry["inner_steps"]) == (block["n_steps"], block["inner_steps"])
            assert len(entry["paths"]) == len(block["cells"]) * len(seeds)
            for cell in block["cells"]:
                paths = block_paths(record, profile, name, cell.arm, cell.reward, cell.task)
                assert [path["seed"] for path in paths] == seeds, (profile, name, cell)
                assert all(path["optimizer_steps"][-1] == block["n_steps"] * block["inner_steps"] for path in paths)
            if name == "long":
                for reward in {cell.reward for cell in block["cells"]}:
                    descent = block_paths(record, profile, name, "mirror descent", reward)
                    assert [path["seed"] for path in descent] == seeds


def test_the_frontier_figures_draw_a_line_per_arm_and_mirror_descent_from_a_record():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from covpo.plots.transformer import FRONTIER_ARMS, transformer_frontier_figure, transformer_near_miss_figure
    from tests.fuzz_entry_points import frontier_record

    record, levels = frontier_record(), np.linspace(0.0, 0.6, 7)
    for figure in (transformer_frontier_figure(record, "second", levels),
                   transformer_near_miss_figure(record, "default", levels)):
        for axes in figure.axes:
            labels = [line.get_label() for line in axes.get_lines()]
            assert labels == [*FRONTIER_ARMS, "mirror descent"]
            # the arms the record runs are drawn wherever at least half their seeds reach the level
            drawn = {line.get_label(): len(line.get_xdata()) for line in axes.get_lines()}
            assert drawn[APMD_ARM] > 0 and drawn[WEAK_ARM] > 0 and drawn["mirror descent"] > 0
        plt.close(figure)


# ---- the KL form of the inner-loop condition ------------------------------------------------------


def approximate_chain(noise: float, steps: int = 12, beta: float = 0.5, seed: int = 0):
    """One prompt's APMD chain over six answers: each iterate is its exact target with ``noise`` of its mass moved.

    Answer 0 is correct (reward 1), answer 1 the near miss (0.9), the rest 0; the base model
    covers the correct answer with 0.01. Moving mass off the correct answer makes each step
    lose coverage against its target.
    """
    draw = np.random.default_rng(seed)
    rewards = np.array([1.0, 0.9, 0, 0, 0, 0])
    policy = np.array([0.01, 0.6, 0.1, 0.1, 0.1, 0.09])
    log_coverage, accuracy, target_coverage = [np.log(policy[0])], [], []
    for _ in range(steps):
        target = policy * np.exp(rewards / beta)
        target /= target.sum()
        moved = target.copy()
        moved[0] *= 1 - noise * draw.uniform(0.5, 1.0)
        moved[1:] += (target[0] - moved[0]) * draw.dirichlet(np.ones(5))
        accuracy.append(float((moved * np.log(moved / target)).sum()))
        target_coverage.append(np.log(target[0]))
        log_coverage.append(np.log(moved[0]))
        policy = moved
    column = lambda values: np.array(values)[:, None]  # noqa: E731
    return column(log_coverage), column(accuracy), column(target_coverage)


@pytest.mark.parametrize("noise", [0.0, 0.001, 0.05, 0.5, 0.95])
def test_the_kl_form_bounds_each_steps_loss_and_guarantees_half_the_coverage_where_met(noise):
    log_coverage, accuracy, target = approximate_chain(noise)
    condition = inner_condition(log_coverage, accuracy, target, np.array([True]))
    assert condition["violations"] == 0 and condition["met_and_lost"] == 0
    assert condition["error"] == pytest.approx((target[:, 0] - log_coverage[1:, 0]).sum(), rel=1e-3, abs=1e-9)
    kept = log_coverage.min() >= log_coverage[0, 0] - math.log(2)
    assert condition["kept_half"] == int(kept)
    if noise <= 0.001:
        assert condition["met"] == 1 and kept
    if noise >= 0.5:
        assert condition["met"] == 0 and not kept


def test_the_kl_form_is_a_sufficient_condition_not_a_necessary_one():
    """A chain that keeps its coverage while the budget, which pays for every step's KL, runs out."""
    log_coverage, accuracy, target = approximate_chain(0.05, steps=40)
    condition = inner_condition(log_coverage, accuracy, target, np.array([True]))
    assert condition["met"] == 0 and condition["kept_half"] == 1
    assert condition["budget"] is None or condition["budget"] > math.log(2)


@pytest.mark.parametrize("change, argument", [
    (lambda c, a, t, h: (np.abs(c) + 0.5, a, t, h), "log_coverage"),
    (lambda c, a, t, h: (c, a - 0.5, t, h), "prompt_accuracy"),
    (lambda c, a, t, h: (c, a, np.abs(t) + 0.5, h), "target_log_coverage"),
    (lambda c, a, t, h: (c, a[:-1], t, h), "log_coverage"),
    (lambda c, a, t, h: (c, a, t, np.array([False])), "log_coverage"),
])
def test_inner_condition_refuses_bad_input_naming_it(change, argument):
    arrays = change(*approximate_chain(0.01), np.array([True]))
    with pytest.raises(ValueError, match=argument):
        inner_condition(*arrays)


def test_arm_paths_pair_an_arm_across_blocks_and_tasks_by_seed():
    record = hand_record({"default": [hand_path(APMD_ARM, seed, [0.1, 0.5], [0.9, 0.5 + 0.01 * seed])
                                      for seed in range(MIN_SEEDS)]})
    same = matched_comparison(record, "default", ArmPaths("G64", APMD_ARM), APMD_ARM, 0.3)
    assert same.seeds == tuple(range(MIN_SEEDS)) and same.interval.median == 0 and same.verdict == 0
    assert same.first == f"{APMD_ARM}, G = 64" and same.second == APMD_ARM
    assert ArmPaths("route", WEAK_ARM, "decoupled").label == f"{WEAK_ARM}, decoupled task"
    with pytest.raises(ValueError, match="no runs on the decoupled task"):
        matched_comparison(record, "default", ArmPaths("route", APMD_ARM, "decoupled"), APMD_ARM, 0.3)
    with pytest.raises(ValueError, match="task"):
        ArmPaths("route", APMD_ARM, "sideways")


def test_condition_counts_sum_the_seeds_hard_prompts():
    condition = {"hard": 2, "met": 1, "kept_half": 2, "met_and_lost": 0, "violations": 0, "error": 0.5, "budget": None}
    inner = {"accuracy": [0.0], "accuracy_sum": [0.0], "total": 0.0, "closed": 0.5, "condition": condition}
    record = hand_record({"default": [hand_path(APMD_ARM, seed, [0.1, 0.5], [0.9, 0.8], inner=inner)
                                      for seed in range(3)]})
    counts = condition_counts(record, "default", APMD_ARM, "long")
    assert (counts["hard"], counts["met"], counts["kept_half"], counts["seeds"]) == (6, 3, 6, 3)
    assert condition_table(record, (APMD_ARM,)).rows[0][2:] == ("3 of 6", "6 of 6", "0.50")
    with pytest.raises(ValueError, match="blocks"):
        condition_table(record, (APMD_ARM,), ("sideways",))
    with pytest.raises(ValueError, match="no inner-loop condition"):
        condition_counts(hand_record({"default": [hand_path(WEAK_ARM, 0, [0.1], [0.9])]}), "default", WEAK_ARM,
                         "long")
