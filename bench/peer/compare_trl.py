"""TRL's GRPOTrainer and agentrl side by side on one workload, in one run (`make bench-peer`).

The workload (TRL GRPOTrainer's, on this CPU): SmolLM2-135M-Instruct fp32 from the local agentrl cache
(never the hub), 64 chat prompts "What is A + B?" (A, B uniform in 1..20, seed 0), reward 1 if the last
integer equals A+B, 8 prompts × 4 completions per optimizer step, ≤ 64 completion tokens, temperature 1,
AdamW lr 1e-6, grad clip 1, no reference model, one optimizer step per batch.

1. Creates (once) a separate venv with `torch==2.13.0` (the CPU wheel on disk, --wheels) and `trl==1.16.0`.
2. Runs TRL in that venv (bench/peer/trl_worker.py) twice, fp32 and with its own mixed-precision switch
   (GRPOConfig bf16=True), then agentrl (bench/trainer_step.py) in fp32 and in bf16 (model.compute_dtype and
   rollout.engine_dtype), each in its own process one after the other, and prints means of steps 2..N with
   ratios to TRL in the same precision.

Both use every core; run it on a quiet machine, and read only the ratios of one run (numbers drift with load).

    .venv/bin/python bench/peer/compare_trl.py [--steps 6] [--venv DIR] [--wheels /opt/wheels]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TORCH, TRL = "2.13.0", "1.16.0"

# settings that differ between the two runs, stated with the table (everything else is equal)
DIFFERENCES = [
    ("generation", "HF generate, padded batch of 32 (finished rows keep decoding)",
     "embedded engine, the 32 episodes in flight at once, continuous batching (finished rows leave)"),
    ("loss", "`dapo`: token-mean, ε 0.2/0.2 (no clip-higher)",
     "PPO-clip token-mean, ε 0.2/0.28, dual clip 3 (inactive on-policy: r = 1)"),
    ("π_old", "none at num_iterations=1 (π_old = π_θ detached)", "same (no recompute on-policy)"),
    ("off-policy correction", "none (vLLM off: no importance weights)", "token TIS C=2 + veto on π_θ/μ (w ≈ 1)"),
    ("advantages", "group std, ε 1e-4", "group std (unbiased), ε 1e-6"),
    ("training batch", "padded 32 rows, one forward", "one right-padded row per sequence, micro-batches of ≤ 4096 padded tokens (one here)"),
]


def ensure_venv(venv: Path, wheels: Path) -> Path:
    """The peer venv's python, created with the exact pins on first use."""
    py = venv / "bin" / "python"
    marker = venv / f".agentrl-peer-torch{TORCH}-trl{TRL}"
    if marker.exists():
        return py
    print(f"creating {venv} (torch=={TORCH} from {wheels}, trl=={TRL})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--find-links", str(wheels),
                    f"torch=={TORCH}+cpu", f"trl=={TRL}"], check=True)
    marker.write_text("ok\n")
    return py


def run_json(cmd: list[str], out: Path) -> dict:
    """Run one side to completion (its output streams through) and read the JSON summary it wrote."""
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return json.loads(out.read_text())


# the memory-lean variant of agentrl's run: same workload, activations recomputed in the backward pass, AdamW's
# moments in bfloat16 and glibc's mmap threshold pinned at 128 KiB (the trainer keys that trade speed for memory;
# bench/malloc_mmap.py isolates the last one)
LEAN = ["trainer.gradient_checkpointing=true", "trainer.optimizer_state=bfloat16", "trainer.mmap_threshold=131072"]


def table(runs: list[tuple[str, dict, dict]]) -> str:
    """The side-by-side table: figure, then each run and its ratio to its TRL baseline (and which way is better);
    runs are (name, figures, the TRL figures it is compared with)."""
    rows = [
        ("step wall (s)", "step_s", "lower"),
        ("generation tok/s", "gen_tok_s", "higher"),
        ("training tok/s", "train_tok_s", "higher"),
        ("generation phase (s)", "gen_s", "lower"),
        ("training phase (s)", "train_s", "lower"),
        ("peak RSS (GB)", "peak_rss_gb", "lower"),
        ("mean reward", "reward", "—"),
    ]
    head = "".join(f" {name} | ratio |" for name, _, _ in runs)
    lines = [f"| figure |{head}", "|---|" + "---|---|" * len(runs)]
    for label, key, better in rows:
        cells = ""
        for _, ours, base in runs:
            a, b = base[key], ours[key]
            ratio = f"{b / a:.2f}× ({better} is better)" if a and better != "—" and ours is not base else "—"
            cells += f" {b:.2f} | {ratio} |"
        lines.append(f"| {label} |{cells}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--venv", type=Path, default=Path(os.environ.get(
        "AGENTRL_PEER_VENV", Path.home() / ".cache" / "agentrl-peer" / f"trl-{TRL}")))
    p.add_argument("--wheels", type=Path, default=Path(os.environ.get("AGENTRL_TORCH_WHEELS", "/opt/wheels")))
    p.add_argument("--skip-trl", type=Path, default=None,
                   help="reuse TRL summaries instead of running TRL: JSON {\"float32\": {...}, \"bfloat16\": {...}}")
    p.add_argument("--no-lean", action="store_true", help="skip agentrl's memory-lean run (" + " ".join(LEAN) + ")")
    args = p.parse_args()

    from agentrl.models import default_model_dir

    model_dir = default_model_dir()
    if not (model_dir / "config.json").exists():
        sys.exit(f"{model_dir} holds no converted model; run `make setup` first (this bench never uses the hub)")
    with tempfile.TemporaryDirectory() as tmp:
        our_out = Path(tmp) / "agentrl.json"
        if args.skip_trl:
            trl = json.loads(args.skip_trl.read_text())
        else:
            py = ensure_venv(args.venv, args.wheels)
            trl = {}
            for name, flag in (("float32", []), ("bfloat16", ["--bf16"])):
                out = Path(tmp) / f"trl_{name}.json"
                trl[name] = run_json([str(py), str(HERE / "trl_worker.py"), "--model", str(model_dir),
                                      "--steps", str(args.steps), "--json", str(out), *flag], out)
        step_cmd = [sys.executable, str(HERE.parent / "trainer_step.py"), "--steps", str(args.steps)]
        ours = run_json([*step_cmd, "--precisions", "float32,bfloat16", "--json", str(our_out)], our_out)
        runs = [(f"TRL {TRL} fp32", trl["float32"], trl["float32"]), ("agentrl fp32", ours["float32"], trl["float32"]),
                (f"TRL {TRL} bf16", trl["bfloat16"], trl["bfloat16"]),
                ("agentrl bf16", ours["bfloat16"], trl["bfloat16"])]
        if not args.no_lean:
            lean_out = Path(tmp) / "agentrl_lean.json"
            lean = run_json([*step_cmd, "--precisions", "float32", "--json", str(lean_out), *LEAN], lean_out)
            runs.append(("agentrl lean fp32", lean["float32"], trl["float32"]))
    span = f"steps 2–{args.steps}" if args.steps > 1 else "step 1 (includes warm-up)"
    print(f"\nTRL {TRL} GRPOTrainer vs agentrl, means of {span}, same run; each ratio is against TRL in the same "
          f"precision (machine shared: compare ratios only)\n")
    print(table(runs))
    for name in ("float32", "bfloat16"):
        c = ours[name]["ceiling_tok_s"]
        print(f"{name} training ceiling (6 × params FLOP/token at the probed {name} matmul rate, "
              f"{ours[name]['gflops']:.0f} GFLOP/s): {c:.0f} tok/s; TRL at {trl[name]['train_tok_s'] / c:.0%}, "
              f"agentrl at {ours[name]['train_tok_s'] / c:.0%}")
    if not args.no_lean:
        print(f"agentrl lean = agentrl with {' '.join(LEAN)}")
    print("\nsettings that differ (all others equal: the precision of each pair, no vLLM, no KL, lr 1e-6, grad clip 1, "
          "1 iteration; TRL's bf16=True is its Trainer's mixed precision, accelerate's bf16 autocast):")
    for what, a, b in DIFFERENCES:
        print(f"  {what}: TRL {a}; agentrl {b}")


if __name__ == "__main__":
    main()
