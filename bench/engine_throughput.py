"""Rollout engine throughput on the peer workload (bench/trainer_step.py's), all baselines in one run.

Workload: SmolLM2-135M-Instruct fp32, 8 chat prompts "What is A + B?" (A, B uniform in 1..20, seed 0) × 4
completions = 32, at most 64 new tokens, temperature 1, top_p 1, no top_k.

Measured, completion tokens per second of wall time:
  generate  batched, left-padded HF `model.generate` on the 32 rows (how TRL samples; finished rows keep decoding)
  ceiling   a bare KV-cache decode step at batch 32 (no sampling, no prefill, nothing leaves the batch)
  engine    EmbeddedEngine: 32 concurrent generate calls (shared prompts prefilled once, finished rows leave),
            on oneDNN-packed linear weights (the default, agentrl/engine/onednn_linear.py)
  unpacked  the same engine with packed_weights=False (F.linear, which re-packs every weight on every call)
  bf16      the same engine with dtype=bfloat16 (a bf16 copy of the body, fp32 LM head; agentrl/precision.py),
            with its own packed ceiling step, beside the CPU's fp32 and bf16 matmul rates and bf16 flags
  packed ceiling  the ceiling step on the packed model the engine runs
  client    SGLangClient → `agentrl serve` (a subprocess on loopback) → the same engine, same seeds
Goals: engine ≥ 2× generate, engine ≥ 90% of ceiling, client time ≤ 1.1× in-process engine time.

  python bench/engine_throughput.py [--model smollm2-135m-instruct] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

import agentrl  # noqa: F401  # isort: skip  (first: sets OMP_WAIT_POLICY before torch loads libgomp)
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrl import precision  # noqa: E402
from agentrl.engine.embedded import EmbeddedEngine  # noqa: E402
from agentrl.engine.kv_batch import KVBatch  # noqa: E402
from agentrl.engine.protocol import SamplingParams  # noqa: E402
from agentrl.engine.sampling import recompute_logprobs  # noqa: E402
from agentrl.models import load_model, load_tokenizer  # noqa: E402

PROMPTS, GROUP, MAX_NEW = 8, 4, 64


def workload(tokenizer) -> list[list[int]]:
    """The 8 prompts of the peer workload, rendered with the model's chat template."""
    rng = random.Random(0)
    out = []
    for _ in range(PROMPTS):
        a, b = rng.randint(1, 20), rng.randint(1, 20)
        ids = tokenizer.apply_chat_template([{"role": "user", "content": f"What is {a} + {b}?"}],
                                            add_generation_prompt=True, tokenize=True)
        out.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    return out


def bench_generate(model, tokenizer, prompts) -> tuple[float, int]:
    """TRL-style sampling: the 32 rows left-padded into one `generate` call. Returns (seconds, completion tokens)."""
    rows = [p for p in prompts for _ in range(GROUP)]
    width = max(map(len, rows))
    pad = tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    torch.manual_seed(0)
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, max_new_tokens=MAX_NEW,
                             temperature=1.0, top_p=1.0, top_k=0, pad_token_id=pad)
    seconds = time.perf_counter() - start
    eos = model.generation_config.eos_token_id
    eos = {eos} if isinstance(eos, int) else set(eos)
    tokens = 0
    for row in out[:, width:].tolist():  # count up to and including the first EOS, as TRL does
        ends = [i for i, t in enumerate(row) if t in eos]
        tokens += ends[0] + 1 if ends else len(row)
    return seconds, tokens


def bench_ceiling(model, prompts, steps: int = 32) -> float:
    """Tokens/s of a bare KV-cache decode step at batch 32 (greedy feed, no sampling), cache ≈ prompt + 16."""
    rows = [p + [i] for i, p in enumerate(p for p in prompts for _ in range(GROUP))]  # distinct: nothing shared
    with torch.inference_mode():
        batch, logits, _ = KVBatch.prefill(model, rows, torch.device("cpu"))
        tokens = logits.argmax(-1)
        for _ in range(2):  # warm up
            tokens = batch.step(model, tokens).argmax(-1)
        start = time.perf_counter()
        for _ in range(steps):
            tokens = batch.step(model, tokens).argmax(-1)
        seconds = time.perf_counter() - start
    return len(rows) * steps / seconds


def bench_schedule(model, prompts, lengths: list[int]) -> float:
    """Seconds of bare decode steps on the engine's own schedule: step t runs the rows still live (len > t)."""
    rows = [p + [i] for i, p in enumerate(p for p in prompts for _ in range(GROUP))]
    order = sorted(range(len(rows)), key=lambda i: -lengths[i])
    rows, lengths = [rows[i] for i in order], [lengths[i] for i in order]
    with torch.inference_mode():
        batch, logits, _ = KVBatch.prefill(model, rows, torch.device("cpu"))
        tokens = logits.argmax(-1)
        start = time.perf_counter()
        for t in range(1, max(lengths)):
            live = sum(n > t for n in lengths)
            if live < batch.size:
                batch.keep(list(range(live)))
                tokens = tokens[:live]
            tokens = batch.step(model, tokens).argmax(-1)
        return time.perf_counter() - start


def requests(prompts) -> list[tuple[list[int], SamplingParams]]:
    """The 32 requests with fixed seeds (the same in-process and over HTTP)."""
    return [(p, SamplingParams(temperature=1.0, top_p=1.0, top_k=-1, max_new_tokens=MAX_NEW, seed=1000 + i))
            for i, p in enumerate(p for p in prompts for _ in range(GROUP))]


async def run_all(engine, reqs) -> tuple[float, list]:
    """Send every request concurrently; returns (seconds, generations)."""
    start = time.perf_counter()
    gens = await asyncio.gather(*(engine.generate(p, s, session_id=f"g{i // GROUP}") for i, (p, s) in enumerate(reqs)))
    return time.perf_counter() - start, gens


def main() -> int:
    """Run every measurement (interleaved rounds, best of each) and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of all measurements; the best of each is kept")
    args = parser.parse_args()
    tokenizer = load_tokenizer(args.model)
    model = load_model(args.model, dtype="float32")
    prompts = workload(tokenizer)
    reqs = requests(prompts)
    print(f"workload: {PROMPTS} prompts × {GROUP} = {PROMPTS * GROUP} completions ≤ {MAX_NEW} tokens, "
          f"prompt lengths {sorted(map(len, prompts))}, torch threads {torch.get_num_threads()}", flush=True)

    from agentrl.engine.serve import spawn_server
    from agentrl.engine.sglang_client import SGLangClient

    proc, url = spawn_server(args.model, timeout_s=600)  # idle (no CPU) while the other measurements run
    engine = EmbeddedEngine(model, tokenizer, seed=0)
    unpacked = EmbeddedEngine(model, tokenizer, seed=0, packed_weights=False)
    bf16 = EmbeddedEngine(model, tokenizer, seed=0, dtype="bfloat16")
    runner = engine.model  # the packed view of model the engine decodes with (model itself when packing is off)
    client = SGLangClient(url)
    best: dict[str, float] = {}
    last: dict[str, list] = {}
    flags = precision.bf16_flags() or ["none"]
    mm32, mm16 = precision.matmul_gflops(torch.float32), precision.matmul_gflops(torch.bfloat16)
    print(f"CPU bf16 flags: {', '.join(flags)}; matmul fp32 {mm32:.0f} GFLOP/s, bf16 {mm16:.0f} GFLOP/s "
          f"({mm16 / mm32:.2f}×); `auto` picks {precision.resolve('auto').describe()}", flush=True)

    def keep_best(name: str, value: float) -> None:
        best[name] = min(best.get(name, float("inf")), value)

    async def warm_up():
        await engine.generate(prompts[0], SamplingParams(max_new_tokens=4, seed=0))
        await client.generate(prompts[0], SamplingParams(max_new_tokens=4, seed=0))
        await unpacked.generate(prompts[0], SamplingParams(max_new_tokens=4, seed=0))
        await bf16.generate(prompts[0], SamplingParams(max_new_tokens=4, seed=0))

    async def round_(i: int):
        before = dict(engine.stats)
        eng_s, gens = await run_all(engine, reqs)
        stats = {k: engine.stats[k] - before[k] for k in before}
        cli_s, cli_gens = await run_all(client, reqs)
        unp_s, unp_gens = await run_all(unpacked, reqs)
        unp_tokens = sum(len(g.output_ids) for g in unp_gens)
        bf_s, bf_gens = await run_all(bf16, reqs)
        bf_tokens = sum(len(g.output_ids) for g in bf_gens)
        bceil_s = 32 / bench_ceiling(bf16.model, prompts)
        ceil_s = 32 / bench_ceiling(model, prompts)
        pceil_s = 32 / bench_ceiling(runner, prompts)
        sched_s = bench_schedule(runner, prompts, [len(g.output_ids) for g in gens])
        gen_s, gen_tokens = bench_generate(model, tokenizer, prompts)
        tokens = sum(len(g.output_ids) for g in gens)
        same = sum(a.output_ids == b.output_ids for a, b in zip(cli_gens, gens, strict=True))
        print(f"round {i}: engine {eng_s:.2f} s ({tokens} tokens; prefill {stats['prefill_tokens']} tokens, "
              f"{stats['decode_steps']} steps, {stats['decode_rows']} row-steps) | client {cli_s:.2f} s "
              f"({same}/{len(gens)} identical) | unpacked {unp_s:.2f} s ({unp_tokens} tokens) | "
              f"bare steps on engine schedule {sched_s:.2f} s | ceiling step {ceil_s * 1e3:.0f} ms, "
              f"packed {pceil_s * 1e3:.0f} ms, bf16 {bceil_s * 1e3:.0f} ms | generate {gen_s:.2f} s ({gen_tokens} "
              f"tokens) | bf16 engine {bf_s:.2f} s ({bf_tokens} tokens)", flush=True)
        keep_best("engine_tps", -tokens / eng_s)
        keep_best("engine_s", eng_s)
        keep_best("client_over", cli_s / eng_s)
        keep_best("schedule_s", sched_s)
        keep_best("ceiling_tps", -32 / ceil_s)
        keep_best("packed_ceiling_tps", -32 / pceil_s)
        keep_best("unpacked_tps", -unp_tokens / unp_s)
        keep_best("generate_tps", -gen_tokens / gen_s)
        keep_best("bf16_tps", -bf_tokens / bf_s)
        keep_best("bf16_ceiling_tps", -32 / bceil_s)
        last["bf16"] = bf_gens
        return gens

    async def all_rounds():  # one event loop for the whole run: the client keeps one HTTP session
        try:
            await warm_up()
            return [await round_(i) for i in range(args.rounds)][-1]
        finally:
            await client.close()
            await engine.close()
            await unpacked.close()
            await bf16.close()

    try:
        gens = asyncio.run(all_rounds())
    finally:
        proc.kill()
        proc.wait()

    gaps = [max(abs(a - b) for a, b in zip(recompute_logprobs(model, p, g.output_ids, s), g.logprobs, strict=True))
            for (p, s), g in list(zip(reqs, gens, strict=True))[::GROUP]]
    eng, ceil, gen = -best["engine_tps"], -best["ceiling_tps"], -best["generate_tps"]
    pceil, unp = -best["packed_ceiling_tps"], -best["unpacked_tps"]
    print(f"engine {eng:.1f} tok/s (unpacked {unp:.1f}) | decode ceiling (batch 32) {ceil:.1f} tok/s (packed "
          f"{pceil:.1f}) | padded generate {gen:.1f} tok/s")
    print(f"engine vs full-sequence recompute: max |logprob gap| {max(gaps):.2e} (fp32, {len(gaps)} completions)")
    print(f"ratio engine / padded generate: {eng / gen:.2f}x (goal >= 2)")
    print(f"ratio engine / decode ceiling:  {eng / ceil:.2f} (goal >= 0.90); on the packed ceiling {eng / pceil:.2f}")
    print(f"ratio packed / unpacked engine: {eng / unp:.2f}x; unpacked engine / padded generate {unp / gen:.2f}x")
    print(f"ratio engine / bare decode on the engine's own schedule: {best['schedule_s'] / best['engine_s']:.2f} "
          "(1.0 = no engine overhead beyond the model's steps; the ceiling gap is the shrinking batch)")
    print(f"ratio client+server / in-process time: {best['client_over']:.2f}x (goal <= 1.1)")
    bf, bceil = -best["bf16_tps"], -best["bf16_ceiling_tps"]
    bf_gaps = [max(abs(a - b) for a, b in zip(recompute_logprobs(model, p, g.output_ids, s), g.logprobs, strict=True))
               for (p, s), g in list(zip(reqs, last["bf16"], strict=True))[::GROUP]]
    print(f"ratio bf16 / fp32 engine: {bf / eng:.2f}x ({bf:.1f} tok/s; goal >= 1.8 on a CPU with bf16 units); bf16 "
          f"packed ceiling / fp32 packed ceiling {bceil / pceil:.2f}x; matmul bf16 / fp32 {mm16 / mm32:.2f}x")
    print(f"bf16 engine vs fp32 full-sequence recompute: max |logprob gap| {max(bf_gaps):.2e} ({len(bf_gaps)} completions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
