"""Ownership labels and leftover cleanup: nothing we create outlives its owner for long.

Four layers: `close()` in finally/__exit__; an atexit + SIGTERM sweep of this
process's sandboxes; the keep-alive `sleep ttl_s` with auto_remove, so a container of a `kill -9`-ed trainer
removes itself; and `reap()` at pool start-up (and `agentrl sandbox reap`), which removes only containers and
bwrap folders carrying our labels whose owner process is dead (pid + start time, so a reused pid does not
count as alive) or whose TTL has passed. It never touches anything without the `agentrl.owner` label; a bwrap
folder's cgroups are the ones its `cgroup.json` records, removed with it.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
import weakref
from pathlib import Path

from agentrl.sandboxes.cgroups import remove_recorded
from agentrl.sandboxes.docker_engine import docker_client, remove_container

OWNER = "agentrl"
SESSION_ID = os.environ.get("AGENTRL_SANDBOX_SESSION") or uuid.uuid4().hex[:12]
BWRAP_DIR = Path(os.environ.get("AGENTRL_BWRAP_DIR", "/var/tmp/agentrl/bwrap"))
CGROUP_RECORD = "cgroup.json"  # in a bwrap folder: the cgroup directories that sandbox made (removed with it)
_live: weakref.WeakSet = weakref.WeakSet()
_installed = False
_lock = threading.Lock()


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


def reap(session: str | None = None, docker: bool = True, bwrap: bool = True) -> list[str]:
    """Remove leftover sandboxes (see module doc); with `session`, remove all of that session. Returns their ids."""
    removed: list[str] = []
    if docker:
        try:
            client = docker_client()
        except Exception:  # no engine: nothing of ours can be running there
            client = None
        if client is not None:
            flt = {"label": [f"agentrl.owner={OWNER}"] + ([f"agentrl.session={session}"] if session else [])}
            for c in client.api.containers(all=True, filters=flt):
                if should_reap(c.get("Labels") or {}, session):
                    remove_container(client, c["Id"])
                    removed.append(c["Id"][:12])
    if bwrap and BWRAP_DIR.is_dir():
        for d in BWRAP_DIR.iterdir():
            try:
                labels = json.loads((d / "owner.json").read_text())
            except (OSError, ValueError):
                continue
            if should_reap(labels, session):
                remove_bwrap_dir(d)
                removed.append(d.name)
    return removed


def remove_bwrap_dir(d: Path) -> None:
    """Remove a bwrap sandbox's recorded cgroups, unmount its tmpfs mounts and delete its folder."""
    remove_recorded(d / CGROUP_RECORD)
    for mnt in (d / "mnt" / "workspace", d / "mnt" / "tmp", d / "mnt"):
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
    shutil.rmtree(d, ignore_errors=True)


def track(sandbox) -> None:
    """Remember a live sandbox so the exit sweep can close it; install the atexit/SIGTERM hooks once."""
    global _installed
    _live.add(sandbox)
    with _lock:
        if _installed:
            return
        _installed = True
        atexit.register(sweep)
    install_sigterm_hook()


def install_sigterm_hook() -> bool:
    """Sweep this process's sandboxes on SIGTERM (then die of it). Only the main thread may set a handler, and
    sandboxes of a training run are made in worker threads, so entry points (the CLI, train, the swe_lite
    evaluator) call this up front; True when the hook is in place. A handler someone else set is left alone."""
    if threading.current_thread() is not threading.main_thread():
        return signal.getsignal(signal.SIGTERM) is _on_sigterm
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _on_sigterm)
    return signal.getsignal(signal.SIGTERM) is _on_sigterm


def sweep() -> None:
    """Close every sandbox this process still holds (atexit; also on SIGTERM). SIGINT ends in atexit too."""
    for sb in list(_live):
        try:
            sb.close()
        except Exception:
            pass


def _on_sigterm(signum, frame) -> None:
    """Sweep, then die of SIGTERM as the default action would."""
    sweep()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
