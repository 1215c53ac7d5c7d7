"""`agentrl serve` over real HTTP on loopback: SGLang's response shapes, its 400 envelopes, control endpoints."""
# ruff: noqa: F811  (pytest fixtures imported from engine_fixtures are redefined as test arguments)

from __future__ import annotations

import argparse
import asyncio
import copy
import re

import aiohttp
import pytest

from agentrl.commands import serve as serve_cmd
from agentrl.engine.sglang_schema import SAMPLING_KEYS
from agentrl.errors import AgentRLError

from .engine_fixtures import engine, fresh_engine, greedy, prompts, served, until  # noqa: F401 (fixtures)


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
        ({"input_ids": [1, 2], "sampling_params": {"max_new_tokens": "3"}}, 1,
         'invalid type: string "3", expected an integer at `sampling_params.max_new_tokens`'),
        ({"input_ids": [1, 2], "return_logprob": "yes"}, 2, "return_logprob"),
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
    ids=["unknown-key", "vllm-seed", "wrong-type-in-sampling", "wrong-type-top-level", "ids-not-list", "no-input", "bad-json", "neg-temp", "top-p",
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
        # the server registers a request's rid before it hands the request to the engine
        await until(lambda: fresh_engine.in_flight == 1, "the first request to reach the engine")
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


def _long(prompt, n=200, seed=3):
    return {"input_ids": prompt, "return_logprob": True, "sampling_params": {"max_new_tokens": n, "sampling_seed": seed}}


async def _decoding(engine, steps=3):
    """Yield until engine has run `steps` decode steps (a condition, not a timing)."""
    start = engine.stats["decode_steps"]
    await until(lambda: engine.stats["decode_steps"] >= start + steps, f"{steps} decode steps")


def test_in_place_pause_then_update_with_flush_is_refused_like_sglang(fresh_engine, prompts, tmp_path):
    """SGLang 0.5.23 loads the weights, cannot flush the cache while an in_place-paused request holds KV, and
    answers 400 without moving the label; serve must too, or tests cannot catch a client that relies on it."""
    fresh_engine.eos_token_ids = frozenset()
    fresh_engine.model.save_pretrained(tmp_path)

    async def go(url):
        task = asyncio.create_task(_call(url, "POST", "/generate", _long(prompts[0])))
        await _decoding(fresh_engine)
        await _call(url, "POST", "/pause_generation", {"mode": "in_place"})
        refused = await _call(url, "POST", "/update_weights_from_disk", {"model_path": str(tmp_path),
                                                                         "weight_version": "1"})
        info = await _call(url, "GET", "/model_info")
        unflushed = await _call(url, "POST", "/update_weights_from_disk", {"model_path": str(tmp_path),
                                                                           "weight_version": "1", "flush_cache": False})
        await _call(url, "POST", "/continue_generation", {})
        return refused, info, unflushed, await task

    refused, info, unflushed, (status, out) = _run_served(fresh_engine, go)
    assert refused[0] == 400 and refused[1]["success"] is False
    assert refused[1]["message"].startswith("Weights were updated, but the cache was not flushed")
    assert info[1]["weight_version"] == "0"
    assert unflushed[0] == 200 and unflushed[1]["success"] is True
    assert status == 200 and out["meta_info"]["finish_reason"]["type"] == "length"


def test_retract_pause_recomputes_running_requests_with_the_new_weights(fresh_engine, prompts, tmp_path):
    """Guards retract: the running request goes back to the queue, the update (with flush) succeeds, and after
    continue its tokens carry the new version and are exactly the new weights' logprobs (full recompute)."""
    import torch

    fresh_engine.eos_token_ids = frozenset()
    new = copy.deepcopy(fresh_engine.model)
    with torch.no_grad():
        for p in new.parameters():
            p.add_(0.05 * torch.randn_like(p))
    new.save_pretrained(tmp_path)
    old = copy.deepcopy(fresh_engine.model)

    async def go(url):
        task = asyncio.create_task(_call(url, "POST", "/generate", _long(prompts[0], 40)))
        await _decoding(fresh_engine)
        paused = await _call(url, "POST", "/pause_generation", {"mode": "retract"})
        running = fresh_engine.running
        ok = await _call(url, "POST", "/update_weights_from_disk", {"model_path": str(tmp_path), "weight_version": "1"})
        await _call(url, "POST", "/continue_generation", {})
        return paused, running, ok, await task

    paused, running, ok, (status, out) = _run_served(fresh_engine, go)
    assert paused[0] == 200 and running == 0 and ok[0] == 200 and ok[1]["success"] is True
    spans = out["meta_info"]["weight_versions"]
    assert [s["version"] for s in spans] == ["0", "1"] and spans[1]["end"] == 40
    k, ids = spans[0]["end"], out["output_ids"]
    lps = torch.tensor([t[0] for t in out["meta_info"]["output_token_logprobs"]])
    with torch.no_grad():
        full = torch.tensor([prompts[0] + ids])
        want = [torch.log_softmax(m(full).logits[0, len(prompts[0]) - 1 : -1].float(), -1)
                .gather(1, torch.tensor(ids)[:, None])[:, 0] for m in (old, new)]
    torch.testing.assert_close(lps[:k], want[0][:k], atol=1e-3, rtol=0)
    torch.testing.assert_close(lps[k:], want[1][k:], atol=1e-3, rtol=0)


def test_abort_request_by_rid_and_abort_all_return_partial_output(fresh_engine, prompts):
    fresh_engine.eos_token_ids = frozenset()

    async def go(url):
        a = asyncio.create_task(_call(url, "POST", "/generate", {**_long(prompts[0], 500), "rid": "traj-a-t0"}))
        b = asyncio.create_task(_call(url, "POST", "/generate", {**_long(prompts[1], 500), "rid": "traj-b-t0"}))
        await _decoding(fresh_engine)
        one = await _call(url, "POST", "/abort_request", {"rid": "traj-a"})  # prefix, as SGLang
        unknown = await _call(url, "POST", "/abort_request", {"rid": "nobody"})
        first = await a
        assert not b.done()
        everything = await _call(url, "POST", "/abort_request", {"abort_all": True})
        return one, unknown, everything, first, await b

    one, unknown, everything, (sa, a), (sb, b) = _run_served(fresh_engine, go)
    assert one == unknown == everything == (200, None)  # 200, empty body
    for status, out in ((sa, a), (sb, b)):
        assert status == 200 and out["meta_info"]["finish_reason"]["type"] == "abort"
        assert 0 < len(out["output_ids"]) < 500
    assert a["meta_info"]["id"] == "traj-a-t0"


def test_one_string_rid_for_a_batch_expands_to_rid_index(engine, prompts):
    body = {"rid": "grp", "input_ids": prompts[:3], "sampling_params": {"temperature": 0, "max_new_tokens": 2}}
    status, out = _run_served(engine, lambda url: _call(url, "POST", "/generate", body))
    assert status == 200 and [o["meta_info"]["id"] for o in out] == ["grp_0", "grp_1", "grp_2"]


def test_api_key_and_admin_api_key_guard_endpoints_like_sglang(engine, prompts):
    async def go(url):
        async def call(path, key=None, body=None, method="POST"):
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            async with aiohttp.ClientSession(headers=headers) as s, s.request(method, url + path, json=body) as r:
                return r.status
        gen = {"input_ids": prompts[0], "sampling_params": {"max_new_tokens": 1}}
        return {
            "health": await call("/health", method="GET"),
            "gen_nokey": await call("/generate", body=gen), "gen_key": await call("/generate", "user", gen),
            "info_key": await call("/model_info", "user", method="GET"),
            "pause_user": await call("/pause_generation", "user", {"mode": "retract"}),
            "pause_admin": await call("/pause_generation", "admin", {"mode": "retract"}),
            "continue_admin": await call("/continue_generation", "admin", {}),
        }

    async def main():
        async with served(engine, api_key="user", admin_api_key="admin") as url:
            return await go(url)

    r = asyncio.run(main())
    assert r == {"health": 200, "gen_nokey": 401, "gen_key": 200, "info_key": 200, "pause_user": 401,
                 "pause_admin": 200, "continue_admin": 200}


def test_ready_and_server_info_aliases(fresh_engine):
    async def go(url):
        ready = await _call(url, "GET", "/ready")
        await _call(url, "POST", "/pause_generation", {"mode": "retract"})
        paused = await _call(url, "GET", "/ready")
        health = await _call(url, "GET", "/health")
        await _call(url, "POST", "/continue_generation", {})
        return ready, paused, health, await _call(url, "GET", "/get_server_info"), await _call(url, "GET", "/server_info")

    ready, paused, health, old_name, info = _run_served(fresh_engine, go)
    assert ready[0] == 200 and paused[0] == 503 and health[0] == 503
    assert old_name == info and info[1]["context_length"] == fresh_engine.max_context


def test_logprobs_under_top_k_are_full_vocabulary_like_sglang(fresh_engine, prompts):
    """Guards full-vocabulary logprobs on the server side: SGLang reports log_softmax(logits / T) over the whole
    vocabulary even when top-k/top-p truncate the distribution it samples from; serve must report the same."""
    import torch

    body = {"input_ids": prompts[0], "return_logprob": True,
            "sampling_params": {"temperature": 0.7, "top_k": 5, "top_p": 0.8, "max_new_tokens": 6,
                                "sampling_seed": 4}}
    status, out = _run_served(fresh_engine, lambda url: _call(url, "POST", "/generate", body))
    ids = out["output_ids"]
    with torch.no_grad():
        logits = fresh_engine.model(torch.tensor([prompts[0] + ids])).logits[0, len(prompts[0]) - 1 : -1].float()
    want = torch.log_softmax(logits / 0.7, -1).gather(1, torch.tensor(ids)[:, None])[:, 0]
    got = torch.tensor([t[0] for t in out["meta_info"]["output_token_logprobs"]])
    torch.testing.assert_close(got, want, atol=1e-4, rtol=0)


@pytest.mark.slow
@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the refusal on a machine without CUDA")
@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["gateway", "--port", "0"]])
def test_device_cuda_without_a_gpu_is_one_line_and_exit_2(command):
    """`agentrl serve|gateway --device cuda` build their engine through engine.build.build_engine on that device;
    on a machine without CUDA that is a one-line error (exit 2), not torch's traceback."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "agentrl", *command, "--model", "tiny", "--device", "cuda"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "device 'cuda'" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
