"""The multi-turn agent loop: one episode of env ↔ model, recorded token-in/token-out as a Trajectory.

1. Render the env's first messages with the chat template once; generate; append the sampled ids verbatim
   (loss_mask 1, behaviour logprobs, versions).
2. Call `env.step` with the action text; append the observation delta (loss_mask 0), forking a new segment
   if the template drifted (chat.Conversation).
3. Repeat until terminated, truncated or a budget runs out. Every ending raises a small `_End` carrying a
   TerminationReason; `finally` records segments, reward and metrics, so a trajectory always comes back.

With expert=True the action text comes from `env.expert_action()` instead of the engine, tokenized as the
model would have to sample it (content + end-of-turn; logprob 0.0, version -1) and held to the same
max_new_tokens budget: the supervised warm start.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from agentrl.config import RolloutConfig
from agentrl.errors import SandboxError
from agentrl.rollout.chat import ChatRenderer, Conversation
from agentrl.rollout.engine import Engine, Generation, SamplingParams
from agentrl.types import TerminationReason as TR
from agentrl.types import Trajectory, Turn


def _default(key: str) -> Any:
    """The default of rollout.<key>: RolloutConfig is the one home of every episode budget's default."""
    return RolloutConfig.model_fields[key].default


@dataclass
class LoopConfig:
    """Budgets and sampling for one episode (defaults: those of the rollout config section)."""

    max_turns: int = _default("max_turns")
    """Actions per episode before it ends as max_turns."""
    max_context_tokens: int = _default("max_context_tokens")
    """Tokens in the sequence sent to the engine (prompt + all turns) before it ends as max_tokens."""
    max_new_tokens: int = _default("max_new_tokens")
    """Sampled tokens per turn (less when the context budget has less room)."""
    timeout_s: float = _default("episode_timeout_s")
    """Wall-clock seconds per episode (reset, generation and env steps) before it ends as timeout."""
    max_format_errors: int = 3
    """Consecutive steps with info["format_error"] before the episode ends as format_errors."""
    temperature: float = _default("temperature")
    top_p: float = _default("top_p")
    top_k: int = _default("top_k")


class _End(Exception):
    """Ends an episode with a reason (and its detail in words, kept as Trajectory.termination_detail)."""

    def __init__(self, reason: TR, detail: str = ""):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


async def _guard(make_awaitable, deadline: float, failure: TR) -> Any:
    """Await with the episode's deadline; map exceptions to an _End with `failure` (or timeout/sandbox_error)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _End(TR.TIMEOUT, "episode wall-clock budget spent")
    try:
        return await asyncio.wait_for(make_awaitable(), remaining)
    except _End:
        raise
    except TimeoutError as e:
        if time.monotonic() >= deadline:
            raise _End(TR.TIMEOUT, "episode wall-clock budget spent") from None
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


def turn_seed(sampling_seed: int, turn: int) -> int:
    """The sampling seed of one turn: a stable 31-bit mix of the episode's seed and the turn number."""
    return (sampling_seed * 1_000_003 + turn * 7_919 + 1) & 0x7FFFFFFF


def as_renderer(tokenizer: Any) -> ChatRenderer:
    """A ChatRenderer for a tokenizer (passed through if it already is one)."""
    return tokenizer if isinstance(tokenizer, ChatRenderer) else ChatRenderer(tokenizer)


async def run_episode(env, engine: Engine | None, tokenizer: Any, cfg: LoopConfig | None = None, *,
                      seed: int | None = None, options: dict | None = None, expert: bool = False,
                      group_id: str = "", trajectory_id: str | None = None,
                      sampling_seed: int | None = None) -> Trajectory:
    """Run one episode and return its Trajectory; env, engine and budget failures end it, never raise.

    `tokenizer` may be a ChatRenderer (to reuse one, or to use another chat template). With expert=True the
    engine is not used (may be None) and actions come from env.expert_action(). With `sampling_seed`, turn k
    samples with seed hash(sampling_seed, k), so an episode's samples do not depend on request scheduling
    (resumed runs reproduce them); without it the engine picks seeds.
    """
    cfg, renderer = cfg or LoopConfig(), as_renderer(tokenizer)
    spec = getattr(env, "spec", None)
    traj = Trajectory(id=trajectory_id or uuid.uuid4().hex, group_id=group_id,
                      env_id=spec.id if spec else type(env).__name__, task_id="", expert=expert)
    sampling = SamplingParams(temperature=cfg.temperature, top_p=cfg.top_p, top_k=cfg.top_k,
                              stop_token_ids=renderer.stop_token_ids)
    start = time.monotonic()
    deadline = start + cfg.timeout_s
    if engine is None and not expert:
        raise ValueError("run_episode needs an engine unless expert=True")
    conv, reward, info = None, 0.0, {}
    errors_in_row = format_errors = 0
    try:
        messages, info = await _guard(lambda: _reset(env, seed, options), deadline, TR.ENV_ERROR)
        traj.task_id = str(info.get("task_id", ""))
        conv = Conversation(renderer, messages)
        for _ in range(cfg.max_turns):
            room = cfg.max_context_tokens - len(conv.current)
            if room <= 0:
                raise _End(TR.MAX_TOKENS, "no room left to generate")
            t0 = time.monotonic()
            budget = min(cfg.max_new_tokens, room)
            if expert:
                text = await _guard(lambda: asyncio.to_thread(env.expert_action), deadline, TR.ENV_ERROR)
                if not isinstance(text, str):
                    raise _End(TR.ENV_ERROR, f"expert_action() returned {text!r}")
                ids = renderer.action_ids(text)
                # The expert gets the policy's budget: a demonstration the policy could not emit is cut the
                # same way (finish_reason "length"), so the warm start never teaches an unreachable action.
                cut = len(ids) > budget
                ids = ids[:budget] if cut else ids
                gen = Generation(ids, [0.0] * len(ids), "length" if cut else "stop", [-1] * len(ids))
            else:
                sampling.max_new_tokens = budget
                if sampling_seed is not None:
                    sampling.seed = turn_seed(sampling_seed, len(traj.turns))
                gen = await _guard(lambda: engine.generate(conv.prompt_ids, sampling, session_id=traj.id),
                                   deadline, TR.ENGINE_ERROR)
                if gen.finish_reason == "abort":
                    raise _End(TR.ENGINE_ERROR, "generation aborted")
            t1 = time.monotonic()
            text, span = conv.append_action(gen.output_ids, gen.logprobs, gen.versions)
            turn = Turn(segment=len(conv.segments) - 1, action_span=span, observation_span=(span[1], span[1]),
                        action_text=text, finish_reason=gen.finish_reason, timings={"generate_s": t1 - t0})
            traj.turns.append(turn)  # recorded before the step, so an env crash keeps the action's turn
            env.last_action_truncated = gen.finish_reason == "length"
            obs, r, terminated, truncated, info = await _guard(lambda text=text: _step(env, text), deadline, TR.ENV_ERROR)
            reward += r
            turn.observation_text = "\n".join(m["content"] for m in obs)
            turn.timings["env_s"] = time.monotonic() - t1
            format_errors += bool(info.get("format_error"))
            errors_in_row = errors_in_row + 1 if info.get("format_error") else 0
            if terminated or truncated:
                raise _End(_ending(info, terminated))
            if errors_in_row >= cfg.max_format_errors:
                raise _End(TR.FORMAT_ERRORS, f"{errors_in_row} format errors in a row")
            obs_ids = conv.observation_ids(obs)
            if len(conv.current) + len(obs_ids) >= cfg.max_context_tokens:
                raise _End(TR.MAX_TOKENS, "the next observation does not fit the context budget")
            turn.observation_span = conv.append_observation(obs, obs_ids)
        raise _End(TR.MAX_TURNS)
    except _End as end:
        traj.termination, traj.termination_detail = end.reason, end.detail
    finally:
        traj.segments = conv.segments if conv else []
        traj.reward, traj.reward_info = reward, _json_safe(info)
        traj.metrics = {
            "rollout/turns": len(traj.turns),
            "rollout/forks": conv.forks if conv else 0,
            "rollout/format_errors": format_errors,
            "rollout/length_truncated_actions": sum(t.finish_reason == "length" for t in traj.turns),
            "rollout/tokens": traj.num_tokens,
            "rollout/action_tokens": traj.num_action_tokens,
            "timing/generate_s": sum(t.timings["generate_s"] for t in traj.turns),
            "timing/env_s": sum(t.timings.get("env_s", 0.0) for t in traj.turns),
            "timing/episode_s": time.monotonic() - start,
        }
    return traj
