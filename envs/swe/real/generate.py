"""Generate data/tasks.jsonl: bugs planted in real packages, validated by the packages' own test suites.

    python -m agentrl.envs.swe.real.packages                       # set-up: fetch the pinned sdists (once)
    python -m agentrl.envs.swe.real.generate                        # writes envs/swe/real/data/tasks.jsonl
    python -m agentrl.envs.swe.real.generate --packages parse --check   # regenerate one package, compare
    python -m agentrl.envs.swe.real.generate --check                # regenerate everything, compare byte for byte
    python -m agentrl.envs.swe.real.generate --self-check [--sample N]  # grade gold (must resolve) and empty (must not)
    python -m agentrl.envs.swe.real.generate --self-check --audit      # and swe_lite's test-strength audit

Per package (its own RNG, seeded by (seed, package), so any subset regenerates identically):
1. baseline: the package's suite runs twice in the sandbox under a probe that records each test's outcome,
   duration and the package functions it calls (hash seeds 0 and 1: a test function whose parametrized ids
   differ between them is excluded whole, since grading's `python -I` draws its own seed). Kept tests passed both times, took < SLOW_S each time, are plain
   test functions (the harness can check their code) and have printable ASCII ids; the rest (flaky, slow,
   unittest-style, failing here) are excluded. The kept tests must then pass under the grading harness itself.
2. single bugs: mutation candidates (mutations.py: swe_lite's operators + swap_args, drop_branch,
   slice_off_by_one) in functions the kept tests call, in seeded order. Each mutant runs the kept tests
   that call its function (the only ones it can fail); it is kept when 1..MAX_F2P tests fail (F2P) and a new (file, function,
   operator) and diff, at most PER_FUNCTION per function.
3. two-bug tasks: pairs of accepted bugs in different functions, applied together; F2P must hold a test of each.
   A package's `rounds` (packages.json, default 1) repeats steps 2-3 on the next candidates: each round adds up to
   PER_PACKAGE single bugs (from at most MAX_TRIES runs) and PAIRS pairs of its own bugs, numbered after the
   earlier rounds' tasks, which stay byte for byte what they were.
4. the task: the test files holding an F2P test are hidden (test_patch adds them back at grading), P2P = their
   other kept tests; then graded once with the empty patch (a second run of the mutant: every F2P must fail and
   every P2P pass, or the task is dropped as unstable). The gold tree is the clean package, whose kept tests pass
   under the harness (step 1); `--self-check` grades gold and empty for every task.
5. too weak to ship: a task with fewer than MIN_F2P fail-to-pass tests, or one that a generic non-fix of the
   test-strength audit resolves (swe_lite's audit.py: mock.ANY, an always-equal object, ..., in the faulty
   function, and the always-equal object in each function the issue text blames), is dropped after
   the package's tasks are numbered (`weakness`), so the other tasks keep their numbers and statements.
6. sealed snapshots: every test file some task of the package hides leaves every task's snapshot (`seal`).
7. decided by the suite judge: gold and empty are graded under it (grading/suite.py); only the F2P tests gold passes
   and empty fails there, and the P2P tests both pass, stay; fewer than MIN_F2P F2P tests drop the task
   (`judge_filter`). `--judge-filter FILE` runs steps 6-8 on a file made before them.
8. generic non-fixes under the suite judge (nonfixes.py): mock.ANY returned from the faulty function(s), or only
   where they return a package object, or from the functions the issue blames; every package class equal to
   anything. Each is screened by a plain pytest run of the F2P tests, and one that passes them there is graded as
   the env grades a submission; a task whose tests all pass under one is dropped (`nonfix_filter`), and the
   log counts the drops per non-fix. `--nonfix-filter FILE` runs step 8 alone on a file made before it.
Grading is `suite_judge`: the package's tests run in a judge sandbox, its code in a worker sandbox.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import agentrl.envs.swe.audit as strength
import agentrl.envs.swe.grading.grader as grading
import agentrl.envs.swe.real.mutations as mutations
import agentrl.envs.swe.real.nonfixes as nonfixes
import agentrl.envs.swe.real.statements as statements
from agentrl.envs.swe.grading.grader import REPO, run_tests, setup_repo
from agentrl.envs.swe.levels import min_level
from agentrl.envs.swe.mutate import Mutation, changed_lines, changed_text
from agentrl.envs.swe.patches import make_diff, tree_id
from agentrl.envs.swe.real.packages import Package, load_packages, snapshot_files
from agentrl.envs.swe.real.tasks import (
    DEFAULT_TASKS,
    GRADING_MODE,
    hidden_files,
    load_real,
    record_of,
    write_records,
)
from agentrl.envs.swe.tasks import TEST_CMD, Task

GENERATOR_VERSION = "1"
MAX_F2P = 30  # real suites parametrize one function over many cases: a bug often fails dozens
MIN_F2P = 2  # one failing test could be special-cased from the issue text's reproduction
PER_PACKAGE = 20  # single-bug tasks per package at most
PAIRS = 3  # two-bug tasks per package at most
PER_FUNCTION = 2
MAX_NAMED = 3  # definitions per name the issue text blames that the audit plants an always-equal value in
MAX_TRIES = 48  # candidates run per package at most
SLOW_S = 1.0  # a test slower than this in either baseline run is excluded
CPU_S = 60  # CPU seconds for one run of the covering tests (a mutant that loops forever is dropped)
TIMEOUT_S = 180
PROBE = r'''
import json, os, sys, time, types
import pytest
out, roots = sys.argv[1], json.loads(sys.argv[2])
repo = os.getcwd()
current = None
def prof(frame, event, arg):
    if event == "call" and current is not None:
        name = frame.f_code.co_filename
        if name.startswith(repo + "/"):
            current.add((name[len(repo) + 1:], frame.f_code.co_firstlineno))
class Probe:
    def __init__(self):
        self.res = {}
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        global current
        seen, t = set(), time.perf_counter()
        current = seen
        sys.setprofile(prof)
        try:
            yield
        finally:
            sys.setprofile(None)
            current = None
        r = self.res.setdefault(item.nodeid, {})
        obj = getattr(item, "obj", None)
        r["seconds"] = time.perf_counter() - t
        r["plain"] = type(item) is pytest.Function and isinstance(obj, (types.FunctionType, types.MethodType))
        r["covers"] = sorted([f, n] for f, n in seen if any(f == s or f.startswith(s + "/") for s in roots))
    def pytest_runtest_logreport(self, report):
        r = self.res.setdefault(report.nodeid, {})
        r["ok"] = r.get("ok", True) and report.outcome == "passed"
probe = Probe()
code = pytest.main(sys.argv[3:], plugins=[probe])
with open(out, "w") as f:
    json.dump({"exit": int(code), "tests": probe.res}, f)
'''

BATCH = r'''
import json, os, signal, sys
import pytest
spec = json.load(open(sys.argv[1]))
results = []
for m in spec["mutants"]:
    originals = {}
    for path, text in m["files"].items():
        with open(path) as f:
            originals[path] = f.read()
        with open(path, "w") as f:
            f.write(text)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        signal.alarm(spec["seconds"])
        class Probe:
            def __init__(self):
                self.bad, self.seen = {}, set()
            def pytest_collection_modifyitems(self, items):
                self.seen.update(i.nodeid for i in items)
            def pytest_runtest_logreport(self, report):
                if report.outcome != "passed" and report.nodeid not in self.bad:
                    self.bad[report.nodeid] = str(report.longrepr)[-4000:] if report.longrepr else report.outcome
        probe = Probe()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        try:
            code = int(pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", *m["ids"]], plugins=[probe]))
        except BaseException:
            code = -1
        os.write(w, json.dumps({"exit": code, "bad": probe.bad, "seen": sorted(probe.seen)}).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    for path, text in originals.items():
        with open(path, "w") as f:
            f.write(text)
    results.append(json.loads(data) if data else None)
with open(spec["out"], "w") as f:
    json.dump(results, f)
'''
BATCH_SIZE = 24
MUTANT_S = 30  # wall seconds for one mutant's tests in the batch runner (a mutant that loops is dropped)


@dataclass
class Baseline:
    """The kept tests of a package and which source functions each covers."""

    tests: list[str]
    covers: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    excluded: dict[str, int] = field(default_factory=dict)
    """why -> how many tests were left out (flaky, slow, not plain, failing, odd id, harness)."""


@dataclass
class Bug:
    """One accepted single mutation: where, what, and what it breaks."""

    path: str
    mutation: Mutation
    failing: list[str]
    failures: dict[str, str]


def source_files(pkg: Package, files: dict[str, str]) -> list[str]:
    """The package's Python source files (under `source`, outside `tests`), sorted."""
    def under(p: str, roots) -> bool:
        return any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)

    return sorted(p for p in files if p.endswith(".py") and under(p, pkg.source) and not under(p, pkg.tests))


def test_file(node_id: str) -> str:
    """The file part of a pytest node id."""
    return node_id.split("::", 1)[0]


def function_spans(source: str) -> dict[str, tuple[int, int]]:
    """qualname -> (first line with decorators, last line) for the functions mutate.py names."""
    from agentrl.envs.swe.mutate import functions

    spans = {}
    for name, node in functions(ast.parse(source)):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        spans[name] = (first, node.end_lineno)
    return spans


class Generator:
    """Validates the mutants of one package after another in one sandbox."""

    def __init__(self, sandbox, seed: int = 0, log=print, judge_sandbox=None) -> None:
        self.sandbox, self.seed, self.log = sandbox, seed, log
        self.judge_sandbox = judge_sandbox  # the suite judge's second sandbox (None: grading opens one per grade)
        self.stats: dict[str, dict] = {}

    # ---- runs --------------------------------------------------------------------------------------
    def _probe(self, pkg: Package, hash_seed: int) -> dict:
        self.sandbox.write_file("/workspace/probe.py", PROBE)
        roots = json.dumps(list(pkg.source))
        cmd = ["python3", "-B", "/workspace/probe.py", "/workspace/probe.json", roots, "-q", "-p", "no:cacheprovider",
               "-o", "addopts=", "--continue-on-collection-errors", *pkg.tests]  # a broken test file drops only itself
        res = self.sandbox.exec(cmd, timeout=600, cwd=REPO,
                                env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONHASHSEED": str(hash_seed)})
        try:
            return json.loads(self.sandbox.read_file("/workspace/probe.json", max_bytes=64 << 20))
        except Exception as e:
            raise RuntimeError(f"{pkg.name}: the baseline probe wrote no report (exit {res.exit_code}): "
                               f"{res.output[-1500:]}") from e

    def baseline(self, pkg: Package, files: dict[str, str]) -> Baseline:
        """Run the suite twice under the probe (hash seeds 0 and 1) and once under the harness; keep the stable,
        fast, plain tests."""
        setup_repo(self.sandbox, files, git=False)
        # two hash seeds: a test whose id depends on set or dict order (grading's python -I draws its own seed)
        # is missing from one of the runs, and excluded like a flaky one
        runs = [self._probe(pkg, 0)["tests"], self._probe(pkg, 1)["tests"]]
        excluded: dict[str, int] = {}
        kept = []
        ids = [{n.split("[")[0]: set() for n in run} for run in runs]
        for run, by_function in zip(runs, ids, strict=True):
            for n in run:
                by_function[n.split("[")[0]].add(n)
        unstable = {f for f in set(ids[0]) | set(ids[1]) if ids[0].get(f) != ids[1].get(f)}
        for node in sorted(set(runs[0]) | set(runs[1])):
            a, b = runs[0].get(node, {}), runs[1].get(node, {})
            why = ("excluded by packages.json" if test_file(node) in pkg.exclude else
                   "parametrized ids depend on hash order" if node.split("[")[0] in unstable else
                   "flaky or failing" if not (a.get("ok") and b.get("ok")) else
                   "slow" if max(a.get("seconds", 99), b.get("seconds", 99)) >= SLOW_S else
                   "not a plain test function" if not (a.get("plain") and b.get("plain")) else
                   "odd id" if not (node.isascii() and node.isprintable()) or test_file(node) not in files else None)
            if why:
                excluded[why] = excluded.get(why, 0) + 1
            else:
                kept.append(node)
        run = run_tests(self.sandbox, TEST_CMD, kept, timeout=TIMEOUT_S * 2, cpu_limit_s=CPU_S * 4, fail_to_pass=kept,
                        test_files=sorted({test_file(t) for t in kept}))
        if not run.valid:
            raise RuntimeError(f"{pkg.name}: the kept tests do not run under the harness: {run.reason} "
                               f"{run.output[-1500:]}")
        passing = [t for t in kept if run.cases.get(t) and run.cases[t].status == "passed"]
        if len(passing) < len(kept):
            excluded["fails under the harness"] = len(kept) - len(passing)
        covers = {t: {(f, n) for f, n in runs[0][t]["covers"]} for t in passing}
        return Baseline(passing, covers, excluded)

    def screen(self, changes: list[tuple[dict[str, str], list[str]]]) -> list[tuple[list[str], dict[str, str]] | None]:
        """For each (mutated files, test ids): (failing ids, their failure texts), or None when the run broke
        (a collection error, a test missing, a timeout). The failure texts become issue texts, so the hash seed
        is fixed (set reprs must not change between regenerations). One sandbox call per BATCH_SIZE mutants: a parent
        process imports pytest once and forks a child per mutant (plain pytest; the harness checks the
        accepted ones when their task is graded)."""
        self.sandbox.write_file("/workspace/batch.py", BATCH)
        out: list = []
        for i in range(0, len(changes), BATCH_SIZE):
            chunk = changes[i:i + BATCH_SIZE]
            spec = {"mutants": [{"files": f, "ids": ids} for f, ids in chunk], "seconds": MUTANT_S,
                    "out": "/workspace/batch.json"}
            self.sandbox.write_file("/workspace/batch_spec.json", json.dumps(spec))
            res = self.sandbox.exec(["python3", "-B", "/workspace/batch.py", "/workspace/batch_spec.json"],
                                    timeout=MUTANT_S * len(chunk) + 120, cwd=REPO,
                                    env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONHASHSEED": "0"})
            try:
                results = json.loads(self.sandbox.read_file("/workspace/batch.json", max_bytes=64 << 20))
            except Exception as e:
                raise RuntimeError(f"the batch runner wrote no report (exit {res.exit_code}): {res.output[-1500:]}") from e
            self.sandbox.exec("rm -f /workspace/batch.json", timeout=30, cwd="/")
            for (_, ids), r in zip(chunk, results, strict=True):
                if r is None or r["exit"] not in (0, 1) or set(ids) - set(r["seen"]):
                    out.append(None)
                else:
                    out.append((sorted(t for t in ids if t in r["bad"]), {t: r["bad"][t] for t in ids if t in r["bad"]}))
        return out

    # ---- one package -------------------------------------------------------------------------------
    def package_tasks(self, pkg: Package) -> list[Task]:
        """Validated single- and two-bug tasks of one package, numbered in order."""
        rng = random.Random(f"{self.seed}:{pkg.name}")
        files = snapshot_files(pkg)
        base = self.baseline(pkg, files)
        sources = {p: files[p] for p in source_files(pkg, files)}
        names = statements.defined_names(sources)
        cands = []
        for path, text in sources.items():
            spans = function_spans(text)
            for m in mutations.candidates(text):
                first, last = spans.get(m.function, (0, -1))
                covering = sorted(t for t in base.tests
                                  if any(f == path and first <= n <= last for f, n in base.covers[t]))
                if covering:
                    cands.append((path, m, covering))
        rng.shuffle(cands)
        bugs: list[Bug] = []
        tasks: list[Task] = []
        seen, digests, per_function, tries = set(), set(), {}, 0
        pending = list(cands)
        for _ in range(pkg.rounds):  # each round: up to PER_PACKAGE single bugs from MAX_TRIES runs, then PAIRS pairs
            found, round_tries = self._singles(pkg, files, base, pending, seen, digests, per_function, tasks, names, rng)
            tries += round_tries
            bugs += found
            tasks += self._pairs(pkg, files, base, found, len(tasks), names, rng)
        weak = {t.instance_id: why for t in tasks if (why := self.weakness(t))}
        for instance_id, why in weak.items():
            self.log(f"  {pkg.name}: {instance_id} dropped: {why}")
        self.sandbox.exec(f"rm -rf {REPO}", timeout=30, cwd="/")
        kept, judged = self.judged([t for t in tasks if t.instance_id not in weak], files)
        self.stats[pkg.name] = {"kept_tests": len(base.tests), "excluded": base.excluded, "candidates": len(cands),
                                "tried": tries, "single": len(bugs), "pairs": len(tasks) - len(bugs),
                                "dropped_weak": len(weak), **judged}
        return kept

    def judged(self, tasks: list[Task], clean: dict[str, str]) -> tuple[list[Task], dict]:
        """Steps 6 and 7: seal the package's snapshots, then keep each task's tests the suite judge decides (gold
        and empty graded under it); (tasks kept, statistics)."""
        sealed = seal(tasks, clean)
        restricted, stats = [], {"dropped_judge": 0, "f2p_removed": 0, "p2p_removed": 0}
        for task in sealed:
            got, why = self.judge_filter(task)
            if got is None:
                stats["dropped_judge"] += 1
                self.log(f"  {task.repo}: {task.instance_id} dropped: {why}")
                continue
            stats["f2p_removed"] += len(task.FAIL_TO_PASS) - len(got.FAIL_TO_PASS)
            stats["p2p_removed"] += len(task.PASS_TO_PASS) - len(got.PASS_TO_PASS)
            restricted.append(got)
        kept, weak = self.nonfix_filter(restricted, clean)
        return kept, {**stats, **weak}

    def nonfix_filter(self, tasks: list[Task], clean: dict[str, str]) -> tuple[list[Task], dict[str, int]]:
        """Step 8 on tasks of one package (`clean`: its files): (the tasks no generic non-fix of nonfixes.py
        passes under the suite judge, {"dropped_nonfix": n, "nonfix <name>": tasks it passed})."""
        screened = self.nonfix_screen(tasks, clean)
        stats = {"dropped_nonfix": 0}
        return [t for t in tasks if not self.nonfix_dropped(t, stats, screened.get(t.instance_id, []))], stats

    def nonfix_screen(self, tasks: list[Task], clean: dict[str, str]) -> dict[str, list[str]]:
        """{instance_id: the non-fixes no fail-to-pass test rules out in a plain pytest run} (the batch runner: one
        sandbox call per BATCH_SIZE variants); only these are graded under the suite judge. A plain run lets
        mock.ANY and an always-equal class equal plain values too, so a test they fail there fails across the
        split as well, unless it fails at a `!=` or `not` (across the split a package object differs from a plain
        value: isodate-0028's `-Duration(years=1) != timedelta(days=-365)`): such a test rules nothing out."""
        jobs = []
        for task in tasks:
            pkg = grading.package_of(task)
            buggy = {p: t for p, t in task.files.items() if clean.get(p) != t}
            for name, changes in nonfixes.package_nonfixes(task, source_files(pkg, task.files),
                                                           named_targets(task)).items():
                jobs.append((task.instance_id, name, {**buggy, **changes}, task.FAIL_TO_PASS))
        setup_repo(self.sandbox, clean, git=False)  # the clean package holds every hidden test file
        results = self.screen([(files, ids) for _, _, files, ids in jobs])
        self.sandbox.exec(f"rm -rf {REPO}", timeout=30, cwd="/")
        out: dict[str, list[str]] = {}
        for (instance_id, name, _, _), result in zip(jobs, results, strict=True):
            if result is not None and not any(map(nonfixes.rules_out, result[1].values())):
                out.setdefault(instance_id, []).append(name)
        return out

    def nonfix_weakness(self, task: Task, names: list[str] | None = None) -> list[str]:
        """Step 8: the non-fixes of nonfixes.py (mock.ANY from the faulty function, or only where it returns a
        package object, or from the blamed functions; every package class equal to anything), only `names` when
        given, whose tests all pass under the suite judge, graded as the env grades a submission ([] when the
        task is strong)."""
        pkg = grading.package_of(task)
        variants = nonfixes.package_nonfixes(task, source_files(pkg, task.files), named_targets(task))
        return [name for name, changes in variants.items() if names is None or name in names
                if nonfixes.passes(grading.grade(self.sandbox, task, changes=changes, timeout=TIMEOUT_S,
                                                 mode="suite_judge", judge_sandbox=self.judge_sandbox))]

    def nonfix_dropped(self, task: Task, stats: dict, names: list[str] | None = None) -> bool:
        """True when some non-fix of step 8 (only `names` when given; none when it is empty) passes `task`'s
        tests; counts it in `stats` ("dropped_nonfix", and "nonfix <name>" per non-fix that passed) and logs why."""
        passing = self.nonfix_weakness(task, names) if names is None or names else []
        for name in passing:
            stats[f"nonfix {name}"] = stats.get(f"nonfix {name}", 0) + 1
        if passing:
            stats["dropped_nonfix"] = stats.get("dropped_nonfix", 0) + 1
            self.log(f"  {task.repo}: {task.instance_id} dropped: a generic non-fix passes its tests under the suite "
                     f"judge ({', '.join(passing)})")
        return bool(passing)

    def judge_filter(self, task: Task) -> tuple[Task | None, str]:
        """(the task with only the tests the suite judge decides as the in-process run did, or None, why): a
        fail-to-pass test must pass with the gold patch and fail without it, a pass-to-pass test pass both ways;
        a task left with fewer than MIN_F2P fail-to-pass tests is dropped."""
        fixed = task.fixed_files()
        gold = grading.grade(self.sandbox, task, changes={p: t for p, t in fixed.items() if task.files.get(p) != t},
                             timeout=TIMEOUT_S, mode="suite_judge", judge_sandbox=self.judge_sandbox)
        empty = grading.grade(self.sandbox, task, changes={}, timeout=TIMEOUT_S, mode="suite_judge",
                              judge_sandbox=self.judge_sandbox)
        return restrict(task, gold, empty)

    def _singles(self, pkg, files, base, pending: list, seen: set, digests: set, per_function: dict,
                 tasks: list[Task], names, rng) -> tuple[list[Bug], int]:
        """One round of single bugs: (accepted bugs, candidates run), taking candidates from the front of `pending`
        until PER_PACKAGE are accepted or MAX_TRIES have run. Appends each bug's task to `tasks` (numbered in
        order) and updates the dedup state (`seen`, `digests`, `per_function`) shared by all rounds."""
        bugs: list[Bug] = []
        tries = 0
        while pending and len(bugs) < PER_PACKAGE and tries < MAX_TRIES:
            batch = []  # the next candidates worth a run, given what is accepted so far
            while pending and len(batch) < BATCH_SIZE and tries + len(batch) < MAX_TRIES:
                path, m, covering = pending.pop(0)
                mutant = m.apply(files[path])
                digest = hashlib.sha1(make_diff({"f": files[path]}, {"f": mutant}, context=0).encode()).hexdigest()
                if (path, m.function, m.operator) in seen or digest in digests or \
                        per_function.get((path, m.function), 0) >= PER_FUNCTION:
                    continue
                batch.append((path, m, covering, mutant, digest))
            tries += len(batch)
            screened = self.screen([({path: mutant}, covering) for path, m, covering, mutant, _ in batch])
            for (path, m, _covering, _mutant, digest), result in zip(batch, screened, strict=True):
                key = (path, m.function)
                if result is None or len(bugs) >= PER_PACKAGE or (path, m.function, m.operator) in seen \
                        or digest in digests or per_function.get(key, 0) >= PER_FUNCTION:
                    continue
                failing, texts = result
                if not 1 <= len(failing) <= MAX_F2P:
                    continue
                bug = Bug(path, m, failing, texts)
                task = self._task(pkg, files, base, [bug], failing, texts, len(tasks), names, rng)
                if task is None:
                    continue
                seen.add((path, m.function, m.operator))
                digests.add(digest)
                per_function[key] = per_function.get(key, 0) + 1
                bugs.append(bug)
                tasks.append(task)
                self.log(f"  {pkg.name}: {task.instance_id} {m.operator} in {m.function} ({len(failing)} F2P)")
        return bugs, tries

    def weakness(self, task: Task) -> str:
        """Why a validated task is too weak to grade a policy ("" when it is not): fewer than MIN_F2P fail-to-pass
        tests (special-casing the one the issue quotes would pass), or a generic non-fix of swe_lite's
        test-strength audit (mock.ANY, an always-equal object, a deleted body, raising what a test expects)
        resolves it. Dropped after numbering, so the numbers and statements of the other tasks do not move."""
        if len(task.FAIL_TO_PASS) < MIN_F2P:
            return f"{len(task.FAIL_TO_PASS)} fail-to-pass test (at least {MIN_F2P} needed)"
        failing = {t: "failed" for t in task.FAIL_TO_PASS}  # what its empty-patch grade showed (_task)
        problems = strength.audit(self.sandbox, task, failing, grade=_grade_in_process,
                                  also=named_targets(task))
        return "; ".join(p.split(": ", 1)[1] for p in problems)

    def _pairs(self, pkg, files, base, bugs: list[Bug], start: int, names, rng) -> list[Task]:
        """Two-bug tasks: accepted bugs in different functions, combined; F2P must hold a test failed by each."""
        pairs = [(a, b) for i, a in enumerate(bugs) for b in bugs[i + 1:]
                 if (a.path, a.mutation.function) != (b.path, b.mutation.function)
                 and (a.path != b.path or a.mutation.end <= b.mutation.start or b.mutation.end <= a.mutation.start)]
        rng.shuffle(pairs)
        out: list[Task] = []
        pairs = pairs[: PAIRS * 3]
        screened = self.screen([(_apply(files, [a, b]), sorted(set(a.failing) | set(b.failing))) for a, b in pairs])
        for (a, b), result in zip(pairs, screened, strict=True):
            if len(out) >= PAIRS or result is None:
                continue
            failing, texts = result
            if not 2 <= len(failing) <= MAX_F2P or not set(a.failing) & set(failing) \
                    or not set(b.failing) & set(failing):
                continue
            first_a = next(t for t in failing if t in a.failing)
            first_b = next((t for t in failing if t in b.failing and t != first_a), first_a)
            task = self._task(pkg, files, base, [a, b], failing, {t: texts[t] for t in (first_a, first_b)},
                              start + len(out), names, rng)
            if task is not None:
                out.append(task)
                self.log(f"  {pkg.name}: {task.instance_id} two bugs ({len(failing)} F2P)")
        return out

    def _task(self, pkg, files, base, bugs: list[Bug], failing: list[str], failures: dict[str, str], n: int,
              names, rng) -> Task | None:
        """The task for `bugs` (None when its empty-patch grade does not fail every F2P and pass every P2P)."""
        hidden = sorted({test_file(t) for t in failing})
        changed = _apply(files, bugs)
        fixed = {p: t for p, t in files.items() if p not in hidden}
        buggy = {**fixed, **changed}
        texts = [failures[t] for t in sorted(failures)][:2] if len(bugs) > 1 else [failures[failing[0]]]
        records = []
        for bug in bugs:
            first, last = changed_lines(files[bug.path], bug.mutation)
            before, after = changed_text(files[bug.path], bug.mutation.apply(files[bug.path]), first, last)
            records.append({"operator": bug.mutation.operator, "file": bug.path, "function": bug.mutation.function,
                            "target": f"{bug.path}::{bug.mutation.function}", "lineno": first, "lines": [first, last],
                            "original": before, "mutated": after})
        mutation = {**records[0], "seed": self.seed} if len(bugs) == 1 else {
            "operator": "combined", "file": records[0]["file"], "function": records[0]["function"],
            "parts": records, "seed": self.seed}
        task = Task(
            instance_id=f"{pkg.slug}-{n:04d}", repo=pkg.repo, base_commit=tree_id(buggy),
            problem_statement=statements.problem_statement(pkg.name, texts, names, rng),
            patch=make_diff(buggy, fixed), test_patch=make_diff(buggy, {**buggy, **{h: files[h] for h in hidden}}),
            FAIL_TO_PASS=failing, PASS_TO_PASS=[t for t in base.tests if test_file(t) in hidden and t not in failing],
            files=buggy, version=pkg.version, src_globs=pkg.src_globs(), mutation=mutation, split=pkg.split,
            timeout_s=TIMEOUT_S)
        task.environment_setup_commit = task.base_commit
        task.difficulty = min_level(task)
        empty = grading.grade(self.sandbox, task, changes={}, timeout=TIMEOUT_S, mode="in_process")
        setup_repo(self.sandbox, files, git=False)
        ok = (empty.valid and empty.grading_mode == "in_process" and empty.p2p == 1.0
              and all(empty.statuses.get(t) not in ("passed", "xfailed") for t in failing))
        if not ok:
            self.log(f"  {pkg.name}: {'+'.join(b.mutation.operator for b in bugs)} in "
                     f"{bugs[0].mutation.function} dropped: unstable ({empty.reason or 'outcomes changed'})")
        return task if ok else None


def seal(tasks: list[Task], clean: dict[str, str]) -> list[Task]:
    """The tasks of one package with every test file any of them hides taken out of every snapshot (no task shows
    another's hidden tests); each test_patch adds back the task's own hidden files (from `clean`, the package)."""
    sealed = {f for t in tasks for f in hidden_files(t)}
    out = []
    for task in tasks:
        files = {p: x for p, x in task.files.items() if p not in sealed}
        own = {f: clean[f] for f in hidden_files(task)}
        new = dataclasses.replace(task, files=files, base_commit=tree_id(files), environment_setup_commit=tree_id(files),
                                  test_patch=make_diff(files, {**files, **own}))
        out.append(new)
    return out


def restrict(task: Task, gold, empty) -> tuple[Task | None, str]:
    """`task` with the fail-to-pass tests that `gold` passes and `empty` fails and the pass-to-pass tests both pass
    (two Grades under the suite judge); None (with why) when either run is invalid or too few F2P remain."""
    if not gold.valid or not empty.valid:
        return None, f"the suite judge gave no verdict ({gold.reason or empty.reason})"[:200]
    ok = ("passed", "skipped")
    f2p = [t for t in task.FAIL_TO_PASS if gold.statuses.get(t) == "passed"
           and empty.statuses.get(t) not in ("passed", "xfailed", "skipped")]
    p2p = [t for t in task.PASS_TO_PASS if gold.statuses.get(t) in ok and empty.statuses.get(t) in ok]
    if len(f2p) < MIN_F2P:
        return None, f"{len(f2p)} fail-to-pass test the suite judge decides (at least {MIN_F2P} needed)"
    return dataclasses.replace(task, FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p), ""


def named_targets(task: Task) -> list[tuple[str, str]]:
    """(file, qualname) of the package functions the task's issue text blames (`name` gives a wrong result...),
    every definition of each name up to MAX_NAMED, in file order: the audit also plants its always-equal value
    there, where a policy that reads the issue would put it (the faulty function itself is tried anyway)."""
    pkg = next((p for p in load_packages() if p.repo == task.repo), None)
    if pkg is None:
        return []
    defined = [(path, q) for path in source_files(pkg, task.files) for q in function_spans(task.files[path])]
    out: list[tuple[str, str]] = []
    for name in statements.named_in(task.problem_statement):
        found = [(path, q) for path, q in defined if q.rsplit(".", 1)[-1] == name]
        out += [t for t in found[:MAX_NAMED] if t not in out]
    return out


def _grade(sandbox, task: Task, *, changes: dict[str, str]):
    """One grade of `task` with `changes` applied, under the generator's deadline (the audit's grade callback)."""
    return grading.grade(sandbox, task, changes=changes, timeout=TIMEOUT_S)


def _grade_in_process(sandbox, task: Task, *, changes: dict[str, str]):
    """`_grade` under the in-process harness: steps 3-5 judge candidates by the package's own pytest run, as when
    the shipped tasks were made (the suite judge decides only from step 7 on)."""
    return grading.grade(sandbox, task, changes=changes, timeout=TIMEOUT_S, mode="in_process")


def _apply(files: dict[str, str], bugs: list[Bug]) -> dict[str, str]:
    """{path: mutated text} with every bug applied (later offsets first within a file)."""
    out: dict[str, str] = {}
    for bug in sorted(bugs, key=lambda b: (b.path, -b.mutation.start)):
        out[bug.path] = bug.mutation.apply(out.get(bug.path, files[bug.path]))
    return out


def generate(sandbox, seed: int = 0, names: list[str] | None = None, log=print,
             judge_sandbox=None) -> tuple[list[Task], dict]:
    """Tasks of the pinned packages (or only `names`), in packages.json order, and per-package statistics."""
    packages = load_packages()
    unknown = sorted(set(names or []) - {p.name for p in packages})
    if unknown:
        raise SystemExit(f"unknown package(s) {', '.join(unknown)}; pinned: {', '.join(p.name for p in packages)}")
    gen = Generator(sandbox, seed, log=log, judge_sandbox=judge_sandbox)
    tasks: list[Task] = []
    for pkg in packages:
        if names and pkg.name not in names:
            continue
        t0 = time.monotonic()
        found = gen.package_tasks(pkg)
        s = gen.stats[pkg.name]
        log(f"{pkg.name:<12} {pkg.split:<5} {len(found):>3} tasks ({s['single']} single, {s['pairs']} two-bug) from "
            f"{s['tried']} runs over {s['candidates']} candidates; {s['kept_tests']} tests kept, excluded "
            f"{s['excluded']} ({time.monotonic() - t0:.0f}s)")
        tasks.extend(found)
    return tasks, gen.stats


def self_check(sandbox, tasks: list[Task], log=print, *, audit: bool = False) -> dict[str, list[str]]:
    """{"gold", "empty", "mode", "audit": problems}: the gold patch must resolve each task under the in-process
    harness; the empty patch must fail every F2P and pass every P2P; with `audit`, every generic non-fix of
    swe_lite's test-strength audit (mock.ANY, an always-equal object, a deleted body, raising what a test
    expects) must score 0."""
    problems: dict[str, list[str]] = {"gold": [], "empty": [], "mode": [], "audit": []}
    for task in tasks:
        fixed = task.fixed_files()
        gold = grading.grade(sandbox, task, changes={p: t for p, t in fixed.items() if task.files.get(p) != t},
                             timeout=TIMEOUT_S)
        empty = grading.grade(sandbox, task, changes={}, timeout=TIMEOUT_S)
        if not gold.resolved:
            problems["gold"].append(f"{task.instance_id}: {gold.reason} "
                                    f"{ {k: v for k, v in gold.statuses.items() if v != 'passed'} }")
        passing = [t for t in task.FAIL_TO_PASS if empty.statuses.get(t) in ("passed", "xfailed")]
        if empty.resolved or not empty.valid or passing or empty.p2p != 1.0:
            problems["empty"].append(f"{task.instance_id}: valid={empty.valid} passing F2P={passing} p2p={empty.p2p}")
        if gold.grading_mode != GRADING_MODE:
            problems["mode"].append(f"{task.instance_id}: graded {gold.grading_mode!r}")
        found = strength.audit(sandbox, task, empty.statuses, grade=_grade, also=named_targets(task)) if audit else []
        problems["audit"] += found
        log(f"{task.instance_id:<44} gold {'ok' if gold.resolved else 'FAIL'}  empty "
            f"{'ok' if not empty.resolved else 'FAIL'}" + (f"  audit {'ok' if not found else 'FAIL'}" if audit else "")
            + f" ({gold.duration_s + empty.duration_s:.1f}s)")
    return problems


def _filter_per_package(tasks: list[Task], backend: str, names: list[str] | None,
                        step) -> tuple[list[Task], set[str], dict[str, int]]:
    """Run a filtering step on a finished task file's tasks, package by package (those in `names`, if given), with a
    Generator over two fresh sandboxes: `step(gen, mine, files) -> (kept, counts)`. Prints a line per package;
    returns the kept tasks, the ids it dropped and the counts summed over packages."""
    from agentrl.sandboxes import open_sandbox

    kept: list[Task] = []
    dropped: set[str] = set()
    totals: dict[str, int] = {}
    with open_sandbox(backend, cpus=1.0, memory_mb=1024) as sb, open_sandbox(backend, cpus=1.0, memory_mb=1024) as jsb:
        gen = Generator(sb, log=lambda m: print(m, flush=True), judge_sandbox=jsb)
        for pkg in load_packages():
            mine = [t for t in tasks if t.repo == pkg.repo]
            if not mine or names and pkg.name not in names:
                continue
            t0 = time.monotonic()
            got, counts = step(gen, mine, snapshot_files(pkg))
            kept += got
            dropped |= {t.instance_id for t in mine} - {t.instance_id for t in got}
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + v
            print(f"{pkg.name:<12} {len(got)}/{len(mine)} tasks kept {counts} ({time.monotonic() - t0:.0f}s)", flush=True)
    return kept, dropped, totals


def judge_filter_file(source: str, out: str, backend: str, names: list[str] | None) -> int:
    """Steps 6-7 on a task file made before them: per package, seal the snapshots and keep the tests the suite
    judge decides; write the kept tasks to `out` and print what was dropped and removed."""
    start = time.monotonic()
    records = [json.loads(x) for x in Path(source).read_text(encoding="utf-8").splitlines() if x.strip()]
    kept, _, totals = _filter_per_package(load_real(source), backend, names, Generator.judged)
    write_records(kept, out)
    print(f"wrote {len(kept)} of {len(records)} tasks to {out}: {totals} ({time.monotonic() - start:.0f}s)")
    return 0


def nonfix_filter_file(source: str, out: str, backend: str, names: list[str] | None) -> int:
    """Step 8 alone on a task file made before it (sealed and judge-filtered): drop every task whose tests a
    generic non-fix of nonfixes.py passes under the suite judge; write the other lines of `source` to `out` byte
    for byte (the tasks of packages not in `names` too) and print the dropped count per non-fix."""
    start = time.monotonic()
    lines = [x for x in Path(source).read_text(encoding="utf-8").splitlines() if x.strip()]
    _, dropped, stats = _filter_per_package(load_real(source), backend, names, Generator.nonfix_filter)
    kept = [x for x in lines if json.loads(x)["instance_id"] not in dropped]
    Path(out).write_text("".join(x + "\n" for x in kept), encoding="utf-8")
    print(f"wrote {len(kept)} of {len(lines)} tasks to {out}: {stats} ({time.monotonic() - start:.0f}s)")
    return 0


def sample(tasks: list[Task], per_package: int) -> list[Task]:
    """The first `per_package` tasks of every package (what CI self-checks)."""
    taken: dict[str, int] = {}
    out = []
    for t in tasks:
        if taken.get(t.repo, 0) < per_package:
            out.append(t)
            taken[t.repo] = taken.get(t.repo, 0) + 1
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: regenerate (or --check, or --self-check) envs/swe/real/data/tasks.jsonl."""
    ap = argparse.ArgumentParser(prog="python -m agentrl.envs.swe.real.generate", description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--packages", nargs="*", help="only these pinned packages (default: all)")
    ap.add_argument("--out", default=str(DEFAULT_TASKS))
    ap.add_argument("--backend", default="docker", help="sandbox backend: docker | bwrap | local")
    ap.add_argument("--check", action="store_true", help="regenerate and compare with the tasks file, byte for byte")
    ap.add_argument("--self-check", action="store_true", help="grade gold and empty for the tasks file")
    ap.add_argument("--sample", type=int, default=0, help="with --self-check: tasks per package (0 = all)")
    ap.add_argument("--judge-filter", metavar="FILE",
                    help="seal, judge-filter and non-fix-filter FILE (a task file made before steps 6-8) into --out")
    ap.add_argument("--nonfix-filter", metavar="FILE",
                    help="step 8 alone: drop the tasks of FILE a generic non-fix passes under the suite judge, into --out")
    ap.add_argument("--audit", action="store_true",
                    help="with --self-check: also the test-strength audit (generic non-fixes must score 0)")
    args = ap.parse_args(argv)
    from agentrl.envs.swe.real.packages import PackageError, ensure_all
    from agentrl.sandboxes import open_sandbox

    try:
        ensure_all(log=lambda m: print(f"[swe_real] {m}"))
    except PackageError as e:
        print(f"swe_real: {e}", file=sys.stderr)
        return 2
    start = time.monotonic()
    if args.judge_filter:
        return judge_filter_file(args.judge_filter, args.out, args.backend, args.packages)
    if args.nonfix_filter:
        return nonfix_filter_file(args.nonfix_filter, args.out, args.backend, args.packages)
    if args.self_check:
        pinned = {p.repo for p in load_packages() if not args.packages or p.name in args.packages}
        shipped = [t for t in load_real(args.out) if t.repo in pinned]
        chosen = sample(shipped, args.sample) if args.sample else shipped
        with open_sandbox(args.backend, cpus=1.0, memory_mb=1024) as sb:
            problems = self_check(sb, chosen, audit=args.audit)
        n = len(chosen)
        audited = sorted({p.split(":")[0] for p in problems["audit"]})
        print("\n".join(p for ps in problems.values() for p in ps))
        print(f"{'OK' if not any(problems.values()) else 'FAILED'}: {n} tasks; gold resolved "
              f"{n - len(problems['gold'])}/{n}, empty patch wrong on {len(problems['empty'])}/{n} (resolved, or an "
              f"F2P passing, or a P2P failing), grading_mode {GRADING_MODE} {n - len(problems['mode'])}/{n}"
              + (f", audit failed on {len(audited)}/{n}" if args.audit else "") + f" ({time.monotonic() - start:.0f}s)")
        return 0 if not any(problems.values()) else 1
    with open_sandbox(args.backend, cpus=1.0, memory_mb=1024) as sb, \
            open_sandbox(args.backend, cpus=1.0, memory_mb=1024) as jsb:
        tasks, _ = generate(sb, args.seed, args.packages, judge_sandbox=jsb)
    lines = [json.dumps(record_of(t), ensure_ascii=False) for t in tasks]
    elapsed = time.monotonic() - start
    if args.check:
        wanted = {p.repo for p in load_packages() if not args.packages or p.name in args.packages}
        expected = [ln for ln in Path(args.out).read_text(encoding="utf-8").splitlines()
                    if json.loads(ln)["repo"] in wanted]
        same = lines == expected
        print(f"{'identical' if same else 'DIFFERENT'}: {len(lines)} regenerated vs {len(expected)} shipped "
              f"({elapsed:.0f}s)")
        return 0 if same else 1
    write_records(tasks, args.out)
    counts = {s: sum(t.split == s for t in tasks) for s in ("train", "dev", "test")}
    print(f"wrote {len(tasks)} tasks to {args.out} {counts} in {elapsed:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
