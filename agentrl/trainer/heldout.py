"""Held-out evaluation during training: the policy's mean reward on tasks it never trains on.

Held-out task seeds live in their own namespace (step −2), disjoint from training and warm-start seeds, and
the env is built with `env.eval_kwargs` over `env.kwargs` (e.g. a dev split). Decoding is greedy by default,
so the number moves only when the policy does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import partial

from agentrl.trainer.collect import loop_config, run_groups, task_seed, trainable


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


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (sound at 0 and 1, unlike the normal approximation)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At p = 0 or 1 the bound is exactly p; rounding can land a hair inside it, so keep p in the interval.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


async def evaluate(cfg, engine, tokenizer, episodes: int, *, temperature: float = 0.0, on_episode=None) -> HeldOut:
    """Run `episodes` held-out episodes (one per task) and summarize their rewards."""
    from agentrl.registry import make

    r = cfg.rollout
    factory = partial(make, cfg.env.name, **{**cfg.env.kwargs, **cfg.env.eval_kwargs})
    loop_cfg = replace(loop_config(cfg), temperature=temperature, top_p=1.0, top_k=-1)
    seeds = [task_seed(r.seed, -2, 0, i) for i in range(episodes)]
    groups = await run_groups(factory, engine, tokenizer, seeds, group_size=1, loop_cfg=loop_cfg,
                              concurrency=r.concurrency, on_episode=on_episode)
    per_task = {seed: min(max(t.reward, 0.0), 1.0) for seed, g in zip(seeds, groups, strict=True) for t in g
                if trainable(t)}
    total = sum(per_task.values())
    low, high = wilson(total, len(per_task))
    return HeldOut(mean=total / max(len(per_task), 1), low=low, high=high, n=len(per_task),
                   masked=len(seeds) - len(per_task), per_task=per_task)


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
