"""The swe_lite task schema (SWE-bench field names plus self-contained extensions) and its loaders.

One task per JSONL line (docs/swe_lite.md, task schema). `files` holds the buggy snapshot *without* the
hidden tests; `test_patch` adds them at grading time. `load_tasks()` reads the shipped corpus;
`load_swebench()` reads SWE-bench-style JSONL (FAIL_TO_PASS / PASS_TO_PASS as lists or JSON strings) with
repository snapshots from a local directory, so users can bring their own tasks.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from agentrl.envs.swe.patches import apply_patch, tree_id

from agentrl.errors import AgentRLError

DATA_DIR = Path(__file__).parent / "lite" / "data"
DEFAULT_TASKS = DATA_DIR / "tasks.jsonl"
TEST_CMD = "python3 -m pytest -q -rA -p no:cacheprovider -o addopts="
SPLITS = ("train", "dev", "test")
SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".tox", ".venv", "node_modules"}


class TaskError(AgentRLError):
    """A task file or record is malformed, or a requested task/split does not exist."""


@dataclass
class Task:
    """One bug-fix task. Field names up to `environment_setup_commit` follow SWE-bench."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    patch: str
    test_patch: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    files: dict[str, str]
    """The buggy snapshot the agent starts from (hidden tests excluded)."""
    environment_setup_commit: str = ""
    version: str = "1"
    created_at: str = "2026-11-29T00:00:00Z"
    hints_text: str = ""
    test_cmd: str = TEST_CMD
    """Test command run from the repo root; the grader appends --junitxml and the node ids."""
    src_globs: list[str] = field(default_factory=lambda: ["*.py", "!tests/**", "!conftest.py"])
    """Paths the agent may change (fnmatch; `!` excludes). Tests, conftest.py and ini files never count."""
    mutation: dict[str, Any] = field(default_factory=dict)
    image: str = "python"
    """Sandbox image recipe name (agentrl.sandboxes.image)."""
    timeout_s: int = 60
    split: str = "train"
    difficulty: int = 1
    """The lowest level (levels.py) the task is offered at: 0 for a one-line fix, else 1. The loaders derive it
    from the gold patch, so it means the same for the shipped corpus and for your own tasks."""

    def snapshot(self, visibility: str = "hidden") -> dict[str, str]:
        """The files the agent sees: without the hidden tests, or with them (`visible`, an easier curriculum)."""
        if visibility == "hidden":
            return dict(self.files)
        if visibility == "visible":
            return apply_patch(self.files, self.test_patch)
        raise TaskError(f"visibility must be 'hidden' or 'visible', got {visibility!r}")

    def fixed_files(self) -> dict[str, str]:
        """The snapshot with the gold patch applied (what a correct fix looks like)."""
        return apply_patch(self.files, self.patch)

    def tree_id(self) -> str:
        """The git tree id of `files` (equals base_commit for generated tasks)."""
        return tree_id(self.files)

    def to_json(self) -> str:
        """One JSONL line."""
        return json.dumps(asdict(self), ensure_ascii=False)


def _as_list(value: Any, name: str, where: str) -> list[str]:
    """FAIL_TO_PASS / PASS_TO_PASS as a list, whether given as a list or as a JSON-encoded string (HF parquet)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as e:
            raise TaskError(f"{where}: {name} is a string but not JSON ({e})") from e
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(f"{where}: {name} must be a list of pytest node ids, got {type(value).__name__}")
    return value


def task_from_dict(d: dict[str, Any], where: str = "task") -> Task:
    """Build a Task from a dict, accepting SWE-bench's string-encoded test lists; unknown keys are ignored."""
    missing = [k for k in ("instance_id", "problem_statement", "FAIL_TO_PASS") if k not in d]
    if missing:
        raise TaskError(f"{where}: missing required field(s) {', '.join(missing)}")
    known = {f.name for f in fields(Task)}
    kwargs = {k: v for k, v in d.items() if k in known}
    kwargs["FAIL_TO_PASS"] = _as_list(d["FAIL_TO_PASS"], "FAIL_TO_PASS", where)
    kwargs["PASS_TO_PASS"] = _as_list(d.get("PASS_TO_PASS", []), "PASS_TO_PASS", where)
    kwargs.setdefault("repo", "")
    kwargs.setdefault("base_commit", "")
    kwargs.setdefault("patch", "")
    kwargs.setdefault("test_patch", "")
    kwargs.setdefault("files", {})
    if not kwargs["FAIL_TO_PASS"]:
        raise TaskError(f"{where}: FAIL_TO_PASS is empty, so nothing could tell a fix from no change")
    task = Task(**kwargs)
    if task.files:
        task.difficulty = _min_level(task, where)
    return task


def _min_level(task: Task, where: str) -> int:
    from agentrl.envs.swe.levels import min_level

    try:
        return min_level(task)
    except Exception as e:  # a gold patch that does not apply (or a snapshot it cannot be read in): name the task
        if task.patch.strip():
            raise TaskError(f"{where}: task {task.instance_id}: the gold patch does not apply to the snapshot "
                            f"({e})") from e
        return 1


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a JSONL file; TaskError names the line that fails to parse."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"task file {path} does not exist")
    records = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise TaskError(f"{path}:{n}: not valid JSON ({e})") from e
    return records


def load_tasks(path: str | os.PathLike | None = None, split: str | None = None) -> list[Task]:
    """Tasks from a swe_lite JSONL file (default: the shipped corpus), optionally only some splits ("dev,test")."""
    path = Path(path) if path else DEFAULT_TASKS
    tasks = [task_from_dict(r, f"{path}:{n}") for n, r in enumerate(read_jsonl(path), 1)]
    return select_split(tasks, split)


def _parsed(path: Path) -> list[Task] | None:
    """The tasks of a swe_lite JSONL (records carry `files`), parsed once per file version and shared.

    Training builds an env per episode, often in several threads at once: parsing and checking ~2 MB of
    tasks each time cost seconds and raced in CPython's ast. None when the records have no `files`.
    Callers get a new list (the Task objects are shared: envs treat them as read-only)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    with _LOAD_LOCK:
        if key not in _LOADED:
            records = read_jsonl(path)
            if not all(r.get("files") for r in records):
                return None
            _LOADED[key] = [task_from_dict(r, f"{path}:{n}") for n, r in enumerate(records, 1)]
        return list(_LOADED[key])


_LOADED: dict[tuple[str, int, int], list[Task]] = {}
_LOAD_LOCK = threading.Lock()


def select_split(tasks: list[Task], split: str | None) -> list[Task]:
    """The tasks of `split` (a name, or names joined by commas); None keeps all. Unknown names raise TaskError."""
    if split is None:
        return tasks
    wanted = [s.strip() for s in str(split).split(",") if s.strip()]
    known = {t.split for t in tasks}
    for name in wanted:
        if name not in known and name not in SPLITS:
            raise TaskError(f"unknown split {name!r}: choose one of {', '.join(sorted(known | set(SPLITS)))}")
    return [t for t in tasks if t.split in wanted]


def read_snapshot(directory: str | os.PathLike, max_file_bytes: int = 1 << 20) -> dict[str, str]:
    """Every UTF-8 text file under `directory` (no .git, caches or bytecode) as {relative path: text}."""
    base = Path(directory)
    files: dict[str, str] = {}
    for root, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(names):
            p = Path(root) / name
            if name.endswith((".pyc", ".pyo")) or p.is_symlink() or p.stat().st_size > max_file_bytes:
                continue
            try:
                files[p.relative_to(base).as_posix()] = p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return files


def load_swebench(path: str | os.PathLike, snapshots: str | os.PathLike, split: str = "test",
                  test_cmd: str | None = None) -> list[Task]:
    """SWE-bench-style JSONL plus a folder of repository snapshots at `base_commit`.

    The snapshot of a record is `snapshots/<instance_id>/` if it exists, else `snapshots/<repo with / as __>/`.
    Each record's `test_patch` is applied at grading time, and `patch` (if any) is the gold fix.
    """
    snapshots = Path(snapshots)
    if not snapshots.is_dir():
        raise TaskError(f"snapshot folder {snapshots} does not exist (looked for {snapshots.resolve()})")
    tasks = []
    cache: dict[Path, dict[str, str]] = {}
    for n, record in enumerate(read_jsonl(path), 1):
        where = f"{path}:{n}"
        task = task_from_dict({**record, "files": {}}, where)
        candidates = [snapshots / task.instance_id, snapshots / task.repo.replace("/", "__")]
        folder = next((c for c in candidates if c.is_dir()), None)
        if folder is None:
            raise TaskError(f"{where}: no snapshot for {task.instance_id}: looked for "
                            f"{' and '.join(str(c) for c in candidates)}")
        if folder not in cache:
            cache[folder] = read_snapshot(folder)
        task.files = dict(cache[folder])
        task.split = record.get("split", split)
        task.test_cmd = record.get("test_cmd") or test_cmd or TEST_CMD
        task.environment_setup_commit = task.environment_setup_commit or task.base_commit
        task.difficulty = _min_level(task, where)
        tasks.append(task)
    return tasks


def load_any(tasks: str | os.PathLike | None, snapshots: str | os.PathLike | None = None,
             split: str | None = None, *, snapshots_option: str = "env.kwargs.snapshots=DIR") -> list[Task]:
    """The loader of the env and of `agentrl eval`: the shipped corpus, a swe_lite JSONL (records carry `files`),
    or SWE-bench-style JSONL with repository snapshots in `snapshots` (default: a `snapshots/` folder next to the
    JSONL). `snapshots_option` is how the caller's user names the folder (in the error when none is found).

    SWE-bench records without a `split` field belong to every split asked for (give them one to hold some out).
    """
    if snapshots is None:
        path = Path(tasks) if tasks else DEFAULT_TASKS
        if not path.is_file():
            raise TaskError(f"task file {path} does not exist")
        parsed = _parsed(path)
        if parsed is not None:
            return select_split(parsed, split)
        records = read_jsonl(path)
        guess = path.resolve().parent / "snapshots"
        if not guess.is_dir():
            bare = next(r.get("instance_id", f"line {n}") for n, r in enumerate(records, 1) if not r.get("files"))
            raise TaskError(f"{path}: task {bare} has no `files`, and no snapshot folder was given: looked for "
                            f"{guess}; pass {snapshots_option} (DIR/<instance_id>/ or DIR/<owner>__<repo>/)")
        snapshots = guess
    if tasks is None:
        raise TaskError("env.kwargs.snapshots needs env.kwargs.tasks (the SWE-bench-style JSONL)")
    records = load_swebench(tasks, snapshots, split=(split or "train").split(",")[0])
    return select_split(records, split)


def write_tasks(tasks: list[Task], path: str | os.PathLike) -> None:
    """Write tasks as JSONL (one line each, stable field order) so regeneration is byte-identical."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for task in tasks:
            f.write(task.to_json() + "\n")
