"""Learning benchmark on `calc` with the default model on CPU: held-out accuracy of the base model, after the
expert warm start (SFT), and after GRPO from that checkpoint, with the wall time of each phase.

Accuracy is the mean reward of greedy episodes on held-out tasks (seeds disjoint from training), with a 95%
Wilson interval. GRPO should move accuracy clearly beyond the SFT checkpoint. A benchmark, not a test:

    .venv/bin/python bench/learn_calc.py [--sft-episodes 96] [--grpo-steps 12] [--eval 100] [--out runs/learn_calc]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from agentrl.config import load_config
from agentrl.models import load_model, load_tokenizer
from agentrl.rollout.embedded import EmbeddedEngine
from agentrl.trainer.heldout import evaluate
from agentrl.trainer.loop import train


def held_out(cfg, model_name: str, episodes: int):
    """Greedy held-out accuracy of a model (name or directory)."""
    tok = load_tokenizer(model_name)

    async def go():
        engine = EmbeddedEngine(load_model(model_name), tok, seed=0)
        try:
            return await evaluate(cfg, engine, tok, episodes)
        finally:
            await engine.close()

    return asyncio.run(go())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--sft-episodes", type=int, default=96)
    p.add_argument("--grpo-steps", type=int, default=12)
    p.add_argument("--eval", type=int, default=100)
    p.add_argument("--out", default="runs/learn_calc")
    p.add_argument("overrides", nargs="*", help="extra dotted config overrides for the GRPO phase")
    args = p.parse_args()
    out = Path(args.out)
    base = [f"model.name={args.model}", "trainer.tensorboard=false", f"trainer.eval_episodes={args.eval}"]
    rows = []

    cfg = load_config("calc", overrides=base)
    t = time.perf_counter()
    rows.append(("base model", held_out(cfg, args.model, args.eval), time.perf_counter() - t))
    print(f"base: {rows[-1][1]}", flush=True)

    sft_cfg = load_config("calc", overrides=[*base, f"sft.episodes={args.sft_episodes}", "trainer.steps=0",
                                              f"trainer.run_dir={out / 'sft'}"])
    t = time.perf_counter()
    sft = train(sft_cfg)
    sft_time = time.perf_counter() - t
    t = time.perf_counter()
    rows.append(("after SFT", held_out(cfg, str(sft.checkpoint / "model"), args.eval), sft_time))
    print(f"sft: {rows[-1][1]}", flush=True)

    grpo_cfg = load_config("calc", overrides=[*base, f"trainer.steps={args.grpo_steps}", "sft.episodes=0",
                                               f"trainer.run_dir={out / 'grpo'}", *args.overrides])
    t = time.perf_counter()
    grpo = train(grpo_cfg, init_from=str(sft.checkpoint))
    grpo_time = time.perf_counter() - t
    rows.append(("after GRPO", held_out(cfg, str(grpo.checkpoint / "model"), args.eval), grpo_time))

    print(f"\ncalc held-out accuracy (greedy, {args.eval} tasks, 95% Wilson CI); model {args.model}")
    print(f"{'phase':<12} {'accuracy':>9} {'95% CI':>17} {'wall time':>10}")
    for name, h, secs in rows:
        print(f"{name:<12} {h.mean:9.3f} {f'[{h.low:.3f}, {h.high:.3f}]':>17} {secs:9.0f}s")
    print(f"GRPO − SFT: {rows[2][1].mean - rows[1][1].mean:+.3f}  (runs in {out})")


if __name__ == "__main__":
    main()
