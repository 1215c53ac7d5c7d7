"""bench/learn_swe.py's compute-matched control (issue 54 item 3): what it needs of agentrl.trainer.sft, the keep
filter of rejection-sampling fine-tuning and supervised training on given trajectories."""

from __future__ import annotations

import random
from pathlib import Path

import torch

import agentrl
from agentrl.config import load_config
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.checkpoint import save_checkpoint
from agentrl.trainer.sft import resolved_episodes, sft_on
from agentrl.types import Segment, TerminationReason, Trajectory, user


class EvenEnv(agentrl.AgentEnv):
    """One turn: resolved if the reply has an even number of characters (the tiny random model gets both), with a
    shaped reward that is not success: 0.3 for an odd reply, 1.0 for an even one. The expert says "ok"."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return [user(f"Say anything ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        even = len(action) % 2 == 0
        return [], 1.0 if even else 0.3, True, False, {"resolved": even}

    def expert_action(self):
        return "ok"


agentrl.register("test_control_even", EvenEnv, description="test env: resolved on even-length replies")


def _cfg(tmp_path: Path, *overrides: str):
    return load_config(None, overrides=[
        "env.name=test_control_even", "model.name=tiny", "rollout.tasks_per_step=2", "rollout.group_size=4",
        "rollout.max_new_tokens=8", "rollout.max_context_tokens=256", "rollout.max_turns=1", "sft.episodes=4",
        "sft.epochs=1", "sft.batch_trajectories=2", "sft.lr=1e-3", "trainer.lr=1e-3", "trainer.steps=2",
        f"trainer.run_dir={tmp_path / 'control'}", "trainer.tensorboard=false", *overrides])


def _warm_start(tmp_path: Path) -> Path:
    """A warm-start checkpoint: the tiny model as it loads (what the control starts from is what matters)."""
    return save_checkpoint(tmp_path / "sft", 0, model=load_model("tiny"), tokenizer=load_tokenizer("tiny"))


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return load_model(str(model_dir)).state_dict()


# ---- (b) rft keeps only resolved episodes ----

def _traj(name: str, *, reward: float, info: dict, termination=TerminationReason.DONE, actions: int = 2) -> Trajectory:
    seg = Segment()
    seg.append_prompt([1, 2, 3])
    seg.append_sampled([4] * actions, [0.0] * actions, [0] * actions)
    return Trajectory(id=name, group_id="g", env_id="e", task_id="t", segments=[seg], reward=reward,
                      reward_info=info, termination=termination)


def test_rft_keeps_resolved_episodes_only_not_the_shaped_reward():
    planted = [
        _traj("resolved, low shaped reward", reward=0.2, info={"resolved": True}),
        _traj("unresolved, high shaped reward", reward=1.2, info={"resolved": False}),
        _traj("unresolved", reward=0.0, info={"resolved": False}),
        _traj("resolved but masked (sandbox failure)", reward=1.0, info={"resolved": True},
              termination=TerminationReason.SANDBOX_ERROR),
        _traj("resolved, no model tokens", reward=1.0, info={"resolved": True}, actions=0),
        _traj("resolved, cut by max_turns", reward=1.0, info={"resolved": True}, termination=TerminationReason.MAX_TURNS),
        _traj("no success flag, full reward", reward=1.0, info={}),
        _traj("no success flag, partial reward", reward=0.5, info={}),
    ]
    kept = [t.id for t in resolved_episodes(planted)]
    assert kept == ["resolved, low shaped reward", "resolved, cut by max_turns", "no success flag, full reward"]


def test_sft_on_trains_one_shuffled_pass_in_batches_and_stops_when_asked(tmp_path):
    cfg = _cfg(tmp_path)
    trajs = [_traj(str(i), reward=1.0, info={"resolved": True}, actions=2 + i) for i in range(5)]
    model = load_model("tiny")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng, seen = random.Random(0), []
    history = sft_on(cfg, model, opt, trajs, rng, after_step=seen.append)
    assert len(history) == len(seen) == 3  # 5 trajectories in batches of sft.batch_trajectories=2
    assert sum(h["sft/action_tokens"] for h in history) == sum(t.num_action_tokens for t in trajs)
    order = list(range(5))
    random.Random(0).shuffle(order)  # the order run_sft's epoch would take from the same generator
    assert history[0]["sft/action_tokens"] == sum(trajs[j].num_action_tokens for j in order[:2])
    calls = []
    stopped = sft_on(cfg, model, opt, trajs, random.Random(0), stop=lambda: calls.append(1) or len(calls) > 1)
    assert len(stopped) == 1
