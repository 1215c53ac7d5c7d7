"""A live conversation with a sandboxed command over its stdin and stdout (grading's worker protocol).

`Sandbox.exec(cmd, stdin=dialogue)` keeps the command's stdin open: the backend's writer thread sends what
`send` queues and half-closes stdin after `close`; its reader thread hands every output chunk to `feed` (the
output cap still gets it too). `exec` blocks until the command ends, so the caller runs it in a thread of its
own (`start`) and talks meanwhile. `abort` makes the backend kill the command as at its deadline. Everything
the command says is kept raw here; reading it safely (line caps, deadlines) is the reader's job.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any


class Dialogue:
    """Two byte streams between a caller and one command: `send`/`read_line` on the caller's side."""

    def __init__(self, max_buffer: int = 16 << 20) -> None:
        self.max_buffer = max_buffer
        self._out: queue.Queue[bytes | None] = queue.Queue()
        self._buf = bytearray()
        self._cond = threading.Condition()
        self._eof = False
        self.aborted = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ caller's side
    def start(self, run: Callable[[Dialogue], Any]) -> None:
        """Run `run(self)` (which calls the sandbox's exec with this dialogue as stdin) in a daemon thread."""
        def target() -> None:
            try:
                self.result = run(self)
            except BaseException as e:  # handed to the caller by `wait`
                self.error = e
            finally:
                self.finish()

        self._thread = threading.Thread(target=target, daemon=True, name="agentrl-dialogue")
        self._thread.start()

    def send(self, data: bytes) -> None:
        """Queue bytes for the command's stdin."""
        self._out.put(bytes(data))

    def close(self) -> None:
        """Half-close the command's stdin once everything queued is sent (the command sees EOF)."""
        self._out.put(None)

    def abort(self) -> None:
        """Ask the backend to kill the command now (as at its deadline); reads return EOF afterwards."""
        self.aborted.set()
        self._out.put(None)
        self.finish()

    def read_line(self, deadline: float, max_bytes: int) -> bytes | None:
        """The next line (without its newline) once it is complete; None at EOF.

        Raises TimeoutError when `deadline` (time.monotonic) passes first, and ValueError when the line grows
        past `max_bytes` before it ends.
        """
        with self._cond:
            while True:
                end = self._buf.find(b"\n", 0, max_bytes + 1)
                if end >= 0:
                    line = bytes(self._buf[:end])
                    del self._buf[:end + 1]
                    return line
                if len(self._buf) > max_bytes:
                    raise ValueError(f"a line of more than {max_bytes} bytes")
                if self._eof:
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._cond.wait(min(left, 1.0))

    @property
    def ended(self) -> bool:
        """The command's output has ended (it exited or was aborted); unread lines may remain."""
        return self._eof

    def wait(self, timeout: float) -> Any:
        """The exec's ExecResult once the command has ended (re-raises what exec raised); None on timeout."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return None
        if self.error is not None:
            raise self.error
        return self.result

    # ------------------------------------------------------------------ backend's side
    def pump(self, write: Callable[[bytes], Any], close: Callable[[], Any]) -> None:
        """Writer thread: send queued bytes until `close` (or `abort`), then half-close stdin."""
        try:
            while True:
                data = self._out.get()
                if data is None or self.aborted.is_set():
                    break
                write(data)
        except OSError:
            pass
        finally:
            try:
                close()
            except OSError:
                pass

    def feed(self, chunk: bytes) -> None:
        """Reader thread: the command said `chunk`. Past max_buffer unread bytes the command is aborted."""
        with self._cond:
            if self._eof:
                return
            self._buf += chunk
            self._cond.notify_all()
        if len(self._buf) > self.max_buffer:
            self.abort()

    def finish(self) -> None:
        """Reader thread: the command's output ended."""
        with self._cond:
            self._eof = True
            self._cond.notify_all()
