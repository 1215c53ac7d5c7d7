"""A complete custom env: guess a secret number with a `guess` tool; the env answers "higher" or "lower"."""
import asyncio

import agentrl
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.models import load_tokenizer
from agentrl.rollout.agent_loop import LoopConfig, run_episode
from agentrl.tool_calls import FormatError, format_call, function_tool
from agentrl.types import tool, user


class GuessEnv(agentrl.AgentEnv):
    """Guess a secret number from 1 to 100; every guess is answered with "higher" or "lower"."""
    tools = [function_tool("guess", "Guess the secret number.", {"number": {"type": "integer"}})]
    system_prompt = "Find the secret number between 1 and 100 in as few guesses as you can."
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)  # seeds self.np_random: the same seed gives the same secret
        self.secret, self.low, self.high = int(self.np_random.integers(1, 101)), 1, 100
        return [self.system_message(), user("I have picked a number. Guess!")], {"task_id": str(self.secret)}

    def step(self, action):
        call = self.parse_action(action)  # a malformed action becomes a message back to the model
        if isinstance(call, FormatError):
            return [user(call.message)], 0.0, False, False, {"format_error": True}
        if (n := call.arguments["number"]) == self.secret:
            return [tool("Correct!")], 1.0, True, False, {}
        self.low, self.high = (max(self.low, n + 1), self.high) if n < self.secret else (self.low, min(self.high, n - 1))
        return [tool("higher" if n < self.secret else "lower")], 0.0, False, False, {}

    def expert_action(self):  # binary search: what a competent agent does (used for the supervised warm start)
        return format_call("guess", {"number": (self.low + self.high) // 2})


agentrl.register("guess", GuessEnv)  # now agentrl.make("guess") and gymnasium.make("agentrl/guess-v0") work
if __name__ == "__main__":  # the tiny random model, then the scripted expert, through the same agent loop
    tokenizer, engine = load_tokenizer("tiny"), EmbeddedEngine("tiny", seed=0)
    for expert in (False, True):
        episode = run_episode(agentrl.make("guess"), engine, tokenizer, LoopConfig(7, max_new_tokens=32), seed=7, expert=expert)
        print(asyncio.run(episode).render(tokenizer, max_chars=200))
