"""Turn-level credit against hand-computed vectors (worked out on paper, not by the implementation)."""

from __future__ import annotations

import pytest
import torch

from agentrl.algo.advantages import compute_advantages
from agentrl.algo.credit import discounted_returns, gigpo_advantages, step_advantages, turn_advantages

S3 = 3 ** 0.5


def close(got, want, tol=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, abs=tol), (got, want)


def test_discounted_returns():
    close(discounted_returns([1, 0, 2], 0.5), [1.5, 1.0, 2.0])
    close(discounted_returns([0, 0, 1], 1.0), [1, 1, 1])
    assert discounted_returns([], 0.9) == []


def test_turn_advantages_normalise_per_turn_index_among_the_episodes_that_reached_it():
    # A: rewards [0, 1] → G [1, 1]; B: [0, 0] → [0, 0]; C: [1] → [1] (one turn).
    # turn 0: {1, 0, 1}: mean 2/3, unbiased std sqrt(1/3) → A, C = (1/3)/sqrt(1/3) = 1/sqrt(3); B = −2/sqrt(3)
    # turn 1: {1, 0}: mean 1/2, std sqrt(1/2) → ±1/sqrt(2)
    adv = turn_advantages([[0, 1], [0, 0], [1]], [0, 0, 0], gamma=1.0)
    close(adv[0], [1 / S3, 2 ** -0.5])
    close(adv[1], [-2 / S3, -(2 ** -0.5)])
    close(adv[2], [1 / S3])
    centred = turn_advantages([[0, 1], [0, 0], [1]], [0, 0, 0], gamma=1.0, std=False)
    close(centred[0], [1 / 3, 0.5])
    close(centred[1], [-2 / 3, -0.5])
    close(centred[2], [1 / 3])


def test_groups_do_not_mix_and_equal_returns_and_singletons_give_zero():
    # group 0: two episodes with equal returns → 0; group 1: one episode (no peer) → 0
    adv = turn_advantages([[1, 0], [1, 0], [5]], [0, 0, 1], gamma=1.0)
    assert adv == [[0.0, 0.0], [0.0, 0.0], [0.0]]
    # the same rewards in two groups: each group is normalised on its own
    adv = turn_advantages([[1], [0], [1], [0]], [0, 0, 1, 1], gamma=1.0)
    close([a[0] for a in adv], [2 ** -0.5, -(2 ** -0.5), 2 ** -0.5, -(2 ** -0.5)])


def test_final_reward_only_with_gamma_one_equals_the_outcome_advantage():
    rewards = [[0, 0, 1.0], [0, 0, 0.0], [0, 0, 1.0], [0, 0, 0.5]]
    outcome = compute_advantages("grpo", torch.tensor([1.0, 0.0, 1.0, 0.5], dtype=torch.float64),
                                 torch.zeros(4, dtype=torch.long)).tolist()
    for row, a in zip(turn_advantages(rewards, [0] * 4, gamma=1.0), outcome, strict=True):
        close(row, [a] * 3, tol=1e-9)


def test_step_advantages_group_turns_by_anchor_state_across_turn_indices():
    # A: rewards [0, 1], anchors [s, t] → G (γ = 0.5) [0.5, 1]
    # B: rewards [0, 0, 1], anchors [s, s, u] → G [0.25, 0.5, 1] (B revisits s at turn 1)
    # anchor s: {A0 0.5, B0 0.25, B1 0.5}: mean 5/12, deviations (1/12, −1/6, 1/12), unbiased std sqrt(1/48)
    #   → A0 = B1 = (1/12)·sqrt(48) = 1/sqrt(3), B0 = −2/sqrt(3); t and u are alone: 0
    adv = step_advantages([[0, 1], [0, 0, 1]], [["s", "t"], ["s", "s", "u"]], [0, 0], gamma=0.5)
    close(adv[0], [1 / S3, 0.0])
    close(adv[1], [-2 / S3, 1 / S3, 0.0])
    # the same anchor key in another group is another anchor group
    adv = step_advantages([[1], [0]], [["s"], ["s"]], [0, 1], gamma=1.0)
    assert adv == [[0.0], [0.0]]
    with pytest.raises(ValueError, match="2 anchors for 1 turns"):
        step_advantages([[1]], [["s", "t"]], [0])


def test_gigpo_adds_the_weighted_step_advantage_to_the_episode_advantage():
    # as in the turn test, all turn-0 states equal (one prompt), turn-1 states distinct
    steps0 = [1 / S3, -2 / S3, 1 / S3]
    adv = gigpo_advantages([0.5, -1.0, 0.5], [[0, 1], [0, 0], [1]], [["p", "x"], ["p", "y"], ["p"]], [0, 0, 0],
                           step_weight=0.5, gamma=1.0)
    close(adv[0], [0.5 + 0.5 * steps0[0], 0.5])
    close(adv[1], [-1.0 + 0.5 * steps0[1], -1.0])
    close(adv[2], [0.5 + 0.5 * steps0[2]])


def _traj(prompt, turns, reward, tid="t"):
    """A one-segment trajectory: prompt tokens, then per turn (action ids, observation ids, step reward, format
    error); spans as the agent loop records them."""
    from agentrl.types import Segment, Trajectory, Turn

    seg, recorded = Segment(), []
    seg.append_prompt(prompt)
    for k, (action, obs, r, bad) in enumerate(turns):
        a0 = len(seg)
        seg.append_sampled(action, [-0.5] * len(action), [0] * len(action))
        o0 = len(seg)
        seg.append_prompt(obs)
        recorded.append(Turn(segment=0, action_span=(a0, o0), observation_span=(o0, len(seg)),
                             action_text=f"a{k}", reward=r, format_error=bad))
    return Trajectory(id=tid, group_id="g", env_id="e", task_id="x", segments=[seg], turns=recorded, reward=reward)


def test_turn_rewards_sum_to_the_outcome_with_the_format_share_per_parsed_turn_and_the_rest_on_the_last():
    # env step rewards 0, 0.25, 0; the closing grade replaced them with 1.0; format_reward 0.3 over 3 turns,
    # turn 2 unparsed: shares 0.1, 0, 0.1 → r = [0.1, 0.25, 0.1 + (1.2 − 0.45)] with total 1.2 = 1.0 + 0.3·(2/3)
    from agentrl.algo.credit import turn_rewards

    t = _traj([1, 2], [([5], [6], 0.0, False), ([7], [8], 0.25, True), ([9], [], 0.0, False)], reward=1.0)
    r = turn_rewards(t, 1.2, format_reward=0.3)
    close(r, [0.1, 0.25, 0.85])
    assert sum(r) == pytest.approx(1.2)
    assert turn_rewards(_traj([1], [], 0.0), 0.0) == []


def test_anchor_states_are_the_prompt_and_observations_so_far_not_the_actions():
    from agentrl.algo.credit import anchor_states

    a = _traj([1, 2], [([5, 5], [6], 0, False), ([7], [8, 8], 0, False), ([9], [], 1, False)], 1)
    b = _traj([1, 2], [([3], [6], 0, False), ([4, 4, 4], [8, 8], 0, False), ([9], [], 0, False)], 0)
    c = _traj([1, 2], [([5, 5], [0], 0, False), ([7], [], 0, False)], 0)
    sa, sb, sc = anchor_states(a), anchor_states(b), anchor_states(c)
    assert sa == [(1, 2), (1, 2, 6), (1, 2, 6, 8, 8)]
    assert sa == sb  # other actions, same observations: same states
    assert sc[0] == sa[0] and sc[1] != sa[1]


def test_batch_broadcasts_each_turns_advantage_over_its_action_tokens_only():
    from agentrl.trainer.batch import build_minibatch

    t = _traj([1, 2], [([5, 5], [6], 0.0, False), ([7], [8], 1.0, False)], 1.0)
    mb = build_minibatch([t], [[0.5, -2.0]])
    # position p predicts token p+1: tokens 2,3 (turn 0's action), 5 (turn 1's)
    got = [round(float(a), 3) if m else None for a, m in zip(mb.advantages, mb.loss_mask, strict=True)]
    assert got == [None, 0.5, 0.5, None, -2.0, None, None]
    with pytest.raises(ValueError, match="1 turn advantages for 2 turns"):
        build_minibatch([t], [[0.5]])
    outcome = build_minibatch([t], [0.7])
    assert all(float(a) == pytest.approx(0.7) for a, m in zip(outcome.advantages, outcome.loss_mask, strict=True) if m)
