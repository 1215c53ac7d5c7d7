"""The update entry (train_on_batch) on real rollouts of the tiny model: π_old taken from the training forward
in the on-policy case, PPO mini-batches × epochs, micro-batch invariance, π_ref, and config refusals."""

from __future__ import annotations

import asyncio
import copy
import dataclasses

import pytest
import torch

import agentrl
from agentrl.config import load_config
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.errors import ConfigError
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.batch import build_minibatch, microbatches, slice_trajectories, trajectory_local
from agentrl.trainer.pipeline import collect_step
from agentrl.trainer.update import split_trajectories, train_on_batch, train_on_minibatch, update_config_from
from agentrl.types import user


class LengthParityEnv(agentrl.AgentEnv):
    """One turn: reward 1 if the reply has an even number of characters (the tiny model gets both outcomes)."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return [user(f"Say anything ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        return [], float(len(action) % 2 == 0), True, False, {}


agentrl.register("test_update_parity", LengthParityEnv, description="test env with reward variance")


def _cfg(tmp_path, *overrides):
    return load_config(None, overrides=[
        "env.name=test_update_parity", "model.name=tiny", "rollout.tasks_per_step=3", "rollout.group_size=4",
        "rollout.max_new_tokens=12", "rollout.max_context_tokens=256", "rollout.max_turns=1",
        "rollout.dynamic_sampling=false", "trainer.steps=1", f"trainer.run_dir={tmp_path / 'run'}",
        "trainer.tensorboard=false", "trainer.lr=1e-3", *overrides,
    ])


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    cfg = _cfg(tmp_path_factory.mktemp("update"))
    tok = load_tokenizer("tiny")

    async def go():
        engine = EmbeddedEngine(load_model("tiny"), tok, seed=0)
        try:
            return await collect_step(cfg, lambda: agentrl.make(cfg.env.name), engine, tok, 0)
        finally:
            await engine.close()

    b = asyncio.run(go())
    assert len(b.trajectories) == 12 and any(a > 0 for a in b.advantages) and any(a < 0 for a in b.advantages)
    return b


@pytest.fixture(scope="module")
def two_segment_batch(batch):
    """Pairs of trajectories merged into one trajectory of two segments (as a non-append-only template
    makes): a small micro-batch budget then splits trajectories across micro-batches."""
    trajs = [dataclasses.replace(a, segments=a.segments + b.segments)
             for a, b in zip(batch.trajectories[::2], batch.trajectories[1::2], strict=True)]
    return dataclasses.replace(batch, trajectories=trajs, advantages=batch.advantages[::2])


def _train(batch, ucfg, *, version=0, lr=1.0, ref_model=None):
    model = load_model("tiny")
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    metrics = train_on_batch(model, opt, batch, ucfg, version=version, ref_model=ref_model)
    return metrics, model.state_dict()


def _assert_same_weights(a, b, atol):
    for (name, x), y in zip(a.items(), b.values(), strict=True):
        torch.testing.assert_close(x, y, atol=atol, rtol=0, msg=name)


@pytest.mark.slow
def test_on_policy_step_takes_pi_old_from_the_training_forward(batch, tmp_path):
    """One optimizer step on current-version tokens skips the π_old recompute and still makes the same update
    as the recompute path (forced here by labelling the tokens stale) — r = 1, so nothing is clipped."""
    ucfg = update_config_from(_cfg(tmp_path))
    fast, w_fast = _train(batch, ucfg, version=0)
    slow, w_slow = _train(batch, ucfg, version=1)  # every token one version old: π_old must be recomputed
    assert fast["trainer/pi_old_recomputed"] == 0.0 and slow["trainer/pi_old_recomputed"] == 1.0
    assert fast["actor/pg_clipfrac"] == 0.0 and fast["actor/ppo_kl"] == 0.0
    assert fast["mismatch/logprob_abs_diff_max"] < 1e-4  # π_old from the training forward vs the engine's μ
    assert abs(fast["mismatch/logprob_abs_diff"] - slow["mismatch/logprob_abs_diff"]) < 1e-5
    _assert_same_weights(w_fast, w_slow, atol=1e-5)


@pytest.mark.slow
def test_several_epochs_clip_and_one_epoch_does_not(batch, tmp_path):
    """With ppo_epochs > 1 the later steps see π_θ ≠ π_old, so PPO clipping engages (it never does with one
    step per batch); π_old is recomputed once and every step is counted."""
    one, _ = _train(batch, update_config_from(_cfg(tmp_path)), lr=1e-3)
    assert one["actor/pg_clipfrac"] == 0.0 and one["trainer/optimizer_steps"] == 1
    ucfg = update_config_from(_cfg(tmp_path, "trainer.ppo_epochs=2", "trainer.mini_batches=2"))
    many, _ = _train(batch, ucfg, lr=0.5)
    assert many["trainer/optimizer_steps"] == 4 and many["trainer/pi_old_recomputed"] == 1.0
    assert many["actor/pg_clipfrac"] > 0.0
    assert many["actor/ppo_kl"] != 0.0


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["ppo", "gspo"])
@pytest.mark.parametrize("steps", [1, 2])
def test_micro_batch_split_does_not_change_the_update(two_segment_batch, tmp_path, loss, steps):
    """One step, or mini-batches × epochs, with a micro-batch budget that splits trajectories give the same
    weights as one micro-batch per mini-batch (global denominators; trajectory decisions and GSPO's
    trajectory ratio computed across the split)."""
    batch = two_segment_batch
    mb = build_minibatch(batch.trajectories, batch.advantages)
    assert not trajectory_local(mb, microbatches(mb, 64))
    results = []
    for budget in (64, 10_000):
        # the small budget splits trajectories only when every row counts in full (with trainer.share_prefix a
        # group's prompt counts once and both segments of a trajectory fit); the big one shares prompts
        cfg = _cfg(tmp_path, f"algo.loss={loss}", f"trainer.ppo_epochs={steps}",
                   f"trainer.micro_batch_tokens={budget}", f"trainer.share_prefix={budget > 64}")
        m, w = _train(batch, update_config_from(cfg), lr=0.1)
        results.append((m, w))
    (small, w_small), (big, w_big) = results
    if steps == 1:  # split trajectories: the recompute path; whole ones: π_old from the training forward
        assert small["trainer/pi_old_recomputed"] == 1.0 and big["trainer/pi_old_recomputed"] == 0.0
    assert small["trainer/micro_batches"] > big["trainer/micro_batches"]
    for key in ("actor/pg_loss", "actor/pg_clipfrac", "actor/grad_norm"):
        assert small[key] == pytest.approx(big[key], abs=1e-5), key
    _assert_same_weights(w_small, w_big, atol=1e-5)


@pytest.mark.slow
def test_reference_logprobs_are_computed_inside_the_update(batch, tmp_path):
    """π_ref comes from ref_model inside train_on_batch: a reference identical to the policy has KL 0 at the
    step; a different one does not."""
    ucfg = update_config_from(_cfg(tmp_path, "algo.kl_coef=0.1"))
    same, _ = _train(batch, ucfg, ref_model=load_model("tiny"))
    assert same["actor/ref_kl"] == pytest.approx(0.0, abs=1e-6)
    other = load_model("tiny")
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(1.5)
    far, _ = _train(batch, ucfg, ref_model=other)
    assert far["actor/ref_kl"] > 1e-3


@pytest.mark.slow
def test_train_on_batch_equals_the_packed_entry(batch, tmp_path):
    ucfg = update_config_from(_cfg(tmp_path))
    _, w_batch = _train(batch, ucfg)
    model = load_model("tiny")
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    train_on_minibatch(model, opt, build_minibatch(batch.trajectories, batch.advantages), ucfg, current_version=0,
                       traj_advantages=torch.tensor(batch.advantages))
    _assert_same_weights(w_batch, model.state_dict(), atol=0)


def test_mini_batches_are_contiguous_trajectory_slices(batch):
    mb = build_minibatch(batch.trajectories, batch.advantages)
    assert split_trajectories(12, 5) == [(0, 2), (2, 5), (5, 7), (7, 10), (10, 12)]
    assert split_trajectories(2, 5) == [(0, 1), (1, 2)]
    pieces = [slice_trajectories(mb, lo, hi) for lo, hi in split_trajectories(12, 3)]
    assert pieces[0][1] == 0 and pieces[-1][2] == mb.num_tokens
    assert all(a[2] == b[1] for a, b in zip(pieces, pieces[1:], strict=False))
    for part, s, e in pieces:
        assert torch.equal(part.input_ids, mb.input_ids[s:e]) and part.traj_index.min() == 0
        assert part.num_trajectories == 4 and part.segment_bounds[0][0] == 0
    assert trajectory_local(mb, microbatches(mb, 10_000)) and trajectory_local(mb, microbatches(mb, 64))


def test_gspo_with_token_mean_is_refused_at_config_load(tmp_path):
    with pytest.raises(ConfigError) as e:
        _cfg(tmp_path, "algo.loss=gspo", "algo.reduction=token-mean")
    assert "algo.loss=gspo" in str(e.value) and "algo.reduction=seq-mean-token-mean" in str(e.value)
    _cfg(tmp_path, "algo.loss=gspo", "algo.reduction=seq-mean-token-mean")  # the one it needs is accepted


def test_trainer_dataclass_defaults_agree_with_the_config():
    """The math-level dataclasses' defaults are the run config's algo defaults (corrections reads them from the
    config; losses states them, as the config imports it): a run built from defaults sees the same values."""
    from agentrl.algo.corrections import CorrectionConfig
    from agentrl.algo.losses import LossConfig
    from agentrl.config import AlgoConfig

    a, c, lc = AlgoConfig(), CorrectionConfig(), LossConfig()
    assert (c.token, c.tis_cap, c.mis_band, c.traj, c.veto_floor) == (
        a.correction, a.tis_cap, tuple(a.mis_band), tuple(a.trust_region), a.veto_floor)
    assert (lc.dual_clip_c, lc.kl_coef, lc.kl_estimator) == (a.dual_clip_c, a.kl_coef, a.kl_estimator)
    ucfg_default = update_config_from(load_config(None, overrides=[]))
    assert ucfg_default.correction == c and ucfg_default.loss_cfg == lc


def test_shared_engine_view_trains_in_place(batch):
    """engine_view(share_weights=True) holds the trainer's tensors (no copy) with its own train/eval flag."""
    from agentrl.engine.embedded import engine_view, shares_weights

    model = load_model("tiny").train()
    view = engine_view(model, share_weights=True)
    assert shares_weights(view, model) and model.training and not view.training
    copied = engine_view(model, share_weights=False)
    assert not shares_weights(copied, model)
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    assert torch.equal(next(view.parameters()), next(model.parameters()))
    assert not torch.equal(next(copied.parameters()), next(model.parameters()))


def test_bfloat16_optimizer_state_tracks_fp32_adamw_and_survives_a_checkpoint():
    """trainer.optimizer_state=bfloat16: moments stored in bf16 (half the bytes), updates within bf16 rounding
    of torch's AdamW, and a state_dict round trip (which casts states to the parameter dtype) keeps bf16."""
    from agentrl.trainer.memory import LowPrecisionAdamW, build_optimizer

    cfg = load_config(None, overrides=["trainer.optimizer_state=bfloat16", "trainer.lr=1e-2"])
    torch.manual_seed(0)
    ref = torch.nn.Linear(16, 8)
    low = copy.deepcopy(ref)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.0)
    opt_low = build_optimizer(low, cfg.trainer)
    assert isinstance(opt_low, LowPrecisionAdamW)
    x = torch.randn(32, 16)
    for _ in range(5):
        for model, opt in ((ref, opt_ref), (low, opt_low)):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
    for a, b in zip(ref.parameters(), low.parameters(), strict=True):
        assert (a - b).abs().max() < 1e-3  # 5 steps of size ≈ lr = 1e-2 each: within 2% of one step
        assert not torch.equal(a, b)  # the rounding is real, not a disguised fp32 AdamW
    states = [s for s in opt_low.state.values()]
    assert all(s["exp_avg"].dtype == torch.bfloat16 and s["exp_avg_sq"].dtype == torch.bfloat16 for s in states)
    reloaded = build_optimizer(low, cfg.trainer)
    reloaded.load_state_dict(opt_low.state_dict())
    reloaded.zero_grad()
    low(x).pow(2).mean().backward()
    reloaded.step()
    assert all(s["exp_avg"].dtype == torch.bfloat16 for s in reloaded.state.values())
    assert isinstance(build_optimizer(low, load_config(None, overrides=[]).trainer), torch.optim.AdamW)
