"""Every registered env passes agentrl.check_env (gymnasium's checker plus the agentrl checks)."""

from __future__ import annotations

import pytest

import agentrl
from agentrl.registry import registered_env_ids


@pytest.mark.parametrize("env_id", registered_env_ids(), ids=str)
def test_registered_env_passes_check_env(env_id):
    env = agentrl.make(env_id)
    try:
        agentrl.check_env(env)
    finally:
        env.close()
