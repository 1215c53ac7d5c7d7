"""The session cache: an agent's next turn starts from the keys and values of its previous turn, with the same
tokens and logprobs as a full prefill; only new tokens are computed; weight updates and budget evict."""
# ruff: noqa: F811  (pytest fixtures imported from engine_fixtures are redefined as test arguments)

from __future__ import annotations

import asyncio
import copy

import torch

from agentrl.engine.embedded import EmbeddedEngine
from agentrl.engine.protocol import SamplingParams
from agentrl.engine.sampling import recompute_logprobs
from agentrl.engine.session_cache import Past, SessionCache

from .engine_fixtures import engine, prompts  # noqa: F401 (fixtures)


async def three_turns(eng, prompts, params):
    """Concurrent multi-turn sessions: each turn sends the whole conversation (previous ids + an observation)."""

    async def session(k, prompt):
        ids, outs = list(prompt), []
        for turn in range(3):
            gen = await eng.generate(ids, params, session_id=f"s{k}")
            outs.append(gen)
            ids = ids + gen.output_ids + [(7 * turn + k) % 400 + 5 for _ in range(6)]  # the next "observation"
        return ids, outs

    return await asyncio.gather(*(session(k, p) for k, p in enumerate(prompts)))


def test_later_turns_reuse_the_session_and_match_a_full_prefill(engine, prompts):
    params = SamplingParams(temperature=0.8, max_new_tokens=10, seed=11)
    cached = EmbeddedEngine(copy.deepcopy(engine.model), engine.tokenizer, seed=0)
    plain = EmbeddedEngine(copy.deepcopy(engine.model), engine.tokenizer, seed=0, session_cache_bytes=0)
    try:
        with_cache = asyncio.run(three_turns(cached, prompts[:4], params))
        without = asyncio.run(three_turns(plain, prompts[:4], params))
        for (ids_a, outs_a), (ids_b, outs_b) in zip(with_cache, without, strict=True):
            assert ids_a == ids_b  # the same samples (seeded) whatever the prefill path
            for a, b in zip(outs_a, outs_b, strict=True):
                torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4, rtol=0)
        hits = cached.sessions.stats["hits"]
        assert hits == 8 and plain.sessions.stats["hits"] == 0  # turns 2 and 3 of four sessions
        assert cached.stats["prefill_tokens"] < plain.stats["prefill_tokens"] - cached.sessions.stats["reused_tokens"] + 1
        # and the behaviour logprobs are still what a teacher-forced forward gives
        ids, outs = with_cache[0]
        last = outs[-1]
        prompt = ids[: len(ids) - 6 - len(last.output_ids)]
        ref = recompute_logprobs(engine.model, prompt, last.output_ids, params)
        torch.testing.assert_close(torch.tensor(last.logprobs), torch.as_tensor(ref).float(), atol=1e-4, rtol=0)
    finally:
        asyncio.run(cached.close())
        asyncio.run(plain.close())


def test_a_weight_update_empties_the_cache(engine, prompts):
    eng = EmbeddedEngine(copy.deepcopy(engine.model), engine.tokenizer, seed=0)
    params = SamplingParams(temperature=0.0, max_new_tokens=4)

    async def go():
        first = await eng.generate(prompts[0], params, session_id="s")
        assert len(eng.sessions) == 1
        await eng.update_weights({k: v.clone() for k, v in eng.model.state_dict().items()})
        assert len(eng.sessions) == 0  # its keys and values came from the old weights
        await eng.generate(prompts[0] + first.output_ids + [9, 9], params, session_id="s")
        return eng.sessions.stats

    try:
        stats = asyncio.run(go())
        assert stats["hits"] == 0 and stats["misses"] == 2
    finally:
        asyncio.run(eng.close())


def _past(n: int, size: int = 4) -> Past:
    return Past(tuple(range(n)), [(torch.zeros(1, 1, n, size), torch.zeros(1, 1, n, size))])


def test_cache_takes_only_extensions_and_evicts_oldest_beyond_its_budget():
    one = _past(8).nbytes
    cache = SessionCache(max_bytes=2 * one)
    cache.store("a", _past(8))
    assert cache.take("a", list(range(8))) is None  # no new token to compute: not a hit
    assert cache.take("a", [1] + list(range(8))) is None  # not an extension
    assert cache.take("a", list(range(9))) is not None and len(cache) == 0  # taken: the request re-stores it
    cache.store("a", _past(8))
    cache.store("b", _past(8))
    cache.store("c", _past(8))  # over budget: "a" goes
    assert cache.take("a", list(range(9))) is None and cache.take("b", list(range(9))) is not None
    cache.store("huge", _past(64))  # larger than the whole budget: not kept
    assert "huge" not in cache._entries and cache.stats["evicted"] == 1
