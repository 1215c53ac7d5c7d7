"""Run many episodes concurrently (asyncio), in GRPO groups, bounded by a semaphore.

A group is `group_size` episodes of the same task: every env is reset with the group's seed (and options),
so they share the task and differ only in what the policy samples. Each episode gets its own env instance,
closed afterwards. Episodes whose termination maps to FailureAction.RETRY are run again up to `max_retries`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from agentrl.engine.protocol import Engine
from agentrl.registry import make, registered_class
from agentrl.rollout.agent_loop import LoopConfig, as_renderer, run_episode
from agentrl.rollout.seeds import member_sampling_seed
from agentrl.types import FAILURE_POLICY, FailureAction, TerminationReason, Trajectory

FAILURE_RETRIES = 1
"""Reruns of an episode that ended with a retryable failure (sandbox_error, engine_error), on every backend."""

EnvFactory = Callable[[], Any] | str
"""A zero-argument callable returning a fresh AgentEnv, or a registered env name for agentrl.make."""


def _make_env(env_factory: EnvFactory) -> Any:
    if isinstance(env_factory, str):
        return make(env_factory)
    return env_factory()


async def _close(env: Any) -> None:
    try:
        await asyncio.to_thread(env.close)
    except Exception:  # a failing close must not lose the trajectory; the env's own logs say why
        pass


async def run_member(env_factory: EnvFactory, engine: Engine | None, renderer: Any, cfg: LoopConfig, *,
                     seed: int | None, options: dict | None = None, expert: bool = False, policy: Any = None,
                     group_id: str = "", member: int = 0, max_retries: int = 0,
                     semaphore: asyncio.Semaphore | None = None) -> Trajectory:
    """One episode of a group (with retries); an env that cannot be built ends as env_error.

    Member m's attempt a samples with member_sampling_seed(seed, m, a, cfg.sampling_salt). Each attempt builds a fresh env and
    closes it afterwards; `semaphore` (if any) bounds the episodes running at once. Both backends and
    evaluation (sample m of a task is member m) run every episode through here: the local backend in this
    process, the Ray one inside a rollout worker. `policy`: run_episode's (an oracle's ScriptedPolicy).
    """
    for attempt in range(max_retries + 1):
        sampling_seed = member_sampling_seed(seed, member, attempt, cfg.sampling_salt)
        async with semaphore or contextlib.nullcontext():
            try:
                env = await asyncio.to_thread(_make_env, env_factory)
            except Exception as e:
                traj = Trajectory(id=uuid.uuid4().hex, group_id=group_id, env_id=str(env_factory), task_id="",
                                  termination=TerminationReason.ENV_ERROR,
                                  termination_detail=f"creating the env failed: {type(e).__name__}: {e}")
            else:
                try:
                    traj = await run_episode(env, engine, renderer, cfg, seed=seed, options=options, expert=expert,
                                             policy=policy, group_id=group_id, sampling_seed=sampling_seed)
                finally:
                    await _close(env)
        traj.metrics["rollout/retries"] = attempt
        if FAILURE_POLICY[traj.termination] is not FailureAction.RETRY:
            break
    return traj


async def collect_group(env_factory: EnvFactory, engine: Engine | None, tokenizer: Any, *, seed: int | None,
                        group_size: int, cfg: LoopConfig | None = None, options: dict | None = None,
                        expert: bool = False, semaphore: asyncio.Semaphore | None = None,
                        group_id: str | None = None, max_retries: int = 0) -> list[Trajectory]:
    """`group_size` concurrent episodes of one task (all envs reset with `seed`); one Trajectory each."""
    renderer = as_renderer(tokenizer)
    group_id = group_id or uuid.uuid4().hex
    semaphore = semaphore or asyncio.Semaphore(group_size)
    return list(await asyncio.gather(*(
        run_member(env_factory, engine, renderer, cfg or LoopConfig(), seed=seed, options=options, expert=expert,
                   group_id=group_id, semaphore=semaphore, max_retries=max_retries, member=m)
        for m in range(group_size))))


def summarize(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Rollout metrics over trajectories: counts per termination reason, means of reward, turns, tokens, forks,
    the graders' integrity shares, gateway rates of agent programs, and each env's own (AgentEnv.summary_metrics)."""
    n = len(trajectories)
    out: dict[str, float] = {f"termination/{r.value}": 0 for r in TerminationReason}
    out.update({f"termination/{r.value}": c for r, c in Counter(t.termination for t in trajectories).items()})
    if not n:
        return out
    out["rollout/episodes"] = n
    out["rollout/reward_mean"] = sum(t.reward for t in trajectories) / n
    for key in ("rollout/turns", "rollout/tokens", "rollout/action_tokens", "timing/episode_s"):
        out[key + "_mean"] = sum(t.metrics.get(key, 0) for t in trajectories) / n
    for key in ("rollout/forks", "rollout/format_errors", "rollout/retries", "rollout/length_truncated_actions",
                "rollout/workers_lost"):
        out[key] = sum(t.metrics.get(key, 0) for t in trajectories)
    out.update(integrity_metrics([t.reward_info or {} for t in trajectories]))
    out.update(env_summary_metrics(trajectories))
    sessions = [t.metrics for t in trajectories if "gateway/calls" in t.metrics]
    if sessions:  # episodes of agent programs (AgentEnv.agent_program): calls that re-rendered history, segments
        extendable = sum(max(m["gateway/calls"] - 1, 0) for m in sessions)
        out["gateway/prefix_mismatch_rate"] = sum(m["gateway/prefix_mismatches"] for m in sessions) / max(extendable, 1)
        out["gateway/segments_mean"] = sum(m["gateway/segments"] for m in sessions) / len(sessions)
        out["gateway/calls_mean"] = sum(m["gateway/calls"] for m in sessions) / len(sessions)
    return out


def is_graded(info: dict) -> bool:
    """The episode's reward came from a grader that reports on integrity (info carries `grading_valid` or
    `grading_reason`, as swe_lite's and swe_real's grader write): the denominator of the integrity shares."""
    return bool(info.get("grading_valid") or info.get("grading_reason"))


def is_flagged(info: dict) -> bool:
    """The grader flagged the episode: tampering found (`suspicious`) or an answer the judge refused."""
    return bool(info.get("suspicious") or info.get("grading_refused"))


def integrity_metrics(infos: Sequence[dict]) -> dict[str, float]:
    """rollout/suspicious_share and rollout/refused_share over the graded episodes' final infos (none when no
    episode was graded): the env contract's integrity keys, read the same way for every env."""
    graded = [i for i in infos if is_graded(i)]
    if not graded:
        return {}
    return {"rollout/suspicious_share": sum(bool(i.get("suspicious")) for i in graded) / len(graded),
            "rollout/refused_share": sum(bool(i.get("grading_refused")) for i in graded) / len(graded)}


def env_summary_metrics(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """What each env adds to a step's metrics (AgentEnv.summary_metrics) from its episodes' final infos; the env
    is found by the trajectories' env_id among the envs registered in this process."""
    infos: dict[str, list[dict]] = defaultdict(list)
    for t in trajectories:
        infos[t.env_id].append(t.reward_info or {})
    out: dict[str, float] = {}
    for env_id, group in infos.items():
        hook = getattr(registered_class(env_id), "summary_metrics", None)
        if callable(hook):
            out.update(hook(group))
    return out
