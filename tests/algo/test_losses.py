"""Policy losses and reductions against the docs/algorithms.md §10.3 fixture (values and gradients, float64, tol 1e-6)."""

from __future__ import annotations

import math

import pytest
import torch

from agentrl.algo.corrections import CorrectionConfig, correction_weights
from agentrl.algo.losses import LOSS_SPECS, REDUCTIONS, LossConfig, loss_normalizer, policy_loss

F64 = torch.float64
TOL = dict(atol=1e-6, rtol=0)
PPO = LossConfig(eps_low=0.2, eps_high=0.28, dual_clip_c=3.0)

# positions of the 7 action tokens inside the flat 12-token row
ACTION = [0, 1, 2, 3, 6, 9, 10]


def _per_action(values):
    out = torch.zeros(12, dtype=F64)
    out[ACTION] = torch.tensor(values, dtype=F64)
    return out


def _run(b, name="ppo", cfg=PPO, reduction=None, norm=None, **kw):
    t = b.theta()
    loss, metrics = policy_loss(
        name, t, b.lp_old, b.advantages, b.mask, traj_index=b.traj_index, norm=norm or b.norm(6.0),
        cfg=cfg, reduction=reduction, **kw,
    )
    loss.backward()
    return loss.detach(), t.grad, metrics


@pytest.mark.parametrize(
    "reduction,expected",
    [("token-mean", 0.131429), ("seq-mean-token-mean", 0.319167), ("seq-mean-token-sum", 0.46),
     ("seq-mean-token-sum-norm", 0.153333)],
)
def test_ppo_reductions(policy_batch, reduction, expected):
    loss, _, _ = _run(policy_batch, reduction=reduction)
    assert float(loss) == pytest.approx(expected, abs=1e-6)


def test_ppo_token_mean_gradient_and_metrics(policy_batch):
    loss, grad, m = _run(policy_batch, reduction="token-mean")
    torch.testing.assert_close(grad, _per_action([0, -1, -0.5, -1.2, 1.1, 0, 0]) / 7, **TOL)
    assert float(m["actor/pg_clipfrac"]) == pytest.approx(2 / 7, abs=1e-6)
    assert float(m["actor/pg_clipfrac_lower"]) == pytest.approx(1 / 7, abs=1e-6)
    assert float(m["actor/ppo_kl"]) == pytest.approx(-math.log(2.772) / 7, abs=1e-6)
    assert float(m["actor/clip_ratio_low"]) == pytest.approx(1 / 7, abs=1e-6)
    assert float(m["actor/clip_ratio_high"]) == pytest.approx(1 / 7, abs=1e-6)


def test_ppo_without_dual_clip(policy_batch):
    loss, _, m = _run(policy_batch, cfg=LossConfig(eps_low=0.2, eps_high=0.28, dual_clip_c=None), reduction="token-mean")
    assert float(loss) == pytest.approx(0.274286, abs=1e-6)
    assert "actor/pg_clipfrac_lower" not in m


def test_trl_dr_grpo_is_sum_norm_with_b_times_lmax(policy_batch):
    loss, _, _ = _run(policy_batch, reduction="seq-mean-token-sum-norm", norm=policy_batch.norm(loss_scale_factor=2 * 6.0))
    assert float(loss) == pytest.approx(0.076667, abs=1e-6)


def test_sum_norm_needs_a_scale_factor(policy_batch):
    with pytest.raises(ValueError, match="loss_scale_factor"):
        _run(policy_batch, reduction="seq-mean-token-sum-norm", norm=policy_batch.norm())


def test_gspo_unclipped(policy_batch):
    cfg = LossConfig.preset("gspo")
    loss, grad, m = _run(policy_batch, "gspo", cfg=cfg)
    assert float(loss) == pytest.approx(0.240477, abs=1e-6)
    s0, s1 = 0.9 ** 0.25, 3.08 ** (1 / 3)
    assert (s0, s1) == pytest.approx((0.974004, 1.454957), abs=1e-6)
    torch.testing.assert_close(grad, _per_action([-0.121750] * 4 + [0.242493] * 3), **TOL)
    assert float(m["actor/pg_clipfrac"]) == 0.0


def test_gspo_clipped_when_advantages_flip(flipped_policy_batch):
    loss, grad, m = _run(flipped_policy_batch, "gspo", cfg=LossConfig.preset("gspo"))
    assert float(loss) == pytest.approx(-0.00035, abs=1e-6)
    assert float(m["actor/pg_clipfrac"]) == pytest.approx(1.0, abs=1e-6)
    torch.testing.assert_close(grad, torch.zeros(12, dtype=F64), **TOL)


def test_gspo_refuses_other_reductions(policy_batch):
    with pytest.raises(ValueError, match="requires reduction 'seq-mean-token-mean'"):
        _run(policy_batch, "gspo", cfg=LossConfig.preset("gspo"), reduction="token-mean")


def test_cispo(policy_batch):
    cfg = LossConfig(eps_low=1.0, eps_high=1.0, dual_clip_c=None)  # no lower bound, cap 2.0
    loss, grad, m = _run(policy_batch, "cispo", cfg=cfg, reduction="token-mean")
    per_tok = [1.197762, 0.693147, 0.601986, 0.612991, -0.657621, -0.734875, -0.446287]
    assert float(loss) == pytest.approx(sum(per_tok) / 7, abs=1e-6)
    assert float(loss) == pytest.approx(0.181015, abs=1e-6)
    assert float(m["actor/pg_clipfrac"]) == pytest.approx(1 / 7, abs=1e-6)
    torch.testing.assert_close(grad * 7, _per_action([-1.5, -1, -0.5, -1.2, 1.1, 0.7, 2.0]), **TOL)


def test_decoupled_ppo_times_token_tis(policy_batch):
    corr = correction_weights(
        policy_batch.lp_old, policy_batch.lp_mu, policy_batch.mask, policy_batch.traj_index, 2, policy_batch.traj_advantages,
        CorrectionConfig(token="tis", tis_cap=2.0, traj=()),
    )
    loss, grad, _ = _run(policy_batch, reduction="token-mean", weights=corr.weights)
    assert float(loss) == pytest.approx(-0.096, abs=1e-6)
    # per-token ℓ = w̃·PPO: s0 [−0.512, −1.25, −1.0, −1.2], s1 [0.99, 0.8, 1.5]
    assert float(loss) * 7 == pytest.approx(-0.512 - 1.25 - 1.0 - 1.2 + 0.99 + 0.8 + 1.5, abs=1e-6)
    w = _per_action([0.4, 1.25, 2.0, 1.0, 0.9, 1.0, 0.5])
    torch.testing.assert_close(grad * 7, w * _per_action([0, -1, -0.5, -1.2, 1.1, 0, 0]), **TOL)


def test_prime_rl_dppo_in_bypass_mode(policy_batch):
    t = policy_batch.theta()
    loss, m = policy_loss(
        "dppo", t, policy_batch.lp_mu, policy_batch.advantages, policy_batch.mask, traj_index=policy_batch.traj_index, norm=policy_batch.norm(),
        cfg=LossConfig.preset("dppo"),
    )
    assert float(loss.detach()) == pytest.approx(-0.122698, abs=1e-6)
    assert float(m["actor/pg_clipfrac"]) == 0.0


def test_kl_term_adds_beta_times_reduced_k3(policy_batch):
    lp_ref = policy_batch.lp_old  # KL(π_θ‖π_ref) with π_ref = π_old: δ = log r
    cfg = LossConfig(eps_low=0.2, eps_high=0.28, dual_clip_c=3.0, kl_coef=0.1, kl_estimator="k3")
    loss, _, m = _run(policy_batch, cfg=cfg, reduction="token-mean", lp_ref=lp_ref)
    r = torch.tensor([1.5, 1.0, 0.5, 1.2, 1.1, 0.7, 4.0], dtype=F64)
    k3 = (1 / r + torch.log(r) - 1).mean()
    assert float(m["actor/ref_kl"]) == pytest.approx(float(k3), abs=1e-6)
    assert float(loss) == pytest.approx(0.92 / 7 + 0.1 * float(k3), abs=1e-6)


def test_rejected_tokens_keep_the_original_denominator(policy_batch):
    weights = _per_action([1, 1, 1, 1, 0, 0, 0])  # reject trajectory 1
    loss, _, m = _run(policy_batch, reduction="token-mean", weights=weights)
    assert float(loss) == pytest.approx((-1.28 - 1.0 - 0.5 - 1.2) / 7, abs=1e-6)
    assert float(m["actor/pg_clipfrac"]) == pytest.approx(2 / 7, abs=1e-6)  # metrics: pre-rejection mask


def test_2d_padded_input_equals_packed(policy_batch):
    norm = loss_normalizer(policy_batch.mask.view(2, 6), policy_batch.traj_index.view(2, 6), 2)
    t = policy_batch.theta().view(2, 6)
    loss, _ = policy_loss(
        "ppo", t, policy_batch.lp_old.view(2, 6), policy_batch.advantages.view(2, 6), policy_batch.mask.view(2, 6),
        traj_index=policy_batch.traj_index.view(2, 6), norm=norm, cfg=PPO,
    )
    assert float(loss.detach()) == pytest.approx(0.131429, abs=1e-6)


def test_unknown_names_are_refused(policy_batch):
    with pytest.raises(ValueError, match="unknown policy loss 'ppo2'"):
        _run(policy_batch, "ppo2")
    with pytest.raises(ValueError, match="unknown reduction 'mean'"):
        _run(policy_batch, reduction="mean")
    assert set(LOSS_SPECS) >= {"ppo", "gspo", "cispo"}
    assert set(REDUCTIONS) == {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"}


def test_float_mask_and_float32_inputs_as_the_batch_builder_produces(policy_batch):
    """The mini-batch builder stores loss_mask as float32 1.0/0.0; every entry point must accept it."""
    mask = policy_batch.mask.to(torch.float32)
    f32 = {k: getattr(policy_batch, k).to(torch.float32) for k in ("lp_theta", "lp_old", "lp_mu", "advantages")}
    norm = loss_normalizer(mask, policy_batch.traj_index, 2)
    corr = correction_weights(f32["lp_old"], f32["lp_mu"], mask, policy_batch.traj_index, 2, policy_batch.traj_advantages,
                              CorrectionConfig(token="tis", tis_cap=2.0, traj=("veto",)))
    t = f32["lp_theta"].clone().requires_grad_(True)
    loss, _ = policy_loss("ppo", t, f32["lp_old"], f32["advantages"], mask, traj_index=policy_batch.traj_index,
                          norm=norm, cfg=PPO, weights=corr.weights)
    loss.backward()
    assert loss.dtype == torch.float32
    assert float(loss.detach()) == pytest.approx(-0.096, abs=1e-5)
