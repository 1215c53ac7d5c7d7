"""Sharded training (trainer.strategy=fsdp) against one process: step time and peak memory per rank, in one run.

Two workloads, each trained by one process (`single`) and by --ranks FSDP2 ranks under torchrun (`fsdp`), every
run in a fresh process so each peak is its own:

1. tiny: the trainer's own update (update.train_on_batch, the trainer's AdamW) on a synthetic batch of 8
   trajectories, --steps steps after one warm-up. Prints the median step time and peak memory of every rank,
   and checks the math: the last step's loss and the final weights of fsdp equal single's (max |Δw|). On a CPU
   with 2 cores, 2 ranks share the cores, so this is a correctness run, not a speed-up measurement.
2. wide: a random Llama too big for a per-process memory budget (--budget-gib, simulated: nothing is capped;
   the run reports whether each process's training state stays under it). Each rank builds it on the meta
   device and materializes only its shards, so no rank ever holds the whole model. Reported per rank: the
   training state it holds (parameters + gradients + AdamW moments, counted from its tensors: 16 bytes per
   parameter in one process, 16/N when sharded) and its peak memory (CPU: peak RSS, which also holds the Python
   and torch libraries and the activations; CUDA: torch.cuda.max_memory_allocated).

    .venv/bin/python bench/fsdp_step.py [--ranks 2] [--steps 3] [--device cpu|cuda] [--budget-gib 1.5]
                                        [--wide-hidden 768] [--wide-layers 8] [--json out.json]

With --device cuda every rank takes one GPU (NCCL); --ranks 1 still runs the NCCL path on a single GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import agentrl  # isort: skip  (first: sets OMP_WAIT_POLICY before torch loads libgomp)
import torch

from agentrl.config import load_config
from agentrl.precision import cpu_model
from agentrl.trainer.collect import StepBatch
from agentrl.types import Segment, Trajectory

GIB = 2**30


def synthetic_batch(vocab: int, seed: int = 0) -> StepBatch:
    """8 one-turn trajectories of 100–300 tokens, a third of them sampled, behaviour logprobs near −10."""
    g = torch.Generator().manual_seed(seed)
    trajs, advantages = [], []
    for i in range(8):
        seg = Segment()
        n = int(torch.randint(100, 300, (1,), generator=g))
        seg.append_prompt(torch.randint(5, vocab, (n - n // 3,), generator=g).tolist())
        k = n // 3
        seg.append_sampled(torch.randint(5, vocab, (k,), generator=g).tolist(),
                           (-10.0 + 0.3 * torch.randn(k, generator=g)).tolist(), [0] * k)
        trajs.append(Trajectory(id=str(i), group_id=str(i // 4), env_id="bench", task_id=str(i // 4), segments=[seg]))
        advantages.append(float(torch.randn(1, generator=g)))
    return StepBatch(trajectories=trajs, advantages=advantages, all_trajectories=trajs, seeds=[])


def _wide_config(hidden: int, layers: int):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=49152, hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                       num_attention_heads=max(hidden // 64, 1), num_key_value_heads=max(hidden // 64, 1),
                       max_position_embeddings=2048, tie_word_embeddings=True)


def _build(workload: str, args, world):
    """The workload's model on this rank: tiny loaded whole then sharded; wide built on the meta device, sharded,
    then only this rank's shards materialized (random init)."""
    from agentrl.models import load_model
    from agentrl.trainer.strategy import shard_policy

    device = world.device if world is not None else torch.device(args.device)
    if workload == "tiny":
        model = load_model("tiny", device=str(device)).train()
        return shard_policy(model, world, compute_dtype="float32") if world is not None else model
    from transformers import LlamaForCausalLM

    config = _wide_config(args.wide_hidden, args.wide_layers)
    torch.manual_seed(0)
    if world is None:
        return LlamaForCausalLM(config).to(device).train()
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    shard_policy(model, world, compute_dtype="float32")
    model.to_empty(device=device)  # this rank's shards only
    with torch.no_grad():
        for p in model.parameters():
            p.to_local().normal_(0.0, 0.02)
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    model.model.rotary_emb = LlamaRotaryEmbedding(config).to(device)  # its buffers were left empty on meta
    return model.train()


def _local_bytes(t) -> int:
    local = t.to_local() if hasattr(t, "to_local") else t
    return local.numel() * local.element_size()


def _state_bytes(model, optimizer) -> int:
    """Bytes of the training state this rank holds: its parameters, their gradients (as large as the trainable
    parameters during a step; freed after it) and the optimizer's tensors."""
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += _local_bytes(p) * (2 if p.requires_grad else 1)
    for state in optimizer.state.values():
        total += sum(_local_bytes(v) for v in state.values() if torch.is_tensor(v) and v.dim() > 0)
    return total


def _peak_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def worker(args) -> None:
    """One run (single, or one rank under torchrun): train --steps steps, write this rank's figures as JSON."""
    from agentrl.trainer.distributed import join
    from agentrl.trainer.memory import build_optimizer
    from agentrl.trainer.sharded import full_state_dict
    from agentrl.trainer.update import train_on_batch, update_config_from

    world = join(args.device, 600.0) if args.sharded else None
    cfg = load_config(None, overrides=["env.name=calc", "model.name=tiny", "model.compute_dtype=float32",
                                       f"trainer.strategy={'fsdp' if world else 'single'}", "trainer.lr=1e-4",
                                       "trainer.micro_batch_tokens=512", "rollout.max_context_tokens=512"])
    model = _build(args.workload, args, world)
    optimizer = build_optimizer(model, cfg.trainer)
    batch = synthetic_batch(int(model.config.vocab_size))
    ucfg = update_config_from(cfg)
    dp = {"dp": world.data_parallel()} if world else {}
    times, metrics = [], {}
    for step in range(args.steps + 1):
        if world is not None:
            torch.distributed.barrier()
        t0 = time.perf_counter()
        metrics = train_on_batch(model, optimizer, batch, ucfg, version=step, **dp)
        if step:  # the first step warms up (allocations, lazy initialization)
            times.append(time.perf_counter() - t0)
    device = world.device if world else torch.device(args.device)
    out = {"rank": world.rank if world else 0, "ranks": world.size if world else 1,
           "step_s": statistics.median(times), "state_bytes": _state_bytes(model, optimizer),
           "peak_bytes": _peak_bytes(device), "loss": metrics["actor/loss"], "grad_norm": metrics["actor/grad_norm"],
           "params": sum(_local_bytes(p) // p.element_size() for p in model.parameters())}
    rank = out["rank"]
    Path(args.out, f"rank{rank}.json").write_text(json.dumps(out))  # before the gather below, which costs memory
    if args.workload == "tiny":
        weights = full_state_dict(model) if world else {k: v.detach().cpu() for k, v in model.state_dict().items()}
        if rank == 0:
            torch.save(weights, Path(args.out, "weights.pt"))
    if world is not None:
        world.close()


def _launch(args, workload: str, sharded: bool) -> list[dict]:
    """Run one configuration in fresh processes; returns every rank's figures."""
    out = tempfile.mkdtemp(prefix=f"fsdp-{workload}-")
    own = [__file__, "--worker", "--workload", workload, "--out", out, "--device", args.device, "--steps",
           str(args.steps), "--wide-hidden", str(args.wide_hidden), "--wide-layers", str(args.wide_layers)]
    cores = os.cpu_count() or 1  # the machine's cores, all to one process or shared out among the ranks
    env = {**os.environ, "OMP_NUM_THREADS": str(max(1, cores // args.ranks) if sharded else cores)}
    if sharded:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(args.ranks), "--master-addr",
               "127.0.0.1", "--master-port", str(_free_port()), *own, "--sharded"]
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    else:
        cmd = [sys.executable, *own]
    subprocess.run(cmd, check=True, env=env)
    rows = [json.loads(p.read_text()) for p in sorted(Path(out).glob("rank*.json"))]
    for row in rows:
        row["dir"] = out
    return rows


def _free_port() -> int:
    from agentrl.trainer.distributed import free_port

    return free_port()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument("--budget-gib", type=float, default=1.5)
    p.add_argument("--wide-hidden", type=int, default=768)
    p.add_argument("--wide-layers", type=int, default=8)
    p.add_argument("--json", default=None)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--sharded", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--workload", default="tiny", help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    cpu = cpu_model()
    print(f"bench/fsdp_step.py: {args.ranks} ranks on {args.device} ({cpu}, {os.cpu_count()} cores), torch "
          f"{torch.__version__}, agentrl {agentrl.__version__}")
    report = {"machine": cpu, "device": args.device, "ranks": args.ranks}
    for workload in ("tiny", "wide"):
        single, sharded = _launch(args, workload, False), _launch(args, workload, True)
        report[workload] = {"single": single, "fsdp": sharded}
        print(f"\n{workload}: {single[0]['params'] / 1e6:.1f}M parameters, {args.steps} steps after a warm-up")
        print(f"  {'run':<12} {'step s':>8} {'state GiB':>10} {'peak GiB':>9}")
        for name, rows in (("single", single), ("fsdp", sharded)):
            for r in rows:
                label = name if name == "single" else f"fsdp rank {r['rank']}"
                print(f"  {label:<12} {r['step_s']:>8.2f} {r['state_bytes'] / GIB:>10.3f} {r['peak_bytes'] / GIB:>9.2f}")
        ratio = max(r["step_s"] for r in sharded) / single[0]["step_s"]
        state = max(r["state_bytes"] for r in sharded) / single[0]["state_bytes"]
        print(f"  fsdp/single: step time ×{ratio:.2f}, training state per rank ×{state:.2f}")
        if workload == "tiny":
            a = torch.load(Path(single[0]["dir"], "weights.pt"))
            b = torch.load(Path(sharded[0]["dir"], "weights.pt"))
            diff = max(float((a[k] - b[k]).abs().max()) for k in a)
            loss = abs(single[0]["loss"] - sharded[0]["loss"])
            report["tiny"]["max_weight_diff"], report["tiny"]["loss_diff"] = diff, loss
            print(f"  correctness: |loss_fsdp − loss_single| = {loss:.2e}, max |w_fsdp − w_single| = {diff:.2e} "
                  f"after {args.steps + 1} AdamW steps")
        else:
            budget = args.budget_gib * GIB
            fits = {name: max(r["state_bytes"] for r in rows) <= budget for name, rows in (("single", single),
                                                                                          ("fsdp", sharded))}
            report["wide"]["budget_gib"], report["wide"]["fits"] = args.budget_gib, fits
            print(f"  budget {args.budget_gib:g} GiB of training state per process (simulated): single "
                  f"{'fits' if fits['single'] else 'does NOT fit'}, fsdp with {args.ranks} ranks "
                  f"{'fits' if fits['fsdp'] else 'does NOT fit'}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))



if __name__ == "__main__":
    main()
