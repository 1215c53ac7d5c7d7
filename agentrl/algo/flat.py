"""Per-trajectory statistics over packed token rows.

The trainer packs trajectories into one flat token row per micro-batch. Every per-token tensor is 1-D (N,)
and comes with `traj_index` (N,), the trajectory number of each token (numbered over the whole
mini-batch), plus `num_traj`. A trajectory may be split into several segments, possibly in different
micro-batches; sums over `traj_index` span all of them (docs/algorithms.md §0, packed layout).

A padded (B, T) batch is the special case where token (b, t) has traj_index b, after flattening.
"""

from __future__ import annotations

import torch
from torch import Tensor


def masked(x: Tensor, mask: Tensor) -> Tensor:
    """`x` where mask is set, else 0; unlike `x * mask` a NaN/inf at a masked position cannot leak."""
    return torch.where(mask.bool(), x, torch.zeros((), dtype=x.dtype, device=x.device))


def traj_sum(x: Tensor, traj_index: Tensor, num_traj: int) -> Tensor:
    """Sum of a per-token tensor per trajectory: (N,) -> (num_traj,). Differentiable."""
    out = torch.zeros(num_traj, dtype=x.dtype, device=x.device)
    return out.index_add(0, traj_index.reshape(-1), x.reshape(-1))


def traj_count(mask: Tensor, traj_index: Tensor, num_traj: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """Number of masked-in tokens per trajectory, |y_i| = Σ_t m_{i,t}: (num_traj,)."""
    return traj_sum(mask.reshape(-1).to(dtype), traj_index, num_traj)


def traj_amax(x: Tensor, mask: Tensor, traj_index: Tensor, num_traj: int) -> Tensor:
    """Max over masked-in tokens per trajectory; -inf for trajectories without any. (num_traj,)."""
    fill = torch.full((), float("-inf"), dtype=x.dtype, device=x.device)
    vals = torch.where(mask.reshape(-1).bool(), x.reshape(-1), fill)
    out = torch.full((num_traj,), float("-inf"), dtype=x.dtype, device=x.device)
    return out.scatter_reduce(0, traj_index.reshape(-1), vals, reduce="amax", include_self=True)


def traj_amin(x: Tensor, mask: Tensor, traj_index: Tensor, num_traj: int) -> Tensor:
    """Min over masked-in tokens per trajectory; +inf for trajectories without any. (num_traj,)."""
    return -traj_amax(-x, mask, traj_index, num_traj)


def broadcast_to_tokens(traj_values: Tensor, traj_index: Tensor) -> Tensor:
    """Per-trajectory values (num_traj,) -> per-token (N,), e.g. A_{i,t} = A_i (then masked by m)."""
    return traj_values[traj_index.reshape(-1)]


def group_stats(values: Tensor, group_index: Tensor, num_groups: int | None = None) -> tuple[Tensor, ...]:
    """Per-group size, mean, unbiased and population std, and an 'all equal' flag, gathered per sample.

    Returns (n, mean, std_unbiased, std_population, all_equal), each (num_samples,). Groups of size 1 get
    std_unbiased 0 (no NaN); `all_equal` uses max == min so it is exact despite rounding in the mean.
    """
    group_index = group_index.reshape(-1)
    g = int(group_index.max()) + 1 if num_groups is None else num_groups
    dt = values.dtype
    n = torch.zeros(g, dtype=dt, device=values.device).index_add(0, group_index, torch.ones_like(values))
    mean = torch.zeros(g, dtype=dt, device=values.device).index_add(0, group_index, values) / n.clamp(min=1)
    centred = values - mean[group_index]  # (n_samples,)
    ss = torch.zeros(g, dtype=dt, device=values.device).index_add(0, group_index, centred * centred)
    std_u = torch.sqrt(ss / (n - 1).clamp(min=1))
    std_p = torch.sqrt(ss / n.clamp(min=1))
    hi = torch.full((g,), float("-inf"), dtype=dt, device=values.device).scatter_reduce(
        0, group_index, values, reduce="amax"
    )
    lo = torch.full((g,), float("inf"), dtype=dt, device=values.device).scatter_reduce(
        0, group_index, values, reduce="amin"
    )
    all_equal = hi == lo
    return (n[group_index], mean[group_index], std_u[group_index], std_p[group_index], all_equal[group_index])
