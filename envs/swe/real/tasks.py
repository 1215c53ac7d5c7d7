"""swe_real's task file and its loader: SWE-bench records whose repositories come from the package cache.

A line of data/tasks.jsonl is a SWE-bench record (instance_id `<owner>__<repo>-<nnnn>`, repo, base_commit,
patch, problem_statement, FAIL_TO_PASS, PASS_TO_PASS, version = the package version, ...) plus:
    bug_patch     the planted bug as a diff against the clean package (the gold `patch` reversed)
    test_files    the package's test files that hold the F2P tests: hidden from the agent, added back at grading
    package       the pinned package (packages.json)
    sealed        every test file of the package that some task of the package hides: none of them is in the
                  snapshot (a task's snapshot holds no other task's hidden tests)
    grading_mode  "suite_judge": the package's suite runs in a judge sandbox, the repository in a worker
                  (grading/suite.py)
The package's own text (sources, tests) is not in the file: `load_real` rebuilds each task from the snapshot
that set-up unpacked (`snapshots/<owner>__<repo>/`), so the repository stays under its licence file.
`export` writes plain SWE-bench records plus one snapshot folder per task, which swe_lite's `load_swebench`
reads as it reads any SWE-bench-style set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from dataclasses import asdict
from pathlib import Path

from agentrl.envs.swe.patches import apply_patch, make_diff, tree_id
from agentrl.envs.swe.real.packages import load_packages, missing, snapshots_dir
from agentrl.envs.swe.tasks import (
    Task,
    TaskError,
    read_jsonl,
    read_snapshot,
    select_split,
    task_from_dict,
)

DEFAULT_TASKS = Path(__file__).parent / "data" / "tasks.jsonl"
GRADING_MODE = "suite_judge"
_STORED_ONLY = ("files", "test_patch", "difficulty")  # rebuilt (or re-derived) by the loader
_CACHE: dict[tuple, list[Task]] = {}
_SNAPSHOTS: dict[str, dict[str, str]] = {}
_LOCK = threading.Lock()


def hidden_files(task: Task) -> list[str]:
    """The test files a task's test_patch adds (the package's test files that hold its F2P and P2P tests)."""
    return sorted({t.split("::", 1)[0] for t in task.FAIL_TO_PASS + task.PASS_TO_PASS})


def record_of(task: Task) -> dict:
    """The JSONL record of a generated task: SWE-bench fields and ours, without the package's own text."""
    d = {k: v for k, v in asdict(task).items() if k not in _STORED_ONLY}
    hidden = hidden_files(task)
    fixed = task.fixed_files()
    d["bug_patch"] = make_diff(fixed, task.files)
    d["test_files"] = hidden
    pkg = next(p for p in load_packages() if p.repo == task.repo)
    d["package"] = pkg.name
    clean = _snapshot(pkg.slug)
    d["sealed"] = sorted(p for p in clean if p not in fixed and not p.startswith("."))
    d["grading_mode"] = GRADING_MODE
    return d


def write_records(tasks: list[Task], path: str | os.PathLike) -> None:
    """Write the tasks' records as JSONL, one line each in a stable field order (byte-for-byte regeneration)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for task in tasks:
            f.write(json.dumps(record_of(task), ensure_ascii=False) + "\n")


def _snapshot(slug: str) -> dict[str, str]:
    """The clean package repository `snapshots/<slug>/` as {path: text}, read once per process."""
    if slug not in _SNAPSHOTS:
        folder = snapshots_dir() / slug
        if not folder.is_dir():
            raise TaskError(f"no snapshot {folder}: run 'python -m agentrl.envs.swe.real.packages' (make setup does)")
        _SNAPSHOTS[slug] = {p: t for p, t in read_snapshot(folder).items() if not p.startswith(".")}
    return _SNAPSHOTS[slug]


def task_of(record: dict, where: str) -> Task:
    """A Task from one record and the package snapshot: the buggy files without the hidden test files, the
    test_patch that adds them back. TaskError when the snapshot does not give the recorded base_commit."""
    slug = str(record.get("repo", "")).replace("/", "__")
    snap = _snapshot(slug)
    hidden = list(record.get("test_files") or [])
    gone = [h for h in hidden if h not in snap]
    if gone:
        raise TaskError(f"{where}: the snapshot {slug} lacks the test file(s) {gone}")
    sealed = set(record.get("sealed") or hidden)
    clean = {p: t for p, t in snap.items() if p not in sealed}
    try:
        files = apply_patch(clean, record.get("bug_patch", ""))
    except Exception as e:
        raise TaskError(f"{where}: the bug does not apply to the snapshot {slug} ({e})") from e
    if record.get("base_commit") and tree_id(files) != record["base_commit"]:
        raise TaskError(f"{where}: the snapshot {slug} does not rebuild base_commit {record['base_commit']}: "
                        "the cache holds another version of the package; run "
                        "'python -m agentrl.envs.swe.real.packages'")
    test_patch = make_diff(files, {**files, **{h: snap[h] for h in hidden}})
    return task_from_dict({**record, "files": files, "test_patch": test_patch}, where)


def load_real(path: str | os.PathLike | None = None, split: str | None = None) -> list[Task]:
    """The swe_real tasks (default: the shipped file) of `split` (names joined by commas; None = all).

    Parsed once per file version and process; callers get a new list of shared Task objects (read-only)."""
    path = Path(path) if path else DEFAULT_TASKS
    if not path.is_file():
        raise TaskError(f"task file {path} does not exist")
    gone = missing()
    if gone:
        raise TaskError(f"the swe_real packages {', '.join(gone)} are not in the cache ({snapshots_dir()}): run "
                        "'python -m agentrl.envs.swe.real.packages' once (make setup does; it downloads ~1 MB)")
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = [task_of(r, f"{path}:{n}") for n, r in enumerate(read_jsonl(path), 1)]
        tasks = list(_CACHE[key])
    return select_split(tasks, split)


def export(out: str | os.PathLike, path: str | os.PathLike | None = None, split: str | None = None) -> int:
    """Write `out/tasks.jsonl` (SWE-bench records with test_patch) and `out/snapshots/<instance_id>/` (each
    task's buggy repository): what swe_lite's load_swebench reads. Returns the number of tasks written."""
    out = Path(out)
    tasks = load_real(path, split)
    (out / "snapshots").mkdir(parents=True, exist_ok=True)
    with open(out / "tasks.jsonl", "w", encoding="utf-8") as f:
        for task in tasks:
            record = {k: v for k, v in asdict(task).items() if k not in ("files", "difficulty")}
            f.write(json.dumps({**record, "grading_mode": GRADING_MODE}, ensure_ascii=False) + "\n")
            folder = out / "snapshots" / task.instance_id
            for rel, text in task.files.items():
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / rel).write_text(text, encoding="utf-8")
    return len(tasks)


def main(argv: list[str] | None = None) -> int:
    """CLI: export the tasks as SWE-bench records plus snapshot folders."""
    ap = argparse.ArgumentParser(prog="python -m agentrl.envs.swe.real.tasks", description=export.__doc__.split("\n")[0])
    ap.add_argument("--export", required=True, metavar="DIR", help="folder to write tasks.jsonl and snapshots/ into")
    ap.add_argument("--split", default=None, help="only these splits (train, dev, test; joined by commas)")
    args = ap.parse_args(argv)
    try:
        n = export(args.export, split=args.split)
    except TaskError as e:
        print(f"swe_real: {e}", file=sys.stderr)
        return 2
    print(f"wrote {n} tasks to {args.export}/tasks.jsonl and their snapshots to {args.export}/snapshots/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
