"""The suite judge: runs INSIDE a judge sandbox as `python3 -I -B -c <wire.py + this file> <json args>`.

It runs a real package's own pytest suite (the task's hidden tests, its conftest and helpers) with pytest, and the
package is NOT here: importing it gives a module whose every use is a request to the worker (worker.py), which
runs the repository's code in the grading sandbox. So the tests' control flow, their assertions and pytest's report
are this process's alone, and nothing the repository's code does can reach them; what it can do is answer.
What a request may bring back is decided here: exact builtin values, a few standard library values by their
constructor's arguments (dates, decimals, paths), or a proxy (`Remote`) of the worker's object. `==`, `!=` and
hash() of a proxy compare canonical forms that the worker computes (its builtin value, or its class and attributes),
never an object's own `__eq__`, so an object "equal to anything" equals only what it holds. Truth, ordering, text,
length and `isinstance` are asked of the worker and accepted only as an exact bool, str or int. An exception of the
worker's arrives as the judge's stand-in (a subclass of its builtin base, named like it) holding the text the worker
made; the judge never formats the worker's objects. The worker may call back a test's objects that a test handed to
the package (a callback, a test's class); it may not read their internals (`__globals__`, `__dict__`, frames, code)
and is never handed a module, a frame, a traceback or code of the judge's.
Every answer is decoded by wire.py (bounded, hash-flood safe); a malformed one, or more handles or exception classes
than a worker may make, refuses the run.

Streams (see suite.py and Channel): this process writes `N` (restart the worker), `K G` (kill generation G, silent
past the call deadline), `W <json>` (a message for the worker, where the host relays) and, once, `R <json>` (the
report) on its own copy of fd 1, and reads the host's notices (`h ready G`, `h lost G <why>`) and, where the host
relays, `w <json>` (the worker's line) on its own copy of fd 0. With a direct channel the worker's lines come over a
FIFO pair instead. The tests get an empty stdin and their output is pytest's. Only the standard library and pytest
may be imported here: this file runs in the sandbox's Python.
"""

import builtins
import datetime
import importlib
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import select
import sys
import time
import types
import warnings

import agentrl.envs.swe.grading.wire as wire  # the host pastes wire.py in place of this line
import pytest

HOST_IN = os.dup(0)
PROTO_OUT = os.dup(1)
_null = os.open(os.devnull, os.O_RDWR)
os.dup2(_null, 0)
_LOG = os.open("/tmp/agentrl-suite-judge.log", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
for _fd in (1, 2):  # pytest's own output: its tail goes with the report
    os.dup2(_LOG, _fd)
MAX_HANDLES = 50_000  # the worker's objects one worker may hand out
MAX_OWN = 100_000  # the judge's objects one worker may hold handles to
MAX_EXC_CLASSES = 256  # exception and warning classes one worker may name
MAX_TEXT = 4000
STD_VALUES = wire.STD_VALUES
# Names of the judge's objects the worker may never read or write: what reaches the judge's code, globals, frames.
DENIED = frozenset({
    "__globals__", "__code__", "__closure__", "__builtins__", "__dict__", "__class__", "__bases__", "__base__",
    "__mro__", "__subclasses__", "__self__", "__func__", "__wrapped__", "__reduce__", "__reduce_ex__",
    "__getattribute__", "__getstate__", "__setstate__", "__init_subclass__", "__subclasshook__", "__loader__",
    "__spec__", "__traceback__", "__context__", "__cause__", "__objclass__", "__get__", "__set__", "__delete__",
    "__init__", "__new__", "__getattr__", "__setattr__", "__delattr__", "__defaults__", "__kwdefaults__",
    "__annotations__", "mro", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "tb_frame",
    "tb_next", "f_back", "f_globals", "f_locals", "f_builtins", "f_code"})
RAISABLE = (Exception, SystemExit, KeyboardInterrupt)  # what the worker's code may raise into a test (a
# KeyboardInterrupt ends pytest's session: no report, so the run is invalid)
NEVER = (types.FrameType, types.TracebackType, types.CodeType, types.ModuleType, types.CellType)


class JudgeError(BaseException):
    """A fault of the worker's side: no `except Exception` of a test catches it, so the test fails."""


class Refused(JudgeError):
    """The worker broke the protocol: the run is invalid (the report says why)."""


class WorkerLost(JudgeError):
    """The worker ended or missed its deadline: this test fails, the next starts a fresh worker."""


class ExactValueRequired(JudgeError):
    """An answer of the worker that is not the exact kind of value asked for."""


class State:
    refused = ""
    lost = 0
    calls = 0
    workers = 1


def _refuse(why: str) -> Refused:
    if not State.refused:
        State.refused = why[:300]
    return Refused(why)


def _write(tag: bytes, obj=None) -> None:
    data = tag + (b" " + json.dumps(obj).encode() if obj is not None else b"") + b"\n"
    view = memoryview(data)
    while view:
        view = view[os.write(PROTO_OUT, view):]


def _decode(line: bytes):
    try:
        return wire.loads(line)
    except wire.WireRefused as e:
        raise _refuse(f"{e}: {len(line)} bytes {line[:80]!r} ... {line[-40:]!r}") from None


class Channel:
    """The lines to and from the worker. Relayed (`link` None): the host passes each `W` line to the worker and
    hands back its answer as `w ...`. Direct: a FIFO pair per worker generation that the host shares between the
    two sandboxes (sandboxes/link.py), `req.G` to the worker and `ans.G` back; the host then only restarts the
    worker (`N`, answered `h ready G`), kills one that missed the call deadline (`K G`, sent here) and tells of a
    worker that ended (`h lost G why`). Either way a line is capped, and a notice of another generation is old."""

    def __init__(self, link: str | None, call_timeout: float) -> None:
        self.link, self.call_timeout = link, call_timeout
        self.host, self.pipe = bytearray(), bytearray()
        self.req = self.ans = -1

    def open(self, gen: int) -> None:
        """The FIFOs of worker generation `gen` (the host made them before it started that worker)."""
        if self.link is None:
            return
        for fd in (self.req, self.ans):
            if fd >= 0:
                os.close(fd)
        self.req = os.open(f"{self.link}/req.{gen}", os.O_RDWR | os.O_NONBLOCK)
        self.ans = os.open(f"{self.link}/ans.{gen}", os.O_RDWR | os.O_NONBLOCK)
        self.pipe.clear()

    def send(self, msg: dict, gen: int) -> str:
        """Write a request; "" once written, else why the worker is lost (its stdin full past the deadline)."""
        if self.link is None:
            _write(b"W", msg)
            return ""
        view = memoryview(json.dumps(msg).encode() + b"\n")
        deadline = time.monotonic() + self.call_timeout
        while view:
            try:
                view = view[os.write(self.req, view):]
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    return self._give_up(gen)
                select.select([], [self.req], [], left)
        return ""

    def receive(self, gen: int):
        """("w", the worker's decoded line) or ("h", why the worker is lost)."""
        deadline = time.monotonic() + self.call_timeout
        while True:
            if self.link is not None:
                line = self._take(self.pipe)
                if line is not None:
                    return "w", _decode(line)
            note = self._take(self.host)
            if note is not None:
                if self.link is None and note.startswith(b"w "):
                    return "w", _decode(note[2:])
                kind, _, rest = note.partition(b" ")
                word, _, rest = rest.partition(b" ")
                number, _, why = rest.partition(b" ")
                if kind == b"h" and word == b"lost" and number == str(gen).encode():
                    if self.link is not None and self._drain():  # what it wrote before it ended comes first
                        self.host[:0] = note + b"\n"
                        continue
                    return "h", why.decode("utf-8", "replace")
                continue  # a notice of an older worker
            if self.link is None:  # the host keeps the deadline
                ready = select.select([HOST_IN], [], [])[0]
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    return "h", self._give_up(gen)
                ready = select.select([HOST_IN, self.ans], [], [], left)[0]
            for fd in ready:
                if fd == HOST_IN:
                    self._read_host()
                else:
                    self.pipe.extend(os.read(fd, 1 << 16))

    def wait_ready(self, gen: int) -> None:
        """After `N`: the host's `h ready G`, then that generation's FIFOs."""
        while True:
            note = self._take(self.host)
            if note == b"h ready %d" % gen:
                return self.open(gen)
            if note is None:
                self._read_host()

    def _read_host(self) -> None:
        chunk = os.read(HOST_IN, 1 << 16)
        if not chunk:
            raise _refuse("the host closed the judge's input")
        self.host.extend(chunk)

    def _drain(self) -> bool:
        """Read what the FIFO holds without waiting; True when there was something."""
        got = False
        while len(self.pipe) <= wire.MAX_LINE + 8:
            try:
                chunk = os.read(self.ans, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            self.pipe.extend(chunk)
            got = True
        return got

    def _give_up(self, gen: int) -> str:
        _write(b"K %d" % gen)
        return f"no answer within {self.call_timeout:.0f}s"

    @staticmethod
    def _take(buf: bytearray) -> bytes | None:
        end = buf.find(b"\n", 0, wire.MAX_LINE + 9)
        if end < 0:
            if len(buf) > wire.MAX_LINE + 8:
                raise _refuse("a line past the cap")
            return None
        line = bytes(buf[:end])
        del buf[:end + 1]
        return line


# ---------------------------------------------------------------------------------------------------- the worker
class Link:
    """The worker (one generation at a time): the judge's objects it holds handles to, the proxies of its own."""

    def __init__(self, channel: Channel) -> None:
        self.up, self.gen, self.channel = True, 1, channel
        channel.open(1)
        self.shadows: dict = {}  # the worker's class made for a test's class -> that class (ShadowMeta)
        self.bases: dict = {}  # the worker's class -> the shadow base a test's class derives from
        self.exc_by_name: dict = {}  # the worker's exception classes by qualified name, kept across workers
        self._reset()

    def _reset(self) -> None:
        self.last_out: list = []
        self.behind: dict = {}  # id -> iterator proxy: items served from a look ahead the worker has yet to skip
        self.own: dict = {}
        self.own_ids: dict = {}
        self.sent_meta: set = set()
        self.remotes: dict = {}
        self.exc_classes = 0

    def restart(self) -> None:
        _write(b"N")
        self.up, self.gen = True, self.gen + 1
        self.channel.wait_ready(self.gen)
        self._reset()
        State.workers += 1  # the tests' modules of the old worker re-resolve their attributes (Remote._path)

    def request(self, msg: dict):
        """Send `msg`; serve the worker's callbacks until its answer; the decoded value, or raise its exception."""
        if State.refused:
            raise Refused(State.refused)
        if not self.up:
            raise WorkerLost("the worker is gone")
        if self.behind:
            self.catch_up()
        State.calls += 1
        lost = self.channel.send(msg, self.gen)
        while not lost:
            kind, body = self.channel.receive(self.gen)
            if kind == "h":
                lost = body
                break
            if type(body) is not dict:
                raise _refuse("a message that is not an object")
            if "ok" in body or "raise" in body:
                return self.answer(body)
            lost = self.channel.send(self.serve(body), self.gen)
        self.up = False
        State.lost += 1
        raise WorkerLost(lost.strip() or "the worker ended")

    def catch_up(self) -> None:
        """Before anything else is asked of the worker: its iterators skip the items a look ahead already served the
        test, so the package's code sees each where the test left it (Remote.__next__)."""
        behind, self.behind = self.behind, {}
        for proxy in behind.values():
            ahead = object.__getattribute__(proxy, "_ahead")
            if ahead and ahead.served:
                proxy._ask("apply", fn="ahead", args=[ahead.served, 0])

    # ---- answers
    def answer(self, body: dict):
        if set(body) - {"ok", "raise", "printed", "warnings", "out"} or ("ok" in body) == ("raise" in body):
            raise _refuse("an answer that is not {ok} or {raise}")
        self.side_effects(body)
        self.last_out = body.get("out", [])
        if type(self.last_out) is not list:
            raise _refuse("a malformed changed-arguments list")
        if "ok" in body:
            return self.decode(body["ok"])
        raise self.exception(body["raise"])

    def side_effects(self, body: dict) -> None:
        """What the package printed and warned while answering: to this process's stdout/stderr (the tests'
        capsys) and warnings (their pytest.warns)."""
        printed = body.get("printed")
        if printed is not None:
            if type(printed) is not list or len(printed) != 2 or any(type(p) is not str for p in printed):
                raise _refuse("malformed output")
            sys.stdout.write(printed[0][:1 << 20])
            sys.stderr.write(printed[1][:1 << 20])
        caught = body.get("warnings")
        if caught is not None:
            if type(caught) is not list or len(caught) > 64:
                raise _refuse("malformed warnings")
            for item in caught:
                if type(item) is not list or len(item) != 2 or type(item[1]) is not str:
                    raise _refuse("a malformed warning")
                category = self.warning_class(item[0])
                warnings.warn(item[1][:MAX_TEXT], category, stacklevel=4)

    def warning_class(self, cls) -> type:
        if type(cls) is str:
            base = wire.builtin_exception(cls, Warning)
            if base is None:
                raise _refuse(f"a warning that is not a builtin Warning: {cls[:40]!r}")
            return base
        got = self.decode(cls)
        if type(got) is Remote or not (isinstance(got, type) and issubclass(got, Warning)):
            raise _refuse("a warning class that is not a Warning")
        return got

    def decode(self, v):
        try:
            return wire.Decoder(self.handle, special=self.special).value(v)
        except wire.WireRefused as e:
            raise _refuse(str(e)) from None

    def special(self, v: dict):
        """A stdlib value or name the worker sent ({"std": name, "args"} / {"stdname": "module:qualname"}), or an
        exception as a value ({"exc": ...}, made like a raised one)."""
        if "exc" in v:
            if set(v) != {"exc"}:
                raise _refuse("a malformed exception value")
            return self.exception(v["exc"])
        if "std" in v:
            if set(v) != {"std", "args"} or v["std"] not in STD_VALUES:
                raise _refuse("a malformed stdlib value")
            args = self.decode(v["args"])
            if type(args) is not tuple or not all(type(a) in (int, float, str, type(None), RemoteTZ) for a in args):
                raise _refuse("a stdlib value with arguments that are not plain")
            try:
                return wire.std_value(v["std"], args, tz_ok=lambda tz: type(tz) is RemoteTZ)
            except (TypeError, ValueError, ArithmeticError, OverflowError):
                raise _refuse(f"arguments that do not make a {v['std']}") from None
        if set(v) != {"stdname"}:
            raise _refuse("a malformed stdlib name")
        try:  # an entry of the table, by its exact name: nothing is looked up by attribute
            return wire.std_object(v["stdname"])
        except wire.WireRefused as e:
            raise _refuse(str(e)) from None

    def handle(self, v: dict):
        """The judge's own object coming back ({"jref"}), or a proxy of the worker's ({"wref", kind, name, exc})."""
        if "jref" in v:
            if set(v) != {"jref"} or type(v["jref"]) is not int or v["jref"] not in self.own:
                raise _refuse("a handle of the judge's that it never gave")
            return self.own[v["jref"]]
        ref, kind, name, exc, qualname = v.get("wref"), v.get("kind"), v.get("name"), v.get("exc"), v.get("qualname")
        tz = v.get("tz")
        if (type(ref) is not int or not 0 < ref < 1 << 31 or kind not in ("object", "class", "module")
                or type(name) is not str or not 0 < len(name) <= 200 or tz not in (None, True)
                or set(v) - {"wref", "kind", "name", "exc", "qualname", "tz"} or exc is not None and kind != "class"
                or qualname is not None and (type(qualname) is not str or len(qualname) > 300)):
            raise _refuse("a malformed handle")
        meta = (kind, name, exc) if tz is None else (kind, name, "tz")
        if ref in self.shadows:
            return self.shadows[ref]
        if ref in self.remotes:
            proxy = self.remotes[ref]
            if _meta(proxy) != meta:
                raise _refuse("a handle that changed its kind")
            return proxy
        if len(self.remotes) >= MAX_HANDLES:
            raise _refuse(f"more than {MAX_HANDLES} handles from one worker")
        if exc is not None:
            base = wire.builtin_exception(exc, Exception)
            if base is None or not name.isidentifier():
                raise _refuse(f"an exception class based on {str(exc)[:40]!r}")
            if self.exc_classes >= MAX_EXC_CLASSES:
                raise _refuse(f"more than {MAX_EXC_CLASSES} exception classes from one worker")
            self.exc_classes += 1
            key = (qualname, exc)
            proxy = self.exc_by_name.get(key) if type(qualname) is str else None
            if proxy is None or len(self.exc_by_name) > MAX_EXC_CLASSES:
                proxy = type(name, (stand_in(base),), {"__module__": "worker", "__new__": _new_worker_exc})
                if type(qualname) is str:
                    self.exc_by_name[key] = proxy
            proxy._agentrl_meta, proxy._agentrl_link, proxy._agentrl_ref = meta, self, ref
        elif tz:
            proxy = RemoteTZ(Remote(self, ref, meta))
        else:
            proxy = Remote(self, ref, meta)
        self.remotes[ref] = proxy
        return proxy

    def exception(self, body) -> BaseException:
        """The judge's exception for what the worker raised: the judge's own when one of its exceptions went through
        the worker, else a stand-in with the worker's text and a proxy of the worker's exception for its attributes."""
        if type(body) is not dict or set(body) - {"cls", "args", "msg", "jexc", "wexc"}:
            raise _refuse("a malformed exception")
        if "jexc" in body:
            e = self.decode({"jref": body["jexc"]})
            if not isinstance(e, BaseException):
                raise _refuse("a raised handle that is not an exception")
            return e
        cls, msg = body.get("cls"), body.get("msg")
        if type(msg) is not str:
            raise _refuse("an exception without its text")
        if type(cls) is str:
            base = wire.builtin_exception(cls)
            if base is None or not issubclass(base, RAISABLE):
                raise _refuse(f"an exception that is not a builtin Exception: {cls[:40]!r}")
            cls = stand_in(base)
        else:
            cls = self.decode(cls)
            if type(cls) is Remote or not (isinstance(cls, type) and "_agentrl_meta" in vars(cls)):
                raise _refuse("an exception class that is not one of the worker's")
        args = self.decode({"tuple": body["args"]}) if "args" in body else (msg[:MAX_TEXT],)
        e = make_exception(cls, args, msg[:MAX_TEXT])
        if "wexc" in body:
            if type(body["wexc"]) is not int:
                raise _refuse("a malformed exception handle")
            e.__dict__["_agentrl_wexc"] = self.handle({"wref": body["wexc"], "kind": "object",
                                                       "name": cls.__name__})
        return e

    # ---- what the judge sends
    def encode(self, x, depth: int = 0):
        """A judge value for the worker: exact values by value, stdlib classes and values by name and arguments,
        the worker's proxies as its handles, the judge's other objects by handle (never a module, frame or code)."""
        t = type(x)
        if t in (type(None), bool, str, int, float, bytes):
            return wire.encode_exact(x)
        if t is RemoteTZ:
            x, t = x.remote, Remote
        if t is Remote:
            if object.__getattribute__(x, "_link") is not self or object.__getattribute__(x, "_gen") != self.gen:
                raise WorkerLost("an object of a worker that is gone")
            return {"wref": object.__getattribute__(x, "_ref")}
        if isinstance(x, type) and vars(x).get("_agentrl_link") is self:
            return {"wref": vars(x)["_agentrl_ref"]}
        if isinstance(x, ShadowMeta) and "_agentrl_wsub" in vars(x):
            return self.encode(vars(x)["_agentrl_wsub"], depth)
        if isinstance(x, RemoteModule):
            return self.encode(object.__getattribute__(x, "_agentrl_remote"), depth)
        if isinstance(x, BaseException) and isinstance(x.__dict__.get("_agentrl_wexc"), Remote):
            return self.encode(x.__dict__["_agentrl_wexc"], depth)
        if depth < wire.MAX_DEPTH and t in (list, tuple, set, frozenset):
            return {t.__name__: [self.encode(v, depth + 1) for v in x]}
        if depth < wire.MAX_DEPTH and t is dict:
            return {"dict": [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in x.items()]}
        name = f"{t.__module__}.{t.__qualname__}"
        if name in STD_VALUES:
            try:
                return {"std": name, "args": self.encode(wire.std_args(x), depth + 1)}
            except (TypeError, ValueError):
                pass
        std = wire.std_name(x)
        if std is not None:
            return {"stdname": std}
        if isinstance(x, NEVER):
            raise TypeError(f"the judge does not hand a {t.__name__} to the repository's code")
        return self.own_handle(x, depth)

    def own_ref(self, x) -> int:
        key = id(x)
        if key not in self.own_ids:
            if len(self.own) >= MAX_OWN:
                raise _refuse(f"the worker asked for more than {MAX_OWN} of the judge's objects")
            self.own_ids[key] = len(self.own) + 1
            self.own[self.own_ids[key]] = x
        return self.own_ids[key]

    def own_handle(self, x, depth: int) -> dict:
        """A handle of the judge's object `x`, described the first time (a function's signature, for the package's
        inspect; a class's bases, for its isinstance)."""
        n = self.own_ref(x)
        if n in self.sent_meta:
            return {"jref": n}
        self.sent_meta.add(n)
        twin = _twin_name(x)
        if twin is not None:  # the worker uses its own copy (toolz inspects `max` as `max`); back, it is this handle
            return {"jref": n, "kind": "twin", "name": twin}
        out = {"jref": n, "kind": "object", "name": type(x).__name__[:200]}
        if isinstance(x, type):
            out.update(kind="class", name=x.__name__[:200], qualname=str(getattr(x, "__qualname__", ""))[:400],
                       module=str(getattr(x, "__module__", ""))[:200], doc=_doc(x))
            if depth < 8:
                out["bases"] = [self.encode(b, depth + 1) if getattr(builtins, b.__name__, None) is not b
                                else {"builtin": b.__name__} for b in x.__bases__ if b is not object]
        elif isinstance(x, (types.FunctionType, types.MethodType)):
            out.update(kind="function", name=str(x.__name__)[:200], qualname=str(x.__qualname__)[:400],
                       module=str(x.__module__)[:200], doc=_doc(x))
            out.update(_signature(x, self, depth))
        else:
            out["cls"] = self.encode(type(x), depth + 1)
        return out

    def raised(self, e: BaseException) -> dict:
        """A judge exception for the worker (a test's callback raised it): its class, args, text; `jexc` brings the
        same object back, `wexc` is the worker's own exception that a test raised (`raise click.UsageError()`)."""
        wexc = e.__dict__.get("_agentrl_wexc")
        if isinstance(wexc, Remote):
            return {"wexc": object.__getattribute__(wexc, "_ref"), "cls": "Exception", "msg": ""}
        cls = type(e)
        out = {"cls": cls.__name__ if getattr(builtins, cls.__name__, None) is cls else self.encode(cls),
               "msg": _text_of(e), "jexc": self.own_ref(e)}
        try:
            out["args"] = [self.encode(a) for a in e.args]
        except JudgeError:
            raise
        except Exception:  # noqa: BLE001 - args that do not encode: the worker gets the text
            pass
        return out

    # ---- the worker's callbacks
    def serve(self, req: dict) -> dict:
        """Do what the worker asks of an object a test handed to the package; the answer is a message for it."""
        sent: list = []
        try:
            result = self.do(req, sent)
            out = {"ok": self.encode(result)}
            if sent:
                out["out"] = [[k, self.encode(v)] for k, v in sent]
            return out
        except JudgeError:
            raise
        except BaseException as e:  # noqa: BLE001 - a test's exception (KeyboardInterrupt too), for the package
            return {"raise": self.raised(e)}

    def do(self, req: dict, sent: list):
        """A callback: `obj` must be a handle this judge issued to this worker ({"jref": n}), never a name, a value
        or anything the judge did not hand out; its arguments are decoded like any answer (values, table classes,
        the worker's proxies, the judge's own handles)."""
        op, ref = req.get("op"), req.get("obj")
        if type(ref) is not dict or set(ref) != {"jref"} or type(ref["jref"]) is not int or ref["jref"] not in self.own:
            raise _refuse("a callback on something the judge never handed out")
        obj = self.own[ref["jref"]]
        if op in ("getattr", "setattr", "delattr"):
            name = req.get("name")
            if type(name) is not str or name in DENIED or name.startswith("_agentrl"):
                raise AttributeError(f"the judge does not give the repository's code {str(name)[:40]!r}")
            if op == "getattr":
                return getattr(obj, name)
            if op == "setattr":
                return setattr(obj, name, self.decode(req.get("value")))
            return delattr(obj, name)
        if op == "call":
            args = [self.decode(a) for a in req.get("args") or []]
            kwargs = {str(k): self.decode(v) for k, v in (req.get("kwargs") or {}).items()}
            try:
                return obj(*args, **kwargs)
            finally:
                sent += [[k, v] for k, v in [*enumerate(args), *kwargs.items()] if type(v) in (list, dict, set)]
        if op == "apply" and req.get("fn") in APPLY:
            return APPLY[req["fn"]](obj, *[self.decode(a) for a in req.get("args") or []])
        raise _refuse(f"an unknown request {str(op)[:40]!r}")


def _doc(x) -> str | None:
    doc = x.__doc__ if isinstance(getattr(x, "__doc__", None), str) else None
    return doc[:20000] if doc else None


def _signature(fn, link: Link, depth: int) -> dict:
    """Parameters, the call of the judge's function they make, and defaults, for the worker's stand-in function."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {}
    params, call_pos, call_kw, defaults, kwdefaults = [], [], [], [], {}
    seen_star = False
    for p in sig.parameters.values():
        if p.kind is p.POSITIONAL_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD:
            params.append(p.name)
            call_pos.append(p.name)
            if p.default is not p.empty:
                defaults.append(link.encode(p.default, depth + 1))
        elif p.kind is p.VAR_POSITIONAL:
            params.append("*" + p.name)
            call_pos.append("*" + p.name)
            seen_star = True
        elif p.kind is p.KEYWORD_ONLY:
            if not seen_star:
                params.append("*")
                seen_star = True
            params.append(p.name)
            call_kw.append(f"{p.name!r}: {p.name}")
            if p.default is not p.empty:
                kwdefaults[p.name] = link.encode(p.default, depth + 1)
        else:
            params.append("**" + p.name)
            call_kw.append("**" + p.name)
    if any(p.kind is p.POSITIONAL_ONLY for p in sig.parameters.values()):
        last = max(i for i, p in enumerate(sig.parameters.values()) if p.kind is p.POSITIONAL_ONLY)
        params.insert(last + 1, "/")
    if not all(n.lstrip("*").isidentifier() or n in ("/", "*") for n in params):
        return {}
    return {"params": ", ".join(params), "call": f"(({', '.join(call_pos)}{',' if call_pos else ''}), "
                                                 f"{{{', '.join(call_kw)}}})",
            "defaults": defaults, "kwdefaults": kwdefaults}


APPLY = wire.operations()
# The worker's iterators whose items are read ahead (wire.AHEAD, by name): a test's `set(ordered_set)` takes one
# request per look, not one per item. Items of a first look (each next one doubles, to wire.MAX_AHEAD).
AHEAD_NAMES = frozenset(t.__name__ for t in wire.AHEAD)
AHEAD_FIRST = 64


class Ahead:
    """What was read ahead of one iterator of the worker's: its items, how many the test was served, the request
    count when read (it holds while nothing else has been asked of the worker, as nothing else can have run there),
    whether they are the last, and the size of the next look."""

    __slots__ = ("items", "served", "calls", "ended", "size")

    def __init__(self) -> None:
        self.items, self.served, self.calls, self.ended, self.size = (), 0, -1, False, AHEAD_FIRST


# ---------------------------------------------------------------------------------------------------- proxies
def _meta(proxy):
    if type(proxy) is Remote:  # first: isinstance() would ask a proxy for its __class__
        return object.__getattribute__(proxy, "_meta")
    if type(proxy) is RemoteTZ:
        return object.__getattribute__(proxy.remote, "_meta")
    return vars(proxy).get("_agentrl_meta")


class RemoteTZ(datetime.tzinfo):
    """The package's own tzinfo (isodate's UTC, FixedOffset): a real tzinfo here, so a test's
    `time(10, tzinfo=UTC)` and aware comparisons work; its offset, name and dst are asked of the worker and must
    come back as a timedelta (or None) and a str."""

    def __init__(self, remote) -> None:
        self.remote = remote

    def _ask(self, what: str, dt, kinds: tuple):
        got = getattr(self.remote, what)(dt)
        if type(got) not in kinds:
            raise ExactValueRequired(f"{what}() of the package's tzinfo gave a {type(got).__name__}")
        return got

    def utcoffset(self, dt):
        return self._ask("utcoffset", dt, (datetime.timedelta, type(None)))

    def dst(self, dt):
        return self._ask("dst", dt, (datetime.timedelta, type(None)))

    def tzname(self, dt):
        return self._ask("tzname", dt, (str, type(None)))

    def __repr__(self) -> str:
        return repr(self.remote)

    def __eq__(self, other):
        return self.remote == other.remote if type(other) is RemoteTZ else NotImplemented

    def __hash__(self) -> int:
        return hash(self.remote)


class Remote(wire.Proxy):
    """A proxy of the worker's object (wire.Proxy: every builtin operation asks the worker). Its policy: `==` with
    a test's value compares canonical forms; truth, hash and ordering are asked of the worker as exact values."""

    __slots__ = ("_link", "_ref", "_meta", "_gen", "_path", "_ahead", "__weakref__")
    _inexact = ExactValueRequired

    def __init__(self, link: Link, ref: int, meta: tuple, path: tuple | None = None) -> None:
        for k, v in (("_link", link), ("_ref", ref), ("_meta", meta), ("_gen", link.gen), ("_path", path),
                     ("_ahead", None)):
            object.__setattr__(self, k, v)

    def _ask(self, op: str, **fields):
        link = object.__getattribute__(self, "_link")
        if object.__getattribute__(self, "_gen") != link.gen and link.up:
            self._reresolve()
        if object.__getattribute__(self, "_gen") != link.gen or not link.up:
            raise WorkerLost("an object of a worker that is gone")
        return link.request({"op": op, "obj": {"wref": object.__getattribute__(self, "_ref")}, **fields})

    def _reresolve(self) -> None:
        """A module's attribute a test bound at import (`from click import Command`), from a worker that is gone:
        the same path in the new worker."""
        path = object.__getattribute__(self, "_path")
        if not path:
            return
        link = object.__getattribute__(self, "_link")
        got = link.request({"op": "import", "name": path[0]})
        for name in path[1:]:
            if type(got) is not Remote:
                return
            got = got._ask("getattr", name=name)
        if type(got) is Remote:
            for k in ("_ref", "_meta", "_gen"):
                object.__setattr__(self, k, object.__getattribute__(got, k))

    @property
    def __class__(self):
        """A test's own class when this is an instance of one (so its `super()` works), else Remote: the judge
        never lets a proxy pass for one of its own types (ABC and isinstance checks stay local)."""
        if not object.__getattribute__(self, "_link").shadows:
            return Remote  # no test's class derives from the package's, so none of its objects is a test's instance
        got = self._ask("getattr", name="__class__")
        if type(got) is Remote:  # the worker's own class (most answers): isinstance() would ask it for its class
            return Remote
        return got if isinstance(got, ShadowMeta) else Remote

    @property
    def __doc__(self):
        return self._ask("getattr", name="__doc__")

    @property
    def __module__(self):
        return self._ask("getattr", name="__module__")

    def __reduce_ex__(self, protocol):
        data = _exact(self._apply("pickle"), bytes, "pickle")
        return (_unpickle, (data,))

    def _apply(self, fn: str, *args):
        link = object.__getattribute__(self, "_link")
        return self._ask("apply", fn=fn, args=[link.encode(a) for a in args])

    def __getattr__(self, name: str):
        if name in ("__mro_entries__", "__length_hint__", "__fspath__", "__array__", "__iter__", "__copy__",
                    "__deepcopy__", "__getstate__", "__reduce__"):
            raise AttributeError(name)
        got = self._ask("getattr", name=name)
        path = object.__getattribute__(self, "_path")
        if path and type(got) is Remote and object.__getattribute__(got, "_path") is None:
            object.__setattr__(got, "_path", (*path, name))
        return got

    def __setattr__(self, name: str, value) -> None:
        self._ask("setattr", name=name, value=object.__getattribute__(self, "_link").encode(value))

    def __delattr__(self, name: str) -> None:
        self._ask("delattr", name=name)

    def __call__(self, *args, **kwargs):
        link = object.__getattribute__(self, "_link")
        result = self._ask("call", args=[link.encode(a) for a in args],
                           kwargs={k: link.encode(v) for k, v in kwargs.items()})
        try:  # the test's lists, dicts and sets went as copies: they take the new state
            wire.write_back(link.last_out, wire.lent(args, kwargs), link.decode)
        except wire.WireRefused as e:
            raise _refuse(str(e)) from None
        return result

    def __next__(self):
        """The iterator's next item. A builtin iterator's are read ahead, many per request, and served from there
        while nothing else is asked of the worker; once something is, the worker's iterator first skips what was
        served (Link.catch_up), and the items come one per request until the test takes two in a row."""
        ahead = object.__getattribute__(self, "_ahead")
        if ahead is None:
            ahead = Ahead() if object.__getattribute__(self, "_meta")[1] in AHEAD_NAMES else False
            object.__setattr__(self, "_ahead", ahead)
        if ahead is False:
            return self._apply("next")
        link = object.__getattribute__(self, "_link")
        in_a_row = ahead.calls == State.calls  # nothing else was asked of the worker since this iterator's last ask
        if in_a_row:
            if ahead.served < len(ahead.items):
                ahead.served += 1
                link.behind[id(self)] = self
                return ahead.items[ahead.served - 1]
            if ahead.ended:
                if ahead.served == len(ahead.items):
                    ahead.served += 1  # the worker's iterator raises its StopIteration too, when it catches up
                    link.behind[id(self)] = self
                raise StopIteration
        link.behind.pop(id(self), None)
        skip, fresh = ahead.served if in_a_row else 0, ahead.calls < 0  # not in a row: Link.catch_up skipped them
        ahead.items, ahead.served, ahead.ended = (), 0, False
        if not (in_a_row or fresh):
            ahead.size = AHEAD_FIRST
            try:
                return self._apply("next")
            finally:
                ahead.calls = State.calls
        got = self._apply("ahead", skip, ahead.size)
        if got is not None and (type(got) is not tuple or len(got) != 2 or type(got[0]) is not tuple
                                or len(got[0]) > ahead.size or type(got[1]) is not bool or not _plain(got[0])):
            raise _refuse("a malformed look ahead")
        if got is None or not got[0] and not got[1]:  # not readable ahead, or its next item is not a small value
            object.__setattr__(self, "_ahead", False)
            return self._apply("next")
        ahead.items, ahead.ended, ahead.calls = got[0], got[1], State.calls
        ahead.size = min(2 * ahead.size, wire.MAX_AHEAD)
        return self.__next__()

    def __instancecheck__(self, obj) -> bool:
        return _exact(self._apply("isinstance_of", obj), bool, "isinstance()")

    def __subclasscheck__(self, cls) -> bool:
        return _exact(self._apply("subclass_of", cls), bool, "issubclass()")

    def __format__(self, spec: str) -> str:
        return _exact(self._apply("format", spec), str, "format()")

    def __bool__(self) -> bool:
        return _exact(self._apply("bool"), bool, "bool()")

    def __index__(self) -> int:
        return _exact(self._apply("index"), int, "index()")

    def __enter__(self):
        return self._apply("enter")

    def __exit__(self, *exc):
        return self._apply("exit", *[None if isinstance(e, types.TracebackType) else e for e in exc])

    def __eq__(self, other):
        if type(other) is Remote:  # both the package's: its own equality (the worker made both sides anyway)
            return _exact(self._apply("eq", other), bool, "`==`")
        link = object.__getattribute__(self, "_link")
        return canonical(self, link) == canonical(other, link)

    def __ne__(self, other):
        if type(other) is Remote:
            return _exact(self._apply("ne", other), bool, "`!=`")
        link = object.__getattribute__(self, "_link")
        return canonical(self, link) != canonical(other, link)

    def __hash__(self) -> int:
        return _exact(self._apply("hash"), int, "hash()")  # only where it is stored: `==` decides equality

    def __mro_entries__(self, bases):
        """A test's class deriving from one of the repository's: derive from its shadow base here (see ShadowMeta)."""
        if object.__getattribute__(self, "_meta")[0] != "class":
            raise TypeError("a test's class can derive only from a class")
        return (shadow_base(self),)


def canonical(x, link: Link, depth: int = 0):
    """What `==` compares: a worker object's canonical form (computed by the worker, an exact value), a judge
    value's own structure with the worker's objects inside replaced by theirs, a judge object's identity."""
    if depth > wire.MAX_DEPTH:
        raise ExactValueRequired("a value nested too deep to compare")
    t = type(x)
    if t is Remote:
        got = x._apply("canon")
        if not _plain(got):
            raise ExactValueRequired("a canonical form that is not an exact value")
        return got
    if t in (type(None), bool, str, int, float, bytes):
        return x
    if t in (list, tuple):
        return t(canonical(v, link, depth + 1) for v in x)
    if t in (set, frozenset):
        return t(wire.freeze(canonical(v, link, depth + 1)) for v in x)
    if t is dict:
        return {wire.freeze(canonical(k, link, depth + 1)): canonical(v, link, depth + 1) for k, v in x.items()}
    if isinstance(x, type) and vars(x).get("_agentrl_link") is link:
        return ("<ref>", vars(x)["_agentrl_ref"])
    std = wire.std_name(x)
    if std is not None:
        return ("<stdname>", std)
    name = f"{t.__module__}.{t.__qualname__}"
    if name in STD_VALUES:
        try:
            return ("<std>", name, wire.std_args(x))
        except (TypeError, ValueError):
            pass
    return ("<judge>", link.own_ref(x))


SHADOW_SKIP = frozenset({"__class__", "__dict__", "__init_subclass__", "__new__", "__getattribute__", "__setattr__",
                         "__getattr__", "__delattr__", "__subclasshook__", "__weakref__", "__module__", "__doc__",
                         "__slots__", "__reduce__", "__reduce_ex__", "__sizeof__", "__class_getitem__", "__dir__",
                         "__format__", "__getstate__", "__qualname__", "__annotations__"})


class ShadowMeta(type):
    """A test's class that derives from one of the repository's (`class MyType(click.ParamType)`): the class is
    made here, so the test's methods, `super()` and `isinstance` work as written, and a twin is made in the worker
    (its methods call the test's back), so the package's code takes it as its own. Instances live in the worker;
    `super()` from a test's method reaches the repository's class through the shadow base's forwarders."""

    def __new__(mcls, name, bases, ns, **kwargs):
        cls = super().__new__(mcls, name, bases, ns, **kwargs)
        if "_agentrl_wbase" in ns:
            return cls
        link = LINK[0]
        wbases = [vars(b)["_agentrl_wsub"] if "_agentrl_wsub" in vars(b) else vars(b)["_agentrl_wbase"]
                  for b in bases if isinstance(b, ShadowMeta)]
        members = []
        for key, value in ns.items():
            if key in SHADOW_SKIP and key != "__doc__" or key == "__classcell__":
                continue
            if isinstance(value, (classmethod, staticmethod)):
                members.append([key, type(value).__name__, link.encode(value.__func__)])
            elif isinstance(value, property):
                members.append([key, "property", [link.encode(value.fget) if value.fget else None,
                                                  link.encode(value.fset) if value.fset else None]])
            else:
                members.append([key, "plain", link.encode(value)])
        twin = link.request({"op": "subclass", "obj": link.encode(wbases[0]), "name": name,
                             "more": [link.encode(b) for b in wbases[1:]], "members": members})
        if type(twin) is not Remote:
            raise ExactValueRequired("the worker did not make the class")
        cls._agentrl_wsub = twin
        link.shadows[object.__getattribute__(twin, "_ref")] = cls
        return cls

    def __call__(cls, *args, **kwargs):
        if "_agentrl_wbase" in vars(cls):
            raise TypeError("a shadow base is not a class of its own")
        return vars(cls)["_agentrl_wsub"](*args, **kwargs) if "_agentrl_wsub" in vars(cls) else \
            next(vars(c)["_agentrl_wsub"] for c in cls.__mro__ if "_agentrl_wsub" in vars(c))(*args, **kwargs)

    def __getattr__(cls, name: str):
        for c in cls.__mro__:
            if "_agentrl_wsub" in vars(c):
                return getattr(vars(c)["_agentrl_wsub"], name)
            if "_agentrl_wbase" in vars(c):
                return getattr(vars(c)["_agentrl_wbase"], name)
        raise AttributeError(name)


def shadow_base(remote_cls: Remote) -> type:
    """The local base standing for the worker's class `remote_cls` in a test's class statement: its attributes
    forward to the worker's class with the instance (or class) the test's `super()` passes."""
    link = object.__getattribute__(remote_cls, "_link")
    ref = object.__getattribute__(remote_cls, "_ref")
    if ref in link.bases:
        return link.bases[ref]
    members = remote_cls._apply("members")
    if type(members) is not tuple:
        raise ExactValueRequired("the worker did not list the class's members")
    space: dict = {"_agentrl_wbase": remote_cls, "__module__": "worker"}
    for item in members[:2000]:
        if type(item) is not tuple and type(item) is not list or len(item) != 2:
            continue
        name, kind = item
        if type(name) is not str or name in SHADOW_SKIP or kind not in ("function", "classmethod", "staticmethod",
                                                                         "property"):
            continue
        space[name] = _forwarder(remote_cls, name, kind)
    base = ShadowMeta(object.__getattribute__(remote_cls, "_meta")[1], (), space)
    link.bases[ref] = base
    return base


def _forwarder(remote_cls: Remote, name: str, kind: str):
    def call(target, args, kwargs):
        link = object.__getattribute__(remote_cls, "_link")
        return link.request({"op": "base_call", "obj": link.encode(remote_cls), "name": name,
                             "target": link.encode(target), "args": [link.encode(a) for a in args],
                             "kwargs": {k: link.encode(v) for k, v in kwargs.items()}})

    if kind == "classmethod":
        return classmethod(lambda cls, *a, **k: call(cls, a, k))
    if kind == "staticmethod":
        return staticmethod(lambda *a, **k: call(None, a, k))
    if kind == "property":
        return property(lambda obj: call(obj, (), {}))
    return lambda obj, *a, **k: call(obj, a, k)


def _plain(x, depth: int = 0) -> bool:
    """True for a value made only of exact builtins (what a canonical form must be)."""
    t = type(x)
    if t in (type(None), bool, str, int, float, bytes):
        return True
    if depth > wire.MAX_DEPTH:
        return False
    if t in (list, tuple, set, frozenset):
        return all(_plain(v, depth + 1) for v in x)
    if t is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in x.items())
    return False


LINK: list = []  # the process's one Link (a pickled worker object is rebuilt through it)


def _unpickle(data: bytes):
    """The other half of a worker object's pickle round trip: the worker loads what it dumped."""
    return LINK[0].request({"op": "unpickle", "data": wire.encode_exact(data)})


def _exact(value, kind: type, what: str):
    if type(value) is not kind:
        raise ExactValueRequired(f"{what} of a worker object gave a {type(value).__name__}, not a {kind.__name__}")
    return value


class RemoteModule(types.ModuleType):
    """A module of the repository: its attributes are the worker's (submodules this process imported stay here)."""

    def __init__(self, name: str, remote: Remote) -> None:
        super().__init__(name)
        object.__setattr__(self, "_agentrl_remote", remote)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__") and name not in ("__version__", "__all__", "__doc__"):
            raise AttributeError(name)
        got = getattr(object.__getattribute__(self, "_agentrl_remote"), name)
        if type(got) is Remote and object.__getattribute__(got, "_path") is None:
            object.__setattr__(got, "_path", (self.__name__, name))
        return got

    def __setattr__(self, name: str, value) -> None:
        if type(value) is RemoteModule or name.startswith("__"):
            object.__setattr__(self, name, value)
        else:
            setattr(object.__getattribute__(self, "_agentrl_remote"), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(object.__getattribute__(self, "_agentrl_remote"), name)


class RemoteFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of the repository's top-level modules (and theirs) become RemoteModules of the worker's."""

    def __init__(self, link: Link, tops: list[str]) -> None:
        self.link, self.tops = link, set(tops)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.tops:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        remote = self.link.request({"op": "import", "name": spec.name})
        if type(remote) is not Remote or _meta(remote)[0] != "module":
            raise ImportError(f"the worker did not give a module for {spec.name}")
        object.__setattr__(remote, "_path", (spec.name,))
        return RemoteModule(spec.name, remote)

    def exec_module(self, module) -> None:
        pass


TEXT = "_agentrl_text"
_STAND_INS: dict = {}


def _stand_in_str(self) -> str:
    text = self.__dict__.get(TEXT)
    if type(text) is str:
        return text
    wexc = self.__dict__.get("_agentrl_wexc")
    if isinstance(wexc, Remote):
        return str(wexc)
    return ""


def _stand_in_getattr(self, name: str):
    wexc = self.__dict__.get("_agentrl_wexc")
    if isinstance(wexc, Remote) and not name.startswith("_agentrl"):
        return getattr(wexc, name)
    raise AttributeError(name)


def stand_in(base: type) -> type:
    """The judge's subclass of builtin exception `base` for what the worker raised: `raises(base)` and `except base`
    catch it; its text is the worker's; its other attributes are asked of the worker's exception."""
    if base not in _STAND_INS:
        _STAND_INS[base] = type(base.__name__, (base,), {
            "__str__": _stand_in_str, "__module__": "builtins", "__getattr__": _stand_in_getattr,
            "__repr__": lambda s: f"{type(s).__name__}({_stand_in_str(s)!r})"})
    return _STAND_INS[base]


def _new_worker_exc(cls, *args, **kwargs):
    """A test makes one of the repository's exceptions (`raise click.UsageError("x")`): made by the worker, held
    here by a stand-in."""
    link = vars(cls)["_agentrl_link"]
    remote = link.request({"op": "call", "obj": {"wref": vars(cls)["_agentrl_ref"]},
                           "args": [link.encode(a) for a in args], "kwargs": {k: link.encode(v) for k, v in kwargs.items()}})
    e = BaseException.__new__(cls)
    e.args = args
    e.__dict__["_agentrl_wexc"] = remote if type(remote) is Remote else None
    return e


def make_exception(cls: type, args: tuple, text: str) -> BaseException:
    """An instance of stand-in `cls` with `args` and `text`, made without running its code."""
    e = BaseException.__new__(cls)
    e.args = args
    e.__dict__[TEXT] = text
    return e


def _text_of(e: BaseException) -> str:
    text = getattr(e, "__dict__", {}).get(TEXT)
    if type(text) is str:
        return text
    try:
        return str(e)[:MAX_TEXT]
    except JudgeError:
        raise
    except BaseException:  # noqa: BLE001
        return f"<unprintable {type(e).__name__}>"


# ---------------------------------------------------------------------------------------------------- stdlib values
# Standard library modules whose functions and classes the judge hands out as "twins": a handle like any of its
# objects, described by name so the worker uses its own copy of the same function (the package's `inspect` and
# identity checks see the real thing); what the worker sends back is the handle, never the name.
TWIN_MODULES = frozenset({"builtins", "datetime", "decimal", "fractions", "pathlib", "collections", "enum", "re",
                          "string", "math", "functools", "itertools", "operator", "typing", "uuid", "textwrap",
                          "unicodedata", "numbers", "abc", "posixpath", "copy", "json", "io", "locale"})


def _twin_name(x) -> str | None:
    """`module:qualname` of the judge's own standard library function or class `x` (found by walking the judge's
    own modules for an object the judge itself holds, never for a name the worker sent), else None."""
    if not (isinstance(x, type) or callable(x)):
        return None
    module, qualname = getattr(x, "__module__", None), getattr(x, "__qualname__", None)
    if type(module) is not str or module not in TWIN_MODULES or type(qualname) is not str:
        return None
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return f"{module}:{qualname}" if obj is x else None


# ---------------------------------------------------------------------------------------------------- pytest
class Recorder:
    """Each test's outcome from pytest's reports, by the harness's rules (an in-body skip or an xfail fails)."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.reports: dict = {}
        self.collection_errors = 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report) -> None:
        text = ""
        if report.longrepr:
            try:
                text = str(report.longrepr)[-MAX_TEXT:]
            except BaseException:  # noqa: BLE001
                text = "<unprintable failure>"
        self.reports.setdefault(report.nodeid, {})[report.when] = (report.outcome, hasattr(report, "wasxfail"), text)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.collection_errors += 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_make_parametrize_id(self, config, val, argname):
        """A parameter that is the worker's object gets the id pytest would give the object itself (an enum
        member's str, a class's name), so the node ids are the ones the task lists."""
        if type(val) is Remote:
            got = val._apply("idval")
            return got if type(got) is str else None
        return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item) -> None:
        """A test after one that lost the worker gets a fresh one."""
        if not self.link.up and not State.refused:
            self.link.restart()

    def results(self) -> dict:
        cases = {}
        for nodeid, phases in self.reports.items():
            status, text = "passed", ""
            for when in ("setup", "call", "teardown"):
                if when not in phases:
                    continue
                outcome, xfail, txt = phases[when]
                if outcome == "failed":
                    status = "xfailed" if when == "call" and xfail else "failed" if when == "call" else "error"
                    text = txt
                    break
                if outcome == "skipped":
                    status = "xfailed" if xfail else "skipped" if when == "setup" else "skipped_in_call"
                    text = txt
                    break
            if "call" not in phases and status == "passed":
                status = "error"
            last = text.strip().splitlines()[-1][:500] if text.strip() else ""
            cases[nodeid] = {"status": status, "message": last, "text": text}
        return cases


def main() -> None:
    args = json.loads(sys.argv[1])
    link = Link(Channel(args.get("link"), float(args.get("call_timeout", 10.0))))
    LINK.append(link)
    sys.meta_path.insert(0, RemoteFinder(link, args["tops"]))
    recorder = Recorder(link)
    os.chdir(args["repo"])
    try:
        code = int(pytest.main(args["pytest_args"], plugins=[recorder]))
    except BaseException as e:  # noqa: BLE001 - pytest itself failed: the report says so
        code = -1
        State.refused = State.refused or f"pytest failed: {type(e).__name__}"
    sys.stdout.flush()
    size = os.lseek(_LOG, 0, os.SEEK_END)
    tail = os.pread(_LOG, 4000, max(0, size - 4000)).decode("utf-8", "replace")
    _write(b"R", {"exit_code": code, "cases": recorder.results(), "collection_errors": recorder.collection_errors,
                  "refused": State.refused, "workers": State.workers, "calls": State.calls, "lost": State.lost,
                  "output": tail})
    os._exit(0)


main()
