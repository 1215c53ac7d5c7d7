"""Difficulty levels of a swe_lite task, rendered from one mutation, and the curriculum that moves between them.

    level 0  the issue text, plus the file, the faulty function (internal ones too) and its source quoted, and
             the faulty line named and quoted; offered only for tasks whose fix is a one-line edit (one line
             replaced by one line in place: a swap of two lines is not one)
    level 1  the issue text as generated (reproduction, failing call, expected vs actual)
    level 2  the symptom only: the issue text without any code block, so nothing can be run as is

`Task.difficulty` is the same notion: the lowest level a task is offered at (0 for a one-line fix, else 1),
derived from the gold patch, so it also holds for your own SWE-bench-style tasks. Where the fix lies (file,
function, lines) is read from the task's `mutation` record when it has those fields and computed from the
gold patch and the snapshot otherwise.
"""

from __future__ import annotations

import ast
import difflib
import re
import threading
from collections import deque
from dataclasses import dataclass

from agentrl import safe_ast

LEVELS = (0, 1, 2)
AUTO = "auto"
_CODE_BLOCK = re.compile(r"\n*```[^\n]*\n.*?```\n*", re.DOTALL)
_INLINE = re.compile(r"`([^`\n]+)`")
_BLOCK_INTRO = re.compile(r"(To reproduce|Minimal example|Running this snippet|Example|Reproduction)[^\n]*:\s*$")


class LevelError(ValueError):
    """A level that does not exist, or a task that cannot be shown at the level asked for."""


@dataclass(frozen=True)
class FixSite:
    """Where the gold patch changes the buggy snapshot: file, enclosing function and its line span (1-based)."""

    path: str
    qualname: str  # "" at module level
    start: int  # first line of the function (decorators included), or of the change at module level
    end: int
    changed: tuple[int, ...]  # buggy-file lines the fix replaces or deletes; an insertion names the line before it
    removed: tuple[str, ...]  # the buggy lines the fix takes out
    added: tuple[str, ...]  # the lines the fix puts in

    @property
    def one_line(self) -> bool:
        """True when the fix replaces exactly one line by one line in place (a moved line is two edits)."""
        return len(self.removed) == 1 and len(self.added) == 1 and len(self.changed) == 1


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualname, node) of every function in a module, methods and nested functions included."""
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                yield name, node
            yield from _functions(node, name + ".")


def _span(node: ast.AST) -> tuple[int, int]:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first, node.end_lineno or node.lineno


def fix_site(task) -> FixSite | None:
    """The first file the gold patch changes and the innermost function holding the change (None: no patch)."""
    buggy, fixed = task.files, task.fixed_files()
    changed = sorted(p for p in set(buggy) | set(fixed) if buggy.get(p) != fixed.get(p))
    path = next((p for p in changed if p in buggy and p in fixed), None)
    if path is None:
        return None
    a, b = buggy[path].splitlines(), fixed[path].splitlines()
    ops = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    removed = tuple(line for _, i1, i2, _, _ in ops for line in a[i1:i2])
    added = tuple(line for _, _, _, j1, j2 in ops for line in b[j1:j2])
    lines = tuple(sorted({n + 1 for _, i1, i2, _, _ in ops for n in (range(i1, i2) if i2 > i1 else [max(i1 - 1, 0)])}))
    qualname, start, end = "", lines[0], lines[-1]
    hint = str(task.mutation.get("function") or task.mutation.get("target", "")).split("::")[-1]
    try:
        funcs = list(_functions(safe_ast.parse(buggy[path])))
    except SyntaxError:
        funcs = []
    holding = [(name, *_span(node)) for name, node in funcs
               if _span(node)[0] <= lines[0] and lines[-1] <= _span(node)[1]]
    if holding:  # the innermost one, or the one the mutation record names
        named = [h for h in holding if h[0] == hint]
        qualname, start, end = named[0] if named else min(holding, key=lambda h: h[2] - h[1])
    return FixSite(path, qualname, start, end, lines, removed, added)


def min_level(task) -> int:
    """The lowest level `task` is offered at: 0 when its fix is a one-line edit of one file, else 1 (this is
    Task.difficulty). A fix over several files is never one line, though fix_site sees only the first file."""
    site = fix_site(task)
    fixed = task.fixed_files()
    files = [p for p in set(task.files) | set(fixed) if task.files.get(p) != fixed.get(p)]
    return 0 if site is not None and site.one_line and len(files) == 1 else 1


def check_level(level) -> int | str:
    """A level as given in config: 0, 1, 2 or "auto"; LevelError otherwise."""
    if level == AUTO:
        return AUTO
    try:
        value = int(level)
    except (TypeError, ValueError):
        value = None
    if value not in LEVELS or isinstance(level, bool) or (isinstance(level, float) and level != value):
        raise LevelError(f"env.kwargs.level must be 0, 1, 2 or 'auto', got {level!r}")
    return value


def _called(code: str) -> str | None:
    """The last function or method an inline code span calls (`Account(1).withdraw(-5)` → `withdraw`; also in an
    assignment or a statement: `cache = make(("a", 1))` → `make`)."""
    try:
        tree = safe_ast.parse(code.strip(), mode="exec")
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr | ast.Assign | ast.AnnAssign | ast.AugAssign):
        return None
    tree = tree.body[0].value
    if tree is None:
        return None
    calls = [n.func for n in ast.walk(tree) if isinstance(n, ast.Call)]
    names = [f.attr if isinstance(f, ast.Attribute) else f.id for f in calls if isinstance(f, ast.Attribute | ast.Name)]
    return names[0] if names else None  # ast.walk meets the outermost call first: the last one applied


def symptom_only(statement: str) -> str:
    """The statement without code blocks (and the lines that introduce them), and inline calls reduced to the
    name of the function called: what goes wrong, but nothing that runs as is."""
    text = _CODE_BLOCK.sub("\n\n", statement)
    text = "\n".join(line for line in text.splitlines() if not _BLOCK_INTRO.match(line.strip()))
    text = _INLINE.sub(lambda m: f"`{name}`" if (name := _called(m.group(1))) else m.group(0), text)
    text = re.sub(r"`([^`]*)`", lambda m: "another value" if "\n" in m.group(1) else m.group(0), text)  # a literal
    # quoted over several lines of the test would repeat them
    text = re.sub(r" \(assert [^\n]*\)(?=\.)", "", text)  # an assertion quoted as the error: it would run
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def render(task, level: int) -> str:
    """The issue text of `task` at `level` (LevelError when level 0 is asked of a task with a larger fix)."""
    statement = task.problem_statement.strip()
    if level == 1:
        return statement
    if level == 2:
        return symptom_only(statement)
    if level != 0:
        raise LevelError(f"unknown level {level!r}: choose one of 0, 1, 2")
    site = fix_site(task)
    if site is None or not site.one_line:
        raise LevelError(f"{task.instance_id}: level 0 needs a one-line fix (its Task.difficulty is {min_level(task)})")
    lines = task.files[site.path].splitlines()
    source = "\n".join(lines[site.start - 1: site.end])
    where = f"`{site.qualname}` in `{site.path}`" if site.qualname else f"`{site.path}`"
    (line,) = site.changed
    return (f"{statement}\n\nThe bug is in {where} (lines {site.start}-{site.end}):\n\n```python\n{source}\n```\n\n"
            f"Line {line} is wrong:\n\n```python\n{lines[line - 1]}\n```\n\nThe fix changes that one line.")


class Curriculum:
    """`level=auto`: start at `start`, promote when the resolved rate of the last `window` episodes at the
    current level reaches `threshold`. Thread-safe; one instance is shared by every env of a run."""

    def __init__(self, start: int = 0, *, threshold: float = 0.5, window: int = 16, top: int = 2):
        if not 0 < threshold <= 1 or window < 1:
            raise LevelError(f"curriculum threshold must be in (0, 1] and window ≥ 1, got {threshold}, {window}")
        self.level, self.top, self.threshold, self.window = check_level(start), top, threshold, window
        self._recent: deque[bool] = deque(maxlen=window)
        self._lock = threading.Lock()
        self.promotions: list[int] = []  # the levels promoted to, in order

    def record(self, level: int, resolved: bool) -> None:
        """Count one finished episode; outcomes of a level already left behind are ignored."""
        with self._lock:
            if level != self.level:
                return
            self._recent.append(bool(resolved))
            full = len(self._recent) == self.window
            if full and sum(self._recent) / self.window >= self.threshold and self.level < self.top:
                self.level += 1
                self._recent.clear()
                self.promotions.append(self.level)

    def rate(self) -> float:
        """Resolved rate over the recent window at the current level (0 before any episode)."""
        with self._lock:
            return sum(self._recent) / len(self._recent) if self._recent else 0.0
