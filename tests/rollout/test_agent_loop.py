"""The agent loop and collector: every termination reason is reachable and mapped, failures never crash a
run (a crashing env is an env_error trajectory, rllm#176), budgets hold, the expert path tokenizes actions
as the model must produce them, and concurrency stays under the semaphore."""

from __future__ import annotations

import asyncio
import functools
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from agentrl.agent_env import AgentEnv
from agentrl.cluster import LocalBackend
from agentrl.errors import SandboxDead
from agentrl.models import load_tokenizer
from agentrl.rollout.agent_loop import LoopConfig, ScriptedPolicy, run_episode
from agentrl.rollout.chat import ChatRenderer
from agentrl.rollout.collector import collect_group, summarize
from agentrl.tool_calls import format_call, function_tool
from agentrl.types import FAILURE_POLICY, TerminationReason, Trajectory, system, tool, user
from tests.engine.scripted_engine import ScriptedEngine

ROOT = Path(__file__).resolve().parents[2]
TR = TerminationReason


@functools.cache
def renderer() -> ChatRenderer:
    return ChatRenderer(load_tokenizer("tiny"))


def say(text: str, closed: bool = True) -> list[int]:
    """The ids a model samples to say `text` (with the end-of-turn token unless cut off)."""
    r = renderer()
    return r.tokenizer.encode(text, add_special_tokens=False) + ([r.eot_token_id] if closed else [])


class ProbeEnv(AgentEnv):
    """A configurable env for loop tests: finishes after `done_after` steps, or misbehaves as asked."""

    tools = [function_tool("noop", "Do nothing.", {})]

    def __init__(self, done_after=None, *, fail=None, format_errors=False, sleep_s=0.0, obs_text="ok",
                 truncate_after=None, info=None):
        self.done_after, self.fail, self.format_errors = done_after, fail, format_errors
        self.sleep_s, self.obs_text, self.truncate_after, self.info = sleep_s, obs_text, truncate_after, info or {}
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()
        self.closed = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.fail == "reset":
            raise RuntimeError("reset exploded")
        self.steps = 0
        return [system("sys"), user(f"task {seed}")], {"task_id": f"t{seed}"}

    def step(self, action):
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            time.sleep(self.sleep_s)
            self.steps += 1
            if self.fail == "step":
                raise ValueError("step exploded")
            if self.fail == "sandbox":
                raise SandboxDead("container gone")
            if self.fail == "shape":
                return "not a tuple"
            done = self.done_after is not None and self.steps >= self.done_after
            truncated = self.truncate_after is not None and self.steps >= self.truncate_after
            info = {**self.info, "format_error": self.format_errors, "obj": object()}
            return [tool(self.obs_text)], 0.5 if not done else 1.0, done, truncated, info
        finally:
            with self.lock:
                self.active -= 1

    def expert_action(self):
        return format_call("noop", {}) if self.steps < (self.done_after or 1) else None

    def close(self):
        self.closed += 1


def run(env, engine, cfg=None, **kw) -> Trajectory:
    return asyncio.run(run_episode(env, engine, renderer(), cfg or LoopConfig(max_new_tokens=16), seed=1, **kw))


SCENARIOS = {
    TR.DONE: lambda: (ProbeEnv(done_after=2), ScriptedEngine([say("a")]), LoopConfig()),
    TR.MAX_TURNS: lambda: (ProbeEnv(), ScriptedEngine([say("a")]), LoopConfig(max_turns=3)),
    TR.MAX_TOKENS: lambda: (ProbeEnv(obs_text="x " * 200), ScriptedEngine([say("a")]),
                            LoopConfig(max_context_tokens=200)),
    TR.TIMEOUT: lambda: (ProbeEnv(sleep_s=0.3), ScriptedEngine([say("a")]), LoopConfig(episode_timeout_s=0.5)),
    TR.FORMAT_ERRORS: lambda: (ProbeEnv(format_errors=True), ScriptedEngine([say("a")]),
                               LoopConfig(max_format_errors=2)),
    TR.ENV_ERROR: lambda: (ProbeEnv(fail="step"), ScriptedEngine([say("a")]), LoopConfig()),
    TR.SANDBOX_ERROR: lambda: (ProbeEnv(fail="sandbox"), ScriptedEngine([say("a")]), LoopConfig()),
    TR.ENGINE_ERROR: lambda: (ProbeEnv(), ScriptedEngine([say("a")], fail_calls=[1]), LoopConfig()),
}


@pytest.mark.parametrize("reason", list(TerminationReason), ids=str)
def test_every_termination_reason_is_reachable_and_has_a_failure_policy(reason):
    assert reason in SCENARIOS, f"no scenario reaches {reason}"
    env, engine, cfg = SCENARIOS[reason]()
    traj = run(env, engine, cfg)
    assert traj.termination is reason, traj.termination_detail
    assert reason in FAILURE_POLICY
    assert Trajectory.from_json(traj.to_json()) == traj  # every ending still yields a serializable trajectory


@pytest.mark.parametrize("fail, detail", [("reset", "RuntimeError: reset exploded"),
                                          ("step", "ValueError: step exploded"),
                                          ("shape", "TypeError: step returned str; expected (messages, reward, terminated, truncated, info)")])
def test_crashing_env_yields_env_error_not_a_crashed_run(fail, detail):
    traj = run(ProbeEnv(fail=fail), ScriptedEngine([say("a")]))
    assert traj.termination is TR.ENV_ERROR
    assert traj.termination_detail.startswith(detail)
    if fail == "step":  # the action sampled before the crash is kept
        assert traj.num_action_tokens == len(say("a"))


def test_engine_abort_is_engine_error_and_keeps_no_partial_action():
    traj = run(ProbeEnv(), ScriptedEngine([say("a")], abort_calls=[0]))
    assert traj.termination is TR.ENGINE_ERROR and traj.num_action_tokens == 0


def test_env_truncation_and_explicit_termination_reasons_are_mapped():
    assert run(ProbeEnv(truncate_after=1), ScriptedEngine([say("a")])).termination is TR.MAX_TURNS
    env = ProbeEnv(done_after=1, info={"termination": "format_errors"})
    assert run(env, ScriptedEngine([say("a")])).termination is TR.FORMAT_ERRORS


def test_format_errors_must_be_consecutive_and_are_counted():
    traj = run(ProbeEnv(format_errors=True), ScriptedEngine([say("a")]), LoopConfig(max_format_errors=3))
    assert len(traj.turns) == 3 and traj.metrics["rollout/format_errors"] == 3


def test_generation_is_capped_by_the_context_budget_and_the_sequence_never_exceeds_it():
    env, engine = ProbeEnv(obs_text="word " * 20), ScriptedEngine([say("b" * 200, closed=False)])
    prompt_len = len(renderer().ids([system("sys"), user("task 1")], True))
    cfg = LoopConfig(max_context_tokens=prompt_len + 60, max_new_tokens=1000, max_turns=5)
    traj = run(env, engine, cfg)
    assert engine.sampling[0].max_new_tokens == 60
    assert traj.termination is TR.MAX_TOKENS and traj.num_tokens <= cfg.max_context_tokens
    assert traj.turns[0].finish_reason == "length" and traj.metrics["rollout/length_truncated_actions"] >= 1


def test_prompt_too_long_ends_as_max_tokens_before_generating():
    engine = ScriptedEngine([say("a")])
    traj = run(ProbeEnv(), engine, LoopConfig(max_context_tokens=5))
    assert traj.termination is TR.MAX_TOKENS and engine.prompts == []


def test_env_sees_whether_the_action_was_cut_off():
    env = ProbeEnv()
    run(env, ScriptedEngine([say("abc " * 50, closed=False)]), LoopConfig(max_turns=1, max_new_tokens=8))
    assert env.last_action_truncated is True
    run(env, ScriptedEngine([say("a")]), LoopConfig(max_turns=1))
    assert env.last_action_truncated is False


def test_reward_is_summed_info_made_json_safe_and_timings_recorded():
    traj = run(ProbeEnv(done_after=3), ScriptedEngine([say("a")]))
    assert traj.reward == 0.5 + 0.5 + 1.0 and traj.task_id == "t1"
    assert traj.reward_info["obj"].startswith("<object object")
    assert all(set(t.timings) == {"generate_s", "env_s"} for t in traj.turns)
    assert traj.metrics["timing/episode_s"] >= traj.metrics["timing/env_s"]
    assert traj.metrics["rollout/turns"] == 3 and traj.metrics["rollout/forks"] == 0


def test_expert_actions_are_content_plus_end_of_turn_with_mask_one_logprob_zero_version_minus_one():
    env = ProbeEnv(done_after=2)
    r = renderer()
    expected = r.action_ids(format_call("noop", {}))
    traj = run(env, None, LoopConfig(max_new_tokens=len(expected)), expert=True)  # fits exactly: not cut
    assert expected[-1] == r.eot_token_id
    assert all(turn.finish_reason == "stop" for turn in traj.turns)
    seg = traj.segments[0]
    for turn in traj.turns:
        a, b = turn.action_span
        assert seg.token_ids[a:b] == expected
        assert seg.loss_mask[a:b] == [1] * len(expected)
        assert seg.behaviour_logprobs[a:b] == [0.0] * len(expected) and seg.versions[a:b] == [-1] * len(expected)
    assert traj.termination is TR.DONE and traj.reward == 1.5 and traj.expert is True


def test_expert_without_action_is_env_error_and_loop_without_engine_is_refused():
    traj = run(ProbeEnv(done_after=1), None, LoopConfig(max_turns=3), expert=True)
    assert traj.termination is TR.DONE
    env = ProbeEnv()
    env.expert_action = lambda: None
    assert run(env, None, expert=True).termination is TR.ENV_ERROR
    with pytest.raises(ValueError, match="needs an engine unless expert=True"):
        run(ProbeEnv(), None)


class ClosingEnv(ProbeEnv):
    """ProbeEnv whose end_episode records each call and answers a final info with a reward (or fails)."""

    def __init__(self, *args, end_fails=False, **kw):
        super().__init__(*args, **kw)
        self.ended, self.end_fails = [], end_fails

    def end_episode(self, termination, *, grade):
        self.ended.append((termination, grade))
        if self.end_fails:
            raise SandboxDead("grader gone")
        return {"reward": 0.25, "closed_as": termination}


@pytest.mark.parametrize("reason", [TR.MAX_TURNS, TR.MAX_TOKENS, TR.TIMEOUT, TR.FORMAT_ERRORS])
def test_the_env_closes_out_an_episode_one_of_the_loops_budgets_ended(reason):
    """Guards the one owner of the loop's budgets: when one ends an episode (format errors included, which
    swe_lite used to count a second time itself), the env is told once, with the caller's grade flag, and its
    final info and reward are the episode's (evaluation grades what stands this way)."""
    env, engine, cfg = SCENARIOS[reason]()
    env = ClosingEnv(**{k: getattr(env, k) for k in ("format_errors", "sleep_s", "obs_text")})
    traj = run(env, engine, replace(cfg, grade_at_budget=True))
    assert traj.termination is reason and env.ended == [(reason.value, True)]
    assert traj.reward == 0.25 and traj.reward_info["closed_as"] == reason.value
    env = ClosingEnv(**{k: getattr(env, k) for k in ("format_errors", "sleep_s", "obs_text")})
    assert run(env, SCENARIOS[reason]()[1], cfg).termination is reason and env.ended == [(reason.value, False)]


def test_an_env_ending_or_a_failure_is_not_closed_out_by_the_loop_and_a_failing_close_is_infra():
    env = ClosingEnv(done_after=1)
    assert run(env, ScriptedEngine([say("a")])).termination is TR.DONE and env.ended == []
    env = ClosingEnv(fail="step")
    assert run(env, ScriptedEngine([say("a")])).termination is TR.ENV_ERROR and env.ended == []
    traj = run(ClosingEnv(format_errors=True, end_fails=True), ScriptedEngine([say("a")]), LoopConfig(max_format_errors=1))
    assert traj.termination is TR.SANDBOX_ERROR and "grader gone" in traj.termination_detail


def test_a_scripted_policy_acts_through_the_same_loop_and_budgets():
    """An evaluation oracle is a ScriptedPolicy: its actions are tokenized like the model's and cut at the same
    max_new_tokens; an oracle with nothing to say ends the episode as an env error naming it."""
    actions = iter([format_call("noop", {}), "not a call", "x " * 200])
    cfg = LoopConfig(max_new_tokens=40, max_turns=3)
    traj = run(ProbeEnv(), None, cfg, policy=ScriptedPolicy(lambda env: next(actions)))
    assert [t.finish_reason for t in traj.turns] == ["stop", "stop", "length"] and traj.expert
    assert traj.turns[0].action_text == format_call("noop", {}) and traj.termination is TR.MAX_TURNS
    assert run(ProbeEnv(), None, policy=ScriptedPolicy(lambda env: None, name="oracle")).termination_detail == \
        "oracle returned None"


def test_loop_settings_come_from_the_rollout_section():
    """Guards a budget read in one place and forgotten in another (eval once ran with no format-error limit)."""
    from agentrl.config import RolloutConfig

    r = RolloutConfig(max_turns=7, max_context_tokens=999, max_new_tokens=33, episode_timeout_s=12.0,
                      max_format_errors=5, temperature=0.5, top_p=0.9, top_k=4)
    loop = LoopConfig.from_rollout(r, top_k=-1)
    assert (loop.max_turns, loop.max_context_tokens, loop.max_new_tokens, loop.episode_timeout_s, loop.max_format_errors,
            loop.temperature, loop.top_p, loop.top_k, loop.grade_at_budget) == (7, 999, 33, 12.0, 5, 0.5, 0.9, -1, False)
    assert LoopConfig().max_format_errors == RolloutConfig().max_format_errors


def test_collect_group_shares_task_and_group_and_closes_envs():
    envs = []

    def factory():
        envs.append(ProbeEnv(done_after=1))
        return envs[-1]

    group = asyncio.run(collect_group(factory, ScriptedEngine([say("a")]), renderer(), seed=7, group_size=4))
    assert len(group) == 4 and {t.task_id for t in group} == {"t7"} and len({t.group_id for t in group}) == 1
    assert len({t.id for t in group}) == 4 and [e.closed for e in envs] == [1, 1, 1, 1]


def test_concurrency_is_bounded_by_the_semaphore():
    shared = ProbeEnv(done_after=2, sleep_s=0.05)
    shared.close = lambda: None
    engine = ScriptedEngine([say("a")], delay_s=0.02)
    backend = LocalBackend(lambda: shared, engine, renderer(), concurrency=2)  # the trainer's local backend

    async def three_groups():
        return await asyncio.gather(*(backend.collect_group(s, 2, cfg=LoopConfig()) for s in (1, 2, 3)))

    groups = asyncio.run(three_groups())
    assert [len(g) for g in groups] == [2, 2, 2]
    assert shared.max_active == 2  # episodes overlapped, but never more than two at a time


def test_retry_policy_reruns_engine_errors_and_a_failing_factory_is_env_error():
    engine = ScriptedEngine([say("a")], fail_calls=[0])
    [traj] = asyncio.run(collect_group(lambda: ProbeEnv(done_after=1), engine, renderer(), seed=0, group_size=1,
                                       max_retries=1))
    assert traj.termination is TR.DONE and traj.metrics["rollout/retries"] == 1

    def broken():
        raise OSError("no such dataset")

    [traj] = asyncio.run(collect_group(broken, engine, renderer(), seed=0, group_size=1))
    assert traj.termination is TR.ENV_ERROR and "no such dataset" in traj.termination_detail
    metrics = summarize([traj])
    assert metrics["termination/env_error"] == 1 and metrics["termination/done"] == 0


def test_summarize_counts_terminations_and_averages():
    trajs = [run(ProbeEnv(done_after=1), ScriptedEngine([say("a")])),
             run(ProbeEnv(fail="step"), ScriptedEngine([say("a")]))]
    m = summarize(trajs)
    assert m["termination/done"] == 1 and m["termination/env_error"] == 1 and m["rollout/episodes"] == 2
    assert m["rollout/reward_mean"] == 0.5 and m["rollout/turns_mean"] == 1.0


class GradedEnv(ProbeEnv):
    """A ProbeEnv whose final info says whether it was graded, and which logs the share it graded."""

    def __init__(self):
        super().__init__(done_after=1, info={"graded": True})

    @classmethod
    def summary_metrics(cls, infos):
        return {"rollout/graded_share": sum(bool(i.get("graded")) for i in infos) / len(infos)}


def test_an_env_adds_its_own_step_metrics_from_its_episodes_infos():
    """AgentEnv.summary_metrics: the collector finds the env of each trajectory by its env_id and adds what the
    env computes from its episodes' final infos (masked episodes included); the core names no env's keys, and
    an env without the hook (or an env_id nobody registered) adds nothing."""
    import agentrl
    from agentrl import registry

    env_id = agentrl.register("graded_probe_test", GradedEnv)
    try:
        trajs = asyncio.run(collect_group("graded_probe_test", ScriptedEngine([say("a")] * 2), renderer(), seed=0,
                                          group_size=2))
        assert {t.env_id for t in trajs} == {env_id} and all(t.reward_info["graded"] for t in trajs)
        masked = Trajectory(id="m", group_id="g", env_id=env_id, task_id="t", termination=TR.ENV_ERROR)
        assert summarize([*trajs, masked])["rollout/graded_share"] == 2 / 3
        others = [run(ProbeEnv(done_after=1, info={"graded": True}), ScriptedEngine([say("a")])),
                  Trajectory(id="u", group_id="g", env_id="agentrl/never_registered-v0", task_id="t")]
        assert not [k for k in summarize(others) if "graded" in k]
    finally:
        registry._envs.pop("graded_probe_test")


@pytest.mark.slow
def test_custom_env_example_runs_end_to_end_against_the_tiny_model():
    """examples/custom_env.py: registered with gymnasium, run by the embedded engine, then by the expert."""
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "custom_env.py")], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    headers = [line for line in out.stdout.splitlines() if line.startswith("    reward=")]
    assert len(headers) == 2, out.stdout[-2000:]
    assert "reward=1.0 termination=done" in headers[1]  # binary search finds the number within 7 turns
    assert "env=agentrl/guess-v0" in out.stdout and ">>> action" in out.stdout
