"""The shipped corpus, checked in the sandbox image that grades it: every task's gold patch resolves, the
empty patch fails every fail-to-pass test, and regeneration with the same seed reproduces the file.

CI self-checks a deterministic sample (the first task of every module); the full self-check of every shipped
task runs on demand: `python -m agentrl.envs.swe.lite.generate --self-check` (and `--check` to regenerate
the whole file and compare it byte for byte)."""

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


@pytest.mark.docker
@pytest.mark.slow
def test_a_sample_of_the_shipped_tasks_passes_the_self_check(sandbox, tasks):
    """One task per module (the full run: python -m agentrl.envs.swe.lite.generate --self-check)."""
    problems = self_check(sandbox, self_check_sample(tasks), log=lambda *_: None)
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
def test_regenerating_a_module_reproduces_the_shipped_lines(sandbox, tasks):
    from agentrl.envs.swe.lite.generate import generate

    module = "rle"
    regenerated = [t.to_json() for t in generate(sandbox, seed=0, modules=[module], log=lambda *_: None)]
    assert regenerated == [t.to_json() for t in tasks if t.repo == f"swe_lite/{module}"]


@pytest.mark.docker
@pytest.mark.slow
def test_a_smaller_per_module_budget_gives_a_prefix_of_the_shipped_tasks(sandbox, tasks):
    """Raising --per-module only appends tasks (the 8-per-module corpus is each module's first 8), so results
    measured on the smaller corpus stay comparable task by task."""
    from agentrl.envs.swe.lite.generate import generate

    shipped = [t.to_json() for t in tasks if t.repo == "swe_lite/rle"]
    fewer = [t.to_json() for t in generate(sandbox, seed=0, modules=["rle"], per_module=3, log=lambda *_: None)]
    assert len(shipped) > 3 and fewer == shipped[:3]


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
