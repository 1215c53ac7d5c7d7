"""DAPO overlong shaping and dynamic sampling against docs/algorithms.md §10.2."""

from __future__ import annotations

import pytest
import torch

from agentrl.algo.shaping import dynamic_sampling_filter, overlong_penalty

F64 = torch.float64


def test_overlong_paper_form_with_floor():
    lengths = torch.tensor([10, 16, 17, 18, 20, 22], dtype=F64)
    got = overlong_penalty(lengths, max_len=20, cache_len=4)
    torch.testing.assert_close(got, torch.tensor([0, 0, -0.25, -0.5, -1.0, -1.0], dtype=F64), atol=1e-6, rtol=0)


def test_overlong_without_floor_matches_verl_areal():
    got = overlong_penalty(torch.tensor([10, 16, 17, 18, 20, 22]), max_len=20, cache_len=4, floor=False)
    torch.testing.assert_close(got, torch.tensor([0, 0, -0.25, -0.5, -1.0, -1.5], dtype=F64), atol=1e-6, rtol=0)


def test_overlong_rejects_bad_budget():
    with pytest.raises(ValueError, match="cache_len"):
        overlong_penalty(torch.tensor([1.0]), max_len=4, cache_len=8)


def _groups():
    groups = [[1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [0.5, 1.0], [1]]
    r = torch.tensor([x for g in groups for x in g], dtype=F64)
    gi = torch.tensor([i for i, g in enumerate(groups) for _ in g])
    return r, gi


def test_dynamic_sampling_verl_rule_keeps_singletons():
    r, gi = _groups()
    f = dynamic_sampling_filter(r, gi)
    assert f.keep_group.tolist() == [True, False, False, True, True]
    assert f.keep.tolist() == [True] * 4 + [False] * 8 + [True] * 3
    assert f.metrics["rollout/zero_std_count_1.0"] == 1
    assert f.metrics["rollout/zero_std_count_0.0"] == 1
    assert f.metrics["rollout/zero_std_frac"] == pytest.approx(8 / 15)


def test_dynamic_sampling_slime_rule_drops_singletons():
    r, gi = _groups()
    f = dynamic_sampling_filter(r, gi, keep_singletons=False)
    assert f.keep_group.tolist() == [True, False, False, True, False]


def _episode(reward: float, turns: int, format_errors: int):
    from agentrl.types import Trajectory

    return Trajectory(id="t", group_id="g", env_id="e", task_id="k", reward=reward,
                      metrics={"rollout/turns": turns, "rollout/format_errors": format_errors})


def test_format_reward_pays_for_the_share_of_well_formed_turns():
    from agentrl.trainer.collect import shaped_rewards

    group = [_episode(0.0, 3, 3), _episode(0.0, 4, 1), _episode(1.0, 2, 0), _episode(0.0, 0, 0)]
    plain = shaped_rewards(group, overlong_buffer=0, max_len=64)
    torch.testing.assert_close(plain, torch.tensor([0.0, 0.0, 1.0, 0.0], dtype=F64))
    shaped = shaped_rewards(group, overlong_buffer=0, max_len=64, format_reward=0.2)
    torch.testing.assert_close(shaped, torch.tensor([0.0, 0.15, 1.2, 0.0], dtype=F64))
    # a group that never solves the task still carries variance once its members differ in format
    assert bool(dynamic_sampling_filter(shaped[:2], torch.zeros(2, dtype=torch.long)).keep_group[0])
    assert not bool(dynamic_sampling_filter(plain[:2], torch.zeros(2, dtype=torch.long)).keep_group[0])
