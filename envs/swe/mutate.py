"""Seeded source mutations that plant small bugs (SWE-smith style).

Sites are found with `ast`; each mutation is a *textual splice* at the node's (line, col) span, so the
diff stays minimal and comments survive (`ast.unparse` would reformat the whole file). Operators:

- flip_compare    `<` ↔ `>=`-style flips (`<`→`<=`, `==`→`!=`, `in`→`not in`, ...)
- flip_binop      `+`↔`-`, `*`→`/`-style arithmetic swaps, `//`↔`/`
- off_by_one      an int literal n → n+1 or n-1
- flip_boolop     `and` ↔ `or`
- drop_not        `not x` → `x`
- invert_if       `if c:` → `if not (c):`
- remove_guard    delete an `if` whose body only raises/returns/continues (a guard clause)
- remove_stmt     delete an augmented assignment or a plain assignment inside a loop or if
- swap_stmts      swap two adjacent one-line statements
- swap_minmax     `min(...)` ↔ `max(...)`
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

COMPARE_FLIPS = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Eq: "!=", ast.NotEq: "==",
                 ast.In: "not in", ast.NotIn: "in", ast.Is: "is not", ast.IsNot: "is"}
COMPARE_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
                ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
BINOP_FLIPS = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "+"), ast.FloorDiv: ("//", "/"),
               ast.Div: ("/", "//"), ast.Mod: ("%", "//")}
OPERATORS = ("flip_compare", "flip_binop", "off_by_one", "flip_boolop", "drop_not", "invert_if",
             "remove_guard", "remove_stmt", "swap_stmts", "swap_minmax")


@dataclass(frozen=True)
class Mutation:
    """One candidate bug: replace source[start:end] (character offsets) with `replacement`."""

    operator: str
    function: str
    """Qualified name of the enclosing function, e.g. `LRUCache.put`."""
    lineno: int
    start: int
    end: int
    replacement: str
    variant: int = 0
    """Distinguishes several mutations of one operator on one node (off_by_one: +1 or -1)."""

    def apply(self, source: str) -> str:
        """The mutated source."""
        return source[: self.start] + self.replacement + source[self.end:]

    @property
    def key(self) -> tuple:
        """Identity used for ordering and deduplication."""
        return (self.lineno, self.start, self.end, self.operator, self.variant)


class Offsets:
    """Maps ast (line, utf-8 byte column) positions to character offsets in the source."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.line_starts = [0]
        for line in source.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.lines = source.splitlines(keepends=True)

    def at(self, lineno: int, col: int) -> int:
        """The character offset of ast position (lineno, utf-8 byte col)."""
        line = self.lines[lineno - 1]
        return self.line_starts[lineno - 1] + len(line.encode()[:col].decode())

    def start(self, node: ast.AST) -> int:
        """The character offset where `node` starts."""
        return self.at(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> int:
        """The character offset where `node` ends."""
        return self.at(node.end_lineno, node.end_col_offset)

    def line_span(self, first: int, last: int) -> tuple[int, int]:
        """Character span of whole lines first..last (1-based, inclusive), newline included."""
        return self.line_starts[first - 1], self.line_starts[last]


def functions(tree: ast.Module):
    """(qualified name, FunctionDef) for every function and method, outermost first."""
    stack = [("", node) for node in tree.body]
    while stack:
        prefix, node = stack.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            stack.extend((prefix + node.name + ".", child) for child in node.body)


def _is_docstring(node: ast.AST, parent_body: list[ast.stmt]) -> bool:
    return (parent_body and node is parent_body[0] and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str))


def _gap_replace(off: Offsets, left: ast.AST, right: ast.AST, old: str, new: str) -> tuple[int, int, str] | None:
    """Replace operator text `old` found between two operand nodes with `new` (keeps spacing and parens)."""
    a, b = off.end(left), off.start(right)
    gap = off.source[a:b]
    idx = gap.find(old)
    if idx < 0:
        return None
    return a + idx, a + idx + len(old), new


def _blocks(func: ast.FunctionDef):
    """Every statement list inside the function (its body, loop/if/try bodies, else branches)."""
    for node in ast.walk(func):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield node, body


def _single_line(stmt: ast.stmt) -> bool:
    return stmt.lineno == stmt.end_lineno


def candidates(source: str) -> list[Mutation]:
    """Every mutation of every operator for the functions in `source`, in a stable order."""
    tree = ast.parse(source)
    off = Offsets(source)
    found: list[Mutation] = []

    def add(op: str, fn: str, node: ast.AST, span: tuple[int, int, str] | None, variant: int = 0) -> None:
        if span is not None:
            found.append(Mutation(op, fn, node.lineno, span[0], span[1], span[2], variant))

    for fn, func in functions(tree):
        docstring = func.body[0] if _is_docstring(func.body[0], func.body) else None
        for node in ast.walk(func):
            if node is docstring or node is func:
                continue
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE_FLIPS:
                op = type(node.ops[0])
                add("flip_compare", fn, node, _gap_replace(off, node.left, node.comparators[0],
                                                           COMPARE_TEXT[op], COMPARE_FLIPS[op]))
            elif isinstance(node, ast.BinOp) and type(node.op) in BINOP_FLIPS:
                if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                    continue  # string formatting / concatenation: not an arithmetic bug
                old, new = BINOP_FLIPS[type(node.op)]
                add("flip_binop", fn, node, _gap_replace(off, node.left, node.right, old, new))
            elif (isinstance(node, ast.Constant) and type(node.value) is int and not isinstance(node.value, bool)
                  and node.lineno == node.end_lineno):
                for variant, value in enumerate((node.value + 1, node.value - 1)):
                    if value >= 0:
                        add("off_by_one", fn, node, (off.start(node), off.end(node), str(value)), variant)
            elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
                old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
                add("flip_boolop", fn, node, _gap_replace(off, node.values[0], node.values[1], old, new))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                operand = off.source[off.start(node.operand):off.end(node.operand)]
                add("drop_not", fn, node, (off.start(node), off.end(node), operand))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
                other = "max" if node.func.id == "min" else "min"
                add("swap_minmax", fn, node, (off.start(node.func), off.end(node.func), other))
            if isinstance(node, ast.If) and not isinstance(node.test, ast.UnaryOp):
                test = off.source[off.start(node.test):off.end(node.test)]
                if "\n" not in test:
                    add("invert_if", fn, node, (off.start(node.test), off.end(node.test), f"not ({test})"))
        for parent, body in _blocks(func):
            for i, stmt in enumerate(body):
                if stmt is docstring:
                    continue
                siblings = len(body) - (1 if docstring in body else 0)
                if (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and siblings > 1
                        and isinstance(stmt.body[0], ast.Raise | ast.Return | ast.Continue | ast.Break)):
                    a, b = off.line_span(stmt.lineno, stmt.end_lineno)
                    add("remove_guard", fn, stmt, (a, b, ""))
                if (isinstance(stmt, ast.AugAssign) or (isinstance(stmt, ast.Assign) and parent is not func)) \
                        and siblings > 1 and _single_line(stmt):
                    a, b = off.line_span(stmt.lineno, stmt.lineno)
                    add("remove_stmt", fn, stmt, (a, b, ""))
                if i + 1 < len(body):
                    nxt = body[i + 1]
                    simple = (ast.Assign, ast.AugAssign, ast.Expr)
                    if (isinstance(stmt, simple) and isinstance(nxt, simple) and _single_line(stmt)
                            and _single_line(nxt) and nxt.lineno == stmt.lineno + 1 and stmt is not docstring):
                        a, _ = off.line_span(stmt.lineno, stmt.lineno)
                        mid, b = off.line_span(nxt.lineno, nxt.lineno)
                        add("swap_stmts", fn, stmt, (a, b, off.source[mid:b] + off.source[a:mid]))
    unique = {m.key: m for m in found}
    return [unique[k] for k in sorted(unique)]


def changed_lines(source: str, mutation: Mutation) -> tuple[int, int]:
    """1-based (first, last) line numbers of the original source that the mutation touches."""
    first = source.count("\n", 0, mutation.start) + 1
    last = source.count("\n", 0, max(mutation.end - 1, mutation.start)) + 1
    return first, last


def changed_text(source: str, mutant: str, first: int, last: int) -> tuple[str, str]:
    """(original text of lines first..last, the text that replaced them in `mutant`), without the final newline.

    The mutant's span is the same lines shifted by the change in line count, so a deleted line gives "".
    """
    before, after = source.splitlines(), mutant.splitlines()
    shift = len(after) - len(before)
    return "\n".join(before[first - 1:last]), "\n".join(after[first - 1:last + shift])
