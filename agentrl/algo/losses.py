"""Policy losses (PPO-clip, GSPO, CISPO), reductions, and the single loss entry point (§3, §4).

Objective. Per action token t of trajectory i (m_{i,t} = 1), with r_t = π_θ/π_old and a detached
off-policy weight w̃_t from `corrections.py` (1 if none), the loss is `reduce(w̃_t · ℓ_t(r_t, A_i))`
(+ β·reduce(KL) against a reference policy). The reduction's normalizer comes from `loss_normalizer`,
computed once over the whole mini-batch **before** any rejection, so that (a) summing the losses of the
micro-batches gives the full-batch loss and gradient exactly, and (b) rejected tokens keep the original
denominator (AReaL `loss_mask_count`, slime `rollout_mask_sums`, §4).

Adding a loss is one function with the `LossFn` signature plus one `LossSpec` line in `LOSS_SPECS`, which
declares what the loss needs from the update (a fixed reduction, the trajectory-wide ratio, dual clip), so
the update reads the spec instead of branching on loss names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor

from agentrl.algo import defaults as D
from agentrl.algo.flat import masked, traj_count, traj_sum
from agentrl.algo.kl import kl_estimate


@dataclass(frozen=True)
class LossConfig:
    """Hyperparameters of the policy losses; defaults are docs/algorithms.md §11 (DAPO clip-higher + dual-clip).

    eps_low/eps_high default to PPO's preset (per-loss presets live in LOSS_SPECS); every default is read from
    agentrl.algo.defaults, which the run config's algo section reads too."""

    eps_low: float = D.EPS_LOW
    """Lower clip range: ratio ≥ 1 − eps_low. CISPO's canonical eps_low = 1 (no lower bound)."""
    eps_high: float = D.EPS_HIGH
    """Upper clip range: ratio ≤ 1 + eps_high (clip-higher, DAPO 0.28). CISPO uses it as the weight cap − 1."""
    dual_clip_c: float | None = D.DUAL_CLIP_C
    """Dual-clip c > 1 for A < 0 (verl clip_ratio_c = 3); None disables it. PPO only."""
    log_ratio_clamp: float = 20.0
    """|lp_θ − lp_old| is clamped here before exp (verl, slime)."""
    gspo_log_ratio_max: float = 10.0
    """GSPO clamps log s_i ≤ this (verl)."""
    dppo_threshold: float = 0.2
    """DPPO: probability-difference trust region (prime-rl 0.2)."""
    dppo_kl_tau: float = 1e-3
    """DPPO: coefficient of the (log ρ)² term (prime-rl kl_tau)."""
    kl_coef: float = D.KL_COEF
    """β of the KL-to-reference loss term; 0 disables it (TRL beta=0; verl kl_loss_coef 0.001 when used)."""
    kl_estimator: str = D.KL_ESTIMATOR
    """KL estimator for the reference term: k1, k2, k3 (kl.py)."""

    @staticmethod
    def preset(name: str) -> LossConfig:
        """Paper defaults per loss: PPO/DAPO (0.2, 0.28, c=3), GSPO (3e-4, 4e-4), CISPO (no lower bound, cap 5)."""
        return LOSS_SPECS[name].preset


@dataclass(frozen=True)
class LossNormalizer:
    """Mini-batch-wide denominators of the reductions, fixed before micro-batching and rejection."""

    num_tokens: float
    """Σ m over the whole mini-batch (token-mean denominator)."""
    num_seqs: float
    """B: trajectories with |y_i| > 0 in the whole mini-batch."""
    traj_lengths: Tensor
    """(num_traj,) |y_i| over all segments of trajectory i."""
    loss_scale_factor: float | None = None
    """Constant of seq-mean-token-sum-norm (Dr.GRPO), usually L_max; TRL dr_grpo uses B·L_max."""

    @property
    def num_traj(self) -> int:
        """Size of the trajectory numbering (including trajectories without action tokens)."""
        return int(self.traj_lengths.numel())


def loss_normalizer(
    loss_mask: Tensor, traj_index: Tensor, num_traj: int, *, loss_scale_factor: float | None = None
) -> LossNormalizer:
    """Denominators of every reduction, computed over the WHOLE mini-batch before rejection masks.

    Call once per mini-batch with its full (pre-rejection) loss mask, then pass the result to each
    micro-batch's `policy_loss`. With data parallelism, all-reduce `num_tokens`/`num_seqs` first (and
    scale the loss by the world size) so DP gradient averaging recovers the exact mean (verl agg_loss, §4).

    Args:
        loss_mask: (N,) or (B, T) action-token mask of the whole mini-batch.
        traj_index: same shape, trajectory number per token (0..num_traj-1).
        num_traj: number of trajectories in the mini-batch.
        loss_scale_factor: constant for "seq-mean-token-sum-norm" (e.g. L_max).

    Returns:
        LossNormalizer.
    """
    lengths = traj_count(loss_mask.reshape(-1), traj_index.reshape(-1), num_traj)  # (num_traj,)
    return LossNormalizer(
        num_tokens=float(lengths.sum()),
        num_seqs=float((lengths > 0).sum()),
        traj_lengths=lengths,
        loss_scale_factor=loss_scale_factor,
    )


# ----------------------------------------------------------------------------------------- reductions


def token_mean(loss: Tensor, traj_index: Tensor, norm: LossNormalizer) -> Tensor:
    """Σ m·ℓ / Σ m over the mini-batch (DAPO; verl default). `loss` is already 0 off the mask."""
    return loss.sum() / max(norm.num_tokens, 1.0)


def seq_mean_token_mean(loss: Tensor, traj_index: Tensor, norm: LossNormalizer) -> Tensor:
    """(1/B) Σ_i Σ_t m·ℓ / |y_i| (original GRPO). Length-biased: long trajectories weigh less per token."""
    per_tok = norm.traj_lengths.to(loss)[traj_index].clamp(min=1)  # (N,)
    return (loss / per_tok).sum() / max(norm.num_seqs, 1.0)


def seq_mean_token_sum(loss: Tensor, traj_index: Tensor, norm: LossNormalizer) -> Tensor:
    """(1/B) Σ_i Σ_t m·ℓ."""
    return loss.sum() / max(norm.num_seqs, 1.0)


def seq_mean_token_sum_norm(loss: Tensor, traj_index: Tensor, norm: LossNormalizer) -> Tensor:
    """Σ m·ℓ / loss_scale_factor, a constant (Dr.GRPO; no 1/B)."""
    if norm.loss_scale_factor is None:
        raise ValueError("reduction seq-mean-token-sum-norm needs loss_normalizer(..., loss_scale_factor=L_max)")
    return loss.sum() / norm.loss_scale_factor


Reduction = Callable[[Tensor, Tensor, LossNormalizer], Tensor]

REDUCTIONS: dict[str, Reduction] = {
    "token-mean": token_mean,
    "seq-mean-token-mean": seq_mean_token_mean,
    "seq-mean-token-sum": seq_mean_token_sum,
    "seq-mean-token-sum-norm": seq_mean_token_sum_norm,
}


# ------------------------------------------------------------------------------------- policy losses


@dataclass(frozen=True)
class TokenLoss:
    """Per-token loss of one policy-loss variant, before weights and reduction."""

    loss: Tensor
    """(N,) ℓ_t, differentiable w.r.t. lp_θ."""
    flags: dict[str, Tensor] = field(default_factory=dict)
    """metric name -> (N,) bool indicator, reported as its token-mean over the pre-rejection mask."""


class LossFn(Protocol):
    """Signature of a policy loss: sanitized flat per-token inputs -> TokenLoss."""

    def __call__(
        self,
        lp_theta: Tensor,
        lp_old: Tensor,
        advantages: Tensor,
        mask: Tensor,
        *,
        traj_index: Tensor,
        norm: LossNormalizer,
        cfg: LossConfig,
        traj_log_ratio: Tensor | None,
    ) -> TokenLoss: ...


def _ratio(lp_theta: Tensor, lp_old: Tensor, cfg: LossConfig) -> Tensor:
    """r = exp(clamp(lp_θ − lp_old, ±log_ratio_clamp))."""
    return torch.exp((lp_theta - lp_old).clamp(-cfg.log_ratio_clamp, cfg.log_ratio_clamp))


def ppo_clip(lp_theta, lp_old, advantages, mask, *, traj_index, norm, cfg, traj_log_ratio=None) -> TokenLoss:
    """PPO-clip with clip-higher and dual-clip (verl compute_policy_loss_vanilla, §3).

    ℓ1 = −A·r, ℓ2 = −A·clip(r, 1−ε_low, 1+ε_high), ℓc = max(ℓ1, ℓ2); for A < 0, ℓ = min(ℓc, −A·c).
    Gradient −A·r where unclipped, 0 where clipped or dual-clipped. Pick it as the default (§11).
    """
    r = _ratio(lp_theta, lp_old, cfg)  # (N,)
    a = advantages
    l1 = -a * r
    l2 = -a * r.clamp(1.0 - cfg.eps_low, 1.0 + cfg.eps_high)
    lc = torch.maximum(l1, l2)
    flags = {
        "actor/pg_clipfrac": l2 > l1,
        "actor/clip_ratio_low": (r < 1.0 - cfg.eps_low) & (a < 0),  # TRL clip_ratio/low_mean
        "actor/clip_ratio_high": (r > 1.0 + cfg.eps_high) & (a > 0),  # TRL clip_ratio/high_mean
    }
    loss = lc
    if cfg.dual_clip_c is not None:
        if cfg.dual_clip_c <= 1.0:
            raise ValueError(f"dual_clip_c must be > 1 (verl uses 3.0), got {cfg.dual_clip_c}")
        dual = -a * cfg.dual_clip_c
        flags["actor/pg_clipfrac_lower"] = (a < 0) & (lc > dual)
        loss = torch.where(a < 0, torch.minimum(lc, dual), lc)
    return TokenLoss(loss=loss, flags=flags)


def gspo(lp_theta, lp_old, advantages, mask, *, traj_index, norm, cfg, traj_log_ratio=None) -> TokenLoss:
    """GSPO-token (arXiv 2507.18071; verl compute_policy_loss_gspo, §3): one ratio per whole trajectory.

    s_i = exp(Σ_t m·(lp_θ − lp_old) / |y_i|) over all segments and turns; log s_{i,t} = sg(log s_i) +
    lp_θ,t − sg(lp_θ,t), so the value is s_i and ∂/∂lp_θ,t = s_i. ℓ = max(−A·s, −A·clip(s, 1−ε_low,
    1+ε_high)); reduction seq-mean-token-mean. If a trajectory's segments are split over micro-batches,
    pass `traj_log_ratio` (num_traj,) = the mini-batch-wide mean log-ratio per trajectory, computed without
    gradient; otherwise s_i is summed over the tokens in this call. Pick it for long sequences / MoE.
    """
    if traj_log_ratio is None:
        lengths = norm.traj_lengths.to(lp_theta).clamp(min=1)
        traj_log_ratio = traj_sum(masked(lp_theta - lp_old, mask), traj_index, norm.num_traj) / lengths
    log_s = traj_log_ratio.detach().to(lp_theta).clamp(max=cfg.gspo_log_ratio_max)  # (num_traj,)
    s = torch.exp(log_s[traj_index] + lp_theta - lp_theta.detach())  # (N,)
    l1 = -advantages * s
    l2 = -advantages * s.clamp(1.0 - cfg.eps_low, 1.0 + cfg.eps_high)
    return TokenLoss(loss=torch.maximum(l1, l2), flags={"actor/pg_clipfrac": l2 > l1})


def cispo(lp_theta, lp_old, advantages, mask, *, traj_index, norm, cfg, traj_log_ratio=None) -> TokenLoss:
    """CISPO (MiniMax-M1, arXiv 2506.13585; §3): ℓ = −sg(clip(r, 1−ε_low, 1+ε_high))·A·lp_θ.

    Clipped tokens still pass the gradient −ŵ·A (unlike PPO, which drops them). Canonical form is
    one-sided: eps_low = 1 (no lower bound) and a cap 1+eps_high (slime 5.0). Use token-mean.
    """
    r = _ratio(lp_theta, lp_old, cfg).detach()
    w_hat = r.clamp(1.0 - cfg.eps_low, 1.0 + cfg.eps_high)
    return TokenLoss(loss=-w_hat * advantages * lp_theta, flags={"actor/pg_clipfrac": w_hat != r})


def dppo(lp_theta, lp_old, advantages, mask, *, traj_index, norm, cfg, traj_log_ratio=None) -> TokenLoss:
    """prime-rl DPPO+KL (§3), bypass mode: call with lp_old = lp_μ so that r = ρ = π_θ/μ.

    A token is masked if A > 0 ∧ p_θ − p_old > τ or A < 0 ∧ p_θ − p_old < −τ (probability differences,
    τ = cfg.dppo_threshold); ℓ = −keep·A·ρ + kl_tau·(log ρ)², gradient through ρ. For runs that skip the
    π_old recompute.
    """
    log_r = (lp_theta - lp_old).clamp(-cfg.log_ratio_clamp, cfg.log_ratio_clamp)
    dp = (torch.exp(lp_theta) - torch.exp(lp_old)).detach()
    drop = ((advantages > 0) & (dp > cfg.dppo_threshold)) | ((advantages < 0) & (dp < -cfg.dppo_threshold))
    loss = torch.where(drop, torch.zeros_like(log_r), -advantages * torch.exp(log_r)) + cfg.dppo_kl_tau * log_r**2
    return TokenLoss(loss=loss, flags={"actor/pg_clipfrac": drop})


@dataclass(frozen=True)
class LossSpec:
    """A policy loss and what it needs from the update, declared once (the update reads these fields)."""

    fn: LossFn
    preset: LossConfig
    """Paper defaults of the loss (eps_low/eps_high used when algo.eps_low/eps_high are unset)."""
    reduction: str | None = None
    """The reduction the loss requires (GSPO: seq-mean-token-mean), or None for any (default token-mean)."""
    trajectory_ratio: bool = False
    """Needs the trajectory-wide mean log-ratio Σ m·(lp_θ − lp_old)/|y_i| under the current π_θ (GSPO)."""
    dual_clip: bool = False
    """Honours algo.dual_clip_c (PPO-clip only)."""


LOSS_SPECS: dict[str, LossSpec] = {
    "ppo": LossSpec(ppo_clip, LossConfig(), dual_clip=True),
    "gspo": LossSpec(gspo, LossConfig(eps_low=3e-4, eps_high=4e-4, dual_clip_c=None),
                     reduction="seq-mean-token-mean", trajectory_ratio=True),
    "cispo": LossSpec(cispo, LossConfig(eps_low=1.0, eps_high=4.0, dual_clip_c=None)),
    "dppo": LossSpec(dppo, LossConfig(dual_clip_c=None)),
}


def policy_loss(
    name: str,
    lp_theta: Tensor,
    lp_old: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    *,
    traj_index: Tensor,
    norm: LossNormalizer,
    cfg: LossConfig = LossConfig(),
    reduction: str | None = None,
    weights: Tensor | None = None,
    lp_ref: Tensor | None = None,
    traj_log_ratio: Tensor | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """The loss of one micro-batch: `reduce(w̃·ℓ) + β·reduce(KL_ref)`, plus its metrics.

    All per-token inputs are (N,) packed (or (B, T), flattened here) and aligned: position t holds the
    logprob of token t under each policy. Values at positions with loss_mask 0 are never read (they may
    be NaN or inf), and lp_θ gets an exact zero gradient there.

    Args:
        name: policy loss in LOSS_SPECS ("ppo", "gspo", "cispo", "dppo", or one registered there).
        lp_theta: (N,) logprobs under π_θ (requires grad).
        lp_old: (N,) logprobs under π_old (recomputed at the start of the step).
        advantages: (N,) per-token advantages A_i broadcast to trajectory i's tokens.
        loss_mask: (N,) 1 on model-generated tokens of all turns.
        traj_index: (N,) trajectory number (mini-batch-wide numbering, as in `norm`).
        norm: `loss_normalizer(...)` of the whole mini-batch.
        cfg: loss hyperparameters.
        reduction: name in REDUCTIONS; None means the loss's required one or "token-mean".
        weights: (N,) off-policy weights w̃ from `corrections.correction_weights` (detached here);
            0 rejects a token while keeping it in the denominator.
        lp_ref: (N,) reference-policy logprobs, needed when cfg.kl_coef > 0.
        traj_log_ratio: GSPO only, see `gspo`.

    Returns:
        (loss, metrics). Metrics are detached 0-d tensors normalized by the mini-batch token count, so
        summing them over the micro-batches gives the mini-batch value (like the loss itself).
    """
    if name not in LOSS_SPECS:
        raise ValueError(f"unknown policy loss {name!r}; choose one of {sorted(LOSS_SPECS)}")
    m = loss_mask.reshape(-1).bool()  # (N,)
    idx = traj_index.reshape(-1)
    lp_t = masked(lp_theta.reshape(-1), m)
    lp_o = masked(lp_old.reshape(-1), m).detach()
    adv = masked(advantages.reshape(-1).to(lp_t.dtype), m).detach()
    spec = LOSS_SPECS[name]
    tl = spec.fn(lp_t, lp_o, adv, m, traj_index=idx, norm=norm, cfg=cfg, traj_log_ratio=traj_log_ratio)
    if reduction is None:
        reduction = spec.reduction or "token-mean"
    if spec.reduction is not None and reduction != spec.reduction:
        raise ValueError(f"policy loss {name!r} requires reduction {spec.reduction!r}, got {reduction!r}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"unknown reduction {reduction!r}; choose one of {sorted(REDUCTIONS)}")
    reduce = REDUCTIONS[reduction]
    per_tok = masked(tl.loss, m)
    if weights is not None:
        per_tok = per_tok * masked(weights.reshape(-1).to(per_tok.dtype), m).detach()
    pg_loss = reduce(per_tok, idx, norm)
    denom = max(norm.num_tokens, 1.0)
    metrics: dict[str, Tensor] = {"actor/pg_loss": pg_loss.detach()}
    for key, flag in tl.flags.items():
        metrics[key] = (flag & m).sum().to(lp_t.dtype) / denom
    metrics["actor/ppo_kl"] = masked(lp_o - lp_t, m).sum().detach() / denom
    loss = pg_loss
    if cfg.kl_coef > 0.0:
        if lp_ref is None:
            raise ValueError(f"kl_coef={cfg.kl_coef} needs lp_ref (reference-policy logprobs)")
        k = masked(kl_estimate(lp_t, masked(lp_ref.reshape(-1), m).detach(), cfg.kl_estimator), m)
        loss = loss + cfg.kl_coef * reduce(k, idx, norm)
        metrics["actor/ref_kl"] = k.sum().detach() / denom
    metrics["actor/loss"] = loss.detach()
    return loss, metrics
