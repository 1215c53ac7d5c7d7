"""swe_real's pools have room for two sandboxes per episode: a real package's grade holds the grading sandbox and
the suite judge's at once, so a pool of one per episode left n episodes grading at once each holding one and
waiting forever for a second (`agentrl eval --env swe_real --concurrency 1` hung). Training (the env factory) and
`agentrl eval` (the eval hook) size it alike, and a size past the machine's memory names the concurrency."""

from __future__ import annotations

import asyncio

import pytest

from agentrl.config import load_config
from agentrl.trainer.env_factory import build_env_factory

pytestmark = pytest.mark.docker


def test_swe_real_training_pool_holds_two_sandboxes_per_episode(docker_backend, cache_ready):
    from agentrl.envs.swe.env import SweEnv
    from agentrl.envs.swe.real.tasks import load_real

    cfg = load_config("swe_real", overrides=[f"env.kwargs.backend={docker_backend}", "rollout.concurrency=2"])
    factory, close = build_env_factory(cfg)
    try:
        assert factory.pool.max_concurrency == 4 and factory.pool.warm == 2
    finally:
        asyncio.run(close())
    assert SweEnv.sandboxes_per_episode({"tasks": load_real(None)[:1]}) == 2  # a list of tasks is looked at
    assert SweEnv.sandboxes_per_episode({}) == 1 and SweEnv.sandboxes_per_episode({"tasks": "my.jsonl"}) == 2


@pytest.mark.parametrize("concurrency", [1, 2])
def test_eval_pools_hold_both_sandboxes_of_every_concurrent_grade(concurrency, docker_backend, cache_ready):
    from agentrl.envs.swe_real import SweRealEvalHook

    from agentrl.evaluation import EvalConfig

    hook = SweRealEvalHook()
    job = EvalConfig(env="swe_real", backend=docker_backend, concurrency=concurrency, limit=1)
    try:
        kwargs = hook.env_kwargs(job, hook.tasks(job))
        assert kwargs["pool"].max_concurrency == 2 * concurrency
        held = [kwargs["pool"].acquire(timeout=60) for _ in range(2 * concurrency)]  # every grade's two at once
        for sb in held:
            kwargs["pool"].release(sb)
    finally:
        hook.close()


def test_a_pool_past_the_machines_memory_names_the_concurrency_that_asked_for_it(docker_backend, cache_ready, tmp_path):
    import subprocess
    import sys

    from agentrl.sandboxes.base import SandboxConfigError

    cfg = load_config("swe_real", overrides=[f"env.kwargs.backend={docker_backend}", "rollout.concurrency=100000"])
    with pytest.raises(SandboxConfigError, match=r"rollout.concurrency=100000 × 2 sandbox\(es\) per episode"):
        build_env_factory(cfg)
    done = subprocess.run([sys.executable, "-m", "agentrl", "eval", "--env", "swe_real", "--oracle", "empty", "--split",
                           "test", "--limit", "1", "--concurrency", "100000", "--out", str(tmp_path / "e.jsonl")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--concurrency 100000 × 2 sandbox(es) per episode" in done.stderr and "lower --concurrency" in done.stderr
