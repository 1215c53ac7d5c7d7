"""SandboxPool against the real backends: warm hits, refill, reset on release, retirement, and concurrency
(claims that really overlap, and a bound that really holds)."""

from __future__ import annotations

import threading
import time

import pytest
from agentrl.sandboxes import SandboxConfigError, SandboxPool
from agentrl.sandboxes.docker_backend import docker_client
from sandbox_helpers import needs_docker, small_config

from agentrl.errors import SandboxError

docker_only = [pytest.mark.docker, needs_docker]


def _wait_warm(pool: SandboxPool, n: int = 1, within: float = 20) -> None:
    deadline = time.monotonic() + within
    while len(pool._free) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pool._free) >= n


@pytest.mark.docker
@needs_docker
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


@pytest.mark.docker
@needs_docker
def test_release_resets_the_sandbox_for_the_next_task():
    with SandboxPool(small_config(), backend="docker", warm=1, max_concurrency=2) as pool:
        with pool.sandbox() as sb:
            first = sb.id
            sb.write_file("/workspace/repo/secret.txt", "task 1")
            sb.write_file("/tmp/x", "y")
        with pool.sandbox() as sb:
            assert sb.id == first
            assert sb.exec("ls -A /workspace /tmp").output == "/tmp:\n\n/workspace:\n"


@pytest.mark.docker
@needs_docker
def test_retired_after_max_uses():
    with SandboxPool(small_config(), backend="docker", warm=1, max_concurrency=2, max_uses=2) as pool:
        ids = []
        for _ in range(3):
            with pool.sandbox() as sb:
                ids.append(sb.id)
        assert ids[0] == ids[1] != ids[2]


@pytest.mark.docker
@needs_docker
def test_dead_warm_sandbox_is_replaced_on_claim():
    with SandboxPool(small_config(), backend="docker", warm=1, max_concurrency=1) as pool:
        _wait_warm(pool)
        docker_client().api.kill(pool._free[0].id)
        with pool.sandbox() as sb:
            assert sb.exec("echo ok").output == "ok\n"
        assert pool.stats["retired"] >= 1


@pytest.mark.docker
@needs_docker
def test_memory_budget_is_checked():
    with pytest.raises(SandboxConfigError, match="exceeds"):
        SandboxPool(small_config(memory_mb=1 << 20, workspace_mb=64, tmp_mb=64), backend="docker", warm=0,
                    max_concurrency=4, reap=False)


def test_pool_runs_commands_concurrently_and_never_past_its_bound(backend):
    """Two claims run their commands at the same time (the intervals the commands themselves timed overlap; run
    one after the other, the second would start after the first's `sleep 1` ended), and a third claim
    cannot be served while both are held (max_concurrency=2)."""
    with SandboxPool(small_config(), backend=backend, warm=0, max_concurrency=2, reap=False) as pool:
        both_claimed = threading.Barrier(3, timeout=120)
        spans: dict[int, tuple[float, float]] = {}
        outputs: dict[int, str] = {}
        errors: list[BaseException] = []

        def job(i: int) -> None:
            try:
                with pool.sandbox(timeout=120) as sb:
                    sb.write_file("/workspace/n.txt", str(i))
                    both_claimed.wait()  # both sandboxes are claimed now
                    both_claimed.wait()  # ... and the main thread has checked the bound
                    # the command's own start and end on the (shared) real-time clock
                    out = sb.exec("date +%s.%N; sleep 1; cat /workspace/n.txt; echo; date +%s.%N",
                                  timeout=60).output.split()
                    spans[i] = (float(out[0]), float(out[2]))
                    outputs[i] = out[1]
            except BaseException as e:
                errors.append(e)
                both_claimed.abort()

        threads = [threading.Thread(target=job, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        both_claimed.wait()
        with pytest.raises(SandboxError, match="no sandbox free"):
            pool.acquire(timeout=0.2)
        both_claimed.wait()
        for t in threads:
            t.join()
    assert not errors, errors
    assert outputs == {0: "0", 1: "1"}
    (a0, a1), (b0, b1) = spans[0], spans[1]
    assert max(a0, b0) < min(a1, b1), spans
