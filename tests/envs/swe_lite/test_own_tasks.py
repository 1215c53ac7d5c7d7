"""Your own SWE-bench-format tasks from the command line: `env.kwargs.tasks=my.jsonl env.kwargs.snapshots=DIR`
reach the env through the config; a missing snapshot folder names the path that was looked for."""

from __future__ import annotations

import json

import pytest
from agentrl.envs.swe.patches import make_diff
from agentrl.envs.swe.tasks import TaskError

from agentrl.config import load_config
from agentrl.registry import make

BUGGY = {"calc.py": "def add(a, b):\n    return a - b\n",
         "tests/test_calc.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"}


def write_tasks(tmp_path, snapshots: bool = True):
    if snapshots:
        for path, text in BUGGY.items():
            (tmp_path / "snaps" / "acme__calc" / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "snaps" / "acme__calc" / path).write_text(text)
    fixed = {**BUGGY, "calc.py": "def add(a, b):\n    return a + b\n"}
    tests = {**BUGGY, "tests/test_calc.py": BUGGY["tests/test_calc.py"] + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
    record = {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": "abc",
              "problem_statement": "`add(2, 3)` gives `-1`.\n\n```python\nfrom calc import add\nprint(add(2, 3))\n```",
              "patch": make_diff(BUGGY, fixed), "test_patch": make_diff(BUGGY, tests),
              "FAIL_TO_PASS": '["tests/test_calc.py::test_add"]', "PASS_TO_PASS": '["tests/test_calc.py::test_zero"]'}
    path = tmp_path / "my.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def test_tasks_and_snapshots_from_the_command_line_reach_the_env(tmp_path):
    path = write_tasks(tmp_path)
    cfg = load_config("swe_lite", overrides=[f"env.kwargs.tasks={path}", f"env.kwargs.snapshots={tmp_path / 'snaps'}"])
    env = make(cfg.env.name, **cfg.env.kwargs)  # level auto, split train: records without a split are used
    (task,) = env.tasks
    assert task.instance_id == "acme__calc-1" and task.files == BUGGY
    assert task.difficulty == 0  # a one-line fix: offered at level 0 with the function quoted
    for level, expected in ((0, "`add` in `calc.py`"), (2, "`add` gives `-1`.")):
        from agentrl.envs.swe.levels import render

        assert expected in render(task, level)


def test_a_snapshots_folder_next_to_the_tasks_is_found(tmp_path):
    path = write_tasks(tmp_path)
    (tmp_path / "snaps").rename(tmp_path / "snapshots")
    env = make("swe_lite", tasks=str(path), level=1)
    assert env.tasks[0].files == BUGGY


def test_missing_snapshots_name_the_path_looked_for(tmp_path):
    path = write_tasks(tmp_path, snapshots=False)
    with pytest.raises(TaskError, match=f"looked for {tmp_path / 'snapshots'}.*env.kwargs.snapshots=DIR"):
        make("swe_lite", tasks=str(path))
    with pytest.raises(TaskError, match=f"looked for {tmp_path / 'nowhere'}"):
        make("swe_lite", tasks=str(path), snapshots=str(tmp_path / "nowhere"))


def _eval(tmp_path, *argv):
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": f"{repo}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "agentrl", "eval", "--quiet", "--env", "swe_lite", *argv],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)


@pytest.mark.docker
def test_eval_finds_the_snapshots_folder_next_to_the_tasks_as_train_does(tmp_path, docker_backend):
    """Guards `agentrl eval --tasks my.jsonl` saying "no tasks for env 'swe_lite' (split 'test')" while train
    found snapshots/ beside the file: the gold patch must resolve the task, graded in a real sandbox."""
    path = write_tasks(tmp_path)
    (tmp_path / "snaps").rename(tmp_path / "snapshots")
    out = tmp_path / "r.jsonl"
    r = _eval(tmp_path, "--tasks", str(path), "--oracle", "gold", "--backend", docker_backend, "--out", str(out))
    assert r.returncode == 0, r.stderr
    (record,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert record["instance_id"] == "acme__calc-1" and record["resolved"] and not record["infra_error"], record


def test_eval_without_snapshots_names_the_folder_it_looked_for_and_the_flag(tmp_path):
    path = write_tasks(tmp_path, snapshots=False)
    r = _eval(tmp_path, "--tasks", str(path), "--oracle", "gold", "--out", str(tmp_path / "r.jsonl"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"looked for {tmp_path / 'snapshots'}; pass --snapshots DIR" in r.stderr, r.stderr
