#!/usr/bin/env bash
# The whole test suite from a fresh clone: set-up, lint, type check, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
.venv/bin/ruff check exporter tests scripts
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
