"""bubblewrap backend: the fallback when no Docker engine answers. Each exec is a fresh `bwrap` process.

The image's rootfs (cached by `agentrl sandbox build`) is mounted read-only
as `/` (without it, the host's /usr read-only); every namespace is unshared (no network, own PIDs, own user
namespace with uid 1000 inside) and nested user namespaces are disabled (`--disable-userns`); all
capabilities are dropped; `/dev` is read-only except a size-capped `/dev/shm`. Each sandbox has its own
cgroup (sandboxes/cgroups.py: memory, pids and CPU from the SandboxConfig, v2 or v1), which every exec joins
before dropping to the sandbox's own unprivileged host uid (20001+, one per live sandbox, held with a lock
file; RLIMIT_NPROC then counts only this sandbox). /workspace and /tmp are two host tmpfs mounts of their
configured sizes. rlimits (`prlimit`) still cap each process (address space, CPU seconds, file size, files);
a host-side deadline SIGKILLs the process group and, with its own PID namespace, the whole tree dies with it.
Every command runs under the seccomp filter of sandboxes/seccomp.py (`--seccomp FD`; bwrap loads it last, just
before it execs the command, so its own setup is unfiltered): Docker's default deny list, plus ptrace and
process_vm_* between the sandbox's processes; on an architecture without a syscall table the backend refuses.
bwrap's arguments and the filter travel through file descriptors (`--args`, `--seccomp`), so PID 1's cmdline
shows no host path. This needs root (cgroups, tmpfs mounts, uid switching): as another user the backend
refuses to start. Unlike Docker, nothing runs between execs (background processes end with their command);
`gaps()` lists what this host cannot give, logged when the first sandbox starts. Each sandbox's link folder
(sandboxes/link.py: FIFOs the host shares with another sandbox) is bound read-only at /dev/agentrl-link.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import agentrl.sandboxes.reaper as reaper
import agentrl.sandboxes.seccomp as seccomp
from agentrl.sandboxes.base import ExecResult, FileOpsMixin, SandboxConfig, SandboxConfigError
from agentrl.sandboxes.cgroups import JOIN_SCRIPT, Cgroup, parents
from agentrl.sandboxes.image import rootfs_path, rootfs_ready
from agentrl.sandboxes.process import prlimit_argv, run_process

from agentrl.errors import SandboxDead, SandboxError

LINK_PATH = "/dev/agentrl-link"  # where a sandbox sees its link folder (under /dev: the rootfs is read-only)
SLOT_UIDS = range(20001, 20257)
log = logging.getLogger(__name__)
_said = False


def _needs_root() -> str:
    return (f"the bwrap backend needs root (it is uid {os.geteuid()} here) for its per-sandbox cgroup "
            "(memory, pids, CPU), its size-capped tmpfs mounts and its per-sandbox uid: run as root, or use "
            "backend='docker' (a Docker engine gives the same limits to any user in the docker group)")


def bwrap_available() -> str | None:
    """None when `bwrap` can create a limited sandbox here; otherwise the reason it cannot (naming the fix)."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
    if os.geteuid() != 0:
        return _needs_root()
    try:
        seccomp.build_filter()
    except seccomp.UnsupportedArch as e:
        return str(e)
    try:
        r = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "--unshare-user", "--disable-userns",
                            "true"], capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "the bwrap probe hung"
    if r.returncode != 0:
        return f"bwrap cannot create namespaces here: {r.stderr.decode()[-200:].strip()}"
    missing = [c for c in ("memory", "pids", "cpu") if c not in parents()[1]]
    return f"no {', '.join(missing)} cgroup controller for per-sandbox limits" if missing else None


def gaps(cgroup: Cgroup | None, rootfs: Path | None) -> list[str]:
    """The guarantee rows this backend gives less of than Docker on this host (said once at start-up)."""
    out = []
    if cgroup is None:
        out.append("bwrap: cgroups disabled: no per-sandbox memory, pids or CPU limit (rlimits only)")
    elif cgroup.version == "v1" and not (cgroup.dirs["memory"] / "memory.memsw.limit_in_bytes").exists():
        out.append("bwrap: cgroup v1 without swap accounting: the memory limit does not cover swap")
    if rootfs is None:
        out.append("bwrap: the image rootfs is not built; the host's /usr is mounted read-only instead "
                   "(run 'agentrl sandbox build')")
    return out


def _claim_slot() -> tuple[int, int]:
    """(host uid, lock fd): a free per-sandbox uid, so RLIMIT_NPROC and file ownership are this sandbox's own."""
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


def _mount_tmpfs(path: Path, size_mb: int, uid: int, mode: int) -> None:
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode={mode:o},uid={uid},gid={uid},nosuid,nodev",
                    "agentrl-bwrap", str(path)], check=True, capture_output=True)


class BwrapSandbox(FileOpsMixin):
    """A bubblewrap sandbox over two host tmpfs mounts and its own cgroup; same API as DockerSandbox."""

    backend = "bwrap"

    def __init__(self, config: SandboxConfig | None = None, rootfs: str | os.PathLike | None = None, *,
                 cgroups: bool = True) -> None:
        """cgroups=False drops the per-sandbox cgroup (benchmarks only: no memory, pids or CPU limit)."""
        global _said
        if os.geteuid() != 0:
            raise SandboxConfigError(_needs_root())
        self.config = c = config or SandboxConfig()
        if rootfs is None and rootfs_ready("python"):
            rootfs = rootfs_path("python")
        self.rootfs = Path(rootfs) if rootfs else None
        self._filter = seccomp.build_filter()  # UnsupportedArch before anything is made: no filter, no sandbox
        self.id = f"{reaper.SESSION_ID}-{uuid.uuid4().hex[:8]}"
        self.created_at = time.monotonic()
        self.uses = 0
        self._closed = False
        self._cgroup: Cgroup | None = None
        self.uid, self._slot_fd = _claim_slot()
        self.dir = reaper.BWRAP_DIR / self.id
        self.mnt = self.dir / "mnt"
        with reaper.creating("bwrap"):  # counted until tracked: an exit cleanup waits for it, then lists leftovers
            self.dir.mkdir(parents=True)
            os.chmod(reaper.BWRAP_DIR, 0o755)
            (self.dir / "owner.json").write_text(json.dumps(reaper.owner_labels(c.ttl_s)))
            reaper.track(self)  # removes it again and raises when the process is shutting down
        self.link_dir: Path | None = self.dir / "link"  # sandboxes/link.py: read-only inside at LINK_PATH
        self.link_path = LINK_PATH
        try:
            self.link_dir.mkdir(mode=0o755)
            self.mnt.mkdir()
            _mount_tmpfs(self.mnt / "workspace", c.workspace_mb, self.uid, 0o755)
            _mount_tmpfs(self.mnt / "tmp", c.tmp_mb, self.uid, 0o1777)
            if cgroups:
                self._cgroup = Cgroup.create(self.id, c, record=self.dir / reaper.CGROUP_RECORD)
        except BaseException:
            self.close()
            raise
        if not _said:
            _said = True
            for line in gaps(self._cgroup, self.rootfs):
                log.warning(line)

    def _bwrap_args(self, cwd: str, env: Mapping[str, str]) -> list[str]:
        """bwrap's options (namespaces, mounts, uid, env) for one exec; they go through `--args FD`."""
        c = self.config
        if self.rootfs is not None:
            root = ["--ro-bind", str(self.rootfs), "/"]
        else:  # host binaries read-only; nothing else of the host is visible
            root = ["--ro-bind", "/usr", "/usr", "--ro-bind-try", "/etc/alternatives", "/etc/alternatives"]
            for link in ("bin", "sbin", "lib", "lib64"):
                target = os.readlink(f"/{link}") if os.path.islink(f"/{link}") else None
                root += ["--symlink", target, f"/{link}"] if target else ["--ro-bind-try", f"/{link}", f"/{link}"]
        args = [*root, "--dev", "/dev", "--size", str(c.shm_mb << 20), "--tmpfs", "/dev/shm",
                "--ro-bind", str(self.link_dir), LINK_PATH, "--remount-ro", "/dev",
                "--proc", "/proc", "--bind", str(self.mnt / "workspace"), "/workspace",
                "--bind", str(self.mnt / "tmp"), "/tmp", "--chdir", cwd,
                "--unshare-all", "--unshare-user", "--disable-userns", "--uid", str(c.agent_uid),
                "--gid", str(c.agent_uid), "--hostname", "sandbox", "--die-with-parent", "--new-session",
                "--cap-drop", "ALL", "--clearenv"]
        for k, v in {**c.env, **env}.items():
            args += ["--setenv", k, v]
        return args

    def exec(self, cmd: str | list[str], *, timeout: float | None = None, cwd: str | None = None,
             env: Mapping[str, str] | None = None, stdin: bytes | str | None = None,
             max_output_bytes: int | None = None) -> ExecResult:
        """Run `cmd` (string → `bash -c`) in a fresh bwrap process; see DockerSandbox.exec for the contract."""
        if self._closed or not self.mnt.is_dir():
            raise SandboxDead(f"bwrap sandbox {self.id} is closed or its folder is gone")
        c = self.config
        timeout = float(timeout or c.timeout_s)
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        args_fd = os.memfd_create("agentrl-bwrap-args")
        filter_fd = os.memfd_create("agentrl-bwrap-seccomp")
        try:
            args = [*self._bwrap_args(cwd or c.workdir, env or {}), "--seccomp", str(filter_fd)]
            os.write(args_fd, b"".join(a.encode() + b"\0" for a in args))
            os.lseek(args_fd, 0, os.SEEK_SET)
            os.write(filter_fd, self._filter)
            os.lseek(filter_fd, 0, os.SEEK_SET)
            full = [*prlimit_argv(c, timeout, nproc=True), "bwrap", "--args", str(args_fd), "--", *argv]
            if self._cgroup is not None:  # join the cgroup as root, then drop to the sandbox uid
                full = ["sh", "-c", JOIN_SCRIPT, "agentrl-cgroup", *self._cgroup.procs_files(), "--",
                        "setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--", *full]
                kwargs = {}
            else:
                kwargs = {"user": self.uid, "group": self.uid, "extra_groups": []}
            self.uses += 1
            res = run_process(full, config=c, timeout=timeout, max_output_bytes=max_output_bytes or c.max_output_bytes,
                              stdin=stdin.encode() if isinstance(stdin, str) else stdin, cwd="/", env={},
                              pass_fds=(args_fd, filter_fd), **kwargs)
        finally:
            os.close(args_fd)
            os.close(filter_fd)
        if res.exit_code == 125 and res.raw.startswith(b"agentrl-cgroup:"):
            raise SandboxDead(f"bwrap sandbox {self.id}: {res.output.strip()[:200]}")
        return res

    def cgroup(self) -> Cgroup | None:
        """This sandbox's own cgroup (None only when created with cgroups=False)."""
        return self._cgroup

    def reset(self) -> None:
        """Wipe /workspace and /tmp (no process outlives its exec here)."""
        self._wipe()
        self.uses = 0

    def alive(self) -> bool:
        """True until closed (and while the host folder exists)."""
        return not self._closed and self.mnt.is_dir()

    def close(self) -> None:
        """Remove the cgroup, unmount and delete the host folder, free the uid slot; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            reaper.remove_bwrap_dir(self.dir)
        finally:
            if self._slot_fd is not None:
                os.close(self._slot_fd)
                self._slot_fd = None

    def __enter__(self) -> BwrapSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BwrapSandbox({self.id}, rootfs={self.rootfs or 'host /usr'})"
