"""The swe_lite system message (prompt, tool specs, calling convention) stays within 350 tokens of the default
model's tokenizer, PROMPT_TOKENS states the count, and the tool-call format still carries every scripted-expert
action."""

from __future__ import annotations

import agentrl.envs.swe.expert as expert
from agentrl.envs.swe.env import PROMPT_TOKENS, REPO
from agentrl.envs.swe.tasks import load_tasks
from agentrl.envs.swe_lite import SweLiteEnv

from agentrl.models import load_tokenizer
from agentrl.tool_calls import ToolCall, parse_tool_call


def system_tokens() -> int:
    env = SweLiteEnv.__new__(SweLiteEnv)  # the system message needs no sandbox
    tokenizer = load_tokenizer()  # SmolLM2's, from the local cache (no hub)
    return len(tokenizer(env.system_message()["content"]).input_ids)


def test_system_prompt_fits_the_budget_and_prompt_tokens_says_so():
    n = system_tokens()
    assert n <= 350, n
    assert n == PROMPT_TOKENS, f"update PROMPT_TOKENS: the system message is {n} tokens"


def test_every_expert_action_still_parses_with_the_lean_tool_specs():
    tasks = load_tasks()
    for task in tasks:
        for level in (task.difficulty, 2):
            for action in expert.plan(task, REPO, level=level):
                call = parse_tool_call(action, SweLiteEnv.tools)
                assert isinstance(call, ToolCall), (task.instance_id, call)


def test_level_0_expert_edits_and_submits_without_viewing():
    task = next(t for t in load_tasks() if t.difficulty == 0)
    names = [parse_tool_call(a, SweLiteEnv.tools).name for a in expert.plan(task, REPO, level=0)]
    assert names == ["str_replace_editor", "submit"]
