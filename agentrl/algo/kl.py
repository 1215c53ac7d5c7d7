"""KL-to-reference estimators per token (Schulman, "Approximating KL divergence"; docs/algorithms.md §7).

δ = lp_θ − lp_ref with tokens sampled from π_θ (or μ ≈ π_θ). Used as a loss term `+ β·reduce(k)` by
`losses.policy_loss` (verl use_kl_loss), reduced with the same reduction as the policy loss.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def kl_k1(lp_theta: Tensor, lp_ref: Tensor) -> Tensor:
    """k1 = δ: unbiased for KL(π_θ‖π_ref) but can be negative per token (slime default k1)."""
    return lp_theta - lp_ref


def kl_k2(lp_theta: Tensor, lp_ref: Tensor) -> Tensor:
    """k2 = ½δ²: biased value, but its gradient is the gradient of the true reverse KL."""
    return 0.5 * (lp_theta - lp_ref) ** 2


def kl_k3(lp_theta: Tensor, lp_ref: Tensor) -> Tensor:
    """k3 = exp(−δ) + δ − 1 ≥ 0, low variance (verl low_var_kl: −δ clamped to ±20, result to [−10, 10])."""
    neg = (lp_ref - lp_theta).clamp(-20.0, 20.0)
    return (torch.exp(neg) - neg - 1.0).clamp(-10.0, 10.0)


def kl_abs(lp_theta: Tensor, lp_ref: Tensor) -> Tensor:
    """|δ| (verl "abs")."""
    return (lp_theta - lp_ref).abs()


KL_ESTIMATORS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "k1": kl_k1,
    "k2": kl_k2,
    "k3": kl_k3,
    "abs": kl_abs,
}


def kl_estimate(lp_theta: Tensor, lp_ref: Tensor, kind: str = "k3") -> Tensor:
    """Per-token KL estimate by name ("k1", "k2", "k3", "abs"); same shape as the inputs."""
    if kind not in KL_ESTIMATORS:
        raise ValueError(f"unknown KL estimator {kind!r}; choose one of {sorted(KL_ESTIMATORS)}")
    return KL_ESTIMATORS[kind](lp_theta, lp_ref)
