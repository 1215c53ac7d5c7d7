"""bench/learn_swe.py's report (table, record, dashboard), the pilot's lines and the non-fix audit, with the two
things both files use (Refused, write_json); the state directory, the recipe, the evaluations and the training
phases stay in learn_swe.py, whose docstring describes the benchmark. This module imports nothing from
learn_swe.py (which runs as a script and imports this one): what a phase needs of the run comes in its `Bench`."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from agentrl.envs.swe_lite.benchmark import SEEDS, audit_episodes

from agentrl.evaluation import compare_paired, load_done
from agentrl.trainer.heldout import paired_sign_test

ROOT = Path(__file__).resolve().parent.parent
Bench = Any
"""learn_swe.Bench: one invocation's configs, tasks, state directory and results (not imported: learn_swe.py runs as
a script and imports this module)."""


class Refused(Exception):
    """A user mistake reported as one line and exit 2 (a state directory of another recipe, a bad flag mix)."""


def write_json(path: Path, data) -> None:
    """Write JSON atomically (a kill mid-write leaves the old file)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), for the record."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def pilot_lines(pilot: dict) -> list[str]:
    """The pilot's result in words: what the design can see."""
    lines = [f"pilot: {pilot['samples']} samples per task at T = {pilot['temperature']}; detectable effect at 80% "
             "power, two-sided alpha 0.05 (2.80 × sd of per-task differences / √n)"]
    for lv, r in pilot["levels"].items():
        if not r["design_detectable"]:
            lines.append(f"level {lv}, {r['tasks']} tasks: every task scored alike in all three evaluations "
                         f"(warm start {r['warm_start']:.3f}): no spread, so the pilot cannot size the design")
            continue
        lines.append(f"level {lv}, {r['tasks']} tasks: warm start {r['warm_start']:.3f} (seed family 1: "
                     f"{r['warm_start_seeds1']:.3f}; second warm start {r['warm_start_copy']:.3f}); sd of differences "
                     f"{r['diff_sd']['seeds']:.3f} between seed families, {r['diff_sd']['copies']:.3f} between the "
                     f"two warm starts; detectable {r['detectable']['seeds']:+.3f} / {r['detectable']['copies']:+.3f}"
                     f": the design sees a gain of {r['design_detectable']:.3f} or more")
    return lines


def report(b: Bench, pinned: dict, sft_ckpt: Path, grpo_ckpt: Path | None) -> dict:
    """The sign tests, the table, the dashboard, OUT/summary.json and the publishable OUT/record.json."""
    from agentrl.engine.build import compute_precision, engine_precision

    a, paired = b.args, {}
    if grpo_ckpt is not None and b.greedy:
        for lv in b.levels:
            gained, lost, p_value = paired_sign_test(b.held[("warm start", lv)], b.held[("GRPO", lv)])
            paired[lv] = {"gained": gained, "lost": lost, "p_value": p_value}
    primary = b.sampled_rows or b.rows
    total_s = (sum(r["train_s"] for r in primary if r["level"] == b.levels[0])
               + sum(r["eval_s"] for r in b.rows + b.sampled_rows))
    png = dashboard(primary, b.out / "dashboard.png",
                    f"held-out resolved rate ({a.samples} samples per task)" if a.samples else None)
    summary = {"model": a.model, "config": a.config, "split": a.split, "levels": b.levels, "quick": a.quick,
               "overrides": b.overrides, "env": a.env,
               "checkpoints": {"sft": str(sft_ckpt), "grpo": str(grpo_ckpt) if grpo_ckpt else None},
               "held_out_tasks": {lv: [t.instance_id for t in b.tasks[lv]] for lv in b.levels}, "rows": b.rows,
               "paired_grpo_vs_warm_start": paired, "audit": b.audits, "total_s": round(total_s, 1),
               "dashboard": str(png) if png else None, "training_dashboard": str(b.out / "grpo" / "dashboard.png")}
    sampled = sampled_report(b) if a.samples else None
    if sampled:
        summary["sampled"] = sampled
    train_cfg = b.grpo_cfg or b.sft_cfg
    record = {"status": "measured", "env": a.env, "model": a.model, "split": a.split, "rows": b.rows, "paired": paired,
              "audit": {lv: {k: x[k] for k in ("resolved", "flagged")} for lv, x in b.audits.items()},
              "command": pinned["command"].replace(f"{ROOT}/", ""), "commit": pinned["commit"],
              "started": pinned["created"], "finished": time.strftime("%Y-%m-%d %H:%M:%S %z"), "cpu": cpu_model(),
              "precision": {"trainer": compute_precision(train_cfg).name, "engine": engine_precision(train_cfg).name,
                            "evaluation": "float32"},
              "grader": "the judge" if a.env == "swe_lite" else "swe_real's grader", "total_s": round(total_s, 1)}
    if sampled:
        record["sampled"] = sampled
    name = "summary_reeval.json" if a.reeval else "summary.json"
    write_json(b.out / name, summary)
    if not a.reeval:
        write_json(b.out / "record.json", record)
    print("\n" + table(record))
    print(f"total {total_s / 60:.1f} min; summary {b.out / name}; dashboard {png}")
    return summary


COMPARED = (("GRPO", "warm start"), ("GRPO", "control"))
"""The k-sample comparisons (treatment, baseline) the report makes, each once both phases are evaluated: the
compute-matched supervised control of issue 54 item 3 joins as a phase named "control"."""


def sampled_report(b: Bench) -> dict:
    """The k-sample evaluation's part of the report: its design, the rows, and per level for each pair of COMPARED
    the paired statistics of per-task means (agentrl.evaluation.compare_paired, modules as clusters); the
    pilot's detectable effect when OUT/pilot.json holds one for this design."""
    cfg, paired = b.cfg.rollout, {}
    for after, before in COMPARED:
        by_level = {lv: compare_paired(b.sampled[(before, lv)].per_task, b.sampled[(after, lv)].per_task,
                                       clusters={t.instance_id: t.repo for t in b.tasks[lv]})
                    for lv in b.levels if (before, lv) in b.sampled and (after, lv) in b.sampled}
        if by_level:
            paired[f"{after} vs {before}"] = by_level
    pilot = None
    try:
        pilot = json.loads((b.out / "pilot.json").read_text())
        if pilot.get("samples") != b.args.samples:
            pilot = None
    except (OSError, ValueError):
        pass
    return {"samples": b.args.samples, "temperature": cfg.temperature, "top_p": cfg.top_p, "top_k": cfg.top_k,
            "seeds": SEEDS,
            "design": "k episodes per task; a task's outcome is its mean success over its scored episodes; the rate is "
                      "the mean over tasks, its 95% CI Wilson's over tasks (conservative); paired on per-task "
                      "differences: sign-flip permutation test (primary; exact up to 20 nonzero differences, else "
                      "20000 seeded draws), sign test on task means, the permutation test over per-module sums "
                      "(module-clustered), Student t 95% CI of the mean difference",
            "rows": b.sampled_rows, "paired": paired, "pilot": pilot}


def sampled_lines(record: dict) -> list[str]:
    """The k-sample part of the table: the design, one row per phase and level, the paired tests."""
    s = record["sampled"]
    lines = []
    if s.get("pilot"):
        lines += pilot_lines(s["pilot"])
    lines += [f"{record['env']} held-out resolved rate, {s['samples']} sampled episodes per task at T = "
              f"{s['temperature']} (seeds paired across phases; mean of per-task means, 95% Wilson CI over tasks)",
              f"{'phase':<12} {'level':>5} {'resolved':>9} {'95% CI':>17} {'tasks':>5} {'episodes':>8} {'train':>8} "
              f"{'eval':>7}"]
    for r in s["rows"]:
        ci = "[{:.3f}, {:.3f}]".format(*r["ci95"])
        lines.append(f"{r['phase']:<12} {r['level']:>5} {r['resolved']:9.3f} {ci:>17} {r['n']:>5} {r['episodes']:>8} "
                     f"{r['train_s']:7.0f}s {r['eval_s']:6.0f}s")
    for pair, by_level in s["paired"].items():
        for lv, c in by_level.items():
            lines.append(f"level {lv}: {pair}: {c['mean_diff']:+.3f} [{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}] over "
                         f"{c['tasks']} tasks; permutation p = {c['p_permutation']:.2g}; sign test {c['gained']} up, "
                         f"{c['lost']} down, p = {c['p_sign']:.2g}; module-clustered p = {c['p_clustered']:.2g} "
                         f"({c['clusters']} modules)")
    return lines


def audit_only(out: Path, tasks: dict, levels: list[int]) -> dict:
    """`--audit`: the non-fix audit of the stored GRPO episodes of each level."""
    audits = {}
    for lv in levels:
        path = out / f"episodes_GRPO_level{lv}.jsonl"
        path = path if path.exists() else next(out.glob(f"episodes_GRPO_level{lv}_k*.jsonl"), path)  # --no-greedy
        if not path.exists():
            raise Refused(f"--audit: {path} does not exist (the GRPO phase has not been evaluated)")
        audits[lv] = audit_episodes(list(load_done(path).values()), tasks[lv])
        print(audit_line(lv, audits[lv]))
        for iid, lines in audits[lv]["episodes"].items():
            print(f"  {iid}: " + " | ".join(lines))
    return {"audit": audits}


def audit_line(lv: int, a: dict) -> str:
    """One line of the non-fix audit's result."""
    return (f"level {lv}: {a['flagged']} of {a['resolved']} resolved GRPO episodes contain a change the audit calls a "
            "generic non-fix (always-equal value, special case of the quoted example)")


def table(record: dict) -> str:
    """The benchmark's final table from its record: one row per phase and level, the sign test, the audit; with
    --samples the k-sample design and its table first (the primary comparison), greedy after it."""
    lines = sampled_lines(record) + [""] if record.get("sampled") else []
    if record["rows"]:
        lines += [f"{record['env']} held-out resolved rate (greedy, split {record['split']}, 95% Wilson CI); model "
                  f"{record['model']}",
                  f"{'phase':<12} {'level':>5} {'resolved':>9} {'95% CI':>17} {'n':>4} {'train':>8} {'eval':>7}"]
    for r in record["rows"]:
        ci = "[{:.3f}, {:.3f}]".format(*r["ci95"])
        lines.append(f"{r['phase']:<12} {r['level']:>5} {r['resolved']:9.3f} {ci:>17} {r['n']:>4} {r['train_s']:7.0f}s "
                     f"{r['eval_s']:6.0f}s")
    for lv, pr in record["paired"].items():
        lines.append(f"level {lv}: GRPO solves {pr['gained']} the warm start does not, loses {pr['lost']} "
                     f"(exact sign test p = {pr['p_value']:.2g})")
    for lv, a in (record.get("audit") or {}).items():
        lines.append(audit_line(lv, a))
    return "\n".join(lines)


def dashboard(rows: list[dict], path: Path, ylabel: str | None = None) -> Path | None:
    """A PNG of resolved rate per level and phase with 95% Wilson intervals (None without matplotlib or rows)."""
    if not rows:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    phases = list(dict.fromkeys(r["phase"] for r in rows))
    lvls = sorted({r["level"] for r in rows})
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(lvls), 3.6))
    width = 0.8 / len(phases)
    for k, phase in enumerate(phases):
        pts = [next((r for r in rows if r["phase"] == phase and r["level"] == lv), None) for lv in lvls]
        xs = [i + k * width for i, p in enumerate(pts) if p]
        ys = [p["resolved"] for p in pts if p]
        err = [[p["resolved"] - p["ci95"][0] for p in pts if p], [p["ci95"][1] - p["resolved"] for p in pts if p]]
        ax.bar(xs, ys, width, yerr=err, capsize=3, label=phase)
    ax.set_xticks([i + width * (len(phases) - 1) / 2 for i in range(len(lvls))], [f"level {lv}" for lv in lvls])
    ax.set_ylim(0, 1)
    ax.set_ylabel(ylabel or "held-out resolved rate (greedy)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
