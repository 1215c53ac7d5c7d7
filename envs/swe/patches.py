"""Unified diffs over in-memory file trees ({relative path: text}), and the git tree id of a tree.

swe_lite keeps task snapshots as dicts, so the gold patch, the hidden-test patch and the agent's change are
all made and applied here, host-side, without git. Diffs are git-style (`diff --git a/p b/p`, `new file
mode`, `/dev/null`), so `git apply` accepts them too (SWE-bench export). The tree id is what
`git add -A && git write-tree` prints for the same files, which makes `base_commit` a recomputable content id.
"""

from __future__ import annotations

import difflib
import hashlib
import re

Files = dict[str, str]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_EOL = "\\ No newline at end of file"


class PatchError(ValueError):
    """A patch is malformed or does not apply to the given files."""


def _diff_lines(text: str | None) -> list[str]:
    """Lines with their endings; a last line without newline gets the git marker after it."""
    if text is None:
        return []
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n" + _NO_EOL + "\n"
    return lines


def make_diff(old: Files, new: Files, context: int = 3) -> str:
    """A git-style unified diff turning `old` into `new` (paths sorted; unchanged files omitted)."""
    out: list[str] = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path), new.get(path)
        if a == b:
            continue
        out.append(f"diff --git a/{path} b/{path}\n")
        if a is None:
            out.append("new file mode 100644\n")
        elif b is None:
            out.append("deleted file mode 100644\n")
        body = list(difflib.unified_diff(_diff_lines(a), _diff_lines(b), n=context,
                                         fromfile="/dev/null" if a is None else f"a/{path}",
                                         tofile="/dev/null" if b is None else f"b/{path}"))
        # difflib writes "@@ -0,0 +1,3 @@" for new files like git; keep its header lines as they are.
        out.extend(line if line.endswith("\n") else line + "\n" for line in body)
    return "".join(out)


def _strip_prefix(name: str) -> str | None:
    name = name.split("\t")[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse_patch(patch: str) -> list[tuple[str | None, str | None, list[tuple[int, list[str]]]]]:
    """[(old path, new path, [(old start, hunk lines)])]; None paths mean /dev/null (add or delete)."""
    files: list = []
    lines = patch.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _strip_prefix(line[4:]), _strip_prefix(lines[i + 1][4:])
            files.append((old, new, []))
            i += 2
            continue
        if line.startswith("GIT binary patch") or line.startswith("Binary files"):
            raise PatchError("binary patches are not supported")
        m = _HUNK.match(line)
        if m:
            if not files:
                raise PatchError(f"hunk before any file header: {line.strip()!r}")
            old_count = int(m.group(2)) if m.group(2) is not None else 1
            new_count = int(m.group(4)) if m.group(4) is not None else 1
            body: list[str] = []
            i += 1
            seen_old = seen_new = 0
            while i < len(lines):
                h = lines[i]
                if h.startswith("\\"):  # "\ No newline at end of file" refers to the line before it
                    if body:
                        body[-1] = body[-1].rstrip("\n")
                    i += 1
                    continue
                if seen_old >= old_count and seen_new >= new_count:
                    break
                if h == "\n":  # some tools drop the space of an empty context line
                    h = " \n"
                if h[:1] not in (" ", "-", "+"):
                    raise PatchError(f"malformed hunk line in {files[-1][1] or files[-1][0]}: {h!r}")
                body.append(h)
                seen_old += h[0] in " -"
                seen_new += h[0] in " +"
                i += 1
            files[-1][2].append((int(m.group(1)), body))
            continue
        i += 1
    if not files:
        raise PatchError("no file headers (--- / +++) found in patch")
    return files


def _apply_hunks(text: str, hunks: list[tuple[int, list[str]]], path: str) -> str:
    lines = text.splitlines(keepends=True)
    shift = 0
    for start, body in hunks:
        old = [h[1:] for h in body if h[0] in " -"]
        new = [h[1:] for h in body if h[0] in " +"]
        want = max(start - 1 + shift, 0) if old else start + shift
        for delta in sorted(range(-len(lines) - 1, len(lines) + 2), key=abs):
            pos = want + delta
            if 0 <= pos <= len(lines) and lines[pos:pos + len(old)] == old:
                break
        else:
            raise PatchError(f"hunk @@ -{start} does not apply to {path}")
        lines[pos:pos + len(old)] = new
        shift += len(new) - len(old) + (pos - want)
    return "".join(lines)


def apply_patch(files: Files, patch: str) -> Files:
    """A new tree with `patch` applied; PatchError when a hunk's context is not found."""
    out = dict(files)
    if not patch.strip():
        return out
    for old, new, hunks in parse_patch(patch):
        if old is None:
            if new in out and out[new]:
                raise PatchError(f"patch creates {new}, which already exists")
            out[new] = _apply_hunks("", hunks, new)
        elif new is None:
            if old not in out:
                raise PatchError(f"patch deletes {old}, which does not exist")
            del out[old]
        else:
            if old not in out:
                raise PatchError(f"patch edits {old}, which does not exist")
            text = _apply_hunks(out.pop(old), hunks, old)
            out[new] = text
    return out


def changed_paths(patch: str) -> list[str]:
    """Every path a patch touches (new names for edits and adds, old names for deletes)."""
    return sorted({new or old for old, new, _ in parse_patch(patch)}) if patch.strip() else []


def tree_id(files: Files) -> str:
    """The git tree id (sha1) of the files as regular 100644 blobs, equal to `git add -A && git write-tree`."""

    def blob(data: bytes) -> bytes:
        return hashlib.sha1(b"blob %d\0" % len(data) + data).digest()

    def tree(entries: dict) -> bytes:
        body = b""
        # git sorts entries by name, comparing a directory's name as if it ended with "/"
        for name in sorted(entries, key=lambda n: n + "/" if isinstance(entries[n], dict) else n):
            value = entries[name]
            if isinstance(value, dict):
                body += b"40000 " + name.encode() + b"\0" + tree(value)
            else:
                body += b"100644 " + name.encode() + b"\0" + blob(value)
        return hashlib.sha1(b"tree %d\0" % len(body) + body).digest()

    root: dict = {}
    for path, text in files.items():
        node = root
        *dirs, name = path.split("/")
        for d in dirs:
            node = node.setdefault(d, {})
        node[name] = text.encode() if isinstance(text, str) else bytes(text)
    return tree(root).hex()
