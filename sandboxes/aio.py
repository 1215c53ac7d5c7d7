"""Async wrappers: each sandbox call runs on one shared, bounded thread pool (reference/swe_sandbox.md §6.5),
so thousands of coroutines cannot start thousands of threads or Docker connections."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

from agentrl.sandboxes.base import ExecResult, Sandbox
from agentrl.sandboxes.pool import SandboxPool

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def executor(max_workers: int = 32) -> ThreadPoolExecutor:
    """The process-wide thread pool for sandbox calls (created on first use with `max_workers`)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="agentrl-sandbox")
        return _executor


async def run_sync(fn, *args, **kwargs):
    """Run a blocking sandbox call on the shared executor and await it."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(executor(), functools.partial(fn, *args, **kwargs))


class AsyncSandbox:
    """Awaitable view of a Sandbox; `sync` is the wrapped object."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sync = sandbox

    async def exec(self, cmd: str | list[str], **kwargs) -> ExecResult:
        """Await Sandbox.exec (same arguments)."""
        return await run_sync(self.sync.exec, cmd, **kwargs)

    async def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        """Await Sandbox.read_file."""
        return await run_sync(self.sync.read_file, path, max_bytes)

    async def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Await Sandbox.write_file."""
        await run_sync(self.sync.write_file, path, data, mode)

    async def upload_tree(self, src, dest: str = "/workspace") -> None:
        """Await Sandbox.upload_tree."""
        await run_sync(self.sync.upload_tree, src, dest)

    async def download_tree(self, path: str = "/workspace", dest=None, max_total_bytes: int = 8 << 20):
        """Await Sandbox.download_tree."""
        return await run_sync(self.sync.download_tree, path, dest, max_total_bytes)

    async def reset(self) -> None:
        """Await Sandbox.reset."""
        await run_sync(self.sync.reset)

    async def alive(self) -> bool:
        """Await Sandbox.alive."""
        return await run_sync(self.sync.alive)

    async def close(self) -> None:
        """Await Sandbox.close."""
        await run_sync(self.sync.close)

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


class AsyncSandboxPool:
    """Awaitable view of a SandboxPool: `async with apool.sandbox() as sb: await sb.exec(...)`."""

    def __init__(self, pool: SandboxPool) -> None:
        self.sync = pool

    async def acquire(self, timeout: float | None = None) -> AsyncSandbox:
        """Await SandboxPool.acquire."""
        return AsyncSandbox(await run_sync(self.sync.acquire, timeout))

    async def release(self, sandbox: AsyncSandbox) -> None:
        """Await SandboxPool.release."""
        await run_sync(self.sync.release, sandbox.sync)

    @contextlib.asynccontextmanager
    async def sandbox(self, timeout: float | None = None) -> AsyncIterator[AsyncSandbox]:
        """Claim a sandbox for the block and always release it."""
        sb = await self.acquire(timeout)
        try:
            yield sb
        finally:
            await self.release(sb)

    async def close(self) -> None:
        """Await SandboxPool.close."""
        await run_sync(self.sync.close)
