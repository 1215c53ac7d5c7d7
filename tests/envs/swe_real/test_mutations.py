"""The three operators swe_real adds to swe_lite's ten: each makes the bug it names, and only code that parses."""

from __future__ import annotations

import ast

import agentrl.envs.swe.mutate as mutate
import agentrl.envs.swe.real.mutations as mutations

SOURCE = '''
def clip(items, lo, hi):
    if lo > hi:
        return clip(items, hi, lo)
    elif not items:
        return []
    else:
        out = items[lo:hi]
    return out[lo + 1:]
'''


def _by(op):
    return [m for m in mutations.candidates(SOURCE) if m.operator == op]


def test_swap_args_swaps_the_first_two_positional_arguments():
    (m,) = _by("swap_args")
    assert "return clip(items, lo, hi)" not in m.apply(SOURCE)
    assert "return clip(hi, items, lo)" in m.apply(SOURCE)


def test_drop_branch_deletes_the_elif_and_the_else():
    mutants = [m.apply(SOURCE) for m in _by("drop_branch")]
    assert len(mutants) == 2
    assert any("elif" not in s and "else:" not in s and "return []" not in s for s in mutants)  # elif + its else
    assert any("elif not items" in s and "else:" not in s and "out = items[lo:hi]" not in s for s in mutants)


def test_slice_off_by_one_moves_non_literal_bounds_by_one():
    mutants = {m.apply(SOURCE).splitlines()[8].strip() for m in _by("slice_off_by_one") if m.lineno == 9}
    assert mutants == {"return out[(lo + 1) + 1:]"}
    lower_upper = {m.apply(SOURCE).splitlines()[7].strip() for m in _by("slice_off_by_one") if m.lineno == 8}
    assert lower_upper == {"out = items[lo + 1:hi]", "out = items[lo:hi - 1]"}


def test_every_candidate_parses_and_swe_lite_operators_are_kept():
    cands = mutations.candidates(SOURCE)
    for m in cands:
        ast.parse(m.apply(SOURCE))
    ops = {m.operator for m in cands}
    assert {"flip_compare", "invert_if", "drop_not"} <= ops
    assert set(mutations.EXTRA_OPERATORS) <= ops
    assert set(mutations.EXTRA_OPERATORS).isdisjoint(mutate.OPERATORS)  # swe_lite's corpus is left as it was


def test_candidates_are_stable_across_calls():
    assert mutations.candidates(SOURCE) == mutations.candidates(SOURCE)
