"""Grading: run the hidden tests against the agent's repo in a fresh sandbox; score like SWE-bench.

The grader never trusts the agent's sandbox. It takes the files the agent left, keeps only allowed source
changes (`src_globs`, minus tests, conftest.py, ini files, site hooks), rebuilds the tree from the task's
original files plus those changes plus the hidden tests, and runs the F2P ∪ P2P tests in one of two modes
(`grading_mode`, in every Grade and record):
- `judge` (swe_lite's own corpus): the tests run on the host in judge.py and the repo's code in a worker in a
  *fresh* sandbox, behind a protocol of exact builtin values and handles; the repo's code never runs where the
  verdict is decided. Tasks whose test files all come from the shipped corpus are graded this way.
- `in_process` (tasks a user brings: arbitrary pytest suites): pytest runs in the fresh sandbox through
  harness.py (isolated interpreter, the repo behind the standard library and the test stack, a grader-owned
  plugin that checks the test machinery and each test's code, results on a nonce-tagged channel). Code of the
  repo runs in that process, so a determined policy may still find a way to change the verdict there.
Before either, tampering.py refuses shadowing modules and flags structural exploits. Every outcome the agent can
cause is a Grade with reward 0 and a `reason`; only faults of ours raise SandboxError. docs/swe_lite.md has the
rules.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import json
import re
import shlex
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import agentrl.envs.swe.grading.judge as judge
import agentrl.envs.swe.grading.tampering as tampering
from agentrl.envs.swe.grading.judge import CaseResult
from agentrl.envs.swe.grading.suite import suite_run
from agentrl.envs.swe.patches import PatchError, apply_patch, make_diff
from agentrl.envs.swe.real.packages import load_packages

from agentrl import safe_ast

REPO = "/workspace/repo"
GIT_ENV = {"GIT_AUTHOR_NAME": "swe_lite", "GIT_AUTHOR_EMAIL": "swe_lite@localhost",
           "GIT_COMMITTER_NAME": "swe_lite", "GIT_COMMITTER_EMAIL": "swe_lite@localhost",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
# Never taken from the agent, whatever src_globs says: they change how pytest runs or what it collects.
DENIED = ("conftest.py", "*/conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
          "sitecustomize.py", "*/sitecustomize.py", "usercustomize.py", "*/usercustomize.py", "*.pth",
          "tests/*", "*/tests/*", "test/*", "*/test/*", "test_*.py", "*/test_*.py", "*_test.py", ".*", "*/.*",
          "*/__pycache__/*", "__pycache__/*", "*.pyc")
MAX_FILE_BYTES = 1 << 20
HARNESS = (Path(__file__).parent / "harness.py").read_text()
PYTEST_PREFIXES = (["python3", "-m", "pytest"], ["python", "-m", "pytest"], ["pytest"], ["py.test"])
MAX_OUTPUT_BYTES = 1 << 20
CORPUS = Path(__file__).parent.parent / "lite" / "corpus"
MODES = ("judge", "suite_judge", "in_process")


@dataclass
class SuiteRun:
    """The outcome of one pytest run."""

    cases: dict[str, CaseResult]
    """node id -> result, for every test case found in the XML."""
    exit_code: int
    valid: bool
    reason: str = ""
    output: str = ""
    duration_s: float = 0.0
    collection_errors: int = 0


@dataclass
class Grade:
    """The score of one attempt, with the facts an `info` dict needs."""

    resolved: bool
    f2p: float
    p2p: float
    resolution: str
    """FULL (resolved) | PARTIAL (some F2P pass, all P2P pass) | NO"""
    patch: str
    valid: bool
    reason: str = ""
    suspicious: bool = False
    """The change shadows a module or holds a structural exploit (tampering.py): the reward is 0."""
    findings: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0
    grading_mode: str = ""
    """judge | in_process: how the tests ran ("" when nothing ran)."""
    refused: str = ""
    """What the repo's worker sent that the judge's protocol refused ("" when nothing)."""

    def reward(self, shaped: bool = False) -> float:
        """float(resolved); with `shaped`, f2p × (p2p == 1) as partial credit. 0 when invalid or suspicious."""
        if not self.valid or self.suspicious:
            return 0.0
        if shaped:
            return self.f2p * (self.p2p == 1.0)
        return float(self.resolved)


def failed_grade(reason: str, patch: str = "", *, suspicious: bool = False, findings: list[str] | None = None,
                 start: float | None = None) -> Grade:
    """A Grade of 0 for an attempt that could not be (or must not be) scored, with why."""
    return Grade(resolved=False, f2p=0.0, p2p=0.0, resolution="NO", patch=patch, valid=False, reason=reason,
                 suspicious=suspicious, findings=findings or [],
                 duration_s=time.monotonic() - start if start is not None else 0.0)


def is_allowed(path: str, src_globs: list[str]) -> bool:
    """True when the agent may change `path`: it matches a positive glob, no `!` glob and nothing in DENIED."""
    if any(fnmatch.fnmatchcase(path, pat) for pat in DENIED):
        return False
    positive = [g for g in src_globs if not g.startswith("!")]
    negative = [g[1:] for g in src_globs if g.startswith("!")]
    if not any(fnmatch.fnmatchcase(path, g) for g in positive):
        return False
    return not any(fnmatch.fnmatchcase(path, g) or fnmatch.fnmatchcase(path, g.rstrip("*").rstrip("/") + "/*")
                   for g in negative)


def agent_changes(original: dict[str, str], final: dict[str, bytes], src_globs: list[str]) -> dict[str, str | None]:
    """The allowed changes: {path: new text} for edited or new files, {path: None} for deleted ones.

    Binary (non UTF-8) and oversized files are ignored, as are all disallowed paths and names that are not
    valid UTF-8 (tar hands them over with surrogate escapes; they could not be written to a patch or a record).
    """
    changes: dict[str, str | None] = {}
    for path, data in final.items():
        if not valid_name(path) or not is_allowed(path, src_globs) or len(data) > MAX_FILE_BYTES:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if original.get(path) != text:
            changes[path] = text
    for path in original:
        if path not in final and is_allowed(path, src_globs):
            changes[path] = None
    return changes


def valid_name(path: str) -> bool:
    """True for a name that is valid UTF-8 text without control characters."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(ord(c) < 32 or ord(c) == 127 for c in path)


def apply_changes(files: dict[str, str], changes: dict[str, str | None]) -> dict[str, str]:
    """`files` with the agent's changes applied (None deletes)."""
    out = dict(files)
    for path, text in changes.items():
        if text is None:
            out.pop(path, None)
        else:
            out[path] = text
    return out


def pytest_args(test_cmd: str) -> list[str] | None:
    """The pytest options of a task's `test_cmd` (`python3 -m pytest -q ...` -> ['-q', ...]); None if not pytest."""
    try:
        words = shlex.split(test_cmd)
    except ValueError:
        return None
    for prefix in PYTEST_PREFIXES:
        if words[:len(prefix)] == prefix:
            return words[len(prefix):]
    return None


def read_frame(raw: bytes, nonce: str) -> dict | None:
    """The harness's one report in `raw` output, or None when it is missing, repeated or unreadable."""
    marker = f"\n@@agentrl-grade {nonce} ".encode()
    if raw.count(marker) != 1:
        return None
    rest = raw[raw.index(marker) + len(marker):]
    m = re.match(rb"(\d+)\n", rest)
    if not m:
        return None
    body = rest[m.end():m.end() + int(m.group(1))]
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("cases"), dict) else None


def run_tests(sandbox, test_cmd: str, test_ids: list[str] | None = None, *, timeout: float = 120.0,
              cwd: str = REPO, cpu_limit_s: int | None = None, fail_to_pass: list[str] | None = None,
              test_files: list[str] | None = None) -> SuiteRun:
    """Run pytest on `test_ids` (all tests when None) through the grading harness; validate what it reports.

    `fail_to_pass` and `test_files` (repo paths of the task's own test files) arm the harness's code and
    body checks. Invalid (scored 0, reason given): a timeout, no report or a forged one, tampering the harness
    saw, an exit code that disagrees with the outcomes, fewer test cases than asked for. A module that fails
    to import (collection error: the repo is broken) is a valid run whose missing tests count as failed. `cpu_limit_s` bounds
    CPU seconds (`ulimit -t`), which unlike the wall clock does not depend on how busy the machine is.
    """
    extra = pytest_args(test_cmd)
    if extra is None:
        return SuiteRun({}, exit_code=-1, valid=False, reason=f"test_cmd must run pytest, got {test_cmd!r}")
    ids = list(test_ids or [])
    nonce = uuid.uuid4().hex
    args = json.dumps({"repo": cwd, "f2p": list(fail_to_pass or []), "test_files": list(test_files or []),
                       "pytest_args": [*extra, "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", cwd,
                                       "--import-mode=append", *ids]})
    limit = f"ulimit -t {int(cpu_limit_s)}; " if cpu_limit_s else ""
    cmd = ["bash", "-c", f'{limit}exec python3 -I -B -c "$0" "$1"', HARNESS, args]
    start = time.monotonic()
    res = sandbox.exec(cmd, timeout=timeout, cwd=cwd, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                       stdin=nonce.encode(), max_output_bytes=MAX_OUTPUT_BYTES)
    duration = time.monotonic() - start
    output = res.raw.replace(nonce.encode(), b"<nonce>").decode("utf-8", errors="replace")
    base = dict(exit_code=res.exit_code, output=output, duration_s=duration)
    if res.timed_out:
        return SuiteRun({}, valid=False, reason=f"tests timed out after {timeout:.0f}s", **base)
    frame = read_frame(res.raw, nonce)
    if frame is None:
        return SuiteRun({}, valid=False, reason=f"the test process ended without the grader's report "
                        f"(exit {res.exit_code}{', output flooded' if res.truncated else ''})", **base)
    cases = {str(k): CaseResult(str(v.get("status", "error")), str(v.get("message", "")), str(v.get("text", "")))
             for k, v in frame["cases"].items() if isinstance(v, dict)}
    run = SuiteRun(cases, exit_code=int(frame.get("exit_code", -1)), valid=True, output=output,
                   duration_s=duration, collection_errors=int(frame.get("collection_errors", 0)))
    reason = _invalid_report(run, res.exit_code, [str(t) for t in frame.get("tampered", [])], ids)
    if reason:
        run.valid, run.reason = False, reason
    return run


def _invalid_report(run: SuiteRun, harness_exit: int, tampered: list[str], ids: list[str]) -> str | None:
    """Why a harness report cannot be trusted (None: it can): the harness's own exit code, tampering it saw,
    a pytest exit code that disagrees with the outcomes, requested tests that did not run."""
    errors = run.collection_errors
    failed = sum(c.status in ("failed", "error") for c in run.cases.values()) + errors
    if harness_exit != 0:
        return f"the harness exited {harness_exit} after reporting"
    if tampered:
        return "tampering: " + "; ".join(tampered[:5])
    if run.exit_code not in (0, 1) and not (run.exit_code in (2, 4) and errors):
        return f"pytest exited {run.exit_code} (interrupted, internal or usage error)"
    if run.exit_code == 1 and not failed:
        return "pytest exited 1 but no test failed"
    if ids and not errors and len(set(ids) & set(run.cases)) < len(set(ids)):
        return f"{len(set(ids) - set(run.cases))} of {len(set(ids))} requested tests did not run"
    return None


@functools.cache
def _corpus_statements(module: str) -> frozenset[str] | None:
    """The top-level statements (as ast dumps) of a corpus module's test file; None for no such module."""
    path = CORPUS / module / "tests" / f"test_{module}.py"
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", module) or not path.is_file():
        return None
    return frozenset(ast.dump(node) for node in safe_ast.parse(path.read_text()).body)


def grading_mode(task, tree: dict[str, str], test_files: list[str]) -> str:
    """`judge` when every test file to run is made only of the shipped corpus's own test code; `suite_judge` for a
    task of one of the pinned real packages (real/packages.json: its source and test folders are known); else
    `in_process`.

    The judge executes the test files on the host, so it takes only statements that ship with agentrl; the suite
    judge runs a package's own suite in a sandbox of its own; a task a user brings runs its tests in the sandbox.
    """
    if package_of(task) is not None:
        return "suite_judge"
    known = _corpus_statements(task.repo.split("/", 1)[1]) if task.repo.startswith("swe_lite/") else None
    if known is None or not test_files:
        return "in_process"
    for path in test_files:
        try:
            body = safe_ast.parse(tree[path]).body
        except (KeyError, SyntaxError, ValueError):
            return "in_process"
        if any(ast.dump(node) not in known for node in body):
            return "in_process"
    return "judge"


def package_of(task):
    """The pinned real package a task's repository is (real/packages.json), or None."""
    return next((p for p in load_packages() if p.repo == task.repo), None)


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def suite_judge_run(sandbox, task, tree: dict[str, str], ids: list[str], *, timeout: float,
                    judge_sandbox=None) -> tuple[SuiteRun, str]:
    """(SuiteRun, what the protocol refused) for a real package's tests `ids` run by the suite judge: the tests,
    with the package's source taken out, in a second fresh sandbox (`judge_sandbox`: a factory of context managers,
    default another sandbox like `sandbox`); the repo without its tests in `sandbox`, where the worker runs it."""
    pkg = package_of(task)
    source = [r for r in pkg.source]
    tests = [*pkg.tests, "conftest.py", "*/conftest.py"]
    worker_tree = {p: t for p, t in tree.items() if not _under(p, pkg.tests) and not fnmatch.fnmatch(p, "*conftest.py")}
    judge_tree = {p: t for p, t in tree.items() if not _under(p, source) or _under(p, pkg.tests)}
    tops = sorted({_top(r, pkg.pythonpath) for r in source})
    if judge_sandbox is None:
        from agentrl.sandboxes import open_sandbox

        config = getattr(sandbox, "config", None)
        judge_sandbox = lambda: open_sandbox(sandbox.backend, config=config)  # noqa: E731
    extra = pytest_args(task.test_cmd) or []
    with (judge_sandbox() if callable(judge_sandbox) else nullcontext(judge_sandbox)) as jsb:
        jr = suite_run(sandbox, jsb, worker_tree, judge_tree, tops=tops, pythonpath=[pkg.pythonpath], ids=ids,
                       pytest_args=[a for a in extra if a not in tests], timeout=timeout)
    cases = {k: CaseResult(str(v.get("status", "error")), str(v.get("message", "")), str(v.get("text", "")))
             for k, v in jr.cases.items() if isinstance(v, dict)}
    return SuiteRun(cases, exit_code=jr.exit_code, valid=jr.valid, reason=jr.reason, duration_s=jr.duration_s,
                    collection_errors=jr.collection_errors, output=jr.output), jr.refused


def _top(root: str, pythonpath: str) -> str:
    """The top-level module a source root of a package defines (`src/click` under `src` -> click)."""
    rel = root if pythonpath in ("", ".") else root[len(pythonpath.rstrip("/")) + 1:]
    first = rel.split("/")[0]
    return first[:-3] if first.endswith(".py") else first


def judge_run(sandbox, tree: dict[str, str], test_files: list[str], ids: list[str], *, timeout: float,
              cwd: str = REPO, cpu_limit_s: int | None = None) -> tuple[SuiteRun, str]:
    """(SuiteRun, what the protocol refused) for the tests `ids` run by the judge; the sandbox gets the repo
    without the test files (the worker never needs them, so they never enter the sandbox)."""
    setup_repo(sandbox, {p: t for p, t in tree.items() if p not in test_files}, git=False, path=cwd)
    jr = judge.judge_tests(sandbox, {p: tree[p] for p in test_files}, ids, cwd=cwd, timeout=timeout,
                           cpu_limit_s=cpu_limit_s)
    cases = jr.cases
    failed = any(c.status != "passed" for c in cases.values())
    return SuiteRun(cases, exit_code=1 if failed else 0, valid=jr.valid, reason=jr.reason,
                    output="\n".join(jr.log), duration_s=jr.duration_s,
                    collection_errors=jr.collection_errors), jr.refused


def setup_repo(sandbox, files: dict[str, str], *, git: bool = True, path: str = REPO) -> None:
    """Write `files` into the sandbox at `path`; with `git`, make it a repo with one commit and no history."""
    sandbox.exec(f"rm -rf {shlex.quote(path)}", timeout=30, cwd="/")
    sandbox.upload_tree(files, path)
    if git:
        res = sandbox.exec("git init -q && git add -A && git commit -q -m 'Initial commit' && "
                           "rm -rf .git/hooks .git/logs .git/description .git/info", timeout=60, cwd=path,
                           env=GIT_ENV)
        if res.exit_code != 0:
            from agentrl.errors import SandboxError

            raise SandboxError(f"could not initialise the task repository (exit {res.exit_code}): {res.output[-300:]}")


def score(run: SuiteRun, fail_to_pass: list[str], pass_to_pass: list[str]) -> tuple[float, float]:
    """(f2p rate, p2p rate), SWE-bench semantics made strict: F2P needs passed, P2P also accepts skipped.

    A skip raised while the test body runs (`skipped_in_call`, e.g. pytest.skip() from repo code) and an
    xfail count as failed for both; a missing test counts as failed; an empty list counts as 1.0; an invalid
    run scores 0 on both.
    """
    if not run.valid:
        return 0.0, 0.0

    def rate(ids: list[str], ok: tuple[str, ...]) -> float:
        if not ids:
            return 1.0
        return sum(run.cases.get(t, CaseResult("missing")).status in ok for t in ids) / len(ids)

    return rate(fail_to_pass, ("passed",)), rate(pass_to_pass, ("passed", "skipped"))


def grade(sandbox, task, final_files: dict[str, bytes] | None = None, *, changes: dict[str, str | None] | None = None,
          timeout: float = 120.0, mode: str = "auto", judge_sandbox=None) -> Grade:
    """Grade the agent's final tree (or explicit `changes`) for `task` in `sandbox`, which must be fresh.

    `mode`: "auto" grades the way `grading_mode` says; "in_process" forces the pytest harness (to compare the
    modes); "judge" and "suite_judge" are refused for a task they cannot take. `judge_sandbox` (the suite judge's
    second fresh sandbox: a sandbox, or a factory of context managers yielding one) defaults to a new one.

    Never raises for what the agent did: every such outcome is a Grade of 0 with a reason. Raises
    SandboxError only when the sandbox itself fails (ours to retry or mask).
    """
    start = time.monotonic()
    if changes is None:
        changes = agent_changes(task.files, final_files or {}, task.src_globs)
    patched = apply_changes(task.files, changes)
    patch = make_diff(task.files, patched)
    shadows = tampering.shadowing(task.files, changes)
    findings = shadows + tampering.findings(task.files, changes)
    if shadows:  # refused before anything runs
        return failed_grade("tampering: " + "; ".join(shadows[:5]), patch, suspicious=True, findings=findings,
                            start=start)
    # only allowed paths can differ from the task's files, so tests, conftest.py and ini files are the task's own
    try:
        tree = apply_patch(patched, task.test_patch) if task.test_patch else patched
    except PatchError as e:
        return failed_grade(f"the hidden tests do not apply to the changed repo: {e}", patch, findings=findings,
                            start=start)
    ids = list(dict.fromkeys(task.FAIL_TO_PASS + task.PASS_TO_PASS))
    test_files = sorted({t.split("::")[0] for t in ids if t.split("::")[0] in tree})
    allowed = grading_mode(task, tree, test_files)
    if mode not in ("auto", *MODES) or (mode in ("judge", "suite_judge") and allowed != mode):
        raise ValueError(f"grading mode {mode!r} is not available for {task.instance_id} (it allows {allowed!r})")
    mode, refused = (allowed if mode == "auto" else mode), ""
    if mode == "judge":
        run, refused = judge_run(sandbox, tree, test_files, ids, timeout=timeout)
    elif mode == "suite_judge":
        run, refused = suite_judge_run(sandbox, task, tree, ids, timeout=timeout, judge_sandbox=judge_sandbox)
    else:
        setup_repo(sandbox, tree, git=False)
        run = run_tests(sandbox, task.test_cmd, ids, timeout=timeout, fail_to_pass=ids, test_files=test_files)
    f2p, p2p = score(run, task.FAIL_TO_PASS, task.PASS_TO_PASS)
    suspicious = bool(findings)
    resolved = run.valid and not suspicious and f2p == 1.0 and p2p == 1.0
    resolution = "FULL" if resolved else "PARTIAL" if run.valid and 0 < f2p < 1 and p2p == 1.0 else "NO"
    reason = run.reason or ("suspicious: " + "; ".join(findings[:5]) if suspicious else "")
    return Grade(resolved=resolved, f2p=f2p, p2p=p2p, resolution=resolution, patch=patch, valid=run.valid,
                 reason=reason, suspicious=suspicious, findings=findings,
                 statuses={t: run.cases[t].status if t in run.cases else "missing" for t in ids},
                 duration_s=time.monotonic() - start, grading_mode=mode, refused=refused)
