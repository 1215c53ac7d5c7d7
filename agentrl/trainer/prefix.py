"""Training forwards of a rows-layout micro-batch: every row in full (`rows_hidden`), or a prompt shared by
several rows computed once (`shared_prefix_hidden`).

In GRPO the `group_size` trajectories of one task start with the same prompt (system prompt, tool specs, the
task), often most of each row. In the rows layout (agentrl.trainer.batch) every row runs in full, so the forward
and backward recompute that prompt once per row. Here rows whose first K tokens agree (K ≥ `min_prefix`) form a
group, and the micro-batch's forward becomes (at most) three `model.base_model` calls:

1. lone rows (no partner): as today, right-padded rows with the fused causal kernel;
2. prefixes: one row per group, K_g tokens (right-padded to the longest prefix, causal kernel); every layer's
   keys/values (after RoPE) are captured by `_Capture`, a cache that stores without growing;
3. suffixes: one row per member, the tokens after K_g at positions K_g, K_g+1, ..., attending to their group's
   prefix keys/values (`_Prefixed` concatenates them in front of the row's own, read-only) and causally to
   themselves, through an explicit (S, 1, s, Kmax + s) mask.

The hidden states of prefix positions are the prefix row's (one tensor shared by the members; the last prefix
position predicts each member's first differing token, so its hidden is shared but the targets differ, which
the LM head handles since it runs on (T, H) rows), those of suffix positions each row's own; they are gathered
into (T, H) in flat order, so everything downstream (LM head on masked positions, losses, corrections) is
unchanged. Gradients reach the prefix from every member: the backward of both gathers (hidden states into flat
order, keys/values to suffix rows; index_select, whose index_add_ backward sums in a fixed order) sums over rows. The result equals the plain path up to fp32 rounding (causal attention never lets a
prefix position see what follows it, and positions and keys are the same), which tests/trainer/test_prefix.py
checks for logprobs, entropy and parameter gradients.

Groups: rows are sorted by their tokens, so any set of rows with a common prefix is a contiguous run and its
longest common prefix is the minimum of its neighbours' LCPs; `plan_shared_prefixes` picks, run by run, the split
that skips the most prefix tokens ((n−1)·K per group). Rows of one GRPO group need not be adjacent. One level
only: rows of two tasks that share a system prompt but not the issue form two groups, each computing the system
prompt once.

Budget: with rows of ~1k tokens, the plain planner's 2048 positions hold one row, leaving nothing to share, so
`batch.microbatches(share_prefix=True)` plans by `shared_cost` (the positions these three forwards compute,
padding included; activation memory scales with them). Callers pass it only when `sharing_supported(model)`.

Gradient checkpointing (trainer.gradient_checkpointing) works with it: HF's checkpointed decoder layers drop a
cache argument unless the layer declares `_can_checkpoint_with_cache`, which is safe for these two caches (the
capture keeps its first tensors when the backward's recompute replays it; the other only reads), so it is set
on the layers for the call.
A guard counts the cache calls of every layer; if a transformers version dropped the cache anyway (the suffix
rows would not have seen their prefix), the micro-batch is recomputed by the plain path and sharing is turned off
for that model with a warning, never a wrong forward. Attention implementations other than sdpa and eager
(flash-attention takes no dense mask) keep the plain path.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import torch
from torch import Tensor
from transformers import DynamicCache

from agentrl.engine.kv_batch import cache_kwarg, new_cache
from agentrl.trainer.batch import MicroBatch
from agentrl.trainer.prefix_plan import MIN_PREFIX, plan_shared_prefixes

_OFF = "_agentrl_no_shared_prefix"  # set on a model whose transformers version dropped the cache (see module doc)


@dataclass
class PrefixStats:
    """Counters of the shared-prefix forwards (read by tests and the bench; reset with `reset()`)."""

    forwards: int = 0  # micro-batches that took the shared path
    groups: int = 0  # prefix groups computed
    shared_rows: int = 0  # rows that read a shared prefix
    prefix_tokens: int = 0  # prefix tokens computed (once per group)
    skipped_tokens: int = 0  # prefix tokens not recomputed: Σ (n_g − 1)·K_g

    def reset(self) -> None:
        """Zero every counter."""
        self.forwards = self.groups = self.shared_rows = self.prefix_tokens = self.skipped_tokens = 0


stats = PrefixStats()


def sharing_supported(model) -> bool:
    """True if shared_prefix_hidden can run on this model (sdpa or eager attention, full-attention layers only,
    and the cache not found dropped): callers plan micro-batches by shared_cost only then."""
    impl = getattr(model.config, "_attn_implementation", None)
    return impl in ("sdpa", "eager") and not getattr(model, _OFF, False) and _full_attention(model)


def shared_prefix_hidden(model, micro: MicroBatch, *, min_prefix: int = MIN_PREFIX) -> Tensor | None:
    """Final hidden states (T, H) of a rows-layout micro-batch in flat order, each shared prefix computed once;
    None when nothing is shared (or sharing cannot run here), and the caller takes the plain path."""
    if not sharing_supported(model):
        return None
    lengths = micro.lengths
    groups = plan_shared_prefixes(micro.host_ids, lengths, min_prefix)  # planned on the host copy
    if not groups:
        return None
    try:
        additive = model.config._attn_implementation == "eager"
        hidden = _grouped_forward(model, micro, lengths, groups, additive=additive)
    except _CacheDropped:
        setattr(model, _OFF, True)
        warnings.warn("trainer.share_prefix: this transformers version drops the KV cache in these layers; "
                      "training forwards run every row in full", stacklevel=2)
        return None
    stats.forwards += 1
    stats.groups += len(groups)
    stats.shared_rows += sum(len(rows) for rows, _ in groups)
    stats.prefix_tokens += sum(k for _, k in groups)
    stats.skipped_tokens += sum((len(rows) - 1) * k for rows, k in groups)
    return hidden


def rows_hidden(model, micro: MicroBatch) -> Tensor:
    """Final hidden states (T, H) of a rows-layout micro-batch in flat order, every row computed in full (the plain
    path), without reading the device on the host."""
    kwargs = {cache_kwarg(model): _PassThrough(config=model.config)} if _full_attention(model) else {}
    with _cache_through_checkpointing(model):
        hidden = model.base_model(
            input_ids=micro.input_ids, position_ids=micro.position_ids,
            use_cache=False,  # training forwards never reuse keys/values: building a cache only costs memory
            **kwargs,
        ).last_hidden_state  # (R, L, H)
    return hidden.flatten(0, 1).index_select(0, micro.real)  # (T, H) in flat order


class _PassThrough(DynamicCache):
    """Stores nothing and hands each layer's keys/values back unchanged. A forward without an attention mask is
    given one only because transformers then skips its packed-sequence check on position_ids
    (masking_utils.find_packed_sequence_indices), which reads the device on the host once per forward."""

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        return key_states, value_states


class _CacheDropped(RuntimeError):
    """A decoder layer ran without the cache it was given."""


class _Capture(DynamicCache):
    """Keeps each layer's keys/values of the prefix pass (G, h, K, d) and passes them through unchanged."""

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        if not self.frozen:  # a checkpoint recompute in the backward replays this call: keep the first tensors
            self.kv[layer_idx] = (key_states, value_states)
        return key_states, value_states


class _Prefixed(DynamicCache):
    """Puts the group's prefix keys/values in front of each suffix row's own (read-only: nothing is stored)."""

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        self.reads.add(layer_idx)
        keys, values = self.prefix[layer_idx]  # (G, h, Kmax, d)
        keys, values = keys.index_select(0, self.group), values.index_select(0, self.group)  # (S, h, Kmax, d)
        return torch.cat([keys, key_states], dim=2), torch.cat([values, value_states], dim=2)


def _full_attention(model) -> bool:
    """True if every layer's cache is a plain DynamicLayer (no sliding-window or linear attention; new_cache)."""
    known = getattr(model, "_agentrl_full_attention", None)
    if known is None:
        try:
            new_cache(model)
            known = True
        except ValueError:
            known = False
        model._agentrl_full_attention = known
    return known


@contextlib.contextmanager
def _cache_through_checkpointing(model):
    """Let checkpointed decoder layers keep the cache argument (HF's `_can_checkpoint_with_cache`) for a call."""
    layers = [m for m in model.base_model.modules() if hasattr(type(m), "_can_checkpoint_with_cache")]
    for m in layers:
        m._can_checkpoint_with_cache = True
    try:
        yield
    finally:
        for m in layers:
            del m._can_checkpoint_with_cache


def _grouped_forward(model, micro: MicroBatch, lengths: list[int], groups: list[tuple[list[int], int]], *,
                     additive: bool) -> Tensor:
    """Lone rows, prefixes and suffixes as three forwards; their hidden states gathered into flat order (T, H).

    The forwards' token rows and the gather index are built on the host (from micro.host_ids) and moved once each."""
    num_rows, width = micro.input_ids.shape
    cpu = micro.host_ids.device
    index = torch.full((num_rows, width), -1, dtype=torch.long, device=cpu)  # (R, L) pool row of that hidden
    grouped = {r for rows, _ in groups for r in rows}
    parts: list[Tensor] = []
    lone = [r for r in range(num_rows) if r not in grouped]
    if lone:
        parts.append(_lone_forward(model, micro, lengths, lone, index))
    k_max = max(k for _, k in groups)
    h, capture = _prefix_forward(model, micro, groups, k_max, index, offset=sum(p.shape[0] for p in parts))
    parts.append(h)
    suffix = [(g, r, k) for g, (rows, k) in enumerate(groups) for r in rows if lengths[r] > k]
    if suffix:
        parts.append(_suffix_forward(model, micro, lengths, suffix, capture, k_max, index, additive=additive,
                                     offset=sum(p.shape[0] for p in parts), dtype=h.dtype))
    pool = torch.cat(parts) if len(parts) > 1 else parts[0]  # (M, H)
    # (T, H) in flat order; the backward sums shared rows' gradients. index_select, not pool[...]: its backward
    # (index_add_) adds duplicates in a fixed order, while advanced indexing's (index_put_ with accumulate, sorted
    # in parallel) may not, and two identical updates would then differ in the last bit
    valid = torch.arange(width, device=cpu)[None, :] < torch.tensor(lengths, device=cpu)[:, None]  # host micro.valid
    return pool.index_select(0, index[valid].to(pool.device))


def _lone_forward(model, micro: MicroBatch, lengths: list[int], lone: list[int], index: Tensor) -> Tensor:
    """The rows that share no prefix, as one plain forward; fills their positions of `index` (pool offset 0)."""
    ids, dev = micro.input_ids, micro.input_ids.device
    w = max(lengths[r] for r in lone)
    rows = torch.tensor(lone, device=dev)
    with _cache_through_checkpointing(model):
        h = model.base_model(input_ids=ids[rows, :w], position_ids=micro.position_ids[rows, :w], use_cache=False,
                             **{cache_kwarg(model): _PassThrough(config=model.config)}).last_hidden_state  # (nl, w, H)
    for i, r in enumerate(lone):
        index[r, : lengths[r]] = i * w + torch.arange(lengths[r], device=index.device)
    return h.reshape(-1, h.shape[-1])


def _prefix_forward(model, micro: MicroBatch, groups: list[tuple[list[int], int]], k_max: int, index: Tensor, *,
                    offset: int) -> tuple[Tensor, _Capture]:
    """Each group's shared prefix once (padded to k_max), capturing its keys and values per layer; fills the
    prefix positions of every member row in `index` (pool rows from `offset`)."""
    ids, dev = micro.host_ids, micro.input_ids.device
    prefix_ids = torch.zeros(len(groups), k_max, dtype=torch.long, device=ids.device)  # built on the host
    for g, (rows, k) in enumerate(groups):
        prefix_ids[g, :k] = ids[rows[0], :k]
        for r in rows:
            index[r, :k] = offset + g * k_max + torch.arange(k, device=index.device)
    prefix_ids = prefix_ids.to(dev)
    capture = _Capture(config=model.config)
    capture.kv, capture.frozen = {}, False
    with _cache_through_checkpointing(model):
        h = model.base_model(input_ids=prefix_ids, position_ids=torch.arange(k_max, device=dev).expand_as(prefix_ids),
                             use_cache=False, **{cache_kwarg(model): capture}).last_hidden_state  # (G, Kmax, H)
    capture.frozen = True
    if len(capture.kv) != model.config.num_hidden_layers:
        raise _CacheDropped
    return h.reshape(-1, h.shape[-1]), capture


def _suffix_forward(model, micro: MicroBatch, lengths: list[int], suffix: list[tuple[int, int, int]],
                    capture: _Capture, k_max: int, index: Tensor, *, additive: bool, offset: int,
                    dtype: torch.dtype) -> Tensor:
    """Every grouped row's tokens after its prefix (suffix: (group, row, prefix length)), attending to its group's
    captured prefix keys and values (k_max wide); fills those positions of `index` (pool rows from `offset`)."""
    ids, dev = micro.host_ids, micro.input_ids.device
    s_max = max(lengths[r] - k for _, r, k in suffix)
    suffix_ids = torch.zeros(len(suffix), s_max, dtype=torch.long, device=ids.device)  # built on the host
    starts = torch.tensor([k for _, _, k in suffix], device=dev)  # (S,) each row's prefix length
    for i, (_, r, k) in enumerate(suffix):
        n = lengths[r] - k
        suffix_ids[i, :n] = ids[r, k : lengths[r]]
        index[r, k : lengths[r]] = offset + i * s_max + torch.arange(n, device=index.device)
    suffix_ids = suffix_ids.to(dev)
    q = torch.arange(s_max, device=dev)
    see_prefix = torch.arange(k_max, device=dev)[None, :] < starts[:, None]  # (S, Kmax)
    causal = (q[None, :] <= q[:, None]).expand(len(suffix), s_max, s_max)  # (S, s, s)
    mask = torch.cat([see_prefix[:, None, :].expand(-1, s_max, -1), causal], dim=2)[:, None]  # (S,1,s,Kmax+s)
    if additive:  # eager attention adds its mask to the scores
        mask = torch.zeros(mask.shape, dtype=dtype, device=dev).masked_fill_(~mask, torch.finfo(dtype).min)
    prefixed = _Prefixed(config=model.config)
    prefixed.prefix, prefixed.reads = capture.kv, set()
    prefixed.group = torch.tensor([g for g, _, _ in suffix], device=dev)
    with _cache_through_checkpointing(model):
        h = model.base_model(input_ids=suffix_ids, position_ids=starts[:, None] + q[None, :], attention_mask=mask,
                             use_cache=False, **{cache_kwarg(model): prefixed}).last_hidden_state  # (S, s, H)
    if len(prefixed.reads) != model.config.num_hidden_layers:
        raise _CacheDropped
    return h.reshape(-1, h.shape[-1])
