"""`agentrl gateway`: the command's mistakes are one line and exit 2, never a traceback."""

from __future__ import annotations

import socket

from agentrl.cli import main


def test_a_port_in_use_is_one_line_and_exit_2(capsys, tmp_path):
    """Guards the user-mistake path: the gateway cannot bind (another server holds the port) → one error line
    naming the address with serve's hint, exit 2, said before any model loads (the model here does not exist:
    a gateway that loaded first reported the model instead; issue 55 item 10)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["gateway", "--model", str(tmp_path / "no-model"), "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"agentrl gateway: error: cannot listen on 127.0.0.1:{port}: address already in use; pick another "
                   "--port (0 = any free port)"], err


def test_a_bad_token_budget_is_refused_before_loading_anything(capsys):
    assert main(["gateway", "--model", "tiny", "--max-new-tokens", "0"]) == 2
    assert "--max-new-tokens must be at least 1" in capsys.readouterr().err
