"""`make demo`: show the default model learning to fix bugs on swe_lite in about 15 minutes on a 2-core CPU.

Runs bench/learn_swe.py with configs/demo.yaml at level 0: the base model, the expert warm start and GRPO
from it are each evaluated greedily on the same held-out level-0 tasks (dev and test modules, never trained
on), then prints a before/after table and says which phase accounts for the gain. Two GRPO steps cannot show
GRPO's own share on 12 tasks, so the demo ends with what bench/learn_swe.py measured over hours, read from the
committed record docs/learn_swe.json (its table, sign test, command, commit and date), or says plainly that the
measurement is being redone.
"""

from __future__ import annotations

import json
import resource
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "docs" / "learn_swe.json"
"""The published learn_swe record (bench/learn_swe.py writes it as OUT/record.json; docs/results.md explains it)."""


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
            f"p = {p_value:.2g}) is not significant at this size.")


def demo_table(summary: dict) -> list[str]:
    """The demo's own before/after table and verdict, from learn_swe's summary."""
    rows = {r["phase"]: r for r in summary["rows"]}
    base, warm, grpo = rows["base model"], rows["warm start"], rows["GRPO"]
    p_value = summary["paired_grpo_vs_warm_start"][0]["p_value"]
    out = [f"== make demo: resolved rate on {grpo['n']} held-out level-0 swe_lite tasks (greedy, 95% CI) ==",
           f"{'model':<34} {'resolved':>9} {'95% CI':>16}"]
    for name, r in (("before: base model", base), ("after: expert warm start (SFT)", warm),
                    ("after: warm start + GRPO (final)", grpo)):
        ci = "[{:.2f}, {:.2f}]".format(*r["ci95"])
        out.append(f"{name:<34} {r['resolved']:9.2f} {ci:>16}   {round(r['resolved'] * r['n'])}/{r['n']}")
    out.append(verdict(base["resolved"], warm["resolved"], grpo["resolved"], p_value))
    return out


def measured_lines(record: dict | None) -> list[str]:
    """GRPO's own share as bench/learn_swe.py measured it (figure, sign test, command, commit, date), or why the
    demo cannot show it."""
    if not record or record.get("status") != "measured":
        why = (record or {}).get("note") or f"{RECORD.relative_to(ROOT)} holds no finished measurement"
        lines = ["== GRPO's own share (bench/learn_swe.py): not shown ==", f"This demo cannot show it: {why}"]
        if record and record.get("command"):
            lines.append(f"command   {record['command']}")
        if record and record.get("started"):
            lines.append(f"started   {record['started']} at commit {record.get('commit', '?')}")
        return lines
    rows = {(r["phase"], r["level"]): r for r in record["rows"]}
    lines = [f"== GRPO's own share, measured by bench/learn_swe.py ({record['grader']}, {record['split']} held-out "
             f"modules, greedy) =="]
    for (phase, lv), r in rows.items():
        ci = "[{:.2f}, {:.2f}]".format(*r["ci95"])
        lines.append(f"{phase + f' (level {lv})':<34} {r['resolved']:9.2f} {ci:>16}   {r['solved']}/{r['n']}")
    for lv, pr in record["paired"].items():
        warm, grpo = rows[("warm start", int(lv))], rows[("GRPO", int(lv))]
        lines.append(f"level {lv}: warm start {warm['solved']}/{warm['n']} → GRPO {grpo['solved']}/{grpo['n']}: GRPO "
                     f"solves {pr['gained']} the warm start does not, loses {pr['lost']} (exact sign test p = "
                     f"{pr['p_value']:.2g})")
    for lv, a in (record.get("audit") or {}).items():
        lines.append(f"level {lv}: {a['flagged']} of {a['resolved']} resolved GRPO episodes flagged by the non-fix audit")
    hours = record.get("total_s", 0) / 3600
    lines += [f"command   {record['command']}",
              f"commit    {record['commit']}, {record['finished']} ({hours:.1f} h on {record['cpu']}, "
              f"training in {record['precision']['trainer']})"]
    if record.get("rerun") and record["rerun"] != record["command"]:  # the recipe as it is spelled on today's tree
        lines.append(f"rerun     {record['rerun']}")
    return lines


def load_record(path: Path = RECORD) -> dict | None:
    """The committed learn_swe record, or None where it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def main() -> None:
    t0 = time.time()
    out = ROOT / "runs" / time.strftime("demo-%Y%m%d-%H%M%S")
    bench = runpy.run_path(str(ROOT / "bench" / "learn_swe.py"))
    summary = bench["main"](["--config", str(ROOT / "configs" / "demo.yaml"), "--levels", "0", "--split", "dev,test",
                             "--limit", "12", "--out", str(out), "--control", "none", *sys.argv[1:]])
    print()
    print("\n".join(demo_table(summary)))
    print(f"checkpoint  {summary['checkpoints']['grpo']}")
    print(f"dashboard   {summary['training_dashboard']}  (training)   {summary['dashboard']}  (before/after)")
    print(f"wall time {(time.time() - t0) / 60:.1f} min, peak RSS {peak_rss_mib():.0f} MiB\n")
    print("\n".join(measured_lines(load_record())))


if __name__ == "__main__":
    main()
