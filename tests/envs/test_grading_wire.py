"""The grading wire (envs/swe/grading/wire.py) and the host's reading of the suite judge's report, without Docker.

The wire is the only codec between a judge and the repository's worker, so it is tested here as a codec: any value
round-trips, and any byte string is either a value or a refusal (WireRefused), never another exception. The
stdlib names a worker may send resolve only through the explicit table (issue #53: `builtins:exec`,
`pathlib:os.write`, `typing:sys.argv` and `builtins:open` used to resolve by attribute walk and were called in the
judge). The suite judge's report is hostile data to the host: every malformed report is an invalid run, never an
exception out of the grader (issue #53: `R []`, `{"exit_code": "zz"}`, a deep array, a 5000-digit exit code).
"""

from __future__ import annotations

import json

import agentrl.envs.swe.grading.wire as wire
import pytest
from agentrl.envs.swe.grading.suite import MAX_CASES, parse_report
from agentrl.sandboxes.base import untar_tree
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrl.errors import SandboxError

# ---------------------------------------------------------------------------------------------------- the codec
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**40, 10**40), st.text(max_size=20),
                    st.binary(max_size=20), st.floats(allow_nan=False))
hashables = st.recursive(scalars, lambda inner: st.one_of(st.tuples(inner, inner), st.frozensets(inner, max_size=4)),
                         max_leaves=8)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner), st.sets(hashables, max_size=4),
    st.frozensets(hashables, max_size=4), st.dictionaries(hashables, inner, max_size=4)), max_leaves=20)


def _no_handles(v):
    raise AssertionError(f"a plain value decoded as a handle: {v}")


def _same(a, b) -> bool:
    """Equal with the exact same types all the way down (1 == 1.0 == True would hide a codec bug)."""
    if type(a) is not type(b):
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(map(_same, a, b))
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    return a == b


@settings(max_examples=300, deadline=None)
@given(values)
def test_every_exact_value_round_trips(x):
    line = json.dumps(wire.encode_exact(x)).encode()
    assert _same(wire.Decoder(_no_handles).value(wire.loads(line)), x)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                 st.recursive(st.one_of(st.none(), st.integers(), st.text(max_size=8)),
                              lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.sampled_from(
                                                          ["int", "float", "bytes", "list", "set", "dict", "tuple",
                                                           "frozenset", "x"]), inner, max_size=2)),
                              max_leaves=12).map(lambda v: json.dumps(v).encode())))
def test_any_bytes_decode_to_a_value_or_a_refusal(raw):
    try:
        wire.Decoder(lambda v: ("handle", v)).value(wire.loads(raw))
    except wire.WireRefused:
        pass


@pytest.mark.parametrize("raw", [b"[" * 200_000 + b"]" * 200_000, b'{"int": "' + b"9" * 5000 + b'"}',
                                 b'{"int": "1e5"}', b'{"float": "' + b"1" * 60 + b'"}', b'{"bytes": "xyz"}',
                                 b'{"set": [[1], [2]]}', b'{"dict": [[1, 2], [1, 3]]}', b'{"int": "1", "x": 2}',
                                 b'{"nope": []}', b"x" * (wire.MAX_LINE + 1)])
def test_malformed_lines_are_refused(raw):
    with pytest.raises(wire.WireRefused):
        wire.Decoder(_no_handles).value(wire.loads(raw))


def test_a_hash_flood_is_refused_before_the_set_is_built():
    flood = {"set": [{"int": str(k * (2 ** 61 - 1))} for k in range(wire.MAX_COLLISIONS + 1)]}
    with pytest.raises(wire.WireRefused, match="hash flood"):
        wire.Decoder(_no_handles).value(flood)


# ---------------------------------------------------------------------------------------------------- the stdlib table
@pytest.mark.parametrize("name", ["builtins:exec", "builtins:eval", "builtins:open", "builtins:__import__",
                                  "builtins:getattr", "builtins:type", "builtins:super", "pathlib:os",
                                  "pathlib:os.write", "typing:sys", "typing:sys.argv", "functools:partial",
                                  "operator:attrgetter", "operator:methodcaller", "string:Formatter",
                                  "collections:namedtuple", "enum:EnumMeta", "abc:ABCMeta", "re:compile",
                                  "builtins:int.from_bytes", "datetime:datetime.now", "io:open", "builtins:print",
                                  "builtins", ":", "builtins:", 7, None])
def test_a_name_outside_the_table_is_refused(name):
    with pytest.raises(wire.WireRefused):
        wire.std_object(name)


def test_the_table_holds_only_classes_that_make_values():
    """Nothing on the table is a function, a metaclass or a descriptor type, and each entry is the module-level
    attribute of exactly its name: what a worker can make the judge call by name is a value's constructor."""
    import importlib

    assert wire.std_object("builtins:int") is int and wire.std_object("datetime:date").__name__ == "date"
    for name, obj in wire.STD_TABLE.items():
        module, attr = name.split(":")
        assert "." not in attr and importlib.import_module(module).__dict__[attr] is obj, name
        assert isinstance(obj, type) and not issubclass(obj, type), name
        assert obj not in (property, classmethod, staticmethod, super, object.__class__), name
        assert wire.std_name(obj) == name


def test_functions_never_cross_by_name():
    import operator
    import os

    for fn in (exec, eval, open, len, print, os.write, operator.attrgetter, str.lower, json.loads):
        assert wire.std_name(fn) is None, fn


# ---------------------------------------------------------------------------------------------------- the report
def _report(**over) -> bytes:
    report = {"exit_code": 1, "cases": {"tests/test_a.py::test_x": {"status": "failed", "message": "m", "text": "t"}},
              "collection_errors": 0, "refused": "", "workers": 1, "calls": 3, "lost": 0, "output": "tail"}
    report.update(over)
    return json.dumps(report).encode()


def test_an_honest_report_is_a_verdict():
    run = parse_report(_report())
    assert run.valid and run.exit_code == 1 and run.cases["tests/test_a.py::test_x"]["status"] == "failed"


MALFORMED = {
    "not_an_object": b"[]",
    "not_json": b"{nope",
    "exit_code_a_string": _report(exit_code="zz"),
    "exit_code_a_bool": _report(exit_code=True),
    "exit_code_a_float": _report(exit_code=0.0),
    "exit_code_huge": _report(exit_code=10 ** 3999),
    "exit_code_past_json_digits": b'{"exit_code": ' + b"9" * 5000 + b', "cases": {}}',
    "deep_array": b'{"exit_code": 0, "cases": {}, "output": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    "cases_a_list": _report(cases=[]),
    "cases_missing": json.dumps({"exit_code": 0}).encode(),
    "case_not_an_object": _report(cases={"t::a": "passed"}),
    "case_status_unknown": _report(cases={"t::a": {"status": "PASSED", "message": "", "text": ""}}),
    "case_status_missing": _report(cases={"t::a": {"message": "", "text": ""}}),
    "case_text_not_a_string": _report(cases={"t::a": {"status": "passed", "message": "", "text": []}}),
    "case_text_oversized": _report(cases={"t::a": {"status": "failed", "message": "", "text": "x" * (1 << 17)}}),
    "too_many_cases": _report(cases={f"t::{i}": {"status": "passed", "message": "", "text": ""}
                                     for i in range(MAX_CASES + 1)}),
    "unknown_field": _report(verdict="resolved"),
    "refused_not_a_string": _report(refused=["x"]),
    "output_a_number": _report(output=3),
    "line_past_the_cap": b"x" * (wire.MAX_LINE + 1),
    "invalid_utf8": b'{"exit_code": 0, "cases": {}, "output": "\xff"}',
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_report_is_an_invalid_run_never_an_exception(name):
    run = parse_report(MALFORMED[name])
    assert not run.valid and "malformed" in run.reason and run.cases == {}, (name, run)


def test_a_refusal_in_the_report_is_an_invalid_run():
    run = parse_report(_report(refused="a callback on something the judge never handed out"))
    assert not run.valid and run.refused and "broke the grading protocol" in run.reason


# ---------------------------------------------------------------------------------------------------- downloads
@pytest.mark.parametrize("data", [b"", b"not a tar at all", b"\0" * 100])
def test_an_empty_or_unreadable_download_is_a_sandbox_error(data):
    """Our own tar made it, so a stream the backend lost or cut is ours (probed), not a crash of the episode."""
    with pytest.raises(SandboxError):
        untar_tree(data)
