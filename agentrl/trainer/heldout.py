"""Held-out evaluation during training: the policy's mean reward on tasks it never trains on.

A thin wrapper over the one evaluator (agentrl.evaluation): the same episode runner, env hook, records and
summary as `agentrl eval`, so `agentrl eval --env ENV --task-seed <rollout.seed> --num-tasks N` scores the
same tasks. Held-out task seeds live in their own namespace (step −2), disjoint from training and warm-start
seeds, and the env is built with `env.eval_kwargs` over `env.kwargs` (e.g. a dev split). Decoding is greedy by
default, so the number moves only when the policy does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import partial

from agentrl.evaluation import EvalConfig, EvalHook, hook_for, run_episodes, summarize, wilson

__all__ = ["HeldOut", "evaluate", "paired_sign_test", "wilson"]


@dataclass
class HeldOut:
    """Accuracy-style summary with a 95% Wilson interval (rewards in [0, 1])."""

    mean: float
    low: float
    high: float
    n: int
    masked: int
    per_task: dict[int, float] = field(default_factory=dict, repr=False)
    """Clipped reward of each scored episode by task seed: two evaluations of one config pair up by seed."""

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}] (n={self.n})"


async def evaluate(cfg, engine, tokenizer, episodes: int, *, temperature: float = 0.0, on_episode=None) -> HeldOut:
    """Run `episodes` held-out episodes (one per task) with the shared evaluator and summarize their rewards."""
    from agentrl.registry import make
    from agentrl.trainer.collect import loop_config

    r = cfg.rollout
    job = EvalConfig(env=cfg.env.name, samples=1, concurrency=r.concurrency, num_tasks=episodes, seed=r.seed,
                     model="policy", transcripts=False, wall_clock_s=r.episode_timeout_s, split=None)
    tasks = EvalHook().tasks(job)  # seed tasks in the held-out namespace, whatever the env
    factory = partial(make, cfg.env.name, **{**cfg.env.kwargs, **cfg.env.eval_kwargs})
    loop_cfg = replace(loop_config(cfg), temperature=temperature, top_p=1.0, top_k=-1)
    hook = hook_for(cfg.env.name)
    try:
        records = await run_episodes(job, tasks, factory, engine, tokenizer, loop_cfg, hook=hook,
                                     on_record=(lambda rec: on_episode(1)) if on_episode else None)
    finally:
        hook.close()
    summary = summarize(records, 1)
    per_task = {rec["seed"]: min(max(rec["reward"], 0.0), 1.0) for rec in records if not rec["infra_error"]}
    return HeldOut(mean=summary["reward_mean"], low=summary["reward_low95"], high=summary["reward_high95"],
                   n=summary["scored"], masked=summary["infra_errors"], per_task=per_task)


def paired_sign_test(before: HeldOut, after: HeldOut) -> tuple[int, int, float]:
    """(tasks only `after` solves, tasks only `before` solves, exact two-sided p-value) over the tasks both
    scored: McNemar's exact test on the discordant pairs, sharper than comparing two intervals because each
    task is its own control. A task counts as solved at reward ≥ 0.5."""
    common = before.per_task.keys() & after.per_task.keys()
    gained = sum(after.per_task[s] >= 0.5 > before.per_task[s] for s in common)
    lost = sum(before.per_task[s] >= 0.5 > after.per_task[s] for s in common)
    n, k = gained + lost, min(gained, lost)
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n) if n else 1.0
    return gained, lost, p
