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

Weight updates (SGLang 0.5.23 srt/managers/scheduler.py pause_generation / update_weights_from_disk; the pause
modes compared in examples/sglang_gpu.md): push_weights saves the model to a directory the servers read, pauses them with
mode "retract" (running requests go back to the queue; after continue their prompt + partial output is
recomputed with the new weights, so every token's weight_versions label is exact), updates every server and
continues. pause("finish") pauses no server: SGLang's update waits for in-flight requests by itself, and mode
abort would kill other clients' requests. A server whose update fails is taken out of routing until a later
update reaches it (WeightSyncError says which), so no trajectory mixes versions silently.

Logprobs under top-p/top-k: SGLang reports log_softmax(logits / T) over the whole vocabulary, not the
renormalised probability of the truncated distribution it sampled from (srt/layers/sampler.py). The client
refuses such sampling unless constructed with exact_logprobs=False.

Auth: `api_key` goes to /generate and info endpoints, `admin_api_key` (if given, else api_key) to control
endpoints, matching SGLang's --api-key / --admin-api-key.
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
from pathlib import Path
from typing import Any

import aiohttp

from agentrl.engine.errors import EngineRequestError, EngineUnavailable
from agentrl.engine.protocol import PAUSE_MODES, Generation, SamplingParams
from agentrl.errors import EngineError

RETRY_STATUSES = {502, 503, 504}
_TRANSIENT = (aiohttp.ClientConnectionError, asyncio.TimeoutError)
# agentrl pause mode → SGLang /pause_generation mode (None: no server-side pause). See engine.PAUSE_MODES.
SGLANG_PAUSE_MODES: dict[str, str | None] = {"finish": None, "abort": "abort", "in_place": "in_place",
                                             "retract": "retract"}
assert set(SGLANG_PAUSE_MODES) == set(PAUSE_MODES)
# SGLang's ADMIN_OPTIONAL endpoints (srt/entrypoints/http_server.py): they take the admin key when one is set.
CONTROL_PATHS = ("/pause_generation", "/continue_generation", "/update_weights_from_disk", "/abort_request",
                 "/flush_cache")


class WeightSyncError(EngineError):
    """A weight update reached some servers but not all; the others are out of routing until one reaches them."""


def truncation_problem(sampling: SamplingParams) -> str | None:
    """Why SGLang's logprobs would not be the behaviour logprobs of this sampling (None if they are)."""
    if sampling.temperature <= 0 or (sampling.top_p >= 1 and sampling.top_k in (-1, 0)):
        return None
    return (f"top_p={sampling.top_p}, top_k={sampling.top_k}: SGLang returns full-vocabulary logprobs "
            "log_softmax(logits/T), not those of the truncated distribution it samples from, so every importance "
            "ratio would be biased; train with rollout.top_p=1 and rollout.top_k=-1 against SGLang "
            "(or pass exact_logprobs=False to SGLangClient when logprobs are not used for training)")


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
        admin_api_key: str | None = None,
        exact_logprobs: bool = True,
        retry_deadline_s: float = 60.0,
        backoff_s: float = 0.1,
        max_backoff_s: float = 5.0,
        request_timeout_s: float | None = 900.0,
        connect_timeout_s: float = 10.0,
        max_connections: int = 512,
        max_sticky_sessions: int = 100_000,
    ):
        """urls: base URLs such as "http://10.0.0.5:30000". api_key / admin_api_key: SGLang's --api-key and
        --admin-api-key (control endpoints use the admin key if given). exact_logprobs: refuse top-p/top-k
        sampling, whose SGLang logprobs are not the behaviour logprobs. retry_deadline_s bounds how long one call
        keeps retrying transient failures; request_timeout_s bounds one HTTP attempt (generation included)."""
        self.urls = [urls.rstrip("/")] if isinstance(urls, str) else [u.rstrip("/") for u in urls]
        if not self.urls:
            raise ValueError("SGLangClient needs at least one server URL")
        self.retry_deadline_s, self.backoff_s, self.max_backoff_s = retry_deadline_s, backoff_s, max_backoff_s
        self._timeout = aiohttp.ClientTimeout(total=request_timeout_s, sock_connect=connect_timeout_s)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        admin = admin_api_key or api_key
        self._admin_headers = {"Authorization": f"Bearer {admin}"} if admin else {}
        self.exact_logprobs = exact_logprobs
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
        self._server_paused = False  # True between a server-side /pause_generation and /continue_generation
        self._lagging: dict[str, int] = {}  # servers whose last update failed → the version they still serve

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
        if self.exact_logprobs and (problem := truncation_problem(sampling)):
            raise EngineRequestError(problem)
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
        results = await self._all("/update_weights_from_disk", payload, return_exceptions=True)
        failed = {u: r for u, r in zip(self.urls, results, strict=True) if isinstance(r, BaseException)}
        for url in self.urls:
            if url in failed:
                self._lagging.setdefault(url, self._version)
            else:
                self._lagging.pop(url, None)
        if len(failed) == len(self.urls):
            raise next(iter(failed.values()))
        self._version = new
        if failed:
            raise WeightSyncError(
                f"weight version {new} reached {len(self.urls) - len(failed)} of {len(self.urls)} servers; "
                + "; ".join(f"{u} failed ({e}) and stays out of routing until an update reaches it"
                            for u, e in failed.items())
            )
        return new

    async def push_weights(self, model: Any, *, version: int, staging_dir: str | Path) -> None:
        """Make `model`'s weights the servers' version `version`: save_pretrained to staging_dir (a directory the
        servers can read), then, unless already paused, retract running requests, update every server and
        continue; generations in flight resume on the new weights with exact per-token versions."""
        staging_dir = Path(staging_dir)
        await asyncio.to_thread(model.save_pretrained, staging_dir, safe_serialization=True)
        if self._paused:
            await self.update_weights(path=str(staging_dir), version=version)
            return
        await self.pause("retract")
        try:
            await self.update_weights(path=str(staging_dir), version=version)
        finally:
            await self.resume()

    async def pause(self, mode: str = "finish") -> None:
        """Hold new requests; running ones behave per engine.PAUSE_MODES[mode]. finish waits for this client's
        requests and pauses no server; abort / in_place / retract are SGLang's /pause_generation modes."""
        if mode not in SGLANG_PAUSE_MODES:
            raise EngineRequestError(f"unknown pause mode {mode!r}; use one of {', '.join(SGLANG_PAUSE_MODES)}")
        self._paused = True
        server_mode = SGLANG_PAUSE_MODES[mode]
        if server_mode is None:
            while self.in_flight:
                await asyncio.sleep(0.02)
            return
        self._server_paused = True
        await self._all("/pause_generation", {"mode": server_mode})

    async def resume(self) -> None:
        """/continue_generation on every server (if pause paused them), then release held requests."""
        try:
            if self._server_paused:
                await self._all("/continue_generation", {})
                self._server_paused = False
        finally:
            self._paused = False

    async def abort(self, rid: str | None = None) -> None:
        """/abort_request on every server: requests whose rid starts with rid (all, if None) end with
        finish_reason abort and their partial output."""
        await self._all("/abort_request", {"abort_all": True} if rid is None else {"rid": rid})

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
        synced = [u for u in self.urls if u not in self._lagging] or self.urls
        up = [u for u in synced if self._down_until[u] <= now] or synced
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
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
            self._session_loop = loop
        return self._session

    async def _request(self, method: str, url: str, path: str, payload: Any, *, text: bool = False) -> Any:
        """One HTTP call; raises _Retryable (connection, 502-504) or EngineRequestError/EngineError."""
        session = self._get_session()
        headers = self._admin_headers if path.split("?")[0] in CONTROL_PATHS else self._headers
        self._in_flight[url] += 1
        try:
            async with session.request(method, url + path, json=payload, headers=headers) as resp:
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

    async def _all(self, path: str, payload: Any, *, return_exceptions: bool = False) -> list[Any]:
        """POST payload to path on every server (retrying transient failures); all must succeed, unless
        return_exceptions (then each failure is returned in its server's place)."""
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

        return await asyncio.gather(*(one(u) for u in self.urls), return_exceptions=return_exceptions)


class _Retryable(Exception):
    """A transient failure (connection lost/refused, 502/503/504) worth retrying before the deadline."""


def _maybe_json(raw: str) -> Any:
    """raw parsed as JSON, else raw."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw
