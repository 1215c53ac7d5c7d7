"""The grading worker: runs INSIDE the grading sandbox as `python3 -I -B -c <wire.py + this file> <json>`, in the
repository, as the only process where the repository's code runs while a task is judged.

One worker serves both judges: swe_lite's (judge.py, on the host) and the suite judge of real packages
(suite_judge.py, in a sandbox of its own). Each use of the repository there is a request to this process, one JSON
line each way: import a module, get or set an attribute, call, apply one of wire.py's operations (str, len,
iteration, indexing, arithmetic, ordering, `in`), or what the suite judge alone asks (isinstance, an object's
canonical form for its `==`, a subclass of a test's). Objects stay here behind handles; exact builtin values (and
the plain builtin value of an instance of a builtin's subclass, for str, int, float and bytes) travel by value, and
with `by_value` in the arguments (swe_lite's judge compares only exact values) lists, dicts and sets do too. The
judge's objects that a test hands to the package (a callback, an instance of a class of the test's) arrive as
proxies (`JObj`), whose type mirrors the judge's class, and whose every use is a request back to the judge, answered
while this process waits. Warnings the package emits and what it prints are sent along with each answer, for the
test's `pytest.warns` and `capsys`. The lines come and go over stdin and stdout, or over the FIFO pair the host
shares with the judge's sandbox (`link` in the arguments; suite.py).
Nothing here is trusted: the repository's code runs in this process and may rewrite any of it; the judge checks
every answer. This file only has to be right for honest code. Only the standard library may be imported here.
"""
import builtins
import datetime as _datetime
import importlib
import io
import itertools
import json
import os
import sys
import warnings

import agentrl.envs.swe.grading.wire as wire  # the host pastes wire.py in place of this line

_ARGS = json.loads(sys.argv[1])
if _ARGS.get("link"):  # the FIFOs the host shares with the judge's sandbox (suite_judge.Channel)
    PROTO_IN = open(f"{_ARGS['link']}/req.{_ARGS['gen']}", "rb")
    PROTO_OUT = os.open(f"{_ARGS['link']}/ans.{_ARGS['gen']}", os.O_RDWR)
else:  # the host relays: stdin and stdout
    PROTO_IN = os.fdopen(os.dup(0), "rb")
    PROTO_OUT = os.dup(1)
_null = os.open(os.devnull, os.O_RDWR)
for _fd in (0, 1, 2):  # the repository's prints and reads never touch the protocol's stream
    os.dup2(_null, _fd)
sys.stdin = open(os.devnull)
for _p in reversed(_ARGS["path"]):
    sys.path.insert(0, os.path.join(os.getcwd(), _p))
sys.setrecursionlimit(3000)
BY_VALUE = bool(_ARGS.get("by_value"))
MAX_TEXT = 4000
MAX_OUTPUT = 1 << 20
STD_VALUES = wire.STD_VALUES

OWN: dict = {}
OWN_IDS: dict = {}
JMETA: dict = {}
PROXIES: dict = {}
MIRRORS: dict = {}
JFUNCS: dict = {}  # id of a stand-in function of the judge's -> its handle (not an attribute: wrappers copy those)


# ---------------------------------------------------------------------------------------------------- the channel
def _write(obj) -> None:
    data = (json.dumps(obj) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(PROTO_OUT, view):]


class Output(io.StringIO):
    """What the package prints during one request, sent with the answer (the test's capsys sees it)."""


def request(msg: dict):
    """Ask the judge (a callback); serve its nested requests until its answer; (value, changed arguments)."""
    _write(msg)
    while True:
        line = PROTO_IN.readline()
        if not line:
            os._exit(0)
        body = json.loads(line)
        if "ok" in body or "raise" in body:
            if "raise" in body:
                raise judge_exception(body["raise"])
            return dec(body["ok"]), body.get("out", [])
        _write(serve(body))


def ask(msg: dict):
    return request(msg)[0]


# ---------------------------------------------------------------------------------------------------- the judge's objects
class JMeta(type):
    """Metaclass of mirrors of the judge's classes: calling one or reading its attributes asks the judge (so does
    iterating one: a test's Enum handed to the package)."""

    def _japply(cls, fn, *args):
        return ask({"op": "apply", "fn": fn, "obj": {"jref": vars(cls)["_jref"]}, "args": [enc(a) for a in args]})

    def __iter__(cls):
        if "_jref" not in vars(cls):
            return type.__iter__(cls)
        got = cls._japply("iter")
        return iter(got) if type(got) is tuple else got

    def __len__(cls):
        return cls._japply("len")

    def __contains__(cls, item):
        return cls._japply("contains", item)

    def __getitem__(cls, key):
        return cls._japply("getitem", key)

    def __call__(cls, *args, **kwargs):
        if "_jref" not in vars(cls):
            return super().__call__(*args, **kwargs)
        return jcall(vars(cls)["_jref"], args, kwargs)

    def __getattr__(cls, name):
        if "_jref" not in vars(cls) or name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return ask({"op": "getattr", "obj": {"jref": vars(cls)["_jref"]}, "name": name})


class JObj(metaclass=JMeta):
    """A proxy of an object of the judge's (a test's callback, a test's object). Every use asks the judge."""

    def __getattr__(self, name):
        if name.startswith("_agentrl"):
            raise AttributeError(name)
        return ask({"op": "getattr", "obj": enc(self), "name": name})

    def __setattr__(self, name, value):
        if name.startswith("_agentrl") or name in ("__traceback__", "__cause__", "__context__"):
            return object.__setattr__(self, name, value)
        ask({"op": "setattr", "obj": enc(self), "name": name, "value": enc(value)})

    def __delattr__(self, name):
        ask({"op": "delattr", "obj": enc(self), "name": name})

    def __call__(self, *args, **kwargs):
        return jcall(self.__dict__["_agentrl_jref"], args, kwargs)

    def _apply(self, fn, *args):
        return ask({"op": "apply", "fn": fn, "obj": enc(self), "args": [enc(a) for a in args]})

    def __iter__(self):
        got = self._apply("iter")
        return iter(got) if type(got) is tuple else got

    def __exit__(self, *exc):
        return self._apply("exit", *exc)


for _fn in ("str", "repr", "format", "bool", "len", "hash", "index", "int", "float", "next", "getitem", "setitem",
            "delitem", "contains", "enter", "eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs", "invert"):
    setattr(JObj, f"__{_fn}__", (lambda fn: lambda self, *a: self._apply(fn, *a))(_fn))
for _fn in wire.BINARY:
    setattr(JObj, f"__{_fn}__", (lambda fn: lambda self, other: self._apply(fn, other))(_fn))
    setattr(JObj, f"__r{_fn}__", (lambda fn: lambda self, other: self._apply("r" + fn, other))(_fn))


def mirror(ref: int) -> type:
    """The mirror type of the judge's class `ref`: named like it, with mirrored bases (an exception's reach a
    builtin exception, so the package can raise and catch it)."""
    if ref in MIRRORS:
        return MIRRORS[ref]
    meta = JMETA[ref]
    bases = []
    for b in meta.get("bases", []):
        if "builtin" in b:
            base = getattr(builtins, b["builtin"], None)
            if isinstance(base, type) and issubclass(base, BaseException):
                bases.append(base)
        elif "jref" in b:
            handle(b)
            bases.append(mirror(b["jref"]))
        elif "wref" in b:
            bases.append(OWN[b["wref"]])
    if not any(issubclass(b, JObj) for b in bases):
        bases.insert(0, JObj)
    space = {"_jref": ref, "__module__": meta.get("module", ""), "__qualname__": meta.get("qualname", meta["name"]),
             "__doc__": meta.get("doc")}
    try:
        cls = JMeta(meta["name"], tuple(bases), space)
    except TypeError:  # bases whose layouts do not mix: the first one alone
        cls = JMeta(meta["name"], (bases[0],), space)
    if issubclass(cls, BaseException):
        cls.args = property(lambda s: ask({"op": "getattr", "obj": enc(s), "name": "args"}))
        cls.__str__ = JObj.__str__
        cls.__repr__ = JObj.__repr__
    MIRRORS[ref] = cls
    return cls


def handle(v: dict):
    """The proxy of one of the judge's objects (its description comes with its first appearance)."""
    ref = v["jref"]
    if len(v) > 1:
        JMETA[ref] = v
    if ref in PROXIES:
        return PROXIES[ref]
    meta = JMETA[ref]
    if meta["kind"] == "class":
        proxy = mirror(ref)
    elif meta["kind"] == "twin":
        proxy = _twin(ref, meta)
    elif meta["kind"] == "function":
        proxy = _function(ref, meta)
    else:
        cls = JObj
        if "jref" in meta.get("cls", {}):
            handle(meta["cls"])
            cls = mirror(meta["cls"]["jref"])
        proxy = BaseException.__new__(cls) if issubclass(cls, BaseException) else object.__new__(cls)
        object.__setattr__(proxy, "_agentrl_jref", ref)
    PROXIES[ref] = proxy
    return proxy


def _twin(ref: int, meta: dict):
    """Our own copy of a standard library function or class the judge handed over by name (its `max`: ours is the
    same function); sent back, it is the judge's handle again. One we lack becomes a function calling the judge's."""
    try:
        module, qualname = str(meta.get("name")).split(":")
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:  # noqa: BLE001 - another Python: call the judge's
        return _function(ref, {"name": str(meta.get("name")).rpartition(".")[2]})
    if id(obj) in JFUNCS:  # one object, one handle
        return obj
    JFUNCS[id(obj)] = ref
    return obj


def _function(ref: int, meta: dict):
    """A real function with the judge function's name, doc and signature, whose body calls it: the package may
    inspect it (inspect.signature, __name__, __doc__) as it inspects any function, and store attributes on it."""
    params = meta.get("params") if meta.get("params") is not None else "*args, **kwargs"
    space = {"_call": lambda args, kwargs: jcall(ref, args, kwargs)}
    names = meta.get("call") or "(args, kwargs)"
    try:
        exec(f"def _f({params}):\n    return _call{names}\n", space)
    except SyntaxError:
        exec("def _f(*args, **kwargs):\n    return _call(args, kwargs)\n", space)
    fn = space["_f"]
    fn.__name__, fn.__qualname__ = meta.get("name") or "_f", meta.get("qualname") or meta.get("name") or "_f"
    fn.__doc__, fn.__module__ = meta.get("doc"), meta.get("module")
    defaults = meta.get("defaults")
    if defaults:
        fn.__defaults__ = tuple(dec(d) for d in defaults)
    kwdefaults = meta.get("kwdefaults")
    if kwdefaults:
        fn.__kwdefaults__ = {k: dec(d) for k, d in kwdefaults.items()}
    JFUNCS[id(fn)] = ref
    return fn


def jcall(ref: int, args, kwargs: dict):
    """Call the judge's object `ref`; this process's lists, dicts and sets among the arguments take the state the
    call left them in."""
    args = list(args)
    value, out = request({"op": "call", "obj": {"jref": ref}, "args": [enc(a) for a in args],
                          "kwargs": {k: enc(v) for k, v in kwargs.items()}})
    wire.write_back(out, wire.lent(args, kwargs), dec)
    return value


def judge_exception(body: dict) -> BaseException:
    """What the judge raised in a callback: a builtin exception, or the proxy of the judge's exception (a mirror
    instance); either way it carries the judge's handle, so passing it on re-raises the judge's own object."""
    cls = body.get("cls")
    if "wexc" in body:  # one of ours, raised by the test's code (`raise click.BadParameter(...)`)
        return OWN[body["wexc"]]
    args = tuple(dec(a) for a in body.get("args", []))
    if type(cls) is str:
        base = getattr(builtins, cls, None)
        try:
            e = base(*args) if isinstance(base, type) and issubclass(base, BaseException) else RuntimeError(body["msg"])
        except Exception:
            e = RuntimeError(body.get("msg"))
        e._agentrl_jexc = body.get("jexc")
        return e
    handle(cls)
    e = handle({"jref": body["jexc"], "kind": "object", "name": "", "cls": {"jref": cls["jref"]}})
    return e if isinstance(e, BaseException) else RuntimeError(body.get("msg"))


# ---------------------------------------------------------------------------------------------------- values
def enc(x, depth: int = 0, by_value: bool = False):
    """A value for the judge: exact immutable builtins (and tuples of values) by value, stdlib values (dates,
    decimals, paths) by their constructor's arguments, the judge's own objects as its handles, anything else (a
    list, dict or set too, so the package and the test share it) as a handle of ours; `by_value`: a list, dict or
    set by value (the new state of a container the judge lent a call, and every one with BY_VALUE)."""
    by_value = by_value or BY_VALUE
    t = type(x)
    if t in (type(None), bool, str, int, float, bytes):
        return wire.encode_exact(x)
    if isinstance(x, JMeta) and "_jref" in vars(x):
        return {"jref": vars(x)["_jref"]}
    if isinstance(x, JObj) and "_agentrl_jref" in x.__dict__:
        return {"jref": x.__dict__["_agentrl_jref"]}
    if id(x) in JFUNCS and PROXIES.get(JFUNCS[id(x)]) is x:
        return {"jref": JFUNCS[id(x)]}
    if isinstance(x, BaseException):  # an exception as a value (a CliRunner result's): the judge makes its stand-in
        return {"exc": raised(x)}
    if depth < wire.MAX_DEPTH and (t in (tuple, frozenset) or by_value and t in (list, set)):
        return {t.__name__: [enc(v, depth + 1, by_value) for v in x]}
    if depth < wire.MAX_DEPTH and by_value and t is dict:
        return {"dict": [[enc(k, depth + 1, by_value), enc(v, depth + 1, by_value)] for k, v in x.items()]}
    name = f"{t.__module__}.{t.__qualname__}"
    if name in STD_VALUES:
        try:
            return {"std": name, "args": enc(wire.std_args(x))}
        except Exception:  # noqa: BLE001 - one that does not encode (a date with another tzinfo): a handle
            pass
    std = wire.std_name(x)
    if std is not None:
        return {"stdname": std}
    return ref(x)


def ref(x) -> dict:
    """A handle of ours: its kind and name, and for an exception class its builtin base."""
    key = id(x)
    if key not in OWN_IDS:
        OWN_IDS[key] = len(OWN) + 1
        OWN[OWN_IDS[key]] = x
    kind = "module" if isinstance(x, type(sys)) else "class" if isinstance(x, type) else "object"
    name = x.__name__ if kind in ("module", "class") else type(x).__name__
    out = {"wref": OWN_IDS[key], "kind": kind, "name": str(name)[:200] or "?"}
    if kind == "object" and isinstance(x, _datetime.tzinfo):
        out["tz"] = True
    if kind == "class" and issubclass(x, BaseException):
        out["qualname"] = f"{getattr(x, '__module__', '')}.{getattr(x, '__qualname__', name)}"[:300]
        base = next((c for c in x.__mro__ if getattr(builtins, c.__name__, None) is c), Exception)
        out["exc"] = base.__name__ if issubclass(base, Exception) else "Exception"
    return out


def dec(v):
    """A value from the judge (exact values, its handles, stdlib values, or our handles coming back)."""
    if type(v) is dict:
        if "jref" in v:
            return handle(v)
        if "wref" in v:
            return OWN[v["wref"]]
        if "stdname" in v:
            return wire.std_object(v["stdname"])
        if "std" in v:
            return wire.std_value(v["std"], dec(v["args"]))
        (tag, body), = v.items()
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


def canon(x, depth: int = 0, seen=None):
    """What the judge compares with `==` and hashes: exact builtins as themselves (a builtin subclass as its builtin
    value), another object as ("<object>", module.qualname, its attributes' canonical forms); cycles cut."""
    seen = set() if seen is None else seen
    if depth > wire.MAX_DEPTH - 2:
        return "<deep>"
    t = type(x)
    if t in (type(None), bool, str, int, float, bytes):
        return x
    if isinstance(x, JObj) or isinstance(x, JMeta) or id(x) in JFUNCS:
        return ("<judge>", enc(x)["jref"])
    for base, plain in ((bool, bool), (int, int.__int__), (float, float.__float__), (str, str.__str__),
                        (bytes, lambda b: b"" + b)):
        if isinstance(x, base) and not isinstance(x, type):
            return plain(x)
    if isinstance(x, type) or callable(x) or isinstance(x, type(sys)):
        std = wire.std_name(x)
        return ("<stdname>", std) if std is not None else ("<ref>", ref(x)["wref"])
    if id(x) in seen:
        return "<cycle>"
    seen = seen | {id(x)}
    for base in (list, tuple, set, frozenset):
        if isinstance(x, base):
            items = [canon(v, depth + 1, seen) for v in base.__iter__(x)]
            return base(items) if base in (list, tuple) else base(map(wire.freeze, items))
    if isinstance(x, dict):
        return {wire.freeze(canon(k, depth + 1, seen)): canon(v, depth + 1, seen) for k, v in dict.items(x)}
    name = f"{t.__module__}.{t.__qualname__}"
    if name in STD_VALUES:
        try:
            return ("<std>", name, wire.std_args(x))
        except Exception:  # noqa: BLE001
            pass
    state = getattr(x, "__dict__", None)
    if type(state) is not dict:
        state = {s: getattr(x, s) for c in t.__mro__ for s in getattr(c, "__slots__", ()) if hasattr(x, s)}
    return ("<object>", name, {str(k): canon(v, depth + 1, seen) for k, v in sorted(state.items(), key=str)})


def _small(x, depth: int = 0) -> bool:
    """An exact value a look ahead may carry: a small scalar, or a short tuple of them (a dict's items)."""
    t = type(x)
    if t in (type(None), bool, float) or t is int and x.bit_length() <= 64:
        return True
    if t in (str, bytes):
        return len(x) <= 1000
    return t is tuple and depth < 2 and len(x) <= 8 and all(_small(v, depth + 1) for v in x)


def _ahead(it, skip, n):
    """The suite judge reading a builtin iterator ahead: first next(it) `skip` times (the items it has already
    served the test from its last look, and their StopIteration), then up to `n` of its next items without advancing
    it (stopping before one that is not a small exact value), and whether they are its last; None for no `n`, and
    where reading could run the package's code (any other iterator)."""
    if type(skip) is not int or type(n) is not int or not (0 <= skip <= wire.MAX_AHEAD + 1 and 0 <= n <= wire.MAX_AHEAD):
        raise ValueError("a look ahead out of its bounds")
    for _ in range(skip):
        next(it, None)
    if not n or type(it) not in wire.AHEAD or type(it) in wire.COPIED and it.__length_hint__() > 4 * wire.MAX_AHEAD:
        return None
    try:
        _, (seq,), *state = it.__reduce__()
    except Exception:  # noqa: BLE001 - a dict or set that changed size: next() says so, in its turn
        return None
    if type(seq) not in (list, tuple, str, bytes, range):  # a subclass's slicing would run the package's code
        return None
    start = state[0] if state else 0
    window = seq[start:start + n]
    items = tuple(itertools.takewhile(_small, window))
    return items, len(items) == len(window) and start + len(window) >= len(seq)


APPLY = {**wire.operations(), "ahead": _ahead, "canon": canon, "isinstance": isinstance, "issubclass": issubclass,
         "isinstance_of": lambda cls, x: isinstance(x, cls),
         "subclass_of": lambda cls, x: issubclass(x, cls) if isinstance(x, type) else False,
         "callable": callable, "dir": lambda o: tuple(sorted(str(n) for n in dir(o)))}


def _idval(val):
    """The id pytest would give `val` as a parameter (an enum's str, a class's or function's name), else None."""
    import enum
    import re

    if isinstance(val, enum.Enum):
        return str(val)
    if isinstance(val, re.Pattern):
        return val.pattern.encode("unicode_escape").decode("ascii") if isinstance(val.pattern, str) else None
    name = getattr(val, "__name__", None)
    return name if isinstance(name, str) else None


def _pickle(obj) -> bytes:
    import pickle

    return pickle.dumps(obj)


def _members(cls) -> list:
    """(name, kind) of what a class offers a subclass's super(): its functions, classmethods, staticmethods and
    properties."""
    import inspect

    out = []
    for name in dir(cls):
        try:
            attr = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        kind = ("classmethod" if isinstance(attr, classmethod) else "staticmethod" if isinstance(attr, staticmethod)
                else "property" if isinstance(attr, property) else "function" if callable(attr) else None)
        if kind:
            out.append((name, kind))
    return tuple(out)


APPLY["members"] = _members
APPLY["idval"] = _idval
APPLY["pickle"] = _pickle


def text_of(e: BaseException) -> str:
    """str(e), cut, made here: the judge never formats what the package raised."""
    try:
        text = str(e)
        return text[:MAX_TEXT] if type(text) is str else type(e).__name__
    except Exception:
        return f"<unprintable {type(e).__name__}>"


def raised(e: BaseException) -> dict:
    """An exception for the judge: the judge's own when it is one of the judge's, else its class, args, text and a
    handle of it (the judge's stand-in asks it for attributes)."""
    jexc = e.__dict__.get("_agentrl_jref") if isinstance(e, JObj) else getattr(e, "__dict__", {}).get("_agentrl_jexc")
    if type(jexc) is int:
        return {"jexc": jexc}
    cls = type(e)
    out = {"cls": cls.__name__ if getattr(builtins, cls.__name__, None) is cls else ref(cls), "msg": text_of(e),
           "wexc": ref(e)["wref"]}
    try:
        out["args"] = [enc(a) for a in e.args]
        json.dumps(out["args"])
    except Exception:
        out.pop("args", None)
    return out


# ---------------------------------------------------------------------------------------------------- serving
def do(req: dict):
    op = req.get("op")
    if op == "import":
        return importlib.import_module(req["name"])
    if op == "unpickle":  # a test's pickle round trip of one of ours: both halves here
        import pickle

        return pickle.loads(dec(req["data"]))
    obj = dec(req["obj"])
    if op == "getattr":
        return getattr(obj, req["name"])
    if op == "setattr":
        return setattr(obj, req["name"], dec(req["value"]))
    if op == "delattr":
        return delattr(obj, req["name"])
    if op == "call":
        args, kwargs = [dec(a) for a in req["args"]], {k: dec(v) for k, v in req["kwargs"].items()}
        try:
            return obj(*args, **kwargs)
        finally:  # the judge's lists, dicts and sets arrive as copies: their new state goes back
            OUT[:] = [[k, enc(v, by_value=True)] for k, v in [*enumerate(args), *kwargs.items()]
                      if type(v) in (list, dict, set)]
    if op == "subclass":  # a test's class deriving from ours: made here, its methods call back the judge
        namespace = {}
        for key, kind, value in req["members"]:
            if kind == "classmethod":
                namespace[key] = classmethod(dec(value))
            elif kind == "staticmethod":
                namespace[key] = staticmethod(dec(value))
            elif kind == "property":
                namespace[key] = property(*[dec(v) if v is not None else None for v in value])
            else:
                namespace[key] = dec(value)
        bases = (obj, *[dec(b) for b in req.get("more", [])])
        return type(obj)(req["name"], bases, namespace)
    if op == "base_call":  # a test's super() reaching our class: its attribute, with the test's target
        target, args = dec(req["target"]), [dec(a) for a in req["args"]]
        kwargs = {k: dec(v) for k, v in req["kwargs"].items()}
        attr = next((vars(c)[req["name"]] for c in obj.__mro__ if req["name"] in vars(c)), None)
        if isinstance(attr, classmethod):
            return attr.__func__(target, *args, **kwargs)
        if isinstance(attr, staticmethod):
            return attr.__func__(*args, **kwargs)
        if isinstance(attr, property):
            return attr.fget(target)
        return getattr(obj, req["name"])(target, *args, **kwargs)
    return APPLY[req["fn"]](obj, *[dec(a) for a in req["args"]])


OUT: list = []  # the changed arguments of the call being answered
DEPTH = [0]  # requests being served: a callback's request runs inside the package's call (a CliRunner's output)


def serve(req: dict) -> dict:
    """One request of the judge; at the outermost level, with the warnings and the output it caused."""
    if DEPTH[0]:
        OUT.clear()
        try:
            answer = {"ok": enc(do(req), by_value=req.get("fn") == "canon")}
        except BaseException as e:
            answer = {"raise": raised(e)}
        if OUT:
            answer["out"], OUT[:] = list(OUT), []
        return answer
    DEPTH[0] += 1
    try:
        return _serve_outermost(req)
    finally:
        DEPTH[0] -= 1


def _serve_outermost(req: dict) -> dict:
    stdout, stderr = sys.stdout, sys.stderr
    OUT.clear()
    out_buf, err_buf = Output(), Output()
    sys.stdout, sys.stderr = out_buf, err_buf
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            answer = {"ok": enc(do(req), by_value=req.get("fn") == "canon")}
        except BaseException as e:  # the package's exception (or the judge's, passing back through)
            answer = {"raise": raised(e)}
    if sys.stdout is out_buf:
        sys.stdout = stdout
    if sys.stderr is err_buf:
        sys.stderr = stderr
    if OUT:
        answer["out"], OUT[:] = list(OUT), []
    printed = [out_buf.getvalue()[:MAX_OUTPUT], err_buf.getvalue()[:MAX_OUTPUT]]
    if any(printed):
        answer["printed"] = printed
    if caught:
        answer["warnings"] = [[w.category.__name__ if getattr(builtins, w.category.__name__, None) is w.category
                               else ref(w.category), text_of(w.message) if isinstance(w.message, BaseException)
                               else str(w.message)[:MAX_TEXT]] for w in caught[:64]]
    return answer


def main() -> None:
    """Serve the judge until it closes stdin."""
    while True:
        line = PROTO_IN.readline()
        if not line:
            break
        try:
            data = (json.dumps(serve(json.loads(line))) + "\n").encode()
        except (ValueError, RecursionError) as e:
            data = (json.dumps({"raise": {"cls": "ValueError", "msg": f"unencodable result: {e}"[:MAX_TEXT]}})
                    + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(PROTO_OUT, view):]


main()
