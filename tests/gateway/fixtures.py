"""Shared by the gateway and external-agent tests: the tiny model's engines, its chat renderer, an engine
wrapper that keeps what it sampled, and a group of episodes of an env through the collector."""

from __future__ import annotations

import asyncio

import pytest

import agentrl
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.models import load_tokenizer
from agentrl.rollout.agent_loop import LoopConfig
from agentrl.rollout.chat import ChatRenderer
from agentrl.rollout.collector import collect_group


class Recording:
    """The real engine, with every call's prompt, Generation and SamplingParams kept (to compare against)."""

    def __init__(self, engine):
        self.engine, self.calls, self.sampling = engine, [], []

    @property
    def returned(self):
        """The Generations, in call order."""
        return [gen for _, gen in self.calls]

    async def generate(self, input_ids, sampling, *, session_id=None):
        gen = await self.engine.generate(input_ids, sampling, session_id=session_id)
        self.calls.append((list(input_ids), gen))
        self.sampling.append(sampling)
        return gen

    def __getattr__(self, name):
        return getattr(self.engine, name)


@pytest.fixture(scope="module")
def engine():
    eng = EmbeddedEngine("tiny", seed=0)
    yield eng
    asyncio.run(eng.close())


@pytest.fixture(scope="module")
def serial_engine():
    """One request at a time: exact-equality tests must not see the float noise of different batchings (which can
    flip a sampled token near a tie; bench/gateway_throughput.py shows it happening on either path)."""
    eng = EmbeddedEngine("tiny", seed=0, max_batch_size=1)
    yield eng
    asyncio.run(eng.close())


@pytest.fixture(scope="module")
def renderer():
    return ChatRenderer(load_tokenizer("tiny"))


def episodes(engine, renderer, env_name: str, *, group_size: int = 2, seed: int = 5, env_kwargs=None, **loop):
    """One GRPO group of `env_name` collected on `engine` (LoopConfig fields as keyword overrides)."""
    cfg = LoopConfig(**{"max_new_tokens": 6, "max_context_tokens": 512, "max_turns": 4, "episode_timeout_s": 60, **loop})
    return asyncio.run(collect_group(lambda: agentrl.make(env_name, **(env_kwargs or {})), engine, renderer,
                                     seed=seed, group_size=group_size, cfg=cfg))
