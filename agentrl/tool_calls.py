"""Tool calls in model text: tool specs, the prompt that teaches the format, parsing and validation.

Three encodings are accepted, one tool call per turn by default:

- Hermes / Qwen2.5: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; an unterminated
  ``<tool_call>{...}`` at the end of a generation is accepted when its JSON is complete.
- XML function form (Qwen3-Coder, R2E-Gym): ``<function=name><parameter=k>v</parameter></function>``, bare or
  inside ``<tool_call>``. Values are kept verbatim except one leading and one trailing newline; nothing is
  stripped. Non-string parameters are coerced from the tool schema (integers, arrays, ...).
- A fenced ```` ```bash ```` block, as a call of the tool ``bash(command)`` when the env has that tool.

``parse_tool_call`` never raises on model text: a problem comes back as a ``FormatError`` whose ``message``
is the observation to show the model (it names the problem, restates the format, and says so when the
generation was cut off by the token limit).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

ToolSpec = dict[str, Any]
"""An OpenAI-style tool spec: {"type": "function", "function": {"name", "description", "parameters"}}."""

_HERMES = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)\Z", re.DOTALL)
_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(</function>|\Z)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>(.*?)(</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
_BASH = re.compile(r"```(?:bash|sh)[ \t]*\n(.*?)(```|\Z)", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    """A parsed, validated tool call. `encoding` is "hermes", "xml" or "bash" (which form the model used)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    encoding: str = "hermes"


@dataclass(frozen=True)
class FormatError:
    """An action the env cannot run. `message` is the observation text for the model; `kind` a short code."""

    message: str
    kind: str


def function_tool(
    name: str, description: str, properties: dict[str, dict[str, Any]], required: Sequence[str] | None = None
) -> ToolSpec:
    """Build an OpenAI-style tool spec; every property is required unless `required` says otherwise."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(properties) if required is None else list(required),
            },
        },
    }


def _fn(spec: ToolSpec) -> dict[str, Any]:
    """The function part of a spec (accepts both the OpenAI wrapper and the bare {"name", ...} form)."""
    return spec.get("function", spec)


def tool_names(tools: Sequence[ToolSpec]) -> list[str]:
    """Names of the tools, in order."""
    return [_fn(t).get("name", "") for t in tools]


def check_tools(tools: Sequence[ToolSpec]) -> list[str]:
    """Problems with a list of tool specs (empty if all are well formed)."""
    problems = []
    if isinstance(tools, (str, dict)) or not isinstance(tools, Sequence):
        return [f"tools must be a list of tool specs, got {type(tools).__name__}"]
    for i, spec in enumerate(tools):
        fn = _fn(spec) if isinstance(spec, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            problems.append(f"tools[{i}] has no name; expected {{'type': 'function', 'function': {{'name': ...}}}}")
            continue
        params = fn.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, dict) or params.get("type", "object") != "object":
            problems.append(f"tool {fn['name']!r}: parameters must be a JSON schema of type object")
            continue
        props = params.get("properties", {})
        missing = [r for r in params.get("required", []) if r not in props]
        if missing:
            problems.append(f"tool {fn['name']!r}: required {missing} not among its properties {list(props)}")
    names = tool_names(tools)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append(f"duplicate tool names: {dupes}")
    return problems


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """A tool call as Hermes text, the form the tool prompt teaches (used by scripted experts)."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


def _example_call(tools: Sequence[ToolSpec]) -> str:
    """A schematic call of the first tool, for prompts and error messages."""
    if not tools:
        return format_call("tool_name", {"argument": "value"})
    fn = _fn(tools[0])
    props = fn.get("parameters", {}).get("properties", {})
    return format_call(fn["name"], {k: f"<{v.get('type', 'value')}>" for k, v in props.items()})


def tools_prompt(tools: Sequence[ToolSpec]) -> str:
    """The system-prompt section that lists the tools and teaches the Hermes calling convention.

    Used for templates without native tool support (SmolLM2's has none).
    """
    if not tools:
        return ""
    specs = "\n".join(json.dumps(t if "function" in t else {"type": "function", "function": t}) for t in tools)
    return (
        "You can call these tools (JSON schemas):\n<tools>\n" + specs + "\n</tools>\n"
        "To call a tool, write exactly one call in this form and then stop:\n" + _example_call(tools[:1])
    )


def _error(problem: str, kind: str, tools: Sequence[ToolSpec], truncated: bool) -> FormatError:
    """A FormatError whose message names the problem and restates the expected format."""
    head = "Format error"
    if truncated:
        head += " (your output hit the length limit and was cut off; write less before the tool call)"
    names = ", ".join(tool_names(tools)) or "none"
    message = (
        f"{head}: {problem}\nCall exactly one tool per turn (available: {names}), like this:\n{_example_call(tools)}"
    )
    return FormatError(message=message, kind="truncated" if truncated and kind == "no_tool_call" else kind)


def _strip_one_newline(value: str) -> str:
    """Remove at most one leading and one trailing newline (never .strip(): whitespace can be content)."""
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def _parse_xml(body: str) -> tuple[str, dict[str, str], bool] | None:
    """Parse one `<function=...>` block; returns (name, raw string params, terminated) or None."""
    m = _FUNCTION.search(body)
    if m is None:
        return None
    params = {k: _strip_one_newline(v) for k, v, _ in _PARAMETER.findall(m.group(2))}
    return m.group(1), params, bool(m.group(3))


def _candidates(text: str) -> list[tuple[str, Any, bool]]:
    """Every tool call in text as (encoding, payload, terminated), in the order Hermes, XML, bash."""
    found: list[tuple[str, Any, bool]] = []
    rest = text
    for m in _HERMES.finditer(text):
        body = m.group(1) if m.group(1) is not None else m.group(2)
        xml = _parse_xml(body) if "<function=" in body else None
        found.append(("xml", xml, xml[2]) if xml else ("hermes", body, m.group(1) is not None))
        rest = rest.replace(m.group(0), " ", 1)
    for m in _FUNCTION.finditer(rest):
        found.append(("xml", _parse_xml(m.group(0)), bool(m.group(3))))
        rest = rest.replace(m.group(0), " ", 1)
    for m in _BASH.finditer(rest):
        found.append(("bash", m.group(1), bool(m.group(2))))
    return found


def _coerce(value: Any, schema: dict[str, Any]) -> tuple[bool, Any]:
    """Coerce a value to the schema's type where that is unambiguous; returns (ok, value)."""
    kind = schema.get("type")
    if isinstance(kind, list):  # e.g. ["string", "null"]: accept the first type that fits
        for k in kind:
            ok, v = _coerce(value, {**schema, "type": k})
            if ok:
                return ok, v
        return False, value
    if kind == "string":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = json.dumps(value)
        ok = isinstance(value, str)
    elif kind in ("integer", "number"):
        if isinstance(value, str):
            try:
                value = json.loads(value.strip())
            except ValueError:
                return False, value
        if isinstance(value, float) and kind == "integer" and value.is_integer():
            value = int(value)
        ok = isinstance(value, int if kind == "integer" else (int, float)) and not isinstance(value, bool)
    elif kind == "boolean":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"
        ok = isinstance(value, bool)
    elif kind in ("array", "object"):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return False, value
        ok = isinstance(value, list if kind == "array" else dict)
    elif kind == "null":
        ok = value is None
    else:  # no type given: anything goes
        ok = True
    if ok and "enum" in schema and value not in schema["enum"]:
        return False, value
    return ok, value


def validate(name: Any, arguments: Any, tools: Sequence[ToolSpec], *, truncated: bool = False,
             encoding: str = "hermes") -> ToolCall | FormatError:
    """Check a call against the tool specs (name, required and unknown arguments, types); coerce types."""
    names = tool_names(tools)
    if not isinstance(name, str) or not name:
        return _error('the tool call has no "name" string', "missing_name", tools, truncated)
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f' Did you mean "{close[0]}"?' if close else ""
        return _error(f'unknown tool "{name}".{hint}', "unknown_tool", tools, truncated)
    if not isinstance(arguments, dict):
        return _error(f'the arguments of "{name}" must be a JSON object, got {type(arguments).__name__}',
                      "bad_arguments", tools, truncated)
    params = _fn(tools[names.index(name)]).get("parameters", {})
    props: dict[str, Any] = params.get("properties", {})
    missing = [k for k in params.get("required", []) if k not in arguments]
    if missing:
        return _error(f'tool "{name}" is missing the required argument "{missing[0]}"',
                      "missing_argument", tools, truncated)
    unknown = [k for k in arguments if k not in props]
    if unknown and params.get("additionalProperties", False) is not True:
        return _error(f'tool "{name}" got an unexpected argument "{unknown[0]}" (it takes: {", ".join(props)})',
                      "unknown_argument", tools, truncated)
    coerced = dict(arguments)
    for key, schema in props.items():
        if key in arguments:
            ok, coerced[key] = _coerce(arguments[key], schema)
            if not ok:
                want = schema.get("enum") or schema.get("type")
                return _error(f'argument "{key}" of tool "{name}" must be {want}, got {arguments[key]!r}',
                              "bad_argument_type", tools, truncated)
    return ToolCall(name=name, arguments=coerced, encoding=encoding)


def _from_candidate(encoding: str, payload: Any, terminated: bool, tools: Sequence[ToolSpec],
                    truncated: bool) -> ToolCall | FormatError:
    """Turn one raw candidate into a validated ToolCall or a FormatError."""
    if encoding == "hermes":
        try:
            obj = json.loads(payload)
        except ValueError as e:
            where = "was cut off before it was complete" if truncated and not terminated else f"is not valid JSON ({e})"
            return _error(f"the text inside <tool_call> {where}", "invalid_json", tools, truncated)
        if not isinstance(obj, dict):
            return _error("the text inside <tool_call> must be a JSON object", "invalid_json", tools, truncated)
        arguments = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(arguments, str):  # OpenAI style: arguments as a JSON string
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return _error('"arguments" is a string that is not a JSON object', "bad_arguments", tools, truncated)
        return validate(obj.get("name"), arguments, tools, truncated=truncated, encoding="hermes")
    if not terminated and truncated:  # a cut-off XML call or bash block would run a partial value
        what = "the <function=...> call" if encoding == "xml" else "the ```bash block"
        return _error(f"{what} was cut off before it was closed", "unterminated", tools, truncated)
    if encoding == "xml":
        name, params, _ = payload
        return validate(name, params, tools, truncated=truncated, encoding="xml")
    if "bash" not in tool_names(tools):
        return _error("a ```bash block is not a tool call here: there is no bash tool", "unknown_tool", tools, truncated)
    return validate("bash", {"command": _strip_one_newline(payload)}, tools, truncated=truncated, encoding="bash")


def parse_tool_calls(text: str, tools: Sequence[ToolSpec], *, truncated: bool = False) -> list[ToolCall] | FormatError:
    """All tool calls in text, validated; a FormatError if there is none or any of them is malformed.

    Args:
        text: the model's action text.
        tools: the env's tool specs.
        truncated: True when the generation stopped at the token limit (finish_reason "length").
    """
    found = _candidates(text)
    if not found:
        return _error("no tool call found", "no_tool_call", tools, truncated)
    calls = []
    for encoding, payload, terminated in found:
        call = _from_candidate(encoding, payload, terminated, tools, truncated)
        if isinstance(call, FormatError):
            return call
        calls.append(call)
    return calls


def parse_tool_call(text: str, tools: Sequence[ToolSpec], *, truncated: bool = False) -> ToolCall | FormatError:
    """Exactly one validated tool call from the model's text, or a FormatError naming the problem.

    Text outside the call is free reasoning and is ignored. Never raises on model output.
    """
    calls = parse_tool_calls(text, tools, truncated=truncated)
    if isinstance(calls, FormatError):
        return calls
    if len(calls) > 1:
        return _error(f"found {len(calls)} tool calls; write exactly one per turn", "multiple_tool_calls",
                      tools, truncated)
    return calls[0]


parse = parse_tool_call
