"""Supervised warm start: roll out an env's scripted expert through the same agent loop, then fit it.

Expert actions are tokenized by the agent loop exactly like sampled ones (same chat template, same masks),
so the loss falls only on action tokens — the content plus the end-of-turn token, which teaches the model
to stop. Real pipelines cold-start this way; the 135M default model cannot use tools without it.
"""

from __future__ import annotations

import asyncio
import json
import random

import torch

from agentrl import precision
from agentrl.algo.metrics import to_host
from agentrl.algo.signal import success_of
from agentrl.rollout.agent_loop import LoopConfig
from agentrl.rollout.seeds import warm_start_seed
from agentrl.trainer.batch import build_minibatch, microbatches, model_device
from agentrl.trainer.collect import run_groups, trainable
from agentrl.trainer.memory import release_memory
from agentrl.trainer.prefix import sharing_supported
from agentrl.trainer.update import policy_logprobs


def was_cut(traj) -> bool:
    """True if any action of the episode was cut off by a token budget (max_new_tokens or the context room),
    as the agent loop counted it."""
    return traj.metrics.get("rollout/length_truncated_actions", 0) > 0


async def expert_trajectories(cfg, env_factory, tokenizer, episodes: int, *, on_episode=None,
                              warn=None) -> list:
    """Collect `episodes` expert episodes (distinct task seeds). Episodes the env could not finish are dropped,
    and so are those with an action longer than rollout.max_new_tokens (a demonstration the policy could not
    emit), reported through `warn(message)`."""
    r = cfg.rollout
    loop_cfg = LoopConfig.from_rollout(r)  # sampling settings are unused: the expert acts
    seeds = [warm_start_seed(r.seed, i) for i in range(episodes)]
    groups = await run_groups(env_factory, None, tokenizer, seeds, group_size=1, loop_cfg=loop_cfg,
                              concurrency=r.concurrency, expert=True, on_episode=on_episode)
    done = [t for g in groups for t in g if trainable(t) and t.num_action_tokens > 0]
    kept, cut = [], []
    for t in done:
        (cut if was_cut(t) else kept).append(t)
    if cut and warn is not None:
        by_turn = sum(any(u.finish_reason == "length" and u.action_span[1] - u.action_span[0] == r.max_new_tokens
                          for u in t.turns) for t in cut)
        reasons = [f"{by_turn} by rollout.max_new_tokens={r.max_new_tokens}"] if by_turn else []
        if len(cut) > by_turn:
            reasons.append(f"{len(cut) - by_turn} by the room left in rollout.max_context_tokens={r.max_context_tokens}")
        warn(f"dropped {len(cut)} of {len(done)} expert episodes whose actions were cut ({'; '.join(reasons)}); "
             "raise that budget to keep them")
    return kept


def sft_step(model, optimizer, trajectories, *, micro_batch_tokens: int, chunk: int, grad_clip: float,
             share_prefix: bool = True, compute_dtype: str = "float32") -> dict[str, float]:
    """One optimizer step of token-mean negative log-likelihood on the action tokens of `trajectories`
    (share_prefix: prompts several rows start with are computed once, agentrl.trainer.prefix; compute_dtype: the
    body's autocast dtype, as in the policy update)."""
    mb = build_minibatch(trajectories, [0.0] * len(trajectories)).to(model_device(model))  # the one move
    n_tokens = float(mb.host.loss_mask.sum())
    optimizer.zero_grad(set_to_none=True)
    total = torch.zeros((), device=mb.device)
    for micro in microbatches(mb, micro_batch_tokens, share_prefix=share_prefix and sharing_supported(model)):
        s, e = micro.start, micro.end
        lp, _ = policy_logprobs(model, micro, mb.targets[s:e], temperature=1.0, chunk=chunk, actions_only=True,
                                share_prefix=share_prefix, compute_dtype=compute_dtype)
        loss = -(lp * mb.loss_mask[s:e]).sum() / max(n_tokens, 1.0)
        loss.backward()
        total = total + loss.detach()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    release_memory()
    return to_host({"sft/loss": total, "sft/grad_norm": grad_norm, "sft/action_tokens": n_tokens})  # one transfer


async def run_sft(cfg, model, tokenizer, env_factory, monitor) -> list[dict[str, float]]:
    """Collect cfg.sft.episodes expert episodes and train cfg.sft.epochs passes over them; returns step metrics."""
    s = cfg.sft
    monitor.begin_step(1, s.episodes, label="sft", steps=1)
    with monitor.phase("expert"):
        trajs = await expert_trajectories(cfg, env_factory, tokenizer, s.episodes, on_episode=monitor.episodes_done,
                                          warn=lambda msg: monitor.console.print(f"[yellow]sft: {msg}[/]"))
    if not trajs:
        monitor.console.print(f"[yellow]sft: {cfg.env.name} produced no usable expert episodes (does it define expert_action?)[/]")
        return []
    optimizer = torch.optim.AdamW(model.parameters(), lr=s.lr)
    rng = random.Random(cfg.rollout.seed)
    history = []
    model.train()
    for epoch in range(s.epochs):
        order = list(range(len(trajs)))
        rng.shuffle(order)
        losses = []
        with monitor.phase("sft"):
            for i in range(0, len(order), s.batch_trajectories):
                batch = [trajs[j] for j in order[i : i + s.batch_trajectories]]
                m = await asyncio.to_thread(
                    sft_step, model, optimizer, batch, micro_batch_tokens=cfg.trainer.micro_batch_tokens,
                    chunk=cfg.trainer.logprob_chunk, grad_clip=cfg.trainer.grad_clip,
                    share_prefix=cfg.trainer.share_prefix,
                    compute_dtype=precision.resolve(cfg.model.compute_dtype, cfg.model.device).name,
                )
                history.append({**m, "sft/epoch": epoch})
                losses.append(m["sft/loss"])
        monitor.console.print(f"sft epoch {epoch + 1}/{s.epochs}: mean loss {sum(losses) / len(losses):.4f} "
                              f"over {len(trajs)} expert trajectories")
    with open(monitor.run_dir / "sft_metrics.jsonl", "a") as f:
        for i, h in enumerate(history):
            f.write(json.dumps({"sft_step": i + 1, **h}) + "\n")  # numbered from 1, as training steps are
    return history


def resolved_episodes(trajectories) -> list:
    """The episodes rejection-sampling fine-tuning keeps (bench/learn_swe.py's `rft` control): scored (an
    infrastructure failure is masked, as in training), with model tokens, and resolved, i.e. task success as
    agentrl.algo.signal.success_of reads it (reward_info's success/resolved/correct flag; an env with no flag
    counts a reward ≥ 1). Never the shaped or format-inclusive reward: an unresolved episode with partial credit
    is dropped."""
    return [t for t in trajectories
            if trainable(t) and t.num_action_tokens > 0 and success_of(t.reward_info, t.reward) >= 1.0]


def sft_on(cfg, model, optimizer, trajectories, rng: random.Random, *, stop=None, after_step=None) -> list[dict]:
    """Supervised training on given trajectories: one pass over them in an order shuffled by `rng`, in batches of
    cfg.sft.batch_trajectories, one `sft_step` per batch (token-mean NLL on the model's action tokens; observation
    tokens are masked, as in the warm start) with the trainer's micro-batching, prefix sharing and compute dtype.
    `stop()`, asked before each batch, ends the pass early when true; `after_step(metrics)` runs after each step
    (e.g. a learning-rate scheduler's step). Returns each step's metrics. The shuffle draws from `rng` exactly as
    run_sft's epochs do, so a pass continues a warm start's order when given its generator."""
    order = list(range(len(trajectories)))
    rng.shuffle(order)
    size, history = cfg.sft.batch_trajectories, []
    model.train()
    for i in range(0, len(order), size):
        if stop is not None and stop():
            break
        m = sft_step(model, optimizer, [trajectories[j] for j in order[i:i + size]],
                     micro_batch_tokens=cfg.trainer.micro_batch_tokens, chunk=cfg.trainer.logprob_chunk,
                     grad_clip=cfg.trainer.grad_clip, share_prefix=cfg.trainer.share_prefix,
                     compute_dtype=precision.resolve(cfg.model.compute_dtype, cfg.model.device).name)
        history.append(m)
        if after_step is not None:
            after_step(m)
    return history
