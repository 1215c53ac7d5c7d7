"""`make demo`: show the default model learning to fix bugs on swe_lite in about 15 minutes on a 2-core CPU.

Runs bench/learn_swe.py with configs/demo.yaml at level 0: the base model, the expert warm start and GRPO
from it are each evaluated greedily on the same held-out level-0 tasks (dev and test modules, never trained
on), then prints a before/after table, says which phase accounts for the gain, and where the dashboards are.
"""

from __future__ import annotations

import resource
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def peak_rss_mib() -> float:
    """Peak resident memory of this process and its finished children, MiB (Linux reports KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def verdict(base: float, warm: float, grpo: float, p_value: float) -> str:
    """Which phase the gain over the base model comes from, in one line."""
    if grpo <= base and warm <= base:
        return "No gain over the base model in this run."
    if grpo > warm and p_value < 0.05:
        return f"GRPO adds {grpo - warm:+.2f} over the warm start (sign test p = {p_value:.2g})."
    return (f"The warm start accounts for the gain ({warm - base:+.2f}); GRPO's own change ({grpo - warm:+.2f}, "
            f"p = {p_value:.2g}) is not significant at this size — bench/learn_swe.py measures GRPO's share.")


def main() -> None:
    t0 = time.time()
    out = ROOT / "runs" / time.strftime("demo-%Y%m%d-%H%M%S")
    bench = runpy.run_path(str(ROOT / "bench" / "learn_swe.py"))
    summary = bench["main"](["--config", str(ROOT / "configs" / "demo.yaml"), "--levels", "0", "--split", "dev,test",
                             "--limit", "12", "--out", str(out), *sys.argv[1:]])
    rows = {r["phase"]: r for r in summary["rows"]}
    base, warm, grpo = rows["base model"], rows["warm start"], rows["GRPO"]
    p_value = summary["paired_grpo_vs_warm_start"][0]["p_value"]
    print(f"\n== make demo: resolved rate on {grpo['n']} held-out level-0 swe_lite tasks (greedy, 95% CI) ==")
    print(f"{'model':<34} {'resolved':>9} {'95% CI':>16}")
    for name, r in (("before: base model", base), ("after: expert warm start (SFT)", warm),
                    ("after: warm start + GRPO (final)", grpo)):
        ci = "[{:.2f}, {:.2f}]".format(*r["ci95"])
        print(f"{name:<34} {r['resolved']:9.2f} {ci:>16}   {round(r['resolved'] * r['n'])}/{r['n']}")
    print(verdict(base["resolved"], warm["resolved"], grpo["resolved"], p_value))
    print(f"checkpoint  {summary['checkpoints']['grpo']}")
    print(f"dashboard   {summary['training_dashboard']}  (training)   {summary['dashboard']}  (before/after)")
    print(f"wall time {(time.time() - t0) / 60:.1f} min, peak RSS {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
