"""Training-step benchmark on the peer workload (TRL GRPOTrainer's, on this CPU; bench/peer/compare_trl.py).

Workload: SmolLM2-135M-Instruct fp32; single-turn "What is A + B?" (A, B in 1..20, seed 0) with the chat
template's default system prompt; reward 1 if the last integer equals A+B; 8 prompts × 4 completions per
step, all 32 in flight at once (TRL's generation batch), ≤ 64 completion tokens, temperature 1.0; AdamW lr 1e-6, grad-norm clip 1.0; no reference model.

Runs the workload once per precision in --precisions (default float32 then bfloat16: the trainer's
model.compute_dtype and the engine's rollout.engine_dtype both set to it), and prints per step: wall time,
generation tokens/s, training tokens/s (the update alone; the weight push to the engine is timed apart), peak
RSS; then the bf16/fp32 ratios. The CPU's fp32 and bf16 matmul rates and its bf16 flags are probed in the same
run and converted to training-token ceilings (≈ 6 × params FLOP/token), which the training rates are reported
against. The comparison with TRL runs TRL in the same job: `make bench-peer` (bench/peer/compare_trl.py).

    .venv/bin/python bench/trainer_step.py [--steps 6] [--precisions float32,bfloat16] [--json out.json]
    [--model smollm2-135m-instruct] [trainer.key=value ...]   (extra overrides, e.g. trainer.micro_batch_tokens=4096)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import statistics
import time

import agentrl  # isort: skip  (first: sets OMP_WAIT_POLICY before torch loads libgomp)
import torch

from agentrl import precision
from agentrl.config import load_config
from agentrl.engine.build import build_engine  # noqa: E402
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.loop import prepare_policy
from agentrl.trainer.pipeline import collect_step
from agentrl.trainer.update import train_on_batch, update_config_from
from agentrl.types import user


class AdditionEnv(agentrl.AgentEnv):
    """The peer workload's task: one turn, "What is A + B?", reward 1 if the last integer in the reply is A+B."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.a, self.b = (int(x) for x in self.np_random.integers(1, 21, size=2))
        return [user(f"What is {self.a} + {self.b}?")], {"task_id": f"{self.a}+{self.b}"}

    def step(self, action):
        numbers = re.findall(r"-?\d+", action)
        return [], float(bool(numbers) and int(numbers[-1]) == self.a + self.b), True, False, {}


def profile_update(model, optimizer, batch, ucfg) -> None:
    """Where one update's time goes (on a batch of its own): forward to the last hidden state, chunked logprobs,
    loss + backward, clip + AdamW. The weights are restored afterwards."""
    from agentrl.algo.logprobs import token_logprobs_from_hidden
    from agentrl.algo.losses import loss_normalizer, policy_loss
    from agentrl.trainer.batch import build_minibatch, microbatches

    mb = build_minibatch(batch.trajectories, batch.advantages)
    norm = loss_normalizer(mb.loss_mask, mb.traj_index, mb.num_trajectories)
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    print(f"profile: {mb.num_tokens} tokens in {len(mb.segment_bounds)} rows (longest "
          f"{max(e - s for s, e in mb.segment_bounds)}), budget {ucfg.micro_batch_tokens}")
    micros = microbatches(mb, ucfg.micro_batch_tokens)
    t = {"forward": 0.0, "logprobs": 0.0, "backward": 0.0, "clip+step": 0.0}
    optimizer.zero_grad(set_to_none=True)
    for micro in micros:
        s, e = micro.start, micro.end
        t0 = time.perf_counter()
        with precision.autocast(precision.DTYPES[ucfg.compute_dtype]):
            out = model.base_model(input_ids=micro.input_ids, position_ids=micro.position_ids,
                                   use_cache=False).last_hidden_state
        hidden = out[micro.valid].float()
        t1 = time.perf_counter()
        lp, _ = token_logprobs_from_hidden(hidden, model.get_output_embeddings().weight, mb.targets[s:e],
                                           chunk=ucfg.logprob_chunk, entropy=True)
        t2 = time.perf_counter()
        loss, _ = policy_loss(ucfg.loss, lp, lp.detach(), mb.advantages[s:e], mb.loss_mask[s:e],
                              traj_index=mb.traj_index[s:e], norm=norm, cfg=ucfg.loss_cfg)
        loss.backward()
        t3 = time.perf_counter()
        t["forward"] += t1 - t0
        t["logprobs"] += t2 - t1
        t["backward"] += t3 - t2
    t0 = time.perf_counter()
    torch.nn.utils.clip_grad_norm_(model.parameters(), ucfg.grad_clip)
    optimizer.step()
    t["clip+step"] = time.perf_counter() - t0
    optimizer.zero_grad(set_to_none=True)
    model.load_state_dict(saved)
    total = sum(t.values())
    shape = "×".join(str(x) for x in micros[0].input_ids.shape)
    print(f"  {len(micros)} micro-batch(es), first {shape}: total {total:.1f} s = "
          + ", ".join(f"{k} {v:.1f} s ({v / total:.0%})" for k, v in t.items())
          + f"; {mb.num_tokens / total:.1f} tok/s")


async def run_precision(args, dtype: str, ceiling: float) -> dict:
    """The workload's steps with trainer and engine in `dtype`; returns the means of steps 2..N (and peak RSS)."""
    cfg = load_config(None, overrides=[
        "env.name=bench_addition", f"model.name={args.model}", "rollout.tasks_per_step=8", "rollout.group_size=4",
        "rollout.max_new_tokens=64", "rollout.max_context_tokens=512", "rollout.max_turns=1",
        "rollout.concurrency=32",  # the step's 32 episodes at once, as TRL generates its batch of 32 (default: 16)
        "rollout.dynamic_sampling=false", "trainer.lr=1e-6", "trainer.grad_clip=1.0",
        "trainer.micro_batch_tokens=4096", "trainer.gradient_checkpointing=false",
        f"model.compute_dtype={dtype}", f"rollout.engine_dtype={dtype}", *args.overrides,
    ])
    print(f"\n== {dtype}: trainer {cfg.model.compute_dtype}, engine {cfg.rollout.engine_dtype}")
    tok = load_tokenizer(args.model)
    model = load_model(args.model).train()
    optimizer = prepare_policy(model, cfg.trainer)  # as `agentrl train`: checkpointing (off here, as TRL), AdamW
    engine = build_engine(cfg, model, tok)  # the same embedded copy of the policy that `agentrl train` uses
    ucfg = update_config_from(cfg)
    rows = []
    try:
        if args.profile:  # on a batch of its own, before (and outside) the timed steps
            batch = await collect_step(cfg, lambda: agentrl.make("bench_addition"), engine, tok, 10_000)
            await asyncio.to_thread(profile_update, model, optimizer, batch, ucfg)
        for step in range(args.steps):
            t0 = time.perf_counter()
            batch = await collect_step(cfg, lambda: agentrl.make("bench_addition"), engine, tok, step)
            t1 = time.perf_counter()

            metrics = await asyncio.to_thread(train_on_batch, model, optimizer, batch, ucfg, version=step,
                                              ref_model=None)
            t2 = time.perf_counter()
            await engine.push_weights(model, version=step + 1, staging_dir=None)
            t3 = time.perf_counter()
            gen_tokens = sum(t.num_action_tokens for t in batch.all_trajectories)
            rows.append({
                "step_s": t3 - t0, "gen_s": t1 - t0, "train_s": t2 - t1, "sync_s": t3 - t2,
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
    mean["peak_rss_gb"] = max(r["rss_gb"] for r in rows)
    print(f"means of steps {'2' if len(rows) > 1 else '1'}–{len(rows)} (machine shared: absolute numbers are noisy; TRL side by side: make bench-peer):")
    print(f"  step time        {mean['step_s']:6.1f} s (weight push {mean['sync_s']:.2f} s)")
    print(f"  training tok/s   {mean['train_tok_s']:6.1f}      {mean['train_tok_s'] / ceiling:.0%} of the {dtype} ceiling probed in this run")
    print(f"  generation tok/s {mean['gen_tok_s']:6.1f}")
    print(f"  peak RSS         {mean['peak_rss_gb']:6.2f} GB")
    return dict(mean, ceiling_tok_s=ceiling, steps=len(rows))


async def main(args) -> None:
    """Probe the matmul ceilings, run each precision, print the ratios; --json gets {precision: means}."""
    agentrl.register("bench_addition", AdditionEnv, description="peer addition workload")
    precisions = args.precisions.split(",")
    n_params = sum(p.numel() for p in load_model(args.model).parameters())
    flags = precision.bf16_flags() or ["none"]
    print(f"CPU bf16 flags: {', '.join(flags)}; `auto` picks {precision.resolve('auto').describe()}")
    ceilings, gflops = {}, {}
    for name in precisions:
        gflops[name] = precision.matmul_gflops(precision.DTYPES[name])
        ceilings[name] = gflops[name] * 1e9 / (6 * n_params)
        print(f"CPU {name} matmul: {gflops[name]:.1f} GFLOP/s → training ceiling ≈ {ceilings[name]:.0f} tok/s "
              f"for {n_params / 1e6:.0f}M params")
    results = {name: await run_precision(args, name, ceilings[name]) for name in precisions}
    for name in results:
        results[name]["gflops"] = gflops[name]
    if "float32" in results and "bfloat16" in results:
        a, b = results["float32"], results["bfloat16"]
        print("\nbf16 / fp32, same run (goals on a CPU with bf16 units: training ≥ 2×, generation ≥ 1.8×):")
        print(f"  matmul {b['gflops'] / a['gflops']:.2f}× | training tok/s {b['train_tok_s'] / a['train_tok_s']:.2f}× | "
              f"generation tok/s {b['gen_tok_s'] / a['gen_tok_s']:.2f}× | step time {b['step_s'] / a['step_s']:.2f}× | "
              f"peak RSS {b['peak_rss_gb'] / a['peak_rss_gb']:.2f}×")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--json", default=None, help="also write the means as JSON here (bench/peer/compare_trl.py reads it)")
    p.add_argument("--precisions", default="float32,bfloat16", help="comma-separated: float32, bfloat16 (in this order)")
    p.add_argument("--profile", action="store_true", help="first break one update down by phase")
    p.add_argument("overrides", nargs="*", help="extra dotted config overrides")
    asyncio.run(main(p.parse_args()))
