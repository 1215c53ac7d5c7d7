"""Grading: run pytest in a sandbox, read JUnit XML, score with SWE-bench semantics (swe_sandbox.md §4).

The grader never trusts the agent's sandbox. It takes the files the agent left, keeps only allowed source
changes (`src_globs`, minus tests, conftest.py, ini files, site hooks), rebuilds the tree from the task's
original files plus those changes plus the hidden tests, and runs the F2P ∪ P2P tests in a *fresh*
sandbox. Results come from a JUnit XML file at an unpredictable path, cross-checked against pytest's exit
code: exit 0 with failures in the XML, a non-zero exit with none, a missing XML or fewer test cases than
expected all make the run invalid (SWE-bench commit 4635739), which scores as unresolved.
"""

from __future__ import annotations

import fnmatch
import shlex
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from agentrl.envs.swe_lite.patches import apply_patch, make_diff

REPO = "/workspace/repo"
GIT_ENV = {"GIT_AUTHOR_NAME": "swe_lite", "GIT_AUTHOR_EMAIL": "swe_lite@localhost",
           "GIT_COMMITTER_NAME": "swe_lite", "GIT_COMMITTER_EMAIL": "swe_lite@localhost",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
# Never taken from the agent, whatever src_globs says: they change how pytest runs or what it collects.
DENIED = ("conftest.py", "*/conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
          "sitecustomize.py", "*/sitecustomize.py", "usercustomize.py", "*/usercustomize.py", "*.pth",
          "tests/*", "*/tests/*", "test/*", "*/test/*", "test_*.py", "*/test_*.py", "*_test.py", ".*", "*/.*",
          "*/__pycache__/*", "__pycache__/*", "*.pyc")
SUSPICIOUS = ("_pytest", "sys.modules[", "builtins", "os._exit", "atexit", "junit", "sys.exit", "pytest")
MAX_FILE_BYTES = 1 << 20


@dataclass
class CaseResult:
    """One test case from the JUnit XML."""

    status: str
    """passed | failed | error | skipped | xfailed"""
    message: str = ""
    text: str = ""


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
    statuses: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0

    def reward(self, shaped: bool = False) -> float:
        """float(resolved); with `shaped`, f2p × (p2p == 1) as partial credit."""
        if shaped:
            return self.f2p * (self.p2p == 1.0) if self.valid else 0.0
        return float(self.resolved)


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

    Binary (non UTF-8) and oversized files are ignored, as are all disallowed paths.
    """
    changes: dict[str, str | None] = {}
    for path, data in final.items():
        if not is_allowed(path, src_globs) or len(data) > MAX_FILE_BYTES:
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


def apply_changes(files: dict[str, str], changes: dict[str, str | None]) -> dict[str, str]:
    """`files` with the agent's changes applied (None deletes)."""
    out = dict(files)
    for path, text in changes.items():
        if text is None:
            out.pop(path, None)
        else:
            out[path] = text
    return out


def is_suspicious(patch: str) -> bool:
    """A static scan of the added lines for test-harness tampering (flag for audit; not a score change)."""
    added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return any(token in line for line in added for token in SUSPICIOUS)


def junit_key(nodeid: str) -> tuple[str, str]:
    """The (classname, name) pytest writes to JUnit XML for a node id."""
    path, *rest = nodeid.split("::")
    module = path[:-3] if path.endswith(".py") else path
    parts = module.replace("/", ".")
    *classes, name = rest if rest else [""]
    return ".".join([parts, *classes]), name


def nodeid_from_junit(classname: str, name: str) -> str:
    """Best-effort inverse of junit_key for flat test modules (`tests.test_x` -> `tests/test_x.py::name`)."""
    return classname.replace(".", "/") + ".py::" + name


_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}


def parse_junit(data: bytes) -> tuple[list[tuple[str, str, CaseResult]], int]:
    """([(classname, name, result)], collection error count) from pytest's JUnit XML."""
    root = ET.fromstring(data)
    cases: list[tuple[str, str, CaseResult]] = []
    collection_errors = 0
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        result = CaseResult("passed")
        for child in case:
            tag = child.tag
            if tag == "skipped":
                kind = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
                result = CaseResult(kind, child.get("message", ""), child.text or "")
            elif tag in ("failure", "error"):
                status = "failed" if tag == "failure" else "error"
                if _RANK[status] >= _RANK[result.status]:
                    result = CaseResult(status, child.get("message", ""), child.text or "")
        if not classname and result.status == "error":
            collection_errors += 1
        cases.append((classname, name, result))
    return cases, collection_errors


def run_tests(sandbox, test_cmd: str, test_ids: list[str] | None = None, *, timeout: float = 120.0,
              cwd: str = REPO, cpu_limit_s: int | None = None) -> SuiteRun:
    """Run `test_cmd` on `test_ids` (all tests when None) with a JUnit XML at a random path; validate it.

    `cpu_limit_s` bounds CPU seconds (`ulimit -t`): unlike the wall-clock timeout it does not depend on how
    busy the machine is, so an endless loop is told apart from a slow run the same way every time.
    """
    xml_path = f"/tmp/.grade-{uuid.uuid4().hex}.xml"
    ids = " ".join(shlex.quote(t) for t in (test_ids or []))
    limit = f"ulimit -t {int(cpu_limit_s)}; " if cpu_limit_s else ""
    cmd = f"{limit}{test_cmd} --rootdir=. --junitxml={xml_path} {ids}"  # node ids are relative to the repo root
    start = time.monotonic()
    res = sandbox.exec(cmd, timeout=timeout, cwd=cwd, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                       max_output_bytes=64 << 10)
    duration = time.monotonic() - start
    base = dict(exit_code=res.exit_code, output=res.output, duration_s=duration)
    if res.timed_out:
        return SuiteRun({}, valid=False, reason=f"tests timed out after {timeout:.0f}s", **base)
    try:
        data = sandbox.read_file(xml_path, max_bytes=8 << 20)
    except FileNotFoundError:
        return SuiteRun({}, valid=False, reason=f"pytest wrote no JUnit XML (exit {res.exit_code})", **base)
    try:
        raw_cases, collection_errors = parse_junit(data)
    except ET.ParseError as e:
        return SuiteRun({}, valid=False, reason=f"unreadable JUnit XML: {e}", **base)
    cases: dict[str, CaseResult] = {}
    by_key = {junit_key(t): t for t in (test_ids or [])}
    for classname, name, result in raw_cases:
        nodeid = by_key.get((classname, name)) or nodeid_from_junit(classname, name)
        if nodeid not in cases or _RANK[result.status] > _RANK[cases[nodeid].status]:
            cases[nodeid] = result
    failed = sum(c.status in ("failed", "error") for c in cases.values()) + collection_errors
    run = SuiteRun(cases, valid=True, collection_errors=collection_errors, **base)
    if res.exit_code == 0 and failed:
        run.valid, run.reason = False, f"pytest exited 0 but the XML records {failed} failures"
    elif res.exit_code != 0 and not failed:
        run.valid, run.reason = False, f"pytest exited {res.exit_code} but the XML records no failure"
    elif test_ids and len(cases) < len(set(test_ids)):
        run.valid, run.reason = False, f"the XML has {len(cases)} test cases, expected {len(set(test_ids))}"
    return run


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
    """(f2p rate, p2p rate) with SWE-bench semantics: F2P needs passed/xfailed, P2P also accepts skipped.

    A missing test counts as failed; an empty list counts as 1.0; an invalid run scores 0 on both.
    """
    if not run.valid:
        return 0.0, 0.0

    def rate(ids: list[str], ok: tuple[str, ...]) -> float:
        if not ids:
            return 1.0
        return sum(run.cases.get(t, CaseResult("missing")).status in ok for t in ids) / len(ids)

    return rate(fail_to_pass, ("passed", "xfailed")), rate(pass_to_pass, ("passed", "skipped", "xfailed"))


def grade(sandbox, task, final_files: dict[str, bytes] | None = None, *, changes: dict[str, str | None] | None = None,
          timeout: float = 120.0) -> Grade:
    """Grade the agent's final tree (or explicit `changes`) for `task` in `sandbox`, which must be fresh.

    Raises SandboxError when the sandbox fails; a broken or tampered test run is a valid Grade of 0.
    """
    start = time.monotonic()
    if changes is None:
        changes = agent_changes(task.files, final_files or {}, task.src_globs)
    patched = apply_changes(task.files, changes)
    patch = make_diff(task.files, patched)
    # only allowed paths can differ from the task's files, so tests, conftest.py and ini files are the task's own
    tree = apply_patch(patched, task.test_patch) if task.test_patch else patched
    setup_repo(sandbox, tree, git=False)
    ids = list(dict.fromkeys(task.FAIL_TO_PASS + task.PASS_TO_PASS))
    run = run_tests(sandbox, task.test_cmd, ids, timeout=timeout)
    f2p, p2p = score(run, task.FAIL_TO_PASS, task.PASS_TO_PASS)
    resolved = run.valid and f2p == 1.0 and p2p == 1.0
    resolution = "FULL" if resolved else "PARTIAL" if run.valid and 0 < f2p < 1 and p2p == 1.0 else "NO"
    return Grade(resolved=resolved, f2p=f2p, p2p=p2p, resolution=resolution, patch=patch, valid=run.valid,
                 reason=run.reason, suspicious=is_suspicious(patch),
                 statuses={t: run.cases[t].status if t in run.cases else "missing" for t in ids},
                 duration_s=time.monotonic() - start)

