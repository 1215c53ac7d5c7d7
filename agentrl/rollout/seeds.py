"""Every seed of an episode, in one leaf module: which task it runs and what its samples draw.

    task seed      task_seed(rollout.seed, step, round, slot)      training: slot j of a step, resample round k
                   warm_start_seed(rollout.seed, i)                the expert warm start's i-th task
                   heldout_seed(rollout.seed, i)                   held-out evaluation's i-th task (agentrl eval)
                   name_seed(task id)                              a task named by id (swe_lite's instance ids)
    sampling seed  member_sampling_seed(task seed, member, attempt[, salt])  member m of a group (an eval's
                   sample m); a replayed task's group adds its replay count as salt
    turn seed      turn_seed(sampling seed, turn)                  the engine's seed for one turn

The three task namespaces (training steps ≥ 0, warm start −1, held-out −2) never overlap, so no held-out task
is trained on. Every path (sync and overlapped training, the Ray workers, evaluation) draws from here, so a
task seed gives the same samples wherever and whenever it runs.
"""

from __future__ import annotations

import hashlib

WARM_START_STEP = -1
"""Task-seed namespace of the expert warm start."""
HELDOUT_STEP = -2
"""Task-seed namespace of held-out tasks (disjoint from training and warm-start seeds)."""
WARM_START_OFFSET = 7919
"""Added to the base seed of warm-start tasks (kept so existing runs draw the same demonstrations)."""


def _hash31(text: str) -> int:
    """A stable 31-bit hash of `text` (sha256; the same on every machine and Python version)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little") & 0x7FFFFFFF


def task_seed(base: int, step: int, round_: int, slot: int) -> int:
    """A stable 31-bit seed for task `slot` of resample round `round_` at `step`."""
    return _hash31(f"{base}/{step}/{round_}/{slot}")


def warm_start_seed(base: int, index: int) -> int:
    """The task seed of the warm start's `index`-th expert episode."""
    return task_seed(base + WARM_START_OFFSET, WARM_START_STEP, 0, index)


def heldout_seed(base: int, index: int) -> int:
    """The task seed of held-out task `index` (the training loop's held-out eval and `agentrl eval`)."""
    return task_seed(base, HELDOUT_STEP, 0, index)


def name_seed(name: str) -> int:
    """A stable 31-bit seed for a task named by id rather than drawn from a seed."""
    return _hash31(f"task/{name}")


def member_sampling_seed(seed: int | None, member: int, attempt: int, salt: int = 0) -> int | None:
    """The sampling seed of attempt `attempt` of group member `member` on task `seed` (None without a task
    seed): members differ, and a rerun of the same task seed (on any worker) reproduces the same samples.
    A salt > 0 (a replayed task's replay count) gives the same task other samples; salt 0 is the plain seed."""
    if seed is None:
        return None
    if salt:
        seed = _hash31(f"{seed}/salt/{salt}")
    return (seed * 65_537 + member * 257 + attempt) & 0x7FFFFFFF


def turn_seed(sampling_seed: int, turn: int) -> int:
    """The sampling seed of one turn: a stable 31-bit mix of the episode's seed and the turn number."""
    return (sampling_seed * 1_000_003 + turn * 7_919 + 1) & 0x7FFFFFFF
