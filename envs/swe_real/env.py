"""swe_real: fix a bug planted in a real PyPI package; graded by the package's own test suite.

Example task (isodate): "`parse_duration` gives a wrong result." plus the failing assertion from isodate's tests
→ find the planted bug in src/isodate/ → edit → run the package's tests → submit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentrl.envs.swe_lite.env import SweLiteEnv
from agentrl.envs.swe_lite.tasks import Task, TaskError, load_any
from agentrl.envs.swe_real.tasks import load_real


class SweRealEnv(SweLiteEnv):
    """swe_lite's tools, levels, grading and rewards on tasks from real packages (envs/swe_real/data/tasks.jsonl).

    ## Task
    A real package's repository (its source, its test suite minus the test files that catch the bug, its licence)
    with one or two planted bugs, and an issue text made from the failing test output. Real pytest suites are
    graded by the hardened in-process harness: every grade and info says `grading_mode: in_process`.
    ## Actions, Observations, Reward, Episode End
    As SweLiteEnv (bash, str_replace_editor, submit; reward 1 when every hidden F2P and P2P test passes).
    ## Arguments
    As SweLiteEnv; `tasks` defaults to the shipped swe_real tasks (the package cache must be set up:
    `python -m agentrl.envs.swe_real.packages`, which `make setup` runs).
    ## Version History
    v0: initial version (10 packages).
    """

    def __init__(self, tasks: list[Task] | str | Path | None = None, split: str | None = "train", *,
                 snapshots: str | Path | None = None, **kwargs: Any):
        if not isinstance(tasks, list):
            tasks = load_real(None, split) if tasks is None and snapshots is None else \
                _load_user(tasks, snapshots, split)
        if not tasks:
            raise TaskError(f"no swe_real tasks in split {split!r}")
        super().__init__(tasks, split, **kwargs)


def _load_user(tasks, snapshots, split) -> list[Task]:
    """A swe_real task file (records with `bug_patch`), or anything swe_lite's loader reads."""
    if tasks is not None and snapshots is None:
        from agentrl.envs.swe_lite.tasks import read_jsonl

        first = next(iter(read_jsonl(tasks)), {})
        if "bug_patch" in first:
            return load_real(tasks, split)
    return load_any(tasks, snapshots, split)
