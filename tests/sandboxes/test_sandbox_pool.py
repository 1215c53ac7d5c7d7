"""SandboxPool and the async wrappers against the real engine: warm hits, refill, reset on release, retirement."""

from __future__ import annotations

import asyncio
import time

import pytest
from agentrl.sandboxes import SandboxConfigError, SandboxPool
from agentrl.sandboxes.aio import AsyncSandboxPool
from agentrl.sandboxes.docker_backend import docker_client
from sandbox_helpers import needs_docker, small_config

pytestmark = [pytest.mark.docker, needs_docker]


def _wait_warm(pool: SandboxPool, n: int = 1, within: float = 20) -> None:
    deadline = time.monotonic() + within
    while len(pool._free) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pool._free) >= n


def test_warm_claim_is_a_hit_and_the_pool_refills_right_after():
    with SandboxPool(small_config(), backend="docker", warm=1, max_concurrency=2) as pool:
        _wait_warm(pool)
        with pool.sandbox() as sb:
            assert pool.stats["hits"] == 1 and pool.stats["misses"] == 0
            _wait_warm(pool)  # refilled while this one is claimed
            sb.write_file("/workspace/left.txt", "from task 1")
            sb.exec("sleep 100 >/dev/null 2>&1 &")
        # the released one was reset and kept next to the refilled one (free is capped at max_concurrency)
        assert len(pool._free) == 2 and pool._free[-1].id == sb.id
        assert pool._free[-1].exec("ls -A /workspace; pgrep -u 1000 sleep").output == ""


def test_release_resets_the_sandbox_for_the_next_task():
    with SandboxPool(small_config(), backend="docker", warm=1, max_concurrency=2) as pool:
        with pool.sandbox() as sb:
            first = sb.id
            sb.write_file("/workspace/repo/secret.txt", "task 1")
            sb.write_file("/tmp/x", "y")
        with pool.sandbox() as sb:
            assert sb.id == first
            assert sb.exec("ls -A /workspace /tmp").output == "/tmp:\n\n/workspace:\n"


def test_retired_after_max_uses():
    with SandboxPool(small_config(), backend="docker", warm=1, max_concurrency=2, max_uses=2) as pool:
        ids = []
        for _ in range(3):
            with pool.sandbox() as sb:
                ids.append(sb.id)
        assert ids[0] == ids[1] != ids[2]


def test_dead_warm_sandbox_is_replaced_on_claim():
    with SandboxPool(small_config(), backend="docker", warm=1, max_concurrency=1) as pool:
        _wait_warm(pool)
        docker_client().api.kill(pool._free[0].id)
        with pool.sandbox() as sb:
            assert sb.exec("echo ok").output == "ok\n"
        assert pool.stats["retired"] >= 1


def test_memory_budget_is_checked():
    with pytest.raises(SandboxConfigError, match="exceeds"):
        SandboxPool(small_config(memory_mb=1 << 20, workspace_mb=64, tmp_mb=64), backend="docker", warm=0,
                    max_concurrency=4, reap=False)


def test_async_pool_runs_commands_concurrently():
    async def main() -> list[str]:
        apool = AsyncSandboxPool(SandboxPool(small_config(), backend="docker", warm=0, max_concurrency=2))
        try:
            async def one(i: int) -> str:
                async with apool.sandbox() as sb:
                    await sb.write_file("/workspace/n.txt", str(i))
                    return (await sb.exec("cat /workspace/n.txt")).output
            return await asyncio.gather(*(one(i) for i in range(3)))
        finally:
            await apool.close()

    assert sorted(asyncio.run(main())) == ["0", "1", "2"]
