"""The training loop hands swe_lite a shared, warm SandboxPool sized from rollout.concurrency
(agentrl.trainer.env_factory), and closes it when the run ends; envs without `pool=` get none. The built-in corpus
is graded in one sandbox, so swe_lite's pool is one per episode (swe_real's two: tests/envs/swe_real/test_pool.py)."""

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

