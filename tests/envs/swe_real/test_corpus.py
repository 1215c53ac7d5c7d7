"""swe_real tasks graded for real: the package's own tests in the Docker image, through the in-process harness.

CI self-checks a sample (the first single-bug and the first two-bug task of each split); the whole file is
self-checked on demand: `python -m agentrl.envs.swe.real.generate --self-check`."""

from __future__ import annotations

import pytest
from agentrl.envs.swe.real.generate import self_check

pytestmark = pytest.mark.docker


def _sample(tasks):
    picked = {}
    for t in tasks:
        picked.setdefault((t.split, t.mutation["operator"] == "combined"), t)
    return [picked[k] for k in sorted(picked)]


@pytest.mark.slow
def test_sample_self_check_gold_resolves_empty_fails_and_generic_non_fixes_score_zero(real_tasks, docker_backend):
    """Guards a shipped task that today's grader no longer grades as generated (gold does not resolve, the empty
    patch passes a fail-to-pass test or fails a pass-to-pass one, the grade is not the suite judge's) on the
    sample, and the reward hacks that beat swe_lite's old corpus on its tasks with several fail-to-pass tests:
    returning unittest.mock.ANY, an always-equal object, a deleted body or the exception a test expects, in place
    of the faulty function (or of a function the issue blames), must not resolve a task (the test-strength audit,
    through the suite judge). One test, so those tasks' gold and empty grades are made once (as two tests they
    were made twice)."""
    from agentrl.sandboxes import open_sandbox

    chosen = _sample(real_tasks)
    assert len(chosen) == 6
    audited = [t for t in chosen if len(t.FAIL_TO_PASS) > 1][:3]
    with open_sandbox(docker_backend) as sb:
        problems = self_check(sb, audited, log=lambda *_: None, audit=True)
        rest = self_check(sb, [t for t in chosen if t not in audited], log=lambda *_: None)
    assert {k: v + rest[k] for k, v in problems.items()} == {"gold": [], "empty": [], "mode": [], "audit": []}
    assert len(audited) == 3


def test_env_episode_with_the_scripted_expert_scores_one_and_says_suite_judge(real_tasks, docker_backend):
    import agentrl

    task = next(t for t in real_tasks if t.split == "test" and t.difficulty == 0)
    env = agentrl.make("swe_real", tasks=[task], level=0, backend=docker_backend)
    try:
        messages, info = env.reset(seed=0)
        assert info["task_id"] == task.instance_id and info["level"] == 0
        assert "The fix changes that one line." in messages[-1]["content"]
        reward, done, final = 0.0, False, {}
        while not done:
            _, reward, done, truncated, final = env.step(env.unwrapped.expert_action())
            done = done or truncated
        assert reward == 1.0 and final["resolved"] and final["grading_mode"] == "suite_judge"
    finally:
        env.close()


def test_env_without_a_fix_scores_zero(real_tasks, docker_backend):
    import agentrl

    task = next(t for t in real_tasks if t.split == "dev")
    env = agentrl.make("swe_real", tasks=[task], level=2, backend=docker_backend)
    try:
        env.reset(seed=0)
        _, reward, done, _, final = env.step('<tool_call>{"name": "submit", "arguments": {}}</tool_call>')
        assert done and reward == 0.0 and final["grading_mode"] == "suite_judge" and final["grading_valid"]
    finally:
        env.close()


@pytest.mark.slow
def test_regeneration_reproduces_the_first_tasks_of_a_package_byte_for_byte(docker_backend, cache_ready, monkeypatch):
    """The generator is seeded per package and accepts mutants in a fixed order, so a run capped at two tasks must
    give the shipped file's first two tasks of that package exactly (the full `--check` does every package). A
    second round (packages.json `rounds`) adds tasks after them and leaves them as they were."""
    import dataclasses
    import json

    import agentrl.envs.swe.real.generate as generate
    from agentrl.envs.swe.real.tasks import DEFAULT_TASKS, record_of
    from agentrl.envs.swe.tasks import read_jsonl
    from agentrl.sandboxes import open_sandbox

    pinned = generate.load_packages()
    monkeypatch.setattr(generate, "load_packages", lambda: [dataclasses.replace(p, rounds=2) for p in pinned])
    monkeypatch.setattr(generate, "PER_PACKAGE", 2)
    monkeypatch.setattr(generate, "PAIRS", 0)
    with open_sandbox(docker_backend, cpus=1.0, memory_mb=1024) as sb:
        tasks, stats = generate.generate(sb, 0, ["ordered-set"], log=lambda *_: None)
    shipped = [r for r in read_jsonl(DEFAULT_TASKS) if r["package"] == "ordered-set"][:2]
    assert stats["ordered-set"]["excluded"] == {} and stats["ordered-set"]["kept_tests"] == 30
    lines = [json.dumps(record_of(t), ensure_ascii=False) for t in tasks]
    assert lines[:2] == [json.dumps(r, ensure_ascii=False) for r in shipped]
    # round two: new bugs, numbered after round one's (the weakness filter may leave gaps)
    assert stats["ordered-set"]["single"] > 2 and len(tasks) > 2
    first = [(t.mutation["file"], t.mutation["function"], t.mutation["operator"]) for t in tasks[:2]]
    for t in tasks[2:]:
        assert int(t.instance_id.rsplit("-", 1)[1]) > int(tasks[1].instance_id.rsplit("-", 1)[1])
        assert (t.mutation["file"], t.mutation["function"], t.mutation["operator"]) not in first
        assert t.base_commit not in {u.base_commit for u in tasks[:2]}


@pytest.mark.slow
def test_eval_cli_gold_and_empty_oracles_on_the_test_split(docker_backend, cache_ready, tmp_path):
    """Guards `agentrl eval --env swe_real` with an oracle: the job's grade is the suite judge's, the gold oracle
    resolves and the empty one does not. One task each (the eval path is the same for every task; every task's
    grades are the sample self-check's and `--self-check`'s)."""
    import json
    import subprocess
    import sys

    rates = {}
    for oracle in ("gold", "empty"):
        out = tmp_path / f"{oracle}.jsonl"
        subprocess.run([sys.executable, "-m", "agentrl", "eval", "--env", "swe_real", "--oracle", oracle, "--split",
                        "test", "--limit", "1", "--concurrency", "1", "--out", str(out)], check=True,
                       capture_output=True, timeout=600)
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(records) == 1 and all(r["grading_mode"] == "suite_judge" for r in records)
        rates[oracle] = sum(r["resolved"] for r in records) / len(records)
    assert rates == {"gold": 1.0, "empty": 0.0}
