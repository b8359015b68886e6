#!/usr/bin/env bash
# The whole test suite from a fresh clone: set-up, lint, type check, tests, then the fast loop
# again under another time zone and the sampled mutation run (docs/mutation.md).
# With arguments, only pytest runs, with them (scripts/test.sh tests/engine -x).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
.venv/bin/ruff check exporter tests scripts
.venv/bin/mypy
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest "$@"
fi
.venv/bin/python -m pytest
# Naive timestamps are UTC: code that read them as local time passes on a UTC machine (CI's
# clock) and fails only elsewhere. Pacific/Chatham: UTC+12:45/+13:45, an odd offset with DST.
TZ=Pacific/Chatham .venv/bin/python -m pytest -m "not e2e and not slow" -q -p no:cacheprovider
# a fixed-seed sample of the mutants the last full mutation run killed must still be killed
scripts/mutation.sh sample
