#!/usr/bin/env bash
# Idempotent set-up for a fresh clone: a virtualenv with the package, and for
# tests the Debian packages (promtool and a real Prometheus server, logrotate, mtail, chromium,
# buildah and debootstrap for the image build).
#   scripts/setup.sh          # runtime only (what `make demo` needs)
#   scripts/setup.sh --test   # plus test dependencies and Debian packages
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
MODE=${1:-}
# One line per step on stderr for `make demo` (the first run takes about 45 s); quiet with --test (CI).
say() {
  if [ "$MODE" != "--test" ]; then echo "setup: $*" >&2; fi
}
if [ ! -x .venv/bin/python ]; then
  say "creating the virtualenv .venv ($("$PY" --version 2>&1))"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# pip's build chatter goes to a log, shown only when the install fails.
pip_install() {
  if ! .venv/bin/python -m pip install -q "$@" > .venv/setup.log 2>&1; then
    cat .venv/setup.log >&2
    exit 1
  fi
}
if [ "$MODE" = "--test" ]; then
  pip_install -e '.[dev]'
  need=()
  command -v promtool >/dev/null 2>&1 || need+=(prometheus)
  command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
  # the fault suite drives the real logrotate binary
  command -v logrotate >/dev/null 2>&1 || [ -x /usr/sbin/logrotate ] || need+=(logrotate)
  # the benchmark peer whose sums a test compares with replay's
  command -v mtail >/dev/null 2>&1 || need+=(mtail)
  # the landing page and the HTML report are rendered in headless Chromium (tests/e2e/test_landing_*.py)
  # (and a font: --no-install-recommends leaves chromium without one)
  command -v chromium >/dev/null 2>&1 || need+=(chromium fonts-dejavu-core)
  # the image is built and run for real: buildah (bud/run --isolation chroot) on a debootstrap base
  command -v buildah >/dev/null 2>&1 || need+=(buildah)
  command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
  # scripts/test.sh runs the fast loop again under TZ=Pacific/Chatham
  [ -e /usr/share/zoneinfo/Pacific/Chatham ] || need+=(tzdata)
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
else
  if [ -x .venv/bin/llm-savings-exporter ]; then
    say "checking llm-savings-exporter in .venv is up to date (pip install -e .)"
  else
    say "installing llm-savings-exporter and its dependencies into .venv (pip, about 45 s the first time)"
  fi
  pip_install -e .
  say "ready: .venv/bin/llm-savings-exporter"
fi
