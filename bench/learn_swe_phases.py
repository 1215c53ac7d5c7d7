"""bench/learn_swe.py's report (table, record, dashboard), the pilot's lines, the non-fix audit and the
compute-matched control (issue 54 item 3), with the two things both files use (Refused, write_json); the state
directory, the recipe, the evaluations and the training phases before the control stay in learn_swe.py, whose
docstring describes the benchmark. This module imports nothing from learn_swe.py (which runs as a script and
imports this one): what a phase needs of the run comes in its `Bench`."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

from agentrl.envs.swe_lite.benchmark import SEEDS, audit_episodes

from agentrl.evaluation import compare_paired, load_done
from agentrl.precision import cpu_model
from agentrl.trainer.checkpoint import latest_checkpoint
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


def report(b: Bench, pinned: dict, sft_ckpt: Path, grpo_ckpt: Path | None, control_ckpt: Path | None = None) -> dict:
    """The sign tests, the table, the dashboard, OUT/summary.json and the publishable OUT/record.json. Greedy, GRPO
    is compared with the warm start (`paired`) and, once the control is evaluated, with it (`paired_control`); the
    k-sample comparisons are COMPARED's (sampled_report)."""
    from agentrl.engine.build import compute_precision, engine_precision

    a, paired, paired_control = b.args, {}, {}
    if grpo_ckpt is not None and b.greedy:
        for lv in b.levels:
            gained, lost, p_value = paired_sign_test(b.held[("warm start", lv)], b.held[("GRPO", lv)])
            paired[lv] = {"gained": gained, "lost": lost, "p_value": p_value}
            if ("control", lv) in b.held:
                gained, lost, p_value = paired_sign_test(b.held[("control", lv)], b.held[("GRPO", lv)])
                paired_control[lv] = {"gained": gained, "lost": lost, "p_value": p_value}
    primary = b.sampled_rows or b.rows
    total_s = (sum(r["train_s"] for r in primary if r["level"] == b.levels[0])
               + sum(r["eval_s"] for r in b.rows + b.sampled_rows))
    png = dashboard(primary, b.out / "dashboard.png",
                    f"held-out resolved rate ({a.samples} samples per task)" if a.samples else None)
    summary = {"model": a.model, "config": a.config, "split": a.split, "levels": b.levels, "quick": a.quick,
               "overrides": b.overrides, "env": a.env,
               "checkpoints": {"sft": str(sft_ckpt), "grpo": str(grpo_ckpt) if grpo_ckpt else None,
                               "control": str(control_ckpt) if control_ckpt else None},
               "held_out_tasks": {lv: [t.instance_id for t in b.tasks[lv]] for lv in b.levels}, "rows": b.rows,
               "paired_grpo_vs_warm_start": paired, "paired_grpo_vs_control": paired_control,
               "control": b.control, "audit": b.audits, "total_s": round(total_s, 1),
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
    if b.control:
        record["control"] = {k: b.control[k] for k in CONTROL_RECORD if k in b.control}
        record["paired_control"] = paired_control
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
    """The benchmark's final table from its record: one row per phase and level, the sign tests (GRPO against the
    warm start and the control), the control's line, the audit; with --samples the k-sample design and its table
    first (the primary comparison), greedy after it."""
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
    for lv, pr in (record.get("paired_control") or {}).items():
        lines.append(f"level {lv}: GRPO solves {pr['gained']} the control does not, loses {pr['lost']} "
                     f"(exact sign test p = {pr['p_value']:.2g})")
    if record.get("control"):
        lines.append(control_line(record["control"]))
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


# ---- the compute-matched control (issue 54 item 3) ----

CONTROLS = ("rft", "epochs", "none")
"""--control: rejection-sampling fine-tuning on the policy's own resolved training episodes, more warm-start epochs
on the expert demonstrations, or no control phase."""
CONTROL_RECORD = ("kind", "budget_s", "budget_from", "wall_s", "rounds", "episodes_sampled", "episodes_masked",
                  "episodes_kept", "demonstrations", "epochs", "sft_steps")
"""What record.json keeps of OUT/control/control.json (summary.json keeps all of it)."""


def pin_control(out: Path, run: dict, kind: str, control_s: float | None) -> dict:
    """OUT/run.json's `control` (the kind and --control-s), pinned by the first run that reaches the phases (a state
    directory made by --pilot, or before the control existed, gets it then: its recipe is unchanged); a later
    run of another kind or --control-s is refused. The budget joins it when the control first starts
    (control_budget)."""
    want = {"kind": kind, "control_s": control_s}
    have = run.get("control")
    if have is None:
        run["control"] = want
        write_json(out / "run.json", run)
    elif {k: have.get(k) for k in want} != want:
        pinned = f"--control {have.get('kind')}" + (f" --control-s {have['control_s']:g}" if have.get("control_s") else "")
        raise Refused(f"{out} pinned {pinned}; resume it with that, or pass a new --out")
    return run["control"]


def control_budget(b: Bench) -> tuple[float, str] | None:
    """(seconds, where they come from) of the control's budget: the one run.json pinned when the control first
    started, else --control-s, else the wall time GRPO's training took (the run's clock); None when there is
    none (--grpo-steps 0 without --control-s). Pinned in run.json here, so a restarted control has the same."""
    pinned = b.run["control"]
    if pinned.get("budget_s") is not None:
        return float(pinned["budget_s"]), pinned["budget_from"]
    if b.args.control_s is not None:
        budget, source = float(b.args.control_s), "--control-s"
    elif b.grpo_cfg is not None and b.clock.seconds("grpo") > 0:
        budget, source = round(b.clock.seconds("grpo"), 1), "GRPO's training wall time"
    else:
        return None
    pinned.update(budget_s=budget, budget_from=source)
    write_json(b.out / "run.json", b.run)
    return budget, source


def finished_control(run_dir: Path) -> tuple[Path, dict] | None:
    """(checkpoint, OUT/control/control.json) of a control that finished; None if it did not (never started, or
    killed: control.json is written last, after the checkpoint)."""
    try:
        record = json.loads((run_dir / "control.json").read_text())
    except (OSError, ValueError):
        return None
    ckpt = latest_checkpoint(run_dir)
    return (ckpt, record) if ckpt is not None and isinstance(record, dict) else None


def control_phase(b: Bench, sft_ckpt: Path) -> Path | None:
    """The control's checkpoint (OUT/control): the finished one, or a new control trained from the warm start
    `sft_ckpt` for the budget (control_budget). A control that was stopped kept nothing and starts over with the
    same budget (its clock counts only the attempt that finished, as the warm start's). None with --control none,
    with --reeval and no finished control, or without a budget."""
    kind, run_dir = b.args.control, b.out / "control"
    if kind == "none":
        return None
    done = finished_control(run_dir)
    if done is not None:
        b.control = done[1]
        return done[0]
    if b.args.reeval:
        print(f"--reeval: no finished control under {b.out}; it is not evaluated", flush=True)
        return None
    budget = control_budget(b)
    if budget is None:
        print("== no control: GRPO did not train (--grpo-steps 0), so there is no wall time to match; --control-s "
              "SECONDS gives one", flush=True)
        return None
    budget_s, source = budget
    b.where["phase"] = "the control"
    print(f"== control ({kind}) from the warm start for {budget_s:.0f} s ({source})", flush=True)
    b.clock.begin("control")
    shutil.rmtree(run_dir, ignore_errors=True)  # a stopped control kept nothing
    result = train_control(b.control_cfg, kind, sft_ckpt, budget_s)
    wall = b.clock.end("control")
    b.control = {**result, "budget_s": budget_s, "budget_from": source, "wall_s": round(wall, 1)}
    write_json(run_dir / "control.json", b.control)
    print(control_line(b.control), flush=True)
    return Path(result["checkpoint"])


def control_line(c: dict) -> str:
    """What the control did, in one line."""
    head = (f"control: {c['kind']} from the warm start for {c['budget_s']:.0f} s ({c['budget_from']}), "
            f"ran {c['wall_s']:.0f} s: ")
    if c["kind"] == "rft":
        return head + (f"{c['rounds']} rounds, {c['episodes_sampled']} training episodes sampled "
                       f"({c['episodes_masked']} masked), {c['episodes_kept']} kept (resolved), {c['sft_steps']} SFT steps")
    return head + (f"{c['epochs']:.2f} more epochs over {c['demonstrations']} expert demonstrations, "
                   f"{c['sft_steps']} SFT steps")


def train_control(cfg, kind: str, init_from: Path, budget_s: float, *, console=None) -> dict:
    """Supervised training from the warm-start checkpoint `init_from` for `budget_s` wall seconds from this call
    (loading the policy, starting the engine and the sandboxes count, as they count in GRPO's clock), in
    cfg.trainer.run_dir, with the policy loaded as GRPO loads it (agentrl.trainer.loop.setup). kind `rft`:
    rft_rounds; `epochs`: more_epochs. The budget is checked before each sampling round and each SFT step, and
    the first check past it ends training, so it overruns by at most one round or one step (and the final
    checkpoint). Returns what it did: the kind, its counts, the checkpoint and train_s."""
    return asyncio.run(_train_control(cfg, kind, Path(init_from), budget_s, console))


async def _train_control(cfg, kind: str, init_from: Path, budget_s: float, console) -> dict:
    from agentrl.trainer.env_factory import build_env_factory
    from agentrl.trainer.loop import checkpoint, setup, teardown

    started = time.monotonic()

    def spent() -> bool:
        return time.monotonic() - started >= budget_s

    run = setup(cfg, resume=None, init_from=str(init_from), console=console)
    try:
        with run.monitor:
            env_factory, run.close_envs = build_env_factory(cfg)
            stats = await (rft_rounds if kind == "rft" else more_epochs)(run, env_factory, spent)
            run.checkpoint = checkpoint(run, stats["sft_steps"])
    finally:
        await teardown(run)
    return {"kind": kind, **stats, "checkpoint": str(run.checkpoint),
            "train_s": round(time.monotonic() - started, 1)}


def log_control(run_dir: Path, row: dict) -> None:
    """One line of OUT/control/control_metrics.jsonl (a round of rft, an epoch of epochs)."""
    with open(run_dir / "control_metrics.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


async def rft_rounds(run, env_factory, spent) -> dict:
    """Rejection-sampling fine-tuning (Xiong et al. 2025): rounds until the budget is spent, each sampling one GRPO
    step's worth of training episodes with the current policy (rollout.tasks_per_step tasks drawn by GRPO's task
    sampler: the same pool, exclusions and replays; rollout.group_size episodes each at GRPO's temperature and
    sampling seeds; no dynamic sampling), keeping the resolved ones (agentrl.trainer.sft.resolved_episodes: task
    success, not the shaped reward) and training one supervised pass on them (sft_on: model tokens only) with
    GRPO's optimizer and learning-rate schedule, then giving the engine the new weights. Every sampled episode
    goes to control/trajectories.jsonl (control/round, control/kept), each round to control_metrics.jsonl."""
    from agentrl.cluster import build_backend
    from agentrl.engine.build import build_engine
    from agentrl.rollout.agent_loop import LoopConfig
    from agentrl.trainer.collect import outcome, trainable
    from agentrl.trainer.loop import push_weights
    from agentrl.trainer.pipeline import build_sampler
    from agentrl.trainer.sft import resolved_episodes, sft_on

    cfg, r, monitor = run.cfg, run.cfg.rollout, run.monitor
    run.engine = build_engine(cfg, run.strategy.engine_model(cfg, run.model, run.source), run.tokenizer)
    run.backend = await build_backend(cfg, env_factory, run.engine, run.tokenizer)
    sampler, rng = build_sampler(cfg, 0, env_factory), random.Random(r.seed)
    stats = {"rounds": 0, "episodes_sampled": 0, "episodes_masked": 0, "episodes_kept": 0, "sft_steps": 0}

    async def group(draw):
        g = await run.backend.collect_group(draw.seed, r.group_size,
                                            cfg=LoopConfig.from_rollout(r, sampling_salt=draw.salt))
        monitor.episodes_done(len(g))
        return g

    while not spent():
        n = stats["rounds"]
        draws = [sampler.first(n, slot) for slot in range(r.tasks_per_step)]
        monitor.begin_step(n + 1, r.tasks_per_step * r.group_size, label="control round", steps="?")
        with monitor.phase("rollout"):
            groups = await asyncio.gather(*(group(d) for d in draws))
        sampler.observe(n, [outcome(g, d.seed, replay=d.replay) for g, d in zip(groups, draws, strict=True)])
        everything = [t for g in groups for t in g]
        kept = resolved_episodes(everything)
        history = []
        if kept:
            with monitor.phase("sft"):
                history = await asyncio.to_thread(sft_on, cfg, run.model, run.optimizer, kept, rng, stop=spent,
                                                  after_step=lambda m: run.scheduler.step())
        if history:
            run.version += len(history)
            with monitor.phase("sync"):
                await push_weights(run)
        masked = sum(not trainable(t) for t in everything)
        stats.update(rounds=n + 1, episodes_sampled=stats["episodes_sampled"] + len(everything),
                     episodes_masked=stats["episodes_masked"] + masked,
                     episodes_kept=stats["episodes_kept"] + len(kept), sft_steps=stats["sft_steps"] + len(history))
        with open(run.run_dir / "trajectories.jsonl", "a") as f:
            kept_ids = {id(t) for t in kept}
            for t in everything:
                t.metrics.update({"control/round": n + 1, "control/kept": float(id(t) in kept_ids)})
                f.write(t.to_json() + "\n")
        loss = sum(h["sft/loss"] for h in history) / len(history) if history else None
        log_control(run.run_dir, {"round": n + 1, "episodes": len(everything), "masked": masked, "kept": len(kept),
                                  "sft_steps": len(history), "loss": loss, "time": time.time()})
        monitor.console.print(f"control round {n + 1}: {len(kept)} of {len(everything)} episodes resolved and kept"
                              + (f", {len(history)} SFT step(s), loss {loss:.4f}" if history else ""))
    return stats


async def more_epochs(run, env_factory, spent) -> dict:
    """More warm-start epochs until the budget is spent: the warm start's expert demonstrations collected again
    (the same sft.episodes task seeds, the same drops of cut actions), passes of sft_on over them with the warm
    start's optimizer settings (a fresh AdamW at sft.lr, as run_sft; its moments were not kept) and its shuffle
    generator advanced past the warm start's sft.epochs passes, so the order continues where it stopped; a pass
    the budget ends is counted as a fraction of an epoch. Each epoch goes to control_metrics.jsonl."""
    import torch

    from agentrl.trainer.sft import expert_trajectories, sft_on

    cfg, s, monitor = run.cfg, run.cfg.sft, run.monitor
    monitor.begin_step(1, s.episodes, label="control demonstrations", steps=1)
    with monitor.phase("expert"):
        trajs = await expert_trajectories(cfg, env_factory, run.tokenizer, s.episodes, on_episode=monitor.episodes_done,
                                          warn=lambda msg: monitor.console.print(f"[yellow]control: {msg}[/]"))
    stats = {"demonstrations": len(trajs), "epochs": 0.0, "sft_steps": 0}
    if not trajs:
        monitor.console.print("[yellow]control: no usable expert demonstration, so no epoch to train[/]")
        return stats
    optimizer = torch.optim.AdamW(run.model.parameters(), lr=s.lr)
    rng = random.Random(cfg.rollout.seed)
    for _ in range(s.epochs):  # the warm start's own shuffles (run_sft)
        rng.shuffle(list(range(len(trajs))))
    per_epoch = -(-len(trajs) // s.batch_trajectories)
    while not spent():
        epoch = s.epochs + int(stats["sft_steps"] / per_epoch) + 1
        monitor.begin_step(epoch, per_epoch, label="control epoch", steps="?")
        with monitor.phase("sft"):
            history = await asyncio.to_thread(sft_on, cfg, run.model, optimizer, trajs, rng, stop=spent,
                                              after_step=lambda m: monitor.episodes_done(1))
        if not history:
            break
        stats["sft_steps"] += len(history)
        stats["epochs"] = round(stats["sft_steps"] / per_epoch, 3)
        loss = sum(h["sft/loss"] for h in history) / len(history)
        log_control(run.run_dir, {"epoch": epoch, "sft_steps": len(history), "loss": loss, "time": time.time()})
        monitor.console.print(f"control epoch {epoch} (warm start's {s.epochs} + {stats['epochs']:g}): "
                              f"{len(history)} SFT step(s), mean loss {loss:.4f} over {len(trajs)} demonstrations")
    return stats
