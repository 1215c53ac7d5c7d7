"""Mutation operators: every candidate parses, changes the code, and touches only its own span."""

from __future__ import annotations

import ast

import agentrl.envs.swe.mutate as mutate
from agentrl.envs.swe.lite.generate import corpus_modules, module_files

SOURCE = '''
def clamp(x, lo, hi):
    """Docstring with 1 number."""
    if x < lo:
        return lo
    total = x + 1
    total += 2
    if x > hi and lo <= hi:
        return hi
    return min(total, not x)
'''


def test_operators_cover_the_sample():
    ops = {m.operator for m in mutate.candidates(SOURCE)}
    assert ops == {"flip_compare", "flip_binop", "off_by_one", "flip_boolop", "drop_not", "invert_if",
                   "remove_guard", "remove_stmt", "swap_stmts", "swap_minmax"}


def test_mutations_are_minimal_splices():
    for m in mutate.candidates(SOURCE):
        out = m.apply(SOURCE)
        assert out != SOURCE
        ast.parse(out)
        assert '"""Docstring with 1 number."""' in out, f"{m.operator} touched the docstring"
        first, last = mutate.changed_lines(SOURCE, m)
        before, after = SOURCE.splitlines(), out.splitlines()
        assert before[: first - 1] == after[: first - 1]


def test_flip_compare_example():
    flips = [m.apply(SOURCE) for m in mutate.candidates(SOURCE) if m.operator == "flip_compare"]
    assert any("if x <= lo:" in s for s in flips)
    assert any("lo < hi" in s for s in flips)


def test_candidates_are_deterministic_for_every_corpus_module():
    for module in corpus_modules():
        src = module_files(module)[f"{module}.py"]
        first, second = mutate.candidates(src), mutate.candidates(src)
        assert first == second and len(first) >= 20, module


def test_changed_text_gives_the_original_and_mutated_lines():
    by_op = {}
    for m in mutate.candidates(SOURCE):
        by_op.setdefault(m.operator, m)
    guard = by_op["remove_guard"]
    first, last = mutate.changed_lines(SOURCE, guard)
    assert (first, last) == (4, 5)
    assert mutate.changed_text(SOURCE, guard.apply(SOURCE), first, last) == ("    if x < lo:\n        return lo", "")
    swap = by_op["swap_stmts"]
    first, last = mutate.changed_lines(SOURCE, swap)
    assert mutate.changed_text(SOURCE, swap.apply(SOURCE), first, last) == (
        "    total = x + 1\n    total += 2", "    total += 2\n    total = x + 1")
    flip = next(m for m in mutate.candidates(SOURCE) if m.operator == "flip_boolop")
    first, last = mutate.changed_lines(SOURCE, flip)
    assert mutate.changed_text(SOURCE, flip.apply(SOURCE), first, last) == (
        "    if x > hi and lo <= hi:", "    if x > hi or lo <= hi:")


def test_internal_functions_are_named_with_their_class():
    src = "class A:\n    def _hidden(self, x):\n        return x + 1\n\n\ndef _helper(y):\n    return y - 1\n"
    assert {m.function for m in mutate.candidates(src)} == {"A._hidden", "_helper"}
