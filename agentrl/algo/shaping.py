"""Reward shaping and group filtering before advantages: DAPO overlong shaping and dynamic sampling (§5)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from agentrl.algo.flat import group_stats


def overlong_penalty(lengths: Tensor, *, max_len: float, cache_len: float, floor: bool = True) -> Tensor:
    """DAPO overlong reward shaping R_len(|y|), added to the reward (arXiv 2503.14476, §5).

    With L_exp = max_len − cache_len: 0 if |y| ≤ L_exp; (L_exp − |y|)/cache_len if L_exp < |y| ≤ max_len;
    −1 if |y| > max_len (the paper's floor). `floor=False` gives verl/AReaL's linear form without the floor.

    Args:
        lengths: (n,) trajectory lengths |y_i| (action tokens over all segments).
        max_len: L_max.
        cache_len: L_cache, the soft-penalty interval (0 < cache_len ≤ max_len).
        floor: clamp at −1 beyond max_len, as the paper does.

    Returns:
        (n,) penalties in [−1, 0] (unbounded below without the floor).
    """
    if not 0 < cache_len <= max_len:
        raise ValueError(f"overlong shaping needs 0 < cache_len <= max_len, got cache_len={cache_len}, max_len={max_len}")
    expected = max_len - cache_len
    lengths = lengths if lengths.is_floating_point() else lengths.to(torch.float64)
    pen = torch.clamp((expected - lengths) / cache_len, max=0.0)  # (n,)
    if floor:
        pen = torch.where(lengths > max_len, torch.full_like(pen, -1.0), pen)
    return pen


@dataclass(frozen=True)
class GroupFilter:
    """Result of the dynamic-sampling filter."""

    keep_group: Tensor
    """(num_groups,) bool: group is kept for training."""
    keep: Tensor
    """(n,) bool: trajectory is kept (its group is kept)."""
    metrics: dict[str, float]
    """rollout/zero_std_count_{r} per dropped reward value r, and rollout/zero_std_frac."""


def dynamic_sampling_filter(
    rewards: Tensor, group_index: Tensor, *, keep_singletons: bool = True, tol: float = 0.0
) -> GroupFilter:
    """DAPO dynamic sampling: keep a group iff its rewards are not all equal (population std > tol).

    verl's recipe keeps a group iff `np.std > 0` or it has size 1 (`keep_singletons=True`, default); slime
    drops singletons (std of one element is NaN, so `> 1e-6` is False). Every dropped group counts under
    `rollout/zero_std_count_{r}`, r its (common) reward formatted as a float, e.g. `zero_std_count_1.0` (§9).

    Args:
        rewards: (n,) per-trajectory rewards.
        group_index: (n,) group number per trajectory (0..G-1).
        keep_singletons: keep groups of size 1 (verl) or drop them (slime).
        tol: a group with population std ≤ tol is dropped; at 0 the test is exact (max == min).

    Returns:
        GroupFilter with per-group and per-trajectory keep flags and counts.
    """
    group_index = group_index.reshape(-1)
    num_groups = int(group_index.max()) + 1 if group_index.numel() else 0
    n, _, _, std_p, all_equal = group_stats(rewards.double(), group_index, num_groups)
    zero = all_equal | (std_p <= tol)
    if keep_singletons:
        zero = zero & (n > 1)
    keep = ~zero  # (n,)
    keep_group = torch.ones(num_groups, dtype=torch.bool, device=rewards.device)
    keep_group[group_index[~keep]] = False
    metrics: dict[str, float] = {}
    for g in torch.nonzero(~keep_group).flatten().tolist():
        r = float(rewards[group_index == g][0])
        key = f"rollout/zero_std_count_{r}"
        metrics[key] = metrics.get(key, 0.0) + 1.0
    metrics["rollout/zero_std_frac"] = float((~keep).double().mean()) if keep.numel() else 0.0
    return GroupFilter(keep_group=keep_group, keep=keep, metrics=metrics)
