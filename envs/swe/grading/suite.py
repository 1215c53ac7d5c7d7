"""The suite judge, host side: a real package's own test suite graded where the repository's code cannot reach it.

Two fresh sandboxes per grade. The judge sandbox holds the tests (the hidden test files, the suite's conftest and
helpers, pytest.ini) and no line of the package; pytest runs there (suite_judge.py), and importing the package gives
proxies of a worker's modules. The worker runs in the grading sandbox, in the agent's repository without its tests
(worker.py, the same worker swe_lite's judge uses), and answers one request at a time.

Where both sandboxes have link folders (sandboxes/link.py), the two talk over a FIFO pair the host shares between
them, one pair per worker generation, and the host parses none of it: it starts and restarts the worker (`N`,
answered `h ready G`), kills one the judge gave up on (`K G`: silent past the call deadline, which the judge keeps)
and tells the judge of a worker that ended (`h lost G why`). Elsewhere it relays: each judge line `W ...` goes to
the worker, whose next line goes back as `w <line>` (so it cannot pass for the host's own notice, `h ...`), cut at
wire.MAX_LINE; a worker silent past the call deadline is killed and reported lost. Either way that test fails and
the next gets a fresh worker. The verdict is the judge's one report (`R`), and it counts only when the judge then
exits 0 by itself: no report, a line outside the protocol, an exit code, a timeout or a worker that broke the
protocol make the run invalid (reward 0). docs/swe_real.md has the design and its limits.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import agentrl.envs.swe.grading.wire as wire
from agentrl.sandboxes.dialogue import Dialogue
from agentrl.sandboxes.link import Pipes, linked

from agentrl.errors import SandboxError

HERE = Path(__file__).parent
IMPORT_WIRE = "import agentrl.envs.swe.grading.wire as wire  # the host pastes wire.py in place of this line"
CALL_TIMEOUT_S = 10.0
POLL_S = 0.05  # with a direct channel: how often the host looks whether the worker has ended
REPO = "/workspace/repo"


def script(name: str) -> str:
    """A sandbox script: `name` with wire.py pasted in as a module `wire` where it imports it."""
    body = (HERE / name).read_text()
    if IMPORT_WIRE not in body:
        raise RuntimeError(f"{name} does not import wire the way the host replaces it")
    paste = ("import types as _types\nwire = _types.ModuleType('wire')\n"
             f"exec(compile({(HERE / 'wire.py').read_text()!r}, 'wire.py', 'exec'), wire.__dict__)\n")
    return body.replace(IMPORT_WIRE, paste, 1)


JUDGE = script("suite_judge.py")
WORKER = script("worker.py")  # one worker for both judges (judge.py starts it too)


@dataclass
class SuiteJudgeRun:
    """What the judge reported, or why there is no verdict."""

    cases: dict[str, dict]
    valid: bool
    reason: str = ""
    refused: str = ""
    exit_code: int = -1
    collection_errors: int = 0
    workers: int = 0
    calls: int = 0
    duration_s: float = 0.0
    output: str = ""
    """The tail of pytest's own output in the judge."""


class _Worker:
    """The worker process in the grading sandbox (one exec with a live stdin), restarted when the judge asks; with
    `judge_sandbox`, each generation talks to the judge over its own FIFO pair."""

    def __init__(self, sandbox, deadline: float, path: list[str], judge_sandbox=None) -> None:
        self.sandbox, self.deadline, self.path, self.dialogue = sandbox, deadline, path, None
        self.judge_sandbox, self.pipes, self.gen = judge_sandbox, None, 0

    def start(self) -> None:
        if self.dialogue is not None:
            self.stop()
            self.sandbox.exec("kill -9 -1 2>/dev/null; true", timeout=30, cwd="/")
        self.gen += 1
        args = {"path": self.path}
        if self.judge_sandbox is not None:
            self.close_pipes()
            try:
                self.pipes = Pipes(self.sandbox, self.judge_sandbox, [f"req.{self.gen}", f"ans.{self.gen}"])
            except OSError as e:  # a link folder gone with its sandbox: ours, not the repository's
                raise SandboxError(f"could not share FIFOs between the judge's and the worker's sandboxes: {e}") from e
            args.update(link=self.sandbox.link_path, gen=self.gen)
        seconds = max(1.0, self.deadline - time.monotonic())
        self.dialogue = Dialogue(max_buffer=wire.MAX_LINE * 2)
        cmd = ["bash", "-c", 'exec python3 -I -B -c "$0" "$1"', WORKER, json.dumps(args)]
        self.dialogue.start(lambda d: self.sandbox.exec(cmd, timeout=seconds, cwd=REPO, stdin=d,
                                                        max_output_bytes=4096))

    def ended(self) -> bool:
        """The worker's process is gone (or never started)."""
        return self.dialogue is None or self.dialogue.ended

    def close_pipes(self) -> None:
        if self.pipes is not None:
            self.pipes.close()
            self.pipes = None

    def stop(self) -> None:
        if self.dialogue is None:
            return
        self.dialogue.abort()
        try:
            self.dialogue.wait(15.0)
        except Exception:  # noqa: BLE001 - how the worker ended is not the verdict's business
            pass
        self.dialogue = None

    def relay(self, line: bytes, call_timeout: float) -> bytes:
        """Send the judge's line; the worker's next line as the judge reads it (`w ...`), or `h lost ...`."""
        if self.dialogue is None:
            return self.lost("the worker is not running")
        self.dialogue.send(line + b"\n")
        try:
            answer = self.dialogue.read_line(min(time.monotonic() + call_timeout, self.deadline), wire.MAX_LINE)
        except TimeoutError:
            self.stop()
            return self.lost(f"no answer within {call_timeout:.0f}s")
        except ValueError:
            self.stop()
            return self.lost(f"a line of more than {wire.MAX_LINE} bytes")
        if answer is None:
            self.dialogue = None
            return self.lost("the worker ended")
        return b"w " + answer + b"\n"

    def lost(self, why: str) -> bytes:
        """The host's notice to the judge that this generation of the worker is gone."""
        return f"h lost {self.gen} {why}\n".encode()


def suite_run(worker_sandbox, judge_sandbox, worker_tree: dict[str, str], judge_tree: dict[str, str], *,
              tops: list[str], pythonpath: list[str], ids: list[str], pytest_args: list[str], timeout: float,
              call_timeout: float = CALL_TIMEOUT_S) -> SuiteJudgeRun:
    """Run the tests `ids` of `judge_tree` in `judge_sandbox`, the package (`tops`: its top-level modules, found on
    `pythonpath` under the repo) from `worker_tree` in `worker_sandbox`. Raises the backend's SandboxError when the
    judge's sandbox fails (ours to retry or mask; the caller tells a worker's sandbox killed by the repo apart)."""
    start = time.monotonic()
    deadline = start + timeout
    for sandbox, tree in ((judge_sandbox, judge_tree), (worker_sandbox, worker_tree)):
        sandbox.exec(f"rm -rf {REPO}", timeout=30, cwd="/")
        sandbox.upload_tree(tree, REPO)
    direct = linked(worker_sandbox, judge_sandbox)
    worker = _Worker(worker_sandbox, deadline, pythonpath, judge_sandbox if direct else None)
    worker.start()
    args = json.dumps({"repo": REPO, "tops": tops, "call_timeout": call_timeout,
                       "link": judge_sandbox.link_path if direct else None,
                       "pytest_args": [*pytest_args, "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", REPO,
                                       *ids]})
    judge = Dialogue(max_buffer=wire.MAX_LINE * 2)
    cmd = ["bash", "-c", 'exec python3 -I -B -c "$0" "$1"', JUDGE, args]
    judge.start(lambda d: judge_sandbox.exec(cmd, timeout=timeout, cwd=REPO, stdin=d, max_output_bytes=4096,
                                             env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}))
    try:
        run = _relay(judge, worker, deadline, call_timeout, timeout)
    finally:
        worker.stop()
        worker.close_pipes()
        judge.close()
    try:
        result = judge.wait(max(1.0, deadline - time.monotonic()) + 15)
    except SandboxError:
        if judge_sandbox.alive():  # the exec's own failure after its report: no verdict
            result = None
        else:
            raise
    if run.valid and getattr(result, "exit_code", None) != 0:  # a verdict counts only from a clean end
        run.valid, run.reason = False, f"the judge did not end cleanly after its report ({_ending(result)})"
    if not run.valid and result is None:
        judge.abort()
    run.duration_s = time.monotonic() - start
    return run


def _ending(result) -> str:
    if result is None:
        return "it did not end"
    return "timed out" if getattr(result, "timed_out", False) else f"exit {getattr(result, 'exit_code', None)}"


def _relay(judge: Dialogue, worker: _Worker, deadline: float, call_timeout: float, timeout: float) -> SuiteJudgeRun:
    """Serve the judge's lines (relay them to the worker, restart or kill it) until it reports (or the run ends
    without a verdict); with a direct channel, tell the judge when the worker ends."""
    told = 0  # the last generation whose end the judge was told of
    while True:
        try:
            wake = min(deadline, time.monotonic() + POLL_S) if worker.pipes is not None else deadline
            line = judge.read_line(wake, wire.MAX_LINE + 8)
        except TimeoutError:
            if time.monotonic() < deadline:
                if worker.pipes is not None and told != worker.gen and worker.ended():
                    told = worker.gen
                    judge.send(worker.lost("the worker ended"))
                continue
            judge.abort()
            return SuiteJudgeRun({}, valid=False, reason=f"tests timed out after {timeout:.0f}s")
        except ValueError:
            judge.abort()
            return SuiteJudgeRun({}, valid=False, reason="the judge wrote a line past the cap")
        if line is None:
            return SuiteJudgeRun({}, valid=False, reason="the judge ended without its report")
        if line.startswith(b"W "):
            judge.send(worker.relay(line[2:], call_timeout))
        elif line == b"N":
            worker.start()
            judge.send(b"h ready %d\n" % worker.gen)
        elif line.startswith(b"K ") and line[2:] == str(worker.gen).encode():
            worker.stop()  # the judge's call deadline passed: it has counted this worker lost
        elif line.startswith(b"R "):
            return parse_report(line[2:])
        else:
            judge.abort()
            return SuiteJudgeRun({}, valid=False, reason="the judge wrote a line outside its protocol")


STATUSES = frozenset({"passed", "failed", "error", "skipped", "skipped_in_call", "xfailed"})
MAX_CASES = 20_000  # test cases one report may hold
MAX_NODEID = 2000  # characters of one node id
MAX_CASE_TEXT = 64 << 10  # characters of one case's failure text
MAX_OUTPUT = 8000  # characters of pytest's output tail


class MalformedReport(ValueError):
    """The judge's report is not what the protocol says: the run is invalid, never an exception of the grader."""


def parse_report(raw: bytes) -> SuiteJudgeRun:
    """The judge's report line (after `R `) as a run; a malformed, oversized, deep or ill-typed one is an invalid
    run (reward 0) with the reason: the judge's sandbox is the repository's adversary's too, so its report is data."""
    try:
        return _report(raw)
    except MalformedReport as e:
        return SuiteJudgeRun({}, valid=False, reason=f"the judge's report is malformed: {e}")


def _field(report: dict, key: str, kind: type, default, cap: int | None = None):
    value = report.get(key, default)
    if type(value) is not kind:  # exact: a bool is no int here
        raise MalformedReport(f"{key} is a {type(value).__name__}, not a {kind.__name__}")
    if kind is int and not -(1 << 31) < value < 1 << 31 or cap is not None and len(value) > cap:
        raise MalformedReport(f"{key} is out of range")
    return value


def _report(raw: bytes) -> SuiteJudgeRun:
    try:
        report = wire.loads(raw)  # bounded: the line cap, JSON's own nesting limit
    except wire.WireRefused as e:
        raise MalformedReport(str(e)) from None
    if type(report) is not dict:
        raise MalformedReport("not an object")
    unknown = set(report) - {"exit_code", "cases", "collection_errors", "refused", "workers", "calls", "lost",
                             "output"}
    if unknown:
        raise MalformedReport(f"unknown fields {sorted(unknown)[:3]}")
    cases = _field(report, "cases", dict, None)
    if len(cases) > MAX_CASES:
        raise MalformedReport(f"more than {MAX_CASES} cases")
    for nodeid, case in cases.items():
        if len(nodeid) > MAX_NODEID or type(case) is not dict or set(case) != {"status", "message", "text"} \
                or case["status"] not in STATUSES or type(case["message"]) is not str \
                or type(case["text"]) is not str or len(case["message"]) + len(case["text"]) > MAX_CASE_TEXT:
            raise MalformedReport(f"a malformed case {nodeid[:80]!r}")
    run = SuiteJudgeRun(cases, valid=True, exit_code=_field(report, "exit_code", int, None),
                        collection_errors=_field(report, "collection_errors", int, 0),
                        workers=_field(report, "workers", int, 0), calls=_field(report, "calls", int, 0),
                        output=_field(report, "output", str, "", MAX_OUTPUT))
    _field(report, "lost", int, 0)
    refused = _field(report, "refused", str, "", MAX_OUTPUT)
    if refused:
        run.valid, run.refused = False, refused
        run.reason = f"the repo's code broke the grading protocol: {run.refused}"
    elif run.exit_code not in (0, 1) and not (run.exit_code in (2, 4) and run.collection_errors):
        run.valid, run.reason = False, f"pytest exited {run.exit_code} in the judge"
    return run
