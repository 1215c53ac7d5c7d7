"""The embedded engine: an in-process HF transformers model behind the Engine protocol (CPU or GPU).

One worker thread owns the model. `generate` calls queue requests; the worker waits a short window after the
first arrival to gather concurrent ones, prefills them together (a shared GRPO prompt once), then decodes step
by step over a KV cache. Finished rows leave the batch before the next forward; requests arriving meanwhile
join at the next step boundary (continuous batching). Control calls (pause, resume, weight updates) are also
handled at step boundaries, so a weight update during generation applies between two tokens and every token
records the version of the weights that produced it.

On a GPU a decode step reads the device once: sampling, logprob gathering and the stop-token and length checks
run on the device (agentrl.engine.sampling.sample_rows, finished), the next step's input tokens stay there
(KVBatch.pending), and one (3, B) transfer brings every row's token, logprob and done flag to the host, which
appends them and checks stop strings. The rows' sampling settings are copied to the device only when the rows
change; each step sends one (B,) tensor of uniforms, drawn from the requests' own host generators.

Pause modes (agentrl.engine.protocol.PAUSE_MODES, all four supported): "finish" lets running requests finish,
"abort" ends them now with finish_reason "abort" and their partial output, "in_place" freezes them (KV cache
kept) until resume, "retract" puts them back in the queue and drops their KV cache, so after resume their
prompt + partial output is prefilled again with the weights then loaded (SGLang's retract). Only retract makes
the tokens after an in-flight update exactly the new weights' samples: in_place continues on KV the old
weights computed. In every mode requests that have not started yet wait for resume, as new /generate calls do
on a paused SGLang server.
"""

from __future__ import annotations

import asyncio
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from agentrl.engine.errors import EngineClosed, EngineRequestError
from agentrl.engine.kv_batch import KVBatch, new_cache
from agentrl.engine.onednn_linear import packed_layers, packed_view, packing_supported, shared_copy
from agentrl.engine.protocol import PAUSE_MODES, Generation, SamplingParams
from agentrl.engine.sampling import RowSampling, UniformStream, finished, sample_rows, validate
from agentrl.engine.session_cache import DEFAULT_MAX_BYTES, SessionCache
from agentrl.engine.weights import load_state_dict_dir, load_weights
from agentrl.errors import EngineError
from agentrl.precision import DTYPES, inference_copy, param_dtype


@dataclass(eq=False)
class _Request:
    """One generate call as the worker sees it."""

    input_ids: list[int]
    sampling: SamplingParams
    seed: int
    stop_ids: frozenset[int]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    uniforms: UniformStream | None = None  # the request's random stream (kept across retractions)
    output_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    cancelled: bool = False
    rid: str | None = None  # the caller's request id, for abort(rid)
    session_id: str | None = None  # the agent loop's trajectory id: the session cache's key
    retractions: int = 0
    submitted: float = field(default_factory=time.perf_counter)


def _settle(fut: asyncio.Future, value: Any = None, error: BaseException | None = None) -> None:
    """Resolve fut unless its caller already gave up (runs on fut's loop)."""
    if fut.done():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(value)


def _post(loop: asyncio.AbstractEventLoop, fut: asyncio.Future, value: Any = None, error: BaseException | None = None):
    """Resolve an asyncio future from the worker thread; a closed loop means nobody is waiting."""
    try:
        loop.call_soon_threadsafe(_settle, fut, value, error)
    except RuntimeError:
        pass


@dataclass(eq=False)
class _Reply:
    """Where a control message's answer goes: a future on the caller's loop."""

    loop: asyncio.AbstractEventLoop
    future: asyncio.Future

    def send(self, value: Any = None, error: BaseException | None = None) -> None:
        """Resolve the caller's future from the worker thread."""
        _post(self.loop, self.future, value, error)


@dataclass(eq=False)
class _Update:
    """Load `state_dict` (None: the weights are shared with the trainer, only the label moves) as `version`."""

    reply: _Reply
    state_dict: dict | None
    version: int | None


@dataclass(eq=False)
class _Pause:
    """Stop admitting requests; running ones finish, abort, freeze or are retracted per `mode`."""

    reply: _Reply
    mode: str


@dataclass(eq=False)
class _Resume:
    """Admit requests again."""

    reply: _Reply


@dataclass(eq=False)
class _Abort:
    """End the requests whose rid starts with `prefix` (every request if None)."""

    reply: _Reply
    prefix: str | None


@dataclass(eq=False)
class _Close:
    """Stop the worker."""


_Control = _Update | _Pause | _Resume | _Abort


class EmbeddedEngine:
    """In-process generation with exact behaviour logprobs; see the module docstring for the scheduling rules."""

    def __init__(
        self,
        model: Any = "smollm2-135m-instruct",
        tokenizer: Any = None,
        *,
        dtype: str | None = None,
        device: str | None = None,
        seed: int | None = None,
        batch_window_s: float = 0.005,
        max_batch_size: int = 64,
        session_cache_bytes: int = DEFAULT_MAX_BYTES,
        packed_weights: bool = True,
    ):
        """model: a name/directory for agentrl.models.load_model, or a loaded HF causal LM (then tokenizer is
        optional; it is needed only for stop strings). seed: seeds the engine RNG that picks per-request seeds
        when SamplingParams.seed is None (so GRPO group members differ). session_cache_bytes bounds the keys and
        values kept per session so an agent's next turn prefills only its new tokens (0: keep none).
        packed_weights: run the forward on oneDNN-packed copies of the linear weights (CPU; see
        agentrl.engine.onednn_linear): faster decode for one more copy of those weights in memory. `self.model` is
        then a view of the given model that shares its tensors. dtype: the engine's compute dtype, float32 or
        bfloat16 (None: the given model's own, float32 for a name); bfloat16 runs a bf16 copy of the model with
        an fp32 LM head (agentrl.precision.inference_copy), so logits, sampling and logprobs stay fp32 and weight
        updates are converted once as they are loaded."""
        from agentrl.models import load_model, load_tokenizer

        if isinstance(model, (str, Path)):
            self.model_name = str(model)
            tokenizer = tokenizer if tokenizer is not None else load_tokenizer(self.model_name)
            model = load_model(self.model_name, dtype="float32", device=device or "cpu")
        else:
            self.model_name = getattr(model, "name_or_path", None) or type(model).__name__
            if device is not None:
                model = model.to(device)
        self.dtype = param_dtype(model) if dtype is None else DTYPES[dtype]
        if self.dtype != param_dtype(model):
            model = inference_copy(model, self.dtype)  # the given model is left as it was
        new_cache(model)  # refuse unsupported cache layouts now, not on the first request
        if packed_weights and packing_supported(model):
            model = packed_view(model)  # shares model's tensors; the given module is left as it was
        self.model = model.eval()
        self._packed = packed_layers(model)  # repacked after every weight update
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        self.max_context = int(getattr(model.config, "max_position_embeddings", 0) or 0) or None
        self.vocab_size = int(model.config.vocab_size)
        self.eos_token_ids = _eos_ids(model, tokenizer)
        self.batch_window_s = batch_window_s
        self.max_batch_size = max_batch_size
        self.full_vocab_logprobs = False  # True: report SGLang's untruncated logprobs (see sampling.py)
        self.stats = {"prefill_tokens": 0, "decode_steps": 0, "decode_rows": 0, "batches": 0, "host_reads": 0}
        self._sampling: tuple[tuple[_Request, ...], RowSampling] | None = None  # the rows it was built for, and it
        self._version = 0
        self.sessions = SessionCache(session_cache_bytes)
        self._rng = random.Random(seed)
        self._inbox: queue.Queue = queue.Queue()
        self._pending: list[_Request] = []
        self._batch: KVBatch | None = None
        self._rows: list[_Request] = []
        self._paused: str | None = None
        self._drain_waiters: list[_Reply] = []
        self._outstanding = 0  # generate calls not yet answered (updated on the callers' loops)
        self._closed = False  # set by close() on the caller's side
        self._stopped = False  # set by the worker once it has shut down
        self._thread = threading.Thread(target=self._run, name="agentrl-embedded-engine", daemon=True)
        self._thread.start()

    # ---- public API (called from any asyncio loop) ----

    @property
    def version(self) -> int:
        """The policy version of the weights currently loaded."""
        return self._version

    @property
    def paused(self) -> bool:
        """True between pause() and resume()."""
        return self._paused is not None

    @property
    def in_flight(self) -> int:
        """Requests submitted whose result has not been delivered yet (queued, waiting out a pause, or running)."""
        return self._outstanding

    @property
    def running(self) -> int:
        """Requests holding KV cache in the running batch (frozen ones too); 0 after pause("retract")."""
        return len(self._rows)

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, *, session_id: str | None = None,
        rid: str | None = None,
    ) -> Generation:
        """Sample a continuation of input_ids. session_id (the agent loop's trajectory id) lets the next turn of
        the same session start from this one's cached keys and values; rid names the request for abort()."""
        if self._closed:
            raise EngineClosed("the embedded engine is closed")
        validate(sampling)
        self._check_input(input_ids, sampling)
        seed = sampling.seed if sampling.seed is not None else self._rng.getrandbits(63)
        if sampling.max_new_tokens == 0:
            return Generation([], [], "length", [], meta=self._meta(len(input_ids), seed, "length", None, 0))
        loop = asyncio.get_running_loop()
        stop_ids = frozenset(sampling.stop_token_ids) | self.eos_token_ids
        req = _Request(list(input_ids), sampling, seed, stop_ids, loop, loop.create_future(), rid=rid,
                       session_id=session_id)
        req.future.add_done_callback(self._on_done)
        self._outstanding += 1
        self._inbox.put(req)
        try:
            return await req.future
        finally:
            req.cancelled = req.future.cancelled()

    def _on_done(self, fut: asyncio.Future) -> None:
        """Count a request as delivered (runs on the caller's loop as soon as its future settles)."""
        self._outstanding -= 1

    async def update_weights(self, state_dict: Any = None, *, path: str | None = None, version: int | None = None) -> int:
        """Load new weights between decode steps; returns the new version (given, else the old one + 1)."""
        if (state_dict is None) == (path is None):
            raise EngineRequestError("update_weights needs exactly one of state_dict or path")
        if path is not None:
            state_dict = await asyncio.to_thread(load_state_dict_dir, path)
        return await self._control(_Update, state_dict, version)

    async def push_weights(self, model, *, version: int, staging_dir: Path | None = None) -> None:
        """Publish the trainer's weights as `version` between two decode steps: only the version label when the
        engine already shares model's tensors (sync mode, `engine_view`), else an in-place copy of its state dict
        (no serialization; staging_dir is part of the Engine interface and unused here)."""
        if shares_weights(self.model, model):
            await self._control(_Update, None, version)
        else:
            await self._control(_Update, {k: v.detach() for k, v in model.state_dict().items()}, version)

    async def pause(self, mode: str = "finish") -> None:
        """Stop admitting requests; running ones finish, abort or freeze per mode (see module docstring)."""
        if mode not in PAUSE_MODES:
            raise EngineRequestError(f"unknown pause mode {mode!r}; use one of {', '.join(PAUSE_MODES)}")
        await self._control(_Pause, mode)

    async def resume(self) -> None:
        """Admit requests again (and continue frozen ones)."""
        await self._control(_Resume)

    async def abort(self, rid: str | None = None) -> int:
        """End the requests whose rid starts with `rid` (every request if None) with finish_reason "abort" and
        their partial output, as SGLang's /abort_request does; returns how many were ended."""
        return await self._control(_Abort, rid)

    async def close(self) -> None:
        """Stop the worker; queued and running requests fail with EngineClosed."""
        if not self._closed:
            self._closed = True
            self._inbox.put(_Close())
        await asyncio.to_thread(self._thread.join)

    # ---- helpers on the caller's side ----

    def _check_input(self, input_ids: list[int], sampling: SamplingParams) -> None:
        """Refuse empty, out-of-vocabulary or over-long inputs with SGLang-like messages."""
        if not input_ids:
            raise EngineRequestError("input_ids is empty")
        if any(not isinstance(t, int) or not 0 <= t < self.vocab_size for t in input_ids):
            raise EngineRequestError(f"input_ids must be integers in [0, {self.vocab_size})")
        if self.max_context and len(input_ids) + sampling.max_new_tokens > self.max_context:
            raise EngineRequestError(
                f"Requested token count exceeds the model's maximum context length of {self.max_context} tokens. "
                f"You requested a total of {len(input_ids) + sampling.max_new_tokens} tokens: {len(input_ids)} "
                f"tokens from the input and {sampling.max_new_tokens} tokens for the completion."
            )
        if sampling.stop and self.tokenizer is None:
            raise EngineRequestError("stop strings need a tokenizer; pass tokenizer= to EmbeddedEngine")

    async def _control(self, kind: type, *args: Any) -> Any:
        """Send a control message (`kind(reply, *args)`) to the worker and wait for its answer."""
        if self._closed:
            raise EngineClosed("the embedded engine is closed")
        loop = asyncio.get_running_loop()
        reply = _Reply(loop, loop.create_future())
        self._inbox.put(kind(reply, *args))
        return await reply.future

    def _meta(self, prompt_tokens: int, seed: int, reason: str, matched: Any, length: int) -> dict[str, Any]:
        """Generation.meta: the seed used (to reproduce the sample) and SGLang's finish_reason object."""
        if reason == "stop":
            finish = {"type": "stop", "matched": matched}
        elif reason == "length":
            finish = {"type": "length", "length": length}
        else:
            finish = {"type": "abort", "message": "Aborted"}
        return {"seed": seed, "prompt_tokens": prompt_tokens, "finish_reason": finish}

    # ---- the worker thread ----

    def _run(self) -> None:
        """Worker loop: handle messages, admit queued requests, decode one step; repeat until closed."""
        with torch.inference_mode():
            while True:
                idle = self._batch is None and (self._paused is not None or not self._pending)
                frozen = self._batch is not None and self._paused == "in_place"
                if not self._handle_messages(block=idle or frozen):
                    return
                if self._batch is None and self._pending and self._paused is None:
                    self._gather_window()
                    if self._stopped:
                        return
                try:
                    if self._paused is None and self._pending and len(self._rows) < self.max_batch_size:
                        self._admit()
                    if self._batch is not None and self._paused != "in_place":
                        self._decode_step()
                except Exception as e:  # a failed forward fails its requests, not the engine
                    self._fail_rows(EngineError(f"embedded engine forward failed: {type(e).__name__}: {e}"))
                if self._batch is None:
                    for reply in self._drain_waiters:
                        reply.send()
                    self._drain_waiters.clear()

    def _handle_messages(self, block: bool) -> bool:
        """Process inbox messages (waiting for one if block); False once the engine is closing."""
        while True:
            try:
                msg = self._inbox.get(block=block)
            except queue.Empty:
                return True
            block = False
            if not self._handle(msg):
                return False

    def _gather_window(self) -> None:
        """Keep collecting requests until none arrives for batch_window_s (at most 10 windows), so a burst of
        concurrent calls shares one prefill."""
        cap = time.perf_counter() + 10 * self.batch_window_s
        while len(self._pending) < self.max_batch_size:
            left = min(self.batch_window_s, cap - time.perf_counter())
            if left <= 0:
                return
            try:
                msg = self._inbox.get(timeout=left)
            except queue.Empty:
                return
            if not self._handle(msg):
                return

    def _handle(self, msg: _Request | _Control | _Close) -> bool:
        """Apply one message; False for close."""
        if isinstance(msg, _Request):
            self._pending.append(msg)
            return True
        if isinstance(msg, _Close):
            self._shutdown()
            return False
        apply = {_Update: self._apply_update, _Pause: self._apply_pause, _Resume: self._apply_resume,
                 _Abort: self._apply_abort}[type(msg)]
        try:
            result = apply(msg)
        except Exception as e:
            msg.reply.send(error=e)
        else:
            if result is not _DEFERRED:
                msg.reply.send(result)
        return True

    def _apply_update(self, msg: _Update) -> int:
        """Load new weights (or only move the version label) at a step boundary; returns the new version."""
        if msg.state_dict is not None:
            load_weights(self.model, msg.state_dict)
        for layer in self._packed:  # the packed copies follow the new values (shared ones changed in place)
            layer.repack()
        self.sessions.clear()  # keys and values of the old weights
        self._version = int(msg.version) if msg.version is not None else self._version + 1
        return self._version

    def _apply_pause(self, msg: _Pause) -> Any:
        """Pause per mode; "finish" with requests running answers once they have drained (_DEFERRED)."""
        self._paused = msg.mode
        if msg.mode == "abort":
            for req in self._rows:
                self._finish(req, "abort")
            self._batch, self._rows = None, []
        if msg.mode == "retract":  # back to the front of the queue; re-prefilled (current weights) on admission
            for req in self._rows:
                req.retractions += 1
            self._pending = [r for r in self._rows if not r.cancelled] + self._pending
            self._batch, self._rows = None, []
        if msg.mode == "finish" and self._batch is not None:
            self._drain_waiters.append(msg.reply)
            return _DEFERRED
        return None

    def _apply_resume(self, msg: _Resume) -> None:
        """Admit requests again (frozen ones continue)."""
        self._paused = None

    def _apply_abort(self, msg: _Abort) -> int:
        """End matching running and queued requests with their partial output; returns how many."""
        hit = [r for r in self._rows + self._pending if msg.prefix is None or (r.rid or "").startswith(msg.prefix)]
        for req in hit:
            self._finish(req, "abort")
        self._keep_rows([i for i, r in enumerate(self._rows) if r not in hit])
        self._pending = [r for r in self._pending if r not in hit]
        return len(hit)

    def _admit(self) -> None:
        """Prefill queued requests (up to the batch limit) and merge them into the running batch."""
        room = self.max_batch_size - len(self._rows)
        new = [r for r in self._pending[:room] if not r.cancelled]
        self._pending = self._pending[room:]
        if not new:
            return
        for req in new:
            if req.uniforms is None:  # a retracted request keeps its random stream
                req.uniforms = UniformStream(req.seed)
        prompts = [r.input_ids + r.output_ids for r in new]
        pasts = [self.sessions.take(r.session_id, p) for r, p in zip(new, prompts, strict=True)]
        try:
            batch, logits, computed = KVBatch.prefill(self.model, prompts, self.device, pasts=pasts)
        except Exception as e:  # these requests fail (they are in no batch yet); the running ones go on
            error = EngineError(f"embedded engine prefill failed: {type(e).__name__}: {e}")
            for req in new:
                _post(req.loop, req.future, error=error)
            return
        self.stats["prefill_tokens"] += computed
        self.stats["batches"] += 1
        if self._batch is None:
            self._batch, self._rows = batch, []
        else:
            self._batch.merge(batch)
        first = len(self._rows)
        self._rows.extend(new)
        self._sample_and_record(logits, first)

    def _decode_step(self) -> None:
        """One forward over every live row (fed their pending tokens, on the device), then sampling and stop checks."""
        logits = self._batch.step(self.model)
        self.stats["decode_steps"] += 1
        self.stats["decode_rows"] += len(self._rows)
        self._sample_and_record(logits, 0)

    def _row_sampling(self, chosen: list[_Request]) -> RowSampling:
        """The sampling settings of these rows on the device, rebuilt only when the rows changed."""
        cached = self._sampling
        same = cached is not None and len(cached[0]) == len(chosen) and all(
            a is b for a, b in zip(cached[0], chosen, strict=True))
        if not same:
            rows = RowSampling.build([r.sampling for r in chosen], [r.stop_ids for r in chosen],
                                     [len(r.output_ids) for r in chosen], self.device)
            self._sampling = cached = (tuple(chosen), rows)  # its `remaining` stays max_new_tokens − produced
        return cached[1]

    def _sample_and_record(self, logits: torch.Tensor, first: int) -> None:
        """Sample rows first.. from logits (one row each) on the device, bring token, logprob and done flag to the
        host in one transfer, append them, drop finished/cancelled rows."""
        chosen = self._rows[first:]
        rows = self._row_sampling(chosen)
        u = torch.tensor([0.5 if g else r.uniforms.next() for r, g in zip(chosen, rows.greedy, strict=True)],
                         dtype=torch.float32, device=self.device)
        tokens, logprobs = sample_rows(logits, rows, u)
        if self.full_vocab_logprobs:  # SGLang's value (agentrl serve): log_softmax(logits / T), whole vocabulary
            scale = torch.where(rows.temperature > 0, rows.temperature, 1.0).unsqueeze(-1)
            logprobs = torch.log_softmax(logits.float() / scale, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        done = finished(tokens, rows)
        self._batch.pending[first:] = tokens  # the next step's inputs never visit the host
        host = torch.stack([tokens.double(), logprobs.double(), done.double()]).tolist()  # the step's one read
        self.stats["host_reads"] += 1
        for req, tok, lp in zip(chosen, host[0], host[1], strict=True):
            req.output_ids.append(int(tok))
            req.logprobs.append(lp)
            req.versions.append(self._version)
        keep, ended = [], []
        for i, req in enumerate(self._rows):
            if req.cancelled:
                continue
            reason = self._finish_reason(req, host[2][i - first] > 0) if i >= first else None
            if reason is None:
                keep.append(i)
            else:
                if self.sessions.max_bytes > 0 and req.session_id is not None:
                    self.sessions.store(req.session_id, self._batch.row_past(i, req.input_ids + req.output_ids))
                ended.append((req, reason))
        self._keep_rows(keep)
        for req, reason in ended:  # answered once their rows have left: a caller never sees them still running
            self._finish(req, *reason)

    def _keep_rows(self, keep: list[int]) -> None:
        """Keep only these rows of the running batch (and their KV); an empty list ends the batch."""
        if len(keep) == len(self._rows):
            return
        self._rows = [self._rows[i] for i in keep]
        if keep:
            self._batch.keep(keep)
        else:
            self._batch = None

    def _finish_reason(self, req: _Request, done: bool) -> tuple[str, Any] | None:
        """("stop", matched) / ("length", None) if req is done after its latest token, else None; `done` is the
        device's verdict on stop tokens and the length budget (stop strings are checked here)."""
        tok = req.output_ids[-1]
        if done and tok in req.stop_ids:
            return "stop", tok
        if req.sampling.stop:
            longest = max(len(s) for s in req.sampling.stop)
            tail = self.tokenizer.decode(req.output_ids[-(longest + 4) :], skip_special_tokens=False)
            for s in req.sampling.stop:
                if s in tail:
                    return "stop", s
        if done:
            return "length", None
        return None

    def _finish(self, req: _Request, reason: str, matched: Any = None) -> None:
        """Hand a finished request's Generation back to its caller."""
        meta = self._meta(len(req.input_ids), req.seed, reason, matched, req.sampling.max_new_tokens)
        meta["e2e_latency"] = time.perf_counter() - req.submitted
        meta["num_retractions"] = req.retractions
        gen = Generation(list(req.output_ids), list(req.logprobs), reason, list(req.versions), meta=meta)
        _post(req.loop, req.future, gen)

    def _fail_rows(self, error: BaseException) -> None:
        """Fail every running request with error and drop the batch."""
        for req in self._rows:
            _post(req.loop, req.future, error=error)
        self._batch, self._rows = None, []

    def _shutdown(self) -> None:
        """Fail everything queued or running, and every control call still waiting."""
        self._stopped = True
        self._fail_rows(EngineClosed("the embedded engine was closed"))
        while True:
            try:
                msg = self._inbox.get_nowait()
            except queue.Empty:
                break
            if isinstance(msg, _Request):
                self._pending.append(msg)
            elif not isinstance(msg, _Close):
                msg.reply.send(error=EngineClosed("the embedded engine was closed"))
        for req in self._pending:
            _post(req.loop, req.future, error=EngineClosed("the embedded engine was closed"))
        for reply in self._drain_waiters:
            reply.send()
        self._pending, self._drain_waiters = [], []


_DEFERRED = object()


def engine_view(model, *, share_weights: bool):
    """The module the engine runs: a copy of `model` whose parameters and buffers ARE model's tensors (with
    its own train/eval flag; for sync mode, where generation and training alternate), or a deep copy."""
    import copy
    import itertools

    if not share_weights:
        return copy.deepcopy(model).eval()
    # fresh heap storage, as a copy would have: tensors memory-mapped from a checkpoint sit at other alignments,
    # where CPU kernels round differently (resume would drift)
    for t in itertools.chain(model.parameters(), model.buffers()):
        t.data = t.data.clone()
    return shared_copy(model).eval()


def shares_weights(a, b) -> bool:
    """True if modules a and b hold the same parameter tensors (same storage), so nothing needs copying."""
    pa, pb = list(a.parameters()), list(b.parameters())
    return len(pa) == len(pb) and all(x.data_ptr() == y.data_ptr() for x, y in zip(pa, pb, strict=True))


def _eos_ids(model, tokenizer) -> frozenset[int]:
    """The model's end-of-sequence ids (generation config and tokenizer), always stop tokens as in SGLang."""
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), model.config):
        eos = getattr(source, "eos_token_id", None)
        if eos is not None:
            ids.update([eos] if isinstance(eos, int) else eos)
    if tokenizer is not None and tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return frozenset(ids)
