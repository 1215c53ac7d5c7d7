"""The registries own the method names: an advantage estimator, a policy loss and a reduction added here, each
one function plus one registry line, are accepted by the config and train a step; unknown names are refused
naming the registry's entries."""

from __future__ import annotations

import json

import pytest
import torch

from agentrl.algo import advantages, losses
from agentrl.config import load_config
from agentrl.errors import ConfigError
from agentrl.trainer.loop import train
from tests.trainer.test_loop import _cfg


def sign_advantage(rewards, group_index, cfg=None, **_):
    """A = sign(R − group mean): a new estimator for this test."""
    n = torch.zeros(int(group_index.max()) + 1, dtype=rewards.dtype).index_add(0, group_index, torch.ones_like(rewards))
    total = torch.zeros_like(n).index_add(0, group_index, rewards)
    return torch.sign(rewards - (total / n)[group_index])


def reinforce(lp_theta, lp_old, advantages, mask, *, traj_index, norm, cfg, traj_log_ratio=None):
    """Plain REINFORCE, −A·lp_θ: a new loss for this test."""
    return losses.TokenLoss(loss=-advantages * lp_theta)


def token_sum(loss, traj_index, norm):
    """Σ m·ℓ, no normaliser: a new reduction for this test."""
    return loss.sum()


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(advantages.ADVANTAGES, "sign", sign_advantage)
    monkeypatch.setitem(losses.LOSS_SPECS, "reinforce", losses.LossSpec(reinforce, losses.LossConfig()))
    monkeypatch.setitem(losses.REDUCTIONS, "token-sum", token_sum)


def test_names_registered_in_a_test_module_configure_and_train_a_step(tmp_path, registered):
    cfg = _cfg(tmp_path, "test_parity", "rollout.dynamic_sampling=false", "algo.advantage=sign",
               "algo.loss=reinforce", "algo.reduction=token-sum")
    assert (cfg.algo.advantage, cfg.algo.loss, cfg.algo.reduction) == ("sign", "reinforce", "token-sum")
    result = train(cfg)
    row = json.loads(result.metrics.read_text().splitlines()[0])
    assert row["rollout/advantage_abs_mean"] in (0.0, 1.0) or 0 < row["rollout/advantage_abs_mean"] <= 1.0
    assert row["actor/grad_norm"] > 0


def test_unregistered_names_are_refused_listing_what_is_registered(registered):
    with pytest.raises(ConfigError) as e:
        load_config(None, overrides=["algo.advantage=sgn", "algo.loss=reinforc"])
    message = str(e.value)
    assert "algo.advantage='sgn': not a registered advantage estimator (registered: grpo," in message
    assert "sign" in message and "reinforce" in message
    assert "Value error" not in message
