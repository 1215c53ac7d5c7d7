"""The OpenAI chat-completions wire format, as the gateway reads and writes it.

Requests are validated into a `ChatRequest` (every problem a `RequestError` that becomes an OpenAI-style error
body, never a traceback). Messages are compared across calls in a canonical form that ignores what does not
change the rendered tokens (tool-call ids, `type` fields, a `None` content next to tool calls). Tool calls in
the model's text are parsed with the project's parser (agentrl.tool_calls: Hermes and XML function form) into
OpenAI `tool_calls`, and responses are built as `chat.completion` objects or `chat.completion.chunk` streams.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from agentrl.tool_calls import ToolCall, check_tools, parse_tool_calls

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
"""OpenAI roles and the chat-template role each renders as (`developer` is the newer name of `system`)."""
MAX_N = 16
MAX_STOP = 4  # OpenAI's limit on stop sequences

_CALL_BLOCK = re.compile(r"<tool_call>.*?(</tool_call>|\Z)|<function=[^>\s]+>.*?(</function>|\Z)", re.DOTALL)


class RequestError(Exception):
    """A request the gateway refuses; `body()` is the OpenAI error envelope, `status` the HTTP status."""

    def __init__(self, message: str, *, status: int = 400, param: str | None = None, code: str | None = None,
                 kind: str = "invalid_request_error"):
        super().__init__(message)
        self.message, self.status, self.param, self.code, self.kind = message, status, param, code, kind

    def body(self) -> dict[str, Any]:
        """{"error": {"message", "type", "param", "code"}}, as the OpenAI API answers errors."""
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


@dataclass
class ChatRequest:
    """A validated /v1/chat/completions request (only what the gateway uses)."""

    messages: list[dict[str, Any]]
    model: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    parse_tools: bool = True
    """False for tool_choice "none": the reply is plain text even if it looks like a call."""
    n: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] = field(default_factory=list)
    seed: int | None = None
    stream: bool = False
    include_usage: bool = False


def _number(body: dict, key: str, lo: float, hi: float) -> float | None:
    v = body.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise RequestError(f"{key} must be a number in [{lo}, {hi}], got {v!r}", param=key)
    return float(v)


def _int(body: dict, key: str, lo: int, hi: int | None = None) -> int | None:
    v = body.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        bound = f"an integer ≥ {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
        raise RequestError(f"{key} must be {bound}, got {v!r}", param=key)
    return v


def content_text(content: Any, where: str) -> str:
    """A message content as text: a string, None (empty), or a list of {"type": "text", "text"} parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        if any(p.get("type") != "text" or not isinstance(p.get("text"), str) for p in content):
            raise RequestError(f"{where}: only text content parts are supported", param=where)
        return "".join(p["text"] for p in content)
    raise RequestError(f"{where}: content must be a string or a list of text parts, got {type(content).__name__}",
                       param=where)


def _check_message(i: int, m: Any) -> dict[str, Any]:
    where = f"messages[{i}]"
    if not isinstance(m, dict):
        raise RequestError(f"{where} must be an object, got {type(m).__name__}", param=where)
    role = m.get("role")
    if role not in ROLES:
        raise RequestError(f"{where}.role must be one of {', '.join(ROLES)}, got {role!r}", param=f"{where}.role")
    content_text(m.get("content"), f"{where}.content")
    calls = m.get("tool_calls")
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list):
            raise RequestError(f"{where}.tool_calls must be a list on an assistant message", param=f"{where}.tool_calls")
        for j, c in enumerate(calls):
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise RequestError(f"{where}.tool_calls[{j}] needs function.name", param=f"{where}.tool_calls")
    elif m.get("content") is None and role != "assistant":
        raise RequestError(f"{where}.content is missing", param=f"{where}.content")
    return m


def parse_request(body: Any) -> ChatRequest:
    """Validate a chat-completions body; RequestError names the first problem (unknown keys are ignored)."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list", param="messages")
    messages = [_check_message(i, m) for i, m in enumerate(messages)]
    tools = body.get("tools") or []
    problems = check_tools(tools)
    if problems:
        raise RequestError("; ".join(problems), param="tools")
    choice = body.get("tool_choice", "auto")
    stop = body.get("stop")
    stop = [] if stop is None else [stop] if isinstance(stop, str) else stop
    if not (isinstance(stop, list) and all(isinstance(s, str) and s for s in stop) and len(stop) <= MAX_STOP):
        raise RequestError(f"stop must be a string or a list of at most {MAX_STOP} non-empty strings", param="stop")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise RequestError("stream must be a boolean", param="stream")
    options = body.get("stream_options") or {}
    max_tokens = _int(body, "max_completion_tokens", 1)
    return ChatRequest(
        messages=messages, model=str(body.get("model") or ""), tools=list(tools), parse_tools=choice != "none",
        n=_int(body, "n", 1, MAX_N) or 1, temperature=_number(body, "temperature", 0.0, 2.0),
        top_p=_number(body, "top_p", 0.0, 1.0), max_tokens=max_tokens if max_tokens else _int(body, "max_tokens", 1),
        stop=list(stop), seed=_int(body, "seed", -(2**63)), stream=stream,
        include_usage=bool(isinstance(options, dict) and options.get("include_usage")),
    )


def _arguments(raw: Any) -> Any:
    """Tool-call arguments in a comparable form: the parsed JSON (a string that is not JSON stays as is)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def canonical(m: dict[str, Any]) -> str:
    """A message's identity for prefix matching: role, text, name and tool calls (names and parsed arguments).

    Tool-call ids and `type` fields are left out: they never reach the rendered tokens."""
    role = ROLES[m["role"]]
    calls = [(c["function"]["name"], _arguments(c["function"].get("arguments", "{}"))) for c in m.get("tool_calls") or []]
    key = {"role": role, "content": content_text(m.get("content"), "content"), "calls": calls}
    if role == "tool" and m.get("name"):
        key["name"] = m["name"]
    return json.dumps(key, sort_keys=True, ensure_ascii=False)


def openai_tool_calls(calls: list[ToolCall], id_prefix: str) -> list[dict[str, Any]]:
    """ToolCalls as OpenAI `tool_calls` entries (arguments as a JSON string, ids `{id_prefix}_{i}`)."""
    return [{"id": f"{id_prefix}_{i}", "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
            for i, c in enumerate(calls)]


def assistant_reply(text: str, tools: list[dict[str, Any]], *, parse: bool, id_prefix: str,
                    truncated: bool = False) -> dict[str, Any]:
    """The assistant message for the model's text: tool calls parsed out (Hermes or XML form) when `tools`
    are given and every call in the text is valid; otherwise the text as plain content."""
    if tools and parse:
        calls = parse_tool_calls(text, tools, truncated=truncated)
        if isinstance(calls, list) and all(c.encoding in ("hermes", "xml") for c in calls):
            rest = _CALL_BLOCK.sub("", text).strip()
            return {"role": "assistant", "content": rest or None, "tool_calls": openai_tool_calls(calls, id_prefix)}
    return {"role": "assistant", "content": text}


def template_message(m: dict[str, Any], raw_text: str | None = None) -> dict[str, str]:
    """The message as the chat template renders it (string content). An assistant message renders as
    `raw_text` (what the model wrote) when known, else its content followed by its calls in Hermes form."""
    role = ROLES[m["role"]]
    if role == "assistant":
        if raw_text is not None:
            return {"role": "assistant", "content": raw_text}
        parts = [content_text(m.get("content"), "content")]
        for c in m.get("tool_calls") or []:
            args = _arguments(c["function"].get("arguments", "{}"))
            call = json.dumps({"name": c["function"]["name"], "arguments": args}, ensure_ascii=False)
            parts.append(f"<tool_call>\n{call}\n</tool_call>")
        return {"role": "assistant", "content": "\n".join(p for p in parts if p)}
    out = {"role": role, "content": content_text(m.get("content"), "content")}
    if role == "tool" and isinstance(m.get("name"), str):
        out["name"] = m["name"]
    return out


def completion(completion_id: str, model: str, choices: list[dict[str, Any]], prompt_tokens: int,
               completion_tokens: int) -> dict[str, Any]:
    """A `chat.completion` object; each choice is {"message", "finish_reason"}."""
    return {
        "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": i, "message": c["message"], "finish_reason": c["finish_reason"], "logprobs": None}
                    for i, c in enumerate(choices)],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def stream_chunks(done: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A finished completion as `chat.completion.chunk` objects (role, content, tool calls, finish), in the
    order OpenAI streams them: the same message, delivered in pieces."""
    base = {"id": done["id"], "object": "chat.completion.chunk", "created": done["created"], "model": done["model"]}
    chunks = []
    for c in done["choices"]:
        msg, i = c["message"], c["index"]
        chunks.append({**base, "choices": [{"index": i, "delta": {"role": "assistant", "content": ""},
                                            "finish_reason": None}]})
        if msg.get("content"):
            chunks.append({**base, "choices": [{"index": i, "delta": {"content": msg["content"]},
                                                "finish_reason": None}]})
        for k, call in enumerate(msg.get("tool_calls") or []):
            chunks.append({**base, "choices": [{"index": i, "delta": {"tool_calls": [{**call, "index": k}]},
                                                "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": i, "delta": {}, "finish_reason": c["finish_reason"]}]})
    if include_usage:
        chunks.append({**base, "choices": [], "usage": done["usage"]})
    return chunks
