"""The gateway driven by the real `openai` Python package over loopback: what an agent written against the
OpenAI client sends (pydantic messages sent back as they came, streamed tool-call deltas, the sync client in a
thread) must record the exact sampled ids, with behaviour logprobs a teacher-forced recompute reproduces."""
# ruff: noqa: F811  (the fixtures imported from tests.gateway.fixtures are redefined as test arguments)

from __future__ import annotations

import asyncio
import contextlib
import json

import openai
import pytest

from agentrl.engine.protocol import SamplingParams
from agentrl.engine.sampling import recompute_logprobs
from agentrl.gateway import Gateway, SessionLimits
from agentrl.tool_calls import format_call
from tests.engine.scripted_engine import ScriptedEngine
from tests.gateway.fixtures import Recording, engine, renderer  # noqa: F401 (fixtures)
from tests.gateway.test_server import CALC

SAMPLING = SamplingParams(temperature=1.0, max_new_tokens=8)  # requests send no temperature: this is what sampled
SCRIPTED = SessionLimits(max_new_tokens=64)  # room for a scripted reply's whole tool call


@contextlib.asynccontextmanager
async def session_client(engine, renderer, **session_kwargs):
    """(gateway, session, openai.AsyncOpenAI pointed at the session's base URL)."""
    gw = Gateway(engine, renderer, sampling=SAMPLING)
    await gw.start()
    session = gw.open_session(**session_kwargs)
    client = openai.AsyncOpenAI(base_url=session.base_url, api_key=session.api_key, max_retries=0)
    try:
        yield gw, session, client
    finally:
        await client.close()
        await gw.close()


async def _streamed_text(client, **kwargs) -> str:
    stream = await client.chat.completions.create(stream=True, **kwargs)
    parts = []
    async for chunk in stream:
        for choice in chunk.choices:
            parts.append(choice.delta.content or "")
    return "".join(parts)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_openai_client_multi_turn_records_the_sampled_ids_and_logprobs(engine, renderer, stream):
    """Three calls, each sending back the reply it got: one segment whose action tokens are, id for id, what
    the engine sampled, and whose behaviour logprobs a teacher-forced recompute reproduces."""
    rec = Recording(engine)

    async def go():
        async with session_client(rec, renderer) as (gw, session, client):
            messages = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi there."}]
            for turn in range(3):
                kwargs = {"model": "agentrl", "messages": messages, "max_tokens": 6, "tools": [CALC], "seed": turn}
                if stream:
                    text = await _streamed_text(client, **kwargs)
                    reply = {"role": "assistant", "content": text}
                else:
                    reply = (await client.chat.completions.create(**kwargs)).choices[0].message
                    assert reply.tool_calls is None  # the tiny model writes no valid call
                messages = [*messages, reply, {"role": "user", "content": f"Go on ({turn})."}]
            return gw.close_session(session.id)

    session = asyncio.run(go())
    (seg,), turns = session.segments()
    assert len(turns) == 3 and session.metrics()["gateway/prefix_mismatches"] == 0
    sampled = [t for t, m in zip(seg.token_ids, seg.loss_mask, strict=True) if m]
    assert sampled == [t for _, g in rec.calls for t in g.output_ids]
    for prompt, gen in rec.calls:  # each call's prompt is the segment up to its sampled span
        n = len(prompt)
        assert seg.token_ids[:n] == prompt and seg.token_ids[n:n + len(gen.output_ids)] == gen.output_ids
        assert seg.loss_mask[n:n + len(gen.output_ids)] == [1] * len(gen.output_ids)
        ref = recompute_logprobs(engine.model, prompt, gen.output_ids, SAMPLING)
        got = seg.behaviour_logprobs[n:n + len(gen.output_ids)]
        assert max(abs(a - b) for a, b in zip(ref, got, strict=True)) < 1e-4


def test_openai_streamed_and_plain_calls_record_the_same_trajectory(engine, renderer):
    """Same session seed: an agent that streams and one that does not see the same text and train on the same
    segment."""

    async def run(stream: bool):
        async with session_client(engine, renderer, sampling_seed=5) as (gw, session, client):
            messages, texts = [{"role": "user", "content": "Count to three."}], []
            for _ in range(2):
                kwargs = {"model": "agentrl", "messages": messages, "max_tokens": 6}
                if stream:
                    text = await _streamed_text(client, **kwargs)
                else:
                    text = (await client.chat.completions.create(**kwargs)).choices[0].message.content
                texts.append(text)
                messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": "More."}]
            return texts, gw.close_session(session.id).segments()[0]

    async def both():
        return await run(False), await run(True)

    (t1, s1), (t2, s2) = asyncio.run(both())
    assert t1 == t2 and len(s1) == 1
    assert [s.__dict__ for s in s1] == [s.__dict__ for s in s2]


def _tool_engine(renderer):
    tok = renderer.tokenizer
    call_text = "Let me compute.\n" + format_call("calc", {"expression": "2+3"})
    return ScriptedEngine([tok.encode(call_text, add_special_tokens=False) + [renderer.eot_token_id],
                           tok.encode("It is 5.", add_special_tokens=False) + [renderer.eot_token_id]])


def test_openai_tool_calls_round_trip_with_the_message_objects_sent_back(renderer):
    """The agent appends the pydantic message it got (as OpenAI's function-calling guide does) and a tool
    message: the call parses into `tool_calls`, the second call extends the first's exact tokens (one
    segment), and the tool result is rendered through the template."""
    scripted = _tool_engine(renderer)

    async def go():
        async with session_client(scripted, renderer, limits=SCRIPTED) as (gw, session, client):
            messages = [{"role": "user", "content": "What is 2+3?"}]
            first = await client.chat.completions.create(model="agentrl", messages=messages, tools=[CALC])
            message = first.choices[0].message
            messages += [message, {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "5"}]
            second = await client.chat.completions.create(model="agentrl", messages=messages, tools=[CALC])
            return first, second, gw.close_session(session.id)

    first, second, session = asyncio.run(go())
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Let me compute."
    call = choice.message.tool_calls[0]
    assert call.function.name == "calc" and json.loads(call.function.arguments) == {"expression": "2+3"}
    assert second.choices[0].message.content == "It is 5." and not second.choices[0].message.tool_calls
    (seg,), turns = session.segments()
    assert session.metrics()["gateway/prefix_mismatches"] == 0
    sampled = [t for t, m in zip(seg.token_ids, seg.loss_mask, strict=True) if m]
    assert sampled == [t for g in scripted.returned for t in g.output_ids]
    assert scripted.prompts[1][:len(scripted.prompts[0]) + len(scripted.returned[0].output_ids)] == \
        scripted.prompts[0] + scripted.returned[0].output_ids
    assert "<|im_start|>tool\n5<|im_end|>" in renderer.decode(seg.token_ids) and turns[0].observation_text == "5"


def test_openai_stream_helper_assembles_tool_call_deltas(renderer):
    """The package's own stream accumulator (chat.completions.stream) rebuilds the same tool call and finish
    reason from the gateway's chunks as a plain call returns."""
    scripted = _tool_engine(renderer)

    async def go():
        async with session_client(scripted, renderer, limits=SCRIPTED) as (gw, session, client):
            messages = [{"role": "user", "content": "What is 2+3?"}]
            async with client.chat.completions.stream(model="agentrl", messages=messages, tools=[CALC]) as stream:
                async for _ in stream:
                    pass
                final = await stream.get_final_completion()
            gw.close_session(session.id)
            return final

    final = asyncio.run(go())
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Let me compute."
    assert [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls] == \
        [("calc", {"expression": "2+3"})]


def test_openai_sync_client_in_a_thread_and_an_edited_history_starts_a_new_segment(engine, renderer):
    """The synchronous client (as a plain-def agent runs it, in a worker thread); an agent that rewrites an
    earlier reply gets a new segment, never tokens the model did not sample."""
    rec = Recording(engine)

    async def go():
        async with session_client(rec, renderer) as (gw, session, _):
            def agent():
                client = openai.OpenAI(base_url=session.base_url, api_key=session.api_key, max_retries=0)
                messages = [{"role": "user", "content": "Say something."}]
                reply = client.chat.completions.create(model="agentrl", messages=messages, max_tokens=5)
                edited = {"role": "assistant", "content": reply.choices[0].message.content + " (edited)"}
                client.chat.completions.create(model="agentrl", messages=[*messages, edited,
                                                                          {"role": "user", "content": "Again."}],
                                               max_tokens=5)
                client.close()

            await asyncio.to_thread(agent)
            return gw.close_session(session.id)

    session = asyncio.run(go())
    segments, _ = session.segments()
    assert len(segments) == 2 and session.metrics()["gateway/prefix_mismatches"] == 1
    for seg, (prompt, gen) in zip(segments, rec.calls, strict=True):
        assert seg.token_ids == prompt + gen.output_ids
        assert [t for t, m in zip(seg.token_ids, seg.loss_mask, strict=True) if m] == gen.output_ids


def test_openai_client_sees_openai_errors(engine, renderer):
    """Refusals reach the package as its own exception types: 404 NotFoundError for an unknown session,
    401 AuthenticationError for a wrong key, 400 BadRequestError naming the parameter."""

    async def go():
        async with session_client(engine, renderer) as (gw, session, client):
            errors = {}
            bad_key = openai.AsyncOpenAI(base_url=session.base_url, api_key="wrong", max_retries=0)
            unknown = openai.AsyncOpenAI(base_url=session.base_url.replace(session.id, "nope"),
                                         api_key=session.api_key, max_retries=0)
            msgs = [{"role": "user", "content": "Hi."}]
            for name, c, kw in [("key", bad_key, {}), ("session", unknown, {}), ("n", client, {"n": 99})]:
                try:
                    await c.chat.completions.create(model="agentrl", messages=msgs, max_tokens=2, **kw)
                except openai.APIStatusError as e:
                    errors[name] = e
            await bad_key.close()
            await unknown.close()
            return errors

    errors = asyncio.run(go())
    assert isinstance(errors["key"], openai.AuthenticationError)
    assert isinstance(errors["session"], openai.NotFoundError) and errors["session"].code == "session_not_found"
    assert isinstance(errors["n"], openai.BadRequestError) and errors["n"].param == "n"
