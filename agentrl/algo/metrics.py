"""Trainer-math metrics with the names and definitions of docs/algorithms.md §9.

Every mean is a token-mean over the loss mask m of the whole batch (Σ m·x / Σ m), taken over the
**pre-rejection** mask; `_seq` variants average per-trajectory token-means over trajectories with
|y_i| > 0. Mismatch metrics are also reported per staleness bucket (0, 1, 2, 3+ versions behind) so that
same-version numerical mismatch and version staleness never mix in one number (§6, §9):
`mismatch/staleness_0/kl_k1` is the numerical floor, the excess in higher buckets is the staleness cost.

Every statistic is computed as a 0-d tensor on its inputs' device (`mismatch_tensors`, `staleness_tensors`), with
no data-dependent control flow, so a trainer on a GPU collects them all and moves them to the host in one
transfer (`to_host`); `mismatch_metrics` and `staleness_metrics` are those plus the transfer.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

from agentrl.algo.flat import masked, traj_amin, traj_count, traj_sum


class Peak(float):
    """A metric value that merges across groups by its maximum (e.g. resample rounds); plain values add up."""


def merge_metrics(parts: Iterable[dict[str, float]]) -> dict[str, float]:
    """Merge per-group metric dicts: each value declares its merge (Peak → max; a plain number → sum)."""
    out: dict[str, float] = {}
    for part in parts:
        for k, v in part.items():
            if isinstance(v, Peak):
                out[k] = Peak(max(out.get(k, v), v))
            else:
                out[k] = out.get(k, 0.0) + v
    return out


STALENESS_BUCKETS: tuple[tuple[str, int, int | None], ...] = (("0", 0, 0), ("1", 1, 1), ("2", 2, 2), ("3+", 3, None))
"""(name, lowest, highest or None) staleness v_cur − v_t of each bucket."""


def to_host(values: dict[str, Tensor | float]) -> dict[str, float]:
    """The dict with every 0-d tensor turned into a float by ONE device→host transfer (plain numbers pass through).

    A GPU trainer's metrics cross to the host here, once per step, instead of one `.item()` (one wait for the
    device) per value."""
    keys = [k for k, v in values.items() if isinstance(v, Tensor)]
    out = {k: float(v) for k, v in values.items() if not isinstance(v, Tensor)}
    if keys:
        device = values[keys[0]].device
        stacked = torch.stack([values[k].detach().reshape(()).to(device=device, dtype=torch.float64) for k in keys])
        out.update(zip(keys, stacked.tolist(), strict=True))
    return {k: out[k] for k in values}


def masked_mean(x: Tensor, mask: Tensor, denom: float | None = None) -> Tensor:
    """Σ m·x / Σ m (or / denom, e.g. the mini-batch token count so micro-batch values sum up); 0 with no m."""
    m = mask.reshape(-1).bool()
    d = m.sum().clamp(min=1) if denom is None else max(denom, 1.0)
    return masked(x.reshape(-1), m).sum() / d


def _seq_mean(x: Tensor, mask: Tensor, traj_index: Tensor, num_traj: int) -> Tensor:
    """Mean over trajectories with |y_i| > 0 of the per-trajectory token-mean of x."""
    lengths = traj_count(mask, traj_index, num_traj).to(x.dtype)
    per = traj_sum(masked(x, mask), traj_index, num_traj) / lengths.clamp(min=1)
    has = lengths > 0
    return masked(per, has).sum() / has.sum().clamp(min=1)


def _masked_max(x: Tensor, m: Tensor) -> Tensor:
    """max of x over mask m (0 where m is empty), without reading m on the host."""
    zero = x.new_zeros(())
    if x.numel() == 0:
        return zero
    return torch.where(m.any(), torch.where(m, x, torch.full_like(x, float("-inf"))).max(), zero)


def _token_mismatch(log_w: Tensor, m: Tensor, prefix: str) -> dict[str, Tensor]:
    """Token-level mismatch statistics of w = exp(log_w) over mask m (0-d tensors)."""
    w = torch.exp(log_w)
    return {
        f"{prefix}tis_mean": masked_mean(w, m),
        f"{prefix}tis_abs": masked_mean((w - 1.0).abs(), m),
        f"{prefix}logprob_abs_diff": masked_mean(log_w.abs(), m),
        f"{prefix}logprob_abs_diff_max": _masked_max(log_w.abs(), m),
        f"{prefix}kl_k1": masked_mean(-log_w, m),
        f"{prefix}kl_k3": masked_mean(w - log_w - 1.0, m),
        f"{prefix}chi2_token": torch.where(m.any(), masked_mean(w * w, m) - 1.0, 0.0),
    }


def token_staleness(versions: Tensor, current_version: int) -> Tensor:
    """Per-token staleness v_cur − v_t (N,); meaningless where v_t = −1 (non-generated tokens)."""
    return current_version - versions.reshape(-1)


def mismatch_metrics(
    lp_old: Tensor,
    lp_mu: Tensor,
    loss_mask: Tensor,
    traj_index: Tensor,
    num_traj: int,
    *,
    versions: Tensor | None = None,
    current_version: int | None = None,
) -> dict[str, float]:
    """`mismatch_tensors` as floats (one transfer), without the statistics of empty staleness buckets."""
    return drop_empty_buckets(to_host(mismatch_tensors(lp_old, lp_mu, loss_mask, traj_index, num_traj,
                                                       versions=versions, current_version=current_version)))


def drop_empty_buckets(values: dict[str, float]) -> dict[str, float]:
    """Remove the statistics of staleness buckets that hold no token (their token_frac, 0, stays)."""
    empty = [name for name, _, _ in STALENESS_BUCKETS if values.get(f"mismatch/staleness_{name}/token_frac") == 0.0]
    return {k: v for k, v in values.items()
            if not any(k.startswith(f"mismatch/staleness_{b}/") and not k.endswith("/token_frac") for b in empty)}


@torch.no_grad()
def mismatch_tensors(
    lp_old: Tensor,
    lp_mu: Tensor,
    loss_mask: Tensor,
    traj_index: Tensor,
    num_traj: int,
    *,
    versions: Tensor | None = None,
    current_version: int | None = None,
) -> dict[str, Tensor]:
    """Train/inference mismatch of w = π_old/μ over the pre-rejection mask (§9 `mismatch/*`), as 0-d tensors on
    the inputs' device (every bucket's statistics included; `drop_empty_buckets` drops empty ones on the host).

    Args:
        lp_old: (N,) trainer-recomputed logprobs. lp_mu: (N,) behaviour logprobs from the engine.
        loss_mask: (N,) action-token mask. traj_index: (N,) trajectory numbers. num_traj: their count.
        versions: (N,) policy version per token (−1 off the mask); with current_version, adds buckets.
        current_version: v_cur, the version of π_old.

    Returns:
        Flat dict: tis_mean, tis_abs, logprob_abs_diff(_max), kl_k1, kl_k3, chi2_token, chi2_seq,
        log_ppl_abs_diff, `_seq` variants, and `mismatch/staleness_{0,1,2,3+}/...` per bucket.
    """
    m = loss_mask.reshape(-1).bool()
    idx = traj_index.reshape(-1)
    lp_o = masked(lp_old.reshape(-1), m).double()
    lp_b = masked(lp_mu.reshape(-1), m).double()
    log_w = lp_o - lp_b  # (N,)
    out = _token_mismatch(log_w, m, "mismatch/")
    out["mismatch/tis_mean_seq"] = _seq_mean(torch.exp(log_w), m, idx, num_traj)
    out["mismatch/tis_abs_seq"] = _seq_mean((torch.exp(log_w) - 1).abs(), m, idx, num_traj)
    out["mismatch/logprob_abs_diff_seq"] = _seq_mean(log_w.abs(), m, idx, num_traj)
    lengths = traj_count(m, idx, num_traj)
    has = lengths > 0
    n_traj = has.sum().clamp(min=1)
    seq_log_w = traj_sum(masked(log_w, m), idx, num_traj)  # (num_traj,)
    out["mismatch/chi2_seq"] = masked(torch.exp(2 * seq_log_w), has).sum() / n_traj - 1.0
    ppl_diff = (traj_sum(lp_b, idx, num_traj) - traj_sum(lp_o, idx, num_traj)) / lengths.clamp(min=1)
    out["mismatch/log_ppl_abs_diff"] = masked(ppl_diff.abs(), has).sum() / n_traj
    if versions is not None and current_version is not None:
        stale = token_staleness(versions, current_version)
        for name, lo, hi in STALENESS_BUCKETS:
            in_b = m & (stale >= lo) & (stale <= hi if hi is not None else torch.ones_like(m))
            out[f"mismatch/staleness_{name}/token_frac"] = in_b.sum().double() / m.sum().clamp(min=1)
            out.update(_token_mismatch(log_w, in_b, f"mismatch/staleness_{name}/"))
    return out


def staleness_metrics(
    versions: Tensor, loss_mask: Tensor, traj_index: Tensor, num_traj: int, current_version: int
) -> dict[str, float]:
    """`staleness_tensors` as floats (one transfer)."""
    return to_host(staleness_tensors(versions, loss_mask, traj_index, num_traj, current_version))


@torch.no_grad()
def staleness_tensors(
    versions: Tensor, loss_mask: Tensor, traj_index: Tensor, num_traj: int, current_version: int
) -> dict[str, Tensor]:
    """Policy-version staleness (§8, §9): per token v_cur − v_t, per sample v_cur − min_t v_t, as 0-d tensors
    (all 0 when no token counts).

    Only generated tokens with a version (loss mask 1, v_t ≥ 0) count; AReaL sample_staleness_theta_*.
    """
    v = versions.reshape(-1)
    m = loss_mask.reshape(-1).bool() & (v >= 0)
    idx = traj_index.reshape(-1)
    stale = token_staleness(v, current_version).double()
    oldest = traj_amin(v.double(), m, idx, num_traj)  # (num_traj,), +inf if none
    has = torch.isfinite(oldest)
    sample = masked(current_version - oldest, has)
    return {
        "staleness/mean": masked_mean(stale, m),
        "staleness/max": _masked_max(stale, m),
        "staleness/sample_mean": sample.sum() / has.sum().clamp(min=1),
        "staleness/sample_max": _masked_max(sample, has),
    }


@torch.no_grad()
def staleness_histogram(versions: Tensor, loss_mask: Tensor, current_version: int) -> dict[str, float]:
    """staleness/hist_{0,1,2,3+}: fraction of generated tokens (m = 1, v_t ≥ 0) that are that many versions
    behind v_cur (the same buckets as the mismatch metrics)."""
    v = versions.reshape(-1)
    m = loss_mask.reshape(-1).bool() & (v >= 0)
    n = max(float(m.sum()), 1.0)
    stale = token_staleness(v, current_version)
    out = {}
    for name, lo, hi in STALENESS_BUCKETS:
        in_b = m & (stale >= lo) & (stale <= hi if hi is not None else torch.ones_like(m))
        out[f"staleness/hist_{name}"] = float(in_b.sum()) / n
    return out
