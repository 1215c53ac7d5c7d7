"""Mutation operators: every candidate parses, changes the code, and touches only its own span."""

from __future__ import annotations

import ast

from agentrl.envs.swe_lite import mutate
from agentrl.envs.swe_lite.generate import corpus_modules, module_files

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
