"""One policy update on a mini-batch: recompute π_old, corrections, micro-batched loss, clip, step.

The objective (per action token t of trajectory i, m = 1 only on model-generated tokens of all turns):

    L = reduce_t( w̃_{i,t} · ℓ(r_{i,t}, A_i) ) [+ β·reduce(KL(π_θ‖π_ref))],   r = π_θ/π_old,  w = π_old/μ

where μ is the behaviour policy that sampled the tokens (engine logprobs), π_old the trainer's recompute
at the start of the step, w̃ the detached correction weight (token TIS/MIS times trajectory trust-region
keep flags, decided over all segments of a trajectory), and the reduction's denominator is fixed over
the whole mini-batch before any rejection, so the gradient does not depend on the micro-batch split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from agentrl.trainer.batch import MicroBatch, MiniBatch, microbatches
from agentrl.trainer.corrections import CorrectionConfig, correction_weights
from agentrl.trainer.logprobs import token_logprobs_from_hidden
from agentrl.trainer.losses import LOSS_PRESETS, LossConfig, loss_normalizer, policy_loss
from agentrl.trainer.memory import release_memory
from agentrl.trainer.metrics import mismatch_metrics, staleness_metrics


@dataclass(frozen=True)
class UpdateConfig:
    """Everything an update needs besides the data (built once from the run config)."""

    loss: str = "ppo"
    loss_cfg: LossConfig = LossConfig()
    reduction: str | None = None
    correction: CorrectionConfig = CorrectionConfig()
    temperature: float = 1.0
    micro_batch_tokens: int = 4096
    logprob_chunk: int = 1024
    grad_clip: float = 1.0


def update_config_from(cfg) -> UpdateConfig:
    """Map the run config (agentrl.config.Config) onto UpdateConfig."""
    a = cfg.algo
    preset = LOSS_PRESETS[a.loss]
    loss_cfg = LossConfig(
        eps_low=preset.eps_low if a.eps_low is None else a.eps_low,
        eps_high=preset.eps_high if a.eps_high is None else a.eps_high,
        dual_clip_c=a.dual_clip_c if a.loss == "ppo" else None,
        kl_coef=a.kl_coef,
        kl_estimator=a.kl_estimator,
    )
    correction = CorrectionConfig(
        token=a.correction,
        tis_cap=a.tis_cap,
        mis_band=tuple(a.mis_band),
        traj=tuple(a.trust_region),
        geo_band=tuple(a.geo_band),
        seq_band=tuple(a.seq_band),
        veto_floor=a.veto_floor,
        opsm_delta=a.opsm_delta,
    )
    return UpdateConfig(
        loss=a.loss,
        loss_cfg=loss_cfg,
        reduction=a.reduction,
        correction=correction,
        temperature=cfg.rollout.temperature,
        micro_batch_tokens=cfg.trainer.micro_batch_tokens,
        logprob_chunk=cfg.trainer.logprob_chunk,
        grad_clip=cfg.trainer.grad_clip,
    )


def policy_logprobs(
    model, micro: MicroBatch, targets: Tensor, *, temperature: float, chunk: int, entropy: bool = False
) -> tuple[Tensor, Tensor | None]:
    """Logprobs (T,) of `targets` under the temperature-scaled policy, from hidden states in chunks."""
    hidden = model.base_model(
        input_ids=micro.input_ids, position_ids=micro.position_ids, attention_mask=micro.attention_mask,
        use_cache=False,  # training forwards never reuse keys/values: building a cache only costs memory
    ).last_hidden_state[0]  # (T, H)
    weight = model.get_output_embeddings().weight  # (V, H)
    return token_logprobs_from_hidden(hidden, weight, targets, temperature=temperature, chunk=chunk, entropy=entropy)


@torch.no_grad()
def recompute_logprobs(model, mb: MiniBatch, micros: list[MicroBatch], ucfg: UpdateConfig) -> Tensor:
    """π_old (or π_ref) logprobs (N,) of every target in the mini-batch, with the current weights."""
    out = torch.zeros(mb.num_tokens, dtype=torch.float32)
    for micro in micros:
        lp, _ = policy_logprobs(
            model, micro, mb.targets[micro.start : micro.end], temperature=ucfg.temperature, chunk=ucfg.logprob_chunk
        )
        out[micro.start : micro.end] = lp.float()
    return out


def train_on_minibatch(
    model,
    optimizer: torch.optim.Optimizer,
    mb: MiniBatch,
    ucfg: UpdateConfig,
    *,
    current_version: int,
    traj_advantages: Tensor,
    lp_ref: Tensor | None = None,
) -> dict[str, float]:
    """Recompute π_old, weigh, accumulate the loss over packed micro-batches, clip and step; return metrics.

    A non-finite gradient norm skips the optimizer step (counted in trainer/skipped_steps).
    """
    micros = microbatches(mb, ucfg.micro_batch_tokens)
    was_training = model.training
    model.eval()
    lp_old = recompute_logprobs(model, mb, micros, ucfg)  # (N,)
    model.train(was_training)
    mask = mb.loss_mask
    norm = loss_normalizer(mask, mb.traj_index, mb.num_trajectories)
    corr = correction_weights(
        lp_old, mb.behaviour_logprobs, mask, mb.traj_index, mb.num_trajectories, traj_advantages, ucfg.correction
    )
    metrics: dict[str, float] = dict(corr.metrics)
    metrics.update(
        mismatch_metrics(
            lp_old, mb.behaviour_logprobs, mask, mb.traj_index, mb.num_trajectories,
            versions=mb.versions, current_version=current_version,
        )
    )
    metrics.update(staleness_metrics(mb.versions, mask, mb.traj_index, mb.num_trajectories, current_version))

    # GSPO's sequence ratio s_i spans every segment of a trajectory, possibly across micro-batches. With one
    # optimizer step per mini-batch, π_θ = π_old when the loss is evaluated, so its mini-batch-wide value is 0.
    traj_log_ratio = torch.zeros(mb.num_trajectories) if ucfg.loss == "gspo" else None
    optimizer.zero_grad(set_to_none=True)
    sums: dict[str, float] = {}
    entropy_sum = 0.0
    for micro in micros:
        s, e = micro.start, micro.end
        lp, ent = policy_logprobs(
            model, micro, mb.targets[s:e], temperature=ucfg.temperature, chunk=ucfg.logprob_chunk, entropy=True
        )
        loss, m = policy_loss(
            ucfg.loss,
            lp,
            lp_old[s:e],
            mb.advantages[s:e],
            mask[s:e],
            traj_index=mb.traj_index[s:e],
            norm=norm,
            cfg=ucfg.loss_cfg,
            reduction=ucfg.reduction,
            weights=corr.weights[s:e],
            lp_ref=None if lp_ref is None else lp_ref[s:e],
            traj_log_ratio=traj_log_ratio,
        )
        loss.backward()
        for k, v in m.items():
            sums[k] = sums.get(k, 0.0) + float(v)
        entropy_sum += float((ent * mask[s:e]).sum())
    metrics.update(sums)
    metrics["actor/entropy"] = entropy_sum / max(norm.num_tokens, 1.0)
    grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), ucfg.grad_clip))
    metrics["actor/grad_norm"] = grad_norm
    if math.isfinite(grad_norm):
        optimizer.step()
        metrics["trainer/skipped_steps"] = 0.0
    else:
        metrics["trainer/skipped_steps"] = 1.0
    optimizer.zero_grad(set_to_none=True)
    release_memory()
    metrics["trainer/micro_batches"] = float(len(micros))
    metrics["trainer/tokens"] = float(mb.num_tokens)
    metrics["trainer/action_tokens"] = float(norm.num_tokens)
    return metrics
