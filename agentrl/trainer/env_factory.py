"""The training run's env factory: one shared SandboxPool (and curriculum) for every episode of the run.

Training makes a fresh env per episode. An env that accepts `pool=` (swe_lite) then claims a warm sandbox
from the run's pool instead of creating one cold (much faster: bench/sandbox_exec.py, docs/results.md), with the
pool sized from rollout.concurrency: every episode in flight holds one sandbox, and a finished episode hands its own
back before grading takes one (or two: the env's `sandboxes_per_episode(kwargs)`, a real package's suite judge). An env that accepts `curriculum=` and is
configured with `level: auto` shares one curriculum, so promotions count every episode of the run: an env class
says what its instances share through a classmethod `shared_kwargs(kwargs) -> dict`, called once per run.
Ray workers build their own envs (they cannot share this process's pool), so backend=ray gets neither.

    factory, close = build_env_factory(cfg)
    try: ... factory() ...
    finally: await close()
"""

from __future__ import annotations

import asyncio
import atexit
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from agentrl.registry import env_class, env_parameters, make


def build_env_factory(cfg) -> tuple[Callable[[], Any], Callable[[], Awaitable[None]]]:
    """(factory, async close): `factory()` makes cfg.env.name with cfg.env.kwargs plus the run's shared pool
    (and curriculum) where the env accepts them; `await close()` closes the pool's sandboxes."""
    kwargs = dict(cfg.env.kwargs)
    params = env_parameters(cfg.env.name) or {}
    cls = env_class(cfg.env.name)
    local = getattr(getattr(cfg, "cluster", None), "backend", "local") != "ray"
    pool = None
    if local and "pool" in params and kwargs.get("pool") is None:
        from agentrl.sandboxes import SandboxPool
        from agentrl.sandboxes.base import SandboxConfigError

        n = cfg.rollout.concurrency  # warm for the episodes; room for each one's extra sandboxes (e.g. a judge's)
        per_episode = getattr(cls, "sandboxes_per_episode", None)  # AgentEnv's hook
        per = per_episode(kwargs) if callable(per_episode) else 1
        try:
            pool = SandboxPool(backend=kwargs.get("backend", "auto"), warm=n, max_concurrency=n * per)
        except SandboxConfigError as e:
            raise SandboxConfigError(f"{e} (rollout.concurrency={n} × {per} sandbox(es) per episode of "
                                     f"{cfg.env.name}: lower rollout.concurrency)") from None
        atexit.register(pool.close)  # the loop builds the factory before its try (the warm start runs there)
        kwargs["pool"] = pool
    shared = getattr(cls, "shared_kwargs", None)  # e.g. swe_lite's level=auto curriculum
    if local and callable(shared):
        kwargs.update(shared(kwargs))

    async def close() -> None:
        if pool is not None:
            await asyncio.to_thread(pool.close)
            atexit.unregister(pool.close)

    factory = partial(make, cfg.env.name, **kwargs)
    factory.pool = pool  # type: ignore[attr-defined]  # for tests and for logging its stats
    return factory, close
