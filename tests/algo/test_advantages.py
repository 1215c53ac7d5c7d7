"""Advantage estimators against docs/algorithms.md §10.1 (float64, tolerance 1e-6)."""

from __future__ import annotations

import pytest
import torch

from agentrl.algo.advantages import ADVANTAGES, AdvantageConfig, compute_advantages

F64 = torch.float64
TOL = dict(atol=1e-6, rtol=0)


def _adv(name: str, rewards: list[float], **cfg) -> torch.Tensor:
    r = torch.tensor(rewards, dtype=F64)
    return compute_advantages(name, r, torch.zeros(len(rewards), dtype=torch.long), AdvantageConfig(**cfg))


# (rewards, GRPO unbiased, GRPO population std, Dr.GRPO, α=0.5, RLOO) — the §10.1 table.
TABLE = [
    ([1, 0, 0, 0], [1.499997] + [-0.499999] * 3, [1.732047] + [-0.577349] * 3, [0.75] + [-0.25] * 3,
     [1.060659] + [-0.353553] * 3, [1.0] + [-1 / 3] * 3),
    ([1, 1, 1, 1], [0.0] * 4, [0.0] * 4, [0.0] * 4, [0.0] * 4, [0.0] * 4),
    ([0, 0, 0, 0], [0.0] * 4, [0.0] * 4, [0.0] * 4, [0.0] * 4, [0.0] * 4),
    ([1, 0], [0.707106, -0.707106], [0.999998, -0.999998], [0.5, -0.5], [0.594603, -0.594603], [1.0, -1.0]),
    ([0.5, 1.0, 0.0, 0.2], [0.172440, 1.322040, -0.977160, -0.517320], [0.199116, 1.526560, -1.128327, -0.597349],
     [0.075, 0.575, -0.425, -0.225], [0.113723, 0.871879, -0.644432, -0.341170], [0.1, 0.766667, -0.566667, -0.3]),
]


@pytest.mark.parametrize("row", TABLE, ids=lambda r: str(r[0]))
def test_advantage_vectors(row):
    rewards, grpo, grpo_pop, dr, half, rloo = row
    torch.testing.assert_close(_adv("grpo", rewards), torch.tensor(grpo, dtype=F64), **TOL)
    torch.testing.assert_close(_adv("grpo", rewards, unbiased=False), torch.tensor(grpo_pop, dtype=F64), **TOL)
    torch.testing.assert_close(_adv("dr_grpo", rewards), torch.tensor(dr, dtype=F64), **TOL)
    torch.testing.assert_close(_adv("alpha_norm", rewards, alpha=0.5), torch.tensor(half, dtype=F64), **TOL)
    torch.testing.assert_close(_adv("rloo", rewards), torch.tensor(rloo, dtype=F64), **TOL)


def test_alpha_knob_endpoints_are_grpo_and_dr_grpo():
    r = [0.5, 1.0, 0.0, 0.2]
    torch.testing.assert_close(_adv("alpha_norm", r, alpha=1.0), _adv("grpo", r), **TOL)
    torch.testing.assert_close(_adv("alpha_norm", r, alpha=0.0), _adv("dr_grpo", r), **TOL)


def test_grpo_eps_is_configurable_trl_value():
    torch.testing.assert_close(
        _adv("grpo", [1, 0, 0, 0], eps=1e-4), torch.tensor([1.4997] + [-0.4999] * 3, dtype=F64), atol=1e-4, rtol=0
    )


def test_singleton_group_rule():
    """One rule for size-1 groups: baseline 0, group std 1 (verl 'mean 0, std 1'); or 0 with singleton='zero'."""
    torch.testing.assert_close(_adv("grpo", [1]), torch.tensor([0.999999], dtype=F64), **TOL)
    torch.testing.assert_close(_adv("dr_grpo", [1]), torch.tensor([1.0], dtype=F64), **TOL)
    torch.testing.assert_close(_adv("rloo", [1]), torch.tensor([1.0], dtype=F64), **TOL)  # verl `rloo`
    for name in ("grpo", "dr_grpo", "rloo", "alpha_norm"):
        assert _adv(name, [1], singleton="zero").tolist() == [0.0]  # verl `rloo_vectorized`


def test_groups_are_independent_and_zero_std_groups_get_zero():
    r = torch.tensor([1, 0, 0, 0, 1, 1, 1, 1, 0.5, 1.0, 0.0, 0.2], dtype=F64)
    g = torch.tensor([0] * 4 + [1] * 4 + [2] * 4)
    a = compute_advantages("grpo", r, g)
    torch.testing.assert_close(a[:4], _adv("grpo", [1, 0, 0, 0]), **TOL)
    assert a[4:8].tolist() == [0.0] * 4
    torch.testing.assert_close(a[8:], _adv("grpo", [0.5, 1.0, 0.0, 0.2]), **TOL)


def test_zero_std_group_is_exactly_zero_despite_rounding():
    # 0.1 * 3 does not sum exactly; the max == min test still gives exact zeros.
    for name in ("grpo", "dr_grpo", "alpha_norm", "rloo", "batch_std"):
        assert _adv(name, [0.1, 0.1, 0.1]).tolist() == [0.0] * 3, name


def test_batch_std_uses_group_mean_and_batch_std():
    r = torch.tensor([1, 0, 0, 0, 0.5, 1.0, 0.0, 0.2], dtype=F64)
    g = torch.tensor([0] * 4 + [1] * 4)
    centred = torch.tensor([0.75, -0.25, -0.25, -0.25, 0.075, 0.575, -0.425, -0.225], dtype=F64)
    expected = centred / (r.std() + 1e-6)
    torch.testing.assert_close(compute_advantages("batch_std", r, g), expected, **TOL)


def test_reinforce_pp_baseline_vector():
    r = torch.tensor([1.0, 0, 0, 0], dtype=F64)
    a = compute_advantages(
        "reinforce_pp_baseline", r, torch.zeros(4, dtype=torch.long), action_lengths=torch.tensor([2, 1, 3, 2])
    )
    torch.testing.assert_close(a, torch.tensor([1.620185] + [-0.540062] * 3, dtype=F64), **TOL)


def test_reinforce_pp_baseline_requires_lengths():
    with pytest.raises(ValueError, match="action_lengths"):
        compute_advantages("reinforce_pp_baseline", torch.ones(2, dtype=F64), torch.zeros(2, dtype=torch.long))


def test_unknown_estimator_names_the_choices():
    with pytest.raises(ValueError, match="unknown advantage estimator 'grp'"):
        compute_advantages("grp", torch.ones(2, dtype=F64), torch.zeros(2, dtype=torch.long))
    assert set(ADVANTAGES) >= {"grpo", "dr_grpo", "alpha_norm", "batch_std", "rloo", "reinforce_pp_baseline"}
