#!/usr/bin/env bash
# Run one pytest selection N times in a row, stopping at the first failure; prints each run's time and the total.
# Usage: scripts/loop_test.sh "tests/trainer/test_pipeline.py -k in_flight" 20
#        make loop-test T="tests/rollout/test_serve.py" N=20
# For concurrency changes: a flaky test is a bug, so loop it (and once with the CPU loaded) before committing.
set -u
T="${1:?usage: loop_test.sh \"<pytest args>\" [N]}"
N="${2:-20}"
PY="${PYTHON:-.venv/bin/python}"
start=$(date +%s)
for i in $(seq 1 "$N"); do
  t0=$(date +%s)
  # shellcheck disable=SC2086  # T holds several pytest arguments
  if ! $PY -m pytest $T -q -x -p no:cacheprovider > "/tmp/loop_test.$$.log" 2>&1; then
    tail -40 "/tmp/loop_test.$$.log"
    echo "loop-test: run $i of $N FAILED after $(( $(date +%s) - start ))s: $T"
    exit 1
  fi
  echo "loop-test: run $i/$N passed in $(( $(date +%s) - t0 ))s ($(tail -1 "/tmp/loop_test.$$.log"))"
done
rm -f "/tmp/loop_test.$$.log"
echo "loop-test: $N/$N passed in $(( $(date +%s) - start ))s (load average: $(cut -d' ' -f1-3 /proc/loadavg)): $T"
