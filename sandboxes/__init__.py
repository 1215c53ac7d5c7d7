"""Sandbox backends (docker, bwrap, local) and image recipes, installed as agentrl.sandboxes.

    from agentrl.sandboxes import open_sandbox, SandboxPool
    with open_sandbox() as sb:                       # docker if an engine answers, else bwrap
        sb.upload_tree("task_files/", "/workspace/repo")
        r = sb.exec("python -m pytest -q", cwd="/workspace/repo", timeout=60)
        print(r.exit_code, r.timed_out, r.output)

Backends: `docker` (hardened container, the default), `bwrap` (bubblewrap as root, when no Docker engine answers) and
`local` (NO isolation, development only, never picked by `auto`). What each backend guarantees, and the test
proving it: docs/sandboxes.md.
"""

from __future__ import annotations

from agentrl.sandboxes.backends import (
    BACKENDS,
    NoSandboxBackend,
    open_sandbox,
    sandbox_factory,
    select_backend,
)
from agentrl.sandboxes.base import (
    ExecResult,
    FileTooLarge,
    PathOutsideSandbox,
    Sandbox,
    SandboxConfig,
    SandboxConfigError,
)
from agentrl.sandboxes.pool import SandboxPool

__all__ = ["BACKENDS", "ExecResult", "FileTooLarge", "NoSandboxBackend", "PathOutsideSandbox", "Sandbox",
           "SandboxConfig", "SandboxConfigError", "SandboxPool", "open_sandbox", "sandbox_factory", "select_backend"]
