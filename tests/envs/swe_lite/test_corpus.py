"""The shipped corpus, checked in the sandbox image that grades it: every task's gold patch resolves, the
empty patch fails every fail-to-pass test, and regeneration with the same seed reproduces the file.

CI self-checks a deterministic sample (the first task of every module; the test-strength audit on the fewest of
them that try every kind of non-fix) and regenerates the first two tasks of one module; the full self-check of
every shipped task runs on demand: `python -m agentrl.envs.swe.lite.generate --self-check` (and `--check` to
regenerate the whole file and compare it byte for byte)."""

from __future__ import annotations

import ast

import pytest
from agentrl.envs.swe.lite.generate import (
    CORPUS,
    assign_splits,
    corpus_modules,
    module_files,
    self_check,
    self_check_sample,
    split_of,
    split_tests,
)
from agentrl.envs.swe.lite.statements import public_names
from agentrl.envs.swe.tasks import DEFAULT_TASKS, read_jsonl


def test_corpus_size_and_stdlib_only():
    modules = corpus_modules()
    assert len(modules) >= 30
    for module in modules:
        files = module_files(module)
        tree = ast.parse(files[f"{module}.py"])
        imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
        assert not imports, f"{module}.py must be pure stdlib with no imports"
        tests = [n for n in ast.parse(files[f"tests/test_{module}.py"]).body
                 if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        assert 8 <= len(tests) <= 80, module
        functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in public_names(
            files[f"{module}.py"])]
        for name in functions:  # several tests (inputs) per public function: a fix must fix the function
            using = [t.name for t in tests if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t))]
            assert len(using) >= 3, f"{module}.{name} is used by {len(using)} tests"
    assert not list(CORPUS.rglob("*.pyc"))


def test_splits_are_seeded_and_by_module():
    a, b = assign_splits(corpus_modules(), 0), assign_splits(corpus_modules(), 0)
    assert a == b and sorted(set(a.values())) == ["dev", "test", "train"]
    assert assign_splits(corpus_modules(), 1) != a
    counts = {s: list(a.values()).count(s) for s in ("train", "dev", "test")}
    assert counts["test"] >= 5 and counts["dev"] >= 3 and counts["train"] >= counts["test"] + counts["dev"], counts


def test_a_module_split_does_not_depend_on_the_other_modules():
    """Growing (or shrinking) the corpus never moves a module into another split: test code stays held out."""
    modules = corpus_modules()
    full = assign_splits(modules, 0)
    for drop in range(0, len(modules), 5):
        fewer = assign_splits(modules[:drop] + modules[drop + 1:], 0)
        assert all(fewer[m] == full[m] for m in fewer)
    grown = assign_splits(modules + ["zz_new_module", "aa_new_module"], 0)
    assert all(grown[m] == full[m] for m in modules)
    assert all(full[m] == split_of(m, 0) for m in modules)


def test_shipped_tasks_follow_the_module_splits(tasks):
    """Every shipped task sits in its module's split, and every corpus module has tasks."""
    modules = corpus_modules()
    for task in tasks:
        module = task.repo.removeprefix("swe_lite/")
        assert module in modules, task.instance_id
        assert task.split == split_of(module, task.mutation["seed"]), task.instance_id
    assert {t.repo.removeprefix("swe_lite/") for t in tasks} == set(modules)


def test_mutation_records_locate_the_bug(tasks):
    from agentrl.envs.swe.levels import min_level

    """file, function (qualified, private ones too), lines, original and mutated text match the snapshots;
    the difficulty written in the file is the one the loaders compute (levels.min_level): one notion."""
    written = {r["instance_id"]: r["difficulty"] for r in read_jsonl(DEFAULT_TASKS)}
    for task in tasks:
        m = task.mutation
        first, last = m["lines"]
        assert m["lineno"] == first and m["target"] == f"{m['file']}::{m['function']}", task.instance_id
        assert written[task.instance_id] == task.difficulty == min_level(task), task.instance_id
        gold = task.fixed_files()[m["file"]].splitlines()
        assert "\n".join(gold[first - 1:last]) == m["original"], task.instance_id
        buggy = task.files[m["file"]].splitlines()
        shift = len(buggy) - len(gold)
        assert "\n".join(buggy[first - 1:last + shift]) == m["mutated"] != m["original"], task.instance_id
        assert buggy[:first - 1] == gold[:first - 1] and buggy[last + shift:] == gold[last:], task.instance_id
        tree = ast.parse(task.fixed_files()[m["file"]])
        defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        owner, _, name = m["function"].rpartition(".")
        node = defs[owner] if owner else tree
        func = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == (name or m["function"]))
        assert func.lineno <= first <= last <= func.end_lineno, task.instance_id


def test_the_self_check_sample_is_deterministic_and_covers_every_module(tasks):
    sample = self_check_sample(tasks)
    assert sample == self_check_sample(list(tasks))
    assert sorted(t.repo for t in sample) == sorted({t.repo for t in tasks})
    assert len(self_check_sample(tasks, per_module=2)) > len(sample)


def test_split_tests_moves_functions_with_the_header():
    src = "import pytest\n\nfrom m import f\n\n\ndef helper():\n    return 1\n\n\ndef test_a():\n    assert f()\n\n\n" \
          "def test_b():\n    assert helper()\n"
    visible, hidden = split_tests(src, {"test_b"})
    assert "def test_b" not in visible and "def test_a" in visible
    assert hidden.startswith("import pytest\n\nfrom m import f\n\n\ndef helper()") and "def test_b" in hidden
    assert "def test_a" not in hidden
    compile(visible, "v", "exec"), compile(hidden, "h", "exec")


def audited(sample: list) -> list:
    """The fewest tasks of `sample` (greedily, in order) whose generic non-fixes are together of every kind the
    sample's are (`raise_<E>` one kind, `special_case` one): the audit's every kind of grade on shipped tasks."""
    from agentrl.envs.swe.audit import non_fixes

    def kinds(task) -> set[str]:
        return {"raise" if k.startswith("raise_") else k for k in non_fixes(task)}

    missing, chosen = set().union(*map(kinds, sample)), []
    while missing:
        best = max(sample, key=lambda t: len(kinds(t) & missing))
        chosen.append(best)
        missing -= kinds(best)
    return chosen


@pytest.mark.docker
@pytest.mark.slow
def test_a_sample_of_the_shipped_tasks_passes_the_self_check(sandbox, tasks):
    """Guards a shipped task that today's grader no longer grades as generated: the gold patch does not resolve,
    the empty patch passes a fail-to-pass test or fails a pass-to-pass one, base_commit is not the tree id, the
    task is graded other than by the judge, or a generic non-fix scores. One task of every module (each module's
    tests use their own values and exceptions). Of the non-fixes, every task gets the always-equal object (what a
    judge that compared objects would let through: 8 of these 35 tasks) and the fewest tasks that have every kind
    get all of them (mock.ANY, a deleted body, the expected exception, the special-cased example: properties of
    a task's tests, checked when it was generated); all of them on all 35 tripled this test's time. The full
    run: python -m agentrl.envs.swe.lite.generate --self-check."""
    from agentrl.envs.swe.audit import non_fixes
    from agentrl.envs.swe.grading.grader import grade

    sample = self_check_sample(tasks)
    problems = self_check(sandbox, sample, log=lambda *_: None, audit=False)
    for task in sample:
        result = grade(sandbox, task, changes=non_fixes(task)["always_equal"])
        if result.reward() > 0 or result.resolved:
            problems.append(f"{task.instance_id}: non-fix always_equal scores {result.reward()}")
    chosen = audited(sample)
    assert len(chosen) < len(sample) // 4, [t.instance_id for t in chosen]
    problems += self_check(sandbox, chosen, log=lambda *_: None)
    assert not problems, "\n".join(problems)


@pytest.mark.docker
@pytest.mark.slow
def test_the_self_check_catches_a_broken_task(sandbox, tasks):
    """A task whose hidden tests pass without a fix (the test patch dropped) is reported."""
    import dataclasses

    task = tasks[0]
    broken = dataclasses.replace(task, FAIL_TO_PASS=[task.PASS_TO_PASS[0]], PASS_TO_PASS=task.PASS_TO_PASS[1:])
    problems = self_check(sandbox, [broken], log=lambda *_: None)
    assert problems and "empty patch" in problems[0]


@pytest.mark.docker
@pytest.mark.slow
def test_regenerating_a_module_with_a_smaller_budget_reproduces_the_first_shipped_lines(sandbox, tasks):
    """Guards regeneration that does not reproduce the shipped file (an unseeded choice, an order that depends on
    the set of modules, a field computed another way than the loaders do, such as the difficulty) and a larger
    --per-module budget that changes the earlier tasks instead of appending after them (the 8-per-module corpus
    is each module's first 8 of 16, so results measured on it stay comparable task by task). Two tasks of one
    module, a one-line fix and a longer one; statements that quote a memory address (bitset-0004's made `--check`
    fail) have their own test below, and `--check` regenerates the whole file."""
    from agentrl.envs.swe.lite.generate import generate

    shipped = [t.to_json() for t in tasks if t.repo == "swe_lite/rle"]
    fewer = [t.to_json() for t in generate(sandbox, seed=0, modules=["rle"], per_module=2, log=lambda *_: None)]
    assert len(shipped) > 2 and fewer == shipped[:2]
    assert {t.difficulty for t in tasks if t.instance_id in ("swelite__rle-0000", "swelite__rle-0001")} == {0, 1}


def test_statements_hold_no_memory_addresses(tasks):
    """A repr's address (`<m.C object at 0x7f…>`) differs on every run: a statement quoting one made `--check`
    fail on a regenerated bitset task. Addresses are dropped from the quoted error."""
    import random
    import re

    from agentrl.envs.swe.lite.statements import problem_statement

    source = "from m import C\n\n\ndef test_in():\n    assert 3 in C()\n"
    failure = ">       assert 3 in C()\nE       assert 3 in <m.C object at 0x7ff7484a76d0>\n"
    text = problem_statement(source, "test_in", failure, "m", ["C"], random.Random(0))
    assert "0x7ff7484a76d0" not in text and "<m.C object>" in text
    assert not [t.instance_id for t in tasks if re.search(r"at 0x[0-9a-f]{6,}", t.problem_statement)]
