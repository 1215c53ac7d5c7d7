"""Where an SWE env's tasks come from: the built-in corpus, the real packages, or a JSONL of your own.

    corpus   swe_lite's tasks: bugs planted in small modules of envs/swe/lite/corpus (lite/data/tasks.jsonl)
    real     swe_real's tasks: bugs planted in pinned PyPI packages (real/data/tasks.jsonl plus the package cache
             that `python -m agentrl.envs.swe.real.packages` fills)
    a path   a JSONL of yours: swe_lite records (with `files`), swe_real records (with `bug_patch`), or SWE-bench
             records whose repositories come from `snapshots` (default: a `snapshots/` folder next to the file)

The presets differ only in their default source (swe_lite: corpus, swe_real: real); `env.kwargs.tasks` names
another one (a source name or a path).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentrl.envs.swe.real.tasks import load_real
from agentrl.envs.swe.tasks import Task, TaskError, load_any

SOURCES = ("corpus", "real")


def load(source: str | os.PathLike, snapshots: str | os.PathLike | None = None, split: str | None = None, *,
         snapshots_option: str = "env.kwargs.snapshots=DIR") -> list[Task]:
    """The tasks of `source` (a name in SOURCES or a JSONL path) in `split` (names joined by commas; None = all).

    `snapshots_option` is how the caller's user names the snapshot folder (in the error when none is found).
    """
    if str(source) in SOURCES:
        if str(source) == "real" and snapshots is None:
            return load_real(None, split)
        # the corpus; snapshots without a task file is an error that load_any words for the caller
        return load_any(None, snapshots, split, snapshots_option=snapshots_option)
    if snapshots is None and _real_records(Path(source)):
        return load_real(source, split)
    return load_any(source, snapshots, split, snapshots_option=snapshots_option)


def _real_records(path: Path) -> bool:
    """True for a swe_real task file (its first record carries `bug_patch`: the package text comes from the cache)."""
    if not path.is_file():
        raise TaskError(f"task file {path} does not exist (or name a source: {', '.join(SOURCES)})")
    with open(path, encoding="utf-8") as f:
        first = next((line for line in f if line.strip()), "")
    try:
        record = json.loads(first) if first else {}
    except json.JSONDecodeError:
        return False  # load_any names the line that does not parse
    return isinstance(record, dict) and "bug_patch" in record
