"""exec with a Dialogue as stdin (sandboxes/dialogue.py): a live conversation with a command on each backend,
line by line; EOF when the caller closes; abort kills the command like its deadline; output caps still hold."""

from __future__ import annotations

import time

import pytest
from agentrl.sandboxes.dialogue import Dialogue

ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(str(int(line) * 2) + '\\n')\n    sys.stdout.flush()\n"


def start(sb, script: str, timeout: float = 60) -> Dialogue:
    d = Dialogue()
    d.start(lambda dialogue: sb.exec(["python3", "-c", script], timeout=timeout, stdin=dialogue))
    return d


def test_a_conversation_answers_line_by_line_and_ends_at_eof(sb):
    d = start(sb, ECHO)
    for n in range(20):  # each answer depends on a request sent after the previous answer arrived
        d.send(f"{n}\n".encode())
        assert d.read_line(time.monotonic() + 30, 100) == str(2 * n).encode()
    d.close()
    result = d.wait(30)
    assert result is not None and result.exit_code == 0 and not result.timed_out, result
    assert d.read_line(time.monotonic() + 5, 100) is None


def test_abort_kills_a_command_that_does_not_answer(sb):
    d = start(sb, "import time\ntime.sleep(600)\n")
    d.send(b"1\n")
    with pytest.raises(TimeoutError):
        d.read_line(time.monotonic() + 1, 100)
    t0 = time.monotonic()
    d.abort()
    result = d.wait(30)
    assert result is not None and time.monotonic() - t0 < 30 and result.exit_code != 0, result


def test_the_deadline_still_holds(sb):
    d = start(sb, "import time\ntime.sleep(600)\n", timeout=2)
    result = d.wait(60)
    assert result is not None and result.timed_out, result
    assert d.read_line(time.monotonic() + 5, 100) is None


def test_a_line_past_the_cap_is_an_error_not_a_hang(sb):
    d = start(sb, "import sys\nsys.stdout.write('x' * 5000)\nsys.stdout.flush()\nimport time\ntime.sleep(600)\n")
    with pytest.raises(ValueError):
        d.read_line(time.monotonic() + 30, 1000)
    d.abort()
    assert d.wait(30) is not None
