"""SweLiteEnv at a level: level 0 offers only one-line fixes and quotes the function, the level is in the
final info, and `level=auto` promotes through a shared curriculum on the policy's own resolved episodes."""

from __future__ import annotations

import agentrl.envs.swe.expert as expert
import pytest
from agentrl.envs.swe.env import REPO
from agentrl.envs.swe.levels import Curriculum
from agentrl.envs.swe.tasks import TaskError
from agentrl.envs.swe_lite import SweLiteEnv

pytestmark = pytest.mark.docker


def test_level_0_offers_one_line_fixes_and_the_expert_fixes_in_two_turns(docker_backend, tasks):
    env = SweLiteEnv(tasks=tasks, level=0, backend=docker_backend)
    try:
        for seed in range(4):
            messages, info = env.reset(seed=seed)
            assert env.task.difficulty == 0 and info["level"] == 0
            assert "The bug is in" in messages[-1]["content"] and "```python" in messages[-1]["content"]
        steps = 0
        while (action := env.expert_action()) is not None:
            _, reward, terminated, truncated, info = env.step(action)
            steps += 1
            if terminated or truncated:
                break
        assert steps == 2 and info["resolved"] and info["level"] == 0
    finally:
        env.close()


def test_level_0_without_one_line_fixes_says_so(tasks):
    bigger = [t for t in tasks if t.difficulty == 1]
    with pytest.raises(TaskError, match="one-line edit"):
        SweLiteEnv(tasks=bigger, level=0)


def test_auto_promotes_on_resolved_policy_episodes_only(docker_backend, tasks):
    curriculum = Curriculum(0, threshold=1.0, window=1)
    one_line = [t for t in tasks if t.difficulty == 0][:2]

    def episode(fix: bool, use_expert: bool = False) -> dict:
        env = SweLiteEnv(tasks=one_line, level="auto", curriculum=curriculum, backend=docker_backend)
        try:
            env.reset(seed=0)
            level = env.level
            if use_expert:
                while (action := env.expert_action()) is not None:
                    _, _, terminated, _, info = env.step(action)
            else:
                plan = expert.plan(env.task, REPO, level=level)
                for action in plan if fix else plan[-1:]:  # without the fix: submit at once
                    _, _, terminated, _, info = env.step(action)
            assert terminated
            return info
        finally:
            env.close()

    assert episode(fix=False)["level"] == 0 and curriculum.level == 0
    assert episode(fix=True, use_expert=True)["resolved"] and curriculum.level == 0  # the warm start's expert
    info = episode(fix=True)  # the same actions, taken as the policy's
    assert info["resolved"] and info["level"] == 0 and curriculum.level == 1
    env = SweLiteEnv(tasks=tasks, level="auto", curriculum=curriculum, backend=docker_backend)
    try:
        messages, info = env.reset(seed=0)
        assert info["level"] == 1 and "The bug is in" not in messages[-1]["content"]
    finally:
        env.close()
