"""The test-strength audit (audit.py) and the choice of grading mode (grading.grading_mode)."""

from __future__ import annotations

import ast
import dataclasses

import agentrl.envs.swe.audit as audit
import pytest
from agentrl.envs.swe.grading.grader import grading_mode
from agentrl.envs.swe.patches import apply_patch

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
    from agentrl.envs.swe.grading.grader import grade
    from agentrl.envs.swe.lite.generate import self_check

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


def test_the_issues_example_is_read_as_python_whatever_the_sentence_around_it():
    """Guards the audit's special-case non-fix: the example is the issue's code block read as Python (literal
    assignments, then `assert f(args) == expected`), not a regex over one sentence template, so every template
    that shows a reproduction is tried."""
    statement = ("Bug report for `m`.\n\nRunning this snippet:\n\n```python\nfrom m import f\n\nxs = [1, 2]\n"
                 "assert f(xs, k=3) == (4, 'a')\n```\n\nIt gives `(0, 'a')`, but `(4, 'a')` is expected. Could you?")
    assert audit.quoted_example(statement) == ("f", [[1, 2]], {"k": 3}, (4, "a"))
    assert audit.quoted_example("```python\nassert Account('x').total() == 3\n```") is None  # a method: not literal
    assert audit.quoted_example("`f(1)` returns the wrong result.") is None  # no code block (level 2's text)


def test_the_special_case_non_fix_answers_the_example_and_runs_the_bug_otherwise():
    import dataclasses

    source = 'def f(xs, k=1):\n    """Doc."""\n    return len(xs) + k - 1\n'
    task = dataclasses.replace(
        _bare_task(), files={"m.py": source},
        problem_statement="```python\nfrom m import f\n\nassert f([1, 2], k=3) == 5\n```")
    changed = audit.special_case(task)["m.py"]
    space: dict = {}
    exec(changed, space)
    assert space["f"]([1, 2], k=3) == 5 and space["f"]([1, 2], k=4) == 5 and space["f"]([1], k=3) == 3
    assert '"""Doc."""' in changed.splitlines()[1]  # the guard goes after the docstring
    assert "special_case" in audit.non_fixes(dataclasses.replace(task, mutation={"file": "m.py", "function": "f"}))


def _bare_task():
    from agentrl.envs.swe.tasks import task_from_dict

    return task_from_dict({"instance_id": "x", "problem_statement": "", "FAIL_TO_PASS": ["tests/t.py::test_a"]})
