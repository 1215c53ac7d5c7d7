"""What pinning glibc's mmap threshold (trainer.mmap_threshold) does to peak RSS and speed, in one run.

Runs bench/trainer_step.py (the TRL peer workload) once per threshold and round, alternating the variants so a
shared machine's drift hits all of them alike: glibc's dynamic threshold (0, the baseline) against pinned
thresholds. Prints peak RSS, step time and training tokens/s of each, and their ratios to the baseline. The
memory-lean settings of `make bench-peer` are on by default (--no-lean: the plain fp32 AdamW run).

    .venv/bin/python bench/malloc_mmap.py [--thresholds 0,131072,4194304] [--rounds 2] [--steps 3] [--no-lean]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEAN = ["trainer.gradient_checkpointing=true", "trainer.optimizer_state=bfloat16"]


def run_once(threshold: int, steps: int, extra: list[str], out: Path) -> dict:
    """One trainer_step.py run at this threshold; its JSON summary."""
    cmd = [sys.executable, str(HERE / "trainer_step.py"), "--steps", str(steps), "--json", str(out),
           f"trainer.mmap_threshold={threshold}", *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--thresholds", default="0,131072,4194304", help="bytes, comma-separated; the first is the baseline")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--no-lean", action="store_true")
    args = p.parse_args()
    thresholds = [int(x) for x in args.thresholds.split(",")]
    extra = [] if args.no_lean else LEAN
    results: dict[int, list[dict]] = {t: [] for t in thresholds}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for t in thresholds:
                s = run_once(t, args.steps, extra, Path(tmp) / f"{t}_{r}.json")
                results[t].append(s)
                print(f"round {r + 1} threshold {t}: peak RSS {s['peak_rss_gb']:.2f} GB, step {s['step_s']:.1f} s, "
                      f"train {s['train_tok_s']:.1f} tok/s", flush=True)
    base = thresholds[0]

    def mean(t: int, key: str) -> float:
        return statistics.mean(s[key] for s in results[t])

    print(f"\nmeans over {args.rounds} round(s) (steps 2–{args.steps} of each run), "
          f"{'lean: ' + ' '.join(extra) if extra else 'plain fp32 AdamW'}; ratios vs threshold {base}")
    print(f"{'mmap threshold':>16} {'peak RSS GB':>12} {'ratio':>6} {'step s':>7} {'ratio':>6} {'train tok/s':>12} {'ratio':>6}")
    for t in thresholds:
        rss, step, tok = mean(t, "peak_rss_gb"), mean(t, "step_s"), mean(t, "train_tok_s")
        print(f"{t if t else 'dynamic':>16} {rss:12.2f} {rss / mean(base, 'peak_rss_gb'):6.2f} {step:7.1f} "
              f"{step / mean(base, 'step_s'):6.2f} {tok:12.1f} {tok / mean(base, 'train_tok_s'):6.2f}")


if __name__ == "__main__":
    main()
