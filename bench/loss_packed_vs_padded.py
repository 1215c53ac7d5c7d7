"""Loss + backward time of agentrl's token-mean PPO on a packed batch vs a straightforward padded one.

Agentic trajectories vary widely in length, so a padded (B, T_max) batch spends most of its work on
padding. The padded baseline below is written here, the way one would write it without packing: the
same PPO-clip (clip-higher, dual-clip) with pg_clipfrac and ppo_kl, masked and divided by Σ m.
Prints both times and the ratio padded / packed (> 1 means packed is faster). CPU, float32, 1 thread.
"""

from __future__ import annotations

import time

import agentrl  # noqa: F401  # isort: skip  (first: sets OMP_WAIT_POLICY before torch loads libgomp)
import torch

from agentrl.algo.flat import broadcast_to_tokens
from agentrl.algo.losses import LossConfig, loss_normalizer, policy_loss

B, T_MIN, T_MAX, REPS = 32, 64, 4096, 20
CFG = LossConfig()


def make_batch(seed: int = 0):
    """B trajectories with log-uniform lengths; ~30% of each is observation tokens (mask 0)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.exp(torch.empty(B).uniform_(torch.log(torch.tensor(T_MIN)).item(),
                                                torch.log(torch.tensor(T_MAX)).item(), generator=g)).long()
    lengths[0] = T_MAX
    idx = torch.arange(B).repeat_interleave(lengths)  # (N,)
    n = idx.numel()
    mask = torch.rand(n, generator=g) > 0.3
    lp_old = -torch.rand(n, generator=g) * 3
    lp_theta = lp_old + (torch.rand(n, generator=g) - 0.5) * 0.6
    adv = broadcast_to_tokens(torch.randn(B, generator=g), idx)
    return lengths, idx, mask, lp_old, lp_theta, adv


def to_padded(lengths, *flat):
    """Scatter flat per-token tensors into (B, T_max) rows, zero padded."""
    t_max = int(lengths.max())
    rows = torch.arange(B).repeat_interleave(lengths)
    cols = torch.cat([torch.arange(int(n)) for n in lengths])
    out = []
    for x in flat:
        p = torch.zeros(B, t_max, dtype=x.dtype)
        p[rows, cols] = x
        out.append(p)
    return out


def padded_ppo(lp_theta, lp_old, adv, mask, eps_low, eps_high, c):
    """Textbook padded PPO-clip with dual-clip; (B, T) inputs, token-mean over the mask."""
    m = mask.float()
    ratio = torch.exp(torch.clamp(lp_theta - lp_old, -20, 20))  # (B, T)
    l1 = -adv * ratio
    l2 = -adv * torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    lc = torch.maximum(l1, l2)
    loss_tok = torch.where(adv < 0, torch.minimum(lc, -adv * c), lc)
    denom = m.sum()
    loss = (loss_tok * m).sum() / denom
    clipfrac = ((l2 > l1).float() * m).sum() / denom
    ppo_kl = ((lp_old - lp_theta) * m).sum() / denom
    return loss, {"clipfrac": clipfrac.detach(), "ppo_kl": ppo_kl.detach()}


def timeit(fn) -> float:
    """Median wall time of fn() over REPS runs after 3 warm-ups."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def main() -> None:
    torch.set_num_threads(1)
    lengths, idx, mask, lp_old, lp_theta, adv = make_batch()
    norm = loss_normalizer(mask, idx, B)
    p_theta, p_old, p_adv, p_mask = to_padded(lengths, lp_theta, lp_old, adv, mask)

    def packed_step():
        t = lp_theta.detach().requires_grad_(True)
        loss, _ = policy_loss("ppo", t, lp_old, adv, mask, traj_index=idx, norm=norm, cfg=CFG)
        loss.backward()
        return loss.detach()

    def padded_step():
        t = p_theta.detach().requires_grad_(True)
        loss, _ = padded_ppo(t, p_old, p_adv, p_mask, CFG.eps_low, CFG.eps_high, CFG.dual_clip_c)
        loss.backward()
        return loss.detach()

    a, b = packed_step(), padded_step()
    assert torch.allclose(a, b, atol=1e-5), f"packed {a} != padded {b}"
    t_packed, t_padded = timeit(packed_step), timeit(padded_step)
    n, padded = int(lengths.sum()), B * int(lengths.max())
    print(f"batch: {B} trajectories, {n} tokens packed vs {padded} padded ({padded / n:.2f}x), loss {float(a):.6f}")
    print(f"packed token-mean PPO loss+backward: {t_packed * 1e3:8.2f} ms")
    print(f"padded baseline loss+backward:       {t_padded * 1e3:8.2f} ms")
    print(f"ratio padded/packed: {t_padded / t_packed:.2f}x")


if __name__ == "__main__":
    main()
