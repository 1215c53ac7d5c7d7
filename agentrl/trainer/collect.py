"""Collect GRPO groups for training: the one routine that fills a batch slot (with resampling), the failure
policy, DAPO dynamic sampling, reward shaping and advantages.

A step's batch has B = rollout.tasks_per_step *slots*. `collect_slot` fills slot j of step s: it runs the
group of task `task_seed(base, s, round, j)` (agentrl.rollout.seeds; round 0 may instead replay a task whose
last group had mixed success, agentrl.trainer.task_sampler) and, when the failure policy or dynamic sampling
drops it, reruns the slot with the next round's seed. Sync and overlapped training both fill slots
through it (the pipeline, pipeline.py; sync is the pipeline with zero overlap), so after a drop they draw the
same tasks, and a resumed run samples the same tasks as an uninterrupted one. Infrastructure failures
(FailureAction.MASK, or RETRY still failing after the retries) leave the batch before baselines are
computed: they never train as reward 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from agentrl.algo.advantages import AdvantageConfig, compute_advantages
from agentrl.algo.credit import credit_advantages
from agentrl.algo.metrics import Peak, merge_metrics
from agentrl.algo.shaping import dynamic_sampling_filter, overlong_penalty
from agentrl.algo.signal import group_ids, signal_metrics, success_of, varies
from agentrl.cluster import EpisodeBackend, LocalBackend
from agentrl.rollout.agent_loop import LoopConfig
from agentrl.rollout.collector import summarize
from agentrl.rollout.seeds import task_seed
from agentrl.trainer.task_sampler import GroupOutcome, SlotDraw, TaskSampler
from agentrl.types import Trajectory, scored

HOST = torch.device("cpu")
"""Rewards and advantages are per-trajectory scalars computed here on the host, before the update moves its batch
to the model's device (trainer.batch.MiniBatch.to): they never meet a device tensor."""


@dataclass
class StepBatch:
    """What the update needs from one step's rollouts."""

    trajectories: list[Trajectory]  # kept for training, grouped
    advantages: list[float]  # one per kept trajectory
    all_trajectories: list[Trajectory]  # everything collected (for metrics and samples)
    seeds: list[int]  # task seeds used, in order
    metrics: dict[str, float] = field(default_factory=dict)
    turn_advantages: list[list[float]] | None = None  # per kept trajectory, one per turn (algo.credit turn/gigpo)


def trainable(traj: Trajectory) -> bool:
    """True if the failure policy scores this trajectory (infrastructure failures are masked)."""
    return scored(traj.termination)


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
    backend: EpisodeBackend | None = None,
) -> list[list[Trajectory]]:
    """One group per seed, concurrently, without resampling (warm start, held-out evaluation, benchmarks);
    reports finished episodes. Episodes run on `backend` (the run's) or, by default, in this process with at
    most `concurrency` at once."""
    backend = backend or LocalBackend(env_factory, engine, tokenizer, concurrency=concurrency)

    async def group(seed: int) -> list[Trajectory]:
        trajs = await backend.collect_group(seed, group_size, cfg=loop_cfg, expert=expert)
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
    rewards = torch.tensor([t.reward + format_reward * format_share(t) for t in trajs], dtype=torch.float64,
                           device=HOST)
    if overlong_buffer > 0 and trajs:
        lengths = torch.tensor([t.num_action_tokens for t in trajs], dtype=torch.float64, device=HOST)
        rewards = rewards + overlong_penalty(lengths, max_len=max_len, cache_len=min(overlong_buffer, max_len))
    return rewards


def successes(trajs: list[Trajectory]) -> torch.Tensor:
    """(n,) task success per trajectory (agentrl.algo.signal.success_of: the env's flag, else its reward)."""
    return torch.tensor([success_of(t.reward_info, t.reward) for t in trajs], dtype=torch.float64, device=HOST)


def filter_values(g: list[Trajectory], cfg) -> torch.Tensor:
    """What dynamic sampling tests for zero variance (rollout.dynamic_sampling_on): the shaped rewards the
    advantages use, or task success."""
    if cfg.rollout.dynamic_sampling_on == "success":
        return successes(g)
    return shaped_rewards(g, overlong_buffer=cfg.algo.overlong_buffer, max_len=cfg.rollout.max_context_tokens,
                          format_reward=cfg.algo.format_reward)


def finish_group(group: list[Trajectory], cfg, metrics: dict[str, float]) -> list[Trajectory] | None:
    """Failure policy, then DAPO dynamic sampling on one finished group (on its rewards or its success,
    rollout.dynamic_sampling_on): its trainable members, or None if the group is dropped (zero-std counts,
    keyed by the common reward or success value, are added to metrics)."""
    g = [t for t in group if trainable(t)]
    if not g:
        return None
    if cfg.rollout.dynamic_sampling:
        f = dynamic_sampling_filter(filter_values(g, cfg), torch.zeros(len(g), dtype=torch.long, device=HOST))
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
        group_index = torch.tensor([gi for gi, g in enumerate(kept_groups) for _ in g], dtype=torch.long, device=HOST)
        rewards = shaped_rewards(
            trajs, overlong_buffer=a.overlong_buffer, max_len=r.max_context_tokens, format_reward=a.format_reward
        )
        lengths = torch.tensor([float(t.num_action_tokens) for t in trajs], dtype=torch.float64, device=HOST)
        adv = compute_advantages(
            a.advantage, rewards, group_index, AdvantageConfig(eps=a.adv_eps, alpha=a.adv_alpha), action_lengths=lengths
        )
        advantages = [float(x) for x in adv]
        metrics["rollout/reward_trained_mean"] = float(rewards.mean())
        metrics["rollout/advantage_abs_mean"] = float(adv.abs().mean())
        metrics.update(signal_metrics(successes(trajs), group_index, adv))
    scored_all = [t for t in everything if trainable(t)]
    if scored_all:  # over every sampled group, dropped ones included: how often the policy is unsure
        metrics["rollout/mixed_success_share"] = signal_metrics(
            successes(scored_all), group_ids([t.group_id for t in scored_all]))["rollout/mixed_success_share"]
    turn_adv = None
    if trajs and a.credit != "outcome":
        turn_adv, credit_metrics = credit_advantages(a, trajs, rewards.tolist(), group_index.tolist(), advantages)
        metrics.update(credit_metrics)
    return StepBatch(trajectories=trajs, advantages=advantages, all_trajectories=everything, seeds=seeds,
                     metrics=metrics, turn_advantages=turn_adv)


def resample_rounds(cfg) -> int:
    """How many times a slot may be sampled: once, plus rollout.max_resample_rounds under dynamic sampling."""
    r = cfg.rollout
    return 1 + (r.max_resample_rounds if r.dynamic_sampling else 0)


@dataclass
class SlotRollout:
    """One batch slot after resampling: its kept group (None if every round was dropped) and all it cost."""

    kept: list[Trajectory] | None = None
    everything: list[Trajectory] = field(default_factory=list)  # every episode of every round
    seeds: list[int] = field(default_factory=list)  # the task seed of each round, in order
    metrics: dict[str, float] = field(default_factory=dict)  # merged across slots by merge_metrics
    outcomes: list[GroupOutcome] = field(default_factory=list)  # per finished round, for the task sampler


def outcome(group: list[Trajectory], seed: int, *, replay: bool = False) -> GroupOutcome:
    """What the task sampler learns from a finished group: its task and whether its scored members' success
    was mixed (None with fewer than two scored members)."""
    g = [t for t in group if trainable(t)]
    task = next((t.task_id for t in group if t.task_id), "")
    mixed = bool(varies(successes(g), torch.zeros(len(g), dtype=torch.long, device=HOST), 1)[0]) if len(g) > 1 else None
    return GroupOutcome(task_id=task, seed=seed, mixed=mixed, replay=replay)


async def collect_slot(
    backend: EpisodeBackend,
    cfg,
    step: int,
    slot: int,
    *,
    timeout_s: float,
    on_round: Callable[[], None] | None = None,
    on_episode: Callable[[int], None] | None = None,
    on_resample: Callable[[int, str], None] | None = None,
    sampler: TaskSampler | None = None,
    first: SlotDraw | None = None,
) -> SlotRollout:
    """Fill slot `slot` of `step`: round k runs the group of task_seed(base, step, k, slot) until one is kept.

    With a `sampler` (agentrl.trainer.task_sampler), uniform rounds take its seeds (which skip excluded tasks),
    and round 0 runs `first` (a replay, drawn when the ticket was admitted) when given.

    on_round() is called as each round starts (the pipeline records the weights it starts under);
    timeout_s is a backstop per round (episodes have their own deadline inside the agent loop).
    on_resample(episodes, why) is called when a dropped group's slot is sampled again (the progress display
    says why a step's episode count grew).
    """
    r = cfg.rollout
    out = SlotRollout()
    rounds = resample_rounds(cfg)
    for round_ in range(rounds):
        if on_round is not None:
            on_round()
        draw = first if round_ == 0 and first is not None else SlotDraw(
            seed=sampler.uniform(step, round_, slot) if sampler is not None else task_seed(r.seed, step, round_, slot))
        seed = draw.seed
        out.seeds.append(seed)
        out.metrics["rollout/sample_rounds"] = Peak(round_ + 1)
        if draw.replay:
            out.metrics["rollout/replayed_groups"] = out.metrics.get("rollout/replayed_groups", 0) + 1
        try:
            loop_cfg = LoopConfig.from_rollout(r, sampling_salt=draw.salt)
            group = await asyncio.wait_for(backend.collect_group(seed, r.group_size, cfg=loop_cfg), timeout_s)
        except TimeoutError:
            out.metrics["pipeline/group_timeouts"] = out.metrics.get("pipeline/group_timeouts", 0) + 1
            _resampled(on_resample, round_, rounds, r.group_size, "resampled groups that timed out")
            continue
        if on_episode is not None:
            on_episode(len(group))
        out.everything += group
        out.outcomes.append(outcome(group, seed, replay=draw.replay))
        out.kept = finish_group(group, cfg, out.metrics)
        if out.kept is not None:
            break
        _resampled(on_resample, round_, rounds, r.group_size, drop_reason(group, r.dynamic_sampling_on))
    return out


def drop_reason(group: list[Trajectory], on: str = "reward") -> str:
    """Why finish_group dropped `group`, worded for the progress display when its slot is sampled again
    (`on`: rollout.dynamic_sampling_on)."""
    if not any(trainable(t) for t in group):
        return "resampled groups whose episodes were all masked"
    return f"resampled groups with equal {'success' if on == 'success' else 'rewards'} (dynamic sampling)"


def _resampled(on_resample: Callable[[int, str], None] | None, round_: int, rounds: int, group_size: int,
               why: str) -> None:
    """Report that another round of a slot follows (the episodes it adds, and why); nothing after the last."""
    if on_resample is not None and round_ + 1 < rounds:
        on_resample(group_size, why)


def merge_slots(cfg, slots: list[SlotRollout], metrics: dict[str, float] | None = None) -> StepBatch:
    """The StepBatch of a step's slots (in slot order): their metrics merged, advantages over the kept groups."""
    merged = merge_metrics([metrics or {}, *(s.metrics for s in slots)])
    kept = [s.kept for s in slots if s.kept is not None]
    everything = [t for s in slots for t in s.everything]
    seeds = [x for s in slots for x in s.seeds]
    return assemble_batch(cfg, kept, everything, seeds, merged)
