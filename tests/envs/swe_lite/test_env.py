"""SweLiteEnv end to end on Docker: the checker, the scripted expert, tool observations, budgets, tampering,
and a dead sandbox flagged as infra_error."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from agentrl.tool_calls import format_call

pytestmark = pytest.mark.docker


def bash(cmd: str) -> str:
    return format_call("bash", {"command": cmd})


def edit(**args) -> str:
    return format_call("str_replace_editor", args)


@pytest.fixture
def make_env(docker_backend, tasks):
    from agentrl.envs.swe_lite import SweLiteEnv

    envs = []

    def make(**kw):
        env = SweLiteEnv(tasks=kw.pop("tasks", tasks), backend=docker_backend, **kw)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


@pytest.mark.slow
def test_registered_and_passes_check_env(docker_backend):
    import agentrl.envs  # noqa: F401  (registers the built-ins)
    from agentrl.sandboxes import SandboxPool
    from gymnasium.utils.env_checker import check_env as gym_check_env

    from agentrl.agent_env import check_env
    from agentrl.registry import make

    pool = SandboxPool(backend=docker_backend, warm=1, max_concurrency=2)  # the checker resets many times
    env = make("swe_lite", split="dev", pool=pool)
    # gymnasium's own warnings, minus ResourceWarnings about docker-py sockets (the sandbox layer's, not the env's)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym_check_env(env, skip_render_check=True, skip_close_check=True)
    assert not [str(w.message) for w in caught if not issubclass(w.category, ResourceWarning)]
    try:
        check_env(env, strict=False)  # includes the scripted expert reaching `terminated`
    finally:
        pool.close()


def test_expert_resolves_a_task_and_info_is_complete(make_env, tasks):
    env = make_env()
    messages, info = env.reset(options={"instance_id": tasks[0].instance_id})
    assert info["task_id"] == tasks[0].instance_id and "<issue>" in messages[-1]["content"]
    for _ in range(10):
        obs, reward, terminated, truncated, info = env.step(env.expert_action())
        if terminated:
            break
    assert reward == 1.0 and info["resolved"] and info["exit_reason"] == "submitted" and not info["infra_error"]
    assert info["f2p_pass"] == info["p2p_pass"] == 1.0 and info["patch"].strip() == tasks[0].patch.strip()
    assert set(info["timings"]) >= {"reset_s", "tools_s", "grade_s", "episode_s"} and info["n_format_errors"] == 0


def test_repo_has_one_commit_no_history_no_bytecode(make_env):
    env = make_env()
    env.reset(seed=3)
    obs = env.step(bash("git log --oneline | wc -l; git reflog | wc -l; git remote | wc -l; "
                        "find . -name '*.pyc' -o -name __pycache__ | wc -l; cd /; pwd"))[0][0]["content"]
    assert "<returncode>0</returncode>" in obs and obs.split("<output>\n")[1].split("</output>")[0].split() == ["1", "0", "0", "0", "/"]
    assert env.step(bash("pwd"))[0][0]["content"].count("/workspace/repo") == 1  # fresh subshell: cd did not persist


def test_format_errors_end_the_episode_in_the_loop_and_score_0(make_env):
    """Guards the one owner of the format-error budget: the env only flags each error (it used to end the
    episode itself at its own limit, beside the loop's), the agent loop ends it at LoopConfig.max_format_errors,
    and end_episode closes it out as a scored 0 with the env's final info, even when evaluation asks for a grade."""

    from agentrl.models import load_tokenizer
    from agentrl.rollout.agent_loop import LoopConfig, ScriptedPolicy, run_episode

    env = make_env()
    env.reset(seed=0)
    for _ in range(4):
        _, _, terminated, truncated, info = env.step("no call here")
        assert info["format_error"] and not terminated and not truncated
    cfg = LoopConfig(max_format_errors=2, max_new_tokens=16, grade_at_budget=True)
    policy = ScriptedPolicy(lambda env: "no call here", name="babble")
    traj = asyncio.run(run_episode(make_env(), None, load_tokenizer("tiny"), cfg, seed=0, policy=policy))
    info = traj.reward_info
    assert traj.termination.value == "format_errors" and traj.reward == 0.0 and len(traj.turns) == 2
    assert info["exit_reason"] == "format_errors" and info["n_format_errors"] == 2 and not info["grading_valid"]


def test_turn_budget_is_the_loops_and_is_graded(make_env, tasks):
    """The loop owns the turn budget (rollout.max_turns): the env never truncates on its own, and the loop's
    ending is graded as the repo stands (grade_on_truncation), in training too (grade_at_budget False)."""
    from agentrl.models import load_tokenizer
    from agentrl.rollout.agent_loop import LoopConfig, ScriptedPolicy, run_episode

    env = make_env()
    env.reset(options={"instance_id": tasks[0].instance_id})
    for _ in range(3):
        _, reward, terminated, truncated, info = env.step(bash("true"))
        assert not terminated and not truncated and reward == 0.0 and "resolved" not in info
    cfg = LoopConfig(max_turns=2, max_new_tokens=64, grade_at_budget=False)
    policy = ScriptedPolicy(lambda env: bash("true"), name="idle")
    traj = asyncio.run(run_episode(make_env(), None, load_tokenizer("tiny"), cfg, seed=0, policy=policy,
                                   options={"instance_id": tasks[0].instance_id}))
    info = traj.reward_info
    assert traj.termination.value == "max_turns" and len(traj.turns) == 2 and traj.reward == 0.0
    assert info["exit_reason"] == "loop_max_turns" and info["grading_valid"] and info["f2p_pass"] == 0.0


def test_time_budget_without_grading_scores_zero_ungraded(make_env):
    env = make_env(grade_on_truncation=False)
    env.reset(seed=0)
    env.step(bash("true"))
    info = env.end_episode("timeout", grade=False)
    assert info["reward"] == 0.0 and not info["grading_valid"] and info["exit_reason"] == "loop_timeout"
    assert info["termination"] == "timeout" and env.sandbox is None


TAMPERING = {
    "edit_tests": [bash("for f in tests/*.py; do printf 'def test_ok():\\n    pass\\n' > $f; done")],
    "conftest": [edit(command="create", path="/workspace/repo/conftest.py", file_text=(
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    out = yield\n    rep = out.get_result()\n    rep.outcome = 'passed'\n"))],
    "fake_junit": [bash("mkdir -p /tmp && printf '<testsuites><testsuite tests=\"1\"><testcase classname=\"x\" "
                        "name=\"y\"/></testsuite></testsuites>' | tee /tmp/grade.xml report.xml junit.xml")],
    "exit_at_import": [bash("for f in $(ls *.py); do sed -i '1i import os; os._exit(0)' $f; done")],
}


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(TAMPERING))
def test_tampering_does_not_score(make_env, tasks, attack):
    env = make_env()
    env.reset(options={"instance_id": tasks[0].instance_id})
    for action in TAMPERING[attack]:
        obs, *_ = env.step(action)
        assert "Error" not in obs[0]["content"][:20], obs
    _, reward, terminated, _, info = env.step(format_call("submit", {}))
    assert terminated and reward == 0.0 and not info["resolved"] and not info["infra_error"], info
    if attack == "exit_at_import":
        # under the judge the worker dies at import: every test fails (a collection error), flagged by the scan too
        assert info["suspicious"] and info["grading_mode"] == "judge" and info["f2p_pass"] == info["p2p_pass"] == 0.0


def test_dead_sandbox_is_an_infra_error(make_env):
    env = make_env()
    env.reset(seed=1)
    env.sandbox.kill()
    obs, reward, terminated, _, info = env.step(bash("ls"))
    assert terminated and reward == 0.0 and info["infra_error"] and info["termination"] == "sandbox_error"
    assert "sandbox failed" in obs[0]["content"]
