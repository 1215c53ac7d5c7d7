"""Off-policy corrections (token TIS/MIS, trajectory trust regions) against the docs/algorithms.md §10.3 fixture."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from agentrl.algo.corrections import CorrectionConfig, correction_weights
from agentrl.algo.metrics import to_host

F64 = torch.float64
TOL = dict(atol=1e-6, rtol=0)
ACTION = [0, 1, 2, 3, 6, 9, 10]


def _corr(b, **cfg):
    """The correction, its metrics (0-d tensors) read on the host."""
    c = correction_weights(b.lp_old, b.lp_mu, b.mask, b.traj_index, b.num_traj, b.traj_advantages,
                           CorrectionConfig(**cfg))
    assert all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in c.metrics.values())
    return dataclasses.replace(c, metrics=to_host(c.metrics))


def _w(c):
    return c.weights[ACTION]


def _t(xs):
    return torch.tensor(xs, dtype=F64)


def test_token_tis_cap_2(policy_batch):
    c = _corr(policy_batch, token="tis", tis_cap=2.0, traj=())
    torch.testing.assert_close(_w(c), _t([0.4, 1.25, 2.0, 1.0, 0.9, 1.0, 0.5]), **TOL)
    assert c.metrics["mismatch/tis_clipfrac"] == pytest.approx(1 / 7, abs=1e-6)
    assert c.metrics["mismatch/tis_clipfrac_seq"] == pytest.approx(0.125, abs=1e-6)
    assert c.metrics["mismatch/rs_masked_frac"] == 0.0
    assert not c.weights.requires_grad


def test_token_clip_with_lower_cap(policy_batch):
    c = _corr(policy_batch, token="tis", tis_cap=2.0, tis_low=0.5, traj=())
    torch.testing.assert_close(_w(c)[:4], _t([0.5, 1.25, 2.0, 1.0]), **TOL)
    assert c.metrics["mismatch/tis_clipfrac"] == pytest.approx(2 / 7, abs=1e-6)


def test_token_mis_keeps_the_boundary(policy_batch):
    c = _corr(policy_batch, token="mis", mis_band=(0.5, 2.0), traj=())
    torch.testing.assert_close(_w(c), _t([0, 1.25, 0, 1.0, 0.9, 1.0, 0.5]), **TOL)
    assert c.metrics["mismatch/rs_masked_frac"] == pytest.approx(2 / 7, abs=1e-6)


def test_icepop_default_band_masks_only_the_first_token(policy_batch):
    c = _corr(policy_batch, token="mis", traj=())  # [0.5, 5]
    assert (_w(c) == 0).tolist() == [True] + [False] * 6


def test_seq_mis_rejects_a_trajectory_whose_tokens_are_all_in_bounds(policy_batch):
    c = _corr(policy_batch, token="none", traj=("seq",), seq_band=(0.5, 2.0))
    assert c.traj_keep.tolist() == [True, False]  # Π w = (1.5, 0.45)
    torch.testing.assert_close(_w(c), _t([1, 1, 1, 1, 0, 0, 0]), **TOL)
    assert c.metrics["mismatch/rs_masked_frac_traj"] == 0.5
    assert c.metrics["mismatch/rs_masked_frac"] == pytest.approx(3 / 7, abs=1e-6)


@pytest.mark.parametrize("band,keep", [((0.999, 1.001), [False, False]), ((0.8, 1.25), [True, False])])
def test_geo_rs(policy_batch, band, keep):
    # geometric means (1.106682, 0.766309)
    assert _corr(policy_batch, token="none", traj=("geo",), geo_band=band).traj_keep.tolist() == keep


def test_veto_rejects_nothing_at_1e_4_and_fires_below_the_smallest_w(policy_batch):
    assert _corr(policy_batch, traj=("veto",), veto_floor=1e-4).traj_keep.tolist() == [True, True]
    assert _corr(policy_batch, traj=("veto",), veto_floor=0.45).traj_keep.tolist() == [False, True]  # s0t0 w = 0.4


def test_opsm_drops_negative_advantage_off_policy_trajectory(policy_batch):
    # mean(lp_μ − lp_old): s0 = −ln(1.5)/4 < 0, s1 = −ln(0.45)/3 ≈ 0.266 > δ and A_1 < 0
    assert _corr(policy_batch, token="none", traj=("opsm",)).traj_keep.tolist() == [True, False]


def test_opsm_keeps_positive_advantage_trajectories(flipped_policy_batch):
    assert _corr(flipped_policy_batch, token="none", traj=("opsm",)).traj_keep.tolist() == [True, True]


def test_modes_combine_token_tis_and_trajectory_geo_and_veto(policy_batch):
    c = _corr(policy_batch, token="tis", tis_cap=2.0, traj=("geo", "veto"), geo_band=(0.8, 1.25))
    torch.testing.assert_close(_w(c), _t([0.4, 1.25, 2.0, 1.0, 0, 0, 0]), **TOL)
    assert c.metrics["mismatch/rs_masked_frac_traj_geo"] == 0.5
    assert c.metrics["mismatch/rs_masked_frac_traj_veto"] == 0.0


def test_weights_are_zero_off_the_mask(policy_batch):
    c = _corr(policy_batch, token="tis", traj=("geo", "seq", "veto", "opsm"), geo_band=(0.1, 10), seq_band=(0.1, 10))
    assert c.weights[~policy_batch.mask].abs().sum() == 0


def test_unknown_trajectory_mode_is_refused(policy_batch):
    with pytest.raises(ValueError, match="unknown trajectory trust region"):
        _corr(policy_batch, traj=("geom",))
