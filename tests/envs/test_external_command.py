"""external:cmd:<command line>: agent programs run as subprocesses with OPENAI_BASE_URL set, on the tiny model.

Real subprocesses (small Python scripts run with sys.executable, calling the gateway with urllib), the real
gateway on loopback and the collector's episode path, so the failure table and the process cleanup are the
real ones."""
# ruff: noqa: F811  (fixtures imported from tests.gateway.fixtures are redefined as test arguments)

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

import agentrl
from agentrl.errors import UnknownEnv
from agentrl.types import TerminationReason, scored
from tests.gateway.fixtures import Recording, engine, renderer  # noqa: F401 (fixtures)
from tests.gateway.fixtures import episodes as shared_episodes

CHAT = '''
import json, os, sys, urllib.request

TASK = json.loads(os.environ["AGENTRL_TASK"])
STDIN = sys.stdin.read()


def chat(messages):
    body = json.dumps({"model": os.environ["OPENAI_MODEL"], "messages": messages, "max_tokens": 6}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body, headers={
        "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)["choices"][0]["message"]
'''

TWO_CALLS = CHAT + '''
msgs = [{"role": "user", "content": "Say hi."}]
msgs += [chat(msgs), {"role": "user", "content": "Again."}]
reply = chat(msgs)
print("a log line before the reward")
print(len(reply["content"]) % 2)
print()
'''


def command(tmp_path, source: str, name: str = "agent.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return f"external:cmd:{shlex.quote(sys.executable)} {path}"


def episodes(engine, renderer, env_name: str, *, group_size: int = 1, **kwargs):
    """One episode (a group of one) unless asked for more."""
    return shared_episodes(engine, renderer, env_name, group_size=group_size, **kwargs)


def alive(pid: int) -> bool:
    """True while `pid` is a running process (a zombie waiting for init to reap it counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_command_agent_yields_the_exact_sampled_tokens_and_its_printed_reward(engine, renderer, tmp_path):
    """Guards the command path: a two-call script gives one segment whose action spans hold exactly the ids (and
    logprobs) the engine returned, and the reward is the last non-empty stdout line."""
    rec = Recording(engine)
    (t,) = episodes(rec, renderer, command(tmp_path, TWO_CALLS))
    assert t.termination is TerminationReason.DONE, t.termination_detail
    assert len(t.segments) == 1 and len(t.turns) == 2 and t.metrics["gateway/calls"] == 2
    assert t.env_id.startswith("agentrl/external.cmd.")
    seg = t.segments[0]
    for gen, turn in zip(rec.returned, t.turns, strict=True):
        a, b = turn.action_span
        assert seg.token_ids[a:b] == gen.output_ids and seg.behaviour_logprobs[a:b] == gen.logprobs
        assert seg.loss_mask[a:b] == [1] * (b - a)
    assert sum(seg.loss_mask) == t.num_action_tokens == sum(len(g.output_ids) for g in rec.returned)
    assert t.reward == len(t.turns[-1].action_text.removesuffix("<|im_end|>")) % 2


def test_a_json_reward_line_keeps_its_other_keys_as_reward_info(engine, renderer, tmp_path):
    """A last line {"reward": r, ...} is the reward with the rest as reward_info, as for a Python agent's dict
    (and an env's final info: the agent loop's one record builder keeps JSON values as they are)."""
    src = CHAT + 'chat([{"role": "user", "content": "hi"}])\nprint(json.dumps({"reward": 0.25, "steps": 1, "log": [1]}))\n'
    (t,) = episodes(engine, renderer, command(tmp_path, src))
    assert t.termination is TerminationReason.DONE and t.reward == 0.25, t.termination_detail
    assert t.reward_info == {"steps": 1, "log": [1]}


@pytest.mark.parametrize("body, detail", [
    ("sys.stderr.write('x' * 600 + 'the agent crashed')\nsys.exit(3)",
     "the agent command exited non-zero (exit code 3; stderr: '" + "x" * 483 + "the agent crashed')"),
    ("print('1.0')\nprint('done!')", "the agent command's last stdout line 'done!' is not a number or a JSON"),
    ("print(json.dumps({'score': 1}))", "the agent command's last stdout line '{\"score\": 1}' is not a number"),
])
def test_a_failing_command_is_a_masked_env_error_naming_its_exit_code_and_stderr(engine, renderer, tmp_path, body,
                                                                                  detail):
    """A non-zero exit or an unreadable reward line is env_error (masked), with the exit code and the last 500
    characters of stderr in the detail."""
    src = CHAT + "chat([{'role': 'user', 'content': 'hi'}])\n" + body + "\n"
    (t,) = episodes(engine, renderer, command(tmp_path, src))
    assert t.termination is TerminationReason.ENV_ERROR and not scored(t.termination)
    assert t.termination_detail.startswith(detail), t.termination_detail
    assert t.termination_detail.count("exit code") == 1


def test_a_command_that_makes_no_model_call_is_an_env_error_with_its_stderr(engine, renderer, tmp_path):
    """Exit 0 with a reward but no call (say, it could not connect and swallowed the error): env_error, with the
    exit code and stderr appended so the cause is visible."""
    src = "import sys\nsys.stderr.write('connection refused')\nprint(1.0)\n"
    (t,) = episodes(engine, renderer, command(tmp_path, src))
    assert t.termination is TerminationReason.ENV_ERROR
    assert t.termination_detail == "the agent program made no model call (exit code 0; stderr: 'connection refused')"


HANGS = '''
import os, subprocess, sys, time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(120)
'''


def test_a_command_past_the_deadline_is_killed_with_its_children(engine, renderer, tmp_path):
    """The episode deadline kills the command's whole process group (here the script and a child it started):
    env_error, and neither process is left running."""
    pids = tmp_path / "pids"
    (t,) = episodes(engine, renderer, command(tmp_path, HANGS) + f" {pids}", episode_timeout_s=4)
    assert t.termination is TerminationReason.ENV_ERROR
    assert t.termination_detail.startswith("the agent program ran past the episode deadline (4s)")
    assert t.termination_detail.endswith("(its process group was killed)"), t.termination_detail
    for pid in map(int, pids.read_text().split()):
        deadline = time.monotonic() + 5  # the orphaned child is reaped by init, not by us
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid), pid


def test_a_cancelled_episode_kills_its_command(tmp_path):
    """Cancelling the episode (the run stopping) kills the process group in CommandAgent's finally."""
    from agentrl.gateway import AgentClient
    from agentrl.rollout.programs import CommandAgent

    pids = tmp_path / "pids"
    (tmp_path / "hang.py").write_text(HANGS)
    program = CommandAgent([sys.executable, str(tmp_path / "hang.py"), str(pids)])

    async def cancel_when_started():
        task = asyncio.ensure_future(program({"seed": 0}, AgentClient("http://127.0.0.1:9/v1", "key")))
        while not pids.exists():
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(cancel_when_started(), 60))
    for pid in map(int, pids.read_text().split()):
        deadline = time.monotonic() + 5
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid), pid


# A helper in its own session (setsid), which a process group kill does not reach, with the script's stdout
# or none; the pid file is written once the helper runs, then the script makes its model call and prints its
# reward (or hangs).
ESCAPES = CHAT + '''
import subprocess
out = None if sys.argv[3] == "stdout" else subprocess.DEVNULL
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True,
                          stdin=subprocess.DEVNULL, stdout=out, stderr=out)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(helper.pid))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
chat([{"role": "user", "content": "hi"}])
if sys.argv[2] == "hang":
    import time
    time.sleep(120)
print(1)
'''


@pytest.mark.parametrize("ending, helper_out", [("exit", "stdout"), ("exit", "devnull"), ("hang", "devnull")])
def test_a_helper_that_left_the_commands_session_is_killed_too(engine, renderer, tmp_path, ending, helper_out):
    """A process the command started in a new session (setsid) escapes the process group kill; the subreaper
    the command runs under kills it when the command exits (reward kept) or passes the deadline. A helper
    holding the command's stdout no longer keeps a finished episode waiting until the deadline."""
    pids = tmp_path / "pids"
    try:
        (t,) = episodes(engine, renderer, command(tmp_path, ESCAPES) + f" {pids} {ending} {helper_out}", episode_timeout_s=6)
        helper = int(pids.read_text())
        if ending == "exit":
            assert t.termination is TerminationReason.DONE and t.reward == 1.0, t.termination_detail
            assert not alive(helper)  # killed before the episode returned, not some time after
        else:
            assert t.termination_detail.endswith("(its process group was killed)"), t.termination_detail
            deadline = time.monotonic() + 5
            while alive(helper) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not alive(helper)
    finally:
        if pids.exists() and alive(int(pids.read_text())):
            os.kill(int(pids.read_text()), signal.SIGKILL)  # the test's own process, left by a failure


ECHO_TASK = CHAT + '''
chat([{"role": "user", "content": TASK["question"]}])
print(json.dumps({"reward": 1.0, "id": TASK["id"], "stdin_is_env": json.loads(STDIN) == TASK}))
'''


def test_tasks_from_a_jsonl_file_are_drawn_with_the_seed_and_given_on_env_and_stdin(engine, renderer, tmp_path):
    """env.kwargs.tasks=tasks.jsonl: the episode seed draws a task ("id" is the task_id), which reaches the
    command as AGENTRL_TASK and on stdin; different seeds draw different tasks."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "question": f"Say {i}."}) + "\n\n" for i in range(5)))
    name = command(tmp_path, ECHO_TASK)
    drawn = {seed: agentrl.make(name, tasks=str(tasks)).reset(seed=seed)[1]["task_id"] for seed in range(8)}
    assert len(set(drawn.values())) > 1
    (t,) = episodes(engine, renderer, name, seed=3, env_kwargs={"tasks": str(tasks)})
    assert t.termination is TerminationReason.DONE and t.reward == 1.0, t.termination_detail
    assert t.task_id == drawn[3] and t.reward_info == {"id": drawn[3], "stdin_is_env": True}


def test_a_default_task_is_the_seed(engine, renderer, tmp_path):
    """Without tasks the command gets {"seed": seed}."""
    src = CHAT + 'chat([{"role": "user", "content": "hi"}])\nprint(json.dumps({"reward": TASK["seed"]}))\n'
    (t,) = episodes(engine, renderer, command(tmp_path, src), seed=7)
    assert t.termination is TerminationReason.DONE and t.reward == 7.0 and t.task_id == "7"


def test_relative_paths_in_the_command_become_absolute(tmp_path, monkeypatch):
    """A script named relative to the current directory runs from any worker directory; flags and a program on
    PATH stay as given."""
    from agentrl.rollout.programs import command_argv

    (tmp_path / "agent.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    assert command_argv("python agent.py --flag 'a b'") == ["python", str(tmp_path / "agent.py"), "--flag", "a b"]


@pytest.mark.parametrize("cmd, message", [
    ("cmd:", "the agent command is empty"),
    ("cmd:no-such-agent-program-xyz --flag", "agent command program 'no-such-agent-program-xyz' is not on PATH"),
    ("cmd:./missing/agent.sh", "agent command program './missing/agent.sh' does not exist"),
])
def test_a_bad_command_is_refused_by_agentrl_train_in_one_line(tmp_path, capsys, cmd, message):
    """`agentrl train --env external:cmd:…` with no command or a missing program stops at once: exit 2, one
    line naming the problem, no traceback, no episode."""
    from agentrl.cli import main

    argv = ["train", "--env", "external:" + cmd, "model.name=tiny", "trainer.steps=1", "trainer.tensorboard=false",
            f"trainer.run_dir={tmp_path / 'run'}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    with pytest.raises(UnknownEnv, match=message):
        agentrl.make("external:" + cmd)


@pytest.mark.slow
def test_train_one_step_on_a_command_agent_from_the_cli(tmp_path, capsys):
    """`agentrl train --env "external:cmd:python agent.py" env.kwargs.tasks=tasks.jsonl` runs a GRPO step on the
    command's trajectories; the trainer's recompute of the behaviour logprobs agrees with the engine's."""
    from agentrl.cli import main

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "question": f"Count to {i}."}) + "\n" for i in range(3)))
    src = CHAT + '''
msgs = [{"role": "user", "content": TASK["question"]}]
msgs += [chat(msgs), {"role": "user", "content": "Again."}]
print(len(chat(msgs)["content"]) % 2)
'''
    run_dir = tmp_path / "run"
    argv = ["train", "--env", command(tmp_path, src), f"env.kwargs.tasks={tasks}", "model.name=tiny",
            "rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=6",
            "rollout.max_context_tokens=256", "rollout.max_turns=3", "rollout.dynamic_sampling=false",
            "trainer.tensorboard=false", "trainer.steps=1", "trainer.sample_every=0", f"trainer.run_dir={run_dir}"]
    assert main(argv) == 0, capsys.readouterr().err
    rec = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert rec["gateway/prefix_mismatch_rate"] == 0.0 and rec["termination/done"] == 4
    assert rec["mismatch/logprob_abs_diff_max"] < 1e-3, rec["mismatch/logprob_abs_diff_max"]
    lines = [json.loads(x) for x in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and all(x["metrics"]["gateway/calls"] == 2 for x in lines)
    assert {x["task_id"] for x in lines} <= {"t0", "t1", "t2"}


def test_the_example_cli_agent_runs_as_a_command(engine, renderer):
    """examples/cli_agent.py, unchanged: one standard-library call through $OPENAI_BASE_URL, and its printed
    reward (1.0 for a non-empty reply) is the episode's."""
    path = Path(__file__).resolve().parents[2] / "examples" / "cli_agent.py"
    (t,) = episodes(engine, renderer, f"external:cmd:{shlex.quote(sys.executable)} {path}")
    assert t.termination is TerminationReason.DONE and len(t.turns) == 1, t.termination_detail
    assert t.reward == float(bool(t.turns[0].action_text.removesuffix("<|im_end|>").strip()))

def test_a_bad_tasks_file_is_named_with_its_line(tmp_path):
    """env.kwargs.tasks that is missing, empty, or has a line that is not a JSON object fails at construction
    (preflight reports it before any episode), naming the file and line."""
    from agentrl.envs.external import read_tasks

    from agentrl.errors import ConfigError

    with pytest.raises(ConfigError, match="does not exist"):
        read_tasks(str(tmp_path / "nope.jsonl"))
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ConfigError, match="holds no tasks"):
        read_tasks(str(tmp_path / "empty.jsonl"))
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n[1, 2]\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:2 is not a JSON object"):
        read_tasks(str(tmp_path / "bad.jsonl"))
