"""Turn-level credit through collection and the update, on the tiny model and two-turn test envs."""

from __future__ import annotations

import json

import pytest
import torch

import agentrl
from agentrl.models import load_model
from agentrl.trainer.batch import build_minibatch
from agentrl.trainer.loop import train
from agentrl.types import user
from tests.trainer.test_loop import _cfg, _rollout, assert_split_invariant


class TwoTurnEnv(agentrl.AgentEnv):
    """Two turns whatever the action; the reward only at the end: 1 if the last reply has even length."""

    step_reward = 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        return [user(f"Say two things ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        self.turn += 1
        if self.turn == 1:  # an intermediate reward when the class pays one (TwoTurnStepEnv)
            obs = f"And again ({len(action) % 3})." if self.step_reward else "And again."
            return [user(obs)], self.step_reward * float(len(action) % 2 == 0), False, False, {}
        return [], float(len(action) % 2 == 0), True, False, {}


class TwoTurnStepEnv(TwoTurnEnv):
    """TwoTurnEnv with 0.5 for an even-length first reply too (per-turn reward), and an observation that
    depends on the first reply (three possible states for GiGPO's anchors at turn 1)."""

    step_reward = 0.5


agentrl.register("test_two_turn", TwoTurnEnv, description="two turns, final reward only")
agentrl.register("test_two_turn_steps", TwoTurnStepEnv, description="two turns, a reward each turn")

LOOP = ("rollout.max_turns=3", "rollout.dynamic_sampling=false", "rollout.max_new_tokens=8")


@pytest.mark.slow
def test_final_reward_only_makes_turn_credit_with_gamma_one_train_exactly_like_outcome(tmp_path):
    exact = (*LOOP, "rollout.max_batch_size=1")
    a = train(_cfg(tmp_path / "a", "test_two_turn", *exact))
    b = train(_cfg(tmp_path / "b", "test_two_turn", *exact, "algo.credit=turn", "algo.turn_gamma=1"))
    ra, rb = (json.loads(r.metrics.read_text().splitlines()[0]) for r in (a, b))
    assert ra["rollout/reward_mean"] == rb["rollout/reward_mean"] and rb["credit/turn_advantage_abs_mean"] > 0
    wa = load_model(a.checkpoint / "model").state_dict()
    wb = load_model(b.checkpoint / "model").state_dict()
    assert any(not torch.equal(wa[k], load_model("tiny").state_dict()[k]) for k in wa)  # it trained
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], atol=0, rtol=0, msg=k)


def test_per_turn_rewards_give_each_turn_its_own_advantage_and_are_kept_in_the_trajectories(tmp_path):
    cfg = _cfg(tmp_path, "test_two_turn_steps", *LOOP, "algo.credit=turn")
    batch = _rollout(cfg)
    assert batch.turn_advantages is not None and len(batch.turn_advantages) == len(batch.trajectories)
    assert all(len(a) == len(t.turns) == 2 for a, t in zip(batch.turn_advantages, batch.trajectories, strict=True))
    assert any(a[0] != a[1] for a in batch.turn_advantages)
    for t in batch.trajectories:
        assert sum(turn.reward for turn in t.turns) == t.reward
        assert agentrl.Trajectory.from_json(t.to_json()).turns == t.turns  # lossless in trajectories.jsonl
    gigpo = _rollout(_cfg(tmp_path, "test_two_turn_steps", *LOOP, "algo.credit=gigpo"))
    assert gigpo.metrics["credit/anchor_group_size_mean"] > 1  # turn 0 of a group shares the prompt
    assert 0 < gigpo.metrics["credit/singleton_turn_share"] < 1
    # a turn-1 state no other episode of the group reached gets no step advantage: A = the episode's
    trajs, adv = gigpo.trajectories, gigpo.turn_advantages
    obs = [(t.group_id, t.turns[0].observation_text) for t in trajs]
    alone = [i for i, o in enumerate(obs) if obs.count(o) == 1]
    assert alone and len(alone) < len(trajs)
    for i in alone:
        assert adv[i][1] == gigpo.advantages[i]


@pytest.mark.slow
def test_per_turn_advantages_keep_the_update_independent_of_the_micro_batch_split(tmp_path):
    cfg = _cfg(tmp_path, "test_two_turn_steps", *LOOP, "algo.credit=gigpo")
    batch = _rollout(cfg)
    assert_split_invariant(build_minibatch(batch.trajectories, batch.turn_advantages), torch.tensor(batch.advantages),
                           lambda budget: _cfg(tmp_path, "test_two_turn_steps", *LOOP,
                                               f"trainer.micro_batch_tokens={budget}"))
