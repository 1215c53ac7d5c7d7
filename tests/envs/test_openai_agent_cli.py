"""The user's path for an agent written against the `openai` package: `agentrl train` on examples/openai_agent.py
for a few steps, the prefix-mismatch rate on every step's console line, then `agentrl eval` of the checkpoint on
held-out seeds. The tiny model writes no tool calls, so rewards are 0; the flow is what is tested."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentrl.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_agent.py"


@pytest.mark.slow
def test_the_openai_example_trains_from_the_cli_and_its_checkpoint_evaluates(tmp_path, capsys):
    env = f"external:{EXAMPLE}:run"
    run_dir = tmp_path / "run"
    argv = ["train", "--env", env, "model.name=tiny", "rollout.tasks_per_step=2", "rollout.group_size=2",
            "rollout.max_new_tokens=8", "rollout.max_context_tokens=512", "rollout.max_turns=2",
            "rollout.dynamic_sampling=false", "trainer.tensorboard=false", "trainer.steps=2",
            "trainer.checkpoint_every=2", "trainer.sample_every=0", f"trainer.run_dir={run_dir}"]
    code, err = main(argv), capsys.readouterr().err  # the console is stderr (rich wraps its lines)
    assert code == 0, err
    words = " ".join(err.split())
    assert re.findall(r"step (\d+): reward \S+ kept \S+ groups prefix mismatch 0\.0%", words) == ["1", "2"], err
    recs = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["gateway/prefix_mismatch_rate"] for r in recs] == [0.0, 0.0]
    assert all(r["termination/done"] == 4 for r in recs)  # every episode ended with the program's own reward

    results = tmp_path / "eval.jsonl"
    model = run_dir / "checkpoints" / "step_000002" / "model"
    assert model.is_dir(), sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    argv = ["eval", "--env", env, "--model", str(model), "--num-tasks", "3", "--task-seed", "1000",
            "--max-turns", "2", "--out", str(results)]
    assert main(argv) == 0, capsys.readouterr().err
    rows = [json.loads(x) for x in results.read_text().splitlines()]
    assert len(rows) == 3 and len({r["instance_id"] for r in rows}) == 3
    assert all(r["termination"] == "done" and r["reward"] in (0.0, 1.0) for r in rows), rows
