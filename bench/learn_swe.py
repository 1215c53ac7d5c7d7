"""Learning benchmark on `swe_lite` (or `swe_real`) with the default model on CPU: greedy resolved rate on
held-out test modules (packages), per difficulty level, for the base model, after the expert warm start (SFT),
after GRPO from that checkpoint and after a compute-matched supervised control from the same checkpoint, with the
wall time of each phase.

    .venv/bin/python bench/learn_swe.py [--env swe_real] [--levels 0,1,2] [--train-level 0] [--sft-episodes 32]
            [--grpo-steps 12] [--split test] [--limit N] [--base-limit N] [--out runs/learn_swe] [--quick]
            [--samples K [--no-greedy] [--pilot]] [--control rft|epochs|none [--control-s S]]
            [--reeval [--reuse]] [--audit] [--grpo-set algo.advantage=rloo ...] [trainer.lr=1e-5 ...]

The recipe is the env's preset (configs/swe_lite.yaml, configs/swe_real.yaml) under --config and the dotted
overrides; `--grpo-steps 0` stops after the warm start (unless --control-s gives the control a budget).
Held-out tasks are every task of `--split` offered at a level (level 0: one-line fixes), run once each, greedy;
modules (swe_real: packages) of the test split never appear in training. `--base-limit N` evaluates the base model on the first N of them only. Each rate has a 95%
Wilson interval, and GRPO is compared with the warm start (and the control) on the same tasks by an exact paired
sign test (McNemar) per level. The resolved GRPO episodes are then read by the non-fix audit
(swe_lite.benchmark.non_fix_findings: an always-equal value, a special case of the quoted example); `--audit`
runs that audit alone on a finished state directory.

**Sampled success (`--samples K`).** One greedy episode per task can only see gains of about 10 points on ~150
tasks. With `--samples K` every phase is also evaluated with K episodes per held-out task at the recipe's rollout
temperature, top_p and top_k (training's sampling distribution), and that is the primary comparison; greedy
stays as a secondary line (`--no-greedy` drops it). Seeds are paired between checkpoints: turn k of sample j of
task t samples with seed turn_seed(member_sampling_seed(name_seed(t), j, 0, 0), k) (agentrl.rollout.seeds,
sha256-based), in every phase, and the embedded engine draws each request's uniforms from its own seed, so two
checkpoints meet the same random draws (common random numbers; each record keeps its `sampling_seed`). A task's
outcome is its mean success over its scored samples; a phase's rate is the mean over tasks with Wilson's 95%
interval over tasks (conservative for means in [0, 1]). GRPO is compared with the warm start and with the
control (COMPARED in bench/learn_swe_phases.py) on the per-task differences by a sign-flip permutation test (the
primary p; exact up to 20 nonzero differences, else 20000 seeded draws), the sign test on task means, the same
permutation test over per-module sums (module-clustered: tasks of one module may move together), and a Student t
95% interval of the mean difference (agentrl.evaluation.compare_paired).

**Pilot (`--pilot`, with `--samples K`).** Run with the measurement's own command and --out before GRPO: it trains
the warm start, evaluates it with seed family 0 (the evaluation the full run reuses) and family 1 (salt 1 in
member_sampling_seed), trains a second warm start with rollout.seed + 1 (other demonstrations, other order) and
evaluates it with family 0, and writes OUT/pilot.json: the SD of per-task differences of each pair and the
design's detectable effect at this n and K for 80% power at two-sided alpha 0.05 (2.80 · sd / √n;
agentrl.evaluation.detectable_effect), the larger of the two being the design's. The full run's report quotes it.

**The compute-matched control (`--control`, issue 54 item 3).** "GRPO helps" is only GRPO's own gain if more
supervised training for the same compute does not give it too. After GRPO, a control phase starts from the same
warm-start checkpoint and trains for the wall time GRPO's training took (its entry in OUT/clock.json;
`--control-s SECONDS` sets the budget instead, e.g. with --grpo-steps 0, where there is nothing to match). The
budget counts from the phase's start (loading the policy, the engine and the sandboxes count, as in GRPO's clock)
and is checked before each sampling round and each SFT step: the first check past it ends training, so the control
overruns by at most one round or one step, and its own wall time is reported beside the budget. It is evaluated
exactly like the other phases (greedy and/or --samples K with the same paired seeds) as the phase `control`, and
the report compares GRPO with it as with the warm start (greedy sign test; k-sample paired tests). Two kinds:
`rft` (the default): rejection-sampling fine-tuning (Xiong et al. 2025): rounds, each sampling one GRPO step's
worth of training episodes with the current policy (rollout.tasks_per_step tasks drawn by GRPO's task sampler:
the same pool, level, exclusions and replays; rollout.group_size episodes each at GRPO's temperature and sampling
seeds; no dynamic sampling), keeping the resolved ones (task success, not the shaped or format reward; masked
episodes never), and one supervised pass over them (token-mean NLL on the model's tokens, observations masked,
as in the warm start: agentrl.trainer.sft.sft_on) with GRPO's optimizer and learning rate (trainer.lr; the
comparison is then about the signal, not the step size), the engine given the new weights after each round.
`epochs`: more warm-start epochs: the same expert demonstrations collected again, passes over them with the warm
start's optimizer settings (a fresh AdamW at sft.lr; the warm start's moments were not kept) continuing its
shuffle order. `--control none` skips the phase. OUT/control/ holds its checkpoint, control_metrics.jsonl (a
line per round or epoch), trajectories.jsonl (rft: every sampled episode, control/kept marking the kept) and
control.json (what it did: rounds, episodes sampled, masked and kept, or demonstrations and epochs; SFT steps,
budget, wall time), which summary.json and record.json carry under `control` and the table states in a line.

**Resume.** --out is the run's state directory, and running the same command again continues it after any
interruption (Ctrl-C, SIGTERM, SIGKILL, a machine that went away): a finished phase is never run again; the warm
start, which keeps no checkpoint of its own until it ends, starts over; GRPO continues from its last checkpoint
(trainer.checkpoint_every) with its metrics and trajectories cut back to that step, and with what its earlier
attempts left of trainer.max_train_s (the budget covers the phase, not each attempt; a GRPO that spent it is
finished at the step it reached); the control, which keeps no
checkpoint until it ends either, starts over from the warm start with the same budget (control.json, written
last, marks it finished; only the finished attempt's time counts); an evaluation keeps every
episode it finished (each is appended to OUT/episodes_<phase>_level<L>.jsonl as it ends, keyed by task and
sample) and runs only the rest. Kept episodes are as exact as the uninterrupted run: a greedy fp32 episode
depends only on the checkpoint and the task (a sampled one also on its fixed seeds), up to the floating-point
reduction order of whichever episodes shared its batch, which an uninterrupted run leaves to timing too.
OUT/run.json pins the recipe (command, resolved configs, held-out tasks, the k-sample design) and, under
`control`, the control's kind and --control-s (pinned by the first run past --pilot, so a pilot's state directory
takes them from the full run) and its budget in seconds (pinned when the control first starts); a different
recipe or control is refused (exit 2) rather than mixed into the old state. One exception: until GRPO has started
(no OUT/grpo, OUT/control, or GRPO or control evaluation), a command that changes only GRPO's config
(`--grpo-set KEY=VALUE`: overrides for GRPO and its control alone) fixes it, and run.json lists the change under
`amended`; so a pilot's state directory takes the GRPO recipe committed after the pilot. The wall time of a phase counts the work that
was kept (an interrupted attempt up to its last kept episode or checkpoint).

Outputs: OUT/summary.json, OUT/record.json (the small published record: table, sign tests (`paired` against the
warm start, `paired_control` against the control), the control's `control`, audit, command, commit, CPU,
precision, wall times; with --samples its `sampled` part: design, seeds, rows, paired tests, pilot),
OUT/dashboard.png (resolved rate per level and phase, the sampled one under --samples), per phase
OUT/heldout_<phase>_level<L>.json (per-task outcomes and what they were measured on) and
OUT/episodes_<phase>_level<L>.txt (every episode as text; the K-sample evaluation's files end in _k<K>, the
pilot's second seed family in _k<K>_seeds1); the GRPO run keeps its own training dashboard.
`--reeval` trains nothing and evaluates the latest sft/, grpo/ and (finished) control/ checkpoints again (e.g. after `agentrl train
--resume OUT/grpo trainer.steps=24`); with `--reuse` a phase or episode stored for the same checkpoint is kept.

`--quick` runs the whole pipeline on a tiny budget (2 held-out tasks at level 0, 4 expert episodes, one GRPO
step of 2×2 episodes, the control for that step's wall time): a smoke run, not a measurement. A benchmark, not a test; the machine it ran on may be
shared, so read the wall times as that.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from agentrl.envs.swe_lite.benchmark import SEEDS, audit_episodes, evaluate_model, held_out_tasks

from agentrl.config import dump_config, load_config
from agentrl.evaluation import detectable_effect, load_done, pilot_diff_sd
from agentrl.trainer.checkpoint import latest_checkpoint
from agentrl.trainer.heldout import HeldOut

sys.path.insert(0, str(Path(__file__).resolve().parent))  # learn_swe_phases, beside this script
from learn_swe_phases import (  # noqa: E402
    CONTROLS,
    Refused,
    audit_only,
    control_phase,
    pilot_lines,
    pin_control,
    report,
    write_json,
)

QUICK = ["sft.episodes=4", "sft.epochs=1", "trainer.steps=1", "rollout.tasks_per_step=1", "rollout.group_size=2",
         "rollout.concurrency=2", "rollout.max_turns=3"]
ROOT = Path(__file__).resolve().parent.parent


# ---- the state directory ----

def flat(d, prefix: str = "") -> dict:
    """{dotted key: leaf value} of nested dicts (lists are leaves)."""
    if not isinstance(d, dict) or not d:
        return {prefix.rstrip("."): d}
    out = {}
    for k, v in d.items():
        out.update(flat(v, f"{prefix}{k}."))
    return out


def comparable(cfg) -> dict:
    """A resolved config as the recipe pins it: everything but where its run directory is."""
    d = yaml.safe_load(dump_config(cfg))
    d["trainer"].pop("run_dir", None)
    return d


def check_recipe(out: Path, recipe: dict, command: str) -> dict:
    """Pin the recipe in OUT/run.json on the first run; later runs must match it. Returns run.json."""
    path = out / "run.json"
    if not path.exists():
        if any(not p.name.startswith(".") for p in out.iterdir()):
            raise Refused(f"{out} is not empty and has no run.json, so it is not a state directory of this "
                          "benchmark; pass a new --out")
        run = {"command": command, "recipe": recipe, "created": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "commit": git_commit()}
        write_json(path, run)
        return run
    try:
        run = json.loads(path.read_text())
        old = run["recipe"]
    except (OSError, ValueError, KeyError, TypeError):
        raise Refused(f"{path} is unreadable; pass a new --out") from None
    a, b = flat(old), flat(recipe)
    changed = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    if changed and all(k.startswith("grpo.") for k in changed) and not grpo_started(out):
        # Nothing computed so far depends on GRPO's recipe (a pilot's state directory): fix it now, on the record.
        run.setdefault("amended", []).append({"changed": {k: [a.get(k), b.get(k)] for k in changed},
                                              "previous_command": run.get("command"), "commit": git_commit(),
                                              "at": time.strftime("%Y-%m-%d %H:%M:%S %z")})
        run["recipe"], run["command"] = recipe, command  # the command that resumes it from now on
        write_json(path, run)
        print(f"{out}: GRPO's recipe fixed before GRPO started (changed {', '.join(changed)}; run.json `amended`)",
              flush=True)
        return run
    if changed:
        shown = ", ".join(changed[:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
        raise Refused(f"{out} holds a run of another recipe (differs in {shown}); resume it with its own command "
                      f"({run.get('command', '?')}) or pass a new --out")
    return run


def grpo_started(out: Path) -> bool:
    """Whether anything in the state directory depends on GRPO's recipe: its run, its evaluation, or the control
    (whose budget is GRPO's training time)."""
    return any((out / d).exists() for d in ("grpo", "control")) or any(
        any(out.glob(f"{kind}_{phase}_level*")) for kind in ("episodes", "heldout") for phase in ("GRPO", "control"))


class Clock:
    """Wall seconds per phase across invocations (OUT/clock.json). An attempt that ended counts in full; one that
    was killed counts up to the last thing it kept (an episode, a checkpoint), read when the next attempt starts."""

    def __init__(self, out: Path):
        self.path = out / "clock.json"
        self.data = json.loads(self.path.read_text()) if self.path.exists() else {}

    def seconds(self, phase: str) -> float:
        return float(self.data.get(phase, {}).get("s", 0.0))

    def begin(self, phase: str, kept_until=lambda start: start, *, fresh: bool = False) -> None:
        """Start an attempt at `phase`, first settling a killed one (kept_until(its start) = when its last kept work
        ended); `fresh` forgets earlier attempts (the phase is measured again)."""
        entry = self.data.setdefault(phase, {"s": 0.0, "start": None})
        if fresh:
            entry.update(s=0.0, start=None)
        if entry["start"] is not None:
            entry["s"] += max(0.0, kept_until(entry["start"]) - entry["start"])
        entry["start"] = time.time()
        write_json(self.path, self.data)

    def end(self, phase: str) -> float:
        """The attempt finished the phase; returns the phase's total seconds."""
        entry = self.data[phase]
        entry["s"] += time.time() - entry["start"]
        entry["start"] = None
        write_json(self.path, self.data)
        return entry["s"]


def fingerprint(model: str) -> list:
    """Name, size and mtime of every file of a model directory (a retrained checkpoint at the same path differs);
    the model name itself for a named model."""
    d = Path(model)
    if not d.is_dir():
        return [model]
    return [[str(f.relative_to(d)), f.stat().st_size, f.stat().st_mtime_ns] for f in sorted(d.rglob("*")) if f.is_file()]


@dataclass(frozen=True)
class Design:
    """How one evaluation decodes: greedy (samples None), or `samples` episodes per task at the recipe's rollout
    temperature drawing from seed family `family` (envs/swe_lite/benchmark.py sampling_seed)."""

    samples: int | None = None
    family: int = 0

    def stem(self, phase: str, level: int) -> str:
        """The evaluation's file stem (greedy keeps the stems the greedy-only benchmark always had)."""
        base = f"{phase.replace(' ', '_')}_level{level}"
        if self.samples is None:
            return base
        return f"{base}_k{self.samples}" + (f"_seeds{self.family}" if self.family else "")

    def pinned(self) -> dict | None:
        """What a stored result or episode file must have been measured with (None for greedy, as before)."""
        return None if self.samples is None else {"samples": self.samples, "family": self.family}


def save_heldout(path: Path, h: HeldOut, model: str, task_ids: list[str], eval_s: float,
                 design: dict | None = None, episodes: dict | None = None) -> None:
    """One phase's held-out result with what it was measured on: the phase is done when this matches. A k-sample
    result also keeps its design and the scored episodes of each task."""
    extra = {} if design is None else {"design": design, "episodes": episodes}
    write_json(path, {"checkpoint": str(model), "fingerprint": fingerprint(model), "tasks": task_ids,
                      "eval_s": round(eval_s, 1), "mean": h.mean, "low": h.low, "high": h.high, "n": h.n,
                      "masked": h.masked, "per_task": h.per_task, **extra})


def load_heldout(path: Path, model: str, task_ids: list[str],
                 design: dict | None = None) -> tuple[HeldOut, float, dict] | None:
    """(the stored HeldOut, its eval seconds, its scored episodes per task) if path holds a result for this
    checkpoint, these tasks and this design."""
    try:
        d = json.loads(path.read_text())
        if (d.get("checkpoint") != str(model) or d.get("fingerprint") != fingerprint(model) or d.get("tasks") != task_ids
                or d.get("design") != design):
            return None
        per_task = {str(k): float(v) for k, v in d["per_task"].items()}
        h = HeldOut(d["mean"], d["low"], d["high"], d["n"], d["masked"], per_task)
        return h, float(d.get("eval_s", 0.0)), d.get("episodes") or {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # missing or damaged: evaluate again
        return None


class EpisodeStore:
    """The finished episodes of one evaluation (OUT/episodes_<stem>.jsonl, one record per line as each ends, keyed
    by (task, sample)), for the checkpoint, tasks and k-sample design its .meta.json names; a store of another
    checkpoint, task list or design is discarded."""

    def __init__(self, out: Path, stem: str, model: str, task_ids: list[str], *, fresh: bool,
                 design: dict | None = None):
        self.path, meta = out / f"episodes_{stem}.jsonl", out / f"episodes_{stem}.meta.json"
        want = {"checkpoint": str(model), "fingerprint": fingerprint(model), "tasks": task_ids}
        if design is not None:
            want["design"] = design
        try:
            same = json.loads(meta.read_text()) == want
        except (OSError, ValueError):
            same = False
        if fresh or not same:
            self.path.unlink(missing_ok=True)
            write_json(meta, want)
        self.done = load_done(self.path)  # cuts a torn last line; infrastructure failures are run again

    def kept_until(self, start: float) -> float:
        """When the last episode an attempt begun at `start` kept ended."""
        return max([start, *(r.get("ended_at", 0.0) for r in self.done.values() if r.get("ended_at", 0.0) >= start)])

    def append(self, rec: dict) -> None:
        """Persist one finished episode (not once a SIGTERM arrived: an episode the shutdown cut short is no result)."""
        from agentrl.sandboxes import reaper

        if reaper.terminated:
            return
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({**rec, "ended_at": time.time()}, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())


def step_of(ckpt: Path) -> int:
    """The step number of checkpoints/step_N."""
    return int(ckpt.name.split("_")[-1])


def cut_back(run_dir: Path, step: int) -> None:
    """Drop what a killed GRPO run logged after checkpoint `step` (metrics.jsonl, trajectories.jsonl): the resumed
    run logs those steps again, so the run directory reads as one uninterrupted run."""
    for name, step_key in (("metrics.jsonl", lambda r: r["step"]), ("trajectories.jsonl",
                                                                   lambda r: r["metrics"]["train/step"])):
        path = run_dir / name
        if not path.exists():
            continue
        kept = []
        for line in path.read_text().splitlines(keepends=True):
            try:
                if line.endswith("\n") and step_key(json.loads(line)) <= step:
                    kept.append(line)
            except (ValueError, KeyError, TypeError):
                break  # a torn last line
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text("".join(kept))
        os.replace(tmp, path)


def git_commit() -> str:
    """HEAD of the checkout this runs from, with '+dirty' when tracked files differ from it ('' outside git)."""
    def git(*a):
        return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True, timeout=30).stdout.strip()
    try:
        head = git("rev-parse", "--short", "HEAD")
        return head + ("+dirty" if head and git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.SubprocessError):
        return ""


# ---- the run ----

def parse_args(argv):
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
    p.add_argument("--base-limit", type=int, default=None, help="the base model on the first N of those tasks only")
    p.add_argument("--eval-concurrency", type=int, default=None,
                   help="held-out episodes run at once (default: all; fewer use less memory)")
    p.add_argument("--out", default="runs/learn_swe", help="the state directory: the same command resumes it")
    p.add_argument("--quick", action="store_true", help="a smoke run on a tiny budget (not a measurement)")
    p.add_argument("--skip-base", action="store_true", help="do not evaluate the base model")
    p.add_argument("--reeval", action="store_true", help="train nothing: evaluate the checkpoints under --out again")
    p.add_argument("--reuse", action="store_true",
                   help="with --reeval: keep a phase's stored result when its checkpoint and tasks are unchanged")
    p.add_argument("--audit", action="store_true",
                   help="only the non-fix audit of the stored GRPO episodes of a finished --out")
    p.add_argument("--samples", type=int, default=None, metavar="K",
                   help="also evaluate K sampled episodes per held-out task at the recipe's rollout temperature, "
                        "seeds paired across phases: the primary comparison (default: greedy only)")
    p.add_argument("--no-greedy", action="store_true", help="with --samples: skip the greedy (secondary) evaluation")
    p.add_argument("--pilot", action="store_true",
                   help="with --samples: train only the warm start (and a copy) and measure the design's detectable "
                        "effect; run it with the measurement's own command and --out, before GRPO")
    p.add_argument("--control", default="rft", choices=CONTROLS,
                   help="the compute-matched supervised control, trained from the warm start for GRPO's training "
                        "wall time: rft (rejection-sampling fine-tuning on the policy's resolved training episodes, "
                        "the default), epochs (more warm-start epochs on the expert demonstrations) or none")
    p.add_argument("--control-s", type=float, default=None, metavar="SECONDS",
                   help="the control's budget in wall seconds instead of GRPO's training time (e.g. --grpo-steps 0)")
    p.add_argument("--grpo-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a dotted config override for GRPO and its control only (e.g. algo.advantage=rloo); "
                        "repeatable; may fix GRPO's recipe in a pilot's state directory before GRPO starts")
    p.add_argument("overrides", nargs="*", help="dotted config overrides for every training phase")
    args = p.parse_args(argv)
    if args.reuse and not args.reeval:
        p.error("--reuse only applies with --reeval (a training run makes new checkpoints)")
    if args.samples is not None and args.samples < 1:
        p.error(f"--samples {args.samples}: give 1 or more episodes per task")
    if (args.no_greedy or args.pilot) and args.samples is None:
        p.error(f"{'--pilot' if args.pilot else '--no-greedy'} needs --samples K")
    if args.pilot and args.reeval:
        p.error("--pilot trains the warm start it measures; it does not combine with --reeval")
    if args.control_s is not None and (args.control == "none" or args.control_s <= 0):
        p.error(f"--control-s {args.control_s:g}: give a positive budget for a control (not --control none)")
    return args


def main(argv: list[str] | None = None) -> dict:
    """Run (or resume) the benchmark; returns the summary. A user mistake exits 2 with one line; Ctrl-C and
    SIGTERM say how to resume and exit 130/143."""
    from agentrl.sandboxes import reaper

    from agentrl.cli import interrupted_how, interrupted_status
    from agentrl.errors import AgentRLError

    args = parse_args(argv)
    reaper.install_sigterm_hook(interrupt=True)  # SIGTERM unwinds like Ctrl-C, so the state is left consistent
    where = {"phase": "start-up"}
    try:
        return run(args, argv if argv is not None else sys.argv[1:], where)
    except (Refused, AgentRLError) as e:
        print(f"learn_swe: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print(f"learn_swe: {interrupted_how()} during {where['phase']}; the same command resumes from {args.out}",
              file=sys.stderr, flush=True)
        raise SystemExit(interrupted_status()) from None


@dataclass
class Bench:
    """One invocation: the recipe's configs and held-out tasks, the state directory and what the phases found."""

    args: argparse.Namespace
    out: Path
    levels: list[int]
    overrides: list[str]
    cfg: Any  # the recipe's config (evaluation reads its env and rollout budget)
    sft_cfg: Any
    grpo_cfg: Any  # None with --grpo-steps 0
    copy_cfg: Any  # --pilot's second warm start (rollout.seed + 1), else None
    control_cfg: Any  # the control's (GRPO's recipe, the warm start's sft section), None with --control none
    tasks: dict[int, list]  # held-out tasks per level
    base_tasks: dict[int, list]  # the base model's (the first --base-limit of them)
    where: dict  # {"phase": what runs now}, for the line an interruption prints
    clock: Clock | None = None
    run: dict = field(default_factory=dict)  # OUT/run.json as pinned
    rows: list[dict] = field(default_factory=list)  # greedy
    held: dict = field(default_factory=dict)  # (phase, level) -> HeldOut, greedy
    sampled_rows: list[dict] = field(default_factory=list)  # --samples
    sampled: dict = field(default_factory=dict)  # (phase, level) -> HeldOut of per-task means, --samples
    audits: dict = field(default_factory=dict)  # level -> audit_episodes of the GRPO phase
    control: dict | None = None  # OUT/control/control.json: what the control did

    @property
    def greedy(self) -> bool:
        return not self.args.no_greedy

    def recipe(self) -> dict:
        """What OUT/run.json pins: a resumed run must compute exactly this."""
        a = self.args
        sampled = {"samples": a.samples, "greedy": self.greedy} if a.samples else None
        return {"env": a.env, "model": a.model, "config": a.config, "levels": self.levels, "split": a.split,
                "limit": self.args.limit, "skip_base": a.skip_base, "eval_concurrency": a.eval_concurrency,
                "sampled": sampled,
                "sft": comparable(self.sft_cfg), "grpo": comparable(self.grpo_cfg) if self.grpo_cfg else None,
                "held_out": {str(lv): [t.instance_id for t in self.tasks[lv]] for lv in self.levels},
                "base_held_out": {str(lv): [t.instance_id for t in self.base_tasks[lv]] for lv in self.levels}}


def plan(args, where: dict) -> Bench:
    """The configs of both training phases and the held-out tasks, from the command line."""
    out = Path(args.out)
    levels = [int(x) for x in args.levels.split(",")] if not args.quick else [0]
    if args.quick and args.limit is None:
        args.limit = 2
    overrides = [f"model.name={args.model}", "trainer.tensorboard=false", *(QUICK if args.quick else [])]
    if args.train_level is not None:
        overrides.append(f"env.kwargs.level={args.train_level}")
    if args.sft_episodes is not None:
        overrides.append(f"sft.episodes={args.sft_episodes}")
    overrides += args.overrides

    def config(extra: list[str]):
        return load_config(args.env, args.config, overrides=[*overrides, *extra])

    steps = [f"trainer.steps={args.grpo_steps}"] if args.grpo_steps is not None else []
    grpo_cfg = (config([*steps, *args.grpo_set, "sft.episodes=0", f"trainer.run_dir={out / 'grpo'}"])
                if args.grpo_steps != 0 else None)
    pool = None
    if args.env == "swe_real":  # held out by package
        from agentrl.envs.swe.real.tasks import load_real

        pool = load_real(None, args.split)
    base_limit = min(filter(None, (args.limit, args.base_limit)), default=None)  # the first N, one per module in turn
    cfg = config([])
    copy_cfg = config(["trainer.steps=0", f"trainer.run_dir={out / 'sft_copy'}",
                       f"rollout.seed={cfg.rollout.seed + 1}"]) if args.pilot else None
    control_cfg = (config([*steps, *args.grpo_set, f"trainer.run_dir={out / 'control'}"])
                   if args.control != "none" else None)
    return Bench(args=args, out=out, levels=levels, overrides=overrides, cfg=cfg,
                 sft_cfg=config(["trainer.steps=0", f"trainer.run_dir={out / 'sft'}"]), grpo_cfg=grpo_cfg,
                 copy_cfg=copy_cfg, control_cfg=control_cfg,
                 tasks={lv: held_out_tasks(args.split, lv, args.limit, pool=pool) for lv in levels},
                 base_tasks={lv: held_out_tasks(args.split, lv, base_limit, pool=pool) for lv in levels}, where=where)


def run(args, argv: list[str], where: dict) -> dict:
    """Pin or check the recipe, then every phase not done yet: base model, warm start, GRPO, the control, the
    report."""
    b = plan(args, where)
    b.out.mkdir(parents=True, exist_ok=True)
    pinned = b.run = check_recipe(b.out, b.recipe(), shlex.join([sys.executable, "bench/learn_swe.py", *argv]))
    b.clock = Clock(b.out)
    if args.audit:
        return audit_only(b.out, b.tasks, b.levels)
    print("held-out tasks per level: " + ", ".join(f"level {lv}: {len(t)}" for lv, t in b.tasks.items()), flush=True)
    if args.samples:
        print(f"sampled evaluation: {args.samples} episodes per task at T = {b.cfg.rollout.temperature}; {SEEDS}",
              flush=True)
    if args.pilot:
        return pilot(b)
    pin_control(b.out, pinned, args.control, args.control_s)
    if not args.skip_base and not args.reeval:
        evaluate_phase(b, "base model", args.model, 0.0, b.base_tasks)
    sft_ckpt = warm_start_phase(b)
    evaluate_phase(b, "warm start", str(sft_ckpt / "model"), b.clock.seconds("sft"), b.tasks)
    grpo_ckpt = None
    if b.grpo_cfg is not None:
        where["phase"] = "GRPO"
        grpo_ckpt = grpo_phase(b.out, b.grpo_cfg, sft_ckpt, b.clock, reeval=args.reeval)
        evaluate_phase(b, "GRPO", str(grpo_ckpt / "model"), b.clock.seconds("grpo"), b.tasks)
    control_ckpt = control_phase(b, sft_ckpt)
    if control_ckpt is not None:
        evaluate_phase(b, "control", str(control_ckpt / "model"), b.clock.seconds("control"), b.tasks)
    where["phase"] = "the report"
    return report(b, pinned, sft_ckpt, grpo_ckpt, control_ckpt)


def evaluate_phase(b: Bench, name: str, model: str, train_s: float, task_lists: dict) -> None:
    """Evaluate `model` at every level, greedy and (--samples) k-sampled, unless its result is stored, keeping the
    episodes an interrupted attempt finished; adds the phase's rows (and for GRPO the non-fix audit of its
    resolved episodes: the greedy ones, or the sampled ones under --no-greedy)."""
    k = b.args.samples
    for lv in b.levels:
        designs = ([Design()] if b.greedy else []) + ([Design(k)] if k else [])
        for design in designs:
            h, eval_s, episodes, note = evaluate_once(b, name, model, task_lists[lv], lv, design)
            stem = design.stem(name, lv)
            if name == "GRPO" and b.args.env == "swe_lite" and design == designs[0]:
                audited = load_done(b.out / f"episodes_{stem}.jsonl").values()
                b.audits[lv] = audit_episodes(list(audited), task_lists[lv])
            row = {"phase": name, "level": lv, "resolved": h.mean, "ci95": [h.low, h.high], "n": h.n,
                   "solved": round(h.mean * h.n), "masked": h.masked, "train_s": round(train_s, 1),
                   "eval_s": round(eval_s, 1)}
            if design.samples is None:
                b.held[(name, lv)] = h
                b.rows.append(row)
                print(f"{name} level {lv}: {h}  (train {train_s:.0f}s, eval {eval_s:.0f}s){note}", flush=True)
                continue
            b.sampled[(name, lv)] = h
            del row["solved"]
            b.sampled_rows.append({**row, "episodes": sum(episodes.values()),
                                   "min_samples": min((episodes.get(i, 0) for i in h.per_task), default=0)})
            print(f"{name} level {lv}, {k} samples per task: {h}  (train {train_s:.0f}s, eval {eval_s:.0f}s){note}",
                  flush=True)


def evaluate_once(b: Bench, name: str, model: str, tasks: list, lv: int,
                  design: Design) -> tuple[HeldOut, float, dict, str]:
    """One evaluation of `model` on `tasks` at level `lv`: the stored result when it is of this checkpoint, these
    tasks and this design, else the episodes an interrupted attempt kept and the rest. Returns (HeldOut, eval
    seconds, scored episodes per task (k-sample designs), a note for the line that reports it)."""
    fresh = b.args.reeval and not b.args.reuse
    stem, ids = design.stem(name, lv), [t.instance_id for t in tasks]
    stored = None if fresh else load_heldout(b.out / f"heldout_{stem}.json", model, ids, design.pinned())
    if stored is not None:
        return *stored, " (done earlier)"
    what = "" if design.samples is None else f" × {design.samples} samples" + (
        f" (seed family {design.family})" if design.family else "")
    b.where["phase"] = f"the {name} evaluation at level {lv}{what}"
    store = EpisodeStore(b.out, stem, model, ids, fresh=fresh, design=design.pinned())
    b.clock.begin(f"eval {stem}", store.kept_until, fresh=fresh)
    note = f" ({len(store.done)} finished episode(s) kept from an interrupted run)" if store.done else ""
    print(f"== {name}: evaluating level {lv} on {len(ids)} held-out tasks{what}{note}", flush=True)
    h = evaluate_model(b.cfg, model, tasks, lv, label=name, episodes_path=b.out / f"episodes_{stem}.txt",
                       done=store.done, on_record=store.append, concurrency=b.args.eval_concurrency,
                       samples=design.samples, family=design.family)
    eval_s = b.clock.end(f"eval {stem}")
    episodes = dict(Counter(iid for iid, _ in load_done(store.path))) if design.samples else {}
    save_heldout(b.out / f"heldout_{stem}.json", h, model, ids, eval_s, design.pinned(), episodes)
    return h, eval_s, episodes, note


def warm_start_phase(b: Bench, phase: str = "sft") -> Path:
    """The warm start's checkpoint (OUT/sft; --pilot's copy: phase "sft_copy"): the stored one, or a new expert SFT
    (a killed one kept nothing: it starts over)."""
    from agentrl.trainer.loop import train

    ckpt = latest_checkpoint(b.out / phase)
    if ckpt is not None:
        return ckpt
    if b.args.reeval:
        raise Refused(f"--reeval: no complete {phase}/ checkpoint under {b.out}")
    copy = phase == "sft_copy"
    b.where["phase"] = "the pilot's second warm start" if copy else "the warm start"
    print("== second warm start (expert SFT, rollout.seed + 1)" if copy else "== warm start (expert SFT)", flush=True)
    b.clock.begin(phase)
    shutil.rmtree(b.out / phase, ignore_errors=True)
    ckpt = train(b.copy_cfg if copy else b.sft_cfg).checkpoint
    b.clock.end(phase)
    return ckpt


def pilot(b: Bench) -> dict:
    """--pilot: the detectable effect of the k-sample design before any GRPO checkpoint is evaluated. The warm start
    is evaluated with seed family 0 (the very evaluation the full run reuses) and again with family 1, and a second
    warm start, trained like the first but with rollout.seed + 1 (other demonstrations in another order: the SFT
    draws both from it), with family 0. The SD of per-task differences of each pair gives the detectable effect
    at this n and k (agentrl.evaluation.detectable_effect, 80% power, two-sided alpha 0.05); OUT/pilot.json keeps
    it, and the full run's report states it."""
    k = b.args.samples
    models = {"warm start": str(warm_start_phase(b) / "model"),
              "warm start copy": str(warm_start_phase(b, "sft_copy") / "model")}
    result: dict[str, Any] = {"samples": k, "temperature": b.cfg.rollout.temperature, "seeds": SEEDS, "alpha": 0.05,
                              "power": 0.8, "levels": {}}
    for lv in b.levels:
        first, again, copy = (evaluate_once(b, name, models[name], b.tasks[lv], lv, Design(k, family))[0]
                              for name, family in (("warm start", 0), ("warm start", 1), ("warm start copy", 0)))
        try:
            sd = {"seeds": pilot_diff_sd(first.per_task, again.per_task),
                  "copies": pilot_diff_sd(first.per_task, copy.per_task)}
        except ValueError as e:
            raise Refused(f"--pilot at level {lv}: {e}") from None
        n = len(first.per_task)
        mde = {key: detectable_effect(v, n) for key, v in sd.items()}
        result["levels"][lv] = {"tasks": n, "warm_start": first.mean, "warm_start_seeds1": again.mean,
                                "warm_start_copy": copy.mean, "diff_sd": sd, "detectable": mde,
                                "design_detectable": max(mde.values())}
    write_json(b.out / "pilot.json", result)
    print("\n" + "\n".join(pilot_lines(result)))
    return result


def grpo_phase(out: Path, grpo_cfg, sft_ckpt: Path, clock: Clock, *, reeval: bool) -> Path:
    """The GRPO checkpoint of the recipe's last step: trained from the warm start, continued from the last
    checkpoint of an interrupted run, or (finished or --reeval) the one there is. trainer.max_train_s is the
    phase's budget over all its attempts (the clock's "grpo" seconds): a resumed run gets what is left, and a run
    that spent it is finished at the step it reached."""
    from agentrl.trainer.loop import train

    run_dir, target, budget = out / "grpo", grpo_cfg.trainer.steps, grpo_cfg.trainer.max_train_s
    last = latest_checkpoint(run_dir)
    if reeval:
        if last is None:
            raise Refused(f"--reeval: no complete grpo/ checkpoint under {out}")
        return last
    if last is not None and step_of(last) > target:
        raise Refused(f"{last} is past the recipe's {target} GRPO steps (trained on by hand?); evaluate it with --reeval")
    if last is not None and step_of(last) == target:
        return last

    def kept_until(start: float) -> float:  # a killed attempt kept what its last checkpoint holds
        done = last / "complete.json" if last is not None else None
        return max(start, done.stat().st_mtime) if done is not None and done.exists() else start

    clock.begin("grpo", kept_until)
    spent = clock.seconds("grpo")
    if budget is not None and last is not None and spent >= budget:
        clock.end("grpo")
        print(f"== GRPO: trainer.max_train_s={budget:g} spent ({spent:.0f} s) at step {step_of(last)} of {target}",
              flush=True)
        return last
    cfg = grpo_cfg
    if budget is not None and spent > 0:  # what earlier attempts left of the budget
        cfg = grpo_cfg.model_copy(deep=True)
        cfg.trainer.max_train_s = budget - spent
    if last is None:
        print("== GRPO from the warm start", flush=True)
        shutil.rmtree(run_dir, ignore_errors=True)  # a run killed before its first checkpoint kept nothing
        result = train(cfg, init_from=str(sft_ckpt))
    else:
        left = f"; {budget - spent:.0f} s of trainer.max_train_s left" if budget is not None else ""
        print(f"== GRPO resumed from {last} (step {step_of(last)} of {target}{left})", flush=True)
        cut_back(run_dir, step_of(last))
        result = train(cfg, resume=str(run_dir))
    clock.end("grpo")
    return result.checkpoint


if __name__ == "__main__":
    main()
