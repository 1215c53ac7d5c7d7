"""Turn-level credit (docs/algorithms.md, "Turn-level credit"): per-turn advantages from per-turn rewards.

Outcome credit gives every action token of an episode the episode's group advantage. The two modes here give
each turn its own advantage, broadcast over that turn's action tokens:

- **turn**: the discounted return of turn t, G_t = Σ_{k≥t} γ^{k−t} r_k, normalised among the group's episodes
  that reached turn index t: A_t = (G_t − mean) / (std + ε) (or only centred, std=False).
- **gigpo** (GiGPO, Feng et al. 2025): A_t = A^E + ω · A^S_t. A^E is the episode's outcome advantage (the
  configured estimator); A^S_t normalises G_t within its *anchor group*: the turns, across the group's
  episodes, taken from the same state (identical observation tokens so far). A turn whose state no other
  episode of the group reached has A^S = 0.

Shared rules, as for the outcome estimators (advantages.py): a normalisation group whose returns are all
equal gives 0 (tested exactly), the std is Bessel-corrected, and a group of one gives 0 (it has no peer to
be compared with). Everything here is plain float64 arithmetic on per-trajectory lists; the batch broadcasts
the result to tokens.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence

CREDIT_MODES = ("outcome", "turn", "gigpo")


def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """G_t = Σ_{k≥t} γ^{k−t} r_k for every turn t of one episode."""
    out, running = [0.0] * len(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out


def _normalise(values: list[float], *, std: bool, eps: float) -> list[float]:
    """(v − mean) / (std + ε) over one normalisation group (mean only if not std); 0 for a group of one or of
    equal values."""
    n = len(values)
    if n < 2 or max(values) == min(values):
        return [0.0] * n
    mean = math.fsum(values) / n
    if not std:
        return [v - mean for v in values]
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    return [(v - mean) / (sd + eps) for v in values]


def _grouped(keys: list[list[Hashable]], values: list[list[float]], *, std: bool, eps: float) -> list[list[float]]:
    """Normalise values[i][t] among all (i, t) with the same keys[i][t]; same shape out."""
    members: dict[Hashable, list[tuple[int, int]]] = defaultdict(list)
    for i, row in enumerate(keys):
        for t, key in enumerate(row):
            members[key].append((i, t))
    out = [[0.0] * len(row) for row in values]
    for slots in members.values():
        for (i, t), a in zip(slots, _normalise([values[i][t] for i, t in slots], std=std, eps=eps), strict=True):
            out[i][t] = a
    return out


def turn_advantages(turn_rewards: list[list[float]], group_index: Sequence[int], *, gamma: float = 1.0,
                    std: bool = True, eps: float = 1e-6) -> list[list[float]]:
    """Per-turn advantages of `turn` credit: discounted returns normalised per (group, turn index).

    Args:
        turn_rewards: per trajectory, the reward of each of its turns (the episode's rewards by turn).
        group_index: group number of each trajectory (episodes of one task share it).
        gamma: discount γ of later turns' rewards.
        std: divide by the group's std (+ε) after centring.
        eps: ε of the std normaliser.

    Returns:
        Per trajectory, one advantage per turn.
    """
    returns = [discounted_returns(r, gamma) for r in turn_rewards]
    keys = [[(group_index[i], t) for t in range(len(r))] for i, r in enumerate(returns)]
    return _grouped(keys, returns, std=std, eps=eps)


def step_advantages(turn_rewards: list[list[float]], anchors: list[list[Hashable]], group_index: Sequence[int], *,
                    gamma: float = 1.0, std: bool = True, eps: float = 1e-6) -> list[list[float]]:
    """GiGPO's step advantages A^S: discounted returns normalised within anchor-state groups.

    Args:
        turn_rewards: per trajectory, the reward of each turn.
        anchors: per trajectory, a hashable key of the state each turn was taken from (equal keys = same state).
        group_index: group number per trajectory; anchor groups never span two groups.
        gamma, std, eps: as in `turn_advantages`.

    Returns:
        Per trajectory, one step advantage per turn (0 for a turn alone in its anchor group).
    """
    returns = [discounted_returns(r, gamma) for r in turn_rewards]
    for i, (a, r) in enumerate(zip(anchors, returns, strict=True)):
        if len(a) != len(r):
            raise ValueError(f"trajectory {i}: {len(a)} anchors for {len(r)} turns")
    keys = [[(group_index[i], key) for key in row] for i, row in enumerate(anchors)]
    return _grouped(keys, returns, std=std, eps=eps)


def gigpo_advantages(episode_advantages: Sequence[float], turn_rewards: list[list[float]],
                     anchors: list[list[Hashable]], group_index: Sequence[int], *, step_weight: float = 1.0,
                     gamma: float = 1.0, std: bool = True, eps: float = 1e-6) -> list[list[float]]:
    """A_t = A^E_i + step_weight · A^S_t per turn (GiGPO), A^E the episode's outcome advantage."""
    steps = step_advantages(turn_rewards, anchors, group_index, gamma=gamma, std=std, eps=eps)
    return [[float(episode_advantages[i]) + step_weight * s for s in row] for i, row in enumerate(steps)]
