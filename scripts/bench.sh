#!/usr/bin/env bash
# The benchmark suite side by side with the peers (mtail, LiteLLM, prometheus_client, raw tiktoken):
# prints one table and writes docs/performance.md. Takes about 15-25 minutes on 2 cores; --quick for a
# smoke run with scaled-down sizes (no doc). Not part of the test suite.
#   scripts/bench.sh [--quick] [--only ingest,pricing,counting,scrape,sidecar,memory] [--no-doc]
# Peers: Debian's mtail (apt-get install mtail); LiteLLM in a separate venv, never a project dependency:
#   python3 -m venv --system-site-packages /tmp/bench-venv && /tmp/bench-venv/bin/pip install litellm
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's venv (scripts/setup.sh) when there is one, else python3; $PYTHON overrides both.
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
exec "$PYTHON" -m tests.bench.run_all "$@"
