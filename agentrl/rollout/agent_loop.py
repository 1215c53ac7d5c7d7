"""The multi-turn agent loop: one episode of env ↔ policy, recorded token-in/token-out as a Trajectory.

1. Render the env's first messages with the chat template once; ask the policy for an action; append its ids
   verbatim (loss_mask 1, behaviour logprobs, versions).
2. Call `env.step` with the action text; append the observation delta (loss_mask 0), forking a new segment
   if the template drifted (chat.Conversation).
3. Repeat until terminated, truncated or a budget runs out. Every ending raises a small `_End` carrying a
   TerminationReason; `finally` records segments, reward and metrics, so a trajectory always comes back.

This is the only agent loop: training, the warm start, held-out evaluation and `agentrl eval` (oracles
included) all run their episodes here. The policy is an `EnginePolicy` (an engine samples the actions) or a
`ScriptedPolicy` (a function of the env writes them: the env's scripted expert for the warm start, an
evaluation oracle), whose actions are tokenized as the model would have to sample them (content +
end-of-turn; logprob 0.0, version -1) and held to the same max_new_tokens budget.

The loop owns the episode budget (LoopConfig: turns, context tokens, tokens per turn, wall-clock time,
format errors in a row). When one of its own budgets ends an episode, the env may close it out through
`AgentEnv.end_episode` (its final info; a grade of what stands when LoopConfig.grade_at_budget is set).

An env with an `agent_program` (agentrl.envs.external) is played by that program instead of the policy: after
the same reset, the program runs against a gateway session in front of the engine, under the same budgets
(rollout.programs.play), and its episode ends and is recorded by the same code as any other (`_End`,
`_record`).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from agentrl.config import RolloutConfig, default
from agentrl.engine.protocol import Engine, Generation, SamplingParams
from agentrl.errors import SandboxError
from agentrl.gateway import SessionLimits
from agentrl.rollout import programs
from agentrl.rollout.chat import ChatRenderer, Conversation
from agentrl.rollout.seeds import turn_seed
from agentrl.types import TerminationReason as TR
from agentrl.types import Trajectory, Turn


def _default(key: str) -> Any:
    """The default of rollout.<key> (config.default reads it: RolloutConfig is the one home of every episode
    budget's default)."""
    return default(RolloutConfig, key)


@dataclass
class LoopConfig:
    """Budgets and sampling for one episode (defaults: those of the rollout config section)."""

    max_turns: int = _default("max_turns")
    """Actions per episode before it ends as max_turns."""
    max_context_tokens: int = _default("max_context_tokens")
    """Tokens in the sequence sent to the engine (prompt + all turns) before it ends as max_tokens."""
    max_new_tokens: int = _default("max_new_tokens")
    """Sampled tokens per turn (less when the context budget has less room)."""
    episode_timeout_s: float = _default("episode_timeout_s")
    """Wall-clock seconds per episode (reset, generation and env steps) before it ends as timeout."""
    max_format_errors: int = _default("max_format_errors")
    """Consecutive steps with info["format_error"] before the episode ends as format_errors (the loop is the
    only owner of this budget; envs only flag the error)."""
    temperature: float = _default("temperature")
    top_p: float = _default("top_p")
    top_k: int = _default("top_k")
    grade_at_budget: bool = False
    """When the loop's own budget ends an episode, ask the env to grade what stands (evaluation). Training
    leaves it False: such an episode keeps the rewards it earned."""
    sampling_salt: int = 0
    """Mixed into every member's sampling seed when > 0 (member_sampling_seed): a replayed task's group
    (agentrl.trainer.task_sampler) samples afresh instead of repeating the random draws of its earlier group."""

    @classmethod
    def from_rollout(cls, r: RolloutConfig, **changes: Any) -> LoopConfig:
        """The loop settings of a rollout config section (training, its held-out eval, `agentrl eval`), with
        `changes` on top (e.g. greedy decoding)."""
        loop = cls(max_turns=r.max_turns, max_context_tokens=r.max_context_tokens, max_new_tokens=r.max_new_tokens,
                   episode_timeout_s=r.episode_timeout_s, max_format_errors=r.max_format_errors, temperature=r.temperature,
                   top_p=r.top_p, top_k=r.top_k)
        return replace(loop, **changes)


class _End(Exception):
    """Ends an episode with a reason (and its detail in words, kept as Trajectory.termination_detail);
    budget=True when one of the loop's own budgets ended it (the env may close it out: end_episode)."""

    def __init__(self, reason: TR, detail: str = "", *, budget: bool = False):
        super().__init__(detail)
        self.reason, self.detail, self.budget = reason, detail, budget


async def _guard(make_awaitable, deadline: float, failure: TR) -> Any:
    """Await with the episode's deadline; map exceptions to an _End with `failure` (or timeout/sandbox_error)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _End(TR.TIMEOUT, "episode wall-clock budget spent", budget=True)
    try:
        return await asyncio.wait_for(make_awaitable(), remaining)
    except _End:
        raise
    except TimeoutError as e:
        if time.monotonic() >= deadline:
            raise _End(TR.TIMEOUT, "episode wall-clock budget spent", budget=True) from None
        raise _End(failure, f"TimeoutError: {e}") from None
    except SandboxError as e:
        raise _End(TR.SANDBOX_ERROR, f"{type(e).__name__}: {e}") from None
    except Exception as e:
        raise _End(failure, f"{type(e).__name__}: {e}") from None


def _messages(obs: Any, where: str) -> list:
    if not (isinstance(obs, list) and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in obs)):
        raise TypeError(f"{where} must return a list of {{'role', 'content'}} messages, got {obs!r:.200}")
    return obs


def _shape(out: Any, n: int, where: str, expected: str) -> tuple:
    if not (isinstance(out, tuple) and len(out) == n):
        raise TypeError(f"{where} returned {type(out).__name__}; expected {expected}")
    return out


async def _reset(env, seed, options):
    messages, info = _shape(await env.areset(seed=seed, options=options), 2, "reset", "(messages, info)")
    return _messages(messages, "reset"), dict(info)


async def _step(env, text):
    out = _shape(await env.astep(text), 5, "step", "(messages, reward, terminated, truncated, info)")
    obs, reward, terminated, truncated, info = out
    return _messages(obs, "step"), float(reward), bool(terminated), bool(truncated), dict(info)


def _ending(info: dict, terminated: bool) -> TR:
    """The reason for an env-signalled ending: info["termination"] if valid, else done / max_turns."""
    try:
        return TR(info["termination"])
    except (KeyError, ValueError):
        return TR.DONE if terminated else TR.MAX_TURNS


def _json_safe(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        try:
            json.dumps(v)
            out[str(k)] = v
        except (TypeError, ValueError):
            out[str(k)] = repr(v)
    return out


def as_renderer(tokenizer: Any) -> ChatRenderer:
    """A ChatRenderer for a tokenizer (passed through if it already is one)."""
    return tokenizer if isinstance(tokenizer, ChatRenderer) else ChatRenderer(tokenizer)


class EnginePolicy:
    """Actions sampled by an engine: the policy being trained or evaluated."""

    expert = False
    failure = TR.ENGINE_ERROR

    def __init__(self, engine: Engine, sampling: SamplingParams):
        self.engine, self.sampling = engine, sampling

    async def act(self, env: Any, conv: Conversation, max_new_tokens: int, seed: int | None,
                  session_id: str) -> Generation:
        """Sample the next action from the conversation's prompt ids (an aborted generation is an engine error)."""
        params = replace(self.sampling, max_new_tokens=max_new_tokens, seed=seed)
        gen = await self.engine.generate(conv.prompt_ids, params, session_id=session_id)
        if gen.finish_reason == "abort":
            raise _End(TR.ENGINE_ERROR, "generation aborted")
        return gen


def expert_action(env: Any) -> str | None:
    """The env's scripted expert's next action."""
    return env.expert_action()


class ScriptedPolicy:
    """Actions written by `action(env)` instead of sampled: the env's scripted expert (the warm start) or an
    evaluation oracle. Each is tokenized as the model would have to sample it (content + end-of-turn; logprob
    0.0, version -1) and held to the policy's max_new_tokens: a demonstration the policy could not emit is cut
    the same way (finish_reason "length"), so the warm start never teaches an unreachable action."""

    expert = True
    failure = TR.ENV_ERROR

    def __init__(self, action: Callable[[Any], str | None] = expert_action, name: str = "expert_action()"):
        self.action, self.name = action, name

    async def act(self, env: Any, conv: Conversation, max_new_tokens: int, seed: int | None,
                  session_id: str) -> Generation:
        """The scripted action as token ids (an action that is not text is an env error)."""
        text = await asyncio.to_thread(self.action, env)
        if not isinstance(text, str):
            raise _End(TR.ENV_ERROR, f"{self.name} returned {text!r}")
        ids = conv.renderer.action_ids(text)
        cut = len(ids) > max_new_tokens
        ids = ids[:max_new_tokens] if cut else ids
        return Generation(ids, [0.0] * len(ids), "length" if cut else "stop", [-1] * len(ids))


@dataclass
class _Episode:
    """What the steps of one running episode share."""

    env: Any
    policy: Any
    renderer: ChatRenderer
    cfg: LoopConfig
    traj: Trajectory
    sampling_seed: int | None
    deadline: float
    conv: Conversation | None = None
    reward: float = 0.0
    info: dict = field(default_factory=dict)
    format_errors: int = 0
    errors_in_row: int = 0
    forks: int = 0
    metrics: dict = field(default_factory=dict)
    """Metrics of an agent program's gateway session (gateway/*)."""


async def run_episode(env, engine: Engine | None, tokenizer: Any, cfg: LoopConfig | None = None, *,
                      seed: int | None = None, options: dict | None = None, expert: bool = False,
                      policy: EnginePolicy | ScriptedPolicy | None = None, group_id: str = "",
                      trajectory_id: str | None = None, sampling_seed: int | None = None) -> Trajectory:
    """Run one episode and return its Trajectory; env, engine and budget failures end it, never raise.

    The actions come from `policy`, else the env's scripted expert (expert=True; the engine is not used and may
    be None), else `engine`. `tokenizer` may be a ChatRenderer (to reuse one, or to use another chat
    template). With `sampling_seed`, turn k samples with seed turn_seed(sampling_seed, k), so an episode's
    samples do not depend on request scheduling (resumed runs reproduce them); without it the engine picks.
    An env with an `agent_program` is played by it (the engine answers its calls through a gateway session),
    except under a scripted policy.
    """
    cfg, renderer = cfg or LoopConfig(), as_renderer(tokenizer)
    if policy is None and engine is None and not expert:
        raise ValueError("run_episode needs an engine unless expert=True (or a policy)")
    if policy is None:
        sampling = SamplingParams(temperature=cfg.temperature, top_p=cfg.top_p, top_k=cfg.top_k,
                                  stop_token_ids=renderer.stop_token_ids)
        policy = ScriptedPolicy() if expert else EnginePolicy(engine, sampling)
    spec = getattr(env, "spec", None)
    traj = Trajectory(id=trajectory_id or uuid.uuid4().hex, group_id=group_id,
                      env_id=spec.id if spec else type(env).__name__, task_id="", expert=policy.expert)
    start = time.monotonic()
    ep = _Episode(env, policy, renderer, cfg, traj, sampling_seed, deadline=start + cfg.episode_timeout_s)
    play = _play_program if getattr(env, "agent_program", None) is not None and not policy.expert else _play
    try:
        await play(ep, seed, options)
    except _End as end:
        traj.termination, traj.termination_detail = end.reason, end.detail
        if end.budget:
            await _end_by_budget(ep)
    finally:
        _record(ep, start)
    return traj


async def _play(ep: _Episode, seed: int | None, options: dict | None) -> None:
    """Reset, then turns until an _End: the env's ending, one of the loop's budgets, or a failure."""
    messages, ep.info = await _guard(lambda: _reset(ep.env, seed, options), ep.deadline, TR.ENV_ERROR)
    ep.traj.task_id = str(ep.info.get("task_id", ""))
    ep.conv = Conversation(ep.renderer, messages)
    for _ in range(ep.cfg.max_turns):
        await _turn(ep)
    raise _End(TR.MAX_TURNS, budget=True)


async def _play_program(ep: _Episode, seed: int | None, options: dict | None) -> None:
    """Reset, then the env's agent program plays the episode against a gateway session with the loop's budgets
    and sampling, until it returns or the deadline; its session's record is the episode's. Ends with an _End."""
    _, info = await _guard(lambda: _reset(ep.env, seed, options), ep.deadline, TR.ENV_ERROR)
    ep.traj.task_id = str(info.get("task_id", ""))
    cfg = ep.cfg
    limits = SessionLimits(max_calls=cfg.max_turns, max_context_tokens=cfg.max_context_tokens,
                           max_new_tokens=cfg.max_new_tokens)
    out = await programs.play(ep.env.agent_program, info.get("task"), ep.policy.engine, ep.renderer,
                              sampling=ep.policy.sampling, limits=limits, session_id=ep.traj.id,
                              sampling_seed=ep.sampling_seed, deadline=ep.deadline, budget_s=cfg.episode_timeout_s)
    ep.traj.segments, ep.traj.turns, ep.forks = out.segments, out.turns, max(len(out.segments) - 1, 0)
    ep.reward, ep.info, ep.metrics = out.reward, out.info, out.metrics
    raise _End(out.termination, out.detail, budget=out.termination in (TR.MAX_TURNS, TR.MAX_TOKENS))


async def _turn(ep: _Episode) -> None:
    """One action and the env's answer, appended to the conversation; raises _End when the episode is over."""
    conv, cfg, traj = ep.conv, ep.cfg, ep.traj
    room = cfg.max_context_tokens - len(conv.current)
    if room <= 0:
        raise _End(TR.MAX_TOKENS, "no room left to generate", budget=True)
    t0 = time.monotonic()
    seed = None if ep.sampling_seed is None else turn_seed(ep.sampling_seed, len(traj.turns))
    budget = min(cfg.max_new_tokens, room)
    gen = await _guard(lambda: ep.policy.act(ep.env, conv, budget, seed, traj.id), ep.deadline, ep.policy.failure)
    t1 = time.monotonic()
    text, span = conv.append_action(gen.output_ids, gen.logprobs, gen.versions)
    turn = Turn(segment=len(conv.segments) - 1, action_span=span, observation_span=(span[1], span[1]),
                action_text=text, finish_reason=gen.finish_reason, timings={"generate_s": t1 - t0})
    traj.turns.append(turn)  # recorded before the step, so an env crash keeps the action's turn
    ep.env.last_action_truncated = gen.finish_reason == "length"
    obs, r, terminated, truncated, ep.info = await _guard(lambda: _step(ep.env, text), ep.deadline, TR.ENV_ERROR)
    ep.reward += r
    turn.reward, turn.format_error = r, bool(ep.info.get("format_error"))
    turn.observation_text = "\n".join(m["content"] for m in obs)
    turn.timings["env_s"] = time.monotonic() - t1
    ep.format_errors += bool(ep.info.get("format_error"))
    ep.errors_in_row = ep.errors_in_row + 1 if ep.info.get("format_error") else 0
    if terminated or truncated:
        raise _End(_ending(ep.info, terminated))
    if ep.errors_in_row >= cfg.max_format_errors:
        raise _End(TR.FORMAT_ERRORS, f"{ep.errors_in_row} format errors in a row", budget=True)
    obs_ids = conv.observation_ids(obs)
    if len(conv.current) + len(obs_ids) >= cfg.max_context_tokens:
        raise _End(TR.MAX_TOKENS, "the next observation does not fit the context budget", budget=True)
    turn.observation_span = conv.append_observation(obs, obs_ids)


async def _end_by_budget(ep: _Episode) -> None:
    """One of the loop's budgets ended the episode: the env may close it out (AgentEnv.end_episode) with its
    final info, and a "reward" there replaces the episode's. Not bound by the episode deadline (grading what
    stands may follow a timeout; the env bounds its own grading). A failure there is the episode's ending."""
    hook = getattr(ep.env, "end_episode", None)
    if hook is None:
        return
    traj = ep.traj
    try:
        final = await asyncio.to_thread(hook, traj.termination.value, grade=ep.cfg.grade_at_budget)
    except Exception as e:  # noqa: BLE001 - the env's failure ends this episode, never the run
        traj.termination = TR.SANDBOX_ERROR if isinstance(e, SandboxError) else TR.ENV_ERROR
        traj.termination_detail = f"closing the episode failed: {type(e).__name__}: {e}"
        return
    if final:
        ep.info = {**ep.info, **final}
        ep.reward = float(final.get("reward", ep.reward))


def _record(ep: _Episode, start: float) -> None:
    """Fill in the trajectory's segments, reward, final info and metrics (whatever ended the episode, whoever
    played it: the policy's conversation, or an agent program's session)."""
    traj, conv = ep.traj, ep.conv
    if conv is not None:
        traj.segments, ep.forks = conv.segments, conv.forks
    traj.reward, traj.reward_info = ep.reward, _json_safe(ep.info)
    traj.metrics = {
        "rollout/turns": len(traj.turns),
        "rollout/forks": ep.forks,
        "rollout/format_errors": ep.format_errors,
        "rollout/length_truncated_actions": sum(t.finish_reason == "length" for t in traj.turns),
        "rollout/tokens": traj.num_tokens,
        "rollout/action_tokens": traj.num_action_tokens,
        "timing/generate_s": sum(t.timings.get("generate_s", 0.0) for t in traj.turns),
        "timing/env_s": sum(t.timings.get("env_s", 0.0) for t in traj.turns),
        "timing/episode_s": time.monotonic() - start,
        **ep.metrics,
    }
