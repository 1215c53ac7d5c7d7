"""Grading: JUnit parsing, what the agent may change, and scoring with the exit-code cross-check."""

from __future__ import annotations

import pytest
from agentrl.envs.swe_lite.grading import (
    CaseResult,
    SuiteRun,
    agent_changes,
    is_allowed,
    is_suspicious,
    junit_key,
    parse_junit,
    score,
)

XML = b"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1"
 skipped="1" tests="4"><testcase classname="tests.test_m" name="test_ok" time="0.001"/>
<testcase classname="tests.test_m" name="test_bad"><failure message="assert 1 == 2">E   assert 1 == 2</failure></testcase>
<testcase classname="tests.test_m" name="test_skip"><skipped type="pytest.skip" message="no"/></testcase>
<testcase classname="tests.test_m.TestK" name="test_x[1-2]"><skipped type="pytest.xfail" message="x"/></testcase>
</testsuite></testsuites>"""


def test_parse_junit_statuses():
    cases, collection_errors = parse_junit(XML)
    got = {(c, n): r.status for c, n, r in cases}
    assert got == {("tests.test_m", "test_ok"): "passed", ("tests.test_m", "test_bad"): "failed",
                   ("tests.test_m", "test_skip"): "skipped", ("tests.test_m.TestK", "test_x[1-2]"): "xfailed"}
    assert collection_errors == 0
    assert junit_key("tests/test_m.py::TestK::test_x[1-2]") == ("tests.test_m.TestK", "test_x[1-2]")


def test_allowed_paths():
    globs = ["*.py", "!tests/**", "!conftest.py"]
    assert is_allowed("mod.py", globs) and is_allowed("pkg/new.py", globs)
    for path in ("tests/test_mod.py", "conftest.py", "pkg/conftest.py", "sitecustomize.py", "x.pth", "pytest.ini",
                 "pyproject.toml", "test_extra.py", "pkg/tests/helper.py", "__pycache__/mod.cpython-311.pyc", "README"):
        assert not is_allowed(path, globs), path


def test_agent_changes_keeps_only_allowed_text_files():
    original = {"mod.py": "a = 1\n", "tests/test_mod.py": "t\n", "old.py": "o\n"}
    final = {"mod.py": b"a = 2\n", "tests/test_mod.py": b"hacked\n", "conftest.py": b"x", "new.py": b"n\n",
             "blob.py": b"\xff\xfe"}
    assert agent_changes(original, final, ["*.py", "!tests/**"]) == {"mod.py": "a = 2\n", "new.py": "n\n", "old.py": None}


def test_scoring_follows_swebench():
    run = SuiteRun({"f1": CaseResult("passed"), "f2": CaseResult("skipped"), "p1": CaseResult("skipped")}, 1, True)
    assert score(run, ["f1", "f2"], ["p1"]) == (0.5, 1.0)
    assert score(run, ["f1", "missing"], []) == (0.5, 1.0)
    assert score(SuiteRun(run.cases, 0, False, "forged"), ["f1"], ["p1"]) == (0.0, 0.0)


def test_reward_is_resolved_unless_shaped():
    from agentrl.envs.swe_lite.grading import Grade

    partial = Grade(resolved=False, f2p=0.5, p2p=1.0, resolution="PARTIAL", patch="", valid=True)
    assert partial.reward() == 0.0 and partial.reward(shaped=True) == 0.5
    broken = Grade(resolved=False, f2p=0.5, p2p=0.9, resolution="NO", patch="", valid=True)
    assert broken.reward(shaped=True) == 0.0


def test_suspicious_scan():
    assert is_suspicious("+++ b/m.py\n+import os; os._exit(0)\n")
    assert not is_suspicious("+++ b/m.py\n+return a + b\n")


@pytest.mark.docker
def test_gold_and_empty_on_one_task(sandbox, tasks):
    from agentrl.envs.swe_lite.grading import grade

    task = tasks[0]
    gold = grade(sandbox, task, changes={p: t for p, t in task.fixed_files().items() if task.files.get(p) != t})
    assert gold.resolved and gold.resolution == "FULL" and gold.patch.strip() == task.patch.strip()
    empty = grade(sandbox, task, changes={})
    assert not empty.resolved and empty.f2p == 0.0 and empty.p2p == 1.0 and empty.valid
