"""Issue-style problem statements filled from a failing test, without an LLM.

The failing statement is found from pytest's traceback (the `>` line inside the test); the reproduction is
the test body up to that statement; expected vs actual come from the assertion and pytest's `E` line. Rules
from SWE-smith: never name the test, never tell the reader to run pytest. Several phrasings, picked by seed.
"""

from __future__ import annotations

import ast
import random
import re
import textwrap

from agentrl import safe_ast

_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b")
TEMPLATES = (
    "{summary}\n\nTo reproduce:\n\n```python\n{code}\n```\n\n{observed}",
    "I found a problem in `{module}`: {summary_lc}\n\n```python\n{code}\n```\n\n{observed}",
    "Bug report for `{module}`.\n\nRunning this snippet:\n\n```python\n{code}\n```\n\n{observed} {summary}",
    "{summary}\n\nMinimal example:\n\n```python\n{code}\n```\n\n{observed} Could you take a look?",
)


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _e_line(failure_text: str) -> str:
    """The first `E   ...` line of a pytest traceback, without the prefix and an AssertionError label, and
    without memory addresses (`<m.C object at 0x7f…>` → `<m.C object>`), which differ from run to run and would
    make regeneration irreproducible."""
    for line in failure_text.splitlines():
        if line.startswith("E "):
            text = line[1:].strip()
            return _ADDRESS.sub(">", text.removeprefix("AssertionError: "))
    return _ADDRESS.sub(">", failure_text.strip().splitlines()[0]) if failure_text.strip() else ""


def _failing_line(failure_text: str) -> str | None:
    """The source text of the first `>` line of the traceback (the statement inside the test)."""
    for line in failure_text.splitlines():
        if line.startswith(">"):
            return line[1:].strip()
    return None


def _statement_at(func: ast.FunctionDef, source: str, text: str | None) -> ast.stmt:
    """The top-level statement of the test body whose first line is `text` (else the last statement)."""
    if text is not None:
        for stmt in func.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.stmt) and source.splitlines()[node.lineno - 1].strip() == text:
                    return stmt
    return func.body[-1]


def _seg(source: str, node: ast.AST) -> str:
    return ast.get_source_segment(source, node) or ""


def _names_used(source: str, code: str, public: list[str]) -> list[str]:
    """Public names of the module that the reproduction calls, in order of appearance."""
    used = []
    for node in ast.walk(safe_ast.parse(code)):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name in public and name not in used:
            used.append(name)
    return used


def describe(stmt: ast.stmt, source: str, error: str) -> tuple[str, str]:
    """(summary sentence, observed sentence) for the failing statement of a test."""
    if isinstance(stmt, ast.Assert):
        test = stmt.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            call, expected = _seg(source, test.left), _seg(source, test.comparators[0])
            actual = None
            if error.startswith("assert ") and " == " in error:
                actual = error[len("assert "):].rsplit(" == ", 1)[0]
            if _RAISED.match(error):
                return f"`{call}` fails.", f"It raises `{error}` instead of returning `{expected}`."
            observed = (f"It gives `{actual}`, but `{expected}` is expected." if actual
                        else f"The result should be `{expected}`, but it is not ({error}).")
            return f"`{call}` returns the wrong result.", observed
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is):
            call, expected = _seg(source, test.left), _seg(source, test.comparators[0])
            return f"`{call}` returns the wrong result.", f"It should return `{expected}` ({error})."
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            expr = _seg(source, test.operand)
            return f"`{expr}` is truthy when it should not be.", f"Expected a false result, got `{error}`."
        expr = _seg(source, test)
        return f"`{expr}` does not hold.", f"Expected a true result, got `{error}`."
    if isinstance(stmt, ast.With) and stmt.items and isinstance(stmt.items[0].context_expr, ast.Call):
        ctx = stmt.items[0].context_expr
        exc = _seg(source, ctx.args[0]) if ctx.args else "an exception"
        call = _seg(source, stmt.body[-1])
        if "DID NOT RAISE" in error:
            return f"`{call}` should raise `{exc}`, but it does not.", "No exception is raised."
        return f"`{call}` fails in an unexpected way.", f"It raises `{error}` instead of `{exc}`."
    expr = _seg(source, stmt)
    return f"`{expr}` fails.", f"It raises `{error}`."


def problem_statement(test_source: str, test_name: str, failure_text: str, module: str,
                      public: list[str], rng: random.Random) -> str:
    """An issue text for the failing test `test_name` of `test_source` (the test's name is never used)."""
    tree = safe_ast.parse(test_source)
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == test_name)
    stmt = _statement_at(func, test_source, _failing_line(failure_text))
    upto = func.body[: func.body.index(stmt) + 1]
    lines = test_source.splitlines()[upto[0].lineno - 1: stmt.end_lineno]
    code = textwrap.dedent("\n".join(lines))
    helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("test")}
    used_helpers = [h for h in _names_used(test_source, code, list(helpers))]
    helper_code = [_seg(test_source, helpers[h]) for h in used_helpers]
    imports = _names_used(test_source, "\n".join([code, *helper_code]), public)
    import_lines = (["import pytest"] if "pytest." in code else []) + \
        ([f"from {module} import {', '.join(imports)}"] if imports else [])
    blocks = (["\n".join(import_lines)] if import_lines else []) + helper_code + [code]
    code = "\n\n\n".join(blocks) if helper_code else "\n\n".join(blocks)
    summary, observed = describe(stmt, test_source, _e_line(failure_text))
    template = TEMPLATES[rng.randrange(len(TEMPLATES))]
    return template.format(summary=summary, summary_lc=summary[0].lower() + summary[1:] if summary[0] != "`"
                           else summary, observed=observed, code=code, module=module)


def public_names(module_source: str) -> list[str]:
    """Top-level functions and classes of a module that do not start with an underscore."""
    return [n.name for n in safe_ast.parse(module_source).body
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and not n.name.startswith("_")]
