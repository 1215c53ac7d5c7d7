"""The embedded engine on the tiny model: exact logprobs, batch invariance, pause/resume, weight updates."""
# ruff: noqa: F811  (pytest fixtures imported from engine_fixtures are redefined as test arguments)

from __future__ import annotations

import asyncio
import re

import pytest
import torch

from agentrl.engine.errors import EngineRequestError
from agentrl.engine.protocol import Engine, SamplingParams
from agentrl.engine.sampling import recompute_logprobs

from .engine_fixtures import engine, fresh_engine, greedy, prompts, until, worker_round  # noqa: F401 (fixtures)


def run(coro):
    return asyncio.run(coro)


def test_embedded_engine_implements_the_protocol(engine):
    assert isinstance(engine, Engine)


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(temperature=1.0, max_new_tokens=24, seed=1),
        SamplingParams(temperature=0.6, max_new_tokens=24, seed=2),
        SamplingParams(temperature=1.7, max_new_tokens=24, seed=3),
        SamplingParams(temperature=0.0, max_new_tokens=24),
        SamplingParams(temperature=0.9, top_k=20, max_new_tokens=24, seed=4),
        SamplingParams(temperature=1.2, top_p=0.8, max_new_tokens=24, seed=5),
    ],
    ids=["T1", "T0.6", "T1.7", "greedy", "topk20", "topp0.8"],
)
def test_logprobs_match_a_full_sequence_recompute(engine, prompts, params):
    """Guards the trainer's importance ratios: behaviour logprobs must be what a teacher-forced forward gives."""

    async def go():  # batched with other prompts, so padding and KV cache are exercised
        return await asyncio.gather(*(engine.generate(p, params) for p in prompts))

    gaps = []
    for prompt, gen in zip(prompts, run(go()), strict=True):
        assert len(gen.output_ids) == len(gen.logprobs) == len(gen.versions) > 0
        ref = recompute_logprobs(engine.model, prompt, gen.output_ids, params)
        gaps.append(max(abs(a - b) for a, b in zip(ref, gen.logprobs, strict=True)))
    print(f"max |engine - recompute| logprob gap: {max(gaps):.2e}")
    assert max(gaps) < 1e-4


def _mixed_requests(prompts):
    reqs = []
    for i in range(12):
        reqs.append((prompts[i % len(prompts)],
                     SamplingParams(temperature=[1.0, 0.7, 0.0, 1.4][i % 4], top_k=[-1, 50][i % 2],
                                    max_new_tokens=4 + 3 * i, seed=100 + i)))
    return reqs


def test_batched_requests_equal_one_by_one_with_the_same_seeds(engine, prompts):
    reqs = _mixed_requests(prompts)

    async def batched():
        return await asyncio.gather(*(engine.generate(p, s) for p, s in reqs))

    async def one_by_one():
        return [await engine.generate(p, s) for p, s in reqs]

    together, alone = run(batched()), run(one_by_one())
    for a, b in zip(together, alone, strict=True):
        assert a.output_ids == b.output_ids
        assert a.finish_reason == b.finish_reason
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5, rtol=0)


def test_finished_rows_leave_the_batch_and_a_shared_prompt_is_prefilled_once(fresh_engine, prompts):
    lengths = [2, 5, 9, 16]
    reqs = [(prompts[0], SamplingParams(max_new_tokens=n, seed=n, stop_token_ids=[])) for n in lengths]

    async def go():
        return await asyncio.gather(*(fresh_engine.generate(p, s) for p, s in reqs))

    gens = run(go())
    stats = fresh_engine.stats
    assert stats["batches"] == 1 and stats["prefill_tokens"] == len(prompts[0])
    # each row is fed to a decode step once per token after its first, and never after it finished
    assert stats["decode_rows"] == sum(len(g.output_ids) - 1 for g in gens)
    assert stats["decode_steps"] == max(len(g.output_ids) for g in gens) - 1


def test_request_joining_a_running_batch_gets_its_solo_result(engine, prompts):
    # Greedy: a sampled draw can flip to a neighbouring token when it lands within float noise (~1e-6) of a CDF
    # boundary, and merging caches changes padding, hence that noise; argmax only flips on exact near-ties.
    first = greedy(60)
    late = greedy(12)

    async def go():
        start = engine.stats["decode_steps"]
        long_task = asyncio.create_task(engine.generate(prompts[3], first))
        await until(lambda: engine.stats["decode_steps"] >= start + 3, "the first request to decode")
        joined = await engine.generate(prompts[1], late)
        return joined, await long_task

    batches_before = engine.stats["batches"]
    joined, long = run(go())
    assert engine.stats["batches"] == batches_before + 2
    solo = run(engine.generate(prompts[1], late))
    assert joined.output_ids == solo.output_ids
    torch.testing.assert_close(torch.tensor(joined.logprobs), torch.tensor(solo.logprobs), atol=1e-5, rtol=0)
    assert long.output_ids == run(engine.generate(prompts[3], first)).output_ids


def test_group_members_differ_without_seeds_and_a_seed_reproduces(engine, prompts):
    params = SamplingParams(max_new_tokens=12)

    async def group():
        return await asyncio.gather(*(engine.generate(prompts[0], params) for _ in range(4)))

    gens = run(group())
    assert len({tuple(g.output_ids) for g in gens}) > 1, "GRPO group members must not share a sample"
    seed = gens[2].meta["seed"]
    again = run(engine.generate(prompts[0], SamplingParams(max_new_tokens=12, seed=seed)))
    assert again.output_ids == gens[2].output_ids


def test_stop_token_and_stop_string_end_generation(engine, prompts):
    base = run(engine.generate(prompts[0], greedy(12)))
    target = base.output_ids[4]
    cut = base.output_ids.index(target) + 1
    stopped = run(engine.generate(prompts[0], greedy(12, stop_token_ids=[target])))
    assert stopped.output_ids == base.output_ids[:cut]
    assert stopped.finish_reason == "stop" and stopped.meta["finish_reason"] == {"type": "stop", "matched": target}
    text = engine.tokenizer.decode(base.output_ids[:6])
    needle = text[-3:]
    by_string = run(engine.generate(prompts[0], greedy(12, stop=[needle])))
    assert by_string.finish_reason == "stop" and by_string.meta["finish_reason"]["matched"] == needle
    assert needle in engine.tokenizer.decode(by_string.output_ids)
    assert len(by_string.output_ids) <= 6
    assert base.finish_reason == "length" and base.meta["finish_reason"] == {"type": "length", "length": 12}


def test_pause_finish_lets_running_requests_finish_and_holds_new_ones(fresh_engine, prompts):
    fresh_engine.batch_window_s = 0  # admission follows the inbox at once (worker_round)

    async def go():
        running = asyncio.create_task(fresh_engine.generate(prompts[0], SamplingParams(max_new_tokens=40, seed=1)))
        await until(lambda: fresh_engine.stats["decode_steps"] > 0, "the running request to decode")
        await fresh_engine.pause("finish")  # returns once the running request is done
        assert running.done() and running.result().finish_reason == "length"
        batches = fresh_engine.stats["batches"]
        held = asyncio.create_task(fresh_engine.generate(prompts[1], greedy(3)))
        await until(lambda: fresh_engine.in_flight == 1, "the new request to be queued")
        await worker_round(fresh_engine)  # the worker has seen it: had it ignored the pause, it would have admitted it
        assert not held.done() and fresh_engine.stats["batches"] == batches, "a paused engine must not start new requests"
        await fresh_engine.resume()
        return await asyncio.wait_for(held, 30)

    assert len(run(go()).output_ids) == 3


def test_pause_abort_returns_partial_output(fresh_engine, prompts):
    async def go():
        running = asyncio.create_task(fresh_engine.generate(prompts[0], SamplingParams(max_new_tokens=200, seed=1)))
        await until(lambda: fresh_engine.stats["decode_steps"] >= 2, "the running request to decode")
        await fresh_engine.pause("abort")
        gen = await running
        await fresh_engine.resume()
        return gen

    gen = run(go())
    assert gen.finish_reason == "abort" and gen.meta["finish_reason"]["type"] == "abort"
    assert 0 < len(gen.output_ids) < 200 and len(gen.logprobs) == len(gen.output_ids)


def _perturbed(model, scale=3.0):
    return {k: (v * scale if k.endswith("embed_tokens.weight") else v.clone()) for k, v in model.state_dict().items()}


def test_update_weights_bumps_version_and_new_tokens_carry_it(fresh_engine, prompts):
    before = run(fresh_engine.generate(prompts[0], greedy(8)))
    assert set(before.versions) == {0}
    assert run(fresh_engine.update_weights(_perturbed(fresh_engine.model))) == 1 == fresh_engine.version
    params = SamplingParams(max_new_tokens=8, seed=3)
    after = run(fresh_engine.generate(prompts[0], params))
    assert set(after.versions) == {1}
    ref = recompute_logprobs(fresh_engine.model, prompts[0], after.output_ids, params)
    assert max(abs(a - b) for a, b in zip(ref, after.logprobs, strict=True)) < 1e-4  # sampled from the new weights
    assert run(fresh_engine.update_weights(fresh_engine.model.state_dict(), version=7)) == 7


def test_update_in_place_pause_gives_one_generation_two_versions(fresh_engine, prompts):
    async def go():
        task = asyncio.create_task(fresh_engine.generate(prompts[0], SamplingParams(max_new_tokens=80, seed=5)))
        await until(lambda: fresh_engine.stats["decode_steps"] >= 3, "the running request to decode")
        await fresh_engine.pause("in_place")
        await fresh_engine.update_weights(_perturbed(fresh_engine.model, 1.5))
        await fresh_engine.resume()
        return await task

    gen = run(go())
    assert gen.finish_reason == "length" and len(gen.output_ids) == 80
    switch = gen.versions.index(1)
    assert 3 <= switch < 80 and gen.versions == [0] * switch + [1] * (80 - switch)


def test_update_weights_from_directory_and_refusal_of_mismatched_weights(fresh_engine, tmp_path):
    fresh_engine.model.save_pretrained(tmp_path)
    assert run(fresh_engine.update_weights(path=str(tmp_path))) == 1
    bad = {"not.a.weight": torch.zeros(2)}
    with pytest.raises(EngineRequestError, match=re.escape("weights do not fit the model: unexpected: not.a.weight")):
        run(fresh_engine.update_weights(bad))
    assert fresh_engine.version == 1
    with pytest.raises(EngineRequestError, match="holds no weights"):
        run(fresh_engine.update_weights(path=str(tmp_path / "nowhere")))


@pytest.mark.parametrize(
    ("ids", "params", "message"),
    [
        ([], SamplingParams(), "input_ids is empty"),
        ([10**9], SamplingParams(), "input_ids must be integers in [0, 49152)"),
        ([1, 2], SamplingParams(max_new_tokens=5000), "exceeds the model's maximum context length of 4096"),
        ([1, 2], SamplingParams(temperature=-0.5), "temperature must be a finite number >= 0"),
    ],
)
def test_invalid_requests_raise_clear_errors(engine, ids, params, message):
    with pytest.raises(EngineRequestError, match=re.escape(message)):
        run(engine.generate(ids, params))


def test_cancelled_request_leaves_the_engine_working(engine, prompts):
    async def go():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(engine.generate(prompts[0], SamplingParams(max_new_tokens=2000)), 0.3)
        return await asyncio.wait_for(engine.generate(prompts[1], greedy(4)), 30)

    assert len(run(go()).output_ids) == 4


def test_zero_max_new_tokens_returns_empty_length(engine, prompts):
    gen = run(engine.generate(prompts[0], SamplingParams(max_new_tokens=0)))
    assert gen.output_ids == [] and gen.finish_reason == "length"


def test_push_weights_shares_the_trainers_tensors_in_sync_mode_and_copies_otherwise(prompts):
    """EmbeddedEngine.push_weights: on an engine_view that shares the trainer's weights only the version moves
    (a trainer update is visible without any copy); on a private copy the tensors are copied in place."""
    from agentrl.engine.embedded import EmbeddedEngine, engine_view, shares_weights
    from agentrl.models import load_model

    params = SamplingParams(max_new_tokens=8, seed=3)

    async def go(share: bool):
        trainer = load_model("tiny").train()
        engine = EmbeddedEngine(engine_view(trainer, share_weights=share), seed=0)
        try:
            assert shares_weights(engine.model, trainer) == share and trainer.training
            before = await engine.generate(prompts[0], params)
            with torch.no_grad():  # a "training step"
                trainer.get_input_embeddings().weight.mul_(3.0)
            await engine.push_weights(trainer, version=5, staging_dir=None)
            after = await engine.generate(prompts[0], params)
            same = all(torch.equal(a, b) for a, b in zip(engine.model.state_dict().values(),
                                                         trainer.state_dict().values(), strict=True))
            return before, after, engine.version, same, shares_weights(engine.model, trainer)
        finally:
            await engine.close()

    for share in (True, False):
        before, after, version, same, shared = run(go(share))
        assert version == 5 and set(after.versions) == {5} and set(before.versions) == {0}
        assert same and shared == share
        assert after.logprobs != before.logprobs  # sampled from the updated weights


def test_a_failed_prefill_fails_its_requests_instead_of_losing_them(monkeypatch):
    """A prefill that raises (out of memory on a GPU, a kernel error) used to drop the admitted requests from the
    queue without answering them: their callers waited forever. They now fail with EngineError, and the engine
    serves the next request."""
    from agentrl.engine import kv_batch
    from agentrl.engine.embedded import EmbeddedEngine
    from agentrl.errors import EngineError
    from agentrl.models import load_model, load_tokenizer

    tok = load_tokenizer("tiny")
    engine = EmbeddedEngine(load_model("tiny"), tok, seed=0)
    real = kv_batch.KVBatch.prefill.__func__
    calls = []

    def failing_once(cls, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("CUDA out of memory (simulated)")
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(kv_batch.KVBatch, "prefill", classmethod(failing_once))

    async def go():
        try:
            with pytest.raises(EngineError, match="prefill failed: RuntimeError: CUDA out of memory"):
                await asyncio.wait_for(engine.generate([1, 2, 3], SamplingParams(max_new_tokens=4, seed=1)), 60)
            gen = await asyncio.wait_for(engine.generate([1, 2, 3], SamplingParams(max_new_tokens=4, seed=1)), 60)
            assert len(gen.output_ids) == 4
        finally:
            await engine.close()

    asyncio.run(go())
