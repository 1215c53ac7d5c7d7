"""The training loop hands swe_lite a shared, warm SandboxPool sized from rollout.concurrency
(agentrl.trainer.env_factory), and closes it when the run ends; envs without `pool=` get none. Where a task is a
real package's, the pool has room for two sandboxes per episode (its grade holds the grading sandbox and the suite
judge's at once), in training and in `agentrl eval` alike: sized one per episode, n episodes grading at once each
held one and waited forever for a second. The built-in corpus is graded in one, so swe_lite's pool stays one per
episode (each sandbox may take memory_mb, and the pool refuses more than its share of RAM)."""

from __future__ import annotations

import asyncio

import pytest
from agentrl.sandboxes import SandboxPool

from agentrl.config import load_config
from agentrl.trainer.env_factory import build_env_factory

pytestmark = pytest.mark.docker


def test_factory_shares_one_pool_sized_from_concurrency(docker_backend):
    cfg = load_config("swe_lite", overrides=[f"env.kwargs.backend={docker_backend}", "rollout.concurrency=2",
                                             "env.kwargs.level=auto"])
    factory, close = build_env_factory(cfg)
    try:
        a, b = factory(), factory()
        assert isinstance(a.pool, SandboxPool) and a.pool is b.pool is factory.pool
        assert a.pool.max_concurrency == 2 and a.pool.warm == 2
        assert a.curriculum is b.curriculum is not None  # level=auto: one curriculum for the run
    finally:
        asyncio.run(close())
    assert factory.pool._closed
    calc_factory, calc_close = build_env_factory(load_config("calc"))
    assert calc_factory.pool is None and not hasattr(calc_factory(), "pool")
    asyncio.run(calc_close())


def test_the_training_loop_claims_sandboxes_from_the_pool(tmp_path, docker_backend, monkeypatch):
    from agentrl.trainer.loop import train

    pools, claims = [], []
    real_init, real_acquire = SandboxPool.__init__, SandboxPool.acquire

    def init(self, *a, **kw):  # record the pools the run makes; they stay real
        pools.append(self)
        real_init(self, *a, **kw)

    def acquire(self, *a, **kw):
        sb = real_acquire(self, *a, **kw)
        claims.append(sb)
        return sb

    monkeypatch.setattr(SandboxPool, "__init__", init)
    monkeypatch.setattr(SandboxPool, "acquire", acquire)
    cfg = load_config("swe_lite", overrides=[
        "model.name=tiny", f"env.kwargs.backend={docker_backend}", "env.kwargs.level=0", "sft.episodes=0",
        "rollout.tasks_per_step=1", "rollout.group_size=2", "rollout.concurrency=2", "rollout.max_turns=1",
        "rollout.max_new_tokens=8", "rollout.dynamic_sampling=false", "trainer.steps=1",
        "trainer.tensorboard=false", f"trainer.run_dir={tmp_path / 'run'}",
    ])
    train(cfg)
    assert len(pools) == 1 and pools[0].max_concurrency == 2
    assert len(claims) >= 2, "the loop's episodes did not claim sandboxes from the shared pool"
    assert pools[0]._closed and not pools[0]._free, "the run left its pool open"


def test_swe_real_training_pool_holds_two_sandboxes_per_episode(docker_backend):
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
def test_eval_pools_hold_both_sandboxes_of_every_concurrent_grade(concurrency, docker_backend):
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
