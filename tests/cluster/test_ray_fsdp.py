"""The Ray launch of a sharded run: `agentrl train ... trainer.strategy=fsdp trainer.ranks=2 cluster.backend=ray`
starts rank 1 as a Ray actor (this process is rank 0) next to the rollout workers, trains 2 steps on calc and
leaves no actor behind. A local Ray cluster on loopback, gloo, the tiny model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_ray_starts_the_second_rank_and_trains_calc(tmp_path):
    """Guards the documented Ray command: the driver leads a 2-rank FSDP group whose other rank Ray placed,
    both ranks train every step (the checkpoint holds two ranks' shards) and the run exits 0."""
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "agentrl", "train", "--env", "calc", "model.name=tiny", "sft.episodes=0",
           "rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=8", "rollout.max_turns=1",
           "rollout.dynamic_sampling=false", "trainer.steps=2", "trainer.tensorboard=false", "trainer.sample_every=0",
           "trainer.strategy=fsdp", "trainer.ranks=2", "cluster.backend=ray", "cluster.num_workers=1",
           f"trainer.run_dir={run}"]
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-5000:]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in rows] == [1, 2]
    assert all(m["trainer/optimizer_steps"] == 1 for m in rows)
    ckpt = run / "checkpoints" / "step_000002"
    assert json.loads((ckpt / "state.json").read_text())["world_size"] == 2
    assert sorted(p.name for p in (ckpt / "sharded").glob("*.distcp")) == ["__0_0.distcp", "__1_0.distcp"]
    assert not _rank_actors(), "a rank actor outlived the run"


def _rank_actors() -> list[int]:
    """Pids of live Ray TrainerRank actor processes on this machine."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"TrainerRank" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
