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

Devices. Packing and planning run on the host (token lists in, CPU tensors out); `MiniBatch.to(device)` is the one
boundary that moves a batch to the model's device. A moved batch keeps its host copy (`MiniBatch.host`), so cutting
micro-batches, slicing PPO mini-batches and the on-policy test read host memory and never wait for the device;
every MicroBatch is built on the host and moved as a whole. Everything the update computes from a moved batch
lives on its device (tests/trainer/test_device_clean.py runs the update on a stand-in device that refuses a host
tensor meeting a device tensor).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

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
    _host: MiniBatch | None = field(default=None, repr=False)  # the host copy of a moved batch (None: this is it)

    @property
    def num_tokens(self) -> int:
        return int(self.input_ids.numel())

    @property
    def device(self) -> torch.device:
        """Where the per-token tensors live."""
        return self.input_ids.device

    @property
    def host(self) -> MiniBatch:
        """This batch on the host (itself when it is there): what planning and host-side decisions read."""
        return self if self._host is None else self._host

    def to(self, device: torch.device | str) -> MiniBatch:
        """This batch with its per-token tensors on `device` (itself if they are there), keeping the host copy."""
        device = torch.device(device)
        if self.device == device:
            return self
        moved = {f.name: getattr(self, f.name).to(device) for f in fields(self) if _is_tensor_field(f)}
        return replace(self, **moved, _host=self.host)


@dataclass
class MicroBatch:
    """One forward pass worth of segments: a contiguous slice [start, end) of the mini-batch."""

    start: int
    end: int
    input_ids: Tensor  # (R, L): one right-padded row per segment
    position_ids: Tensor  # (R, L) restart at 0 for every segment
    valid: Tensor  # (R, L) bool, True on real tokens; hidden[valid] is in flat order
    real: Tensor  # (T,) indices of the real tokens in the flattened (R·L) rows, in flat order (no sync to use)
    actions: Tensor  # (A,) positions in [0, end - start) whose target the policy sampled (loss mask 1)
    lengths: list[int]  # host: tokens of each row
    host_ids: Tensor  # host copy of input_ids, for planning (agentrl.trainer.prefix)

    def to(self, device: torch.device | str) -> MicroBatch:
        """This micro-batch with its tensors on `device` (host_ids stays on the host)."""
        device = torch.device(device)
        if self.input_ids.device == device:
            return self
        return replace(self, input_ids=self.input_ids.to(device), position_ids=self.position_ids.to(device),
                       valid=self.valid.to(device), real=self.real.to(device), actions=self.actions.to(device))


def _is_tensor_field(f) -> bool:
    return f.type in ("Tensor", Tensor)


def model_device(model) -> torch.device:
    """The device of a model's parameters (the device its batches go to)."""
    return next(model.parameters()).device


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
    host = torch.device("cpu")  # packed on the host; MiniBatch.to moves it
    return MiniBatch(
        input_ids=torch.tensor(ids, dtype=torch.long, device=host),
        targets=torch.tensor(tgt, dtype=torch.long, device=host),
        loss_mask=torch.tensor(mask, dtype=torch.float32, device=host),
        behaviour_logprobs=torch.tensor(blp, dtype=torch.float32, device=host),
        versions=torch.tensor(ver, dtype=torch.long, device=host),
        traj_index=torch.tensor(tix, dtype=torch.long, device=host),
        advantages=torch.tensor(adv, dtype=torch.float32, device=host),
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
    """Cut a MiniBatch into MicroBatches of right-padded rows, planned on its host copy and put on its device.

    share_prefix: the rows' budget counts a prefix several rows share once, as the shared-prefix forward computes
    it (agentrl.trainer.prefix_plan.plan_shared_rows); pass it only when that forward will run."""
    host = mb.host
    if share_prefix:
        plans = plan_shared_rows(host.input_ids, host.segment_bounds, token_budget)
    else:
        plans = plan_rows(host.segment_bounds, token_budget)
    return [_rows(host, start, end).to(mb.device) for start, end in plans]


def _segment_lengths(mb: MiniBatch, start: int, end: int) -> list[int]:
    return [e - s for s, e in mb.segment_bounds if s >= start and e <= end]


def _rows(mb: MiniBatch, start: int, end: int) -> MicroBatch:
    """The micro-batch of flat positions [start, end) of a host batch, on the host."""
    cpu = mb.device
    lengths = _segment_lengths(mb, start, end)
    width = max(lengths)
    valid = torch.arange(width, device=cpu)[None, :] < torch.tensor(lengths, device=cpu)[:, None]  # (R, L)
    ids = torch.zeros(len(lengths), width, dtype=torch.long, device=cpu)
    ids[valid] = mb.input_ids[start:end]  # row-major fill = flat order
    positions = torch.arange(width, device=cpu).expand(len(lengths), width)
    actions = torch.nonzero(mb.loss_mask[start:end] > 0).flatten()
    return MicroBatch(start=start, end=end, input_ids=ids, position_ids=positions, valid=valid,
                      real=torch.nonzero(valid.flatten()).flatten(), actions=actions, lengths=lengths, host_ids=ids)


def slice_trajectories(mb: MiniBatch, lo: int, hi: int) -> tuple[MiniBatch, int, int]:
    """Trajectories lo..hi-1 of mb as a MiniBatch of their own, with the [start, end) flat positions it spans.

    Trajectories are contiguous in the flat layout (build_minibatch writes them in order), so a PPO mini-batch
    of whole trajectories is a slice: per-token tensors computed over the whole batch (π_old, correction
    weights) are sliced with [start, end), never recomputed.
    """
    host = mb.host
    start = int(torch.searchsorted(host.traj_index, lo))
    end = int(torch.searchsorted(host.traj_index, hi))
    part = _slice(mb, start, end, lo, hi)
    if mb._host is not None:
        part._host = _slice(host, start, end, lo, hi)
    return part, start, end


def _slice(mb: MiniBatch, start: int, end: int, lo: int, hi: int) -> MiniBatch:
    """Flat positions [start, end) of mb, which hold trajectories lo..hi-1, renumbered from 0."""
    return MiniBatch(
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


def trajectory_local(mb: MiniBatch, micros: list[MicroBatch]) -> bool:
    """True if no trajectory spans two micro-batches (then trajectory-wide statistics are micro-batch-local)."""
    traj = mb.host.traj_index
    return all(int(traj[m.end - 1]) != int(traj[m.end]) for m in micros if m.end < mb.num_tokens)
