"""The gateway's HTTP server: OpenAI `/v1/chat/completions` per session, in front of any agentrl engine.

    gateway = Gateway(engine, renderer)
    await gateway.start()                                  # http://127.0.0.1:<port>
    session = gateway.open_session()                       # session.base_url = …/sessions/<id>/v1
    # the agent program: OpenAI(base_url=session.base_url, api_key=session.api_key)
    segments, turns = gateway.close_session(session.id).segments()

Routes (each checks the session's bearer key: a wrong one is 401, an unknown session 404):
POST /sessions/{id}/v1/chat/completions (non-streaming and `stream: true` server-sent events),
GET /sessions/{id}/v1/models. Errors are OpenAI's envelope {"error": {"message", "type", "param", "code"}}.
Session routes for `agentrl gateway` (the admin key when one is set): POST /sessions opens one, GET
/sessions/{id} returns its record as a trajectory dict, DELETE /sessions/{id} returns it and closes the session.

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

from agentrl.engine.errors import EngineRequestError
from agentrl.engine.protocol import Engine, SamplingParams
from agentrl.gateway.protocol import RequestError, completion, parse_request, stream_chunks
from agentrl.gateway.session import Session, SessionLimits
from agentrl.rollout.chat import ChatRenderer
from agentrl.rollout.seeds import turn_seed
from agentrl.types import Trajectory


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
        admin_api_key: the bearer key of the session routes (POST /sessions, GET|DELETE /sessions/{id});
            None leaves them open (bind to loopback then).
        drain_s: seconds `close` lets calls in flight finish before it cancels them (an episode's own gateway
            uses 0: once the episode is over, a late call has nobody to answer).
    """

    def __init__(self, engine: Engine, renderer: ChatRenderer, *, sampling: SamplingParams | None = None,
                 model_name: str = "agentrl", admin_api_key: str | None = None, drain_s: float = 60.0):
        self.engine, self.renderer = engine, renderer
        self.drain_s = drain_s
        self.admin_api_key = admin_api_key
        self.sampling = sampling or SamplingParams()
        self.model_name = model_name
        self.sessions: dict[str, Session] = {}
        self.url = ""
        self._runner: web.AppRunner | None = None

    # ---- sessions ----

    def open_session(self, *, session_id: str | None = None, api_key: str | None = None,
                     limits: SessionLimits | None = None, sampling: SamplingParams | None = None,
                     fixed_sampling: bool = False, sampling_seed: int | None = None) -> Session:
        """A new session with its own base URL and API key (see Session for the sampling arguments); without
        `limits`, a call samples at most the sampling settings' max_new_tokens (the gateway's by default)."""
        if limits is None:
            limits = SessionLimits(max_new_tokens=(sampling or self.sampling).max_new_tokens)
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

    def _admin(self, request: web.Request) -> None:
        if self.admin_api_key is not None and request.headers.get("Authorization", "") != f"Bearer {self.admin_api_key}":
            raise RequestError("Incorrect admin API key.", status=401, code="invalid_api_key")

    async def create_session(self, request: web.Request) -> web.Response:
        """POST /sessions {"session_id"?, "max_calls"?, "max_context_tokens"?, "max_new_tokens"?, "seed"?}: a new
        session's {"id", "base_url", "api_key"} (201)."""
        try:
            self._admin(request)
            raw = await request.read()
            try:
                body = json.loads(raw) if raw.strip() else {}
            except ValueError as e:
                raise RequestError(f"the request body is not valid JSON: {e}") from None
            if not isinstance(body, dict):
                raise RequestError("the request body must be a JSON object")
            limits = SessionLimits(max_new_tokens=self.sampling.max_new_tokens)
            for key in ("max_calls", "max_context_tokens", "max_new_tokens"):
                value = body.get(key, getattr(limits, key))
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise RequestError(f"{key} must be a positive integer, got {value!r}", param=key)
                setattr(limits, key, value)
            sid, seed = body.get("session_id"), body.get("seed")
            if sid is not None and (not isinstance(sid, str) or not sid.replace("-", "").replace("_", "").isalnum()):
                raise RequestError("session_id must be letters, digits, - and _", param="session_id")
            if sid in self.sessions:
                raise RequestError(f"session {sid!r} already exists", status=409, param="session_id")
            if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
                raise RequestError("seed must be an integer", param="seed")
        except RequestError as e:
            return _error(e)
        session = self.open_session(session_id=sid, limits=limits, sampling_seed=seed)
        return web.json_response({"id": session.id, "base_url": session.base_url, "api_key": session.api_key},
                                 status=201)

    def _record(self, session: Session) -> dict[str, Any]:
        segments, turns = session.segments()
        traj = Trajectory(id=session.id, group_id="", env_id="gateway", task_id="", segments=segments, turns=turns,
                          metrics=session.metrics())
        return traj.to_dict() | {"ending": list(session.ending) if session.ending else None}

    async def session_record(self, request: web.Request) -> web.Response:
        """GET /sessions/{id}: the session's record as a trajectory dict (segments, turns, gateway metrics);
        DELETE also closes the session."""
        sid = request.match_info["session"]
        try:
            self._admin(request)
            if sid not in self.sessions:
                raise RequestError(f"session {sid!r} does not exist (or has ended)", status=404,
                                   code="session_not_found")
        except RequestError as e:
            return _error(e)
        session = self.close_session(sid) if request.method == "DELETE" else self.sessions[sid]
        return web.json_response(self._record(session))

    def app(self) -> web.Application:
        """The aiohttp application (routes only; `start` serves it)."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/sessions/{session}/v1/chat/completions", self.chat_completions)
        app.router.add_get("/sessions/{session}/v1/models", self.models)
        app.router.add_post("/sessions", self.create_session)
        app.router.add_get("/sessions/{session}", self.session_record)
        app.router.add_delete("/sessions/{session}", self.session_record)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on host:port (0: a free port); returns the base URL."""
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=self.drain_s)
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
