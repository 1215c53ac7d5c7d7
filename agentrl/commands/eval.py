"""Run sandboxed evaluation episodes of a model (or an oracle) on an env split, resumably.

    agentrl eval --env swe_lite --model smollm2-135m-instruct --split dev --samples 2 --concurrency 2 --out r.jsonl
    agentrl eval --env swe_lite --model http://10.0.0.5:30000 --split test --samples 8 --concurrency 16
    agentrl eval --env swe_lite --oracle gold --split test --out gold.jsonl     # checks the grader: 100 %

One JSON line per finished episode goes to --out as it finishes; running the same command again skips the
episodes already there. The summary table gives resolved rate, pass@k (unbiased), mean turns, format-error
rate, infra errors (masked from the rates) and time.
"""

from __future__ import annotations

import argparse

from agentrl.errors import AgentRLError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `agentrl eval`."""
    parser.add_argument("--env", default="swe_lite", help="environment (only swe_lite has an eval task list today)")
    parser.add_argument("--model", default=None,
                        help="model name or directory for the embedded engine, or SGLang server URL(s), comma-separated "
                             "(default: smollm2-135m-instruct)")
    parser.add_argument("--tokenizer", default=None, help="tokenizer for --model URLs (default: the default model's)")
    parser.add_argument("--oracle", choices=("gold", "empty"), default=None,
                        help="grade the gold patch or no change instead of running a model")
    parser.add_argument("--split", default="test", help="train | dev | test (default test)")
    parser.add_argument("--samples", type=int, default=1, help="episodes per task (pass@k for k <= samples)")
    parser.add_argument("--concurrency", type=int, default=None, help="episodes in flight (default: sandbox default)")
    parser.add_argument("--out", default="results.jsonl", help="JSONL of episode records (appended, resumable)")
    parser.add_argument("--tasks", default=None, help="a swe_lite tasks JSONL (default: the shipped corpus)")
    parser.add_argument("--snapshots", default=None,
                        help="with --tasks: read SWE-bench-style JSONL with repository snapshots from this folder")
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks of the split")
    parser.add_argument("--backend", default="auto", help="sandbox backend: auto | docker | bwrap | local")
    parser.add_argument("--max-steps", type=int, default=30, help="tool calls per episode")
    parser.add_argument("--wall-clock-s", type=float, default=600.0,
                        help="seconds per episode, generation included (then graded as it stands)")
    parser.add_argument("--max-new-tokens", type=int, default=384, help="tokens per model turn")
    parser.add_argument("--max-context-tokens", type=int, default=8192, help="context budget per episode")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=0, help="engine sampling seed")
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def run(args: argparse.Namespace) -> int:
    """Build the engine (unless --oracle), run the job, print the summary."""
    import asyncio

    from agentrl.evaluation import EvalConfig, run_eval

    if args.env not in ("swe_lite", "agentrl/swe_lite-v0"):
        raise AgentRLError(f"eval supports --env swe_lite (got {args.env!r}); other envs have no task splits yet")
    if args.oracle and args.model:
        raise AgentRLError("pass either --model or --oracle, not both")
    if args.samples < 1:
        raise AgentRLError(f"--samples must be at least 1, got {args.samples}")
    if args.snapshots and not args.tasks:
        raise AgentRLError("--snapshots needs --tasks (the SWE-bench-style JSONL)")
    from agentrl.sandboxes.pool import default_concurrency

    env_kwargs = {"wall_clock_s": args.wall_clock_s}
    if args.snapshots:
        from agentrl.envs.swe_lite.tasks import load_swebench

        env_kwargs["tasks"] = [t for t in load_swebench(args.tasks, args.snapshots, split=args.split)
                               if t.split == args.split]
    model = args.model or ("" if args.oracle else "smollm2-135m-instruct")
    cfg = EvalConfig(out=args.out, split=args.split, samples=args.samples,
                     concurrency=args.concurrency or default_concurrency(), oracle=args.oracle, model=model,
                     tasks_path=None if args.snapshots else args.tasks, limit=args.limit, backend=args.backend,
                     max_steps=args.max_steps, max_new_tokens=args.max_new_tokens,
                     max_context_tokens=args.max_context_tokens, temperature=args.temperature,
                     episode_timeout_s=args.wall_clock_s + 300, env_kwargs=env_kwargs)

    async def main() -> None:
        engine = tokenizer = None
        if not args.oracle:
            from agentrl.models import load_tokenizer

            if model.startswith(("http://", "https://")):
                from agentrl.rollout.sglang_client import SGLangClient

                engine = SGLangClient(model.split(","))
                tokenizer = load_tokenizer(args.tokenizer or "smollm2-135m-instruct")
            else:
                from agentrl.rollout.embedded import EmbeddedEngine

                tokenizer = load_tokenizer(model)
                engine = EmbeddedEngine(model, tokenizer, seed=args.seed)
        try:
            await run_eval(cfg, engine, tokenizer, progress=not args.quiet)
        finally:
            if engine is not None:
                await engine.close()

    asyncio.run(main())
    return 0
