"""Collect one training step's groups: sample tasks, run G episodes each, apply the failure policy and
DAPO dynamic sampling, shape rewards and compute advantages.

Task seeds depend only on (base seed, step, round, slot), so a resumed run samples the same tasks as an
uninterrupted one. Infrastructure failures (FailureAction.MASK, or RETRY still failing after the retries)
leave the batch before baselines are computed: they never train as reward 0.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from agentrl.cluster import LocalRollouts, Rollouts
from agentrl.rollout.agent_loop import LoopConfig
from agentrl.rollout.collector import summarize
from agentrl.trainer.advantages import AdvantageConfig, compute_advantages
from agentrl.trainer.shaping import dynamic_sampling_filter, overlong_penalty
from agentrl.types import FAILURE_POLICY, FailureAction, Trajectory


def task_seed(base: int, step: int, round_: int, slot: int) -> int:
    """A stable 31-bit seed for task `slot` of resample round `round_` at `step`."""
    digest = hashlib.sha256(f"{base}/{step}/{round_}/{slot}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


@dataclass
class StepBatch:
    """What the update needs from one step's rollouts."""

    trajectories: list[Trajectory]  # kept for training, grouped
    advantages: list[float]  # one per kept trajectory
    all_trajectories: list[Trajectory]  # everything collected (for metrics and samples)
    seeds: list[int]  # task seeds used, in order
    metrics: dict[str, float] = field(default_factory=dict)


def trainable(traj: Trajectory) -> bool:
    """True if the failure policy scores this trajectory (infrastructure failures are masked)."""
    return FAILURE_POLICY[traj.termination] is FailureAction.SCORE


async def run_groups(
    env_factory: Callable,
    engine,
    tokenizer,
    seeds: list[int],
    *,
    group_size: int,
    loop_cfg: LoopConfig,
    concurrency: int,
    expert: bool = False,
    on_episode: Callable[[int], None] | None = None,
    rollouts: Rollouts | None = None,
) -> list[list[Trajectory]]:
    """One group per seed, concurrently; reports finished episodes. Episodes run on `rollouts` (the run's
    backend) or, by default, in this process with at most `concurrency` at once."""
    rollouts = rollouts or LocalRollouts(env_factory, engine, tokenizer, concurrency=concurrency)

    async def group(seed: int) -> list[Trajectory]:
        trajs = await rollouts.collect_group(seed, group_size, cfg=loop_cfg, expert=expert)
        if on_episode is not None:
            on_episode(len(trajs))
        return trajs

    return list(await asyncio.gather(*(group(s) for s in seeds)))


def format_share(traj: Trajectory) -> float:
    """Share of an episode's turns whose action parsed as a tool call (0 for an episode with no turns)."""
    turns = traj.metrics.get("rollout/turns", 0)
    return 1.0 - traj.metrics.get("rollout/format_errors", 0) / turns if turns else 0.0


def shaped_rewards(
    trajs: list[Trajectory], *, overlong_buffer: int, max_len: int, format_reward: float = 0.0
) -> torch.Tensor:
    """Rewards (n,) plus the format term and DAPO overlong shaping on action tokens when enabled."""
    rewards = torch.tensor([t.reward + format_reward * format_share(t) for t in trajs], dtype=torch.float64)
    if overlong_buffer > 0 and trajs:
        lengths = torch.tensor([t.num_action_tokens for t in trajs], dtype=torch.float64)
        rewards = rewards + overlong_penalty(lengths, max_len=max_len, cache_len=min(overlong_buffer, max_len))
    return rewards


def loop_config(cfg) -> LoopConfig:
    """The agent-loop limits and sampling parameters of training rollouts."""
    r = cfg.rollout
    return LoopConfig(
        max_turns=r.max_turns, max_context_tokens=r.max_context_tokens, max_new_tokens=r.max_new_tokens,
        timeout_s=r.episode_timeout_s, temperature=r.temperature, top_p=r.top_p, top_k=r.top_k,
    )


def finish_group(group: list[Trajectory], cfg, metrics: dict[str, float]) -> list[Trajectory] | None:
    """Failure policy, then DAPO dynamic sampling on one finished group: its trainable members, or None if
    the group is dropped (zero-std counts are added to metrics)."""
    g = [t for t in group if trainable(t)]
    if not g:
        return None
    if cfg.rollout.dynamic_sampling:
        rewards = shaped_rewards(
            g, overlong_buffer=cfg.algo.overlong_buffer, max_len=cfg.rollout.max_context_tokens,
            format_reward=cfg.algo.format_reward,
        )
        f = dynamic_sampling_filter(rewards, torch.zeros(len(g), dtype=torch.long))
        for k, v in f.metrics.items():
            if k.startswith("rollout/zero_std_count_"):
                metrics[k] = metrics.get(k, 0.0) + v
        if not bool(f.keep_group[0]):
            return None
    return g


def assemble_batch(
    cfg, kept_groups: list[list[Trajectory]], everything: list[Trajectory], seeds: list[int], metrics: dict[str, float]
) -> StepBatch:
    """Rollout metrics and group-relative advantages over the kept groups → the StepBatch the update trains on."""
    r, a = cfg.rollout, cfg.algo
    trajs = [t for g in kept_groups for t in g]
    metrics.update(summarize(everything))
    metrics["rollout/groups_kept"] = len(kept_groups)
    metrics["rollout/groups_sampled"] = len(seeds)
    metrics["rollout/zero_std_frac"] = 1.0 - len(kept_groups) / max(len(seeds), 1)
    metrics["rollout/masked_episodes"] = sum(not trainable(t) for t in everything)
    metrics["rollout/format_ok_share"] = sum(format_share(t) for t in everything) / max(len(everything), 1)
    metrics["rollout/truncation_rate"] = sum(t.termination.value in ("max_tokens", "max_turns") for t in everything) / max(
        len(everything), 1
    )
    advantages: list[float] = []
    if trajs:
        group_index = torch.tensor([gi for gi, g in enumerate(kept_groups) for _ in g], dtype=torch.long)
        rewards = shaped_rewards(
            trajs, overlong_buffer=a.overlong_buffer, max_len=r.max_context_tokens, format_reward=a.format_reward
        )
        lengths = torch.tensor([float(t.num_action_tokens) for t in trajs], dtype=torch.float64)
        adv = compute_advantages(
            a.advantage, rewards, group_index, AdvantageConfig(eps=a.adv_eps, alpha=a.adv_alpha), action_lengths=lengths
        )
        advantages = [float(x) for x in adv]
        metrics["rollout/reward_trained_mean"] = float(rewards.mean())
        metrics["rollout/advantage_abs_mean"] = float(adv.abs().mean())
    return StepBatch(trajectories=trajs, advantages=advantages, all_trajectories=everything, seeds=seeds, metrics=metrics)


async def collect_step(
    cfg,
    env_factory: Callable,
    engine,
    tokenizer,
    step: int,
    *,
    on_episode: Callable[[int], None] | None = None,
    rollouts: Rollouts | None = None,
) -> StepBatch:
    """Sample tasks for `step`, roll out groups (on `rollouts`, by default in this process), filter, resample
    to fill the batch, compute advantages."""
    r = cfg.rollout
    kept_groups: list[list[Trajectory]] = []
    everything: list[Trajectory] = []
    seeds: list[int] = []
    metrics: dict[str, float] = {}
    for round_ in range(1 + (r.max_resample_rounds if r.dynamic_sampling else 0)):
        need = r.tasks_per_step - len(kept_groups)
        if need <= 0:
            break
        round_seeds = [task_seed(r.seed, step, round_, i) for i in range(need)]
        seeds += round_seeds
        groups = await run_groups(
            env_factory, engine, tokenizer, round_seeds, group_size=r.group_size, loop_cfg=loop_config(cfg),
            concurrency=r.concurrency, on_episode=on_episode, rollouts=rollouts,
        )
        for g in groups:
            everything += g
            kept = finish_group(g, cfg, metrics)
            if kept is not None:
                kept_groups.append(kept)
        metrics["rollout/sample_rounds"] = round_ + 1
    return assemble_batch(cfg, kept_groups[: r.tasks_per_step], everything, seeds, metrics)
