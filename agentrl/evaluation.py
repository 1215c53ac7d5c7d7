"""Sandboxed evaluation jobs: K samples of every task of a split, N at a time, one JSON line per episode.

    agentrl eval --env swe_lite --model smollm2-135m-instruct --split dev --samples 4 --concurrency 2 --out r.jsonl

Each finished episode is appended to `out` at once (flushed), so an interrupted job loses nothing it finished;
re-running the same command skips every (instance_id, sample) already in the file. `oracle="gold"` applies
the gold patch and `oracle="empty"` changes nothing, both graded through the env's normal submit path,
which checks the grader itself (gold must give 100 %, empty 0 %). Infrastructure failures (a dead sandbox,
an engine error) are recorded with infra_error=True and left out of the rates, never scored as 0.
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

from agentrl.errors import AgentRLError, SandboxError

INFRA_TERMINATIONS = ("sandbox_error", "env_error", "engine_error")


@dataclass
class EvalConfig:
    """One evaluation job."""

    out: str = "results.jsonl"
    """JSONL file of episode records; appended to and resumed from."""
    split: str | None = "test"
    samples: int = 1
    """Episodes per task (pass@k needs k <= samples)."""
    concurrency: int = 1
    """Episodes in flight at once (each holds one sandbox at a time)."""
    oracle: str | None = None
    """"gold" | "empty" | None (None: the model acts)."""
    model: str = ""
    """Label of the policy (model name or server URL), stored in every record."""
    tasks_path: str | None = None
    limit: int | None = None
    """Only the first `limit` tasks of the split."""
    backend: str = "auto"
    max_steps: int = 30
    max_new_tokens: int = 384
    max_context_tokens: int = 8192
    temperature: float = 0.7
    episode_timeout_s: float = 900.0
    env_kwargs: dict[str, Any] = field(default_factory=dict)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k) for n samples of which c are correct."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def load_done(path: str | os.PathLike) -> dict[tuple[str, int], dict]:
    """Finished episodes of an earlier run, keyed by (instance_id, sample); a torn last line is cut off the file."""
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
        done[(rec["instance_id"], int(rec["sample"]))] = rec
        good += len(line)
    if good != len(raw):
        with open(path, "r+b") as f:
            f.truncate(good)
    return done


def summarize(records: list[dict], samples: int) -> dict[str, Any]:
    """Resolved rate, pass@1 and pass@k (k = samples), mean turns, format-error rate, infra errors, time."""
    scored = [r for r in records if not r.get("infra_error")]
    by_task: dict[str, list[dict]] = defaultdict(list)
    for r in scored:
        by_task[r["instance_id"]].append(r)
    turns = sum(r.get("turns", 0) for r in scored)
    out: dict[str, Any] = {
        "episodes": len(records), "tasks": len({r["instance_id"] for r in records}),
        "resolved_rate": sum(r["resolved"] for r in scored) / len(scored) if scored else 0.0,
        "mean_turns": turns / len(scored) if scored else 0.0,
        "format_error_rate": sum(r.get("n_format_errors", 0) for r in scored) / turns if turns else 0.0,
        "infra_errors": len(records) - len(scored),
        "episode_time_s": sum(r.get("timings", {}).get("episode_s", 0.0) for r in records),
    }
    for k in sorted({1, samples}):
        rows = [pass_at_k(len(rs), sum(r["resolved"] for r in rs), k) for rs in by_task.values() if len(rs) >= k]
        out[f"pass@{k}"] = sum(rows) / len(rows) if rows else 0.0
    return out


def format_summary(summary: dict[str, Any], wall_s: float | None = None) -> str:
    """The summary as a two-column table."""
    rows = [("episodes", f"{summary['episodes']} ({summary['tasks']} tasks)"),
            ("resolved rate", f"{summary['resolved_rate']:.1%}")]
    rows += [(k, f"{v:.1%}") for k, v in summary.items() if k.startswith("pass@")]
    rows += [("mean turns", f"{summary['mean_turns']:.1f}"), ("format-error rate", f"{summary['format_error_rate']:.1%}"),
             ("infra errors", str(summary["infra_errors"])), ("episode time", f"{summary['episode_time_s']:.0f}s")]
    if wall_s is not None:
        rows.append(("wall time", f"{wall_s:.0f}s"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _record(task, sample: int, cfg: EvalConfig, info: dict, termination: str, turns: int, error: str = "") -> dict:
    infra = bool(info.get("infra_error")) or termination in INFRA_TERMINATIONS
    return {"instance_id": task.instance_id, "sample": sample, "split": task.split,
            "policy": f"oracle:{cfg.oracle}" if cfg.oracle else cfg.model,
            "resolved": bool(info.get("resolved")) and not infra, "reward": float(info.get("reward", 0.0)),
            "f2p_pass": info.get("f2p_pass", 0.0), "p2p_pass": info.get("p2p_pass", 0.0),
            "resolution": info.get("resolution", "NO"), "exit_reason": info.get("exit_reason", termination),
            "termination": termination, "turns": turns, "n_format_errors": info.get("n_format_errors", 0),
            "infra_error": infra, "error": error or info.get("error", ""), "suspicious": info.get("suspicious", False),
            "patch": info.get("patch", ""), "timings": info.get("timings", {})}


def _oracle_episode(env, task, sample: int, cfg: EvalConfig) -> dict:
    """Apply the gold patch (or nothing) in the agent sandbox and submit through the normal grading path."""
    from agentrl.envs.swe_lite.grading import REPO
    from agentrl.tool_calls import format_call

    try:
        env.reset(seed=sample, options={"instance_id": task.instance_id})
        if cfg.oracle == "gold":
            fixed = task.fixed_files()
            for path in sorted(set(task.files) | set(fixed)):
                if fixed.get(path) != task.files.get(path):
                    if path in fixed:
                        env.sandbox.write_file(f"{REPO}/{path}", fixed[path])
                    else:
                        env.sandbox.exec(f"rm -f -- '{path}'", cwd=REPO)
        _, _, _, _, info = env.step(format_call("submit", {}))
    except SandboxError as e:
        return _record(task, sample, cfg, {"infra_error": True}, "sandbox_error", 0, f"{type(e).__name__}: {e}")
    return _record(task, sample, cfg, info, info.get("termination", "done"), 1)


async def _model_episode(env, task, sample: int, cfg: EvalConfig, engine, renderer) -> dict:
    """Run the policy with the agent loop; grade the final state if the loop's own budget ended the episode."""
    from agentrl.rollout.agent_loop import LoopConfig, run_episode

    loop_cfg = LoopConfig(max_turns=cfg.max_steps + 1, max_new_tokens=cfg.max_new_tokens,
                          max_context_tokens=cfg.max_context_tokens, timeout_s=cfg.episode_timeout_s,
                          temperature=cfg.temperature, max_format_errors=10**9)
    traj = await run_episode(env, engine, renderer, loop_cfg, seed=sample,
                             options={"instance_id": task.instance_id})
    info, termination = dict(traj.reward_info), traj.termination.value
    if "resolved" not in info and termination not in INFRA_TERMINATIONS and getattr(env, "sandbox", None) is not None:
        try:  # the loop stopped first (token or time budget): grade the diff as it stands, like a truncation
            info = await asyncio.to_thread(env.finish, f"loop_{termination}", termination)
        except SandboxError as e:
            info = {"infra_error": True, "error": f"{type(e).__name__}: {e}"}
    info.setdefault("error", traj.metrics.get("termination_detail", "") if termination in INFRA_TERMINATIONS else "")
    return _record(task, sample, cfg, info, termination, len(traj.turns))


async def run_eval(cfg: EvalConfig, engine=None, tokenizer=None, *, progress: bool = True, log=print) -> list[dict]:
    """Run every missing (task, sample) episode of the job, appending records to cfg.out; returns all records."""
    from agentrl.envs.swe_lite.env import SweLiteEnv
    from agentrl.envs.swe_lite.tasks import load_tasks
    from agentrl.sandboxes import SandboxPool

    if cfg.oracle not in (None, "gold", "empty"):
        raise AgentRLError(f"--oracle must be gold or empty, got {cfg.oracle!r}")
    if cfg.oracle is None and engine is None:
        raise AgentRLError("eval needs a model (an engine) or --oracle gold|empty")
    tasks = load_tasks(cfg.tasks_path, cfg.split)[: cfg.limit] if not cfg.env_kwargs.get("tasks") else \
        cfg.env_kwargs["tasks"][: cfg.limit]
    if not tasks:
        raise AgentRLError(f"no tasks in split {cfg.split!r}")
    policy = f"oracle:{cfg.oracle}" if cfg.oracle else cfg.model
    done = load_done(cfg.out)
    others = {r.get("policy") for r in done.values()} - {policy}
    if others:
        raise AgentRLError(f"{cfg.out} holds episodes of another policy ({', '.join(map(str, others))}), not "
                           f"{policy}; pass another --out")
    todo = [(t, s) for t in tasks for s in range(cfg.samples) if (t.instance_id, s) not in done]
    if done:
        log(f"resuming {cfg.out}: {len(done)} episodes done, {len(todo)} to run")
    renderer = None
    if engine is not None:
        from agentrl.rollout.agent_loop import as_renderer

        renderer = as_renderer(tokenizer)
    pool = SandboxPool(backend=cfg.backend, max_concurrency=max(1, cfg.concurrency), warm=0)
    semaphore = asyncio.Semaphore(max(1, cfg.concurrency))
    records = list(done.values())
    env_kwargs = {k: v for k, v in cfg.env_kwargs.items() if k != "tasks"}
    start = time.monotonic()
    with open(cfg.out, "a", encoding="utf-8") as out, _Progress(len(todo), progress) as bar:
        async def one(task, sample: int) -> None:
            async with semaphore:
                env = SweLiteEnv(tasks=tasks, pool=pool, max_steps=cfg.max_steps, **env_kwargs)
                try:
                    if cfg.oracle:
                        rec = await asyncio.to_thread(_oracle_episode, env, task, sample, cfg)
                    else:
                        rec = await _model_episode(env, task, sample, cfg, engine, renderer)
                finally:
                    await asyncio.to_thread(env.close)
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            out.flush()
            records.append(rec)
            bar.advance(rec)

        try:
            await asyncio.gather(*(one(t, s) for t, s in todo))
        finally:
            pool.close()
    bar_summary = summarize(records, cfg.samples)
    log(format_summary(bar_summary, time.monotonic() - start))
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

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)
