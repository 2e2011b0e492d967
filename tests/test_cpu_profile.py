"""The second CPU profile that CI builds the book under really changes the kernels numpy runs."""

import json
import os
import subprocess
import sys

from tests.conftest import REPOSITORY

sys.path.insert(0, str(REPOSITORY / "scripts"))
from cpu_profile import dispatch_groups_present, second_profile  # noqa: E402

RUNTIME_GROUPS = "import json; from numpy._core._multiarray_umath import __cpu_features__; print(json.dumps(__cpu_features__))"


def test_second_profile_compiles_numba_for_a_generic_cpu():
    assert second_profile()["NUMBA_CPU_NAME"] == "generic"


def test_second_profile_turns_off_every_dispatch_group_this_cpu_has():
    profile = second_profile()
    groups = dispatch_groups_present()
    assert profile.get("NPY_DISABLE_CPU_FEATURES", "") == ",".join(groups)
    features = json.loads(
        subprocess.run(
            [sys.executable, "-c", RUNTIME_GROUPS], env={**os.environ, **profile},
            capture_output=True, text=True, check=True,
        ).stdout
    )
    assert not any(features[group] for group in groups)
