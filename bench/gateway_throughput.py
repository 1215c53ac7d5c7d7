"""The gateway's cost: the same env played by the in-process agent loop and by an OpenAI-style program through
the session gateway (HTTP on loopback, JSON, rendering per call), on one engine, in one run.

Workload: a 3-turn echo env (tests/envs/test_external.py's EchoEnv), 8 tasks × 4 members = 32 episodes per
round, at most 32 new tokens per turn, temperature 1, the same task and sampling seeds for both paths (so
both sample the same tokens; the bench checks that they do). Rounds alternate agent loop / gateway.
Goal: gateway episodes/s ≥ 0.8 × agent-loop episodes/s.

  python bench/gateway_throughput.py [--model smollm2-135m-instruct] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import agentrl  # noqa: F401  # isort: skip  (first: sets OMP_WAIT_POLICY before torch loads libgomp)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrl.engine.embedded import EmbeddedEngine  # noqa: E402
from agentrl.models import load_tokenizer  # noqa: E402
from agentrl.rollout.agent_loop import LoopConfig  # noqa: E402
from agentrl.rollout.chat import ChatRenderer  # noqa: E402
from agentrl.rollout.collector import collect_group  # noqa: E402
from agentrl.rollout.programs import load_agent  # noqa: E402
from tests.envs.test_external import ENV_AS_AGENT  # noqa: E402


async def round_(env_factory, engine, renderer, cfg, seeds, group_size) -> tuple[float, list]:
    """Seconds for one round of groups (all concurrently) and the trajectories."""
    t0 = time.perf_counter()
    groups = await asyncio.gather(*(collect_group(env_factory, engine, renderer, seed=s, group_size=group_size,
                                                  cfg=cfg) for s in seeds))
    return time.perf_counter() - t0, [t for g in groups for t in g]


def main() -> int:
    """Run both paths `--rounds` times each and print episodes/s and the ratio."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=32)
    args = p.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="gateway_bench_"))
    (folder / "echo_agent.py").write_text(ENV_AS_AGENT)
    name = f"external:{folder / 'echo_agent.py'}:run"
    module, _ = load_agent(name.removeprefix("external:"))
    renderer = ChatRenderer(load_tokenizer(args.model))
    engine = EmbeddedEngine(args.model, seed=0)
    cfg = LoopConfig(max_new_tokens=args.max_new_tokens, max_context_tokens=2048, max_turns=5, episode_timeout_s=600)
    seeds = list(range(100, 100 + args.tasks))
    n = args.tasks * args.group_size
    print(f"gateway bench: {args.model}, {args.tasks} tasks × {args.group_size} = {n} episodes/round, 3 turns, "
          f"≤ {args.max_new_tokens} new tokens/turn, {args.rounds} rounds each", flush=True)

    async def run() -> dict[str, list[float]]:
        times: dict[str, list[float]] = {"agent loop": [], "gateway": []}
        for r in range(args.rounds):
            s_loop, loop = await round_(module.EchoEnv, engine, renderer, cfg, seeds, args.group_size)
            s_gw, gw = await round_(lambda: agentrl.make(name), engine, renderer, cfg, seeds, args.group_size)
            same = sum(a.segments[0].token_ids == b.segments[0].token_ids for a, b in zip(loop, gw, strict=True)
                       if a.segments and b.segments)
            ended = {t.termination.value for t in loop + gw}
            print(f"round {r}: agent loop {s_loop:.2f}s, gateway {s_gw:.2f}s; identical token ids in {same}/{n} "
                  f"episodes; endings {sorted(ended)}", flush=True)
            times["agent loop"].append(s_loop)
            times["gateway"].append(s_gw)
        return times

    try:
        times = asyncio.run(run())
    finally:
        asyncio.run(engine.close())
    best = {k: n / min(v) for k, v in times.items()}
    ratio = best["gateway"] / best["agent loop"]
    print(f"agent loop {best['agent loop']:.2f} episodes/s, gateway {best['gateway']:.2f} episodes/s (best round)")
    print(f"gateway / agent loop = {ratio:.2f}× (goal ≥ 0.8×): {'ok' if ratio >= 0.8 else 'BELOW GOAL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
