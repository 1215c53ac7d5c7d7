"""The Docker engine client shared by the docker backend, the image builder and the reaper (its own module so that
none of them imports another lazily)."""

from __future__ import annotations

import os
import threading

from agentrl.errors import AgentRLError, SandboxError


class DockerUnavailable(SandboxError, AgentRLError):
    """No Docker engine answers (not started, wrong DOCKER_HOST, or no permission on the socket)."""


_clients: dict[str, object] = {}
_clients_lock = threading.Lock()


def docker_client(ping_timeout: float = 5.0):
    """A shared, thread-safe docker client for this process; DockerUnavailable (fast, no hang) if none answers.

    max_pool_size is raised because the default 10 connections fail under threads (docker-py#1636, #2477).
    """
    import docker

    key = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            try:
                client = docker.DockerClient(base_url=key, version="1.41", timeout=120, max_pool_size=64)
                client.api.get(client.api._url("/_ping"), timeout=ping_timeout).raise_for_status()
            except Exception as e:
                raise DockerUnavailable(
                    f"no Docker engine answers at {key} ({type(e).__name__}: {str(e)[:160]}): start it with "
                    "'bash scripts/ensure_docker.sh' (as root), or use backend='bwrap'") from e
            _clients[key] = client
    return client


def remove_container(client, cid: str) -> None:
    """Force-remove a container, ignoring 'already gone' and 'removal in progress'."""
    import docker

    try:
        client.api.remove_container(cid, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        if e.status_code != 409:
            raise
