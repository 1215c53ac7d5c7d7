"""Shared helpers of the sandbox tests: backend availability, short-limit configs, this session's leftovers."""

from __future__ import annotations

import pytest
from agentrl.sandboxes import reaper
from agentrl.sandboxes.base import SandboxConfig


def _docker_reason() -> str | None:
    from agentrl.sandboxes.docker_backend import DockerUnavailable, docker_client
    from agentrl.sandboxes.image import image_exists, image_tag

    try:
        docker_client(ping_timeout=3.0)
    except DockerUnavailable as e:
        return str(e)
    return None if image_exists(image_tag()) else f"{image_tag()} is not built (agentrl sandbox build)"


def _bwrap_reason() -> str | None:
    from agentrl.sandboxes.bwrap_backend import bwrap_available

    return bwrap_available()


DOCKER_SKIP = _docker_reason()
BWRAP_SKIP = _bwrap_reason()
needs_docker = pytest.mark.skipif(DOCKER_SKIP is not None, reason=f"no docker: {DOCKER_SKIP}")
needs_bwrap = pytest.mark.skipif(BWRAP_SKIP is not None, reason=f"no bwrap: {BWRAP_SKIP}")
BACKEND_PARAMS = [pytest.param("docker", marks=[pytest.mark.docker, needs_docker]),
                  pytest.param("bwrap", marks=needs_bwrap)]


def small_config(**overrides) -> SandboxConfig:
    """Short limits so attacks end fast on a shared 2-core machine."""
    kw = dict(memory_mb=512, workspace_mb=128, tmp_mb=64, pids=128, timeout_s=10.0, kill_grace_s=1.0, ttl_s=900)
    kw.update(overrides)
    return SandboxConfig(**kw)


def ours() -> list[str]:
    """Containers and bwrap folders of this test session that still exist."""
    left = []
    if DOCKER_SKIP is None:
        from agentrl.sandboxes.docker_backend import docker_client

        flt = {"label": [f"agentrl.session={reaper.SESSION_ID}"]}
        left += [c["Id"][:12] for c in docker_client().api.containers(all=True, filters=flt)]
    if reaper.BWRAP_DIR.is_dir():
        left += [d.name for d in reaper.BWRAP_DIR.iterdir() if d.name.startswith(reaper.SESSION_ID)]
    return left



def host_cgroup(sb):
    """The sandbox's cgroup as the host sees it: bwrap's own, or the container's (read-only)."""
    cg = sb.cgroup()
    assert cg is not None, f"{sb!r} has no cgroup"
    return cg


def sandbox_of(backend: str, **overrides):
    """A sandbox of `backend` with small_config(**overrides); close it."""
    from agentrl.sandboxes import sandbox_factory

    return sandbox_factory(backend, small_config(**overrides))()
