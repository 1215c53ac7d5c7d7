"""Backend-independent pieces: the output cap, path checks, config validation, backend choice, image recipe,
the unsafe local backend, and the `agentrl sandbox` command (driven through a parser built here)."""

from __future__ import annotations

import argparse
import ast
import json
import re
import socket
from pathlib import Path

import agentrl.sandboxes as sandboxes_pkg
import pytest
from agentrl.sandboxes import NoSandboxBackend, SandboxConfigError, open_sandbox, select_backend
from agentrl.sandboxes.base import OutputCap, PathOutsideSandbox, SandboxConfig, check_member, check_path
from agentrl.sandboxes.image import image_tag, load_recipe, recipe_dir, recipe_hash
from sandbox_helpers import BWRAP_SKIP

from agentrl.errors import AgentRLError


def test_output_cap_keeps_head_and_tail_and_counts_everything():
    cap = OutputCap(10)
    for i in range(100):
        cap.feed(f"{i:03d}".encode())
    raw, truncated = cap.result()
    assert truncated and cap.total == 300
    assert raw.startswith(b"00000") and raw.endswith(b"98099") and b"290 bytes of output elided" in raw
    small = OutputCap(100)
    small.feed(b"abc")
    assert small.result() == (b"abc", False)


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "/workspace/../etc", "/tmpfoo/x", "", "/work\0space"])
def test_check_path_refuses_escapes(path):
    with pytest.raises(PathOutsideSandbox):
        check_path(path)


def test_check_path_normalises_inside():
    assert check_path("repo/a.py") == "/workspace/repo/a.py"
    assert check_path("/tmp/./x/../y") == "/tmp/y"
    assert check_member("a/./b") == "a/b"
    for bad in ("../a", "/a", "a/../../b", "."):
        with pytest.raises(PathOutsideSandbox):
            check_member(bad)


def test_config_refuses_tmpfs_larger_than_memory():
    with pytest.raises(SandboxConfigError, match=re.escape("must stay below memory_mb=256")):
        SandboxConfig(memory_mb=256, workspace_mb=200, tmp_mb=100)
    with pytest.raises(SandboxConfigError, match=re.escape("workspace_mb + tmp_mb + shm_mb = 256")):
        SandboxConfig(memory_mb=256, workspace_mb=128, tmp_mb=64, shm_mb=64)
    with pytest.raises(SandboxConfigError, match="keepalive_uid"):
        SandboxConfig(keepalive_uid=1000)


def test_unknown_backend_names_the_choices():
    with pytest.raises(SandboxConfigError, match="choose one of auto, docker, bwrap, local"):
        select_backend("dokcer")


@pytest.fixture
def dead_docker_host(monkeypatch):
    """DOCKER_HOST pointing at a loopback port this test holds bound but never listens on (connection refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    host = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setenv("DOCKER_HOST", host)
    yield host
    sock.close()


def test_auto_on_a_machine_without_docker_or_bwrap_refuses_and_names_local(dead_docker_host, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no bwrap on PATH
    with pytest.raises(NoSandboxBackend) as e:
        select_backend("auto")
    msg = str(e.value)
    assert f"no Docker engine answers at {dead_docker_host}" in msg and "bwrap is not installed" in msg, msg
    assert "backend='local'" in msg  # named as the way out, never picked


@pytest.mark.skipif(BWRAP_SKIP is not None, reason=f"no bwrap: {BWRAP_SKIP}")
def test_auto_without_docker_falls_back_to_bwrap(dead_docker_host):
    assert select_backend("auto") == "bwrap"


def _sandbox_import_graph() -> dict[str, set[str]]:
    """module -> agentrl.sandboxes modules it imports anywhere in its body (lazy imports included)."""
    pkg = Path(sandboxes_pkg.__file__).parent
    modules = {f"agentrl.sandboxes.{p.stem}" if p.stem != "__init__" else "agentrl.sandboxes": p
               for p in pkg.glob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            graph[mod] |= {t for t in targets if t in modules and t != mod}
    return graph


def test_no_import_cycles_inside_sandboxes():
    graph = _sandbox_import_graph()
    assert len(graph) >= 10 and "agentrl.sandboxes.pool" in graph["agentrl.sandboxes"]
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            assert state.get(n) != 1, f"import cycle: {' -> '.join(path + [m, n])}"
            if n not in state:
                visit(n, path + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_recipe_and_dockerfile_install_the_same_packages():
    recipe = load_recipe("python")
    dockerfile = (recipe_dir("python") / "Dockerfile").read_text()
    for pkg in recipe["packages"]:
        assert re.search(rf"\b{re.escape(pkg)}\b", dockerfile), pkg
    assert image_tag() == f"agentrl/python:{recipe_hash()}" and len(recipe_hash()) == 12
    assert json.loads((recipe_dir() / "recipe.json").read_text())["agent_uid"] != 0


def test_unknown_recipe_is_a_clear_error():
    with pytest.raises(AgentRLError, match="known recipes are"):
        recipe_dir("rust")


def test_local_backend_is_loud_and_works():
    with pytest.warns(UserWarning, match="NO ISOLATION"):
        sb = open_sandbox("local", timeout_s=5)
    with sb:
        sb.write_file("/workspace/repo/a.txt", "hi")
        assert sb.read_file("repo/a.txt") == b"hi"
        assert sb.exec("cat a.txt", cwd="/workspace/repo").output == "hi"
        assert sb.exec("sleep 5", timeout=0.5).timed_out
        with pytest.raises(PathOutsideSandbox):
            sb.read_file("/etc/passwd")
        sb.reset()
        with pytest.raises(FileNotFoundError):
            sb.read_file("repo/a.txt")


def _cli(argv: list[str]) -> int:
    from agentrl.commands import sandbox as cmd

    parser = argparse.ArgumentParser(prog="agentrl sandbox")
    cmd.add_arguments(parser)
    return cmd.run(parser.parse_args(argv))


def test_cli_exec_prints_output_and_returns_the_exit_code(capfd):
    assert _cli(["exec", "--timeout", "5", "--", "echo hello from the sandbox; exit 3"]) == 3
    assert "hello from the sandbox" in capfd.readouterr().out


def test_cli_exec_timeout_is_137(capfd):
    assert _cli(["exec", "--timeout", "1", "--", "sleep", "10"]) == 137
    assert "timed out" in capfd.readouterr().err


def test_cli_build_is_idempotent_and_fast(capfd):
    from agentrl.sandboxes.image import image_exists

    if not image_exists(image_tag()):
        pytest.skip("image not built")
    assert _cli(["build"]) == 0
    assert "up to date" in capfd.readouterr().out


def test_cli_bad_backend_is_a_user_error():
    with pytest.raises(AgentRLError, match="unknown sandbox backend"):
        _cli(["exec", "--backend", "vm", "--", "true"])


def test_cgroup_v2_files_carry_the_config(tmp_path):
    """This host has cgroup v1 only, so the v2 branch is checked at the file level: a v2 parent's
    subtree_control gets the controllers, and the child's memory.max, memory.swap.max, pids.max and cpu.max
    carry the SandboxConfig (what the kernel would then enforce)."""
    from agentrl.sandboxes.cgroups import Cgroup

    (tmp_path / "cgroup.subtree_control").write_text("cpu\n")
    child = tmp_path / "agentrl-test"
    child.mkdir()
    (child / "memory.swap.max").write_text("max\n")
    cg = Cgroup("v2", {c: child for c in ("memory", "pids", "cpu")})
    cg._make(SandboxConfig(memory_mb=512, workspace_mb=64, tmp_mb=32, pids=77, cpus=1.5))
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert cg.limits() == {"memory_bytes": 512 << 20, "pids": 77, "cpu_quota_us": 150_000, "cpu_period_us": 100_000}
    assert (child / "memory.swap.max").read_text() == "0" and cg.procs_files() == [str(child / "cgroup.procs")]
