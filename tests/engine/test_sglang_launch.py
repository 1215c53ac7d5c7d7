"""The SGLang launch command `agentrl serve --backend sglang --print-only` prints is parsed by SGLang 0.5.23's own
server-argument parser (scripts/sglang_parser.py: the real sglang.srt.server_args from its wheel, on this CPU
machine), so a flag SGLang renamed or dropped fails here instead of on a GPU machine. The wheel is fetched once
(scripts/setup.sh does it; offline afterwards); the tests skip, saying so, only if it cannot be obtained."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sglang_parser.py"


@pytest.fixture(scope="module")
def sglang():
    """The fetched wheels (fetching them now if setup did not)."""
    r = subprocess.run([sys.executable, str(SCRIPT), "fetch"], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        pytest.skip(f"SGLang 0.5.23's wheel could not be obtained (pip download failed: {r.stderr.strip()[-300:]})")
    return Path(r.stdout.strip())


def _check(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "check", *argv], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def launch_argv(tmp_path_factory):
    """What `agentrl serve --backend sglang --print-only` prints with every option that adds a flag, after
    `python -m sglang.launch_server`."""
    model = tmp_path_factory.mktemp("model")
    (model / "config.json").write_text("{}")
    r = subprocess.run([sys.executable, "-m", "agentrl", "serve", "--backend", "sglang", "--print-only",
                        "--model", str(model), "--host", "0.0.0.0", "--port", "31001", "--tp-size", "2",
                        "--mem-fraction-static", "0.55", "--deterministic", "--api-key", "k1", "--admin-api-key", "k2",
                        "--sglang-args=--disable-radix-cache"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    argv = shlex.split(r.stdout.strip())
    assert argv[1:3] == ["-m", "sglang.launch_server"], argv
    return str(model), argv[3:]


@pytest.mark.slow
def test_our_launch_flags_are_sglang_0_5_23_flags_with_the_values_we_meant(sglang, launch_argv):
    model, argv = launch_argv
    r = _check(argv)
    assert r.returncode == 0, r.stderr[-2000:]
    ns = json.loads(r.stdout)
    assert (ns["model_path"], ns["host"], ns["port"], ns["tp_size"]) == (model, "0.0.0.0", 31001, 2)
    assert ns["weight_version"] == "0" and ns["mem_fraction_static"] == 0.55
    assert ns["enable_deterministic_inference"] is True and ns["disable_radix_cache"] is True
    assert (ns["api_key"], ns["admin_api_key"]) == ("k1", "k2")


@pytest.mark.slow
@pytest.mark.parametrize(("ours", "renamed"), [("--weight-version", "--weight-version-id"),
                                                ("--tp-size", "--tensor-parallel")])
def test_a_flag_sglang_does_not_have_fails(sglang, launch_argv, ours, renamed):
    """What the check catches: had agentrl printed a flag SGLang 0.5.23 does not define (exactly: argparse alone
    would accept a unique prefix such as --tensor-parallel for --tensor-parallel-size), the parser refuses it."""
    _, argv = launch_argv
    r = _check([renamed if a == ours else a for a in argv])
    assert r.returncode == 2 and renamed in r.stderr, r.stderr[-2000:]
