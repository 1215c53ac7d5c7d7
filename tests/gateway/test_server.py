"""The session gateway over real HTTP on loopback, in front of the tiny model's embedded engine: exact
token-in/token-out across calls, segments when history is edited, tool calls both ways, OpenAI errors."""
# ruff: noqa: F811  (fixtures imported from tests.gateway.fixtures are redefined as test arguments)

from __future__ import annotations

import asyncio
import contextlib
import json

import aiohttp
import pytest

from agentrl.engine.protocol import SamplingParams
from agentrl.gateway import AgentClient, Gateway, GatewayError, SessionLimits
from agentrl.tool_calls import format_call, function_tool
from tests.engine.scripted_engine import ScriptedEngine
from tests.gateway.fixtures import Recording, engine, renderer  # noqa: F401 (fixtures)

SYSTEM = {"role": "system", "content": "You are a terse assistant."}
CALC = function_tool("calc", "Evaluate an arithmetic expression.", {"expression": {"type": "string"}})


@contextlib.asynccontextmanager
async def serving(engine, renderer, **kwargs):
    gw = Gateway(engine, renderer, sampling=SamplingParams(temperature=1.0, max_new_tokens=8), **kwargs)
    await gw.start()
    try:
        yield gw
    finally:
        await gw.close()


def test_multi_turn_session_trains_on_the_exact_sampled_ids(engine, renderer):
    """Guards TITO across calls: the second call's prompt is the first call's prompt + the ids the engine
    sampled (not a re-tokenization of the text the agent sent back) + the new message's delta, and the
    trajectory's action tokens, logprobs and versions are the engine's, id for id."""
    rec = Recording(engine)

    async def go():
        async with serving(rec, renderer) as gw:
            session = gw.open_session(sampling_seed=7)
            client = AgentClient(session.base_url, session.api_key)
            messages = [SYSTEM, {"role": "user", "content": "What is 2 + 3?"}]
            for question in ("And 4 + 4?", "Thanks. And 9 - 1?"):
                reply = await client.chat(messages, max_tokens=8)
                messages += [reply["choices"][0]["message"], {"role": "user", "content": question}]
            await client.chat(messages, max_tokens=8)
            return gw.close_session(session.id), messages

    session, messages = asyncio.run(go())
    (seg,), turns = session.segments()
    assert len(rec.calls) == 3 and len(turns) == 3
    for (prompt, gen), turn in zip(rec.calls, turns, strict=True):
        a, b = turn.action_span
        assert seg.token_ids[:a] == prompt  # each call's prompt is the exact sequence so far
        assert seg.token_ids[a:b] == gen.output_ids
        assert seg.behaviour_logprobs[a:b] == gen.logprobs and seg.versions[a:b] == gen.versions
        assert seg.loss_mask[a:b] == [1] * (b - a)
    assert sum(seg.loss_mask) == sum(len(g.output_ids) for _, g in rec.calls)
    assert session.metrics()["gateway/prefix_mismatch_rate"] == 0.0 and session.metrics()["gateway/segments"] == 1


def test_ids_that_retokenize_differently_are_kept_as_sampled(renderer):
    """Guards the bug TITO exists for: the model sampled "hello" as the two tokens "h" + "ello", which
    re-tokenizing its text would turn into one token; the next prompt and the trajectory keep the two."""
    tok = renderer.tokenizer
    sampled = tok.encode("h", add_special_tokens=False) + tok.encode("ello", add_special_tokens=False)
    assert tok.encode("hello", add_special_tokens=False) != sampled  # the premise: a non-canonical split
    engine = ScriptedEngine([sampled + [renderer.eot_token_id]])

    async def go():
        async with serving(engine, renderer) as gw:
            session = gw.open_session()
            client = AgentClient(session.base_url, session.api_key)
            msgs = [{"role": "user", "content": "Greet me."}]
            reply = await client.chat(msgs)
            assert reply["choices"][0]["message"]["content"] == "hello"
            await client.chat(msgs + [reply["choices"][0]["message"], {"role": "user", "content": "Again."}])
            return gw.close_session(session.id)

    session = asyncio.run(go())
    first = engine.prompts[0] + sampled + [renderer.eot_token_id]
    assert engine.prompts[1][: len(first)] == first
    (seg,), _ = session.segments()
    assert seg.token_ids[: len(first)] == first and session.stats.template_forks == 0


def test_an_edited_history_starts_a_new_segment(engine, renderer):
    """Guards against training wrong tokens: an agent that rewrites an earlier message gets a fresh render (a new
    segment, counted as a prefix mismatch); both segments keep their own sampled ids."""
    rec = Recording(engine)

    async def go():
        async with serving(rec, renderer) as gw:
            session = gw.open_session()
            client = AgentClient(session.base_url, session.api_key)
            first = [SYSTEM, {"role": "user", "content": "Count to three."}]
            reply = await client.chat(first, max_tokens=8)
            edited = [SYSTEM, {"role": "user", "content": "Count to four."}, reply["choices"][0]["message"],
                      {"role": "user", "content": "Go on."}]
            await client.chat(edited, max_tokens=8)
            return gw.close_session(session.id)

    session = asyncio.run(go())
    segments, turns = session.segments()
    assert len(segments) == 2
    assert session.metrics()["gateway/prefix_mismatches"] == 1
    assert session.metrics()["gateway/prefix_mismatch_rate"] == 1.0
    for (prompt, gen), seg, turn in zip(rec.calls, segments, turns, strict=True):
        assert seg.token_ids == prompt + gen.output_ids and turn.action_span == (len(prompt), len(seg))
    # the new segment shows the model its own first answer as the ids it sampled, rendered once (mask 0)
    assert sum(segments[1].loss_mask) == len(rec.calls[1][1].output_ids)


@pytest.mark.parametrize("sent_back, mismatches", [("as received", 0), ("stripped", 1)])
def test_a_reply_sent_back_without_its_trailing_newline_is_a_prefix_mismatch(renderer, sent_back, mismatches):
    """What docs/gateway.md tells shell-agent authors: the model's reply "Hi.\\n" sent back byte for byte extends
    the session; sent back as "Hi." (what `$(...)` in a shell leaves of it) it is another message, so the call
    starts a new segment and counts as a prefix mismatch."""
    tok = renderer.tokenizer
    engine = ScriptedEngine([tok.encode("Hi.\n", add_special_tokens=False) + [renderer.eot_token_id]] * 2)

    async def go():
        async with serving(engine, renderer) as gw:
            session = gw.open_session()
            client = AgentClient(session.base_url, session.api_key)
            msgs = [{"role": "user", "content": "Greet me."}]
            reply = (await client.chat(msgs))["choices"][0]["message"]
            assert reply["content"] == "Hi.\n"
            if sent_back == "stripped":
                reply = {**reply, "content": reply["content"].rstrip("\n")}
            await client.chat(msgs + [reply, {"role": "user", "content": "Again."}])
            return gw.close_session(session.id)

    session = asyncio.run(go())
    assert session.metrics()["gateway/prefix_mismatches"] == mismatches
    assert len(session.segments()[0]) == 1 + mismatches


def test_n_choices_become_segments_that_train_each_sampled_token_once(engine, renderer):
    """n=2, then the agent continues from choice 1: choice 0 stays a segment of its own; the shared prompt is
    context in both, and no sampled token is in the loss twice."""
    rec = Recording(engine)

    async def go():
        async with serving(rec, renderer) as gw:
            session = gw.open_session(sampling_seed=3)
            client = AgentClient(session.base_url, session.api_key)
            msgs = [{"role": "user", "content": "Pick a number."}]
            reply = await client.chat(msgs, n=2, max_tokens=8)
            assert [c["index"] for c in reply["choices"]] == [0, 1]
            await client.chat(msgs + [reply["choices"][1]["message"], {"role": "user", "content": "Why?"}],
                              max_tokens=8)
            return gw.close_session(session.id)

    session = asyncio.run(go())
    segments, turns = session.segments()
    gens = [g for _, g in rec.calls]
    assert len(gens) == 3 and len(segments) == 2 and len(turns) == 3
    assert sum(s.num_action_tokens for s in segments) == sum(len(g.output_ids) for g in gens)
    assert session.metrics()["gateway/prefix_mismatches"] == 0


def test_streaming_and_non_streaming_record_the_same_trajectory(engine, renderer):
    """Same sampling seed, one session streamed (server-sent events) and one not: identical messages to the
    agent and identical segments."""

    async def run(stream: bool):
        async with serving(engine, renderer) as gw:
            session = gw.open_session(sampling_seed=11)
            msgs = [SYSTEM, {"role": "user", "content": "Hi there."}]
            async with aiohttp.ClientSession() as http:
                for _ in range(2):
                    async with http.post(f"{session.base_url}/chat/completions", json={"messages": msgs,
                                         "stream": stream, "max_tokens": 6}, headers=AgentClient(
                                             session.base_url, session.api_key).headers) as resp:
                        assert resp.status == 200
                        if stream:
                            assert resp.headers["Content-Type"].startswith("text/event-stream")
                            events = [ln[6:] for ln in (await resp.text()).splitlines() if ln.startswith("data: ")]
                            assert events[-1] == "[DONE]"
                            chunks = [json.loads(e) for e in events[:-1]]
                            content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
                        else:
                            content = (await resp.json())["choices"][0]["message"]["content"]
                    msgs = msgs + [{"role": "assistant", "content": content}, {"role": "user", "content": "More."}]
            return msgs, gw.close_session(session.id).segments()[0]

    async def both():
        return await run(False), await run(True)

    (m1, s1), (m2, s2) = asyncio.run(both())
    assert m1 == m2 and len(s1) == 1
    assert [s.__dict__ for s in s1] == [s.__dict__ for s in s2]


def test_tool_calls_round_trip_through_the_template(renderer):
    """A Hermes tool call in the model's text comes back as OpenAI tool_calls (content without the call); the
    agent's tool message is rendered through the template and appended after the sampled ids."""
    tok = renderer.tokenizer
    call_text = "Let me compute.\n" + format_call("calc", {"expression": "2+3"})
    engine = ScriptedEngine([tok.encode(call_text, add_special_tokens=False) + [renderer.eot_token_id],
                             tok.encode("It is 5.", add_special_tokens=False) + [renderer.eot_token_id]])

    async def go():
        async with serving(engine, renderer) as gw:
            session = gw.open_session(limits=SessionLimits(max_new_tokens=64))
            client = AgentClient(session.base_url, session.api_key)
            msgs = [{"role": "user", "content": "What is 2+3?"}]
            first = await client.chat(msgs, tools=[CALC], max_tokens=64)
            choice = first["choices"][0]
            call = choice["message"]["tool_calls"][0]
            msgs += [choice["message"], {"role": "tool", "tool_call_id": call["id"], "content": "5"}]
            second = await client.chat(msgs, tools=[CALC], max_tokens=64)
            return choice, second, gw.close_session(session.id)

    choice, second, session = asyncio.run(go())
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Let me compute."
    call = choice["message"]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "calc"
    assert json.loads(call["function"]["arguments"]) == {"expression": "2+3"}
    assert second["choices"][0]["message"] == {"role": "assistant", "content": "It is 5."}
    (seg,), turns = session.segments()
    assert engine.prompts[1] == engine.prompts[0] + engine.returned[0].output_ids + seg.token_ids[
        len(engine.prompts[0]) + len(engine.returned[0].output_ids): len(engine.prompts[1])]
    text = renderer.decode(seg.token_ids)
    assert "<|im_start|>tool\n5<|im_end|>" in text and "You can call these tools" in text
    assert turns[0].observation_text == "5"


@pytest.mark.parametrize("case", ["bad_key", "no_key", "unknown_session", "bad_json", "bad_messages", "bad_n",
                                  "bad_tools"])
def test_mistakes_get_openai_error_bodies(engine, renderer, case):
    """Every refusal is an OpenAI error envelope with the right status, never a traceback or a dropped
    connection: 401 for a wrong key, 404 for an unknown session, 400 for a malformed request."""
    expected = {"bad_key": 401, "no_key": 401, "unknown_session": 404}.get(case, 400)

    async def go():
        async with serving(engine, renderer) as gw:
            session = gw.open_session()
            url, headers = f"{session.base_url}/chat/completions", {"Authorization": f"Bearer {session.api_key}"}
            body: object = {"messages": [{"role": "user", "content": "hi"}]}
            if case == "bad_key":
                headers = {"Authorization": "Bearer sk-wrong"}
            elif case == "no_key":
                headers = {}
            elif case == "unknown_session":
                url = url.replace(session.id, "nope")
            elif case == "bad_json":
                body = None
            elif case == "bad_messages":
                body = {"messages": [{"role": "robot", "content": "hi"}]}
            elif case == "bad_n":
                body = {"messages": [{"role": "user", "content": "hi"}], "n": 0}
            elif case == "bad_tools":
                body = {"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}
            async with aiohttp.ClientSession() as http:
                data = b"{not json" if body is None else json.dumps(body).encode()
                async with http.post(url, data=data, headers=headers) as resp:
                    return resp.status, await resp.json()

    status, body = asyncio.run(go())
    assert status == expected, body
    assert set(body["error"]) == {"message", "type", "param", "code"} and body["error"]["message"]


def test_models_lists_the_served_model_and_checks_the_key(engine, renderer):
    """GET /v1/models: the model id with the right key, 401 without it."""

    async def go():
        async with serving(engine, renderer, model_name="tiny-policy") as gw:
            session = gw.open_session()
            async with aiohttp.ClientSession() as http:
                async with http.get(f"{session.base_url}/models", headers={"Authorization": f"Bearer {session.api_key}"}) as r:
                    ok = (r.status, await r.json())
                async with http.get(f"{session.base_url}/models") as r:
                    return ok, r.status

    (status, body), anonymous = asyncio.run(go())
    assert status == 200 and [m["id"] for m in body["data"]] == ["tiny-policy"]
    assert anonymous == 401


def test_a_spent_budget_answers_400_and_ends_the_session(engine, renderer):
    """max_calls: the call past the budget is refused with its code, and the session remembers why it ended."""

    async def go():
        async with serving(engine, renderer) as gw:
            session = gw.open_session(limits=SessionLimits(max_calls=1, max_new_tokens=4))
            client = AgentClient(session.base_url, session.api_key)
            await client.chat([{"role": "user", "content": "hi"}])
            with pytest.raises(GatewayError) as err:
                await client.chat([{"role": "user", "content": "hi"}])
            return session, err.value

    session, err = asyncio.run(go())
    assert err.status == 400 and err.body["error"]["code"] == "max_turns"
    assert session.ending[0] == "max_turns"


def test_session_routes_open_record_and_close_sessions_behind_the_admin_key(engine, renderer):
    """`agentrl gateway`'s session routes: POST /sessions opens one (201, its own URL and key), GET returns the
    record as a trajectory dict whose tokens are the engine's, DELETE closes it (its URL is 404 after); without
    the admin key each route is 401, and a bad body is 400."""
    rec = Recording(engine)

    async def go():
        async with serving(rec, renderer, admin_api_key="sk-admin") as gw:
            admin = {"Authorization": "Bearer sk-admin"}
            async with aiohttp.ClientSession() as http:
                async with http.post(f"{gw.url}/sessions", json={"seed": 1}) as r:
                    assert r.status == 401
                async with http.post(f"{gw.url}/sessions", json={"max_calls": 0}, headers=admin) as r:
                    assert r.status == 400 and (await r.json())["error"]["param"] == "max_calls"
                async with http.post(f"{gw.url}/sessions", json={"seed": 1, "max_new_tokens": 5}, headers=admin) as r:
                    assert r.status == 201
                    info = await r.json()
                client = AgentClient(info["base_url"], info["api_key"])
                await client.chat([{"role": "user", "content": "hi"}])
                async with http.get(f"{gw.url}/sessions/{info['id']}", headers=admin) as r:
                    record = await r.json()
                async with http.delete(f"{gw.url}/sessions/{info['id']}", headers=admin) as r:
                    assert r.status == 200
                with pytest.raises(GatewayError) as err:
                    await client.chat([{"role": "user", "content": "hi"}])
                return info, record, err.value

    info, record, err = asyncio.run(go())
    assert info["base_url"].endswith(f"/sessions/{info['id']}/v1") and info["api_key"]
    (prompt, gen), = rec.calls
    assert len(gen.output_ids) <= 5
    (seg,) = record["segments"]
    assert seg["token_ids"] == prompt + gen.output_ids and seg["behaviour_logprobs"][len(prompt):] == gen.logprobs
    assert record["metrics"]["gateway/calls"] == 1 and record["ending"] is None
    assert err.status == 404


def test_the_gateways_max_new_tokens_is_a_sessions_default_and_cap(engine, renderer):
    """`agentrl gateway --max-new-tokens N` (the gateway's sampling settings) caps every session opened without
    its own budget, by POST /sessions or open_session(): a call without max_tokens samples at most N tokens, and
    a larger max_tokens is cut to N; a session's own max_new_tokens still wins."""
    rec = Recording(engine)

    async def go():
        async with serving(rec, renderer) as gw:  # the gateway's max_new_tokens is 8
            async with aiohttp.ClientSession() as http:
                async with http.post(f"{gw.url}/sessions", json={}) as r:
                    posted = await r.json()
                async with http.post(f"{gw.url}/sessions", json={"max_new_tokens": 3}) as r:
                    own = await r.json()
            opened = gw.open_session()
            for url, key, max_tokens in [(posted["base_url"], posted["api_key"], None),
                                         (opened.base_url, opened.api_key, 100),
                                         (own["base_url"], own["api_key"], None)]:
                await AgentClient(url, key).chat([{"role": "user", "content": "hi"}], max_tokens=max_tokens)

    asyncio.run(go())
    assert [s.max_new_tokens for s in rec.sampling] == [8, 8, 3]
