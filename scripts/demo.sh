#!/usr/bin/env bash
# The embedded default: a simulated gateway log, the bundled price table,
# /metrics on 127.0.0.1:9464 and a live summary. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "demo: setting up .venv (scripts/setup.sh), then the demo starts (Ctrl-C stops it)" >&2
scripts/setup.sh
exec .venv/bin/llm-savings-exporter demo "$@"
