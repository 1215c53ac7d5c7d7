"""Trainer-math metrics with the names and definitions of docs/algorithms.md §9.

Every mean is a token-mean over the loss mask m of the whole batch (Σ m·x / Σ m), taken over the
**pre-rejection** mask; `_seq` variants average per-trajectory token-means over trajectories with
|y_i| > 0. Mismatch metrics are also reported per staleness bucket (0, 1, 2, 3+ versions behind) so that
same-version numerical mismatch and version staleness never mix in one number (§6, §9):
`mismatch/staleness_0/kl_k1` is the numerical floor, the excess in higher buckets is the staleness cost.
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


def masked_mean(x: Tensor, mask: Tensor, denom: float | None = None) -> Tensor:
    """Σ m·x / Σ m (or / denom, e.g. the mini-batch token count so micro-batch values sum up)."""
    m = mask.reshape(-1).bool()
    d = float(m.sum()) if denom is None else denom
    return masked(x.reshape(-1), m).sum() / max(d, 1.0)


def _seq_mean(x: Tensor, mask: Tensor, traj_index: Tensor, num_traj: int) -> Tensor:
    """Mean over trajectories with |y_i| > 0 of the per-trajectory token-mean of x."""
    lengths = traj_count(mask, traj_index, num_traj).to(x.dtype)
    per = traj_sum(masked(x, mask), traj_index, num_traj) / lengths.clamp(min=1)
    has = lengths > 0
    return per[has].sum() / max(float(has.sum()), 1.0)


def _token_mismatch(log_w: Tensor, m: Tensor, prefix: str) -> dict[str, float]:
    """Token-level mismatch statistics of w = exp(log_w) over mask m."""
    w = torch.exp(log_w)
    n = float(m.sum())
    return {
        f"{prefix}tis_mean": float(masked_mean(w, m)),
        f"{prefix}tis_abs": float(masked_mean((w - 1.0).abs(), m)),
        f"{prefix}logprob_abs_diff": float(masked_mean(log_w.abs(), m)),
        f"{prefix}logprob_abs_diff_max": float(masked(log_w.abs(), m).max()) if n else 0.0,
        f"{prefix}kl_k1": float(masked_mean(-log_w, m)),
        f"{prefix}kl_k3": float(masked_mean(w - log_w - 1.0, m)),
        f"{prefix}chi2_token": float(masked_mean(w * w, m)) - 1.0 if n else 0.0,
    }


def token_staleness(versions: Tensor, current_version: int) -> Tensor:
    """Per-token staleness v_cur − v_t (N,); meaningless where v_t = −1 (non-generated tokens)."""
    return current_version - versions.reshape(-1)


@torch.no_grad()
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
    """Train/inference mismatch of w = π_old/μ over the pre-rejection mask (§9 `mismatch/*`).

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
    out["mismatch/tis_mean_seq"] = float(_seq_mean(torch.exp(log_w), m, idx, num_traj))
    out["mismatch/tis_abs_seq"] = float(_seq_mean((torch.exp(log_w) - 1).abs(), m, idx, num_traj))
    out["mismatch/logprob_abs_diff_seq"] = float(_seq_mean(log_w.abs(), m, idx, num_traj))
    lengths = traj_count(m, idx, num_traj)
    has = lengths > 0
    n_traj = max(float(has.sum()), 1.0)
    seq_log_w = traj_sum(masked(log_w, m), idx, num_traj)  # (num_traj,)
    out["mismatch/chi2_seq"] = float(torch.exp(2 * seq_log_w)[has].sum()) / n_traj - 1.0
    ppl_diff = (traj_sum(lp_b, idx, num_traj) - traj_sum(lp_o, idx, num_traj)) / lengths.clamp(min=1)
    out["mismatch/log_ppl_abs_diff"] = float(ppl_diff.abs()[has].sum()) / n_traj
    if versions is not None and current_version is not None:
        stale = token_staleness(versions, current_version)
        for name, lo, hi in STALENESS_BUCKETS:
            in_b = m & (stale >= lo) & (stale <= hi if hi is not None else torch.ones_like(m))
            out[f"mismatch/staleness_{name}/token_frac"] = float(in_b.sum()) / max(float(m.sum()), 1.0)
            if in_b.any():
                out.update(_token_mismatch(log_w, in_b, f"mismatch/staleness_{name}/"))
    return out


@torch.no_grad()
def staleness_metrics(
    versions: Tensor, loss_mask: Tensor, traj_index: Tensor, num_traj: int, current_version: int
) -> dict[str, float]:
    """Policy-version staleness (§8, §9): per token v_cur − v_t, per sample v_cur − min_t v_t.

    Only generated tokens with a version (loss mask 1, v_t ≥ 0) count; AReaL sample_staleness_theta_*.
    """
    v = versions.reshape(-1)
    m = loss_mask.reshape(-1).bool() & (v >= 0)
    idx = traj_index.reshape(-1)
    if not bool(m.any()):
        return {"staleness/mean": 0.0, "staleness/max": 0.0, "staleness/sample_mean": 0.0, "staleness/sample_max": 0.0}
    stale = token_staleness(v, current_version).double()
    oldest = traj_amin(v.double(), m, idx, num_traj)  # (num_traj,), +inf if none
    has = torch.isfinite(oldest)
    sample = current_version - oldest[has]
    return {
        "staleness/mean": float(masked_mean(stale, m)),
        "staleness/max": float(masked(stale, m).max()),
        "staleness/sample_mean": float(sample.mean()),
        "staleness/sample_max": float(sample.max()),
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
