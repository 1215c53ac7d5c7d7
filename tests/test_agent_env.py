"""AgentEnv: message/text spaces, async defaults, system message with tools, and check_env's messages."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

from agentrl.agent_env import AgentEnv, MessagesSpace, TextSpace, check_env
from agentrl.tool_calls import FormatError, ToolCall, format_call, function_tool
from agentrl.types import tool, user

ECHO = function_tool("echo", "Echo text back.", {"text": {"type": "string"}})


class EchoEnv(AgentEnv):
    """Echoes the argument of an `echo` call; done after one echo."""

    tools = [ECHO]
    system_prompt = "Echo the word."

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.word = str(self.np_random.choice(["apple", "pear", "plum"]))
        self.thread = threading.current_thread()
        return [self.system_message(), user(self.word)], {"task_id": self.word}

    def step(self, action):
        call = self.parse_action(action)
        if isinstance(call, FormatError):
            return [user(call.message)], 0.0, False, False, {"format_error": True}
        return [tool(call.arguments["text"])], float(call.arguments["text"] == self.word), True, False, {}

    def expert_action(self):
        return format_call("echo", {"text": self.word})


def test_spaces_accept_messages_and_any_text():
    space, text = MessagesSpace(), TextSpace(max_length=5)
    assert [{"role": "tool", "content": "é"}] in space and [] in space
    assert "hello" not in space and [{"role": "robot", "content": "x"}] not in space
    assert [{"role": "user", "content": 3}] not in space
    assert "中文🙂" in text and "toolong" not in text and 3 not in text
    space.seed(0)
    text.seed(0)
    assert space.sample() in space and isinstance(TextSpace().sample(), str)


def test_instances_do_not_share_spaces():
    a, b = EchoEnv(), EchoEnv()
    assert a.action_space is not b.action_space and a.observation_space is not b.observation_space
    assert a.observation_space is a.observation_space, "an instance keeps its space (and its RNG state)"
    a.action_space.seed(1)
    b.action_space.seed(2)
    assert a.action_space.sample() != b.action_space.sample()


def test_echo_env_passes_check_env():
    check_env(EchoEnv())


def test_system_message_holds_prompt_tools_and_calling_convention():
    content = EchoEnv().system_message()["content"]
    assert content.startswith("Echo the word.\n\nYou can call these tools")
    assert '"name": "echo"' in content and "<tool_call>" in content


def test_parse_action_knows_when_the_action_was_cut_off():
    env = EchoEnv()
    assert env.parse_action(format_call("echo", {"text": "a"})) == ToolCall("echo", {"text": "a"})
    env.last_action_truncated = True
    err = env.parse_action("I will echo the")
    assert isinstance(err, FormatError) and "length limit" in err.message


def test_async_defaults_run_the_sync_methods_in_a_worker_thread():
    env = EchoEnv()

    async def go():
        messages, info = await env.areset(seed=1)
        return messages, info, await env.astep(env.expert_action())

    messages, info, (obs, reward, terminated, truncated, _) = asyncio.run(go())
    assert env.thread is not threading.main_thread()
    assert messages[1]["content"] == info["task_id"] and reward == 1.0 and terminated and not truncated


def test_reset_is_seeded():
    env = EchoEnv()
    words = {env.reset(seed=s)[1]["task_id"] for s in range(20)}
    assert env.reset(seed=3) == env.reset(seed=3) and len(words) > 1


class PromptOnly(EchoEnv):
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "Echo apple"


class Unseeded(EchoEnv):
    def reset(self, *, seed=None, options=None):
        self.word = "apple"
        return [user("apple")], {}


class BadTools(EchoEnv):
    tools = [{"function": {"description": "nameless"}}]


class StuckExpert(EchoEnv):
    def expert_action(self):
        return "no call here"


class NoFinish(EchoEnv):
    def step(self, action):
        return [tool("ok")], 0.0, False, False, {}


@pytest.mark.parametrize("env, message", [
    (PromptOnly(), 'PromptOnly.reset() returned str; expected (messages, info), messages a list of {"role", '
                   '"content"} dicts. Most likely reset returns the prompt text itself.'),
    (BadTools(), "BadTools.tools: tools[0] has no name; expected {'type': 'function', 'function': {'name': ...}}"),
    (StuckExpert(), "StuckExpert: the expert's action 'no call here' is a format error"),
    (NoFinish(), "NoFinish: the scripted expert did not finish an episode within 50 steps"),
])
def test_check_env_names_the_call_the_expectation_and_the_cause(env, message):
    with pytest.raises(AssertionError, match=f"^{re.escape(message)}"):
        check_env(env)


def test_check_env_runs_gymnasiums_checker():
    with pytest.raises(AssertionError, match=re.escape("does not call `super().reset(seed=seed)`")):
        check_env(Unseeded())


def test_check_env_refuses_non_agent_envs():
    with pytest.raises(AssertionError, match="^object is not an agentrl.AgentEnv"):
        check_env(object())


def test_check_env_unwraps_a_gymnasium_make_wrapper():
    """Guards "subclass AgentEnv" for `agentrl.check_env(gymnasium.make("agentrl/calc-v0"))`."""
    import gymnasium


    env = gymnasium.make("agentrl/calc-v0")
    assert not isinstance(env, AgentEnv)
    check_env(env)
