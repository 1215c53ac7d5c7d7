"""Tool-call parsing: each encoding, validation against the schema, and every format-error path."""

from __future__ import annotations

import json

import pytest

from agentrl.tool_calls import (
    FormatError,
    ToolCall,
    check_tools,
    format_call,
    function_tool,
    parse_tool_call,
    parse_tool_calls,
    tools_prompt,
)

EDITOR = function_tool(
    "str_replace_editor", "Edit files.",
    {"command": {"type": "string", "enum": ["view", "str_replace", "insert"]}, "path": {"type": "string"},
     "old_str": {"type": "string"}, "new_str": {"type": "string"}, "insert_line": {"type": "integer"},
     "view_range": {"type": "array"}},
    required=["command", "path"],
)
BASH = function_tool("bash", "Run a command.", {"command": {"type": "string"}})
ANSWER = function_tool("answer", "Final answer.", {"value": {"type": "number"}, "sure": {"type": "boolean"}},
                       required=["value"])
TOOLS = [EDITOR, BASH, ANSWER]


def test_hermes_call_parses_with_reasoning_around_it():
    text = 'Let me look.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>\nthanks'
    assert parse_tool_call(text, TOOLS) == ToolCall("bash", {"command": "ls -la"}, "hermes")


def test_hermes_unterminated_at_end_of_generation_is_accepted_when_json_is_complete():
    text = '<tool_call>\n{"name": "answer", "arguments": {"value": 84}}'
    assert parse_tool_call(text, TOOLS) == ToolCall("answer", {"value": 84}, "hermes")
    assert parse_tool_call(text, TOOLS, truncated=True) == ToolCall("answer", {"value": 84}, "hermes")


def test_hermes_cut_off_json_says_it_was_cut_off_at_the_length_limit():
    err = parse_tool_call('<tool_call>\n{"name": "answer", "argum', TOOLS, truncated=True)
    assert isinstance(err, FormatError) and err.kind == "invalid_json"
    assert "length limit" in err.message and "cut off before it was complete" in err.message


def test_hermes_arguments_as_json_string_openai_style():
    text = '<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"pwd\\"}"}</tool_call>'
    assert parse_tool_call(text, TOOLS) == ToolCall("bash", {"command": "pwd"}, "hermes")


def test_xml_function_form_keeps_values_verbatim_except_one_newline_each_side():
    old = "    def f(x):\n        return x  \n"
    text = ("<function=str_replace_editor>\n<parameter=command>\nstr_replace\n</parameter>\n"
            "<parameter=path>\n/workspace/repo/a.py\n</parameter>\n"
            f"<parameter=old_str>\n{old}\n</parameter>\n<parameter=new_str>\n\n  y\t\n\n</parameter>\n</function>")
    call = parse_tool_call(text, TOOLS)
    assert call == ToolCall("str_replace_editor", {"command": "str_replace", "path": "/workspace/repo/a.py",
                                                   "old_str": old, "new_str": "\n  y\t\n"}, "xml")


def test_xml_inside_tool_call_and_types_coerced_from_schema():
    text = ("<tool_call>\n<function=str_replace_editor>\n<parameter=command>\nview\n</parameter>\n"
            "<parameter=path>\n/r/a.py\n</parameter>\n<parameter=view_range>\n[3, 9]\n</parameter>\n"
            "<parameter=insert_line>\n12\n</parameter>\n</function>\n</tool_call>")
    call = parse_tool_call(text, TOOLS)
    assert call == ToolCall("str_replace_editor", {"command": "view", "path": "/r/a.py", "view_range": [3, 9],
                                                   "insert_line": 12}, "xml")


def test_xml_unterminated_is_accepted_when_the_model_stopped_but_not_when_cut_off():
    text = "<function=bash>\n<parameter=command>\nls\n</parameter>\n"
    assert parse_tool_call(text, TOOLS) == ToolCall("bash", {"command": "ls"}, "xml")
    err = parse_tool_call("<function=bash>\n<parameter=command>\nrm -rf /tmp/bu", TOOLS, truncated=True)
    assert isinstance(err, FormatError) and err.kind == "unterminated" and "length limit" in err.message


def test_fenced_bash_block_is_a_bash_call():
    text = "I'll list files.\n```bash\nls -la && echo  'two  spaces'\n```\n"
    assert parse_tool_call(text, TOOLS) == ToolCall("bash", {"command": "ls -la && echo  'two  spaces'"}, "bash")


def test_fenced_bash_block_without_a_bash_tool_is_a_format_error():
    err = parse_tool_call("```bash\nls\n```", [ANSWER])
    assert isinstance(err, FormatError) and err.kind == "unknown_tool" and "no bash tool" in err.message


def test_cut_off_bash_block_is_not_run():
    err = parse_tool_call("```bash\nfind / -name", TOOLS, truncated=True)
    assert isinstance(err, FormatError) and err.kind == "unterminated"


def test_bash_block_inside_xml_value_is_not_a_second_call():
    text = ("<function=str_replace_editor><parameter=command>insert</parameter><parameter=path>README.md"
            "</parameter><parameter=new_str>```bash\nmake\n```</parameter></function>")
    call = parse_tool_call(text, TOOLS)
    assert isinstance(call, ToolCall) and call.arguments["new_str"] == "```bash\nmake\n```"


@pytest.mark.parametrize("text, kind, phrase", [
    ("I think the answer is 84.", "no_tool_call", "no tool call found"),
    ("<tool_call>{name: bash}</tool_call>", "invalid_json", "not valid JSON"),
    ("<tool_call>[1, 2]</tool_call>", "invalid_json", "must be a JSON object"),
    ('<tool_call>{"arguments": {}}</tool_call>', "missing_name", 'no "name"'),
    ('<tool_call>{"name": "bsh", "arguments": {"command": "ls"}}</tool_call>', "unknown_tool",
     'unknown tool "bsh". Did you mean "bash"?'),
    ('<tool_call>{"name": "bash", "arguments": ["ls"]}</tool_call>', "bad_arguments", "must be a JSON object"),
    ('<tool_call>{"name": "bash", "arguments": "ls"}</tool_call>', "bad_arguments", "not a JSON object"),
    ('<tool_call>{"name": "bash", "arguments": {}}</tool_call>', "missing_argument",
     'missing the required argument "command"'),
    ('<tool_call>{"name": "bash", "arguments": {"cmd": "ls", "command": "ls"}}</tool_call>', "unknown_argument",
     'unexpected argument "cmd"'),
    ('<tool_call>{"name": "answer", "arguments": {"value": "eighty"}}</tool_call>', "bad_argument_type",
     'argument "value" of tool "answer" must be number'),
    ('<tool_call>{"name": "answer", "arguments": {"value": 1, "sure": "maybe"}}</tool_call>', "bad_argument_type",
     "must be boolean"),
    ('<tool_call>{"name": "str_replace_editor", "arguments": {"command": "delete", "path": "a"}}</tool_call>',
     "bad_argument_type", "must be ['view', 'str_replace', 'insert']"),
    ('<tool_call>{"name": "bash", "arguments": {"command": "a"}}</tool_call>\n```bash\nls\n```', "multiple_tool_calls",
     "found 2 tool calls"),
])
def test_each_format_error_names_the_problem_and_restates_the_format(text, kind, phrase):
    err = parse_tool_call(text, TOOLS)
    assert isinstance(err, FormatError), err
    assert err.kind == kind
    assert phrase in err.message
    assert "<tool_call>" in err.message and "available: str_replace_editor, bash, answer" in err.message
    assert "length limit" not in err.message


def test_no_tool_call_after_length_limit_says_so():
    err = parse_tool_call("Let me think step by step about this problem and", TOOLS, truncated=True)
    assert isinstance(err, FormatError) and err.kind == "truncated"
    assert err.message.startswith("Format error (your output hit the length limit and was cut off")


def test_numbers_given_as_strings_are_coerced_and_integers_stay_integers():
    call = parse_tool_call('<tool_call>{"name": "answer", "arguments": {"value": "84"}}</tool_call>', TOOLS)
    assert call == ToolCall("answer", {"value": 84}, "hermes") and isinstance(call.arguments["value"], int)


def test_parse_tool_calls_returns_all_calls_in_order():
    text = format_call("bash", {"command": "ls"}) + "\n" + format_call("answer", {"value": 2.5})
    calls = parse_tool_calls(text, TOOLS)
    assert [c.name for c in calls] == ["bash", "answer"] and calls[1].arguments == {"value": 2.5}


def test_format_call_round_trips_through_the_parser():
    args = {"command": 'echo "a\\nb" | grep \'x\'', }
    assert parse_tool_call(format_call("bash", args), TOOLS) == ToolCall("bash", args, "hermes")


def test_tools_prompt_lists_every_tool_and_the_calling_convention():
    prompt = tools_prompt(TOOLS)
    specs = [json.loads(line) for line in prompt.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()]
    assert [s["function"]["name"] for s in specs] == ["str_replace_editor", "bash", "answer"]
    assert "<tool_call>" in prompt and tools_prompt([]) == ""


def test_check_tools_reports_malformed_specs():
    assert check_tools(TOOLS) == []
    problems = check_tools([{"function": {"description": "x"}}, BASH, BASH,
                            function_tool("t", "d", {"a": {"type": "string"}}, required=["b"])])
    assert any("tools[0] has no name" in p for p in problems)
    assert any("duplicate tool names: ['bash']" in p for p in problems)
    assert any("required ['b'] not among its properties ['a']" in p for p in problems)
    assert check_tools("bash") == ["tools must be a list of tool specs, got str"]
