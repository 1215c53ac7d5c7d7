"""SGLangClient over real HTTP: against `agentrl serve` in a subprocess and in-process servers on loopback."""
# ruff: noqa: F811  (pytest fixtures imported from engine_fixtures are redefined as test arguments)

from __future__ import annotations

import asyncio
import copy
import re
import socket
import time

import pytest
import torch

from agentrl.engine.errors import EngineRequestError, EngineUnavailable
from agentrl.engine.protocol import Engine, SamplingParams
from agentrl.engine.sglang_client import (
    SGLangClient,
    WeightSyncError,
    error_message,
    parse_generate_response,
    version_number,
)

from .engine_fixtures import engine, fresh_engine, greedy, prompts, served, server_process, until  # noqa: F401


def _requests(prompts):
    return [(prompts[i % len(prompts)], SamplingParams(temperature=[1.0, 0.0, 0.7][i % 3], max_new_tokens=6 + 2 * i,
                                                       seed=40 + i)) for i in range(8)]


@pytest.mark.slow
def test_client_against_agentrl_serve_reproduces_the_embedded_engine(server_process, engine, prompts):
    reqs = _requests(prompts)
    server = server_process.start()

    async def remote():
        client = SGLangClient(server)
        try:
            assert isinstance(client, Engine)
            return await asyncio.gather(*(client.generate(p, s, session_id=f"t{i}") for i, (p, s) in enumerate(reqs)))
        finally:
            await client.close()

    async def local():
        return await asyncio.gather(*(engine.generate(p, s) for p, s in reqs))

    over_http, in_process = asyncio.run(remote()), asyncio.run(local())
    for a, b in zip(over_http, in_process, strict=True):
        assert a.output_ids == b.output_ids and a.finish_reason == b.finish_reason and a.versions == b.versions
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5, rtol=0)


def test_unreachable_server_raises_after_the_deadline():
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def go():
        client = SGLangClient(f"http://127.0.0.1:{port}", retry_deadline_s=0.5, backoff_s=0.05)
        try:
            await client.generate([1, 2], greedy(2))
        finally:
            await client.close()

    started = time.monotonic()
    with pytest.raises(EngineUnavailable, match=r"generate failed \d+ time\(s\) over 0s on http://127.0.0.1:\d+; last"):
        asyncio.run(go())
    assert time.monotonic() - started < 5


def test_invalid_request_raises_engine_request_error_with_the_server_message(engine):
    async def go():
        async with served(engine) as url:
            client = SGLangClient(url)
            try:
                await client.generate([1, 2], SamplingParams(temperature=-1.0))
            finally:
                await client.close()

    with pytest.raises(EngineRequestError, match=re.escape("HTTP 400: temperature must be a finite number >= 0")):
        asyncio.run(go())


def test_error_message_reads_all_four_sglang_envelopes():
    assert error_message({"error": "unknown field `max_tokens`, expected one of …"}).startswith("unknown field")
    assert error_message({"object": "error", "message": "Field required", "type": "Bad Request", "param": None,
                          "code": 400}) == "Field required"
    assert error_message({"error": {"message": "Duplicate request ID detected"}}) == "Duplicate request ID detected"
    assert error_message({"object": "error", "message": "timed out", "type": "503", "param": None,
                          "code": 503}) == "timed out"
    assert error_message({"success": False, "message": "no such file"}) == "no such file"


def test_response_parsing_spans_abort_and_mismatches():
    body = {"output_ids": [5, 6, 7], "meta_info": {
        "finish_reason": {"type": "abort", "message": "Aborted", "status_code": None, "err_type": None},
        "weight_version": "step-3", "output_token_logprobs": [[-0.1, 5, None], [-0.2, 6, None], [-0.3, 7, None]],
        "weight_versions": [{"version": "default", "start": 0, "end": 1}, {"version": "step-3", "start": 1, "end": 3}]}}
    gen = parse_generate_response(body)
    assert gen.finish_reason == "abort" and gen.output_ids == [5, 6, 7] and gen.versions == [0, 3, 3]
    assert version_number("default") == 0 and version_number("12") == 12
    body["output_ids"] = [5, 6]
    with pytest.raises(Exception, match="output_ids and output_token_logprobs disagree"):
        parse_generate_response(body)


def test_pause_abort_returns_partial_output_on_http_200(fresh_engine, prompts):
    async def go():
        async with served(fresh_engine) as url:
            client = SGLangClient(url)
            try:
                task = asyncio.create_task(client.generate(prompts[0], SamplingParams(max_new_tokens=300, seed=1)))
                await until(lambda: fresh_engine.stats["decode_steps"] >= 2, "the request to decode")
                await client.pause("abort")
                gen = await task
                held = asyncio.create_task(client.generate(prompts[1], greedy(2)))
                await asyncio.sleep(0)  # the held task's first turn: a client ignoring the pause sends it right here
                assert not held.done() and client.in_flight == 0, "a paused client must hold new requests"
                await client.resume()
                return gen, await held
            finally:
                await client.close()

    gen, later = asyncio.run(go())
    assert gen.finish_reason == "abort" and 0 < len(gen.output_ids) < 300
    assert len(later.output_ids) == 2


def test_weight_update_and_a_pause_give_per_token_versions(fresh_engine, prompts, tmp_path):
    fresh_engine.model.save_pretrained(tmp_path)

    async def go():
        async with served(fresh_engine) as url:
            client = SGLangClient(url)
            try:
                assert await client.update_weights(path=str(tmp_path)) == 1 == client.version
                after = await client.generate(prompts[0], greedy(4))
                info = await client.model_info()
                task = asyncio.create_task(client.generate(prompts[0], SamplingParams(max_new_tokens=60, seed=2)))
                await until(lambda: fresh_engine.stats["decode_steps"] >= 8, "the request to decode")
                await client.pause("in_place")
                await fresh_engine.update_weights(fresh_engine.model.state_dict(), version=2)
                await client.resume()
                spanning = await task
                with pytest.raises(EngineRequestError, match="save the state dict with model.save_pretrained"):
                    await client.update_weights({"w": torch.zeros(1)})
                return after, info, spanning
            finally:
                await client.close()

    after, info, spanning = asyncio.run(go())
    assert after.versions == [1, 1, 1, 1] and info["weight_version"] == "1"
    assert spanning.finish_reason == "length" and spanning.versions[0] == 1 and spanning.versions[-1] == 2
    assert spanning.versions == sorted(spanning.versions)


def test_least_in_flight_routing_and_sticky_sessions(engine, prompts):
    async def go():
        async with served(engine) as a, served(engine) as b:
            client = SGLangClient([a, b])
            try:
                spread = await asyncio.gather(*(client.generate(prompts[0], greedy(3)) for _ in range(6)))
                sticky = [await client.generate(prompts[1], greedy(2), session_id="traj-9") for _ in range(4)]
                return [g.meta["url"] for g in spread], [g.meta["url"] for g in sticky], (a, b)
            finally:
                await client.close()

    spread, sticky, (a, b) = asyncio.run(go())
    assert spread.count(a) == spread.count(b) == 3
    assert len(set(sticky)) == 1


def test_server_killed_mid_request_fails_fast_or_fails_over(server_process, engine, prompts):
    """Guards against a rollout worker hanging forever on a dead server (runs last: it kills the shared one)."""
    dead_url = server_process.start()

    async def go():
        async with served(engine) as live_url:
            client = SGLangClient(dead_url, retry_deadline_s=2.0, backoff_s=0.1)
            both = SGLangClient([dead_url, live_url], retry_deadline_s=10.0, backoff_s=0.1)
            try:
                assert (await client.health()) == {dead_url: True}
                # the server holds the request (paused by another client), so it is in flight when the server
                # dies whatever the machine's speed: a random tiny model can stop on EOS within a second
                pauser = SGLangClient(dead_url)
                await pauser.pause("in_place")
                await pauser.close()
                task = asyncio.create_task(client.generate(prompts[0], SamplingParams(max_new_tokens=4000)))
                await until(lambda: client.in_flight == 1, "the request to be on the wire")
                assert not task.done()
                server_process.kill()
                started = time.monotonic()
                with pytest.raises(EngineUnavailable, match=re.escape("generate failed")):
                    await task
                waited = time.monotonic() - started
                gen = await both.generate(prompts[1], greedy(3), session_id="sticky-to-dead")
                return waited, gen, live_url
            finally:
                await client.close()
                await both.close()

    waited, gen, live_url = asyncio.run(go())
    assert waited < 6.0, "the client must give up at its retry deadline, not hang"
    assert gen.meta["url"] == live_url and len(gen.output_ids) == 3


def hold_forward_until_paused(engine, n: int) -> list[int]:
    """Make engine's worker wait inside its n-th model forward until a pause message is queued, so a weight update
    lands after exactly n forwards (n tokens of a lone request); returns the forward counter."""
    import threading

    queued, calls, put = threading.Event(), [0], engine._inbox.put

    def put_and_signal(item, *args, **kwargs):
        put(item, *args, **kwargs)
        if type(item).__name__ == "_Pause":  # the engine inbox's pause message
            queued.set()

    def hold(module, args, kwargs):  # on the worker thread
        calls[0] += 1
        if calls[0] == n:
            assert queued.wait(120), "the pause never arrived"

    engine._inbox.put = put_and_signal
    engine.model.register_forward_pre_hook(hold, with_kwargs=True)
    return calls


def test_finish_pause_never_aborts_another_clients_requests(fresh_engine, prompts, tmp_path):
    """Guards pause("finish") against sending mode abort, which kills every client's requests on the server:
    it pauses no server, and the update (SGLang's writer lock) waits for the other client's request."""
    fresh_engine.eos_token_ids = frozenset()
    fresh_engine.model.save_pretrained(tmp_path)

    async def go():
        async with served(fresh_engine) as url:
            mine, other = SGLangClient(url), SGLangClient(url)
            try:
                calls = hold_forward_until_paused(fresh_engine, 4)  # their request is mid-generation at any pause
                theirs = asyncio.create_task(other.generate(prompts[0], SamplingParams(max_new_tokens=40, seed=1)))
                await until(lambda: calls[0] >= 4, "the 4th forward")
                await mine.pause("finish")
                await mine.update_weights(path=str(tmp_path), version=1)
                await mine.resume()
                return await theirs
            finally:
                await mine.close()
                await other.close()

    gen = asyncio.run(go())
    assert gen.finish_reason == "length" and len(gen.output_ids) == 40 and gen.versions == [0] * 40


def test_push_weights_mid_generation_gives_exact_per_token_versions(fresh_engine, prompts, tmp_path):
    """The agreed interface: push_weights(model, version=, staging_dir=) saves the model and updates the servers
    with running requests retracted; a generation spanning it switches version once and every token after the
    switch is the new weights' logprob (recomputed over the whole sequence)."""
    fresh_engine.eos_token_ids = frozenset()
    old = copy.deepcopy(fresh_engine.model)
    new = copy.deepcopy(fresh_engine.model)
    with torch.no_grad():
        for p in new.parameters():
            p.add_(0.05 * torch.randn_like(p))

    async def go():
        async with served(fresh_engine) as url:
            client = SGLangClient(url)
            try:
                calls = hold_forward_until_paused(fresh_engine, 5)
                task = asyncio.create_task(client.generate(prompts[0], SamplingParams(max_new_tokens=40, seed=5)))
                # the worker now waits inside its 5th forward for the pause (no timing)
                await until(lambda: calls[0] >= 5, "the 5th forward")
                await client.push_weights(new, version=1, staging_dir=tmp_path / "staging")
                return await task, client.version
            finally:
                await client.close()

    gen, version = asyncio.run(go())
    assert version == 1 and (tmp_path / "staging" / "config.json").is_file()
    k = 5
    assert gen.versions == [0] * k + [1] * (40 - k)
    ids = torch.tensor([prompts[0] + gen.output_ids])
    with torch.no_grad():
        want = [torch.log_softmax(m(ids).logits[0, len(prompts[0]) - 1 : -1].float(), -1)
                .gather(1, torch.tensor(gen.output_ids)[:, None])[:, 0] for m in (old, new)]
    got = torch.tensor(gen.logprobs)
    torch.testing.assert_close(got[:k], want[0][:k], atol=1e-3, rtol=0)
    torch.testing.assert_close(got[k:], want[1][k:], atol=1e-3, rtol=0)


def test_partial_multi_server_update_is_reported_and_the_lagging_server_leaves_routing(engine, prompts, tmp_path):
    """Guards partial weight updates: an update that fails on one server must not leave it serving the old version
    unnoticed. The failed server (here: it demands an admin key this client lacks) stays out of routing until
    an update reaches it."""
    engine.model.save_pretrained(tmp_path)

    async def go():
        async with served(engine) as a, served(engine, admin_api_key="other") as b:
            client = SGLangClient([a, b])
            try:
                with pytest.raises(WeightSyncError, match=re.escape(f"reached 1 of 2 servers; {b}")):
                    await client.update_weights(path=str(tmp_path), version=0)
                urls = [(await client.generate(prompts[0], greedy(1))).meta["url"] for _ in range(4)]
                return urls, a
            finally:
                await client.close()

    urls, a = asyncio.run(go())
    assert urls == [a] * 4


def test_truncated_sampling_is_refused_for_exact_logprobs(engine, prompts):
    """Guards exact behaviour logprobs: SGLang's logprobs under top-p/top-k are full-vocabulary values, not the
    behaviour logprobs; the client refuses such requests (before any HTTP) unless told logprobs are not used."""
    async def go():
        async with served(engine) as url:
            strict, lax = SGLangClient(url), SGLangClient(url, exact_logprobs=False)
            try:
                with pytest.raises(EngineRequestError, match=re.escape("train with rollout.top_p=1 and rollout.top_k=-1")):
                    await strict.generate(prompts[0], SamplingParams(top_p=0.9, max_new_tokens=2))
                with pytest.raises(EngineRequestError, match="top_k=20"):
                    await strict.generate(prompts[0], SamplingParams(top_k=20, max_new_tokens=2))
                greedy_ok = await strict.generate(prompts[0], greedy(2, top_k=20))
                return greedy_ok, await lax.generate(prompts[0], SamplingParams(top_p=0.9, max_new_tokens=2))
            finally:
                await strict.close()
                await lax.close()

    greedy_ok, lax = asyncio.run(go())
    assert len(greedy_ok.output_ids) == len(lax.output_ids) == 2


def test_admin_key_goes_to_control_endpoints_and_api_key_to_generate(fresh_engine, prompts):
    async def go():
        async with served(fresh_engine, api_key="user", admin_api_key="admin") as url:
            good = SGLangClient(url, api_key="user", admin_api_key="admin")
            one_key = SGLangClient(url, api_key="user")
            try:
                gen = await good.generate(prompts[0], greedy(2))
                await good.pause("retract")
                await good.resume()
                with pytest.raises(EngineRequestError, match="HTTP 401"):
                    await one_key.pause("retract")
                return gen
            finally:
                await good.close()
                await one_key.close()

    assert len(asyncio.run(go()).output_ids) == 2
