"""SGLang's native /generate wire format (0.5.23): request validation and response building, for `agentrl serve`.

Errors come back in SGLang's own envelopes (srt/entrypoints/http_server.py), because the client must handle them:
1. unknown key in sampling_params → 400 {"error": "unknown field `x`, expected one of …"}
2. wrong type / missing field → 400 {"object": "error", "message", "type": "Bad Request", "param": null, "code": 400}
3. invalid value at runtime → 400 {"error": {"message": …}}
4. other statuses → {"object": "error", "message", "type": "<status>", "param": null, "code": <status>}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentrl.engine.protocol import Generation, SamplingParams

# sampling_params keys of SGLang's contract (api/v1/api_types.py); anything else is refused like SGLang does.
SAMPLING_KEYS = (
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k", "min_p",
    "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n", "json_schema",
    "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens",
    "no_stop_trim", "custom_params", "stream_interval", "logit_bias", "sampling_seed", "beam_width",
    "watermark", "choice",
)
# Keys the embedded engine accepts only at their SGLang default (they change sampling in ways it does not do).
UNSUPPORTED_UNLESS_DEFAULT = {
    "min_p": 0.0, "frequency_penalty": 0.0, "presence_penalty": 0.0, "repetition_penalty": 1.0,
    "min_new_tokens": 0, "n": 1, "stop_regex": None, "json_schema": None, "regex": None, "ebnf": None,
    "structural_tag": None, "ignore_eos": False, "logit_bias": None, "custom_params": None, "beam_width": None,
    "watermark": None, "choice": None,
}
_TYPES: dict[str, tuple[type, ...]] = {
    "max_new_tokens": (int,), "temperature": (int, float), "top_p": (int, float), "top_k": (int,),
    "min_p": (int, float), "frequency_penalty": (int, float), "presence_penalty": (int, float),
    "repetition_penalty": (int, float), "min_new_tokens": (int,), "n": (int,), "sampling_seed": (int,),
    "ignore_eos": (bool,), "skip_special_tokens": (bool,), "spaces_between_special_tokens": (bool,),
    "no_stop_trim": (bool,), "stream_interval": (int,),
}


class SchemaError(Exception):
    """A request refused with one of SGLang's error envelopes (shape 1, 2 or 3)."""

    def __init__(self, shape: int, message: str, status: int = 400):
        super().__init__(message)
        self.shape, self.message, self.status = shape, message, status

    def body(self) -> dict[str, Any]:
        """The JSON body SGLang sends for this error."""
        return error_body(self.shape, self.message, self.status)


def error_body(shape: int, message: str, status: int = 400) -> dict[str, Any]:
    """SGLang's error envelope number `shape` (see the module docstring)."""
    if shape == 1:
        return {"error": message}
    if shape == 3:
        return {"error": {"message": message}}
    kind = "Bad Request" if status == 400 else str(status)
    return {"object": "error", "message": message, "type": kind, "param": None, "code": status}


@dataclass
class GenerateItem:
    """One request of a (possibly batched) /generate body."""

    input_ids: list[int] | None
    text: str | None
    sampling: SamplingParams
    rid: str | None
    skip_special_tokens: bool = True
    no_stop_trim: bool = False


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _json_kind(value: Any) -> str:
    """How serde names a JSON value in its "invalid type" errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f"string {json.dumps(value)}"
    return "sequence" if isinstance(value, list) else "map"


_EXPECTED = {(int,): "an integer", (int, float): "a number", (bool,): "a boolean"}


def _check_type(key: str, value: Any) -> None:
    """Shape-1 error if value has the wrong JSON type for key: SGLang 0.5.23's contract check (api/v1/api_types.py
    via http_server.py) answers {"error": "invalid type: …"} for a bad type inside sampling_params."""
    ok = True
    if key in _TYPES and value is not None:
        types = _TYPES[key]
        ok = isinstance(value, types) and (bool in types or not isinstance(value, bool))
    elif key == "stop":
        ok = value is None or isinstance(value, str) or (isinstance(value, list) and all(isinstance(s, str) for s in value))
    elif key == "stop_token_ids":
        ok = value is None or (isinstance(value, list) and all(_is_int(t) for t in value))
    if not ok:
        expected = _EXPECTED.get(_TYPES.get(key, ()), "a string or a list of strings" if key == "stop"
                                 else "a list of integers")
        raise SchemaError(1, f"invalid type: {_json_kind(value)}, expected {expected} at `sampling_params.{key}`")


def parse_sampling(raw: Any) -> tuple[SamplingParams, bool, bool]:
    """sampling_params dict → (SamplingParams, skip_special_tokens, no_stop_trim); SGLang defaults when absent."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SchemaError(2, f"sampling_params must be an object, got {type(raw).__name__}")
    for key in raw:
        if key not in SAMPLING_KEYS:
            expected = ", ".join(f"`{k}`" for k in SAMPLING_KEYS)
            raise SchemaError(1, f"unknown field `{key}`, expected one of {expected}")
    for key, value in raw.items():
        _check_type(key, value)
    for key, default in UNSUPPORTED_UNLESS_DEFAULT.items():
        if key in raw and raw[key] is not None and raw[key] != default:
            raise SchemaError(3, f"sampling_params.{key}={raw[key]!r} is not supported by the agentrl embedded engine")
    stop = raw.get("stop") or []
    sp = SamplingParams(
        temperature=float(raw.get("temperature", 1.0)),
        top_p=float(raw.get("top_p", 1.0)),
        top_k=int(raw.get("top_k") if raw.get("top_k") is not None else -1),
        max_new_tokens=int(raw.get("max_new_tokens") if raw.get("max_new_tokens") is not None else 128),
        stop_token_ids=list(raw.get("stop_token_ids") or []),
        stop=[stop] if isinstance(stop, str) else list(stop),
        seed=raw.get("sampling_seed"),
    )
    return sp, bool(raw.get("skip_special_tokens", True)), bool(raw.get("no_stop_trim", False))


def parse_generate(body: Any) -> tuple[list[GenerateItem], bool, bool]:
    """A /generate body → (items, is_batch, return_logprob). Raises SchemaError with SGLang's envelope."""
    if not isinstance(body, dict):
        raise SchemaError(2, "request body must be a JSON object")
    if body.get("stream"):
        raise SchemaError(3, "stream=true is not supported by the agentrl embedded engine")
    if body.get("logprob_start_len", -1) != -1 or body.get("top_logprobs_num", 0) or body.get("token_ids_logprob"):
        raise SchemaError(3, "prompt/top logprobs are not supported by the agentrl embedded engine")
    ids, text = body.get("input_ids"), body.get("text")
    if ids is None and text is None:
        raise SchemaError(2, "Either text, input_ids or input_embeds should be provided.")
    if ids is not None:
        batch = isinstance(ids, list) and bool(ids) and isinstance(ids[0], list)
        rows = ids if batch else [ids]
        if not isinstance(ids, list) or not all(isinstance(r, list) and all(_is_int(t) for t in r) for r in rows):
            raise SchemaError(2, "input_ids must be a list of integers or a list of such lists")
        if any(not r for r in rows):
            raise SchemaError(3, "input_ids is empty")
        texts: list[str | None] = [None] * len(rows)
    else:
        batch = isinstance(text, list)
        texts = text if batch else [text]
        if not all(isinstance(t, str) for t in texts):
            raise SchemaError(2, "text must be a string or a list of strings")
        rows = [None] * len(texts)
    n = len(rows)
    params = body.get("sampling_params")
    params = params if isinstance(params, list) else [params] * n
    rids = body.get("rid")
    rids = rids if isinstance(rids, list) else [rids] * n
    if len(params) != n or len(rids) != n:
        raise SchemaError(3, f"batch of {n} requests needs as many sampling_params and rids")
    if any(r is not None and not isinstance(r, str) for r in rids):
        raise SchemaError(2, "rid must be a string")
    for key, kinds in _TOP_LEVEL_TYPES.items():  # pydantic-side checks of GenerateReqInput → shape 2
        value = body.get(key)
        if value is not None and not all(isinstance(v, kinds) for v in (value if isinstance(value, list) else [value])):
            raise SchemaError(2, f"1 validation error for GenerateReqInput\n{key}\n  Input should be a valid "
                                 f"{kinds[0].__name__}, got {_json_kind(value)}")
    items = []
    for row, t, raw, rid in zip(rows, texts, params, rids, strict=True):
        sp, skip, no_trim = parse_sampling(raw)
        items.append(GenerateItem(row, t, sp, rid, skip, no_trim))
    return items, batch, bool(body.get("return_logprob", False))


_TOP_LEVEL_TYPES: dict[str, tuple[type, ...]] = {"return_logprob": (bool,), "stream": (bool,)}

# UpdateWeightFromDiskReqInput (SGLang 0.5.23 srt/managers/io_struct.py): field → (types, default).
UPDATE_FROM_DISK_FIELDS: dict[str, tuple[tuple[type, ...], Any]] = {
    "model_path": ((str,), None), "load_format": ((str,), None), "abort_all_requests": ((bool,), False),
    "weight_version": ((str,), None), "is_async": ((bool,), False), "torch_empty_cache": ((bool,), False),
    "keep_pause": ((bool,), False), "recapture_cuda_graph": ((bool,), False), "token_step": ((int,), 0),
    "flush_cache": ((bool,), True), "manifest": ((dict,), None),
}


def parse_update_from_disk(body: Any) -> dict[str, Any]:
    """An /update_weights_from_disk body → every field with its default; shape-2 errors like pydantic's."""
    if not isinstance(body, dict):
        raise SchemaError(2, "request body must be a JSON object")
    if not isinstance(body.get("model_path"), str):
        raise SchemaError(2, "1 validation error for UpdateWeightFromDiskReqInput\nmodel_path\n  Field required")
    out = {}
    for key, (kinds, default) in UPDATE_FROM_DISK_FIELDS.items():
        value = body.get(key, default)
        wrong = isinstance(value, bool) and bool not in kinds
        if value is not None and (wrong or not isinstance(value, kinds)):
            raise SchemaError(2, f"1 validation error for UpdateWeightFromDiskReqInput\n{key}\n  Input should be "
                                 f"a valid {kinds[0].__name__}, got {_json_kind(value)}")
        out[key] = value
    return out


def version_spans(versions: list[int]) -> list[dict[str, Any]]:
    """Per-token versions → SGLang's weight_versions spans [{"version", "start", "end"}] over output indices."""
    spans: list[dict[str, Any]] = []
    for i, v in enumerate(versions):
        if spans and spans[-1]["version"] == str(v):
            spans[-1]["end"] = i + 1
        else:
            spans.append({"version": str(v), "start": i, "end": i + 1})
    return spans


def generate_response(
    gen: Generation, rid: str, prompt_tokens: int, text: str | None, return_logprob: bool, version: int
) -> dict[str, Any]:
    """The /generate response object for one finished request (SGLang 0.5.23's shape, meta_info included)."""
    spans = version_spans(gen.versions)
    meta: dict[str, Any] = {
        "id": rid,
        "finish_reason": gen.meta.get("finish_reason") or {"type": gen.finish_reason},
        "prompt_tokens": prompt_tokens,
        "completion_tokens": len(gen.output_ids),
        "cached_tokens": 0,
        "weight_version": spans[-1]["version"] if spans else str(version),
        "weight_versions": spans,
        "e2e_latency": gen.meta.get("e2e_latency", 0.0),
    }
    if return_logprob:
        meta["input_token_logprobs"] = []
        meta["output_token_logprobs"] = [[lp, tok, None] for lp, tok in zip(gen.logprobs, gen.output_ids, strict=True)]
        meta["output_token_logprobs_length"] = len(gen.output_ids)
    out: dict[str, Any] = {"output_ids": list(gen.output_ids), "meta_info": meta}
    if text is not None:
        out = {"text": text, **out}
    return out
