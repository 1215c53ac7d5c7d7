"""Evaluation of any env: K samples of every task, N at a time, one JSON line per episode, one summary.

    agentrl eval --env calc --model tiny --num-tasks 20 --out calc.jsonl
    agentrl eval --env swe_lite --model smollm2-135m-instruct --split dev --samples 4 --out r.jsonl

The same evaluator serves `agentrl eval` and the training loop's held-out evaluation
(`agentrl.trainer.heldout.evaluate` is a thin wrapper). The core knows nothing of any env: an env may bring an
*evaluation hook* (an `EvalHook`, named in the registry or as the env class's `eval_hook` attribute,
"module:object") that lists its tasks, adds constructor kwargs, implements oracles and grades an episode the
agent loop ended on its own budget. Without one, tasks are reset seeds and an episode's reward is its score.

Each finished episode is appended to `out` at once (flushed), so an interrupted job loses nothing it finished;
re-running the same command skips every (instance_id, sample) already scored there. Infrastructure failures (a
dead sandbox, an engine error) are recorded with infra_error=True, left out of the rates, and run again by the
next rerun. Fields a hook did not grade are null, never 0. Each record keeps the transcript of what the
model wrote and what the env answered.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrl.errors import AgentRLError

INFRA_TERMINATIONS = ("sandbox_error", "env_error", "engine_error")
HELDOUT_STEP = -2
"""Task-seed namespace of held-out tasks (disjoint from training seeds, see trainer.collect.task_seed)."""


@dataclass
class EvalTask:
    """One task to evaluate: its id in records, the reset seed and reset options."""

    id: str
    seed: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    split: str | None = None


@dataclass
class EvalConfig:
    """One evaluation job."""

    env: str = "swe_lite"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    out: str = "results.jsonl"
    """JSONL file of episode records; appended to and resumed from."""
    split: str | None = "test"
    samples: int = 1
    """Episodes per task (pass@k needs k <= samples)."""
    concurrency: int = 1
    oracle: str | None = None
    """None: the model acts; else an oracle of the env's hook ("expert" for any env with a scripted expert)."""
    model: str = ""
    """Label of the policy (model name or server URL), stored in every record."""
    tasks_path: str | None = None
    snapshots: str | None = None
    limit: int | None = None
    """Only the first `limit` tasks."""
    num_tasks: int = 20
    """Seed tasks of an env without a task list."""
    seed: int = 0
    """Base of the task seeds (the training config's rollout.seed: the same tasks as in-loop held-out)."""
    backend: str = "auto"
    max_turns: int = 30
    max_new_tokens: int = 384
    max_context_tokens: int = 8192
    temperature: float = 0.7
    wall_clock_s: float = 600.0
    """Seconds per episode, generation included; the loop stops at the deadline and the hook grades what stands."""
    transcripts: bool = True


class EvalHook:
    """An env's evaluation specifics. This default fits any env: tasks are seeds, the reward is the score."""

    oracles: tuple[str, ...] = ("expert",)

    def tasks(self, job: EvalConfig) -> list[EvalTask]:
        """The job's tasks: `num_tasks` held-out seeds (the same ones the training loop's held-out eval uses)."""
        from agentrl.trainer.collect import task_seed

        seeds = [task_seed(job.seed, HELDOUT_STEP, 0, i) for i in range(job.num_tasks)]
        return [EvalTask(id=f"seed-{s}", seed=s) for s in seeds][: job.limit]

    def env_kwargs(self, job: EvalConfig, tasks: list[EvalTask]) -> dict[str, Any]:
        """Constructor kwargs the hook adds to job.env_kwargs (e.g. the task list, a sandbox pool)."""
        return {}

    async def oracle(self, env, task: EvalTask, kind: str, sample: int) -> dict[str, Any]:
        """Run oracle `kind` ("expert": the env's scripted expert, no model); returns {"reward", "termination",
        "turns", "info", "transcript"}."""
        return await asyncio.to_thread(_expert_episode, env, task)

    def finish(self, env, termination: str) -> dict[str, Any] | None:
        """Grade an episode the agent loop ended on its own budget (None: nothing to grade beyond the reward)."""
        return None

    def close(self) -> None:
        """Release what the hook holds (sandbox pools)."""


def _expert_episode(env, task: EvalTask, max_turns: int = 200) -> dict[str, Any]:
    """The env's scripted expert acting until the episode ends (checks an env's reward path without a model)."""
    env.reset(seed=task.seed, options=task.options or None)
    rows, reward, info, termination, turns = [], 0.0, {}, "max_turns", 0
    for turns in range(1, max_turns + 1):  # noqa: B007 - the count is returned
        action = env.expert_action()
        if action is None:
            raise AgentRLError(f"env {type(env).__name__} has no scripted expert (expert_action() is None)")
        obs, reward, terminated, truncated, info = env.step(action)
        rows.append({"role": "assistant", "content": action})
        rows += [{"role": "env", "content": str(m.get("content", ""))} for m in obs]
        if terminated or truncated:
            termination = info.get("termination", "done" if terminated else "max_turns")
            break
    return {"reward": float(reward), "termination": termination, "turns": turns, "info": dict(info),
            "transcript": rows}


def hook_for(env_name: str) -> EvalHook:
    """The evaluation hook of a registered env: from the registry, else the class's `eval_hook`, else the default."""
    from agentrl.registry import env_class, eval_hook_ref, load_object

    ref = eval_hook_ref(env_name) or getattr(env_class(env_name), "eval_hook", None)
    if ref is None:
        return EvalHook()
    hook = load_object(ref) if isinstance(ref, str) else ref
    return hook() if isinstance(hook, type) else hook


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k) for n samples of which c are correct."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


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


def load_done(path: str | os.PathLike) -> dict[tuple[str, int], dict]:
    """Scored episodes of an earlier run by (instance_id, sample); infra errors are left out so a rerun retries
    them, later lines win, and a torn last line is cut off the file."""
    path = Path(path)
    if not path.exists():
        return {}
    done: dict[tuple[str, int], dict] = {}
    raw = path.read_bytes()
    good = 0
    for line in raw.splitlines(keepends=True):
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            break  # an interrupted write: drop it and everything after
        if not line.endswith(b"\n"):
            break
        key = (rec["instance_id"], int(rec["sample"]))
        if rec.get("infra_error"):
            done.pop(key, None)
        else:
            done[key] = rec
        good += len(line)
    if good != len(raw):
        with open(path, "r+b") as f:
            f.truncate(good)
    return done


def summarize(records: list[dict], samples: int) -> dict[str, Any]:
    """Resolved rate, mean reward with its 95% Wilson interval, pass@1 and pass@k, turns, format errors, infra."""
    scored = [r for r in records if not r.get("infra_error")]
    by_task: dict[str, list[dict]] = defaultdict(list)
    for r in scored:
        by_task[r["instance_id"]].append(r)
    turns = sum(r.get("turns", 0) for r in scored)
    clipped = sum(min(max(float(r.get("reward") or 0.0), 0.0), 1.0) for r in scored)
    low, high = wilson(clipped, len(scored))
    out: dict[str, Any] = {
        "episodes": len(records), "tasks": len({r["instance_id"] for r in records}), "scored": len(scored),
        "resolved_rate": sum(bool(r["resolved"]) for r in scored) / len(scored) if scored else 0.0,
        "reward_mean": clipped / len(scored) if scored else 0.0, "reward_low95": low, "reward_high95": high,
        "mean_turns": turns / len(scored) if scored else 0.0,
        "format_error_rate": sum(r.get("n_format_errors") or 0 for r in scored) / turns if turns else 0.0,
        "infra_errors": len(records) - len(scored),
        "episode_time_s": sum((r.get("timings") or {}).get("episode_s", 0.0) for r in records),
    }
    for k in sorted({1, samples}):
        rows = [pass_at_k(len(rs), sum(bool(r["resolved"]) for r in rs), k) for rs in by_task.values() if len(rs) >= k]
        out[f"pass@{k}"] = sum(rows) / len(rows) if rows else 0.0
    return out


def format_summary(summary: dict[str, Any], wall_s: float | None = None) -> str:
    """The summary as a two-column table."""
    rows = [("episodes", f"{summary['episodes']} ({summary['tasks']} tasks)"),
            ("resolved rate", f"{summary['resolved_rate']:.1%}"),
            ("mean reward", f"{summary['reward_mean']:.3f} [{summary['reward_low95']:.3f}, {summary['reward_high95']:.3f}]")]
    rows += [(k, f"{v:.1%}") for k, v in summary.items() if k.startswith("pass@")]
    rows += [("mean turns", f"{summary['mean_turns']:.1f}"), ("format-error rate", f"{summary['format_error_rate']:.1%}"),
             ("infra errors", str(summary["infra_errors"])), ("episode time", f"{summary['episode_time_s']:.0f}s")]
    if wall_s is not None:
        rows.append(("wall time", f"{wall_s:.0f}s"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def transcript(traj) -> list[dict[str, str]]:
    """What the model wrote and what the env answered, turn by turn."""
    rows = []
    for t in traj.turns:
        rows.append({"role": "assistant", "content": t.action_text})
        if t.observation_text:
            rows.append({"role": "env", "content": t.observation_text})
    return rows


GRADED_FIELDS = ("f2p_pass", "p2p_pass", "resolution", "patch", "suspicious", "grading_reason", "grading_mode",
                 "grading_refused")
"""Fields a hook may grade; null in a record when it did not."""


def make_record(task: EvalTask, sample: int, policy: str, *, reward: float, termination: str, turns: int,
                info: dict[str, Any], error: str = "", transcript_rows: list | None = None,
                episode_s: float = 0.0, budget_s: float | None = None) -> dict[str, Any]:
    """One JSON line: scores, termination, timings, null for what nobody graded, and the transcript."""
    infra = bool(info.get("infra_error")) or termination in INFRA_TERMINATIONS
    graded = "resolved" in info and not infra
    timings = {**(info.get("timings") or {}), "episode_s": episode_s}
    rec = {"instance_id": task.id, "sample": sample, "split": task.split, "seed": task.seed, "policy": policy,
           "resolved": (bool(info["resolved"]) if graded else reward >= 1.0) and not infra,
           "reward": None if infra else float(reward),
           **{k: (info.get(k) if graded else None) for k in GRADED_FIELDS},
           "exit_reason": info.get("exit_reason", termination), "termination": termination, "turns": turns,
           "n_format_errors": info.get("n_format_errors"), "infra_error": infra,
           "error": error or str(info.get("error", "")), "timings": timings}
    if budget_s is not None and episode_s > 1.1 * budget_s:
        grade_s = timings.get("grade_s", 0.0)
        rec["over_budget"] = (f"{episode_s:.0f}s of a {budget_s:.0f}s budget: grading took {grade_s:.0f}s after the "
                              "agent stopped" if grade_s else
                              f"{episode_s:.0f}s of a {budget_s:.0f}s budget: an env step or cleanup ran past the deadline")
    if transcript_rows is not None:
        rec["transcript"] = transcript_rows
    return rec


async def run_episodes(job: EvalConfig, tasks: list[EvalTask], factory, engine, tokenizer, loop_cfg, *,
                       hook: EvalHook, on_record=None, done: dict | None = None) -> list[dict]:
    """Run every (task, sample) not in `done`, at most job.concurrency at once; returns the new records."""
    from agentrl.rollout.agent_loop import as_renderer, run_episode

    policy = f"oracle:{job.oracle}" if job.oracle else job.model
    renderer = as_renderer(tokenizer) if engine is not None else None
    semaphore = asyncio.Semaphore(max(1, job.concurrency))
    todo = [(t, s) for t in tasks for s in range(job.samples) if (t.id, s) not in (done or {})]
    records: list[dict] = []

    async def one(task: EvalTask, sample: int) -> None:
        async with semaphore:
            start = time.monotonic()
            env = await asyncio.to_thread(factory)
            try:
                if job.oracle:
                    try:
                        out = await hook.oracle(env, task, job.oracle, sample)
                    except AgentRLError:
                        raise
                    except Exception as e:  # noqa: BLE001 - an env crash is this episode's infra error, not the job's
                        out = {"reward": 0.0, "termination": "env_error", "turns": 0, "info": {"infra_error": True},
                               "error": f"{type(e).__name__}: {e}", "transcript": []}
                    info, termination = out["info"], out["termination"]
                    reward, turns, rows, error = out["reward"], out["turns"], out.get("transcript"), out.get("error", "")
                else:
                    traj = await run_episode(env, engine, renderer, loop_cfg, seed=task.seed, options=task.options,
                                             sampling_seed=(task.seed or 0) * 1000 + sample + 1)
                    info, termination, reward = dict(traj.reward_info), traj.termination.value, traj.reward
                    info.setdefault("n_format_errors", traj.metrics.get("rollout/format_errors"))
                    turns, rows = len(traj.turns), transcript(traj)
                    error = traj.termination_detail if termination in INFRA_TERMINATIONS else ""
                    if termination not in INFRA_TERMINATIONS and "resolved" not in info:
                        graded = await asyncio.to_thread(hook.finish, env, termination)
                        if graded:
                            info, error = {**info, **graded}, str(graded.get("error", ""))
                            reward = float(graded.get("reward", reward))
            finally:
                await asyncio.to_thread(env.close)
            rec = make_record(task, sample, policy, reward=reward, termination=termination, turns=turns, info=info,
                              error=error, transcript_rows=rows if job.transcripts else None,
                              episode_s=time.monotonic() - start, budget_s=job.wall_clock_s)
        records.append(rec)
        if on_record is not None:
            on_record(rec)

    await asyncio.gather(*(one(t, s) for t, s in todo))
    return records


async def run_eval(cfg: EvalConfig, engine=None, tokenizer=None, *, progress: bool = True, log=print) -> list[dict]:
    """Run every missing (task, sample) episode of the job, appending records to cfg.out; returns the job's
    latest record per episode. Raises AgentRLError for a bad job (unknown oracle, no tasks, another policy)."""
    from functools import partial

    from agentrl.registry import make
    from agentrl.rollout.agent_loop import LoopConfig

    hook = hook_for(cfg.env)
    if cfg.oracle is not None and cfg.oracle not in hook.oracles:
        raise AgentRLError(f"--oracle {cfg.oracle} is not offered by env {cfg.env!r} (oracles: "
                           f"{', '.join(hook.oracles) or 'none'})")
    if cfg.oracle is None and engine is None:
        raise AgentRLError("eval needs a model (an engine) or an --oracle")
    try:
        tasks = hook.tasks(cfg)
        if not tasks:
            raise AgentRLError(f"no tasks for env {cfg.env!r} (split {cfg.split!r})")
        policy = f"oracle:{cfg.oracle}" if cfg.oracle else cfg.model
        done = load_done(cfg.out)
        others = {r.get("policy") for r in done.values()} - {policy}
        if others:
            raise AgentRLError(f"{cfg.out} holds episodes of another policy ({', '.join(map(str, others))}), not "
                               f"{policy}; pass another --out")
        todo = len(tasks) * cfg.samples - sum((t.id, s) in done for t in tasks for s in range(cfg.samples))
        if done:
            log(f"resuming {cfg.out}: {len(done)} episodes done, {todo} to run")
        factory = partial(make, cfg.env, **{**cfg.env_kwargs, **hook.env_kwargs(cfg, tasks)})
        if todo:
            from agentrl.preflight import try_factory

            await asyncio.to_thread(try_factory, factory, key="--env-kwargs", label=cfg.env, seed=tasks[0].seed,
                                    options=tasks[0].options)
        loop_cfg = LoopConfig(max_turns=cfg.max_turns, max_new_tokens=cfg.max_new_tokens,
                              max_context_tokens=cfg.max_context_tokens, timeout_s=cfg.wall_clock_s,
                              temperature=cfg.temperature, max_format_errors=10**9)
        start = time.monotonic()
        ids = {t.id for t in tasks}
        with open(cfg.out, "a", encoding="utf-8") as out, _Progress(todo, progress) as bar:
            def on_record(rec: dict) -> None:
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                out.flush()
                bar.advance(rec)

            new = await run_episodes(cfg, tasks, factory, engine, tokenizer, loop_cfg, hook=hook,
                                     on_record=on_record, done=done)
    finally:
        hook.close()
    latest = {k: r for k, r in done.items() if k[0] in ids}
    latest.update({(r["instance_id"], r["sample"]): r for r in new})
    records = list(latest.values())
    log(format_summary(summarize(records, cfg.samples), time.monotonic() - start))
    return records


class _Progress:
    """A rich progress bar on a terminal, a line per finished episode otherwise."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.n, self.resolved = total, enabled, 0, 0
        self.bar = None

    def __enter__(self) -> _Progress:
        if self.enabled and sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                                TimeElapsedColumn(), transient=False)
            self.bar.__enter__()
            self.task = self.bar.add_task("", total=self.total)
        return self

    def advance(self, rec: dict) -> None:
        self.n += 1
        self.resolved += rec["resolved"]
        text = f"resolved {self.resolved}/{self.n}"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=text)
        elif self.enabled:
            print(f"[{self.n}/{self.total}] {rec['instance_id']}#{rec['sample']}: "
                  f"{'resolved' if rec['resolved'] else 'infra error' if rec['infra_error'] else 'unresolved'} "
                  f"({rec['exit_reason']}, {rec['turns']} turns) — {text}", file=sys.stderr, flush=True)
        if self.enabled and rec.get("over_budget"):
            print(f"{rec['instance_id']}#{rec['sample']} over its wall-clock budget: {rec['over_budget']}",
                  file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)
