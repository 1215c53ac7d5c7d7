"""Held-out resolved rate of a model on swe_lite, one greedy episode per task at a given level.

Used by bench/learn_swe.py and `make demo` (scripts/demo_swe.py). Unlike the loop's seeded held-out sampling,
every eligible task of the held-out splits is run exactly once, so two models (or checkpoints) are compared
task by task (agentrl.evaluation.paired_sign_test) on the same tasks. It is the generic evaluator
(agentrl.evaluation.run_episodes) with swe_lite's hook and the training run's episode budget, greedy.
"Resolved" is the grader's verdict (all hidden F2P and P2P tests pass), never a shaped reward; an episode the
loop's own budget ended is graded as it stands, as in `agentrl eval`.
"""

from __future__ import annotations

import asyncio
from functools import partial
from itertools import zip_longest

from agentrl.envs.swe_lite.tasks import Task, load_any

from agentrl.evaluation import HeldOut

EVAL_WALL_CLOCK_S = 6 * 3600.0
"""Episode wall-clock budget of a held-out evaluation: a backstop only (see resolved_rate)."""


def held_out_tasks(split: str = "test", level: int = 0, limit: int | None = None, tasks=None,
                   snapshots=None, pool: list[Task] | None = None) -> list[Task]:
    """The tasks of `split` offered at `level` (level 0: one-line fixes), in file order; with `limit`, at most that
    many, taken round-robin over repos (one task of each repo in turn) so a small sample spans the held-out
    modules instead of the first one or two (16 tasks per module in the bundled corpus). `pool`: the tasks to
    choose from (another corpus's split, e.g. swe_real's); by default swe_lite's `split` (or `tasks`/`snapshots`)."""
    if pool is None:
        pool = load_any(tasks, snapshots, split)
    chosen = [t for t in pool if t.difficulty <= level]
    if not limit or limit >= len(chosen):
        return chosen
    by_repo: dict[str, list[Task]] = {}
    for t in chosen:
        by_repo.setdefault(t.repo, []).append(t)
    spread = [t for round_ in zip_longest(*by_repo.values()) for t in round_ if t is not None]
    return spread[:limit]


async def resolved_rate(cfg, engine, tokenizer, tasks: list[Task], level: int, *, concurrency: int | None = None,
                        on_episode=None, episodes_path=None) -> HeldOut:
    """Greedy episodes of `engine`, one per task at `level`; HeldOut keyed by task index (resolved = 1.0).

    With `episodes_path`, every episode is written there as readable text (task, verdict, the whole exchange):
    what the model actually did, for reading a rate of 0 as format errors, wrong edits or wrong fixes."""
    from agentrl.envs.swe_lite.evaluation import SweLiteEvalHook, eval_task

    from agentrl.evaluation import EvalConfig, held_out, run_episodes
    from agentrl.registry import make
    from agentrl.rollout.agent_loop import LoopConfig

    # Every task is admitted at once, so an episode also waits for the other episodes' prefill and decode: a
    # wall-clock budget (the loop's episode_timeout_s, the env's wall_clock_s) would count that queueing against
    # the model. Episodes stay bounded by max_turns × max_new_tokens and the env's per-command timeouts.
    kwargs = {**cfg.env.kwargs, **cfg.env.eval_kwargs, "level": level, "shaped_reward": False,
              "wall_clock_s": EVAL_WALL_CLOCK_S, "tasks": tasks}
    kwargs.pop("split", None)
    kwargs.pop("curriculum", None)
    job = EvalConfig(env=cfg.env.name, split=None, model="benchmark", transcripts=episodes_path is not None,
                     concurrency=concurrency or cfg.rollout.concurrency)
    loop_cfg = LoopConfig.from_rollout(cfg.rollout, temperature=0.0, top_p=1.0, top_k=-1, episode_timeout_s=EVAL_WALL_CLOCK_S,
                                       grade_at_budget=True)
    index = {t.instance_id: i for i, t in enumerate(tasks)}
    records = await run_episodes(job, [eval_task(t) for t in tasks], partial(make, cfg.env.name, **kwargs), engine,
                                 tokenizer, loop_cfg, hook=SweLiteEvalHook(),
                                 on_record=(lambda rec: on_episode(1)) if on_episode else None)
    records.sort(key=lambda rec: index[rec["instance_id"]])
    if episodes_path is not None:
        write_episodes(episodes_path, records, level)
    return held_out(records, key=lambda rec: index[rec["instance_id"]], score=lambda rec: rec["resolved"])


def write_episodes(path, records: list[dict], level: int) -> None:
    """Every episode as readable text: task, verdict, ending, then what the model wrote and the env answered."""
    with open(path, "w") as f:
        for rec in records:
            f.write(f"{rec['instance_id']}  level {level}  resolved={rec['resolved']}  "
                    f"termination={rec['termination']}  scored={not rec['infra_error']}\n")
            for row in rec.get("transcript") or []:
                f.write(f"--- {row['role']}\n{row['content'][:6000]}\n")
            f.write("=" * 100 + "\n")


def evaluate_model(cfg, model_name: str, tasks: list[Task], level: int, *, label: str = "",
                   episodes_path=None) -> HeldOut:
    """resolved_rate of a model (a name or a checkpoint's model directory) on its own embedded engine.

    With `label`, prints one progress line per finished episode (an evaluation takes minutes on a CPU)."""
    from agentrl.sandboxes import reaper

    from agentrl.engine.build import build_engine
    from agentrl.models import load_tokenizer

    reaper.install_sigterm_hook()
    tokenizer = load_tokenizer(model_name)

    async def go():
        # fp32 and seed 0 whatever the preset says: the benchmark's figures were all measured that way
        engine = build_engine(_engine_config(cfg, model_name), tokenizer=tokenizer, seed=0)
        try:
            done = 0

            def progress(n: int) -> None:
                nonlocal done
                done += n
                print(f"  {label} level {level}: {done}/{len(tasks)} held-out episodes", flush=True)

            # every task at once: the engine batches their decode steps (a batch of 12 costs far less than 3 of 4
            # on a CPU), and greedy episodes do not depend on what runs beside them beyond kernel rounding
            return await resolved_rate(cfg, engine, tokenizer, tasks, level, concurrency=max(1, len(tasks)),
                                       on_episode=progress if label else None, episodes_path=episodes_path)
        finally:
            await engine.close()

    return asyncio.run(go())


def _engine_config(cfg, model_name: str):
    """cfg with `model_name` as the model and an fp32 embedded engine (the benchmark's fixed evaluation engine)."""
    rollout = cfg.rollout.model_copy(update={"engine": "embedded", "urls": [], "engine_dtype": "float32"})
    return cfg.model_copy(update={"model": cfg.model.model_copy(update={"name": model_name}), "rollout": rollout})
