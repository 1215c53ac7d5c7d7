"""Planning the shared-prefix forward (agentrl.trainer.prefix) on token lists alone: which rows of a micro-batch
share a prompt worth computing once, and what a block of rows then costs. No model, no torch kernels: batch.py
plans its micro-batches with these, and prefix.py runs the forward they plan.
"""

from __future__ import annotations

from torch import Tensor

MIN_PREFIX = 32
"""Shortest prefix worth sharing (a judgement, not measured): a shorter one skips too few tokens to pay for the
extra forward and the explicit suffix mask."""


def plan_shared_prefixes(input_ids: Tensor, lengths: list[int], min_prefix: int = MIN_PREFIX,
                         ) -> list[tuple[list[int], int]]:
    """Groups of rows (row indices, shared prefix length K) of a right-padded (R, L) block, K ≥ min_prefix.

    Among groupings into contiguous runs of the rows sorted by tokens, the one that skips the most prefix tokens
    (Σ (n−1)·K); rows in no group are left out (they take the plain path)."""
    return _plan([input_ids[r, :n].tolist() for r, n in enumerate(lengths)], min_prefix)


def _plan(rows: list[list[int]], min_prefix: int) -> list[tuple[list[int], int]]:
    """plan_shared_prefixes on token lists."""
    order = sorted(range(len(rows)), key=lambda r: rows[r])
    lcp = [_lcp(rows[a], rows[b]) for a, b in zip(order[:-1], order[1:], strict=True)]

    def best(i: int, j: int) -> tuple[int, list[tuple[list[int], int]]]:  # sorted rows i..j-1
        if j - i < 2:
            return 0, []
        cut = min(range(i, j - 1), key=lambda k: lcp[k])
        k = lcp[cut]
        left, right = best(i, cut + 1), best(cut + 1, j)
        split = (left[0] + right[0], left[1] + right[1])
        if k >= min_prefix and (j - i - 1) * k >= split[0]:
            return (j - i - 1) * k, [(sorted(order[i:j]), k)]
        return split

    return best(0, len(rows))[1]


def _lcp(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists (binary search over C-speed slice compares)."""
    lo, hi = 0, min(len(a), len(b))  # a[:lo] == b[:lo]; the answer is ≤ hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shared_cost(rows: list[list[int]], min_prefix: int = MIN_PREFIX) -> int:
    """Positions the forward of these rows computes (padding included): rows × longest on the plain path; with
    shared prefixes the padded areas of the lone-row, prefix and suffix forwards."""
    if not rows:
        return 0
    groups = _plan(rows, min_prefix)
    if not groups:
        return len(rows) * max(map(len, rows))
    grouped = {r for members, _ in groups for r in members}
    lone = [len(t) for r, t in enumerate(rows) if r not in grouped]
    tails = [len(rows[r]) - k for members, k in groups for r in members if len(rows[r]) > k]
    return (len(lone) * max(lone, default=0) + len(groups) * max(k for _, k in groups)
            + len(tails) * max(tails, default=0))


def plan_shared_rows(input_ids: Tensor, segment_bounds: list[tuple[int, int]], token_budget: int,
                     min_prefix: int = MIN_PREFIX) -> list[tuple[int, int]]:
    """batch.plan_rows with the budget counting the positions the shared-prefix forward computes (shared_cost):
    a GRPO group whose rows would not fit the budget in full fits once its prompt counts once. Greedy and
    contiguous like plan_rows (a segment over the budget gets a block of its own)."""
    plans: list[tuple[int, int]] = []
    block: list[list[int]] = []
    start = end = None
    for s, e in segment_bounds:
        tokens = input_ids[s:e].tolist()
        if block and shared_cost(block + [tokens], min_prefix) > token_budget:
            plans.append((start, end))
            block = []
        if not block:
            start = s
        block.append(tokens)
        end = e
    if block:
        plans.append((start, end))
    return plans
