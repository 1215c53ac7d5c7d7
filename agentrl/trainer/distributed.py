"""The process group of a sharded run, and the data-parallel collectives the update's math needs.

A sharded run (trainer.strategy=fsdp) is one process per device, started by torchrun (or by Ray:
agentrl.cluster.ray_ranks gives its actors the environment torchrun would). `join` reads that environment
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and opens two process groups:

- the compute group (NCCL on CUDA, gloo on CPU): FSDP's all-gathers and reduce-scatters and the few collectives
  below, each bounded by trainer.collective_timeout_s, so a rank that hangs stops the others within that time;
- the control group (gloo): rank 0's commands to the other ranks (agentrl.trainer.strategy), pickled objects
  on the host.

Without torchrun's environment `join` opens a group of one on loopback, so `strategy=fsdp` also runs as a
single process (one GPU exercises the NCCL path).

`DataParallel` is what the update sees of the group. Every rank holds the whole rollout batch on the host (rank
0 broadcasts it) and trains on its share of whole trajectories (`share`: contiguous, balanced by tokens; all
segments of a trajectory on one rank). What only a rank knows is what its forwards computed: per-token values
(π_old, π_ref) are gathered back into the whole batch (`gather`) so that every batch-level statistic is computed
by the same code on the same numbers as one process; the loss's denominators are the whole mini-batch's counts
(`global_counts`: all-reduced sums, never averages of per-rank means), so each rank's loss is its part of the
single-process loss and the ranks' gradients SUM to its gradient (FSDP's reduce-scatter is set to sum, not
average: agentrl.trainer.sharded). With one rank every method returns its input and nothing is communicated.
"""

from __future__ import annotations

import datetime
import os
import socket
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from agentrl.algo.losses import LossNormalizer
from agentrl.trainer.batch import MicroBatch, MiniBatch, slice_trajectories

ENV_KEYS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
"""The variables torchrun sets for each rank (and the Ray launch sets for its actors)."""


@dataclass
class World:
    """This process's place in a sharded run."""

    rank: int
    size: int
    local_rank: int
    device: torch.device  # the device this rank trains on (cuda:LOCAL_RANK, or the host)
    control: Any  # gloo process group of rank 0's commands
    timeout_s: float

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that owns the run directory, the engine, the rollouts and the console."""
        return self.rank == 0

    def broadcast(self, obj: Any = None) -> Any:
        """Rank 0's `obj` on every rank (a pickled object over the control group)."""
        box = [obj if self.is_main else None]
        torch.distributed.broadcast_object_list(box, src=0, group=self.control)
        return box[0]

    def barrier(self) -> None:
        """Wait until every rank got here (over the control group: no device work is involved)."""
        torch.distributed.barrier(group=self.control)

    def data_parallel(self) -> DataParallel:
        """The update's view of this group."""
        return DataParallel(rank=self.rank, size=self.size, device=self.device if self.device.type == "cuda"
                            else torch.device("cpu"))

    def close(self) -> None:
        """Leave the process group (every rank calls it at the end of a run)."""
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def under_launcher() -> bool:
    """True when torchrun (or the Ray launch) started this process as one rank of a group."""
    return all(k in os.environ for k in ENV_KEYS)


def rank_device(device: str, local_rank: int) -> torch.device:
    """The device a rank trains on: its own GPU (cuda:LOCAL_RANK) when the run trains on CUDA, else the host."""
    d = torch.device(device)
    return torch.device("cuda", local_rank) if d.type == "cuda" else d


def join(device: str, timeout_s: float) -> World:
    """Open the run's process groups (NCCL on CUDA, gloo on CPU) as torchrun's environment describes, or a group
    of one on loopback when there is none."""
    if not under_launcher():
        os.environ.update({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                           "MASTER_PORT": str(free_port())})
    rank, size, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    where = rank_device(device, local)
    if where.type == "cuda":
        torch.cuda.set_device(where)
    timeout = datetime.timedelta(seconds=timeout_s)
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if where.type == "cuda" else "gloo", timeout=timeout,
                                             **({"device_id": where} if where.type == "cuda" else {}))
    control = torch.distributed.new_group(backend="gloo", timeout=timeout)
    return World(rank=rank, size=size, local_rank=local, device=where, control=control, timeout_s=timeout_s)


def free_port() -> int:
    """A TCP port nobody listens on now (for a group of one on loopback)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- the update's collectives ----

@dataclass(frozen=True)
class Share:
    """This rank's part of trajectories [lo, hi) of a mini-batch: its own trajectories renumbered from 0 (`batch`),
    where they sit in the mini-batch (`traj`, `tokens`), and every rank's token count (to gather per-token
    values back into the whole range)."""

    batch: MiniBatch
    traj: tuple[int, int]  # [lo, hi) trajectory range of this rank in the mini-batch's numbering
    tokens: tuple[int, int]  # [start, end) flat positions of that range
    counts: tuple[int, ...]  # tokens of every rank's share, in rank order (they tile the whole range)

    @property
    def total_tokens(self) -> int:
        """Tokens of the whole range, over all ranks."""
        return sum(self.counts)


@dataclass(frozen=True)
class DataParallel:
    """The data-parallel group an update runs in (rank, size) and the collectives its math needs; with size 1
    (`SINGLE`) every method is the identity and nothing touches torch.distributed."""

    rank: int = 0
    size: int = 1
    device: torch.device = torch.device("cpu")  # where collectives run (the GPU with NCCL, else the host)

    def share(self, mb: MiniBatch, lo: int, hi: int) -> Share:
        """This rank's contiguous part of trajectories [lo, hi) of mb, balanced by tokens across the ranks."""
        host = mb.host
        start, end = _token_bounds(host, lo, hi)
        if self.size == 1:
            batch = mb if (lo, hi) == (0, mb.num_trajectories) else slice_trajectories(mb, lo, hi)[0]
            return Share(batch, (lo, hi), (start, end), (end - start,))
        cuts = _balanced_cuts(host, lo, hi, self.size)
        spans = [_token_bounds(host, a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
        a, b = cuts[self.rank], cuts[self.rank + 1]
        part, s, e = slice_trajectories(mb, a, b)
        return Share(part, (a, b), (s, e), tuple(y - x for x, y in spans))

    def gather(self, local: Tensor, share: Share) -> Tensor:
        """Per-token values of every rank's share, concatenated in rank order: the whole range's (N,) tensor."""
        if self.size == 1:
            return local
        width = max(max(share.counts), 1)
        padded = torch.zeros(width, dtype=local.dtype, device=self.device)
        padded[: local.numel()] = local.to(self.device)
        parts = [torch.empty_like(padded) for _ in range(self.size)]
        torch.distributed.all_gather(parts, padded)
        return torch.cat([p[:n] for p, n in zip(parts, share.counts, strict=True)]).to(local.device)

    def global_counts(self, norm: LossNormalizer) -> LossNormalizer:
        """The normalizer with the whole mini-batch's token and trajectory counts (all-reduced sums); each rank
        keeps the lengths of its own trajectories, which are whole on it."""
        if self.size == 1:
            return norm
        counts = torch.tensor([norm.num_tokens, norm.num_seqs], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(counts)
        num_tokens, num_seqs = counts.tolist()
        return replace(norm, num_tokens=num_tokens, num_seqs=num_seqs)

    def sum(self, values: dict[str, Tensor]) -> dict[str, Tensor]:
        """Each 0-d tensor summed over the ranks, in one all-reduce (the keys are the same on every rank)."""
        if self.size == 1 or not values:
            return values
        keys = sorted(values)
        some = values[keys[0]]
        stacked = torch.stack([values[k].detach().reshape(()).to(self.device, torch.float64) for k in keys])
        torch.distributed.all_reduce(stacked)
        return {k: v.to(some.device) for k, v in zip(keys, stacked.unbind(), strict=True)}

    def total(self, n: float) -> float:
        """A host number summed over the ranks."""
        if self.size == 1:
            return n
        t = torch.tensor([float(n)], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t)
        return float(t.item())

    def all(self, flag: bool) -> bool:
        """True if `flag` is true on every rank (so every rank takes the same branch, and the same collectives)."""
        if self.size == 1:
            return flag
        t = torch.tensor([1 if flag else 0], dtype=torch.int64, device=self.device)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MIN)
        return bool(t.item())

    def pad(self, micros: list[MicroBatch]) -> list[MicroBatch | None]:
        """`micros` followed by None up to the largest count of any rank: a rank with fewer micro-batches runs idle
        passes for the rest, so every rank makes the same FSDP collectives (one all-gather per layer and forward,
        one reduce-scatter per layer and backward)."""
        if self.size == 1:
            return list(micros)
        t = torch.tensor([len(micros)], dtype=torch.int64, device=self.device)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        return [*micros, *[None] * (int(t.item()) - len(micros))]

    def clip_grad_norm(self, parameters, max_norm: float) -> Tensor:
        """Clip the gradients to a global norm and return it (0-d): with sharded gradients (DTensors) the norm
        is over the whole model, the same on every rank."""
        norm = torch.nn.utils.clip_grad_norm_(parameters, max_norm)
        full = getattr(norm, "full_tensor", None)  # a DTensor's norm: its value on every rank
        return full() if full is not None else norm


SINGLE = DataParallel()
"""One process: the update as it has always run."""


def _token_bounds(host: MiniBatch, lo: int, hi: int) -> tuple[int, int]:
    """[start, end) flat positions of trajectories [lo, hi) (they are contiguous: batch.slice_trajectories)."""
    start = int(torch.searchsorted(host.traj_index, lo))
    end = int(torch.searchsorted(host.traj_index, hi))
    return start, end


def _balanced_cuts(host: MiniBatch, lo: int, hi: int, parts: int) -> list[int]:
    """Trajectory boundaries lo = c_0 ≤ c_1 ≤ … ≤ c_parts = hi splitting [lo, hi) into contiguous runs of about
    equal tokens (a forward's cost): c_k is the first trajectory at which the running token count reaches k/parts
    of the total. The same on every rank (computed from the host batch every rank holds)."""
    if hi <= lo:
        return [lo] * (parts + 1)
    sizes = torch.bincount(host.traj_index, minlength=hi)[lo:hi].double()  # (hi - lo,) tokens per trajectory
    ends = torch.cumsum(sizes, 0)  # tokens up to and including each trajectory
    total = float(ends[-1])
    cuts = [lo]
    for k in range(1, parts):
        # trajectories whose midpoint lies before k/parts of the tokens go left of cut k
        mid = ends - sizes / 2
        cuts.append(max(cuts[-1], lo + int((mid < total * k / parts).sum())))
    cuts.append(hi)
    return cuts
