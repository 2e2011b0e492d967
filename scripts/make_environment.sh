#!/usr/bin/env bash
# Make the book's virtual environment, .venv (or bring an existing one up to requirements.txt);
# with --browser, also install the system's Chromium for the browser tests (tests/install-browser.sh)
# while the requirements install: both spend most of their time waiting on downloads.
#
# The venv's own pip installs one pinned tool, uv, and uv installs requirements.txt into the
# venv: it fetches the package indexes and the wheels in parallel where pip fetches them one
# after another. Then the bytecode of the installed modules a test session imports (about 4,100
# of the 9,600, listed in scripts/bytecode_modules.txt) is compiled on every core
# (scripts/bytecode_manifest.py): without it every process of a test session (kernels, workers,
# the build) compiles the modules it imports again where the environment does not write
# bytecode, and compiling all 9,600, as pip or uv --compile-bytecode do, took three times as long.
# A module the list misses is compiled when it is imported. The book's own modules (the covpo
# package, installed editable, and the tests' helpers) are compiled too. Binder installs the same
# requirements.txt with pip.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") ;;
  --browser)
    # The script waits for the browser's install however it ends, so none is left running.
    trap wait EXIT
    bash tests/install-browser.sh &
    ;;
  *) echo "usage: bash scripts/make_environment.sh [--browser]" >&2; exit 2 ;;
esac
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check uv==0.13.9
.venv/bin/uv pip install --python .venv/bin/python -r requirements.txt
.venv/bin/python scripts/bytecode_manifest.py
.venv/bin/python -m compileall -q -j 0 src tests
