"""Contract tests: every request body SGLangClient sends is valid for SGLang 0.5.23, and every response
`agentrl serve` returns has SGLang 0.5.23's shape.

The expected schema is data below, transcribed from SGLang 0.5.23's request dataclasses and contract —
srt/managers/io_struct.py (GenerateReqInput, UpdateWeightFromDiskReqInput, PauseGenerationReqInput,
ContinueGenerationReqInput, AbortReq), sglang/api/v1/api_types.py (the sampling_params contract, which rejects
unknown keys), srt/managers/schedule_batch.py (finish_reason to_json) — with their types and defaults. A client body with a key SGLang does not know, or a
value of the wrong JSON type, fails here instead of with a 400 on a GPU machine.
"""
# ruff: noqa: F811  (pytest fixtures imported from engine_fixtures are redefined as test arguments)

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from agentrl.engine.protocol import SamplingParams
from agentrl.engine.serve import build_app
from agentrl.engine.sglang_client import SGLangClient

from .engine_fixtures import engine, fresh_engine, greedy, prompts  # noqa: F401 (fixtures)

INT, NUM, BOOL, STR, LIST, DICT, NULL = int, (int, float), bool, str, list, dict, type(None)

# GenerateReqInput top-level fields a token-in client may send: name → allowed JSON types (default).
GENERATE_FIELDS = {
    "input_ids": (LIST,), "text": (STR, LIST), "sampling_params": (DICT, LIST), "rid": (STR, LIST),
    "stream": (BOOL,), "return_logprob": (BOOL, LIST), "logprob_start_len": (INT, LIST),
    "top_logprobs_num": (INT, LIST), "token_ids_logprob": (LIST, NULL), "return_text_in_logprobs": (BOOL,),
    "return_sampling_mask": (BOOL, LIST), "sampling_logprobs_mode": (STR,), "return_prompt_token_ids": (BOOL,),
    "return_hidden_states": (BOOL,), "lora_path": (STR, NULL), "session_params": (DICT, NULL),
    "priority": (INT, NULL), "extra_key": (STR, NULL), "cache_salt": (STR, NULL),
}
# sampling_params contract (api/v1/api_types.py): the only accepted keys, with their JSON types.
SAMPLING_FIELDS = {
    "max_new_tokens": (INT,), "stop": (STR, LIST, NULL), "stop_token_ids": (LIST, NULL), "stop_regex": (STR, LIST),
    "temperature": NUM, "top_p": NUM, "top_k": (INT,), "min_p": NUM, "frequency_penalty": NUM,
    "presence_penalty": NUM, "repetition_penalty": NUM, "min_new_tokens": (INT,), "n": (INT,),
    "json_schema": (STR,), "regex": (STR,), "ebnf": (STR,), "structural_tag": (STR,), "ignore_eos": (BOOL,),
    "skip_special_tokens": (BOOL,), "spaces_between_special_tokens": (BOOL,), "no_stop_trim": (BOOL,),
    "custom_params": (DICT,), "stream_interval": (INT,), "logit_bias": (DICT,), "sampling_seed": (INT,),
    "beam_width": (INT,), "watermark": (DICT, BOOL), "choice": (LIST,),
}
UPDATE_FROM_DISK_FIELDS = {
    "model_path": (STR,), "load_format": (STR, NULL), "abort_all_requests": (BOOL,), "weight_version": (STR, NULL),
    "is_async": (BOOL,), "torch_empty_cache": (BOOL,), "keep_pause": (BOOL,), "recapture_cuda_graph": (BOOL,),
    "token_step": (INT,), "flush_cache": (BOOL,), "manifest": (DICT, NULL),
}
CONTROL_SCHEMAS = {  # path → (fields, required)
    "/update_weights_from_disk": (UPDATE_FROM_DISK_FIELDS, {"model_path"}),
    "/pause_generation": ({"mode": (STR,)}, set()),
    "/continue_generation": ({"torch_empty_cache": (BOOL,)}, set()),
    "/abort_request": ({"rid": (STR,), "abort_all": (BOOL,), "finished_reason": (DICT, NULL)}, set()),
}
PAUSE_MODES = {"abort", "retract", "in_place"}  # PauseGenerationReqInput.mode
META_REQUIRED = {"id": (STR,), "finish_reason": (DICT,), "prompt_tokens": (INT,), "completion_tokens": (INT,),
                 "cached_tokens": (INT,), "weight_version": (STR,), "e2e_latency": NUM}
FINISH_KEYS = {"stop": {"type", "matched"}, "length": {"type", "length"}, "abort": {"type", "message"}}


def _typed(value, kinds) -> bool:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(value, bool) and BOOL not in kinds:
        return False
    return isinstance(value, kinds)


def check_fields(body: dict, fields: dict, required: set, where: str) -> None:
    """Every key known to SGLang, every value of an accepted JSON type, every required key present."""
    assert set(body) <= set(fields), f"{where}: keys SGLang does not know: {sorted(set(body) - set(fields))}"
    assert required <= set(body), f"{where}: missing {sorted(required - set(body))}"
    for key, value in body.items():
        assert _typed(value, fields[key]), f"{where}.{key}={value!r} has the wrong JSON type"


def check_generate_request(body: dict) -> None:
    """A token-in /generate body as SGLang 0.5.23 accepts it (single request)."""
    check_fields(body, GENERATE_FIELDS, {"input_ids", "sampling_params"}, "/generate")
    assert body["input_ids"] and all(_typed(t, INT) for t in body["input_ids"])
    check_fields(body["sampling_params"], SAMPLING_FIELDS, set(), "/generate sampling_params")
    sp = body["sampling_params"]
    assert sp["max_new_tokens"] >= 0 and 0 < sp["top_p"] <= 1 and (sp["top_k"] == -1 or sp["top_k"] >= 1)
    assert all(_typed(t, INT) for t in sp.get("stop_token_ids") or [])
    assert body["return_logprob"] is True, "the client needs behaviour logprobs on every request"


def check_generate_response(out: dict, *, logprobs: bool) -> None:
    """One /generate response object with SGLang 0.5.23's shape."""
    assert set(out) <= {"text", "output_ids", "meta_info"} and {"output_ids", "meta_info"} <= set(out)
    meta = out["meta_info"]
    for key, kinds in META_REQUIRED.items():
        assert _typed(meta.get(key), kinds), f"meta_info.{key}={meta.get(key)!r}"
    finish = meta["finish_reason"]
    assert set(finish) >= FINISH_KEYS[finish["type"]], finish
    spans = meta["weight_versions"]
    assert [s["start"] for s in spans] == [0] + [s["end"] for s in spans[:-1]]
    assert (spans[-1]["end"] if spans else 0) == len(out["output_ids"]) == meta["completion_tokens"]
    assert not spans or meta["weight_version"] == spans[-1]["version"]
    if logprobs:
        triples = meta["output_token_logprobs"]
        assert meta["input_token_logprobs"] == [] and meta["output_token_logprobs_length"] == len(triples)
        assert all(len(t) == 3 and _typed(t[0], NUM) and t[2] is None for t in triples)
        assert [t[1] for t in triples] == out["output_ids"]
    else:
        assert "output_token_logprobs" not in meta


def _recording_app(engine, seen: list, **kwargs) -> web.Application:
    """serve's app with a middleware that records (method, path, JSON body, status, JSON response)."""
    app = build_app(engine, **kwargs)

    @web.middleware
    async def record(request, handler):
        raw = await request.read()
        resp = await handler(request)
        body = getattr(resp, "text", None)
        seen.append((request.method, request.path, json.loads(raw) if raw.strip() else None, resp.status,
                     json.loads(body) if body and resp.content_type == "application/json" else body))
        return resp

    app.middlewares.insert(0, record)
    return app


async def _serve(app):
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"


def test_every_request_the_client_sends_matches_sglang_schema(fresh_engine, prompts, tmp_path):
    """Drives every SGLangClient call against serve and validates each body against SGLang 0.5.23's fields."""
    seen: list = []

    async def go():
        runner, url = await _serve(_recording_app(fresh_engine, seen))
        client = SGLangClient(url)
        try:
            await client.generate(prompts[0], SamplingParams(temperature=0.7, max_new_tokens=3, stop_token_ids=[2],
                                                             stop=["\n\n"]), session_id="traj-1")
            await client.generate(prompts[1], greedy(2, seed=9))
            for mode in ("finish", "abort", "in_place", "retract"):
                await client.pause(mode)
                await client.resume()
            await client.push_weights(fresh_engine.model, version=3, staging_dir=tmp_path / "w")
            await client.abort("traj-1")
            await client.abort()
            await client.flush_cache()
            await client.health()
            await client.model_info()
        finally:
            await client.close()
            await runner.cleanup()

    asyncio.run(go())
    posted = [(path, body) for method, path, body, status, _ in seen if method in ("POST", "PUT")]
    paths = {p for p, _ in posted}
    assert {"/generate", "/pause_generation", "/continue_generation", "/update_weights_from_disk",
            "/abort_request"} <= paths, paths
    for path, body in posted:
        if path == "/generate":
            check_generate_request(body)
        elif path in CONTROL_SCHEMAS:
            fields, required = CONTROL_SCHEMAS[path]
            check_fields(body, fields, required, path)
            if path == "/pause_generation":
                assert body["mode"] in PAUSE_MODES
        else:
            assert path == "/flush_cache" and body is None
    modes = [b["mode"] for p, b in posted if p == "/pause_generation"]
    assert modes == ["abort", "in_place", "retract", "retract"]  # finish pauses no server; push_weights retracts
    update = next(b for p, b in posted if p == "/update_weights_from_disk")
    assert update == {"model_path": str(tmp_path / "w"), "weight_version": "3"}
    assert all(status == 200 for *_, status, _ in seen), [(p, s, r) for _, p, _, s, r in seen if s != 200]


def test_every_response_serve_returns_has_sglang_shape(fresh_engine, prompts, tmp_path):
    """Every /generate and control response of serve against SGLang 0.5.23's response shapes."""
    seen: list = []
    fresh_engine.model.save_pretrained(tmp_path)

    async def go():
        runner, url = await _serve(_recording_app(fresh_engine, seen))
        client = SGLangClient(url)
        try:
            await client.generate(prompts[0], SamplingParams(max_new_tokens=4, seed=1))
            await client.generate(prompts[2], greedy(3, stop_token_ids=list(range(50000))))  # stops at once
            import aiohttp

            async with aiohttp.ClientSession() as s:
                for body in ({"input_ids": prompts[:2], "sampling_params": {"max_new_tokens": 2}, "rid": "b"},
                             {"text": "Hello", "sampling_params": {"max_new_tokens": 2}}):
                    async with s.post(url + "/generate", json=body) as r:
                        assert r.status == 200
            await client.pause("retract")
            await client.update_weights(path=str(tmp_path), version=1)
            await client.resume()
        finally:
            await client.close()
            await runner.cleanup()

    asyncio.run(go())
    for _method, path, body, _status, resp in seen:
        if path == "/generate":
            for one in resp if isinstance(resp, list) else [resp]:
                check_generate_response(one, logprobs=bool(body.get("return_logprob")))
        elif path in ("/pause_generation", "/continue_generation"):
            assert set(resp) == {"message", "status"} and resp["status"] == "ok"
        elif path == "/update_weights_from_disk":
            assert set(resp) == {"success", "message", "num_paused_requests"} and resp["success"] is True
    batch = next(r for _, p, b, _, r in seen if p == "/generate" and isinstance(r, list))
    assert [o["meta_info"]["id"] for o in batch] == ["b_0", "b_1"]
    stopped = [r for _, p, _, _, r in seen if p == "/generate" and isinstance(r, dict)][1]
    assert stopped["meta_info"]["finish_reason"]["type"] == "stop"
