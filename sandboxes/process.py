"""Run one host subprocess as a sandboxed command (bwrap and local backends): own process group, rlimits via
`prlimit`, host-side deadline with a SIGKILL to the whole group, merged output with a head+tail cap."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time

from agentrl.sandboxes.base import ExecResult, OutputCap, SandboxConfig, make_result
from agentrl.sandboxes.dialogue import Dialogue


def prlimit_argv(config: SandboxConfig, timeout: float, nproc: bool) -> list[str]:
    """`prlimit` options for one command: address space, CPU seconds, file size, open files (and processes)."""
    c = config
    argv = ["prlimit", f"--as={c.memory_mb << 20}", f"--cpu={math.ceil(timeout + c.kill_grace_s)}",
            f"--fsize={c.workspace_mb << 20}", f"--nofile={c.nofile}"]
    if nproc:
        argv.append(f"--nproc={c.pids}")
    return [*argv, "--"]


def run_process(argv: list[str], *, config: SandboxConfig, timeout: float, stdin: bytes | Dialogue | None,
                max_output_bytes: int, **popen_kwargs) -> ExecResult:
    """Start `argv` in a new session, feed stdin, stream merged output into a cap, and SIGKILL the process group
    at the deadline or when the output passes config.output_kill_bytes. A Dialogue as stdin keeps it open
    (dialogue.py); its `abort` kills the group like the deadline does."""
    dialogue = stdin if isinstance(stdin, Dialogue) else None
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            close_fds=True, **popen_kwargs)
    cap = OutputCap(max_output_bytes)
    done, flooded = threading.Event(), threading.Event()

    def read() -> None:
        try:
            while chunk := os.read(proc.stdout.fileno(), 1 << 16):
                if dialogue is not None:
                    dialogue.feed(chunk)
                if not flooded.is_set():
                    cap.feed(chunk)
                    if cap.total > config.output_kill_bytes:
                        flooded.set()
        finally:
            if dialogue is not None:
                dialogue.finish()
            done.set()

    def write() -> None:
        if dialogue is not None:
            def send(data: bytes) -> None:
                proc.stdin.write(data)
                proc.stdin.flush()

            return dialogue.pump(send, proc.stdin.close)
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except OSError:
            pass

    threading.Thread(target=read, daemon=True).start()
    if stdin is not None:
        threading.Thread(target=write, daemon=True).start()
    deadline = t0 + timeout
    timed_out = False
    while not done.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
        aborted = dialogue is not None and dialogue.aborted.is_set()
        if flooded.is_set() or aborted or time.monotonic() >= deadline:
            timed_out = not flooded.is_set() and not aborted
            kill_group(proc)
            done.wait(10.0)
            break
    if flooded.is_set():
        kill_group(proc)
    try:
        code = proc.wait(timeout=10.0)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        code = proc.wait()
    proc.stdout.close()
    exit_code = 128 - code if code < 0 else code
    return make_result(cap, exit_code, timed_out, time.monotonic() - t0, flooded.is_set())


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group the command leads (start_new_session made its pgid equal its pid)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
