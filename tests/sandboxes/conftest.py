"""Fixtures for the sandbox tests: one sandbox per backend with short limits, and a leftover check after every
test that looks only at containers and bwrap folders labelled with THIS pytest process's session id."""

from __future__ import annotations

import time

import pytest
from sandbox_helpers import BACKEND_PARAMS, ours, small_config


@pytest.fixture(autouse=True)
def no_leftovers():
    """After each test, nothing labelled with this session may remain (removal is synchronous; allow 5 s)."""
    yield
    deadline = time.monotonic() + 5
    while (left := ours()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"sandboxes left behind by this test: {left}"


@pytest.fixture(params=BACKEND_PARAMS)
def backend(request) -> str:
    """Each isolating backend in turn (docker, bwrap), skipped where unavailable."""
    return request.param


@pytest.fixture
def sb(backend):
    """A fresh sandbox of `backend` with small limits, closed after the test."""
    from agentrl.sandboxes import sandbox_factory

    box = sandbox_factory(backend, small_config())()
    try:
        yield box
    finally:
        box.close()
