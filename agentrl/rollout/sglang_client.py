"""SGLangClient: the Engine protocol over SGLang's native HTTP API, for one or many servers.

Every request is token-in/token-out: POST /generate with `input_ids`, the full `sampling_params` and
`return_logprob: true`; tokens and behaviour logprobs come from `meta_info.output_token_logprobs`, per-token
policy versions from `meta_info.weight_versions` spans (or `weight_version` on older servers). An HTTP 200
whose `finish_reason.type` is "abort" (pause, abort_request) becomes a Generation with finish_reason "abort"
and the partial output. SGLang's four error envelopes become EngineRequestError (400s: fix the request) or,
after retries, EngineUnavailable. Connection failures and 502/503/504 are retried with exponential backoff,
on any healthy server, until a deadline.

Routing: least in-flight requests first; a `session_id` (one per trajectory) sticks to the server that served
it first, so multi-turn prompts hit that server's prefix (radix) cache. One aiohttp ClientSession with a
connection limit serves every request.

Versions are integers: "default" (SGLang's launch label) is 0, numeric labels are themselves, and
update_weights sends `weight_version=str(v)`, so labels stay numeric.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import aiohttp

from agentrl.errors import EngineError
from agentrl.rollout.engine import Generation, SamplingParams
from agentrl.rollout.engine_errors import EngineRequestError, EngineUnavailable

RETRY_STATUSES = {502, 503, 504}
_TRANSIENT = (aiohttp.ClientConnectionError, asyncio.TimeoutError)
SGLANG_PAUSE_MODES = {"abort": "abort", "in_place": "in_place", "retract": "retract"}


def error_message(body: Any, fallback: str = "") -> str:
    """The human message inside any of SGLang's error envelopes (or a control endpoint's {"message"})."""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, str):  # shape 1: contract violation
            return err
        if isinstance(err, dict) and "message" in err:  # shape 3 (and the streaming error chunk)
            return str(err["message"])
        if "message" in body:  # shapes 2 and 4, control endpoints
            return str(body["message"])
    return fallback or json.dumps(body)[:500]


def version_number(label: Any) -> int:
    """An SGLang weight_version label as agentrl's integer version ("default" → 0, "step-17" → 17)."""
    if label is None or label == "default":
        return 0
    if isinstance(label, int):
        return label
    label = str(label)
    if re.fullmatch(r"-?\d+", label):
        return int(label)
    match = re.search(r"\d+$", label)
    if match is None:
        raise EngineError(f"weight_version {label!r} is not numeric; launch SGLang with --weight-version 0")
    return int(match.group())


def parse_generate_response(body: Any, url: str = "") -> Generation:
    """One /generate response object → Generation (checks abort, lengths and per-token versions)."""
    if not isinstance(body, dict) or "meta_info" not in body:
        raise EngineError(f"{url}/generate: unexpected response {str(body)[:300]}")
    meta = body["meta_info"]
    triples = meta.get("output_token_logprobs")
    if triples is None:
        raise EngineError(f"{url}/generate: response has no output_token_logprobs (was return_logprob sent?)")
    output_ids = [int(t[1]) for t in triples]
    logprobs = [t[0] for t in triples]
    if any(lp is None for lp in logprobs):
        raise EngineError(f"{url}/generate: null logprob among output tokens")
    if "output_ids" in body and list(body["output_ids"]) != output_ids:
        raise EngineError(f"{url}/generate: output_ids and output_token_logprobs disagree")
    finish = meta.get("finish_reason") or {}
    kind = finish.get("type") if isinstance(finish, dict) else str(finish)
    if kind not in ("stop", "length", "abort"):
        raise EngineError(f"{url}/generate: unknown finish_reason {finish!r}")
    versions = [version_number(meta.get("weight_version"))] * len(output_ids)
    for span in meta.get("weight_versions") or []:
        v = version_number(span["version"])
        for i in range(int(span["start"]), min(int(span["end"]), len(versions))):
            versions[i] = v
    extra = {k: meta[k] for k in ("id", "prompt_tokens", "cached_tokens", "e2e_latency", "weight_version") if k in meta}
    return Generation(output_ids, [float(x) for x in logprobs], kind, versions,
                      meta={"finish_reason": finish, "url": url, **extra})


class SGLangClient:
    """Engine protocol over one or more SGLang (or `agentrl serve`) servers; see the module docstring."""

    def __init__(
        self,
        urls: str | Sequence[str],
        *,
        api_key: str | None = None,
        retry_deadline_s: float = 60.0,
        backoff_s: float = 0.1,
        max_backoff_s: float = 5.0,
        request_timeout_s: float | None = 900.0,
        connect_timeout_s: float = 10.0,
        max_connections: int = 512,
        max_sticky_sessions: int = 100_000,
    ):
        """urls: base URLs such as "http://10.0.0.5:30000". retry_deadline_s bounds how long one call keeps
        retrying transient failures; request_timeout_s bounds one HTTP attempt (generation included)."""
        self.urls = [urls.rstrip("/")] if isinstance(urls, str) else [u.rstrip("/") for u in urls]
        if not self.urls:
            raise ValueError("SGLangClient needs at least one server URL")
        self.retry_deadline_s, self.backoff_s, self.max_backoff_s = retry_deadline_s, backoff_s, max_backoff_s
        self._timeout = aiohttp.ClientTimeout(total=request_timeout_s, sock_connect=connect_timeout_s)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._max_connections = max_connections
        self._max_sticky = max_sticky_sessions
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._in_flight = {u: 0 for u in self.urls}
        self._down_until = {u: 0.0 for u in self.urls}
        self._sticky: OrderedDict[str, str] = OrderedDict()
        self._turn = 0
        self._version = 0
        self._paused = False

    # ---- Engine protocol ----

    @property
    def version(self) -> int:
        """The newest policy version this client has set or seen from a server."""
        return self._version

    @property
    def in_flight(self) -> int:
        """This client's requests currently on the wire."""
        return sum(self._in_flight.values())

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, *, session_id: str | None = None
    ) -> Generation:
        """POST /generate on the routed server; retries transient failures until the deadline."""
        while self._paused:  # pause() holds new requests here, as a paused SGLang server would
            await asyncio.sleep(0.02)
        params = {**sampling.to_sglang(), "skip_special_tokens": False, "no_stop_trim": True}
        if sampling.seed is None:  # under --enable-deterministic-inference SGLang would give every request seed 42
            params["sampling_seed"] = random.getrandbits(31)
        base_rid = f"{session_id}-{uuid.uuid4().hex[:12]}" if session_id else uuid.uuid4().hex
        attempt = 0

        async def once(url: str) -> Generation:
            payload = {"rid": f"{base_rid}-{attempt}", "input_ids": list(input_ids), "sampling_params": params,
                       "return_logprob": True}
            body = await self._request("POST", url, "/generate", payload)
            gen = parse_generate_response(body, url)
            self._version = max(self._version, max(gen.versions, default=self._version))
            return gen

        deadline = time.monotonic() + self.retry_deadline_s
        delay, last = self.backoff_s, ""
        while True:
            url = self._route(session_id)
            try:
                return await once(url)
            except _Retryable as e:
                last = str(e)
                self._down_until[url] = time.monotonic() + delay
                if session_id is not None:
                    self._sticky.pop(session_id, None)
            attempt += 1
            if time.monotonic() + delay > deadline:
                raise EngineUnavailable(
                    f"generate failed {attempt} time(s) over {self.retry_deadline_s:.0f}s on {', '.join(self.urls)}; "
                    f"last error: {last}"
                )
            await asyncio.sleep(delay * (0.5 + random.random() / 2))
            delay = min(delay * 2, self.max_backoff_s)

    async def update_weights(self, state_dict: Any = None, *, path: str | None = None, version: int | None = None) -> int:
        """/update_weights_from_disk on every server with weight_version=str(version); returns the version."""
        if state_dict is not None or path is None:
            raise EngineRequestError(
                "SGLangClient updates weights from a directory the servers can read: save the state dict with "
                "model.save_pretrained(dir) and call update_weights(path=dir)"
            )
        new = int(version) if version is not None else self._version + 1
        payload = {"model_path": str(path), "weight_version": str(new)}
        await self._all("/update_weights_from_disk", payload)
        self._version = new
        return new

    async def pause(self, mode: str = "finish") -> None:
        """Hold new requests. finish: wait for this client's requests, then pause the servers (mode abort, which
        then aborts nothing of ours); abort / in_place / retract: SGLang's /pause_generation with that mode."""
        if mode != "finish" and mode not in SGLANG_PAUSE_MODES:
            raise EngineRequestError(f"unknown pause mode {mode!r}; use finish, abort, in_place or retract")
        self._paused = True
        if mode == "finish":
            while self.in_flight:
                await asyncio.sleep(0.02)
        await self._all("/pause_generation", {"mode": SGLANG_PAUSE_MODES.get(mode, "abort")})

    async def resume(self) -> None:
        """/continue_generation on every server, then release held requests."""
        await self._all("/continue_generation", {})
        self._paused = False

    async def close(self) -> None:
        """Close the shared HTTP session."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    # ---- control calls ----

    async def health(self) -> dict[str, bool]:
        """GET /health_generate on every server: {url: healthy}."""
        async def probe(url: str) -> bool:
            try:
                await self._request("GET", url, "/health_generate", None, text=True)
                return True
            except (EngineError, _Retryable):
                return False

        return dict(zip(self.urls, await asyncio.gather(*(probe(u) for u in self.urls)), strict=True))

    async def wait_ready(self, timeout_s: float = 300.0) -> None:
        """Poll /health_generate until every server answers 200; EngineUnavailable after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while not all((status := await self.health()).values()):
            if time.monotonic() > deadline:
                down = [u for u, ok in status.items() if not ok]
                raise EngineUnavailable(f"servers not ready after {timeout_s:.0f}s: {', '.join(down)}")
            await asyncio.sleep(0.5)

    async def model_info(self, url: str | None = None) -> dict[str, Any]:
        """GET /model_info of one server (the first by default)."""
        return await self._request("GET", url or self.urls[0], "/model_info", None)

    async def flush_cache(self, timeout_s: float = 0.0) -> None:
        """/flush_cache on every server (fails with EngineRequestError unless the servers are idle)."""
        path = f"/flush_cache?timeout={timeout_s}" if timeout_s else "/flush_cache"
        await asyncio.gather(*(self._request("POST", u, path, None, text=True) for u in self.urls))

    # ---- plumbing ----

    def _route(self, session_id: str | None) -> str:
        """Sticky server of session_id if it is up, else the up server with the fewest requests in flight."""
        now = time.monotonic()
        up = [u for u in self.urls if self._down_until[u] <= now] or self.urls
        if session_id is not None and self._sticky.get(session_id) in up:
            self._sticky.move_to_end(session_id)
            return self._sticky[session_id]
        self._turn += 1
        n = len(self.urls)
        url = min(up, key=lambda u: (self._in_flight[u], (self.urls.index(u) - self._turn) % n))
        if session_id is not None:
            self._sticky[session_id] = url
            while len(self._sticky) > self._max_sticky:
                self._sticky.popitem(last=False)
        return url

    def _get_session(self) -> aiohttp.ClientSession:
        """The shared session, created on (and re-created for) the running event loop."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=self._max_connections)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout, headers=self._headers)
            self._session_loop = loop
        return self._session

    async def _request(self, method: str, url: str, path: str, payload: Any, *, text: bool = False) -> Any:
        """One HTTP call; raises _Retryable (connection, 502-504) or EngineRequestError/EngineError."""
        session = self._get_session()
        self._in_flight[url] += 1
        try:
            async with session.request(method, url + path, json=payload) as resp:
                raw = await resp.text()
                status = resp.status
        except _TRANSIENT as e:
            raise _Retryable(f"{url}{path}: {type(e).__name__}: {e}") from None
        finally:
            self._in_flight[url] -= 1
        body = _maybe_json(raw) if raw.strip() else ""
        if status == 200:
            if text:
                return raw
            if isinstance(body, dict) and body.get("success") is False:
                raise EngineError(f"{url}{path}: {error_message(body)}")
            return body
        message = error_message(body, raw.strip()[:500] or f"HTTP {status}")
        if status in RETRY_STATUSES:
            raise _Retryable(f"{url}{path}: HTTP {status}: {message}")
        if 400 <= status < 500:
            raise EngineRequestError(message, status=status, url=url + path)
        raise EngineError(f"{url}{path}: HTTP {status}: {message}")

    async def _all(self, path: str, payload: Any) -> list[Any]:
        """POST payload to path on every server (retrying transient failures); all must succeed."""
        async def one(url: str) -> Any:
            deadline, delay = time.monotonic() + self.retry_deadline_s, self.backoff_s
            while True:
                try:
                    return await self._request("POST", url, path, payload)
                except _Retryable as e:
                    if time.monotonic() + delay > deadline:
                        raise EngineUnavailable(f"{e} (gave up after {self.retry_deadline_s:.0f}s)") from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_backoff_s)

        return await asyncio.gather(*(one(u) for u in self.urls))


class _Retryable(Exception):
    """A transient failure (connection lost/refused, 502/503/504) worth retrying before the deadline."""


def _maybe_json(raw: str) -> Any:
    """raw parsed as JSON, else raw."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw
