"""Per-sandbox control groups for the bwrap backend: a memory, pids and CPU limit over every process of one
sandbox, on cgroup v2 or on v1 (hybrid hosts mount memory, pids and cpu as separate v1 hierarchies and leave
the unified v2 tree without controllers).

Each sandbox gets `agentrl-<sandbox id>` (the id carries the session id) under this process's own cgroup in
each hierarchy, so the trainer's own limits still apply above it. The paths are recorded in the sandbox's
folder before they are created; `close()` and the reaper remove exactly those, never a cgroup we did not make.
v1 writes memory.limit_in_bytes (+ memory.memsw.limit_in_bytes where swap is accounted), pids.max and
cpu.cfs_quota_us/cfs_period_us; v2 writes memory.max, memory.swap.max, pids.max and cpu.max.
A process joins by writing its pid to each `cgroup.procs` before it execs bwrap (see `JOIN_SCRIPT`).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentrl.sandboxes.base import SandboxConfig, SandboxConfigError

log = logging.getLogger(__name__)
CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000
PREFIX = "agentrl-"
# Run as root before dropping to the sandbox uid: join every cgroup named before `--`, then exec the rest.
JOIN_SCRIPT = ('while [ "$1" != -- ]; do echo $$ > "$1" || { echo "agentrl-cgroup: cannot join $1" >&2; exit 125; }; '
               'shift; done; shift; exec "$@"')


class CgroupUnavailable(SandboxConfigError):
    """This host (or this user) cannot give a sandbox its own memory/pids/cpu cgroup; the message names the fix."""


def _mounts() -> list[tuple[str, str, list[str]]]:
    """(mount point, fs type, options) of every cgroup mount of this process."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
            out.append((parts[1].replace("\\040", " "), parts[2], parts[3].split(",")))
    return out


def _own_paths(pid: int | str = "self") -> dict[str, str]:
    """A process's cgroup path per v1 controller, and under key '' its v2 path (from /proc/<pid>/cgroup)."""
    paths = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        for ctrl in ctrls.split(",") if ctrls else [""]:
            paths[ctrl] = path
    return paths


def parents(pid: int | str = "self") -> tuple[str, dict[str, Path]]:
    """('v2', {ctrl: dir}) or ('v1', {ctrl: dir}): where sandbox cgroups are made (this process's own cgroup).

    v2 is used when its tree has all three controllers; else each controller's v1 hierarchy. A controller
    found in neither is missing from the dict. $AGENTRL_CGROUP_PARENT names a delegated v2 cgroup to use instead.
    """
    own = _own_paths(pid)
    mounts = _mounts()
    override = os.environ.get("AGENTRL_CGROUP_PARENT") if pid == "self" else None
    for point, fstype, _ in mounts:
        if fstype != "cgroup2":
            continue
        base = Path(override) if override else Path(point) / own.get("", "/").lstrip("/")
        try:
            have = (Path(point) / "cgroup.controllers").read_text().split()
        except OSError:
            continue
        if all(c in have for c in CONTROLLERS):
            return "v2", {c: base for c in CONTROLLERS}
    dirs = {}
    for ctrl in CONTROLLERS:
        for point, fstype, opts in mounts:
            if fstype == "cgroup" and ctrl in opts:
                dirs[ctrl] = Path(point) / own.get(ctrl, "/").lstrip("/")
                break
    return "v1", dirs


def _write(path: Path, value: str) -> None:
    path.write_text(value)


@dataclass
class Cgroup:
    """One sandbox's cgroup: a directory per hierarchy (v1) or one directory for all controllers (v2)."""

    version: str
    dirs: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def create(cls, name: str, config: SandboxConfig, record: Path | None = None) -> Cgroup:
        """Make `name` under this process's cgroup with config's memory, pids and CPU limits.

        `record` (a JSON file) gets the paths before anything is created, so the reaper can remove them after a
        crash. Raises CgroupUnavailable (naming the fix) when a controller is missing or we may not write.
        """
        version, base = parents()
        missing = [c for c in CONTROLLERS if c not in base]
        if missing:
            raise CgroupUnavailable(f"the bwrap backend needs the {', '.join(missing)} cgroup controller(s) for its "
                                    "per-sandbox limits, and this host mounts none: enable them (cgroup v2 with "
                                    "memory, pids and cpu delegated, or their v1 hierarchies) or use backend='docker'")
        cg = cls(version, {c: base[c] / (PREFIX + name) for c in CONTROLLERS})
        if record is not None:
            record.write_text(json.dumps(cg.to_json()))
        try:
            cg._make(config)
        except OSError as e:
            cg.remove()
            hint = ("set AGENTRL_CGROUP_PARENT to a delegated cgroup v2 directory (e.g. one made by "
                    "'systemd-run --user --scope -p Delegate=yes') " if version == "v2" else "run as root ")
            raise CgroupUnavailable(f"cannot create the sandbox cgroup {e.filename or ''} ({e.strerror}): {hint}"
                                    "or use backend='docker'") from e
        return cg

    def _make(self, c: SandboxConfig) -> None:
        mem = str(c.memory_mb << 20)
        quota = max(1000, int(c.cpus * CPU_PERIOD_US))
        if self.version == "v2":
            d = self.dirs["memory"]
            parent = d.parent
            enabled = (parent / "cgroup.subtree_control").read_text().split()
            todo = " ".join(f"+{x}" for x in CONTROLLERS if x not in enabled)
            if todo:
                _write(parent / "cgroup.subtree_control", todo)
            d.mkdir(exist_ok=True)
            _write(d / "memory.max", mem)
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
            _write(d / "pids.max", str(c.pids))
            _write(d / "cpu.max", f"{quota} {CPU_PERIOD_US}")
            return
        for d in self.unique_dirs():
            d.mkdir(exist_ok=True)
        m = self.dirs["memory"]
        _write(m / "memory.limit_in_bytes", mem)
        if (m / "memory.memsw.limit_in_bytes").exists():
            _write(m / "memory.memsw.limit_in_bytes", mem)
        _write(self.dirs["pids"] / "pids.max", str(c.pids))
        _write(self.dirs["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
        _write(self.dirs["cpu"] / "cpu.cfs_quota_us", str(quota))

    def unique_dirs(self) -> list[Path]:
        """Each directory once (v2 has one; v1 one per hierarchy, cpu and cpuacct may share one)."""
        return list(dict.fromkeys(self.dirs.values()))

    def procs_files(self) -> list[str]:
        """The cgroup.procs files a process writes its pid to, to join this cgroup in every hierarchy."""
        return [str(d / "cgroup.procs") for d in self.unique_dirs()]

    def limits(self) -> dict[str, int]:
        """The limits the kernel holds: memory bytes, max pids, CPU quota and period in microseconds."""
        if self.version == "v2":
            d = self.dirs["memory"]
            quota, period = (d / "cpu.max").read_text().split()
            return {"memory_bytes": int((d / "memory.max").read_text()), "pids": int((d / "pids.max").read_text()),
                    "cpu_quota_us": int(quota), "cpu_period_us": int(period)}
        return {"memory_bytes": int((self.dirs["memory"] / "memory.limit_in_bytes").read_text()),
                "pids": int((self.dirs["pids"] / "pids.max").read_text()),
                "cpu_quota_us": int((self.dirs["cpu"] / "cpu.cfs_quota_us").read_text()),
                "cpu_period_us": int((self.dirs["cpu"] / "cpu.cfs_period_us").read_text())}

    def cpu_throttled(self) -> int:
        """How many CPU periods this cgroup was throttled in (nr_throttled of cpu.stat)."""
        for line in (self.dirs["cpu"] / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "nr_throttled":
                return int(value)
        return 0

    def oom_kills(self) -> int:
        """Processes the kernel killed for this cgroup's memory limit (v2 memory.events; v1 memory.oom_control)."""
        f = "memory.events" if self.version == "v2" else "memory.oom_control"
        for line in (self.dirs["memory"] / f).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def pids_now(self) -> list[int]:
        """Pids currently in the cgroup (any hierarchy)."""
        pids: set[int] = set()
        for f in self.procs_files():
            try:
                pids.update(int(p) for p in Path(f).read_text().split())
            except OSError:
                pass
        return sorted(pids)

    def remove(self, wait_s: float = 5.0) -> None:
        """Kill what is left inside (it is all ours) and remove the directories; idempotent."""
        deadline = time.monotonic() + wait_s
        for d in self.unique_dirs():
            if not d.name.startswith(PREFIX):  # never remove anything we did not name
                continue
            while d.is_dir():
                try:
                    d.rmdir()
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    for pid in self.pids_now():
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    time.sleep(0.02)

    def to_json(self) -> dict:
        """What `from_json` reads back (the record the reaper uses)."""
        return {"version": self.version, "dirs": {k: str(v) for k, v in self.dirs.items()}}

    @classmethod
    def from_json(cls, data: dict) -> Cgroup:
        """Rebuild from `to_json`."""
        return cls(data["version"], {k: Path(v) for k, v in data["dirs"].items()})


def cgroup_of_pid(pid: int) -> Cgroup:
    """The cgroup `pid` is in (e.g. a container's init), for reading its limits; never remove it."""
    version, dirs = parents(pid)
    return Cgroup(version, dirs)


def remove_recorded(record: Path) -> None:
    """Remove the cgroups listed in a sandbox's record file (reaper and close); nothing if there is none."""
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return
    try:
        Cgroup.from_json(data).remove()
    except OSError as e:
        log.warning("could not remove sandbox cgroup %s: %s", e.filename, e.strerror)
