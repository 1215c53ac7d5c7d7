#!/usr/bin/env bash
# Run one pytest selection N times in a row, stopping at the first failure; prints each run's time and the total.
# Usage: scripts/loop_test.sh N <pytest args...>
#        scripts/loop_test.sh 20 tests/trainer/test_pipeline.py -k "in_flight or labels"
#        make loop-test T="tests/engine/test_serve.py::test_retract_pause_recomputes_running_requests_with_the_new_weights" N=20
# For concurrency changes: a flaky test is a bug, so loop it (and once with the CPU loaded) before committing.
set -u
N="${1:?usage: loop_test.sh N <pytest args...>}"
shift
[ $# -gt 0 ] || { echo "usage: loop_test.sh N <pytest args...>"; exit 2; }
PY="${PYTHON:-.venv/bin/python}"
log="$(mktemp -t loop_test.XXXXXX)"
start=$(date +%s)
for i in $(seq 1 "$N"); do
  t0=$(date +%s)
  if ! "$PY" -m pytest "$@" -q -x -p no:cacheprovider > "$log" 2>&1; then
    tail -40 "$log"
    echo "loop-test: run $i of $N FAILED after $(( $(date +%s) - start ))s: $*"
    exit 1
  fi
  echo "loop-test: run $i/$N passed in $(( $(date +%s) - t0 ))s ($(tail -1 "$log"))"
done
rm -f "$log"
echo "loop-test: $N/$N passed in $(( $(date +%s) - start ))s (load average now: $(cut -d' ' -f1-3 /proc/loadavg)): $*"
