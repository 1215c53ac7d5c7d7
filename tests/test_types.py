"""Trajectory: lossless JSONL round trip and a render() that marks action and observation spans."""

from __future__ import annotations

import functools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agentrl.models import load_tokenizer
from agentrl.types import Segment, TerminationReason, Trajectory, Turn

FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | FLOATS | st.text(max_size=8),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                    max_leaves=8)


@st.composite
def segments(draw):
    n = draw(st.integers(0, 12))
    mask = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    return Segment(token_ids=draw(st.lists(st.integers(0, 50_000), min_size=n, max_size=n)), loss_mask=mask,
                   behaviour_logprobs=[draw(FLOATS) if m else 0.0 for m in mask],
                   versions=[draw(st.integers(0, 9)) if m else -1 for m in mask])


TURNS = st.builds(Turn, segment=st.integers(0, 3), action_span=st.tuples(st.integers(0, 9), st.integers(0, 9)),
                  observation_span=st.tuples(st.integers(0, 9), st.integers(0, 9)), action_text=st.text(max_size=20),
                  observation_text=st.text(max_size=20), finish_reason=st.sampled_from(["stop", "length"]),
                  timings=st.dictionaries(st.sampled_from(["generate_s", "env_s"]), FLOATS))
TRAJECTORIES = st.builds(Trajectory, id=st.text(max_size=8), group_id=st.text(max_size=8), env_id=st.text(max_size=8),
                         task_id=st.text(max_size=8), segments=st.lists(segments(), max_size=3),
                         turns=st.lists(TURNS, max_size=3), reward=FLOATS,
                         reward_info=st.dictionaries(st.text(max_size=5), JSON, max_size=3),
                         termination=st.sampled_from(list(TerminationReason)),
                         termination_detail=st.text(max_size=20), expert=st.booleans(),
                         metrics=st.dictionaries(st.text(max_size=5), JSON, max_size=3))


@settings(max_examples=60, deadline=None)
@given(TRAJECTORIES)
def test_jsonl_round_trip_is_lossless(traj):
    line = traj.to_json()
    assert "\n" not in line and json.loads(line)["format"] == "agentrl-trajectory-2"
    again = Trajectory.from_json(line)
    assert again == traj
    assert isinstance(again.termination, TerminationReason) and all(isinstance(t.action_span, tuple) for t in again.turns)


def test_version_1_lines_load_with_detail_and_expert_as_fields():
    """Guards reading old runs: version 1 kept termination_detail and expert inside metrics; they must load
    into the fields (not stay as stray metrics that nothing reads) and write back as version 2."""
    old = {"format": "agentrl-trajectory-1", "id": "a", "group_id": "g", "env_id": "calc", "task_id": "t",
           "termination": "env_error",
           "metrics": {"rollout/turns": 0, "termination_detail": "TypeError: bad kwarg", "expert": True}}
    traj = Trajectory.from_json(json.dumps(old))
    assert traj.termination_detail == "TypeError: bad kwarg" and traj.expert is True
    assert traj.metrics == {"rollout/turns": 0}
    new = json.loads(traj.to_json())
    assert new["format"] == "agentrl-trajectory-2" and new["termination_detail"] == "TypeError: bad kwarg"


@functools.cache
def tokenizer():
    return load_tokenizer("tiny")


def test_render_marks_prompt_action_and_observation_spans_from_the_tokens():
    tok = tokenizer()
    prompt = tok.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
    action = tok.encode("call it<|im_end|>", add_special_tokens=False)
    obs = tok.encode("\n<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
    seg = Segment()
    seg.append_prompt(prompt)
    seg.append_sampled(action, [-0.5] * len(action), [2] * len(action))
    seg.append_prompt(obs)
    a = (len(prompt), len(prompt) + len(action))
    traj = Trajectory(id="t", group_id="g", env_id="agentrl/calc-v0", task_id="x", segments=[seg],
                      turns=[Turn(0, a, (a[1], len(seg)), "call it", "42", "stop")], reward=1.0)
    text = traj.render(tok)
    assert f"--- >>> action [{a[0]}:{a[1]}] mask=1 turn 0 mean_logprob=-0.500 versions=[2]\ncall it<|im_end|>" in text
    assert f"--- <<< prompt [0:{a[0]}] mask=0\n<|im_start|>user\nhi" in text
    assert f"--- <<< observation [{a[1]}:{len(seg)}] mask=0\n\n<|im_start|>tool\n42<|im_end|>" in text
    assert "reward=1.0 termination=done segments=1" in text
    without = traj.render()
    assert "--- >>> action (turn 0, finish=stop)\ncall it\n--- <<< observation (turn 0)\n42" in without
    assert "[10 more chars]" in Trajectory(id="t", group_id="", env_id="", task_id="", segments=[seg]).render(
        tok, max_chars=len(tok.decode(prompt)) - 10)
