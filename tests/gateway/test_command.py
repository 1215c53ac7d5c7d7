"""`agentrl gateway`: the command's mistakes are one line and exit 2, never a traceback."""

from __future__ import annotations

import socket

from agentrl.cli import main


def test_a_port_in_use_is_one_line_and_exit_2(capsys):
    """Guards the user-mistake path: the gateway cannot bind (another server holds the port) → one error line
    naming the address, exit 2, and the engine it started is closed."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["gateway", "--model", "tiny", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"agentrl gateway: error: cannot listen on 127.0.0.1:{port}")


def test_a_bad_token_budget_is_refused_before_loading_anything(capsys):
    assert main(["gateway", "--model", "tiny", "--max-new-tokens", "0"]) == 2
    assert "--max-new-tokens must be at least 1" in capsys.readouterr().err
