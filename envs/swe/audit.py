"""Test-strength audit: generic non-fixes that must all score 0 on a task before it ships.

Each non-fix replaces the body of the task's faulty function (the mutation's `function`) with something that
is no fix but games a weak test:
- `equal_to_anything`: returns `unittest.mock.ANY`; `always_equal`: returns an object built without a class
  statement whose `__eq__` is always true;
- `body_deleted`: the function does nothing (returns None);
- `raise_<E>`: raises the exception a hidden test expects, for every input;
- with `also`, `always_equal` in each other function given (one at a time);
- `special_case`: the function the issue's example calls returns the expected value for exactly the example's
  arguments and runs its buggy body otherwise. The example is read from the issue's code block as Python (its last
  statement, `assert f(args) == expected`, with the literal assignments before it), whatever sentence template
  surrounds it, so it is tried wherever a policy could read it.
And one check on the empty patch's grade, `special_case_survives`: the issue text quotes one failing test; a policy
that special-cases exactly that example passes that test, so at least one other fail-to-pass test must still fail.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable

from agentrl.envs.swe.patches import apply_patch

from agentrl import safe_ast

ANY_BODY = "return __import__('unittest.mock').mock.ANY"
ALWAYS_EQUAL_BODY = ("return type('Any', (), {'__eq__': lambda s, o: True, '__ne__': lambda s, o: False, "
                     "'__hash__': lambda s: 0})()")


def find_function(tree: ast.AST, qualname: str) -> ast.FunctionDef | None:
    """The (possibly nested) function `Class.method` / `outer.inner` / `name` of a module."""
    def walk(node: ast.AST, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                if name == qualname and not isinstance(child, ast.ClassDef):
                    return child
                found = walk(child, name + ".")
                if found is not None:
                    return found
        return None

    return walk(tree, "")


def with_body(source: str, qualname: str, body: str) -> str | None:
    """`source` with the body of function `qualname` replaced by `body` (None when there is no such function)."""
    func = find_function(safe_ast.parse(source), qualname)
    if func is None:
        return None
    lines = source.splitlines(keepends=True)
    first = func.body[0]
    indent = " " * first.col_offset
    new = textwrap.indent(body.rstrip("\n") + "\n", indent)
    return "".join(lines[:first.lineno - 1]) + new + "".join(lines[func.end_lineno:])


def hidden_tests(task) -> dict[str, str]:
    """{path: source} of the task's test files once its test_patch is applied."""
    tree = apply_patch(dict(task.files), task.test_patch) if task.test_patch else dict(task.files)
    paths = {t.split("::")[0] for t in task.FAIL_TO_PASS + task.PASS_TO_PASS}
    return {p: tree[p] for p in paths if p in tree}


def expected_exceptions(task) -> list[str]:
    """Names of the exceptions the fail-to-pass tests expect (`pytest.raises(Name, ...)`), in order."""
    names: list[str] = []
    f2p = {t.split("::")[1] for t in task.FAIL_TO_PASS}
    for source in hidden_tests(task).values():
        for node in safe_ast.parse(source).body:
            if not (isinstance(node, ast.FunctionDef) and node.name in f2p):
                continue
            for call in ast.walk(node):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "raises"
                        and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id not in names):
                    names.append(call.args[0].id)
    return names


def non_fixes(task, also: Iterable[tuple[str, str]] = ()) -> dict[str, dict[str, str]]:
    """{name: changes} of the generic non-fixes for `task` (empty when its faulty function cannot be found).

    `also`: (file, qualname) of other functions to try `always_equal` in, one at a time (swe_real passes the
    functions its issue text names: a policy reading the issue would plant the value there, not in the faulty
    function it was never told about)."""
    file, function = task.mutation.get("file"), task.mutation.get("function")
    source = task.files.get(file) if file else None
    if source is None or not function:
        return {}
    bodies = {"equal_to_anything": ANY_BODY, "always_equal": ALWAYS_EQUAL_BODY, "body_deleted": "pass"}
    bodies.update({f"raise_{name}": f"raise {name}('audit')" for name in expected_exceptions(task)})
    out = {}
    for name, body in bodies.items():
        changed = with_body(source, function, body)
        if changed is not None:
            out[name] = {file: changed}
    for other, qualname in also:
        text = task.files.get(other)
        changed = with_body(text, qualname, ALWAYS_EQUAL_BODY) if text and (other, qualname) != (file, function) \
            else None
        if changed is not None:
            out[f"always_equal in {other}::{qualname}"] = {other: changed}
    special = special_case(task)
    if special is not None:
        out["special_case"] = special
    return out


_CODE = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _literal(node: ast.AST, known: dict):
    """The value of a literal expression (names bound to literals earlier in the example resolve); raises
    ValueError for anything else."""
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    return ast.literal_eval(node)


def quoted_example(statement: str) -> tuple[str, list, dict, object] | None:
    """(function name, positional args, keyword args, expected) of the issue's example when its code block ends in
    `assert name(literal args) == literal`; None when it does not (a method call, a computed argument)."""
    match = _CODE.search(statement)
    if not match:
        return None
    try:
        body = safe_ast.parse(match.group(1)).body
    except (SyntaxError, ValueError):
        return None
    known: dict = {}
    for stmt in body[:-1]:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                known[stmt.targets[0].id] = _literal(stmt.value, known)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    last = body[-1] if body else None
    if not (isinstance(last, ast.Assert) and isinstance(last.test, ast.Compare) and len(last.test.ops) == 1
            and isinstance(last.test.ops[0], ast.Eq) and isinstance(last.test.left, ast.Call)
            and isinstance(last.test.left.func, ast.Name)):
        return None
    call = last.test.left
    try:
        args = [_literal(a, known) for a in call.args]
        kwargs = {k.arg: _literal(k.value, known) for k in call.keywords if k.arg}
        expected = _literal(last.test.comparators[0], known)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if len(kwargs) != len(call.keywords):
        return None
    return call.func.id, args, kwargs, expected


def special_case(task) -> dict[str, str] | None:
    """{file: source} where the function the issue's example calls returns the expected value for exactly the
    example's arguments (its buggy body otherwise); None when the example is not a literal call of a module-level
    function of the repo."""
    example = quoted_example(task.problem_statement)
    if example is None:
        return None
    name, args, kwargs, expected = example
    for path, source in sorted(task.files.items()):
        if not path.endswith(".py") or path.startswith("tests/"):
            continue
        try:
            tree = safe_ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if func is None:
            continue
        params = [a.arg for a in func.args.posonlyargs + func.args.args]
        if func.args.vararg or func.args.kwarg or len(args) > len(params) or set(kwargs) - set(params):
            return None
        bound = dict(zip(params, args, strict=False)) | kwargs
        names = sorted(bound)
        guard = (f"if ({', '.join(names)},) == ({', '.join(repr(bound[n]) for n in names)},):\n"
                 f"    return {expected!r}\n")
        first = func.body[0]
        keep_doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant)
        anchor = func.body[1] if keep_doc and len(func.body) > 1 else first
        lines = source.splitlines(keepends=True)
        indent = " " * anchor.col_offset
        new = lines[:anchor.lineno - 1] + [textwrap.indent(guard, indent)] + lines[anchor.lineno - 1:]
        return {path: "".join(new)}
    return None


def quoted_test(task) -> str | None:
    """The fail-to-pass test whose assertion the issue text quotes: the first of them in the hidden file."""
    for path, source in hidden_tests(task).items():
        for node in safe_ast.parse(source).body:
            nodeid = f"{path}::{getattr(node, 'name', '')}"
            if isinstance(node, ast.FunctionDef) and nodeid in task.FAIL_TO_PASS:
                return nodeid
    return None


def special_case_survives(task, empty_statuses: dict[str, str]) -> bool:
    """True when some fail-to-pass test other than the quoted one fails on the buggy repo: special-casing the
    quoted example (which at best passes that whole test) still leaves a failing test."""
    quoted = quoted_test(task)
    return any(t != quoted and empty_statuses.get(t) != "passed" for t in task.FAIL_TO_PASS)


def audit(sandbox, task, empty_statuses: dict[str, str], *, grade, also: Iterable[tuple[str, str]] = ()) -> list[str]:
    """Problems of `task` under the audit ([] when every non-fix scores 0 and special-casing cannot pass);
    `also` as in non_fixes."""
    problems = []
    if not special_case_survives(task, empty_statuses):
        problems.append(f"{task.instance_id}: special-casing the quoted example passes (no other F2P test fails)")
    variants = non_fixes(task, also)
    if not variants:
        problems.append(f"{task.instance_id}: the faulty function {task.mutation.get('function')!r} was not found")
    for name, changes in variants.items():
        result = grade(sandbox, task, changes=changes)
        if result.reward() > 0 or result.resolved:
            problems.append(f"{task.instance_id}: non-fix {name} scores {result.reward()}")
    return problems

