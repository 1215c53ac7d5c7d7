"""SandboxPool: warm sandboxes per image, handed out under a global concurrency limit.

Keep `warm` started sandboxes; on claim pop one, check it is alive (an `exec true`) and young enough, else
create cold; refill right after each claim (not on a timer); on release reset it (kill agent processes, wipe
/workspace and /tmp) and keep it (up to max(warm, max_concurrency) free, LIFO, so a reset sandbox is reused
before a fresh one), or retire it after `max_uses` claims,
past `max_age_s` (well before the keep-alive TTL) or when reset fails. Concurrency defaults to
min(0.75 × cores, 24) (SWE-bench's rule), and `max_concurrency × memory_mb` must fit in 70 % of RAM. At most
`creates_in_flight` sandboxes are being created at once (2 cores cannot start 16 containers at once quickly).
The pool reaps leftovers of dead owners when it starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import agentrl.sandboxes.reaper as reaper
from agentrl.sandboxes.backends import sandbox_factory, select_backend
from agentrl.sandboxes.base import Sandbox, SandboxConfig, SandboxConfigError

from agentrl.errors import SandboxError

log = logging.getLogger(__name__)


def default_concurrency() -> int:
    """min(0.75 × CPU cores, 24), at least 1 (SWE-bench README; inspect_ai caps Docker at 25)."""
    return max(1, min(int(0.75 * (os.cpu_count() or 1)), 24))


def total_memory_mb() -> int:
    """Physical memory of this machine in MiB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20


class SandboxPool:
    """Hands out sandboxes of one backend and config; `with pool.sandbox() as sb:` claims and releases one."""

    def __init__(self, config: SandboxConfig | None = None, backend: str = "auto", *, warm: int = 1,
                 max_concurrency: int | None = None, max_uses: int = 20, max_age_s: float | None = None,
                 creates_in_flight: int = 2, memory_fraction: float = 0.7, reap: bool = True,
                 factory: Callable[[], Sandbox] | None = None) -> None:
        self.config = config or SandboxConfig()
        self.backend = select_backend(backend) if factory is None else backend
        self.max_concurrency = max_concurrency or default_concurrency()
        budget = int(memory_fraction * total_memory_mb())
        if self.max_concurrency * self.config.memory_mb > budget:
            raise SandboxConfigError(
                f"max_concurrency={self.max_concurrency} × memory_mb={self.config.memory_mb} exceeds "
                f"{memory_fraction:.0%} of RAM ({budget} MiB): lower one of them")
        self.warm, self.max_uses = warm, max_uses
        self.max_age_s = max_age_s if max_age_s is not None else 0.5 * self.config.ttl_s
        self._factory = factory or sandbox_factory(self.backend, self.config)
        self._free: list[Sandbox] = []
        self._claims: dict[int, int] = {}  # id(sandbox) -> number of claims so far
        self._claimed: dict[int, Sandbox] = {}
        self._pending = 0
        self._closed = False
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.max_concurrency)
        self._creating = threading.Semaphore(creates_in_flight)
        self._bg = ThreadPoolExecutor(max_workers=creates_in_flight, thread_name_prefix="agentrl-pool")
        self.stats = {"hits": 0, "misses": 0, "retired": 0, "create_errors": 0, "claim_s": []}
        if reap:
            gone = reaper.reap()
            if gone:
                log.info("reaped %d leftover sandboxes of dead owners: %s", len(gone), gone)
        self._refill()

    def _create(self) -> Sandbox:
        """Create one sandbox, at most `creates_in_flight` at a time."""
        with self._creating:
            return self._factory()

    def _refill(self) -> None:
        """Start background creates until free + pending reaches `warm`."""
        with self._lock:
            need = 0 if self._closed else self.warm - len(self._free) - self._pending
            self._pending += max(0, need)
        for _ in range(max(0, need)):
            self._bg.submit(self._refill_one)

    def _refill_one(self) -> None:
        try:
            sb = self._create()
        except Exception as e:  # surfaced on the next cold create; counted here
            self.stats["create_errors"] += 1
            log.warning("warm sandbox create failed: %s", e)
            with self._lock:
                self._pending -= 1
            return
        with self._lock:
            self._pending -= 1
            keep = not self._closed
            if keep:
                self._free.append(sb)
        if not keep:
            sb.close()

    def _usable(self, sb: Sandbox) -> bool:
        """Young enough and answering."""
        return time.monotonic() - sb.created_at < self.max_age_s and sb.alive()

    def acquire(self, timeout: float | None = None) -> Sandbox:
        """Claim a sandbox (warm if one is free and alive, else created now); release() it when done.

        Blocks while max_concurrency sandboxes are claimed; raises SandboxError after `timeout` seconds.
        """
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        t0 = time.monotonic()
        if not self._slots.acquire(timeout=timeout):
            raise SandboxError(f"no sandbox free within {timeout} s (max_concurrency={self.max_concurrency})")
        try:
            sb = None
            while sb is None:
                with self._lock:
                    candidate = self._free.pop() if self._free else None
                if candidate is None:
                    sb = self._create()
                    self.stats["misses"] += 1
                elif self._usable(candidate):
                    sb = candidate
                    self.stats["hits"] += 1
                else:
                    self.stats["retired"] += 1
                    self._bg.submit(candidate.close)
            self._refill()
        except BaseException:
            self._slots.release()
            raise
        self._claims[id(sb)] = self._claims.get(id(sb), 0) + 1
        self._claimed[id(sb)] = sb
        self.stats["claim_s"].append(time.monotonic() - t0)
        return sb

    def release(self, sb: Sandbox) -> None:
        """Return a claimed sandbox: reset and keep it warm, or retire it (max_uses, age, failed reset, closed pool)."""
        try:
            self._claimed.pop(id(sb), None)
            claims = self._claims.pop(id(sb), 0)
            retire = self._closed or claims >= self.max_uses or time.monotonic() - sb.created_at >= self.max_age_s
            if not retire:
                try:
                    sb.reset()
                except Exception as e:
                    log.warning("reset of %r failed (%s); retiring it", sb, e)
                    retire = True
            with self._lock:
                retire = retire or self._closed or len(self._free) >= max(self.warm, self.max_concurrency)
                if not retire:
                    self._free.append(sb)
                    self._claims[id(sb)] = claims
            if retire:
                self.stats["retired"] += 1
                sb.close()
                self._refill()
        finally:
            self._slots.release()

    @contextlib.contextmanager
    def sandbox(self, timeout: float | None = None) -> Iterator[Sandbox]:
        """Context manager: claim a sandbox and always release it."""
        sb = self.acquire(timeout)
        try:
            yield sb
        finally:
            self.release(sb)

    def close(self) -> None:
        """Close every sandbox of the pool, claimed ones included, and stop refilling. Idempotent."""
        with self._lock:
            self._closed = True
            free, self._free = self._free, []
        self._bg.shutdown(wait=True, cancel_futures=True)  # queued refills never start; running ones finish
        for sb in free + self._free + list(self._claimed.values()):
            sb.close()
        self._free = []

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
