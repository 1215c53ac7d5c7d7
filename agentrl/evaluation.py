"""Evaluation of any env: K samples of every task, N at a time, one JSON line per episode, one summary.

    agentrl eval --env calc --model tiny --num-tasks 20 --out calc.jsonl
    agentrl eval --env swe_lite --model smollm2-135m-instruct --split dev --samples 4 --out r.jsonl

One evaluator serves `agentrl eval`, the training loop's held-out evaluation (`agentrl.trainer.heldout`) and
swe_lite's benchmark (`agentrl.envs.swe_lite.benchmark`). Every episode, an oracle's included, runs through
the agent loop training uses (`rollout.collector.run_member` → `rollout.agent_loop.run_episode`; sample m
of a task is group member m, with its sampling seed), under the same episode budget (LoopConfig: turns,
format errors, context, wall clock), and comes back as a Trajectory; a record is made from that alone. So a
model that never produces a valid action scores 0 (format_errors or max_turns), exactly as in training.

The core knows nothing of any env: an env may bring an *evaluation hook* (an `EvalHook`, named in the registry
or as the env class's `eval_hook` attribute, "module:object") that lists its tasks, adds constructor kwargs,
offers oracles (as ScriptedPolicy objects) and names the info fields its records carry. Without one, tasks are
held-out reset seeds and an episode's reward is its score. An episode that one of the loop's own budgets
ended is graded as it stands where the env can (LoopConfig.grade_at_budget, AgentEnv.end_episode).

Each finished episode is appended to `out` at once (flushed), so an interrupted job loses nothing it finished;
re-running the same command skips every (instance_id, sample) already scored there. Which endings are
infrastructure failures is the failure table's call (`agentrl.types.scored`): those are recorded with
infra_error=True, left out of the rates, and run again by the next rerun. Fields a hook did not grade are
null, never 0. Each record keeps the transcript of what the model wrote and what the env answered.

Two evaluations of the same tasks are compared task by task: paired_sign_test for one 0/1 outcome per task, and
for k samples per task the statistics at the end of this module (per-task means, a sign-flip permutation test,
the sign test, a module-clustered check, a t interval, the design's detectable effect; compare_paired).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

from agentrl.errors import AgentRLError
from agentrl.rollout.seeds import HELDOUT_STEP, heldout_seed
from agentrl.types import scored

__all__ = ["HELDOUT_STEP", "EvalConfig", "EvalHook", "EvalTask", "HeldOut", "compare_paired", "detectable_effect",
           "held_out_means", "paired_t_interval", "pilot_diff_sd", "run_eval", "run_episodes", "sign_flip_test",
           "sign_test", "summarize"]


@dataclass
class EvalTask:
    """One task to evaluate: its id in records, the reset seed and reset options."""

    id: str
    seed: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    split: str | None = None


@dataclass
class EvalConfig:
    """One evaluation job. Budgets left None are the rollout config's defaults (LoopConfig())."""

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
    max_turns: int | None = None
    max_new_tokens: int | None = None
    max_context_tokens: int | None = None
    max_format_errors: int | None = None
    temperature: float = 0.7
    episode_timeout_s: float | None = None
    """Seconds per episode, generation included; the loop stops at the deadline and what stands is graded."""
    transcripts: bool = True

    def loop_config(self) -> Any:
        """The agent loop's settings for every episode of the job (oracles included): the budgets set here over
        the rollout config's defaults, and grading of what stands when a budget ends an episode."""
        from agentrl.rollout.agent_loop import LoopConfig

        budget = {"max_turns": self.max_turns, "max_new_tokens": self.max_new_tokens,
                  "max_context_tokens": self.max_context_tokens, "max_format_errors": self.max_format_errors,
                  "episode_timeout_s": self.episode_timeout_s}
        return LoopConfig(**{k: v for k, v in budget.items() if v is not None}, temperature=self.temperature,
                          grade_at_budget=True)

    @property
    def policy_label(self) -> str:
        """Who acts, as records name it: the model label, or oracle:<name>."""
        return f"oracle:{self.oracle}" if self.oracle else self.model


class EvalHook:
    """An env's evaluation specifics. This default fits any env: tasks are seeds, the reward is the score."""

    oracles: tuple[str, ...] = ("expert",)
    record_fields: tuple[str, ...] = ()
    """Info fields every record carries: the env's value where it graded the episode, else null (never 0)."""

    def tasks(self, job: EvalConfig) -> list[EvalTask]:
        """The job's tasks: `num_tasks` held-out seeds (the same ones the training loop's held-out eval uses)."""
        seeds = [heldout_seed(job.seed, i) for i in range(job.num_tasks)]
        return [EvalTask(id=f"seed-{s}", seed=s) for s in seeds][: job.limit]

    def env_kwargs(self, job: EvalConfig, tasks: list[EvalTask]) -> dict[str, Any]:
        """Constructor kwargs the hook adds to job.env_kwargs (e.g. the task list, a sandbox pool)."""
        return {}

    def policy(self, job: EvalConfig) -> Any:
        """The ScriptedPolicy of oracle job.oracle, run through the agent loop like a model ("expert": the env's
        scripted expert). Raises AgentRLError for an env without one."""
        from agentrl.agent_env import AgentEnv
        from agentrl.registry import env_class
        from agentrl.rollout.agent_loop import ScriptedPolicy

        if getattr(env_class(job.env), "expert_action", None) is AgentEnv.expert_action:
            raise AgentRLError(f"env {job.env!r} has no scripted expert (expert_action() is None)")
        return ScriptedPolicy()

    def close(self) -> None:
        """Release what the hook holds (sandbox pools)."""


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
    """Resolved rate, mean reward with its 95% Wilson interval, pass@1 and pass@k, turns, format errors, infra,
    and how the episodes ended (termination counts: why a score is what it is)."""
    scored_ = [r for r in records if not r.get("infra_error")]
    by_task: dict[str, list[dict]] = defaultdict(list)
    for r in scored_:
        by_task[r["instance_id"]].append(r)
    turns = sum(r.get("turns", 0) for r in scored_)
    clipped = sum(min(max(float(r.get("reward") or 0.0), 0.0), 1.0) for r in scored_)
    low, high = wilson(clipped, len(scored_))
    n = len(scored_) or 1
    out: dict[str, Any] = {
        "episodes": len(records), "tasks": len({r["instance_id"] for r in records}), "scored": len(scored_),
        "resolved_rate": sum(bool(r["resolved"]) for r in scored_) / n, "reward_mean": clipped / n,
        "reward_low95": low, "reward_high95": high, "mean_turns": turns / n,
        "format_error_rate": sum(r.get("n_format_errors") or 0 for r in scored_) / turns if turns else 0.0,
        "infra_errors": len(records) - len(scored_),
        "episode_time_s": sum((r.get("timings") or {}).get("episode_s", 0.0) for r in records),
        "terminations": dict(Counter(r.get("termination", "?") for r in records).most_common()),
    }
    for k in sorted({1, samples}):
        rows = [pass_at_k(len(rs), sum(bool(r["resolved"]) for r in rs), k) for rs in by_task.values() if len(rs) >= k]
        out[f"pass@{k}"] = sum(rows) / len(rows) if rows else 0.0
    return out


ENDINGS = {"done": "the env ended it", "max_turns": "turn budget spent", "max_tokens": "context budget spent",
           "timeout": "wall-clock budget spent", "format_errors": "actions that never parsed as a tool call",
           "env_error": "env fault, masked", "sandbox_error": "sandbox fault, masked",
           "engine_error": "engine fault, masked"}
"""Each termination in words, for the summary's `endings` row."""


def format_summary(summary: dict[str, Any], wall_s: float | None = None) -> str:
    """The summary as a two-column table; `endings` says how the episodes ended (so a 0 says why)."""
    rows = [("episodes", f"{summary['episodes']} ({summary['tasks']} tasks)"),
            ("resolved rate", f"{summary['resolved_rate']:.1%}"),
            ("mean reward", f"{summary['reward_mean']:.3f} [{summary['reward_low95']:.3f}, {summary['reward_high95']:.3f}]")]
    rows += [(k, f"{v:.1%}") for k, v in summary.items() if k.startswith("pass@")]
    rows += [("mean turns", f"{summary['mean_turns']:.1f}"), ("format-error rate", f"{summary['format_error_rate']:.1%}"),
             ("infra errors", str(summary["infra_errors"])), ("episode time", _episode_time(summary))]
    endings = summary.get("terminations") or {}
    rows += [("endings" if i == 0 else "", f"{n} {t} ({ENDINGS.get(t, t)})") for i, (t, n) in enumerate(endings.items())]
    if wall_s is not None:
        rows.append(("wall time", f"{wall_s:.0f}s"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def _episode_time(summary: dict[str, Any]) -> str:
    """The episodes' time, labelled as the sum it is (episodes overlap under --concurrency, so it can pass the
    wall time)."""
    total, n = summary["episode_time_s"], summary["episodes"]
    return f"{total:.0f}s summed over {n} episodes, which may overlap (mean {total / max(n, 1):.0f}s each)"


def transcript(traj) -> list[dict[str, str]]:
    """What the model wrote and what the env answered, turn by turn."""
    rows = []
    for t in traj.turns:
        rows.append({"role": "assistant", "content": t.action_text})
        if t.observation_text:
            rows.append({"role": "env", "content": t.observation_text})
    return rows


def make_record(task: EvalTask, sample: int, policy: str, traj, *, fields: tuple[str, ...] = (),
                transcripts: bool = True, budget_s: float | None = None) -> dict[str, Any]:
    """One JSON line from an episode's Trajectory: scores (null for an infrastructure failure, by the failure
    table), termination, timings, `fields` where the env graded the episode (else null), the transcript."""
    info, termination = traj.reward_info, traj.termination.value
    infra = not scored(traj.termination)
    graded = "resolved" in info and not infra
    episode_s = float(traj.metrics.get("timing/episode_s", 0.0))
    timings = {**(info.get("timings") or {}), "episode_s": episode_s}
    rec = {"instance_id": task.id, "sample": sample, "split": task.split, "seed": task.seed, "policy": policy,
           "resolved": (bool(info["resolved"]) if graded else traj.reward >= 1.0) and not infra,
           "reward": None if infra else float(traj.reward),
           **{k: (info.get(k) if graded else None) for k in fields},
           "exit_reason": info.get("exit_reason", termination), "termination": termination, "turns": len(traj.turns),
           "n_format_errors": traj.metrics.get("rollout/format_errors", 0), "infra_error": infra,
           "error": (traj.termination_detail if infra else "") or str(info.get("error", "")), "timings": timings}
    if budget_s is not None and episode_s > 1.1 * budget_s:
        grade_s = timings.get("grade_s", 0.0)
        rec["over_budget"] = (f"{episode_s:.0f}s of a {budget_s:.0f}s budget: grading took {grade_s:.0f}s after the "
                              "agent stopped" if grade_s else
                              f"{episode_s:.0f}s of a {budget_s:.0f}s budget: an env step or cleanup ran past the deadline")
    if transcripts:
        rec["transcript"] = transcript(traj)
    return rec


async def run_episodes(job: EvalConfig, tasks: list[EvalTask], factory, engine, tokenizer, loop_cfg=None, *,
                       hook: EvalHook, on_record=None, done: dict | None = None) -> list[dict]:
    """Run every (task, sample) not in `done` through the agent loop (sample m is group member m of the task),
    at most job.concurrency at once, the model or job.oracle acting; returns the new records."""
    from agentrl.rollout.agent_loop import as_renderer
    from agentrl.rollout.collector import run_member

    loop_cfg = loop_cfg or job.loop_config()
    policy = hook.policy(job) if job.oracle else None
    renderer = as_renderer(tokenizer)
    semaphore = asyncio.Semaphore(max(1, job.concurrency))
    todo = [(t, s) for t in tasks for s in range(job.samples) if (t.id, s) not in (done or {})]
    records: list[dict] = []

    async def one(task: EvalTask, sample: int) -> None:
        traj = await run_member(factory, engine, renderer, loop_cfg, seed=task.seed, options=task.options,
                                policy=policy, member=sample, semaphore=semaphore)
        rec = make_record(task, sample, job.policy_label, traj, fields=hook.record_fields,
                          transcripts=job.transcripts, budget_s=loop_cfg.episode_timeout_s)
        records.append(rec)
        if on_record is not None:
            on_record(rec)

    await asyncio.gather(*(one(t, s) for t, s in todo))
    return records


def _check_job(cfg: EvalConfig, hook: EvalHook, engine) -> None:
    """Refuse a job that cannot run: an oracle the env does not offer, no policy at all."""
    if cfg.oracle is not None and cfg.oracle not in hook.oracles:
        raise AgentRLError(f"--oracle {cfg.oracle} is not offered by env {cfg.env!r} (oracles: "
                           f"{', '.join(hook.oracles) or 'none'})")
    if cfg.oracle is None and engine is None:
        raise AgentRLError("eval needs a model (an engine) or an --oracle")


def _resume(cfg: EvalConfig, tasks: list[EvalTask], log) -> tuple[dict, int]:
    """(the episodes cfg.out already holds, how many are left to run); refuses a file of another policy."""
    done = load_done(cfg.out)
    others = {r.get("policy") for r in done.values()} - {cfg.policy_label}
    if others:
        raise AgentRLError(f"{cfg.out} holds episodes of another policy ({', '.join(map(str, others))}), not "
                           f"{cfg.policy_label}; pass another --out")
    todo = len(tasks) * cfg.samples - sum((t.id, s) in done for t in tasks for s in range(cfg.samples))
    if done:
        log(f"resuming {cfg.out}: {len(done)} episodes done, {todo} to run")
    return done, todo


async def run_eval(cfg: EvalConfig, engine=None, tokenizer=None, *, progress: bool = True, log=print,
                   heartbeat_s: float = 30.0) -> list[dict]:
    """Run every missing (task, sample) episode of the job, appending records to cfg.out; returns the job's
    latest record per episode. Raises AgentRLError for a bad job (unknown oracle, no tasks, another policy).
    An oracle job without a tokenizer uses the default model's (its actions are tokenized like a model's)."""
    from functools import partial

    from agentrl.models import load_tokenizer
    from agentrl.preflight import try_factory
    from agentrl.registry import make

    hook = hook_for(cfg.env)
    _check_job(cfg, hook, engine)
    start = time.monotonic()
    try:
        tasks = hook.tasks(cfg)
        if not tasks:
            raise AgentRLError(f"no tasks for env {cfg.env!r} (split {cfg.split!r})")
        done, todo = _resume(cfg, tasks, log)
        factory = partial(make, cfg.env, **{**cfg.env_kwargs, **hook.env_kwargs(cfg, tasks)})
        if todo:
            await asyncio.to_thread(try_factory, factory, key="--env-kwargs", label=cfg.env, seed=tasks[0].seed,
                                    options=tasks[0].options)
        tokenizer = tokenizer if tokenizer is not None else load_tokenizer()
        with open(cfg.out, "a", encoding="utf-8") as out, _Progress(todo, progress, cfg.concurrency, heartbeat_s) as bar:
            def on_record(rec: dict) -> None:
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                out.flush()
                bar.advance(rec)

            new = await run_episodes(cfg, tasks, factory, engine, tokenizer, hook=hook, on_record=on_record,
                                     done=done)
    finally:
        hook.close()
    ids = {t.id for t in tasks}
    latest = {k: r for k, r in done.items() if k[0] in ids}
    latest.update({(r["instance_id"], r["sample"]): r for r in new})
    records = list(latest.values())
    log(format_summary(summarize(records, cfg.samples), time.monotonic() - start))
    return records


@dataclass
class HeldOut:
    """Accuracy-style summary with a 95% Wilson interval (rewards in [0, 1])."""

    mean: float
    low: float
    high: float
    n: int
    masked: int
    per_task: dict[Any, float] = field(default_factory=dict, repr=False)
    """Clipped reward of each scored episode by task key (a seed, a task index): two evaluations pair up by it."""

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}] (n={self.n})"


def held_out(records: list[dict], key=lambda rec: rec["seed"], score=lambda rec: rec["reward"]) -> HeldOut:
    """A HeldOut of one-sample records: mean of score(rec) clipped to [0, 1] with its Wilson interval over the
    scored episodes, infrastructure failures counted as masked, per_task keyed by key(rec)."""
    per_task = {key(r): min(max(float(score(r)), 0.0), 1.0) for r in records if not r["infra_error"]}
    total = sum(per_task.values())
    low, high = wilson(total, len(per_task))
    return HeldOut(mean=total / max(len(per_task), 1), low=low, high=high, n=len(per_task),
                   masked=len(records) - len(per_task), per_task=per_task)


def paired_sign_test(before: HeldOut, after: HeldOut) -> tuple[int, int, float]:
    """(tasks only `after` solves, tasks only `before` solves, exact two-sided p-value) over the tasks both
    scored: McNemar's exact test on the discordant pairs, sharper than comparing two intervals because each
    task is its own control. A task counts as solved at reward ≥ 0.5."""
    common = before.per_task.keys() & after.per_task.keys()
    gained = sum(after.per_task[s] >= 0.5 > before.per_task[s] for s in common)
    lost = sum(before.per_task[s] >= 0.5 > after.per_task[s] for s in common)
    return gained, lost, _sign_p(gained, lost)


def _sign_p(gained: int, lost: int) -> float:
    """Exact two-sided binomial p of `gained` against `lost` under p = 1/2 (ties already left out)."""
    n, k = gained + lost, min(gained, lost)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n) if n else 1.0


# ---- paired comparisons of per-task outcomes (k samples per task: per-task means) ----
# One design throughout (Miller 2024, "Adding Error Bars to Evals"): tasks are the unit, each task is its own
# control (d_t = after_t − before_t over the tasks both scored), and the tests below all read the d_t.

def held_out_means(records: list[dict], key=lambda rec: rec["instance_id"],
                   score=lambda rec: rec["resolved"]) -> HeldOut:
    """A HeldOut of k-sample records: per_task is each task's mean score over its scored episodes, mean the mean
    over tasks, the interval Wilson's over tasks with the summed task means as successes (conservative: a
    [0, 1]-valued task mean of mean p has variance at most p(1 − p)); masked counts infrastructure failures."""
    by_task: dict[Any, list[float]] = defaultdict(list)
    for r in records:
        if not r["infra_error"]:
            by_task[key(r)].append(min(max(float(score(r)), 0.0), 1.0))
    per_task = {k: sum(v) / len(v) for k, v in by_task.items()}
    total = sum(per_task.values())
    low, high = wilson(total, len(per_task))
    return HeldOut(mean=total / max(len(per_task), 1), low=low, high=high, n=len(per_task),
                   masked=sum(bool(r["infra_error"]) for r in records), per_task=per_task)


def sign_flip_test(diffs, *, exact_max: int = 20, draws: int = 20_000, seed: int = 0) -> float:
    """Two-sided p of the paired permutation test of a zero mean difference: under the null each task's d_t is as
    likely to have either sign, so p is the share of sign patterns whose |Σ ±d_t| reaches the observed |Σ d_t|.
    Exact over all patterns when at most `exact_max` d_t are nonzero (zeros never move the sum), else `draws`
    seeded Monte Carlo patterns with the +1 correction, p = (hits + 1) / (draws + 1)."""
    d = [float(x) for x in diffs if x != 0]
    if not d:
        return 1.0
    observed = abs(sum(d))
    tol = 1e-9 * max(1.0, sum(abs(x) for x in d))  # sums equal up to float rounding count as reaching it
    if len(d) <= exact_max:
        sums = [d[0]]  # the first sign fixed: a pattern and its mirror have the same |sum|
        for x in d[1:]:
            sums = [s + x for s in sums] + [s - x for s in sums]
        return sum(abs(s) >= observed - tol for s in sums) / len(sums)
    chunks = [d[i : i + 8] for i in range(0, len(d), 8)]  # a table of the 2^8 signed sums of each 8 d_t
    tables = [[sum(x if b >> i & 1 else -x for i, x in enumerate(c)) for b in range(1 << len(c))] for c in chunks]
    rng = random.Random(seed)
    hits = sum(abs(sum(t[rng.getrandbits(len(c))] for t, c in zip(tables, chunks, strict=True))) >= observed - tol
               for _ in range(draws))
    return (hits + 1) / (draws + 1)


def sign_test(diffs) -> tuple[int, int, float]:
    """(tasks whose outcome rose, tasks whose outcome fell, exact two-sided binomial p), ties left out: the sign
    test on per-task differences (on 0/1 outcomes it is paired_sign_test, McNemar's exact test)."""
    gained, lost = sum(x > 0 for x in diffs), sum(x < 0 for x in diffs)
    return gained, lost, _sign_p(gained, lost)


def t_critical(df: int, level: float = 0.95) -> float:
    """Student's two-sided critical value: P(|T_df| ≤ t) = level, by bisection on the exact finite-series CDF of
    integer df (Abramowitz & Stegun 26.7.3-4)."""
    def central(t: float) -> float:  # P(|T| <= t)
        theta = math.atan(t / math.sqrt(df))
        c2, term = math.cos(theta) ** 2, (1.0 if df % 2 == 0 else math.cos(theta))
        acc = term
        for k in range(1, (df - 2) // 2 + 1 if df % 2 == 0 else (df - 3) // 2 + 1):
            term *= ((2 * k - 1) / (2 * k) if df % 2 == 0 else 2 * k / (2 * k + 1)) * c2
            acc += term
        if df % 2 == 0:
            return math.sin(theta) * acc
        return 2 / math.pi * (theta + (math.sin(theta) * acc if df > 1 else 0.0))

    low, high = 0.0, 1.0
    while central(high) < level:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if central(mid) < level else (low, mid)
    return (low + high) / 2


def paired_t_interval(diffs, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high) of the mean per-task difference: Student's t interval over tasks (df = n − 1), clipped
    to [−1, 1] where differences of success rates lie; [−1, 1] with fewer than 2 tasks."""
    d = [float(x) for x in diffs]
    n = len(d)
    mean = sum(d) / n if n else 0.0
    if n < 2:
        return mean, -1.0, 1.0
    half = t_critical(n - 1, level) * math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n)
    return mean, max(-1.0, mean - half), min(1.0, mean + half)


def detectable_effect(per_task_diff_sd: float, n_tasks: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true mean difference the paired design detects with probability `power` by a two-sided test
    at level `alpha`, normal approximation: (z_{1−α/2} + z_{power}) · sd_d / √n (2.80 · sd_d / √n at the
    defaults), sd_d the SD of the per-task differences."""
    z = NormalDist().inv_cdf
    return (z(1 - alpha / 2) + z(power)) * per_task_diff_sd / math.sqrt(n_tasks)


def pilot_diff_sd(first: dict, second: dict) -> float:
    """The SD (n − 1) of per-task differences between two k-sample evaluations of equally good checkpoints (the
    same one under two seed families, or two copies trained alike): the noise any comparison of the design
    carries, for detectable_effect."""
    d = [second[k] - first[k] for k in first.keys() & second.keys()]
    if len(d) < 2:
        raise ValueError(f"pilot_diff_sd needs at least 2 tasks both evaluations scored, got {len(d)}")
    mean = sum(d) / len(d)
    return math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))


def compare_paired(before: dict, after: dict, clusters: dict | None = None) -> dict[str, Any]:
    """Every paired statistic of two per-task outcome maps over the tasks both scored, d_t = after_t − before_t:
    mean difference with its t interval, the sign-flip permutation p, the sign test, and with `clusters`
    ({task: module}) the sign-flip test over per-module sums of d_t (tasks of one module may move together)."""
    keys = sorted(before.keys() & after.keys(), key=str)
    d = [after[k] - before[k] for k in keys]
    mean, low, high = paired_t_interval(d)
    gained, lost, p_sign = sign_test(d)
    out: dict[str, Any] = {"tasks": len(d), "mean_diff": mean, "ci95": [low, high], "p_permutation": sign_flip_test(d),
                           "gained": gained, "lost": lost, "p_sign": p_sign}
    if clusters is not None:
        sums: dict[Any, float] = defaultdict(float)
        for k, x in zip(keys, d, strict=True):
            sums[clusters[k]] += x
        out.update(clusters=len(sums), p_clustered=sign_flip_test(list(sums.values())))
    return out


class _Progress:
    """A rich progress bar on a terminal; a line per finished episode (above the bar on a terminal); and, while
    episodes run, a line every `heartbeat_s` in which none finished (a SWE episode takes minutes)."""

    def __init__(self, total: int, enabled: bool, concurrency: int = 1, heartbeat_s: float = 30.0) -> None:
        self.total, self.enabled, self.n, self.resolved = total, enabled, 0, 0
        self.concurrency, self.heartbeat_s = max(1, concurrency), heartbeat_s
        self.bar = self._beat = None
        self.started = self.last = time.monotonic()

    def __enter__(self) -> _Progress:
        if self.enabled and sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                                TimeElapsedColumn(), transient=False)
            self.bar.__enter__()
            self.task = self.bar.add_task("", total=self.total)
        if self.enabled and self.total:
            self._beat = asyncio.get_running_loop().create_task(self._heartbeat())
        self.started = self.last = time.monotonic()
        return self

    def _say(self, line: str) -> None:
        if self.bar is not None:
            self.bar.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=sys.stderr, flush=True)

    async def _heartbeat(self) -> None:
        """Say that episodes are still running when none finished for heartbeat_s."""
        while True:
            await asyncio.sleep(max(0.1, self.last + self.heartbeat_s - time.monotonic()))
            now = time.monotonic()
            if now - self.last >= self.heartbeat_s and self.n < self.total:
                running = min(self.concurrency, self.total - self.n)
                self._say(f"eval: {self.n}/{self.total} episodes finished, {running} running; none finished in "
                          f"the last {now - self.last:.0f}s ({_clock(now - self.started)} elapsed)")
                self.last = now

    def advance(self, rec: dict) -> None:
        self.n += 1
        self.last = time.monotonic()
        self.resolved += rec["resolved"]
        text = f"resolved {self.resolved}/{self.n}"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=text)
        if self.enabled:
            self._say(f"[{self.n}/{self.total}] {rec['instance_id']}#{rec['sample']}: "
                      f"{'resolved' if rec['resolved'] else 'infra error' if rec['infra_error'] else 'unresolved'} "
                      f"({rec['exit_reason']}, {rec['turns']} turns, {rec['timings'].get('episode_s', 0.0):.0f}s) "
                      f"— {text}")
        if self.enabled and rec.get("over_budget"):
            self._say(f"{rec['instance_id']}#{rec['sample']} over its wall-clock budget: {rec['over_budget']}")

    def __exit__(self, *exc) -> None:
        if self._beat is not None:
            self._beat.cancel()
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _clock(seconds: float) -> str:
    """'3m05s' (or '42s')."""
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"
