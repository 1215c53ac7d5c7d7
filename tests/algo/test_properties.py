"""Property tests (hypothesis) of the trainer math on random packed batches.

(a) permuting trajectories leaves the loss unchanged; (b) splitting a mini-batch into micro-batches at
arbitrary cut points (even inside a trajectory) gives the full-batch loss and gradient for every reduction;
(c) with π_θ = π_old = μ every correction is the identity and the gradient is the plain advantage-weighted
policy gradient; (d) values at masked positions (NaN, ±inf, huge) never affect any output.
Structure is drawn by hypothesis; values come from a seeded generator so examples stay cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrl.algo.corrections import CorrectionConfig, correction_weights
from agentrl.algo.flat import broadcast_to_tokens, traj_sum
from agentrl.algo.losses import REDUCTIONS, LossConfig, loss_normalizer, policy_loss
from agentrl.algo.metrics import mismatch_metrics, staleness_metrics

F64 = torch.float64
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CLOSE = dict(atol=1e-10, rtol=1e-10)

# (name, cfg, reductions it supports)
LOSS_CASES = [
    ("ppo", LossConfig(), list(REDUCTIONS)),
    ("cispo", LossConfig.preset("cispo"), list(REDUCTIONS)),
    ("dppo", LossConfig.preset("dppo"), list(REDUCTIONS)),
    ("gspo", LossConfig(eps_low=0.1, eps_high=0.1, dual_clip_c=None), ["seq-mean-token-mean"]),
]
ALL_TRAJ = ("geo", "seq", "veto", "opsm")


@dataclass
class Packed:
    lp_theta: torch.Tensor
    lp_old: torch.Tensor
    lp_mu: torch.Tensor
    traj_adv: torch.Tensor
    advantages: torch.Tensor
    mask: torch.Tensor
    traj_index: torch.Tensor
    versions: torch.Tensor
    num_traj: int


@st.composite
def packed_batches(draw):
    """Random trajectories split into 1-3 segments in shuffled order, with random action masks."""
    num_traj = draw(st.integers(1, 5))
    segs = []
    for i in range(num_traj):
        for _ in range(draw(st.integers(1, 3))):
            segs.append((i, draw(st.lists(st.booleans(), min_size=1, max_size=6))))
    order = draw(st.permutations(list(range(len(segs)))))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    idx = torch.tensor([segs[k][0] for k in order for _ in segs[k][1]])
    mask = torch.tensor([b for k in order for b in segs[k][1]])
    n = idx.numel()
    lp_old = -torch.rand(n, generator=g, dtype=F64) * 3 - 0.05
    lp_theta = lp_old + (torch.rand(n, generator=g, dtype=F64) - 0.5) * 0.8
    lp_mu = lp_old + (torch.rand(n, generator=g, dtype=F64) - 0.5) * 0.8
    traj_adv = (torch.rand(num_traj, generator=g, dtype=F64) - 0.5) * 4
    versions = torch.where(mask, torch.randint(0, 5, (n,), generator=g), torch.full((n,), -1))
    return Packed(lp_theta, lp_old, lp_mu, traj_adv, broadcast_to_tokens(traj_adv, idx), mask, idx, versions, num_traj)


def _loss(b: Packed, name, cfg, reduction, *, norm=None, weights=None, sl=slice(None), lp_theta=None, tlr=None):
    norm = norm or loss_normalizer(b.mask, b.traj_index, b.num_traj, loss_scale_factor=8.0)
    lp_t = b.lp_theta if lp_theta is None else lp_theta
    return policy_loss(
        name, lp_t[sl], b.lp_old[sl], b.advantages[sl], b.mask[sl], traj_index=b.traj_index[sl], norm=norm,
        cfg=cfg, reduction=reduction, weights=None if weights is None else weights[sl], traj_log_ratio=tlr,
    )


def _gspo_log_ratio(b: Packed) -> torch.Tensor:
    """Mini-batch-wide mean log-ratio per trajectory, as the loop would compute it without gradient."""
    lengths = traj_sum(b.mask.to(F64), b.traj_index, b.num_traj).clamp(min=1)
    return traj_sum(torch.where(b.mask, b.lp_theta - b.lp_old, 0.0), b.traj_index, b.num_traj) / lengths


@SETTINGS
@given(b=packed_batches(), data=st.data())
def test_permuting_trajectories_leaves_the_loss_unchanged(b, data):
    relabel = torch.tensor(data.draw(st.permutations(list(range(b.num_traj)))))
    order = torch.tensor(data.draw(st.permutations(list(range(b.mask.numel())))))
    p = Packed(b.lp_theta[order], b.lp_old[order], b.lp_mu[order], b.traj_adv[torch.argsort(relabel)],
               b.advantages[order], b.mask[order], relabel[b.traj_index[order]], b.versions[order], b.num_traj)
    for name, cfg, reductions in LOSS_CASES:
        for red in reductions:
            torch.testing.assert_close(_loss(p, name, cfg, red)[0], _loss(b, name, cfg, red)[0], **CLOSE)
    cc = CorrectionConfig(token="tis", traj=ALL_TRAJ, geo_band=(0.9, 1.1), seq_band=(0.5, 2.0))
    w_b = correction_weights(b.lp_old, b.lp_mu, b.mask, b.traj_index, b.num_traj, b.traj_adv, cc).weights
    w_p = correction_weights(p.lp_old, p.lp_mu, p.mask, p.traj_index, p.num_traj, p.traj_adv, cc).weights
    torch.testing.assert_close(w_p, w_b[order], **CLOSE)


@SETTINGS
@given(b=packed_batches(), data=st.data())
def test_micro_batch_split_gives_the_full_batch_gradient(b, data):
    n = b.mask.numel()
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=3)))) if n > 1 else []
    bounds = [0, *cuts, n]
    norm = loss_normalizer(b.mask, b.traj_index, b.num_traj, loss_scale_factor=8.0)
    cc = CorrectionConfig(token="mis", mis_band=(0.7, 1.4), traj=("geo", "opsm"), geo_band=(0.9, 1.1))
    weights = correction_weights(b.lp_old, b.lp_mu, b.mask, b.traj_index, b.num_traj, b.traj_adv, cc).weights
    tlr = _gspo_log_ratio(b)
    for name, cfg, reductions in LOSS_CASES:
        for red in reductions:
            full_t = b.lp_theta.clone().requires_grad_(True)
            full, full_m = _loss(b, name, cfg, red, norm=norm, weights=weights, lp_theta=full_t, tlr=tlr)
            full.backward()
            micro_t = b.lp_theta.clone().requires_grad_(True)
            total, metrics = 0.0, {}
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
                part, part_m = _loss(b, name, cfg, red, norm=norm, weights=weights, sl=slice(lo, hi),
                                     lp_theta=micro_t, tlr=tlr)
                part.backward()
                total = total + part.detach()
                for k, v in part_m.items():
                    metrics[k] = metrics.get(k, 0.0) + v
            torch.testing.assert_close(total, full.detach(), **CLOSE)
            torch.testing.assert_close(micro_t.grad, full_t.grad, **CLOSE)
            for k in ("actor/pg_clipfrac", "actor/ppo_kl"):
                torch.testing.assert_close(metrics[k], full_m[k], **CLOSE)


@SETTINGS
@given(b=packed_batches(), token=st.sampled_from(["none", "tis", "mis"]))
def test_on_policy_corrections_are_identity_and_gradient_is_plain_pg(b, token):
    b = replace(b, lp_theta=b.lp_old.clone(), lp_mu=b.lp_old.clone())
    cc = CorrectionConfig(token=token, traj=ALL_TRAJ)  # default bands, all contain w = 1
    corr = correction_weights(b.lp_old, b.lp_mu, b.mask, b.traj_index, b.num_traj, b.traj_adv, cc)
    torch.testing.assert_close(corr.weights, b.mask.to(F64), atol=0, rtol=0)
    assert bool(corr.traj_keep.all())
    norm = loss_normalizer(b.mask, b.traj_index, b.num_traj)
    m = b.mask.to(F64)
    for name, cfg, _ in LOSS_CASES:
        t = b.lp_theta.clone().requires_grad_(True)
        red = "seq-mean-token-mean" if name == "gspo" else "token-mean"
        loss, _ = _loss(b, name, cfg, red, norm=norm, weights=corr.weights, lp_theta=t)
        loss.backward()
        if name == "gspo":  # seq-mean-token-mean of −A·lp_θ
            expected = -b.advantages * m / (norm.traj_lengths[b.traj_index].clamp(min=1) * max(norm.num_seqs, 1))
        else:  # token-mean of −A·lp_θ
            expected = -b.advantages * m / max(norm.num_tokens, 1.0)
        torch.testing.assert_close(t.grad, expected, **CLOSE)


WILD = st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e30, -1e30, 0.0, 7.5])


@SETTINGS
@given(b=packed_batches(), wild=st.lists(WILD, min_size=4, max_size=4))
def test_masked_positions_never_affect_any_output(b, wild):
    off = ~b.mask
    w = Packed(
        torch.where(off, wild[0], b.lp_theta), torch.where(off, wild[1], b.lp_old), torch.where(off, wild[2], b.lp_mu),
        b.traj_adv, torch.where(off, wild[3], b.advantages), b.mask, b.traj_index,
        torch.where(off, 12345, b.versions), b.num_traj,
    )
    cc = CorrectionConfig(token="tis", traj=ALL_TRAJ, geo_band=(0.8, 1.25))
    c_b = correction_weights(b.lp_old, b.lp_mu, b.mask, b.traj_index, b.num_traj, b.traj_adv, cc)
    c_w = correction_weights(w.lp_old, w.lp_mu, w.mask, w.traj_index, w.num_traj, w.traj_adv, cc)
    torch.testing.assert_close(c_w.weights, c_b.weights, atol=0, rtol=0)
    assert c_w.metrics == c_b.metrics
    mm = dict(versions=b.versions, current_version=5)
    assert mismatch_metrics(w.lp_old, w.lp_mu, w.mask, w.traj_index, w.num_traj, **{**mm, "versions": w.versions}) \
        == mismatch_metrics(b.lp_old, b.lp_mu, b.mask, b.traj_index, b.num_traj, **mm)
    assert staleness_metrics(w.versions, w.mask, w.traj_index, w.num_traj, 5) == \
        staleness_metrics(b.versions, b.mask, b.traj_index, b.num_traj, 5)
    for name, cfg, reductions in LOSS_CASES:
        for red in reductions:
            t_b = b.lp_theta.clone().requires_grad_(True)
            t_w = w.lp_theta.clone().requires_grad_(True)
            lb, mb = _loss(b, name, cfg, red, weights=c_b.weights, lp_theta=t_b)
            lw, mw = _loss(w, name, cfg, red, weights=c_w.weights, lp_theta=t_w)
            lb.backward()
            lw.backward()
            torch.testing.assert_close(lw, lb, atol=0, rtol=0)
            torch.testing.assert_close(t_w.grad, t_b.grad, atol=0, rtol=0)
            assert bool((t_w.grad[off] == 0).all())
            for k in mb:
                torch.testing.assert_close(mw[k], mb[k], atol=0, rtol=0)
