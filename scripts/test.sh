#!/usr/bin/env bash
# The whole test suite from a fresh clone: set-up, lint, type check, tests, then the fast loop
# again under another time zone and the sampled mutation run (docs/mutation.md).
# With arguments, only pytest runs, with them (scripts/test.sh tests/engine -x).
#
# Without arguments, after set-up, ruff and mypy: the fault suite alone (its sidecars must start and
# catch up between kills ~2 s apart), then two lanes at once (docs/testing.md): lane A, in the
# foreground, the rest of the tests that start processes and the slow ones (-m "e2e or slow");
# lane B, niced, the fast loop, the fast loop again under TZ=Pacific/Chatham, then the mutation
# sample. The selections are complementary: together they are the whole suite. Beside them the
# live-capture venvs and the image are built in the background (downloads, mostly), under the
# locks their tests take too; those tests run last.
# Logs and per-phase times: .cache/ci/.
set -euo pipefail
cd "$(dirname "$0")/.."
LOGS=.cache/ci
mkdir -p "$LOGS"
: > "$LOGS/phases.txt"
t_start=$(date +%s)
# phase NAME COMMAND...: run it, append "NAME seconds rc" to phases.txt, keep its status
phase() {
  local name=$1 t0 rc=0
  shift
  t0=$(date +%s)
  "$@" || rc=$?
  echo "$name $(( $(date +%s) - t0 ))s rc=$rc" >> "$LOGS/phases.txt"
  return "$rc"
}
phase setup scripts/setup.sh --test
bg=()  # the background jobs, each in its own process group (set -m), stopped whole if this script stops early
trap 'for pgid in "${bg[@]}"; do kill -- "-$pgid" 2>/dev/null || true; done' EXIT
# Background, niced, at once (downloads, mostly): the live-capture venvs (tests/live/make_envs.py)
# and the image (scripts/build_image.sh). A test reaching one still being built waits on its lock;
# a failed build here is built again, and reported, by its test.
prefetch() {
  set -m
  ( phase prefetch-live-envs nice -n 10 .venv/bin/python -m tests.live.make_envs > "$LOGS/live-envs.log" 2>&1 || true ) &
  bg+=($!)
  if [ "$(id -u)" -eq 0 ] && command -v buildah >/dev/null 2>&1; then
    ( phase prefetch-image nice -n 10 scripts/build_image.sh > "$LOGS/image.log" 2>&1 || true ) &
    bg+=($!)
  fi
  set +m
}
phase ruff .venv/bin/ruff check exporter tests scripts
phase mypy .venv/bin/mypy
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest "$@"
fi
FAST=(-m "not e2e and not slow" -q -p no:cacheprovider)
# junit files: the time of every test, by lane (docs/testing.md groups them by file)
lane_b() {
  # lane B's CPU-bound work yields to lane A, whose tests wait on processes with deadlines
  renice -n 10 -p "$BASHPID" >/dev/null
  phase fast-loop .venv/bin/python -m pytest "${FAST[@]}" --junitxml="$LOGS/junit-fast.xml" || return 1
  # Naive timestamps are UTC: code that read them as local time passes on a UTC machine (CI's
  # clock) and fails only elsewhere. Pacific/Chatham: UTC+12:45/+13:45, an odd offset with DST.
  phase fast-loop-chatham env TZ=Pacific/Chatham .venv/bin/python -m pytest "${FAST[@]}" || return 1
  # a fixed-seed sample of the mutants the last full mutation run killed must still be killed
  phase mutation-sample scripts/mutation.sh sample
}
rc_a=0
# First the fault suite alone: its sidecars are killed every ~2 s and must start and commit between
# kills (tests/e2e/faults/test_crash_loop.py lost lines with lane B's collection beside it). Then
# the builds, lane B and the rest of lane A at once.
phase faults .venv/bin/python -m pytest tests/e2e/faults --junitxml="$LOGS/junit-faults.xml" || rc_a=$?
prefetch
set -m
lane_b > "$LOGS/lane-b.log" 2>&1 &
lane_b_pid=$!
bg+=("$lane_b_pid")
set +m
phase e2e-and-slow .venv/bin/python -m pytest -m "e2e or slow" --ignore=tests/e2e/faults \
  --junitxml="$LOGS/junit-e2e-and-slow.xml" || rc_a=$?
# lane A is done: lane B gets its full share back (lowering a niceness needs root; else it stays niced)
renice -n 0 -g "$lane_b_pid" >/dev/null 2>&1 || true
rc_b=0
wait "$lane_b_pid" || rc_b=$?
for pid in "${bg[@]}"; do wait "$pid" || true; done
bg=()
echo "--- lane B: fast loop, fast loop under TZ=Pacific/Chatham, mutation sample ($LOGS/lane-b.log)"
cat "$LOGS/lane-b.log"
echo "--- phases (seconds; lanes A and B overlap, the prefetch runs behind ruff, mypy and lane A)"
cat "$LOGS/phases.txt"
echo "total $(( $(date +%s) - t_start ))s"
[ "$rc_a" -eq 0 ] && [ "$rc_b" -eq 0 ]
