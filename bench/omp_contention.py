"""The embedded engine on a CPU it shares, with OpenMP's default waiting vs the passive waiting agentrl sets.

On a 2-core machine the engine rarely has the cores to itself: sandboxes run the agent's tests, the trainer
runs beside it in async mode, a second job runs. libgomp's default lets a parallel region's worker threads
spin before they sleep; when another process holds the cores, every one of the ~600 small parallel regions
of a decode step can wait for a thread that is spinning or descheduled. `import agentrl` sets
OMP_WAIT_POLICY=PASSIVE (unless you set it) before torch loads libgomp; this bench measures what that does.

Each variant runs in its own process (the policy is read once, when torch loads libgomp):
  default   imports torch before agentrl, so libgomp sees no OMP_WAIT_POLICY (its default)
  agentrl   imports agentrl first (OMP_WAIT_POLICY=PASSIVE), as `agentrl train` and the benches do
Both generate the peer workload of bench/engine_throughput.py (8 prompts × 4, ≤ 64 tokens, T = 1, fixed seeds)
with the EmbeddedEngine, first on the idle machine, then while a load process keeps --load-threads threads
busy with matmuls (a stand-in for the trainer or a sandbox's test run). Prints seconds and the ratios
default/agentrl; the completions are the same in both (same seeds), which the bench checks.

    .venv/bin/python bench/omp_contention.py [--load-threads 2] [--model smollm2-135m-instruct]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LOAD = """
import torch, time
torch.set_num_threads({threads})
a = torch.randn(1024, 1024)
end = time.time() + {seconds}
while time.time() < end:
    a = (a @ a).clamp_(-1, 1)
"""


def child(variant: str, model_name: str) -> None:
    """Generate the workload once (after a warm-up) and print {"seconds", "tokens", "outputs"} as JSON."""
    if variant == "default":
        import torch  # noqa: F401  (libgomp loads here, before agentrl can set the policy)
    import asyncio

    import agentrl  # noqa: F401  (first in the agentrl variant: sets OMP_WAIT_POLICY before torch loads)

    sys.path.insert(0, str(ROOT))
    from agentrl.engine.embedded import EmbeddedEngine
    from agentrl.engine.protocol import SamplingParams
    from agentrl.models import load_model, load_tokenizer
    from bench.engine_throughput import requests, workload

    tok = load_tokenizer(model_name)
    model = load_model(model_name, dtype="float32")
    prompts = workload(tok)
    reqs = requests(prompts)

    async def run() -> dict:
        engine = EmbeddedEngine(model, tok, seed=0)
        try:
            await engine.generate(prompts[0], SamplingParams(max_new_tokens=4, seed=0))
            print("ready", file=sys.stderr, flush=True)
            sys.stdin.readline()  # the parent starts the load (or not), then says go
            start = time.perf_counter()
            gens = await asyncio.gather(*(engine.generate(p, s) for p, s in reqs))
            seconds = time.perf_counter() - start
        finally:
            await engine.close()
        return {"seconds": seconds, "tokens": sum(len(g.output_ids) for g in gens),
                "outputs": [g.output_ids for g in gens]}

    print(json.dumps(asyncio.run(run())), flush=True)


def measure(variant: str, model_name: str, load_threads: int) -> dict:
    """One child process: warm it up, start the load (if any), time the workload, stop the load."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    proc = subprocess.Popen([sys.executable, __file__, "--child", variant, "--model", model_name], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    load = None
    try:
        for line in proc.stderr:  # model loading chatter until the child is warm
            if line.strip() == "ready":
                break
        else:
            raise SystemExit(f"{variant} child died before it was ready (exit {proc.wait()})")
        if load_threads:
            load = subprocess.Popen([sys.executable, "-c", LOAD.format(threads=load_threads, seconds=900)])
            time.sleep(2)  # let it reach its loop
        out, err = proc.communicate("go\n", timeout=900)
        if proc.returncode:
            raise SystemExit(f"{variant} child failed:\n{err[-2000:]}")
        return json.loads(out.strip().splitlines()[-1])
    finally:
        if load is not None:
            load.kill()
            load.wait()
        if proc.poll() is None:
            proc.kill()


def main() -> int:
    """Idle and loaded runs of both variants; print the table and the ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--load-threads", type=int, default=2, help="busy threads of the load process (default 2)")
    p.add_argument("--child", choices=["default", "agentrl"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.model)
        return 0
    rows = {}
    for load in (0, args.load_threads):
        for variant in ("default", "agentrl"):
            r = measure(variant, args.model, load)
            rows[(variant, load)] = r
            print(f"{variant:>8}  load {load} threads: {r['seconds']:7.2f} s  {r['tokens'] / r['seconds']:6.1f} tok/s",
                  flush=True)
    same = all(rows[("default", lv)]["outputs"] == rows[("agentrl", lv)]["outputs"] for lv in (0, args.load_threads))
    print(f"\ncompletions identical across variants: {same}")
    for load in (0, args.load_threads):
        ratio = rows[("default", load)]["seconds"] / rows[("agentrl", load)]["seconds"]
        print(f"load {load} threads: default / agentrl time = {ratio:.2f}x (>1: passive waiting is faster)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
