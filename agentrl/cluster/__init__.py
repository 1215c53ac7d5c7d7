"""Where episodes run: the rollout backend behind `cluster.backend`.

The trainer asks an episode backend for whole GRPO groups, `await backend.collect_group(seed, group_size,
cfg=…)`, and gets one Trajectory per member, in member order. Two backends answer:

- `LocalBackend` (cluster.backend=local, the default): the collector in this process, at most
  rollout.concurrency episodes at once. No Ray import.
- `RayBackend` (cluster.backend=ray, `agentrl.cluster.ray_backend`): rollout-worker actors on a Ray cluster,
  each building its envs (and sandboxes) on its own node, sharing the engine endpoints of the run.

Every episode, on either backend, runs through `agentrl.rollout.collector.run_member`, so a task seed gives
the same samples wherever it runs.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from agentrl.engine.protocol import Engine
from agentrl.rollout.agent_loop import LoopConfig, as_renderer
from agentrl.rollout.collector import FAILURE_RETRIES, EnvFactory, collect_group
from agentrl.types import Trajectory


class EpisodeBackend(Protocol):
    """What the trainer needs from the place episodes run."""

    async def collect_group(
        self,
        seed: int | None,
        group_size: int,
        *,
        cfg: LoopConfig,
        expert: bool = False,
        group_id: str | None = None,
    ) -> list[Trajectory]:
        """`group_size` episodes of the task `seed`, one Trajectory per member, in member order."""
        ...

    def describe(self) -> str:
        """One line for the start-up banner: where episodes run."""
        ...

    async def close(self) -> None:
        """Release what the backend started."""
        ...


class LocalBackend:
    """Episodes in this process: the collector, with one semaphore bounding the episodes in flight."""

    def __init__(self, env_factory: EnvFactory, engine: Engine | None, tokenizer: Any, *, concurrency: int):
        """env_factory: a zero-argument callable returning a fresh env (or a registered env name)."""
        self.env_factory, self.engine = env_factory, engine
        self.renderer = as_renderer(tokenizer)
        self.concurrency = concurrency
        self.semaphore = asyncio.Semaphore(concurrency)

    async def collect_group(
        self,
        seed: int | None,
        group_size: int,
        *,
        cfg: LoopConfig,
        expert: bool = False,
        group_id: str | None = None,
    ) -> list[Trajectory]:
        """`group_size` concurrent episodes of the task `seed` (collector.collect_group)."""
        return await collect_group(
            self.env_factory,
            self.engine,
            self.renderer,
            seed=seed,
            group_size=group_size,
            cfg=cfg,
            expert=expert,
            semaphore=self.semaphore,
            group_id=group_id,
            max_retries=FAILURE_RETRIES,
        )

    def describe(self) -> str:
        """One line for the start-up banner."""
        return f"local: episodes in this process, ≤ {self.concurrency} at once"

    async def close(self) -> None:
        """Nothing to release: envs are closed after each episode."""


async def build_backend(cfg, env_factory: EnvFactory, engine: Engine | None, tokenizer: Any) -> EpisodeBackend:
    """The backend cfg.cluster.backend names; Ray starts (or joins) its cluster and workers here."""
    if cfg.cluster.backend == "local":
        return LocalBackend(env_factory, engine, tokenizer, concurrency=cfg.rollout.concurrency)
    from agentrl.cluster.ray_backend import RayBackend

    return await RayBackend.start(cfg, engine, tokenizer)
