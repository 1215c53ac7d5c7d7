import pytest

from slugwrap import count_words, slugify, truncate, wrap


def test_slugify_basic():
    assert slugify("Hello, World!") == "hello-world"


def test_slugify_single_word():
    assert slugify("Word") == "word"


def test_slugify_separator():
    assert slugify("a b  c", separator="_") == "a_b_c"


def test_slugify_empty_separator():
    assert slugify("New York", separator="") == "newyork"


def test_slugify_digits():
    assert slugify("Version 2.0") == "version-2-0"


def test_slugify_strips_edges():
    assert slugify("--Hi there--") == "hi-there"


def test_slugify_drops_non_ascii():
    assert slugify("Café au lait") == "caf-au-lait"


def test_slugify_empty():
    assert slugify("!!!") == ""
    assert slugify("") == ""


def test_wrap_fits_exactly():
    assert wrap("aa bb cc", 5) == ["aa bb", "cc"]


def test_wrap_line_of_exact_width():
    assert wrap("abc de", 6) == ["abc de"]


def test_wrap_one_character_too_long():
    assert wrap("ab cd", 4) == ["ab", "cd"]


def test_wrap_single_word():
    assert wrap("hello", 10) == ["hello"]


def test_wrap_several_lines():
    assert wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]


def test_wrap_width_one():
    assert wrap("a b c", 1) == ["a", "b", "c"]


def test_wrap_long_word():
    assert wrap("a abcdefgh b", 4) == ["a", "abcdefgh", "b"]


def test_wrap_long_word_first():
    assert wrap("abcdefgh a b", 4) == ["abcdefgh", "a b"]


def test_wrap_collapses_whitespace():
    assert wrap("  x \n\t y  ", 3) == ["x y"]


def test_wrap_rejects_zero_width():
    with pytest.raises(ValueError):
        wrap("abc", 0)


def test_wrap_rejects_zero_width_empty_text():
    with pytest.raises(ValueError):
        wrap("", 0)


def test_wrap_rejects_negative_width():
    with pytest.raises(ValueError, match="width must be positive"):
        wrap("abc def", -3)


def test_wrap_empty():
    assert wrap("   ", 10) == []
    assert wrap("", 1) == []


def test_truncate_short_text_unchanged():
    assert truncate("hello", 5) == "hello"


def test_truncate_exact_limit_custom_ellipsis():
    assert truncate("abc", 3, "!") == "abc"


def test_truncate_shorter_than_limit():
    assert truncate("hi", 10) == "hi"


def test_truncate_cuts():
    assert truncate("hello world", 8) == "hello..."


def test_truncate_one_over_limit():
    assert truncate("abcdef", 5) == "ab..."


def test_truncate_custom_ellipsis():
    assert truncate("hello world", 6, "…") == "hello…"


def test_truncate_empty_ellipsis():
    assert truncate("abcdef", 3, "") == "abc"
    assert truncate("abc", 0, "") == ""


def test_truncate_limit_equals_ellipsis():
    assert truncate("hello", 3) == "..."


def test_truncate_rejects_tiny_limit():
    with pytest.raises(ValueError):
        truncate("hello", 2)


def test_truncate_rejects_limit_below_custom_ellipsis():
    with pytest.raises(ValueError, match="shorter than the ellipsis"):
        truncate("hello", 1, "~~")


def test_truncate_rejects_negative_limit():
    with pytest.raises(ValueError):
        truncate("", -1, "")


def test_count_words():
    assert count_words("  one two\tthree\n") == 3


def test_count_words_empty():
    assert count_words("") == 0
    assert count_words(" \t\n ") == 0


def test_count_words_single():
    assert count_words("word") == 1


def test_count_words_no_outer_spaces():
    assert count_words("a b,c d") == 3


def test_count_words_many_spaces():
    assert count_words("x    y\n\nz") == 3
