"""agentrl/subreaper.py as a command runs it: real processes, the exit status passed through, and nothing the
command started left running, whether it stayed in the group, left its session or was double-forked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentrl import subreaper

WRAP = [sys.executable, "-I", subreaper.__file__, "--"]

# Starts three sleepers: a plain child, one in a new session, and a double-forked daemon (its parent exits, so
# it is an orphan in its own session); writes their pids, then does what argv[2] says.
SPAWNS = r'''
import os, subprocess, sys, time
sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
pids = [subprocess.Popen(sleep, **quiet).pid, subprocess.Popen(sleep, start_new_session=True, **quiet).pid]
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    pid = subprocess.Popen(sleep, **quiet).pid
    os.write(w, str(pid).encode())
    os._exit(0)
pids.append(int(os.read(r, 32)))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(" ".join(map(str, pids)))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
if sys.argv[2] == "hang":
    time.sleep(120)
sys.exit(3)
'''


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.fixture
def spawns(tmp_path):
    """(script path, pid file); kills any sleeper a failed test left (they are this test's own processes)."""
    script, pids = tmp_path / "spawns.py", tmp_path / "pids"
    script.write_text(SPAWNS)
    yield script, pids
    if pids.exists():
        for pid in map(int, pids.read_text().split()):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
def test_the_command_exiting_takes_every_process_it_started_with_it(spawns):
    script, pids = spawns
    done = subprocess.run([*WRAP, sys.executable, str(script), str(pids), "exit"], timeout=60)
    assert done.returncode == 3  # the command's own exit code
    started = list(map(int, pids.read_text().split()))
    assert len(started) == 3 and not [pid for pid in started if alive(pid)]  # gone before the wrapper ended


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_kills_the_command_and_everything_below_it(spawns, sig):
    script, pids = spawns
    proc = subprocess.Popen([*WRAP, sys.executable, str(script), str(pids), "hang"])
    deadline = time.monotonic() + 60
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    started = list(map(int, pids.read_text().split()))
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == -sig  # ends the way it was told to
    assert not [pid for pid in started if alive(pid)]


@pytest.mark.parametrize("argv, code, err", [
    (["sh", "-c", "exit 7"], 7, ""),
    (["sh", "-c", "kill -TERM $$"], -signal.SIGTERM, ""),
    (["/nonexistent/agent"], 127, "cannot run '/nonexistent/agent'"),
])
def test_the_commands_ending_is_passed_through(argv, code, err):
    done = subprocess.run([*WRAP, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == code and err in done.stderr


def test_no_command_is_a_usage_line():
    done = subprocess.run(WRAP[:-1], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("usage:")


def test_stdin_and_stdout_reach_the_command():
    done = subprocess.run([*WRAP, sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"],
                          input="task", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "TASK\n"
