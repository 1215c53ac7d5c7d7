"""Task schema and loaders: the shipped corpus and SWE-bench-style JSONL with local snapshots."""

from __future__ import annotations

import json
import re

import agentrl.envs.swe.expert as expert
import pytest
from agentrl.envs.swe.lite.generate import MAX_F2P, MIN_F2P
from agentrl.envs.swe.tasks import TaskError, load_swebench, load_tasks, task_from_dict


def test_shipped_corpus_shape(tasks):
    assert len(tasks) >= 200
    splits = {s: [t for t in tasks if t.split == s] for s in ("train", "dev", "test")}
    assert all(splits.values()), {s: len(v) for s, v in splits.items()}
    modules = {s: {t.repo for t in v} for s, v in splits.items()}
    assert not (modules["train"] & modules["test"]) and not (modules["train"] & modules["dev"])
    assert not (modules["dev"] & modules["test"]), "splits must be by module"
    assert len({t.instance_id for t in tasks}) == len(tasks)
    assert len({t.repo for t in tasks}) >= 30


def test_no_module_appears_in_two_splits(tasks):
    """Splits are by module: a module's code is never both trained on and held out."""
    split_of_repo: dict[str, set[str]] = {}
    for t in tasks:
        split_of_repo.setdefault(t.repo, set()).add(t.split)
    mixed = {repo: sorted(s) for repo, s in split_of_repo.items() if len(s) > 1}
    assert not mixed, f"modules in more than one split: {mixed}"
    per_split = {s: sum(t.split == s for t in tasks) for s in ("train", "dev", "test")}
    assert per_split["test"] >= 30 and per_split["dev"] >= 20, per_split


def test_tasks_hide_fail_to_pass_tests_and_never_name_them(tasks):
    for t in tasks:
        assert MIN_F2P <= len(t.FAIL_TO_PASS) <= MAX_F2P and t.PASS_TO_PASS, t.instance_id
        hidden = {f.split("::")[0] for f in t.FAIL_TO_PASS}
        assert not hidden & set(t.files), f"{t.instance_id}: F2P test file shipped in files"
        for f in t.FAIL_TO_PASS:
            assert f.split("::")[1] not in t.problem_statement, f"{t.instance_id} names its test"
        assert "pytest" not in t.problem_statement.replace("import pytest", "").replace("pytest.raises", "")
        assert not any(p.endswith((".pyc",)) or "__pycache__" in p for p in t.files)


def test_tree_id_matches_base_commit(tasks):
    for t in tasks:
        assert t.base_commit == t.tree_id() == t.environment_setup_commit, t.instance_id


def test_expert_edits_reproduce_the_gold_fix(tasks):
    for t in tasks:
        fixed = t.fixed_files()
        for path, text in t.files.items():
            current = text
            for old, new in expert.edits(text, fixed[path]):
                assert current.count(old) == 1
                current = current.replace(old, new)
            assert current == fixed[path], t.instance_id


def test_visible_mode_ships_the_hidden_tests(tasks):
    t = tasks[0]
    hidden_file = t.FAIL_TO_PASS[0].split("::")[0]
    assert hidden_file not in t.snapshot() and hidden_file in t.snapshot("visible")
    with pytest.raises(TaskError, match="visibility must be"):
        t.snapshot("half")


def test_split_filter_and_unknown_split(tasks):
    assert {t.split for t in load_tasks(split="dev")} == {"dev"}
    with pytest.raises(TaskError, match="unknown split 'validation'"):
        load_tasks(split="validation")


def test_load_swebench_accepts_json_string_lists(tmp_path):
    snap = tmp_path / "snaps" / "acme__calc"
    (snap / "tests").mkdir(parents=True)
    (snap / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (snap / "tests" / "test_calc.py").write_text("from calc import add\n\ndef test_zero():\n    assert add(0, 0) == 0\n")
    (snap / ".git").mkdir()
    (snap / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (snap / "__pycache__").mkdir()
    (snap / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"\0\1")
    records = [
        {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": "abc", "problem_statement": "add subtracts",
         "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]), "PASS_TO_PASS": '["tests/test_calc.py::test_zero"]',
         "patch": "", "test_patch": "", "extra_field": 1},
        {"instance_id": "acme__calc-2", "repo": "acme/calc", "problem_statement": "x",
         "FAIL_TO_PASS": ["tests/test_calc.py::test_add"], "PASS_TO_PASS": [], "split": "dev"},
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    tasks = load_swebench(path, tmp_path / "snaps")
    assert tasks[0].FAIL_TO_PASS == ["tests/test_calc.py::test_add"]
    assert tasks[0].PASS_TO_PASS == ["tests/test_calc.py::test_zero"]
    assert sorted(tasks[0].files) == ["calc.py", "tests/test_calc.py"]
    assert tasks[0].environment_setup_commit == "abc" and tasks[1].split == "dev"


def test_loader_errors_name_the_problem(tmp_path):
    with pytest.raises(TaskError, match=re.escape("missing required field(s) FAIL_TO_PASS")):
        task_from_dict({"instance_id": "a", "problem_statement": "p"})
    with pytest.raises(TaskError, match="FAIL_TO_PASS is a string but not JSON"):
        task_from_dict({"instance_id": "a", "problem_statement": "p", "FAIL_TO_PASS": "[oops"})
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"instance_id": "a"}\n{not json\n')
    with pytest.raises(TaskError, match=r"t.jsonl:2: not valid JSON"):
        load_tasks(bad)
    good = tmp_path / "g.jsonl"
    good.write_text(json.dumps({"instance_id": "x", "repo": "r/x", "problem_statement": "p", "FAIL_TO_PASS": ["a::b"]}))
    with pytest.raises(TaskError, match="no snapshot for x"):
        load_swebench(good, tmp_path)


@pytest.mark.docker
def test_a_swebench_style_task_grades_gold_and_empty(tmp_path, sandbox):
    """Own tasks without pytest.ini or setup.py: node ids must still be relative to the repo root."""
    from agentrl.envs.swe.grading.grader import grade
    from agentrl.envs.swe.patches import make_diff

    snap = tmp_path / "snaps" / "acme__calc"
    (snap / "tests").mkdir(parents=True)
    buggy = {"calc.py": "def add(a, b):\n    return a - b\n",
             "tests/test_calc.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"}
    for path, text in buggy.items():
        (snap / path).write_text(text)
    fixed = {**buggy, "calc.py": "def add(a, b):\n    return a + b\n"}
    tests = {**buggy, "tests/test_calc.py": buggy["tests/test_calc.py"] + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
    record = {"instance_id": "acme__calc-1", "repo": "acme/calc", "problem_statement": "add subtracts",
              "patch": make_diff(buggy, fixed), "test_patch": make_diff(buggy, tests),
              "FAIL_TO_PASS": '["tests/test_calc.py::test_add"]', "PASS_TO_PASS": '["tests/test_calc.py::test_zero"]'}
    (tmp_path / "t.jsonl").write_text(json.dumps(record) + "\n")
    task = load_swebench(tmp_path / "t.jsonl", tmp_path / "snaps")[0]
    gold = grade(sandbox, task, changes={"calc.py": fixed["calc.py"]})
    assert gold.resolved, (gold.reason, gold.statuses)
    empty = grade(sandbox, task, changes={})
    assert not empty.resolved and empty.statuses == {"tests/test_calc.py::test_add": "failed",
                                                     "tests/test_calc.py::test_zero": "passed"}
