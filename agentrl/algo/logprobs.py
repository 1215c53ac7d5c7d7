"""Memory-friendly per-token logprobs and entropy from logits or hidden states, in chunks of rows.

A full-vocabulary fp32 log-softmax of a packed batch (N tokens × V ≈ 50k) is the largest tensor of an
LLM RL step. These functions process `chunk` rows at a time in fp32 and save only the per-row
logsumexp for backward, which recomputes softmax chunk by chunk: peak extra memory is O(chunk·V), not
O(N·V). `token_logprobs_from_hidden` goes one step further and never builds the logits at all.

Logprobs are of the temperature-scaled distribution z/T that was actually sampled (§0). Inputs must be
already aligned: row t holds the logits that predict targets[t] (shift by one before calling).
Entropy H_t = logsumexp(z) − Σ softmax(z)·z is returned detached (a metric, §9 actor/entropy).
"""

from __future__ import annotations

import torch
from torch import Tensor


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half-precision inputs are upcast to fp32 per chunk; fp32/fp64 stay as they are."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _chunk_forward(z: Tensor, targets: Tensor, want_entropy: bool) -> tuple[Tensor, Tensor, Tensor | None]:
    """(logprob of target, logsumexp, entropy or None) of one chunk of scaled logits z (C, V)."""
    lse = torch.logsumexp(z, dim=-1)  # (C,)
    lp = z.gather(-1, targets[:, None]).squeeze(-1) - lse
    ent = None
    if want_entropy:
        p = torch.exp(z - lse[:, None])
        ent = lse - (p * z).sum(-1)
    return lp, lse, ent


class _LogprobsFromLogits(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, targets, temperature, chunk, want_entropy):  # logits (N, V)
        dt = _compute_dtype(logits.dtype)
        n = logits.shape[0]
        lp = torch.empty(n, dtype=dt, device=logits.device)
        lse = torch.empty(n, dtype=dt, device=logits.device)
        ent = torch.empty(n if want_entropy else 0, dtype=dt, device=logits.device)
        for s in range(0, n, chunk):
            z = logits[s : s + chunk].to(dt) / temperature
            lp[s : s + chunk], lse[s : s + chunk], e = _chunk_forward(z, targets[s : s + chunk], want_entropy)
            if e is not None:
                ent[s : s + chunk] = e
        ctx.save_for_backward(logits, targets, lse)
        ctx.temperature, ctx.chunk = temperature, chunk
        ctx.mark_non_differentiable(ent)
        return lp, ent

    @staticmethod
    def backward(ctx, grad_lp, _grad_ent):
        logits, targets, lse = ctx.saved_tensors
        t, chunk = ctx.temperature, ctx.chunk
        grad = torch.empty_like(logits)
        for s in range(0, logits.shape[0], chunk):
            z = logits[s : s + chunk].to(lse.dtype) / t
            g = grad_lp[s : s + chunk]  # (C,)
            d = -torch.exp(z - lse[s : s + chunk, None]) * g[:, None]  # −p·g
            d.scatter_add_(-1, targets[s : s + chunk, None], g[:, None])  # + onehot·g
            grad[s : s + chunk] = (d / t).to(logits.dtype)
        return grad, None, None, None, None


class _LogprobsFromHidden(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, temperature, chunk, want_entropy):  # hidden (N, H), weight (V, H)
        dt = _compute_dtype(hidden.dtype)
        n = hidden.shape[0]
        lp = torch.empty(n, dtype=dt, device=hidden.device)
        lse = torch.empty(n, dtype=dt, device=hidden.device)
        ent = torch.empty(n if want_entropy else 0, dtype=dt, device=hidden.device)
        for s in range(0, n, chunk):
            z = (hidden[s : s + chunk] @ weight.T).to(dt) / temperature
            lp[s : s + chunk], lse[s : s + chunk], e = _chunk_forward(z, targets[s : s + chunk], want_entropy)
            if e is not None:
                ent[s : s + chunk] = e
        ctx.save_for_backward(hidden, weight, targets, lse)
        ctx.temperature, ctx.chunk = temperature, chunk
        ctx.mark_non_differentiable(ent)
        return lp, ent

    @staticmethod
    def backward(ctx, grad_lp, _grad_ent):
        hidden, weight, targets, lse = ctx.saved_tensors
        t, chunk = ctx.temperature, ctx.chunk
        grad_h = torch.empty_like(hidden)
        grad_w = torch.zeros_like(weight, dtype=lse.dtype)
        for s in range(0, hidden.shape[0], chunk):
            h = hidden[s : s + chunk]
            z = (h @ weight.T).to(lse.dtype) / t
            g = grad_lp[s : s + chunk]
            d = -torch.exp(z - lse[s : s + chunk, None]) * g[:, None]
            d.scatter_add_(-1, targets[s : s + chunk, None], g[:, None])
            d = d / t  # ∂lp/∂(h·Wᵀ), (C, V)
            grad_h[s : s + chunk] = (d.to(weight.dtype) @ weight).to(hidden.dtype)
            grad_w += d.T @ h.to(lse.dtype)
        return grad_h, grad_w.to(weight.dtype), None, None, None, None


def token_logprobs_from_logits(
    logits: Tensor, targets: Tensor, *, temperature: float = 1.0, chunk: int = 1024, entropy: bool = False
) -> tuple[Tensor, Tensor | None]:
    """Per-token log π(target | ·) of softmax(logits / T), computed `chunk` rows at a time.

    Args:
        logits: (N, V) or (B, T, V), any float dtype (half precision is upcast to fp32 per chunk).
        targets: (N,) or (B, T) token ids, aligned with the logits rows.
        temperature: sampling temperature T (> 0).
        chunk: rows per chunk; bounds the fp32 working set to chunk·V.
        entropy: also return the (detached) entropy per token.

    Returns:
        (logprobs, entropy or None), each shaped like `targets`; logprobs carry gradient to logits.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    shape = targets.shape
    lp, ent = _LogprobsFromLogits.apply(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long(), float(temperature), int(chunk), entropy
    )
    return lp.reshape(shape), (ent.reshape(shape) if entropy else None)


def token_logprobs_from_hidden(
    hidden: Tensor,
    lm_head_weight: Tensor,
    targets: Tensor,
    *,
    temperature: float = 1.0,
    chunk: int = 1024,
    entropy: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Like `token_logprobs_from_logits`, but from final hidden states and the (bias-free) LM head.

    The (N, V) logits are never materialised: each chunk's logits are built, used and dropped in the
    forward, and rebuilt in the backward. Gradients flow to `hidden` and `lm_head_weight`.

    Args:
        hidden: (N, H) or (B, T, H) final hidden states.
        lm_head_weight: (V, H) output embedding.
        targets: (N,) or (B, T) token ids.
        temperature: sampling temperature T (> 0).
        chunk: rows per chunk.
        entropy: also return the (detached) entropy per token.

    Returns:
        (logprobs, entropy or None), each shaped like `targets`.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    shape = targets.shape
    lp, ent = _LogprobsFromHidden.apply(
        hidden.reshape(-1, hidden.shape[-1]), lm_head_weight, targets.reshape(-1).long(), float(temperature), int(chunk), entropy
    )
    return lp.reshape(shape), (ent.reshape(shape) if entropy else None)
