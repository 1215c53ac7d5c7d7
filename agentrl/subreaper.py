"""Run a command so that nothing it starts outlives it, even processes that leave its session.

    python agentrl/subreaper.py -- COMMAND [ARGS...]

A process group kill misses a child that calls setsid() or setpgid() (a daemonizing helper, a server an agent
script starts in the background). This wrapper marks itself a child subreaper (Linux prctl
PR_SET_CHILD_SUBREAPER), so every orphan below it is re-parented to it instead of to init, and it can find the
whole tree in /proc. When the command exits, or the wrapper gets SIGTERM, SIGINT or SIGHUP, it SIGKILLs every
process below it, reaps them, and ends the way the command ended (its exit code, or the same signal).

Standard library only, and run by path (not `-m agentrl...`), so it starts in milliseconds. Where prctl is
unavailable (not Linux), it execs the command directly: the caller's process group kill still applies.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
WAITED = STOP_SIGNALS | {signal.SIGCHLD}
MAX_SWEEPS = 1000  # a process that forks as fast as we kill still ends: each sweep kills all it finds


def set_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where the kernel does not offer it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every process in /proc."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended while we looked
        out[int(name)] = (int(fields[1]), fields[0].decode())
    return out


def descendants(root: int) -> list[int]:
    """The running (not zombie) processes below `root`, parents before children."""
    procs = _parents()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            todo.append(pid)
            if procs[pid][1] != "Z":
                found.append(pid)
    return found


def _kill(pid: int, root: int) -> None:
    """SIGKILL `pid` if it is still below `root` (a pidfd pins the process, so a reused pid is never hit)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    try:
        if fd is not None and pid not in descendants(root):
            return  # it ended and the pid was reused before we opened it
        if fd is not None:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        if fd is not None:
            os.close(fd)


def _reap() -> dict[int, int]:
    """Collect every exited child (zombies re-parented to us included) without blocking: {pid: wait status}."""
    reaped = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped[pid] = status


def kill_tree(root: int) -> None:
    """SIGKILL every process below `root` until none is left, reaping them."""
    for _ in range(MAX_SWEEPS):
        pids = descendants(root)
        if not pids:
            break
        for pid in pids:
            _kill(pid, root)
        _reap()
    _reap()


def _start(argv: list[str]) -> int:
    """Fork and exec `argv` with an empty signal mask; its pid."""
    pid = os.fork()
    if pid:
        return pid
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
    finally:  # the child never returns into the wrapper's code
        _exec(argv)


def _exec(argv: list[str]) -> None:
    """Replace this process with `argv` (default SIGPIPE/SIGXFSZ, which Python ignores); exit 127 with one line
    on stderr when it cannot start."""
    try:
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        os.execvp(argv[0], argv)
    except OSError as e:
        os.write(2, f"agentrl subreaper: cannot run {argv[0]!r}: {e.strerror or e}\n".encode())
    os._exit(127)


def run(argv: list[str]) -> int:
    """Run `argv` to its end (or until a stop signal), kill whatever it left, and return its exit code (-N when
    signal N ended it or stopped the wrapper)."""
    me = os.getpid()
    signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)  # signals are taken with sigwaitinfo: no handler races
    child = _start(argv)
    status = None
    while status is None:
        info = signal.sigwaitinfo(WAITED)
        if info.si_signo != signal.SIGCHLD:
            kill_tree(me)
            return -info.si_signo
        status = _reap().get(child)
    kill_tree(me)
    return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> None:
    """Exit as the command did: with its code, or killed by the same signal."""
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.exit("usage: subreaper.py -- COMMAND [ARGS...]")
    if not set_subreaper():
        _exec(argv)
    code = run(argv)
    if code < 0:
        sig = -code
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL's disposition is always the default
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.kill(os.getpid(), sig)
        code = 128 + sig  # a signal whose default is not to end the process
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
