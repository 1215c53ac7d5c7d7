"""external:<file.py>:<fn>: agent programs trained through the gateway, on the tiny model's embedded engine.

Each test writes a small agent file and runs its episodes through the collector (the trainer's episode path),
so the gateway, the session record and the failure table are the real ones."""
# ruff: noqa: F811  (fixtures imported from tests.gateway.fixtures are redefined as test arguments)

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
import textwrap
import time

import pytest

import agentrl
from agentrl.errors import UnknownEnv
from agentrl.rollout.agent_loop import LoopConfig
from agentrl.rollout.collector import collect_group, summarize
from agentrl.types import TerminationReason, scored
from tests.gateway.fixtures import engine, episodes, renderer, serial_engine  # noqa: F401 (fixtures)

TWO_CALLS = '''
TASKS = [{"id": "hi", "question": "Say hi."}, {"id": "bye", "question": "Say bye."}]
URLS = []

async def run(task, client):
    URLS.append(client.base_url)
    msgs = [{"role": "user", "content": task["question"]}]
    reply = await client.chat(msgs, max_tokens=6)
    msgs += [reply["choices"][0]["message"], {"role": "user", "content": "Again."}]
    reply = await client.chat(msgs, max_tokens=6)
    return float(len(reply["choices"][0]["message"]["content"]) % 2)
'''


def agent_file(tmp_path, source: str, name: str = "agent.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return f"external:{path}:run"


def test_an_agent_program_yields_trajectories_with_the_sessions_exact_tokens(serial_engine, renderer, tmp_path):
    """Guards the env path: a group of two episodes of a two-call agent gives two scored trajectories, one
    segment each, both calls as turns, the reward the program returned, gateway metrics, and no gateway left
    running (each episode's gateway is closed with it); the same task seed reproduces the same samples (sessions
    seed each call like the agent loop)."""
    from urllib.parse import urlsplit

    from agentrl.rollout.programs import load_agent

    engine, name = serial_engine, agent_file(tmp_path, TWO_CALLS)
    trajs = episodes(engine, renderer, name)
    assert [t.termination for t in trajs] == [TerminationReason.DONE] * 2, [t.termination_detail for t in trajs]
    for t in trajs:
        assert len(t.segments) == 1 and len(t.turns) == 2 and t.reward in (0.0, 1.0)
        assert t.task_id in ("hi", "bye") and t.env_id.startswith("agentrl/external.")
        assert t.metrics["gateway/calls"] == 2 and t.metrics["gateway/prefix_mismatch_rate"] == 0.0
        assert t.num_action_tokens == sum(b - a for a, b in (turn.action_span for turn in t.turns))
        assert t.reward == len(t.turns[-1].action_text.removesuffix("<|im_end|>")) % 2
    assert trajs[0].segments[0].token_ids != trajs[1].segments[0].token_ids  # members sample differently
    again = episodes(engine, renderer, name)
    assert [t.segments for t in again] == [t.segments for t in trajs]
    urls = load_agent(name.removeprefix("external:"))[0].URLS
    assert len(urls) == 4
    for url in urls:  # each episode's gateway is closed with it
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", urlsplit(url).port)) != 0, url
    stats = summarize(trajs)
    assert stats["gateway/prefix_mismatch_rate"] == 0.0 and stats["gateway/segments_mean"] == 1.0


@pytest.mark.parametrize("body, detail", [
    ("raise ValueError('the agent crashed')", "the agent program raised ValueError: the agent crashed"),
    ("return 'great'", "the agent program returned 'great'; expected a number"),
    ("return 1.0", "the agent program made no model call"),
    ("await asyncio.sleep(30)", "the agent program ran past the episode deadline"),
])
def test_a_failing_agent_program_is_a_masked_env_error(engine, renderer, tmp_path, body, detail):
    """Crashes, non-number results, no model call and a spent deadline are the program's infrastructure, not the
    policy's outcome: env_error, masked (never trained as reward 0), with the reason in words."""
    src = f"import asyncio\n\nasync def run(task, client):\n    await client.chat([{{'role': 'user', 'content': 'hi'}}])\n    {body}\n"
    if "no model call" in detail:
        src = "async def run(task, client):\n    return 1.0\n"
    trajs = episodes(engine, renderer, agent_file(tmp_path, src), group_size=1, episode_timeout_s=2)
    (t,) = trajs
    assert t.termination is TerminationReason.ENV_ERROR and not scored(t.termination)
    assert t.termination_detail.startswith(detail), t.termination_detail


def test_a_spent_call_budget_ends_the_episode_as_max_turns_with_the_programs_reward(engine, renderer, tmp_path):
    """rollout.max_turns bounds the program's calls: the next call is refused (HTTP 400, code max_turns), and
    the episode is scored as max_turns with what the program returned."""
    src = '''
    from agentrl.gateway import GatewayError

    async def run(task, client):
        msgs = [{"role": "user", "content": "hi"}]
        try:
            for _ in range(5):
                reply = await client.chat(msgs)
                msgs += [reply["choices"][0]["message"], {"role": "user", "content": "more"}]
        except GatewayError as e:
            return 0.5 if e.body["error"]["code"] == "max_turns" else -1.0
        return -1.0
    '''
    (t,) = episodes(engine, renderer, agent_file(tmp_path, src), group_size=1, max_turns=2)
    assert t.termination is TerminationReason.MAX_TURNS and t.reward == 0.5 and len(t.turns) == 2


def test_a_synchronous_agent_with_its_own_http_client_works(engine, renderer, tmp_path):
    """A plain `def run` runs in a worker thread, so a blocking client (here urllib) reaches the gateway that
    serves on the episode's event loop."""
    src = '''
    import json, urllib.request

    def run(task, client):
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}).encode()
        req = urllib.request.Request(client.base_url + "/chat/completions", data=body, headers={
            "Authorization": "Bearer " + client.api_key, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            reply = json.load(resp)
        return 1.0 if reply["choices"][0]["message"]["role"] == "assistant" else 0.0
    '''
    (t,) = episodes(engine, renderer, agent_file(tmp_path, src), group_size=1)
    assert t.termination is TerminationReason.DONE and t.reward == 1.0 and len(t.turns) == 1


def test_a_busy_sync_agent_past_its_deadline_is_stopped_in_its_thread(engine, renderer, tmp_path):
    """A plain def that spins forever after its call cannot be killed from outside; at the deadline the episode
    is a masked env_error saying so, and ProgramStopped, raised in its thread, ends the spinning (the old code
    left it burning a core, and a worker thread, for the rest of the run)."""
    import threading

    from agentrl.rollout.programs import load_agent

    name = agent_file(tmp_path, '''
    import threading
    THREADS = []

    def run(task, client):
        THREADS.append(threading.get_ident())
        while True:
            pass
    ''', name="busy.py")
    (t,) = episodes(engine, renderer, name, group_size=1, episode_timeout_s=2)
    assert t.termination is TerminationReason.ENV_ERROR and not scored(t.termination)
    assert t.termination_detail.startswith("the agent program ran past the episode deadline (2s)")
    assert "ProgramStopped was raised in its thread" in t.termination_detail
    (ident,) = load_agent(name.removeprefix("external:"))[0].THREADS
    deadline = time.monotonic() + 30
    while any(th.ident == ident for th in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(th.ident == ident for th in threading.enumerate()), "the agent's thread still runs"


SYNC_CHAT = '''
def run(task, client):
    reply = client.chat([{"role": "user", "content": "Say hi."}], max_tokens=4)
    return 1.0 if reply["choices"][0]["message"]["role"] == "assistant" else 0.0
'''


def _eval(env: str, out, capsys) -> list[dict]:
    """`agentrl eval --env ENV --model tiny` on two seed tasks; the records (the command must exit 0)."""
    from agentrl.cli import main

    argv = ["eval", "--env", env, "--model", "tiny", "--num-tasks", "2", "--max-new-tokens", "4", "--quiet",
            "--out", str(out)]
    code = main(argv)
    assert code == 0, capsys.readouterr().err
    return [json.loads(x) for x in out.read_text().splitlines()]


def test_client_chat_from_a_plain_def_makes_the_call(tmp_path, capsys):
    """docs/gateway.md says a plain def runs in a thread and sync clients work; `client.chat(...)` from one used to
    return a coroutine nobody awaited (no call, an env_error blaming `'coroutine' object is not subscriptable`,
    and a stray "never awaited" warning). Now it blocks and returns the response, through `agentrl eval`."""
    import gc
    import warnings

    name = agent_file(tmp_path, SYNC_CHAT, name="sync_chat.py")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = _eval(name, tmp_path / "eval.jsonl", capsys)
        gc.collect()
    assert [(r["termination"], r["reward"], r["turns"]) for r in rows] == [("done", 1.0, 1)] * 2, rows
    assert not [w for w in caught if "never awaited" in str(w.message)]


@pytest.mark.parametrize("form", ["file", "module"])
def test_an_agent_imports_its_sibling_module(tmp_path, monkeypatch, capsys, form):
    """`external:agent_dir/agent.py:run` (from another folder) and `external:agent:run` (from the agent's folder)
    import a helper module beside the agent, as `python agent.py` and `--env module:Class` would; both failed
    with ModuleNotFoundError unless PYTHONPATH was set."""
    folder = tmp_path / "agent_dir"
    folder.mkdir()
    helpers, agent = f"sibling_helpers_{form}", f"sibling_agent_{form}"
    (folder / f"{helpers}.py").write_text("def question():\n    return 'Say hi.'\n")
    (folder / f"{agent}.py").write_text(
        f"import {helpers}\n\n\nasync def run(task, client):\n"
        f"    await client.chat([{{'role': 'user', 'content': {helpers}.question()}}], max_tokens=4)\n"
        "    return 1.0\n")
    monkeypatch.setattr(sys, "path", list(sys.path))  # the test process's path is restored afterwards
    for module in (helpers, agent):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.chdir(tmp_path if form == "file" else folder)
    env = f"external:agent_dir/{agent}.py:run" if form == "file" else f"external:{agent}:run"
    rows = _eval(env, tmp_path / "eval.jsonl", capsys)
    assert [(r["termination"], r["reward"]) for r in rows] == [("done", 1.0)] * 2, rows


def test_an_agent_file_runs_once_when_episodes_make_their_envs_at_the_same_time(tmp_path):
    """Guards a race: each episode makes its env in a worker thread, and the first ones of a run could each find
    the module cache empty and run the agent file again (one episode then appended to a list the next never
    saw). Eight threads load a file that takes 0.3 s to import; it must run once."""
    import threading

    from agentrl.rollout.programs import load_agent

    runs = tmp_path / "runs"
    name = agent_file(tmp_path, f"import time\nopen({str(runs)!r}, 'a').write('x')\ntime.sleep(0.3)\n"
                                "async def run(task, client):\n    return 1.0\n", name="slow_import.py")
    start, modules = threading.Barrier(8), []

    def load():
        start.wait()
        modules.append(load_agent(name.removeprefix("external:"))[0])

    threads = [threading.Thread(target=load) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert runs.read_text() == "x" and len({id(m) for m in modules}) == 1


def test_unknown_agent_files_and_functions_are_named(tmp_path):
    """`--env external:…` with a missing file or function fails at once with the name, not per episode."""
    with pytest.raises(UnknownEnv, match=re.escape("does not exist")):
        agentrl.make(f"external:{tmp_path}/nope.py:run")
    name = agent_file(tmp_path, "async def play(task, client):\n    return 1.0\n")
    with pytest.raises(UnknownEnv, match=re.escape("has no function 'run' (it has: play)")):
        agentrl.make(name)


@pytest.mark.slow
def test_train_one_step_on_an_external_agent_from_the_cli(tmp_path, capsys):
    """`agentrl train --env external:agent.py:run` runs a GRPO step on the program's trajectories, logs the
    gateway's prefix-mismatch rate (0 for an agent that only appends), and the trainer's recompute of the
    behaviour logprobs agrees with the engine's."""
    from agentrl.cli import main

    name = agent_file(tmp_path, TWO_CALLS)
    run_dir = tmp_path / "run"
    argv = ["train", "--env", name, "model.name=tiny", "rollout.tasks_per_step=2", "rollout.group_size=2",
            "rollout.max_new_tokens=6", "rollout.max_context_tokens=256", "rollout.max_turns=3",
            "rollout.dynamic_sampling=false", "trainer.tensorboard=false", "trainer.steps=1",
            "trainer.sample_every=0", f"trainer.run_dir={run_dir}"]
    assert main(argv) == 0, capsys.readouterr().err
    rec = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert rec["gateway/prefix_mismatch_rate"] == 0.0 and rec["termination/done"] == 4
    # the trainer's recompute on the recorded tokens matches the engine's behaviour logprobs: tokens, masks and
    # logprobs line up (a re-tokenized or shifted action would show a large gap here)
    assert rec["mismatch/logprob_abs_diff_max"] < 1e-3, rec["mismatch/logprob_abs_diff_max"]
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(x)["metrics"]["gateway/calls"] == 2 for x in lines)


def test_the_example_openai_agent_round_trips_a_tool_call_and_earns_its_reward(renderer):
    """examples/openai_agent.py (written against the `openai` package), unchanged, against a scripted engine that
    calls the tool and then answers: the tool call reaches the agent as OpenAI tool_calls, its result comes back
    as a `tool` message rendered after the sampled ids, and the reward is the program's verdict (1.0)."""
    from pathlib import Path

    from agentrl.rollout.programs import load_agent
    from agentrl.tool_calls import format_call
    from tests.engine.scripted_engine import ScriptedEngine

    path = Path(__file__).resolve().parents[2] / "examples" / "openai_agent.py"
    module, _ = load_agent(f"{path}:run")
    seed = 3
    t = module.task(seed)
    a, b, c = (int(x) for x in re.match(r"(\d+)x(\d+)\+(\d+)", t["id"]).groups())
    tok, eot = renderer.tokenizer, renderer.eot_token_id
    engine = ScriptedEngine([tok.encode(format_call("calc", {"expression": f"{a}*{b}+{c}"}), add_special_tokens=False)
                             + [eot], tok.encode(f"There are {t['answer']} eggs.", add_special_tokens=False) + [eot]])
    (traj,) = episodes(engine, renderer, f"external:{path}:run", group_size=1, seed=seed, max_new_tokens=96)
    assert traj.termination is TerminationReason.DONE and traj.reward == 1.0, traj.termination_detail
    assert traj.task_id == t["id"] and len(traj.segments) == 1 and len(traj.turns) == 2
    assert traj.turns[0].observation_text == str(t["answer"])
    seg = traj.segments[0]
    assert engine.prompts[1] == seg.token_ids[: len(engine.prompts[1])]
    for gen, turn in zip(engine.returned, traj.turns, strict=True):
        assert seg.token_ids[turn.action_span[0]: turn.action_span[1]] == gen.output_ids


ENV_AS_AGENT = '''
import agentrl
from agentrl.types import user


class EchoEnv(agentrl.AgentEnv):
    """Three turns of "Again."; reward: the parity of the last action's length."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        return [user(f"Say something ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        self.turn += 1
        done = self.turn == 3
        return [user("Again.")], float(done and len(action) % 2 == 0), done, False, {}


async def run(task, client):
    """The agent loop, written as an OpenAI-style program over the same env."""
    env = EchoEnv()
    messages, _ = env.reset(seed=task["seed"])
    total = 0.0
    while True:
        reply = await client.chat(messages)
        messages = messages + [reply["choices"][0]["message"]]
        obs, reward, terminated, truncated, _ = env.step(messages[-1]["content"])
        total += reward
        if terminated or truncated:
            return total
        messages = messages + obs
'''


def test_an_env_played_through_the_gateway_gives_the_agent_loops_trajectory(serial_engine, renderer, tmp_path):
    """The gateway is the agent loop turned inside out: the same env played by the in-process agent loop and by
    an OpenAI-style program through the gateway, with the same task and sampling seeds, gives the same token
    ids, loss masks, logprobs and rewards, recorded by the same code (the same metrics)."""
    from agentrl.rollout.programs import load_agent

    engine, name = serial_engine, agent_file(tmp_path, ENV_AS_AGENT)
    module, _ = load_agent(name.removeprefix("external:"))
    cfg = LoopConfig(max_new_tokens=6, max_context_tokens=512, max_turns=5, episode_timeout_s=60)

    async def both():
        loop = await collect_group(module.EchoEnv, engine, renderer, seed=9, group_size=2, cfg=cfg)
        gateway = await collect_group(lambda: agentrl.make(name), engine, renderer, seed=9, group_size=2, cfg=cfg)
        return loop, gateway

    loop, gateway = asyncio.run(both())
    for a, b in zip(loop, gateway, strict=True):
        assert a.termination is b.termination is TerminationReason.DONE, b.termination_detail
        assert len(a.segments) == len(b.segments) == 1 and a.reward == b.reward
        assert b.segments == a.segments
        assert [u.action_span for u in b.turns] == [u.action_span for u in a.turns]
        # one record builder: the same metric keys (plus the session's gateway/*), counted the same way
        assert {k for k in b.metrics if not k.startswith("gateway/")} == set(a.metrics)
        for key in ("rollout/turns", "rollout/forks", "rollout/tokens", "rollout/action_tokens"):
            assert a.metrics[key] == b.metrics[key], key
