"""Regenerate data/tasks.jsonl from the corpus: seeded mutation, validation in the sandbox image, hidden tests.

    python -m agentrl.envs.swe.lite.generate                          # writes envs/swe/lite/data/tasks.jsonl
    python -m agentrl.envs.swe.lite.generate --modules rle --check     # compare one module with the shipped file
    python -m agentrl.envs.swe.lite.generate --check                   # regenerate everything and compare
    python -m agentrl.envs.swe.lite.generate --self-check              # grade every shipped task: gold / empty / audit
    python -m agentrl.envs.swe.lite.generate --judge-check             # each module's own tests under the judge

Per module (each with its own RNG, seeded by (seed, module), so any subset regenerates identically):
1. run the full suite on the original in the sandbox: every test must pass;
2. shuffle the mutation candidates; for each, run the suite on the mutant and go on when it has MIN_F2P..MAX_F2P
   failing tests (fail-to-pass), at least one passing (pass-to-pass), no collection error, the same
   outcome on a second run, and a new (function, operator) pair and diff;
3. move the failing tests into tests/test_<module>_hidden.py (the test_patch); the visible file keeps the rest;
4. check the task and keep it only if it passes: under pytest, buggy + hidden tests fails every F2P and passes
   every P2P and gold passes all; under the judge, `self_check` (gold resolves, empty fails, the test-strength
   audit of audit.py finds no non-fix that scores).

Splits are by module and a property of the module alone: `split_of(module, seed)` hashes (seed, name) into
100 buckets (test < 20 <= dev < 35 <= train), so every task of a module lands in the same split, and adding
modules to the corpus never moves an existing module to another split (a test module stays held out).

Each task's `mutation` record says where the bug is (what difficulty levels and statements build on):
    operator   the mutate.py operator (flip_compare, remove_guard, ...)
    file       the mutated file, e.g. "lru.py"
    function   qualified name of the enclosing function, also for internal ones ("LRUCache._touch", "_pop2")
    target     "<file>::<function>" (kept for older readers)
    lineno     first changed line of the original file (1-based)
    lines      [first, last] changed lines of the original file (1-based, inclusive)
    original   the original text of those lines (no trailing newline)
    mutated    the text that replaced them in the buggy file ("" when the mutation deleted them)
    seed       the generation seed
`Task.difficulty` is the lowest level the task is offered at (levels.min_level): 0 when the gold patch swaps one
line for one line, else 1 (the loaders recompute it, so a stored value is never trusted).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import random
import sys
import time
from pathlib import Path

import agentrl.envs.swe.grading.judge as judge
import agentrl.envs.swe.mutate as mutate
from agentrl.envs.swe.grading.grader import REPO, SuiteRun, run_tests, setup_repo
from agentrl.envs.swe.levels import min_level
from agentrl.envs.swe.lite.statements import problem_statement, public_names
from agentrl.envs.swe.patches import make_diff, tree_id
from agentrl.envs.swe.tasks import DEFAULT_TASKS, TEST_CMD, Task, load_tasks, write_tasks

CORPUS = Path(__file__).parent / "corpus"
GENERATOR_VERSION = "1"
PYTEST_INI = "[pytest]\npythonpath = .\n"
SPLIT_BUCKETS = (("test", 20), ("dev", 35), ("train", 100))  # hash bucket (0..99) below the bound -> split
MIN_F2P = 2  # a mutant must fail the test its statement quotes and at least one more (a fix must fix the function)
MAX_F2P = 8
PER_MODULE = 16  # tasks kept per module at most (was 8; mutants are accepted in seeded order, so those 8 come first)
MAX_TRIES = 120  # candidates looked at per module at most
VALIDATION_CPU_S = 10  # the suites need < 1 CPU second; a mutant past this loops forever and is dropped
VALIDATION_TIMEOUT_S = 120  # wall-clock backstop only (a busy machine must not change which mutants pass)


def corpus_modules() -> list[str]:
    """Names of the corpus modules (folders holding <name>.py and tests/test_<name>.py)."""
    return sorted(p.name for p in CORPUS.iterdir() if (p / f"{p.name}.py").is_file())


def module_files(module: str) -> dict[str, str]:
    """The original (correct) repository of a corpus module, pytest.ini included."""
    base = CORPUS / module
    return {f"{module}.py": (base / f"{module}.py").read_text(),
            f"tests/test_{module}.py": (base / "tests" / f"test_{module}.py").read_text(),
            "pytest.ini": PYTEST_INI}


def split_of(module: str, seed: int = 0) -> str:
    """The split of a corpus module: a hash of (seed, name) alone, so other modules never move it."""
    bucket = int(hashlib.sha256(f"{seed}:{module}".encode()).hexdigest(), 16) % 100
    return next(name for name, bound in SPLIT_BUCKETS if bucket < bound)


def assign_splits(modules: list[str], seed: int) -> dict[str, str]:
    """module -> split for every module (each module in exactly one split)."""
    return {module: split_of(module, seed) for module in sorted(modules)}


def split_tests(test_source: str, names: set[str]) -> tuple[str, str]:
    """(visible file without the test functions `names`, hidden file = header + those functions).

    The header is everything that is not a `test_*` function (imports, helpers), so both files run alone.
    """
    tree = ast.parse(test_source)
    lines = test_source.splitlines(keepends=True)
    spans = {}  # test name -> (first line index incl. decorators, end line index)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            spans[node.name] = (first, node.end_lineno)
    missing = names - set(spans)
    if missing:
        raise ValueError(f"tests {sorted(missing)} are not top-level test functions")
    keep, header, hidden = [], [], []
    first_test = min(s[0] for s in spans.values())
    header = lines[:first_test]
    taken = set()
    for name, (a, b) in spans.items():
        if name in names:
            hidden.append("".join(lines[a:b]))
            taken.update(range(a, b))
    keep = [line for i, line in enumerate(lines) if i not in taken]
    visible = "".join(keep)
    while "\n\n\n\n" in visible:
        visible = visible.replace("\n\n\n\n", "\n\n\n")
    hidden_src = "".join(header).rstrip("\n") + "\n\n\n" + "\n\n\n".join(h.rstrip("\n") + "\n" for h in hidden)
    return visible.rstrip("\n") + "\n", hidden_src


def statuses(run: SuiteRun) -> dict[str, str]:
    """node id -> status of a run."""
    return {k: v.status for k, v in run.cases.items()}


class Generator:
    """Validates mutants of one module after another in one sandbox (reset between modules)."""

    def __init__(self, sandbox, seed: int, per_module: int = PER_MODULE, max_tries: int = MAX_TRIES,
                 log=print) -> None:
        self.sandbox, self.seed, self.per_module, self.max_tries, self.log = sandbox, seed, per_module, max_tries, log
        self.rejected: list[str] = []  # problems of the tasks the checks refused (logged, counted)

    def _run(self, files: dict[str, str], ids: list[str] | None = None) -> SuiteRun:
        setup_repo(self.sandbox, files, git=False)
        return run_tests(self.sandbox, TEST_CMD, ids, timeout=VALIDATION_TIMEOUT_S, cwd=REPO,
                         cpu_limit_s=VALIDATION_CPU_S)

    def _run_mutant(self, module: str, source: str) -> SuiteRun:
        self.sandbox.write_file(f"{REPO}/{module}.py", source)
        return run_tests(self.sandbox, TEST_CMD, None, timeout=VALIDATION_TIMEOUT_S, cwd=REPO,
                         cpu_limit_s=VALIDATION_CPU_S)

    def module_tasks(self, module: str, split: str) -> list[Task]:
        """Validated tasks of one module."""
        rng = random.Random(f"{self.seed}:{module}")
        original = module_files(module)
        source = original[f"{module}.py"]
        base = self._run(original)
        all_ids = sorted(base.cases)
        if not base.valid or not all_ids or any(s != "passed" for s in statuses(base).values()):
            raise RuntimeError(f"{module}: the original suite does not pass in the sandbox: {base.reason} "
                               f"{base.output[-2000:]}")
        cands = mutate.candidates(source)
        rng.shuffle(cands)
        accepted: list[tuple[mutate.Mutation, str, list[str], dict]] = []
        seen_pairs, seen_diffs = set(), set()
        for tries, m in enumerate(cands):
            if len(accepted) >= self.per_module or tries >= self.max_tries:
                break
            if (m.function, m.operator) in seen_pairs:
                continue
            mutant = m.apply(source)
            diff = make_diff({"f": source}, {"f": mutant}, context=0)
            digest = hashlib.sha1("".join(line.strip() for line in diff.splitlines()[4:]).encode()).hexdigest()
            if digest in seen_diffs:
                continue
            run = self._run_mutant(module, mutant)
            st = statuses(run)
            failing = sorted(k for k, v in st.items() if v != "passed")
            if (not run.valid or run.collection_errors or sorted(st) != all_ids or not MIN_F2P <= len(failing) <= MAX_F2P
                    or len(failing) == len(all_ids)):
                continue
            if statuses(self._run_mutant(module, mutant)) != st:
                self.log(f"  {module}: unstable mutant skipped ({m.operator} in {m.function})")
                continue
            task = self._make_task(module, split, len(accepted), m, mutant, failing,
                                   {k: run.cases[k] for k in failing}, rng=rng, original=original, all_ids=all_ids)
            problems = self.check_task(task)
            setup_repo(self.sandbox, original, git=False)  # the checks graded in the same folder
            if problems:
                self.rejected.extend(problems)
                self.log(f"  {module}: {m.operator} in {m.function} not shipped: {problems[0]}")
                continue
            seen_pairs.add((m.function, m.operator))
            seen_diffs.add(digest)
            accepted.append(task)
        self.sandbox.exec(f"rm -rf {REPO}", timeout=30, cwd="/")
        return accepted

    def _make_task(self, module, split, n, m, mutant, failing, failures, *, rng, original, all_ids) -> Task:
        test_path = f"tests/test_{module}.py"
        hidden_path = f"tests/test_{module}_hidden.py"
        names = {f.split("::")[1] for f in failing}
        visible, hidden = split_tests(original[test_path], names)
        buggy = {**original, f"{module}.py": mutant, test_path: visible}
        fixed = {**buggy, f"{module}.py": original[f"{module}.py"]}
        f2p = sorted(f"{hidden_path}::{name}" for name in names)
        p2p = [i for i in all_ids if i not in failing]
        first = sorted(failing, key=lambda f: original[test_path].index(f"def {f.split('::')[1]}("))[0]
        statement = problem_statement(original[test_path], first.split("::")[1], failures[first].text or
                                      failures[first].message, module, public_names(original[f"{module}.py"]), rng)
        first_line, last_line = mutate.changed_lines(original[f"{module}.py"], m)
        before, after = mutate.changed_text(original[f"{module}.py"], mutant, first_line, last_line)
        task = Task(
            instance_id=f"swelite__{module}-{n:04d}", repo=f"swe_lite/{module}", base_commit=tree_id(buggy),
            problem_statement=statement, patch=make_diff(buggy, fixed),
            test_patch=make_diff(buggy, {**buggy, hidden_path: hidden}), FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p,
            files=buggy, version=GENERATOR_VERSION,
            mutation={"operator": m.operator, "file": f"{module}.py", "function": m.function,
                      "target": f"{module}.py::{m.function}", "lineno": first_line, "lines": [first_line, last_line],
                      "original": before, "mutated": after, "seed": self.seed},
            split=split)
        task.environment_setup_commit = task.base_commit
        task.difficulty = min_level(task)  # the lowest level it is offered at (levels.py): 0 = a one-line fix
        return task

    def check_task(self, task: Task) -> list[str]:
        """Problems of a candidate task: its layout under pytest, then gold / empty / the audit under the judge."""
        problem = self.check_layout(task)
        if problem:
            return [f"{task.instance_id}: {problem}"]
        return self_check(self.sandbox, [task], log=lambda *_: None)

    def check_layout(self, task: Task) -> str | None:
        """None when buggy + hidden tests fail every F2P and pass every P2P and gold passes all; else why not."""
        from agentrl.envs.swe.patches import apply_patch

        ids = task.FAIL_TO_PASS + task.PASS_TO_PASS
        bug = statuses(self._run(apply_patch(task.files, task.test_patch), ids))
        if any(bug.get(t) == "passed" for t in task.FAIL_TO_PASS):
            return f"an F2P test passes on the buggy snapshot: {bug}"
        if any(bug.get(t) != "passed" for t in task.PASS_TO_PASS):
            return f"a P2P test fails on the buggy snapshot: {bug}"
        gold = statuses(self._run(apply_patch(task.fixed_files(), task.test_patch), ids))
        if any(gold.get(t) != "passed" for t in ids):
            return f"the gold patch does not pass every test: {gold}"
        return None


def generate(sandbox, seed: int = 0, modules: list[str] | None = None, per_module: int = PER_MODULE,
             log=print) -> list[Task]:
    """Tasks for `modules` (default: the whole corpus), validated in `sandbox`, in corpus (sorted) order
    whatever the order of `modules`, so a subset compares line for line with the shipped file."""
    every = corpus_modules()
    splits = assign_splits(every, seed)
    gen = Generator(sandbox, seed, per_module=per_module, log=log)
    tasks: list[Task] = []
    unknown = [m for m in modules or [] if m not in every]
    if unknown:
        raise SystemExit(f"unknown corpus module(s) {', '.join(unknown)}; known: {', '.join(every)}")
    for module in [m for m in every if not modules or m in modules]:  # corpus order, as in the shipped file
        start = time.monotonic()
        rejected = len(gen.rejected)
        found = gen.module_tasks(module, splits[module])
        if any(t.split != split_of(module, seed) for t in found):
            raise RuntimeError(f"{module}: a task left the module's split")
        log(f"{module:<10} {splits[module]:<5} {len(found)} tasks in {time.monotonic() - start:.1f}s "
            f"({len(gen.rejected) - rejected} candidates failed the checks)")
        tasks.extend(found)
    return tasks


def judge_check(sandbox, module: str) -> dict[str, str]:
    """{test id: problem} for the original module's whole test file run by the judge (empty when all pass):
    each test must pass against the correct module, comparing exact values only (judge.py's rules)."""
    from agentrl.envs.swe.grading.grader import judge_run

    files = module_files(module)
    test_path = f"tests/test_{module}.py"
    ids = [f"{test_path}::{name}" for name in judge.names_of_tests(files[test_path])]
    run, refused = judge_run(sandbox, files, [test_path], ids, timeout=VALIDATION_TIMEOUT_S,
                             cpu_limit_s=VALIDATION_CPU_S)
    if not run.valid:
        return {test_path: run.reason}
    return {k: (c.text or c.message) for k, c in run.cases.items() if c.status != "passed"}


def self_check_sample(tasks: list[Task], per_module: int = 1) -> list[Task]:
    """A deterministic sample: the first `per_module` tasks of every module (what CI checks)."""
    taken: dict[str, int] = {}
    sample = []
    for task in tasks:
        if taken.get(task.repo, 0) < per_module:
            sample.append(task)
            taken[task.repo] = taken.get(task.repo, 0) + 1
    return sample


def self_check(sandbox, tasks: list[Task], log=print, *, audit: bool = True) -> list[str]:
    """Problems found grading `tasks` as shipped: the gold patch must resolve (every F2P and P2P test passes);
    the empty patch must fail every F2P test and pass every P2P test; base_commit must be the tree id; with
    `audit`, every generic non-fix of audit.py must score 0 (the test-strength audit)."""
    import agentrl.envs.swe.audit as strength
    from agentrl.envs.swe.grading.grader import grade

    problems = []
    for task in tasks:
        mine = []
        if task.base_commit != task.tree_id():
            mine.append(f"{task.instance_id}: base_commit is not the tree id of files")
        fixed = task.fixed_files()
        gold = grade(sandbox, task, changes={p: t for p, t in fixed.items() if task.files.get(p) != t})
        if not gold.resolved:
            mine.append(f"{task.instance_id}: gold patch does not resolve: {gold.reason} {gold.statuses}")
        empty = grade(sandbox, task, changes={})
        passing = [t for t in task.FAIL_TO_PASS if empty.statuses.get(t) in ("passed", "xfailed")]
        if not empty.valid or passing or empty.p2p != 1.0:
            mine.append(f"{task.instance_id}: empty patch: valid={empty.valid} passing F2P={passing} p2p={empty.p2p}")
        if gold.grading_mode != "judge" and task.repo.startswith("swe_lite/"):
            mine.append(f"{task.instance_id}: graded {gold.grading_mode or 'without tests'}, not by the judge")
        if audit and not mine:
            mine += strength.audit(sandbox, task, empty.statuses, grade=grade)
        log(f"{task.instance_id:<28} {'FAIL' if mine else 'ok'}")
        problems += mine
    return problems


def main(argv: list[str] | None = None) -> int:
    """CLI: regenerate (or --check) the shipped tasks file."""
    ap = argparse.ArgumentParser(prog="python -m agentrl.envs.swe.lite.generate", description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modules", nargs="*", help="only these corpus modules (default: all)")
    ap.add_argument("--per-module", type=int, default=PER_MODULE)
    ap.add_argument("--out", default=str(DEFAULT_TASKS))
    ap.add_argument("--backend", default="docker", help="sandbox backend: docker (the image grading uses) | bwrap | local")
    ap.add_argument("--check", action="store_true", help="compare with the tasks file instead of writing it")
    ap.add_argument("--self-check", action="store_true",
                    help="grade the tasks file (gold resolves, empty patch fails F2P, P2P passes on both); "
                         "with --modules only those modules, with --sample N the first N tasks of each module")
    ap.add_argument("--sample", type=int, default=0, help="with --self-check: tasks per module (0 = all)")
    ap.add_argument("--judge-check", action="store_true",
                    help="run each corpus module's own test file under the judge against the correct module "
                         "(every test must pass comparing exact values); with --modules only those")
    args = ap.parse_args(argv)
    from agentrl.sandboxes import open_sandbox

    start = time.monotonic()
    if args.judge_check:
        problems = 0
        with open_sandbox(args.backend) as sb:
            for module in args.modules or corpus_modules():
                found = judge_check(sb, module)
                problems += len(found)
                print(f"{module:<12} {'ok' if not found else f'{len(found)} failing'}")
                for test, text in found.items():
                    print(f"  {test}\n    " + text.replace("\n", "\n    "))
        print(f"{'OK' if not problems else 'FAILED'}: {problems} problems ({time.monotonic() - start:.0f}s)")
        return 0 if not problems else 1
    if args.self_check:
        shipped = [t for t in load_tasks(args.out) if not args.modules or t.repo.split("/")[-1] in args.modules]
        chosen = self_check_sample(shipped, args.sample) if args.sample else shipped
        with open_sandbox(args.backend) as sb:
            problems = self_check(sb, chosen)
        print("\n".join(problems))
        print(f"{'OK' if not problems else 'FAILED'}: {len(chosen)} tasks self-checked, {len(problems)} problems "
              f"({time.monotonic() - start:.0f}s)")
        return 0 if not problems else 1
    with open_sandbox(args.backend) as sb:
        tasks = generate(sb, args.seed, args.modules, args.per_module)
    lines = [t.to_json() for t in tasks]
    elapsed = time.monotonic() - start
    if args.check:
        wanted = {f"swe_lite/{m}" for m in args.modules} if args.modules else None
        expected = [t.to_json() for t in load_tasks(args.out) if wanted is None or t.repo in wanted]
        same = lines == expected
        print(f"{'identical' if same else 'DIFFERENT'}: {len(lines)} regenerated vs {len(expected)} shipped "
              f"({elapsed:.0f}s)")
        return 0 if same else 1
    write_tasks(tasks, args.out)
    counts = {s: sum(t.split == s for t in tasks) for s in ("train", "dev", "test")}
    print(f"wrote {len(tasks)} tasks to {args.out} {counts} in {elapsed:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
