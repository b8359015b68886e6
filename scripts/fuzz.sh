#!/usr/bin/env bash
# The long fuzz run (the default test run has a short one: tests/fuzz/test_fuzz_targets.py).
#   scripts/fuzz.sh 600          # 600 s: hypothesis over every target (HYPOTHESIS_PROFILE=fuzz-long),
#                                # then, if atheris is installed, coverage-guided runs of each target
#   FUZZ_ENGINE=hypothesis scripts/fuzz.sh 600   # hypothesis only
#   FUZZ_ENGINE=atheris scripts/fuzz.sh 600      # atheris only
# Crashers land in tests/fuzz/regressions/<target>-<id>.bin: the default run replays them
# (tests/fuzz/test_fuzz_targets.py::test_regression_case); commit them with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TOTAL=${1:-600}
ENGINE=${FUZZ_ENGINE:-both}
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
export HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-fuzz-long}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
status=0
has_atheris=0
"$PY" -c "import atheris" 2>/dev/null && has_atheris=1
hyp_seconds=$SECONDS_TOTAL
if [ "$ENGINE" = both ] && [ $has_atheris = 1 ]; then
  hyp_seconds=$((SECONDS_TOTAL / 2))
fi
if [ "$ENGINE" != atheris ]; then
  "$PY" -m tests.fuzz.run --seconds "$hyp_seconds" || status=1
fi
if [ "$ENGINE" != hypothesis ]; then
  if [ $has_atheris = 0 ]; then
    echo "atheris not installed (pip install atheris): skipped" >&2
  else
    targets=$("$PY" -c "from tests.fuzz.targets import TARGETS; print(' '.join(sorted(TARGETS)))")
    n=$(echo "$targets" | wc -w)
    per=$(( (SECONDS_TOTAL - hyp_seconds) / n ))
    [ "$ENGINE" = atheris ] && per=$((SECONDS_TOTAL / n))
    [ "$per" -lt 1 ] && per=1
    work=$(mktemp -d)
    for t in $targets; do
      echo "atheris: $t for ${per}s"
      if ! "$PY" -m tests.fuzz.atheris_main "$t" "$work/corpus-$t" -max_total_time="$per" \
          -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$work/$t-" >"$work/$t.log" 2>&1; then
        status=1
        for crash in "$work/$t"-crash-* "$work/$t"-timeout-* "$work/$t"-oom-*; do
          [ -e "$crash" ] || continue
          dest="tests/fuzz/regressions/$t-$(sha1sum "$crash" | cut -c1-12).bin"
          cp "$crash" "$dest"
          echo "  crasher kept: $dest"
        done
        tail -n 30 "$work/$t.log"
      fi
      grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$work/$t.log" | tail -n 1 || true
    done
    rm -rf "$work"
  fi
fi
exit $status
