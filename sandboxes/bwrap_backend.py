"""bubblewrap backend: the fallback when no Docker engine answers. Each exec is a fresh `bwrap` process.

Per reference/swe_sandbox.md §6.7 (verified there): the image's rootfs (cached by `agentrl sandbox build`) is
mounted read-only as `/` (without it, the host's /usr read-only), with all namespaces unshared (no network, own
PIDs), uid 1000 inside, all capabilities dropped, `--die-with-parent`, `--new-session`. Limits are rlimits set
by `prlimit` (address space, CPU, file size, files, processes) and a host-side deadline that SIGKILLs the process
group; with its own PID namespace the whole tree dies with it, `setsid` children included.
RLIMIT_NPROC is ignored when bwrap starts as host root, so as root each sandbox runs as its own unprivileged
host uid (20001+, one per live sandbox, held with a lock file). /workspace and /tmp are a host tmpfs of the
configured size (as root), so a disk-filling command cannot touch the host disk. Unlike Docker, nothing runs
between execs: background processes end with the command that started them.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from agentrl.sandboxes import reaper
from agentrl.sandboxes.base import ExecResult, FileOpsMixin, SandboxConfig
from agentrl.sandboxes.process import prlimit_argv, run_process

from agentrl.errors import SandboxDead, SandboxError

SLOT_UIDS = range(20001, 20257)


def bwrap_available() -> str | None:
    """None when `bwrap` can create a sandbox here; otherwise the reason it cannot."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
    try:
        r = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True,
                           timeout=10)
    except subprocess.TimeoutExpired:
        return "the bwrap probe hung"
    return None if r.returncode == 0 else f"bwrap cannot create namespaces here: {r.stderr.decode()[-200:].strip()}"


def _claim_slot() -> tuple[int, int | None]:
    """(host uid, lock fd): a free per-sandbox uid when root (so RLIMIT_NPROC applies), else our own uid."""
    if os.geteuid() != 0:
        return os.getuid(), None
    lock_dir = reaper.BWRAP_DIR / "slots"
    lock_dir.mkdir(parents=True, exist_ok=True)
    for uid in SLOT_UIDS:
        fd = os.open(lock_dir / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return uid, fd
        except BlockingIOError:
            os.close(fd)
    raise SandboxError(f"all {len(SLOT_UIDS)} bwrap sandbox uids are in use")


class BwrapSandbox(FileOpsMixin):
    """A bubblewrap sandbox over a host folder; same API as DockerSandbox."""

    backend = "bwrap"

    def __init__(self, config: SandboxConfig | None = None, rootfs: str | os.PathLike | None = None) -> None:
        from agentrl.sandboxes.image import rootfs_path, rootfs_ready

        self.config = c = config or SandboxConfig()
        if rootfs is None and rootfs_ready("python"):
            rootfs = rootfs_path("python")
        self.rootfs = Path(rootfs) if rootfs else None
        self.id = f"{reaper.SESSION_ID}-{uuid.uuid4().hex[:8]}"
        self.created_at = time.monotonic()
        self.uses = 0
        self._closed = False
        self.uid, self._slot_fd = _claim_slot()
        self.dir = reaper.BWRAP_DIR / self.id
        self.dir.mkdir(parents=True)
        os.chmod(reaper.BWRAP_DIR, 0o755)
        (self.dir / "owner.json").write_text(json.dumps(reaper.owner_labels(c.ttl_s)))
        self.mnt = self.dir / "mnt"
        self.mnt.mkdir()
        if os.geteuid() == 0:
            size = (c.workspace_mb + c.tmp_mb) << 20
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755,nosuid,nodev", "agentrl-bwrap",
                            str(self.mnt)], check=True, capture_output=True)
        for sub, mode in (("workspace", 0o755), ("tmp", 0o1777)):
            (self.mnt / sub).mkdir()
            os.chown(self.mnt / sub, self.uid, self.uid)
            os.chmod(self.mnt / sub, mode)
        reaper.track(self)

    def _bwrap_argv(self, cwd: str, env: Mapping[str, str]) -> list[str]:
        """The bwrap command line (namespaces, mounts, uid, env) for one exec."""
        if self.rootfs is not None:
            root = ["--ro-bind", str(self.rootfs), "/"]
        else:  # host binaries read-only; nothing else of the host is visible
            root = ["--ro-bind", "/usr", "/usr", "--ro-bind-try", "/etc/alternatives", "/etc/alternatives"]
            for link in ("bin", "sbin", "lib", "lib64"):
                target = os.readlink(f"/{link}") if os.path.islink(f"/{link}") else None
                root += ["--symlink", target, f"/{link}"] if target else ["--ro-bind-try", f"/{link}", f"/{link}"]
        argv = ["bwrap", *root, "--dev", "/dev", "--proc", "/proc",
                "--bind", str(self.mnt / "workspace"), "/workspace", "--bind", str(self.mnt / "tmp"), "/tmp",
                "--chdir", cwd, "--unshare-all", "--uid", str(self.config.agent_uid),
                "--gid", str(self.config.agent_uid), "--hostname", "sandbox", "--die-with-parent", "--new-session",
                "--cap-drop", "ALL", "--clearenv"]
        for k, v in {**self.config.env, **env}.items():
            argv += ["--setenv", k, v]
        return argv

    def exec(self, cmd: str | list[str], *, timeout: float | None = None, cwd: str | None = None,
             env: Mapping[str, str] | None = None, stdin: bytes | str | None = None,
             max_output_bytes: int | None = None) -> ExecResult:
        """Run `cmd` (string → `bash -c`) in a fresh bwrap process; see DockerSandbox.exec for the contract."""
        if self._closed or not self.mnt.is_dir():
            raise SandboxDead(f"bwrap sandbox {self.id} is closed or its folder is gone")
        c = self.config
        timeout = float(timeout or c.timeout_s)
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        root = os.geteuid() == 0
        full = [*prlimit_argv(c, timeout, nproc=root), *self._bwrap_argv(cwd or c.workdir, env or {}), "--", *argv]
        kwargs = {"user": self.uid, "group": self.uid, "extra_groups": []} if root else {}
        self.uses += 1
        return run_process(full, config=c, timeout=timeout, max_output_bytes=max_output_bytes or c.max_output_bytes,
                           stdin=stdin.encode() if isinstance(stdin, str) else stdin, cwd="/", env={}, **kwargs)

    def reset(self) -> None:
        """Wipe /workspace and /tmp (no process outlives its exec here)."""
        self._wipe()
        self.uses = 0

    def alive(self) -> bool:
        """True until closed (and while the host folder exists)."""
        return not self._closed and self.mnt.is_dir()

    def close(self) -> None:
        """Unmount and delete the host folder and free the uid slot; idempotent."""
        if self._closed:
            return
        self._closed = True
        reaper.remove_bwrap_dir(self.dir)
        if self._slot_fd is not None:
            os.close(self._slot_fd)

    def __enter__(self) -> BwrapSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BwrapSandbox({self.id}, rootfs={self.rootfs or 'host /usr'})"
