"""Fixtures for the swe_lite tests: Docker sandboxes of the real image (skipped only where no engine answers)."""

from __future__ import annotations

import pytest


def docker_ready() -> str | None:
    """None when a Docker engine answers, else why not."""
    try:
        from agentrl.sandboxes.docker_backend import docker_client

        docker_client(ping_timeout=3.0)
    except Exception as e:  # DockerUnavailable, or docker-py missing
        return str(e)
    return None


@pytest.fixture(scope="session")
def docker_backend() -> str:
    """'docker', or skip the test where no Docker engine answers (the image itself must exist: make setup)."""
    reason = docker_ready()
    if reason:
        pytest.skip(f"needs Docker: {reason}")
    return "docker"


@pytest.fixture(scope="module")
def sandbox(docker_backend):
    """One Docker sandbox shared by a test module (grading resets the repo folder itself)."""
    from agentrl.sandboxes import open_sandbox

    with open_sandbox(docker_backend) as sb:
        yield sb


@pytest.fixture(scope="session")
def tasks():
    """The shipped tasks."""
    from agentrl.envs.swe.tasks import load_tasks

    return load_tasks()
