"""AgentEnv: the gymnasium.Env base class for multi-turn, tool-using tasks, and `check_env` for env authors.

Observations are chat messages, actions are the model's text::

    messages, info = env.reset(seed=0)                      # e.g. [system(...), user(task)]
    messages, reward, terminated, truncated, info = env.step(action_text)

The agent loop renders messages with the tokenizer's chat template and appends them as observation tokens
(loss_mask 0); it never re-tokenizes the model's text. What the core reads from an env is all here: the
methods and attributes of `AgentEnv` (each says who reads it), and these `info` keys, each optional:

| key | in | read by |
|---|---|---|
| ``task_id`` (str) | reset | the loop: Trajectory.task_id (the samples of one GRPO group share it) |
| ``task`` (any) | reset | the loop, for an env with an `agent_program`: what the program is handed |
| ``format_error`` (bool) | step | the loop: the action could not be parsed; ``rollout.max_format_errors`` in a row end the episode as ``format_errors`` (the loop owns that budget, the env only flags the error) |
| ``termination`` (str) | step | the loop: the `TerminationReason` of a terminated/truncated step (default: done / max_turns) |
| ``reward`` (float) | end_episode | the loop: replaces the episode's reward |
| ``resolved`` (bool) | final | `agentrl eval`: the env graded the episode and this is its verdict (without it: reward ≥ 1); its presence marks the episode graded, so the hook's `record_fields` are filled. The trainer: task success (with ``success`` or ``correct``, agentrl.algo.signal; without any of them success is the reward), for rollout.dynamic_sampling_on=success and the mixed-success metrics |
| ``exit_reason`` (str) | final | `agentrl eval`: how the env says the episode ended (default: the termination) |
| ``timings`` (dict of seconds) | final | `agentrl eval`: merged into the record's timings (``grade_s`` explains an over-budget record) |
| ``error`` (str) | final | `agentrl eval`: the record's error text |
| ``grading_valid``, ``grading_reason`` | final | the trainer: the episode was graded by a grader that reports on integrity (the denominator of the two shares below) |
| ``suspicious`` (bool) | final | the trainer: the grader found tampering; rollout/suspicious_share, the flagged-episode warning and ``samples/step_N_suspicious.txt`` |
| ``grading_refused`` (bool) | final | the trainer: the judge refused the answer; rollout/refused_share and the flagged-episode warning |

The final info (the last step's, merged with `end_episode`'s) is kept as Trajectory.reward_info (values that are
not JSON become their repr), so everything else an env puts there reaches its own `summary_metrics` and the
trajectory files.
"""

from __future__ import annotations

import asyncio
import string
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium
from gymnasium import spaces

from agentrl.tool_calls import FormatError, ToolCall, ToolSpec, check_tools, parse_tool_call, tools_prompt
from agentrl.types import Message, system

ROLES = ("system", "user", "assistant", "tool")


class MessagesSpace(spaces.Space[list]):
    """The observation space: a list of chat messages, each a dict with a `role` and a string `content`."""

    def __init__(self, max_messages: int = 1024, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)
        self.max_messages = max_messages

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        """True for a list of {"role": one of ROLES, "content": str} dicts."""
        return isinstance(x, list) and len(x) <= self.max_messages and all(
            isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str) for m in x)

    def sample(self, mask: Any = None, probability: Any = None) -> list[Message]:
        """One to three random user/tool messages of short random text."""
        n = int(self.np_random.integers(1, 4))
        return [{"role": str(self.np_random.choice(["user", "tool"])), "content": _random_text(self.np_random)}
                for _ in range(n)]

    def __repr__(self) -> str:
        return "MessagesSpace()"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MessagesSpace) and other.max_messages == self.max_messages


class TextSpace(spaces.Space[str]):
    """The action space: any string up to max_length characters (the model's text; unlike spaces.Text, any charset)."""

    def __init__(self, max_length: int = 1_000_000, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)
        self.max_length = max_length

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        """True for a str of at most max_length characters."""
        return isinstance(x, str) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Random printable text (exercises an env's format-error path, never a valid tool call)."""
        return _random_text(self.np_random)

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length


def _random_text(rng: Any, max_len: int = 48) -> str:
    chars = string.ascii_letters + string.digits + " .,?!\n"
    return "".join(rng.choice(list(chars), size=int(rng.integers(0, max_len))))


class AgentEnv(gymnasium.Env[list, str]):
    """Base class for agentrl environments: chat messages in, model text out.

    Subclasses implement `reset` (starting with ``super().reset(seed=seed)``) and `step`, and usually set
    `tools` and `system_prompt`. Override `areset`/`astep` for envs that are natively async (by default they
    run the sync methods in a worker thread, so many episodes can run concurrently). Override
    `expert_action` to provide a scripted expert for the supervised warm start.

    The observation space is `MessagesSpace`, the action space `TextSpace`. gymnasium's `check_env` applies
    with two limits, both documented in docs/envs.md: its render checks do not apply (text envs have no
    render modes), and its random actions (`TextSpace.sample`) only exercise the format-error path.
    `agentrl.check_env` runs gymnasium's checker and adds the agentrl-specific checks.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    # Set these in ALL subclasses
    tools: Sequence[ToolSpec] = ()
    """JSON-schema tool specs shown to the model (OpenAI style, see agentrl.tool_calls.function_tool)."""
    system_prompt: str = ""
    """Task instructions; `system_message()` combines them with the tool list and calling convention."""

    # Set these in SOME subclasses (the core uses each only where it is set)
    agent_program: Any = None
    """An agent program that plays this env's episodes instead of the loop's policy (agentrl.rollout.programs):
    after `reset`, the loop awaits ``agent_program(info["task"], client)`` against a gateway session with the
    loop's budgets; `step` is never called. agentrl.envs.external sets it."""
    eval_hook: Any = None
    """The env's evaluation hook (an agentrl.evaluation.EvalHook, or "module:object" naming one): its tasks,
    oracles and record fields for `agentrl eval`. A hook given to `register(eval_hook=...)` wins; None: the
    generic hook (held-out seeds as tasks, the reward as the score)."""

    # Set by the agent loop before each step
    last_action_truncated: bool = False
    """True when the action passed to `step` was cut off by the token limit (finish_reason "length")."""

    @classmethod
    def shared_kwargs(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Constructor kwargs every env of one training run shares, from the run's env.kwargs (e.g. swe_lite's
        curriculum under level=auto). Called once per run by the trainer's env factory (local backend), which also
        passes the run's SandboxPool as `pool=` to a constructor that takes it. Default: nothing shared."""
        return {}

    @classmethod
    def sandboxes_per_episode(cls, kwargs: dict[str, Any]) -> int:
        """How many sandboxes of a shared `pool=` one episode of an env made with these constructor kwargs may
        hold at once. The trainer's env factory sizes the run's SandboxPool as rollout.concurrency × this, so
        episodes that each need two (a grading sandbox and a judge's, as the SWE env's suite judge does) never
        wait on each other for the last one. Default: 1."""
        return 1

    @classmethod
    def summary_metrics(cls, infos: list[dict[str, Any]]) -> dict[str, float]:
        """The env's own rollout metrics of one step, from the final infos (Trajectory.reward_info) of every
        episode of the step, masked ones included; `rollout.collector.summarize` adds them to the step's metrics
        (e.g. the SWE env's rollout/invalid_grading_share). Default: none."""
        return {}

    @property
    def observation_space(self) -> spaces.Space:  # type: ignore[override]
        """Per-instance MessagesSpace (spaces hold an RNG, so instances do not share one)."""
        return self.__dict__.setdefault("_observation_space", MessagesSpace())

    @observation_space.setter
    def observation_space(self, space: spaces.Space) -> None:
        self.__dict__["_observation_space"] = space

    @property
    def action_space(self) -> spaces.Space:  # type: ignore[override]
        """Per-instance TextSpace."""
        return self.__dict__.setdefault("_action_space", TextSpace())

    @action_space.setter
    def action_space(self, space: spaces.Space) -> None:
        self.__dict__["_action_space"] = space

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[Message], dict[str, Any]]:
        """Start an episode.

        Args:
            seed: seeds `self.np_random` (call ``super().reset(seed=seed)`` first); the same seed gives the same task.
            options: env-specific options (e.g. {"task_id": ...}).

        Returns:
            messages: the initial conversation, e.g. ``[self.system_message(), user(task)]``.
            info: a dict; put the task's id under "task_id".
        """
        super().reset(seed=seed)
        return [], {}

    def step(self, action: str) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Apply the model's action text.

        Args:
            action: the model's text for this turn (the content of its assistant message).

        Returns:
            messages: new observation messages (tool results, or a user message naming a format error).
            reward: the reward for this step (the trajectory's reward is the sum).
            terminated: the task ended (answered, submitted, failed for good).
            truncated: the env cut the episode short (its own step or time limit).
            info: a dict; "format_error": True for unparseable actions, optionally "termination".
        """
        raise NotImplementedError(f"{type(self).__name__} must implement step(action)")

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[Message], dict[str, Any]]:
        """Async reset; by default runs `reset` in a worker thread."""
        return await asyncio.to_thread(lambda: self.reset(seed=seed, options=options))

    async def astep(self, action: str) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Async step; by default runs `step` in a worker thread."""
        return await asyncio.to_thread(self.step, action)

    def task_for_seed(self, seed: int) -> str | None:
        """The task_id that `reset(seed=seed)` would pick, without starting anything; None (the default) when the
        env cannot tell. The trainer's task sampler reads it to keep the warm start's tasks out of RL
        (rollout.exclude_warm_start_episodes)."""
        return None

    def expert_action(self) -> str | None:
        """The action a competent agent takes in the current state (for the supervised warm start).

        Returns:
            the action text (usually a tool call written with `agentrl.tool_calls.format_call`), or None when
            the env has no expert.
        """
        return None

    def end_episode(self, termination: str, *, grade: bool) -> dict[str, Any] | None:
        """The agent loop ended the episode on one of its own budgets (termination: max_turns, max_tokens,
        timeout or format_errors); close it out. Called once, instead of a final step.

        Args:
            termination: the loop's TerminationReason value.
            grade: the caller wants what stands graded (evaluation); training passes False.

        Returns:
            the final info to merge into the episode's (a "reward" key replaces its reward), or None (the default:
            the episode keeps the rewards and info of its steps).
        """
        return None

    def system_message(self, extra: str = "") -> Message:
        """A system message with `system_prompt` (plus `extra`), the tool list and the calling convention."""
        parts = [p for p in (self.system_prompt, extra, tools_prompt(self.tools)) if p]
        return system("\n\n".join(parts))

    def parse_action(self, action: str) -> ToolCall | FormatError:
        """Parse exactly one tool call from the action against `tools`; a FormatError carries the message to send."""
        return parse_tool_call(action, self.tools, truncated=self.last_action_truncated)

    def close(self) -> None:
        """Release resources (sandboxes, files). Must be safe to call twice."""


def _is_messages(x: Any) -> bool:
    return MessagesSpace().contains(x)


def reset_problem(name: str, result: Any) -> str | None:
    """What is wrong with what `name`.reset() returned (None if it is (messages, info)): check_env's and the
    preflight's one test of the shape, so a run refuses what check_env refuses."""
    if isinstance(result, tuple) and len(result) == 2 and _is_messages(result[0]) and isinstance(result[1], dict):
        return None
    hint = " Most likely reset returns the prompt text itself." if isinstance(result, str) else ""
    return (f"{name}.reset() returned {type(result).__name__}; expected (messages, info), messages a list of "
            f'{{"role", "content"}} dicts.{hint}')


def step_problem(name: str, result: Any) -> str | None:
    """What is wrong with what `name`.step() returned (None if it is a 5-tuple whose messages are messages)."""
    if isinstance(result, tuple) and len(result) == 5 and _is_messages(result[0]):
        return None
    return (f"{name}.step() returned {type(result).__name__}; expected (messages, reward, terminated, truncated, "
            "info), messages a list of {\"role\", \"content\"} dicts.")


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise AssertionError(message)


def check_env(env: Any, *, expert_steps: int = 50, strict: bool = True) -> None:
    """Check an env against the AgentEnv API; raises AssertionError naming the call, the expectation and the cause.

    Runs gymnasium's `check_env` (its render checks skipped: text envs do not render; with `strict`, its
    warnings count as failures), then the agentrl checks: tool specs, reset/step return shapes, a format-error
    step, areset/astep, the scripted expert (if any) reaching `terminated` within `expert_steps`, close twice.
    Prints one line saying what passed when every check does.

    Args:
        env: the environment (an AgentEnv; `agentrl.make` returns one; a `gymnasium.make` wrapper is unwrapped).
        expert_steps: how many expert steps may pass before the expert counts as stuck.
        strict: treat gymnasium checker warnings as failures.
    """
    from gymnasium.utils.env_checker import check_env as gym_check_env

    if not isinstance(env, AgentEnv) and isinstance(getattr(env, "unwrapped", None), AgentEnv):
        env = env.unwrapped  # gymnasium.make(...) wraps the env; the agentrl checks need the env itself
    name = type(env).__name__
    _check(isinstance(env, AgentEnv), f"{name} is not an agentrl.AgentEnv; subclass AgentEnv (a gymnasium.Env).")
    problems = check_tools(env.tools)
    _check(not problems, f"{name}.tools: " + "; ".join(problems))
    _check(isinstance(env.system_prompt, str), f"{name}.system_prompt must be a str, got {type(env.system_prompt).__name__}")

    problem = reset_problem(name, env.reset(seed=0))
    _check(problem is None, str(problem))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym_check_env(env, skip_render_check=True, skip_close_check=True)
    relevant = [str(w.message) for w in caught  # gymnasium's logger.warn prefixes "WARN:"; others are not its checks
                if "WARN:" in str(w.message) and "different from the unwrapped" not in str(w.message)]
    _check(not (strict and relevant), f"gymnasium's check_env warned about {name}: " + " | ".join(relevant))

    env.reset(seed=0)
    out = env.step("this text contains no tool call")
    _check(isinstance(out, tuple) and len(out) == 5,
           f"{name}.step() returned {type(out).__name__}; expected (messages, reward, terminated, truncated, info).")
    messages, reward, terminated, truncated, info = out
    _check(_is_messages(messages), f"{name}.step() messages must be a list of {{'role', 'content'}} dicts, got {messages!r}")
    _check(isinstance(reward, (int, float)) and not isinstance(reward, bool), f"{name}.step() reward must be a float, got {reward!r}")
    _check(isinstance(terminated, bool) and isinstance(truncated, bool), f"{name}.step() terminated/truncated must be bools")
    _check(isinstance(info, dict), f"{name}.step() info must be a dict, got {type(info).__name__}")

    async def _async_roundtrip() -> Any:
        await env.areset(seed=0)
        return await env.astep("this text contains no tool call")

    out = asyncio.run(_async_roundtrip())
    _check(isinstance(out, tuple) and len(out) == 5 and _is_messages(out[0]), f"{name}.astep() must return what step() returns")

    env.reset(seed=0)
    action = env.expert_action()
    expert = "no scripted expert (expert_action() is None: no warm start)"
    if action is not None:
        n = 0
        for _ in range(expert_steps):
            n += 1
            _check(isinstance(action, str), f"{name}.expert_action() must return str or None, got {type(action).__name__}")
            messages, reward, terminated, truncated, info = env.step(action)
            _check(not info.get("format_error"), f"{name}: the expert's action {action!r} is a format error: {messages}")
            if terminated or truncated:
                break
            action = env.expert_action()
        _check(terminated, f"{name}: the scripted expert did not finish an episode within {expert_steps} steps")
        expert = f"the scripted expert finished an episode in {n} step{'s' * (n > 1)} (reward {reward:g})"
    env.close()
    env.close()
    print(f"check_env: {name} passed: tools, reset/step shapes, gymnasium's checker, a format-error step, "
          f"areset/astep, close twice; {expert}", flush=True)
