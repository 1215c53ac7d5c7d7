"""Token-in/token-out sequences: property tests over random conversations, and forking on template drift.

Guards the multi-turn bugs users of RL frameworks report most: retokenization drift (decode→encode is not a
bijection), observation tokens leaking into the loss, and templates that are not append-only.
"""

from __future__ import annotations

import asyncio
import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrl.agent_env import AgentEnv
from agentrl.models import load_tokenizer
from agentrl.rollout.agent_loop import LoopConfig, run_episode
from agentrl.rollout.chat import ChatRenderer, Conversation, TemplateError
from agentrl.types import assistant, system, tool, user
from tests.engine.scripted_engine import ScriptedEngine


@functools.cache
def tokenizer():
    return load_tokenizer("tiny")


@functools.cache
def renderer(template: str | None = None) -> ChatRenderer:
    return ChatRenderer(tokenizer(), chat_template=template)


# Re-renders history: older assistant turns lose their <think> block (as Qwen3-style templates do).
DROP_OLD_THINKING = (
    "{%- set ns = namespace(last=-1) -%}"
    "{%- for m in messages %}{% if m.role == 'assistant' %}{% set ns.last = loop.index0 %}{% endif %}{% endfor -%}"
    "{%- for m in messages -%}"
    "{%- set c = m.content.split('</think>')[-1] if (m.role == 'assistant' and loop.index0 != ns.last) else m.content -%}"
    "{{ '<|im_start|>' + m.role + '\n' + c + '<|im_end|>\n' }}"
    "{%- endfor -%}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif -%}"
)
# Inserts a count that depends on the conversation's length at the start.
COUNTS_MESSAGES = (
    "{{ '<|im_start|>system\nmessages: ' + (messages | length | string) + '<|im_end|>\n' }}"
    "{%- for m in messages -%}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{%- endfor -%}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif -%}"
)

TEXT = st.text(alphabet=st.sampled_from(list("ab xyz09 \n\t.,{}\"'<>/=é€中🙂")), min_size=0, max_size=30)
OBSERVATION = st.lists(st.tuples(st.sampled_from(["tool", "user"]), TEXT), min_size=1, max_size=2)
TURN = st.tuples(TEXT, st.booleans(), OBSERVATION)  # (action text, ends with end-of-turn?, observation messages)


class ReplayEnv(AgentEnv):
    """Returns scripted observations, one list per step; terminates after the last."""

    def __init__(self, first, observations):
        self.first, self.observations = first, observations

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.i = 0
        return [dict(m) for m in self.first], {"task_id": "replay"}

    def step(self, action):
        obs = [dict(m) for m in self.observations[self.i]]
        self.i += 1
        return obs, 0.0, self.i == len(self.observations), False, {}


def play(turns, template=None, first=None):
    """Run a scripted conversation through the agent loop; returns (trajectory, engine, message history)."""
    r = renderer(template)
    first = first or [system("Be brief."), user("What is 2+2?")]
    outputs = [tokenizer().encode(text, add_special_tokens=False) + ([r.eot_token_id] if closed else [])
               for text, closed, _ in turns]
    engine = ScriptedEngine(outputs)
    observations = [[{"role": role, "content": c} for role, c in obs] for _, _, obs in turns]
    cfg = LoopConfig(max_turns=len(turns), max_new_tokens=64, max_context_tokens=100_000)
    traj = asyncio.run(run_episode(ReplayEnv(first, observations), engine, r, cfg, seed=0))
    history = [*first]
    for gen, obs in zip(engine.returned, observations, strict=False):
        history += [assistant(r.content(gen.output_ids)), *obs]
    return traj, engine, history


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TURN, min_size=1, max_size=4))
def test_append_only_template_tokens_decode_to_the_full_render(turns):
    traj, engine, history = play(turns)
    r = renderer()
    assert len(traj.segments) == 1 and traj.metrics["rollout/forks"] == 0
    seg = traj.segments[0]
    # every prompt the engine saw is the trajectory's own prefix and decodes to the full render so far
    n_msgs = 2
    for k, prompt in enumerate(engine.prompts):
        assert seg.token_ids[: len(prompt)] == prompt
        assert r.decode(prompt) == r.text(history[:n_msgs], add_generation_prompt=True)
        n_msgs += 1 + len(turns[k][2])
    # the whole sequence is the full render up to the end of the last action
    last = engine.returned[-1].output_ids
    assert r.decode(seg.token_ids) == r.text(history[: n_msgs - len(turns[-1][2]) - 1], True) + r.decode(last)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TURN, min_size=1, max_size=4), st.sampled_from([None, DROP_OLD_THINKING, COUNTS_MESSAGES]))
def test_mask_is_one_exactly_on_sampled_tokens_and_logprobs_zero_elsewhere(turns, template):
    traj, engine, _ = play([(("<think>hmm</think>" if i % 2 else "") + a, c, o) for i, (a, c, o) in enumerate(turns)],
                           template)
    sampled_ids, sampled_lps, positions = [], [], 0
    for seg in traj.segments:
        assert len(seg.token_ids) == len(seg.loss_mask) == len(seg.behaviour_logprobs) == len(seg.versions)
        for tok, mask, lp, version in zip(seg.token_ids, seg.loss_mask, seg.behaviour_logprobs, seg.versions,
                                          strict=True):
            if mask:
                sampled_ids.append(tok)
                sampled_lps.append(lp)
                assert version == engine.version
            else:
                assert lp == 0.0 and version == -1
        positions += sum(seg.loss_mask)
    assert sampled_ids == [t for g in engine.returned for t in g.output_ids]
    assert sampled_lps == [lp for g in engine.returned for lp in g.logprobs]
    for turn, gen in zip(traj.turns, engine.returned, strict=True):
        seg = traj.segments[turn.segment]
        assert seg.token_ids[slice(*turn.action_span)] == gen.output_ids
        assert set(seg.loss_mask[slice(*turn.action_span)]) <= {1}
        assert set(seg.loss_mask[slice(*turn.observation_span)]) <= {0}


def test_template_that_drops_old_thinking_forks_into_segments():
    turns = [("<think>a</think>call one", True, [("tool", "r1")]), ("<think>b</think>call two", True, [("tool", "r2")]),
             ("<think>c</think>call three", True, [("tool", "r3")])]
    traj, engine, history = play(turns, DROP_OLD_THINKING)
    r = renderer(DROP_OLD_THINKING)
    # after turn 1's observation the template strips turn 0's thinking: fork (turn 2 is final, no observation)
    assert traj.metrics["rollout/forks"] == 1 and len(traj.segments) == 2
    assert [t.segment for t in traj.turns] == [0, 0, 1]
    assert traj.turns[1].observation_span[0] == traj.turns[1].observation_span[1]  # the observation opened segment 1
    for k, prompt in enumerate(engine.prompts):  # each generation continued exactly its segment's tokens
        seg = traj.segments[traj.turns[k].segment]
        assert seg.token_ids[: len(prompt)] == prompt
    # the fresh segment starts from the full re-render, in which turn 0's thinking is gone but turn 1's is kept
    assert engine.prompts[2] == r.ids(history[:6], True)
    assert "<think>a</think>" not in r.decode(engine.prompts[2]) and "<think>b</think>" in r.decode(engine.prompts[2])
    assert "<think>a</think>" in r.decode(traj.segments[0].token_ids)  # what was sampled stays in segment 0
    assert traj.num_action_tokens == sum(len(g.output_ids) for g in engine.returned)


def test_template_that_counts_messages_at_the_start_forks_every_turn():
    traj, engine, _ = play([("x", True, [("tool", "1")]), ("y", False, [("user", "2")]), ("z", True, [("tool", "3")])],
                           COUNTS_MESSAGES)
    assert traj.metrics["rollout/forks"] == 2
    assert [renderer(COUNTS_MESSAGES).decode(p).split("\n")[1].removesuffix("<|im_end|>") for p in engine.prompts] == [
        "messages: 2", "messages: 4", "messages: 6"]


def test_action_ids_are_content_plus_end_of_turn_as_the_model_samples_them():
    r = renderer()
    for content in ["Step 1: 12 * 7.\n<tool_call>\n{\"a\": 1}\n</tool_call>", "", "  leading spaces", "\n\nnewlines\n"]:
        ids = r.action_ids(content)
        assert ids[-1] == r.eot_token_id and r.eot_token_id not in ids[:-1]
        assert r.decode(ids[:-1]) == content
        conv = Conversation(r, [system("s"), user("u")])
        conv.append_action(ids, [0.0] * len(ids), [-1] * len(ids))
        assert r.decode(conv.current.token_ids) == r.text([system("s"), user("u"), assistant(content)])[:-1]


def test_observation_after_cut_off_action_closes_the_turn_with_mask_zero_end_token():
    r = renderer()
    conv = Conversation(r, [system("s"), user("u")])
    ids = tokenizer().encode("partial answer", add_special_tokens=False)  # finish_reason length: no end token
    conv.append_action(ids, [-1.0] * len(ids), [0] * len(ids))
    span = conv.append_observation([tool("ok")])
    seg = conv.current
    assert seg.token_ids[span[0]] == r.eot_token_id and seg.loss_mask[span[0]] == 0
    assert r.decode(seg.token_ids) == r.text([system("s"), user("u"), assistant("partial answer"), tool("ok")], True)
    assert conv.forks == 0


def test_observation_delta_does_not_depend_on_the_model_text():
    r = renderer()
    obs = [tool("42")]
    assert r.observation_ids(obs) == r.glue_ids + r.ids([system("x"), tool("42")], True)[len(r.ids([system("x")])):]


def test_template_without_end_of_turn_token_is_refused_with_a_clear_message():
    plain = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    with pytest.raises(TemplateError, match=r"does not end assistant turns with '<\|im_end\|>' \(id 2\)"):
        ChatRenderer(tokenizer(), chat_template=plain)
