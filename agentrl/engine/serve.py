"""`agentrl serve`: the embedded engine behind SGLang's native HTTP API, so one client drives both.

Endpoints and semantics follow SGLang 0.5.23 (srt/entrypoints/http_server.py, srt/managers/io_struct.py,
srt/utils/auth.py): POST|PUT /generate, GET /health and /health_generate (both
run a 1-token probe, as SGLang does by default), GET /ready, GET /model_info (alias /get_model_info), GET
/server_info (alias /get_server_info), POST /abort_request, POST /pause_generation (abort | retract |
in_place), POST /continue_generation, POST /update_weights_from_disk, GET|POST /flush_cache. `--api-key` guards
normal endpoints; control endpoints need `--admin-api-key` when it is set (else the api key, else nothing).

What SGLang does and serve reproduces, because clients break on it: /update_weights_from_disk with flush_cache
(the default) while requests hold KV cache (a pause in_place) loads the weights, cannot flush and answers 400
"Weights were updated, but the cache was not flushed" without moving the version label; retract puts running
requests back in the queue, so the flush succeeds and they are recomputed after continue.

Differences, all refusals with a clear 400 rather than silent changes: no streaming, no prompt/top logprobs, no
sampling mask, no penalties or constrained decoding, `n` must be 1. /health* answer 503 at once while paused
(SGLang's probe times out after 20 s). Weight versions are integers, reported as strings ("0" at start, where
SGLang says "default").
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from typing import Any

from aiohttp import web

from agentrl.engine.errors import EngineRequestError
from agentrl.engine.protocol import SamplingParams
from agentrl.engine.sglang_schema import (
    SchemaError,
    error_body,
    generate_response,
    parse_generate,
    parse_update_from_disk,
)
from agentrl.errors import AgentRLError, EngineError

SGLANG_PAUSE_MODES = ("abort", "retract", "in_place")  # io_struct PauseGenerationReqInput.mode; default abort
OPEN_PATHS = frozenset({"/health", "/health_generate", "/ready", "/metrics"})  # srt/utils/auth.py: never guarded
CONTROL_PATHS = frozenset({  # ADMIN_OPTIONAL endpoints of http_server.py
    "/pause_generation", "/continue_generation", "/update_weights_from_disk", "/abort_request", "/flush_cache",
})
NOT_FLUSHED = ("Weights were updated, but the cache was not flushed: requests are running (paused in_place). "
               "Pause with mode retract (or abort) before updating, or wait for them.")


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


def _auth(api_key: str | None, admin_api_key: str | None):
    """SGLang's bearer-key rules (srt/utils/auth.py): health paths open; control paths take the admin key when
    one is set, else the api key; other paths take the api key. A wrong or missing key → 401."""

    @web.middleware
    async def check(request: web.Request, handler):
        path = request.path
        if path in OPEN_PATHS:
            return await handler(request)
        need = (admin_api_key or api_key) if path in CONTROL_PATHS else api_key
        if need is not None and request.headers.get("Authorization", "") != f"Bearer {need}":
            return web.json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    return check


class _Server:
    """Handlers bound to one engine."""

    def __init__(self, engine, model_path: str | None, health_timeout_s: float):
        self.engine = engine
        self.model_path = model_path or getattr(engine, "model_name", "model")
        self.health_timeout_s = health_timeout_s
        self.rids: set[str] = set()
        self.update_lock = asyncio.Lock()
        self.started = time.time()

    async def generate(self, request: web.Request) -> web.Response:
        """POST /generate: token-in (or text-in) generation; a JSON array for a batch."""
        items, batch, return_logprob = parse_generate(await _json_body(request))
        tok = self.engine.tokenizer
        if batch and len(items) > 1 and len({i.rid for i in items}) == 1 and items[0].rid is not None:
            for i, item in enumerate(items):  # io_struct GenerateReqInput: one string rid for a batch → {rid}_{i}
                item.rid = f"{item.rid}_{i}"
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
            gens = await asyncio.gather(*(self.engine.generate(i.input_ids, i.sampling, rid=rid)
                                          for i, rid in zip(items, rids, strict=True)))
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

    async def health_generate(self, request: web.Request) -> web.Response:
        """GET /health and /health_generate: a 1-token probe; 503 while paused or if it takes too long."""
        if self.engine.paused:
            return web.Response(status=503, text="paused")
        probe = SamplingParams(temperature=0.0, max_new_tokens=1)
        try:
            await asyncio.wait_for(self.engine.generate([0], probe), self.health_timeout_s)
        except (TimeoutError, EngineError):
            return web.Response(status=503)
        return web.Response(status=200)

    async def ready(self, request: web.Request) -> web.Response:
        """GET /ready: 200 unless paused (no generation)."""
        return web.Response(status=503 if self.engine.paused else 200)

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
        """GET /server_info: the server facts the embedded engine has, under SGLang's key names."""
        from agentrl import __version__

        ctx = self.engine.max_context
        return web.json_response({
            "model_path": self.model_path, "context_length": ctx, "max_req_input_len": ctx, "tp_size": 1,
            "dp_size": 1, "version": f"agentrl-{__version__}", "backend": "agentrl-embedded",
            "max_running_requests": self.engine.max_batch_size, "max_batch_size": self.engine.max_batch_size,
            "weight_version": str(self.engine.version), "startup_time": self.started,
            "enable_deterministic_inference": False, "internal_states": [{"paused": self.engine.paused}],
        })

    async def abort_request(self, request: web.Request) -> web.Response:
        """POST /abort_request {"rid"} | {"abort_all": true}: aborted requests answer 200 with finish_reason
        abort and their partial output; an unknown or empty rid is a silent no-op (200, empty body)."""
        body = await _json_body(request, optional=True)
        if not isinstance(body, dict):
            raise SchemaError(2, "request body must be a JSON object")
        rid, abort_all = body.get("rid", ""), body.get("abort_all", False)
        if not isinstance(rid, str) or not isinstance(abort_all, bool):
            raise SchemaError(2, "1 validation error for AbortReqInput: rid must be a string, abort_all a boolean")
        if abort_all:
            await self.engine.abort(None)
        elif rid:
            await self.engine.abort(rid)  # SGLang aborts every live rid starting with it (n > 1 sub-requests)
        return web.Response(status=200)

    async def pause_generation(self, request: web.Request) -> web.Response:
        """POST /pause_generation {"mode": "abort"|"retract"|"in_place"}: block new requests (default abort)."""
        body = await _json_body(request, optional=True)
        mode = body.get("mode", "abort") if isinstance(body, dict) else None
        if mode not in SGLANG_PAUSE_MODES:
            raise SchemaError(2, f"mode must be one of 'abort', 'retract', 'in_place'; got {mode!r}")
        await self.engine.pause(mode)
        return web.json_response({"message": "Generation paused successfully.", "status": "ok"})

    async def continue_generation(self, request: web.Request) -> web.Response:
        """POST /continue_generation: admit requests again."""
        await _json_body(request, optional=True)
        await self.engine.resume()
        return web.json_response({"message": "Generation continued successfully.", "status": "ok"})

    async def update_weights_from_disk(self, request: web.Request) -> web.Response:
        """POST /update_weights_from_disk (UpdateWeightFromDiskReqInput): not paused, it waits for running
        requests (or aborts them with abort_all_requests); paused, it runs now, and with flush_cache (default)
        and requests still holding KV (in_place) the weights load but the answer is 400 and the label stays."""
        req = parse_update_from_disk(await _json_body(request))
        label = req["weight_version"]
        try:
            version = None if label is None else int(label)
        except ValueError:
            return web.json_response(
                {"success": False, "message": f"weight_version must be an integer for agentrl serve, got {label!r}"},
                status=400,
            )
        async with self.update_lock:
            was_paused = self.engine.paused
            if not was_paused:  # SGLang's writer lock: wait for (or abort) running requests
                await self.engine.pause("abort" if req["abort_all_requests"] else "finish")
            try:
                stuck = req["flush_cache"] and self.engine.running > 0
                keep = self.engine.version if stuck else version
                await self.engine.update_weights(path=req["model_path"], version=keep)
            except EngineRequestError as e:
                return web.json_response({"success": False, "message": e.reason}, status=400)
            finally:
                if not was_paused and not req["keep_pause"]:
                    await self.engine.resume()
        self.model_path = req["model_path"]
        if stuck:
            return web.json_response({"success": False, "message": NOT_FLUSHED, "num_paused_requests": 0},
                                     status=400)
        return web.json_response(
            {"success": True, "message": "Succeeded to update model weights.", "num_paused_requests": 0}
        )

    async def flush_cache(self, request: web.Request) -> web.Response:
        """GET|POST /flush_cache[?timeout=s]: 200 once no request is running (the embedded engine keeps no
        cross-request cache, so there is nothing else to drop); 400 on timeout, as SGLang."""
        deadline = time.monotonic() + float(request.query.get("timeout", 0) or 0)
        while self.engine.running or (self.engine.in_flight and not self.engine.paused):
            if time.monotonic() >= deadline:
                return web.Response(status=400, text="Timed out waiting for idle state.")
            await asyncio.sleep(0.05)
        return web.Response(
            text="Cache flushed.\nPlease check backend logs for more details. "
            "(When there are running or waiting requests, the operation will not be performed.)"
        )


def build_app(engine, *, model_path: str | None = None, health_timeout_s: float = 20.0,
              api_key: str | None = None, admin_api_key: str | None = None) -> web.Application:
    """An aiohttp application serving engine with SGLang's native endpoints (and its bearer-key rules)."""
    engine.full_vocab_logprobs = True  # report log_softmax(logits / T) over the whole vocabulary, as SGLang
    s = _Server(engine, model_path, health_timeout_s)
    app = web.Application(middlewares=[_auth(api_key, admin_api_key), _errors], client_max_size=64 * 1024 * 1024)
    app.router.add_post("/generate", s.generate)
    app.router.add_put("/generate", s.generate)
    app.router.add_get("/health", s.health_generate)
    app.router.add_get("/health_generate", s.health_generate)
    app.router.add_get("/ready", s.ready)
    app.router.add_get("/model_info", s.model_info)
    app.router.add_get("/get_model_info", s.model_info)
    app.router.add_get("/server_info", s.server_info)
    app.router.add_get("/get_server_info", s.server_info)
    app.router.add_post("/abort_request", s.abort_request)
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


def listen_error(host: str, port: int, e: OSError) -> str:
    """One line for an address the server cannot listen on (busy, or not this machine's): the user's to fix."""
    reason = os.strerror(e.errno).lower() if e.errno else str(e)
    return f"cannot listen on {host}:{port}: {reason}; pick another --port (0 = any free port)"


def check_listenable(host: str, port: int) -> None:
    """Refuse an address that cannot be listened on before a model is loaded (seconds to minutes): bind it as the
    server will (SO_REUSEADDR, as aiohttp does) and let go. Raises AgentRLError with listen_error's line."""
    import socket

    from agentrl.errors import AgentRLError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
    except OSError as e:
        raise AgentRLError(listen_error(host, port, e)) from None


async def serve_forever(model: str, host: str, port: int, *, dtype: str = "float32", device: str = "cpu",
                        seed: int | None = None, max_batch_size: int = 64, api_key: str | None = None,
                        admin_api_key: str | None = None) -> None:
    """Load model into an embedded engine on `device` (built by engine.build.build_engine, as training builds its
    own) and serve it until SIGINT/SIGTERM; prints the URL when ready. Without `seed`, requests that carry no
    sampling_seed draw fresh seeds on every start (SGLang's behaviour)."""
    import random

    from agentrl.config import Config, ModelConfig, RolloutConfig
    from agentrl.engine.build import build_engine
    from agentrl.errors import ConfigError

    if dtype not in ("float32", "bfloat16"):
        raise ConfigError(f"--dtype {dtype}: the embedded engine runs float32 or bfloat16")
    check_listenable(host, port)
    cfg = Config(model=ModelConfig(name=model, device=device),
                 rollout=RolloutConfig(engine_dtype=dtype, max_batch_size=max_batch_size))
    engine = await asyncio.to_thread(build_engine, cfg, seed=random.getrandbits(63) if seed is None else seed)
    try:
        runner, url = await start_server(engine, host, port, model_path=model, api_key=api_key,
                                         admin_api_key=admin_api_key)
    except OSError as e:  # a busy or unavailable address is the user's to fix: one line, exit 2 (as the gateway)
        await engine.close()
        raise AgentRLError(listen_error(host, port, e)) from None
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
