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

from agentrl.algo.defaults import CREDIT_MODES  # noqa: F401 (the credit modes this module implements)
from agentrl.types import Trajectory


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


def turn_rewards(traj: Trajectory, total: float, *, format_reward: float = 0.0) -> list[float]:
    """r_t of each turn of an episode whose shaped outcome reward is `total`: the env's reward for that step plus
    its share of the format term (format_reward / turns if its action parsed), and on the last turn whatever
    else makes up `total` (a final grade that replaced the step rewards, overlong shaping), so Σ_t r_t = total.
    Turn-level credit with γ = 1 thus starts every episode from its outcome reward."""
    turns = traj.turns
    if not turns:
        return []
    share = format_reward / len(turns)
    out = [t.reward + (0.0 if t.format_error else share) for t in turns]
    out[-1] += total - math.fsum(out)
    return out


def anchor_states(traj: Trajectory) -> list[tuple[int, ...]]:
    """The state each turn was taken from, as GiGPO's anchor key: the prompt's tokens and every observation's
    tokens so far (the actions excluded: two episodes that reached the same observations share the state)."""
    keys, state = [], ()
    for k, turn in enumerate(traj.turns):
        if k == 0:
            state = tuple(traj.segments[turn.segment].token_ids[: turn.action_span[0]])
        else:
            prev = traj.turns[k - 1]
            s, e = prev.observation_span
            state = state + tuple(traj.segments[prev.segment].token_ids[s:e])
        keys.append(state)
    return keys


def credit_advantages(algo, trajs: list[Trajectory], totals: Sequence[float], group_index: Sequence[int],
                      episode_advantages: Sequence[float]) -> tuple[list[list[float]], dict[str, float]]:
    """Per-turn advantages of every trajectory under algo.credit (turn or gigpo), and their metrics.

    Args:
        algo: the run config's algo section (credit, turn_gamma, step_weight, credit_std, adv_eps, format_reward).
        trajs: the trajectories trained on; totals: their shaped outcome rewards; group_index: their groups.
        episode_advantages: their outcome advantages (the configured estimator), GiGPO's episode term.
    """
    rewards = [turn_rewards(t, total, format_reward=algo.format_reward) for t, total in zip(trajs, totals, strict=True)]
    common = dict(gamma=algo.turn_gamma, std=algo.credit_std, eps=algo.adv_eps)
    metrics: dict[str, float] = {}
    if algo.credit == "turn":
        adv = turn_advantages(rewards, group_index, **common)
    elif algo.credit == "gigpo":
        anchors = [anchor_states(t) for t in trajs]
        adv = gigpo_advantages(episode_advantages, rewards, anchors, group_index, step_weight=algo.step_weight,
                               **common)
        metrics.update(_anchor_metrics(anchors, group_index))
    else:
        raise ValueError(f"credit_advantages is for turn-level credit, not {algo.credit!r}")
    flat_r = [x for row in rewards for x in row]
    flat_a = [x for row in adv for x in row]
    if flat_r:
        metrics["credit/turn_reward_mean"] = math.fsum(flat_r) / len(flat_r)
        metrics["credit/turn_advantage_mean"] = math.fsum(flat_a) / len(flat_a)
        metrics["credit/turn_advantage_abs_mean"] = math.fsum(abs(x) for x in flat_a) / len(flat_a)
    return adv, metrics


def _anchor_metrics(anchors: list[list[Hashable]], group_index: Sequence[int]) -> dict[str, float]:
    """Mean anchor-group size and the share of turns alone in theirs (those get no step advantage)."""
    sizes: dict[Hashable, int] = defaultdict(int)
    for i, row in enumerate(anchors):
        for key in row:
            sizes[(group_index[i], key)] += 1
    turns = sum(sizes.values())
    if not turns:
        return {}
    return {"credit/anchor_group_size_mean": turns / len(sizes),
            "credit/singleton_turn_share": sum(n == 1 for n in sizes.values()) / turns}
