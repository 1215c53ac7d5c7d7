"""Mutation operators for real packages: swe_lite's ten (envs/swe/mutate.py) plus three more.

The new ones follow SWE-smith's procedural bugs, as textual splices at `ast` spans like the others:

- swap_args         `f(a, b, ...)` → `f(b, a, ...)`: the first two positional arguments of a call change places
- drop_branch       `if c: X else: Y` → `if c: X`: an `else:` or `elif ...:` branch is deleted
- slice_off_by_one  `s[i:j]` → `s[i + 1:j]` / `s[i:j - 1]`: a non-literal slice bound moves by one (literal
                    bounds are off_by_one's already)

They live here, not in swe_lite's mutate.py, so swe_lite's corpus regenerates byte for byte as it did.
"""

from __future__ import annotations

import ast

import agentrl.envs.swe.mutate as mutate
from agentrl.envs.swe.mutate import Mutation

EXTRA_OPERATORS = ("swap_args", "drop_branch", "slice_off_by_one")
OPERATORS = mutate.OPERATORS + EXTRA_OPERATORS
_ATOMIC = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)


def _else_line(lines: list[str], orelse: list[ast.stmt]) -> int | None:
    """1-based line of the `else:` / `elif` that opens the branch `orelse` (None when it cannot be found)."""
    first = orelse[0].lineno
    if lines[first - 1].lstrip().startswith("elif"):
        return first
    for n in range(first - 1, 0, -1):
        text = lines[n - 1].strip()
        if text.startswith("else") and text.replace(" ", "").startswith("else:"):
            return n
        if text and not text.startswith("#"):
            return None
    return None


def extra_candidates(source: str) -> list[Mutation]:
    """Every swap_args, drop_branch and slice_off_by_one mutation of the functions in `source`, stably ordered."""
    tree = ast.parse(source)
    off = mutate.Offsets(source)
    lines = source.splitlines()
    found: list[Mutation] = []
    for fn, func in mutate.functions(tree):
        for node in ast.walk(func):
            if node is func:
                continue
            if (isinstance(node, ast.Call) and len(node.args) >= 2
                    and not any(isinstance(a, ast.Starred) for a in node.args[:2])):
                a, b = node.args[0], node.args[1]
                ta, tb = off.source[off.start(a):off.end(a)], off.source[off.start(b):off.end(b)]
                if ta != tb and "\n" not in ta + tb:
                    gap = off.source[off.end(a):off.start(b)]
                    found.append(Mutation("swap_args", fn, node.lineno, off.start(a), off.end(b), tb + gap + ta))
            elif isinstance(node, ast.If) and node.orelse:
                line = _else_line(lines, node.orelse)
                if line is not None:
                    start, end = off.line_span(line, node.orelse[-1].end_lineno)
                    found.append(Mutation("drop_branch", fn, line, start, end, ""))
            elif isinstance(node, ast.Slice):
                for variant, (bound, sign) in enumerate(((node.lower, "+"), (node.upper, "-"))):
                    if bound is None or isinstance(bound, ast.Constant) or bound.lineno != bound.end_lineno:
                        continue
                    text = off.source[off.start(bound):off.end(bound)]
                    if isinstance(bound, ast.UnaryOp) and isinstance(bound.operand, ast.Constant):
                        continue
                    body = text if isinstance(bound, _ATOMIC) else f"({text})"
                    found.append(Mutation("slice_off_by_one", fn, bound.lineno, off.start(bound), off.end(bound),
                                          f"{body} {sign} 1", variant))
    unique = {m.key: m for m in found}
    return [unique[k] for k in sorted(unique)]


def candidates(source: str) -> list[Mutation]:
    """swe_lite's candidates and the three new operators', in one stable order; only those that still parse."""
    merged = {m.key: m for m in [*mutate.candidates(source), *extra_candidates(source)]}
    out = []
    for key in sorted(merged):
        try:
            ast.parse(merged[key].apply(source))
        except SyntaxError:
            continue
        out.append(merged[key])
    return out
