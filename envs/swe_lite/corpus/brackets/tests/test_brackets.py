import pytest

from brackets import first_error, is_balanced, matching_pairs, max_depth


def test_balanced_empty():
    assert is_balanced("")


def test_balanced_nested():
    assert is_balanced("{[()()]}")


def test_unbalanced_mismatch():
    assert not is_balanced("(]")


def test_unbalanced_unclosed():
    assert not is_balanced("((")


def test_first_error_closing_without_opener():
    assert first_error("ab)") == 2


def test_first_error_reports_oldest_unclosed():
    assert first_error("x(y[z") == 1


def test_first_error_mismatch_position():
    assert first_error("([)]") == 2


def test_ignores_other_text():
    assert first_error("f(a, b[1]) + {k: v}") is None


def test_max_depth():
    assert max_depth("(a[b{c}])(d)") == 3


def test_max_depth_flat():
    assert max_depth("abc") == 0


def test_matching_pairs():
    assert matching_pairs("(a[b])") == [(2, 4), (0, 5)]


def test_matching_pairs_unclosed():
    with pytest.raises(ValueError):
        matching_pairs("(()")


def test_matching_pairs_unmatched_close():
    with pytest.raises(ValueError):
        matching_pairs("())")
