"""The grading harness: runs INSIDE the grading sandbox as `python3 -I -c <this file> <json args>`, nonce on stdin.

It is the only way swe_lite runs tests (grading.run_tests), and it is built so the repository cannot reach it:
- `-I` (isolated): no PYTHON* variables, no user site, no cwd or script directory on sys.path, so a
  sitecustomize/usercustomize/.pth or a `pytest.py` in the repo is never imported at start-up;
- pytest, _pytest, pluggy and this plugin are imported BEFORE the repo joins sys.path, and the repo is then
  APPENDED (after the standard library and site-packages): no module of the repo can shadow either;
- the integrity of the test machinery is snapshotted before any repo code runs (the modules of pytest, pluggy
  and builtins, class by class, plus sys/os functions) and compared at every fail-to-pass call and at the end;
- every fail-to-pass test function is compared, code object for code object, with the task's own test file
  (read before any repo code ran, compiled with pytest's assertion rewriting), and wrapped so the grader sees
  its body return; a "passed" report without that is not a pass;
- results are this plugin's own record of pytest's reports, written as ONE frame on fd 1 tagged with a
  nonce that only this process got (stdin, read into a bytearray before anything else), then `os._exit`, so no
  atexit hook, thread or JUnit file of the repo's can speak for the grader.
Whatever fails a check lands in `tampered`; the host then scores the run 0 (grading.run_tests).
Only the standard library and pytest may be imported here: this file runs in the sandbox's Python.
"""

import os
import sys


def _read_nonce() -> bytearray:
    buf = bytearray(64)
    n = os.readv(0, [buf])
    del buf[n:]
    fd = os.open(os.devnull, os.O_RDONLY)  # tests that read stdin get EOF, never the nonce
    if fd != 0:
        os.dup2(fd, 0)
        os.close(fd)
    return buf


_NONCE = _read_nonce()  # popped from the globals before any repo code runs (see the end of this file)
import ast  # noqa: E402  (imports after the nonce: nothing may read stdin first)
import builtins  # noqa: E402, F401  (watched below)
import json  # noqa: E402
import json.encoder  # noqa: E402
import types  # noqa: E402

import _pytest.assertion.rewrite  # noqa: E402
import _pytest.fixtures  # noqa: E402
import _pytest.main  # noqa: E402
import _pytest.nodes  # noqa: E402
import _pytest.outcomes  # noqa: E402
import _pytest.python  # noqa: E402
import _pytest.python_api  # noqa: E402
import _pytest.reports  # noqa: E402
import _pytest.runner  # noqa: E402
import _pytest.skipping  # noqa: E402
import pluggy  # noqa: E402, F401  (watched below)
import pytest  # noqa: E402

STACK = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py", "exceptiongroup", "tomli", "attr")
WATCHED_MODULES = ("builtins", "pytest", "_pytest.python", "_pytest.runner", "_pytest.reports", "_pytest.skipping",
                   "_pytest.main", "_pytest.outcomes", "_pytest.fixtures", "_pytest.nodes", "_pytest.python_api",
                   "_pytest.assertion.rewrite", "pluggy", "pluggy._callers", "pluggy._hooks", "pluggy._manager",
                   "pluggy._result", "json", "json.encoder", "__main__")
WATCHED_FUNCS = ((sys, ("exit", "_getframe", "settrace", "setprofile", "excepthook")),
                 (os, ("_exit", "kill", "killpg", "fork", "write", "dup2", "abort")))
MAX_TEXT = 4000
_WRITE, _EXIT, _ENCODER, _REALPATH = os.write, os._exit, json.JSONEncoder(), os.path.realpath


def _snapshot() -> dict:
    """Identity snapshot of everything the test machinery is made of."""
    snap: dict = {}
    for name in WATCHED_MODULES:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        snap[("mod", name)] = dict(vars(mod))
        for attr, value in vars(mod).items():
            if isinstance(value, type) and getattr(value, "__module__", "") == name:
                snap[("cls", f"{name}.{attr}")] = (value, dict(vars(value)))
    for owner, names in WATCHED_FUNCS:
        for attr in names:
            snap[("fn", f"{owner.__name__}.{attr}")] = (owner, attr, getattr(owner, attr, None))
    snap[("sys.modules", "")] = {k: v for k, v in sys.modules.items() if k.split(".")[0] in STACK}
    snap[("sys.modules.id", "")] = sys.modules
    return snap


def _changes(snap: dict) -> list[str]:
    """What differs from `snap` now (empty when the machinery is intact)."""
    out: list[str] = []
    for (kind, name), value in snap.items():
        if kind == "mod":
            mod = sys.modules.get(name)
            now = vars(mod) if mod is not None else {}
            diff = [k for k in set(value) | set(now) if value.get(k, _MISSING) is not now.get(k, _MISSING)]
            out += [f"{name}.{k} was changed" for k in sorted(diff) if not (name == "__main__" and k in _MAIN_MUTABLE)]
        elif kind == "cls":
            cls, attrs = value
            now = vars(cls)
            diff = [k for k in set(attrs) | set(now) if attrs.get(k, _MISSING) is not now.get(k, _MISSING)]
            out += [f"{name}.{k} was changed" for k in sorted(diff) if k not in _CLASS_MUTABLE]
        elif kind == "fn":
            owner, attr, fn = value
            if getattr(owner, attr, None) is not fn:
                out.append(f"{name} was replaced")
        elif kind == "sys.modules":
            out += [f"sys.modules[{k!r}] was replaced" for k, m in value.items() if sys.modules.get(k) is not m]
        elif kind == "sys.modules.id" and sys.modules is not value:
            out.append("sys.modules was replaced")
    return out


_MISSING = object()


def _inside(path: str, root: str) -> bool:
    real = _REALPATH(path or ".")
    return real == root or real.startswith(root + os.sep)
_MAIN_MUTABLE = ("__builtins__",)
# pytest sets these itself: a once-per-class warning flag, and legacypath's py.path properties (set at configure,
# undone at exit). Only names that cannot change an outcome belong here.
_CLASS_MUTABLE = ("_pytest_diamond_inheritance_warning_shown", "startdir", "fspath", "_abc_impl")


def _expected_code(path: str, source: bytes, config) -> dict[str, types.CodeType]:
    """{qualified name: code} of the functions in the task's test file, compiled the way pytest imports it."""
    tree = ast.parse(source, filename=path)
    _pytest.assertion.rewrite.rewrite_asserts(tree, source, path, config)
    code = compile(tree, path, "exec", dont_inherit=True)
    found: dict[str, types.CodeType] = {}

    def walk(co: types.CodeType, prefix: str) -> None:
        for const in co.co_consts:
            if isinstance(const, types.CodeType):
                qual = f"{prefix}{const.co_name}"
                found.setdefault(qual, const)
                walk(const, qual + ".")

    walk(code, "")
    return found


class GraderPlugin:
    """Records outcomes from pytest's reports, checks the machinery and the fail-to-pass bodies."""

    def __init__(self, repo: str, f2p: list[str], sources: dict[str, bytes], snap: dict) -> None:
        self.repo, self.f2p, self.sources, self.snap = _REALPATH(repo), set(f2p), sources, snap
        self.reports: dict[str, dict[str, tuple]] = {}
        self.completed: set[str] = set()
        self.tampered: list[str] = []
        self.collection_errors = 0

    def path_check(self) -> list[str]:
        """A repo entry ahead of the standard library on sys.path would let the repo shadow it."""
        stdlib = os.path.dirname(os.__file__)
        for p in sys.path:
            if p and _REALPATH(p) == stdlib:
                return []
            if not p or _inside(p, self.repo):
                return [f"sys.path puts {p or 'the cwd'!r} ahead of the standard library"]
        return ["the standard library left sys.path"]

    def flag(self, reasons: list[str]) -> None:
        """Record tampering (deduplicated)."""
        self.tampered += [r for r in reasons if r not in self.tampered]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report) -> None:
        """Keep every phase's outcome, message and text for the node."""
        text = str(report.longrepr)[-MAX_TEXT:] if report.longrepr else ""
        message = ""
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            message = str(getattr(crash, "message", ""))[:MAX_TEXT]
        self.reports.setdefault(report.nodeid, {})[report.when] = (report.outcome, hasattr(report, "wasxfail"),
                                                                    message, text)

    def pytest_load_initial_conftests(self, early_config) -> None:
        """Runs after the pythonpath ini option put the repo first: move it back behind the standard library."""
        self.repo_last()

    def repo_last(self) -> None:
        """sys.path with every entry inside the repo moved to the end (the repo itself last)."""
        inside = [p for p in sys.path if _inside(p, self.repo)]
        sys.path[:] = [p for p in sys.path if p not in inside] + [p for p in inside if _REALPATH(p) != self.repo]
        sys.path.append(self.repo)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report) -> None:
        """Count collection errors (a module that failed to import)."""
        if report.failed:
            self.collection_errors += 1

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        """Check each fail-to-pass function against the task's source and wrap it to see its body return."""
        self.flag(_changes(self.snap) + self.path_check())
        cache: dict[str, dict] = {}
        for item in items:
            if item.nodeid not in self.f2p:
                continue
            path = item.nodeid.split("::")[0]
            target = getattr(item, "obj", None)
            fn = target.__func__ if isinstance(target, types.MethodType) else target
            if path not in self.sources or not isinstance(fn, types.FunctionType):
                self.flag([f"{item.nodeid}: not a plain test function of the task's test files"])
                continue
            if path not in cache:
                cache[path] = _expected_code(str(item.path), self.sources[path], config)
            expected = cache[path].get(fn.__qualname__.replace(".<locals>", ""))
            # code objects compare by bytecode, constants (nested code included), names and line table; not by
            # marshal bytes, which mark shared objects by reference count and so differ for equal code
            if expected is None or expected != fn.__code__:
                self.flag([f"{item.nodeid}: the test's code differs from the task's test file"])
                continue
            item.obj = self._wrap(item.nodeid, target, fn, fn.__code__)

    def _wrap(self, nodeid: str, target, fn, code):
        plugin = self

        def grader_call(*args, **kwargs):
            plugin.flag(_changes(plugin.snap))
            if fn.__code__ is not code:
                plugin.flag([f"{nodeid}: the test's code was replaced"])
            result = target(*args, **kwargs)
            if fn.__code__ is code:
                plugin.completed.add(nodeid)
            return result

        return grader_call

    def results(self) -> dict:
        """{node id: {status, message, text}} with the grader's rules (see grading.py)."""
        cases = {}
        for nodeid, phases in self.reports.items():
            status, message, text = "passed", "", ""
            for when in ("setup", "call", "teardown"):
                if when not in phases:
                    continue
                outcome, xfail, msg, txt = phases[when]
                if outcome == "failed":
                    status, message, text = ("failed" if when == "call" else "error"), msg, txt
                    if when == "call" and xfail:
                        status = "xfailed"
                    break
                if outcome == "skipped":
                    status = "xfailed" if xfail else "skipped" if when == "setup" else "skipped_in_call"
                    message, text = msg, txt
                    break
            if "call" not in phases and status == "passed":
                status = "error"
            if status == "passed" and nodeid in self.f2p and nodeid not in self.completed:
                status, message = "failed", "the test body did not run to completion under the grader"
            cases[nodeid] = {"status": status, "message": message, "text": text}
        return cases


def main(nonce: bytearray) -> None:
    """Run pytest on the repo under the plugin; write one nonce-tagged frame; exit without atexit hooks.

    The nonce lives only in this frame: repo code could read a module global (`import __main__`), but a frame
    local only through introspection (frames, gc, tracebacks), which tampering.py refuses."""
    args = json.loads(sys.argv[1])
    repo = args["repo"]
    sources = {}
    for rel in args["test_files"]:
        try:
            with open(os.path.join(repo, rel), "rb") as f:
                sources[rel] = f.read()
        except OSError:
            pass
    snap = _snapshot()
    plugin = GraderPlugin(repo, args["f2p"], sources, snap)
    plugin.repo_last()
    os.chdir(repo)
    try:
        code = int(pytest.main(args["pytest_args"], plugins=[plugin]))
    except BaseException as e:  # an escape from pytest.main is the repo's doing
        code = -1
        plugin.flag([f"pytest.main raised {type(e).__name__}"])
    plugin.flag(_changes(snap))
    payload = _ENCODER.encode({"exit_code": code, "cases": plugin.results(), "tampered": plugin.tampered,
                          "collection_errors": plugin.collection_errors}).encode()
    frame = b"\n@@agentrl-grade " + bytes(nonce) + b" %d\n" % len(payload) + payload + b"\n"
    view = memoryview(frame)
    while view:
        view = view[_WRITE(1, view):]
    _EXIT(0)


main(globals().pop("_NONCE"))
