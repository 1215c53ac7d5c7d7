"""Off-policy corrections on w = π_old/μ: token TIS / MIS (IcePop) and trajectory-level trust regions (§6).

The rollout engine's behaviour policy μ differs from the trainer's π_old by numerical mismatch (same
weights, different kernels) and by staleness (older weights). Decoupled PPO multiplies each token's PPO
loss by a detached weight w̃_t derived from w_t = exp(lp_old − lp_μ) (AReaL decoupled loss; verl
rollout_corr). Rejection sets w̃ = 0 but the token stays in the reduction's denominator (§4).

Trajectory decisions (Geo-RS, Seq-MIS, veto, OPSM) span all segments and turns of a trajectory, so they
are computed ONCE over the whole mini-batch by `correction_weights`, before micro-batching; the loop
slices the returned per-token weights like any other per-token tensor. Modes combine: the token weight
is multiplied by the trajectory keep flag (e.g. token TIS + Geo-RS + veto).

When to pick what (§6, §11): token TIS C=2 plus veto 1e-4 by default; IcePop [0.5, 5] for MoE-style
spiky mismatch; Geo-RS for long agentic trajectories (length-invariant); avoid Seq-MIS on long
trajectories (the product explodes with length: 1.1^100 ≈ 13780); OPSM to stop learning from negative
samples that drifted far off-policy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from agentrl.algo import defaults as D
from agentrl.algo.flat import masked, traj_amin, traj_count, traj_sum

TRAJ_MODES = D.TRUST_REGIONS


@dataclass(frozen=True)
class CorrectionConfig:
    """Which corrections to apply and their thresholds (defaults: agentrl.algo.defaults, §11: token TIS C=2 + veto
    1e-4)."""

    token: Literal["none", "tis", "mis"] = D.CORRECTION
    """Token-level mode: "tis" w̃ = clamp(w, tis_low, tis_cap); "mis" w̃ = w·1[lo ≤ w ≤ hi] (IcePop)."""
    tis_cap: float = D.TIS_CAP
    """C of token TIS (slime --tis-clip 2.0, verl rollout_is_threshold 2.0)."""
    tis_low: float | None = None
    """Optional lower cap of token TIS (slime --tis-clip-low); with it TIS is the [lo, C] clip (CIS)."""
    mis_band: tuple[float, float] = D.MIS_BAND
    """[α, β] of token MIS / IcePop (INTELLECT-3 [0.5, 5]); bounds are kept."""
    traj: tuple[str, ...] = D.TRUST_REGION
    """Trajectory-level trust regions, any of "geo", "seq", "veto", "opsm"."""
    geo_band: tuple[float, float] = D.GEO_BAND
    """Geo-RS: keep iff lo ≤ exp(mean_t log w) ≤ hi (verl preset "0.999_1.001")."""
    seq_band: tuple[float, float] = D.SEQ_BAND
    """Seq-MIS: keep iff lo ≤ Π_t w_t ≤ hi (verl preset "0.5_2.0")."""
    veto_floor: float = D.VETO_FLOOR
    """Veto: drop a trajectory if any action token has w < floor (slime mis.yaml 1e-4)."""
    opsm_delta: float = D.OPSM_DELTA
    """OPSM: drop a trajectory iff A_i < 0 and mean_t(lp_μ − lp_old) > δ (slime --opsm-delta 1e-4)."""


@dataclass(frozen=True)
class Correction:
    """Per-token weights and the decisions behind them, for one mini-batch."""

    weights: Tensor
    """(N,) detached w̃_t: the token weight times the trajectory keep flag; 0 off the loss mask."""
    token_keep: Tensor
    """(N,) bool: not rejected by token MIS (True off the mask)."""
    traj_keep: Tensor
    """(num_traj,) bool: not rejected by any trajectory-level mode."""
    metrics: dict[str, Tensor]
    """mismatch/tis_clipfrac, mismatch/rs_masked_frac (tokens), mismatch/rs_masked_frac_traj, per mode: 0-d
    tensors on the inputs' device (agentrl.algo.metrics.to_host makes floats of them in one transfer)."""


def _in_band(log_x: Tensor, band: tuple[float, float]) -> Tensor:
    """lo ≤ x ≤ hi, compared in log space so long products never overflow."""
    lo, hi = band
    log_lo = math.log(lo) if lo > 0 else float("-inf")
    return (log_x >= log_lo) & (log_x <= math.log(hi))


def token_weights(log_w: Tensor, mask: Tensor, cfg: CorrectionConfig) -> tuple[Tensor, Tensor]:
    """Token-level w̃ and keep flag from log w (N,): TIS truncation or MIS/IcePop masking (§6 table)."""
    w = torch.exp(log_w)  # (N,)
    if cfg.token == "none":
        return torch.ones_like(w), torch.ones_like(mask)
    if cfg.token == "tis":
        return w.clamp(min=cfg.tis_low, max=cfg.tis_cap), torch.ones_like(mask)
    if cfg.token == "mis":
        keep = _in_band(log_w, cfg.mis_band) | ~mask
        return torch.where(keep, w, torch.zeros_like(w)), keep
    raise ValueError(f"unknown token correction {cfg.token!r}; choose none, tis or mis")


def trajectory_keep(
    log_w: Tensor,
    mask: Tensor,
    traj_index: Tensor,
    num_traj: int,
    traj_advantages: Tensor,
    cfg: CorrectionConfig,
) -> dict[str, Tensor]:
    """Per-trajectory keep flags (num_traj,) of each configured trust region, over all segments.

    geo: lo ≤ exp(mean log w) ≤ hi. seq: lo ≤ exp(Σ log w) ≤ hi. veto: no token with w < floor.
    opsm: not (A_i < 0 and mean(lp_μ − lp_old) > δ); OPSM uses π_old in place of π_θ (they are equal at
    the step's first update), which keeps the decision fixed for the whole step. Trajectories without
    action tokens are always kept.
    """
    unknown = set(cfg.traj) - set(TRAJ_MODES)
    if unknown:
        raise ValueError(f"unknown trajectory trust region(s) {sorted(unknown)}; choose from {TRAJ_MODES}")
    lengths = traj_count(mask, traj_index, num_traj).to(log_w.dtype)  # (num_traj,)
    has = lengths > 0
    total = traj_sum(log_w, traj_index, num_traj)  # Σ_t m·log w
    mean = total / lengths.clamp(min=1)
    out: dict[str, Tensor] = {}
    for mode in cfg.traj:
        if mode == "geo":
            keep = _in_band(mean, cfg.geo_band)
        elif mode == "seq":
            keep = _in_band(total, cfg.seq_band)
        elif mode == "veto":
            keep = traj_amin(log_w, mask, traj_index, num_traj) >= math.log(cfg.veto_floor)
        else:  # opsm
            keep = ~((traj_advantages.to(log_w.dtype) < 0) & (-mean > cfg.opsm_delta))
        out[mode] = keep | ~has
    return out


@torch.no_grad()
def correction_weights(
    lp_old: Tensor,
    lp_mu: Tensor,
    loss_mask: Tensor,
    traj_index: Tensor,
    num_traj: int,
    traj_advantages: Tensor,
    cfg: CorrectionConfig = CorrectionConfig(),
) -> Correction:
    """Per-token off-policy weights for the whole mini-batch (call before splitting into micro-batches).

    Args:
        lp_old: (N,) π_old logprobs (trainer recompute at the start of the step).
        lp_mu: (N,) behaviour logprobs from the rollout engine (filler at observation tokens).
        loss_mask: (N,) 1 on action tokens; nothing else is read.
        traj_index: (N,) trajectory number per token.
        num_traj: number of trajectories.
        traj_advantages: (num_traj,) A_i per trajectory (OPSM uses its sign).
        cfg: correction modes and thresholds.

    Returns:
        Correction with weights (N,) to pass as `policy_loss(..., weights=...)`, and metrics computed
        over the pre-rejection mask.
    """
    m = loss_mask.reshape(-1).bool()
    idx = traj_index.reshape(-1)
    log_w = masked(lp_old.reshape(-1) - lp_mu.reshape(-1), m)  # (N,), 0 off the mask
    tok_w, tok_keep = token_weights(log_w, m, cfg)
    decisions = trajectory_keep(log_w, m, idx, num_traj, traj_advantages.reshape(-1), cfg)
    traj_keep = torch.ones(num_traj, dtype=torch.bool, device=log_w.device)
    for keep in decisions.values():
        traj_keep &= keep
    keep_tok = tok_keep & traj_keep[idx]  # (N,)
    weights = masked(torch.where(keep_tok, tok_w, torch.zeros_like(tok_w)), m)

    n_tok = m.sum().double().clamp(min=1)  # counts stay on the device: metrics leave it once per step
    has = traj_count(m, idx, num_traj) > 0
    n_traj = has.sum().double().clamp(min=1)
    raw_w = torch.exp(log_w)
    changed = (tok_w != raw_w) & m if cfg.token != "none" else torch.zeros_like(m)  # w̃ ≠ w
    per_traj = traj_sum(changed.double(), idx, num_traj) / traj_count(m, idx, num_traj).clamp(min=1)
    metrics = {
        "mismatch/tis_clipfrac": changed.sum() / n_tok,
        "mismatch/tis_clipfrac_seq": masked(per_traj, has).sum() / n_traj,
        "mismatch/rs_masked_frac": (~keep_tok & m).sum() / n_tok,
        "mismatch/rs_masked_frac_traj": (~traj_keep & has).sum() / n_traj,
    }
    for mode, keep in decisions.items():
        metrics[f"mismatch/rs_masked_frac_traj_{mode}"] = (~keep & has).sum() / n_traj
    return Correction(weights=weights, token_keep=tok_keep, traj_keep=traj_keep, metrics=metrics)
