"""`agentrl train --env swe_lite` end to end on the tiny model with real Docker sandboxes: expert warm start,
one GRPO step, a checkpoint that loads. Guards the wiring between the swe_lite preset, the sandboxed env,
the agent loop and the update (a swe_lite-only break — e.g. a kwarg the preset passes, or an observation
that overflows the context — would not show on calc)."""

from __future__ import annotations

import json
import math

import pytest
from agentrl.envs.swe_lite import SweLiteEnv

from agentrl.config import load_config
from agentrl.models import load_model
from agentrl.tool_calls import FormatError, parse_tool_call
from agentrl.trainer.loop import train
from agentrl.types import Trajectory

pytestmark = pytest.mark.slow


def test_one_training_step_on_swe_lite(tmp_path, docker_backend):
    cfg = load_config("swe_lite", overrides=[
        "model.name=tiny", f"env.kwargs.backend={docker_backend}",
        "sft.episodes=2", "sft.epochs=1", "rollout.tasks_per_step=1", "rollout.group_size=2",
        "rollout.max_turns=3", "rollout.max_new_tokens=160", "rollout.max_context_tokens=3072",
        "rollout.dynamic_sampling=false", "algo.format_reward=0.2", "trainer.steps=1", "trainer.lr=1e-3",
        "trainer.tensorboard=false", f"trainer.run_dir={tmp_path / 'run'}",
    ])
    result = train(cfg)

    sft = [json.loads(x) for x in (result.run_dir / "sft_metrics.jsonl").read_text().splitlines()]
    assert sft and all(math.isfinite(x["sft/loss"]) and x["sft/action_tokens"] > 0 for x in sft)
    rec = json.loads(result.metrics.read_text().splitlines()[-1])
    assert rec["rollout/episodes"] == 2
    assert rec["rollout/masked_episodes"] == 0, "sandbox or env failures in a plain swe_lite step"
    assert math.isfinite(rec["actor/loss"]) and rec["trainer/version"] == 1
    episodes = [Trajectory.from_json(x) for x in (result.run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert {e.env_id for e in episodes} == {"agentrl/swe_lite-v0"}
    # format_ok_share (the format reward's input) recomputed from what the model wrote, with swe_lite's own
    # parser: a share read from the wrong counter, or turns the env never parsed, shows up here
    assert all(e.turns for e in episodes)
    shares = [sum(not isinstance(parse_tool_call(t.action_text, SweLiteEnv.tools, truncated=t.finish_reason == "length"),
                                 FormatError) for t in e.turns) / len(e.turns) for e in episodes]
    assert rec["rollout/format_ok_share"] == pytest.approx(sum(shares) / len(shares), abs=1e-9)
    load_model(str(result.checkpoint / "model"))  # the checkpoint is an HF model directory that loads
