"""`str_replace_editor`: view, create, str_replace, insert and undo_edit with SWE-agent semantics.

It runs host-side over a small file API (SandboxFiles: the sandbox's read_file/write_file plus one exec for
listings and symlink checks), so it needs no Python in the sandbox and has no quoting bugs. Paths may be
relative to the repo or absolute under it; `..` and symlinks that leave the repo are refused. Errors come
back as text for the agent ("Error: ..."), never as exceptions.
"""

from __future__ import annotations

import inspect
import posixpath
import shlex
from typing import Protocol

from agentrl.envs.swe.observation import clip

SNIPPET_LINES = 4
COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")


class EditorError(Exception):
    """A command the agent got wrong; its message is shown to the agent."""


class FileAPI(Protocol):
    """What the editor needs from the place the repo lives. Paths are absolute."""

    def read(self, path: str) -> str: ...

    def write(self, path: str, text: str) -> None: ...

    def kind(self, path: str) -> str:
        """'file', 'dir' or 'missing' after resolving symlinks; 'outside' when it resolves outside the repo."""
        ...

    def listing(self, path: str) -> list[str]:
        """Non-hidden paths under a directory, up to 2 levels deep."""
        ...


class SandboxFiles:
    """FileAPI over a Sandbox (read_file / write_file / exec)."""

    def __init__(self, sandbox, root: str) -> None:
        self.sandbox, self.root = sandbox, root

    def read(self, path: str) -> str:
        return self.sandbox.read_file(path, max_bytes=4 << 20).decode("utf-8", errors="replace")

    def write(self, path: str, text: str) -> None:
        self.sandbox.write_file(path, text)

    def kind(self, path: str) -> str:
        q, root = shlex.quote(path), shlex.quote(self.root)
        res = self.sandbox.exec(f'r=$(realpath -m -- {q}); case "$r" in {root}|{root}/*) ;; *) echo outside; exit;; '
                                f'esac; if [ -d "$r" ]; then echo dir; elif [ -f "$r" ]; then echo file; '
                                f'elif [ -e "$r" ]; then echo other; else echo missing; fi', timeout=30, cwd="/")
        return res.output.strip() or "missing"

    def listing(self, path: str) -> list[str]:
        res = self.sandbox.exec(f"find {shlex.quote(path)} -maxdepth 2 -not -path '*/.*' | sort", timeout=30, cwd="/")
        return [line for line in res.output.splitlines() if line]


def numbered(text: str, start: int = 1) -> str:
    """`cat -n` style: right-aligned line numbers and a tab."""
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(text.split("\n"), start))


class Editor:
    """One editor per episode; it remembers previous file versions for undo_edit."""

    def __init__(self, files: FileAPI, root: str) -> None:
        self.files, self.root = files, root.rstrip("/")
        self.history: dict[str, list[str]] = {}

    def resolve(self, path: str) -> str:
        """Absolute, normalised path inside the repo; EditorError otherwise."""
        if not isinstance(path, str) or not path.strip():
            raise EditorError("`path` is required")
        full = posixpath.normpath(path if path.startswith("/") else posixpath.join(self.root, path))
        if full != self.root and not full.startswith(self.root + "/"):
            raise EditorError(f"The path {path} is outside the repository {self.root}. Use a path inside it.")
        return full

    def __call__(self, command: str, path: str, **kw) -> str:
        """Run one editor command; returns the text shown to the agent (errors start with 'Error:')."""
        try:
            if command not in COMMANDS:
                raise EditorError(f"Unknown command {command!r}. Allowed commands: {', '.join(COMMANDS)}.")
            full = self.resolve(path)
            kind = self.files.kind(full)
            if kind == "outside":
                raise EditorError(f"The path {path} resolves outside the repository (symlink?).")
            method = getattr(self, command)
            accepted = inspect.signature(method).parameters
            # models often send every parameter of the schema; the ones this command does not use are ignored
            return clip(method(full, kind, **{k: v for k, v in kw.items() if k in accepted}))
        except EditorError as e:
            return f"Error: {e}"

    def view(self, path: str, kind: str, view_range: list[int] | None = None) -> str:
        if kind == "dir":
            if view_range:
                raise EditorError("`view_range` is not allowed when `path` is a directory.")
            entries = [e for e in self.files.listing(path) if e != path]
            return (f"Here are the files and directories up to 2 levels deep in {path}, excluding hidden items:\n"
                    + "\n".join(entries))
        text = self._read(path, kind)
        lines = text.split("\n")
        start = 1
        if view_range:
            if (not isinstance(view_range, list | tuple) or len(view_range) != 2
                    or not all(isinstance(v, int) for v in view_range)):
                raise EditorError("`view_range` must be a list of two integers, e.g. [10, 40].")
            start, end = view_range
            if not 1 <= start <= len(lines):
                raise EditorError(f"Invalid `view_range` {list(view_range)}: the first line must be in [1, {len(lines)}].")
            if end != -1 and not start <= end:
                raise EditorError(f"Invalid `view_range` {list(view_range)}: the end must be >= the start, or -1.")
            lines = lines[start - 1:] if end == -1 else lines[start - 1:end]
        return f"Here's the result of running `cat -n` on {path}:\n{numbered(chr(10).join(lines), start)}\n"

    def create(self, path: str, kind: str, file_text: str | None = None) -> str:
        if file_text is None:
            raise EditorError("`file_text` is required for create.")
        if kind != "missing":
            raise EditorError(f"File already exists at {path}. Cannot overwrite files using create; "
                              "use str_replace to change it.")
        self.files.write(path, file_text)
        self.history.setdefault(path, []).append(None)
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, kind: str, old_str: str | None = None, new_str: str | None = None) -> str:
        if old_str is None:
            raise EditorError("`old_str` is required for str_replace.")
        text = self._read(path, kind)
        count = text.count(old_str) if old_str else 0
        if count == 0:
            raise EditorError(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.")
        if count > 1:
            lines = [n for n, line in enumerate(text.split("\n"), 1) if old_str.split("\n")[0] in line]
            raise EditorError(f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines "
                              f"{lines}. Please ensure it is unique.")
        new_str = new_str or ""
        new_text = text.replace(old_str, new_str)
        self._save(path, text, new_text)
        first = text.split(old_str)[0].count("\n")
        return self._snippet(path, new_text, first, new_str.count("\n"))

    def insert(self, path: str, kind: str, insert_line: int | None = None, new_str: str | None = None) -> str:
        if insert_line is None or new_str is None:
            raise EditorError("`insert_line` and `new_str` are required for insert.")
        text = self._read(path, kind)
        lines = text.split("\n")
        if not isinstance(insert_line, int) or not 0 <= insert_line <= len(lines):
            raise EditorError(f"Invalid `insert_line` {insert_line}: it must be in [0, {len(lines)}].")
        new_lines = new_str.split("\n")
        new_text = "\n".join(lines[:insert_line] + new_lines + lines[insert_line:])
        self._save(path, text, new_text)
        return self._snippet(path, new_text, insert_line, len(new_lines) - 1)

    def undo_edit(self, path: str, kind: str) -> str:
        versions = self.history.get(path)
        if not versions:
            raise EditorError(f"No edit history found for {path}.")
        previous = versions.pop()
        if previous is None:
            raise EditorError(f"{path} was created by the editor; delete it with bash (`rm`) instead.")
        self.files.write(path, previous)
        return f"Last edit to {path} undone successfully. {self.view(path, 'file')}"

    def _read(self, path: str, kind: str) -> str:
        if kind == "missing":
            raise EditorError(f"The path {path} does not exist. Please provide a valid path.")
        if kind != "file":
            raise EditorError(f"The path {path} is a directory or not a regular file; only `view` works on directories.")
        return self.files.read(path)

    def _save(self, path: str, old: str, new: str) -> None:
        self.files.write(path, new)
        self.history.setdefault(path, []).append(old)

    def _snippet(self, path: str, text: str, first_line: int, extra: int) -> str:
        lines = text.split("\n")
        start = max(0, first_line - SNIPPET_LINES)
        end = min(len(lines), first_line + extra + SNIPPET_LINES + 1)
        snippet = numbered("\n".join(lines[start:end]), start + 1)
        return (f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet of {path}:\n"
                f"{snippet}\nReview the changes and make sure they are as expected. Edit the file again if necessary.")


class DictFiles:
    """FileAPI over an in-memory {absolute path: text} dict (for host-side dry runs of edits, e.g. the expert)."""

    def __init__(self, files: dict[str, str], root: str) -> None:
        self.data, self.root = files, root

    def read(self, path: str) -> str:
        return self.data[path]

    def write(self, path: str, text: str) -> None:
        self.data[path] = text

    def kind(self, path: str) -> str:
        if path in self.data:
            return "file"
        return "dir" if any(p.startswith(path.rstrip("/") + "/") for p in self.data) else "missing"

    def listing(self, path: str) -> list[str]:
        base = path.rstrip("/") + "/"
        out = set()
        for p in self.data:
            if p.startswith(base):
                parts = p[len(base):].split("/")
                out.update(base + "/".join(parts[:i]) for i in range(1, min(len(parts), 2) + 1))
        return sorted(out)
