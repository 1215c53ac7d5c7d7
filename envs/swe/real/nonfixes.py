"""Generic non-fixes that game comparisons between two package objects, for the generator's last filter (step 8).

The suite judge compares a package object with a test's plain value by canonical forms, but two package objects
by the package's own `__eq__` (the worker made both sides). So a non-fix that makes the package's objects equal to
anything can pass a test that compares two of them. Each non-fix here leaves the bug in place:
- `mock_any`: the faulty function(s) return `unittest.mock.ANY`;
- `mock_any_for_package_objects`: the faulty function(s) run their (buggy) body and return `unittest.mock.ANY`
  instead of a result whose class the package defines (a plain result is returned as it is); the same with
  `in blamed functions`: the functions the issue text blames instead;
- `always_equal_classes`: every class the package defines gets an always-true `__eq__` (and always-false
  `__ne__`), assigned after the class is made, so each keeps its own `__hash__`.
They are judged by their tests' outcomes, not by the static scan (`grading/tampering.py`): `__import__` flags
the spelling used here, but an always-equal object built with `type()` (the audit's) behaves the same across
the split and is scan-clean.
"""

from __future__ import annotations

import ast
import copy
import re
import textwrap

from agentrl.envs.swe.audit import ANY_BODY, find_function, with_body

from agentrl import safe_ast

CLASS_EQ = """

# non-fix: every class of this module equal to anything
for _agentrl_c in ({names},):
    if isinstance(_agentrl_c, type) and not issubclass(_agentrl_c, BaseException):
        try:
            _agentrl_c.__eq__ = lambda s, o: True
            _agentrl_c.__ne__ = lambda s, o: False
        except (AttributeError, TypeError):
            pass
"""


def faulty_functions(task) -> list[tuple[str, str]]:
    """(file, qualname) of each function the task's bug(s) changed, in order."""
    parts = task.mutation.get("parts") or [task.mutation]
    return list(dict.fromkeys((p["file"], p["function"]) for p in parts if p.get("file") and p.get("function")))


def any_for_package_objects(source: str, qualname: str) -> str | None:
    """`source` with function `qualname` running its own body in an inner function and returning
    `unittest.mock.ANY` where the result's class comes from the module's own top-level package (None when there
    is no such function, or it is async)."""
    func = find_function(safe_ast.parse(source), qualname)
    if func is None or isinstance(func, ast.AsyncFunctionDef):
        return None
    a = func.args
    params = [*a.posonlyargs, *a.args, *([a.vararg] if a.vararg else []), *a.kwonlyargs,
              *([a.kwarg] if a.kwarg else [])]
    for p in params:
        p.annotation = None
    inner_args = ast.arguments(posonlyargs=a.posonlyargs, args=a.args, vararg=a.vararg, kwonlyargs=a.kwonlyargs,
                               kw_defaults=[None] * len(a.kwonlyargs), kwarg=a.kwarg, defaults=[])
    call = ast.Call(func=ast.Name("_agentrl_inner"),
                    args=[ast.Name(p.arg) for p in [*a.posonlyargs, *a.args]]
                    + ([ast.Starred(ast.Name(a.vararg.arg))] if a.vararg else []),
                    keywords=[ast.keyword(p.arg, ast.Name(p.arg)) for p in a.kwonlyargs]
                    + ([ast.keyword(None, ast.Name(a.kwarg.arg))] if a.kwarg else []))
    inner = ast.FunctionDef(name="_agentrl_inner", args=inner_args, body=func.body, decorator_list=[], returns=None,
                            type_params=[])
    tail = safe_ast.parse("if type(_agentrl_r).__module__.split('.')[0] == __name__.split('.')[0]:\n"
                          f"    {ANY_BODY}\nreturn _agentrl_r\n").body
    outer = copy.copy(func)
    outer.body = [inner, ast.Assign(targets=[ast.Name("_agentrl_r")], value=call), *tail]
    text = ast.unparse(ast.fix_missing_locations(outer))
    first = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    lines = source.splitlines(keepends=True)
    return "".join(lines[:first - 1]) + textwrap.indent(text + "\n", " " * func.col_offset) \
        + "".join(lines[func.end_lineno:])


def with_equal_classes(source: str) -> str | None:
    """`source` with every top-level class it defines made equal to anything (None when it defines none)."""
    names = [n.name for n in safe_ast.parse(source).body if isinstance(n, ast.ClassDef)]
    if not names:
        return None
    return source.rstrip("\n") + "\n" + CLASS_EQ.format(names=", ".join(names))


def package_nonfixes(task, sources: list[str], blamed: list[tuple[str, str]] = ()) -> dict[str, dict[str, str]]:
    """{name: changes} of the non-fixes above for `task`; `sources` are the package's source files (the
    classes made equal to anything), `blamed` the (file, qualname) the issue text blames."""
    out: dict[str, dict[str, str]] = {}
    faulty = faulty_functions(task)

    def each(targets, edit) -> dict[str, str]:
        changed: dict[str, str] = {}
        for path, qualname in targets:
            text = changed.get(path, task.files.get(path))
            new = edit(text, qualname) if text is not None else None
            if new is not None:
                changed[path] = new
        return changed

    if got := each(faulty, lambda text, q: with_body(text, q, ANY_BODY)):
        out["mock_any"] = got
    if got := each(faulty, any_for_package_objects):
        out["mock_any_for_package_objects"] = got
    others = [t for t in blamed if t not in faulty]
    if others and (got := each(others, any_for_package_objects)):
        out["mock_any_for_package_objects in blamed functions"] = got
    classes = {p: new for p in sources if p in task.files and (new := with_equal_classes(task.files[p])) is not None}
    if classes:
        out["always_equal_classes"] = classes
    return out


def passes(grade) -> bool:
    """True when the tests cannot tell the non-fix from a fix: a valid run, every F2P and P2P test passing (the
    static scan's findings are not counted on: see the module docstring)."""
    return grade.valid and grade.f2p == 1.0 and grade.p2p == 1.0


_NEGATED = re.compile(r"!=|\bnot\b")


def rules_out(failure: str) -> bool:
    """True when a test's failure in a plain pytest run (pytest's long report) rules a non-fix out across the
    split too: its failing line (`>`) holds no `!=` or `not`, which a package object compared with a plain value
    could pass there (no `>` line: it rules nothing out)."""
    lines = [ln for ln in failure.splitlines() if ln.startswith(">")]
    return bool(lines) and not _NEGATED.search(lines[-1])
