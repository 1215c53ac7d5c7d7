"""The shipped corpus, checked in the sandbox image that grades it: every task's gold patch resolves, the
empty patch fails every fail-to-pass test, and regeneration with the same seed reproduces the file."""

from __future__ import annotations

import ast

import pytest
from agentrl.envs.swe_lite.generate import CORPUS, assign_splits, corpus_modules, module_files, split_tests


def test_corpus_size_and_stdlib_only():
    modules = corpus_modules()
    assert 12 <= len(modules) <= 15
    for module in modules:
        files = module_files(module)
        tree = ast.parse(files[f"{module}.py"])
        imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
        assert not imports, f"{module}.py must be pure stdlib with no imports"
        tests = [n for n in ast.parse(files[f"tests/test_{module}.py"]).body
                 if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        assert 8 <= len(tests) <= 25, module
    assert not list(CORPUS.rglob("*.pyc"))


def test_splits_are_seeded_and_by_module():
    a, b = assign_splits(corpus_modules(), 0), assign_splits(corpus_modules(), 0)
    assert a == b and sorted(set(a.values())) == ["dev", "test", "train"]
    assert assign_splits(corpus_modules(), 1) != a


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
def test_every_shipped_task_passes_the_self_check(sandbox, tasks):
    from agentrl.envs.swe_lite.grading import grade

    problems = []
    for task in tasks:
        if task.base_commit != task.tree_id():
            problems.append(f"{task.instance_id}: base_commit is not the tree id of files")
        fixed = task.fixed_files()
        gold = grade(sandbox, task, changes={p: t for p, t in fixed.items() if task.files.get(p) != t})
        if not gold.resolved:
            problems.append(f"{task.instance_id}: gold patch does not resolve: {gold.reason} {gold.statuses}")
        empty = grade(sandbox, task, changes={})
        failing = [t for t in task.FAIL_TO_PASS if empty.statuses[t] in ("passed", "xfailed")]
        if not empty.valid or failing or empty.p2p != 1.0:
            problems.append(f"{task.instance_id}: empty patch: valid={empty.valid} passing F2P={failing} "
                            f"p2p={empty.p2p}")
    assert not problems, "\n".join(problems)


@pytest.mark.docker
@pytest.mark.slow
def test_regenerating_a_module_reproduces_the_shipped_lines(sandbox, tasks):
    from agentrl.envs.swe_lite.generate import generate

    module = "rle"
    regenerated = [t.to_json() for t in generate(sandbox, seed=0, modules=[module], log=lambda *_: None)]
    assert regenerated == [t.to_json() for t in tasks if t.repo == f"swe_lite/{module}"]
