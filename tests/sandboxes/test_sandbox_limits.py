"""Whole-sandbox limits (memory, pids, CPU, tmpfs and /dev/shm sizes, namespaces, upload paths), on docker and
bwrap alike. Each test asserts the mechanism (the limit value the kernel holds, the errno, the kill count), not
just that nothing crashed."""

from __future__ import annotations

import re

import pytest
from agentrl.sandboxes import reaper
from agentrl.sandboxes.base import PathOutsideSandbox
from sandbox_helpers import host_cgroup, sandbox_of

MiB = 1 << 20


def test_nested_user_namespaces_are_refused(sb):
    """`unshare -r` is where kernel privilege escalations start: bwrap disables it, Docker's seccomp blocks it."""
    r = sb.exec("unshare -r id; echo rc=$?; python3 -c \"import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
                "print('unshare', libc.unshare(0x10000000), os.strerror(ctypes.get_errno()))\"")
    assert "uid=0" not in r.output and "rc=1" in r.output, r.output
    line = re.search(r"unshare (-?\d+) (.+)", r.output)
    assert line and line.group(1) == "-1", r.output
    assert line.group(2) in ("Operation not permitted", "No space left on device"), r.output  # EPERM / ENOSPC


def test_dev_is_read_only_and_dev_shm_is_capped(backend):
    with sandbox_of(backend, shm_mb=16) as sb:
        r = sb.exec("echo x > /dev/agentrl-x; echo rc=$?; df -B1 --output=size /dev/shm | tail -1; "
                    "head -c 24M /dev/zero > /dev/shm/fill; echo shm_rc=$?; du -B1 -s /dev/shm | cut -f1")
        out = r.output
        assert "rc=1" in out and ("Read-only file system" in out or "Permission denied" in out), out
        size, used = (int(x) for x in re.findall(r"^\s*(\d+)\s*$", out, re.M))
        assert size == 16 * MiB, out
        assert "shm_rc=1" in out and "No space left on device" in out and used <= 16 * MiB, out


def test_workspace_and_tmp_have_separate_caps(backend):
    with sandbox_of(backend, workspace_mb=64, tmp_mb=32) as sb:
        r = sb.exec("df -B1 --output=size /workspace /tmp | tail -2; head -c 40M /dev/zero > /workspace/a && "
                    "head -c 40M /dev/zero > /workspace/b; echo ws_rc=$?; head -c 16M /dev/zero > /tmp/after; echo tmp_rc=$?")
        sizes = [int(x) for x in re.findall(r"^\s*(\d+)\s*$", r.output, re.M)]
        assert sizes == [64 * MiB, 32 * MiB], r.output
        # two files (one would meet the file-size rlimit first): the workspace stops at its own cap, not at the sum
        # of both, and filling it leaves /tmp's room intact
        assert "ws_rc=1" in r.output and "No space left on device" in r.output, r.output
        assert "tmp_rc=0" in r.output, r.output


def test_memory_limit_covers_the_whole_sandbox(backend):
    """4 processes × 200 MiB against memory_mb=512: per-process rlimits let all live; the sandbox limit may not."""
    with sandbox_of(backend, memory_mb=512) as sb:
        r = sb.exec("for i in 1 2 3 4; do (python3 -c \"import time; b = b'x' * (200 << 20); time.sleep(3); "
                    "print('held')\"; echo rc=$?) & done; wait", timeout=60)
        lines = r.output.splitlines()
        held, killed = lines.count("held"), lines.count("rc=137")
        assert held <= 2 and killed >= 2 and held + killed == 4, r.output
        cg = host_cgroup(sb)
        assert cg.limits()["memory_bytes"] == 512 * MiB and cg.oom_kills() >= 2
        assert sb.exec("echo alive").output == "alive\n"


def test_pids_limit_covers_the_whole_sandbox(backend):
    with sandbox_of(backend, pids=64) as sb:
        assert host_cgroup(sb).limits()["pids"] == 64
        r = sb.exec("python3 -c \"import os, time\nn = 0\ntry:\n    while n < 500:\n        if os.fork() == 0:\n"
                    "            time.sleep(30)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n"
                    "    print('forked', n, 'errno', e.errno)\"", timeout=20)
        m = re.search(r"forked (\d+) errno (\d+)", r.output)
        assert m and int(m.group(2)) == 11, r.output  # EAGAIN
        assert 64 - 12 <= int(m.group(1)) < 64, r.output  # the shell, python and the runtime's helpers count too


def test_cpu_quota_is_applied_and_throttles(backend):
    # 5 % of a core: even on a loaded shared machine a spinning process gets more than 5 ms of a 100 ms period
    with sandbox_of(backend, cpus=0.05) as sb:
        cg = host_cgroup(sb)
        lim = cg.limits()
        assert (lim["cpu_quota_us"], lim["cpu_period_us"]) == (5_000, 100_000)
        before = cg.cpu_throttled()
        r = sb.exec("timeout 2 sh -c 'while :; do :; done'; echo rc=$?", timeout=10)
        assert "rc=124" in r.output, r.output
        assert cg.cpu_throttled() > before


def test_pid1_cmdline_shows_no_host_path(sb):
    r = sb.exec("tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/self/cgroup")
    for leak in (str(reaper.BWRAP_DIR), reaper.SESSION_ID, "/var/cache/agentrl", "/sys/fs/cgroup", "/process_api"):
        assert leak not in r.output, r.output


def test_upload_never_writes_through_a_planted_symlink(sb):
    sb.exec("mkdir -p /workspace/repo /workspace/inner && ln -s /dev/shm /workspace/repo/sub && "
            "ln -s /workspace/hop /workspace/repo/chain && ln -s /etc /workspace/hop && "
            "ln -s /dev/shm/owned /workspace/repo/file.txt && ln -s /workspace/inner /workspace/repo/ok")
    for member in ("sub/x.txt", "chain/agentrl-x", "file.txt", "sub/deep/er/y"):
        with pytest.raises(PathOutsideSandbox, match="through a symlink"):
            sb.upload_tree({"a.txt": "first", member: "escaped"}, "/workspace/repo")
    r = sb.exec("ls -A /dev/shm; ls -A /workspace/repo; test -e /etc/agentrl-x && echo ETC")
    assert r.output.split() == ["chain", "file.txt", "ok", "sub"], r.output  # nothing at all was extracted
    sb.upload_tree({"ok/in.txt": "fine", "new/dir/b.txt": "b"}, "/workspace/repo")  # links inside the roots are fine
    assert sb.read_file("/workspace/inner/in.txt") == b"fine" and sb.read_file("/workspace/repo/new/dir/b.txt") == b"b"
