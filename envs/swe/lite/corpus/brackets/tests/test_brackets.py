import pytest

from brackets import first_error, is_balanced, matching_pairs, max_depth


def test_balanced_empty():
    assert is_balanced("") is True


def test_balanced_nested():
    assert is_balanced("{[()()]}") is True


def test_balanced_with_text():
    assert is_balanced("f(a, b[1]) + {k: v}") is True


def test_unbalanced_mismatch():
    assert is_balanced("(]") is False


def test_unbalanced_unclosed():
    assert is_balanced("((") is False


def test_first_error_balanced_is_none():
    assert first_error("f(a, b[1]) + {k: v}") is None


def test_first_error_empty_is_none():
    assert first_error("") is None


def test_first_error_closing_without_opener():
    assert first_error("ab)") == 2


def test_first_error_lone_closer():
    assert first_error("]") == 0


def test_first_error_extra_closer_after_pair():
    assert first_error("{}]") == 2


def test_first_error_reports_oldest_unclosed():
    assert first_error("x(y[z") == 1


def test_first_error_unclosed_after_pair():
    assert first_error("()(") == 2


def test_first_error_unclosed_outer():
    assert first_error("(()") == 0


def test_first_error_mismatch_position():
    assert first_error("([)]") == 2


def test_first_error_mismatch_right_away():
    assert first_error("(]") == 1


def test_first_error_mismatch_after_good_pair():
    assert first_error("[()}") == 3


def test_max_depth():
    assert max_depth("(a[b{c}])(d)") == 3


def test_max_depth_flat():
    assert max_depth("abc") == 0


def test_max_depth_empty():
    assert max_depth("") == 0


def test_max_depth_siblings():
    assert max_depth("()[]{}") == 1


def test_max_depth_deep():
    assert max_depth("((((x))))") == 4


def test_max_depth_after_shallow_part():
    assert max_depth("()[{()}]") == 3


def test_matching_pairs():
    assert matching_pairs("(a[b])") == [(2, 4), (0, 5)]


def test_matching_pairs_empty():
    assert matching_pairs("") == []


def test_matching_pairs_siblings():
    assert matching_pairs("()[]") == [(0, 1), (2, 3)]


def test_matching_pairs_deep():
    assert matching_pairs("{[()]}") == [(2, 3), (1, 4), (0, 5)]


def test_matching_pairs_unclosed():
    with pytest.raises(ValueError):
        matching_pairs("(()")


def test_matching_pairs_single_opener():
    with pytest.raises(ValueError):
        matching_pairs("[")


def test_matching_pairs_unmatched_close():
    with pytest.raises(ValueError):
        matching_pairs("())")


def test_matching_pairs_close_first():
    with pytest.raises(ValueError):
        matching_pairs(")(")
