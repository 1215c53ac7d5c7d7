"""The grading worker: runs INSIDE the grading sandbox as `python3 -I -B -c <this file>` in the repo folder.

It is the only place where the repository's code runs while a swe_lite task is judged. It holds the objects the
repo's code makes and answers the judge (judge.py, on the host) one request per line on stdin with one JSON line
on stdout. Nothing here is trusted: the repo's code runs in this process and may rewrite any of it, so the judge
checks every answer against a strict schema and decides every verdict itself. This file only has to be correct
for honest repos: it turns results into exact builtin values or handles, and exceptions into names or handles.

Requests (JSON objects): {"op": "import", "name"} | {"op": "getattr", "obj", "name"} |
{"op": "setattr", "obj", "name", "value"} | {"op": "call", "obj", ["name"], "args", "kwargs"} |
{"op": "apply", "fn", "args"}. Answers: {"ok": value} or {"raise": {"cls": value, "args": [...] | "msg": str}};
after a call, "out": [[position or keyword, value], ...] gives the new state of every list, dict and set argument
(the judge's containers arrive as copies, so a function that changes its argument in place is seen changing it).
Values: null, true/false and JSON strings as themselves; {"int": digits}, {"float": repr}, {"bytes": hex},
{"list" | "tuple" | "set" | "frozenset": [values]}, {"dict": [[key, value], ...]}, and handles
{"ref": n, "kind": "module" | "class" | "object", "name": str, "exc": [builtin exception bases]}.
Only the standard library may be imported here: this file runs in the sandbox's Python.
"""

import builtins
import importlib
import itertools
import json
import operator
import os
import sys

MAX_ITEMS = 10000  # items of one iteration (the judge refuses more anyway)
PROTO_IN = os.fdopen(os.dup(0), "rb")
PROTO_OUT = os.dup(1)
_null = os.open(os.devnull, os.O_RDWR)
for _fd in (0, 1, 2):  # the repo's prints and reads never touch the protocol's stream
    os.dup2(_null, _fd)
sys.stdin = open(os.devnull)
sys.stdout = sys.stderr = open(os.devnull, "w")
sys.path.insert(0, os.getcwd())
sys.setrecursionlimit(3000)

OBJECTS: dict = {}
IDS: dict = {}
EXACT = (str, bool, type(None))


def _iterate(obj):
    return list(itertools.islice(iter(obj), MAX_ITEMS + 1))


APPLY = {"str": str, "repr": repr, "len": len, "iter": _iterate, "int": int, "float": float,
         "getitem": operator.getitem, "setitem": operator.setitem, "delitem": operator.delitem,
         "contains": operator.contains, "neg": operator.neg, "pos": operator.pos, "abs": abs,
         "invert": operator.invert, "add": operator.add, "sub": operator.sub, "mul": operator.mul,
         "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
         "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
         "rshift": operator.rshift, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
         "next": next}


def ref(obj) -> dict:
    """A handle for an object the judge may only reach through this process."""
    key = id(obj)
    if key not in IDS:
        IDS[key] = len(OBJECTS) + 1
        OBJECTS[IDS[key]] = obj
    out = {"ref": IDS[key], "kind": "object", "name": type(obj).__name__}
    if isinstance(obj, type(sys)):
        out.update(kind="module", name=obj.__name__)
    elif isinstance(obj, type):
        out.update(kind="class", name=obj.__name__)
        if issubclass(obj, BaseException):
            out["exc"] = [c.__name__ for c in obj.__mro__ if getattr(builtins, c.__name__, None) is c]
    return out


def enc(x):
    """A value as the protocol writes it: exact builtin types by value, everything else by handle."""
    t = type(x)
    if t in EXACT:
        return x
    if t is int:
        return {"int": str(x)}
    if t is float:
        return {"float": repr(x)}
    if t is bytes:
        return {"bytes": x.hex()}
    if t in (list, tuple, set, frozenset):
        return {t.__name__: [enc(v) for v in x]}
    if t is dict:
        return {"dict": [[enc(k), enc(v)] for k, v in x.items()]}
    return ref(x)


def dec(v):
    """A value the judge sent (its own exact values, or handles of ours)."""
    if isinstance(v, dict):
        (tag, body), = v.items()
        if tag == "ref":
            return OBJECTS[body]
        if tag == "int":
            return int(body)
        if tag == "float":
            return float(body)
        if tag == "bytes":
            return bytes.fromhex(body)
        if tag == "dict":
            return {dec(k): dec(w) for k, w in body}
        return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](dec(w) for w in body)
    return v


MUTABLE = (list, dict, set)


def answer(req: dict, out: list):
    """Do what one request asks; the result is encoded by the caller, mutable arguments of a call go to `out`."""
    op = req["op"]
    if op == "import":
        return importlib.import_module(req["name"])
    if op == "apply":
        return APPLY[req["fn"]](*[dec(a) for a in req["args"]])
    obj = OBJECTS[req["obj"]]
    if op == "getattr":
        return getattr(obj, req["name"])
    if op == "setattr":
        setattr(obj, req["name"], dec(req["value"]))
        return None
    if op == "call":
        fn = getattr(obj, req["name"]) if req.get("name") else obj
        args = [dec(a) for a in req["args"]]
        kwargs = {k: dec(w) for k, w in req["kwargs"].items()}
        try:
            return fn(*args, **kwargs)
        finally:
            out += [[key, value] for key, value in [*enumerate(args), *kwargs.items()] if type(value) in MUTABLE]
    raise ValueError(f"unknown op {op!r}")


def text_of(e: BaseException) -> str:
    """str(e), cut to 4000 characters, made here (the judge never formats what the repo raised)."""
    try:
        text = str(e)
        return text[:4000] if type(text) is str else type(e).__name__
    except Exception:
        return f"<unprintable {type(e).__name__}>"


def raised(e: BaseException) -> dict:
    """An exception as the protocol writes it: its class (a builtin's name or a handle), its args and its text."""
    cls = type(e)
    out = {"cls": cls.__name__ if getattr(builtins, cls.__name__, None) is cls else ref(cls), "msg": text_of(e)}
    try:
        out["args"] = [enc(a) for a in e.args]
        json.dumps(out["args"])
    except Exception:
        out.pop("args", None)
    return out


def main() -> None:
    """Serve requests until the judge closes stdin."""
    while True:
        line = PROTO_IN.readline()
        if not line:
            break
        changed: list = []
        try:
            out = {"ok": enc(answer(json.loads(line), changed))}
        except Exception as e:  # the repo's exception, reported; BaseException (SystemExit, ...) ends the worker
            out = {"raise": raised(e)}
        try:
            if changed:
                out["out"] = [[key, enc(value)] for key, value in changed]
        except Exception:
            out.pop("out", None)
        try:
            data = (json.dumps(out) + "\n").encode()
        except (ValueError, RecursionError) as e:
            data = (json.dumps({"raise": {"cls": "ValueError", "msg": f"unencodable result: {e}"}}) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(PROTO_OUT, view):]


main()
