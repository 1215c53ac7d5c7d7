"""Tasks too weak to grade a policy never ship: every shipped swe_real task has at least MIN_F2P fail-to-pass
tests, and the generator's `weakness` names a task with fewer before grading anything."""

from __future__ import annotations

import dataclasses

from agentrl.envs.swe.real.generate import MIN_F2P, Generator


def test_every_shipped_task_has_enough_fail_to_pass_tests(real_tasks):
    """One failing test can be special-cased from the reproduction the issue text quotes; the shipped file must
    hold none such (the generator drops them, and the test-strength audit checks the rest)."""
    few = [t.instance_id for t in real_tasks if len(t.FAIL_TO_PASS) < MIN_F2P]
    assert few == []


def test_weakness_names_a_single_fail_to_pass_test_without_grading(real_tasks):
    task = dataclasses.replace(real_tasks[0], FAIL_TO_PASS=real_tasks[0].FAIL_TO_PASS[:1])
    gen = Generator(sandbox=None, log=lambda *_: None)  # no sandbox: the count is decided before any grade
    assert gen.weakness(task) == f"1 fail-to-pass test (at least {MIN_F2P} needed)"


def test_named_in_reads_the_names_the_issue_blames():
    from agentrl.envs.swe.real.statements import named_in

    text = ("Bug in `isodate`: `parse_duration` gives a wrong result.\n\n> assert x\n\n"
            "Also, `Duration` raises `TypeError` where it should not.\n\nAlso, `strftime` no longer raises the error "
            "it should.\n\nAlso, `parse_duration` gives a wrong result.")
    assert named_in(text) == ["parse_duration", "Duration", "strftime"]
    assert named_in("Since a recent change in `toolz`, calling it fails.") == []


def test_the_audit_plants_the_always_equal_value_in_the_function_the_issue_blames(real_tasks):
    """A policy that reads "`f` gives a wrong result" would make f return a value equal to anything, whichever
    function holds the bug: the audit tries exactly that, in each definition of f, besides the faulty function."""
    from agentrl.envs.swe.audit import ALWAYS_EQUAL_BODY, non_fixes
    from agentrl.envs.swe.real.generate import named_targets
    from agentrl.envs.swe.real.statements import named_in

    elsewhere = [t for t in real_tasks if any(q != t.mutation["function"] for _, q in named_targets(t))]
    assert elsewhere, "no shipped task blames a function other than the faulty one"
    task = elsewhere[0]
    targets = named_targets(task)
    assert {q.rsplit(".", 1)[-1] for _, q in targets} <= set(named_in(task.problem_statement))
    variants = non_fixes(task, targets)
    for path, qualname in targets:
        if (path, qualname) == (task.mutation["file"], task.mutation["function"]):
            continue
        changed = variants[f"always_equal in {path}::{qualname}"]
        assert list(changed) == [path] and ALWAYS_EQUAL_BODY in changed[path]
        assert changed[path] != task.files[path]
    same = next(t for t in real_tasks if named_targets(t) == [(t.mutation["file"], t.mutation["function"])])
    assert not [k for k in non_fixes(same, named_targets(same)) if k.startswith("always_equal in")]
