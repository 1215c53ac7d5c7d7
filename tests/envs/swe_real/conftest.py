"""Fixtures for the swe_real tests: the package cache (set-up fetches it) and Docker sandboxes of the real image."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def cache_ready() -> None:
    """Skip where the package cache is absent: `make setup` (scripts/setup.sh) fetches it, so CI always has it."""
    from agentrl.envs.swe.real.packages import missing

    gone = missing()
    if gone:
        pytest.skip(f"the swe_real package cache lacks {', '.join(gone)}: run "
                    "'python -m agentrl.envs.swe.real.packages' (make setup does)")


@pytest.fixture(scope="session")
def docker_backend() -> str:
    """'docker', or skip where no Docker engine answers (the image itself must exist: make setup)."""
    try:
        from agentrl.sandboxes.docker_backend import docker_client

        docker_client(ping_timeout=3.0)
    except Exception as e:
        pytest.skip(f"needs Docker: {e}")
    return "docker"


@pytest.fixture(scope="session")
def real_tasks(cache_ready):
    """Every shipped swe_real task."""
    from agentrl.envs.swe.real.tasks import load_real

    return load_real()
