"""UNSAFE local backend: commands run on the host as the calling user, in a temp folder. NO ISOLATION.

For development and unit tests of code that only needs "a shell and a folder". It has a process group, a
deadline and rlimits, but no namespaces: a command can read and write anything the calling user can, reach
the network, and leave `setsid` processes behind. It is never chosen by `auto`; ask for it by name.
API paths under /workspace and /tmp map to `<tempdir>/workspace` and `<tempdir>/tmp`.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import uuid
import warnings
from collections.abc import Mapping

import agentrl.sandboxes.reaper as reaper
from agentrl.sandboxes.base import FILE_SCRIPT, ExecResult, FileOpsMixin, SandboxConfig
from agentrl.sandboxes.process import prlimit_argv, run_process

from agentrl.errors import SandboxDead


class UnsafeLocalSandbox(FileOpsMixin):
    """Host subprocesses in a temp folder. Provides NO isolation (see the module docstring)."""

    backend = "local"

    def __init__(self, config: SandboxConfig | None = None) -> None:
        warnings.warn("agentrl sandbox backend 'local' has NO ISOLATION: commands run on the host as "
                      f"uid {os.getuid()}; use it only for development", stacklevel=2)
        self.config = config or SandboxConfig()
        self.id = f"local-{uuid.uuid4().hex[:8]}"
        self.created_at = time.monotonic()
        self.uses = 0
        self.dir = tempfile.mkdtemp(prefix="agentrl-local-")
        for sub in ("workspace", "tmp"):
            os.mkdir(os.path.join(self.dir, sub))
        self._closed = False
        reaper.track(self)

    def host_path(self, path: str) -> str:
        """Translate /workspace/... and /tmp/... to this sandbox's host folder."""
        for root in ("/workspace", "/tmp"):
            if path == root or path.startswith(root + "/"):
                return self.dir + path
        return path

    def exec(self, cmd: str | list[str], *, timeout: float | None = None, cwd: str | None = None,
             env: Mapping[str, str] | None = None, stdin: bytes | str | None = None,
             max_output_bytes: int | None = None) -> ExecResult:
        """Run `cmd` on the host (string → `bash -c`) with a deadline and rlimits; no isolation."""
        if self._closed:
            raise SandboxDead(f"local sandbox {self.id} is closed")
        c = self.config
        timeout = float(timeout or c.timeout_s)
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        if argv[:3] == ["bash", "-c", FILE_SCRIPT]:
            argv = [argv[0], argv[1], self._localise(argv[2]), *[self.host_path(a) for a in argv[3:]]]
        full_env = {**c.env, "HOME": self.dir + "/tmp", "TMPDIR": self.dir + "/tmp", **(env or {})}
        self.uses += 1
        return run_process([*prlimit_argv(c, timeout, nproc=False), *argv], config=c, timeout=timeout,
                           stdin=stdin.encode() if isinstance(stdin, str) else stdin,
                           max_output_bytes=max_output_bytes or c.max_output_bytes,
                           cwd=self.host_path(cwd or c.workdir), env=full_env)

    def _localise(self, script: str) -> str:
        """Point the shared file script at this sandbox's folders instead of the real /workspace and /tmp."""
        return re.sub(r"/(workspace|tmp)\b", lambda m: self.dir + m.group(0), script)

    def reset(self) -> None:
        """Empty the workspace and tmp folders host-side. It cannot kill escaped processes (no isolation)."""
        for sub in ("workspace", "tmp"):
            shutil.rmtree(os.path.join(self.dir, sub), ignore_errors=True)
            os.mkdir(os.path.join(self.dir, sub))
        self.uses = 0

    def alive(self) -> bool:
        """True until closed."""
        return not self._closed and os.path.isdir(self.dir)

    def close(self) -> None:
        """Delete the temp folder; idempotent."""
        if not self._closed:
            self._closed = True
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> UnsafeLocalSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
