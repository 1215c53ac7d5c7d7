"""A left-padded batch of sequences decoding together over one HF DynamicCache.

Rows can leave (finished requests are dropped before the next forward, and padding columns that no row needs
any more are trimmed) and rows can join (a freshly prefilled batch is merged in at a step boundary by left-padding
the shorter cache). Identical prompts are prefilled once and their cache rows copied, so a GRPO group's shared
prompt costs one prefill, and a prefix that several prompts share (the system prompt; a group's first turn in
its later turns) is computed once per prefill chunk. Positions come from the attention mask, so a row's logits
do not depend on how much padding it carries, at the left or in the middle (up to floating-point reduction order).

Decoding never reads the device on the host: the token each row feeds next stays on the device (`pending`), and
where each row's first real column lies is tracked on the host (`start`), so dropping rows and trimming the
padding they leave needs no look at the mask.
"""

from __future__ import annotations

import inspect

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from agentrl.engine.session_cache import Past

PREFILL_TOKEN_BUDGET = 8192
"""Padded prompt positions per prefill forward (rows × longest row); a longer prompt gets a forward of its own."""
MIN_SHARED_PREFIX = 32
"""A prefix shared by a prefill chunk's prompts runs once from this many tokens on."""


class GrowingLayer(DynamicLayer):
    """A DynamicLayer whose keys and values sit in buffers with spare room along the sequence, so a decode step
    writes its column in place instead of concatenating (copying) the whole cache: with dozens of rows of ~1k
    tokens, the per-step `torch.cat` of every layer moved gigabytes per token. Assigning `keys`/`values` (what
    KVBatch does to select, trim and merge rows) replaces the buffer; the next update regrows it by half."""

    def __init__(self):
        super().__init__()
        self._k = self._v = None
        self._nk = self._nv = 0  # filled length of each buffer (KVBatch assigns keys, then values)

    @property
    def keys(self):
        return None if self._k is None else self._k[:, :, : self._nk]

    @keys.setter
    def keys(self, t):
        self._k, self._nk = t, (0 if t is None or t.dim() < 3 else t.shape[-2])

    @property
    def values(self):
        return None if self._v is None else self._v[:, :, : self._nv]

    @values.setter
    def values(self, t):
        self._v, self._nv = t, (0 if t is None or t.dim() < 3 else t.shape[-2])

    def lazy_initialization(self, key_states, value_states) -> None:
        self.device, self.is_initialized = key_states.device, True

    def get_seq_length(self) -> int:
        return self._nk

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, new = self._nk, key_states.shape[-2]
        if self._k is None or self._k.shape[0] != key_states.shape[0] or n + new > self._k.shape[-2]:
            room = n + new + max((n + new) // 2, 64)
            shape = (*key_states.shape[:2], room, key_states.shape[-1])
            k, v = key_states.new_empty(shape), value_states.new_empty(shape)
            if n:
                k[:, :, :n], v[:, :, :n] = self._k[:, :, :n], self._v[:, :, :n]
            self._k, self._v = k, v
        self._k[:, :, n : n + new] = key_states
        self._v[:, :, n : n + new] = value_states
        self._nk = self._nv = n + new
        return self.keys, self.values


def new_cache(model) -> DynamicCache:
    """An empty cache of GrowingLayers for model; refuses layer kinds whose state cannot be padded or re-batched."""
    cache = DynamicCache(config=model.config)
    kinds = {type(layer).__name__ for layer in cache.layers if type(layer) is not DynamicLayer}
    if kinds:
        raise ValueError(
            f"the embedded engine supports full-attention decoder models only; this model's cache has {sorted(kinds)}"
        )
    cache.layers = [GrowingLayer() for _ in cache.layers]
    return cache


def cache_kwarg(model) -> str:
    """The forward() keyword for the KV cache: `cache` in transformers >= 5.x, `past_key_values` before."""
    name = getattr(model, "_agentrl_cache_kwarg", None)
    if name is None:
        name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        model._agentrl_cache_kwarg = name
    return name


def decode_mask(model, mask: torch.Tensor) -> torch.Tensor:
    """The attention mask of a one-token decode step: for sdpa and eager attention the (B, 1, 1, L) 4-D mask they
    consume (bool for sdpa, additive for eager), which transformers takes as it is; given the 2-D mask, it first
    checks on the host whether any column is padding (masking_utils._ignore_causal_mask_sdpa), a device read per
    step. Other attention implementations (flash) get the 2-D mask."""
    impl = getattr(model.config, "_attn_implementation", None)
    if impl == "sdpa":
        return mask[:, None, None, :].bool()
    if impl == "eager":
        dtype = next(model.parameters()).dtype
        keep = mask[:, None, None, :].bool()
        return torch.zeros(keep.shape, dtype=dtype, device=mask.device).masked_fill_(~keep, torch.finfo(dtype).min)
    return mask


class KVBatch:
    """Rows decoding together: cache (B, H, L, D) per layer, mask (B, L), next position per row (B,), the token
    each row feeds next (B,), and (host) each row's first real column."""

    def __init__(self, cache: DynamicCache, mask: torch.Tensor, next_pos: torch.Tensor, start: list[int]):
        self.cache = cache
        self.mask = mask  # (B, L) 1 = real token in the cache, 0 = left padding
        self.next_pos = next_pos  # (B,) position of the next token each row feeds
        self.pending = torch.zeros_like(next_pos)  # (B,) the token each row feeds next (set by its sampler)
        self.start = start  # host: each row's first real column of mask

    @property
    def size(self) -> int:
        """Number of rows."""
        return self.mask.shape[0]

    @classmethod
    def prefill(cls, model, prompts: list[list[int]], device: torch.device, token_budget: int = PREFILL_TOKEN_BUDGET,
                min_shared: int = MIN_SHARED_PREFIX, pasts: list[Past | None] | None = None,
                ) -> tuple[KVBatch, torch.Tensor, int]:
        """Run the prompts through model: those with a `pasts` entry (a session's cached keys and values of
        their first tokens, session_cache.py) from it, the others from scratch (`_prefill_plain`). Returns
        (batch, logits (B, V) at each prompt's last position in request order, prompt tokens computed)."""
        pasts = pasts if pasts is not None else [None] * len(prompts)
        parts: list[tuple[list[int], KVBatch, torch.Tensor]] = []
        computed = 0
        plain = [i for i, p in enumerate(pasts) if p is None]
        if plain:
            batch, logits, n = cls._prefill_plain(model, [prompts[i] for i in plain], device, token_budget, min_shared)
            parts.append((plain, batch, logits))
            computed += n
        chunk: list[int] = []
        resumed = [i for i, p in enumerate(pasts) if p is not None]
        for k, i in enumerate(resumed):
            chunk.append(i)
            nxt = resumed[k + 1] if k + 1 < len(resumed) else None
            if nxt is None or (len(chunk) + 1) * max(len(prompts[j]) for j in [*chunk, nxt]) > token_budget:
                batch, logits, n = cls._prefill_from_pasts(model, [prompts[j] for j in chunk],
                                                           [pasts[j] for j in chunk], device)
                parts.append((chunk, batch, logits))
                computed += n
                chunk = []
        order = [i for rows, _, _ in parts for i in rows]
        batch = parts[0][1]
        for _, other, _ in parts[1:]:
            batch.merge(other)
        logits = torch.cat([lg for _, _, lg in parts])
        if order != list(range(len(prompts))):
            position = {i: row for row, i in enumerate(order)}
            rows = [position[i] for i in range(len(prompts))]
            logits = logits[batch._select(rows)]
        return batch, logits, computed

    @classmethod
    def _prefill_from_pasts(cls, model, prompts: list[list[int]], pasts: list[Past],
                            device: torch.device) -> tuple[KVBatch, torch.Tensor, int]:
        """Rows [left padding | cached past | left padding | new tokens]: the pasts' keys and values become the
        cache, and only each prompt's tokens after its past are computed."""
        width = max(len(p.tokens) for p in pasts)
        cache = new_cache(model)
        for n, layer in enumerate(cache.layers):
            keys = torch.cat([_pad_left(p.kv[n][0], width - len(p.tokens), 2) for p in pasts]).to(device)
            values = torch.cat([_pad_left(p.kv[n][1], width - len(p.tokens), 2) for p in pasts]).to(device)
            layer.lazy_initialization(keys, values)
            layer.keys, layer.values = keys, values
        past_mask = torch.zeros((len(pasts), width), dtype=torch.long, device="cpu")
        for row, p in enumerate(pasts):
            past_mask[row, width - len(p.tokens):] = 1
        tails = [prompt[len(p.tokens):] for prompt, p in zip(prompts, pasts, strict=True)]
        ids, own = _left_padded(tails, device)
        past_mask = past_mask.to(device)
        mask = torch.cat([past_mask, own], dim=1)
        positions = past_mask.sum(-1, keepdim=True) + (own.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1,
                    **{cache_kwarg(model): cache})
        start = [width - len(p.tokens) if p.tokens else width + ids.shape[1] - len(t)
                 for p, t in zip(pasts, tails, strict=True)]
        return cls(cache, mask, mask.sum(-1), start), out.logits[:, -1, :].float(), sum(len(t) for t in tails)

    def row_past(self, row: int, tokens: list[int]) -> Past:
        """A copy of one row's keys and values without padding, as the session cache keeps them; `tokens` is the
        row's sequence (prompt + output), of which the cache holds all but the last sampled token."""
        cols = torch.nonzero(self.mask[row]).flatten()
        kv = [(layer.keys[row : row + 1, :, cols], layer.values[row : row + 1, :, cols]) for layer in self.cache.layers]
        return Past(tuple(tokens[: cols.numel()]), kv)

    @classmethod
    def _prefill_plain(cls, model, prompts: list[list[int]], device: torch.device, token_budget: int,
                       min_shared: int) -> tuple[KVBatch, torch.Tensor, int]:
        """Run the prompts through model in chunks, computing each shared prefix once; duplicates run once.

        Unique prompts are sorted (token order, so prompts that share a beginning sit together) and prefilled
        at most `token_budget` padded positions (rows × longest) at a time, then merged: one padded forward
        over dozens of long prompts would build a (rows, heads, L, L) attention mask and pad every row to the
        longest (a swe_lite evaluation admits 75 prompts of ~1k tokens at once). Within a chunk, the prefix
        all its prompts share (the system prompt and tool specs; a GRPO group's whole first turn in its later
        turns) runs once when it is at least `min_shared` tokens. Returns (batch, logits (B, V) at each
        prompt's last position, number of prompt tokens computed).
        """
        unique: dict[tuple[int, ...], int] = {}
        index = [unique.setdefault(tuple(p), len(unique)) for p in prompts]
        keys = list(unique)
        order = sorted(range(len(keys)), key=lambda i: keys[i])
        batch, parts, computed = None, [], 0
        for chunk in _chunks([keys[i] for i in order], token_budget, min_shared):
            part, logits, done = cls._prefill_rows(model, [list(keys[order[i]]) for i in chunk], device, min_shared)
            if batch is None:
                batch = part
            else:
                batch.merge(part)
            parts.append(logits)
            computed += done
        logits = torch.cat(parts)  # rows in `order`
        position = {u: row for row, u in enumerate(order)}
        rows = [position[u] for u in index]
        if rows != list(range(len(order))):
            logits = logits[batch._select(rows)]
        return batch, logits, computed

    @classmethod
    def _prefill_rows(cls, model, prompts: list[list[int]], device: torch.device,
                      min_shared: int) -> tuple[KVBatch, torch.Tensor, int]:
        """One chunk: (batch, last-position logits (B, V) in float32, tokens computed).

        Rows are [shared prefix | left padding | own suffix]; positions come from the mask, so the padding in
        the middle changes nothing (decode steps and merges already rely on that)."""
        shared = _common_prefix(prompts) if len(prompts) > 1 else 0
        shared = min(shared, min(len(p) for p in prompts) - 1)  # every row keeps ≥ 1 token of its own
        cache = new_cache(model)
        if shared < min_shared:
            shared = 0
        else:
            model(input_ids=torch.tensor([prompts[0][:shared]], device=device),
                  position_ids=torch.arange(shared, device=device)[None], use_cache=True, logits_to_keep=1,
                  **{cache_kwarg(model): cache})
            for layer in cache.layers:
                layer.keys = layer.keys.repeat(len(prompts), 1, 1, 1)
                layer.values = layer.values.repeat(len(prompts), 1, 1, 1)
        tails = [p[shared:] for p in prompts]
        ids, own = _left_padded(tails, device)
        mask = torch.cat([own.new_ones((len(tails), shared)), own], dim=1)
        positions = shared + (own.cumsum(-1) - 1).clamp(min=0)  # (U, W)
        out = model(
            input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1,
            **{cache_kwarg(model): cache},
        )
        start = [0 if shared else ids.shape[1] - len(t) for t in tails]
        return cls(cache, mask, mask.sum(-1), start), out.logits[:, -1, :].float(), shared + sum(len(t) for t in tails)

    def step(self, model, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """Feed one token per row (B,; default: `pending`); returns the next-token logits (B, V) in float32."""
        tokens = self.pending if tokens is None else tokens
        self.mask = torch.cat([self.mask, self.mask.new_ones((self.size, 1))], dim=1)
        out = model(
            input_ids=tokens.unsqueeze(-1), attention_mask=decode_mask(model, self.mask),
            position_ids=self.next_pos.unsqueeze(-1), use_cache=True, **{cache_kwarg(model): self.cache},
        )
        self.next_pos = self.next_pos + 1
        return out.logits[:, -1, :].float()

    def keep(self, rows: list[int]) -> None:
        """Keep only these rows (in this order) and drop padding columns no remaining row needs."""
        if rows == list(range(self.size)):
            return
        self._select(rows)
        if self.size == 0:
            return
        first = min(self.start)
        if first > 0:
            self.mask = self.mask[:, first:]
            self.start = [s - first for s in self.start]
            for layer in self.cache.layers:
                layer.keys = layer.keys[:, :, first:, :]
                layer.values = layer.values[:, :, first:, :]

    def merge(self, other: KVBatch) -> None:
        """Append other's rows after this batch's rows, left-padding whichever cache is shorter."""
        width = max(self.mask.shape[1], other.mask.shape[1])
        self_pad, other_pad = width - self.mask.shape[1], width - other.mask.shape[1]
        self.mask = torch.cat([_pad_left(self.mask, self_pad, 1), _pad_left(other.mask, other_pad, 1)], dim=0)
        for mine, theirs in zip(self.cache.layers, other.cache.layers, strict=True):
            mine.keys = torch.cat([_pad_left(mine.keys, self_pad, 2), _pad_left(theirs.keys, other_pad, 2)], dim=0)
            mine.values = torch.cat(
                [_pad_left(mine.values, self_pad, 2), _pad_left(theirs.values, other_pad, 2)], dim=0
            )
        self.next_pos = torch.cat([self.next_pos, other.next_pos])
        self.pending = torch.cat([self.pending, other.pending])
        self.start = [s + self_pad for s in self.start] + [s + other_pad for s in other.start]

    def _select(self, rows: list[int]) -> torch.Tensor:
        """Index the batch dimension of mask, positions, pending tokens and every cache layer; returns the index
        (one host→device copy)."""
        index = torch.tensor(rows, dtype=torch.long, device=self.mask.device)
        self.mask = self.mask[index]
        self.next_pos = self.next_pos[index]
        self.pending = self.pending[index]
        self.start = [self.start[r] for r in rows]
        for layer in self.cache.layers:
            layer.keys = layer.keys[index]
            layer.values = layer.values[index]
        return index


def _chunks(prompts: list, token_budget: int, min_shared: int) -> list[list[int]]:
    """Indices of sorted `prompts` cut into prefill chunks: runs that share ≥ min_shared leading tokens stay
    together (so their prefix runs once), the others are packed side by side; no chunk holds more than
    token_budget padded positions (rows × longest) unless one prompt alone does."""
    runs: list[list[int]] = []
    common = 0
    for i, p in enumerate(prompts):
        if runs and (c := _common_prefix([prompts[runs[-1][0]][:common], p])) >= min_shared:
            runs[-1].append(i)
            common = c
        else:
            runs.append([i])
            common = len(p)
    chunks: list[list[int]] = []
    loose = False  # the last chunk holds runs of one (nothing shared), so the next such run may join it
    for run in runs:
        if not (loose and len(run) == 1):
            chunks.append([])
        loose = len(run) == 1
        for i in run:
            chunk = chunks[-1]
            if chunk and (len(chunk) + 1) * max(len(prompts[j]) for j in [*chunk, i]) > token_budget:
                chunks.append([])
            chunks[-1].append(i)
    return chunks


def _left_padded(rows: list[list[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, mask) of token lists left-padded to the longest: (B, W) long tensors, mask 1 on real tokens."""
    width = max(len(r) for r in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long, device="cpu")  # built on the host, moved once
    mask = torch.zeros((len(rows), width), dtype=torch.long, device="cpu")
    for i, row in enumerate(rows):
        ids[i, width - len(row):] = torch.tensor(row, dtype=torch.long)
        mask[i, width - len(row):] = 1
    return ids.to(device), mask.to(device)


def _common_prefix(prompts: list[list[int]]) -> int:
    """Length of the longest prefix every prompt starts with."""
    first, n = prompts[0], min(len(p) for p in prompts)
    for p in prompts[1:]:
        n = next((i for i in range(n) if p[i] != first[i]), n)
    return n


def _pad_left(t: torch.Tensor, n: int, dim: int) -> torch.Tensor:
    """t with n zeros prepended along dim."""
    if n == 0:
        return t
    shape = list(t.shape)
    shape[dim] = n
    return torch.cat([t.new_zeros(shape), t], dim=dim)
