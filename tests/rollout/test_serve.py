"""`agentrl serve` over real HTTP on loopback: SGLang's response shapes, its 400 envelopes, control endpoints."""
# ruff: noqa: F811  (pytest fixtures imported from engine_fixtures are redefined as test arguments)

from __future__ import annotations

import argparse
import asyncio
import re

import aiohttp
import pytest

from agentrl.commands import serve as serve_cmd
from agentrl.errors import AgentRLError
from agentrl.rollout.sglang_schema import SAMPLING_KEYS

from .engine_fixtures import engine, fresh_engine, greedy, prompts, served  # noqa: F401 (fixtures)


async def _call(url, method, path, body=None, raw=None):
    async with aiohttp.ClientSession() as s:
        kwargs = {"data": raw} if raw is not None else {"json": body}
        async with s.request(method, url + path, **kwargs) as r:
            text = await r.text()
            try:
                return r.status, await r.json(content_type=None)
            except ValueError:
                return r.status, text


def _run_served(engine, fn):
    async def go():
        async with served(engine) as url:
            return await fn(url)

    return asyncio.run(go())


def test_generate_response_has_sglang_shape(engine, prompts):
    body = {"rid": "traj1-t0", "input_ids": prompts[0], "return_logprob": True,
            "sampling_params": {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "max_new_tokens": 5,
                                "skip_special_tokens": False, "no_stop_trim": True}}
    status, out = _run_served(engine, lambda url: _call(url, "POST", "/generate", body))
    assert status == 200
    gen = asyncio.run(engine.generate(prompts[0], greedy(5)))
    meta = out["meta_info"]
    assert out["output_ids"] == gen.output_ids and isinstance(out["text"], str)
    assert [t[1] for t in meta["output_token_logprobs"]] == gen.output_ids
    assert all(len(t) == 3 and t[2] is None for t in meta["output_token_logprobs"])
    assert meta["id"] == "traj1-t0" and meta["finish_reason"] == {"type": "length", "length": 5}
    assert meta["prompt_tokens"] == len(prompts[0]) and meta["completion_tokens"] == 5
    assert meta["weight_version"] == "0" and meta["weight_versions"] == [{"version": "0", "start": 0, "end": 5}]
    assert meta["input_token_logprobs"] == [] and meta["output_token_logprobs_length"] == 5


def test_batched_input_ids_give_a_json_array(engine, prompts):
    body = {"input_ids": prompts[:2], "sampling_params": {"temperature": 0, "max_new_tokens": 3}}
    status, out = _run_served(engine, lambda url: _call(url, "POST", "/generate", body))
    assert status == 200 and isinstance(out, list) and len(out) == 2
    assert "output_token_logprobs" not in out[0]["meta_info"]  # return_logprob defaults to false


UNKNOWN = "unknown field `max_tokens`, expected one of " + ", ".join(f"`{k}`" for k in SAMPLING_KEYS)


@pytest.mark.parametrize(
    ("body", "shape", "needle"),
    [
        ({"input_ids": [1, 2], "sampling_params": {"max_tokens": 3}}, 1, UNKNOWN),
        ({"input_ids": [1, 2], "sampling_params": {"seed": 3}}, 1, "unknown field `seed`"),
        ({"input_ids": [1, 2], "sampling_params": {"max_new_tokens": "3"}}, 2, "sampling_params.max_new_tokens"),
        ({"input_ids": "hello"}, 2, "input_ids must be a list of integers"),
        ({"sampling_params": {}}, 2, "Either text, input_ids or input_embeds should be provided."),
        (None, 2, "JSON decode error"),
        ({"input_ids": [1, 2], "sampling_params": {"temperature": -1}}, 3, "temperature must be a finite number"),
        ({"input_ids": [1, 2], "sampling_params": {"top_p": 1.5}}, 3, "top_p must be in (0, 1]"),
        ({"input_ids": []}, 3, "input_ids is empty"),
        ({"input_ids": [1, 2], "sampling_params": {"n": 2}}, 3, "sampling_params.n=2 is not supported"),
        ({"input_ids": [1, 2], "sampling_params": {"max_new_tokens": 99999}}, 3, "maximum context length"),
        ({"input_ids": [1, 2], "stream": True}, 3, "stream=true is not supported"),
    ],
    ids=["unknown-key", "vllm-seed", "wrong-type", "ids-not-list", "no-input", "bad-json", "neg-temp", "top-p",
         "empty-ids", "n", "too-long", "stream"],
)
def test_malformed_requests_get_sglang_shaped_400s(engine, body, shape, needle):
    raw = b"{not json" if body is None else None
    status, out = _run_served(engine, lambda url: _call(url, "POST", "/generate", body, raw=raw))
    assert status == 400
    if shape == 1:
        assert set(out) == {"error"} and isinstance(out["error"], str)
        message = out["error"]
    elif shape == 2:
        assert out["object"] == "error" and out["type"] == "Bad Request" and out["code"] == 400
        assert out["param"] is None
        message = out["message"]
    else:
        assert set(out) == {"error"} and set(out["error"]) == {"message"}
        message = out["error"]["message"]
    assert needle in message


def test_duplicate_rid_in_flight_is_refused(fresh_engine, prompts):
    async def go(url):
        await fresh_engine.pause("finish")  # the first request now waits in the queue, in flight
        req = {"rid": "same", "input_ids": prompts[0], "sampling_params": {"max_new_tokens": 2}}
        first = asyncio.create_task(_call(url, "POST", "/generate", req))
        await asyncio.sleep(0.2)
        second = await _call(url, "POST", "/generate", req)
        await fresh_engine.resume()
        return second, await first

    (status, out), (first_status, _) = _run_served(fresh_engine, go)
    assert first_status == 200
    assert status == 400 and out == {"error": {"message": "Duplicate request ID detected"}}


def test_control_endpoints_pause_continue_health_info_flush(fresh_engine):
    async def go(url):
        results = {"info": await _call(url, "GET", "/model_info"), "health": await _call(url, "GET", "/health")}
        results["healthgen"] = await _call(url, "GET", "/health_generate")
        results["flush"] = await _call(url, "POST", "/flush_cache")
        results["pause"] = await _call(url, "POST", "/pause_generation", {"mode": "in_place"})
        results["paused_health"] = await _call(url, "GET", "/health_generate")
        results["bad_mode"] = await _call(url, "POST", "/pause_generation", {"mode": "sometimes"})
        results["continue"] = await _call(url, "POST", "/continue_generation", {})
        results["healthgen2"] = await _call(url, "GET", "/health_generate")
        return results

    r = _run_served(fresh_engine, go)
    status, info = r["info"]
    assert status == 200 and info["weight_version"] == "0" and info["is_generation"] is True
    assert info["architectures"] == ["LlamaForCausalLM"]
    assert r["health"][0] == 200 and r["healthgen"][0] == 200
    assert r["flush"][0] == 200 and r["flush"][1].startswith("Cache flushed.")
    assert r["pause"] == (200, {"message": "Generation paused successfully.", "status": "ok"})
    assert r["paused_health"][0] == 503
    assert r["bad_mode"][0] == 400 and r["bad_mode"][1]["object"] == "error"
    assert r["continue"] == (200, {"message": "Generation continued successfully.", "status": "ok"})
    assert r["healthgen2"][0] == 200


def test_update_weights_from_disk_changes_the_reported_version(fresh_engine, prompts, tmp_path):
    fresh_engine.model.save_pretrained(tmp_path)

    async def go(url):
        ok = await _call(url, "POST", "/update_weights_from_disk", {"model_path": str(tmp_path), "weight_version": "3"})
        info = await _call(url, "GET", "/model_info")
        gen = await _call(url, "POST", "/generate", {"input_ids": prompts[0], "sampling_params": {"max_new_tokens": 2}})
        missing = await _call(url, "POST", "/update_weights_from_disk", {"model_path": str(tmp_path / "no")})
        no_path = await _call(url, "POST", "/update_weights_from_disk", {"weight_version": "4"})
        return ok, info, gen, missing, no_path

    ok, info, gen, missing, no_path = _run_served(fresh_engine, go)
    assert ok == (200, {"success": True, "message": "Succeeded to update model weights.", "num_paused_requests": 0})
    assert info[1]["weight_version"] == "3" and info[1]["model_path"] == str(tmp_path)
    assert gen[1]["meta_info"]["weight_version"] == "3"
    assert missing[0] == 400 and missing[1]["success"] is False and "holds no weights" in missing[1]["message"]
    assert no_path[0] == 400 and no_path[1]["object"] == "error"
    assert fresh_engine.version == 3


def _parse(*argv):
    parser = argparse.ArgumentParser()
    serve_cmd.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_sglang_backend_prints_the_launch_command(capsys):
    args = _parse("--backend", "sglang", "--model", "smollm2-135m-instruct", "--port", "31000", "--tp-size", "2",
                  "--print-only", "--sglang-args=--disable-radix-cache")
    assert serve_cmd.run(args) == 0
    line = capsys.readouterr().out.strip()
    assert "-m sglang.launch_server --model-path " in line and "smollm2-135m-instruct" in line
    assert line.endswith("--port 31000 --tp-size 2 --weight-version 0 --disable-radix-cache")


def test_sglang_backend_fails_clearly_without_sglang(capsys):
    import importlib.util

    if importlib.util.find_spec("sglang") is not None:
        pytest.skip("SGLang is installed here")
    with pytest.raises(AgentRLError, match=re.escape("SGLang is not installed in this environment")):
        serve_cmd.run(_parse("--backend", "sglang", "--model", "smollm2-135m-instruct"))
    with pytest.raises(AgentRLError, match="'tiny' test model has no weights on disk"):
        serve_cmd.run(_parse("--backend", "sglang", "--model", "tiny", "--print-only"))
