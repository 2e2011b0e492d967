#!/usr/bin/env bash
# Make the book's virtual environment, .venv (or bring an existing one up to requirements.txt);
# with --browser, also install the system's Chromium for the browser tests (tests/install-browser.sh)
# while pip works: both spend most of their time waiting on downloads.
#
# A pinned pip first: its resolver takes under half the time of the pip that Python 3.11's venv
# brings. Then requirements.txt, without compiling the packages' bytecode: pip compiles every
# installed module one after another on one core (about 9,400 files, half the install's time on
# a 2-core machine), so compileall does it afterwards on every core. The bytecode is still
# needed: without it every process of a test session (kernels, workers, the build) compiles the
# modules it imports again where the environment does not write bytecode. A file that does not
# compile is left to compile when it is imported, as pip leaves it.
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
.venv/bin/pip install pip==26.2.1
.venv/bin/pip install --no-compile -r requirements.txt
.venv/bin/python -c "import compileall; compileall.compile_dir('.venv/lib', quiet=2, workers=0)"
