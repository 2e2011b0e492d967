"""Stamped records (covpo.records), rates over seeds (covpo.rates) and the stated-settings check."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from covpo.rates import rate_of, wilson_rate
from covpo.records import (
    code_hash,
    read_stamped_record,
    stale_sources,
    stamp,
    stamped_record_files,
    write_stamped_run,
)
from covpo.stated_settings import check_stated_settings


# A hash of the code's text and the record's stamps: structure, the same on every CPU.
@pytest.mark.same_on_every_cpu
@pytest.mark.parametrize("path", stamped_record_files(), ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_stamped_record_was_made_by_todays_code(path: Path) -> None:
    assert {run["stamp"]["profile"] for run in read_stamped_record(path)["runs"]} == {"default", "second"}, (
        f"{path}: a record holds one run under each CPU profile"
    )
    for run in read_stamped_record(path)["runs"]:
        assert stale_sources(run["stamp"]) is None, (
            f"{path}: {stale_sources(run['stamp'])} under both CPU profiles, "
            "or run `python scripts/regenerate_records.py` for every stale record"
        )


def test_a_stamp_names_commit_code_profile_machine_and_time() -> None:
    made = stamp("python scripts/x.py", ["covpo.rates"], [], 1.25)
    assert made["code_hash"] == code_hash(["covpo.rates"])
    assert made["profile"] in ("default", "second") and made["seconds"] == 1.2
    assert made["cpu"] and made["machine"] and made["time"].endswith("+00:00")
    assert stale_sources(made) is None


def test_a_changed_source_makes_the_record_stale(tmp_path: Path) -> None:
    made = stamp("python scripts/x.py", ["covpo.rates"], [], 0.0)
    made["code_hash"] = "0" * 64
    assert "python scripts/x.py" in stale_sources(made)


def test_a_record_keeps_one_run_per_profile_and_drops_other_code(tmp_path: Path) -> None:
    path = tmp_path / "study_record.json"
    first = {"stamp": stamp("c", ["covpo.rates"], [], 0.0), "value": 1}
    write_stamped_run(path, first)
    write_stamped_run(path, {**first, "value": 2})
    assert [run["value"] for run in read_stamped_record(path)["runs"]] == [2]
    other = {"stamp": {**first["stamp"], "profile": "other", "code_hash": "x"}, "value": 3}
    write_stamped_run(path, other)
    assert [run["value"] for run in read_stamped_record(path)["runs"]] == [3]
    assert stamped_record_files(tmp_path) == [path]


@pytest.mark.parametrize("text", ["", "not json", json.dumps({"runs": []}), json.dumps({"runs": [{"x": 1}]})])
def test_a_file_that_is_not_a_stamped_record_is_refused_by_name(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad_record.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="bad_record.json|path"):
        read_stamped_record(path)


def test_wilson_interval_matches_its_closed_form() -> None:
    rate = wilson_rate(52, 60)
    z, p, n = 1.959963984540054, 52 / 60, 60
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    assert rate.low == pytest.approx(centre - half, rel=1e-9) and rate.high == pytest.approx(centre + half, rel=1e-9)
    assert rate.text() == "52 of 60 (95% interval 76-93%)"
    assert wilson_rate(0, 5).low == 0.0 and wilson_rate(5, 5).high == pytest.approx(1.0)
    assert rate_of(np.array([True, False, True, True])).successes == 3


@pytest.mark.parametrize("arguments", [(6, 5), (-1, 5), (1, 0), (1.5, 3), (1, 5, 1.0), (1, 5, float("nan"))])
def test_bad_counts_get_a_named_error(arguments: tuple) -> None:
    with pytest.raises(ValueError, match="successes|trials|level"):
        wilson_rate(*arguments)


def test_stated_settings_pass_when_equal_and_list_every_difference() -> None:
    assert check_stated_settings({"batch": (256, 256), "span": (160 / 10, 16.0), "name": ("k3", "k3")}) == 3
    with pytest.raises(AssertionError, match="batch.*512.*256") as raised:
        check_stated_settings({"batch": (512, 256), "grid": (np.array([1, 2]), (1, 3))})
    assert "grid" in str(raised.value)
    with pytest.raises(ValueError, match="settings"):
        check_stated_settings({"batch": 256})


def test_the_code_hash_ignores_docstrings_comments_and_layout_but_not_code(tmp_path: Path) -> None:
    from covpo.records import code_text

    def text(source: str) -> bytes:
        path = tmp_path / "module.py"
        path.write_text(source)
        return code_text(path)

    original = text('"""Doc."""\nX = 1\n"""X\'s doc."""\n\ndef f(a):\n    """Doc."""\n    return a * 2  # twice\n')
    assert text('"""Other doc."""\nX = 1\n\ndef f(a):\n    return a * 2\n') == original
    assert text('"""Doc."""\nX = 1\n\ndef f(a):\n    return a * 3\n') != original
    assert text('"""Doc."""\nX = 2\n\ndef f(a):\n    return a * 2\n') != original
