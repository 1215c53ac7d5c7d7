"""SweEnv.task_for_seed names the task reset(seed) picks without a sandbox (the trainer's warm-start exclusion,
rollout.exclude_warm_start_episodes, relies on it)."""

from __future__ import annotations

import agentrl.envs.swe.env as swe_env
from agentrl.envs.swe.env import SweEnv

from agentrl.config import load_config
from agentrl.rollout.seeds import warm_start_seed
from agentrl.trainer.pipeline import build_sampler


class _NoSandbox:
    def close(self):
        pass


def test_task_for_seed_is_the_task_reset_picks(monkeypatch):
    monkeypatch.setattr(SweEnv, "_acquire", lambda self: _NoSandbox())
    monkeypatch.setattr(swe_env.grading, "setup_repo", lambda *a, **k: None)
    for level in (0, 1):
        env = SweEnv(split="train", level=level)
        for seed in (0, 1, 17, 123456, 2**31 - 1):
            _, info = env.reset(seed=seed)
            assert env.task_for_seed(seed) == info["task_id"], (level, seed)


def test_the_sampler_keeps_the_warm_start_tasks_out():
    cfg = load_config("swe_lite", overrides=["rollout.exclude_warm_start_episodes=16", "env.kwargs.level=0"])
    env = SweEnv(split="train", level=0)
    warm = {env.task_for_seed(warm_start_seed(0, i)) for i in range(16)}
    sampler = build_sampler(cfg, 0, lambda: SweEnv(split="train", level=0))
    assert sampler.excluded == warm
    drawn = [env.task_for_seed(sampler.uniform(step, 0, j)) for step in range(30) for j in range(4)]
    assert not warm & set(drawn) and len(set(drawn)) > 20
