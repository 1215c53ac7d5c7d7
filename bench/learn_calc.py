"""Learning benchmark on `calc` with the default model on CPU: held-out accuracy of the base model, after the
expert warm start (SFT), and after GRPO from that checkpoint, with the wall time of each phase.

Accuracy is the mean reward of greedy episodes on held-out tasks (seeds disjoint from training), with a 95%
Wilson interval. GRPO should move accuracy clearly beyond the SFT checkpoint. A benchmark, not a test:

    .venv/bin/python bench/learn_calc.py [--difficulty 2] [--sft-episodes 16] [--grpo-steps 12] [--eval 100]
            [--out runs/learn_calc] [--reeval] [trainer.lr=5e-6 ...]

The GRPO phase samples at T = 0.7 in groups of 8 with lr 1e-5 (GRPO_DEFAULTS; dotted overrides win). At T = 1
the warm-started 135M model samples mostly noise, so GRPO sharpened sampling without moving the greedy
policy; at T = 0.7 the samples disagree where the greedy policy errs. What it measured: docs/results.md.

Difficulty 1 saturates: the warm start already samples nearly every training task correctly, so GRPO groups
carry no reward variance. The defaults use two-operation problems and a short warm start, which leave room.
A summary is written to OUT/summary.json. Held-out tasks are the same in every phase, so GRPO and SFT are also
compared task by task (exact sign test on the tasks only one of them solves).

Variants: `--variant "NAME: key=value ..."` (repeatable) trains several GRPO runs from the one warm start, each with
its own overrides on top of the shared ones, in OUT/grpo_<name>/; each is paired with the warm start and with the
first variant on the same held-out tasks, and its wall time is reported beside it, e.g. bf16 moments or two
PPO epochs against the default. With `--equal-time`, the variants after the first train for as long as the
first one took (trainer.max_train_s; the step running then finishes), not for --grpo-steps steps:

    .venv/bin/python bench/learn_calc.py --out runs/calc_variants --variant "fp32:" \
        --variant "bf16 moments: trainer.optimizer_state=bfloat16"
    .venv/bin/python bench/learn_calc.py --out runs/calc_epochs --equal-time --variant "1 epoch:" \
        --variant "2 epochs: trainer.ppo_epochs=2"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from pathlib import Path

from agentrl.config import load_config
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.errors import ConfigError
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.checkpoint import latest_checkpoint
from agentrl.trainer.heldout import evaluate, paired_sign_test
from agentrl.trainer.loop import train

EQUAL_TIME_STEPS = 10  # --equal-time: a variant's step budget is this × --grpo-steps; its time budget stops it
GRPO_DEFAULTS = ["rollout.temperature=0.7", "rollout.group_size=8", "rollout.max_resample_rounds=1",
                 "trainer.lr=1e-5", "trainer.gradient_checkpointing=false"]


def held_out(cfg, model_name: str, episodes: int):
    """Greedy held-out accuracy of a model (name or directory)."""
    tok = load_tokenizer(model_name)

    async def go():
        engine = EmbeddedEngine(load_model(model_name), tok, seed=0)
        try:
            return await evaluate(cfg, engine, tok, episodes)
        finally:
            await engine.close()

    return asyncio.run(go())


def timed(fn, *a, **kw):
    """(fn's result, wall seconds)."""
    t = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--difficulty", type=int, default=2, help="calc difficulty of every phase (1-3)")
    p.add_argument("--sft-episodes", type=int, default=16)
    p.add_argument("--grpo-steps", type=int, default=12)
    p.add_argument("--eval", type=int, default=100)
    p.add_argument("--out", default="runs/learn_calc")
    p.add_argument("--reeval", action="store_true",
                   help="train nothing: evaluate the final checkpoints of an earlier run in --out again")
    p.add_argument("--skip-base", action="store_true", help="do not evaluate the base model (it scores 0)")
    p.add_argument("--variant", action="append", default=[], metavar='"NAME: key=value ..."',
                   help="a GRPO run from the same warm start with these overrides (repeatable; see above)")
    p.add_argument("--equal-time", action="store_true",
                   help="variants after the first train for the first one's wall time (trainer.max_train_s), "
                        "not for --grpo-steps steps")
    p.add_argument("overrides", nargs="*", help="extra dotted config overrides for the GRPO phase(s)")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = [f"model.name={args.model}", "trainer.tensorboard=false",
            f"env.kwargs.difficulty={args.difficulty}"]
    cfg = load_config("calc", overrides=base)
    rows = []  # (phase, HeldOut, train seconds, eval seconds)

    def phase(name: str, model: str, train_s: float) -> None:
        held, eval_s = timed(held_out, cfg, model, args.eval)
        rows.append((name, held, train_s, eval_s))
        print(f"{name}: {held}  (train {train_s:.0f}s, eval {eval_s:.0f}s)", flush=True)

    variants = parse_variants(args.variant, args.overrides)
    try:  # a bad variant or override fails here, before any work
        grpo_cfgs = {name: load_config("calc", overrides=[*base, f"trainer.steps={args.grpo_steps}", "sft.episodes=0",
                                                          f"trainer.run_dir={out / run_dir}", *GRPO_DEFAULTS, *extra])
                     for name, run_dir, extra in variants}
    except ConfigError as e:
        raise SystemExit(f"learn_calc: {e}") from None
    if not args.reeval and not args.skip_base:  # --reeval: the base model scores 0 on calc without the warm start
        phase("base model", args.model, 0.0)
    if args.reeval:
        sft_ckpt = latest_checkpoint(out / "sft")
        ckpts = {name: latest_checkpoint(out / run_dir) for name, run_dir, _ in variants}
        if sft_ckpt is None or None in ckpts.values():
            raise SystemExit(f"--reeval: no complete sft/ and GRPO checkpoints under {out}")
        sft_s = 0.0
    else:
        sft_cfg = load_config("calc", overrides=[*base, f"sft.episodes={args.sft_episodes}", "trainer.steps=0",
                                                  f"trainer.run_dir={out / 'sft'}"])
        sft, sft_s = timed(train, sft_cfg)
        sft_ckpt = sft.checkpoint
    phase("after SFT", str(sft_ckpt / "model"), sft_s)
    first_s, steps_done = 0.0, {}
    for name, _, _ in variants:
        if args.reeval:
            ckpt, grpo_s = ckpts[name], 0.0
            steps_done[name] = int(ckpt.name.split("_")[-1])
        else:
            cfg_v = grpo_cfgs[name]
            if args.equal_time and name != variants[0][0]:  # the first variant's wall time, as many steps as fit
                t = cfg_v.trainer.model_copy(update={"steps": EQUAL_TIME_STEPS * args.grpo_steps,
                                                     "max_train_s": first_s})
                cfg_v = cfg_v.model_copy(update={"trainer": t})
            grpo, grpo_s = timed(train, cfg_v, init_from=str(sft_ckpt))
            first_s = grpo_s if name == variants[0][0] else first_s
            steps_done[name] = int(grpo.checkpoint.name.split("_")[-1])
            ckpt = grpo.checkpoint
        phase(name, str(ckpt / "model"), grpo_s)

    held = {name: h for name, h, _, _ in rows}
    sft_h = held["after SFT"]
    print(f"\ncalc difficulty {args.difficulty}, held-out accuracy (greedy, {args.eval} tasks, 95% Wilson CI); "
          f"model {args.model}")
    print(f"{'phase':<16} {'accuracy':>9} {'95% CI':>17} {'train':>8} {'eval':>7} {'steps':>6}")
    for name, h, train_s, eval_s in rows:
        steps = f"{steps_done[name]:>6}" if name in steps_done else f"{'':>6}"
        print(f"{name:<16} {h.mean:9.3f} {f'[{h.low:.3f}, {h.high:.3f}]':>17} {train_s:7.0f}s {eval_s:6.0f}s {steps}")
    paired = {}
    first = variants[0][0]
    for name, _, _ in variants:
        gained, lost, p_value = paired_sign_test(sft_h, held[name])
        paired[name] = {"vs_sft": {"gained": gained, "lost": lost, "p_value": p_value}}
        print(f"{name} − SFT: {held[name].mean - sft_h.mean:+.3f}; paired over the same tasks: solves {gained} "
              f"the SFT checkpoint does not, loses {lost} (exact sign test p = {p_value:.2g})")
        if name != first:
            gained, lost, p_value = paired_sign_test(held[first], held[name])
            paired[name][f"vs_{first}"] = {"gained": gained, "lost": lost, "p_value": p_value}
            print(f"{name} − {first}: {held[name].mean - held[first].mean:+.3f}; solves {gained} that {first} "
                  f"does not, loses {lost} (p = {p_value:.2g})")
    print(f"runs in {out}")
    summary = {"model": args.model, "difficulty": args.difficulty, "eval_tasks": args.eval,
               "sft_episodes": args.sft_episodes, "grpo_steps": args.grpo_steps, "grpo_defaults": GRPO_DEFAULTS,
               "variants": {name: {"run_dir": str(out / run_dir), "overrides": extra, "steps": steps_done.get(name)}
                            for name, run_dir, extra in variants},
               "equal_time": args.equal_time,
               "checkpoints": {"sft": str(sft_ckpt)},
               "paired": paired,
               "phases": {name: {"accuracy": h.mean, "ci95": [h.low, h.high], "n": h.n, "masked": h.masked,
                                 "train_s": round(train_s, 1), "eval_s": round(eval_s, 1)}
                          for name, h, train_s, eval_s in rows}}
    if len(variants) == 1:  # the one-variant layout earlier summaries had
        summary["paired_grpo_vs_sft"] = paired[first]["vs_sft"]
    (out / ("summary_reeval.json" if args.reeval else "summary.json")).write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def parse_variants(specs: list[str], shared: list[str]) -> list[tuple[str, str, list[str]]]:
    """(name, run folder under --out, overrides) per --variant "NAME: key=value ..."; without any, one variant
    "after GRPO" in grpo/ (the layout of a plain run). `shared` (the positional overrides) come first in each."""
    if not specs:
        return [("after GRPO", "grpo", list(shared))]
    out, seen = [], set()
    for spec in specs:
        name, sep, rest = spec.partition(":")
        name = name.strip()
        slug = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()
        if not sep or not slug or name in ("base model", "after SFT"):
            raise SystemExit(f'--variant {spec!r}: write it as "NAME: key=value ..." (overrides may be empty)')
        if slug in seen:
            raise SystemExit(f"--variant {spec!r}: two variants share the folder grpo_{slug}; name them apart")
        seen.add(slug)
        out.append((name, f"grpo_{slug}", [*shared, *rest.split()]))
    return out

if __name__ == "__main__":
    main()
