"""The test-strength audit (audit.py) and the choice of grading mode (grading.grading_mode)."""

from __future__ import annotations

import ast
import dataclasses

import pytest
from agentrl.envs.swe_lite import audit
from agentrl.envs.swe_lite.grading import grading_mode
from agentrl.envs.swe_lite.patches import apply_patch

SOURCE = '''class A:
    def f(self, x):
        """Doc."""
        if x:
            return 1
        return 2

    def g(self):
        def inner():
            return 3
        return inner()


def h(y):
    return y
'''


def test_with_body_replaces_only_that_function():
    out = audit.with_body(SOURCE, "A.f", "raise KeyError('audit')")
    tree = ast.parse(out)
    f = audit.find_function(tree, "A.f")
    assert ast.unparse(f.body) == "raise KeyError('audit')"
    assert ast.unparse(audit.find_function(tree, "A.g")) == ast.unparse(audit.find_function(ast.parse(SOURCE), "A.g"))
    assert ast.unparse(audit.find_function(ast.parse(audit.with_body(SOURCE, "A.g.inner", "pass")), "A.g.inner").body) == "pass"
    assert ast.unparse(audit.find_function(ast.parse(audit.with_body(SOURCE, "h", "return 0")), "h").body) == "return 0"
    assert audit.with_body(SOURCE, "A", "pass") is None and audit.with_body(SOURCE, "nope", "pass") is None


def by_function(tasks, function: str, expects: str | None = None):
    for t in tasks:
        if t.repo == "swe_lite/bank" and t.mutation["function"] == function and (
                expects is None or expects in audit.expected_exceptions(t)):
            return t
    pytest.skip(f"no bank task on {function}")


def test_non_fixes_of_a_shipped_task_compile_and_change_the_faulty_function(tasks):
    task = by_function(tasks, "Account.deposit", "ValueError")
    variants = audit.non_fixes(task)
    assert {"equal_to_anything", "always_equal", "body_deleted", "raise_ValueError"} <= set(variants)
    for changes in variants.values():
        (path, text), = changes.items()
        assert path == "bank.py" and text != task.files["bank.py"]
        compile(text, path, "exec")
    assert audit.quoted_test(task) in task.FAIL_TO_PASS


def test_special_case_needs_another_failing_test(tasks):
    task = tasks[0]
    quoted = audit.quoted_test(task)
    only_quoted = dataclasses.replace(task, FAIL_TO_PASS=[quoted])
    assert not audit.special_case_survives(only_quoted, {quoted: "failed"})
    other = "tests/x.py::test_other"
    two = dataclasses.replace(task, FAIL_TO_PASS=[quoted, other])
    assert audit.special_case_survives(two, {quoted: "failed", other: "failed"})
    assert not audit.special_case_survives(two, {quoted: "failed", other: "passed"})


@pytest.mark.slow
def test_the_audit_catches_a_task_whose_tests_only_expect_the_exception(sandbox, tasks):
    """Without its pass-to-pass tests, a task on deposit's guard is passed by raising ValueError for every
    amount: the audit must say so (and pass the task as shipped)."""
    from agentrl.envs.swe_lite.generate import self_check
    from agentrl.envs.swe_lite.grading import grade

    task = by_function(tasks, "Account.deposit", "ValueError")
    weak = dataclasses.replace(task, PASS_TO_PASS=[])
    empty = grade(sandbox, weak, changes={})
    problems = audit.audit(sandbox, weak, empty.statuses, grade=grade)
    assert any("non-fix raise_ValueError scores 1.0" in p for p in problems), problems
    assert self_check(sandbox, [task], log=lambda *_: None) == []


def test_grading_mode_is_judge_only_for_the_corpus_own_tests(tasks):
    task = tasks[0]
    tree = apply_patch(dict(task.files), task.test_patch)
    files = sorted({t.split("::")[0] for t in task.FAIL_TO_PASS + task.PASS_TO_PASS})
    assert grading_mode(task, tree, files) == "judge"
    edited = {**tree, files[0]: tree[files[0]] + "\n\ndef test_extra():\n    assert True\n"}
    assert grading_mode(task, edited, files) == "in_process"
    assert grading_mode(dataclasses.replace(task, repo="someone/else"), tree, files) == "in_process"
    assert grading_mode(dataclasses.replace(task, repo="swe_lite/../../etc"), tree, files) == "in_process"
    assert grading_mode(task, tree, []) == "in_process"
