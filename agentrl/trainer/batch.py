"""Packing trajectories into micro-batches by a token budget (no padding to the longest).

A mini-batch is the flat concatenation of every segment of every trajectory, aligned to *predicted* tokens:
position p of a segment carries the target x[p+1] with its loss mask, behaviour logprob and version; the
last position of each segment predicts nothing (mask 0). Micro-batches are contiguous slices of that flat
layout, so any per-token tensor computed over the whole mini-batch (π_old, correction weights) is sliced,
never recomputed.

A micro-batch's forward takes one right-padded row per segment and no attention mask, so attention never crosses
segments and takes the fused causal kernel (SDPA is_causal) at O(Σ L²) cost; the budget counts padded positions
(rows × longest row). One packed row with a block-diagonal mask would save the padding but cost O(T²) in the
whole micro-batch's length T.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from agentrl.trainer.prefix_plan import plan_shared_rows
from agentrl.types import Trajectory


@dataclass
class MiniBatch:
    """Flat per-token tensors of a whole mini-batch (N tokens) plus the segment layout."""

    input_ids: Tensor  # (N,) token at each position
    targets: Tensor  # (N,) next token (0 where none)
    loss_mask: Tensor  # (N,) 1.0 where the target was sampled by the policy
    behaviour_logprobs: Tensor  # (N,) μ logprob of the target (0.0 where mask 0)
    versions: Tensor  # (N,) policy version that sampled the target (-1 where mask 0)
    traj_index: Tensor  # (N,) trajectory number in this mini-batch
    advantages: Tensor  # (N,) the trajectory's advantage broadcast to its tokens
    segment_bounds: list[tuple[int, int]]  # [start, end) of every segment in flat positions
    num_trajectories: int

    @property
    def num_tokens(self) -> int:
        return int(self.input_ids.numel())


@dataclass
class MicroBatch:
    """One forward pass worth of segments: a contiguous slice [start, end) of the mini-batch."""

    start: int
    end: int
    input_ids: Tensor  # (R, L): one right-padded row per segment
    position_ids: Tensor  # (R, L) restart at 0 for every segment
    valid: Tensor  # (R, L) bool, True on real tokens; hidden[valid] is in flat order


def build_minibatch(trajectories: list[Trajectory], advantages: list[float] | list[list[float]]) -> MiniBatch:
    """Flatten trajectories (all segments) into a MiniBatch aligned to predicted tokens. `advantages` holds one
    float per trajectory (broadcast to its tokens), or one list per trajectory with an advantage per turn
    (turn-level credit: broadcast over that turn's action span)."""
    if len(trajectories) != len(advantages):
        raise ValueError(f"{len(trajectories)} trajectories but {len(advantages)} advantages")
    ids, tgt, mask, blp, ver, tix, adv, bounds = [], [], [], [], [], [], [], []
    for i, (traj, a) in enumerate(zip(trajectories, advantages, strict=True)):
        for k, seg in enumerate(traj.segments):
            n = len(seg.token_ids)
            if n == 0:
                continue
            start = len(ids)
            ids.extend(seg.token_ids)
            tgt.extend(seg.token_ids[1:] + [0])
            mask.extend(seg.loss_mask[1:] + [0])
            blp.extend(seg.behaviour_logprobs[1:] + [0.0])
            ver.extend(seg.versions[1:] + [-1])
            tix.extend([i] * n)
            adv.extend([float(a)] * n if isinstance(a, (int, float)) else _turn_spans(traj, k, n, a)[1:] + [0.0])
            bounds.append((start, start + n))
    return MiniBatch(
        input_ids=torch.tensor(ids, dtype=torch.long),
        targets=torch.tensor(tgt, dtype=torch.long),
        loss_mask=torch.tensor(mask, dtype=torch.float32),
        behaviour_logprobs=torch.tensor(blp, dtype=torch.float32),
        versions=torch.tensor(ver, dtype=torch.long),
        traj_index=torch.tensor(tix, dtype=torch.long),
        advantages=torch.tensor(adv, dtype=torch.float32),
        segment_bounds=bounds,
        num_trajectories=len(trajectories),
    )


def _turn_spans(traj: Trajectory, segment: int, n: int, turn_advantages: list[float]) -> list[float]:
    """Per-token advantages of one segment (by token offset): each turn's advantage over its action span, 0
    elsewhere; every sampled token must lie in some turn's span."""
    if len(turn_advantages) != len(traj.turns):
        raise ValueError(f"trajectory {traj.id}: {len(turn_advantages)} turn advantages for {len(traj.turns)} turns")
    out = [0.0] * n
    covered = [False] * n
    for turn, a in zip(traj.turns, turn_advantages, strict=True):
        if turn.segment == segment:
            s, e = turn.action_span
            out[s:e] = [float(a)] * (e - s)
            covered[s:e] = [True] * (e - s)
    seg = traj.segments[segment]
    if any(m and not c for m, c in zip(seg.loss_mask, covered, strict=True)):
        raise ValueError(f"trajectory {traj.id}: a sampled token of segment {segment} lies in no turn's action span")
    return out


def plan_rows(segment_bounds: list[tuple[int, int]], token_budget: int) -> list[tuple[int, int]]:
    """Greedy contiguous grouping of segments into padded row blocks of at most token_budget positions
    (rows × longest row); a segment longer than the budget gets a block of its own (segments are never split:
    attention needs the whole prefix)."""
    plans: list[tuple[int, int]] = []
    start = end = None
    rows = longest = 0
    for s, e in segment_bounds:
        if start is not None and (rows + 1) * max(longest, e - s) > token_budget:
            plans.append((start, end))
            start = None
        if start is None:
            start, rows, longest = s, 0, 0
        end, rows, longest = e, rows + 1, max(longest, e - s)
    if start is not None:
        plans.append((start, end))
    return plans


def microbatches(mb: MiniBatch, token_budget: int, *, share_prefix: bool = False) -> list[MicroBatch]:
    """Cut a MiniBatch into MicroBatches of right-padded rows.

    share_prefix: the rows' budget counts a prefix several rows share once, as the shared-prefix forward computes
    it (agentrl.trainer.prefix_plan.plan_shared_rows); pass it only when that forward will run."""
    if share_prefix:
        plans = plan_shared_rows(mb.input_ids, mb.segment_bounds, token_budget)
    else:
        plans = plan_rows(mb.segment_bounds, token_budget)
    return [_rows(mb, start, end) for start, end in plans]


def _segment_lengths(mb: MiniBatch, start: int, end: int) -> list[int]:
    return [e - s for s, e in mb.segment_bounds if s >= start and e <= end]


def _rows(mb: MiniBatch, start: int, end: int) -> MicroBatch:
    lengths = torch.tensor(_segment_lengths(mb, start, end))
    width = int(lengths.max())
    valid = torch.arange(width)[None, :] < lengths[:, None]  # (R, L), right padding
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    ids[valid] = mb.input_ids[start:end]  # row-major fill = flat order
    positions = torch.arange(width).expand(len(lengths), width)
    return MicroBatch(start=start, end=end, input_ids=ids, position_ids=positions, valid=valid)


def slice_trajectories(mb: MiniBatch, lo: int, hi: int) -> tuple[MiniBatch, int, int]:
    """Trajectories lo..hi-1 of mb as a MiniBatch of their own, with the [start, end) flat positions it spans.

    Trajectories are contiguous in the flat layout (build_minibatch writes them in order), so a PPO mini-batch
    of whole trajectories is a slice: per-token tensors computed over the whole batch (π_old, correction
    weights) are sliced with [start, end), never recomputed.
    """
    start = int(torch.searchsorted(mb.traj_index, lo))
    end = int(torch.searchsorted(mb.traj_index, hi))
    part = MiniBatch(
        input_ids=mb.input_ids[start:end],
        targets=mb.targets[start:end],
        loss_mask=mb.loss_mask[start:end],
        behaviour_logprobs=mb.behaviour_logprobs[start:end],
        versions=mb.versions[start:end],
        traj_index=mb.traj_index[start:end] - lo,
        advantages=mb.advantages[start:end],
        segment_bounds=[(s - start, e - start) for s, e in mb.segment_bounds if s >= start and e <= end],
        num_trajectories=hi - lo,
    )
    return part, start, end


def trajectory_local(mb: MiniBatch, micros: list[MicroBatch]) -> bool:
    """True if no trajectory spans two micro-batches (then trajectory-wide statistics are micro-batch-local)."""
    return all(
        int(mb.traj_index[m.end - 1]) != int(mb.traj_index[m.end]) for m in micros if m.end < mb.num_tokens
    )
