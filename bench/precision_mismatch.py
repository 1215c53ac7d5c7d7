"""Train/inference mismatch at staleness 0 for each pairing of engine and trainer precision, in one run.

The same policy samples one training step's episodes with the embedded engine in fp32 and again in bf16 (a
bf16 copy of the body with an fp32 LM head); the trainer then recomputes those tokens' logprobs in fp32 and
under bf16 autocast (its π_old), and the trainer's own `mismatch/*` metrics of w = π_old/μ are printed for:
fp32 engine / fp32 trainer, bf16 / bf16, bf16 engine / fp32 trainer, fp32 engine / bf16 trainer. How much of
the mismatch the default correction then has to absorb is the share of tokens outside its TIS cap / MIS band.

Default workload: the `make demo` recipe (configs/swe_lite.yaml then configs/demo.yaml: swe_lite level 0, default model; needs Docker and
the sandbox image), one step of tasks_per_step × group_size episodes.

    .venv/bin/python bench/precision_mismatch.py [--config configs/demo.yaml] [key=value ...]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses

import agentrl  # noqa: F401  # isort: skip  (first: sets OMP_WAIT_POLICY before torch loads libgomp)
import torch

from agentrl import precision
from agentrl.algo.metrics import mismatch_metrics
from agentrl.config import load_config
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.batch import build_minibatch, microbatches
from agentrl.trainer.env_factory import build_env_factory
from agentrl.trainer.pipeline import collect_step
from agentrl.trainer.update import recompute_logprobs, update_config_from

SHOWN = ("logprob_abs_diff", "logprob_abs_diff_max", "kl_k3", "chi2_token", "log_ppl_abs_diff")


def outside(lp_old: torch.Tensor, lp_mu: torch.Tensor, mask: torch.Tensor, cap: float, band) -> tuple[float, float]:
    """Shares of action tokens whose w = π_old/μ exceeds the TIS cap, and that fall outside the MIS band."""
    w = torch.exp(lp_old - lp_mu)[mask > 0]
    return float((w > cap).double().mean()), float(((w < band[0]) | (w > band[1])).double().mean())


async def main(args) -> None:
    """Sample with each engine dtype, recompute with each trainer dtype, print the mismatch table."""
    cfg = load_config("swe_lite", args.config, overrides=["rollout.dynamic_sampling=false", *args.overrides])
    print(f"CPU bf16 flags: {', '.join(precision.bf16_flags()) or 'none'}; "
          f"workload {cfg.env.name} {cfg.env.kwargs}, {cfg.rollout.tasks_per_step} × {cfg.rollout.group_size} "
          f"episodes at T = {cfg.rollout.temperature}, model {cfg.model.name}", flush=True)
    tok = load_tokenizer(cfg.model.name)
    model = load_model(cfg.model.name).eval()
    env_factory, close_envs = build_env_factory(cfg)
    rows = []
    try:
        for engine_dtype in ("float32", "bfloat16"):
            engine = EmbeddedEngine(model, tok, seed=cfg.rollout.seed, dtype=engine_dtype,
                                    max_batch_size=cfg.rollout.max_batch_size)
            try:
                batch = await collect_step(cfg, env_factory, engine, tok, 0)
            finally:
                await engine.close()
            trajs = batch.all_trajectories
            mb = build_minibatch(trajs, [0.0] * len(trajs))
            for trainer_dtype in ("float32", "bfloat16"):
                ucfg = dataclasses.replace(update_config_from(cfg), compute_dtype=trainer_dtype)
                micros = microbatches(mb, ucfg.micro_batch_tokens, share_prefix=ucfg.share_prefix)
                lp_old = await asyncio.to_thread(recompute_logprobs, model, mb, micros, ucfg)
                m = mismatch_metrics(lp_old, mb.behaviour_logprobs, mb.loss_mask, mb.traj_index, mb.num_trajectories)
                tis, mis = outside(lp_old, mb.behaviour_logprobs, mb.loss_mask, cfg.algo.tis_cap, cfg.algo.mis_band)
                rows.append((engine_dtype, trainer_dtype, int(mb.loss_mask.sum()), m, tis, mis))
                print(f"engine {engine_dtype} / trainer {trainer_dtype}: {rows[-1][2]} action tokens, "
                      + ", ".join(f"{k} {m['mismatch/' + k]:.2e}" for k in SHOWN), flush=True)
    finally:
        await close_envs()
    print("\n| engine | trainer | action tokens | " + " | ".join(SHOWN) + " | w > TIS cap | outside MIS band |")
    print("|---|---|---|" + "---|" * (len(SHOWN) + 2))
    for e, t, n, m, tis, mis in rows:
        print(f"| {e} | {t} | {n} | " + " | ".join(f"{m['mismatch/' + k]:.2e}" for k in SHOWN)
              + f" | {tis:.2%} | {mis:.2%} |")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="configs/demo.yaml")
    p.add_argument("overrides", nargs="*", help="dotted config overrides")
    asyncio.run(main(p.parse_args()))
