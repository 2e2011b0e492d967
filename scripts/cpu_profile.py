"""The second CPU profile: the environment under which the book must also build.

Seeded runs are bit-identical on one machine but not across machines, because numpy picks
SIMD kernels for ``exp``, ``log`` and reductions by CPU, numba compiles for the host CPU and
OpenBLAS picks a kernel per CPU; XLA (the transformer chapter's JAX) likewise vectorizes for the
host CPU. The second profile turns off every numpy dispatch group above numpy's baseline that this
machine has, compiles numba for a generic CPU and, on x86-64, caps XLA at SSE4.2, so a build under
it computes with different rounding than the default one, as a reader's laptop would.
``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` are left as the machine has them: some machines
set them because older OpenBLAS kernels compute wrong results there.

Run as a script, it prints the profile as ``NAME=value`` lines, for ``env``::

    env $(python scripts/cpu_profile.py) jupyter-book build . -W -n --keep-going
"""

from __future__ import annotations

import os
import platform

from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

from covpo.records import PROFILE_VARIABLES


XLA_CAP = "--xla_cpu_max_isa=SSE4_2"
"""The XLA flag of the second profile on x86-64: no vector instructions above SSE4.2."""


def profile_environment() -> dict[str, str]:
    """The variables of :data:`PROFILE_VARIABLES` that this process runs with (a record of a run keeps them)."""
    return {name: os.environ[name] for name in PROFILE_VARIABLES if name in os.environ}


def dispatch_groups_present() -> list[str]:
    """numpy's dispatch groups above its baseline that this CPU supports, e.g. ``['X86_V3', 'X86_V4']``."""
    return [group for group in __cpu_dispatch__ if __cpu_features__.get(group, False)]


def second_profile() -> dict[str, str]:
    """Environment variables of the second CPU profile (see the module docstring)."""
    profile = {"NUMBA_CPU_NAME": "generic"}
    groups = dispatch_groups_present()
    if groups:
        profile["NPY_DISABLE_CPU_FEATURES"] = ",".join(groups)
    if platform.machine() in ("x86_64", "AMD64"):
        profile["XLA_FLAGS"] = " ".join(filter(None, [os.environ.get("XLA_FLAGS"), XLA_CAP]))
    return profile


if __name__ == "__main__":
    for name, value in second_profile().items():
        print(f"{name}={value}")
