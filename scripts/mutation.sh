#!/usr/bin/env bash
# Mutation testing of the arithmetic core with mutmut (docs/mutation.md; settings in pyproject.toml).
#   scripts/mutation.sh full     # every mutant of the modules of [tool.mutmut]; writes docs/mutation.md and
#                                # tests/mutation/killed.json (hours on two shared cores since the v2 modules)
#   scripts/mutation.sh sample   # CI: a fixed-seed sample of the mutants the last full run killed;
#                                # fails when one of them survives (about 1.5 min on an idle 2-core machine)
# MUTATION_SEED (default 20), MUTATION_SAMPLE (default 150) and MUTATION_JOBS (default: all cores)
# tune them. mutmut works in a copy of the tree, mutants/ (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
jobs=${MUTATION_JOBS:-$(nproc)}
py=.venv/bin/python
mutmut=.venv/bin/mutmut
case "$mode" in
  full)
    rm -rf mutants
    start=$(date +%s)
    # mutmut prints a progress line per mutant; keep only its summary
    nice -n 10 "$mutmut" run --max-children "$jobs" > mutants.log 2>&1 || { tail -n 40 mutants.log >&2; exit 1; }
    mv mutants.log mutants/run.log
    "$py" scripts/mutation_report.py full "scripts/mutation.sh full  # $(( ($(date +%s) - start) / 60 )) min, MUTATION_JOBS=$jobs, mutmut 3.8.1"
    ;;
  sample)
    seed=${MUTATION_SEED:-20}
    count=${MUTATION_SAMPLE:-150}
    mapfile -t names < <("$py" scripts/mutation_report.py pick "$seed" "$count")
    if [ ${#names[@]} -eq 0 ]; then  # without names mutmut would run every mutant
      echo "no killed mutants to sample (tests/mutation/killed.json): run scripts/mutation.sh full" >&2
      exit 1
    fi
    # from an empty mutants/: mutmut copies tests/ into it but never deletes a file there, so a
    # test removed since would still run from a kept copy (and still kill its mutants)
    rm -rf mutants
    start=$(date +%s)
    if ! "$mutmut" run --max-children "$jobs" "${names[@]}" > mutants.log 2>&1; then
      tail -n 40 mutants.log >&2
      exit 1
    fi
    mv mutants.log mutants/run.log
    "$py" scripts/mutation_report.py check "${names[@]}"
    echo "mutation sample (seed $seed, $count mutants): $(( $(date +%s) - start )) s"
    ;;
  *)
    sed -n '2,8p' "$0" >&2
    exit 2
    ;;
esac
