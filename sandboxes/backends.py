"""Backend choice: `select_backend` resolves `auto`, `sandbox_factory` builds sandboxes of a named backend, and
`open_sandbox` does both. Kept apart from the backends and the pool so that nothing imports back into it."""

from __future__ import annotations

from collections.abc import Callable

from agentrl.sandboxes.base import Sandbox, SandboxConfig, SandboxConfigError
from agentrl.sandboxes.bwrap_backend import BwrapSandbox, bwrap_available
from agentrl.sandboxes.docker_backend import DockerSandbox
from agentrl.sandboxes.docker_engine import DockerUnavailable, docker_client
from agentrl.sandboxes.local_backend import UnsafeLocalSandbox

BACKENDS = ("auto", "docker", "bwrap", "local")
_CLASSES = {"docker": DockerSandbox, "bwrap": BwrapSandbox, "local": UnsafeLocalSandbox}


class NoSandboxBackend(SandboxConfigError):
    """`auto` found neither a Docker engine nor a working bubblewrap."""


def select_backend(backend: str = "auto") -> str:
    """Resolve `auto` to `docker` (an engine answers) or `bwrap` (the probe works); refuse `local` unless named.

    With an engine but without the image, DockerSandbox raises ImageMissing rather than falling back to bwrap.
    """
    if backend not in BACKENDS:
        raise SandboxConfigError(f"unknown sandbox backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if backend != "auto":
        return backend
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
    cls = _CLASSES.get(backend)
    if cls is None:
        raise SandboxConfigError(f"unknown sandbox backend {backend!r}: choose one of {', '.join(BACKENDS[1:])}")
    return lambda: cls(config)


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
