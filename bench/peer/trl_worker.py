"""TRL's side of bench/peer/compare_trl.py: GRPOTrainer on the peer workload, run inside the peer venv (torch, trl).

Imports nothing from agentrl (that venv does not have it). Times each optimizer step with a callback and
the generation phase by wrapping the trainer's generate-and-score call; writes a JSON summary (means of
steps 2..N) for the parent to tabulate.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import statistics
import time


def prompts(n: int = 64, seed: int = 0) -> list[dict]:
    """64 chat prompts "What is A + B?" with A, B uniform in 1..20 (seed 0), as bench/peer/compare_trl.py fixes them."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(1, 20), rng.randint(1, 20)
        out.append({"prompt": [{"role": "user", "content": f"What is {a} + {b}?"}], "answer": a + b})
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True, help="local HF model directory (never a hub id)")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--json", required=True)
    p.add_argument("--bf16", action="store_true", help="TRL's own mixed-precision switch (GRPOConfig bf16=True)")
    args = p.parse_args()

    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    rewards: list[float] = []

    def addition_reward(completions, answer, **_):
        out = []
        for c, a in zip(completions, answer, strict=True):
            text = c[-1]["content"] if isinstance(c, list) else c
            nums = re.findall(r"-?\d+", text)
            out.append(float(bool(nums) and int(nums[-1]) == a))
        rewards.extend(out)
        return out

    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    cfg = GRPOConfig(
        output_dir="/tmp/agentrl-peer-trl", use_cpu=True, bf16=args.bf16, use_vllm=False, beta=0.0, num_iterations=1,
        max_completion_length=64, num_generations=4, per_device_train_batch_size=32, learning_rate=1e-6,
        max_grad_norm=1.0, temperature=1.0, top_k=0, top_p=1.0, gradient_checkpointing=False, report_to="none",
        max_steps=args.steps, logging_steps=1, save_strategy="no", seed=0,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=[addition_reward], args=cfg,
                          train_dataset=Dataset.from_list(prompts()), processing_class=tok)

    phase = {"gen_s": 0.0, "gen_tokens": 0, "train_tokens": 0}
    generate = trainer._generate_and_score_completions

    def timed_generate(*a, **k):
        t = time.perf_counter()
        out = generate(*a, **k)
        phase["gen_s"] += time.perf_counter() - t
        phase["gen_tokens"] += int(out["completion_mask"].sum())
        phase["train_tokens"] += int(out["completion_mask"].sum() + out["prompt_mask"].sum())
        return out

    trainer._generate_and_score_completions = timed_generate
    rows: list[dict] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *_, **__):
            phase.update(gen_s=0.0, gen_tokens=0, train_tokens=0, start=time.perf_counter(), n_rewards=len(rewards))

        def on_step_end(self, *_, **__):
            step_s = time.perf_counter() - phase["start"]
            train_s = step_s - phase["gen_s"]
            new = rewards[phase["n_rewards"]:]
            rows.append({
                "step_s": step_s, "gen_s": phase["gen_s"], "train_s": train_s,
                "gen_tok_s": phase["gen_tokens"] / max(phase["gen_s"], 1e-9),
                "train_tok_s": phase["train_tokens"] / max(train_s, 1e-9),
                "reward": statistics.mean(new) if new else 0.0,
                "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
            })
            r = rows[-1]
            print(f"TRL step {len(rows)}: {r['step_s']:.1f} s (gen {r['gen_s']:.1f} s, {r['gen_tok_s']:.1f} tok/s; "
                  f"train {r['train_s']:.1f} s, {r['train_tok_s']:.1f} tok/s) reward {r['reward']:.3f} "
                  f"peak RSS {r['rss_gb']:.2f} GB", flush=True)

    trainer.add_callback(StepTimer())
    trainer.train()
    steady = rows[1:] or rows
    summary = {k: statistics.mean(r[k] for r in steady) for k in steady[0]}
    summary["peak_rss_gb"] = max(r["rss_gb"] for r in rows)
    summary["steps"] = len(rows)
    with open(args.json, "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main()
