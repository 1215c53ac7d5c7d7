"""Backend-independent pieces: the output cap, path checks, config validation, backend choice, image recipe,
the unsafe local backend, and the `agentrl sandbox` command (driven through a parser built here)."""

from __future__ import annotations

import argparse
import json
import re

import pytest
from agentrl.sandboxes import SandboxConfigError, open_sandbox, select_backend
from agentrl.sandboxes.base import OutputCap, PathOutsideSandbox, SandboxConfig, check_member, check_path
from agentrl.sandboxes.image import image_tag, load_recipe, recipe_dir, recipe_hash

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
    with pytest.raises(SandboxConfigError, match="keepalive_uid"):
        SandboxConfig(keepalive_uid=1000)


def test_unknown_backend_names_the_choices():
    with pytest.raises(SandboxConfigError, match="choose one of auto, docker, bwrap, local"):
        select_backend("dokcer")


def test_auto_never_picks_local():
    assert select_backend("auto") in ("docker", "bwrap")


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
