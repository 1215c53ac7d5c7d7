"""The `agentrl` command: help on every subcommand, one-line errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentrl.cli import COMMANDS, main


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentrl", *args], capture_output=True, text=True, timeout=120)


def test_top_level_help_lists_every_subcommand():
    r = _run("--help")
    assert r.returncode == 0
    for name in COMMANDS:
        assert name in r.stdout


@pytest.mark.parametrize("name", list(COMMANDS), ids=str)
def test_every_subcommand_has_help(name, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    assert "usage: agentrl " + name in capsys.readouterr().out


def test_unknown_subcommand_is_one_line_and_exit_2():
    r = _run("trian")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "invalid choice: 'trian'" in lines[0], r.stderr


def test_unknown_option_is_one_line_and_exit_2():
    r = _run("envs", "--bogus")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--bogus" in lines[0], r.stderr


def test_no_subcommand_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out
