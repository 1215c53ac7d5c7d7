"""Task success as the learning signal (agentrl.algo.signal): the success-variance filter drops groups whose only
variance is format noise (issue 54), and the step's signal metrics on a planted batch."""

from __future__ import annotations

import pytest
import torch

from agentrl.algo.shaping import dynamic_sampling_filter
from agentrl.algo.signal import group_ids, has_success, signal_metrics, success_of, varies

FORMAT_ONLY = [0.2, 0.2, 0.2, 0.2 * 2 / 3]  # nobody fixed the bug; one episode had one unparsable turn in three
ONE_FIX = [1.2, 0.2, 0.2, 0.2]  # one episode fixed it


def _filters(rewards: list[float], success: list[float]) -> tuple[bool, bool]:
    gi = torch.zeros(len(rewards), dtype=torch.long)
    by_reward = dynamic_sampling_filter(torch.tensor(rewards, dtype=torch.float64), gi)
    by_success = dynamic_sampling_filter(torch.tensor(success, dtype=torch.float64), gi)
    return bool(by_reward.keep_group[0]), bool(by_success.keep_group[0])


def test_format_only_variance_passes_the_reward_filter_and_not_the_success_filter():
    """Guards the issue-54 finding: a group that differs only by one unparsable turn trained as informative."""
    success = [success_of({"resolved": False}, r) for r in FORMAT_ONLY]
    assert success == [0.0, 0.0, 0.0, 0.0]
    assert _filters(FORMAT_ONLY, success) == (True, False)


def test_a_group_with_one_success_passes_both_filters():
    success = [success_of({"resolved": r > 1}, r) for r in ONE_FIX]
    assert success == [1.0, 0.0, 0.0, 0.0]
    assert _filters(ONE_FIX, success) == (True, True)


def test_success_reads_the_env_flags_in_order_and_falls_back_to_the_reward():
    assert success_of({"success": True, "resolved": False}, 0.0) == 1.0
    assert success_of({"resolved": True}, 0.3) == 1.0
    assert success_of({"correct": False}, 1.0) == 0.0
    assert success_of({"resolved": None, "correct": True}, 0.0) == 1.0
    assert success_of({}, 0.25) == 0.25  # an env with no success flag: its reward stands in
    assert success_of(None, 0.5) == 0.5
    assert has_success({"resolved": False}) and not has_success({"f2p_pass": 0.5}) and not has_success(None)


def test_varies_is_false_for_equal_values_and_for_a_group_of_one():
    values = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    gi = torch.tensor([0, 0, 1, 1, 2, 2, 3])
    assert varies(values, gi, 4).tolist() == [True, False, False, False]


def test_signal_metrics_on_a_planted_batch():
    """Three groups of 4: one solved once (mixed), one format-only (flat success, non-zero advantages), one flat
    and all-equal. |A| mass: the mixed group 3.0, the format-only group 3.0 → flat share 0.5."""
    success = torch.tensor([1.0, 0, 0, 0] + [0.0] * 4 + [0.0] * 4, dtype=torch.float64)
    adv = torch.tensor([1.5, -0.5, -0.5, -0.5] + [0.5, 0.5, 0.5, -1.5] + [0.0] * 4, dtype=torch.float64)
    gi = torch.tensor([0] * 4 + [1] * 4 + [2] * 4)
    m = signal_metrics(success, gi, adv)
    assert m["rollout/mixed_success_share"] == pytest.approx(1 / 3)
    assert m["rollout/flat_success_adv_share"] == pytest.approx(0.5)
    trained = torch.tensor([True] * 4 + [False] * 8)  # only the mixed group trained: no flat mass
    assert signal_metrics(success, gi, adv, trained=trained)["rollout/flat_success_adv_share"] == 0.0
    assert signal_metrics(success, gi, torch.zeros(12))["rollout/flat_success_adv_share"] == 0.0
    assert "rollout/flat_success_adv_share" not in signal_metrics(success, gi)
    assert signal_metrics(torch.zeros(0), torch.zeros(0, dtype=torch.long)) == {"rollout/mixed_success_share": 0.0}


def test_group_ids_number_keys_by_first_appearance():
    assert group_ids(["b", "b", "a", "c", "a"]).tolist() == [0, 0, 1, 2, 1]
