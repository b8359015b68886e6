#!/usr/bin/env bash
# The benchmark suite side by side with the peers (mtail, LiteLLM, prometheus_client, raw tiktoken):
# prints one table and writes docs/performance.md. Takes about 15-25 minutes on 2 cores; --quick for a
# smoke run with scaled-down sizes (no doc). Not part of the test suite.
#   scripts/bench.sh [--quick] [--only ingest,pricing,genai,counting,scrape,sidecar,memory,otlp] [--no-doc]
# Peers: Debian's mtail (scripts/setup.sh installs it); LiteLLM in a venv of its own, never a project
# dependency: /tmp/bench-venv, built here when missing and the pricing section is run (about a minute, once;
# BENCH_NO_PEERS=1 skips it and the pricing row says how to build it).
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's venv (scripts/setup.sh) when there is one, else python3; $PYTHON overrides both.
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
case " $* " in
  *" --only "*|*" --only="*) [[ " $* " == *pricing* ]] || BENCH_NO_PEERS=1 ;;
esac
if [ "${BENCH_NO_PEERS:-0}" != 1 ] && [ ! -x /tmp/bench-venv/bin/python ]; then
  LITELLM_PIN=$("$PYTHON" -c 'from tests.bench.bench_pricing import LITELLM_PIN; print(LITELLM_PIN)')
  echo "building /tmp/bench-venv ($LITELLM_PIN and this project) for the pricing row's peer" >&2
  if ! { "$PYTHON" -m venv /tmp/bench-venv && /tmp/bench-venv/bin/pip install -q -e . "$LITELLM_PIN"; }; then
    echo "could not build /tmp/bench-venv: the pricing row will be skipped" >&2
    rm -rf /tmp/bench-venv
  fi
fi
exec "$PYTHON" -m tests.bench.run_all "$@"
