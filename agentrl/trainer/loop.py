"""`agentrl train`: the synchronous GRPO-family training loop.

Objective (per action token t of trajectory i; m = 1 only on model-generated tokens of all turns):

    L(θ) = reduce_{i,t}( w̃_{i,t} · ℓ(π_θ/π_old, A_i) ) + β·KL(π_θ ‖ π_ref)

    μ      behaviour policy: the engine that sampled the tokens (its logprobs are recorded per token)
    π_old  the trainer's recompute at the start of the step;  w = π_old/μ, w̃ its detached correction
           (token TIS/MIS × trajectory trust-region keep flag over all segments)
    A_i    group-relative advantage of the trajectory's outcome reward (GRPO: (R − mean)/(std + ε))
    reduce token-mean by default, with the denominator fixed over the whole mini-batch before rejection

Departures from textbook GRPO: one optimizer step per batch (so π_θ = π_old at the step and PPO clipping
only matters through μ ≠ π_old), clip-higher (ε_high 0.28) and dual clip, DAPO dynamic sampling, no KL
by default, infrastructure failures masked (never trained as reward 0), trajectory-level trust regions.

Each step: collect groups → filter → advantages → recompute π_old → loss over packed micro-batches →
clip → optimizer step → weight sync → metrics → checkpoint. Every token keeps its policy version, so the
async pipeline can reuse all of this with stale tokens.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from agentrl.cluster import build_rollouts
from agentrl.config import Config, dump_config
from agentrl.errors import ConfigError
from agentrl.trainer.checkpoint import (
    is_complete,
    latest_checkpoint,
    load_checkpoint,
    model_dir,
    save_checkpoint,
)
from agentrl.trainer.heldout import evaluate
from agentrl.trainer.monitor import Monitor
from agentrl.trainer.pipeline import RolloutPipeline
from agentrl.trainer.rollouts import collect_step
from agentrl.trainer.update import train_on_batch, update_config_from


@dataclass
class RunResult:
    """Where a finished run left its outputs."""

    run_dir: Path
    checkpoint: Path | None
    metrics: Path
    plot: Path | None


def resolve_run_dir(cfg: Config, resume: str | None) -> Path:
    """The run directory: the one being resumed, or trainer.run_dir with {env} and {time} filled in."""
    if resume:
        path = Path(resume)
        run = path.parent.parent if path.parent.name == "checkpoints" else path
        if not run.is_dir():
            raise ConfigError(f"--resume {resume}: no such run directory")
        return run
    return Path(cfg.trainer.run_dir.format(env=cfg.env.name, time=time.strftime("%Y%m%d-%H%M%S")))


def build_engine(cfg: Config, model, tokenizer):
    """The rollout engine: the embedded engine on the trainer's own weights (sync mode: generation and training
    alternate, so nothing is copied) or on a copy of them (overlapped modes), or a client of SGLang servers."""
    if cfg.rollout.engine == "sglang":
        from agentrl.rollout.sglang_client import SGLangClient

        return SGLangClient(cfg.rollout.urls)
    from agentrl.rollout.embedded import EmbeddedEngine, engine_view

    policy = engine_view(model, share_weights=cfg.rollout.mode == "sync")
    return EmbeddedEngine(policy, tokenizer, seed=cfg.rollout.seed, max_batch_size=cfg.rollout.max_batch_size)


async def sync_weights(engine, model, run_dir: Path, version: int) -> None:
    """Push the trainer's weights to the engine: in place for the embedded engine, via disk for SGLang."""
    if hasattr(engine, "model"):  # embedded: copy tensors, no serialization
        await engine.update_weights({k: v.detach() for k, v in model.state_dict().items()}, version=version)
    else:
        path = run_dir / "weights_sync"
        model.save_pretrained(path, safe_serialization=True)
        await engine.update_weights(path=str(path), version=version)


def budget_line(cfg: Config) -> str:
    """The derived budget, printed once at start-up."""
    r = cfg.rollout
    return (
        f"{r.tasks_per_step} tasks × {r.group_size} samples = {r.tasks_per_step * r.group_size} trajectories/step, "
        f"≤ {r.max_turns} turns and ≤ {r.max_context_tokens} tokens each; {cfg.trainer.steps} steps; "
        f"micro-batches of ≤ {cfg.trainer.micro_batch_tokens} tokens"
    )


def train(cfg: Config, *, resume: str | None = None, init_from: str | None = None, console=None) -> RunResult:
    """Run GRPO training per cfg; returns where the checkpoint, metrics and plot are."""
    return asyncio.run(_train(cfg, resume=resume, init_from=init_from, console=console))


async def _train(cfg: Config, *, resume: str | None, init_from: str | None, console) -> RunResult:
    from transformers.utils import logging as hf_logging

    from agentrl.models import load_model, load_tokenizer
    from agentrl.registry import make
    from agentrl.trainer.sft import run_sft

    hf_logging.disable_progress_bar()  # our own progress display covers checkpoint writes
    if cfg.model.threads:
        torch.set_num_threads(cfg.model.threads)
    torch.manual_seed(cfg.rollout.seed)
    run_dir = resolve_run_dir(cfg, resume)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(dump_config(cfg))

    ckpt = None
    if resume:
        ckpt = Path(resume) if is_complete(Path(resume)) else latest_checkpoint(run_dir)
    if resume and ckpt is None:
        raise ConfigError(f"--resume {resume}: no complete checkpoint in {run_dir / 'checkpoints'}")
    source = model_dir(ckpt) if ckpt else (model_dir(init_from) if init_from else cfg.model.name)
    tokenizer = load_tokenizer(source if ckpt or init_from else cfg.model.name)
    model = load_model(source, dtype=cfg.model.dtype, device=cfg.model.device).train()
    if cfg.trainer.gradient_checkpointing:
        if hasattr(model, "activation_checkpointing_enable"):  # transformers ≥ 5.x; the old name warns
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.trainer.lr, weight_decay=cfg.trainer.weight_decay)
    warmup = max(cfg.trainer.warmup_steps, 1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    ref_model = load_model(source, dtype=cfg.model.dtype, device=cfg.model.device) if cfg.algo.kl_coef > 0 else None
    env_factory = partial(make, cfg.env.name, **cfg.env.kwargs)
    ucfg = update_config_from(cfg)
    start_step, version = 0, 0
    if ckpt:
        state = load_checkpoint(ckpt, optimizer=optimizer, scheduler=scheduler)
        start_step, version = state["step"], state.get("version", state["step"])

    monitor = Monitor(run_dir, total_steps=cfg.trainer.steps, tensorboard=cfg.trainer.tensorboard, console=console)
    monitor.console.print(f"[bold]agentrl train[/] {cfg.env.name} → {run_dir}\n{budget_line(cfg)}")
    if cfg.sft.episodes and not ckpt and not init_from:
        with monitor:
            await run_sft(cfg, model, tokenizer, env_factory, monitor)
    engine = build_engine(cfg, model, tokenizer)
    rollouts = pipeline = None  # pipeline: in overlapped modes groups stay in flight (pipeline.py)
    last_ckpt = ckpt
    try:
        rollouts = await build_rollouts(cfg, env_factory, engine, tokenizer)  # this process, or Ray workers
        if cfg.cluster.backend == "ray":
            monitor.console.print(rollouts.describe())
        if cfg.rollout.mode != "sync":
            pipeline = RolloutPipeline(cfg, env_factory, engine, tokenizer, start_step=start_step,
                                       end_step=cfg.trainer.steps, on_episode=monitor.episodes_done, rollouts=rollouts)
        if version:  # label the engine's (identical) weights with the resumed version: staleness is measured right
            await sync_weights(engine, model, run_dir, version)
        with monitor:
            if pipeline:
                pipeline.start()
            for step in range(start_step, cfg.trainer.steps):
                monitor.begin_step(step, cfg.rollout.tasks_per_step * cfg.rollout.group_size)
                with monitor.phase("rollout"):  # in overlapped modes: the time the trainer waits for data
                    if pipeline:
                        batch = await pipeline.next_batch(step, version)
                    else:
                        batch = await collect_step(cfg, env_factory, engine, tokenizer, step,
                                                   on_episode=monitor.episodes_done, rollouts=rollouts)
                metrics = dict(batch.metrics)
                if batch.trajectories:
                    with monitor.phase("update"):
                        mb_metrics = await asyncio.to_thread(
                            _update, model, optimizer, batch, ucfg, version, ref_model
                        )
                    metrics.update(mb_metrics)
                    scheduler.step()
                    version += 1
                    with monitor.phase("sync"):
                        push = partial(sync_weights, engine, model, run_dir, version)
                        await (pipeline.sync_in_flight(push) if pipeline else push())
                else:
                    metrics["trainer/skipped_steps"] = 1.0
                if pipeline:
                    pipeline.step_done(step)  # admits the groups whose staleness bound now allows them
                metrics["trainer/lr"] = scheduler.get_last_lr()[0]
                metrics["trainer/version"] = version
                if _eval_due(cfg, step):
                    with monitor.phase("eval"):
                        held = await evaluate(cfg, engine, tokenizer, cfg.trainer.eval_episodes)
                    metrics.update({"eval/reward_mean": held.mean, "eval/reward_low95": held.low,
                                    "eval/reward_high95": held.high, "eval/episodes": held.n})
                monitor.log(step, metrics)
                if cfg.trainer.sample_every and step % cfg.trainer.sample_every == 0:
                    monitor.write_samples(step, batch.all_trajectories, tokenizer)
                _append_trajectories(run_dir, step, batch.all_trajectories)
                done = step + 1
                if done == cfg.trainer.steps or (cfg.trainer.checkpoint_every and done % cfg.trainer.checkpoint_every == 0):
                    with monitor.phase("checkpoint"):
                        last_ckpt = save_checkpoint(
                            run_dir, done, model=model, tokenizer=tokenizer, optimizer=optimizer,
                            scheduler=scheduler, state={"version": version, "task_seed": cfg.rollout.seed},
                            keep=cfg.trainer.keep_checkpoints,
                        )
            if cfg.trainer.steps == 0 or last_ckpt is None:
                last_ckpt = save_checkpoint(run_dir, start_step, model=model, tokenizer=tokenizer, optimizer=optimizer,
                                            scheduler=scheduler, state={"version": version}, keep=cfg.trainer.keep_checkpoints)
    finally:
        if pipeline:
            await pipeline.close()
        if rollouts:
            await rollouts.close()
        await engine.close()
    plot = _plot(run_dir, monitor)
    monitor.console.print(
        f"[bold green]done[/]: checkpoint {last_ckpt}\n      metrics {monitor.metrics_path}\n      plot {plot}"
    )
    return RunResult(run_dir=run_dir, checkpoint=last_ckpt, metrics=monitor.metrics_path, plot=plot)


def _eval_due(cfg: Config, step: int) -> bool:
    """Held-out evaluation runs every trainer.eval_every steps and after the last one (if eval_episodes > 0)."""
    t = cfg.trainer
    done = step + 1
    return t.eval_episodes > 0 and (done == t.steps or (t.eval_every > 0 and done % t.eval_every == 0))


def _update(model, optimizer, batch, ucfg, version, ref_model) -> dict[str, float]:
    """The trainer side of one step (runs in a worker thread so the event loop stays responsive)."""
    return train_on_batch(model, optimizer, batch, ucfg, version=version, ref_model=ref_model)


def _append_trajectories(run_dir: Path, step: int, trajectories) -> None:
    """Keep every trajectory of the run as JSONL (lossless; token ids, masks, logprobs, versions)."""
    with open(run_dir / "trajectories.jsonl", "a") as f:
        for t in trajectories:
            t.metrics["train/step"] = step
            f.write(t.to_json() + "\n")


def _plot(run_dir: Path, monitor: Monitor) -> Path | None:
    try:
        from agentrl.plot import plot_run

        return plot_run(run_dir)
    except Exception as e:  # a plotting problem must not hide a finished run
        monitor.console.print(f"[yellow]plot skipped: {type(e).__name__}: {e}[/]")
        return None
