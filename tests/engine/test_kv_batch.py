"""KVBatch prefill in chunks, with shared prefixes computed once, equals one padded forward: the same
last-position logits and the same next-step logits, rows back in request order, duplicate prompts prefilled once."""

from __future__ import annotations

import torch

from agentrl.engine.kv_batch import KVBatch
from agentrl.models import load_model


def test_chunked_prefill_equals_one_forward_and_keeps_request_order():
    model = load_model("tiny").eval()
    g = torch.Generator().manual_seed(0)
    lengths = [5, 40, 17, 40, 3, 29, 11]
    prompts = [torch.randint(1, 500, (n,), generator=g).tolist() for n in lengths]
    prompts.insert(4, list(prompts[1]))  # a duplicate: computed once, its row copied
    device = torch.device("cpu")
    with torch.no_grad():
        whole, whole_logits, whole_n = KVBatch.prefill(model, prompts, device, token_budget=10**9, min_shared=10**9)
        chunked, chunked_logits, chunked_n = KVBatch.prefill(model, prompts, device, token_budget=64, min_shared=10**9)
        assert whole_n == chunked_n == sum(lengths)  # the duplicate is not computed again
        torch.testing.assert_close(chunked_logits, whole_logits, atol=1e-5, rtol=1e-5)
        assert chunked.next_pos.tolist() == [len(p) for p in prompts]
        for row, prompt in enumerate(prompts):  # each row, alone, gives the same logits: order is the request's
            alone = model(torch.tensor([prompt])).logits[0, -1]
            torch.testing.assert_close(chunked_logits[row], alone, atol=1e-5, rtol=1e-5)
        tokens = torch.randint(1, 500, (len(prompts),), generator=g)
        torch.testing.assert_close(chunked.step(model, tokens), whole.step(model, tokens), atol=1e-5, rtol=1e-5)


def test_a_prompt_longer_than_the_budget_gets_a_forward_of_its_own():
    model = load_model("tiny").eval()
    prompts = [list(range(1, 30)), list(range(2, 9)), list(range(3, 12))]
    with torch.no_grad():
        batch, logits, n = KVBatch.prefill(model, prompts, torch.device("cpu"), token_budget=8)
        whole, whole_logits, _ = KVBatch.prefill(model, prompts, torch.device("cpu"))
    assert n == 29 + 7 + 9 and batch.size == 3
    torch.testing.assert_close(logits, whole_logits, atol=1e-5, rtol=1e-5)


def test_a_shared_prefix_is_computed_once_with_the_same_logits_and_decode_steps():
    """Prompts that start with the same system prompt (and a group's shared first turn) in one chunk: the prefix
    runs once, the rows carry [prefix | padding | own tokens], and logits and later decode steps equal the
    plain prefill's; unrelated prompts in the same call keep working."""
    model = load_model("tiny").eval()
    g = torch.Generator().manual_seed(3)
    system = torch.randint(1, 500, (48,), generator=g).tolist()
    turn = torch.randint(1, 500, (20,), generator=g).tolist()
    tails = [torch.randint(1, 500, (n,), generator=g).tolist() for n in (1, 9, 4, 15)]
    prompts = [system + t for t in tails] + [system + turn + t for t in tails[:2]]
    prompts += [torch.randint(1, 500, (n,), generator=g).tolist() for n in (12, 33)]  # no shared prefix
    device = torch.device("cpu")
    with torch.no_grad():
        plain, plain_logits, plain_n = KVBatch.prefill(model, prompts, device, min_shared=10**9)
        shared, shared_logits, shared_n = KVBatch.prefill(model, prompts, device, min_shared=32)
        assert plain_n == sum(len(p) for p in prompts)
        assert shared_n < plain_n - len(system)  # the 48-token system prompt ran once, not six times
        torch.testing.assert_close(shared_logits, plain_logits, atol=1e-5, rtol=1e-5)
        assert shared.next_pos.tolist() == [len(p) for p in prompts]
        for _ in range(3):
            tokens = torch.randint(1, 500, (len(prompts),), generator=g)
            torch.testing.assert_close(shared.step(model, tokens), plain.step(model, tokens), atol=1e-5, rtol=1e-5)
        shared.keep([5, 0, 6])  # rows leave; padding columns no row needs are dropped
        plain.keep([5, 0, 6])
        tokens = torch.randint(1, 500, (3,), generator=g)
        torch.testing.assert_close(shared.step(model, tokens), plain.step(model, tokens), atol=1e-5, rtol=1e-5)


def test_decode_steps_write_the_cache_in_place_and_match_a_concatenating_cache():
    """GrowingLayer: a decode step writes its column into spare room (no copy of the whole cache per token, the
    per-step torch.cat of DynamicLayer), with the same logits as HF's concatenating DynamicLayer."""
    from transformers.cache_utils import DynamicLayer

    from agentrl.engine import kv_batch

    model = load_model("tiny").eval()
    g = torch.Generator().manual_seed(5)
    prompts = [torch.randint(1, 500, (n,), generator=g).tolist() for n in (9, 30, 17)]
    device = torch.device("cpu")
    with torch.no_grad():
        growing, logits, _ = KVBatch.prefill(model, prompts, device)
        cache = kv_batch.new_cache(model)
        assert all(isinstance(layer, kv_batch.GrowingLayer) for layer in cache.layers)
        original = kv_batch.new_cache

        def concatenating(m):
            c = original(m)
            c.layers = [DynamicLayer() for _ in c.layers]
            return c

        kv_batch.new_cache = concatenating
        try:
            plain, plain_logits, _ = KVBatch.prefill(model, prompts, device)
        finally:
            kv_batch.new_cache = original
        torch.testing.assert_close(logits, plain_logits, atol=1e-5, rtol=1e-5)
        layer = growing.cache.layers[0]
        tokens = logits.argmax(-1)
        growing.step(model, tokens)
        plain.step(model, tokens)
        buffer = layer._k.data_ptr()
        for _ in range(4):
            tokens = torch.randint(1, 500, (3,), generator=g)
            torch.testing.assert_close(growing.step(model, tokens), plain.step(model, tokens), atol=1e-5, rtol=1e-5)
        assert layer._k.data_ptr() == buffer  # written in place: no reallocation per token
        assert layer.keys.shape == plain.cache.layers[0].keys.shape


def test_decode_steps_with_the_4d_mask_equal_full_forwards_and_track_padding_on_the_host():
    """A decode step passes a ready 4-D mask (bool for sdpa, additive for eager: transformers would read the 2-D
    one on the host), and rows leaving trim the padding from host bookkeeping (KVBatch.start) instead of a look at
    the mask; each row's logits still equal one full forward of its own tokens, under both attention kernels."""
    g = torch.Generator().manual_seed(3)
    prompts = [torch.randint(1, 500, (n,), generator=g).tolist() for n in (23, 6, 14, 31)]
    for impl in ("sdpa", "eager"):
        model = load_model("tiny").eval()
        model.config._attn_implementation = impl
        with torch.no_grad():
            batch, _, _ = KVBatch.prefill(model, prompts, torch.device("cpu"))
            seqs = [list(p) for p in prompts]
            for step in range(3):
                tokens = torch.randint(1, 500, (len(seqs),), generator=g)
                logits = batch.step(model, tokens)
                for row, t in enumerate(tokens.tolist()):
                    seqs[row].append(t)
                    alone = model(torch.tensor([seqs[row]])).logits[0, -1]
                    torch.testing.assert_close(logits[row], alone, atol=1e-5, rtol=1e-5, msg=f"{impl} {step}")
                if step == 0:  # the longest prompts leave: the columns only they used go
                    batch.keep([1, 2])
                    seqs = [seqs[1], seqs[2]]
                    assert batch.mask.shape[1] == max(map(len, seqs)) and min(batch.start) == 0
                    assert batch.start == [int((~batch.mask[r].bool()).sum()) for r in range(2)]
