"""Held-out evaluation during training: the policy's mean reward on tasks it never trains on.

A thin wrapper over the one evaluator (agentrl.evaluation): the same agent loop, env hook, records and
summary as `agentrl eval`, so `agentrl eval --env ENV --task-seed <rollout.seed> --num-tasks N` scores the
same tasks. Held-out task seeds live in their own namespace (agentrl.rollout.seeds.heldout_seed), disjoint
from training and warm-start seeds; the env is built with `env.eval_kwargs` over `env.kwargs` (e.g. a dev
split) and episodes have the training budget (rollout.*). Decoding is greedy by default, so the number moves
only when the policy does.
"""

from __future__ import annotations

from functools import partial

from agentrl.evaluation import (
    EvalConfig,
    EvalHook,
    HeldOut,
    held_out,
    hook_for,
    paired_sign_test,
    run_episodes,
    wilson,
)
from agentrl.rollout.agent_loop import LoopConfig

__all__ = ["HeldOut", "evaluate", "paired_sign_test", "wilson"]


async def evaluate(cfg, engine, tokenizer, episodes: int, *, temperature: float = 0.0, on_episode=None) -> HeldOut:
    """Run `episodes` held-out episodes (one per task) with the shared evaluator and summarize their rewards."""
    from agentrl.registry import make

    r = cfg.rollout
    job = EvalConfig(env=cfg.env.name, samples=1, concurrency=r.concurrency, num_tasks=episodes, seed=r.seed,
                     model="policy", transcripts=False, split=None)
    tasks = EvalHook().tasks(job)  # seed tasks in the held-out namespace, whatever the env
    factory = partial(make, cfg.env.name, **{**cfg.env.kwargs, **cfg.env.eval_kwargs})
    loop_cfg = LoopConfig.from_rollout(r, temperature=temperature, top_p=1.0, top_k=-1, grade_at_budget=True)
    hook = hook_for(cfg.env.name)
    try:
        records = await run_episodes(job, tasks, factory, engine, tokenizer, loop_cfg, hook=hook,
                                     on_record=(lambda rec: on_episode(1)) if on_episode else None)
    finally:
        hook.close()
    return held_out(records)
