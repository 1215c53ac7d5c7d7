"""The learning signal of a step's groups: task success per trajectory, and where the advantage mass falls.

GRPO learns from a group only through the spread of its rewards. A shaped reward (format term, partial test
credit) can vary inside a group whose members all failed the task, e.g. one unparsable turn among four failed
fixes: rewards {0.2, 0.2, 0.2, 0.133} get GRPO advantages {+0.5, +0.5, +0.5, −1.5}, the same size as a group in
which one member solved the task. DAPO filters on accuracy, not on reward, and the expected improvement of a
step is bounded by the variance of task success (Bae et al. 2025). So the dynamic-sampling filter can run on
*success* (rollout.dynamic_sampling_on=success), and these metrics say how much of a step's signal is success.

Success of one trajectory (`success_of`): the first of reward_info's SUCCESS_KEYS that the env reports
("success", then "resolved" as swe_lite/swe_real write it, then "correct" as calc writes it), as 0.0 or 1.0.
An env that reports none of them has no notion of success apart from its reward, so its reward stands in:
filtering on success is then filtering on reward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

SUCCESS_KEYS = ("success", "resolved", "correct")
"""reward_info keys read as task success, in order (the env contract's generic key, SWE's, calc's)."""


def success_of(info: Mapping[str, Any] | None, reward: float) -> float:
    """Task success of one trajectory: 1.0/0.0 from the first SUCCESS_KEYS entry of `info`, else `reward`."""
    for key in SUCCESS_KEYS:
        if info and key in info and info[key] is not None:
            return 1.0 if bool(info[key]) else 0.0
    return float(reward)


def has_success(info: Mapping[str, Any] | None) -> bool:
    """True if `info` reports task success under one of SUCCESS_KEYS (else success falls back to the reward)."""
    return bool(info) and any(info.get(k) is not None for k in SUCCESS_KEYS)


def varies(values: Tensor, group_index: Tensor, num_groups: int) -> Tensor:
    """(num_groups,) bool: the group's values are not all equal (a group of one does not vary)."""
    group_index = group_index.reshape(-1).long()
    values = values.double().reshape(-1)
    hi = torch.full((num_groups,), float("-inf"), dtype=torch.float64, device=values.device)
    lo = torch.full((num_groups,), float("inf"), dtype=torch.float64, device=values.device)
    hi = hi.scatter_reduce(0, group_index, values, reduce="amax")
    lo = lo.scatter_reduce(0, group_index, values, reduce="amin")
    return hi > lo  # (num_groups,); a group of one, or an empty one, has hi ≤ lo


def signal_metrics(success: Tensor, group_index: Tensor, advantages: Tensor | None = None, *,
                   trained: Tensor | None = None) -> dict[str, float]:
    """Success-signal metrics of one step, over trajectories grouped by `group_index` (0..G−1):

    - `rollout/mixed_success_share`: share of the groups whose members' success differs (some solved, some not);
    - `rollout/flat_success_adv_share`: share of Σ|A| over the trained trajectories (`trained`, default all) that
      falls in groups whose success does not vary, i.e. advantage that only format or shaping noise produced
      (0 when Σ|A| is 0; absent without `advantages`).
    """
    group_index = group_index.reshape(-1).long()
    num_groups = int(group_index.max()) + 1 if group_index.numel() else 0
    mixed = varies(success, group_index, num_groups)  # (num_groups,)
    out = {"rollout/mixed_success_share": float(mixed.double().mean()) if num_groups else 0.0}
    if advantages is not None:
        keep = torch.ones_like(group_index, dtype=torch.bool) if trained is None else trained.reshape(-1).bool()
        mass = advantages.double().abs() * keep  # (n,)
        total = float(mass.sum())
        flat = float((mass * ~mixed[group_index]).sum()) if num_groups else 0.0
        out["rollout/flat_success_adv_share"] = flat / total if total > 0 else 0.0
    return out


def group_ids(keys: Sequence[str], device: torch.device | str = "cpu") -> Tensor:
    """(n,) long group numbers 0..G−1 for per-trajectory group keys, in order of first appearance."""
    seen: dict[str, int] = {}
    return torch.tensor([seen.setdefault(k, len(seen)) for k in keys], dtype=torch.long, device=device)
