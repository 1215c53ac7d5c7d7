"""Every registered env passes agentrl.check_env (gymnasium's checker plus the agentrl checks)."""

from __future__ import annotations

import pytest

import agentrl
from agentrl import registry
from agentrl.registry import registered_env_ids


@pytest.mark.slow
@pytest.mark.parametrize("env_id", registered_env_ids(), ids=str)
def test_registered_env_passes_check_env(env_id):
    env = agentrl.make(env_id)
    try:
        agentrl.check_env(env)
    finally:
        env.close()


@pytest.mark.parametrize("name", sorted(registry.env_descriptions()), ids=str)
def test_every_registered_env_has_evaluation_tasks(name):
    """`agentrl eval --env ANY`: every env gets a task list from its evaluation hook (seeds where it has none)."""
    from agentrl.evaluation import EvalConfig, hook_for

    hook = hook_for(name)
    try:
        tasks = hook.tasks(EvalConfig(env=name, split="test", num_tasks=3))
    finally:
        hook.close()
    assert tasks and len({t.id for t in tasks}) == len(tasks)
    assert all(t.seed is not None or t.options for t in tasks), "each task must pick a definite episode"
