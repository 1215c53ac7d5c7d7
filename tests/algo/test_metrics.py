"""Mismatch, staleness, KL and entropy metrics against docs/algorithms.md §10.3 and §10.4."""

from __future__ import annotations

import math

import pytest
import torch

from agentrl.algo.kl import kl_estimate
from agentrl.algo.logprobs import token_logprobs_from_logits
from agentrl.algo.metrics import Peak, merge_metrics, mismatch_metrics, staleness_metrics

F64 = torch.float64


def test_mismatch_metrics_on_fixture(policy_batch):
    m = mismatch_metrics(policy_batch.lp_old, policy_batch.lp_mu, policy_batch.mask, policy_batch.traj_index, 2)
    expected = {
        "mismatch/tis_mean": 1.15, "mismatch/tis_mean_seq": 1.10625,
        "mismatch/tis_abs": 0.492857, "mismatch/tis_abs_seq": 0.45625,
        "mismatch/logprob_abs_diff": 0.433793, "mismatch/logprob_abs_diff_seq": 0.412840,
        "mismatch/logprob_abs_diff_max": 1.098612,
        "mismatch/kl_k1": -math.log(0.675) / 7, "mismatch/kl_k3": 0.206149, "mismatch/chi2_token": 0.968929,
    }
    for k, v in expected.items():
        assert m[k] == pytest.approx(v, abs=1e-6), k
    assert m["mismatch/kl_k1"] == pytest.approx(0.056149, abs=1e-6)
    # chi2_seq = mean_i (Π w)² − 1 with Π w = (1.5, 0.45); log_ppl_abs_diff = mean_i |mean_t log w|
    assert m["mismatch/chi2_seq"] == pytest.approx((1.5**2 + 0.45**2) / 2 - 1, abs=1e-6)
    assert m["mismatch/log_ppl_abs_diff"] == pytest.approx((math.log(1.5) / 4 + -math.log(0.45) / 3) / 2, abs=1e-6)


def test_mismatch_is_bucketed_by_staleness(policy_batch):
    # s0 sampled at the current version (numerical mismatch only), s1 one and three versions behind.
    versions = torch.tensor([6, 6, 6, 6, -1, -1, 5, -1, -1, 5, 3, -1])
    m = mismatch_metrics(policy_batch.lp_old, policy_batch.lp_mu, policy_batch.mask, policy_batch.traj_index, 2, versions=versions,
                         current_version=6)
    assert m["mismatch/staleness_0/tis_mean"] == pytest.approx((0.4 + 1.25 + 3.0 + 1.0) / 4, abs=1e-6)
    assert m["mismatch/staleness_1/tis_mean"] == pytest.approx((0.9 + 1.0) / 2, abs=1e-6)
    assert m["mismatch/staleness_3+/tis_mean"] == pytest.approx(0.5, abs=1e-6)
    assert "mismatch/staleness_2/tis_mean" not in m
    assert m["mismatch/staleness_0/token_frac"] == pytest.approx(4 / 7)
    assert m["mismatch/staleness_2/token_frac"] == 0.0


def test_staleness_vector():
    versions = torch.tensor([6, 6, 6, 5, 5, 6, 4, 4, -1])
    mask = torch.tensor([1, 1, 1, 1, 1, 1, 1, 1, 0])
    idx = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
    s = staleness_metrics(versions, mask, idx, 3, current_version=6)
    assert s == pytest.approx({"staleness/mean": 0.75, "staleness/max": 2.0, "staleness/sample_mean": 1.0,
                               "staleness/sample_max": 2.0})


def test_kl_estimators_vector():
    delta = torch.tensor([0.1, -0.1, 0.5, -0.5, 1.0], dtype=F64)
    zero = torch.zeros(5, dtype=F64)
    torch.testing.assert_close(kl_estimate(delta, zero, "k1"), delta)
    torch.testing.assert_close(kl_estimate(delta, zero, "k2"), torch.tensor([.005, .005, .125, .125, .5], dtype=F64))
    k3 = kl_estimate(delta, zero, "k3")
    torch.testing.assert_close(k3, torch.tensor([0.004837, 0.005171, 0.106531, 0.148721, 0.367879], dtype=F64),
                               atol=1e-6, rtol=0)
    assert float(kl_estimate(delta, zero, "k2").mean()) == pytest.approx(0.152, abs=1e-6)
    assert float(k3.mean()) == pytest.approx(0.126628, abs=1e-6)


def test_k2_gradient_is_delta():
    delta = torch.tensor([0.3, -0.7], dtype=F64, requires_grad=True)
    kl_estimate(delta, torch.zeros(2, dtype=F64), "k2").sum().backward()
    torch.testing.assert_close(delta.grad, delta.detach())


@pytest.mark.parametrize("probs,h", [([.5, .25, .25], 1.039721), ([.25] * 4, 1.386294), ([.9, .1], 0.325083),
                                     ([1.0, 0.0], 0.0)])
def test_entropy_vectors(probs, h):
    p = torch.tensor(probs, dtype=F64)
    logits = torch.where(p > 0, p.log(), torch.full_like(p, -1e4))[None]
    _, ent = token_logprobs_from_logits(logits, torch.zeros(1, dtype=torch.long), entropy=True)
    assert float(ent) == pytest.approx(h, abs=1e-6)


def test_metrics_merge_as_they_declare():
    """Guards the merge of per-group metrics: counts add up, a Peak (resample rounds) takes the maximum.
    Summing rounds would report 5 rounds for a step whose slowest slot needed 2."""
    parts = [{"rollout/sample_rounds": Peak(1), "rollout/zero_std_count_0": 1.0},
             {"rollout/sample_rounds": Peak(2), "rollout/zero_std_count_0": 1.0, "pipeline/group_timeouts": 1},
             {"rollout/sample_rounds": Peak(2)}]
    merged = merge_metrics(parts)
    assert merged == {"rollout/sample_rounds": 2, "rollout/zero_std_count_0": 2.0, "pipeline/group_timeouts": 1}
    assert isinstance(merged["rollout/sample_rounds"], Peak)  # a merge of merges stays a max
