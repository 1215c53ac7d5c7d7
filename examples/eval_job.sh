#!/usr/bin/env bash
# A sandboxed evaluation job: grade a checkpoint on swe_lite's held-out split, resumably.
#   bash examples/eval_job.sh runs/demo-*/checkpoints/step_000002 [test|dev]
# Every episode runs in a fresh hardened Docker sandbox; grading re-runs the hidden tests in another fresh
# sandbox with only the agent's source changes applied. Re-running the same command skips finished episodes.
set -euo pipefail
ckpt=${1:?usage: eval_job.sh CHECKPOINT_DIR [split]}
split=${2:-test}
out="$ckpt/eval-$split.jsonl"
agentrl eval --env swe_lite --oracle gold --split "$split" --out "$ckpt/oracle-$split.jsonl"   # grader sanity: 100 %
agentrl eval --env swe_lite --model "$ckpt/model" --split "$split" --samples 4 --concurrency 4 --out "$out"
echo "episodes: $out"
# Any other env works the same way, with seeds as tasks: agentrl eval --env calc --model "$ckpt/model" --num-tasks 50
