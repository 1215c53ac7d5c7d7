"""Difficulty levels render the promised statements from one mutation, Task.difficulty is the same notion
(the lowest level a task is offered at), and the `auto` curriculum promotes on the recent resolved rate."""

from __future__ import annotations

import dataclasses
import re

import agentrl.envs.swe.levels as levels
import pytest
from agentrl.envs.swe.levels import Curriculum, LevelError, render
from agentrl.envs.swe.tasks import load_tasks


def patch_lines(task) -> tuple[list[str], list[str]]:
    """The removed and added lines of a task's gold patch, read straight from the diff."""
    body = [ln for ln in task.patch.splitlines() if not ln.startswith(("---", "+++"))]
    return [ln[1:] for ln in body if ln.startswith("-")], [ln[1:] for ln in body if ln.startswith("+")]


def in_place(task) -> bool:
    """True when the gold patch's one removed line is directly followed by its one added line (not a move)."""
    body = [ln for ln in task.patch.splitlines() if ln.startswith(("-", "+")) and not ln.startswith(("---", "+++"))]
    return [ln[0] for ln in body] == ["-", "+"]


@pytest.fixture(scope="module")
def tasks():
    return load_tasks()


def test_difficulty_is_the_lowest_level_and_means_a_one_line_fix(tasks):
    for task in tasks:
        removed, added = patch_lines(task)
        assert task.difficulty == (0 if len(removed) == len(added) == 1 and in_place(task) else 1), task.instance_id
    assert {t.difficulty for t in tasks} == {0, 1}
    swaps = [t for t in tasks if t.mutation["operator"] == "swap_stmts"]
    assert swaps and all(t.difficulty == 1 for t in swaps)  # a moved line is two edits, not a one-line fix


def test_level_0_quotes_file_function_and_source_of_the_faulty_line(tasks):
    one_line = [t for t in tasks if t.difficulty == 0]
    internal = [t for t in one_line if t.mutation["target"].split("::")[1].split(".")[-1].startswith("_")]
    assert internal, "the corpus should have a one-line bug in an internal function"
    for task in one_line:
        text = render(task, 0)
        path, qualname = task.mutation["target"].split("::")
        removed, _ = patch_lines(task)
        assert text.startswith(task.problem_statement.strip())  # today's statement, reproduction included
        assert f"`{path}`" in text and f"`{qualname}`" in text, task.instance_id
        function, faulty = re.findall(r"```python\n(.*?)```", text, re.S)[-2:]
        assert removed[0] in function.splitlines(), task.instance_id  # the faulty line, verbatim, in its function
        assert function.strip() in task.files[path]  # the buggy source as the agent will find it
        assert f"def {qualname.split('.')[-1]}(" in function
        line = task.files[path].splitlines().index(removed[0]) + 1 if task.files[path].count(removed[0]) == 1 else None
        assert faulty == removed[0] + "\n", task.instance_id  # named and quoted with its indentation: old_str as is
        assert line is None or f"Line {line} is wrong" in text, task.instance_id


def test_level_0_is_refused_for_a_larger_fix(tasks):
    bigger = next(t for t in tasks if t.difficulty == 1)
    with pytest.raises(LevelError, match="one-line fix"):
        render(bigger, 0)


def test_level_1_is_todays_statement_and_level_2_has_no_runnable_reproduction(tasks):
    for task in tasks:
        assert render(task, 1) == task.problem_statement.strip()
        symptom = render(task, 2)
        assert "```" not in symptom and "import " not in symptom, task.instance_id
        code = re.search(r"```python\n(.*?)```", task.problem_statement, re.S).group(1)
        for line in code.splitlines():  # no statement of the reproduction survives, not even inline
            if "(" in line and len(line.strip()) > 12:
                assert line.strip() not in symptom, (task.instance_id, line)
        assert re.search(r"expected|should|raises|instead|does not hold|truthy|No exception", symptom), symptom


def test_fix_site_is_computed_when_the_mutation_record_is_missing(tasks):
    for task in tasks[:12]:
        bare = dataclasses.replace(task, mutation={})
        assert levels.fix_site(bare) == levels.fix_site(task)
        assert render(bare, 0 if task.difficulty == 0 else 1) == render(task, 0 if task.difficulty == 0 else 1)


@pytest.mark.parametrize("bad", [3, -1, "hard", "1.5", 1.5, True, None])
def test_bad_level_names_the_key(bad):
    with pytest.raises(LevelError, match=r"env.kwargs.level must be 0, 1, 2 or 'auto'"):
        levels.check_level(bad)


def test_curriculum_promotes_on_the_recent_rate_only():
    c = Curriculum(0, threshold=0.5, window=4)
    for resolved in (True, False, False, False, True):  # the last 4: 1 of 4 resolved
        c.record(0, resolved)
    assert c.level == 0
    c.record(0, True)  # last 4: F, F, T, T → 0.5
    assert c.level == 1 and c.promotions == [1]
    for _ in range(8):
        c.record(0, True)  # late outcomes of the level left behind do not count
    assert c.level == 1 and c.rate() == 0.0
    for _ in range(8):
        c.record(1, True)
    assert c.level == 2 and c.promotions == [1, 2]
    for _ in range(8):
        c.record(2, True)
    assert c.level == 2  # the top level stays


def test_level_is_a_step_metric_and_auto_shares_one_curriculum_per_run():
    """The level a step trained on is logged (rollout/level_mean), and level=auto's envs share one curriculum."""
    from types import SimpleNamespace

    from agentrl.envs.swe_lite import SweLiteEnv

    from agentrl.rollout.collector import summarize
    from agentrl.types import Trajectory

    trajs = [Trajectory(id=str(i), group_id="g", env_id="swe_lite", task_id="t", reward_info={"level": lv})
             for i, lv in enumerate([0, 0, 1, 1])]
    assert summarize(trajs)["rollout/level_mean"] == 0.5
    assert "rollout/level_mean" not in summarize([Trajectory(id="c", group_id="g", env_id="calc", task_id="y")])
    shared = SweLiteEnv.shared_kwargs({"level": "auto", "promote_at": 0.25, "promote_window": 4})
    assert shared["curriculum"].level == 0 and SweLiteEnv.shared_kwargs({"level": 1}) == {}
    from agentrl.trainer.env_factory import build_env_factory

    cfg = SimpleNamespace(env=SimpleNamespace(name="swe_lite", kwargs={"level": "auto", "backend": "local"}),
                          rollout=SimpleNamespace(concurrency=1), cluster=SimpleNamespace(backend="ray"))
    factory, _ = build_env_factory(cfg)
    assert factory.keywords.get("curriculum") is None  # Ray workers build their own envs: nothing shared
    cfg.cluster.backend = "local"
    factory, close = build_env_factory(cfg)
    try:
        a, b = factory(), factory()
        assert a.curriculum is b.curriculum is factory.keywords["curriculum"]
    finally:
        import asyncio

        asyncio.run(close())
