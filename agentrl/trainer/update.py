"""The policy update on one rollout batch: π_ref and π_old, corrections, PPO mini-batches × epochs of
micro-batched loss, clip, step.

The objective (per action token t of trajectory i, m = 1 only on model-generated tokens of all turns):

    L = reduce_t( w̃_{i,t} · ℓ(r_{i,t}, A_i) ) [+ β·reduce(KL(π_θ‖π_ref))],   r = π_θ/π_old,  w = π_old/μ

where μ is the behaviour policy that sampled the tokens (engine logprobs), π_old the trainer's policy at
the start of the update, w̃ the detached correction weight (token TIS/MIS times trajectory trust-region
keep flags, decided over all segments of a trajectory), and the reduction's denominator is fixed over
the whole PPO mini-batch before any rejection, so the gradient does not depend on the micro-batch split.

π_old. With one optimizer step per batch and every action token sampled by the current version, π_old is
π_θ itself: it is taken detached from the training forward (no separate recompute, r = 1 exactly), and the
corrections are decided per micro-batch, which is exact when no trajectory spans two micro-batches.
Otherwise (stale tokens, several optimizer steps, split trajectories) π_old is recomputed once for the
whole batch, before the first step, and sliced for every mini-batch and epoch.

Ranks. With trainer.strategy=fsdp every rank packs the whole batch and trains on its share of whole trajectories
(`dp`, agentrl.trainer.distributed.DataParallel): per-token values its forwards compute are gathered back into the
whole batch, so π_old, the corrections and every batch metric are computed as in one process; the loss divides by
the whole mini-batch's counts, so the ranks' losses and gradients sum to the single-process ones; a rank with fewer
micro-batches runs idle passes, so every rank makes the same FSDP collectives. With one process `dp` is SINGLE and
nothing is communicated.

Devices. `train_on_batch` packs the rollout batch on the host and moves it to the model's device once
(batch.MiniBatch.to); every tensor made after that is made on the batch's device. Metrics stay there as 0-d tensors
and leave once per optimizer step, in one transfer (agentrl.algo.metrics.to_host) that also carries the gradient
norm the step's skip decision needs; nothing in the step reads a device value per token or per micro-batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from agentrl import precision
from agentrl.algo.corrections import CorrectionConfig, correction_weights
from agentrl.algo.flat import masked, traj_sum
from agentrl.algo.logprobs import token_logprobs_from_hidden
from agentrl.algo.losses import LOSS_SPECS, LossConfig, loss_normalizer, policy_loss
from agentrl.algo.metrics import drop_empty_buckets, mismatch_tensors, staleness_tensors, to_host
from agentrl.trainer.batch import (
    MicroBatch,
    MiniBatch,
    build_minibatch,
    microbatches,
    model_device,
    trajectory_local,
)
from agentrl.trainer.distributed import SINGLE, DataParallel, Share
from agentrl.trainer.memory import release_memory
from agentrl.trainer.prefix import rows_hidden, shared_prefix_hidden, sharing_supported
from agentrl.trainer.sharded import ROOT_FORWARD


@dataclass(frozen=True)
class UpdateConfig:
    """Everything an update needs besides the data, built once from the run config by `update_config_from` (no
    defaults here: config.py holds the run's, agentrl.algo.defaults the algorithm's)."""

    loss: str
    loss_cfg: LossConfig
    reduction: str | None
    correction: CorrectionConfig
    temperature: float
    micro_batch_tokens: int
    logprob_chunk: int
    grad_clip: float
    mini_batches: int
    ppo_epochs: int
    share_prefix: bool
    compute_dtype: str  # the transformer body's autocast dtype (agentrl.precision); head and loss stay fp32
    loss_scale_factor: float | None = None  # seq-mean-token-sum-norm's constant L (Dr.GRPO): rollout.max_context_tokens


def update_config_from(cfg) -> UpdateConfig:
    """Map the run config (agentrl.config.Config) onto UpdateConfig; its defaults live in config.py alone."""
    a, t = cfg.algo, cfg.trainer
    spec = LOSS_SPECS[a.loss]
    loss_cfg = LossConfig(
        eps_low=spec.preset.eps_low if a.eps_low is None else a.eps_low,
        eps_high=spec.preset.eps_high if a.eps_high is None else a.eps_high,
        dual_clip_c=a.dual_clip_c if spec.dual_clip else None,
        kl_coef=a.kl_coef,
        kl_estimator=a.kl_estimator,
    )
    correction = CorrectionConfig(
        token=a.correction, tis_cap=a.tis_cap, mis_band=tuple(a.mis_band), traj=tuple(a.trust_region),
        geo_band=tuple(a.geo_band), seq_band=tuple(a.seq_band), veto_floor=a.veto_floor, opsm_delta=a.opsm_delta,
    )
    return UpdateConfig(
        loss=a.loss, loss_cfg=loss_cfg, reduction=a.reduction, correction=correction,
        temperature=cfg.rollout.temperature, micro_batch_tokens=t.micro_batch_tokens, logprob_chunk=t.logprob_chunk,
        grad_clip=t.grad_clip, mini_batches=t.mini_batches, ppo_epochs=t.ppo_epochs,
        # FSDP gathers every layer once per forward on every rank: the shared-prefix forward's data-dependent number
        # of forwards per micro-batch would break that lockstep (docs/distributed.md)
        share_prefix=t.share_prefix and t.strategy == "single",
        compute_dtype=precision.resolve(cfg.model.compute_dtype, cfg.model.device).name,
        loss_scale_factor=float(cfg.rollout.max_context_tokens),  # a bound on |y_i|, the same for every batch
    )


def policy_logprobs(
    model, micro: MicroBatch, targets: Tensor, *, temperature: float, chunk: int, entropy: bool = False,
    actions_only: bool = False, share_prefix: bool = True, compute_dtype: str = "float32",
) -> tuple[Tensor, Tensor | None]:
    """Logprobs (T,) of `targets` under the temperature-scaled policy, from hidden states in chunks.

    With `actions_only`, the LM head runs only at micro.actions (the positions whose target the policy sampled)
    and the other positions read 0: every consumer multiplies by the loss mask, and prompt and observation tokens
    are most of an agent trajectory, so this skips most of the vocabulary projection (~a fifth of a 135M model's
    forward).
    With `share_prefix`, a prompt that several rows start with is computed once (agentrl.trainer.prefix).
    With compute_dtype bfloat16, the transformer body runs under autocast (mixed precision: the weights stay in
    their own dtype); the LM head and the log-softmax run in the head weight's dtype on upcast hidden states.
    A sharded model (agentrl.trainer.sharded) runs this inside its root's FSDP forward."""
    root = getattr(model, ROOT_FORWARD, None)
    if root is not None:
        return root(micro, targets, temperature=temperature, chunk=chunk, entropy=entropy, actions_only=actions_only,
                    share_prefix=share_prefix, compute_dtype=compute_dtype)
    return local_policy_logprobs(model, micro, targets, temperature=temperature, chunk=chunk, entropy=entropy,
                            actions_only=actions_only, share_prefix=share_prefix, compute_dtype=compute_dtype)


def local_policy_logprobs(
    model, micro: MicroBatch, targets: Tensor, *, temperature: float, chunk: int, entropy: bool = False,
    actions_only: bool = False, share_prefix: bool = True, compute_dtype: str = "float32",
) -> tuple[Tensor, Tensor | None]:
    """policy_logprobs computed by the modules of this process (what a sharded model's root forward runs)."""
    with precision.autocast(precision.DTYPES[compute_dtype], micro.input_ids.device.type):
        hidden = shared_prefix_hidden(model, micro) if share_prefix else None  # (T, H), None: nothing shared
        if hidden is None:
            hidden = rows_hidden(model, micro)  # (T, H), every row in full
    weight = model.get_output_embeddings().weight  # (V, H)
    hidden = hidden.to(weight.dtype)
    if not actions_only:
        return token_logprobs_from_hidden(hidden, weight, targets, temperature=temperature, chunk=chunk,
                                          entropy=entropy)
    where = micro.actions
    lp, ent = token_logprobs_from_hidden(hidden[where], weight, targets[where], temperature=temperature, chunk=chunk,
                                         entropy=entropy)
    lp_all = lp.new_zeros(targets.shape[0]).index_put((where,), lp)
    ent_all = None if ent is None else ent.new_zeros(targets.shape[0]).index_put((where,), ent)
    return lp_all, ent_all


@torch.no_grad()
def recompute_logprobs(model, mb: MiniBatch, micros: list[MicroBatch], ucfg: UpdateConfig,
                       dp: DataParallel = SINGLE) -> Tensor:
    """π_old (or π_ref) logprobs (N,) of every target in the mini-batch, with the model's current weights."""
    was_training = model.training
    model.eval()
    out = torch.zeros(mb.num_tokens, dtype=torch.float32, device=mb.device)
    try:
        for micro in dp.pad(micros):
            if micro is None:  # this rank is out of micro-batches: an idle forward keeps the ranks' collectives even
                idle, idle_micro = _idle_batch(mb.device)
                policy_logprobs(model, idle_micro, idle.targets, temperature=ucfg.temperature, chunk=ucfg.logprob_chunk,
                                actions_only=True, share_prefix=False, compute_dtype=ucfg.compute_dtype)
                continue
            lp, _ = policy_logprobs(
                model, micro, mb.targets[micro.start : micro.end], temperature=ucfg.temperature,
                chunk=ucfg.logprob_chunk, actions_only=True, share_prefix=ucfg.share_prefix,
                compute_dtype=ucfg.compute_dtype,
            )
            out[micro.start : micro.end] = lp.float()
    finally:
        model.train(was_training)
    return out


def train_on_batch(model, optimizer: torch.optim.Optimizer, batch, ucfg: UpdateConfig, *, version: int,
                   ref_model=None, dp: DataParallel = SINGLE) -> dict[str, float]:
    """The trainer side of one loop step: the rollout batch (a StepBatch) → optimizer step(s) → metrics.

    π_ref (when ref_model is given and the KL term is on) and π_old are computed here, on one set of
    micro-batches; `version` is the policy version of the model's weights (tokens sampled by older versions
    are stale). The batch is packed on the host and moved to the model's device here. With several ranks (`dp`)
    every rank passes the whole batch and trains on its share.
    """
    if not batch.trajectories:
        raise ValueError("train_on_batch needs at least one trajectory (the loop skips empty batches)")
    device = model_device(model)
    mb = build_minibatch(batch.trajectories, batch.turn_advantages or batch.advantages).to(device)
    traj_adv = torch.tensor(batch.advantages, dtype=torch.float32, device=device)
    return train_on_minibatch(model, optimizer, mb, ucfg, current_version=version, traj_advantages=traj_adv,
                              ref_model=ref_model, dp=dp)


def train_on_minibatch(
    model,
    optimizer: torch.optim.Optimizer,
    mb: MiniBatch,
    ucfg: UpdateConfig,
    *,
    current_version: int,
    traj_advantages: Tensor,
    lp_ref: Tensor | None = None,
    ref_model=None,
    dp: DataParallel = SINGLE,
) -> dict[str, float]:
    """`train_on_batch` on an already packed batch: mini_batches × ppo_epochs optimizer steps; returns metrics.

    A non-finite gradient norm skips that optimizer step (counted in trainer/skipped_steps). Step metrics
    (actor/*) are means over the optimizer steps; mismatch and staleness metrics are of π_old vs μ. The batch is
    moved to the model's device if it is not there; metrics cross to the host once per optimizer step. With
    several ranks, mb is the whole batch on every rank (lp_ref too, if given) and each trains on dp.share of it.
    """
    device = model_device(model)
    mb = mb.to(device)
    traj_advantages = traj_advantages.to(device)
    lp_ref = None if lp_ref is None else lp_ref.to(device)
    share = ucfg.share_prefix and sharing_supported(model)  # then the budget counts a shared prompt once
    mine = dp.share(mb, 0, mb.num_trajectories)  # this rank's trajectories (all of them in one process)
    micros = microbatches(mine.batch, ucfg.micro_batch_tokens, share_prefix=share)
    if lp_ref is None and ref_model is not None and ucfg.loss_cfg.kl_coef > 0:
        lp_ref = dp.gather(recompute_logprobs(ref_model, mine.batch, micros, ucfg, dp), mine)
    host = mb.host
    action_versions = host.versions[host.loss_mask > 0]
    fresh = bool((action_versions == current_version).all())
    on_policy = (ucfg.mini_batches * ucfg.ppo_epochs == 1 and fresh
                 and dp.all(trajectory_local(mine.batch, micros)))

    def batch_metrics(lp_old: Tensor, corr_metrics: dict[str, Tensor]) -> dict[str, Tensor]:
        """π_old-vs-μ metrics of the whole batch, as device tensors (they leave with a step's metrics)."""
        return {**corr_metrics,
                **mismatch_tensors(lp_old, mb.behaviour_logprobs, mb.loss_mask, mb.traj_index, mb.num_trajectories,
                                   versions=mb.versions, current_version=current_version),
                **staleness_tensors(mb.versions, mb.loss_mask, mb.traj_index, mb.num_trajectories, current_version)}

    if on_policy:  # π_old = π_θ of the training forward: no recompute
        old = _OldPolicy.from_forward(mine.batch.num_tokens, device)

        def after_forward() -> dict[str, Tensor]:
            lp_old = dp.gather(old.lp_old, mine)  # the whole batch's π_old
            corr = correction_weights(lp_old, mb.behaviour_logprobs, mb.loss_mask, mb.traj_index,
                                      mb.num_trajectories, traj_advantages, ucfg.correction)  # the same decisions
            return batch_metrics(lp_old, corr.metrics)

        s, e = mine.tokens
        step_metrics = [_optimizer_step(model, optimizer, mine.batch, micros, ucfg, traj_advantages[slice(*mine.traj)],
                                        old=old, lp_ref=None if lp_ref is None else lp_ref[s:e], first_step=True,
                                        extra=after_forward, dp=dp)]
    else:
        lp_old = dp.gather(recompute_logprobs(model, mine.batch, micros, ucfg, dp), mine)  # once, before any step
        corr = correction_weights(lp_old, mb.behaviour_logprobs, mb.loss_mask, mb.traj_index, mb.num_trajectories,
                                  traj_advantages, ucfg.correction)
        step_metrics = _off_policy_steps(model, optimizer, mb, ucfg, traj_advantages, lp_old, corr.weights, lp_ref,
                                         share, extra=lambda: batch_metrics(lp_old, corr.metrics), dp=dp)
    metrics = drop_empty_buckets(step_metrics[0].pop("batch"))
    metrics.update(_mean_step_metrics(step_metrics))
    metrics["trainer/pi_old_recomputed"] = 0.0 if on_policy else 1.0
    metrics["trainer/micro_batches"] = dp.total(len(micros))
    metrics["trainer/tokens"] = float(mb.num_tokens)
    metrics["trainer/action_tokens"] = float(action_versions.numel())
    return metrics


def _off_policy_steps(model, optimizer, mb: MiniBatch, ucfg: UpdateConfig, traj_advantages: Tensor, lp_old: Tensor,
                      weights: Tensor, lp_ref: Tensor | None, share: bool,
                      extra: Callable[[], dict[str, Tensor]], dp: DataParallel = SINGLE) -> list[dict[str, Any]]:
    """ppo_epochs passes over mini_batches contiguous trajectory ranges, one optimizer step each, all against the
    π_old and correction weights fixed before the first step; returns each step's metrics (the first step's
    carry `extra()` under "batch"). With several ranks each mini-batch is split among them (dp.share)."""
    parts: list[tuple[Share, list[MicroBatch]]] = []
    for lo, hi in split_trajectories(mb.num_trajectories, ucfg.mini_batches):
        mine = dp.share(mb, lo, hi)
        if mine.total_tokens:  # the whole mini-batch's count: every rank takes the same steps
            parts.append((mine, microbatches(mine.batch, ucfg.micro_batch_tokens, share_prefix=share)))
    step_metrics: list[dict[str, Any]] = []
    for _ in range(ucfg.ppo_epochs):
        for mine, part_micros in parts:
            s, e = mine.tokens
            old = _OldPolicy.fixed(lp_old[s:e], weights[s:e])
            step_metrics.append(_optimizer_step(
                model, optimizer, mine.batch, part_micros, ucfg, traj_advantages[slice(*mine.traj)], old=old,
                lp_ref=None if lp_ref is None else lp_ref[s:e], first_step=not step_metrics,
                extra=None if step_metrics else extra, dp=dp,
            ))
    return step_metrics


def _mean_step_metrics(step_metrics: list[dict[str, float]]) -> dict[str, float]:
    """Means over the optimizer steps (skipped steps summed), and how many steps there were."""
    out = {}
    for key in step_metrics[0]:
        values = [m[key] for m in step_metrics]
        out[key] = sum(values) if key == "trainer/skipped_steps" else sum(values) / len(values)
    out["trainer/optimizer_steps"] = float(len(step_metrics))
    return out


def split_trajectories(num_traj: int, parts: int) -> list[tuple[int, int]]:
    """[lo, hi) trajectory ranges of `parts` contiguous PPO mini-batches of near-equal size (at most num_traj)."""
    parts = max(1, min(parts, num_traj))
    bounds = [round(i * num_traj / parts) for i in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


class _OldPolicy:
    """π_old and the correction weights of an optimizer step's tokens, in one of two modes:
    fixed (recomputed for the whole batch before the first step), or taken from the training forward itself
    (on-policy: π_old = π_θ detached, corrections decided per micro-batch; exact when no trajectory spans two
    micro-batches), in which case `lp_old` collects the values for the batch's metrics."""

    def __init__(self, lp_old: Tensor, weights: Tensor | None):
        self.lp_old, self._weights = lp_old, weights

    @classmethod
    def fixed(cls, lp_old: Tensor, weights: Tensor) -> _OldPolicy:
        """π_old and weights given for every token of the step."""
        return cls(lp_old, weights)

    @classmethod
    def from_forward(cls, num_tokens: int, device: torch.device) -> _OldPolicy:
        """π_old read off the training forward (filled in micro-batch by micro-batch)."""
        return cls(torch.zeros(num_tokens, device=device), None)

    @property
    def is_fixed(self) -> bool:
        """True when π_old was recomputed before the step (not taken from its forward)."""
        return self._weights is not None

    def for_micro(self, lp: Tensor, mb: MiniBatch, micro: MicroBatch, traj_adv: Tensor,
                  ucfg: UpdateConfig) -> tuple[Tensor, Tensor]:
        """(π_old, correction weights) of the micro-batch's tokens; lp is its training forward's logprobs."""
        s, e = micro.start, micro.end
        if self.is_fixed:
            return self.lp_old[s:e], self._weights[s:e]
        old = lp.detach().float()
        self.lp_old[s:e] = old
        w = correction_weights(old, mb.behaviour_logprobs[s:e], mb.loss_mask[s:e], mb.traj_index[s:e],
                               mb.num_trajectories, traj_adv, ucfg.correction).weights
        return old, w


def _optimizer_step(
    model, optimizer, mb: MiniBatch, micros: list[MicroBatch], ucfg: UpdateConfig, traj_adv: Tensor, *,
    old: _OldPolicy, lp_ref: Tensor | None, first_step: bool, extra: Callable[[], dict[str, Tensor]] | None = None,
    dp: DataParallel = SINGLE,
) -> dict[str, Any]:
    """Accumulate the loss of mb over its micro-batches, clip, step; returns the step's metrics, which leave the
    device here in one transfer together with `extra()` (evaluated after the backward; returned under "batch").
    With several ranks mb is this rank's share of the step's mini-batch, the denominators are the whole
    mini-batch's, and the loss metrics are summed over the ranks."""
    host = mb.host
    norm = loss_normalizer(host.loss_mask, host.traj_index, host.num_trajectories,  # counts from the host copy
                           loss_scale_factor=ucfg.loss_scale_factor)
    norm = dp.global_counts(replace(norm, traj_lengths=norm.traj_lengths.to(mb.device)))
    traj_log_ratio = _gspo_log_ratio(model, mb, micros, ucfg, old, norm, first_step, dp)
    optimizer.zero_grad(set_to_none=True)
    sums: dict[str, Tensor] = {}
    entropy_sum = torch.zeros((), device=mb.device)
    for micro in dp.pad(micros):
        if micro is None:  # out of micro-batches on this rank: a pass whose every token is masked (zero gradient)
            idle, micro = _idle_batch(mb.device)
            args = (idle, micro, _OldPolicy.from_forward(1, mb.device), traj_adv.new_zeros(1),
                    replace(norm, traj_lengths=norm.traj_lengths.new_zeros(1)),
                    None if lp_ref is None else idle.behaviour_logprobs,
                    None if traj_log_ratio is None else traj_log_ratio.new_zeros(1))
        else:
            args = (mb, micro, old, traj_adv, norm, lp_ref, traj_log_ratio)
        m, ent = _micro_backward(model, ucfg, *args)
        for k, v in m.items():
            sums[k] = sums[k] + v if k in sums else v
        entropy_sum = entropy_sum + ent
    sums["actor/entropy"] = entropy_sum / max(norm.num_tokens, 1.0)
    sums = dp.sum(sums)  # each rank's terms are over the whole mini-batch's denominators: they add up
    batch = extra() if extra is not None else {}
    grad_norm = dp.clip_grad_norm(model.parameters(), ucfg.grad_clip)
    values = to_host({**sums, **batch, "actor/grad_norm": grad_norm})  # the step's one device→host transfer
    metrics: dict[str, Any] = {k: values[k] for k in sums}
    metrics.update(_step_unless_nonfinite(optimizer, values["actor/grad_norm"]))
    if extra is not None:
        metrics["batch"] = {k: values[k] for k in batch}
    release_memory()
    return metrics


def _micro_backward(model, ucfg: UpdateConfig, mb: MiniBatch, micro: MicroBatch, old: _OldPolicy, traj_adv: Tensor,
                    norm, lp_ref: Tensor | None, traj_log_ratio: Tensor | None) -> tuple[dict[str, Tensor], Tensor]:
    """Forward and backward of one micro-batch's share of the loss; returns its loss metrics and Σ m·entropy."""
    s, e = micro.start, micro.end
    lp, ent = policy_logprobs(
        model, micro, mb.targets[s:e], temperature=ucfg.temperature, chunk=ucfg.logprob_chunk, entropy=True,
        actions_only=True, share_prefix=ucfg.share_prefix, compute_dtype=ucfg.compute_dtype,
    )
    lp_old, w = old.for_micro(lp, mb, micro, traj_adv, ucfg)
    loss, m = policy_loss(
        ucfg.loss, lp, lp_old, mb.advantages[s:e], mb.loss_mask[s:e], traj_index=mb.traj_index[s:e], norm=norm,
        cfg=ucfg.loss_cfg, reduction=ucfg.reduction, weights=w,
        lp_ref=None if lp_ref is None else lp_ref[s:e], traj_log_ratio=traj_log_ratio,
    )
    loss.backward()
    return m, (ent * mb.loss_mask[s:e]).sum()


def _idle_batch(device: torch.device) -> tuple[MiniBatch, MicroBatch]:
    """A one-token batch with nothing to learn from (loss mask 0) and its micro-batch: the pass a rank runs when
    another rank has more micro-batches (its gradient is exactly zero, its collectives the same as a real one's)."""
    zero_f, zero_i = torch.zeros(1, device=device), torch.zeros(1, dtype=torch.long, device=device)
    idle = MiniBatch(input_ids=zero_i, targets=zero_i, loss_mask=zero_f, behaviour_logprobs=zero_f,
                     versions=zero_i - 1, traj_index=zero_i, advantages=zero_f, segment_bounds=[(0, 1)],
                     num_trajectories=1)
    return idle, microbatches(idle, 1)[0]


def _step_unless_nonfinite(optimizer, grad_norm: float) -> dict[str, float]:
    """Step on the clipped gradients, unless their norm is not finite (then the step is skipped and counted)."""
    finite = math.isfinite(grad_norm)
    if finite:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return {"actor/grad_norm": grad_norm, "trainer/skipped_steps": 0.0 if finite else 1.0}


def _gspo_log_ratio(model, mb: MiniBatch, micros, ucfg: UpdateConfig, old: _OldPolicy, norm,
                    first_step: bool, dp: DataParallel = SINGLE) -> Tensor | None:
    """GSPO's mini-batch-wide s_i when a micro-batch cannot compute it from its own whole trajectories: zeros at
    the first step (π_θ = π_old), else recomputed; None where each micro-batch holds its trajectories whole (on
    every rank: the recompute's forwards are collectives)."""
    if not LOSS_SPECS[ucfg.loss].trajectory_ratio:
        return None
    if first_step:
        return torch.zeros(mb.num_trajectories, device=mb.device)
    if dp.all(trajectory_local(mb, micros)):
        return None
    return _trajectory_log_ratio(model, mb, micros, ucfg, old.lp_old, norm, dp)


@torch.no_grad()
def _trajectory_log_ratio(model, mb: MiniBatch, micros, ucfg: UpdateConfig, lp_old: Tensor, norm,
                          dp: DataParallel = SINGLE) -> Tensor:
    """(num_traj,) Σ_t m·(lp_θ − lp_old)/|y_i| under the current weights, for trajectories split over micro-batches."""
    lp = recompute_logprobs(model, mb, micros, ucfg, dp)
    return traj_sum(masked(lp - lp_old, mb.loss_mask.bool()), mb.traj_index, mb.num_trajectories) / (
        norm.traj_lengths.to(lp).clamp(min=1)
    )
