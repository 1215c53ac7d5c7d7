"""The Sandbox protocol, ExecResult, SandboxConfig, the head+tail output cap and path checks shared by backends.

Contract: a command that fails, times out or floods its output comes back
as an ExecResult the agent can read; only an unusable sandbox (container gone, daemon unreachable) raises
SandboxError. File operations run *inside* the sandbox (as the agent uid, through exec stdin/stdout), so the
isolation boundary is the sandbox itself; the path checks here and in `FILE_SCRIPT` are the API contract
("paths stay under /workspace or /tmp"), applied before anything runs.
"""

from __future__ import annotations

import io
import os
import posixpath
import tarfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from agentrl.errors import AgentRLError, SandboxError

ROOTS = ("/workspace", "/tmp")  # the only places file operations may touch inside a sandbox


class SandboxConfigError(AgentRLError):
    """A sandbox limit or backend choice is invalid."""


class PathOutsideSandbox(AgentRLError, ValueError):
    """A path given to read/write/upload/download leaves /workspace and /tmp (`..`, absolute, symlink)."""


class FileTooLarge(AgentRLError, ValueError):
    """A file or tree is larger than the byte limit the caller gave."""


@dataclass
class SandboxConfig:
    """Limits and defaults of one sandbox. The defaults are the hardened ones (docs/sandboxes.md)."""

    image: str | None = None
    """Docker image tag; None means the current `agentrl/python:<recipe hash>`."""
    memory_mb: int = 1024
    """Memory limit (swap included). tmpfs pages count against it, so the tmpfs sizes must stay below."""
    cpus: float = 1.0
    """CPU quota in cores (docker nano_cpus; bwrap cgroup cpu.max / cpu.cfs_quota_us)."""
    pids: int = 256
    """Max processes of the sandbox (docker pids_limit; bwrap cgroup pids.max plus RLIMIT_NPROC of its uid)."""
    workspace_mb: int = 256
    """Size of the /workspace tmpfs (the only writable disk besides /tmp and /dev/shm)."""
    tmp_mb: int = 128
    """Size of the /tmp tmpfs (separate from /workspace's)."""
    shm_mb: int = 64
    """Size of the /dev/shm tmpfs (the only writable place under /dev)."""
    nofile: int = 1024
    """Open file limit."""
    timeout_s: float = 30.0
    """Default per-command timeout."""
    kill_grace_s: float = 2.0
    """After timeout + this, the watchdog kills every agent-uid process from outside the command."""
    max_output_bytes: int = 128 << 10
    """Default output kept per command: the first and last half of it, with a marker in between."""
    output_kill_bytes: int = 16 << 20
    """A command whose output passes this many bytes is killed (exit 137, truncated=True)."""
    ttl_s: float = 7200.0
    """Lifetime of the keep-alive process: an orphaned container removes itself after this."""
    kill_background: bool = True
    """Kill every process a command left running when it ends (as bwrap always does); False keeps them until reset."""
    workdir: str = "/workspace"
    """Default cwd of exec."""
    agent_uid: int = 1000
    """Uid that every command runs as (never root)."""
    keepalive_uid: int = 65534
    """Uid of the docker keep-alive; it must differ from agent_uid so `kill -9 -1` as the agent spares it."""
    env: dict[str, str] = field(default_factory=lambda: {
        "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PAGER": "cat", "GIT_PAGER": "cat",
        "TQDM_DISABLE": "1", "LANG": "C.UTF-8", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
    """Environment of every command (exec's env= adds to it)."""
    labels: dict[str, str] = field(default_factory=dict)
    """Extra Docker labels (the agentrl.* ownership labels are always added)."""

    def __post_init__(self) -> None:
        problems = []
        tmpfs = self.workspace_mb + self.tmp_mb + self.shm_mb
        if tmpfs >= self.memory_mb:
            problems.append(f"workspace_mb + tmp_mb + shm_mb = {tmpfs} must stay below memory_mb="
                            f"{self.memory_mb} (tmpfs pages count against the memory limit)")
        if self.agent_uid == 0:
            problems.append("agent_uid=0 would run commands as root")
        if self.keepalive_uid == self.agent_uid:
            problems.append("keepalive_uid must differ from agent_uid (the watchdog's kill -9 -1 would kill it)")
        if self.cpus <= 0:
            problems.append("cpus must be positive")
        for name in ("memory_mb", "pids", "workspace_mb", "tmp_mb", "shm_mb", "timeout_s", "max_output_bytes"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be positive")
        if self.output_kill_bytes < self.max_output_bytes:
            problems.append("output_kill_bytes must be >= max_output_bytes")
        if problems:
            raise SandboxConfigError("invalid SandboxConfig: " + "; ".join(problems))


@dataclass
class ExecResult:
    """The outcome of one command. Failures, timeouts and floods are results, not exceptions."""

    exit_code: int
    """Exit status; 128+N when killed by signal N (a timeout is 137, from `timeout -s KILL`)."""
    output: str
    """stdout and stderr merged in arrival order, decoded with errors='replace', head+tail capped."""
    timed_out: bool = False
    """True when the command ran past its timeout (decided by the host clock; an OOM kill is also 137)."""
    truncated: bool = False
    """True when output was dropped from the middle (or the command was killed for flooding)."""
    total_bytes: int = 0
    """Bytes the command wrote in all, including the dropped ones."""
    duration_s: float = 0.0
    """Wall-clock time of the call."""
    raw: bytes = b""
    """The kept bytes (head + marker + tail) before decoding."""

    @property
    def ok(self) -> bool:
        """exit_code == 0 and not timed out."""
        return self.exit_code == 0 and not self.timed_out


class OutputCap:
    """Keeps the first and last `limit // 2` bytes of a stream and counts the rest (a ring buffer for the tail)."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit - limit // 2
        self.tail_limit = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Append one chunk."""
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_limit:
            self.tail += data
            if len(self.tail) > 2 * self.tail_limit:  # trim rarely, not on every chunk
                del self.tail[: len(self.tail) - self.tail_limit]

    def result(self) -> tuple[bytes, bool]:
        """(kept bytes with an elision marker, truncated?)."""
        tail = bytes(self.tail[-self.tail_limit:]) if self.tail_limit else b""
        dropped = self.total - len(self.head) - len(tail)
        if dropped <= 0:
            return bytes(self.head) + tail, False
        marker = f"\n[agentrl: {dropped} bytes of output elided]\n".encode()
        return bytes(self.head) + marker + tail, True


def make_result(cap: OutputCap, exit_code: int, timed_out: bool, duration: float, flooded: bool) -> ExecResult:
    """Assemble an ExecResult from a filled OutputCap."""
    raw, truncated = cap.result()
    if flooded:
        raw += f"\n[agentrl: output passed {cap.total} bytes; the command was killed]\n".encode()
    return ExecResult(exit_code=exit_code, output=raw.decode("utf-8", errors="replace"), timed_out=timed_out,
                      truncated=truncated or flooded, total_bytes=cap.total, duration_s=duration, raw=raw)


def check_path(path: str, cwd: str = "/workspace") -> str:
    """Normalise a sandbox path (relative ones are taken from `cwd`); raise PathOutsideSandbox unless it is under
    /workspace or /tmp. Symlinks are checked again inside the sandbox, where they resolve."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise PathOutsideSandbox(f"invalid sandbox path {path!r}")
    full = posixpath.normpath(posixpath.join(cwd, path))
    if not any(full == r or full.startswith(r + "/") for r in ROOTS):
        raise PathOutsideSandbox(f"path {path!r} resolves to {full!r}, outside {' and '.join(ROOTS)}")
    return full


def check_member(name: str) -> str:
    """Validate a relative tree member name (upload/download): no absolute paths, no `..`, no empty parts."""
    norm = posixpath.normpath(name)
    if name.startswith("/") or norm == ".." or norm.startswith("../") or "\0" in name or norm in ("", "."):
        raise PathOutsideSandbox(f"tree member {name!r} must be a relative path inside the tree")
    return norm


# One script for every file operation, run inside the sandbox as the agent uid. realpath resolves symlinks in
# the sandbox's own view, so a link that leaves /workspace and /tmp is refused there (exit 3).
FILE_SCRIPT = r"""
op=$1; p=$2; arg=$3
r=$(realpath -m -- "$p") || exit 3
case "$r" in /workspace|/workspace/*|/tmp|/tmp/*) ;; *) exit 3;; esac
case "$op" in
read)  [ -e "$r" ] || exit 2; [ -f "$r" ] || exit 4
       [ "$(stat -c %s -- "$r")" -le "$arg" ] || exit 5; exec cat -- "$r";;
write) mkdir -p -- "$(dirname -- "$r")" && [ ! -d "$r" ] || exit 4
       cat > "$r" && chmod "$arg" -- "$r";;
untar) mkdir -p -- "$r" && cd -- "$r" || exit 1
       # stdin: $arg bytes of NUL-separated member names, then the tar. Every member must resolve, through any
       # symlink planted on its way, under the roots; else nothing is extracted (tar follows directory links).
       out=$(set -o pipefail; head -c "$arg" | xargs -0 -r realpath -m -z -- | tr '\0' '\n') || exit 6
       [ -z "$out" ] || ! printf '%s\n' "$out" | grep -qvE '^(/workspace|/tmp)(/|$)' || exit 7
       exec tar -x --no-same-owner -C "$r";;
tar)   [ -d "$r" ] || exit 2; exec tar -c --exclude=./.git -C "$r" .;;
esac
"""


# Reset: kill every agent-uid process (kill -1 spares the caller), then empty the writable places.
WIPE_SCRIPT = "kill -9 -1 2>/dev/null; find /workspace /tmp -mindepth 1 -maxdepth 1 -exec rm -rf -- {} + 2>&1; true"


def tar_tree(src: str | os.PathLike | Mapping[str, bytes | str]) -> bytes:
    """Pack a local folder or a {relative path: content} mapping into a tar (regular files only, agent-owned).

    A symlink in a local folder is followed only when its target stays inside the folder.
    """
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        def add(name: str, data: bytes, mode: int) -> None:
            info = tarfile.TarInfo(check_member(name))
            info.size, info.mode, info.uid, info.gid, info.mtime = len(data), mode, 1000, 1000, time.time()
            tar.addfile(info, io.BytesIO(data))

        if isinstance(src, Mapping):
            for name, data in src.items():
                add(name, data.encode() if isinstance(data, str) else bytes(data), 0o644)
        else:
            base = Path(src).resolve()
            if not base.is_dir():
                raise FileNotFoundError(f"upload_tree: {src} is not a directory")
            for p in sorted(Path(src).rglob("*")):
                real = p.resolve()
                if real != base and base not in real.parents:
                    raise PathOutsideSandbox(f"upload_tree: {p} is a symlink leaving {src}")
                if real.is_file():
                    add(str(p.relative_to(src)), real.read_bytes(), 0o755 if os.access(real, os.X_OK) else 0o644)
    return buf.getvalue()


def tar_names(data: bytes) -> list[str]:
    """The member names of a tar made by `tar_tree`."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        return tar.getnames()


def untar_tree(data: bytes, dest: str | os.PathLike | None = None) -> dict[str, bytes]:
    """Read a tar from a sandbox: regular files only, names checked; write them under `dest` when given.

    An empty or unreadable tar is a SandboxError (our tar, run by our script, made it: the backend lost or cut the
    stream), so a caller probes the backend instead of crashing on a tarfile error."""
    files: dict[str, bytes] = {}
    if not data:
        raise SandboxError("the sandbox sent an empty tar")
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for m in tar:
                if m.isfile():
                    files[check_member(m.name)] = tar.extractfile(m).read()
    except (tarfile.TarError, EOFError) as e:
        raise SandboxError(f"the sandbox sent a tar that cannot be read ({len(data)} bytes): {e}") from None
    if dest is not None:
        base = Path(dest).resolve()
        for name, content in files.items():
            target = (base / name).resolve()
            if base not in target.parents:
                raise PathOutsideSandbox(f"download_tree: {name} would land outside {dest}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    return files


class FileOpsMixin:
    """read_file / write_file / upload_tree / download_tree / wipe, written once over `exec` for every backend."""

    def _file_op(self, op: str, path: str, arg: str = "", stdin: bytes | None = None, limit: int = 1 << 20,
                 timeout: float = 60.0) -> ExecResult:
        full = check_path(path, self.config.workdir)
        res = self.exec(["bash", "-c", FILE_SCRIPT, "agentrl-file", op, full, arg], timeout=timeout, cwd="/",
                        stdin=stdin, max_output_bytes=limit)
        if res.exit_code == 3:
            raise PathOutsideSandbox(f"path {path!r} resolves outside {' and '.join(ROOTS)} (symlink?)")
        if res.exit_code == 2:
            raise FileNotFoundError(f"no such file in the sandbox: {full}")
        if res.exit_code == 7:
            raise PathOutsideSandbox(f"upload to {full}: a member would land outside {' and '.join(ROOTS)} "
                                     "through a symlink in the sandbox; nothing was written")
        if res.exit_code == 6:
            raise SandboxError(f"checking the paths of {full} failed: {res.output[-300:]}")
        if res.exit_code == 4:
            raise IsADirectoryError(f"{full} is a directory (or not a regular file)")
        return res

    def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        """The bytes of a file under /workspace or /tmp; FileTooLarge past max_bytes."""
        res = self._file_op("read", path, str(max_bytes), limit=max_bytes + 1)
        if res.exit_code == 5 or res.truncated:
            raise FileTooLarge(f"{path} is larger than max_bytes={max_bytes}")
        if res.exit_code != 0:
            raise SandboxError(f"read_file {path} failed (exit {res.exit_code}): {res.output[-300:]}")
        return res.raw

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Create or replace a file under /workspace or /tmp (parents are created), content sent through stdin."""
        payload = data.encode() if isinstance(data, str) else bytes(data)
        res = self._file_op("write", path, format(mode, "o"), stdin=payload, limit=4096)
        if res.exit_code != 0:
            raise SandboxError(f"write_file {path} failed (exit {res.exit_code}): {res.output[-300:]}")

    def upload_tree(self, src: str | os.PathLike | Mapping[str, bytes | str], dest: str = "/workspace") -> None:
        """Copy a local folder (or a {relative path: bytes} mapping) into `dest`, as a tar through exec stdin.

        PathOutsideSandbox if a member would land outside /workspace and /tmp through a symlink in the sandbox.
        """
        data = tar_tree(src)
        names = b"".join(n.encode() + b"\0" for n in tar_names(data))
        res = self._file_op("untar", dest, str(len(names)), stdin=names + data, limit=4096)
        if res.exit_code != 0:
            raise SandboxError(f"upload_tree to {dest} failed (exit {res.exit_code}): {res.output[-300:]}")

    def download_tree(self, path: str = "/workspace", dest: str | os.PathLike | None = None,
                      max_total_bytes: int = 8 << 20) -> dict[str, bytes]:
        """The regular files under `path` (.git excluded) as {relative path: bytes}; also written to `dest` if given."""
        res = self._file_op("tar", path, limit=max_total_bytes)
        if res.exit_code == 0 and not res.raw:  # a tar is never empty: the exec stream was lost, ask once more
            res = self._file_op("tar", path, limit=max_total_bytes)
        if res.truncated:
            raise FileTooLarge(f"{path} holds more than max_total_bytes={max_total_bytes} of tar")
        if res.exit_code != 0:
            raise SandboxError(f"download_tree {path} failed (exit {res.exit_code}): {res.output[-300:]}")
        return untar_tree(res.raw, dest)

    def _wipe(self) -> None:
        """Kill every agent process and empty /workspace and /tmp (warm-pool reuse)."""
        res = self.exec(["bash", "-c", WIPE_SCRIPT], timeout=30, cwd="/")
        if res.exit_code != 0 or res.output.strip():
            raise SandboxError(f"reset failed (exit {res.exit_code}): {res.output[-300:]}")


@runtime_checkable
class Sandbox(Protocol):
    """What every backend offers. See docker_backend.DockerSandbox for the full docstrings."""

    id: str
    backend: str
    config: SandboxConfig

    def exec(self, cmd: str | list[str], *, timeout: float | None = None, cwd: str | None = None,
             env: Mapping[str, str] | None = None, stdin: bytes | str | None = None,
             max_output_bytes: int | None = None) -> ExecResult:
        """Run `cmd` (a string goes to `bash -c`) as the agent uid; never raises for a failing command."""

    def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        """Bytes of a file under /workspace or /tmp."""

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Create or replace a file under /workspace or /tmp."""

    def upload_tree(self, src: str | os.PathLike | Mapping[str, bytes | str], dest: str = "/workspace") -> None:
        """Copy a local folder or mapping into the sandbox."""

    def download_tree(self, path: str = "/workspace", dest: str | os.PathLike | None = None,
                      max_total_bytes: int = 8 << 20) -> dict[str, bytes]:
        """Copy a sandbox folder out."""

    def reset(self) -> None:
        """Kill agent processes and wipe /workspace and /tmp."""

    def alive(self) -> bool:
        """True when the sandbox can still run commands."""

    def close(self) -> None:
        """Release everything; idempotent."""

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc) -> None: ...
