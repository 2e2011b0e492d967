"""The second CPU profile that CI builds the book under really changes the kernels numpy runs."""

import json
import os
import platform
import subprocess
import sys

from tests.conftest import REPOSITORY

sys.path.insert(0, str(REPOSITORY / "scripts"))
from cpu_profile import XLA_CAP, dispatch_groups_present, second_profile  # noqa: E402

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


def test_second_profile_caps_xla_on_x86_and_jax_still_runs_under_it():
    profile = second_profile()
    if platform.machine() not in ("x86_64", "AMD64"):
        assert "XLA_FLAGS" not in profile
        return
    assert XLA_CAP in profile["XLA_FLAGS"].split()
    result = subprocess.run(
        [sys.executable, "-c", "import jax.numpy as jnp; print(float(jnp.exp(jnp.ones(4)).sum()))"],
        env={**os.environ, **profile}, capture_output=True, text=True, check=True,
    )
    assert abs(float(result.stdout) - 4 * 2.718281828459045) < 1e-5
    assert "Unknown CPU ISA" not in result.stderr
