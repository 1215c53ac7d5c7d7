"""The scripted expert for the supervised warm start: view the file, `str_replace` the buggy lines, run the
tests, submit. Its edits come from the task's gold patch, so the model learns the tool format, not the bug.
"""

from __future__ import annotations

import difflib

from agentrl.tool_calls import format_call


def edits(buggy: str, fixed: str, max_context: int = 8) -> list[tuple[str, str]]:
    """(old_str, new_str) pairs that turn `buggy` into `fixed` when applied in order with str_replace.

    Each old_str is the changed lines, widened by whole context lines until it is unique in the text it
    applies to (and never empty, so a pure insertion carries the line before it).
    """
    out: list[tuple[str, str]] = []
    current = buggy
    for _ in range(64):
        a, b = current.splitlines(keepends=True), fixed.splitlines(keepends=True)
        opcodes = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
        first = next((n for n, op in enumerate(opcodes) if op[0] != "equal"), None)
        if first is None:
            return out
        _, i1, i2, j1, j2 = opcodes[first]
        # context may only reach into unchanged lines: everything before the first change, and the equal block after
        room_after = opcodes[first + 1][2] - opcodes[first + 1][1] if first + 1 < len(opcodes) else 0
        for extra in range(max_context + 1):
            before = min(extra + (i1 == i2), i1)  # a pure insertion carries the line before it
            after = min(extra, room_after)
            old = "".join(a[i1 - before:i2 + after])
            new = "".join(b[j1 - before:j2 + after])
            if old and current.count(old) == 1:
                break
        else:
            raise ValueError("could not find a unique old_str for an edit of the gold patch")
        out.append((old, new))
        current = current.replace(old, new, 1)
    raise ValueError("the gold patch needs more than 64 edits")


def plan(task, root: str, test_cmd: str = "python3 -m pytest -q", *, level: int = 1) -> list[str]:
    """The expert's action texts for `task`, one per step: view, edits, run tests, submit.

    At level 0 the issue already quotes the faulty function, so the expert edits and submits at once (two
    turns: the shortest demonstration, which matters when a CPU trains at ~100 tokens/s).
    """
    buggy, fixed = task.files, task.fixed_files()
    changed = sorted(p for p in set(buggy) | set(fixed) if buggy.get(p) != fixed.get(p))
    actions = []
    for path in changed:
        full = f"{root}/{path}"
        if path in buggy and path in fixed:
            if level > 0:
                actions.append(f"Let me look at `{path}`, where the problem seems to be.\n"
                               + format_call("str_replace_editor", {"command": "view", "path": full}))
            for old, new in edits(buggy[path], fixed[path]):
                actions.append("I will fix the faulty code.\n" + format_call(
                    "str_replace_editor", {"command": "str_replace", "path": full, "old_str": old, "new_str": new}))
        elif path in fixed:
            actions.append(f"I will create `{path}`.\n" + format_call(
                "str_replace_editor", {"command": "create", "path": full, "file_text": fixed[path]}))
        else:
            actions.append(f"I will remove `{path}`.\n" + format_call("bash", {"command": f"rm -- {path}"}))
    if level > 0:
        actions.append("Now I run the tests to check the fix.\n" + format_call("bash", {"command": test_cmd}))
    actions.append("The fix is done, so I submit it.\n" + format_call("submit", {}))
    return actions
