"""The gateway's HTTP server: OpenAI `/v1/chat/completions` per session, in front of any agentrl engine.

    gateway = Gateway(engine, renderer)
    await gateway.start()                                  # http://127.0.0.1:<port>
    session = gateway.open_session()                       # session.base_url = …/sessions/<id>/v1
    # the agent program: OpenAI(base_url=session.base_url, api_key=session.api_key)
    segments, turns = gateway.close_session(session.id).segments()

Routes (each checks the session's bearer key: a wrong one is 401, an unknown session 404):
POST /sessions/{id}/v1/chat/completions (non-streaming and `stream: true` server-sent events),
GET /sessions/{id}/v1/models. Errors are OpenAI's envelope {"error": {"message", "type", "param", "code"}}.

Streaming sends the finished completion in OpenAI's chunk order once the engine is done: the engine is not
streamed, so both modes sample and record exactly the same tokens.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import replace
from typing import Any

from aiohttp import web

from agentrl.gateway.protocol import RequestError, completion, parse_request, stream_chunks
from agentrl.gateway.session import Session, SessionLimits
from agentrl.rollout.chat import ChatRenderer
from agentrl.rollout.engine import Engine, SamplingParams
from agentrl.rollout.engine_errors import EngineRequestError
from agentrl.rollout.seeds import turn_seed


def _error(e: RequestError) -> web.Response:
    return web.json_response(e.body(), status=e.status)


class Gateway:
    """Sessions of OpenAI-compatible chat completions over one engine, recorded token-in/token-out.

    Args:
        engine: any agentrl Engine (embedded, SGLang client).
        renderer: the ChatRenderer (chat template) the trainer uses.
        sampling: sessions' default sampling settings (stop ids are always the renderer's end-of-turn); a
            request's temperature and top_p replace them unless the session fixes its sampling.
        model_name: the id /v1/models lists.
    """

    def __init__(self, engine: Engine, renderer: ChatRenderer, *, sampling: SamplingParams | None = None,
                 model_name: str = "agentrl"):
        self.engine, self.renderer = engine, renderer
        self.sampling = sampling or SamplingParams()
        self.model_name = model_name
        self.sessions: dict[str, Session] = {}
        self.url = ""
        self._runner: web.AppRunner | None = None

    # ---- sessions ----

    def open_session(self, *, session_id: str | None = None, api_key: str | None = None,
                     limits: SessionLimits | None = None, sampling: SamplingParams | None = None,
                     fixed_sampling: bool = False, sampling_seed: int | None = None) -> Session:
        """A new session with its own base URL and API key (see Session for the sampling arguments)."""
        session = Session(self.renderer, session_id=session_id, api_key=api_key, limits=limits, sampling=sampling,
                          fixed_sampling=fixed_sampling, sampling_seed=sampling_seed)
        if session.id in self.sessions:
            raise ValueError(f"session {session.id!r} is already open")
        session.base_url = f"{self.url}/sessions/{session.id}/v1"
        self.sessions[session.id] = session
        return session

    def close_session(self, session_id: str) -> Session | None:
        """Stop serving a session (its URL answers 404 from now on) and return it with its record."""
        return self.sessions.pop(session_id, None)

    # ---- HTTP ----

    def _session(self, request: web.Request) -> Session:
        session = self.sessions.get(request.match_info["session"])
        if session is None:
            raise RequestError(f"session {request.match_info['session']!r} does not exist (or has ended)",
                               status=404, code="session_not_found")
        header = request.headers.get("Authorization", "")
        if header != f"Bearer {session.api_key}":
            raise RequestError("Incorrect API key provided for this session.", status=401, code="invalid_api_key")
        return session

    async def models(self, request: web.Request) -> web.Response:
        """GET /sessions/{id}/v1/models: the one served model."""
        try:
            self._session(request)
        except RequestError as e:
            return _error(e)
        return web.json_response({"object": "list", "data": [
            {"id": self.model_name, "object": "model", "created": 0, "owned_by": "agentrl"}]})

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        """POST /sessions/{id}/v1/chat/completions."""
        try:
            session = self._session(request)
            try:
                body = json.loads(await request.read())
            except ValueError as e:
                raise RequestError(f"the request body is not valid JSON: {e}") from None
            req = parse_request(body)
            done = await self._complete(session, req)
        except RequestError as e:
            return _error(e)
        if not req.stream:
            return web.json_response(done)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        for chunk in stream_chunks(done, req.include_usage):
            await resp.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _complete(self, session: Session, req) -> dict[str, Any]:
        """Render, sample `n` choices, record them; the chat.completion object."""
        plan = session.prepare(req.messages, req.tools)
        call = session.stats.calls - 1
        base = replace(session.sampling or self.sampling, stop_token_ids=self.renderer.stop_token_ids, stop=req.stop,
                       max_new_tokens=session.max_new_tokens(plan, req.max_tokens))
        params = base if session.fixed_sampling else replace(
            base, temperature=base.temperature if req.temperature is None else req.temperature,
            top_p=base.top_p if req.top_p is None else req.top_p)
        seed = turn_seed(session.sampling_seed, call) if session.sampling_seed is not None else req.seed

        async def one(c: int):
            s = None if seed is None else (seed + c) & 0x7FFFFFFF
            return await self.engine.generate(plan.prompt_ids, replace(params, seed=s), session_id=session.id)

        try:
            gens = await asyncio.gather(*(one(c) for c in range(req.n)))
        except EngineRequestError as e:
            raise RequestError(f"the engine refused the request: {e.reason}") from None
        except Exception as e:  # noqa: BLE001 - an engine failure is an answer (503) and the episode's ending
            session.fail("engine_error", f"{type(e).__name__}: {e}")
            raise RequestError(f"the engine failed: {type(e).__name__}: {e}", status=503, kind="server_error") from None
        if any(g.finish_reason == "abort" for g in gens):
            session.fail("engine_error", "generation aborted")
            raise RequestError("generation aborted by the engine", status=503, kind="server_error")
        choices = session.record(plan, list(gens), req.tools, parse_tools=req.parse_tools, stop=req.stop)
        return completion(f"chatcmpl-{uuid.uuid4().hex}", req.model or self.model_name, choices,
                          len(plan.prompt_ids), sum(len(g.output_ids) for g in gens))

    def app(self) -> web.Application:
        """The aiohttp application (routes only; `start` serves it)."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/sessions/{session}/v1/chat/completions", self.chat_completions)
        app.router.add_get("/sessions/{session}/v1/models", self.models)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on host:port (0: a free port); returns the base URL."""
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]
        self.url = f"http://{host if ':' not in host else f'[{host}]'}:{bound}"
        return self.url

    async def close(self) -> None:
        """Stop serving (sessions still open answer nothing from now on)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
