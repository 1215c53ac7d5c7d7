"""Keys and values of finished requests kept per session, so an agent's next turn prefills only what is new.

An agent loop sends each turn as the whole conversation so far (token-in/token-out: the previous action's ids
exactly, then the observation and the next assistant header). Without a cache every turn prefills the system
prompt, the issue and every earlier turn again; on a CPU that re-prefill is most of a multi-turn episode's
cost. SGLang reuses such prefixes through its radix cache; the embedded engine keeps the last request of each
session (keyed by `session_id`, which the agent loop sets to the trajectory id) and starts the next request of
that session from it when its input begins with the cached tokens.

Entries are dropped when the weights change (they hold activations of the old weights), when their session
takes them, and oldest first beyond `max_bytes`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from torch import Tensor

DEFAULT_MAX_BYTES = 2 << 30
"""2 GiB: about 45k tokens of SmolLM2-135M keys and values in fp32 (30 layers × 3 KV heads × 64 dims)."""


@dataclass
class Past:
    """The cached keys and values of `tokens`: one (keys, values) pair of shape (1, H, len(tokens), D) per layer."""

    tokens: tuple[int, ...]
    kv: list[tuple[Tensor, Tensor]]

    @property
    def nbytes(self) -> int:
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in self.kv)


class SessionCache:
    """LRU of Past entries by session id, bounded by bytes. Used only from the engine's worker thread."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, Past] = OrderedDict()
        self._bytes = 0
        self.stats = {"hits": 0, "misses": 0, "reused_tokens": 0, "evicted": 0}

    def __len__(self) -> int:
        return len(self._entries)

    def store(self, session_id: str | None, past: Past) -> None:
        """Keep `past` as the latest state of `session_id` (replacing an older one), evicting the oldest beyond
        max_bytes; an entry larger than the whole budget is not kept."""
        if session_id is None or not past.tokens:
            return
        self._drop(session_id)
        size = past.nbytes
        if size > self.max_bytes:
            return
        while self._entries and self._bytes + size > self.max_bytes:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.nbytes
            self.stats["evicted"] += 1
        self._entries[session_id] = past
        self._bytes += size

    def take(self, session_id: str | None, input_ids: list[int]) -> Past | None:
        """The session's cached state if `input_ids` extends it by at least one token (removed from the cache:
        the request will store its own longer state when it finishes); else None."""
        past = self._entries.get(session_id) if session_id is not None else None
        n = len(past.tokens) if past else 0
        if past is None or len(input_ids) <= n or tuple(input_ids[:n]) != past.tokens:
            self.stats["misses"] += 1
            return None
        self._drop(session_id)
        self.stats["hits"] += 1
        self.stats["reused_tokens"] += n
        return past

    def clear(self) -> None:
        """Forget everything (the weights changed)."""
        self._entries.clear()
        self._bytes = 0

    def _drop(self, session_id: str) -> None:
        old = self._entries.pop(session_id, None)
        if old is not None:
            self._bytes -= old.nbytes
