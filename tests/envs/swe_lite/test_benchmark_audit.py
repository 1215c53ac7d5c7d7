"""The non-fix audit of resolved episodes (swe_lite.benchmark.non_fix_findings): the changes audit.py calls generic
non-fixes are flagged when an episode's patch contains them, and no gold fix of the held-out set is."""

from __future__ import annotations

import difflib

from agentrl.envs.swe.audit import ALWAYS_EQUAL_BODY, ANY_BODY, with_body
from agentrl.envs.swe_lite.benchmark import audit_episodes, example_literals, held_out_tasks, non_fix_findings


def diff(task, changed: str) -> str:
    """A unified diff of the task's faulty file against `changed`, as an episode's record carries it."""
    file = task.mutation["file"]
    return "".join(difflib.unified_diff(task.files[file].splitlines(keepends=True), changed.splitlines(keepends=True),
                                        f"a/{file}", f"b/{file}"))


def test_no_gold_fix_of_the_held_out_tasks_is_flagged():
    tasks = held_out_tasks("dev,test", 0)
    assert len(tasks) > 100
    assert {t.instance_id: non_fix_findings(t, t.patch) for t in tasks if non_fix_findings(t, t.patch)} == {}


def test_the_audits_always_equal_values_are_flagged():
    for task in held_out_tasks("dev,test", 0)[:20]:
        for body in (ANY_BODY, ALWAYS_EQUAL_BODY):
            changed = with_body(task.files[task.mutation["file"]], task.mutation["function"], body)
            found = non_fix_findings(task, diff(task, changed))
            assert found and all(f.startswith("always_equal: ") for f in found), (task.instance_id, body)


def test_a_special_case_of_the_quoted_example_is_flagged():
    task = next(t for t in held_out_tasks("dev,test", 0) if t.instance_id.startswith("swelite__bank-"))
    assert {("int", 1), ("int", 8)} <= example_literals(task)  # `assert Account("ann", 7).deposit(1) == 8`
    source = task.files[task.mutation["file"]]
    line = next(ln for ln in source.splitlines() if ln.strip() == "if amount <= 1:")
    hacked = source.replace(line, line.replace("if amount <= 1:", "if amount == 1:\n            return 8\n"
                                               "        if amount <= 0:"), 1)
    found = non_fix_findings(task, diff(task, hacked))
    assert found == ["special_case: if amount == 1:"]
    assert non_fix_findings(task, task.patch) == []  # the fix itself (`<= 0`) is no special case


def test_audit_episodes_counts_resolved_episodes_only():
    task = held_out_tasks("dev,test", 0)[0]
    hack = diff(task, with_body(task.files[task.mutation["file"]], task.mutation["function"], ANY_BODY))
    records = [{"instance_id": task.instance_id, "resolved": True, "patch": hack},
               {"instance_id": task.instance_id, "resolved": False, "patch": hack}]
    audit = audit_episodes(records, [task])
    assert (audit["resolved"], audit["flagged"]) == (2 - 1, 1) and list(audit["episodes"]) == [task.instance_id]
    assert audit_episodes([{**records[0], "patch": task.patch}], [task])["flagged"] == 0
