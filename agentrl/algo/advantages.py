"""Outcome-reward advantage estimators (docs/algorithms.md §2).

Each estimator maps per-trajectory rewards R (n,) and a group index (n,) (trajectories of the same task
form a group) to per-trajectory advantages A (n,); the loss broadcasts A_i to the action tokens of
trajectory i (`packed.broadcast_to_tokens`). All share one signature and are looked up by name in
`ADVANTAGES`, so the config picks one string and the loop names no algorithm.

Two rules shared by every estimator:
- **Zero-std groups** (all rewards equal, tested exactly with max == min) give A = 0 for every member:
  they carry no policy gradient (§2).
- **Groups of size 1** have no peers: their group baseline is 0 and their group std is 1, so a singleton
  trains on its raw reward (GRPO gives R/(1+ε), verl's "mean 0, std 1"; Dr.GRPO and RLOO give R, matching
  verl's `rloo`; batch-std gives R/(std_batch+ε)). Set `AdvantageConfig.singleton="zero"` to give singletons A = 0 instead (verl's
  `rloo_vectorized`). A singleton is not a zero-std group for this purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import torch
from torch import Tensor

from agentrl.algo import defaults as D
from agentrl.algo.flat import group_stats


@dataclass(frozen=True)
class AdvantageConfig:
    """Hyperparameters of the advantage estimators."""

    eps: float = D.ADV_EPS
    """ε in (std + ε); verl/slime use 1e-6, TRL 1e-4, AReaL 1e-5 (§2)."""
    alpha: float = D.ADV_ALPHA
    """Exponent of the std normalizer for "alpha_norm": 1 is GRPO, 0 is Dr.GRPO."""
    unbiased: bool = True
    """Bessel-corrected std (torch.std), as verl/slime/TRL/AReaL; False gives the population std."""
    singleton: Literal["raw", "zero"] = "raw"
    """Size-1 groups: "raw" = baseline 0, scale 1 (train on R); "zero" = advantage 0."""
    whiten_eps: float = 1e-8
    """ε inside sqrt(var + ε) of REINFORCE++-baseline's token whitening (verl masked_whiten)."""


def _finish(adv: Tensor, n: Tensor, all_equal: Tensor, rewards: Tensor, raw: Tensor, cfg: AdvantageConfig) -> Tensor:
    """Apply the two shared rules: zero-std groups -> 0, singletons -> `raw` (or 0)."""
    single = n == 1
    adv = torch.where(all_equal & ~single, torch.zeros_like(adv), adv)
    fill = raw if cfg.singleton == "raw" else torch.zeros_like(rewards)
    return torch.where(single, fill, adv)


def alpha_norm(
    rewards: Tensor, group_index: Tensor, cfg: AdvantageConfig = AdvantageConfig(), **_: object
) -> Tensor:
    """α-normalised group advantage `A = (R − mean_g) / (std_g + ε)^α` (project knob, §2).

    Args:
        rewards: (n,) outcome reward per trajectory.
        group_index: (n,) LongTensor, group number of each trajectory.
        cfg: uses eps, alpha, unbiased, singleton.

    Returns:
        (n,) advantages. α=1 is GRPO, α=0 is Dr.GRPO.
    """
    n, mean, std_u, std_p, all_equal = group_stats(rewards, group_index)
    std = std_u if cfg.unbiased else std_p
    scale = (std + cfg.eps) ** cfg.alpha  # (n,)
    raw = rewards / (1.0 + cfg.eps) ** cfg.alpha
    return _finish((rewards - mean) / scale, n, all_equal, rewards, raw, cfg)


def grpo(rewards: Tensor, group_index: Tensor, cfg: AdvantageConfig = AdvantageConfig(), **_: object) -> Tensor:
    """GRPO: `A = (R − mean_g) / (std_g + ε)`, unbiased std (verl `compute_grpo_outcome_advantage`, §2)."""
    return alpha_norm(rewards, group_index, _with(cfg, alpha=1.0))


def dr_grpo(rewards: Tensor, group_index: Tensor, cfg: AdvantageConfig = AdvantageConfig(), **_: object) -> Tensor:
    """Dr.GRPO: `A = R − mean_g`, no std division (arXiv 2503.20783; verl norm_adv_by_std_in_grpo=False)."""
    return alpha_norm(rewards, group_index, _with(cfg, alpha=0.0))


def batch_std(rewards: Tensor, group_index: Tensor, cfg: AdvantageConfig = AdvantageConfig(), **_: object) -> Tensor:
    """Group mean, batch std: `A = (R − mean_g) / (std_batch + ε)` (TRL scale_rewards="batch", §2)."""
    n, mean, _, _, all_equal = group_stats(rewards, group_index)
    std = rewards.std(unbiased=cfg.unbiased) if rewards.numel() > 1 else rewards.new_zeros(())
    raw = rewards / (std + cfg.eps)
    return _finish((rewards - mean) / (std + cfg.eps), n, all_equal, rewards, raw, cfg)


def rloo(rewards: Tensor, group_index: Tensor, cfg: AdvantageConfig = AdvantageConfig(), **_: object) -> Tensor:
    """RLOO: `A_i = R_i − mean_{j≠i} R_j = n/(n−1)·(R_i − mean_g)` (arXiv 2402.14740; verl rloo, §2)."""
    n, mean, _, _, all_equal = group_stats(rewards, group_index)
    adv = n / (n - 1).clamp(min=1) * (rewards - mean)
    return _finish(adv, n, all_equal, rewards, rewards, cfg)


def reinforce_pp_baseline(
    rewards: Tensor,
    group_index: Tensor,
    cfg: AdvantageConfig = AdvantageConfig(),
    *,
    action_lengths: Tensor | None = None,
    **_: object,
) -> Tensor:
    """REINFORCE++-baseline: `a_i = R_i − mean_g`, then whitening over all action tokens of the batch.

    Whitening is token-weighted: `A = (a − μ_tok) / sqrt(var_tok + 1e-8)` with the unbiased token variance
    (verl `compute_reinforce_plus_plus_baseline_outcome_advantage` + `masked_whiten`, §2). Because a_i is
    constant over trajectory i, the token statistics follow from a_i and |y_i| alone.

    Args:
        rewards: (n,) outcome reward per trajectory.
        group_index: (n,) group number of each trajectory.
        cfg: uses whiten_eps and singleton.
        action_lengths: (n,) |y_i|, action tokens per trajectory (all segments). Required.

    Returns:
        (n,) advantages, one per trajectory (the whitened value of each of its tokens).
    """
    if action_lengths is None:
        raise ValueError("reinforce_pp_baseline needs action_lengths (|y_i| per trajectory) for token whitening")
    n, mean, _, _, all_equal = group_stats(rewards, group_index)
    base = _finish(rewards - mean, n, all_equal, rewards, rewards, cfg)  # (n,)
    lens = action_lengths.to(rewards.dtype)
    total = lens.sum()
    mu = (lens * base).sum() / total.clamp(min=1)
    var = (lens * (base - mu) ** 2).sum() / (total - 1).clamp(min=1)
    return (base - mu) / torch.sqrt(var + cfg.whiten_eps)


def _with(cfg: AdvantageConfig, **changes: object) -> AdvantageConfig:
    """A copy of a frozen config with some fields changed."""
    return replace(cfg, **changes)  # type: ignore[arg-type]


AdvantageFn = Callable[..., Tensor]

ADVANTAGES: dict[str, AdvantageFn] = {
    "grpo": grpo,
    "dr_grpo": dr_grpo,
    "alpha_norm": alpha_norm,
    "batch_std": batch_std,
    "rloo": rloo,
    "reinforce_pp_baseline": reinforce_pp_baseline,
}
"""Estimators by config name; all take (rewards, group_index, cfg, *, action_lengths=None)."""


def compute_advantages(
    name: str,
    rewards: Tensor,
    group_index: Tensor,
    cfg: AdvantageConfig = AdvantageConfig(),
    *,
    action_lengths: Tensor | None = None,
) -> Tensor:
    """Per-trajectory advantages with the estimator registered as `name` in ADVANTAGES.

    Args:
        name: one of ADVANTAGES ("grpo", "dr_grpo", "alpha_norm", "batch_std", "rloo", "reinforce_pp_baseline").
        rewards: (n,) outcome reward per trajectory (after shaping).
        group_index: (n,) LongTensor group number per trajectory.
        cfg: estimator hyperparameters.
        action_lengths: (n,) action tokens per trajectory; only REINFORCE++-baseline needs it.

    Returns:
        (n,) advantages.
    """
    if name not in ADVANTAGES:
        raise ValueError(f"unknown advantage estimator {name!r}; choose one of {sorted(ADVANTAGES)}")
    return ADVANTAGES[name](rewards, group_index, cfg, action_lengths=action_lengths)
