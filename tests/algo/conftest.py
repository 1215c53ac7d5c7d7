"""The policy-loss fixture of docs/algorithms.md §10.3, packed as one flat row of 2 trajectories × 6 tokens.

Observation and padding positions carry deliberately wild values (lp_θ = −5, lp_old = −0.1, filler
behaviour logprob 0.0, advantages of ±1e3): any leak through the loss mask changes every number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch

from agentrl.algo.losses import LossNormalizer, loss_normalizer

F64 = torch.float64


@dataclass
class PolicyBatch:
    """§10.3 inputs, flat (12,), float64."""

    lp_theta: torch.Tensor
    lp_old: torch.Tensor
    lp_mu: torch.Tensor
    advantages: torch.Tensor
    mask: torch.Tensor
    traj_index: torch.Tensor
    traj_advantages: torch.Tensor
    num_traj: int

    def norm(self, loss_scale_factor: float | None = None) -> LossNormalizer:
        return loss_normalizer(self.mask, self.traj_index, self.num_traj, loss_scale_factor=loss_scale_factor)

    def theta(self) -> torch.Tensor:
        """A fresh leaf copy of lp_θ that requires grad."""
        return self.lp_theta.clone().requires_grad_(True)


def make_policy_batch(flip_advantages: bool = False) -> PolicyBatch:
    ln = math.log
    # per token: (m, A, p_old, r, w); None marks the wild obs/pad values set below.
    s0 = [(1, 1, 0.3, 1.5, 0.4), (1, 1, 0.5, 1.0, 1.25), (1, 1, 0.6, 0.5, 3.0), (1, 1, 0.5, 1.2, 1.0), None, None]
    s1 = [(1, -1, 0.5, 1.1, 0.9), "obs", "obs", (1, -1, 0.5, 0.7, 1.0), (1, -1, 0.2, 4.0, 0.5), None]
    lp_t, lp_o, lp_b, adv, mask = [], [], [], [], []
    for tok in s0 + s1:
        if tok is None:  # padding
            lp_t.append(0.0), lp_o.append(0.0), lp_b.append(0.0), adv.append(1e3), mask.append(0)
        elif tok == "obs":  # tool observation
            lp_t.append(-5.0), lp_o.append(-0.1), lp_b.append(0.0), adv.append(-1e3), mask.append(0)
        else:
            m, a, p_old, r, w = tok
            lp_o.append(ln(p_old))
            lp_t.append(ln(p_old) + ln(r))
            lp_b.append(ln(p_old) - ln(w))
            adv.append(float(-a if flip_advantages else a))
            mask.append(m)
    traj_adv = torch.tensor([-1.0, 1.0] if flip_advantages else [1.0, -1.0], dtype=F64)
    return PolicyBatch(
        lp_theta=torch.tensor(lp_t, dtype=F64),
        lp_old=torch.tensor(lp_o, dtype=F64),
        lp_mu=torch.tensor(lp_b, dtype=F64),
        advantages=torch.tensor(adv, dtype=F64),
        mask=torch.tensor(mask, dtype=torch.bool),
        traj_index=torch.tensor([0] * 6 + [1] * 6),
        traj_advantages=traj_adv,
        num_traj=2,
    )


@pytest.fixture
def policy_batch() -> PolicyBatch:
    return make_policy_batch()


@pytest.fixture
def flipped_policy_batch() -> PolicyBatch:
    return make_policy_batch(flip_advantages=True)
