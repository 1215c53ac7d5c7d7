"""Run evaluation episodes of a model (or an oracle) on any env, resumably.

    agentrl eval --env calc --model tiny --num-tasks 20 --out calc.jsonl            # seeds as tasks
    agentrl eval --env swe_lite --model smollm2-135m-instruct --split dev --samples 2 --concurrency 2 --out r.jsonl
    agentrl eval --env swe_lite --model http://10.0.0.5:30000 --split test --samples 8 --concurrency 16
    agentrl eval --env swe_lite --oracle gold --split test --out gold.jsonl     # checks the grader: 100 %
    agentrl eval --env swe_real --oracle gold --split test --out gold.jsonl     # the same on real packages
    agentrl eval --env my_pkg.envs:MyEnv --oracle expert                       # the env's scripted expert

Episodes have the budget `agentrl train --env ENV` gives them (turns, tokens per turn, context, format errors
in a row, wall clock: the env preset's rollout.* settings, else the defaults); the flags override it. A model
that never produces a valid action therefore scores 0 (format_errors or max_turns), as in training; only
infrastructure failures (engine, sandbox, env faults) are masked.

One JSON line per finished episode (scores, termination, timings, the transcript) goes to --out as it
finishes; running the same command again skips the episodes already scored there and retries infra errors
(Ctrl-C or SIGTERM says so, exit 130 or 143). A line per finished episode shows progress, and a line every
--progress-every seconds in which none finished.
The summary gives resolved rate, mean reward with a 95% interval, pass@k (unbiased), mean turns,
format-error rate, infra errors (masked from the rates), how the episodes ended, the episodes' time (a sum:
they may overlap) and the wall time. Exit status 1 when
no episode could be scored (all infra errors), 2 for a usage or config error.
"""

from __future__ import annotations

import argparse
import sys

from agentrl.errors import AgentRLError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `agentrl eval`."""
    parser.add_argument("--env", required=True,
                        help="registered env name (see 'agentrl envs') or module:Class; required: no env is assumed")
    parser.add_argument("--model", default=None,
                        help="model name or directory for the embedded engine, or SGLang server URL(s), comma-separated "
                             "(default: smollm2-135m-instruct)")
    parser.add_argument("--tokenizer", default=None, help="tokenizer for --model URLs (default: the default model's)")
    parser.add_argument("--oracle", default=None,
                        help="run an oracle instead of a model: expert (any env with a scripted expert); "
                             "swe_lite and swe_real also: gold | empty (the reference fix, no change)")
    parser.add_argument("--split", default="test", help="task split of envs that have one (swe_lite, swe_real: train | dev | test)")
    parser.add_argument("--samples", type=int, default=1, help="episodes per task (pass@k for k <= samples)")
    parser.add_argument("--concurrency", type=int, default=None, help="episodes in flight (default: sandbox default)")
    parser.add_argument("--out", default="results.jsonl", help="JSONL of episode records (appended, resumable)")
    parser.add_argument("--env-kwargs", default=None, metavar="JSON", help="env constructor kwargs as a JSON object")
    parser.add_argument("--num-tasks", type=int, default=None,
                        help="envs without a task list: this many seed tasks (default 20); an env with a task list "
                             "(swe_lite, swe_real) refuses it: --limit N takes its first N tasks")
    parser.add_argument("--task-seed", type=int, default=0,
                        help="base of the seed tasks (a run's rollout.seed: the same tasks as its held-out eval)")
    parser.add_argument("--tasks", default=None, help="a swe_lite tasks JSONL (default: the shipped corpus)")
    parser.add_argument("--snapshots", default=None,
                        help="with --tasks: read SWE-bench-style JSONL with repository snapshots from this folder")
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--backend", default="auto", help="sandbox backend: auto | docker | bwrap | local")
    parser.add_argument("--max-turns", "--max-steps", dest="max_turns", type=int, default=None,
                        help="tool calls per episode (default: the env preset's rollout.max_turns)")
    parser.add_argument("--episode-timeout-s", type=float, default=None,
                        help="seconds per episode, generation included, then graded as it stands "
                             "(default: rollout.episode_timeout_s)")
    parser.add_argument("--max-new-tokens", type=int, default=None,
                        help="tokens per model turn (default: rollout.max_new_tokens)")
    parser.add_argument("--max-context-tokens", type=int, default=None,
                        help="context budget per episode (default: rollout.max_context_tokens)")
    parser.add_argument("--max-format-errors", type=int, default=None,
                        help="unparseable actions in a row that end an episode as format_errors "
                             "(default: rollout.max_format_errors)")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=0, help="engine sampling seed")
    parser.add_argument("--no-transcripts", action="store_true", help="leave the transcripts out of the records")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--progress-every", type=float, default=30.0, metavar="SECONDS",
                        help="while episodes run and none finishes, say so every SECONDS (default 30)")


def check_server(urls: list[str], timeout_s: float = 5.0) -> None:
    """Fail fast (one line) when a model server does not answer /health: no retries, no 60 s of backoff."""
    import urllib.error
    import urllib.request

    for url in urls:
        try:
            with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=timeout_s) as r:
                r.read()
        except urllib.error.HTTPError as e:
            raise AgentRLError(f"model server {url} answered /health with HTTP {e.code}; is it an SGLang server?") from None
        except (OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise AgentRLError(f"cannot reach model server {url}: {reason}; start it (agentrl serve --model ...) "
                               "or fix --model") from None


def check_num_tasks(args: argparse.Namespace) -> None:
    """--num-tasks counts seed tasks, which only an env without a task list has: an env whose eval hook lists its
    own tasks (swe_lite, swe_real) would ignore it and run its whole split, so it is refused, pointing at --limit."""
    if args.num_tasks is None:
        return
    if args.num_tasks < 1:
        raise AgentRLError(f"--num-tasks must be at least 1, got {args.num_tasks}")
    from agentrl.evaluation import EvalHook, hook_for

    if type(hook_for(args.env)).tasks is not EvalHook.tasks:
        raise AgentRLError(f"--num-tasks counts the seed tasks of an env without a task list; {args.env!r} has one "
                           f"(split {args.split}): did you mean --limit {args.num_tasks} (its first "
                           f"{args.num_tasks} tasks)?")


def episode_budget(args: argparse.Namespace) -> dict:
    """EvalConfig's budget fields: each flag given, else the env preset's rollout.* (what `agentrl train --env`
    uses), else the rollout defaults."""
    from agentrl.config import load_config
    from agentrl.rollout.agent_loop import LoopConfig

    loop = LoopConfig.from_rollout(load_config(args.env).rollout)
    given = {"max_turns": args.max_turns, "max_new_tokens": args.max_new_tokens,
             "max_context_tokens": args.max_context_tokens, "max_format_errors": args.max_format_errors,
             "episode_timeout_s": args.episode_timeout_s}
    preset = {k: getattr(loop, k) for k in given}
    return {k: preset[k] if v is None else v for k, v in given.items()}


def run(args: argparse.Namespace) -> int:
    """Check the job, build the engine (unless --oracle), run the episodes, print the summary."""
    import asyncio
    import json

    from agentrl.evaluation import EvalConfig, run_eval
    from agentrl.registry import resolve

    resolve(args.env)  # unknown env: one line with a did-you-mean and how to register one
    if args.oracle and args.model:
        raise AgentRLError("pass either --model or --oracle, not both")
    if args.samples < 1:
        raise AgentRLError(f"--samples must be at least 1, got {args.samples}")
    if args.progress_every <= 0:
        raise AgentRLError(f"--progress-every must be a positive number of seconds, got {args.progress_every:g}")
    if args.snapshots and not args.tasks:
        raise AgentRLError("--snapshots needs --tasks (the SWE-bench-style JSONL)")
    try:
        env_kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    except json.JSONDecodeError as e:
        raise AgentRLError(f"--env-kwargs is not JSON: {e}") from None
    if not isinstance(env_kwargs, dict):
        raise AgentRLError("--env-kwargs must be a JSON object, e.g. '{\"difficulty\": 2}'")
    from agentrl.registry import check_kwargs
    from agentrl.sandboxes.pool import default_concurrency

    check_kwargs(args.env, env_kwargs, "--env-kwargs")
    check_num_tasks(args)
    model = args.model or ("" if args.oracle else "smollm2-135m-instruct")
    cfg = EvalConfig(env=args.env, env_kwargs=env_kwargs, out=args.out, split=args.split, samples=args.samples,
                     concurrency=args.concurrency or default_concurrency(), oracle=args.oracle, model=model,
                     tasks_path=args.tasks, snapshots=args.snapshots, limit=args.limit, num_tasks=args.num_tasks or 20,
                     seed=args.task_seed, backend=args.backend, temperature=args.temperature,
                     transcripts=not args.no_transcripts, **episode_budget(args))
    urls = model.split(",") if model.startswith(("http://", "https://")) else []
    if urls:
        check_server(urls)

    async def main() -> list[dict]:
        engine = tokenizer = None
        if not args.oracle:
            from agentrl.config import Config, ModelConfig, RolloutConfig
            from agentrl.engine.build import build_engine
            from agentrl.models import load_tokenizer

            tokenizer = load_tokenizer((args.tokenizer or "smollm2-135m-instruct") if urls else model)
            run_cfg = Config(model=ModelConfig(name=model), rollout=RolloutConfig(engine_dtype="float32"))
            engine = build_engine(run_cfg, tokenizer=tokenizer, urls=urls, seed=args.seed)
        try:
            return await run_eval(cfg, engine, tokenizer, progress=not args.quiet, heartbeat_s=args.progress_every)
        finally:
            if engine is not None:
                await engine.close()

    try:
        records = asyncio.run(main())
    except KeyboardInterrupt:
        from agentrl.cli import interrupted_how, interrupted_status

        saved = _finished(args.out)
        print(f"agentrl eval: {interrupted_how()}; {saved} finished episode(s) are in {args.out}: rerun the same "
              "command to resume (it skips them)", file=sys.stderr)
        return interrupted_status()
    if records and all(r["infra_error"] for r in records):
        first = next((r["error"] for r in records if r.get("error")), "no detail")
        print(f"agentrl eval: no episode could be scored: {len(records)} infra error(s), first: {first}; "
              "rerun the command to retry them", file=sys.stderr)
        return 1
    return 0


def _finished(out: str) -> int:
    """Episode records in the --out file (what a rerun skips, infra errors aside)."""
    try:
        with open(out, encoding="utf-8") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return 0
