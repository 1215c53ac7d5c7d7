"""Ownership labels and leftover cleanup: nothing we create outlives its owner for long.

Four layers: `close()` in finally/__exit__; an atexit + SIGTERM cleanup of this
process's sandboxes; the keep-alive `sleep ttl_s` with auto_remove, so a container of a `kill -9`-ed trainer
removes itself; and `reap()` at pool start-up (and `agentrl sandbox reap`), which removes only containers and
bwrap folders carrying our labels whose owner process is dead (pid + start time, so a reused pid does not
count as alive) or whose TTL has passed. It never touches anything without the `agentrl.owner` label; a bwrap
folder's cgroups are the ones its `cgroup.json` records, removed with it.

The exit cleanup (`cleanup_own`) covers sandboxes still being created when the process ends: backends create
inside `creating()`, which refuses new creates once the process is shutting down and is counted, so the cleanup
waits for the creates in flight (each removes its own sandbox when it finishes) and then removes whatever still
carries this process's labels (`agentrl.session` and `agentrl.pid`), e.g. a container whose start failed.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from contextlib import contextmanager
from pathlib import Path

from agentrl.sandboxes.cgroups import remove_recorded
from agentrl.sandboxes.docker_engine import docker_client, remove_container

from agentrl.errors import SandboxError

OWNER = "agentrl"
SESSION_ID = os.environ.get("AGENTRL_SANDBOX_SESSION") or uuid.uuid4().hex[:12]
BWRAP_DIR = Path(os.environ.get("AGENTRL_BWRAP_DIR", "/var/tmp/agentrl/bwrap"))
LINKS_DIR = Path(tempfile.gettempdir()) / f"agentrl-links-{os.getuid()}"  # docker link folders, a root per process
CGROUP_RECORD = "cgroup.json"  # in a bwrap folder: the cgroup directories that sandbox made (removed with it)
CREATE_WAIT_S = 30.0  # at exit, how long to wait for sandbox creates still in flight in other threads
_live: weakref.WeakSet = weakref.WeakSet()
_installed = False
_lock = threading.Lock()
_shutting_down = threading.Event()  # set by SIGTERM and at exit: no new sandboxes, creates in flight undo themselves
_creating: dict[int, int] = {}  # thread id -> creates in flight in that thread (read lock-free by the signal handler)
_used = {"docker": False, "bwrap": False}  # backends this process created sandboxes with (what the exit cleanup lists)
_interrupt_pending = False  # a SIGTERM reached the main thread while it was creating a sandbox: interrupt after it
terminated = False  # a SIGTERM arrived (the CLI then says "terminated" and exits 143)


def proc_start_time(pid: int) -> str | None:
    """Start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_labels(ttl_s: float) -> dict[str, str]:
    """The labels every container (and bwrap folder) we create carries."""
    return {"agentrl.owner": OWNER, "agentrl.session": SESSION_ID, "agentrl.pid": str(os.getpid()),
            "agentrl.pidstart": proc_start_time(os.getpid()) or "", "agentrl.host": socket.gethostname(),
            "agentrl.created": f"{time.time():.0f}", "agentrl.ttl": f"{ttl_s:.0f}"}


def owner_alive(labels: dict[str, str]) -> bool:
    """True unless the owner process is known dead (same host, and no process with that pid and start time)."""
    if labels.get("agentrl.host") != socket.gethostname():
        return True  # another machine's engine user; only the TTL can tell
    try:
        pid = int(labels.get("agentrl.pid", ""))
    except ValueError:
        return False
    start = proc_start_time(pid)
    return start is not None and start == labels.get("agentrl.pidstart", start)


def expired(labels: dict[str, str], now: float | None = None) -> bool:
    """True when created + ttl (plus a minute of slack) lies in the past."""
    try:
        return float(labels["agentrl.created"]) + float(labels["agentrl.ttl"]) + 60 < (now or time.time())
    except (KeyError, ValueError):
        return False


def should_reap(labels: dict[str, str], session: str | None = None) -> bool:
    """The reaping rule: ours, and (of the given session, or owner dead, or past the TTL)."""
    if labels.get("agentrl.owner") != OWNER:
        return False
    if session is not None:
        return labels.get("agentrl.session") == session
    return not owner_alive(labels) or expired(labels)


def reap(session: str | None = None, docker: bool = True, bwrap: bool = True, pid: int | None = None) -> list[str]:
    """Remove leftover sandboxes (see module doc); with `session`, remove all of that session (and with `pid`, only
    those that process made). Returns their ids."""
    removed: list[str] = []
    if docker:
        try:
            client = docker_client()
        except Exception:  # no engine: nothing of ours can be running there
            client = None
        if client is not None:
            for c in client.api.containers(all=True, filters={"label": _label_filter(session, pid)}):
                if should_reap(c.get("Labels") or {}, session):
                    remove_container(client, c["Id"])
                    removed.append(c["Id"][:12])
    if docker:  # link folders (sandboxes/link.py) of docker sandboxes
        for d in _reapable_dirs(LINKS_DIR, session, pid):
            shutil.rmtree(d, ignore_errors=True)
    if bwrap:
        for d in _reapable_dirs(BWRAP_DIR, session, pid):
            remove_bwrap_dir(d)
            removed.append(d.name)
    return removed


def _reapable_dirs(parent: Path, session: str | None, pid: int | None) -> list[Path]:
    """The folders in `parent` whose `owner.json` says the reaping rule takes them (and made by `pid`, if given)."""
    found = []
    for d in parent.iterdir() if parent.is_dir() else ():
        try:
            labels = json.loads((d / "owner.json").read_text())
        except (OSError, ValueError):
            continue
        if should_reap(labels, session) and (pid is None or labels.get("agentrl.pid") == str(pid)):
            found.append(d)
    return found


def _label_filter(session: str | None, pid: int | None) -> list[str]:
    """Docker label filters: ours, of `session` and made by `pid` where given."""
    return ([f"agentrl.owner={OWNER}"] + ([f"agentrl.session={session}"] if session else [])
            + ([f"agentrl.pid={pid}"] if pid is not None else []))


def own_containers() -> list[str]:
    """Ids of the containers this process made that still exist (any state), by their labels."""
    if not _used["docker"]:
        return []
    try:
        client = docker_client()
        found = client.api.containers(all=True, filters={"label": _label_filter(SESSION_ID, os.getpid())})
    except Exception:
        return []
    return [c["Id"][:12] for c in found]


def remove_bwrap_dir(d: Path) -> None:
    """Remove a bwrap sandbox's recorded cgroups, unmount its tmpfs mounts and delete its folder."""
    remove_recorded(d / CGROUP_RECORD)
    for mnt in (d / "mnt" / "workspace", d / "mnt" / "tmp", d / "mnt"):
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
    shutil.rmtree(d, ignore_errors=True)


@contextmanager
def creating(backend: str):
    """Wrap the creation of one sandbox, up to and including `track`: refused (SandboxError) once the process is
    shutting down, and counted, so the exit cleanup can wait for the creates in flight before it lists leftovers.
    A SIGTERM that reaches the main thread meanwhile interrupts it only after the sandbox is tracked (or undone)."""
    global _interrupt_pending
    if _shutting_down.is_set():
        raise SandboxError("this process is shutting down: no new sandboxes")
    _install_exit_hooks()
    _used[backend] = True
    me = threading.get_ident()
    with _lock:
        _creating[me] = _creating.get(me, 0) + 1
    try:
        yield
    finally:
        with _lock:
            _creating[me] -= 1
            if not _creating[me]:
                del _creating[me]
        if _interrupt_pending and threading.current_thread() is threading.main_thread() and me not in _creating:
            _interrupt_pending = False
            _interrupt(None)


def track(sandbox) -> None:
    """Remember a live sandbox so the exit cleanup can close it. Once the process is shutting down, close it at
    once and raise SandboxError instead: it was created after the cleanup began."""
    _live.add(sandbox)
    _install_exit_hooks()
    if _shutting_down.is_set():
        _live.discard(sandbox)
        sandbox.close()
        raise SandboxError("this process is shutting down: the sandbox just made was removed again")


def _install_exit_hooks() -> None:
    """The atexit cleanup (and the SIGTERM hook, where this is the main thread), once."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        atexit.register(cleanup_own)
    install_sigterm_hook()


def install_sigterm_hook(*, interrupt: bool = False) -> bool:
    """Clean up this process's sandboxes on SIGTERM. Only the main thread may set a handler, and sandboxes of a
    training run are made in worker threads, so entry points (the CLI, train, the swe_lite evaluator) call this
    up front; True when one of ours is in place. A handler someone else set is left alone.

    Without `interrupt` the handler removes every sandbox of the process (those being created included) and the
    process dies of SIGTERM. With `interrupt` (the CLI) it stops new creates and interrupts the main thread as
    Ctrl-C does, so the command unwinds, cleans up and says how to resume; a second SIGTERM cleans up and dies."""
    ours = (_on_sigterm, _on_sigterm_interrupt)
    if threading.current_thread() is not threading.main_thread():
        return signal.getsignal(signal.SIGTERM) in ours
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _on_sigterm_interrupt if interrupt else _on_sigterm)
    return signal.getsignal(signal.SIGTERM) in ours


def sweep() -> None:
    """Close every sandbox this process still holds (part of the exit and SIGTERM cleanup)."""
    for sb in list(_live):
        try:
            sb.close()
        except Exception:
            pass


def cleanup_own(wait_s: float = CREATE_WAIT_S) -> None:
    """Leave no sandbox of this process behind (atexit, and SIGTERM): refuse new creates, close the tracked ones,
    wait up to `wait_s` for creates in flight in other threads (each undoes itself in `track`), then remove
    whatever still carries this process's labels and wait until the engine lists none of them."""
    _shutting_down.set()
    sweep()
    me = threading.get_ident()
    deadline = time.monotonic() + wait_s
    while any(t != me for t in list(_creating)) and time.monotonic() < deadline:
        time.sleep(0.05)
    sweep()
    if not (_used["docker"] or _used["bwrap"]):
        return
    try:
        reap(session=SESSION_ID, pid=os.getpid(), docker=_used["docker"], bwrap=_used["bwrap"])
    except Exception:
        pass
    deadline = time.monotonic() + 10.0  # a force-removed auto_remove container may show "Removal In Progress"
    while own_containers() and time.monotonic() < deadline:
        time.sleep(0.1)


def _on_sigterm(signum, frame) -> None:
    """Remove this process's sandboxes (those being created included), then die of SIGTERM as the default would."""
    global terminated
    terminated = True
    cleanup_own()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _on_sigterm_interrupt(signum, frame) -> None:
    """The CLI's SIGTERM: no new sandboxes, then interrupt the main thread as Ctrl-C does (deferred while the main
    thread is creating a sandbox, so it is tracked or undone first). A second SIGTERM cleans up and dies."""
    global terminated, _interrupt_pending
    if terminated:
        _on_sigterm(signum, frame)
        return
    terminated = True
    _shutting_down.set()
    if threading.get_ident() in _creating:
        _interrupt_pending = True
        return
    _interrupt(frame)


def _interrupt(frame) -> None:
    """Do what Ctrl-C would do now: call the SIGINT handler in place (asyncio.run's cancels its main task and
    raises KeyboardInterrupt once the task has unwound; Python's default raises KeyboardInterrupt)."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt
