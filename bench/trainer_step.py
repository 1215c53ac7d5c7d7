"""Training-step benchmark on the workload of shared/reference/peer_trl.md (TRL GRPOTrainer on this CPU).

Workload: SmolLM2-135M-Instruct fp32; single-turn "What is A + B?" (A, B in 1..20, seed 0) with the chat
template's default system prompt; reward 1 if the last integer equals A+B; 8 prompts × 4 completions per
step, ≤ 64 completion tokens, temperature 1.0; AdamW lr 1e-6, grad-norm clip 1.0; no reference model.

Prints per step: wall time, generation tokens/s, training tokens/s, peak RSS; the CPU's fp32 matmul
ceiling is probed in the same run and converted to a training-token ceiling (≈ 6 × params FLOP/token).
Ratios are against TRL's figures (no gradient checkpointing) from that reference, measured on this kind
of machine: step 75.8 s, training 58.1 tok/s, peak RSS 11.2 GB.

    .venv/bin/python bench/trainer_step.py [--steps 6] [--model smollm2-135m-instruct]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import resource
import statistics
import time

import torch

import agentrl
from agentrl.config import load_config
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.loop import _update, build_engine, sync_weights
from agentrl.trainer.pipeline import collect_step
from agentrl.trainer.update import update_config_from
from agentrl.types import user

TRL = {"step_s": 75.8, "train_tok_s": 58.1, "peak_rss_gb": 11.2, "gen_tok_s": 53.6}


class AdditionEnv(agentrl.AgentEnv):
    """peer_trl's task: one turn, "What is A + B?", reward 1 if the last integer in the reply is A+B."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.a, self.b = (int(x) for x in self.np_random.integers(1, 21, size=2))
        return [user(f"What is {self.a} + {self.b}?")], {"task_id": f"{self.a}+{self.b}"}

    def step(self, action):
        numbers = re.findall(r"-?\d+", action)
        return [], float(bool(numbers) and int(numbers[-1]) == self.a + self.b), True, False, {}


def matmul_gflops(n: int = 2048, reps: int = 5) -> float:
    """Best-of-reps fp32 matmul throughput on this CPU."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


async def main(args) -> None:
    agentrl.register("bench_addition", AdditionEnv, description="peer_trl addition workload")
    cfg = load_config(None, overrides=[
        "env.name=bench_addition", f"model.name={args.model}", "rollout.tasks_per_step=8", "rollout.group_size=4",
        "rollout.max_new_tokens=64", "rollout.max_context_tokens=512", "rollout.max_turns=1",
        "rollout.dynamic_sampling=false", "trainer.lr=1e-6", "trainer.grad_clip=1.0", "trainer.micro_batch_tokens=1024",
    ])
    gflops = matmul_gflops()
    tok = load_tokenizer(args.model)
    model = load_model(args.model).train()
    n_params = sum(p.numel() for p in model.parameters())
    ceiling = gflops * 1e9 / (6 * n_params)
    print(f"CPU fp32 matmul: {gflops:.1f} GFLOP/s → training ceiling ≈ {ceiling:.0f} tok/s for {n_params / 1e6:.0f}M params")
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.trainer.lr)
    engine = build_engine(cfg, model, tok)  # the same embedded copy of the policy that `agentrl train` uses
    ucfg = update_config_from(cfg)
    rows = []
    try:
        for step in range(args.steps):
            t0 = time.perf_counter()
            batch = await collect_step(cfg, lambda: agentrl.make("bench_addition"), engine, tok, step)
            t1 = time.perf_counter()
            metrics = await asyncio.to_thread(_update, model, optimizer, batch, ucfg, version=step, ref_model=None)
            await sync_weights(engine, model, None, step + 1)
            t2 = time.perf_counter()
            gen_tokens = sum(t.num_action_tokens for t in batch.all_trajectories)
            rows.append({
                "step_s": t2 - t0, "gen_s": t1 - t0, "train_s": t2 - t1,
                "gen_tok_s": gen_tokens / (t1 - t0), "train_tok_s": metrics["trainer/tokens"] / (t2 - t1),
                "reward": batch.metrics["rollout/reward_mean"],
                "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
            })
            r = rows[-1]
            print(f"step {step + 1}: {r['step_s']:.1f} s (gen {r['gen_s']:.1f} s, {r['gen_tok_s']:.1f} tok/s; "
                  f"train {r['train_s']:.1f} s, {r['train_tok_s']:.1f} tok/s)  reward {r['reward']:.3f}  peak RSS {r['rss_gb']:.2f} GB")
    finally:
        await engine.close()
    steady = rows[1:] or rows
    mean = {k: statistics.mean(r[k] for r in steady) for k in steady[0]}
    peak = max(r["rss_gb"] for r in rows)
    print(f"\nmeans of steps 2–{len(rows)}:")
    print(f"  step time        {mean['step_s']:6.1f} s    vs TRL {TRL['step_s']} s     ratio {mean['step_s'] / TRL['step_s']:.2f}× (goal ≤ 0.6×)")
    print(f"  training tok/s   {mean['train_tok_s']:6.1f}      vs TRL {TRL['train_tok_s']}      ratio {mean['train_tok_s'] / TRL['train_tok_s']:.2f}× (goal ≥ 1.5×); "
          f"{mean['train_tok_s'] / ceiling:.0%} of this CPU's ceiling")
    print(f"  generation tok/s {mean['gen_tok_s']:6.1f}      vs TRL {TRL['gen_tok_s']}      ratio {mean['gen_tok_s'] / TRL['gen_tok_s']:.2f}×")
    print(f"  peak RSS         {peak:6.2f} GB   vs TRL {TRL['peak_rss_gb']} GB   ratio {peak / TRL['peak_rss_gb']:.2f}× (goal ≤ 0.25×)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--model", default="smollm2-135m-instruct")
    asyncio.run(main(p.parse_args()))
