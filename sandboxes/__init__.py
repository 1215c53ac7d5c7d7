"""Sandbox backends (docker, bwrap, local) and image recipes, installed as agentrl.sandboxes.

    from agentrl.sandboxes import open_sandbox, SandboxPool
    with open_sandbox() as sb:                       # docker if an engine answers, else bwrap
        sb.upload_tree("task_files/", "/workspace/repo")
        r = sb.exec("python -m pytest -q", cwd="/workspace/repo", timeout=60)
        print(r.exit_code, r.timed_out, r.output)

Backends: `docker` (hardened container, the default), `bwrap` (bubblewrap, when no Docker engine answers) and
`local` (NO isolation, development only, never picked by `auto`). Design and verified facts:
reference/swe_sandbox.md §6–§7.
"""

from __future__ import annotations

from collections.abc import Callable

from agentrl.sandboxes.base import (
    ExecResult,
    FileTooLarge,
    PathOutsideSandbox,
    Sandbox,
    SandboxConfig,
    SandboxConfigError,
)
from agentrl.sandboxes.pool import SandboxPool

BACKENDS = ("auto", "docker", "bwrap", "local")

__all__ = ["BACKENDS", "ExecResult", "FileTooLarge", "NoSandboxBackend", "PathOutsideSandbox", "Sandbox",
           "SandboxConfig", "SandboxConfigError", "SandboxPool", "open_sandbox", "sandbox_factory", "select_backend"]


class NoSandboxBackend(SandboxConfigError):
    """`auto` found neither a Docker engine nor a working bubblewrap."""


def select_backend(backend: str = "auto") -> str:
    """Resolve `auto` to `docker` (an engine answers) or `bwrap` (the probe works); refuse `local` unless named.

    With an engine but without the image, raise ImageMissing rather than silently falling back to bwrap.
    """
    if backend not in BACKENDS:
        raise SandboxConfigError(f"unknown sandbox backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if backend != "auto":
        return backend
    from agentrl.sandboxes.bwrap_backend import bwrap_available
    from agentrl.sandboxes.docker_backend import DockerUnavailable, docker_client

    try:
        docker_client(ping_timeout=3.0)
        return "docker"
    except DockerUnavailable as e:
        docker_reason = str(e)
    bwrap_reason = bwrap_available()
    if bwrap_reason is None:
        return "bwrap"
    raise NoSandboxBackend(f"no sandbox backend works here: {docker_reason}; and {bwrap_reason}. "
                           "backend='local' runs commands on the host with NO isolation (development only)")


def sandbox_factory(backend: str, config: SandboxConfig) -> Callable[[], Sandbox]:
    """A zero-argument function creating one sandbox of a concrete backend."""
    if backend == "docker":
        from agentrl.sandboxes.docker_backend import DockerSandbox

        return lambda: DockerSandbox(config)
    if backend == "bwrap":
        from agentrl.sandboxes.bwrap_backend import BwrapSandbox

        return lambda: BwrapSandbox(config)
    if backend == "local":
        from agentrl.sandboxes.local_backend import UnsafeLocalSandbox

        return lambda: UnsafeLocalSandbox(config)
    raise SandboxConfigError(f"unknown sandbox backend {backend!r}: choose one of {', '.join(BACKENDS[1:])}")


def open_sandbox(backend: str = "auto", image: str | None = None, config: SandboxConfig | None = None,
                 **limits) -> Sandbox:
    """Create one sandbox. `limits` are SandboxConfig fields (memory_mb=512, timeout_s=10, ...).

    Args:
        backend: auto | docker | bwrap | local (local has NO isolation and must be asked for by name).
        image: Docker image tag; default the current agentrl/python:<recipe hash>.
        config: a full SandboxConfig instead of `limits`.

    Returns:
        A Sandbox; close it (or use it as a context manager).
    """
    if config is None:
        config = SandboxConfig(image=image, **limits)
    elif image is not None or limits:
        raise SandboxConfigError("pass either config= or image=/limits to open_sandbox, not both")
    return sandbox_factory(select_backend(backend), config)()
