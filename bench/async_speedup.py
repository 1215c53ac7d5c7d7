"""Overlapped rollouts against sync on heavy-tailed tool latency: the same training budget in one run for
rollout.mode = sync, one_step_off and async, on `calc` with a lognormal delay injected into every tool call.

Printed per mode: wall-clock per training step (rollout wait + update + weight sync; held-out evaluation and
start-up excluded), over all steps and over steps 2+ (the first step of every mode waits for a cold pipeline), the trainer idle fraction (time the trainer waits for data / step time), the largest
token staleness trained on, and the held-out reward (greedy, agentrl.trainer.heldout, after the last step),
plus the speed-up over sync. Goal: async ≥ 2× faster than sync at equal held-out reward.

    .venv/bin/python bench/async_speedup.py [--model tiny] [--steps 8] [--concurrency N] [--delay-mu -1.0] [--delay-sigma 1.0] [--delay-cap 5]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentrl.envs.calc import CalcEnv  # noqa: E402

import agentrl  # noqa: E402
from agentrl.config import load_config  # noqa: E402
from agentrl.trainer.loop import train  # noqa: E402


class SlowCalcEnv(CalcEnv):
    """calc whose every step first sleeps a lognormal delay (seeded per episode), like a slow tool or sandbox."""

    mu, sigma, cap = -1.0, 1.0, 5.0

    def reset(self, *, seed=None, options=None):
        """CalcEnv.reset, plus a delay generator seeded from the task seed."""
        self._delays = random.Random(seed)
        return super().reset(seed=seed, options=options)

    def step(self, action):
        """Sleep the injected tool latency, then CalcEnv.step."""
        time.sleep(min(self._delays.lognormvariate(self.mu, self.sigma), self.cap))
        return super().step(action)


agentrl.register("bench_slow_calc", SlowCalcEnv, description="calc with lognormal tool latency (benchmark)")


def concurrency(args) -> int:
    """Episodes in flight: --concurrency, else every episode admission can allow ((max_staleness + 1) steps'
    worth). The default rollout.concurrency (16) is one step's episodes here, which leaves the overlapped modes
    nothing to run ahead with while a step's slowest episodes finish; sync never has more than one step in flight."""
    return args.concurrency or (args.staleness + 1) * args.tasks * args.group


MODES = ("sync", "one_step_off", "async")


def bench_config(mode: str, args, out: Path):
    """The run's config in `mode`. Only async takes --staleness: one_step_off keeps the default bound of 1, and
    sync refuses any rollout.max_staleness."""
    return load_config(None, overrides=[
        "env.name=bench_slow_calc", f"model.name={args.model}", f"rollout.mode={mode}",
        *([f"rollout.max_staleness={args.staleness}"] if mode == "async" else []), f"rollout.tasks_per_step={args.tasks}",
        f"rollout.group_size={args.group}", f"rollout.concurrency={concurrency(args)}",
        "rollout.max_turns=3", "rollout.max_new_tokens=24",
        "rollout.max_context_tokens=1024", "rollout.dynamic_sampling=false", f"trainer.steps={args.steps}",
        f"trainer.eval_episodes={args.eval}", "trainer.eval_every=0", "trainer.tensorboard=false",
        "trainer.checkpoint_every=0", f"trainer.run_dir={out / mode}",
    ])


def run(cfg) -> dict[str, float]:
    """Train one mode's config; summarize timings, staleness and held-out reward."""
    result = train(cfg)
    rows = [json.loads(x) for x in result.metrics.read_text().splitlines()]
    wait = [r.get("timing/rollout_s", 0.0) for r in rows]
    step = [r.get("timing/rollout_s", 0.0) + r.get("timing/update_s", 0.0) + r.get("timing/sync_s", 0.0) for r in rows]
    steady = step[1:] or step  # the first step of every mode waits for a full batch from cold: the fill
    return {
        "step_s": sum(step) / len(step),
        "steady_s": sum(steady) / len(steady),
        "idle": sum(wait) / max(sum(step), 1e-9),
        "staleness_max": max(r.get("staleness/max", 0.0) for r in rows),
        "heldout": rows[-1].get("eval/reward_mean", float("nan")),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="tiny")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--staleness", type=int, default=2, help="rollout.max_staleness for async (one_step_off uses 1)")
    p.add_argument("--eval", type=int, default=16, help="held-out episodes after the last step")
    p.add_argument("--concurrency", type=int, default=None,
                   help="rollout.concurrency of every mode (default: (staleness + 1) × tasks × group)")
    p.add_argument("--delay-mu", type=float, default=-1.0)
    p.add_argument("--delay-sigma", type=float, default=1.0)
    p.add_argument("--delay-cap", type=float, default=5.0, help="longest injected delay, seconds")
    p.add_argument("--out", default=f"/tmp/agentrl_async_speedup_{int(time.time())}")
    args = p.parse_args()
    SlowCalcEnv.mu, SlowCalcEnv.sigma, SlowCalcEnv.cap = args.delay_mu, args.delay_sigma, args.delay_cap
    out = Path(args.out)
    cfgs = {mode: bench_config(mode, args, out) for mode in MODES}  # a refused config stops before any training
    results = {mode: run(cfg) for mode, cfg in cfgs.items()}
    base, base_steady = results["sync"]["step_s"], results["sync"]["steady_s"]
    print(f"\n{args.steps} steps × {args.tasks} tasks × {args.group} samples, {concurrency(args)} episodes in flight "
          f"at most, model {args.model}, "
          f"tool delay lognormal(μ={args.delay_mu}, σ={args.delay_sigma}) capped at {SlowCalcEnv.cap}s")
    print(f"{'mode':<14}{'s/step':>9}{'speed-up':>10}{'steps 2+':>10}{'speed-up':>10}{'idle':>8}{'stale max':>11}"
          f"{'held-out':>10}")
    for mode, r in results.items():
        print(f"{mode:<14}{r['step_s']:>9.2f}{base / r['step_s']:>9.2f}×{r['steady_s']:>10.2f}"
              f"{base_steady / r['steady_s']:>9.2f}×{r['idle']:>8.0%}{r['staleness_max']:>11.0f}{r['heldout']:>10.3f}")
    print("s/step: mean over all steps; steps 2+: without the first, which every mode spends filling the pipeline")


if __name__ == "__main__":
    main()
