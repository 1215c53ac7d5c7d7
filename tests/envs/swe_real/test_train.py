"""`agentrl train --env swe_real` end to end on the tiny model with real Docker sandboxes and a real package's
suite as the hidden tests: expert warm start, one GRPO step, nothing masked. Guards the wiring between the
swe_real preset (longer command and grading budgets), the env on a real repository, and the update."""

from __future__ import annotations

import json
import math

import pytest

from agentrl.config import load_config
from agentrl.trainer.loop import train
from agentrl.types import Trajectory

pytestmark = [pytest.mark.slow, pytest.mark.docker]


def test_one_training_step_on_swe_real(tmp_path, docker_backend, cache_ready):
    cfg = load_config("swe_real", overrides=[
        "model.name=tiny", f"env.kwargs.backend={docker_backend}", "env.kwargs.level=0",
        "sft.episodes=1", "sft.epochs=1", "rollout.tasks_per_step=1", "rollout.group_size=2",
        "rollout.max_turns=3", "rollout.max_new_tokens=160", "rollout.max_context_tokens=4096",
        "rollout.dynamic_sampling=false", "trainer.steps=1", "trainer.lr=1e-3", "trainer.tensorboard=false",
        f"trainer.run_dir={tmp_path / 'run'}",
    ])
    result = train(cfg)
    rec = json.loads(result.metrics.read_text().splitlines()[-1])
    assert rec["rollout/episodes"] == 2
    assert rec["rollout/masked_episodes"] == 0, "sandbox or env failures in a plain swe_real step"
    assert math.isfinite(rec["actor/loss"]) and rec["trainer/version"] == 1
    episodes = [Trajectory.from_json(x) for x in (result.run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert {e.env_id for e in episodes} == {"agentrl/swe_real-v0"}
    assert all(e.reward_info.get("grading_mode") in ("suite_judge", "") for e in episodes)
