"""Attacks an agent command might make, run against docker and bwrap. Each must end as a clear ExecResult, leave
the host unaffected, and leave nothing behind (the autouse leftover check runs after every test)."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from agentrl.sandboxes.base import PathOutsideSandbox


def host_procs_with_cmdline(needle: bytes) -> list[int]:
    """Host pids whose argv contains `needle` (container and bwrap processes are visible from the host)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if needle in Path(f"/proc/{d}/cmdline").read_bytes().split(b"\0"):
                    pids.append(int(d))
            except OSError:
                pass
    return pids


def test_fork_bomb_is_contained(sb):
    r = sb.exec(":(){ :|:& };:; sleep 2", timeout=4)
    # the process limit makes forks fail ("fork: retry: Resource temporarily unavailable") and the bomb collapses;
    # if it is still going at the deadline, the timeout and the watchdog end it
    assert r.timed_out or "Resource temporarily unavailable" in r.output, r
    assert r.duration_s < 4 + sb.config.kill_grace_s + 5
    assert subprocess.run(["true"]).returncode == 0  # the host can still fork
    after = sb.exec("echo alive")
    assert after.exit_code == 0 and after.output == "alive\n", after


def test_memory_bomb_dies_and_sandbox_survives(sb):
    r = sb.exec("python3 -c 'b = b\"x\" * (2 * 1024**3); print(len(b))'", timeout=20)
    assert r.exit_code != 0 and not r.timed_out, r
    assert "2147483648" not in r.output
    assert sb.exec("echo alive").output == "alive\n"


def test_cpu_spin_past_timeout_is_killed(sb):
    r = sb.exec("while :; do :; done", timeout=1.5)
    assert r.timed_out and r.exit_code == 137
    assert r.duration_s < 1.5 + sb.config.kill_grace_s + 2


@pytest.mark.slow
def test_one_gigabyte_output_flood_is_cut_and_killed(sb):
    r = sb.exec("yes | head -c 1000000000", timeout=30, max_output_bytes=4096)
    assert r.truncated and r.exit_code == 137 and not r.timed_out
    assert sb.config.output_kill_bytes < r.total_bytes < 1_000_000_000
    assert len(r.raw) < 4096 + 200  # only head + marker + tail were kept on the host
    assert r.output.startswith("y\ny\n") and "command was killed" in r.output


def test_output_over_the_cap_keeps_head_and_tail(sb):
    r = sb.exec("echo FIRST; seq 1 200000; echo LAST", max_output_bytes=1000)
    assert r.exit_code == 0 and r.truncated
    assert r.output.startswith("FIRST\n") and r.output.endswith("LAST\n") and "elided" in r.output
    assert r.total_bytes == len("FIRST\n") + sum(len(f"{i}\n") for i in range(1, 200001)) + len("LAST\n")


def test_setsid_and_background_escapees_die_on_timeout(sb):
    tag = f"{300 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 1000:03d}"
    r = sb.exec(f"setsid sleep {tag} >/dev/null 2>&1 </dev/null & nohup sleep {tag} >/dev/null 2>&1 & "
                f"(setsid bash -c 'sleep {tag}' &) ; sleep 60", timeout=1)
    assert r.timed_out and r.exit_code == 137
    deadline = time.monotonic() + 3
    while host_procs_with_cmdline(tag.encode()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert host_procs_with_cmdline(tag.encode()) == []


def test_background_process_is_gone_after_reset(sb):
    tag = f"{300 + uuid.uuid4().int % 1000}.5"
    r = sb.exec(f"setsid sleep {tag} >/dev/null 2>&1 </dev/null & echo started")
    assert r.exit_code == 0 and not r.timed_out
    sb.reset()
    time.sleep(0.3)
    assert host_procs_with_cmdline(tag.encode()) == []


def test_no_network_and_host_loopback_unreachable(sb):
    """Only `lo` exists inside; a connect to a port the test opens on the host's loopback must not arrive."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    try:
        ifaces = sb.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
        assert ifaces.output.split() == ["lo"], ifaces
        r = sb.exec(f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); "
                    "print('CONNECTED')\"", timeout=10)
        assert r.exit_code != 0 and "CONNECTED" not in r.output
        assert "refused" in r.output or "unreachable" in r.output, r.output
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()


def test_writes_outside_the_workspace_fail(sb):
    name = f"agentrl-escape-{uuid.uuid4().hex[:8]}"
    r = sb.exec(f"for d in / /etc /usr /root /var; do echo x > $d/{name} && echo WROTE $d; done; "
                f"echo ok > /workspace/{name} && echo ok > /tmp/{name} && echo INSIDE-OK")
    assert "WROTE" not in r.output and "INSIDE-OK" in r.output, r.output
    assert "Read-only file system" in r.output or "Permission denied" in r.output
    for d in ("/", "/etc", "/usr", "/root", "/var"):
        assert not os.path.exists(os.path.join(d, name))
    if getattr(sb, "rootfs", None):
        assert not list(Path(sb.rootfs).glob(f"*/{name}"))


def test_host_files_are_not_visible(sb):
    secret = f"agentrl-secret-{uuid.uuid4().hex}"
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        path = Path(d) / "secret.txt"
        path.write_text(secret)
        os.chmod(d, 0o755)
        path.chmod(0o644)
        r = sb.exec(f"cat {path}; cat /work/main/pyproject.toml | head -2; cat /root/.bash_history | head -1; "
                    "grep -rs agentrl-secret /var/tmp /tmp /workspace | head -1; hostname")
    assert secret not in r.output
    assert "[build-system]" not in r.output
    assert r.output.strip().splitlines()[-1] == socket.gethostname() or r.output.strip().endswith(("sandbox",)) \
        or sb.backend == "docker"


def test_killing_pid1_does_not_take_the_sandbox_down(sb):
    r = sb.exec("kill -9 1; kill -KILL -1; echo done")
    assert not r.timed_out
    assert sb.alive()
    assert sb.exec("echo alive").output == "alive\n"


def test_binary_and_invalid_utf8_output(sb):
    r = sb.exec(r"printf 'ok\xff\xfe\x00\x80end'; head -c 65536 /dev/urandom >/dev/null")
    assert r.exit_code == 0
    assert r.raw == b"ok\xff\xfe\x00\x80end"
    assert r.output.startswith("ok") and r.output.endswith("end") and "\ufffd" in r.output
    blob = bytes(range(256)) * 64
    sb.write_file("/workspace/blob.bin", blob)
    assert sb.read_file("/workspace/blob.bin") == blob
    r = sb.exec("head -c 100000 /dev/urandom", max_output_bytes=1 << 20)
    assert r.exit_code == 0 and r.total_bytes == 100000 and len(r.raw) == 100000


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "/workspace/../etc/passwd", "/proc/self/environ",
                                  "/workspace/../../root/.bashrc"])
def test_read_write_refuse_paths_outside(sb, path):
    with pytest.raises(PathOutsideSandbox):
        sb.read_file(path)
    with pytest.raises(PathOutsideSandbox):
        sb.write_file(path, "x")


def test_symlinks_out_of_the_workspace_are_refused(sb):
    sb.exec("ln -s /etc/passwd /workspace/link && ln -s /etc /workspace/etcdir && ln -s /usr /tmp/usrlink")
    with pytest.raises(PathOutsideSandbox):
        sb.read_file("/workspace/link")
    with pytest.raises(PathOutsideSandbox):
        sb.write_file("/workspace/etcdir/agentrl-x", "x")
    with pytest.raises(PathOutsideSandbox):
        sb.upload_tree({"a.txt": "a"}, "/tmp/usrlink/x")
    with pytest.raises(PathOutsideSandbox):
        sb.download_tree("/workspace/etcdir")
    sb.exec("mkdir -p /workspace/repo && ln -s /workspace/repo /workspace/inside")
    sb.write_file("/workspace/inside/ok.txt", "fine")  # a link that stays inside is fine
    assert sb.read_file("/workspace/repo/ok.txt") == b"fine"


def test_upload_refuses_traversal_and_outside_links(sb, tmp_path):
    for bad in ({"../x": "x"}, {"/abs": "x"}, {"a/../../x": "x"}):
        with pytest.raises(PathOutsideSandbox):
            sb.upload_tree(bad, "/workspace")
    with pytest.raises(PathOutsideSandbox):
        sb.upload_tree({"a": "x"}, "/etc")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ok.py").write_text("print('ok')\n")
    (tmp_path / "src" / "leak").symlink_to("/etc/hostname")
    with pytest.raises(PathOutsideSandbox):
        sb.upload_tree(tmp_path / "src", "/workspace/repo")
    (tmp_path / "src" / "leak").unlink()
    sb.upload_tree(tmp_path / "src", "/workspace/repo")
    assert sb.exec("python3 ok.py", cwd="/workspace/repo").output == "ok\n"
    out = tmp_path / "out"
    assert sb.download_tree("/workspace/repo", dest=out) == {"ok.py": b"print('ok')\n"}
    assert (out / "ok.py").read_text() == "print('ok')\n"


def test_commands_run_unprivileged(sb):
    r = sb.exec("id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status")
    uid, cap, nnp = r.output.split("\n")[:3]
    assert uid == "1000" and cap.split()[1] == "0000000000000000" and nnp.split()[1] == "1"
