"""Infrastructure faults: a container killed mid-exec, an engine that is missing or hangs, a trainer killed with
SIGKILL or SIGTERM, and 16 sandboxes running pytest at once on a 2-core machine."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest
from agentrl.sandboxes import SandboxPool, bwrap_backend, reaper
from agentrl.sandboxes.bwrap_backend import BwrapSandbox
from agentrl.sandboxes.cgroups import Cgroup, parents
from agentrl.sandboxes.docker_backend import DockerSandbox, DockerUnavailable, docker_client
from sandbox_helpers import needs_bwrap, needs_docker, small_config

from agentrl.errors import AgentRLError, SandboxDead

pytestmark = pytest.mark.docker


@needs_docker
def test_container_killed_mid_exec_raises_sandbox_dead_and_pool_recovers():
    with SandboxPool(small_config(), backend="docker", warm=1, max_concurrency=2) as pool:
        sb = pool.acquire()
        threading.Timer(0.7, lambda: docker_client().api.kill(sb.id)).start()
        with pytest.raises(SandboxDead):
            sb.exec("sleep 20", timeout=15)
        with pytest.raises(SandboxDead):
            sb.exec("echo after")
        pool.release(sb)  # reset fails -> retired, not returned to the pool
        with pool.sandbox() as fresh:
            assert fresh.id != sb.id and fresh.exec("echo ok").output == "ok\n"
        assert pool.stats["retired"] >= 1


@needs_docker
def test_an_engine_slow_to_record_an_exit_code_is_waited_for_not_taken_for_a_dead_container():
    """Guards a flake of the loaded suite (a pooled container killed and removed 14 s after it started): a loaded
    engine went on saying Running for over a second after a command's stream closed, the exit code read as None
    after 40 polls of 25 ms, and the command went down the dead-container probe (137, or the container killed).
    Here the real engine's exec_inspect answers are held back for 1.5 s after the stream ends (and its first
    answer is an API error); the command must still end with its own exit code and the container live on."""
    import docker

    sb = DockerSandbox(small_config())
    try:
        real = sb.client.api.exec_inspect
        first_asked: dict[str, float] = {}

        def slow_inspect(exec_id):
            if exec_id not in first_asked:
                first_asked[exec_id] = time.monotonic()
                raise docker.errors.APIError("busy engine (injected)")
            info = real(exec_id)
            return {**info, "Running": True, "ExitCode": None} if time.monotonic() - first_asked[exec_id] < 1.5 else info

        sb.client.api.exec_inspect = slow_inspect
        r = sb.exec("echo hi; exit 3", timeout=20)
        assert (r.exit_code, r.output, r.timed_out) == (3, "hi\n", False), r
        sb.client.api.exec_inspect = real
        assert sb.alive() and sb.exec("echo still").output == "still\n"
    finally:
        sb.close()


@needs_docker
def test_missing_engine_fails_fast_with_a_clear_error(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/agentrl-test.sock")
    t0 = time.monotonic()
    with pytest.raises(DockerUnavailable, match="scripts/ensure_docker.sh") as e:
        DockerSandbox(small_config())
    assert isinstance(e.value, AgentRLError) and time.monotonic() - t0 < 5


def test_hanging_engine_fails_within_the_ping_timeout(monkeypatch, tmp_path):
    """A socket that accepts but never answers must not hang the caller."""
    path = str(tmp_path / "silent.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(8)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    try:
        t0 = time.monotonic()
        with pytest.raises(DockerUnavailable):
            docker_client(ping_timeout=1.0)
        assert time.monotonic() - t0 < 5
    finally:
        server.close()


CHILD = """
import os, signal, sys, threading, time
from agentrl.sandboxes import reaper, sandbox_factory
from agentrl.sandboxes.base import SandboxConfig
make = sandbox_factory(sys.argv[1], SandboxConfig(memory_mb=256, workspace_mb=64, tmp_mb=32, ttl_s=float(sys.argv[2])))
if len(sys.argv) > 4:  # like training: the entry point (cli, train) hooks SIGTERM, a worker thread makes the sandbox
    if sys.argv[4] == "hooked":
        reaper.install_sigterm_hook()
    made = []
    worker = threading.Thread(target=lambda: made.append(make()))
    worker.start()
    worker.join()
    sb = made[0]
else:
    sb = make()
print(sb.id, flush=True)
os.kill(os.getpid(), getattr(signal, sys.argv[3]))
time.sleep(30)
"""


def _run_child(backend: str, ttl: float, sig: str, thread: str | None = None) -> str:
    """Start a 'trainer' that creates one sandbox and then dies of `sig`; return the sandbox id. With `thread`
    ("hooked" or "bare") the sandbox is made in a worker thread, after the entry point's hook or without it."""
    env = {**os.environ, "AGENTRL_SANDBOX_SESSION": reaper.SESSION_ID}
    out = subprocess.run([sys.executable, "-c", CHILD, backend, str(ttl), sig, *([thread] if thread else [])], capture_output=True, env=env,
                         timeout=60)
    return out.stdout.decode().split()[0]


def _container_exists(cid: str) -> bool:
    return bool(docker_client().api.containers(all=True, filters={"id": cid}))


@needs_docker
def test_sigkilled_trainer_container_removes_itself_after_ttl():
    cid = _run_child("docker", ttl=3, sig="SIGKILL")
    assert _container_exists(cid)
    deadline = time.monotonic() + 15
    while _container_exists(cid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _container_exists(cid)


@needs_docker
def test_reaper_removes_containers_of_dead_owners_only():
    cid = _run_child("docker", ttl=600, sig="SIGKILL")
    with DockerSandbox(small_config()) as mine:
        assert _container_exists(cid)
        removed = reaper.reap(bwrap=False)
        assert cid[:12] in removed and mine.id[:12] not in removed
        assert not _container_exists(cid) and mine.alive()


@needs_docker
def test_sigterm_sweeps_the_trainers_sandboxes():
    cid = _run_child("docker", ttl=600, sig="SIGTERM")
    assert not _container_exists(cid)


@needs_docker
def test_sigterm_sweeps_sandboxes_made_in_worker_threads_once_the_entry_point_hooks_it():
    """Training makes its sandboxes in worker threads, where no signal handler can be set: `agentrl train` and
    `make demo` used to leave their warm pool's containers behind on SIGTERM. Without the hook they still do."""
    cid = _run_child("docker", ttl=600, sig="SIGTERM", thread="hooked")
    assert not _container_exists(cid)
    bare = _run_child("docker", ttl=600, sig="SIGTERM", thread="bare")
    try:
        assert _container_exists(bare)  # the gap the hook closes (the TTL or `agentrl sandbox reap` would remove it)
    finally:
        reaper.remove_container(docker_client(), bare)


@needs_bwrap
def test_reaper_removes_bwrap_folders_and_cgroups_of_dead_owners():
    sid = _run_child("bwrap", ttl=600, sig="SIGKILL")
    d = reaper.BWRAP_DIR / sid
    assert d.is_dir() and os.path.ismount(d / "mnt" / "workspace") and os.path.ismount(d / "mnt" / "tmp")
    cg = Cgroup.from_json(json.loads((d / reaper.CGROUP_RECORD).read_text()))
    assert cg.unique_dirs() and all(p.is_dir() and sid in p.name for p in cg.unique_dirs())
    assert sid in reaper.reap(docker=False)
    assert not d.exists() and not any(p.exists() for p in cg.unique_dirs())


@needs_bwrap
def test_close_removes_the_cgroup_and_the_reaper_spares_cgroups_it_did_not_record():
    version, base = parents()
    decoys = {base[c] / f"agentrl-{reaper.SESSION_ID}-decoy{uuid.uuid4().hex[:6]}" for c in base}
    for d in decoys:
        d.mkdir()
    try:
        with BwrapSandbox(small_config()) as sb:
            cg = sb.cgroup()
            assert sb.exec("sleep 0.1; echo ok").output == "ok\n"
            assert all(p.is_dir() for p in cg.unique_dirs())
            reaper.reap(session="not-this-one", docker=False)
            assert all(p.is_dir() for p in cg.unique_dirs())
        assert not any(p.exists() for p in cg.unique_dirs())
        reaper.reap(session=reaper.SESSION_ID, docker=False)
        assert all(d.is_dir() for d in decoys)  # same session prefix, but no sandbox recorded them
    finally:
        for d in decoys:
            d.rmdir()


NON_ROOT = """
import os
from agentrl.sandboxes.base import SandboxConfigError
from agentrl.sandboxes.bwrap_backend import BwrapSandbox, bwrap_available
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
print("reason:", bwrap_available())
try:
    BwrapSandbox()
except SandboxConfigError as e:
    print("refused:", e)
"""


@needs_bwrap
def test_bwrap_as_non_root_is_refused_naming_the_fix():
    """Without root there is no cgroup, tmpfs or per-sandbox uid: refuse at start-up instead of running unlimited."""
    out = subprocess.run([sys.executable, "-c", NON_ROOT], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "AGENTRL_SANDBOX_SESSION": reaper.SESSION_ID})
    lines = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    for key in ("reason", "refused"):
        assert "needs root" in lines[key] and "uid 65534" in lines[key] and "backend='docker'" in lines[key], lines


@needs_bwrap
def test_bwrap_says_what_it_cannot_give_at_start_up(caplog, monkeypatch):
    monkeypatch.setattr(bwrap_backend, "_said", False)
    with caplog.at_level(logging.WARNING, logger="agentrl.sandboxes.bwrap_backend"):
        with BwrapSandbox(small_config()) as sb:
            gaps = bwrap_backend.gaps(sb.cgroup(), sb.rootfs)
    said = [r.getMessage() for r in caplog.records]
    assert said == gaps and not any("seccomp" in m for m in said), said  # the seccomp gap is closed


@needs_docker
@pytest.mark.slow
def test_sixteen_concurrent_sandboxes_run_pytest():
    files = {f"test_m{i}.py": f"def test_a():\n    assert {i} + 1 == {i + 1}\n" for i in range(5)}
    errors: list[BaseException] = []
    outputs: list[str] = []
    config = small_config(memory_mb=256, workspace_mb=64, tmp_mb=32, timeout_s=120)
    with SandboxPool(config, backend="docker", warm=0, max_concurrency=16, creates_in_flight=4) as pool:
        def job() -> None:
            try:
                with pool.sandbox() as sb:
                    sb.upload_tree(files, "/workspace/repo")
                    r = sb.exec("python3 -m pytest -q -p no:cacheprovider", cwd="/workspace/repo", timeout=120)
                    assert r.exit_code == 0, r.output
                    outputs.append(r.output)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=job) for _ in range(16)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"16 concurrent pytest sandboxes: {time.monotonic() - t0:.1f} s")
    assert not errors, errors[:3]
    assert len(outputs) == 16 and all("5 passed" in o for o in outputs)

