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

The run has three phases: `setup` (run directory, policy, optimizer, engine, episode backend, pipeline),
`train_step` once per step (collect groups → filter → advantages → recompute π_old → loss over packed
micro-batches → clip → optimizer step → weight sync → metrics → checkpoint) and `teardown`. Every token
keeps its policy version, so the overlapped modes reuse all of this with stale tokens.

With trainer.strategy=fsdp this loop runs on rank 0 and the other ranks follow its commands
(agentrl.trainer.strategy): the policy is sharded, each rank trains on its share of every batch.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import torch

from agentrl.cluster import EpisodeBackend, build_backend
from agentrl.config import Config, dump_config
from agentrl.engine.build import build_engine, compute_precision, engine_precision
from agentrl.errors import ConfigError
from agentrl.precision import Precision
from agentrl.sandboxes import reaper
from agentrl.trainer.abort import MaskedEpisodeGuard
from agentrl.trainer.checkpoint import (
    is_complete,
    latest_checkpoint,
    model_dir,
)
from agentrl.trainer.collect import StepBatch
from agentrl.trainer.env_factory import build_env_factory
from agentrl.trainer.heldout import evaluate
from agentrl.trainer.memory import build_optimizer, fix_mmap_threshold
from agentrl.trainer.monitor import Monitor, skip_reason
from agentrl.trainer.pipeline import RolloutPipeline, admission_bound
from agentrl.trainer.resume import rewind_logs
from agentrl.trainer.strategy import Policy, Single, build_strategy, check_warm_start, follow
from agentrl.trainer.update import update_config_from


@dataclass
class RunResult:
    """Where a finished run left its outputs."""

    run_dir: Path
    checkpoint: Path | None
    metrics: Path
    plot: Path | None
    steps_run: int = 0  # training steps this invocation ran
    steps_trained: int = 0  # of them, those that took an optimizer step (the rest were SKIPPED)
    skipped: list[str] = field(default_factory=list)  # why each skipped step took none (monitor.skip_reason)

    def nothing_trained(self) -> str | None:
        """None if a step trained (or none ran: a warm-start-only run); else one line saying that every step
        was SKIPPED, the most common reason, and what to change (the CLI prints it and exits 1)."""
        if not self.steps_run or self.steps_trained:
            return None
        (why, n), = Counter(self.skipped).most_common(1)
        if why.startswith("no trainable group: 0 of "):
            hint = ("every group's rewards were equal, so GRPO had nothing to learn from: give the policy reward "
                    "variance (an expert warm start with sft.episodes, a larger rollout.group_size or a higher "
                    "rollout.temperature)")
        elif why.startswith("no trainable group"):
            hint = "episodes were masked (infrastructure or env failures): trajectories.jsonl has each one's cause"
        else:
            hint = "see metrics.jsonl for the step's actor/grad_norm"
        return (f"no step trained: all {self.steps_run} steps were SKIPPED ({n}× {why}); {hint}. The checkpoint "
                f"holds the weights the run started from")


@dataclass
class Run:
    """What a training run holds between setup and teardown."""

    cfg: Config
    run_dir: Path
    model: Any
    tokenizer: Any
    optimizer: torch.optim.Optimizer
    scheduler: Any
    ref_model: Any  # π_ref (None without a KL term)
    reference: str  # where π_ref comes from, recorded in every checkpoint (reference_source)
    ucfg: Any  # the update's config (update.update_config_from)
    monitor: Monitor
    guard: MaskedEpisodeGuard
    start_step: int
    version: int  # policy version: optimizer steps taken
    checkpoint: Path | None  # the latest checkpoint written (or resumed from)
    precision: tuple[Precision, Precision] | None = None  # (trainer compute, engine) dtypes as resolved
    strategy: Single = field(default_factory=Single)  # one process, or rank 0 of a sharded run
    source: Any = None  # where the policy's weights were loaded from (a sharded run's engine copy loads it too)
    engine: Any = None
    backend: EpisodeBackend | None = None
    pipeline: RolloutPipeline | None = None
    close_envs: Any = None  # async () -> None from the env factory, if it holds shared resources
    sampler_state: dict | None = None  # the resumed checkpoint's task-sampler state (trainer.task_sampler)
    steps_run: int = 0  # training steps this invocation ran
    skipped: list[str] = field(default_factory=list)  # why each of them that took no optimizer step was skipped


def resolve_run_dir(cfg: Config, resume: str | None) -> Path:
    """The run directory: the one being resumed, or trainer.run_dir with {env} and {time} filled in."""
    if resume:
        from agentrl.trainer.resume import check_resumable, run_dir_of

        run = run_dir_of(resume)
        check_resumable(cfg, run)  # a different config under the old run's name would silently fork it
        return run
    env = cfg.env.name.replace(":", ".").replace("/", "_")  # "my_pkg.envs:MyEnv" names a folder too
    return Path(cfg.trainer.run_dir.format(env=env, time=time.strftime("%Y%m%d-%H%M%S")))


def restore_precision(cfg: Config, ckpt: Path | None) -> Config:
    """A resumed run computes in the dtypes it was trained in: an `auto` setting takes what its checkpoint
    recorded (state.json "precision"), so moving a run to other hardware does not change its numerics."""
    if ckpt is None:
        return cfg
    recorded = json.loads((ckpt / "state.json").read_text()).get("precision") or {}
    model, rollout = {}, {}
    if cfg.model.compute_dtype == "auto" and recorded.get("compute"):
        model["compute_dtype"] = recorded["compute"]
    if cfg.rollout.engine_dtype == "auto" and recorded.get("engine"):
        rollout["engine_dtype"] = recorded["engine"]
    return cfg.model_copy(update={"model": cfg.model.model_copy(update=model),
                                  "rollout": cfg.rollout.model_copy(update=rollout)})


def precision_line(cfg: Config, *, restored: bool) -> str:
    """The start-up line saying which dtypes the trainer and the embedded engine use, and why."""
    compute, engine = compute_precision(cfg), engine_precision(cfg)
    if restored:  # the checkpoint's dtypes were written into cfg: say so rather than "set in the config"
        emulated = "; emulated on this hardware" if "emulated" in compute.reason + engine.reason else ""
        return f"precision: trainer {compute.name}, engine {engine.name} (as the resumed checkpoint records{emulated})"
    line = f"precision: trainer {compute.describe()}"
    if cfg.rollout.engine == "embedded":
        line += f", engine {engine.describe()}"
    return line


async def push_weights(run: Run) -> None:
    """Give the engine the trainer's weights, labelled run.version (each engine knows how: Engine.push_weights); a
    sharded policy's are gathered first, cast to bf16 for SGLang servers that run it."""
    cast = engine_precision(run.cfg).dtype if run.cfg.rollout.engine == "sglang" else None
    weights = await run.strategy.engine_weights(run.model, cast)
    await run.engine.push_weights(weights, version=run.version, staging_dir=run.run_dir / "weights_sync")


def budget_line(cfg: Config) -> str:
    """The derived budget, printed once at start-up."""
    r = cfg.rollout
    line = (
        f"{r.tasks_per_step} tasks × {r.group_size} samples = {r.tasks_per_step * r.group_size} trajectories/step, "
        f"≤ {r.max_turns} turns and ≤ {r.max_context_tokens} tokens each; {cfg.trainer.steps} steps; "
        f"micro-batches of ≤ {cfg.trainer.micro_batch_tokens} tokens; each step line ends with the time left at "
        "the run's pace"
    )
    if r.mode != "sync" and cfg.cluster.backend == "local" and r.concurrency <= r.tasks_per_step * r.group_size:
        ahead = (admission_bound(r) + 1) * r.tasks_per_step * r.group_size
        line += (f"\n[yellow]note: rollout.concurrency={r.concurrency} is at most one step's episodes, so {r.mode} cannot run "
                 f"ahead while a step's slowest episodes finish; up to {ahead} would overlap (bench/async_speedup.py)[/]")
    return line


def train(cfg: Config, *, resume: str | None = None, init_from: str | None = None, console=None,
          strategy: Single | None = None) -> RunResult | None:
    """Run GRPO training per cfg; returns where the checkpoint, metrics and plot are (None on a rank other than 0
    of a sharded run). `strategy` is build_strategy(cfg)'s (built, and closed after, here when not given)."""
    reaper.install_sigterm_hook()  # sandboxes are made in worker threads: a SIGTERM must still remove them
    check_warm_start(cfg, resume=resume, init_from=init_from)
    own = strategy is None
    strategy = build_strategy(cfg) if own else strategy
    try:
        if not strategy.is_main:
            follow(strategy, load_policy, update_config_from)
            return None
        return asyncio.run(_train(cfg, resume=resume, init_from=init_from, console=console, strategy=strategy))
    finally:
        if own:
            strategy.close()


async def _train(cfg: Config, *, resume: str | None, init_from: str | None, console, strategy: Single) -> RunResult:
    started = time.monotonic()
    run = setup(cfg, resume=resume, init_from=init_from, console=console, strategy=strategy)
    try:
        with run.monitor:
            await strategy.while_waiting(start(run, init_from=init_from))
            for step in range(run.start_step, cfg.trainer.steps):
                await train_step(run, step)
                if _budget_spent(run, step, time.monotonic() - started):
                    break
            if cfg.trainer.steps == 0 or run.checkpoint is None:
                run.checkpoint = checkpoint(run, run.start_step)
            strategy.finish()  # the other ranks of a sharded run leave
    finally:
        await teardown(run)
    return finish(run)


# ---- setup ----

def setup(cfg: Config, *, resume: str | None, init_from: str | None, console, strategy: Single | None = None) -> Run:
    """The run directory, the policy (fresh, warm-started from init_from, or resumed), its optimizer and π_ref."""
    from agentrl.models import load_tokenizer

    strategy = strategy or Single()
    run_dir = resolve_run_dir(cfg, resume)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(dump_config(cfg))
    ckpt = _checkpoint_to_resume(resume, run_dir)
    cfg = restore_precision(cfg, ckpt)
    source = model_dir(ckpt) if ckpt else (model_dir(init_from) if init_from else cfg.model.name)
    strategy.announce(cfg, run_dir, ckpt, source)  # the other ranks of a sharded run load the same policy
    policy = load_policy(cfg, source, ckpt, strategy)
    t, state = cfg.trainer, policy.state
    if ckpt and strategy.is_main:  # the steps after the checkpoint are trained again: their old log rows go
        rewind_logs(run_dir, state["step"])
    return Run(
        cfg=cfg, run_dir=run_dir, model=policy.model, tokenizer=load_tokenizer(source), optimizer=policy.optimizer,
        scheduler=policy.scheduler, ucfg=update_config_from(cfg), ref_model=policy.ref_model,
        reference=policy.reference,
        precision=(compute_precision(cfg), engine_precision(cfg)),
        monitor=Monitor(run_dir, total_steps=t.steps, tensorboard=t.tensorboard, console=console,
                        purge_step=state["step"] + 1 if ckpt else None),
        guard=MaskedEpisodeGuard(t.max_masked_frac, t.masked_window, last_step=t.steps - 1),
        start_step=state["step"], version=state.get("version", state["step"]), checkpoint=ckpt, strategy=strategy,
        source=source, sampler_state=state.get("task_sampler"),
    )


def load_policy(cfg: Config, source, ckpt: Path | None, strategy: Single) -> Policy:
    """The policy from `source` on the strategy's device (sharded there), its optimizer, scheduler and π_ref, and
    the state of `ckpt` restored into them: what every rank of a run holds."""
    from transformers.utils import logging as hf_logging

    from agentrl.models import load_model

    hf_logging.disable_progress_bar()  # our own progress display covers checkpoint writes
    if cfg.model.threads:
        torch.set_num_threads(cfg.model.threads)
    torch.manual_seed(cfg.rollout.seed)
    t, device, compute = cfg.trainer, strategy.device(cfg), compute_precision(cfg).name
    model = load_model(source, dtype=cfg.model.dtype, device=device).train()
    optimizer = prepare_policy(model, t, shard=lambda m: strategy.shard(m, compute))
    warmup = max(t.warmup_steps, 1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    ref_model, reference = None, reference_source(source, ckpt)
    if cfg.algo.kl_coef:
        ref_model = strategy.shard(load_model(reference, dtype=cfg.model.dtype, device=device), compute)
    # last: a checkpoint restores the RNG state, which loading models may consume
    state = strategy.load(ckpt, model=model, optimizer=optimizer, scheduler=scheduler) if ckpt else {"step": 0,
                                                                                                      "version": 0}
    return Policy(model=model, optimizer=optimizer, scheduler=scheduler, ref_model=ref_model, state=state,
                  reference=reference)


def reference_source(source, ckpt: Path | None) -> str:
    """Where π_ref (the KL term's anchor) loads from: the weights a fresh run starts from (model.name, or the
    --init-from model directory; before any expert warm start), as an absolute path where it is one; for a resumed
    run, what its checkpoint recorded (state.json "reference"), so the resumed steps anchor to the same weights as
    an uninterrupted run, not to the checkpoint's. A checkpoint written before the record existed anchors to its
    own weights, as it did then."""
    if ckpt is None:
        path = Path(source)
        return str(path.resolve()) if path.exists() else str(source)
    recorded = json.loads((ckpt / "state.json").read_text()).get("reference")
    if recorded is None:
        return str(source)
    if Path(recorded).is_absolute() and not Path(recorded).exists():
        raise ConfigError(f"π_ref (the KL anchor) of this run loads from {recorded}, as {ckpt / 'state.json'} "
                          "records, and it is not there any more: put it back, or start a new run from the checkpoint "
                          f"with --init-from {ckpt}")
    return recorded


async def start(run: Run, *, init_from: str | None) -> None:
    """Envs, the supervised warm start (fresh runs; checkpointed as step 0), the engine, the episode backend and
    the pipeline."""
    from agentrl.trainer.pace import estimate_line
    from agentrl.trainer.sft import run_sft

    cfg, monitor = run.cfg, run.monitor
    warm_start = bool(cfg.sft.episodes and not run.checkpoint and not init_from)
    monitor.console.print(f"[bold]agentrl train[/] {cfg.env.name} → {run.run_dir}\n{budget_line(cfg)}\n"
                          f"{precision_line(cfg, restored=run.checkpoint is not None)}")
    if line := estimate_line(cfg, steps_left=cfg.trainer.steps - run.start_step, warm_start=warm_start):
        monitor.console.print(line)
    if (note := run.strategy.resume_note()) is not None:
        monitor.console.print(note)
    env_factory, run.close_envs = build_env_factory(cfg)  # one warm SandboxPool for the run where envs take pool=
    if warm_start:
        # checkpointed at once (step 0), so a stop during step 1 resumes without redoing the warm start; `agentrl
        # sft` (no steps) writes the same checkpoint at its end
        if await run_sft(cfg, run.model, run.tokenizer, env_factory, monitor) and cfg.trainer.steps > 0:
            run.checkpoint = checkpoint(run, 0)
            monitor.console.print(f"warm start checkpointed: {run.checkpoint} (a stop from here on resumes with "
                                  f"--resume {run.run_dir})")
    run.engine = build_engine(cfg, run.strategy.engine_model(cfg, run.model, run.source), run.tokenizer)
    run.backend = await build_backend(cfg, env_factory, run.engine, run.tokenizer)  # this process, or Ray workers
    if cfg.cluster.backend == "ray":
        monitor.console.print(run.backend.describe())
    run.pipeline = RolloutPipeline(cfg, env_factory, run.engine, run.tokenizer, start_step=run.start_step,
                                   end_step=cfg.trainer.steps, on_episode=monitor.episodes_done, backend=run.backend,
                                   on_resample=lambda step, n, why: monitor.episodes_resampled(step + 1, n, why),
                                   sampler_state=run.sampler_state)
    if run.version:  # label the engine's (identical) weights with the resumed version: staleness is measured right
        await push_weights(run)
    run.pipeline.start()


def _checkpoint_to_resume(resume: str | None, run_dir: Path) -> Path | None:
    """The checkpoint --resume names (a checkpoint, or a run directory's latest complete one)."""
    if not resume:
        return None
    ckpt = Path(resume) if is_complete(Path(resume)) else latest_checkpoint(run_dir)
    if ckpt is None:
        raise ConfigError(f"--resume {resume}: no complete checkpoint in {run_dir / 'checkpoints'}")
    return ckpt


def prepare_policy(model, trainer_cfg, *, shard=None) -> torch.optim.Optimizer:
    """What training does to a loaded policy, shared by `train` and bench/trainer_step.py so the bench cannot
    drift from it: gradient checkpointing when trainer.gradient_checkpointing, and the trainer's AdamW
    (bfloat16 moments with trainer.optimizer_state=bfloat16; memory.build_optimizer), and the allocator's pinned
    mmap threshold (trainer.mmap_threshold; memory.fix_mmap_threshold). `shard(model)` (a sharded run) runs
    between the two, so AdamW's moments are built over the shards."""
    fix_mmap_threshold(trainer_cfg.mmap_threshold)
    if trainer_cfg.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    if shard is not None:
        shard(model)
    return build_optimizer(model, trainer_cfg)


def enable_gradient_checkpointing(model) -> None:
    """Recompute activations in the backward pass (non-reentrant), under either transformers name."""
    if hasattr(model, "activation_checkpointing_enable"):  # transformers ≥ 5.x; the old name warns
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


# ---- one step ----

async def train_step(run: Run, step: int) -> None:
    """One step: collect → update → push weights → log → evaluate → abort check → checkpoint → admit more.

    `step` counts from 0 here (the pipeline's and the task seeds' index); every output numbers it step + 1, so
    step n of the console is step n in metrics.jsonl, TensorBoard and samples/, and checkpoint step_n follows it."""
    cfg, monitor, pipeline = run.cfg, run.monitor, run.pipeline
    number = step + 1
    monitor.begin_step(number, cfg.rollout.tasks_per_step * cfg.rollout.group_size)
    with monitor.phase("rollout"):  # in overlapped modes: the time the trainer waits for data
        batch = await run.strategy.while_waiting(pipeline.next_batch(step, run.version))
    metrics = dict(batch.metrics)
    if batch.trajectories:
        with monitor.phase("update"):
            metrics.update(await asyncio.to_thread(
                run.strategy.train, run.model, run.optimizer, batch, run.ucfg, version=run.version,
                ref_model=run.ref_model))
        run.scheduler.step()
        run.version += 1
        with monitor.phase("sync"):
            await (pipeline.sync_in_flight(partial(push_weights, run)) if pipeline.overlapped else push_weights(run))
    else:
        metrics["trainer/skipped_steps"] = 1.0
    metrics.update({"trainer/lr": run.scheduler.get_last_lr()[0], "trainer/version": run.version})
    run.steps_run += 1
    if (why := skip_reason(metrics)) is not None:
        run.skipped.append(why)
    if _eval_due(cfg, step):
        with monitor.phase("eval"):
            metrics.update(await run.strategy.while_waiting(_evaluate(run)))
    monitor.log(number, metrics)
    _record(run, number, batch)
    run.guard.observe(step, batch.all_trajectories)
    if _checkpoint_due(cfg, step):
        with monitor.phase("checkpoint"):
            run.checkpoint = checkpoint(run, step + 1)
    pipeline.step_done(step)  # the engine holds this step's weights: admit the groups that allows


def _budget_spent(run: Run, step: int, elapsed_s: float) -> bool:
    """True if trainer.max_train_s is spent after `step` with steps left: that step is checkpointed (unless it
    just was) and the run says where it stopped."""
    budget, cfg = run.cfg.trainer.max_train_s, run.cfg
    if budget is None or elapsed_s < budget or step + 1 >= cfg.trainer.steps:
        return False
    if not _checkpoint_due(cfg, step):
        run.checkpoint = checkpoint(run, step + 1)
    run.monitor.console.print(f"[yellow]trainer.max_train_s={budget:g} spent ({elapsed_s:.0f} s): stopped after "
                              f"step {step + 1} of {cfg.trainer.steps}; --resume {run.run_dir} continues[/]")
    return True


def _eval_due(cfg: Config, step: int) -> bool:
    """Held-out evaluation runs every trainer.eval_every steps and after the last one (if eval_episodes > 0)."""
    t = cfg.trainer
    done = step + 1
    return t.eval_episodes > 0 and (done == t.steps or (t.eval_every > 0 and done % t.eval_every == 0))


def _checkpoint_due(cfg: Config, step: int) -> bool:
    """A checkpoint is written every trainer.checkpoint_every steps and after the last one."""
    done, every = step + 1, cfg.trainer.checkpoint_every
    return done == cfg.trainer.steps or (every > 0 and done % every == 0)


async def _evaluate(run: Run) -> dict[str, float]:
    """Held-out evaluation of the engine's current weights, as eval/* metrics."""
    held = await evaluate(run.cfg, run.engine, run.tokenizer, run.cfg.trainer.eval_episodes)
    return {"eval/reward_mean": held.mean, "eval/reward_low95": held.low, "eval/reward_high95": held.high,
            "eval/episodes": held.n}


def _record(run: Run, step: int, batch: StepBatch) -> None:
    """Of step number `step` (from 1): rendered samples at step 1 and every trainer.sample_every steps after it,
    the first suspicious trajectory, and every trajectory in trajectories.jsonl (lossless, train/step = step)."""
    every = run.cfg.trainer.sample_every
    if every and (step - 1) % every == 0:
        run.monitor.write_samples(step, batch.all_trajectories, run.tokenizer)
    run.monitor.write_suspicious(step, batch.all_trajectories, run.tokenizer)
    with open(run.run_dir / "trajectories.jsonl", "a") as f:
        for t in batch.all_trajectories:
            t.metrics["train/step"] = step
            f.write(t.to_json() + "\n")


def checkpoint(run: Run, step: int) -> Path:
    """Write checkpoint `step` (model, tokenizer, optimizer, scheduler, policy version, task seed, where π_ref
    comes from, the task sampler's state)."""
    return run.strategy.save(
        run.run_dir, step, model=run.model, tokenizer=run.tokenizer, optimizer=run.optimizer,
        scheduler=run.scheduler, state={"version": run.version, "task_seed": run.cfg.rollout.seed,
                                        "reference": run.reference,
                                        "task_sampler": run.pipeline.sampler.state_dict() if run.pipeline
                                        else run.sampler_state,
                                        "precision": {"compute": run.precision[0].name, "engine": run.precision[1].name}},
        keep=run.cfg.trainer.keep_checkpoints,
    )


# ---- teardown ----

async def teardown(run: Run) -> None:
    """Stop everything start() started, newest first, even after an error or a cancellation."""
    if run.pipeline:
        await run.pipeline.close()
    if run.backend:
        await run.backend.close()
    if run.engine:
        await run.engine.close()
    if run.close_envs:
        await run.close_envs()


def finish(run: Run) -> RunResult:
    """Plot the run and say where its outputs are (a warm-start-only run has no step metrics to plot)."""
    metrics = run.monitor.metrics_path
    if metrics.exists():
        plot = _plot(run.run_dir, run.monitor)
        where = f"      metrics {metrics}\n      plot {plot}"
    else:
        plot, sft = None, run.run_dir / "sft_metrics.jsonl"
        where = f"      metrics {sft if sft.exists() else 'none (no training step ran)'}"
    result = RunResult(run_dir=run.run_dir, checkpoint=run.checkpoint, metrics=run.monitor.metrics_path, plot=plot,
                       steps_run=run.steps_run, steps_trained=run.steps_run - len(run.skipped), skipped=run.skipped)
    head = "[bold red]nothing trained[/]" if result.nothing_trained() else "[bold green]done[/]"
    run.monitor.console.print(f"{head}: checkpoint {run.checkpoint}\n{where}")
    return result


def _plot(run_dir: Path, monitor: Monitor) -> Path | None:
    try:
        from agentrl.trainer.plot import plot_run

        return plot_run(run_dir)
    except Exception as e:  # a plotting problem must not hide a finished run
        monitor.console.print(f"[yellow]plot skipped: {type(e).__name__}: {e}[/]")
        return None
