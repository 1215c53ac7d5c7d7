"""The judge: runs a swe_lite task's tests on the host, against the repo's code running in a sandboxed worker.

Grading by construction. The tests of swe_lite's own corpus run here, in the grader's process, and never
import, execute or unpickle anything of the repo: `from bank import Account` gives them a proxy (`Remote`), and
every use of a proxy is a request to the worker (worker.py, the one worker the suite judge uses too, started here
with `by_value`), which runs the repo's code in the grading sandbox. Answers come back as values of exact builtin
types (checked with `type(x) is ...`, recursively, with caps on size and depth), a few standard library values made
here from plain arguments (wire.std_value), table classes (wire.STD_TABLE) or new handles of the worker's; this
judge hands the worker nothing of its own, so a call-back or a handle of the judge's refuses the run. Exceptions
come back as a builtin exception's name or a handle of a class the repo defines, plus arguments of the same kinds. Equality, ordering, truthiness and `pytest.raises` are decided
here, on those values:
- `==`, `!=`, `bool()` and `hash()` of a proxy are refused (the test fails): a test compares exact values;
- `<`, `<=`, `>`, `>=` between two proxies ask the worker and accept only an exact bool; with a value, refused;
- `str`, `repr`, `len`, `iter`, indexing, `in` and arithmetic (wire.py's operation table) ask the worker; their
  results are checked again.
Nothing the worker says is trusted: a malformed answer, a value of any other type, a size or depth past the caps
(wire.py: hash-flood safe, counted against the run's deadline), more handles or exception classes than a worker
may make, refuse the whole run (reward 0, reason given); a call past its deadline or a worker that dies fails that
test and the next test gets a fresh worker. Failure messages are made of what the judge holds (type names, the
bounded text the worker computed for an exception), never by calling a method of an object the worker chose.
docs/swe_lite.md has the design and its limits.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import time
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path

import agentrl.envs.swe.grading.wire as wire
from agentrl.envs.swe.grading.suite import WORKER
from agentrl.sandboxes.dialogue import Dialogue

from agentrl import safe_ast
from agentrl.errors import SandboxError

MAX_LINE = wire.MAX_LINE  # bytes of one answer
MAX_DEPTH = wire.MAX_DEPTH  # nesting of one value
MAX_ITEMS = 10_000  # items of one iteration
MAX_HANDLES = 50_000  # distinct handles one worker may hand out (each costs the judge a proxy)
MAX_EXC_CLASSES = 256  # exception classes of the repo one worker may name (each costs the judge a class)
MAX_MESSAGE = 4000  # characters of an exception's text (the worker computes it; the judge cuts it)
CALL_TIMEOUT_S = 10.0
# imports the test files may take from the judge's own Python; every other module is the repo's (remote)
LOCAL_MODULES = frozenset({"math", "re", "string", "itertools", "functools", "collections", "operator", "random"})
EXACT_SCALARS = wire.SCALARS
CONTAINERS = wire.CONTAINERS


class JudgeError(BaseException):
    """A fault of the worker's side. Test code cannot catch it (it is no Exception), so the test fails."""


class Refused(JudgeError):
    """The worker said something the protocol does not allow: the whole run scores 0."""


class WorkerLost(JudgeError):
    """The worker ended (crash, exit, kill) or missed a call's deadline: this test fails, the next gets a new one."""


class TaskDeadline(JudgeError):
    """The run's own deadline passed: the run is invalid (timed out)."""


class SandboxFailed(JudgeError):
    """The sandbox under the worker failed (the backend's SandboxError): ours to retry or mask, not a test failure."""


class ExactValueRequired(JudgeError):
    """A test compared or tested the truth of a proxy; only exact values are compared."""


@dataclass
class CaseResult:
    """One test case's outcome, in every grading mode (this judge's, the suite judge's report, JUnit XML)."""

    status: str
    """passed | failed | error | skipped | xfailed"""
    message: str = ""
    text: str = ""


@dataclass
class JudgeRun:
    """The outcome of judging a task's tests."""

    cases: dict[str, CaseResult]
    valid: bool = True
    reason: str = ""
    refused: str = ""
    """What the worker sent that the protocol refused ("" when nothing)."""
    collection_errors: int = 0
    workers: int = 0
    calls: int = 0
    duration_s: float = 0.0
    log: list[str] = field(default_factory=list)


def describe(x, depth: int = 0) -> str:
    """A short text for a value in a failure message, never asking the worker anything."""
    if isinstance(x, Remote):
        return f"<remote {object.__getattribute__(x, '_name')}>"
    if depth > 3:
        return "..."
    if type(x) in (list, tuple, set, frozenset):
        inner = ", ".join(describe(v, depth + 1) for v in list(x)[:8]) + (", ..." if len(x) > 8 else "")
        return {"list": "[%s]", "tuple": "(%s)", "set": "{%s}", "frozenset": "frozenset({%s})"}[type(x).__name__] % inner
    if type(x) is dict:
        return "{" + ", ".join(f"{describe(k, depth + 1)}: {describe(v, depth + 1)}" for k, v in list(x.items())[:8]) + "}"
    if type(x) in (int, float, str, bytes, bool, type(None)):
        try:
            text = repr(x)
        except ValueError:  # an int past the interpreter's digit limit for str()
            return f"<int of {x.bit_length()} bits>"
        return text if len(text) <= 200 else text[:200] + "..."
    return f"<{type(x).__name__}>"


class Worker:
    """One worker process in the sandbox and the proxies of the objects it holds."""

    def __init__(self, sandbox, *, cwd: str, deadline: float, call_timeout: float, cpu_limit_s: int | None) -> None:
        self.deadline, self.call_timeout = deadline, call_timeout
        self.proxies: dict[int, object] = {}
        self.meta: dict[int, tuple] = {}
        self.exc_refs: dict[type, int] = {}
        self.calls = 0
        self.lost = False
        self.sent_args: dict[int, dict] = {}
        limit = f"ulimit -t {int(cpu_limit_s)}; " if cpu_limit_s else ""
        args = json.dumps({"path": ["."], "by_value": True})  # lists, dicts and sets come back as exact values
        cmd = ["bash", "-c", f'{limit}exec python3 -I -B -c "$0" "$1"', WORKER, args]
        seconds = max(1.0, deadline - time.monotonic())
        self.dialogue = Dialogue(max_buffer=MAX_LINE * 2)
        self.dialogue.start(lambda d: sandbox.exec(cmd, timeout=seconds, cwd=cwd, stdin=d,
                                                   max_output_bytes=4096))

    def close(self) -> None:
        """End the worker: EOF on its stdin, then a kill if it has not gone within a few seconds."""
        self.dialogue.close()
        try:
            if self.dialogue.wait(5.0) is None:
                self.dialogue.abort()
                self.dialogue.wait(15.0)
        except Exception:  # the sandbox failed while the worker ended: nothing of the verdict depends on it
            pass

    # ------------------------------------------------------------------ requests
    def request(self, req: dict):
        """Send one request and return the decoded answer (a value, a proxy) or raise what the worker raised."""
        if self.lost:
            raise WorkerLost("the worker is gone")
        now = time.monotonic()
        if now >= self.deadline:
            raise TaskDeadline("the tests ran out of time")
        self.calls += 1
        self.dialogue.send(json.dumps(req).encode() + b"\n")
        try:
            line = self.dialogue.read_line(min(now + self.call_timeout, self.deadline), MAX_LINE)
        except TimeoutError:
            self.lost = True
            self.dialogue.abort()
            if time.monotonic() >= self.deadline:
                raise TaskDeadline("the tests ran out of time") from None
            raise WorkerLost(f"no answer within {self.call_timeout:.0f}s") from None
        except ValueError as e:
            raise Refused(f"an answer too long: {e}") from None
        if line is None:
            self.lost = True
            try:  # the exec's own end: a sandbox that died under the worker raises there
                self.dialogue.wait(30.0)
            except SandboxError as e:
                raise SandboxFailed(e) from e
            except Exception:
                pass
            raise WorkerLost("the worker ended")
        try:
            msg = wire.loads(line)
        except wire.WireRefused as e:
            raise Refused(str(e)) from None
        if type(msg) is not dict or ("ok" in msg) == ("raise" in msg) or set(msg) - ANSWER_KEYS:
            raise Refused("an answer that is not {ok} or {raise}")  # a call-back too: nothing here is handed out
        _check_side_effects(msg)
        if "out" in msg:
            self.write_back(req, msg["out"])
        if "ok" in msg:
            return self.decode(msg["ok"])
        raise self.exception(msg["raise"])

    def write_back(self, req: dict, out) -> None:
        """Give the caller's list, dict and set arguments of a call the state the call left them in."""
        sent = self.sent_args.pop(id(req), None)
        if req.get("op") != "call" or sent is None:
            raise Refused("a changed-arguments list where none can be")
        try:
            wire.write_back(out, sent, self.decode)
        except wire.WireRefused as e:
            raise Refused(str(e)) from None

    def encode(self, x, depth: int = 0):
        """A judge value (exact builtins, proxies of this worker) as the protocol writes it."""
        return wire.encode_exact(x, depth, self._encode_other)

    def _encode_other(self, x):
        if type(x) is range:  # sent as the list it spells
            return {"list": [{"int": str(v)} for v in x[:MAX_ITEMS + 1]]}
        if type(x) is Remote and object.__getattribute__(x, "_w") is self:
            return {"wref": object.__getattribute__(x, "_ref")}
        if isinstance(x, type) and x in self.exc_refs:
            return {"wref": self.exc_refs[x]}
        raise ExactValueRequired(f"cannot send a {type(x).__name__} to the repo's code")

    def decode(self, v):
        """An answer's value, checked (wire.py): exact builtin types only (or handles), within the caps and the
        run's deadline."""
        try:
            return wire.Decoder(self.handle, check=self._in_time, special=self.special).value(v)
        except wire.WireRefused as e:
            raise Refused(str(e)) from None

    def special(self, v: dict):
        """A stdlib value made from plain arguments ({"std", "args"}), a table class ({"stdname"}), or an exception
        as a value ({"exc"}, made like a raised one)."""
        if set(v) == {"exc"}:
            return self.exception(v["exc"])
        if set(v) == {"stdname"}:
            return wire.std_object(v["stdname"])
        if set(v) != {"std", "args"} or v["std"] not in wire.STD_VALUES:
            raise Refused("a malformed stdlib value")
        args = self.decode(v["args"])
        if type(args) is not tuple or not all(type(a) in (int, float, str, type(None)) for a in args):
            raise Refused("a stdlib value with arguments that are not plain")
        try:
            return wire.std_value(v["std"], args, tz_ok=lambda tz: False)
        except (TypeError, ValueError, ArithmeticError):
            raise Refused(f"arguments that do not make a {v['std']}") from None

    def _in_time(self) -> None:
        if time.monotonic() >= self.deadline:
            raise TaskDeadline("the tests ran out of time")

    def handle(self, v: dict):
        """The proxy of one of the worker's handles (the same one each time it comes back); its kind is fixed when
        first seen. The judge hands the worker nothing of its own, so a handle of the judge's is refused."""
        ref, kind, name, exc, qualname = v.get("wref"), v.get("kind"), v.get("name"), v.get("exc"), v.get("qualname")
        if (type(ref) is not int or not 0 < ref < 1 << 31 or kind not in ("module", "class", "object")
                or type(name) is not str or not 0 < len(name) <= 200 or v.get("tz") not in (None, True)
                or set(v) - {"wref", "kind", "name", "exc", "qualname", "tz"}
                or qualname is not None and (type(qualname) is not str or len(qualname) > 300)):
            raise Refused("a malformed handle")
        if exc is not None and (kind != "class" or type(exc) is not str):
            raise Refused("a malformed exception class handle")
        meta = (kind, name, exc)
        if ref in self.meta:
            if self.meta[ref] != meta:
                raise Refused("a handle that changed its kind")
            return self.proxies[ref]
        if len(self.proxies) >= MAX_HANDLES:
            raise Refused(f"more than {MAX_HANDLES} handles from one worker")
        if exc is not None:
            base = wire.builtin_exception(exc, Exception)
            if base is None or not name.isidentifier():
                raise Refused(f"an exception class based on {exc[:40]!r}")
            if len(self.exc_refs) >= MAX_EXC_CLASSES:
                raise Refused(f"more than {MAX_EXC_CLASSES} exception classes from one worker")
            proxy = type(name, (stand_in(base),), {"__module__": "repo"})
            self.exc_refs[proxy] = ref
        else:
            proxy = Remote(self, ref, name)
        self.meta[ref], self.proxies[ref] = meta, proxy
        return proxy

    def exception(self, body) -> BaseException:
        """The local exception for what the worker raised: a builtin Exception class, or one the repo defines.

        Made without running the class's own code on the worker's arguments (no __init__): its text is the one
        the worker computed (`msg`, cut to MAX_MESSAGE), so no method of a value the worker chose runs here when a
        test reads it or a failure is reported (a UnicodeEncodeError whose own str() raises is just a text)."""
        if type(body) is not dict or "cls" not in body or set(body) - {"cls", "args", "msg", "wexc"} \
                or "wexc" in body and type(body["wexc"]) is not int:  # the worker's own handle of it: not used here
            raise Refused("a malformed exception")
        cls = body["cls"]
        if type(cls) is str:
            base = wire.builtin_exception(cls, Exception)
            if base is None:
                raise Refused(f"an exception that is not a builtin Exception: {cls[:40]!r}")
            cls = stand_in(base)
        else:
            cls = self.decode(cls)
            if not isinstance(cls, type) or cls not in self.exc_refs:
                raise Refused("an exception class that is not an exception class of the repo")
        msg = body.get("msg")
        if "msg" in body and type(msg) is not str:
            raise Refused("an exception whose message is not a string")
        if "args" in body:
            args = self.decode({"tuple": body["args"]})
        elif msg is None:
            raise Refused("an exception without args or message")
        else:
            args = (msg[:MAX_MESSAGE],)
        return make_exception(cls, args, msg[:MAX_MESSAGE] if msg is not None else None)

    def apply(self, fn: str, obj, *args):
        """One of wire.py's operations done by the worker on its object `obj`."""
        return self.request({"op": "apply", "fn": fn, "obj": self.encode(obj), "args": [self.encode(a) for a in args]})


ANSWER_KEYS = frozenset({"ok", "raise", "out", "printed", "warnings"})


def _check_side_effects(msg: dict) -> None:
    """What the repo printed and warned while answering: checked for shape, then dropped (these tests read neither)."""
    printed, caught = msg.get("printed", ["", ""]), msg.get("warnings", [])
    if type(printed) is not list or len(printed) != 2 or any(type(p) is not str for p in printed):
        raise Refused("malformed output")
    if type(caught) is not list or len(caught) > 64 or any(type(w) is not list or len(w) != 2 or type(w[1]) is not str
                                                           for w in caught):
        raise Refused("malformed warnings")


TEXT = "_agentrl_text"  # where a stand-in exception keeps the text the worker computed for it
_STAND_INS: dict[type, type] = {}


def _stand_in_str(self) -> str:
    text = self.__dict__.get(TEXT)
    return text if type(text) is str else ", ".join(describe(a) for a in self.args)


def _stand_in_repr(self) -> str:
    return f"{type(self).__name__}({_stand_in_str(self)!r})"


def stand_in(base: type) -> type:
    """The judge's subclass of builtin exception `base` for exceptions the worker raised: `raises(base)` and
    `except base` catch it, and its str() is the worker's text (or the judge's description of its args), never the
    builtin's own formatting of arguments the worker chose."""
    if base not in _STAND_INS:
        _STAND_INS[base] = type(base.__name__, (base,), {"__str__": _stand_in_str, "__repr__": _stand_in_repr,
                                                         "__module__": "builtins"})
    return _STAND_INS[base]


def make_exception(cls: type, args: tuple, text: str | None) -> BaseException:
    """An instance of stand-in class `cls` holding `args` and `text`, made without running its __init__."""
    try:
        e = cls.__new__(cls, *args)
    except Exception:  # a __new__ that parses its arguments (OSError's) and refuses these: keep them as given
        e = cls.__new__(cls)
    e.args = args
    if text is not None:
        e.__dict__[TEXT] = text
    return e


class Remote(wire.Proxy):
    """A proxy of an object in the worker (wire.Proxy: every builtin operation asks the worker). Its policy: a test
    compares exact values, so `==`, `!=`, truth, hash and ordering against a value are refused (the test fails)."""

    __slots__ = ("_w", "_ref", "_name")
    _inexact = ExactValueRequired
    _order_values = False

    def __init__(self, worker: Worker, ref: int, name: str) -> None:
        object.__setattr__(self, "_w", worker)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_name", name)

    def _apply(self, fn: str, *args):
        return object.__getattribute__(self, "_w").apply(fn, self, *args)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        w = object.__getattribute__(self, "_w")
        return w.request({"op": "getattr", "obj": w.encode(self), "name": name})

    def __setattr__(self, name: str, value) -> None:
        w = object.__getattribute__(self, "_w")
        w.request({"op": "setattr", "obj": w.encode(self), "name": name, "value": w.encode(value)})

    def __call__(self, *args, **kwargs):
        w = object.__getattribute__(self, "_w")
        req = {"op": "call", "obj": w.encode(self),
               "args": [w.encode(a) for a in args], "kwargs": {k: w.encode(v) for k, v in kwargs.items()}}
        w.sent_args[id(req)] = wire.lent(args, kwargs)
        try:
            return w.request(req)
        finally:
            w.sent_args.pop(id(req), None)

    def __eq__(self, other):
        raise ExactValueRequired(f"`==` on {describe(self)}: tests compare exact values, not objects of the repo")

    def __ne__(self, other):
        raise ExactValueRequired(f"`!=` on {describe(self)}: tests compare exact values, not objects of the repo")

    def __bool__(self) -> bool:
        raise ExactValueRequired(f"the truth of {describe(self)}: tests check exact values")

    def __hash__(self) -> int:
        raise ExactValueRequired(f"hash() of {describe(self)}")


# ---------------------------------------------------------------------- the tests' `pytest`
class RaisesContext:
    """`pytest.raises(E, match=...)` decided here: the exception is a local one, made from the worker's answer."""

    def __init__(self, expected, match: str | None = None) -> None:
        kinds = expected if isinstance(expected, tuple) else (expected,)
        if not kinds or not all(isinstance(k, type) and issubclass(k, BaseException) for k in kinds):
            raise TypeError(f"pytest.raises needs exception classes, got {describe(expected)}")
        self.expected, self.match, self.value, self.type = kinds, match, None, None

    def __enter__(self) -> RaisesContext:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            raise AssertionError(f"DID NOT RAISE {' or '.join(k.__name__ for k in self.expected)}")
        if issubclass(exc_type, JudgeError) or not issubclass(exc_type, self.expected):
            return False
        if self.match is not None and not re.search(self.match, _text_of(exc)):
            raise AssertionError(f"Regex pattern did not match.\n Regex: {self.match!r}\n Input: {_text_of(exc)!r}")
        self.value, self.type = exc, exc_type
        return True


def _text_of(exc: BaseException) -> str:
    """The text of `exc` for a failure message or `match`: the worker's own text for an exception it raised,
    proxies among the args described locally, str() only of the judge's and the tests' own exceptions (and a
    placeholder when even that fails: a test's message may hold a proxy whose worker is gone)."""
    text = getattr(exc, "__dict__", {}).get(TEXT)
    if type(text) is str:
        return text
    if any(type(a) is Remote for a in exc.args):
        return ", ".join(describe(a) for a in exc.args)
    try:
        return str(exc)
    except (Refused, TaskDeadline, SandboxFailed):
        raise
    except BaseException:  # noqa: BLE001 - a message that cannot be made is not the run's failure
        return f"<{type(exc).__name__} whose text could not be made>"


def raises(expected, *args, match: str | None = None, **kwargs):
    """The subset of pytest.raises the corpus uses: a context manager (or a call with a function)."""
    if args:
        with RaisesContext(expected, match) as ctx:
            args[0](*args[1:], **kwargs)
        return ctx
    return RaisesContext(expected, match)


PYTEST = types.ModuleType("pytest", "The judge's pytest: raises, decided on the host.")
PYTEST.raises = raises


# ---------------------------------------------------------------------- running the tests
def names_of_tests(source: str) -> list[str]:
    """The top-level `test_*` functions of a test file, in file order."""
    return [n.name for n in safe_ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]


class SuiteFile:
    """A task's test file, compiled once; loaded into a fresh namespace for each worker."""

    def __init__(self, path: str, source: str) -> None:
        self.path, self.source = path, source
        self.lines = source.splitlines()
        self.code = compile(source, path, "exec", dont_inherit=True)
        self.tests = set(names_of_tests(source))

    def load(self, worker: Worker) -> dict:
        """Execute the file with imports of repo modules answered by `worker`."""
        def imp(name, globals=None, locals=None, fromlist=(), level=0):
            if level:
                raise ImportError("relative imports are not available to the tests")
            if name == "pytest":
                return PYTEST
            if name.split(".")[0] in LOCAL_MODULES:
                return __import__(name, globals, locals, fromlist, level)
            module = worker.request({"op": "import", "name": name})
            if not fromlist and "." in name:
                return worker.request({"op": "import", "name": name.split(".")[0]})
            return module

        namespace = {"__name__": Path(self.path).stem, "__file__": self.path,
                     "__builtins__": {**vars(builtins), "__import__": imp}}
        exec(self.code, namespace)
        return namespace

    def where(self, tb) -> str:
        """`path:line: source` of the deepest frame of this file in a traceback."""
        line = None
        for frame, lineno in traceback.walk_tb(tb):
            if frame.f_code.co_filename == self.path:
                line = lineno
        if line is None or not 0 < line <= len(self.lines):
            return self.path
        return f"{self.path}:{line}: {self.lines[line - 1].strip()}"


def _failure(test_file: SuiteFile, exc: BaseException) -> CaseResult:
    kind = type(exc).__name__
    text = f"{test_file.where(exc.__traceback__)}\nE   {kind}: {_text_of(exc)[:2000]}"
    return CaseResult("failed", f"{kind}: {_text_of(exc)[:500]}", text)


def judge_tests(sandbox, test_sources: dict[str, str], ids: list[str], *, cwd: str, timeout: float,
                call_timeout: float = CALL_TIMEOUT_S, cpu_limit_s: int | None = None) -> JudgeRun:
    """Run the tests `ids` ("path::name") of `test_sources` here, against the repo at `cwd` in `sandbox`.

    The repo's files must already be in the sandbox (and its tests need not be: they are never read there).
    One worker serves the tests in order; a test that loses it (crash, deadline) fails and the next starts a
    new one. A refused answer or the run's deadline makes the run invalid. Raises the backend's SandboxError
    when the sandbox itself died under the worker (grading.grade's callers tell the repo's doing from ours).
    """
    start = time.monotonic()
    deadline = start + timeout
    run = JudgeRun(cases={})
    files = {}
    for path in dict.fromkeys(i.split("::")[0] for i in ids):
        if path in test_sources:
            try:
                files[path] = SuiteFile(path, test_sources[path])
            except SyntaxError as e:
                run.log.append(f"{path}: {e}")
    worker: Worker | None = None
    namespaces: dict[str, dict | BaseException] = {}
    try:
        for nodeid in ids:
            path, _, name = nodeid.partition("::")
            if path not in files:
                run.cases[nodeid] = CaseResult("error", "no such test file")
                continue
            if worker is None or worker.lost:
                if worker is not None:
                    worker.close()
                    run.calls += worker.calls
                worker = Worker(sandbox, cwd=cwd, deadline=deadline, call_timeout=call_timeout, cpu_limit_s=cpu_limit_s)
                run.workers += 1
                namespaces = {}
            if path not in namespaces:
                try:
                    namespaces[path] = files[path].load(worker)
                except (Refused, TaskDeadline, SandboxFailed):
                    raise
                except BaseException as e:  # the repo failed to import (or the worker died): a collection error
                    if isinstance(e, (KeyboardInterrupt, SystemExit)):
                        raise
                    namespaces[path] = e
                    run.collection_errors += 1
            loaded = namespaces[path]
            if isinstance(loaded, BaseException):
                run.cases[nodeid] = CaseResult("error", f"the test file did not load: {type(loaded).__name__}",
                                                _failure(files[path], loaded).text)
                continue
            fn = loaded.get(name)
            if not isinstance(fn, types.FunctionType) or name not in files[path].tests:
                run.cases[nodeid] = CaseResult("error", "no such test")
                continue
            try:
                fn()
                run.cases[nodeid] = CaseResult("passed")
            except (Refused, TaskDeadline, SandboxFailed, KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:  # AssertionError, the repo's exceptions, WorkerLost, ExactValueRequired
                run.cases[nodeid] = _failure(files[path], e)
    except Refused as e:
        run.valid, run.refused = False, str(e)
        run.reason = f"the repo's worker broke the grading protocol: {e}"
    except TaskDeadline:
        run.valid, run.reason = False, f"tests timed out after {timeout:.0f}s"
    except SandboxFailed as e:
        raise e.args[0] from None
    finally:
        if worker is not None:
            worker.close()
            run.calls += worker.calls
    run.duration_s = time.monotonic() - start
    return run
