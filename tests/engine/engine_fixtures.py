"""Fixtures and helpers for the engine tests: one shared tiny-model engine, chat prompts, servers on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import Callable

import pytest

from agentrl.engine.embedded import EmbeddedEngine
from agentrl.engine.protocol import SamplingParams
from agentrl.engine.serve import spawn_server

QUESTIONS = ["What is 2 + 3?", "Name a colour.", "Say hi.", "What is the capital of France? Answer briefly please."]


@pytest.fixture(scope="module")
def engine():
    """An embedded engine on the tiny model, shared by a module's tests (they must not change its weights)."""
    eng = EmbeddedEngine("tiny", seed=0)
    yield eng
    asyncio.run(eng.close())


@pytest.fixture
def fresh_engine(engine):
    """A private engine on a copy of the tiny model, for tests that pause it or change its weights."""
    eng = EmbeddedEngine(copy.deepcopy(engine.model), engine.tokenizer, seed=1)
    yield eng
    asyncio.run(eng.close())


def chat_prompt(tokenizer, question: str) -> list[int]:
    """Token ids of a one-message chat with the generation prompt, as the agent loop renders it."""
    ids = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                        tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


@pytest.fixture(scope="module")
def prompts(engine):
    """Chat prompts of different lengths."""
    return [chat_prompt(engine.tokenizer, q) for q in QUESTIONS]


@contextlib.asynccontextmanager
async def served(engine, **kwargs):
    """Serve engine over HTTP on a free loopback port for the duration of the block; yields the base URL."""
    from agentrl.engine.serve import start_server

    runner, url = await start_server(engine, "127.0.0.1", 0, **kwargs)
    try:
        yield url
    finally:
        await runner.cleanup()


class ServerProcess:
    """`agentrl serve` in a subprocess, restarted on demand if a test killed it."""

    def __init__(self, model: str = "tiny"):
        self.model, self.proc, self.url = model, None, None

    def start(self) -> str:
        """The URL of a running server (spawning one if needed)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc, self.url = spawn_server(self.model)
        return self.url

    def kill(self) -> None:
        """SIGKILL the server (only the process this object started)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def server_process():
    """A module-wide `agentrl serve --model tiny` subprocess; tests may kill it (the next user restarts it)."""
    server = ServerProcess("tiny")
    yield server
    server.kill()


async def until(condition: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    """Yield to the event loop until condition() holds; fail naming `what` once timeout_s has passed."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up after {timeout_s:.0f} s waiting for {what}"
        await asyncio.sleep(0.002)


async def worker_round(engine: EmbeddedEngine) -> None:
    """Return once the engine's worker has handled every message queued before this call and then finished the
    iteration that followed: two control round trips in a row (aborts that match no request), which the worker
    answers in inbox order between steps. Whatever that iteration would admit or decode has happened by then.
    Needs batch_window_s=0: a batch window reads the inbox too, so both answers could come before admission."""
    assert engine.batch_window_s == 0, "worker_round needs an engine without a batch window"
    for _ in range(2):
        await engine.abort("no-such-request")


def greedy(n: int = 8, **kw) -> SamplingParams:
    """Greedy sampling of n tokens."""
    return SamplingParams(temperature=0.0, max_new_tokens=n, **kw)
