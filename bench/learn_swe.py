"""Learning benchmark on `swe_lite` (or `swe_real`) with the default model on CPU: greedy resolved rate on
held-out test modules (packages), per difficulty level, for the base model, after the expert warm start (SFT) and
after GRPO from that checkpoint, with the wall time of each phase.

    .venv/bin/python bench/learn_swe.py [--env swe_real] [--levels 0,1,2] [--train-level 0] [--sft-episodes 32]
            [--grpo-steps 12] [--split test] [--limit N] [--out runs/learn_swe] [--quick] [--reeval]
            [trainer.lr=1e-5 ...]

The recipe is the env's preset (configs/swe_lite.yaml, configs/swe_real.yaml; dotted overrides win);
`--grpo-steps 0` stops after the warm start (base and warm-start rates only). Held-out tasks are every task of
`--split` offered at a level (level 0: one-line fixes), run once each, greedy; modules (swe_real: packages) of
the test split never appear in training (each corpus is split by module or package). Each rate has a 95% Wilson
interval, and GRPO is compared with the warm start on the same tasks by an exact paired sign test (McNemar) per
level. Writes OUT/summary.json and OUT/dashboard.png (resolved rate per level and phase); the GRPO run keeps its
own training dashboard.

Every held-out episode is written as text to OUT/episodes_<phase>_level<L>.txt, and each phase's result (per-task
outcomes, the checkpoint and the tasks it was measured on) to OUT/heldout_<phase>_level<L>.json. `--reeval` trains
nothing and evaluates the latest sft/ and grpo/ checkpoints under OUT again (e.g. after `agentrl train --resume
OUT/grpo trainer.steps=24`); with `--reuse` a phase whose stored result was measured on the same checkpoint and
tasks is not evaluated again.

`--quick` runs the whole pipeline on a tiny budget (2 held-out tasks at level 0, 4 expert episodes, one GRPO
step of 2×2 episodes): a smoke run, not a measurement. A benchmark, not a test; the machine it ran on may be
shared, so read the wall times as that.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agentrl.envs.swe_lite.benchmark import evaluate_model, held_out_tasks

from agentrl.config import load_config
from agentrl.trainer.checkpoint import latest_checkpoint
from agentrl.trainer.heldout import HeldOut, paired_sign_test
from agentrl.trainer.loop import train

QUICK = ["sft.episodes=4", "sft.epochs=1", "trainer.steps=1", "rollout.tasks_per_step=1", "rollout.group_size=2",
         "rollout.concurrency=2", "rollout.max_turns=3", "env.kwargs.max_steps=3"]


def timed(fn, *a, **kw):
    """(fn's result, wall seconds)."""
    t = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t


def dashboard(rows: list[dict], path: Path) -> Path | None:
    """A PNG of resolved rate per level and phase with 95% Wilson intervals (None without matplotlib)."""
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
    ax.set_ylabel("held-out resolved rate (greedy)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def fingerprint(model: str) -> list:
    """Name, size and mtime of every file of a model directory (a retrained checkpoint at the same path differs);
    the model name itself for a named model."""
    d = Path(model)
    if not d.is_dir():
        return [model]
    return [[str(f.relative_to(d)), f.stat().st_size, f.stat().st_mtime_ns] for f in sorted(d.rglob("*")) if f.is_file()]


def save_heldout(path: Path, h: HeldOut, model: str, task_ids: list[str], eval_s: float) -> None:
    """One phase's held-out result with what it was measured on, so a later --reeval --reuse can pair with it."""
    path.write_text(json.dumps({"checkpoint": str(model), "fingerprint": fingerprint(model), "tasks": task_ids,
                                "eval_s": round(eval_s, 1),
                                "mean": h.mean, "low": h.low, "high": h.high, "n": h.n, "masked": h.masked,
                                "per_task": {str(k): v for k, v in h.per_task.items()}}, indent=1) + "\n")


def load_heldout(path: Path, model: str, task_ids: list[str]) -> tuple[HeldOut, float] | None:
    """(the stored HeldOut, its eval seconds) if path holds a result for this checkpoint and these tasks."""
    try:
        d = json.loads(path.read_text())
        if d.get("checkpoint") != str(model) or d.get("fingerprint") != fingerprint(model) or d.get("tasks") != task_ids:
            return None
        per_task = {int(k): float(v) for k, v in d["per_task"].items()}
        return HeldOut(d["mean"], d["low"], d["high"], d["n"], d["masked"], per_task), float(d.get("eval_s", 0.0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # missing or damaged: evaluate again
        return None


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--env", default="swe_lite", choices=("swe_lite", "swe_real"),
                   help="swe_lite (module corpus) or swe_real (real packages; held out by package)")
    p.add_argument("--config", default=None, help="a YAML recipe over the env's preset (e.g. configs/demo.yaml)")
    p.add_argument("--levels", default="0,1,2", help="levels to evaluate, comma-separated")
    p.add_argument("--train-level", default=None, help="env.kwargs.level while training (default: the config's)")
    p.add_argument("--sft-episodes", type=int, default=None, help="default: the config's sft.episodes")
    p.add_argument("--grpo-steps", type=int, default=None,
                   help="default: the config's trainer.steps; 0 stops after the warm start")
    p.add_argument("--split", default="test", help="held-out split(s), e.g. test or dev,test")
    p.add_argument("--limit", type=int, default=None, help="at most this many held-out tasks per level, one per module in turn")
    p.add_argument("--out", default="runs/learn_swe")
    p.add_argument("--quick", action="store_true", help="a smoke run on a tiny budget (not a measurement)")
    p.add_argument("--skip-base", action="store_true", help="do not evaluate the base model")
    p.add_argument("--reeval", action="store_true", help="train nothing: evaluate the checkpoints under --out again")
    p.add_argument("--reuse", action="store_true",
                   help="with --reeval: keep a phase's stored result when its checkpoint and tasks are unchanged")
    p.add_argument("overrides", nargs="*", help="dotted config overrides for both training phases")
    args = p.parse_args(argv)
    if args.reuse and not args.reeval:
        p.error("--reuse only applies with --reeval (a training run makes new checkpoints)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    levels = [int(x) for x in args.levels.split(",")] if not args.quick else [0]
    limit = 2 if args.quick and args.limit is None else args.limit
    base = [f"model.name={args.model}", "trainer.tensorboard=false", *(QUICK if args.quick else [])]
    if args.train_level is not None:
        base.append(f"env.kwargs.level={args.train_level}")
    if args.sft_episodes is not None:
        base.append(f"sft.episodes={args.sft_episodes}")
    base += args.overrides
    recipe = args.config

    def config(extra: list[str]):
        return load_config(args.env, recipe, overrides=[*base, *extra])

    cfg = config([])
    pool = None
    if args.env == "swe_real":  # held out by package
        from agentrl.envs.swe_real.tasks import load_real

        pool = load_real(None, args.split)
    tasks = {lv: held_out_tasks(args.split, lv, limit, pool=pool) for lv in levels}
    print("held-out tasks per level: " + ", ".join(f"level {lv}: {len(t)}" for lv, t in tasks.items()), flush=True)
    rows, held = [], {}

    def phase(name: str, model: str, train_s: float) -> None:
        for lv in levels:
            stem = f"{name.replace(' ', '_')}_level{lv}"
            ids = [t.instance_id for t in tasks[lv]]
            stored = load_heldout(out / f"heldout_{stem}.json", model, ids) if args.reuse else None
            if stored is not None:
                (h, eval_s), name_note = stored, " (stored result reused)"
            else:
                h, eval_s = timed(evaluate_model, cfg, model, tasks[lv], lv, label=name,
                                  episodes_path=out / f"episodes_{stem}.txt")
                save_heldout(out / f"heldout_{stem}.json", h, model, ids, eval_s)
                name_note = ""
            held[(name, lv)] = h
            rows.append({"phase": name, "level": lv, "resolved": h.mean, "ci95": [h.low, h.high], "n": h.n,
                         "masked": h.masked, "train_s": round(train_s, 1), "eval_s": round(eval_s, 1)})
            print(f"{name} level {lv}: {h}  (train {train_s:.0f}s, eval {eval_s:.0f}s){name_note}", flush=True)

    if not args.skip_base and not args.reeval:
        phase("base model", args.model, 0.0)
    with_grpo = args.grpo_steps != 0
    grpo_ckpt = None
    if args.reeval:
        sft_ckpt = latest_checkpoint(out / "sft")
        grpo_ckpt = latest_checkpoint(out / "grpo") if with_grpo else None
        if sft_ckpt is None or (with_grpo and grpo_ckpt is None):
            raise SystemExit(f"--reeval: no complete sft/{' and grpo/' if with_grpo else ''} checkpoints under {out}")
        sft_s = grpo_s = 0.0
    else:
        sft_cfg = config(["trainer.steps=0", f"trainer.run_dir={out / 'sft'}"])
        sft, sft_s = timed(train, sft_cfg)
        sft_ckpt = sft.checkpoint
    phase("warm start", str(sft_ckpt / "model"), sft_s)
    if with_grpo and not args.reeval:
        steps = [f"trainer.steps={args.grpo_steps}"] if args.grpo_steps is not None else []
        grpo_cfg = config([*steps, "sft.episodes=0", f"trainer.run_dir={out / 'grpo'}"])
        grpo, grpo_s = timed(train, grpo_cfg, init_from=str(sft_ckpt))
        grpo_ckpt = grpo.checkpoint

    paired = {}
    if grpo_ckpt is not None:
        phase("GRPO", str(grpo_ckpt / "model"), grpo_s)
        for lv in levels:
            gained, lost, p_value = paired_sign_test(held[("warm start", lv)], held[("GRPO", lv)])
            paired[lv] = {"gained": gained, "lost": lost, "p_value": p_value}
    total_s = sum(r["train_s"] for r in rows if r["level"] == levels[0]) + sum(r["eval_s"] for r in rows)
    print(f"\n{args.env} held-out resolved rate (greedy, split {args.split}, 95% Wilson CI); model {args.model}")
    print(f"{'phase':<12} {'level':>5} {'resolved':>9} {'95% CI':>17} {'n':>4} {'train':>8} {'eval':>7}")
    for r in rows:
        ci = "[{:.3f}, {:.3f}]".format(*r["ci95"])
        print(f"{r['phase']:<12} {r['level']:>5} {r['resolved']:9.3f} {ci:>17} {r['n']:>4} {r['train_s']:7.0f}s "
              f"{r['eval_s']:6.0f}s")
    for lv, pr in paired.items():
        print(f"level {lv}: GRPO solves {pr['gained']} the warm start does not, loses {pr['lost']} "
              f"(exact sign test p = {pr['p_value']:.2g})")
    png = dashboard(rows, out / "dashboard.png")
    summary = {"model": args.model, "config": recipe, "split": args.split, "levels": levels, "quick": args.quick,
               "overrides": base, "env": args.env,
               "checkpoints": {"sft": str(sft_ckpt), "grpo": str(grpo_ckpt) if grpo_ckpt else None},
               "held_out_tasks": {lv: [t.instance_id for t in tasks[lv]] for lv in levels},
               "rows": rows, "paired_grpo_vs_warm_start": paired, "total_s": round(total_s, 1),
               "dashboard": str(png) if png else None,
               "training_dashboard": str(out / "grpo" / "dashboard.png")}
    summary_path = out / ("summary_reeval.json" if args.reeval else "summary.json")
    summary_path.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"total {total_s / 60:.1f} min; summary {summary_path}; dashboard {png}")
    return summary


if __name__ == "__main__":
    main()
