"""The held-out evaluation admits every task at once, so an episode waits for the others' generation: that
queueing must not count against the model. A model that fixes the bug but answers slower than the loop's
episode budget still resolves the task (75 level-0 episodes once all ended as `timeout` after their edit)."""

from __future__ import annotations

import asyncio

import agentrl.envs.swe.expert as expert
import pytest
from agentrl.envs.swe.grading.grader import REPO
from agentrl.envs.swe_lite.benchmark import resolved_rate

from agentrl.config import load_config
from agentrl.engine.protocol import Generation
from agentrl.models import load_tokenizer
from agentrl.rollout.chat import ChatRenderer

pytestmark = pytest.mark.docker


class SlowExpert:
    """An engine that answers each turn of one task's episode with the expert's action, after `delay_s` (a busy
    engine)."""

    version = 0

    def __init__(self, tokenizer, task, delay_s: float):
        self.renderer, self.delay_s = ChatRenderer(tokenizer), delay_s
        self.plan = expert.plan(task, REPO, level=0)
        self.turns: dict[str, int] = {}

    async def generate(self, input_ids, sampling, *, session_id=None):
        await asyncio.sleep(self.delay_s)
        k = self.turns.get(session_id, 0)
        self.turns[session_id] = k + 1
        ids = self.renderer.action_ids(self.plan[k])
        return Generation(ids, [-0.1] * len(ids), "stop", [0] * len(ids))


def test_a_slow_but_correct_model_is_not_scored_as_a_timeout(tasks, docker_backend):
    task = next(t for t in tasks if t.difficulty == 0 and t.split == "dev")
    cfg = load_config("swe_lite", None, overrides=["rollout.episode_timeout_s=1", f"env.kwargs.backend={docker_backend}",
                                                   "env.kwargs.command_timeout_s=20"])
    tokenizer = load_tokenizer("smollm2-135m-instruct")
    engine = SlowExpert(tokenizer, task, delay_s=1.5)  # each turn alone outlasts the 1 s episode budget
    held = asyncio.run(resolved_rate(cfg, engine, tokenizer, [task], 0))
    assert held.n == 1 and held.mean == 1.0
