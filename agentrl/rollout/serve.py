"""`agentrl serve`: the embedded engine behind SGLang's native HTTP API, so one client drives both.

Endpoints (shapes of reference/sglang_api.md, SGLang 0.5.23): POST|PUT /generate, GET /health, GET
/health_generate, GET /model_info (alias /get_model_info), GET /server_info, POST /pause_generation, POST
/continue_generation, POST /update_weights_from_disk, GET|POST /flush_cache. Differences from SGLang, all
refusals with a clear 400 rather than silent changes: no streaming, no prompt/top logprobs, no penalties or
constrained decoding, `n` must be 1. /health_generate answers 503 at once while paused (SGLang times out
after 20 s). Weight versions are integers, reported as strings ("0" at start, where SGLang says "default").
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from typing import Any

from aiohttp import web

from agentrl.errors import EngineError
from agentrl.rollout.engine import SamplingParams
from agentrl.rollout.engine_errors import EngineRequestError
from agentrl.rollout.sglang_schema import SchemaError, error_body, generate_response, parse_generate

PAUSE_MODES = {"abort": "abort", "retract": "in_place", "in_place": "in_place"}  # SGLang mode → engine mode


def _error(shape: int, message: str, status: int = 400) -> web.Response:
    return web.json_response(error_body(shape, message, status), status=status)


async def _json_body(request: web.Request, *, optional: bool = False) -> Any:
    """The request's JSON body ({} for an empty body when optional); SchemaError shape 2 if unparsable."""
    raw = await request.read()
    if not raw.strip():
        if optional:
            return {}
        raise SchemaError(2, "request body is empty; expected a JSON object")
    try:
        return json.loads(raw)
    except ValueError as e:
        raise SchemaError(2, f"JSON decode error: {e}") from None


@web.middleware
async def _errors(request: web.Request, handler):
    """Turn SchemaError into SGLang's 400 envelopes and unexpected failures into shape-4 500s."""
    try:
        return await handler(request)
    except SchemaError as e:
        return web.json_response(e.body(), status=e.status)
    except web.HTTPException:
        raise
    except EngineRequestError as e:
        return _error(3, e.reason)
    except Exception as e:  # noqa: BLE001 - the server must answer, not drop the connection
        return _error(4, f"{type(e).__name__}: {e}", 500)


class _Server:
    """Handlers bound to one engine."""

    def __init__(self, engine, model_path: str | None, health_timeout_s: float):
        self.engine = engine
        self.model_path = model_path or getattr(engine, "model_name", "model")
        self.health_timeout_s = health_timeout_s
        self.rids: set[str] = set()
        self.update_lock = asyncio.Lock()

    async def generate(self, request: web.Request) -> web.Response:
        """POST /generate: token-in (or text-in) generation; a JSON array for a batch."""
        items, batch, return_logprob = parse_generate(await _json_body(request))
        tok = self.engine.tokenizer
        rids = [item.rid or uuid.uuid4().hex for item in items]
        if len(set(rids)) != len(rids) or self.rids.intersection(rids):
            raise SchemaError(3, "Duplicate request ID detected")
        for item in items:
            if item.input_ids is None:
                if tok is None:
                    raise SchemaError(3, "text input needs a tokenizer; send input_ids")
                item.input_ids = tok.encode(item.text)
        self.rids.update(rids)
        try:
            gens = await asyncio.gather(*(self.engine.generate(i.input_ids, i.sampling) for i in items))
        except EngineRequestError as e:
            return _error(3, e.reason)
        except EngineError as e:
            return _error(4, str(e), 503)
        finally:
            self.rids.difference_update(rids)
        out = []
        for item, rid, gen in zip(items, rids, gens, strict=True):
            text = None
            if tok is not None:
                text = tok.decode(gen.output_ids, skip_special_tokens=item.skip_special_tokens)
                matched = gen.meta.get("finish_reason", {}).get("matched")
                if isinstance(matched, str) and not item.no_stop_trim and matched in text:
                    text = text[: text.index(matched)]
            out.append(generate_response(gen, rid, len(item.input_ids), text, return_logprob, self.engine.version))
        return web.json_response(out if batch else out[0])

    async def health(self, request: web.Request) -> web.Response:
        """GET /health: 200 while the server runs."""
        return web.Response(status=200)

    async def health_generate(self, request: web.Request) -> web.Response:
        """GET /health_generate: a 1-token probe; 503 while paused or if it takes too long."""
        if self.engine.paused:
            return web.Response(status=503, text="paused")
        probe = SamplingParams(temperature=0.0, max_new_tokens=1)
        try:
            await asyncio.wait_for(self.engine.generate([0], probe), self.health_timeout_s)
        except (TimeoutError, EngineError):
            return web.Response(status=503)
        return web.Response(status=200)

    async def model_info(self, request: web.Request) -> web.Response:
        """GET /model_info: SGLang's model description, including the current weight_version."""
        config = self.engine.model.config
        return web.json_response({
            "model_path": self.model_path, "served_model_name": getattr(self.engine, "model_name", self.model_path),
            "tokenizer_path": self.model_path, "is_generation": True, "preferred_sampling_params": None,
            "weight_version": str(self.engine.version), "load_format": "auto", "reasoning_parser": None,
            "tool_call_parser": None, "disaggregation_mode": "null", "has_image_understanding": False,
            "has_audio_understanding": False, "model_type": getattr(config, "model_type", None),
            "architectures": getattr(config, "architectures", None) or [type(self.engine.model).__name__],
        })

    async def server_info(self, request: web.Request) -> web.Response:
        """GET /server_info: the few server facts the embedded engine has."""
        from agentrl import __version__

        ctx = self.engine.max_context
        return web.json_response({
            "model_path": self.model_path, "context_length": ctx, "max_req_input_len": ctx, "tp_size": 1,
            "dp_size": 1, "version": f"agentrl-{__version__}", "backend": "agentrl-embedded",
            "max_batch_size": self.engine.max_batch_size, "weight_version": str(self.engine.version),
        })

    async def pause_generation(self, request: web.Request) -> web.Response:
        """POST /pause_generation {"mode": "abort"|"retract"|"in_place"}: block new requests (default abort)."""
        body = await _json_body(request, optional=True)
        mode = body.get("mode", "abort") if isinstance(body, dict) else None
        if mode not in PAUSE_MODES:
            raise SchemaError(2, f"mode must be one of 'abort', 'retract', 'in_place'; got {mode!r}")
        await self.engine.pause(PAUSE_MODES[mode])
        return web.json_response({"message": "Generation paused successfully.", "status": "ok"})

    async def continue_generation(self, request: web.Request) -> web.Response:
        """POST /continue_generation: admit requests again."""
        await _json_body(request, optional=True)
        await self.engine.resume()
        return web.json_response({"message": "Generation continued successfully.", "status": "ok"})

    async def update_weights_from_disk(self, request: web.Request) -> web.Response:
        """POST /update_weights_from_disk {"model_path", "weight_version"?, "abort_all_requests"?}."""
        body = await _json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("model_path"), str):
            raise SchemaError(2, "1 validation error for UpdateWeightFromDiskReqInput\nmodel_path\n  Field required")
        label = body.get("weight_version")
        try:
            version = None if label is None else int(label)
        except (TypeError, ValueError):
            return web.json_response(
                {"success": False, "message": f"weight_version must be an integer for agentrl serve, got {label!r}"},
                status=400,
            )
        async with self.update_lock:
            was_paused = self.engine.paused
            if not was_paused:  # like SGLang's writer lock: wait for (or abort) running requests
                await self.engine.pause("abort" if body.get("abort_all_requests") else "finish")
            try:
                await self.engine.update_weights(path=body["model_path"], version=version)
            except EngineRequestError as e:
                return web.json_response({"success": False, "message": e.reason}, status=400)
            finally:
                if not was_paused and not body.get("keep_pause"):
                    await self.engine.resume()
        self.model_path = body["model_path"]
        return web.json_response(
            {"success": True, "message": "Succeeded to update model weights.", "num_paused_requests": 0}
        )

    async def flush_cache(self, request: web.Request) -> web.Response:
        """GET|POST /flush_cache[?timeout=s]: 200 when idle (the embedded engine keeps no cross-request cache)."""
        deadline = time.monotonic() + float(request.query.get("timeout", 0) or 0)
        while self.engine.in_flight:
            if time.monotonic() >= deadline:
                return web.Response(status=400, text="Timed out waiting for idle state.")
            await asyncio.sleep(0.05)
        return web.Response(
            text="Cache flushed.\nPlease check backend logs for more details. "
            "(When there are running or waiting requests, the operation will not be performed.)"
        )


def build_app(engine, *, model_path: str | None = None, health_timeout_s: float = 20.0) -> web.Application:
    """An aiohttp application serving engine with SGLang's native endpoints."""
    s = _Server(engine, model_path, health_timeout_s)
    app = web.Application(middlewares=[_errors], client_max_size=64 * 1024 * 1024)
    app.router.add_post("/generate", s.generate)
    app.router.add_put("/generate", s.generate)
    app.router.add_get("/health", s.health)
    app.router.add_get("/health_generate", s.health_generate)
    app.router.add_get("/model_info", s.model_info)
    app.router.add_get("/get_model_info", s.model_info)
    app.router.add_get("/server_info", s.server_info)
    app.router.add_post("/pause_generation", s.pause_generation)
    app.router.add_post("/continue_generation", s.continue_generation)
    app.router.add_post("/update_weights_from_disk", s.update_weights_from_disk)
    app.router.add_get("/flush_cache", s.flush_cache)
    app.router.add_post("/flush_cache", s.flush_cache)
    return app


async def start_server(engine, host: str = "127.0.0.1", port: int = 0, **kwargs: Any) -> tuple[web.AppRunner, str]:
    """Start serving engine on host:port (0 = a free port); returns (runner, base URL). Stop with runner.cleanup()."""
    runner = web.AppRunner(build_app(engine, **kwargs), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # the real port when 0 was asked
    return runner, f"http://{host}:{bound}"


def spawn_server(model: str = "tiny", *, host: str = "127.0.0.1", port: int = 0, timeout_s: float = 300.0,
                 extra: tuple[str, ...] = ()):
    """Start `agentrl serve` in a subprocess and wait until it listens; returns (Popen, base URL). Kill it when done."""
    import os
    import subprocess
    import sys
    import threading
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "agentrl.commands.serve", "--model", model, "--host", host, "--port", str(port),
           "--seed", "0", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline, lines = time.monotonic() + timeout_s, []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "listening on " in line:  # keep draining its output so a full pipe never blocks the server
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, line.split("listening on ")[1].split()[0]
    proc.kill()
    proc.wait()
    raise EngineError(f"agentrl serve did not start within {timeout_s:.0f}s:\n" + "".join(lines[-20:]))


async def serve_forever(model: str, host: str, port: int, *, dtype: str = "float32", device: str = "cpu",
                        seed: int | None = None, max_batch_size: int = 64) -> None:
    """Load model into an embedded engine and serve it until SIGINT/SIGTERM; prints the URL when ready."""
    from agentrl.rollout.embedded import EmbeddedEngine

    engine = await asyncio.to_thread(
        EmbeddedEngine, model, dtype=dtype, device=device, seed=seed, max_batch_size=max_batch_size
    )
    runner, url = await start_server(engine, host, port, model_path=model)
    print(f"agentrl serve: listening on {url} (model {model}, weight version {engine.version})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        await engine.close()
